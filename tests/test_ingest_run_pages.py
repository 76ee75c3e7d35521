"""The ingest-run pages an operator reads after an import: the list of runs and a run's errors."""

from __future__ import annotations

import csv
import io
import re

import pytest

from fleet.models import IngestRun
from tests.conftest import write_zip
from tests.reading import as_read
from tests.test_ingest import MANIFEST, run_command

pytestmark = pytest.mark.django_db


def csv_rows(client, run: IngestRun) -> list[list[str]]:
    return list(csv.reader(io.StringIO(client.get(f"/ingest-runs/{run.pk}/errors.csv").content.decode())))


def error(file: str, row, field: str = "gpu_count", job_id: str = "", message: str = "bad") -> dict:
    return {"file": file, "row": row, "field": field, "job_id": job_id, "message": message}


# -- the order of a run's errors --------------------------------------------------------------------


def test_an_import_keeps_its_errors_by_file_then_row(tmp_path):
    """The parser finds errors job by job: a job's conflicting second row (13) came before row 2,
    and a metrics file's errors after every job's."""
    window = "2026-11-02T10:00:00Z,2026-11-02T11:00:00Z"
    rows = [f"j{i},ann,vision,{'x' if i in (2, 10) else 1},{window},n" for i in range(1, 13)]
    rows.append(f"j1,ann,vision,4,{window},n")  # row 13: j1 again, other GPUs
    members = {
        "manifest.json": MANIFEST,
        "jobs.csv": "job_id,user,team,gpu_count,start_time,end_time,name\n" + "\n".join(rows) + "\n",
        "metrics.csv": "job_id,timestamp,host,gpu,gpu_util\nj3,bad,n1,0,5\nghost,2026-11-02T10:00:00Z,n1,0,5\n",
    }
    assert run_command(write_zip(tmp_path / "a.zip", members))[0] == 1
    run = IngestRun.objects.get()
    assert [(e["file"], e["row"]) for e in run.errors] == [
        ("jobs.csv", 2),
        ("jobs.csv", 10),
        ("jobs.csv", 13),
        ("metrics.csv", 1),
        ("metrics.csv", 2),
    ]


def test_a_runs_page_csv_and_api_list_errors_by_file_row_as_a_number_then_field(operator_client):
    """Also for a run stored before the importer sorted its errors (or a connector's pull)."""
    run = IngestRun.objects.create(
        archive_name="x.zip",
        status=IngestRun.Status.PARTIAL,
        errors=[
            error("metrics.csv", 3, "gpu_util", message="m3"),
            error("jobs.csv", 10, "user", message="j10-user"),
            error("jobs.csv", 9, message="j9"),
            error("jobs.csv", 10, "end_time", message="j10-end"),
            error("jobs.csv", None, "", message="whole-file"),
            error("", None, "", message="a note on the run"),
            error("jobs.csv", 2, message="j2"),
        ],
    )
    expected = ["a note on the run", "whole-file", "j2", "j9", "j10-end", "j10-user", "m3"]
    assert [row[4] for row in csv_rows(operator_client, run)[1:]] == expected
    page = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    shown = [page.index(f"<span>{message}</span></td>") for message in expected]
    assert shown == sorted(shown)
    # The API the same: it listed them as stored, so a script saw another order than the page.
    listed_by_api = operator_client.get(f"/api/v1/ingest-runs/{run.pk}/").json()["errors"]
    assert [e["message"] for e in listed_by_api] == expected


# -- paging through a run's errors ------------------------------------------------------------------


