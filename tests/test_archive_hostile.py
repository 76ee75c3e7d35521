"""Hostile and broken archives, as an importer meets them: each is refused or partly kept with a precise message.

A hostile entry (traversal, link, device file, bomb, duplicate path) rejects the whole archive and
nothing of it is stored: no job, no blob. Broken data rejects only what is broken.
"""

from __future__ import annotations

import io
import json
import stat
import tarfile
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fleet import ingest
from fleet.archive import ArchiveError, ReaderLimits, parse_archive
from fleet.models import IngestRun, Job
from tests.conftest import write_zip

pytestmark = pytest.mark.django_db

MANIFEST = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"})
JOBS = (
    "job_id,user,team,gpu_count,start_time,end_time\n"
    "j1,ann,vision,1,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z\n"
    "j2,bob,nlp,1,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z\n"
    "j3,cat,nlp,1,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z\n"
)
HEADER = "job_id,timestamp,host,gpu,gpu_util,gpu_mem_used_mib,gpu_mem_total_mib\n"


def rows(job_id: str, util: float = 50.0, count: int = 60) -> str:
    return "".join(f"{job_id},2026-11-02T10:{minute:02d}:00Z,n1,0,{util},1000,80000\n" for minute in range(count))


def good() -> dict[str, bytes | str]:
    return {
        "manifest.json": MANIFEST,
        "jobs.csv": JOBS,
        "metrics.csv": HEADER + rows("j1") + rows("j2") + rows("j3"),
        "logs/j1/stdout.log": "Epoch 1/3\n",
    }


def ingest_file(path: Path) -> IngestRun:
    run = ingest.create_run(path)
    return ingest.execute_run(run.pk)


def stored_blobs(storage_dir: Path) -> list[Path]:
    return [p for p in storage_dir.rglob("*") if p.is_file()] if storage_dir.exists() else []


def assert_nothing_kept(run: IngestRun, storage_dir: Path, expected: str) -> None:
    assert run.status == IngestRun.Status.FAILED
    assert len(run.errors) == 1 and expected in run.errors[0]["message"], run.errors
    assert Job.objects.count() == 0
    assert stored_blobs(storage_dir) == []


def tar_with(path: Path, members: dict[str, bytes | str], extra: list[tarfile.TarInfo], mode="w:gz") -> Path:
    with tarfile.open(path, mode) as archive:
        for name, content in members.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for info in extra:
            archive.addfile(info, io.BytesIO(b"x" * info.size) if info.isreg() else None)
    return path


# -- hostile entries: the whole archive is refused, nothing kept ------------------------------------
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../evil.csv", "contains a '..' path component"),
        ("logs/j1/../../../etc/cron.d/x", "contains a '..' path component"),
        ("/etc/passwd", "has an absolute path"),
        ("C:/Windows/evil.dll", "has an absolute path"),
        ("logs\\..\\..\\evil.txt", "contains a '..' path component"),
    ],
)
def test_path_traversal_rejects_the_whole_archive(tmp_path, storage_dir, name, expected):
    path = write_zip(tmp_path / "evil.zip", {**good(), name: "pwned"})
    run = ingest_file(path)
    assert_nothing_kept(run, storage_dir, expected)
    assert not (tmp_path.parent / "evil.csv").exists()


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (tarfile.SYMTYPE, "is a symbolic link; only regular files are allowed"),
        (tarfile.LNKTYPE, "is a hard link; only regular files are allowed"),
        (tarfile.CHRTYPE, "is a character device; only regular files are allowed"),
        (tarfile.BLKTYPE, "is a block device; only regular files are allowed"),
        (tarfile.FIFOTYPE, "is a FIFO; only regular files are allowed"),
    ],
)
def test_links_and_device_files_in_a_tarball_reject_it(tmp_path, storage_dir, kind, expected):
    info = tarfile.TarInfo("logs/j1/evil")
    info.type = kind
    info.linkname = "/etc/passwd" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
    path = tar_with(tmp_path / "evil.tar.gz", good(), [info])
    run = ingest_file(path)
    assert_nothing_kept(run, storage_dir, expected)
    assert "logs/j1/evil" in run.errors[0]["message"]


def test_a_symlink_in_a_zip_rejects_it(tmp_path, storage_dir):
    path = write_zip(tmp_path / "evil.zip", good())
    with zipfile.ZipFile(path, "a") as archive:
        info = zipfile.ZipInfo("scripts/j1/link.py")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/shadow")
    run = ingest_file(path)
    assert_nothing_kept(run, storage_dir, "'scripts/j1/link.py' is a symbolic link")


@pytest.mark.parametrize("name", ["logs/j1/run.log\x00.exe", "\x00jobs.csv"])
def test_a_nul_in_a_zip_member_name_rejects_the_archive(tmp_path, storage_dir, name):
    """zipfile cuts names at a NUL ("run.log" for "run.log\\0.exe", nothing at all for "\\0jobs.csv")."""
    placeholder = name.replace("\x00", "#")
    path = write_zip(tmp_path / "evil.zip", {**good(), placeholder: "x"})
    path.write_bytes(path.read_bytes().replace(placeholder.encode(), name.encode()))
    run = ingest_file(path)
    assert_nothing_kept(run, storage_dir, "contains a NUL character")


def test_duplicate_paths_reject_the_archive(tmp_path, storage_dir):
    path = tmp_path / "dup.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in good().items():
            archive.writestr(name, content)
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("jobs.csv", "job_id,user,team,gpu_count,start_time,end_time\n")
    run = ingest_file(path)
    assert_nothing_kept(run, storage_dir, "member 'jobs.csv' appears more than once")


