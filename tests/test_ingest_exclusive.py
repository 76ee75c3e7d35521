"""At most one worker imports a run: a redelivered task waits while the first worker is alive.

With late acknowledgement a task can be handed out a second time while its first worker is still
importing (a run longer than the visibility timeout, a broker restart). Two workers upserting the
same jobs at once would race on the same rows; the second one must leave the run alone and look
again later, and take it over only once the first one is gone.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from fleet import ingest
from fleet.models import IngestRun, Job
from tests.conftest import EXAMPLE_ARCHIVE, require_postgresql, require_service, worker_output
from tests.test_ingest_worker_kill import run_progress, wait_until_finished
from tests.test_services import _worker_database_url, celery_worker
from tests.waiting import wait_for

pytestmark = pytest.mark.services

RUN_LOCKS_NEED_POSTGRESQL = "run locks are PostgreSQL advisory locks; SQLite's are tests/test_ingest_claim_sqlite.py"


def hold_run_lock(run_id: int) -> psycopg.Connection:
    """Another worker's session importing the run: it holds the run's lock until its connection closes."""
    other = psycopg.connect(_worker_database_url(), autocommit=True)
    other.execute("SELECT pg_advisory_lock(%s, %s)", (ingest.RUN_LOCK_NAMESPACE, run_id))
    return other


BUSY_LOOKS = 3  # a redelivered task's looks at a held run before the test lets the run go: several, not one by chance


def busy_looks(storage_dir, queue: str, run_id: int) -> int:
    """How many times the worker `celery_worker` started for `queue` has found the run busy and left it, by its log
    (fleet.tasks: "... is being imported by another worker; looking again ...")."""
    return worker_output(storage_dir, queue).count(f"Ingest run {run_id} is being imported by another worker")


def wait_until_released(run_id: int) -> None:
    """The server drops a closed session's locks as its backend exits, a moment after the close returned."""
    from django.db import connection

    def locks_held() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s", [run_id])
            return cursor.fetchone()[0]

    wait_for(f"the lock on run {run_id} to be released (locks held)", locks_held, 5, until=lambda held: held == 0)


@pytest.mark.django_db(transaction=True)
def test_a_run_held_by_another_worker_is_left_alone_until_that_worker_is_gone(storage_dir):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    other = hold_run_lock(run.pk)
    try:
        with pytest.raises(ingest.RunBusy):
            ingest.execute_run(run.pk)
        run.refresh_from_db()
        assert run.status == IngestRun.Status.PENDING and run.attempts == 0
        assert not Job.objects.exists()
    finally:
        other.close()  # the first worker died: the server drops its lock with its connection
    wait_until_released(run.pk)
    done = ingest.execute_run(run.pk)
    assert done.status == IngestRun.Status.SUCCEEDED and done.attempts == 1
    assert Job.objects.count() == done.jobs_created > 0


@pytest.mark.django_db(transaction=True)
def test_a_redelivered_task_on_a_real_worker_waits_for_the_first_worker(storage_dir):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    require_service("REDIS_URL")
    from config.celery import app
    from fleet.tasks import ingest_archive_task

    app.conf.task_always_eager = False
    storage_dir.mkdir(parents=True, exist_ok=True)
    queue = f"test-busy-{uuid.uuid4().hex[:8]}"
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    other = hold_run_lock(run.pk)
    try:
        with celery_worker(queue, storage_dir, env={"INGEST_BUSY_RETRY_SECONDS": "1"}):
            ingest_archive_task.apply_async(args=[run.pk], queue=queue)
            # Several looks at the run while the "first worker" holds it; a worker that imported it regardless
            # ends the wait at once (the run no longer pending), and fails the assertions below.
            now = wait_for(
                f"the worker to find the run busy {BUSY_LOOKS} times",
                lambda: {**run_progress(run), "looks": busy_looks(storage_dir, queue, run.pk)},
                60,
                until=lambda now: now["looks"] >= BUSY_LOOKS or now["status"] != IngestRun.Status.PENDING,
            )
            assert now["status"] == IngestRun.Status.PENDING and now["attempts"] == 0, now
            assert not Job.objects.exists()
            other.close()
            wait_until_finished(run, "the run, freed, to be imported", 60)
    finally:
        other.close()
    run.refresh_from_db()
    assert run.status == IngestRun.Status.SUCCEEDED, run.errors
    assert run.attempts == 1  # imported once, by the delivery that found the run free
    assert Job.objects.count() == run.jobs_created > 0