def test_every_error_of_a_run_can_be_paged_through_and_the_page_says_which(operator_client):
    errors = [error("jobs.csv", row, job_id=f"j{row}", message=f"row {row} is bad") for row in range(1, 1452)]
    run = IngestRun.objects.create(archive_name="broken.zip", status=IngestRun.Status.PARTIAL, errors=errors)
    csv_link = f'href="/ingest-runs/{run.pk}/errors.csv"'
    first = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert "Showing 1–200 of 1,451 errors, by file and row; all of them are in the <a " in first
    # The heading's count and the runs list's Errors cell read as every other count does ("1451" before).
    assert '<h2>Errors <span class="muted">1,451</span>' in first
    listed = operator_client.get("/ingest-runs/").content.decode()
    assert 'title="Show the run\'s errors">1,451</a>' in listed
    assert first.count(csv_link) >= 2 and "download as CSV" in first  # the heading's link, and the line's
    assert "Page 1 of 8" in first and 'href="?page=8#errors">Last' in first and "First" not in first
    middle = operator_client.get(f"/ingest-runs/{run.pk}/?page=2").content.decode()
    assert "Showing 201–400 of 1,451 errors" in middle and "<span>row 201 is bad</span></td>" in middle
    assert 'href="?page=1#errors">&laquo; First' in middle and 'href="?page=3#errors" rel="next"' in middle
    last = operator_client.get(f"/ingest-runs/{run.pk}/?page=8").content.decode()
    assert "Showing 1,401–1,451 of 1,451 errors" in last and "<span>row 1451 is bad</span></td>" in last
    assert "Last" not in last
    seen = set()
    for number in range(1, 9):
        page = operator_client.get(f"/ingest-runs/{run.pk}/?page={number}").content.decode()
        seen |= {message for message in (e["message"] for e in errors) if f"<span>{message}</span></td>" in page}
    assert len(seen) == 1451  # every error is on one of the pages


def test_a_run_with_few_errors_shows_them_all_and_says_so(operator_client):
    run = IngestRun.objects.create(
        archive_name="x.zip", status=IngestRun.Status.PARTIAL, errors=[error("jobs.csv", 2), error("jobs.csv", 3)]
    )
    page = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert "Showing 1–2 of 2 errors, by file and row." in page and 'aria-label="Pages of errors"' not in page


def test_a_runs_errors_say_how_rows_are_counted(operator_client):
    """'jobs.csv, row 2' is the second row under the header, an editor's line 3: an operator who opened the
    file at line 2 found a good job and no error. The page now says how rows count, as the format does,
    where an error names a row."""
    run = IngestRun.objects.create(archive_name="x.zip", status=IngestRun.Status.PARTIAL, errors=[error("jobs.csv", 2)])
    page = as_read(operator_client.get(f"/ingest-runs/{run.pk}/").content.decode())
    assert (
        "A CSV file's rows count from 1 under its header line, blank lines left out (row 2 is line 3 of a file"
        " without blank lines); in a JSON Lines file the row is the line number; a Parquet file's rows count from 1."
    ) in page
    empty = IngestRun.objects.create(archive_name="y.zip", status=IngestRun.Status.SUCCEEDED)
    assert "rows count from 1" not in operator_client.get(f"/ingest-runs/{empty.pk}/").content.decode()
    # An archive refused whole names no row: nothing to count.
    whole = IngestRun.objects.create(
        archive_name="z.zip", status=IngestRun.Status.FAILED, errors=[error("manifest.json", None, field="")]
    )
    assert "rows count from 1" not in operator_client.get(f"/ingest-runs/{whole.pk}/").content.decode()


# -- filtering the list of runs ---------------------------------------------------------------------


@pytest.fixture
def runs(operator, researcher):
    from fleet.models import MachineToken

    token, _ = MachineToken.objects.create_key(name="ci-pusher", created_by=operator)
    made = {
        "upload-ok": IngestRun(source="upload", status="succeeded", created_by=operator),
        "upload-failed": IngestRun(source="upload", status="failed", created_by=operator),
        "api-person": IngestRun(source="api", status="partial", created_by=researcher),
        "api-token": IngestRun(source="api", status="failed", api_key=token),
        "pull": IngestRun(source="connector", status="succeeded"),
        "cli": IngestRun(source="cli", status="succeeded"),
    }
    for name, run in made.items():
        run.archive_name = f"{name}.zip"
        run.save()
    return made, token


def listed(page: str) -> set[str]:
    return set(re.findall(r'title="([a-z-]+)\.zip"', page))


