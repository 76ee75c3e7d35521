import importlib.util
import io
import json
import os
import tarfile
import zipfile
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet import series as series_lib
from fleet.archive import ArchiveError, ReaderLimits, parse_archive
from fleet.archive.parser import schema_problems
from fleet.canonical import RecordError

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
EXAMPLE_DIR = EXAMPLES / "example-archive"
EXAMPLE_ZIP = EXAMPLES / "example-archive.zip"

MANIFEST = {"format": "fleet-archive", "version": 1, "cluster": "c1", "created_at": "2026-10-05T00:00:00Z"}
JOBS_HEADER = "job_id,user,team,gpu_count,start_time,end_time,job_type"
JOBS_ROWS = [
    "j1,alice,vision,2,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,batch",
    "j2,bob,nlp,1,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,",
    "j3,carol,nlp,1,1791190800,1791194400,interactive",
]


# -- helpers ----------------------------------------------------------------------------------
def as_bytes(content) -> bytes:
    if isinstance(content, bytes):
        return content
    if isinstance(content, dict):
        return json.dumps(content).encode()
    return content.encode()


def write_zip(path: Path, files: dict) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, as_bytes(content))
    return path


def write_tar(path: Path, files: dict, mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as archive:
        for name, content in files.items():
            data = as_bytes(content)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def write_dir(path: Path, files: dict) -> Path:
    for name, content in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(as_bytes(content))
    return path


def csv_text(header: str, rows: list[str]) -> str:
    return "\n".join([header, *rows]) + "\n"


def wide_rows(job_id: str | None, minutes=range(0, 60, 5), gpus=(0,), util=50.0, host="n1") -> list[str]:
    prefix = f"{job_id}," if job_id else ""
    return [f"{prefix}2026-10-05T09:{m:02d}:00Z,{host},{gpu},{util}" for m in minutes for gpu in gpus]


def base_files(**overrides) -> dict:
    files = {
        "manifest.json": MANIFEST,
        "jobs.csv": csv_text(JOBS_HEADER, JOBS_ROWS),
        "metrics.csv": csv_text(
            "job_id,timestamp,host,gpu,gpu_util", wide_rows("j1", gpus=(0, 1)) + wide_rows("j2", util=20.0)
        ),
        "logs/j1/stdout.log": "2026-10-05 09:00:01,000 Epoch 1\n",
        "scripts/j1/train.py": "print('hi')\n",
        "scripts/j1/conf/config.yaml": "lr: 0.1\n",
    }
    files.update(overrides)
    return {name: content for name, content in files.items() if content is not None}


def parse_files(tmp_path: Path, files: dict, **kwargs):
    return parse_archive(write_zip(tmp_path / "archive.zip", files), **kwargs)


def archive_error(tmp_path: Path, files: dict) -> RecordError:
    with pytest.raises(ArchiveError) as caught:
        parse_files(tmp_path, files)
    return caught.value.error


def only_error(parsed, job_id: str) -> RecordError:
    assert job_id in parsed.rejected, parsed.errors
    assert len(parsed.rejected[job_id]) == 1, parsed.rejected[job_id]
    return parsed.rejected[job_id][0]


def comparable(parsed) -> dict:
    """Everything a parse produced, in a form that == compares."""
    return {
        "manifest": parsed.manifest,
        "jobs": parsed.jobs,
        "series": {k: series_lib.to_parquet_bytes(v) for k, v in parsed.series.items()},
        "artifacts": {k: sorted(v, key=lambda a: (a.kind, a.path)) for k, v in parsed.artifacts.items()},
        "rejected": parsed.rejected,
        "errors": sorted(map(str, parsed.errors)),
        "duplicates": parsed.duplicate_samples,
    }


# -- the example archive ----------------------------------------------------------------------
def test_example_archive_parses_without_errors():
    parsed = parse_archive(EXAMPLE_DIR)
    assert parsed.errors == []
    assert parsed.rejected == {}
    assert parsed.cluster == "example"
    assert sorted(parsed.jobs) == ["ex-1001", "ex-1002", "ex-1003", "ex-1004", "ex-1005"]
    assert sorted(parsed.series) == ["ex-1001", "ex-1002", "ex-1003", "ex-1005"]  # ex-1004 has no metrics
    assert all(job.cluster == "example" for job in parsed.jobs.values())

    bert = parsed.jobs["ex-1002"]
    assert bert.start_time == datetime(2026, 10, 5, 7, 0, tzinfo=UTC)  # +02:00 in the file
    assert bert.start_time.tzinfo is UTC
    assert parsed.jobs["ex-1003"].start_time == datetime(2026, 10, 5, 11, 0, tzinfo=UTC)  # epoch seconds
    assert parsed.jobs["ex-1003"].command == 'python eval.py --model llama-7b --tasks "mmlu,hellaswag"'
    assert parsed.jobs["ex-1004"].job_type == "interactive"
    assert parsed.jobs["ex-1004"].submit_time == datetime(2026, 10, 5, 11, 59, tzinfo=UTC)  # naive = UTC

    # Long form pivots to wide: 6 timestamps x 2 GPUs, plus 6 host rows carrying cpu_util.
    llama = parsed.series["ex-1003"]
    assert list(llama.columns) == [
        "timestamp",
        "host",
        "gpu",
        "gpu_util",
        "gpu_mem_used_mib",
        "gpu_mem_total_mib",
        "cpu_util",
    ]
    assert len(llama) == 18
    assert llama["gpu"].isna().sum() == 6
    assert llama.loc[llama["gpu"].isna(), "cpu_util"].notna().all()

    kinds = {(a.kind, a.path) for a in parsed.artifacts["ex-1002"]}
    assert kinds == {
        ("log", "stdout.log"),
        ("script", "train.py"),
        ("script", "run.sh"),
        ("script", "requirements.txt"),
    }

    hung = parsed.jobs["ex-1005"]
    summary = series_lib.summarize(parsed.series["ex-1005"], start=hung.start_time, end=hung.end_time, gpu_count=2)
    assert summary.gaps == 2  # one hole per GPU
    assert summary.coverage == pytest.approx(40 / 60)


def test_example_zip_is_in_sync_with_its_folder():
    spec = importlib.util.spec_from_file_location("build_example", EXAMPLES / "build_example.py")
    build_example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_example)
    assert build_example.zip_files() == build_example.example_files(), "run python docs/examples/build_example.py"
    assert comparable(parse_archive(EXAMPLE_ZIP)) == comparable(parse_archive(EXAMPLE_DIR))


# -- containers -------------------------------------------------------------------------------
def test_zip_tar_gz_and_directory_give_equal_results(tmp_path):
    files = base_files()
    results = [
        parse_archive(write_zip(tmp_path / "a.zip", files)),
        parse_archive(write_tar(tmp_path / "a.tar.gz", files)),
        parse_archive(write_tar(tmp_path / "a.tgz", files)),
        parse_archive(write_tar(tmp_path / "a.tar", files, mode="w")),
        parse_archive(write_dir(tmp_path / "folder", files)),
    ]
    first = comparable(results[0])
    assert sorted(first["jobs"]) == ["j1", "j2", "j3"]
    for other in results[1:]:
        assert comparable(other) == first


def test_a_single_top_level_folder_is_the_root(tmp_path):
    files = {f"export-2026-10-05/{name}": content for name, content in base_files().items()}
    parsed = parse_files(tmp_path, files)
    assert sorted(parsed.jobs) == ["j1", "j2", "j3"]
    assert {a.path for a in parsed.artifacts["j1"]} == {"stdout.log", "train.py", "conf/config.yaml"}


def test_desktop_archiver_clutter_is_ignored(tmp_path):
    files = {f"export/{name}": content for name, content in base_files().items()}
    files.update(
        {"__MACOSX/export/._jobs.csv": b"\x00\x05", "export/.DS_Store": b"\x00", "export/logs/j1/._x.log": b"\x00"}
    )
    parsed = parse_files(tmp_path, files)
    assert sorted(parsed.jobs) == ["j1", "j2", "j3"]
    assert parsed.errors == []
    assert {a.path for a in parsed.artifacts["j1"]} == {"stdout.log", "train.py", "conf/config.yaml"}


def test_container_is_recognised_by_content_not_name(tmp_path):
    path = write_tar(tmp_path / "upload.bin", base_files())
    assert sorted(parse_archive(path).jobs) == ["j1", "j2", "j3"]
    # A name that says otherwise does not matter either: a zip called .tar.gz, a gzip tarball called .zip.
    for name, writer in (("mislabelled.tar.gz", write_zip), ("mislabelled.zip", write_tar)):
        assert sorted(parse_archive(writer(tmp_path / name, base_files())).jobs) == ["j1", "j2", "j3"]