# -- decompression bombs: limits on ratio, sizes and member count, counted while streaming -----------
def test_a_zip_bomb_is_refused_by_its_ratio_without_inflating_it(tmp_path, storage_dir, settings):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in good().items():
            archive.writestr(name, content)
        with archive.open("logs/j1/huge.log", "w") as member:
            zeros = b"\0" * (1 << 20)
            for _ in range(200):  # 200 MiB of zeros, about 200 KB compressed
                member.write(zeros)
    assert path.stat().st_size < 1_000_000
    settings.ARCHIVE_MAX_RATIO = 100
    run = ingest_file(path)
    assert_nothing_kept(run, storage_dir, "member 'logs/j1/huge.log' expands more than 100 times its compressed size")
    assert "decompression bomb" in run.errors[0]["message"]


def test_a_lying_zip_header_does_not_get_past_the_size_limit(tmp_path):
    """The declared size says 10 bytes; the member really holds 3 MiB: the counted bytes decide."""
    path = write_zip(tmp_path / "liar.zip", {**good(), "logs/j1/big.log": b"y" * (3 << 20)})
    data = bytearray(path.read_bytes())
    # Patch the uncompressed size in the central directory entry of the last member to 10 bytes.
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    liar = tmp_path / "liar2.zip"
    liar.write_bytes(bytes(data))
    with pytest.raises(ArchiveError) as caught:
        parse_archive(liar, limits=ReaderLimits(max_member_bytes=1 << 20))
    message = str(caught.value)
    assert "corrupt" in message or "larger than" in message


def test_a_zip_member_name_flagged_utf8_that_is_not_is_a_corrupt_zip(tmp_path, storage_dir):
    path = write_zip(tmp_path / "names.zip", {**good(), "logs/j1/caf\u00e9.log": "Epoch 1/3\n"})
    # The writer flags the name as UTF-8 (it has an é); make its bytes something UTF-8 cannot be.
    broken = tmp_path / "broken.zip"
    broken.write_bytes(path.read_bytes().replace("caf\u00e9".encode(), b"caf\x80\x80"))
    run = ingest_file(broken)
    assert_nothing_kept(run, storage_dir, "not a readable zip file; it is truncated or corrupt ('utf-8' codec")


def test_a_tarball_bomb_is_refused_before_it_is_inflated(tmp_path, storage_dir, settings):
    path = tmp_path / "bomb.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, content in good().items():
            data = content.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("logs/j1/huge.log")
        info.size = 300 << 20

        class Zeros(io.RawIOBase):
            left = info.size

            def readable(self):
                return True

            def readinto(self, buffer):
                n = min(len(buffer), self.left)
                buffer[:n] = b"\0" * n
                self.left -= n
                return n

        archive.addfile(info, io.BufferedReader(Zeros()))
    settings.ARCHIVE_MAX_TOTAL_BYTES = 100 << 20
    run = ingest_file(path)
    assert_nothing_kept(run, storage_dir, "holds more than 104857600 bytes (100 MiB) of data when decompressed")
    settings.ARCHIVE_MAX_TOTAL_BYTES = 1 << 40
    settings.ARCHIVE_MAX_RATIO = 50
    Job.objects.all().delete()
    run = ingest_file(path)
    assert_nothing_kept(run, storage_dir, "expands more than 50 times its compressed size")


def test_per_member_size_and_member_count_limits(tmp_path, storage_dir, settings):
    settings.ARCHIVE_MAX_MEMBER_BYTES = 16384
    path = write_zip(tmp_path / "big.zip", {**good(), "logs/j2/big.log": "z" * 20000})
    run = ingest_file(path)
    assert_nothing_kept(run, storage_dir, "member 'logs/j2/big.log' is larger than 16384 bytes (16 KiB)")
    settings.ARCHIVE_MAX_MEMBER_BYTES = 1 << 30
    settings.ARCHIVE_MAX_MEMBERS = 10
    many = {**good(), **{f"logs/j1/{i}.log": "x" for i in range(20)}}
    run = ingest_file(write_zip(tmp_path / "many.zip", many))
    assert_nothing_kept(run, storage_dir, "too many members")


# -- wrong or lying types --------------------------------------------------------------------------
def test_an_upload_that_is_not_an_archive_is_named_as_such(tmp_path, storage_dir):
    page = tmp_path / "fleet.zip"
    page.write_text("<!doctype html><html><body>Login</body></html>")
    run = ingest_file(page)
    assert_nothing_kept(run, storage_dir, "fleet.zip is not a zip archive (its content is not a zip file)")


def test_a_jobs_csv_that_is_really_a_zip_rejects_the_archive(tmp_path, storage_dir):
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("x", "y")
    run = ingest_file(write_zip(tmp_path / "a.zip", {**good(), "jobs.csv": inner.getvalue()}))
    assert_nothing_kept(run, storage_dir, "is a ZIP archive, not CSV text (wrong extension?)")
    assert run.errors[0]["file"] == "jobs.csv"


def test_a_metrics_parquet_that_is_csv_text_is_named(tmp_path, storage_dir):
    members = good()
    members["metrics.parquet"] = members.pop("metrics.csv")
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    assert_nothing_kept(run, storage_dir, "is text (CSV?), not a Parquet file (wrong extension?)")