def test_the_runs_list_filters_by_status_source_and_who_with_counts(operator_client, runs):
    made, token = runs
    page = operator_client.get("/ingest-runs/").content.decode()
    assert listed(page) == set(made) and '<span class="muted" id="run-count">6</span>' in page
    # Each choice says how many runs it has.
    assert '<option value="failed">Failed (2)</option>' in page
    assert '<option value="connector">Connector (1)</option>' in page
    assert '<option value="olivia-operator">olivia-operator (2)</option>' in page
    assert f'<option value="token:{token.prefix}">token ci-pusher ({token.prefix}…) (1)</option>' in page

    failed = operator_client.get("/ingest-runs/?status=failed").content.decode()
    assert listed(failed) == {"upload-failed", "api-token"} and 'id="run-count">2 of 6<' in failed
    assert '<option value="failed" selected>' in failed
    assert listed(operator_client.get("/ingest-runs/?source=api").content.decode()) == {"api-person", "api-token"}
    assert listed(operator_client.get("/ingest-runs/?by=olivia-operator").content.decode()) == {
        "upload-ok",
        "upload-failed",
    }
    assert listed(operator_client.get(f"/ingest-runs/?by=token:{token.prefix}").content.decode()) == {"api-token"}
    both = operator_client.get("/ingest-runs/?source=upload&status=failed&by=olivia-operator").content.decode()
    assert listed(both) == {"upload-failed"}
    none = operator_client.get("/ingest-runs/?source=cli&status=failed").content.decode()
    assert listed(none) == set() and "No run matches these filters." in none


def test_the_filters_stay_across_the_pages_of_runs(operator_client, operator):
    IngestRun.objects.bulk_create(
        IngestRun(archive_name=f"r{n}.zip", source="upload", status="failed", created_by=operator) for n in range(60)
    )
    IngestRun.objects.create(archive_name="other.zip", source="cli", status="succeeded")
    first = operator_client.get("/ingest-runs/?status=failed&source=upload").content.decode()
    assert "Page 1 of 2" in first and 'href="?status=failed&amp;source=upload&amp;page=2"' in first
    second = operator_client.get("/ingest-runs/?status=failed&source=upload&page=2").content.decode()
    assert second.count('title="r') == 10 and "other.zip" not in second


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("status=done", "Status: “done” is not a run status; choose one of pending, running, succeeded, partial,"),
        ("source=ftp", "Source: “ftp” is not a source of runs; choose one of cli, upload, api, connector."),
        ("by=nobody", "By: No run was uploaded or pushed by “nobody”"),
        ("by=token:zzzz", "By: No run was uploaded or pushed by “token:zzzz”"),
        ("connector=nope", "Connector: There is no connector named “nope” (choose one of its names on Connectors)."),
    ],
)
def test_an_unknown_filter_value_is_said_not_a_server_error_or_an_empty_list(operator_client, runs, query, problem):
    response = operator_client.get(f"/ingest-runs/?{query}")
    assert response.status_code == 200
    page = response.content.decode()
    assert problem in page and "Showing all runs instead." in page
    assert listed(page) == set(runs[0])


def test_an_unknown_filter_value_is_escaped(operator_client, runs):
    page = operator_client.get("/ingest-runs/?by=<script>x</script>").content.decode()
    assert "<script>x" not in page and "&lt;script&gt;x" in page


# -- the connector a pull came from -----------------------------------------------------------------


@pytest.fixture
def pulls(operator):
    """Two connectors' pulls among an upload's run: slurm-c1 pulled 55 times, prom never."""
    from fleet.connectors.models import Connector

    slurm = Connector.objects.create(name="slurm-c1", kind="slurm", url="http://127.0.0.1:9", cluster="c1")
    prom = Connector.objects.create(name="prom", kind="prometheus", url="http://127.0.0.1:9")
    IngestRun.objects.bulk_create(
        IngestRun(archive_name=f"p{n}.zip", source="connector", status="succeeded", connector=slurm) for n in range(55)
    )
    upload = IngestRun.objects.create(archive_name="upload.zip", source="upload", created_by=operator)
    return slurm, prom, upload


def test_a_pull_links_to_its_connector_on_the_runs_list_and_on_its_page(operator_client, pulls):
    """The runs said only "Connector": which one pulled, and its health, had to be looked up by hand."""
    slurm, _, upload = pulls
    link = f'<a href="/connectors/{slurm.pk}/">slurm-c1</a>'
    listed_page = operator_client.get("/ingest-runs/").content.decode()
    assert listed_page.count(f"<span>Connector {link}</span>") == 49  # every pull on the page, after the newer upload
    pull = slurm.runs.first()
    assert link in operator_client.get(f"/ingest-runs/{pull.pk}/").content.decode()
    assert not re.search(r'href="/connectors/\d+/"', operator_client.get(f"/ingest-runs/{upload.pk}/").content.decode())


