"""A worker that lost the database waits to retry the import holding no run lock (its connection is
gone), so on PostgreSQL the run's page offers Queue again and Mark failed meanwhile. Whichever comes
first imports the run (or fails it) and the other finds it finished: the import is never done twice.
But the late retry then wrote its note on the run anyway, 'the database connection was lost during the
import ...; the import was retried automatically (once) and resumed from the start', on a run the
operator's Queue again had imported, or had marked failed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from fleet.models import IngestRun, Job
from fleet.tasks import ingest_archive_task
from tests.conftest import require_postgresql, wait_for_imports
from tests.test_ingest_exclusive import RUN_LOCKS_NEED_POSTGRESQL
from tests.test_ingest_recovery import running_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("upload_dirs")]

OUTAGE_NOTE = "the database connection was lost during the import"


def notes(run: IngestRun) -> list[str]:
    return [error["message"] for error in run.errors if OUTAGE_NOTE in error["message"]]


@pytest.mark.parametrize("action", ["requeue", "fail"])
def test_a_retry_that_finds_the_run_finished_by_the_operator_leaves_it_as_it_is(operator, upload_dirs, action):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    run = running_run(upload_dirs, started_ago=timedelta(seconds=30))  # its worker lost the database
    client = Client()
    client.force_login(operator)
    assert "is importing this run</h2>" in client.get(f"/ingest-runs/{run.pk}/").content.decode()  # no process
    client.post(f"/ingest-runs/{run.pk}/{action}/")  # no Redis: Import now begins it in a thread of this process
    assert wait_for_imports()
    done = IngestRun.objects.get(pk=run.pk)
    expected = IngestRun.Status.SUCCEEDED if action == "requeue" else IngestRun.Status.FAILED
    assert done.status == expected and done.attempts == (2 if action == "requeue" else 1)
    jobs = Job.objects.count()

    # The database is back: the worker's retry comes.
    outcome = ingest_archive_task.apply(args=[run.pk], retries=1).get()
    assert outcome == {"run_id": run.pk, "status": expected}
    after = IngestRun.objects.get(pk=run.pk)
    assert (after.status, after.attempts, after.errors) == (done.status, done.attempts, done.errors)
    assert notes(after) == [] and Job.objects.count() == jobs


def test_a_retry_that_imports_the_run_still_says_why_it_took_longer(upload_dirs):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    run = running_run(upload_dirs, started_ago=timedelta(seconds=30))
    assert ingest_archive_task.apply(args=[run.pk], retries=1).get()["status"] == IngestRun.Status.SUCCEEDED
    run.refresh_from_db()
    assert run.attempts == 2 and len(notes(run)) == 1 and "retried automatically (once)" in notes(run)[0]
