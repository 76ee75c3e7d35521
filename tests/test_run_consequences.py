"""What each error of an ingest run cost, as its page's Consequence column, its errors CSV and the API say it,
for the errors nothing else described: a run that failed as a whole (`fleet.ingest.fail_run`, whatever failed
it), and a job that native files list more than once."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from unittest import mock

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.test import Client

from fleet import ingest
from fleet.models import IngestRun, Job
from fleet.tasks import IngestTask, ingest_archive_task
from tests.conftest import EXAMPLE_ARCHIVE, write_zip
from tests.test_archive_hostile import MANIFEST
from tests.test_faults import full_disk  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

NOTHING = "run failed: nothing stored"


def run_task(run: IngestRun) -> IngestRun:
    ingest_archive_task.apply(args=[run.pk], throw=False)
    run.refresh_from_db()
    return run


def consequences(run: IngestRun, operator) -> tuple[list[str], list[str], list[str]]:
    """The consequences as the run's page, its errors CSV and the API say them."""
    client = Client()
    client.force_login(operator)
    page = client.get(f"/ingest-runs/{run.pk}/").content.decode()
    on_page = [part.split("</span>")[0] for part in page.split('<span class="consequence ')[1:]]
    on_page = [text.split(">", 1)[1] for text in on_page]
    listed = list(csv.reader(io.StringIO(client.get(f"/ingest-runs/{run.pk}/errors.csv").content.decode())))
    api = client.get(f"/api/v1/ingest-runs/{run.pk}/").json()
    return on_page, [row[-1] for row in listed[1:]], [e["consequence"] for e in api["errors"]]


def test_a_run_failed_before_it_stored_anything_says_nothing_was_stored(operator):
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    with mock.patch("fleet.ingest._store_jobs", side_effect=SoftTimeLimitExceeded()):
        run = run_task(run)
    assert run.status == IngestRun.Status.FAILED and Job.objects.count() == 0
    assert consequences(run, operator) == ([NOTHING], [NOTHING], [NOTHING])


def test_a_run_stopped_part_way_says_the_jobs_it_stored_are_kept(operator, full_disk, settings):  # noqa: F811
    settings.INGEST_STORE_BATCH = 1  # each job its own transaction: those before the disk filled up stay
    run = run_task(ingest.create_run(EXAMPLE_ARCHIVE))
    stored = Job.objects.filter(ingest_run=run).count()
    assert run.status == IngestRun.Status.FAILED and 0 < stored < 5
    kept = "the 1 job it stored is kept" if stored == 1 else f"the {stored} jobs it stored are kept"
    said = f"run stopped: {kept}, the rest not imported"
    assert consequences(run, operator) == ([said], [said], [said])


def test_every_way_a_run_is_failed_says_what_was_kept(operator, upload_dirs):
    # A pending run marked failed by hand, and a worker that died on every delivery of a run that had stored a job.
    ingest.execute_run(ingest.create_run(EXAMPLE_ARCHIVE).pk)  # jobs stored by another run
    pending = ingest.create_run(EXAMPLE_ARCHIVE)  # pending: the test's transaction never commits, nothing queues it
    ingest.mark_failed(pending.pk, "Marked failed by olivia-operator while pending: nothing was imported.")
    pending.refresh_from_db()
    assert [ingest.error_consequence(e) for e in pending.errors] == [NOTHING]

    died = ingest.create_run(EXAMPLE_ARCHIVE)
    IngestRun.objects.filter(pk=died.pk).update(status=IngestRun.Status.RUNNING)
    Job.objects.filter(pk=Job.objects.order_by("pk")[0].pk).update(ingest_run=died)  # stored before the worker died
    IngestTask().give_up("gave up after 3 deliveries: the worker running this task died each time", died.pk)
    died.refresh_from_db()
    assert died.status == IngestRun.Status.FAILED
    assert [ingest.error_consequence(e) for e in died.errors] == [
        "run stopped: the 1 job it stored is kept, the rest not imported"
    ]


@pytest.mark.django_db(transaction=True)  # real commits: the run is queued once its transaction commits
def test_a_queue_that_cannot_be_reached_says_nothing_was_stored(operator, upload_dirs, queue_down):
    client = Client()
    client.force_login(operator)
    with open(EXAMPLE_ARCHIVE, "rb") as handle:
        client.post("/ingest-runs/upload/", {"file": handle})
    run = IngestRun.objects.get()
    assert run.status == IngestRun.Status.FAILED
    assert consequences(run, operator) == ([NOTHING], [NOTHING], [NOTHING])


