"""Ingest runs left pending by a lost task: beat's sweep and the run page's Queue again / Mark failed.

A run whose task was lost before a worker started it (a worker lost it, the queue was flushed, Redis
restarted without persistence) stayed *pending* for ever: nothing failed or queued it again, and the
only way out was deleting it in the admin. Now beat's `fleet.recover_pending_runs` queues again a run
still pending INGEST_REQUEUE_MINUTES after it was queued, or fails it, saying why, when its archive
is gone; the run page lets an operator do either at once (POST, audited). Each takes the run's lock
first, so a run a worker is importing (PostgreSQL advisory lock) is left alone.
"""

from __future__ import annotations

import html
import shutil
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone

from fleet import ingest
from fleet.models import AuditEvent, IngestRun, Job
from tests.conftest import EXAMPLE_ARCHIVE, require_postgresql, wait_for_imports
from tests.test_ingest_exclusive import RUN_LOCKS_NEED_POSTGRESQL, hold_run_lock, wait_until_released

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("upload_dirs")]

SWEEP = timedelta(minutes=30)


def pending_run(upload_dirs, *, minutes_ago: int, name: str = "week-47.zip", keep: bool = True) -> IngestRun:
    """An uploaded archive's run whose task was queued `minutes_ago` and never reached a worker."""
    path = upload_dirs / f"{name}.upload"
    if keep:
        shutil.copyfile(EXAMPLE_ARCHIVE, path)
    run = IngestRun.objects.create(archive_path=str(path), archive_name=name, source=IngestRun.Source.UPLOAD)
    then = timezone.now() - timedelta(minutes=minutes_ago)
    IngestRun.objects.filter(pk=run.pk).update(created_at=then, queued_at=then)
    return IngestRun.objects.get(pk=run.pk)


def test_the_sweep_queues_a_lost_run_again_and_fails_one_whose_archive_is_gone(upload_dirs):
    lost = pending_run(upload_dirs, minutes_ago=45)
    gone = pending_run(upload_dirs, minutes_ago=45, name="week-46.zip", keep=False)
    young = pending_run(upload_dirs, minutes_ago=5, name="week-48.zip")
    pull = IngestRun.objects.create(archive_path="connector:x", archive_name="x", source=IngestRun.Source.CONNECTOR)
    IngestRun.objects.filter(pk=pull.pk).update(created_at=timezone.now() - timedelta(hours=3))

    assert ingest.recover_pending_runs(SWEEP) == {"queued": 1, "failed": 1}

    lost.refresh_from_db()  # queued again; in-process (no Redis) the task ran at once
    assert lost.status == IngestRun.Status.SUCCEEDED and lost.attempts == 1 and Job.objects.count() > 0
    gone.refresh_from_db()
    assert gone.status == IngestRun.Status.FAILED and gone.finished_at is not None
    assert gone.errors[0]["message"] == (
        "The run was still pending 30 min after it was queued (its task was lost: a worker lost it, or the queue "
        "was flushed or restarted without persistence), and its archive is no longer there (week-46.zip), so it "
        "was not imported: send the archive again."
    )
    assert IngestRun.objects.get(pk=young.pk).status == IngestRun.Status.PENDING  # may still be waiting its turn
    assert IngestRun.objects.get(pk=pull.pk).status == IngestRun.Status.PENDING  # a pull is never the sweep's
    assert ingest.recover_pending_runs(SWEEP) == {}  # idempotent: nothing left to do


def test_beat_runs_the_sweep(upload_dirs):
    from fleet.tasks import recover_pending_runs_task

    entry = django_settings.CELERY_BEAT_SCHEDULE["fleet.recover_pending_runs"]
    assert entry["task"] == recover_pending_runs_task.name
    assert entry["schedule"] == django_settings.INGEST_REQUEUE_MINUTES * 60
    pending_run(upload_dirs, minutes_ago=django_settings.INGEST_REQUEUE_MINUTES + 1)
    assert recover_pending_runs_task.apply().get() == {"queued": 1}


def test_a_run_a_worker_holds_is_left_alone(upload_dirs):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    run = pending_run(upload_dirs, minutes_ago=45)
    other = hold_run_lock(run.pk)  # a worker is importing it (it has not yet written "running")
    try:
        assert ingest.recover_pending_runs(SWEEP) == {"busy": 1}
        assert ingest.mark_failed(run.pk, "by hand").outcome == "busy"
        run.refresh_from_db()
        assert run.status == IngestRun.Status.PENDING and (upload_dirs / "week-47.zip.upload").exists()
    finally:
        other.close()
    wait_until_released(run.pk)
    assert ingest.recover_pending_runs(SWEEP) == {"queued": 1}
    assert IngestRun.objects.get(pk=run.pk).status == IngestRun.Status.SUCCEEDED