def test_a_per_job_csv_that_is_parquet_rejects_that_job_only(tmp_path):
    buffer = io.BytesIO()
    pq.write_table(pa.table({"timestamp": [1.0], "gpu_util": [1.0]}), buffer)
    members = good()
    members["metrics/j2.csv"] = buffer.getvalue()
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    assert run.status == IngestRun.Status.PARTIAL
    error = next(e for e in run.errors if e["file"] == "metrics/j2.csv")
    assert error["job_id"] == "j2" and "is a Parquet file, not CSV text" in error["message"]
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j3"}


# -- broken text: the file's jobs only -------------------------------------------------------------
def test_non_utf8_jobs_file_rejects_the_archive_naming_the_line(tmp_path, storage_dir):
    jobs = JOBS.encode().replace(b"bob", b"b\xf6b")  # Latin-1, not UTF-8
    run = ingest_file(write_zip(tmp_path / "a.zip", {**good(), "jobs.csv": jobs}))
    assert_nothing_kept(run, storage_dir, "not UTF-8 text: invalid byte 0xf6 on line 3")


def test_non_utf8_per_job_metrics_reject_only_that_job(tmp_path):
    members = good()
    members["metrics/j3.csv"] = (HEADER + rows("j3")).encode().replace(b",n1,", b",n\xe91,", 1)
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    error = next(e for e in run.errors if e["file"] == "metrics/j3.csv")
    assert "not UTF-8 text: invalid byte 0xe9 on line 2" in error["message"] and error["job_id"] == "j3"
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j2"}


def test_nul_bytes_in_a_per_job_csv_reject_only_that_job(tmp_path):
    members = good()
    members["metrics/j1.csv"] = (HEADER + rows("j1")).encode().replace(b"\n", b"\n\0", 5)[:-1] + b"\n"
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    error = next(e for e in run.errors if e["file"] == "metrics/j1.csv")
    assert "contains a NUL byte on line 2; a CSV file must be text" in error["message"]
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j2", "j3"}


def test_a_ragged_metrics_row_rejects_its_job_only(tmp_path):
    members = good()
    members["metrics.csv"] = HEADER + rows("j1") + "j2,2026-11-02T10:00:00Z,n1,0,50\n" + rows("j2") + rows("j3")
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    error = next(e for e in run.errors if e["job_id"] == "j2")
    assert (error["file"], error["row"]) == ("metrics.csv", 61)
    assert "row has 5 fields, expected 7" in error["message"]
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j3"}


# -- broken values ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("inf", "non-numeric gpu_util value 'inf'"),
        ("-Infinity", "non-numeric gpu_util value '-Infinity'"),
        ("-3", "gpu_util value '-3' is out of range (must be 0–100 %)"),
        ("150", "gpu_util value '150' is out of range (must be 0–100 %)"),
        ("lots", "non-numeric gpu_util value 'lots'"),
    ],
)
def test_bad_metric_values_reject_their_job_with_the_row(tmp_path, value, expected):
    members = good()
    members["metrics.csv"] = members["metrics.csv"].replace(
        "j2,2026-11-02T10:07:00Z,n1,0,50.0", f"j2,2026-11-02T10:07:00Z,n1,0,{value}"
    )
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    error = next(e for e in run.errors if e["job_id"] == "j2")
    assert (error["file"], error["row"], error["field"]) == ("metrics.csv", 68, "gpu_util")
    assert expected in error["message"]
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j3"}


@pytest.mark.parametrize("as_parquet", [False, True], ids=["csv", "parquet"])
def test_metric_values_too_large_for_the_series_reject_their_job(tmp_path, as_parquet):
    """Series keep float32: 1e39 MiB was stored as infinity, and the job's triage, the job API and its
    timeline then failed on it. It is out of range like any bad value."""
    members = good()
    members["metrics.csv"] = members["metrics.csv"].replace(
        "j2,2026-11-02T10:07:00Z,n1,0,50.0,1000,", "j2,2026-11-02T10:07:00Z,n1,0,50.0,1e39,"
    )
    if as_parquet:
        import pandas as pd

        frame = pd.read_csv(io.StringIO(members.pop("metrics.csv")))
        members["metrics.parquet"] = _parquet(frame)
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    error = next(e for e in run.errors if e["job_id"] == "j2")
    assert (error["row"], error["field"]) == (68, "gpu_mem_used_mib")
    assert (
        "gpu_mem_used_mib value" in error["message"]
        and "is out of range (must be ≥ 0 and at most 3.403e+38, the" in error["message"]
    )
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j3"}


