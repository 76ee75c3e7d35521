"""At-least-once ingestion: a real Celery worker is SIGKILLed mid-import; a new one finishes the same run.

The final database must equal a clean single import: same jobs, same summary figures, same
artifacts and log events, and no blob in storage that nothing refers to.
"""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from fleet import ingest
from fleet.models import FINISHED_STATUSES, Artifact, IngestRun, Job, LogEvent, Team
from tests.conftest import require_service, write_busy_archive
from tests.test_services import celery_worker
from tests.waiting import wait_for

pytestmark = pytest.mark.services

JOBS = 240
VISIBILITY_S = 8  # the new worker takes back the killed worker's unacknowledged task after this
# Workers store 10 jobs to a transaction, not 100: the run then stays part-way through for many
# progress steps instead of one or two, which a fast machine passed between two looks.
SMALL_BATCHES = {"INGEST_STORE_BATCH": "10"}


def big_archive(path: Path) -> Path:
    return write_busy_archive(path, jobs=JOBS, cluster="kill", prefix="k")


def snapshot(using: str = "default") -> dict:
    jobs = sorted(
        Job.objects.using(using).values_list(
            "external_id",
            "team__slug",
            "gpu_hours",
            "mean_gpu_util",
            "peak_gpu_mem_util",
            "unused_gpu_hours",
            "idle_gpu_hours",
            "coverage",
            "sample_count",
            "fingerprint",
            "series_file",
        )
    )
    return {
        "jobs": jobs,
        "teams": sorted(Team.objects.using(using).values_list("slug", flat=True)),
        "artifacts": sorted(
            Artifact.objects.using(using).values_list("job__external_id", "kind", "path", "sha256", "file")
        ),
        "events": sorted(LogEvent.objects.using(using).values_list("job__external_id", "kind", "line_no")),
    }


def blobs_on_disk(storage_dir: Path) -> set[str]:
    return {p.relative_to(storage_dir).as_posix() for p in storage_dir.rglob("*") if p.is_file()}


def referenced_blobs(using: str = "default") -> set[str]:
    series = set(Job.objects.using(using).exclude(series_file="").values_list("series_file", flat=True))
    return series | set(Artifact.objects.using(using).values_list("file", flat=True))


def run_progress(run: IngestRun) -> dict:
    """Where the run stands now, as a worker left it: what a wait on it reads (and says, should it time out)."""
    return IngestRun.objects.filter(pk=run.pk).values("status", "jobs_done", "jobs_total", "attempts").get()


def wait_until_finished(run: IngestRun, what: str, seconds: float) -> dict:
    return wait_for(what, lambda: run_progress(run), seconds, until=lambda now: now["status"] in FINISHED_STATUSES)


@pytest.mark.django_db(transaction=True)
def test_a_sigkilled_worker_leaves_the_same_database_as_a_clean_import(storage_dir, tmp_path, settings):
    require_service("REDIS_URL")
    from config.celery import app
    from fleet.tasks import ingest_archive_task

    archive = big_archive(tmp_path / "big.zip")
    storage_dir.mkdir(parents=True, exist_ok=True)
    app.conf.task_always_eager = False
    queue = f"test-kill-{uuid.uuid4().hex[:8]}"
    env = {"CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_S), **SMALL_BATCHES}

    run = ingest.create_run(archive)
    with celery_worker(queue, storage_dir, env=env) as first:
        ingest_archive_task.apply_async(args=[run.pk], queue=queue)

        def halfway(progress):
            return progress["jobs_total"] and 30 <= progress["jobs_done"] < progress["jobs_total"] - 30

        wait_for("the first worker to be part-way through", lambda: run_progress(run), 120, until=halfway)
        os.kill(first.pid, signal.SIGKILL)  # no warm shutdown: the task is neither finished nor acknowledged
        first.wait(timeout=30)
    killed = IngestRun.objects.get(pk=run.pk)
    assert killed.status == IngestRun.Status.RUNNING and 0 < killed.jobs_done < JOBS

    with celery_worker(queue, storage_dir, env=env):
        wait_until_finished(run, "the new worker to finish the run", 180)
    run.refresh_from_db()
    assert run.status == IngestRun.Status.SUCCEEDED, run.errors
    assert run.attempts == 2  # the redelivered task ran the import again, from the start
    assert Job.objects.count() == JOBS
    after_kill = snapshot()
    on_disk, named = blobs_on_disk(storage_dir), referenced_blobs()
    assert on_disk == named, (sorted(on_disk - named), sorted(named - on_disk))  # no orphan blobs

    # The same archive imported once, cleanly, into an empty database and storage.
    Job.objects.all().delete()
    Team.objects.all().delete()
    for name in blobs_on_disk(storage_dir):
        default_storage.delete(name)
    app.conf.task_always_eager = True
    clean = ingest.execute_run(ingest.create_run(archive).pk)
    assert clean.status == IngestRun.Status.SUCCEEDED and clean.attempts == 1
    assert snapshot() == after_kill
    assert blobs_on_disk(storage_dir) == referenced_blobs()