def said(response) -> list[str]:
    """The messages a page shows after an action (what the operator reads first)."""
    import html
    import re

    return [html.unescape(m) for m in re.findall(r'<p class="message [^"]*"[^>]*>(.*?)</p>', response.content.decode())]


@contextmanager
def queued_mode(settings):
    """Tasks go to a queue (REDIS_URL set) and no worker takes them: nothing runs in the request."""
    from celery import current_app
    from celery.result import AsyncResult

    from fleet import tasking

    queued = []
    saved = (current_app.conf.task_always_eager, tasking.publish)
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    current_app.conf.task_always_eager = False
    tasking.publish = lambda task, args=(), **kwargs: queued.append((task.name, tuple(args))) or AsyncResult("x")
    try:
        yield queued
    finally:
        current_app.conf.task_always_eager, tasking.publish = saved


def test_without_a_task_queue_import_now_and_mark_failed_say_what_was_done(operator, researcher, upload_dirs):
    """Embedded mode (no REDIS_URL): a pending run's page said it would be queued again by itself and its
    Queue again said "The run was queued again; a worker imports it next." when the import had run in the
    request and no worker or beat exists. The page, the button and the messages now say what happens."""
    client = Client()
    client.force_login(operator)
    run = pending_run(upload_dirs, minutes_ago=2)
    page = " ".join(client.get(f"/ingest-runs/{run.pk}/").content.decode().split())
    assert "Not imported" in page and ">Import now</button>" in page and ">Mark failed</button>" in page
    assert "nothing imports this run by itself" in page and "not started (no task queue" in page
    assert "waiting for a worker" not in page.lower()
    assert "Waiting for a worker" not in page and "queued again by itself" not in page

    assert client.get(f"/ingest-runs/{run.pk}/requeue/").status_code == 405
    response = client.post(f"/ingest-runs/{run.pk}/requeue/", follow=True)
    # Begun in a thread of this process, as an upload's import: the request does not wait for it to end.
    assert wait_for_imports()
    run.refresh_from_db()
    assert run.status == IngestRun.Status.SUCCEEDED
    ended = (
        "The run was imported again here, in the web process (there is no task queue: REDIS_URL is not set): "
        f"succeeded, {run.jobs_display}."
    )  # over already when the request looked (a loaded machine)
    begun = "The import has begun in this process (there is no task queue: REDIS_URL is not set); this page follows it."
    assert said(response) in ([begun], [ended])
    event = AuditEvent.objects.get(action="ingest_run.requeue", target_id=str(run.pk))
    assert event.details == {"outcome": "started" if said(response) == [begun] else "ran", "status": "pending"}
    assert "Not imported" not in client.get(f"/ingest-runs/{run.pk}/").content.decode()

    other = pending_run(upload_dirs, minutes_ago=2, name="week-48.zip")
    as_researcher = Client()
    as_researcher.force_login(researcher)
    assert as_researcher.post(f"/ingest-runs/{other.pk}/fail/").status_code == 404
    response = client.post(f"/ingest-runs/{other.pk}/fail/", follow=True)
    assert said(response) == ["The run is marked failed; its upload is discarded."]
    other.refresh_from_db()
    assert other.status == IngestRun.Status.FAILED
    assert other.errors[0]["message"] == "Marked failed by olivia-operator while pending: nothing was imported."
    assert not (upload_dirs / "week-48.zip.upload").exists()
    assert AuditEvent.objects.filter(action="ingest_run.fail", target_id=str(other.pk)).count() == 1
    # Again on a finished run: said, nothing changed, nothing audited.
    response = client.post(f"/ingest-runs/{other.pk}/requeue/", follow=True)
    assert said(response) == ["The run has already finished."]
    assert AuditEvent.objects.filter(action__startswith="ingest_run.", target_id=str(other.pk)).count() == 1