# -- a job that native files list more than once ------------------------------------------------------------------
SACCT = Path(__file__).parent / "fixtures" / "connectors" / "sacct_v0.0.40.json"
JOBS_CSV = "job_id,user,team,gpu_count,start_time,end_time\n{}"
ROW = "{},ann,vision,1,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z\n"


def sacct(**renamed) -> str:
    """The fixture's sacct document, its first job (4242) listed a second time under another name."""
    doc = json.loads(SACCT.read_text())
    again = json.loads(json.dumps(doc["jobs"][0]))
    again["name"] = renamed.get("name", "second")
    doc["jobs"].append(again)
    return json.dumps(doc)


def about(run: IngestRun, job_id: str) -> list[tuple[str, str]]:
    return [(e["message"], ingest.error_consequence(e)) for e in run.errors if e.get("job_id") == job_id]


def test_a_job_a_sacct_file_lists_twice_says_which_listing_was_dropped(tmp_path):
    """The second listing was dropped without a word (or, in another file, with a consequence reading "nothing
    rejected"): the first is stored, and the run says the other was not."""
    run = ingest.execute_run(
        ingest.create_run(write_zip(tmp_path / "a.zip", {"manifest.json": MANIFEST, "native/slurm/a.json": sacct()})).pk
    )
    assert run.status == IngestRun.Status.SUCCEEDED and Job.objects.get(external_id="4242").name == "train"
    [(message, consequence)] = about(run, "4242")
    assert message == "job listed twice; the first is kept"
    assert consequence == "this listing not stored: job 4242 is stored from another"

    members = {"manifest.json": MANIFEST, "native/slurm/a.json": SACCT.read_text(), "native/slurm/b.json": sacct()}
    run = ingest.execute_run(ingest.create_run(write_zip(tmp_path / "b.zip", members)).pk)
    assert {consequence for _, consequence in about(run, "4242")} == {
        "this listing not stored: job 4242 is stored from another"
    }


def test_a_native_job_the_jobs_file_also_lists_says_the_jobs_files_row_is_stored(tmp_path):
    members = {
        "manifest.json": MANIFEST,
        "jobs.csv": JOBS_CSV.format(ROW.format("4242")),
        "native/slurm/a.json": sacct(),
    }
    run = ingest.execute_run(ingest.create_run(write_zip(tmp_path / "a.zip", members)).pk)
    assert Job.objects.get(external_id="4242").user == "ann"  # the jobs file's row
    assert ("also in the jobs file, which wins", "this listing not stored: job 4242 is stored from another") in about(
        run, "4242"
    )
    assert all(consequence != "nothing rejected" for _, consequence in about(run, "4242"))


def test_a_native_job_whose_jobs_file_row_is_rejected_says_the_job_is_not_stored(tmp_path):
    bad = ROW.format("4242").replace(",1,", ",-3,")
    members = {"manifest.json": MANIFEST, "jobs.csv": JOBS_CSV.format(bad), "native/slurm/a.json": sacct()}
    run = ingest.execute_run(ingest.create_run(write_zip(tmp_path / "a.zip", members)).pk)
    assert not Job.objects.filter(external_id="4242").exists()
    said = about(run, "4242")
    assert said and {consequence for _, consequence in said} == {"job 4242 not stored"}, said


# -- the line above the errors that sums them up ------------------------------------------------------------------
def summary(run: IngestRun, operator) -> str:
    """The run page's line above its errors ("2 jobs rejected (not stored); 5 errors rejected nothing."), or ""."""
    client = Client()
    client.force_login(operator)
    page = " ".join(client.get(f"/ingest-runs/{run.pk}/").content.decode().split())
    if 'id="error-consequences"' not in page:
        return ""
    return page.split('<p id="error-consequences">', 1)[1].split("</p>", 1)[0]


def test_the_summary_counts_listings_not_stored(operator, tmp_path):
    """A run whose only errors were listings not stored had no summary; beside a rejected job, the line said
    "1 job rejected (not stored); 0 errors rejected nothing." over three errors, one of them unaccounted for."""
    run = ingest.execute_run(
        ingest.create_run(write_zip(tmp_path / "a.zip", {"manifest.json": MANIFEST, "native/slurm/a.json": sacct()})).pk
    )
    notes = sum(e["effect"] == "note" for e in run.errors)
    rejected_nothing = f"{notes} error{'s' if notes != 1 else ''} rejected nothing"
    assert summary(run, operator) == (
        "0 jobs rejected (not stored); 1 duplicate listing not stored (its job is stored from another listing); "
        f"{rejected_nothing}."
    )

    # Beside a rejected job: the listing was left out of the line, which then accounted for two of three errors.
    bad = ROW.format("j-2").replace(",1,", ",-3,")
    members = {"manifest.json": MANIFEST, "jobs.csv": JOBS_CSV.format(bad), "native/slurm/a.json": sacct()}
    run = ingest.execute_run(ingest.create_run(write_zip(tmp_path / "b.zip", members)).pk)
    assert run.jobs_rejected == 1 and Job.objects.filter(external_id="4242").exists()
    notes = sum(e["effect"] == "note" for e in run.errors)
    rejected_nothing = f"{notes} error{'s' if notes != 1 else ''} rejected nothing"
    assert summary(run, operator) == (
        "1 job rejected (not stored); 1 duplicate listing not stored (its job is stored from another listing); "
        f"{rejected_nothing}."
    )