def test_a_zip_or_tar_without_its_leading_signature_is_still_read_when_its_name_says_what_it_is(tmp_path):
    """A self-extracting zip starts with a program, an old (v7) tar has no ustar magic: neither is
    found by its first bytes, so the name is the hint, and the container's own check decides."""
    zipped = write_zip(tmp_path / "plain.zip", base_files())
    stub = tmp_path / "self-extracting.zip"
    stub.write_bytes(b"#!/bin/sh\nexit 0\n" + zipped.read_bytes())
    assert sorted(parse_archive(stub).jobs) == ["j1", "j2", "j3"]
    v7 = tmp_path / "old.tar"
    with tarfile.open(v7, "w", format=tarfile.USTAR_FORMAT) as archive:
        for name, content in base_files().items():
            data = as_bytes(content)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    data = bytearray(v7.read_bytes())
    for offset in range(0, len(data) - 512, 512):  # blank each header's magic and fix its checksum
        if data[offset + 257 : offset + 262] == b"ustar":
            data[offset + 257 : offset + 265] = b"\0" * 8
            data[offset + 148 : offset + 156] = b" " * 8
            data[offset + 148 : offset + 156] = b"%06o\0 " % sum(data[offset : offset + 512])
    v7.write_bytes(bytes(data))
    assert sorted(parse_archive(v7).jobs) == ["j1", "j2", "j3"]


@pytest.mark.parametrize("suffix", [".zip", ".tar.gz"])
def test_truncated_container_is_an_archive_error(tmp_path, suffix):
    writer = write_zip if suffix == ".zip" else write_tar
    path = writer(tmp_path / f"whole{suffix}", base_files(**{"logs/j1/big.log": os.urandom(200_000)}))
    truncated = tmp_path / f"cut{suffix}"
    truncated.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ArchiveError) as caught:
        parse_archive(truncated)
    assert caught.value.error.file == f"cut{suffix}"
    assert "truncated or corrupt" in caught.value.error.message


def test_not_an_archive(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(ArchiveError, match="expected a .zip, a .tar.gz or a folder"):
        parse_archive(path)
    with pytest.raises(ArchiveError, match="does not exist"):
        parse_archive(tmp_path / "missing.zip")


@pytest.mark.parametrize(
    "name", ["../evil.csv", "logs/j1/../../../evil.log", "/etc/passwd", "C:/windows/evil", "a\\..\\..\\b"]
)
@pytest.mark.parametrize("writer", [write_zip, write_tar])
def test_escaping_member_names_reject_the_archive(tmp_path, name, writer):
    path = writer(tmp_path / ("a.zip" if writer is write_zip else "a.tar.gz"), base_files(**{name: "x"}))
    with pytest.raises(ArchiveError) as caught:
        parse_archive(path)
    assert caught.value.error.file == path.name
    assert "absolute path" in caught.value.error.message or "'..'" in caught.value.error.message


@pytest.mark.parametrize("link_type", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE])
def test_links_and_devices_in_a_tar_reject_the_archive(tmp_path, link_type):
    path = write_tar(tmp_path / "a.tar.gz", base_files())
    with tarfile.open(path, "r:gz") as source:
        members = [(m, source.extractfile(m).read()) for m in source.getmembers()]
    with tarfile.open(path, "w:gz") as archive:
        for member, data in members:
            archive.addfile(member, io.BytesIO(data))
        link = tarfile.TarInfo("logs/j1/passwd.log")
        link.type = link_type
        link.linkname = "/etc/passwd"
        archive.addfile(link)
    with pytest.raises(ArchiveError, match="only regular files are allowed"):
        parse_archive(path)


def test_symlink_in_a_zip_rejects_the_archive(tmp_path):
    path = write_zip(tmp_path / "a.zip", base_files())
    with zipfile.ZipFile(path, "a") as archive:
        info = zipfile.ZipInfo("logs/j1/passwd.log")
        info.create_system = 3
        info.external_attr = 0o120777 << 16  # a symbolic link
        archive.writestr(info, "/etc/passwd")
    with pytest.raises(ArchiveError, match="symbolic link"):
        parse_archive(path)


def test_symlink_in_a_folder_rejects_it(tmp_path):
    folder = write_dir(tmp_path / "folder", base_files())
    (folder / "logs" / "j1" / "passwd.log").symlink_to("/etc/passwd")
    with pytest.raises(ArchiveError, match="symbolic link"):
        parse_archive(folder)


def test_duplicate_member_names_reject_the_archive(tmp_path):
    path = write_tar(tmp_path / "a.tar", base_files(), mode="w")
    with tarfile.open(path, "a") as archive:
        info = tarfile.TarInfo("./jobs.csv")
        data = b"job_id\n"
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    with pytest.raises(ArchiveError, match="appears more than once"):
        parse_archive(path)


def test_read_limits_are_enforced_while_reading(tmp_path):
    path = write_zip(tmp_path / "a.zip", base_files())
    with pytest.raises(ArchiveError, match="larger than 100 bytes"):
        parse_archive(path, limits=ReaderLimits(max_member_bytes=100))
    with pytest.raises(ArchiveError, match="too many members"):
        parse_archive(path, limits=ReaderLimits(max_members=3))


# -- manifest and jobs file -------------------------------------------------------------------
def test_missing_manifest(tmp_path):
    error = archive_error(tmp_path, base_files(**{"manifest.json": None}))
    assert error.file == "manifest.json"
    assert "missing" in error.message


@pytest.mark.parametrize(
    ("manifest", "field", "fragment"),
    [
        ({**MANIFEST, "version": 2}, "version", "must be 1 (got 2)"),
        ({k: v for k, v in MANIFEST.items() if k != "cluster"}, "cluster", "required field is missing"),
        (
            {**MANIFEST, "cluster": "has space"},
            "cluster",
            "must be 1 to 100 letters, digits, '_' or '-' (got 'has space')",
        ),
        ({**MANIFEST, "cluster": ""}, "cluster", "must be 1 to 100 letters, digits, '_' or '-' (got '')"),
        ({**MANIFEST, "format": "zip"}, "format", "must be 'fleet-archive'"),
    ],
)
def test_invalid_manifest_names_the_field(tmp_path, manifest, field, fragment):
    error = archive_error(tmp_path, base_files(**{"manifest.json": manifest}))
    assert (error.file, error.field) == ("manifest.json", field)
    assert fragment in error.message
    assert "must match" not in error.message  # a regular expression is no help to whoever wrote the manifest


def test_manifest_that_is_not_json(tmp_path):
    error = archive_error(tmp_path, base_files(**{"manifest.json": '{"format": "fleet-archive",\n'}))
    assert error.file == "manifest.json"
    assert error.message.startswith("not valid JSON")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "not valid JSON: nested too deeply"),  # was a RecursionError out of the import
        (
            '{"format": "fleet-archive", "version": NaN}',
            "not valid JSON: NaN is not a JSON value (write null, or a number)",
        ),
    ],
)
def test_manifest_json_that_python_alone_would_read_or_choke_on(tmp_path, text, message):
    error = archive_error(tmp_path, base_files(**{"manifest.json": text}))
    assert (error.file, error.message) == ("manifest.json", message)


def test_jobs_file_is_required_and_unique(tmp_path):
    assert "needs a jobs.csv or a jobs.jsonl" in archive_error(tmp_path, base_files(**{"jobs.csv": None})).message
    error = archive_error(tmp_path, base_files(**{"jobs.jsonl": '{"job_id": "x"}\n'}))
    assert "keep exactly one" in error.message


def test_missing_required_jobs_column_is_an_archive_error(tmp_path):
    header = JOBS_HEADER.replace(",team", "")
    rows = [row.replace(",vision", "").replace(",nlp", "") for row in JOBS_ROWS]
    error = archive_error(tmp_path, base_files(**{"jobs.csv": csv_text(header, rows)}))
    assert (error.file, error.field) == ("jobs.csv", "team")
    assert "required column 'team' is missing" in error.message


