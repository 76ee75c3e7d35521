"""A running run's count of jobs says what is known: while its archive is still being read, how many jobs it holds
is not, and the page said "0 of 0 jobs" beside the phase ("reading metrics (metrics.csv): 42 rows"), and for a
pending run beside "waiting for a worker", as if the archive held none; its bar stood empty at 0 of 1. A
connector's pull, which never knows how many jobs it will fetch, read "12 of 12 jobs" as it went, as if done."""

from __future__ import annotations

import re

import pytest
from django.db.models.signals import post_save

from fleet import ingest
from fleet.models import IngestRun
from tests.conftest import EXAMPLE_ARCHIVE

pytestmark = pytest.mark.django_db


def progress_line(client, run_id: int) -> tuple[str, str, str]:
    """The page's bar, the count and the phase beside it, as the page shows them."""
    page = " ".join(client.get(f"/ingest-runs/{run_id}/").content.decode().split())
    bar = re.search(r'<progress id="run-bar"[^>]*>', page).group(0)
    count = re.search(r'<span id="run-count">([^<]*)</span>', page).group(1)
    phase = re.search(r'<span id="run-phase" aria-live="polite">([^<]*)</span>', page).group(1)
    return bar, count, phase


def test_a_run_whose_archive_is_being_read_does_not_say_it_holds_no_jobs(operator_client, monkeypatch):
    monkeypatch.setattr(ingest, "PROGRESS_SECONDS", 0)  # each phase saved as it comes, each one looked at
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    seen = []

    def look(sender, instance, **kwargs):
        if not instance.is_finished:
            polled = operator_client.get(f"/ingest-runs/{instance.pk}/status.json").json()
            seen.append((*progress_line(operator_client, instance.pk), polled))

    bar, count, phase = progress_line(operator_client, run.pk)
    assert count == "jobs not counted yet" and phase.startswith("not started")  # no task queue in the tests
    assert 'value="' not in bar  # an indeterminate bar: how far the run is is not known

    post_save.connect(look, sender=IngestRun)
    try:
        ingest.execute_run(run.pk)
    finally:
        post_save.disconnect(look, sender=IngestRun)

    reading = [state for state in seen if state[2].startswith("reading")]
    storing = [state for state in seen if state[2] == "storing jobs"]
    assert reading and storing, [state[1:3] for state in seen]
    for bar, count, phase, polled in reading:
        assert count == polled["display"]["count"] == "jobs not counted yet", (count, phase)
        assert polled["jobs_counted"] is False and 'value="' not in bar
        assert polled["display"]["jobs"] == "not counted yet"
    for bar, count, _, polled in storing:
        assert re.fullmatch(r"[0-5] of 5 jobs", count) and count == polled["display"]["count"]
        assert polled["jobs_counted"] is True and 'max="5"' in bar
    assert all(" of 0 " not in count for _, count, _, _ in seen)


def test_a_connectors_running_pull_says_how_many_jobs_so_far(operator_client):
    run = IngestRun.objects.create(
        archive_name="slurm-prod",
        source=IngestRun.Source.CONNECTOR,
        status=IngestRun.Status.RUNNING,
        phase="stored up to 2026-11-02T10:00:00Z",
        jobs_total=12,
        jobs_done=12,
        jobs_created=10,
        jobs_updated=2,
    )
    bar, count, _ = progress_line(operator_client, run.pk)
    assert count == "12 jobs so far" and 'value="' not in bar
    polled = operator_client.get(f"/ingest-runs/{run.pk}/status.json").json()
    assert polled["display"]["count"] == "12 jobs so far"
    assert polled["display"]["jobs"] == "12 so far: 10 created, 2 updated, 0 unchanged, 0 rejected"
    IngestRun.objects.filter(pk=run.pk).update(jobs_total=0, jobs_done=0, jobs_created=0, jobs_updated=0)
    assert progress_line(operator_client, run.pk)[1] == "0 jobs so far"


def test_the_api_says_whether_a_running_runs_jobs_are_counted(operator, monkeypatch):
    """`GET /api/v1/ingest-runs/{id}/` said `jobs_total: 0` while the archive was read, which a script polling
    it read as an empty archive: `jobs_counted` says whether `jobs_total` is known (the page's "not counted yet")."""
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(operator)
    monkeypatch.setattr(ingest, "PROGRESS_SECONDS", 0)
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    seen = []

    def look(sender, instance, **kwargs):
        if not instance.is_finished:
            seen.append((instance.phase, api.get(f"/api/v1/ingest-runs/{instance.pk}/").json()))

    pending = api.get(f"/api/v1/ingest-runs/{run.pk}/").json()
    assert (pending["jobs_counted"], pending["jobs_total"]) == (False, 0)  # 0 kept: an integer, as before
    post_save.connect(look, sender=IngestRun)
    try:
        ingest.execute_run(run.pk)
    finally:
        post_save.disconnect(look, sender=IngestRun)
    reading = [body for phase, body in seen if phase.startswith("reading")]
    storing = [body for phase, body in seen if phase == "storing jobs"]
    assert reading and storing
    assert all(body["jobs_counted"] is False for body in reading)
    assert all(body["jobs_counted"] is True and body["jobs_total"] == 5 for body in storing)
    assert api.get(f"/api/v1/ingest-runs/{run.pk}/").json()["jobs_counted"] is True  # finished

    pull = IngestRun.objects.create(
        archive_name="slurm-prod", source=IngestRun.Source.CONNECTOR, status=IngestRun.Status.RUNNING, jobs_total=12
    )
    assert api.get(f"/api/v1/ingest-runs/{pull.pk}/").json()["jobs_counted"] is False  # "12 so far", not of 12

    schema = api.get("/api/v1/schema/", {"format": "json"}).json()
    fields = schema["components"]["schemas"]["IngestRun"]["properties"]
    assert fields["jobs_counted"]["type"] == "boolean" and fields["jobs_counted"]["readOnly"] is True
    assert "not counted" in fields["jobs_counted"]["description"]
    assert "jobs_counted" in fields["jobs_total"]["description"]
