"""SERIES_RETENTION_DAYS: the raw series of old jobs is deleted; jobs, summary figures and findings stay."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.utils import timezone

from fleet import ingest
from fleet.lifecycle import check_storage
from fleet.models import AuditEvent, Job
from fleet.tasks import prune_series_task
from tests.conftest import EXAMPLE_ARCHIVE

SUMMARY = ("gpu_hours", "mean_gpu_util", "peak_gpu_mem_util", "unused_gpu_hours", "idle_gpu_hours", "sample_count")


@pytest.fixture
def fleet(db):
    run = ingest.execute_run(ingest.create_run(EXAMPLE_ARCHIVE).pk)
    assert run.jobs_created >= 3
    jobs = list(Job.objects.exclude(series_file="").order_by("pk"))
    old, shared_old, recent = jobs[0], jobs[1], jobs[2]
    now = timezone.now()
    # Two old jobs; the second shares its (content-addressed) blob with a recent job.
    for job in (old, shared_old):
        Job.objects.filter(pk=job.pk).update(start_time=now - timedelta(days=41), end_time=now - timedelta(days=40))
    Job.objects.filter(pk=recent.pk).update(
        start_time=now - timedelta(days=2), end_time=now - timedelta(days=1), series_file=shared_old.series_file.name
    )
    Job.objects.exclude(pk__in=[old.pk, shared_old.pk, recent.pk]).update(
        end_time=now, start_time=now - timedelta(hours=1)
    )
    return {
        name: Job.objects.get(pk=job.pk) for name, job in (("old", old), ("shared_old", shared_old), ("recent", recent))
    }


def summary(job):
    return {name: getattr(job, name) for name in SUMMARY} | {
        "results": job.triage_results.count(),
        "findings": job.findings.count(),
    }


def test_dry_run_reports_and_changes_nothing(fleet):
    out = StringIO()
    call_command("prune_series", "--days", "30", "--dry-run", stdout=out)
    assert "would prune the series of 2 jobs" in out.getvalue()
    assert "1 blobs" in out.getvalue()  # the shared blob stays: a recent job still names it
    for job in fleet.values():
        job.refresh_from_db()
        assert job.series_file and job.series_pruned_at is None
        assert default_storage.exists(job.series_file.name)


def test_prune_keeps_jobs_figures_findings_and_shared_blobs(
    fleet, django_capture_on_commit_callbacks, client, operator
):
    before = {name: summary(job) for name, job in fleet.items()}
    old_blob, shared_blob = fleet["old"].series_file.name, fleet["shared_old"].series_file.name
    with django_capture_on_commit_callbacks(execute=True):
        call_command("prune_series", "--days", "30", stdout=StringIO())
    for name, job in fleet.items():
        job.refresh_from_db()
        assert summary(job) == before[name]
    assert not fleet["old"].series_file and fleet["old"].series_pruned_at
    assert not fleet["shared_old"].series_file and fleet["shared_old"].series_pruned_at
    assert fleet["recent"].series_file.name == shared_blob and fleet["recent"].series_pruned_at is None
    assert not default_storage.exists(old_blob)
    assert default_storage.exists(shared_blob)  # still named by the recent job
    assert AuditEvent.objects.filter(action="series.prune").count() == 1

    client.force_login(operator)
    page = client.get(f"/jobs/{fleet['old'].pk}/")
    assert page.status_code == 200 and b"raw series was pruned" in page.content
    timeline = client.get(f"/jobs/{fleet['old'].pk}/timeline.json").json()
    assert timeline["data"] == [] and "raw series was pruned" in timeline["empty"]
    assert "empty" not in client.get(f"/jobs/{fleet['recent'].pk}/timeline.json").json()

    # Idempotent: nothing left to prune.
    with django_capture_on_commit_callbacks(execute=True):
        out = StringIO()
        call_command("prune_series", "--days", "30", stdout=out)
    assert "pruned the series of 0 jobs" in out.getvalue()


def test_importing_a_pruned_job_again_leaves_it_pruned_and_no_orphan_blob(fleet, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("prune_series", "--days", "30", stdout=StringIO())
    orphans = check_storage(min_age_s=0).orphans  # the fixture's own: it gave the recent job another blob
    run = ingest.execute_run(ingest.create_run(EXAMPLE_ARCHIVE).pk)
    assert run.jobs_created == run.jobs_updated == 0
    for name in ("old", "shared_old"):
        fleet[name].refresh_from_db()
        assert not fleet[name].series_file and fleet[name].series_pruned_at
    report = check_storage(min_age_s=0)
    assert report.orphans == orphans and report.missing == []


def test_zero_keeps_everything_and_the_beat_task_follows_the_setting(
    fleet, settings, django_capture_on_commit_callbacks
):
    assert settings.CELERY_BEAT_SCHEDULE["fleet.prune_series"]["task"] == "fleet.prune_series"
    assert "digests.send_weekly" in settings.CELERY_BEAT_SCHEDULE  # added, not replaced
    settings.SERIES_RETENTION_DAYS = 0
    assert prune_series_task.delay().get()["jobs"] == 0
    out = StringIO()
    call_command("prune_series", stdout=out)
    assert "retention is off" in out.getvalue()
    assert Job.objects.filter(pk=fleet["old"].pk).exclude(series_file="").exists()

    settings.SERIES_RETENTION_DAYS = 30
    old_blob = fleet["old"].series_file.name
    with django_capture_on_commit_callbacks(execute=True):
        result = prune_series_task.delay().get()
    assert result["jobs"] == 2
    assert not default_storage.exists(old_blob)
    assert Job.objects.filter(series_pruned_at__isnull=False).count() == 2