def test_jobs_jsonl(tmp_path):
    lines = [
        {"job_id": "j1", "user": "a", "team": "t", "gpu_count": 2, "start_time": 1791190800, "end_time": 1791194400},
        {
            "job_id": 42,
            "user": "b",
            "team": "t",
            "gpu_count": "1",
            "start_time": "2026-10-05T09:00:00Z",
            "end_time": "2026-10-05T10:00:00Z",
            "labels": {"project": "x"},
            "cpu_count": None,
        },
        {"job_id": "bad", "user": "c", "team": "t", "gpu_count": 1.5, "start_time": 0, "end_time": 1},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + '\n\n{"job_id": "cut", "user"'
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": None, "jobs.jsonl": text}))
    assert sorted(parsed.jobs) == ["42", "j1"]
    assert parsed.jobs["42"].labels == {"project": "x"}
    assert parsed.jobs["j1"].start_time == datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
    bad = only_error(parsed, "bad")
    assert (bad.file, bad.row, bad.field) == ("jobs.jsonl", 3, "gpu_count")
    assert bad.message == "must be a whole number of 0 or more, such as 4 (got 1.5)"
    cut = only_error(parsed, "<jobs.jsonl row 5>")
    assert cut.row == 5
    assert "not valid JSON" in cut.message
    # j2's metrics now belong to a job that is not in the jobs file
    assert any(e.job_id == "j2" and "is not in jobs.jsonl" in e.message for e in parsed.errors)


# -- job rows ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        (
            "j3,carol,nlp,1,2026-13-40,2026-10-05T10:00:00Z,",
            "start_time",
            "unparseable timestamp '2026-13-40' (expected ISO 8601 or Unix seconds)",
        ),
        (
            "j3,carol,nlp,1,2026-10-05T09:00:00Z,yesterday,",
            "end_time",
            "unparseable timestamp 'yesterday' (expected ISO 8601 or Unix seconds)",
        ),
        (
            "j3,carol,nlp,1,1791190800000,1791194400,",
            "start_time",
            "unparseable timestamp '1791190800000' (expected ISO 8601 or Unix seconds; this looks like milliseconds)",
        ),
        (
            "j3,carol,nlp,1,1969-12-31T23:00:00Z,2026-10-05T10:00:00Z,",
            "start_time",
            "timestamp '1969-12-31T23:00:00Z' is out of range (from 1970 up to the year 5138)",
        ),
        (  # a moment the calendar cannot hold once made UTC (was an OverflowError)
            "j3,carol,nlp,1,2026-10-05T09:00:00Z,9999-12-31T23:00:00-02:00,",
            "end_time",
            "timestamp '9999-12-31T23:00:00-02:00' is out of range (from 1970 up to the year 5138)",
        ),
        (
            "j3,carol,nlp,two,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,",
            "gpu_count",
            "must be a whole number of 0 or more, such as 4 (got 'two')",
        ),
        (
            "j3,carol,nlp,-1,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,",
            "gpu_count",
            "must be a whole number of 0 or more, such as 4 (got '-1')",
        ),
        ("j3,,nlp,1,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,", "user", "required value is empty"),
        (
            "j3,carol,nlp,1,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,cron",
            "job_type",
            "must be one of batch, interactive (got 'cron')",
        ),
        (
            "j3,carol,nlp,1,2026-10-05T10:00:00Z,2026-10-05T09:00:00Z,",
            "end_time",
            "end_time 2026-10-05T09:00:00+00:00 is before start_time 2026-10-05T10:00:00+00:00",
        ),
        (
            "j 3,carol,nlp,1,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,",
            "job_id",
            "must be letters, digits or . _ : [ ] + - with no spaces or slashes (got 'j 3')",
        ),
    ],
)
def test_a_bad_job_row_rejects_that_job_only(tmp_path, row, field, message):
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(JOBS_HEADER, [*JOBS_ROWS[:2], row])}))
    job_id = row.split(",")[0]
    error = only_error(parsed, job_id)
    assert (error.file, error.row, error.field, error.job_id) == ("jobs.csv", 3, field, job_id)
    assert error.message.startswith(message)
    assert sorted(parsed.jobs) == ["j1", "j2"]
    assert error in parsed.errors
    assert str(error).startswith(f"jobs.csv, row 3, field '{field}' (job {job_id}): ")


def test_a_job_type_in_any_letter_case_is_read_as_its_lower_case_value(tmp_path):
    """Exports write "Interactive" or "BATCH": the job keeps the canonical "interactive"/"batch",
    in jobs.csv as in jobs.jsonl, and the published schema a user checks their export with agrees."""
    rows = [
        "j1,alice,vision,2,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,Interactive",
        "j2,bob,nlp,1,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,BATCH",
        "j3,carol,nlp,1,1791190800,1791194400, iNTERACTIVE ",
    ]
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(JOBS_HEADER, rows)}))
    assert parsed.errors == []
    assert {job_id: job.job_type for job_id, job in parsed.jobs.items()} == {
        "j1": "interactive",
        "j2": "batch",
        "j3": "interactive",
    }
    lines = [{**GOOD_JOB, "job_id": "i", "job_type": "Interactive"}, {**GOOD_JOB, "job_type": "Batch"}]
    jsonl = "".join(json.dumps(line) + "\n" for line in lines)
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": None, "jobs.jsonl": jsonl, "metrics.csv": None}))
    assert parsed.errors == []
    assert (parsed.jobs["i"].job_type, parsed.jobs["j1"].job_type) == ("interactive", "batch")
    written = json.loads((Path(__file__).resolve().parent.parent / "fleet/schemas/job.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(written)
    assert validator.is_valid({**GOOD_JOB, "job_type": "Interactive"})
    assert validator.is_valid({**GOOD_JOB, "job_type": "BATCH"})
    assert not validator.is_valid({**GOOD_JOB, "job_type": "Cron"})


def test_an_unknown_job_type_in_capitals_still_rejects_that_job_naming_it(tmp_path):
    row = "j3,carol,nlp,1,1791190800,1791194400,Notebook"
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(JOBS_HEADER, [*JOBS_ROWS[:2], row])}))
    error = only_error(parsed, "j3")
    assert (error.file, error.row, error.field) == ("jobs.csv", 3, "job_type")
    assert error.message == "must be one of batch, interactive (got 'Notebook')"
    assert sorted(parsed.jobs) == ["j1", "j2"]
    assert list(schema_problems("job.schema.json", {**GOOD_JOB, "job_type": "Notebook"})) == [
        ("job_type", "must be batch or interactive in any letter case, or empty (got 'Notebook')")
    ]


def test_all_problems_of_a_row_are_reported(tmp_path):
    row = "j3,carol,,x,2026-13-40,soon,cron"
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(JOBS_HEADER, [*JOBS_ROWS[:2], row])}))
    assert {e.field for e in parsed.rejected["j3"]} == {"team", "gpu_count", "start_time", "end_time", "job_type"}


def test_optional_job_columns(tmp_path):
    header = JOBS_HEADER + ",cluster,node_count,cpu_count,submit_time,name,labels,queue"
    rows = [
        JOBS_ROWS[0] + ',c2,2,64,2026-10-05T08:00:00Z,resnet,"{""project"": ""x""}",gpu',
        JOBS_ROWS[1] + ",,,,,,,",
    ]
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(header, rows)}))
    j1, j2 = parsed.jobs["j1"], parsed.jobs["j2"]
    assert (j1.cluster, j1.node_count, j1.cpu_count, j1.name, j1.queue) == ("c2", 2, 64, "resnet", "gpu")
    assert j1.submit_time == datetime(2026, 10, 5, 8, 0, tzinfo=UTC)
    assert j1.labels == {"project": "x"}
    assert (j2.cluster, j2.node_count, j2.cpu_count, j2.submit_time, j2.job_type) == ("c1", 1, None, None, "batch")
    assert j1.raw["labels"] == '{"project": "x"}'


def test_a_job_on_mig_slices_or_shared_gpus_carries_its_share(tmp_path):
    header = JOBS_HEADER + ",gpu_share,gpu_unit"
    rows = [
        JOBS_ROWS[0] + ",1/7,MIG 1g.10gb slice",  # a fraction, as MIG profiles are
        JOBS_ROWS[1] + ",0.25,time-sliced GPU (1 of 4)",
        JOBS_ROWS[2] + ",,",  # empty: whole GPUs
    ]
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(header, rows)}))
    assert parsed.errors == []
    j1, j2, j3 = (parsed.jobs[name] for name in ("j1", "j2", "j3"))
    assert (j1.gpu_share, j1.gpu_unit) == (pytest.approx(1 / 7), "MIG 1g.10gb slice")
    assert (j2.gpu_share, j2.gpu_unit) == (0.25, "time-sliced GPU (1 of 4)")
    assert (j3.gpu_share, j3.gpu_unit) == (1.0, "")


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("0", "must be more than 0 and at most 1 (the share of a physical GPU each device is), got '0'"),
        ("1.5", "must be more than 0 and at most 1 (the share of a physical GPU each device is), got '1.5'"),
        ("-0.5", "must be more than 0 and at most 1 (the share of a physical GPU each device is), got '-0.5'"),
        ("nan", "must be more than 0 and at most 1 (the share of a physical GPU each device is), got 'nan'"),
        ("half", "not a number or a fraction like 1/7: 'half'"),
        ("1/0", "not a number or a fraction like 1/7: '1/0'"),
    ],
)
def test_a_bad_gpu_share_rejects_that_job_only(tmp_path, cell, message):
    header = JOBS_HEADER + ",gpu_share"
    rows = [JOBS_ROWS[0] + ",", JOBS_ROWS[1] + ",", JOBS_ROWS[2] + f",{cell}"]
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(header, rows)}))
    error = only_error(parsed, "j3")
    assert (error.file, error.row, error.field) == ("jobs.csv", 3, "gpu_share")
    assert error.message == message
    assert sorted(parsed.jobs) == ["j1", "j2"]


