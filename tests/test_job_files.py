"""A job's logs and scripts, opened from its page: line numbers, the line an event or finding names,
pages of a long file, the raw download; escaped, scoped to the jobs one may see, never a 500."""

import pytest
from django.urls import reverse

from fleet.models import LogEvent
from tests.conftest import store_artifact
from tests.factories import JobFactory
from triage.dashboard import files
from triage.models import Finding, JobTriage, RuleSet
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db


def file_page(client, artifact, **params):
    response = client.get(reverse("dashboard:job-file", args=[artifact.job_id, artifact.pk]), params)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def long_log(team_a):
    job = JobFactory(team=team_a, name="long-run")
    lines = [f"step {n} loss {1 / n:.4f}" for n in range(1, 2501)]
    lines[1499] = "RuntimeError: CUDA out of memory <script>alert(1)</script>"
    return store_artifact(job, "log", "logs/stdout.log", ("\n".join(lines) + "\n").encode())


def test_a_log_opens_with_numbered_lines_and_pages(client, member_a, long_log):
    client.force_login(member_a)
    text = file_page(client, long_log)
    assert "2,500 lines" in text and "Lines 1–1,000 of 2,500" in text
    assert '<span id="L1">' in text and "step 1 loss 1.0000" in text and "step 1001 " not in text
    second = file_page(client, long_log, **{"from": 1001})
    assert "step 1001 loss" in second and "step 2000 loss" in second and "step 2001 " not in second
    assert 'href="?from=1">first</a>' in second and 'href="?from=2001">next</a>' in second
    last = file_page(client, long_log, **{"from": 2001})
    assert "step 2500 loss" in last and ">next</a>" not in last


def test_a_line_number_opens_its_page_marked_and_the_log_text_is_escaped(client, member_a, long_log):
    client.force_login(member_a)
    text = file_page(client, long_log, line=1500)
    assert "Lines 1,001–2,000 of 2,500" in text
    assert '<span id="L1500" class="hit">' in text
    assert "CUDA out of memory &lt;script&gt;alert(1)&lt;/script&gt;" in text and "<script>alert(1)" not in text
    beyond = file_page(client, long_log, line=9000)
    assert "The file has no line 9,000: it has 2,500." in beyond


def test_the_job_page_links_each_file_and_each_log_event_to_its_line(client, member_a, long_log):
    job = long_log.job
    LogEvent.objects.create(job=job, artifact=long_log, kind="oom", line_no=1500, text="CUDA out of memory")
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    file_url = reverse("dashboard:job-file", args=[job.pk, long_log.pk])
    assert f'<a href="{file_url}">logs/stdout.log</a>' in page
    assert f'<a href="{file_url}?line=1500#L1500">logs/stdout.log:1500</a>' in page
    opened = client.get(f"{file_url}?line=1500").content.decode()
    assert 'class="hit"' in opened
    # The event's kind tags its line, in its timeline colour; no other line has a tag.
    tag = '<span class="event" style="border-color: #c0392b">oom</span>RuntimeError: CUDA out of memory'
    assert tag in opened and opened.count('<span class="event"') == 1


def test_a_findings_log_lines_and_code_link_to_the_files(client, member_a, team_a):
    job = JobFactory(team=team_a)
    log = store_artifact(job, "log", "train.log", b"a\nb\nsaving checkpoint\n")
    script = store_artifact(job, "script", "train.py", b"import torch\ntorch.save(model, 'x')\n")
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    evidence = {
        "log_lines": [{"path": "train.log", "line": 3, "text": "saving checkpoint"}],
        "code": [
            {"path": "train.py", "line": 2, "code": "torch.save(model, 'x')"},
            {"path": "gone.py", "line": 9, "code": "x"},  # a file the job no longer has: no link
        ],
    }
    Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=Category.MODEL_CHECKPOINTING,
                           confidence=0.9, summary="s", gpu_hours=1.0, evidence=evidence, guidance={})  # fmt: skip
    client.force_login(member_a)
    for page in ("dashboard:job-detail", "triage:job"):
        text = client.get(reverse(page, args=[job.pk])).content.decode()
        assert reverse("dashboard:job-file", args=[job.pk, log.pk]) + "?line=3#L3" in text
        assert reverse("dashboard:job-file", args=[job.pk, script.pk]) + "?line=2#L2" in text
        assert '<span class="muted">gone.py:9</span>' in text