def test_imported_again_in_the_request_and_failing_says_it_failed_and_why(operator, upload_dirs, tmp_path):
    client = Client()
    client.force_login(operator)
    run = pending_run(upload_dirs, minutes_ago=2, keep=False)
    (upload_dirs / "week-47.zip.upload").write_bytes(b"not an archive at all")
    response = client.post(f"/ingest-runs/{run.pk}/requeue/", follow=True)
    assert wait_for_imports()
    run.refresh_from_db()
    assert run.status == IngestRun.Status.FAILED
    (message,) = said(response)
    if not message.startswith("The import has begun in this process"):  # over before the request looked
        assert message.startswith(
            "The run was imported again here, in the web process (there is no task queue: REDIS_URL is not set), "
            f"and failed: {run.errors[0]['message'][:40]}"
        )
        assert 'class="message error"' in response.content.decode()
    page = client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert ">Failed</span>" in page and run.errors[0]["message"][:40] in html.unescape(page)


def test_with_a_task_queue_queue_again_and_mark_failed_say_it_is_queued(operator, upload_dirs, settings):
    """With REDIS_URL the same buttons hand the run to the workers, and say so."""
    client = Client()
    client.force_login(operator)
    run = pending_run(upload_dirs, minutes_ago=2)
    other = pending_run(upload_dirs, minutes_ago=2, name="week-48.zip")
    with queued_mode(settings) as queued:
        page = " ".join(client.get(f"/ingest-runs/{run.pk}/").content.decode().split())
        response = client.post(f"/ingest-runs/{run.pk}/requeue/", follow=True)
        failed = client.post(f"/ingest-runs/{other.pk}/fail/", follow=True)
    assert "Waiting for a worker" in page and ">Queue again</button>" in page and "Not imported" not in page
    assert '<span id="run-phase" aria-live="polite">waiting for a worker</span>' in page
    due = (run.queued_at + timedelta(minutes=django_settings.INGEST_REQUEUE_MINUTES)).strftime("%Y-%m-%d %H:%M")
    assert f"at {due} UTC it is queued again by itself" in page

    assert said(response) == ["The run was queued again; a worker imports it next."]
    assert queued == [("fleet.ingest_archive", (run.pk,))]
    run.refresh_from_db()
    assert run.status == IngestRun.Status.PENDING and run.queued_at > timezone.now() - timedelta(minutes=1)
    event = AuditEvent.objects.get(action="ingest_run.requeue", target_id=str(run.pk))
    assert event.details == {"outcome": "queued", "status": "pending"}

    assert said(failed) == [
        "The run is marked failed; its upload is discarded. Should its task still reach a worker, the worker "
        "finds the run finished and imports nothing."
    ]
    assert IngestRun.objects.get(pk=other.pk).status == IngestRun.Status.FAILED


def test_queue_again_with_redis_down_says_so_and_keeps_the_run(operator, upload_dirs, queue_down):
    client = Client()
    client.force_login(operator)
    run = pending_run(upload_dirs, minutes_ago=45)
    page = client.post(f"/ingest-runs/{run.pk}/requeue/", follow=True).content.decode()
    assert "The task queue (Redis at 127.0.0.1:1, REDIS_URL) could not be reached, so the run was not queued" in page
    assert "sekrit" not in page
    run.refresh_from_db()
    assert run.status == IngestRun.Status.PENDING and (upload_dirs / "week-47.zip.upload").exists()


# -- runs left *running* by a worker that died and whose task never came back ------------------------


def stalled_since(settings) -> timedelta:
    """Long enough ago that the broker's redelivery of a dead worker's task is overdue."""
    return timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT) + SWEEP + timedelta(minutes=1)


def running_run(upload_dirs, *, started_ago: timedelta, name: str = "week-49.zip", keep: bool = True) -> IngestRun:
    """An archive's run whose worker started importing it `started_ago`, stored part of it, and died."""
    run = pending_run(upload_dirs, minutes_ago=round(started_ago.total_seconds() / 60) + 1, name=name, keep=keep)
    IngestRun.objects.filter(pk=run.pk).update(
        status=IngestRun.Status.RUNNING,
        started_at=timezone.now() - started_ago,
        attempts=1,
        phase="stored 2 of 4 jobs",
        jobs_done=2,
    )
    return IngestRun.objects.get(pk=run.pk)