def test_a_gpu_share_in_jsonl_may_be_a_number(tmp_path):
    lines = [
        {"job_id": "j1", "user": "a", "team": "t", "gpu_count": 7, "gpu_share": 0.5, "gpu_unit": "MIG 3g.40gb slice",
         "start_time": "2026-10-05T09:00:00Z", "end_time": "2026-10-05T10:00:00Z"},
        {"job_id": "j2", "user": "a", "team": "t", "gpu_count": 1, "gpu_share": True,
         "start_time": "2026-10-05T09:00:00Z", "end_time": "2026-10-05T10:00:00Z"},
    ]  # fmt: skip
    files = base_files()
    del files["jobs.csv"]
    files["jobs.jsonl"] = "\n".join(json.dumps(line) for line in lines) + "\n"
    parsed = parse_files(tmp_path, files)
    assert (parsed.jobs["j1"].gpu_share, parsed.jobs["j1"].gpu_unit) == (0.5, "MIG 3g.40gb slice")
    assert only_error(parsed, "j2").field == "gpu_share"


def test_a_number_too_large_for_a_float_rejects_that_job_only(tmp_path):
    """JSON's integers have no limit; a share or a time of 400 digits was an OverflowError that ended
    the whole import."""
    huge = 10**400
    times = {"start_time": "2026-10-05T09:00:00Z", "end_time": "2026-10-05T10:00:00Z"}
    lines = [
        json.dumps({"job_id": "j1", "user": "a", "team": "t", "gpu_count": 1, "gpu_share": huge, **times}),
        json.dumps({"job_id": "j2", "user": "a", "team": "t", "gpu_count": 1, **times, "start_time": huge}),
        json.dumps({"job_id": "j3", "user": "a", "team": "t", "gpu_count": 1, **times}),
    ]
    files = base_files()
    del files["jobs.csv"]
    files["jobs.jsonl"] = "\n".join(lines) + "\n"
    parsed = parse_files(tmp_path, files)
    assert sorted(parsed.jobs) == ["j3"]
    share, start = only_error(parsed, "j1"), only_error(parsed, "j2")
    assert (share.field, share.message) == (
        "gpu_share",
        # its first 100 digits and its length, as every value an archive sends (it gave all 401 of them)
        f"must be more than 0 and at most 1 (the share of a physical GPU each device is), got '{str(huge)[:100]}…'"
        " (401 characters)",
    )
    assert (start.field, start.message) == (
        "start_time",
        "timestamp of 401 digits ('100000000000…') is out of range (from 1970 up to the year 5138)",
    )


# Every job field whose schema offers alternatives (anyOf): the error says in words what the field
# must be, not the validator's "is not valid under any of the given schemas".
SHARE_WORDS = "must be a number more than 0 and at most 1 in plain digits such as 0.25, or a fraction like 1/7"
COUNT_WORDS = "must be a whole number of 0 or more in digits only, such as 4"
TIME_WORDS = "must be ISO 8601 such as 2026-10-05T09:00:00Z or Unix seconds such as 1791190800"
CLUSTER_WORDS = "must be 1 to 100 letters, digits, '_' or '-', or empty"
ALTERNATIVES = [
    ("gpu_share", "1e-1", f"{SHARE_WORDS} (got '1e-1')"),
    ("gpu_share", "+0.5", f"{SHARE_WORDS} (got '+0.5')"),
    ("cluster", "east 1", f"{CLUSTER_WORDS} (got 'east 1')"),
    ("cluster", 5, f"{CLUSTER_WORDS} (got 5)"),
    # Rows are trimmed before they are checked, and a count or a time the schema refuses fails its
    # own parsing first: these words only reach `schema_problems`' callers, with an untrimmed value.
    ("gpu_count", " 3", f"{COUNT_WORDS} (got ' 3')"),
    ("node_count", " 3", f"{COUNT_WORDS}, or empty (got ' 3')"),
    ("cpu_count", "16 ", f"{COUNT_WORDS}, or empty (got '16 ')"),
    ("start_time", " 1791190800", f"{TIME_WORDS} (got ' 1791190800')"),
    ("end_time", "2026-10-05T10:00:00Z ", f"{TIME_WORDS} (got '2026-10-05T10:00:00Z ')"),
    ("submit_time", " 2026-10-05T08:00:00Z", f"{TIME_WORDS}, or empty (got ' 2026-10-05T08:00:00Z')"),
]
GOOD_JOB = {
    "job_id": "j1", "user": "a", "team": "t", "gpu_count": 1,
    "start_time": "2026-10-05T09:00:00Z", "end_time": "2026-10-05T10:00:00Z",
}  # fmt: skip


@pytest.mark.parametrize(("field", "value", "message"), ALTERNATIVES)
def test_a_field_with_alternatives_says_what_it_must_be(field, value, message):
    assert list(schema_problems("job.schema.json", {**GOOD_JOB, field: value})) == [(field, message)]


@pytest.mark.parametrize(("field", "value", "message"), ALTERNATIVES[:4])
def test_a_share_or_cluster_the_schema_refuses_says_so_in_an_archive(tmp_path, field, value, message):
    lines = [json.dumps({**GOOD_JOB, "job_id": "bad", field: value}), json.dumps(GOOD_JOB)]
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": None, "jobs.jsonl": "\n".join(lines) + "\n"}))
    error = only_error(parsed, "bad")
    assert (error.file, error.row, error.field, error.message) == ("jobs.jsonl", 1, field, message)
    assert sorted(parsed.jobs) == ["j1"]


def test_every_field_with_alternatives_has_its_words_tested():
    """A field given anyOf/oneOf later needs its words in `_schema_problem` and a case above."""
    tested = {field for field, _, _ in ALTERNATIVES}
    schemas = Path(__file__).resolve().parent.parent / "fleet" / "schemas"

    def with_alternatives(name: str) -> set[str]:
        schema = json.loads((schemas / name).read_text())
        defs = schema.get("$defs", {})
        found = set()
        for field, rule in schema["properties"].items():
            ref = rule.get("$ref", "")
            rule = defs.get(ref.removeprefix("#/$defs/"), rule) if ref else rule
            if "anyOf" in rule or "oneOf" in rule:
                found.add(field)
        return found

    assert with_alternatives("job.schema.json") == tested
    assert with_alternatives("manifest.schema.json") == set()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (  # 13 digits: milliseconds, most likely
            1791190800000,
            "unparseable timestamp '1791190800000' (expected ISO 8601 or Unix seconds; this looks like milliseconds)",
        ),
        (
            1791190800000000,
            "timestamp '1791190800000000' is out of range (from 1970 up to the year 5138; "
            "this looks like microseconds)",
        ),
        (
            "1791190800000000000",
            "timestamp '1791190800000000000' is out of range (from 1970 up to the year 5138; "
            "this looks like nanoseconds)",
        ),
        ("1" + "0" * 30, f"timestamp '1{'0' * 30}' is out of range (from 1970 up to the year 5138)"),
        (  # no float holds it; its 401 digits are not all repeated back
            10**400,
            "timestamp of 401 digits ('100000000000…') is out of range (from 1970 up to the year 5138)",
        ),
    ],
)
def test_a_unix_time_too_large_says_it_is_out_of_range_and_names_a_likely_unit(tmp_path, value, message):
    lines = [json.dumps({**GOOD_JOB, "job_id": "bad", "end_time": value}), json.dumps(GOOD_JOB)]
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": None, "jobs.jsonl": "\n".join(lines) + "\n"}))
    error = only_error(parsed, "bad")
    assert (error.field, error.message) == ("end_time", message)