def test_the_summary_of_a_run_that_failed_as_a_whole_says_what_was_kept(operator, full_disk, settings):  # noqa: F811
    """It said "0 jobs rejected (not stored)" or nothing at all, as if nothing had been lost."""
    settings.INGEST_STORE_BATCH = 1
    run = run_task(ingest.create_run(EXAMPLE_ARCHIVE))
    stored = Job.objects.filter(ingest_run=run).count()
    kept = "the 1 job it stored is kept" if stored == 1 else f"the {stored} jobs it stored are kept"
    assert summary(run, operator) == f"Run stopped: {kept}, the rest not imported."


def test_the_summary_of_a_run_failed_before_it_stored_anything(operator, tmp_path):
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    with mock.patch("fleet.ingest._store_jobs", side_effect=SoftTimeLimitExceeded()):
        run = run_task(run)
    assert summary(run, operator) == "Run failed: nothing stored."

    refused = ingest.execute_run(ingest.create_run(write_zip(tmp_path / "r.zip", {"manifest.json": "{"})).pk)
    assert refused.status == IngestRun.Status.FAILED
    assert summary(refused, operator) == "Archive refused: nothing stored."


# -- Mark failed on a pending run ---------------------------------------------------------------------------------
def test_mark_failed_on_a_pending_run_an_earlier_attempt_stored_jobs_of_says_they_are_kept(operator):
    """A run whose worker stopped and which was queued again is pending with the jobs its first attempt stored:
    marked failed, its error said "nothing was imported" beside the consequence "the 1 job it stored is kept"."""
    ingest.execute_run(ingest.create_run(EXAMPLE_ARCHIVE).pk)
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    IngestRun.objects.filter(pk=run.pk).update(attempts=1, phase="queued again: its worker had stopped")
    Job.objects.filter(pk__in=Job.objects.order_by("pk").values("pk")[:2]).update(ingest_run=run)
    client = Client()
    client.force_login(operator)
    page = " ".join(client.get(f"/ingest-runs/{run.pk}/").content.decode().split())
    assert "Mark failed keeps the 2 jobs an earlier attempt stored and discards the uploaded archive." in page
    client.post(f"/ingest-runs/{run.pk}/fail/")
    run.refresh_from_db()
    assert run.status == IngestRun.Status.FAILED
    [error] = run.errors
    assert error["message"] == (
        "Marked failed by olivia-operator while pending: the 2 jobs an earlier attempt stored are kept, "
        "the rest was not imported; send the archive again to import it (stored jobs are skipped)."
    )
    assert ingest.error_consequence(error) == "run stopped: the 2 jobs it stored are kept, the rest not imported"


def test_the_not_imported_card_says_an_earlier_attempt_stored_jobs_not_that_none_got_to_the_run(operator):
    """Without a task queue a run left pending read "that process stopped before it got to it" even when an
    attempt had begun it and stored jobs (its Mark failed said they are kept, beside it)."""
    ingest.execute_run(ingest.create_run(EXAMPLE_ARCHIVE).pk)
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    IngestRun.objects.filter(pk=run.pk).update(attempts=1, phase="queued again: its worker had stopped")
    Job.objects.filter(pk__in=Job.objects.order_by("pk").values("pk")[:2]).update(ingest_run=run)
    client = Client()
    client.force_login(operator)
    page = " ".join(client.get(f"/ingest-runs/{run.pk}/").content.decode().split())
    assert "Not imported" in page and "stopped before it got to it" not in page
    assert "an earlier attempt began it and stopped after storing 2 jobs, which are kept" in page

    IngestRun.objects.filter(pk=run.pk).update(attempts=1)
    Job.objects.filter(ingest_run=run).delete()
    page = " ".join(client.get(f"/ingest-runs/{run.pk}/").content.decode().split())
    assert "an earlier attempt began it and stopped before storing any job" in page

    fresh = ingest.create_run(EXAMPLE_ARCHIVE)
    page = " ".join(client.get(f"/ingest-runs/{fresh.pk}/").content.decode().split())
    assert "that process stopped before it got to it" in page and "earlier attempt" not in page