def test_a_run_whose_worker_died_and_whose_task_never_came_back_is_queued_again(upload_dirs, settings):
    """It stayed *running* for ever (the sweep looked at pending runs only); now, once no worker holds
    its lock and the redelivery is overdue, it is queued again and imported, without duplicates."""
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    run = running_run(upload_dirs, started_ago=stalled_since(settings))
    young = running_run(upload_dirs, started_ago=timedelta(minutes=20), name="week-50.zip")

    assert ingest.recover_pending_runs(SWEEP) == {"stalled_queued": 1}

    run.refresh_from_db()  # in-process (no Redis) the task ran at once
    assert run.status == IngestRun.Status.SUCCEEDED and run.attempts == 2, run.errors
    assert Job.objects.count() == run.jobs_created > 0
    # Its redelivery may still come: left as it is.
    assert IngestRun.objects.get(pk=young.pk).status == IngestRun.Status.RUNNING
    assert ingest.recover_pending_runs(SWEEP) == {}


def test_a_run_a_live_worker_is_importing_is_never_touched(upload_dirs, settings):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    run = running_run(upload_dirs, started_ago=stalled_since(settings))  # a long import, e.g. manage.py ingest_archive
    other = hold_run_lock(run.pk)
    try:
        assert ingest.recover_pending_runs(SWEEP) == {"stalled_busy": 1}
        assert ingest.recover_pending_runs(SWEEP) == {"stalled_busy": 1}
        after = IngestRun.objects.get(pk=run.pk)
        assert (after.status, after.phase, after.started_at, after.attempts, after.jobs_done, after.queued_at) == (
            IngestRun.Status.RUNNING,
            "stored 2 of 4 jobs",
            run.started_at,
            1,
            2,
            run.queued_at,
        )
        assert not Job.objects.exists()
    finally:
        other.close()  # the worker dies
    wait_until_released(run.pk)
    assert ingest.recover_pending_runs(SWEEP) == {"stalled_queued": 1}


def test_a_stalled_run_whose_archive_is_gone_is_failed_saying_why(upload_dirs, settings):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    run = running_run(upload_dirs, started_ago=stalled_since(settings), keep=False)
    assert ingest.recover_pending_runs(SWEEP) == {"stalled_failed": 1}
    run.refresh_from_db()
    assert run.status == IngestRun.Status.FAILED and run.finished_at is not None
    assert run.errors[0]["message"] == (
        "The worker importing this run stopped (killed, out of memory, or its machine went away) and its task "
        "never came back (the queue was flushed or restarted without persistence); its archive is no longer there "
        "(week-49.zip), so the import cannot be finished: the jobs stored so far are complete; send the archive "
        "again (stored jobs are skipped)."
    )


def test_a_stalled_run_queued_again_with_redis_down_is_pending_and_swept_later(upload_dirs, settings, queue_down):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    run = running_run(upload_dirs, started_ago=stalled_since(settings))
    assert ingest.recover_pending_runs(SWEEP) == {"stalled_unreachable": 1}
    run.refresh_from_db()
    assert run.status == IngestRun.Status.PENDING and run.phase == "queued again: its worker had stopped"
    assert run.started_at is None and (upload_dirs / "week-49.zip.upload").exists()


@pytest.mark.sqlite_only("run locks tell on PostgreSQL")
def test_without_run_locks_a_running_run_is_left_alone(upload_dirs, settings):
    """SQLite's embedded mode has no lock that shows whether a process imports a run (a long
    `manage.py ingest_archive`): the sweep never touches a running run there whose process is not known to be
    gone (here none is recorded, as for a run from before runs kept it; tests/test_ingest_runs_robust.py)."""
    run = running_run(upload_dirs, started_ago=stalled_since(settings))
    assert ingest.recover_pending_runs(SWEEP) == {}
    assert ingest.requeue_run(run.pk, stalled_before=timezone.now()).outcome == "busy"
    assert IngestRun.objects.get(pk=run.pk).status == IngestRun.Status.RUNNING