def test_identical_duplicate_job_rows_are_kept_once(tmp_path):
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(JOBS_HEADER, [*JOBS_ROWS, JOBS_ROWS[0]])}))
    assert sorted(parsed.jobs) == ["j1", "j2", "j3"]
    assert parsed.errors == []


def test_conflicting_duplicate_job_rows_reject_the_job_naming_both_rows(tmp_path):
    conflicting = JOBS_ROWS[0].replace(",2,", ",4,")
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(JOBS_HEADER, [*JOBS_ROWS, conflicting])}))
    error = only_error(parsed, "j1")
    assert (error.row, error.field) == (4, "gpu_count")
    assert error.message == (
        "job_id 'j1' appears in rows 1 and 4 with different values (row 1 vs row 4): gpu_count '2' vs '4'"
    )
    assert sorted(parsed.jobs) == ["j2", "j3"]
    assert "j1" not in parsed.series
    assert "j1" not in parsed.artifacts


def test_conflicting_duplicate_job_rows_name_every_differing_field_with_both_values(tmp_path):
    """It named only the first differing field (alphabetically): fix that one, import again, and
    the next one was refused."""
    conflicting = "j1,alice,vision,4,2026-10-05T09:00:00Z,2026-10-05T12:00:00Z,interactive"
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(JOBS_HEADER, [*JOBS_ROWS, conflicting])}))
    error = only_error(parsed, "j1")
    assert (error.row, error.field) == (4, "gpu_count")  # the first in the file's column order
    assert error.message == (
        "job_id 'j1' appears in rows 1 and 4 with different values (row 1 vs row 4): gpu_count '2' vs '4', "
        "end_time '2026-10-05T10:00:00Z' vs '2026-10-05T12:00:00Z', job_type 'batch' vs 'interactive'"
    )


def test_a_conflict_in_many_long_fields_is_told_in_bounded_words(tmp_path):
    first = {"job_id": "j1", "user": "a", "team": "t", "gpu_count": 1, "start_time": "2026-10-05T09:00:00Z"}
    first |= {"end_time": "2026-10-05T10:00:00Z"}
    second = dict(first) | {f"extra_{n}": "x" * 5000 for n in range(20)}
    text = "\n".join(json.dumps(row) for row in (first, second)) + "\n"
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": None, "jobs.jsonl": text}))
    error = only_error(parsed, "j1")
    assert error.field == "extra_0" and len(error.message) < 1000
    assert "extra_0 (none) vs 'xxxxxxxx" in error.message and "…" in error.message
    assert error.message.count(" vs ") == 7  # "row 1 vs row 2" and six fields
    assert "and 14 more fields (extra_6, extra_7," in error.message


def test_a_truncated_last_job_row_rejects_that_job(tmp_path):
    text = csv_text(JOBS_HEADER, JOBS_ROWS).rstrip("\n")[:-30]  # cut in the middle of j3's row
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": text}))
    error = only_error(parsed, "j3")
    assert (error.file, error.row) == ("jobs.csv", 3)
    assert "expected 7" in error.message
    assert "truncated" in error.message
    assert sorted(parsed.jobs) == ["j1", "j2"]


def test_empty_jobs_file_is_an_archive_error(tmp_path):
    assert archive_error(tmp_path, base_files(**{"jobs.csv": JOBS_HEADER + "\n"})).message == "holds no jobs"


# -- metrics ----------------------------------------------------------------------------------
def test_wide_shared_csv(tmp_path):
    parsed = parse_files(tmp_path, base_files())
    assert parsed.errors == []
    j1 = parsed.series["j1"]
    assert len(j1) == 24
    assert j1["gpu"].tolist() == [0] * 12 + [1] * 12
    assert str(j1["timestamp"].dtype) == "datetime64[ms, UTC]"
    assert float(j1["gpu_util"].mean()) == 50.0
    assert "j3" not in parsed.series  # a job without metrics is still accepted
    assert "j3" in parsed.jobs


def test_long_form_csv_pivots_to_wide(tmp_path):
    rows = []
    for m in range(0, 30, 10):
        t = f"2026-10-05T09:{m:02d}:00Z"
        rows += [f"j1,{t},n1,0,gpu_util,{40 + m}", f"j1,{t},n1,0,gpu_mem_used_mib,1000", f"j1,{t},n1,,cpu_util,90"]
    rows.append("j1,2026-10-05T09:00:00Z,n1,0,gpu_util,99")  # a duplicate sample: the first value is kept
    parsed = parse_files(
        tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,metric,value", rows)})
    )
    assert parsed.errors == []
    frame = parsed.series["j1"]
    assert list(frame.columns) == ["timestamp", "host", "gpu", "gpu_util", "gpu_mem_used_mib", "cpu_util"]
    gpu_rows = frame[frame["gpu"].notna()]
    assert gpu_rows["gpu_util"].tolist() == [40.0, 50.0, 60.0]
    assert frame.loc[frame["gpu"].isna(), "cpu_util"].tolist() == [90.0] * 3
    assert parsed.duplicate_samples == 1


def test_long_form_needs_gpu_util_rows(tmp_path):
    rows = ["j1,2026-10-05T09:00:00Z,n1,,cpu_util,90"]
    parsed = parse_files(
        tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,metric,value", rows)})
    )
    error = only_error(parsed, "j1")
    assert (error.file, error.field) == ("metrics.csv", "metric")


def test_parquet_shared_and_per_job_files(tmp_path):
    shared = pd.DataFrame(
        {
            "job_id": ["j1"] * 4,
            "timestamp": pd.to_datetime(["2026-10-05T09:00:00Z", "2026-10-05T09:05:00Z"] * 2, utc=True),
            "host": ["n1"] * 4,
            "gpu": [0, 0, 1, 1],
            "gpu_util": np.array([10, 20, 30, 40], dtype="float32"),
        }
    )
    per_job = pd.DataFrame(
        {"timestamp": [1791190800, 1791191100], "gpu": [0, 0], "gpu_util": [70.0, np.nan], "tensor_active": [0.5, 0.4]}
    )
    files = base_files(
        **{"metrics.csv": None, "metrics.parquet": parquet_bytes(shared), "metrics/j2.parquet": parquet_bytes(per_job)}
    )
    parsed = parse_files(tmp_path, files)
    assert parsed.errors == []
    assert parsed.series["j1"]["gpu_util"].tolist() == [10.0, 20.0, 30.0, 40.0]
    j2 = parsed.series["j2"]
    assert j2["host"].tolist() == ["", ""]  # no host column
    assert j2["timestamp"].iloc[0] == pd.Timestamp("2026-10-05T09:00:00Z")
    assert np.isnan(j2["gpu_util"].iloc[1])  # NaN is allowed: a missing value
    assert j2["tensor_active"].tolist() == pytest.approx([0.5, 0.4])


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buffer)
    return buffer.getvalue()


def test_per_job_csv_without_job_id_column_and_with_mixed_sources(tmp_path):
    files = base_files(
        **{
            "metrics/j3.csv": csv_text("timestamp,host,gpu,gpu_util", wide_rows(None, util=70.0)),
            "metrics/j2.csv": csv_text(
                "timestamp,host,gpu,gpu_util,cpu_util",
                ["2026-10-05T09:00:00Z,n1,,,12", "2026-10-05T09:00:00Z,n1,0,99,"],
            ),
        }
    )
    parsed = parse_files(tmp_path, files)
    assert parsed.errors == []
    assert float(parsed.series["j3"]["gpu_util"].mean()) == 70.0
    j2 = parsed.series["j2"]
    assert len(j2) == 13  # 12 GPU rows from metrics.csv + 1 host row; the repeated 09:00 GPU sample is a duplicate
    assert parsed.duplicate_samples == 1
    assert j2.loc[(j2["gpu"] == 0).fillna(False), "gpu_util"].iloc[0] == 20.0  # metrics.csv comes first