def test_another_teams_file_and_another_jobs_file_are_not_found(client, member_a, team_a, team_b):
    mine, theirs = JobFactory(team=team_a), JobFactory(team=team_b)
    secret = store_artifact(theirs, "log", "secret.log", b"token=hunter2\n")
    client.force_login(member_a)
    for name in ("dashboard:job-file", "dashboard:job-file-raw"):
        assert client.get(reverse(name, args=[theirs.pk, secret.pk])).status_code == 404
        assert client.get(reverse(name, args=[mine.pk, secret.pk])).status_code == 404  # not under a job one sees
    client.logout()
    response = client.get(reverse("dashboard:job-file", args=[theirs.pk, secret.pk]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_raw_download_is_the_stored_bytes_as_an_attachment(client, member_a, team_a):
    content = b"<html><script>alert(1)</script>\xff\xfe not utf-8\n"
    log = store_artifact(JobFactory(team=team_a), "log", "runs/7/out\n<b>.log", content)
    client.force_login(member_a)
    response = client.get(reverse("dashboard:job-file-raw", args=[log.job_id, log.pk]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == content
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;") and "\n" not in response["Content-Disposition"]
    assert response["X-Content-Type-Options"] == "nosniff"
    text = file_page(client, log)  # the page shows what is not UTF-8 as replacement characters
    assert "&lt;html&gt;&lt;script&gt;" in text and "\ufffd\ufffd not utf-8" in text


def test_long_lines_progress_bars_and_nul_characters_show_as_a_terminal_would(client, member_a, team_a):
    bar = "\r".join(f" {p}%|{'#' * (p // 10)}" for p in range(0, 101, 5))
    content = ("x" * 5000 + "\n" + bar + "\n" + "a\x00b\n").encode()
    log = store_artifact(JobFactory(team=team_a), "log", "out.log", content)
    client.force_login(member_a)
    text = file_page(client, log)
    assert "x" * files.MAX_LINE_CHARS in text and "x" * (files.MAX_LINE_CHARS + 1) not in text
    assert "2.9\xa0KB more on this line" in text
    assert "100%|##########" in text and " 95%|" not in text  # the bar's last redraw, on line 2
    assert '<span id="L3"><a class="ln" href="?from=1#L3" aria-label="line 3">3</a>ab</span>' in text


def test_a_file_missing_from_storage_or_empty_says_so(client, member_a, team_a):
    from django.core.files.storage import default_storage

    job = JobFactory(team=team_a)
    gone = store_artifact(job, "log", "gone.log", b"x\n")
    default_storage.delete(gone.file.name)
    empty = store_artifact(job, "script", "empty.py", b"")
    client.force_login(member_a)
    assert "The file is missing from storage." in file_page(client, gone)
    assert client.get(reverse("dashboard:job-file-raw", args=[job.pk, gone.pk])).status_code == 404
    assert "The file is empty." in file_page(client, empty)


def test_a_job_with_thousands_of_files_lists_the_first_ones(client, member_a, team_a, monkeypatch):
    from fleet.models import Artifact
    from triage.dashboard import views

    monkeypatch.setattr(views, "ARTIFACTS_LISTED", 3)
    job = JobFactory(team=team_a)
    Artifact.objects.bulk_create(
        Artifact(job=job, kind="script", path=f"src/m{n:02}.py", file=f"artifacts/m{n}", size=1, sha256="x")
        for n in range(5)
    )
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "The first 3 of 5 files, by kind and path." in page
    assert "src/m02.py" in page and "src/m03.py" not in page


@pytest.mark.parametrize(
    ("content", "first", "expected_lines", "total"),
    [
        (b"", 1, [], 0),
        (b"\n", 1, [(1, "")], 1),
        (b"a\nb", 1, [(1, "a"), (2, "b")], 2),
        (b"a\nb\n", 2, [(2, "b")], 2),
        (b"a\r\nb\r\n", 1, [(1, "a"), (2, "b")], 2),  # Windows line ends: the \r is not a redraw
        (b"a\nb\nc\n", 5, [], 3),
        # Pages deep into a file: the lines before and after the window are only counted.
        (b"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n", 3, [(i, chr(ord("a") + i - 1)) for i in range(3, 13)], 13),
        (b"aa\nbb\n\ncc\ndd", 4, [(4, "cc"), (5, "dd")], 5),
        (b"\n" * 30 + b"last", 31, [(31, "last")], 31),
    ],
)
def test_read_window_numbers_lines_as_log_events_do(content, first, expected_lines, total):
    for size in (1, 2, 3, 1024):  # however the bytes arrive in chunks
        chunks = [content[i : i + size] for i in range(0, len(content), size)]
        window = files.read_window(chunks, first, count=10)
        assert [(line.number, line.text) for line in window.lines] == expected_lines
        assert window.total_lines == total


@pytest.mark.parametrize(
    ("content", "query", "expected_lines", "total"),
    [
        (b"", "a", [], 0),
        (b"loss 1\nstep\nLOSS 2\n", "loss", [(1, "loss 1"), (3, "LOSS 2")], 2),  # case does not matter
        (b"x\ny\nz", "z", [(3, "z")], 1),  # a last line without its "\n"
        (b"ab\ncd\nab", "b\nc", [], 0),  # a match runs within a line, never across two
        (b"\n\nneedle in a haystack\n\n", "needle", [(3, "needle in a haystack")], 1),
    ],
)
def test_a_search_finds_lines_wherever_the_chunks_split_them(content, query, expected_lines, total):
    for size in (1, 2, 3, 5, 1024):
        chunks = [content[i : i + size] for i in range(0, len(content), size)]
        found = files.find_lines(chunks, query)
        assert [(line.number, line.text) for line in found.lines] == expected_lines, size
        assert found.total == total


def test_a_search_looks_in_the_ends_of_a_long_line_only(settings):
    """A line is searched in its first and last 4 × max_chars bytes, across however many chunks."""
    line = b"start " + b"x" * 1000 + b" middle " + b"y" * 1000 + b" end"
    content = b"first\n" + line + b"\nlast\n"
    for size in (7, 64, 4096):
        chunks = [content[i : i + size] for i in range(0, len(content), size)]
        assert [m.number for m in files.find_lines(chunks, "start", max_chars=50).lines] == [2]
        assert [m.number for m in files.find_lines(chunks, "end", max_chars=50).lines] == [2]
        assert files.find_lines(chunks, "middle", max_chars=50).total == 0
        assert files.find_lines(chunks, "middle", max_chars=1000).total == 1


def test_the_series_downloads_as_the_stored_parquet_and_as_csv_that_imports_again(
    client, member_a, team_a, team_b, tmp_path
):
    import csv
    import io
    import json

    import pandas as pd
    from django.core.files.base import ContentFile

    from fleet.archive.parser import parse_archive
    from fleet.series import to_parquet_bytes
    from tests.conftest import tiny_series, write_zip
    from tests.test_archive_parser import MANIFEST

    frame = tiny_series()
    frame["host"] = ["=HYPERLINK(1)", "n1"]  # a host name a spreadsheet would run
    job = JobFactory(team=team_a, external_id="-j1")  # a job id may start with "-": a formula too
    blob = to_parquet_bytes(frame)
    job.series_file.save("series.parquet", ContentFile(blob))
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert reverse("dashboard:job-series", args=[job.pk, "csv"]) in page

    parquet = client.get(reverse("dashboard:job-series", args=[job.pk, "parquet"]))
    assert parquet.status_code == 200 and b"".join(parquet.streaming_content) == blob
    assert parquet["Content-Disposition"] == f'attachment; filename="{job.cluster.name}--j1-series.parquet"'

    response = client.get(reverse("dashboard:job-series", args=[job.pk, "csv"]))
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["job_id", "timestamp", "host", "gpu", "gpu_util"]  # no empty metric columns
    assert [(r["job_id"], r["timestamp"], r["host"], r["gpu"], r["gpu_util"]) for r in rows] == [
        ("'-j1", "2026-11-02T10:00:00.000Z", "'=HYPERLINK(1)", "0", "10"),
        ("'-j1", "2026-11-02T10:00:30.000Z", "n1", "0", "90"),
    ]
    # The download, as it is, imports again as the job's own metrics file: the guard quotes come off.
    jobs_csv = "job_id,user,team,gpu_count,start_time,end_time\n-j1,u,t,1,2026-11-02T09:59:00Z,2026-11-02T10:01:00Z\n"
    files = {"manifest.json": json.dumps(MANIFEST), "jobs.csv": jobs_csv, "metrics/-j1.csv": text}
    parsed = parse_archive(write_zip(tmp_path / "again.zip", files))
    assert parsed.errors == []
    series = parsed.series["-j1"]
    assert list(pd.to_datetime(series["timestamp"]).dt.strftime("%H:%M:%S")) == ["10:00:00", "10:00:30"]
    assert list(series["gpu_util"]) == [10.0, 90.0] and set(series["host"]) == {"=HYPERLINK(1)", "n1"}

    other = JobFactory(team=team_b)
    other.series_file.save("series.parquet", ContentFile(blob))
    assert client.get(reverse("dashboard:job-series", args=[other.pk, "csv"])).status_code == 404
    assert client.get(reverse("dashboard:job-series", args=[job.pk, "json"])).status_code == 404
    bare = JobFactory(team=team_a)  # no series supplied (or pruned)
    assert client.get(reverse("dashboard:job-series", args=[bare.pk, "csv"])).status_code == 404
    assert "Download the series" not in client.get(reverse("dashboard:job-detail", args=[bare.pk])).content.decode()


def test_a_large_series_streams_as_csv_a_batch_at_a_time():
    import io

    import pandas as pd

    from fleet import exports
    from fleet.series import to_parquet_bytes
    from tests.conftest import tiny_series

    frame = pd.concat([tiny_series()] * 5, ignore_index=True)
    chunks = list(exports.series_csv_chunks(io.BytesIO(to_parquet_bytes(frame)), "j", batch_rows=3))
    assert len(chunks) == 4 and chunks[0].startswith(b'"job_id","timestamp"')  # 10 rows, 3 a batch
    assert sum(chunk.count(b"\n") for chunk in chunks) == 11 and not chunks[1].startswith(b'"job_id"')
    empty = list(exports.series_csv_chunks(io.BytesIO(to_parquet_bytes(frame.iloc[:0])), "j"))
    assert b"".join(empty) == chunks[0].split(b"\n")[0] + b"\n"  # no rows: the same header alone


def test_find_lists_the_lines_holding_a_text_each_linked_to_its_place(client, member_a, long_log):
    client.force_login(member_a)
    text = file_page(client, long_log, q="cuda OUT of memory")  # case does not matter
    assert "1 line holds “cuda OUT of memory”." in text
    assert '<a class="ln" href="?line=1500#L1500"' in text
    assert "RuntimeError: <mark>CUDA out of memory</mark> &lt;script&gt;alert(1)&lt;/script&gt;" in text
    many = file_page(client, long_log, q="loss")
    assert "2,499 lines hold “loss”: the first 500 below." in many and many.count('class="ln"') == 500
    assert "No line holds “&lt;b&gt;”." in file_page(client, long_log, q="<b>")
    assert "Lines 1–1,000 of 2,500" in file_page(client, long_log, q="   ")  # blank: the file itself
    long_query = file_page(client, long_log, q="x" * 5000)
    assert f'value="{"x" * 200}"' in long_query and "No line holds" in long_query


def test_marked_cuts_a_line_around_each_match_ignoring_case():
    assert files.marked("Loss 0.5 loss", "LOSS") == [("Loss", True), (" 0.5 ", False), ("loss", True)]
    assert files.marked("abc", "") == [("abc", False)]
    assert files.marked("aaa", "aa") == [("aa", True), ("a", False)]


def test_marked_keeps_each_match_where_lowercasing_changes_a_texts_length():
    assert files.marked("İstanbul loss", "LOSS") == [("İstanbul ", False), ("loss", True)]
