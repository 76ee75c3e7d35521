"""Deleting a job, a team or an ingest run leaves no series or artifact behind, shared blobs stay
while anything still names them, and check_storage finds and cleans what was left anyway."""

from __future__ import annotations

import io
import os
import time

import pytest
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command

from fleet import lifecycle
from fleet.models import Artifact, IngestRun, Job, Team
from tests.conftest import EXAMPLE_ARCHIVE


def stored() -> set[str]:
    return {name for folder in lifecycle.BLOB_FOLDERS for name in lifecycle._walk(folder)}


def referenced() -> set[str]:
    names = set(Job.objects.exclude(series_file="").values_list("series_file", flat=True))
    return names | set(Artifact.objects.values_list("file", flat=True))


@pytest.fixture
def imported(db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ingest_archive", str(EXAMPLE_ARCHIVE), stdout=io.StringIO(), stderr=io.StringIO())
    assert stored() and stored() == referenced()
    return IngestRun.objects.get()


def test_deleting_a_job_deletes_its_blobs(imported, django_capture_on_commit_callbacks):
    job = Job.objects.exclude(series_file="").filter(artifacts__isnull=False).first()
    own = {job.series_file.name, *job.artifacts.values_list("file", flat=True)}
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.delete_jobs(Job.objects.filter(pk=job.pk))
    assert not (own - referenced()) & stored(), "a blob of the deleted job was left behind"
    assert stored() == referenced()


def test_a_shared_blob_stays_while_another_job_uses_it(imported, django_capture_on_commit_callbacks):
    first, second = Job.objects.exclude(series_file="")[:2]
    second.series_file.name = first.series_file.name  # the same content: the same content-addressed blob
    second.save(update_fields=["series_file"])
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.delete_jobs(Job.objects.filter(pk=first.pk))
    assert default_storage.exists(second.series_file.name)


def test_deleting_a_team_or_an_ingest_run_deletes_their_jobs_blobs(imported, django_capture_on_commit_callbacks):
    team = Team.objects.filter(jobs__isnull=False).first()
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.delete_team(team)
    assert not Team.objects.filter(pk=team.pk).exists()
    assert stored() == referenced()
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.delete_ingest_run(imported)
    assert Job.objects.count() == 0 and Artifact.objects.count() == 0
    assert stored() == set()


def test_a_rolled_back_deletion_keeps_the_blobs(imported, django_capture_on_commit_callbacks):
    from django.db import transaction

    before = stored()
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        Job.objects.all().delete()
        transaction.set_rollback(True)
    assert stored() == before and Job.objects.exists()


def test_check_storage_reports_and_cleans_orphans_and_missing_blobs(imported, storage_dir):
    orphan = default_storage.save("artifacts/ff/leftover", io.BytesIO(b"left behind"))
    old = time.time() - 7200
    os.utime(default_storage.path(orphan), (old, old))
    young = default_storage.save("series/ee/being-ingested.parquet", io.BytesIO(b"in flight"))
    out = io.StringIO()
    with pytest.raises(CommandError, match="orphaned"):
        call_command("check_storage", stdout=out)
    assert "1 orphaned (+1 younger" in out.getvalue()
    call_command("check_storage", "--clean", stdout=io.StringIO())
    assert not default_storage.exists(orphan) and default_storage.exists(young)
    assert stored() - {young} == referenced()

    job = Job.objects.exclude(series_file="").first()
    default_storage.delete(job.series_file.name)
    out = io.StringIO()
    with pytest.raises(CommandError, match="not in storage"):
        call_command("check_storage", "--min-age", "0", "--clean", "--verbose-list", stdout=out)
    assert f"missing {job.series_file.name}" in out.getvalue()