def test_gpu_column_absent_means_one_device(tmp_path):
    rows = ["j1,2026-10-05T09:00:00Z,50", "j1,2026-10-05T09:05:00Z,60"]
    parsed = parse_files(tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,gpu_util", rows)}))
    assert parsed.series["j1"]["gpu"].tolist() == [0, 0]


def test_missing_required_column_in_a_per_job_file_rejects_that_job(tmp_path):
    files = base_files(
        **{"metrics/j3.csv": csv_text("timestamp,host,gpu,sm_active", ["2026-10-05T09:00:00Z,n1,0,0.5"])}
    )
    parsed = parse_files(tmp_path, files)
    error = only_error(parsed, "j3")
    assert (error.file, error.field, error.job_id) == ("metrics/j3.csv", "gpu_util", "j3")
    assert "required column 'gpu_util' is missing" in error.message
    assert sorted(parsed.jobs) == ["j1", "j2"]


def test_missing_required_column_in_the_shared_file_rejects_its_jobs(tmp_path):
    rows = [r.rsplit(",", 1)[0] for r in wide_rows("j1") + wide_rows("j2")]
    parsed = parse_files(tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu", rows)}))
    assert sorted(parsed.rejected) == ["j1", "j2"]
    assert all(e.field == "gpu_util" and e.file == "metrics.csv" for e in parsed.errors)
    assert sorted(parsed.jobs) == ["j3"]


def test_shared_metrics_file_without_job_id_is_an_archive_error(tmp_path):
    files = base_files(**{"metrics.csv": csv_text("timestamp,host,gpu,gpu_util", wide_rows(None))})
    error = archive_error(tmp_path, files)
    assert (error.file, error.field) == ("metrics.csv", "job_id")


def test_unparseable_metrics_timestamp_rejects_that_job(tmp_path):
    rows = wide_rows("j1", gpus=(0, 1)) + wide_rows("j2")
    rows[3] = "j1,2026-10-05T25:00:00Z,n1,1,50"
    rows[5] = "j1,,n1,1,50"
    parsed = parse_files(tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,gpu_util", rows)}))
    error = only_error(parsed, "j1")
    assert (error.file, error.row, error.field, error.job_id) == ("metrics.csv", 4, "timestamp", "j1")
    assert error.message == (
        "unparseable timestamp '2026-10-05T25:00:00Z' (expected ISO 8601 or Unix seconds) (and 1 more rows of this job)"
    )
    assert sorted(parsed.jobs) == ["j2", "j3"]
    assert "j2" in parsed.series
    assert "j1" not in parsed.series


def test_metrics_timestamp_before_1970_rejects_that_job_however_it_is_written(tmp_path):
    rows = wide_rows("j1") + wide_rows("j2")
    rows[2] = "j1,1969-12-31T23:59:00Z,n1,0,50"
    rows[14] = "j2,-60,n1,0,50"
    parsed = parse_files(tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,gpu_util", rows)}))
    assert only_error(parsed, "j1").message == (
        "timestamp '1969-12-31T23:59:00Z' is out of range (from 1970 up to the year 5138)"
    )
    assert only_error(parsed, "j2").message == "unparseable timestamp '-60' (expected ISO 8601 or Unix seconds)"
    assert sorted(parsed.jobs) == ["j3"]


@pytest.mark.parametrize(
    ("cell", "field", "message"),
    [
        ("abc", "gpu_util", "non-numeric gpu_util value 'abc'"),
        ("150", "gpu_util", "gpu_util value '150' is out of range (must be 0–100 %)"),
        ("-3", "gpu_util", "gpu_util value '-3' is out of range"),
    ],
)
def test_bad_metric_values_reject_that_job(tmp_path, cell, field, message):
    rows = wide_rows("j1") + wide_rows("j2")
    rows[14] = f"j2,2026-10-05T09:10:00Z,n1,0,{cell}"
    parsed = parse_files(tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,gpu_util", rows)}))
    error = only_error(parsed, "j2")
    assert (error.file, error.row, error.field) == ("metrics.csv", 15, field)
    assert error.message.startswith(message)
    assert "j1" in parsed.series


def test_ratio_given_as_percent_is_explained(tmp_path):
    rows = ["2026-10-05T09:00:00Z,n1,0,50,61"]
    parsed = parse_files(
        tmp_path, base_files(**{"metrics/j3.csv": csv_text("timestamp,host,gpu,gpu_util,sm_active", rows)})
    )
    assert "(must be 0–1, a ratio; this looks like percent)" in only_error(parsed, "j3").message


def test_bad_gpu_index(tmp_path):
    parsed = parse_files(
        tmp_path, base_files(**{"metrics/j3.csv": csv_text("timestamp,gpu,gpu_util", ["1791190800,0.5,1"])})
    )
    error = only_error(parsed, "j3")
    assert (error.row, error.field) == (1, "gpu")


def test_a_host_name_longer_than_any_host_rejects_its_job_without_echoing_it(tmp_path):
    rows = ["2026-10-05T09:00:00Z,n1,0,50", f"2026-10-05T09:05:00Z,{'n' * 300_000},0,50"]
    parsed = parse_files(tmp_path, base_files(**{"metrics/j3.csv": csv_text("timestamp,host,gpu,gpu_util", rows)}))
    error = only_error(parsed, "j3")
    assert (error.file, error.row, error.field) == ("metrics/j3.csv", 2, "host")
    assert "300,000 characters" in error.message and "at most 255" in error.message
    assert len(error.message) < 200
    assert sorted(parsed.jobs) == ["j1", "j2"]  # the good jobs still land
    ok = ["2026-10-05T09:00:00Z," + "n" * 255 + ",0,50"]
    parsed = parse_files(tmp_path, base_files(**{"metrics/j3.csv": csv_text("timestamp,host,gpu,gpu_util", ok)}))
    assert parsed.rejected == {} and parsed.series["j3"]["host"].tolist() == ["n" * 255]


def test_missing_values_are_allowed(tmp_path):
    rows = ["2026-10-05T09:00:00Z,n1,0,", "2026-10-05T09:05:00Z,n1,0,NaN", "2026-10-05T09:10:00Z,n1,0,null"]
    parsed = parse_files(tmp_path, base_files(**{"metrics/j3.csv": csv_text("timestamp,host,gpu,gpu_util", rows)}))
    assert parsed.errors == []
    assert parsed.series["j3"]["gpu_util"].isna().all()


def test_unknown_job_in_metrics_is_reported_once_and_dropped(tmp_path):
    rows = wide_rows("j1") + wide_rows("ghost") + wide_rows("j2")
    parsed = parse_files(tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,gpu_util", rows)}))
    assert parsed.rejected == {}
    assert parsed.errors == [
        RecordError(
            file="metrics.csv",
            row=13,
            field="job_id",
            job_id="ghost",
            message="job 'ghost' is not in jobs.csv; its 12 rows were ignored",
        )
    ]
    assert sorted(parsed.series) == ["j1", "j2"]
    per_job = parse_files(tmp_path, base_files(**{"metrics/ghost.csv": "timestamp,gpu_util\n1,1\n"}))
    assert [(e.file, e.job_id) for e in per_job.errors] == [("metrics/ghost.csv", "ghost")]


def test_unknown_metric_columns_are_ignored_with_one_note(tmp_path):
    rows = [r + ",3,4" for r in wide_rows("j1")]
    parsed = parse_files(
        tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,gpu_util,power_w,fan", rows)})
    )
    assert parsed.rejected == {}
    assert [(e.file, e.field, e.message) for e in parsed.errors] == [
        ("metrics.csv", "power_w, fan", "unknown metric columns ignored")
    ]
    assert "power_w" not in parsed.series["j1"].columns


def test_a_truncated_metrics_csv_rejects_the_job_of_the_cut_row(tmp_path):
    text = csv_text("job_id,timestamp,host,gpu,gpu_util", wide_rows("j1") + wide_rows("j2"))
    text = text.rstrip("\n")[:-8]  # the last row of j2 loses its gpu and gpu_util fields
    parsed = parse_files(tmp_path, base_files(**{"metrics.csv": text}))
    error = only_error(parsed, "j2")
    assert (error.file, error.row, error.job_id) == ("metrics.csv", 24, "j2")
    assert error.message.startswith("row has 3 fields, expected 5")
    assert "j1" in parsed.series


def test_ragged_row_in_the_middle_keeps_row_numbers_right(tmp_path):
    rows = wide_rows("j1") + wide_rows("j2")
    rows[2] = "j1,2026-10-05T09:10:00Z,n1,0,50,extra"
    rows[20] = "j2,2026-10-05T25:00:00Z,n1,0,50"
    parsed = parse_files(tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,gpu_util", rows)}))
    assert only_error(parsed, "j1").row == 3
    assert only_error(parsed, "j2").row == 21


def test_a_ragged_row_with_a_field_over_the_csv_modules_limit_rejects_its_job_only(tmp_path):
    """Python's csv module refuses a field over 128 KiB (csv.Error, which once failed the whole
    archive) where Arrow's reader reads it: finding the job of such a ragged row still works."""
    big = "x" * 200_000
    metrics = wide_rows("j1") + [f"j2,2026-10-05T09:00:00Z,n1,0,50,extra,{big}"] + wide_rows("j2")
    jobs = [*JOBS_ROWS, f"j4,dan,nlp,1,1791190800,1791194400,batch,extra,{big}"]
    files = base_files(
        **{
            "jobs.csv": csv_text(JOBS_HEADER, jobs),
            "metrics.csv": csv_text("job_id,timestamp,host,gpu,gpu_util", metrics),
        }
    )
    parsed = parse_files(tmp_path, files)
    assert only_error(parsed, "j2").message.startswith("row has 7 fields, expected 5")
    assert only_error(parsed, "j4").message.startswith("row has 9 fields, expected 7")
    assert sorted(parsed.jobs) == ["j1", "j3"]


def test_truncated_parquet(tmp_path):
    frame = pd.DataFrame({"job_id": ["j1"], "timestamp": [1791190800], "gpu": [0], "gpu_util": [1.0]})
    cut = parquet_bytes(frame)[:-20]
    error = archive_error(tmp_path, base_files(**{"metrics.csv": None, "metrics.parquet": cut}))
    assert error.file == "metrics.parquet"
    assert "truncated or corrupt" in error.message
    parsed = parse_files(tmp_path, base_files(**{"metrics/j3.parquet": cut}))
    error = only_error(parsed, "j3")
    assert (error.file, error.job_id) == ("metrics/j3.parquet", "j3")
    assert sorted(parsed.jobs) == ["j1", "j2"]


def test_duplicate_samples_are_dropped_and_counted(tmp_path):
    rows = wide_rows("j1") + wide_rows("j1", minutes=range(0, 15, 5), util=99.0)
    parsed = parse_files(tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,gpu_util", rows)}))
    assert parsed.duplicate_samples == 3
    assert len(parsed.series["j1"]) == 12
    assert float(parsed.series["j1"]["gpu_util"].max()) == 50.0


# -- artifacts --------------------------------------------------------------------------------
def test_artifacts(tmp_path):
    files = base_files(
        **{
            "traces/j2/rank0.pt.trace.json.gz": b"\x1f\x8b...",
            "logs/ghost/out.log": "x",
            "logs/ghost/err.log": "y",
            "logs/loose.log": "z",
            "README.md": "ignored",
        }
    )
    parsed = parse_files(tmp_path, files)
    j1 = {(a.kind, a.path): a for a in parsed.artifacts["j1"]}
    assert set(j1) == {("log", "stdout.log"), ("script", "train.py"), ("script", "conf/config.yaml")}
    assert j1[("script", "train.py")].content == b"print('hi')\n"
    assert not j1[("script", "train.py")].truncated
    assert [(a.kind, a.path) for a in parsed.artifacts["j2"]] == [("trace", "rank0.pt.trace.json.gz")]
    assert {(e.file, e.message) for e in parsed.errors} == {
        ("logs/ghost/", "job 'ghost' is not in jobs.csv; 2 files were ignored"),
        ("logs/loose.log", "ignored: files in logs/ belong in logs/<job_id>/<file>"),
    }
    assert parsed.rejected == {}


def test_large_artifacts_are_truncated_and_noted(tmp_path):
    """A log keeps its first and last halves of the limit (its end says why the job ended), a marker line
    between; a script or a trace keeps its beginning."""
    files = base_files(**{"logs/j1/stdout.log": "x" * 5000 + "y" * 5000, "scripts/j1/train.py": "#" * 5000})
    parsed = parse_files(tmp_path, files, artifact_max_bytes=2048)
    log = next(a for a in parsed.artifacts["j1"] if a.kind == "log")
    assert log.truncated
    assert log.content.startswith(b"x" * 1024 + b"\n[\xe2\x80\xa6 Fleet Triage left out ")
    assert log.content.endswith(b"\n" + b"y" * 1024)
    script = next(a for a in parsed.artifacts["j1"] if a.kind == "script")
    assert script.truncated and script.content == b"#" * 2048
    assert [(e.file, e.job_id, e.message) for e in parsed.errors] == [
        (
            "logs/j1/stdout.log",
            "j1",
            "larger than 2 KiB (9.8 KiB); its first and last 1.0 KiB were kept, a marked line in place of the middle",
        ),
        ("scripts/j1/train.py", "j1", "larger than 2 KiB; only the first 2 KiB were kept"),
    ]


def test_rejected_jobs_have_no_series_or_artifacts(tmp_path):
    rows = [JOBS_ROWS[0].replace("2026-10-05T10:00:00Z", "2026-10-05T08:00:00Z"), *JOBS_ROWS[1:]]
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(JOBS_HEADER, rows)}))
    assert "j1" in parsed.rejected
    assert "j1" not in parsed.jobs
    assert "j1" not in parsed.series
    assert "j1" not in parsed.artifacts
    assert [e.field for e in parsed.errors] == ["end_time"]  # its metrics and files are not "unknown"


def test_a_corrupt_member_names_the_archive_and_the_member(tmp_path):
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, content in base_files().items():
            archive.writestr(name, as_bytes(content))
    data = bytearray(path.read_bytes())
    offset = bytes(data).index(b"j2,bob,nlp")
    data[offset : offset + 2] = b"XX"  # flips bytes inside jobs.csv: its CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveError) as caught:
        parse_archive(path)
    assert caught.value.error.file == "a.zip"
    assert "member 'jobs.csv' cannot be read" in caught.value.error.message


def test_a_job_row_without_job_id_is_rejected_under_its_row(tmp_path):
    rows = [*JOBS_ROWS, ",dave,nlp,1,2026-10-05T09:00:00Z,2026-10-05T10:00:00Z,"]
    parsed = parse_files(tmp_path, base_files(**{"jobs.csv": csv_text(JOBS_HEADER, rows)}))
    error = only_error(parsed, "<jobs.csv row 4>")
    assert (error.row, error.field, error.message) == (4, "job_id", "required value is empty")
    assert sorted(parsed.jobs) == ["j1", "j2", "j3"]


def test_long_form_bad_value_names_the_metric(tmp_path):
    rows = ["j1,2026-10-05T09:00:00Z,n1,0,gpu_util,50", "j1,2026-10-05T09:00:00Z,n1,0,sm_active,45"]
    files = base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,metric,value", rows)})
    error = only_error(parse_files(tmp_path, files), "j1")
    assert (error.row, error.field) == (2, "value")
    assert error.message == "sm_active value '45' is out of range (must be 0–1, a ratio; this looks like percent)"


def test_parse_timestamps_accepts_pandas_and_arrow_columns():
    from fleet.archive.parser import parse_timestamps

    mixed = pd.Series(
        [
            "2026-10-05T09:00:00Z",
            "1791190800",
            "2026-10-05 11:00:00+02:00",
            "nope",
            "",
            None,
            "1969-12-31",
            "6000-01-01",
        ]
    )
    parsed, bad = parse_timestamps(mixed)
    assert str(parsed.dtype) == "datetime64[ms, UTC]"
    assert bad.tolist() == [False, False, False, True, True, True, True, True]  # ISO text keeps to 1970..5138 too
    assert parsed[:3].tolist() == [pd.Timestamp("2026-10-05T09:00:00Z")] * 3
    numbers, bad = parse_timestamps(pa.chunked_array([pa.array([1791190800.25, None])]))
    assert numbers[0] == pd.Timestamp("2026-10-05T09:00:00.250Z")
    assert bad.tolist() == [False, True]


@pytest.mark.parametrize(
    "column",
    [
        pa.array([date(2026, 10, 5), None, date(1969, 12, 31)], pa.date32()),
        pa.array([date(2026, 10, 5), None, date(1969, 12, 31)], pa.date64()),
        pa.array([1791158400, None, -1], pa.timestamp("s")),
        pa.array([1791158400_000, None, -1], pa.timestamp("ms", "UTC")),
        pa.array([1791158400_000_999, None, -1], pa.timestamp("us", "Europe/Berlin")),  # the time is UTC
        pa.array([1791158400_000_999_999, None, -1], pa.timestamp("ns")),
    ],
    ids=lambda column: str(column.type),
)
def test_typed_parquet_times_of_every_unit_are_read_to_the_millisecond(column):
    from fleet.archive.parser import parse_timestamps

    parsed, bad = parse_timestamps(column)
    assert parsed[0] == pd.Timestamp("2026-10-05T00:00:00Z")  # rounded down to the millisecond, like dt.floor
    assert bad.tolist() == [False, True, True]  # missing, and before 1970 as for epoch seconds


READ_PARQUET = r"""
import json, sys
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
from fleet.archive.parser import _parquet_batches
groups, rows = int(sys.argv[2]), 100_000
with pq.ParquetWriter(sys.argv[1], pa.schema([(f"m{i}", pa.float64()) for i in range(5)])) as writer:
    for _ in range(groups):
        writer.write_table(pa.table({f"m{i}": np.random.default_rng(i).random(rows) for i in range(5)}))
pool = pa.default_memory_pool()
before = pool.max_memory()  # writing took one row group at a time as well
read = sum(batch.num_rows for batch in _parquet_batches(pq.ParquetFile(sys.argv[1])))
print(json.dumps({"rows": read, "peak_mib": max(before, pool.max_memory()) / 2**20}))
"""


def test_a_large_parquet_file_is_read_in_memory_of_one_row_group_whatever_its_size(tmp_path):
    """Arrow's peak allocation reading metrics.parquet is what one row group needs (4 MB here), not a
    share of the file: 10 or 40 row groups, the same peak. (A single reader over all row groups
    buffered ahead: 400 MiB on the 10,000-job benchmark archive, 160 MiB on a quarter of it.)"""
    import json
    import subprocess
    import sys

    from tests.conftest import REPO

    def peak(groups: int) -> float:
        done = subprocess.run(
            [sys.executable, "-c", READ_PARQUET, str(tmp_path / f"m{groups}.parquet"), str(groups)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(done.stdout)
        assert result["rows"] == groups * 100_000
        return result["peak_mib"]

    small, large = peak(10), peak(40)  # 40 MB and 160 MB of values
    assert large < 1.25 * small + 4, (small, large)
    assert large < 40, (small, large)


_metric_cell = st.one_of(
    st.sampled_from([0.0, 0.25, 12.5, 100.0, 99.75]),  # in range for every metric below
    st.sampled_from([-1.0, 100.5, 1e6, float("inf"), float("-inf"), float("nan")]),
    st.none(),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(_metric_cell, _metric_cell, st.one_of(st.none(), st.integers(-2, 3))), min_size=1, max_size=12),
    st.sampled_from(["float32", "float64"]),
)
def test_typed_parquet_metrics_parse_as_the_same_cells_in_csv(tmp_path, cells, width):
    """Typed Parquet columns whose values all pass skip the cell-by-cell checks; whatever the
    values, the jobs, series and errors are those of the same cells written as CSV text."""
    stamps = [f"2026-10-05T09:{minute:02d}:00Z" for minute in range(len(cells))]
    frame = pd.DataFrame(
        {
            "job_id": ["j1"] * len(cells),
            "timestamp": pd.to_datetime(stamps, utc=True),
            "host": ["n1"] * len(cells),
            "gpu": pd.array([gpu for _, _, gpu in cells], dtype="Int16"),
            "gpu_util": pd.array([util for util, _, _ in cells], dtype=width.capitalize()),
            "cpu_util": pd.array([cpu for _, cpu, _ in cells], dtype=width.capitalize()),
        }
    )

    def text(value) -> str:
        return "" if value is None or value is pd.NA else repr(value)

    rows = [
        f"j1,{stamp},n1,{text(gpu)},{text(util)},{text(cpu)}"
        for stamp, (util, cpu, gpu) in zip(stamps, cells, strict=True)
    ]
    as_csv = parse_files(
        tmp_path, base_files(**{"metrics.csv": csv_text("job_id,timestamp,host,gpu,gpu_util,cpu_util", rows)})
    )
    as_parquet = parse_files(tmp_path, base_files(**{"metrics.csv": None, "metrics.parquet": parquet_bytes(frame)}))
    assert sorted(as_parquet.rejected) == sorted(as_csv.rejected)
    fields = {job: sorted((e.field, e.row) for e in errors) for job, errors in as_csv.rejected.items()}
    assert {job: sorted((e.field, e.row) for e in errors) for job, errors in as_parquet.rejected.items()} == fields
    assert {k: series_lib.to_parquet_bytes(v) for k, v in as_parquet.series.items()} == {
        k: series_lib.to_parquet_bytes(v) for k, v in as_csv.series.items()
    }


_UNIT_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(-(10**17), 10**17)), min_size=1, max_size=8),
    st.sampled_from(["date32", "date64", "s", "ms", "us", "ns"]),
    st.sampled_from([None, "UTC", "Asia/Kolkata"]),
)
def test_typed_parquet_times_parse_as_the_same_times_written_as_text(nanos, kind, zone):
    """A timestamp or date column means what the same moments written as epoch seconds mean:
    the same millisecond (rounded down), and the same cells refused (missing, before 1970)."""
    from fleet.archive.parser import parse_timestamps

    if kind.startswith("date"):
        days = [None if n is None else n // (86_400 * 10**9) for n in nanos]
        column = pa.array(days, pa.int32()).cast(pa.date32())
        if kind == "date64":
            column = column.cast(pa.date64())
        millis = [None if d is None else d * 86_400_000 for d in days]
    else:
        units = [None if n is None else n // _UNIT_NANOS[kind] for n in nanos]
        column = pa.array(units, pa.int64()).cast(pa.timestamp(kind, zone))
        millis = [None if u is None else u * _UNIT_NANOS[kind] // 10**6 for u in units]
    # Epoch seconds as text, exact to the millisecond ("1791158400.123"): what a CSV file would say.
    text = pa.array([None if m is None else f"{m // 1000}.{m % 1000:03d}" if m >= 0 else "-1" for m in millis])
    # And as ISO 8601 text, which says moments before 1970 as easily: refused the same way.
    iso = pa.array([None if m is None else (EPOCH + timedelta(milliseconds=m)).isoformat() for m in millis])
    typed, typed_bad = parse_timestamps(column)
    written, written_bad = parse_timestamps(text)
    assert typed_bad.tolist() == written_bad.tolist()
    assert typed[~typed_bad].tolist() == written[~written_bad].tolist()
    as_iso, iso_bad = parse_timestamps(iso)
    assert iso_bad.tolist() == written_bad.tolist()
    assert as_iso[~iso_bad].tolist() == written[~written_bad].tolist()


def test_reading_a_large_archive_says_how_many_rows_and_files_are_done(tmp_path, monkeypatch):
    """Reading the metrics of the 10,000-job benchmark archive took a quarter of a minute under one
    unchanging phase, "reading metrics (metrics.parquet)", and copying its 33,000 logs and scripts
    several seconds under another; the run's page and the terminal bar (which show the phase) now
    say how far each has gone: rows read of the file's rows, files copied of the archive's."""
    from fleet.archive import parser
    from fleet.archive.parser import ArchiveStream

    monkeypatch.setattr(parser, "BATCH_ROWS", 10)  # three batches of the 30 rows below
    monkeypatch.setattr(parser, "PROGRESS_EVERY_S", 0.0)  # a line for every file
    stamps = pd.date_range("2026-10-05 09:00", periods=15, freq="5min", tz="UTC")
    frame = pd.DataFrame(
        {"job_id": ["j1"] * 15 + ["j2"] * 15, "timestamp": list(stamps) * 2, "host": "n1", "gpu": 0, "gpu_util": 50.0}
    )
    files = base_files(**{"metrics.csv": None, "metrics.parquet": parquet_bytes(frame)})
    archive = write_zip(tmp_path / "a.zip", files)
    phases: list[str] = []
    with ArchiveStream(archive, progress=phases.append) as stream:
        assert len(list(stream)) == 3  # j3 has no metrics
    assert [phase for phase in phases if phase.startswith("reading metrics")] == [
        "reading metrics (metrics.parquet)",
        "reading metrics (metrics.parquet): 10 of 30 rows",
        "reading metrics (metrics.parquet): 20 of 30 rows",
        "reading metrics (metrics.parquet): 30 of 30 rows",
    ]
    assert [phase for phase in phases if phase.startswith("reading logs")] == [
        "reading logs, scripts and traces",
        "reading logs, scripts and traces: 0 of 3 files",
        "reading logs, scripts and traces: 1 of 3 files",
        "reading logs, scripts and traces: 2 of 3 files",
    ]


def test_a_gzip_that_holds_no_tar_is_refused_in_one_plain_sentence(tmp_path):
    """tarfile's message lists every compression it tried with its exception ("- method gz:
    ReadError('truncated header') - method bz2: ..."): internals, not a reason."""
    import gzip

    from fleet.archive.reader import ArchiveError, open_archive

    path = tmp_path / "week.tar.gz"
    path.write_bytes(gzip.compress(b"just some text, not a tarball\n"))
    with pytest.raises(ArchiveError) as refused:
        open_archive(path)
    assert refused.value.error.message == "not a readable tar archive; it is truncated or corrupt"