def _parquet(frame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    return buffer.getvalue()


def test_nan_is_a_missing_value_not_an_error(tmp_path):
    members = good()
    members["metrics.csv"] = members["metrics.csv"].replace(
        "j2,2026-11-02T10:07:00Z,n1,0,50.0", "j2,2026-11-02T10:07:00Z,n1,0,NaN"
    )
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    assert run.status == IngestRun.Status.SUCCEEDED and Job.objects.count() == 3


def test_samples_outside_the_job_window_are_noted_and_not_counted(tmp_path):
    members = good()
    members["metrics.csv"] += "j1,2026-11-03T10:00:00Z,n1,0,0,1000,80000\n"
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    assert run.status == IngestRun.Status.SUCCEEDED
    note = next(e for e in run.errors if e["job_id"] == "j1")
    assert note["field"] == "timestamp"
    assert "1 sample lies outside the job's window 2026-11-02T10:00:00Z – 2026-11-02T11:00:00Z" in note["message"]
    assert Job.objects.get(external_id="j1").mean_gpu_util == pytest.approx(50.0)


def test_jobs_past_2262_import_with_their_series(tmp_path):
    """Times go to the year 5138; pandas' nanosecond timestamps end in April 2262, and checking a
    job's samples against its window through them failed the whole import (OverflowError)."""
    members = good()
    members["jobs.csv"] = JOBS + "j4,dan,nlp,1,5138-11-16T07:00:00Z,5138-11-16T08:00:00Z\n"
    late = "".join(f"j4,5138-11-16T07:{minute:02d}:00Z,n1,0,25,1000,80000\n" for minute in range(60))
    members["metrics.csv"] += late + "j4,5138-11-16T08:30:00.250Z,n1,0,0,1000,80000\n"
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    assert run.status == IngestRun.Status.SUCCEEDED, [e["message"] for e in run.errors]
    [note] = [e for e in run.errors if e["job_id"] == "j4"]
    assert note["message"].startswith(
        "1 sample lies outside the job's window 5138-11-16T07:00:00Z – 5138-11-16T08:00:00Z"
        " (first at 5138-11-16T08:30:00.250000Z)"
    )
    job = Job.objects.get(external_id="j4")
    assert job.mean_gpu_util == pytest.approx(25.0) and job.sample_count == 60


def test_end_before_start_rejects_that_job(tmp_path):
    jobs = JOBS.replace(
        "j3,cat,nlp,1,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z",
        "j3,cat,nlp,1,2026-11-02T10:00:00Z,2026-11-02T09:00:00Z",
    )
    run = ingest_file(write_zip(tmp_path / "a.zip", {**good(), "jobs.csv": jobs}))
    error = next(e for e in run.errors if e["job_id"] == "j3")
    assert (error["row"], error["field"]) == (3, "end_time")
    assert "end_time 2026-11-02T09:00:00+00:00 is before start_time 2026-11-02T10:00:00+00:00" in error["message"]
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j2"}


def test_conflicting_duplicate_job_rows_reject_that_job_naming_both_rows(tmp_path):
    jobs = JOBS + "j1,ann,vision,4,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z\n"
    run = ingest_file(write_zip(tmp_path / "a.zip", {**good(), "jobs.csv": jobs}))
    error = next(e for e in run.errors if e["job_id"] == "j1")
    assert error["field"] == "gpu_count"
    assert (
        "job_id 'j1' appears in rows 1 and 4 with different values (row 1 vs row 4): gpu_count '1' vs '4'"
        in (error["message"])
    )
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j2", "j3"}


def test_identical_duplicate_job_rows_are_kept_once(tmp_path):
    jobs = JOBS + "j1,ann,vision,1,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z\n"
    run = ingest_file(write_zip(tmp_path / "a.zip", {**good(), "jobs.csv": jobs}))
    assert run.status == IngestRun.Status.SUCCEEDED and Job.objects.count() == 3


# -- Parquet columns of types no export should have (found by tests/test_archive_fuzz.py) ----------
def parquet_metrics(**columns) -> bytes:
    """A metrics.parquet of j1, j2 and j3 (60 rows each), with `columns` replacing or adding columns."""
    count = 180
    base = {
        "job_id": [job for job in ("j1", "j2", "j3") for _ in range(60)],
        "timestamp": pa.array([1793613600000 + 60_000 * (i % 60) for i in range(count)], pa.timestamp("ms", "UTC")),
        "host": ["n1"] * count,
        "gpu": pa.array([0] * count, pa.int16()),
        "gpu_util": pa.array([50.0] * count, pa.float32()),
    }
    buffer = io.BytesIO()
    pq.write_table(pa.table({**base, **columns}), buffer)
    return buffer.getvalue()


def with_parquet(tmp_path: Path, metrics: bytes) -> Path:
    members = good()
    del members["metrics.csv"]
    return write_zip(tmp_path / "a.zip", {**members, "metrics.parquet": metrics})


def test_a_parquet_column_of_lists_is_named_and_refuses_the_file(tmp_path, storage_dir):
    metrics = parquet_metrics(job_id=pa.array([[1]] * 180, pa.list_(pa.int64())))
    run = ingest_file(with_parquet(tmp_path, metrics))
    assert_nothing_kept(run, storage_dir, "column 'job_id' holds list<element: int64> values; expected one text")


def test_parquet_bytes_are_read_as_utf8_text_or_refused_naming_the_row(tmp_path, storage_dir):
    ids = [job.encode() for job in ("j1", "j2", "j3") for _ in range(60)]
    run = ingest_file(with_parquet(tmp_path, parquet_metrics(job_id=pa.array(ids, pa.binary()))))
    assert run.status == IngestRun.Status.SUCCEEDED and Job.objects.filter(sample_count=60).count() == 3

    ids[61] = b"j\x802"
    run = ingest_file(with_parquet(tmp_path, parquet_metrics(job_id=pa.array(ids, pa.binary()))))
    assert run.status == IngestRun.Status.FAILED
    assert "column 'job_id', row 62: not UTF-8 text (invalid byte 0x80" in run.errors[0]["message"]
    assert (run.errors[0]["row"], run.errors[0]["field"]) == (62, "job_id")

    # Text columns too: Parquet's UTF-8 annotation is the writer's word, which nothing checks.
    lying = pa.array(ids, pa.binary()).view(pa.string())
    run = ingest_file(with_parquet(tmp_path, parquet_metrics(job_id=lying)))
    assert run.status == IngestRun.Status.FAILED
    assert "column 'job_id', row 62: not UTF-8 text (invalid byte 0x80" in run.errors[0]["message"]


def test_parquet_times_beyond_the_year_5138_are_bad_rows_not_a_crash(tmp_path):
    stamps = [1793613600000 + 60_000 * (i % 60) for i in range(180)]
    stamps[70] = 9_290_467_845_051_648  # the year 296,360: a timestamp[ms] holds it, a datetime cannot
    run = ingest_file(with_parquet(tmp_path, parquet_metrics(timestamp=pa.array(stamps, pa.timestamp("ms", "UTC")))))
    assert run.status == IngestRun.Status.PARTIAL
    error = next(e for e in run.errors if e["job_id"] == "j2")
    assert error["field"] == "timestamp" and error["row"] == 71
    assert "unparseable timestamp '9290467845051648 (timestamp[ms, tz=UTC])'" in error["message"]
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j3"}


def test_parquet_integers_beyond_float_precision_are_range_errors_not_a_crash(tmp_path):
    util = [50] * 180
    util[130] = 2**53 + 1
    run = ingest_file(with_parquet(tmp_path, parquet_metrics(gpu_util=pa.array(util, pa.int64()))))
    error = next(e for e in run.errors if e["job_id"] == "j3")
    assert error["field"] == "gpu_util" and error["row"] == 131 and "out of range" in error["message"]
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j2"}


def test_parquet_half_precision_metrics_are_read(tmp_path):
    import numpy as np

    util = pa.array(np.full(180, 50.0, dtype=np.float16), pa.float16())
    run = ingest_file(with_parquet(tmp_path, parquet_metrics(gpu_util=util)))
    assert run.status == IngestRun.Status.SUCCEEDED
    assert sorted(Job.objects.values_list("mean_gpu_util", flat=True)) == [50.0, 50.0, 50.0]


def test_nan_and_infinity_in_json_rows_are_not_json_and_reject_only_their_row(tmp_path):
    """Python reads NaN and Infinity as JSON, and a number too large for a float (1e400) as infinity;
    PostgreSQL's jsonb refuses them, so a job keeping one in its raw record or labels failed the whole
    batch's insert. They are row errors, like any bad JSON."""
    row = '{"job_id": "%s", "user": "a", "team": "t", "gpu_count": 1, "start_time": 1793613600, "end_time": 1793617200'
    jobs = (
        (row % "j1") + ', "extra": NaN}\n'
        + (row % "j2") + ', "labels": "{\\"x\\": Infinity}"}\n'
        + (row % "j3") + "}\n"
        + (row % "j4") + ', "extra": {"bytes": 1e400}}\n'
        + (row % "j5") + ', "user": "a\\ud800b"}\n'  # half a UTF-16 pair: no text (the upload answered 500)
    )  # fmt: skip
    path = write_zip(tmp_path / "a.zip", {"manifest.json": MANIFEST, "jobs.jsonl": jobs})
    run = ingest_file(path)
    assert run.status == IngestRun.Status.PARTIAL
    assert {(e["row"], e["field"], e["message"]) for e in run.errors} == {
        (1, "", "not valid JSON: NaN is not a JSON value (write null, or a number)"),
        (2, "labels", 'must be a JSON object, e.g. {"project": "x"} (got \'{"x": Infinity}\')'),
        (4, "", "not valid JSON: the number 1e400 is too large to store"),
        (5, "", "not valid JSON: a \\ud800–\\udfff escape not paired as UTF-16 is not text"),
    }
    assert list(Job.objects.values_list("external_id", flat=True)) == ["j3"]


# -- NUL characters: PostgreSQL keeps none in text or jsonb (found by fuzzing the import on PostgreSQL)
def test_nul_characters_never_reach_the_database(tmp_path):
    row = '{"job_id": "%s", "user": "a", "team": "t", "gpu_count": 1, "start_time": 1793613600, "end_time": 1793617200'
    jobs = (
        (row % "j1") + ', "name": "tr\\u0000ain"}\n'
        + (row % "j2") + ', "labels": {"k": "v\\u0000"}}\n'
        + (row % "j3") + "}\n"
        + "[" * 100_000 + "\n"  # deeper than Python's json can follow
    )  # fmt: skip
    ids = ["j3"] * 3 + ["j\x004"]  # a metrics row for a job id with a NUL: noted, the note stored
    metrics = io.BytesIO()
    stamps = pa.array([1793613600000 + 60_000 * i for i in range(4)], pa.timestamp("ms", "UTC"))
    pq.write_table(pa.table({"job_id": ids, "timestamp": stamps, "gpu": [0] * 4, "gpu_util": [50.0] * 4}), metrics)
    log = "2026-11-02 10:00:05,000 Epoch 1/3 \x00\x00done\n"
    members = {"manifest.json": MANIFEST, "jobs.jsonl": jobs, "metrics.parquet": metrics.getvalue()}
    run = ingest_file(write_zip(tmp_path / "a.zip", {**members, "logs/j3/stdout.log": log}))
    assert run.status == IngestRun.Status.PARTIAL
    found = {(e["row"], e["field"], e["message"]) for e in run.errors}
    nul = "contains a NUL character (\\u0000), which cannot be stored; remove it"
    assert {(1, "name", nul), (2, "labels.k", nul), (4, "", "not valid JSON: nested too deeply")} <= found
    assert any(e["job_id"] == "j4" and "is not in jobs.jsonl" in e["message"] for e in run.errors)
    [job] = Job.objects.all()
    assert job.external_id == "j3" and job.sample_count == 3
    assert list(job.log_events.values_list("text", flat=True)) == ["2026-11-02 10:00:05,000 Epoch 1/3 done"]


def test_counts_beyond_any_job_are_row_errors_and_null_equals_absent_in_repeated_rows(tmp_path):
    row = '{"job_id": "%s", "user": "a", "team": "t", "start_time": 1793613600, "end_time": 1793617200'
    jobs = (
        (row % "j1") + ', "gpu_count": 10000000000000}\n'  # an integer column would overflow on PostgreSQL
        + (row % "j2") + ', "gpu_count": 1, "cpu_count": 1e300}\n'
        + (row % "j3") + ', "gpu_count": 1, "name": null}\n'
        + (row % "j3") + ', "gpu_count": 1}\n'  # the same job again, with its name left out: no conflict
    )  # fmt: skip
    run = ingest_file(write_zip(tmp_path / "a.zip", {"manifest.json": MANIFEST, "jobs.jsonl": jobs}))
    assert run.status == IngestRun.Status.PARTIAL
    assert {(e["job_id"], e["field"], e["message"]) for e in run.errors} == {
        ("j1", "gpu_count", "10000000000000 is more than any job has (at most 1,000,000)"),
        ("j2", "cpu_count", f"{int(1e300)} is more than any job has (at most 1,000,000)"),
    }
    assert list(Job.objects.values_list("external_id", flat=True)) == ["j3"]


def test_gpu_hours_beyond_any_job_are_a_row_error_and_a_priced_fleet_still_imports(tmp_path):
    """A million GPUs for 56 years at 2.50 an hour: the cost overflowed its column on PostgreSQL and
    failed the whole import ("numeric field overflow"). Now that job is a row error; the others land
    with their costs."""
    from decimal import Decimal

    from fleet.models import Cluster, GpuModelPrice

    GpuModelPrice.objects.create(cluster=Cluster.objects.create(name="c1"), price_per_gpu_hour="999999.9999")
    row = '{"job_id": "%s", "user": "a", "team": "t", "gpu_count": %d, "start_time": %d, "end_time": %d}\n'
    jobs = (
        row % ("huge", 1_000_000, 86_400, 1_767_225_600)
        + row % ("largest", 1_000_000, 1_767_225_600, 1_767_225_600 + 3_600_000)  # 10^9 GPU-hours: kept
        + row % ("ok", 1, 1_767_225_600, 1_767_229_200)
    )
    run = ingest_file(write_zip(tmp_path / "a.zip", {"manifest.json": MANIFEST, "jobs.jsonl": jobs}))
    assert run.status == IngestRun.Status.PARTIAL
    assert [(e["job_id"], e["field"], e["message"]) for e in run.errors] == [
        (
            "huge",
            "end_time",
            "1000000 GPUs from 1970-01-02 to 2026-01-01 are 490,872,000,000 GPU-hours, more than any job has"
            " (at most 1,000,000,000)",
        )
    ]
    assert dict(Job.objects.values_list("external_id", "cost")) == {
        "largest": Decimal("999999999900000.00"),
        "ok": Decimal("1000000.00"),
    }


def test_artifact_paths_alike_in_their_first_500_characters_stay_two_artifacts(tmp_path):
    """A path is kept to 500 characters; two cut to the same text broke the job's unique paths and
    failed the whole import (IntegrityError). A long path now ends in a hash of the whole."""
    from fleet.models import Artifact

    long = "deep/" * 120
    members = good() | {f"logs/j1/{long}a.log": "Epoch 1/3\n", f"logs/j1/{long}b.log": "Epoch 2/3\n"}
    run = ingest_file(write_zip(tmp_path / "a.zip", members))
    assert run.status == IngestRun.Status.SUCCEEDED
    deep = Artifact.objects.filter(job__external_id="j1", path__startswith="deep/")
    paths = sorted(deep.values_list("path", flat=True))
    assert len(paths) == 2 and paths[0] != paths[1]
    assert all(len(path) == 500 and path.startswith(long[:480]) for path in paths)
    contents = {a.path: a.file.read() for a in deep}
    assert sorted(contents.values()) == [b"Epoch 1/3\n", b"Epoch 2/3\n"]
    ingest_file(write_zip(tmp_path / "b.zip", members))  # the same paths again: the job is unchanged
    assert deep.count() == 2 and Job.objects.get(external_id="j1").ingest_run_id == run.pk


def test_native_text_longer_than_its_column_is_cut_and_an_overlong_job_id_refused(tmp_path):
    """Native files bring whatever the platform holds (the job schema bounds only an archive's own
    rows): on PostgreSQL a name longer than its column failed the whole batch."""
    doc = json.loads((Path(__file__).parent / "fixtures" / "connectors" / "sacct_v0.0.40.json").read_text())
    doc["jobs"][0]["name"] = "n" * 600
    doc["jobs"][1]["partition"] = "p" * 300
    pod = {
        "metadata": {"name": "nb", "namespace": "vision", "uid": "u" * 300},
        "spec": {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Succeeded", "startTime": "2024-05-06T12:53:20Z", "containerStatuses": [
            {"name": "main", "state": {"terminated": {"startedAt": "2024-05-06T12:53:20Z",
                                                      "finishedAt": "2024-05-06T13:23:20Z"}}}]},
    }  # fmt: skip
    members = {
        "manifest.json": MANIFEST,
        "native/slurm/sacct.json": json.dumps(doc),
        "native/kubernetes/pods.json": json.dumps({"kind": "List", "items": [pod]}),
    }
    run = ingest_file(write_zip(tmp_path / "native.zip", members))
    # The pod's job is not stored: a rejected job, counted as the run's page and the API count rejections (it was
    # a note, the run "Succeeded" with its error reading "job … not stored" beside "0 jobs rejected").
    assert (run.status, run.jobs_rejected, run.jobs_total) == (IngestRun.Status.PARTIAL, 1, 4)
    [error] = [e for e in run.errors if e["field"] == "external_id"]
    assert error["message"] == "a job id of 300 characters; at most 200 are kept"
    assert error["effect"] == "rejected"
    assert Job.objects.get(external_id="4242").name == "n" * 500
    assert Job.objects.get(external_id="4250_3").queue == "p" * 200  # the array task of entry 2


