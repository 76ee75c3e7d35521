"""Celery tasks of the connectors: thin wrappers that take ids and call `fleet.connectors.sync`."""

from __future__ import annotations

from celery import shared_task

from fleet.connectors import sync
from fleet.tasking import IdempotentTask


class SyncTask(IdempotentTask):
    def give_up(self, reason: str, connector_id: int, *args, **kwargs) -> None:
        sync.record_failure(connector_id, reason)


# Idempotent: the watermark only moves after jobs are stored and the store is an upsert, so a
# redelivered pull re-reads from the watermark and stores nothing twice.
# `scheduled`: queued by the scheduler below, so done only if the connector is still due when it runs
# (a backlog of ticks queued each a copy); Pull now queues it without, and always pulls.
@shared_task(name="fleet.sync_connector", base=SyncTask)
def sync_connector_task(connector_id: int, since: str | None = None, scheduled: bool = False) -> dict | None:
    result = sync.sync_connector(connector_id, since=since, scheduled=scheduled)
    return result.as_dict() if result is not None else None


# Run by Celery beat every minute (CELERY_BEAT_SCHEDULE, each tick expiring after a minute); fails the
# runs of pulls whose worker died (their connector is then due again at once on PostgreSQL), then fans
# out one task per due connector.
@shared_task(name="fleet.schedule_connectors")
def schedule_connectors_task() -> list[int]:
    sync.fail_stopped_pulls()
    due = sync.due_connectors()
    for connector_id in due:
        sync_connector_task.apply_async(args=[connector_id], kwargs={"scheduled": True})
    return due


class DeleteTask(IdempotentTask):
    def give_up(self, reason: str, deletion_id: int, *args, **kwargs) -> None:
        sync.fail_deletion(deletion_id, reason)

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        """A deletion whose task raised (the database, the time limit) ends failed, saying how far it got,
        and frees the connector for its pulls, instead of showing "Deleting" for ever."""
        deletion_id = args[0] if args else kwargs.get("deletion_id")
        if deletion_id is not None:
            sync.fail_deletion(deletion_id, sync.stopped_reason(exc))


# `lease`: the deletion's lease token when this copy was queued (a sweep's, or a page's since that sweep
# came): a copy queued before `resume_deletions` queued the deletion again finds it replaced, does nothing.
# Idempotent: each batch of jobs goes whole, with its count, in one transaction, and a finished deletion
# is left alone; a redelivery after a worker died goes on from the last batch that committed.
@shared_task(name="fleet.delete_connector", base=DeleteTask, bind=True, max_retries=None)
def delete_connector_task(self, deletion_id: int, lease: str | None = None) -> dict | None:
    try:
        deletion = sync.run_deletion(deletion_id, lease)
    except sync.DeletionWaits as exc:
        # A pull holds the connector (the deletion waited longer than its lease): look again once it may be over.
        raise self.retry(exc=exc, countdown=60) from exc
    if deletion is None:
        return None
    return {"deletion_id": deletion.pk, "status": deletion.status, "jobs_deleted": deletion.jobs_deleted}


# The same deletion for a team, an ingest run or jobs chosen in the admin (fleet.lifecycle.run_deletion),
# with the same failure handling; idempotent the same way: a batch and its count commit together, the team
# or run goes with its audit entry and the deletion's end in one last transaction.
@shared_task(name="fleet.delete_jobs", base=DeleteTask)
def delete_jobs_task(deletion_id: int, lease: str | None = None) -> dict | None:
    deletion = sync.run_deletion(deletion_id, lease)
    if deletion is None:
        return None
    return {"deletion_id": deletion.pk, "status": deletion.status, "jobs_deleted": deletion.jobs_deleted}


# Beat, every DELETION_REQUEUE_MINUTES: deletions whose task was lost (their lease ran out, none renews it)
# are queued again. Idempotent: one whose lease holds, or that finished, is left alone; one queued takes
# its lease, so the next tick does not queue it again while the copy waits for a worker.
@shared_task(name="fleet.resume_deletions")
def resume_deletions_task() -> dict:
    from datetime import timedelta

    from django.conf import settings

    return sync.resume_deletions(timedelta(minutes=settings.DELETION_REQUEUE_MINUTES))