def test_the_runs_list_filters_by_connector_with_counts_kept_across_pages(operator_client, pulls):
    slurm, _, _ = pulls
    page = operator_client.get("/ingest-runs/").content.decode()
    assert '<option value="prom">prom (0)</option>' in page  # never pulled, but there
    assert '<option value="slurm-c1">slurm-c1 (55)</option>' in page
    first = operator_client.get("/ingest-runs/?connector=slurm-c1").content.decode()
    assert 'id="run-count">55 of 56<' in first and '<option value="slurm-c1" selected>' in first
    assert "upload.zip" not in first and 'href="?connector=slurm-c1&amp;page=2"' in first
    second = operator_client.get("/ingest-runs/?connector=slurm-c1&page=2").content.decode()
    assert second.count('title="p') == 5 and "upload.zip" not in second
    none = operator_client.get("/ingest-runs/?connector=prom").content.decode()
    assert "No run matches these filters." in none
    # A connector's page leads to all of its pulls, not to every run of every source.
    detail = operator_client.get(f"/connectors/{slurm.pk}/").content.decode()
    assert 'href="/ingest-runs/?connector=slurm-c1"' in detail


def test_the_connector_menu_is_left_out_where_there_is_no_connector(operator_client, runs):
    assert 'aria-label="Connector"' not in operator_client.get("/ingest-runs/").content.decode()


def test_a_pull_of_a_deleted_connector_says_its_connector_is_gone(operator_client, pulls):
    """A pull whose connector was deleted said just "Connector", as if nothing were missing."""
    slurm, _, _ = pulls
    pull = slurm.runs.first()
    IngestRun.objects.filter(connector=slurm).update(connector=None)  # what deleting the connector leaves
    assert (
        'Connector <span class="muted">(deleted since)</span>'
        in operator_client.get(f"/ingest-runs/{pull.pk}/").content.decode()
    )
    listed = operator_client.get("/ingest-runs/").content.decode()
    assert listed.count("(deleted since)") == 49 and "Showing 1–50 of 56 runs" in listed


# -- a run's times and its duration -----------------------------------------------------------------


def test_a_runs_page_shows_its_times_to_the_tenth_and_the_duration_between_them(operator_client):
    """A run started at 10:00:00.95 and finished at 10:00:03.35 read "Started 10:00:00", "Finished
    10:00:03" and "Duration 2.4 s": three seconds apart by its own times. The times are shown to the
    tenth of a second, as a clock shows them (not rounded up to a second not yet reached), and the
    duration is the time between them as shown, so the page adds up."""
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 11, 2, 10, 0, 0, 950_000, tzinfo=UTC)
    run = IngestRun.objects.create(
        archive_name="x.zip", status=IngestRun.Status.SUCCEEDED, started_at=start,
        finished_at=start + timedelta(seconds=2.4),
    )  # fmt: skip
    page = as_read(operator_client.get(f"/ingest-runs/{run.pk}/").content.decode())
    assert "<dt>Started</dt><dd>2026-11-02 10:00:00.9 UTC</dd>" in page
    assert "<dt>Finished</dt><dd>2026-11-02 10:00:03.3 UTC</dd>" in page
    assert '<dt>Duration</dt><dd id="run-duration">2.4 s</dd>' in page
    # Where the seconds round apart: 2.02 s from 10:00:00.99 is shown 10:00:00.9 to 10:00:03.0, 2.1 s.
    run.started_at = start + timedelta(seconds=0.04)
    run.finished_at = run.started_at + timedelta(seconds=2.02)
    run.save()
    page = as_read(operator_client.get(f"/ingest-runs/{run.pk}/").content.decode())
    assert "<dt>Started</dt><dd>2026-11-02 10:00:00.9 UTC</dd>" in page
    assert "<dt>Finished</dt><dd>2026-11-02 10:00:03.0 UTC</dd>" in page
    assert '<dt>Duration</dt><dd id="run-duration">2.1 s</dd>' in page


# -- a timestamp in a problem's words ---------------------------------------------------------------


def test_a_problems_timestamps_stay_whole_on_the_page_and_unchanged_in_the_csv(operator_client):
    """The errors table broke an ISO timestamp in a problem at its hyphen ("2026-" over "10-28T…"): each is
    one box, taken whole to the next line (broken between its date and time only where no line has room
    for it, a phone's card), its words still escaped; the CSV keeps the message as stored."""
    message = "end_time 2026-10-28T14:03:00Z is before start_time 2026-10-29 09:00:00+02:00 <b>"
    run = IngestRun.objects.create(
        source=IngestRun.Source.UPLOAD, status=IngestRun.Status.PARTIAL, errors=[error("jobs.csv", 2, message=message)]
    )
    html = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    (problem,) = re.findall(r'<span class="cell-label">Problem</span><span>(.*?)</span></td>', html)
    assert problem == (
        'end_time <span class="timestamp"><span class="when">2026-10-28T</span><wbr><span class="when">14:03:00Z'
        '</span></span> is before start_time <span class="timestamp"><span class="when">2026-10-29</span> '
        '<span class="when">09:00:00+02:00</span></span> &lt;b&gt;'
    )
    assert csv_rows(operator_client, run)[1][4] == message