def test_a_broken_kubectl_nodes_file_is_named_and_its_pods_jobs_stored(tmp_path):
    """A `kubectl get nodes -o json` beside the pods gives shared GPUs their replicas; one cut short (or of the
    wrong shape) is named on the ingest run, and the pods' jobs are stored all the same, their replicas read as
    without nodes (the job says so)."""
    from tests.test_connectors_normalisers import KUBECTL_NODES, SHARED_PODS

    members = {
        "manifest.json": MANIFEST,
        "native/kubernetes/pods.json": json.dumps({"kind": "List", "items": SHARED_PODS}),
        "native/kubernetes/nodes.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": KUBECTL_NODES}),
    }
    run = ingest_file(write_zip(tmp_path / "k8s.zip", members))
    assert run.status == IngestRun.Status.SUCCEEDED and not run.errors, run.errors
    a100 = Job.objects.get(name="nb-a")  # half an hour on a quarter of an A100
    assert (a100.gpu_share, a100.gpu_hours) == (0.25, pytest.approx(0.125))

    members["native/kubernetes/nodes.json"] = '{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "meta'
    run = ingest_file(write_zip(tmp_path / "k8s-cut.zip", members))
    assert run.status == IngestRun.Status.SUCCEEDED  # a note: no job was rejected
    [error] = run.errors
    assert error["file"] == "native/kubernetes/nodes.json" and error["message"].startswith(
        "native/kubernetes/nodes.json: not valid JSON"
    )
    jobs = {job.name: job for job in Job.objects.all()}
    assert sorted(jobs) == ["nb-a", "nb-l4", "nb-old"]
    assert jobs["nb-a"].labels["gpu_replicas"] == [
        "unknown on a100-0 (counted whole: nodes not read, and no shared_gpu_replicas)"
    ]


