"""Faults that are cheap to cause here: a task past its time limit and a full storage disk.

Both must end with the run marked failed, a reason an operator can read on the run's page, and
nothing half-stored: every stored job is whole, no blob is a truncated file, and the same upload
run again after the fault clears completes. (Redis/PostgreSQL restarts and worker SIGKILL are
described in docs/operations.md; the worker kill is tested in tests/test_ingest_worker_kill.py.)
"""

from __future__ import annotations

import errno
from unittest import mock

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.core.files.storage import FileSystemStorage, default_storage

from fleet import ingest
from fleet.models import Artifact, IngestRun, Job
from fleet.series import from_parquet_bytes
from fleet.tasks import ingest_archive_task
from tests.conftest import EXAMPLE_ARCHIVE


class FullDisk(FileSystemStorage):
    """A storage folder with room for `budget` bytes: the write that crosses it fails half-written."""

    budget = 0
    written = 0

    def _save(self, name, content):
        class Filling:
            def __init__(self, inner):
                self.inner = inner

            def chunks(self):
                for chunk in self.inner.chunks():
                    room = FullDisk.budget - FullDisk.written
                    if len(chunk) > room:
                        yield chunk[: max(room, 0)]
                        FullDisk.written = FullDisk.budget
                        raise OSError(errno.ENOSPC, "No space left on device")
                    FullDisk.written += len(chunk)
                    yield chunk

            def __getattr__(self, attr):
                return getattr(self.inner, attr)

        return super()._save(name, Filling(content))


@pytest.fixture
def full_disk(settings, storage_dir):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "tests.test_faults.FullDisk", "OPTIONS": {"location": str(storage_dir)}},
    }
    FullDisk.written = 0
    FullDisk.budget = 6_000  # room for a few jobs of the example archive, not all
    yield FullDisk
    FullDisk.budget = 10**12


def run_task(run: IngestRun) -> IngestRun:
    # In-process, handled as a worker handles it (on_failure, no re-raise into the caller).
    ingest_archive_task.apply(args=[run.pk], throw=False)
    run.refresh_from_db()
    return run


def assert_nothing_half_stored():
    for job in Job.objects.exclude(series_file=""):
        with default_storage.open(job.series_file.name, "rb") as blob:
            assert len(from_parquet_bytes(blob.read())), f"{job} has an unreadable series"
    for artifact in Artifact.objects.all():
        assert default_storage.size(artifact.file.name) == artifact.size, f"{artifact} is truncated"


def test_a_full_disk_fails_the_run_with_a_clear_error_and_stores_nothing_half(db, full_disk):
    run = run_task(ingest.create_run(EXAMPLE_ARCHIVE))
    assert run.status == IngestRun.Status.FAILED
    assert "storage is full" in run.errors[0]["message"]
    stored = Job.objects.count()
    assert stored < 5, "the budget was meant to run out part-way"
    assert_nothing_half_stored()

    full_disk.budget = 10**12  # space freed: the same archive again finishes the rest
    again = run_task(ingest.create_run(EXAMPLE_ARCHIVE))
    assert again.status == IngestRun.Status.SUCCEEDED, again.errors
    assert again.jobs_unchanged == stored
    assert_nothing_half_stored()


def test_a_task_past_its_soft_time_limit_marks_its_run_failed(db):
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    with mock.patch("fleet.ingest._store_jobs", side_effect=SoftTimeLimitExceeded()):
        run = run_task(run)
    assert run.status == IngestRun.Status.FAILED and run.finished_at is not None
    assert "time limit" in run.errors[0]["message"]


def test_the_reason_shows_on_the_run_page(client, operator, db):
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    with mock.patch("fleet.ingest._store_jobs", side_effect=OSError(errno.ENOSPC, "No space left on device")):
        run_task(run)
    client.force_login(operator)
    assert "storage is full" in client.get(f"/ingest-runs/{run.pk}/").content.decode()
