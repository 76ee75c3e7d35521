"""Celery tasks of the fleet app: thin wrappers that take ids and call the ingest service."""

from __future__ import annotations

import logging

import psycopg
from celery import shared_task
from django import db
from django.conf import settings

from fleet import ingest
from fleet.quoting import library_error
from fleet.tasking import IdempotentTask

logger = logging.getLogger(__name__)

# The database went away under the import (PostgreSQL restarted, a failover, the network): worth
# retrying, unlike a bad archive. The same classes cover a full database disk, a deadlock and a
# cancelled statement, transient too; the retries are bounded. Django wraps driver errors in its own;
# the driver's are listed for any raised outside its wrapper.
DATABASE_GONE = (db.OperationalError, db.InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


class IngestTask(IdempotentTask):
    def give_up(self, reason: str, run_id: int, *args, **kwargs) -> None:
        ingest.fail_run(run_id, reason)

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        """A run whose task raised (time limit, full disk, database gone through every retry) is marked
        failed with the reason on its page, instead of showing "running" for ever. Each job is stored
        whole or not at all, so what was stored is whole; running the upload again finishes the rest."""
        run_id = args[0] if args else kwargs.get("run_id")
        if run_id is None:
            return
        try:
            ingest.fail_run(run_id, failure_reason(exc))
        except DATABASE_GONE:
            # Still down after every retry: the run shows "running" until an operator uploads it again.
            logger.exception("Ingest run %s failed and could not be marked failed: the database is unreachable", run_id)


def process_stopping() -> bool:
    """Whether this process is ending (its main thread has: Ctrl-C, a server's restart): the interpreter
    waits for an import's thread (fleet.ingest.start_run) but refuses it new threads meanwhile."""
    import threading

    return not threading.main_thread().is_alive()


def failure_reason(exc: BaseException) -> str:
    import errno

    from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded

    if process_stopping():
        return (
            "the process importing it was stopped (the web server, by Ctrl-C or to restart) before the import "
            "ended; the jobs stored so far are complete. Upload the archive again: stored jobs are skipped."
        )
    if isinstance(exc, DATABASE_GONE):
        return (
            f"the database was unreachable through {settings.INGEST_DB_MAX_RETRIES} automatic retries; the jobs "
            "stored so far are complete. Upload the archive again once it is back: stored jobs are skipped. "
            f"({type(exc).__name__}: {library_error(exc)})"
        )[:500]
    if isinstance(exc, SoftTimeLimitExceeded | TimeLimitExceeded):
        return (
            f"stopped after the task time limit (CELERY_TASK_TIME_LIMIT={settings.CELERY_TASK_TIME_LIMIT} s); "
            "the jobs stored so far are complete. Split the archive or raise the limit, then upload it again."
        )
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            "the storage is full (no space left on device); the job being stored was not kept. "
            "Free space under STORAGE_DIR, then upload the archive again: stored jobs are skipped."
        )
    return f"the import failed: {type(exc).__name__}: {library_error(exc)}"[:500]


def outage_note(retries: int) -> str:
    times = "once" if retries == 1 else f"{retries} times"
    return (
        "the database connection was lost during the import (PostgreSQL restarted or unreachable); "
        f"the import was retried automatically ({times}) and resumed from the start: stored jobs were skipped, "
        "none is stored twice."
    )


def retry_countdown(retries: int) -> float:
    """Exponential backoff with a cap: base, 2 × base, 4 × base …"""
    return min(settings.INGEST_DB_RETRY_BACKOFF * 2**retries, settings.INGEST_DB_RETRY_BACKOFF_MAX)


