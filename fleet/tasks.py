"""Celery tasks of the fleet app: thin wrappers that take ids and call the ingest service."""

from __future__ import annotations

from celery import shared_task

from fleet import ingest
from fleet.tasking import IdempotentTask


class IngestTask(IdempotentTask):
    def give_up(self, reason: str, run_id: int, *args, **kwargs) -> None:
        ingest.fail_run(run_id, reason)


# Idempotent: the upsert on (cluster, external_id) makes a second run store nothing new.
@shared_task(name="fleet.ingest_archive", base=IngestTask)
def ingest_archive_task(run_id: int) -> dict | None:
    run = ingest.execute_run(run_id)
    if run is None:  # the run was deleted before the worker reached it
        return None
    return {"run_id": run.pk, "status": run.status}
from fleet.connectors.tasks import schedule_connectors_task, sync_connector_task  # noqa: E402,F401