# -- hostile member names: quoted by their first characters and their length -----------------------
LONG = 5000


def test_a_5000_character_member_name_is_not_repeated_whole_in_the_error_report(tmp_path, client, operator):
    """Archive messages quoted a member's name whole: a 5,000-character name went back whole into the ingest run's
    errors, its page and its errors CSV, once in the file column and again in the message. The file column and the
    message now give its first 100 characters, an ellipsis and its length (fleet.quoting), as the API quotes a
    value it refuses; a short name reads as before."""
    names = {
        "native/kubernetes": f"native/kubernetes/{'k' * LONG}.json",
        "native/slurm": f"native/slurm/{'s' * LONG}.json",
        "native/other": f"native/other/{'o' * LONG}.json",
        "native/prometheus": f"native/prometheus/{'p' * LONG}/gpu_util.json",
        "metrics": f"metrics/{'m' * LONG}.csv",
        "logs": f"logs/{'l' * LONG}/stdout.log",
        "scripts": f"scripts/{'x' * LONG}.py",
    }
    util = {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0"}, "values": [[1793613600, "50"]]}
    prometheus = {"status": "success", "data": {"resultType": "matrix", "result": [util]}}
    members = {
        **good(),
        names["native/kubernetes"]: "{",
        names["native/slurm"]: "nope",
        names["native/other"]: "{}",
        names["native/prometheus"]: json.dumps(prometheus),
        names["metrics"]: HEADER + rows("m" * LONG, count=2),
        names["logs"]: "hello\n",
        names["scripts"]: "print(1)\n",
    }
    run = ingest_file(write_zip(tmp_path / "long.zip", members))
    assert run.status == IngestRun.Status.SUCCEEDED, run.errors
    assert Job.objects.count() == 3
    said = {}
    for error in run.errors:
        folder = next(key for key in names if error["file"].startswith(f"'{key}/"))
        said[folder] = error
        assert len(error["file"]) < 150, error["file"]
        assert "…' (5," in error["file"] and " characters)" in error["file"], error["file"]
        assert len(error["message"]) + len(error["job_id"]) < 600, error
    assert sorted(said) == sorted(names), run.errors
    assert said["native/kubernetes"]["message"].startswith(f"'native/kubernetes/{'k' * 82}…' (5,023 characters): ")

    client.force_login(operator)
    page = client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert "k" * 200 not in page and "m" * 200 not in page and "l" * 200 not in page
    report = client.get(f"/ingest-runs/{run.pk}/errors.csv").content.decode()
    assert "k" * 200 not in report and "m" * 200 not in report and "l" * 200 not in report
    assert "(5,023 characters)" in report


def test_a_hostile_member_name_that_refuses_the_archive_is_quoted_short(tmp_path, storage_dir):
    """A member that refuses the whole archive (a link, a name climbing out, a duplicate) is named by its first
    characters and its length, not all 5,000 of them."""
    link = tarfile.TarInfo(f"logs/j1/{'e' * LONG}")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    run = ingest_file(tar_with(tmp_path / "evil.tar.gz", good(), [link]))
    assert_nothing_kept(run, storage_dir, "…' (5,008 characters) is a symbolic link; only regular files are allowed")
    assert len(run.errors[0]["message"]) < 300, run.errors

    run = ingest_file(write_zip(tmp_path / "climb.zip", {**good(), f"../{'c' * LONG}": "x"}))
    assert_nothing_kept(run, storage_dir, "…' (5,003 characters) contains a '..' path component")
    assert len(run.errors[0]["message"]) < 300, run.errors


# -- hostile values: an uploaded archive's name and its cells, quoted by their first characters and length ----
def errors_shown(client, run: IngestRun) -> tuple[str, str]:
    """The run's errors table as its page shows it, and its errors CSV."""
    page = client.get(f"/ingest-runs/{run.pk}/").content.decode()
    table = page.split('id="error-table"')[1].split("</table>")[0]
    return table, client.get(f"/ingest-runs/{run.pk}/errors.csv").content.decode()


def test_a_255_character_archive_name_is_quoted_short_in_its_error(tmp_path, storage_dir, client, operator):
    """The archive's own name, as the person uploading it gave it, went whole into "… is not a zip archive". The
    longest a name comes is 255 characters (a file name on Linux; Django cuts an upload's to that)."""
    page = tmp_path / "upload.zip"
    page.write_text("<!doctype html><html><body>Login</body></html>")
    name = "f" * 251 + ".zip"
    run = ingest.execute_run(ingest.create_run(page, name=name).pk)
    assert_nothing_kept(run, storage_dir, "…' (255 characters) is not a zip archive (its content is not a zip file)")
    assert run.errors[0]["message"].startswith(f"'{'f' * 100}…' (255 characters) is not a zip archive")
    assert len(run.errors[0]["message"]) < 300, run.errors
    client.force_login(operator)
    for shown in errors_shown(client, run):
        assert "f" * 200 not in shown and "(255 characters) is not a zip archive" in shown


def test_a_run_keeps_a_name_longer_than_its_column_cut_to_it(tmp_path):
    """A name given to create_run longer than the run's archive_name column (500) failed on PostgreSQL with a
    DataError (SQLite keeps any length); it is cut to the column, as an upload's name is."""
    run = ingest.create_run(tmp_path / "a.zip", name="n" * LONG)
    run.refresh_from_db()
    assert run.archive_name == "n" * 500


def test_5000_character_cells_are_quoted_short_in_the_runs_errors(tmp_path, client, operator):
    """A metrics cell (a timestamp, a value, a GPU index), a jobs.csv cell and a job id repeated with different
    values were quoted whole with repr: 5,000 characters, in the run's errors, its page and its CSV, for each."""
    long_job = "J" * LONG
    jobs = JOBS + f"{long_job},dan,nlp,1,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z\n"
    jobs += f"{long_job},dan,nlp,2,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z\n"
    jobs = jobs.replace("j3,cat,nlp,1,", f"j3,cat,{'t' * LONG},{'9' * 50}x,")
    metrics = HEADER + rows("j1", count=2) + rows("j2", count=2)
    metrics += f"j1,{'T' * LONG},n1,0,50,1000,80000\n"
    metrics += f"j2,2026-11-02T10:30:00Z,n1,0,{'V' * LONG},1000,80000\n"
    metrics += f"j1,2026-11-02T10:40:00Z,n1,{'G' * LONG},50,1000,80000\n"
    run = ingest_file(write_zip(tmp_path / "cells.zip", {**good(), "jobs.csv": jobs, "metrics.csv": metrics}))
    messages = [error["message"] for error in run.errors]
    expected = [
        f"job_id '{'J' * 100}…' (5,000 characters) appears in rows",
        f"unparseable timestamp '{'T' * 100}…' (5,000 characters) (expected ISO 8601 or Unix seconds)",
        f"non-numeric gpu_util value '{'V' * 100}…' (5,000 characters)",
        f"(got '{'G' * 100}…' (5,000 characters))",
        f"(got '{'9' * 50}x')",  # a short value as before
    ]
    for words in expected:
        assert any(words in message for message in messages), (words, messages)
    assert all(len(message) < 600 for message in messages), messages
    client.force_login(operator)
    for shown in errors_shown(client, run):
        for letter in "JTVG":
            assert letter * 200 not in shown
        assert "(5,000 characters)" in shown


def test_5000_character_column_names_are_quoted_short(tmp_path):
    """A metrics file's column named twice, and columns it does not know, were named whole."""
    column = "c" * LONG
    twice = HEADER.rstrip("\n") + f",{column},{column}\n" + rows("j1", count=2).replace("\n", ",1,1\n")
    run = ingest_file(write_zip(tmp_path / "twice.zip", {**good(), "metrics.csv": twice}))
    said = [f"{error['field']}: {error['message']}" for error in run.errors]
    assert any(f"column '{'c' * 100}…' (5,000 characters) appears more than once in the header" in s for s in said)
    assert all(len(s) < 600 for s in said), said

    unknown = HEADER.rstrip("\n") + f",{column}\n" + rows("j1", count=2).replace("\n", ",1\n")
    run = ingest_file(write_zip(tmp_path / "unknown.zip", {**good(), "metrics.csv": unknown}))
    [error] = [error for error in run.errors if error["message"] == "unknown metric columns ignored"]
    assert error["field"] == f"'{'c' * 100}…' (5,000 characters)", run.errors
