"""Faults that are cheap to cause here: a task past its time limit and a full storage disk.

Both must end with the run marked failed, a reason an operator can read on the run's page, and
nothing half-stored: every stored job is whole, no blob is a truncated file, and the same upload
run again after the fault clears completes. A lost database connection is the exception: the task
retries it by itself (here with the error simulated; a real PostgreSQL restart under a real worker is
tests/test_postgres_restart.py). Redis restarts and worker SIGKILL are in test_redis_restart.py and
test_ingest_worker_kill.py; docs/operations.md describes them all.
"""

from __future__ import annotations

import errno
import os
import stat
from unittest import mock

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.core.files.storage import FileSystemStorage, default_storage
from django.db import OperationalError

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


def flaky_database(failures: int):
    """execute_run as it behaves when the database goes away under it `failures` times, then is back."""
    real = ingest.execute_run
    calls = []

    def execute_run(run_id, *args, **kwargs):
        calls.append(run_id)
        if len(calls) <= failures:
            raise OperationalError("terminating connection due to administrator command")
        return real(run_id, *args, **kwargs)

    return mock.patch("fleet.ingest.execute_run", side_effect=execute_run), calls


# transaction=True: the task drops the broken connection before retrying, which a test transaction would not survive.
@pytest.mark.django_db(transaction=True)
def test_a_lost_database_connection_is_retried_and_the_run_says_so(settings):
    settings.INGEST_DB_RETRY_BACKOFF = 0  # eager retries run at once anyway; keep the countdown honest
    patch, calls = flaky_database(failures=1)
    with patch:
        run = run_task(ingest.create_run(EXAMPLE_ARCHIVE))
    assert len(calls) == 2
    assert run.status == IngestRun.Status.SUCCEEDED and Job.objects.count() == run.jobs_created > 0
    assert "database connection was lost" in run.errors[-1]["message"]
    assert "retried automatically (once)" in run.errors[-1]["message"]


@pytest.mark.django_db(transaction=True)
def test_a_database_that_stays_down_fails_the_run_after_the_last_retry(settings):
    settings.INGEST_DB_MAX_RETRIES = 2
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    patch, calls = flaky_database(failures=1)
    with patch:  # the last retry allowed: its failure is final
        ingest_archive_task.apply(args=[run.pk], retries=settings.INGEST_DB_MAX_RETRIES, throw=False)
    run.refresh_from_db()
    assert len(calls) == 1
    assert run.status == IngestRun.Status.FAILED and run.finished_at is not None
    assert "database was unreachable through 2 automatic retries" in run.errors[0]["message"]


def test_a_full_disk_in_the_storage_folder_leaves_no_partial_blob_and_no_temporary_file(db, storage_dir):
    # The stock folder storage gives a complete blob its name at the end (a link on Linux, a
    # rename elsewhere); here the disk fills up at the 8th blob (the OS cannot run out of space on cue).
    real_link, real_replace = os.link, os.replace
    calls = []

    def failing(real):
        def call(source, target, *args, **kwargs):
            calls.append(target)
            if len(calls) >= 8:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(source, target, *args, **kwargs)

        return call

    with (
        mock.patch("fleet.ingest.os.link", side_effect=failing(real_link)),
        mock.patch("fleet.ingest.os.replace", side_effect=failing(real_replace)),
    ):
        run = run_task(ingest.create_run(EXAMPLE_ARCHIVE))
    assert run.status == IngestRun.Status.FAILED
    assert "storage is full" in run.errors[0]["message"]
    assert not [path for path in storage_dir.rglob("*") if path.name.endswith(".tmp")]
    assert_nothing_half_stored()

    again = run_task(ingest.create_run(EXAMPLE_ARCHIVE))
    assert again.status == IngestRun.Status.SUCCEEDED, again.errors
    assert_nothing_half_stored()


def test_a_truncated_file_under_a_blobs_name_is_written_again_whole(db, storage_dir):
    content = b"epoch 1 loss 0.5\n" * 1000
    name = ingest._store_blob("artifacts", content)
    path = storage_dir / name
    path.write_bytes(content[:100])  # what a writer killed part-way by an older version left

    assert ingest._store_blob("artifacts", content) == name
    assert path.read_bytes() == content
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_blobs_get_the_configured_file_and_folder_permissions(db, storage_dir, settings):
    settings.FILE_UPLOAD_PERMISSIONS = 0o640
    settings.FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o750
    name = ingest._store_blob("series", b"PAR1 not really", ".parquet")
    path = storage_dir / name
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o750
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o750
