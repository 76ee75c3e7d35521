"""Celery tasks of the fleet app: thin wrappers that take ids and call the ingest service."""

from __future__ import annotations

from celery import shared_task

from fleet import ingest
from fleet.tasking import IdempotentTask


class IngestTask(IdempotentTask):
    def give_up(self, reason: str, run_id: int, *args, **kwargs) -> None:
        ingest.fail_run(run_id, reason)

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        """A run whose task raised (time limit, full disk, database gone) is marked failed with
        the reason on its page, instead of showing "running" for ever. Each job is stored in its
        own transaction, so what was stored is whole; running the upload again finishes the rest."""
        run_id = args[0] if args else kwargs.get("run_id")
        if run_id is not None:
            ingest.fail_run(run_id, failure_reason(exc))


def failure_reason(exc: BaseException) -> str:
    import errno

    from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
    from django.conf import settings

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
    return f"the import failed: {type(exc).__name__}: {exc}"[:500]


# Idempotent: the upsert on (cluster, external_id) makes a second run store nothing new.
@shared_task(name="fleet.ingest_archive", base=IngestTask)
def ingest_archive_task(run_id: int) -> dict | None:
    run = ingest.execute_run(run_id)
    if run is None:  # the run was deleted before the worker reached it
        return None
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


from fleet.connectors.tasks import schedule_connectors_task, sync_connector_task  # noqa: E402,F401