# Idempotent: the upsert on (cluster, external_id) makes a second run store nothing new, which is
# also what makes retrying after a lost database connection safe: the retry skips the stored jobs.
@shared_task(name="fleet.ingest_archive", base=IngestTask, bind=True)
def ingest_archive_task(self, run_id: int) -> dict | None:
    retries = self.request.retries or 0
    try:
        run = ingest.execute_run(run_id)
    except DATABASE_GONE as exc:
        # The run cannot be marked now (the database is gone), and would otherwise show "running"
        # until the visibility timeout. The dead connection is dropped so the retry opens a new one.
        db.connections.close_all()
        countdown = retry_countdown(retries)
        logger.warning("Ingest run %s lost its database (%s); retrying in %.0f s", run_id, exc, countdown)
        raise self.retry(exc=exc, countdown=countdown, max_retries=settings.INGEST_DB_MAX_RETRIES) from exc
    except ingest.RunBusy:
        # A redelivered task while the first worker is still importing the run. Queue a fresh look
        # for later (not a retry: those count database outages): by then the first worker has
        # finished, and the look finds the run done, or has died, and the look takes the run over.
        countdown = settings.INGEST_BUSY_RETRY_SECONDS
        logger.info("Ingest run %s is being imported by another worker; looking again in %s s", run_id, countdown)
        # In-process (no task queue) nothing would run the look: the holder is this process's own caller, or another
        # process (a web process, `manage.py ingest_archive`) whose import goes on; its page offers Import now once
        # that process is gone. On SQLite the run's recorded process tells a worker that (`ingest.claim_run`).
        if not self.request.is_eager:
            queue = (self.request.delivery_info or {}).get("routing_key")  # the queue this came from
            ingest_archive_task.apply_async(args=[run_id], countdown=countdown, queue=queue)
        return {"run_id": run_id, "status": "busy"}
    if run is None:  # the run was deleted before the worker reached it
        return None
    if retries and getattr(run, "imported_now", False):
        # Written once the database is back, so the operator sees why the run took longer. Not when the
        # retry found the run finished: Queue again or Mark failed on its page, while this worker waited
        # to retry (it holds no lock then), finished it, and the note would say this retry imported it.
        ingest.add_note(run.pk, outage_note(retries))
    return {"run_id": run.pk, "status": run.status}


@shared_task(name="fleet.prune_series")
def prune_series_task() -> dict:
    """Daily (beat): apply SERIES_RETENTION_DAYS. Idempotent: a second run finds nothing to prune."""
    from django.conf import settings

    from fleet import audit
    from fleet.lifecycle import prune_series

    days = settings.SERIES_RETENTION_DAYS
    report = prune_series(days)
    if report.jobs:
        audit.record(
            None,
            "series.prune",
            f"{report.jobs} jobs",
            {"days": days, "blobs": len(report.blobs), "bytes": report.bytes},
        )
    return {"days": days, "jobs": report.jobs, "blobs": len(report.blobs), "bytes": report.bytes}


@shared_task(name="fleet.recover_pending_runs")
def recover_pending_runs_task() -> dict:
    """Beat, every INGEST_REQUEUE_MINUTES: runs whose task was lost are queued again (or failed when
    their archive is gone): pending ones, and on PostgreSQL running ones no worker holds whose worker's
    redelivery is overdue. Idempotent: a run a worker holds or that finished is left alone."""
    from datetime import timedelta

    return ingest.recover_pending_runs(timedelta(minutes=settings.INGEST_REQUEUE_MINUTES))


from fleet.connectors.tasks import schedule_connectors_task, sync_connector_task  # noqa: E402,F401


# A forgotten password's mail (fleet.accounts): queued by the reset form, so the page never waits for
# the mail server (nor says, by taking longer, that an address has an account). A temporary SMTP
# error is retried; in-process (no worker) or after the last retry it is logged, never raised into
# the page, which must look the same either way.
@shared_task(name="fleet.send_password_reset", bind=True, max_retries=3)
def send_password_reset_task(self, user_id: int) -> bool:
    import smtplib

    from fleet import accounts

    try:
        return accounts.send_reset_mail(user_id)
    except (smtplib.SMTPException, OSError) as exc:
        if self.request.is_eager or self.request.retries >= self.max_retries:
            logger.warning("The password reset mail for user %s could not be sent: %s", user_id, exc)
            accounts.forget_cooldown(user_id)
            return False
        raise self.retry(countdown=60 * 2**self.request.retries) from exc