# -- what each error did ----------------------------------------------------------------------------


def test_each_error_says_what_it_did_and_the_run_how_many_jobs_were_not_stored(operator_client, tmp_path):
    """One out-of-range sample rejects its job (docs/archive-format.md); an unknown job id in the
    metrics rejects nothing: the page, the CSV and the API say which is which."""
    window = "2026-11-02T10:00:00Z,2026-11-02T11:00:00Z"
    members = {
        "manifest.json": MANIFEST,
        "jobs.csv": "job_id,user,team,gpu_count,start_time,end_time\n"
        f"j-17,ann,vision,1,{window}\nj-18,ann,vision,1,{window}\n",
        "metrics.csv": "job_id,timestamp,host,gpu,gpu_util\n"
        "j-17,2026-11-02T10:00:00Z,n1,0,150\nghost,2026-11-02T10:00:00Z,n1,0,5\nj-18,2026-11-02T10:00:00Z,n1,0,5\n",
    }
    run_command(write_zip(tmp_path / "a.zip", members))
    run = IngestRun.objects.get()
    page = as_read(operator_client.get(f"/ingest-runs/{run.pk}/").content.decode())
    assert "1 job rejected (not stored); 1 error rejected nothing" in page
    assert "job j-17 not stored" in page and "nothing rejected" in page
    rows = csv_rows(operator_client, run)
    assert rows[0][-1] == "consequence"
    assert sorted(row[-1] for row in rows[1:]) == ["job j-17 not stored", "nothing rejected"]
    listed = operator_client.get(f"/api/v1/ingest-runs/{run.pk}/").json()["errors"]
    assert sorted(e["consequence"] for e in listed) == ["job j-17 not stored", "nothing rejected"]


def test_an_archive_refused_says_nothing_was_stored(operator_client, tmp_path):
    run_command(write_zip(tmp_path / "a.zip", {"manifest.json": MANIFEST}))
    run = IngestRun.objects.get()
    assert "archive refused: nothing stored" in as_read(operator_client.get(f"/ingest-runs/{run.pk}/").content.decode())


def test_the_runs_lists_error_count_opens_the_runs_errors_and_the_csv_stays_on_the_runs_page(operator_client):
    """A count that downloaded a file surprised: it opens the errors on the run's page, whose download is labelled."""
    run = IngestRun.objects.create(
        archive_name="x.zip", status=IngestRun.Status.PARTIAL, errors=[error("jobs.csv", 2, message="bad")]
    )
    listed = operator_client.get("/ingest-runs/").content.decode()
    assert f'<a class="in-text" href="/ingest-runs/{run.pk}/#errors" title="Show the run\'s errors">1</a>' in listed
    assert f"/ingest-runs/{run.pk}/errors.csv" not in listed
    page = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert f'href="/ingest-runs/{run.pk}/errors.csv">download as CSV</a>' in page


def test_a_runs_attempts_say_what_stops_an_attempt_where_the_run_is_imported(operator_client, settings):
    """The Attempts row blamed a dead worker even without a task queue, where no worker exists and the web
    process imports: it now says what stops an attempt there (that process killed or restarted)."""
    from tests.test_ingest_recovery import queued_mode

    run = IngestRun.objects.create(archive_name="x.zip", status=IngestRun.Status.SUCCEEDED, attempts=2)
    page = " ".join(as_read(operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()).split())
    assert (
        "<dt>Attempts</dt><dd>2 (an attempt stopped part-way — the web process importing it was killed or "
        "restarted, or the database was unreachable; the import was resumed from the start, without duplicates)"
    ) in page
    assert "worker" not in page
    with queued_mode(settings):
        page = " ".join(as_read(operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()).split())
    assert (
        "<dt>Attempts</dt><dd>2 (an attempt stopped part-way — its worker died, or the database was unreachable; "
        "the import was resumed from the start, without duplicates)"
    ) in page