def test_the_run_page_offers_queue_again_and_mark_failed_for_a_running_run_no_worker_holds(
    operator, upload_dirs, settings
):
    """A run left *running* by a dead worker could only wait for the sweep (2 h 45 min by default):
    its page offered nothing. On PostgreSQL, once no worker holds it, the page offers Queue again and
    Mark failed at once; a run a worker holds shows neither, and posting them changes nothing."""
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    client = Client()
    client.force_login(operator)
    run = running_run(upload_dirs, started_ago=timedelta(minutes=10))
    page_url = f"/ingest-runs/{run.pk}/"

    other = hold_run_lock(run.pk)  # a live worker importing it
    try:
        page = client.get(page_url).content.decode()
        assert "is importing this run" not in page and ">Import now</button>" not in page
        for action in ("requeue", "fail"):
            response = client.post(f"/ingest-runs/{run.pk}/{action}/", follow=True)
            # In-process (no Redis), as here: another process (a web process's thread) holds it.
            assert "Another process has begun importing the run; nothing was changed." in response.content.decode()
        after = IngestRun.objects.get(pk=run.pk)
        assert (after.status, after.phase, after.started_at) == (IngestRun.Status.RUNNING, run.phase, run.started_at)
        assert not AuditEvent.objects.filter(action__startswith="ingest_run.").exists()
    finally:
        other.close()  # the worker dies
    wait_until_released(run.pk)

    # In-process (no Redis), as here, the page and its button say that nothing comes by itself.
    page = " ".join(client.get(page_url).content.decode().split())
    assert "No process is importing this run" in page and "nothing takes it up by itself" in page
    assert ">Import now</button>" in page and ">Mark failed</button>" in page and "beat's sweep" not in page

    response = client.post(f"/ingest-runs/{run.pk}/requeue/", follow=True)
    begun = "The import has begun in this process" in response.content.decode()
    assert begun or "The run was imported again here, in the web process" in response.content.decode()
    assert wait_for_imports()
    run.refresh_from_db()  # in-process (no Redis) the task ran in a thread of this process
    assert run.status == IngestRun.Status.SUCCEEDED and run.attempts == 2, run.errors
    assert Job.objects.count() == run.jobs_created > 0
    event = AuditEvent.objects.get(action="ingest_run.requeue", target_id=str(run.pk))
    assert event.details == {"outcome": "started" if begun else "ran", "status": "running"}
    assert "is importing this run" not in client.get(page_url).content.decode()

    # With a task queue the same page waits for beat's sweep, and offers to queue the run again.
    with_queue = running_run(upload_dirs, started_ago=timedelta(minutes=10), name="week-49.zip")
    with queued_mode(settings):
        page = " ".join(client.get(f"/ingest-runs/{with_queue.pk}/").content.decode().split())
    due = (with_queue.started_at + stalled_since(settings) - timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M")
    assert "No worker is importing this run" in page and ">Queue again</button>" in page
    assert f"beat's sweep queues the run again by itself from {due} UTC" in page

    # Mark failed: the jobs it stored stay, the upload goes, and the error says who and why.
    stopped = running_run(upload_dirs, started_ago=timedelta(minutes=10), name="week-50.zip")
    response = client.post(f"/ingest-runs/{stopped.pk}/fail/", follow=True)
    assert "The run is marked failed; its upload is discarded." in response.content.decode()
    stopped.refresh_from_db()
    assert stopped.status == IngestRun.Status.FAILED and stopped.finished_at is not None
    assert stopped.errors[0]["message"] == (
        "Marked failed by olivia-operator while running with no worker holding it (its worker had stopped): the jobs "
        "stored so far are kept; send the archive again to import the rest (stored jobs are skipped)."
    )
    assert not (upload_dirs / "week-50.zip.upload").exists()
    assert AuditEvent.objects.filter(action="ingest_run.fail", target_id=str(stopped.pk)).count() == 1

    # Queue again on a stopped run whose archive is gone fails it, saying who found it stopped.
    gone = running_run(upload_dirs, started_ago=timedelta(minutes=10), name="week-51.zip", keep=False)
    client.post(f"/ingest-runs/{gone.pk}/requeue/")
    gone.refresh_from_db()
    assert gone.status == IngestRun.Status.FAILED
    assert gone.errors[0]["message"].startswith(
        "The worker importing this run had stopped (no worker held it when olivia-operator queued it again); "
        "its archive is no longer there (week-51.zip)"
    )


@pytest.mark.sqlite_only("run locks tell on PostgreSQL")
def test_without_run_locks_a_running_run_s_page_offers_no_recovery(operator, upload_dirs, settings):
    """On SQLite no lock shows whether a process imports a run: one whose process is not known to be gone (none
    recorded here) gets no buttons, and posting changes nothing (tests/test_ingest_runs_robust.py: a gone one's)."""
    client = Client()
    client.force_login(operator)
    run = running_run(upload_dirs, started_ago=stalled_since(settings))
    page = client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert ">Queue again</button>" not in page and ">Import now</button>" not in page
    for action in ("requeue", "fail"):
        client.post(f"/ingest-runs/{run.pk}/{action}/")
    assert IngestRun.objects.get(pk=run.pk).status == IngestRun.Status.RUNNING
