"""A running import says how long it has taken and, once it can tell, about how long it has left.

A run's page showed the jobs done of the total, the phase and its duration, but no estimate of the
time left, which every upload or import tool gives. The estimate comes from the rate the run has stored
its jobs at since it began storing them (reading the archive comes first, at no rate in jobs), and only
once that rate means something: 5 s of storing and 2 % of the jobs to store. Before, the page says
nothing ("–") rather than a wild guess; the API's `seconds_left` is null.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from fleet import ingest
from fleet.models import IngestRun
from tests.conftest import EXAMPLE_ARCHIVE
from tests.reading import as_read

pytestmark = pytest.mark.django_db


# The clock stands still in these tests (`frozen_clock`): a loaded machine takes seconds between writing a
# run and reading its page, which moved the figures.
NOW = timezone.now()


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)


@pytest.fixture(autouse=True)
def a_worker_imports_them(monkeypatch):
    """These runs go on: a worker holds each (on PostgreSQL a run whose lock no worker holds reads stopped, and a
    stopped run has no time left: tests/test_run_and_study_pages_polish.py)."""
    monkeypatch.setattr(ingest, "worker_stopped", lambda run: False)


def storing_run(*, started: float, storing: float | None, done: int, total: int, rejected: int = 0) -> IngestRun:
    """A running run begun `started` seconds ago that began storing its jobs `storing` seconds ago."""
    now = NOW
    return IngestRun.objects.create(
        archive_name="week-47.zip",
        source=IngestRun.Source.UPLOAD,
        status=IngestRun.Status.RUNNING,
        started_at=now - timedelta(seconds=started),
        storing_started_at=None if storing is None else now - timedelta(seconds=storing),
        phase="storing jobs" if storing is not None else "reading metrics (metrics.parquet): 1,000 of 9,000 rows",
        jobs_total=total,
        jobs_done=done,
        jobs_created=done,
        jobs_rejected=rejected,
    )


def shown(client, run: IngestRun) -> str:
    return " ".join(as_read(client.get(f"/ingest-runs/{run.pk}/").content.decode()).split())


def time_left_on(page: str) -> str:
    """What the run's page says under Time left (its dd also says, when hovered, where the estimate is from)."""
    match = re.search(r'<dt>Time left</dt><dd id="run-left" title="([^"]+)">([^<]*)</dd>', page)
    assert match, "no Time left on the page"
    assert match.group(1) == "Estimated from the rate jobs have been stored at so far"
    return match.group(2)


def test_a_running_run_says_its_time_taken_and_about_how_long_is_left(operator_client):
    # 1,000 of 4,000 stored in the 30 s since storing began (the 10 s reading the archive before it do not
    # count): 3,000 to go at 33.3 jobs/s, 90 s.
    run = storing_run(started=40, storing=30, done=1_000, total=4_000)
    page = shown(operator_client, run)
    assert '<dt>Elapsed</dt><dd id="run-duration">40.0 s</dd>' in page
    assert time_left_on(page) == "about 90 s"
    status = operator_client.get(f"/ingest-runs/{run.pk}/status.json").json()
    assert status["display"]["left"] == "about 90 s" and status["seconds_left"] == pytest.approx(90, abs=1)


def test_rejected_jobs_are_not_jobs_left_to_store(operator_client):
    # 1,000 rejected as the archive was read: 1,000 of the 3,000 to store are stored, 2,000 to go, 60 s.
    run = storing_run(started=35, storing=30, done=1_000, total=4_000, rejected=1_000)
    assert time_left_on(shown(operator_client, run)) == "about 60 s"


@pytest.mark.parametrize(
    ("started", "storing", "done", "total", "why"),
    [
        (20, None, 0, 0, "still reading the archive: no job counted yet"),
        (8, 3, 400, 4_000, "storing for 3 s only"),
        (100, 60, 50, 4_000, "1.25 % of the jobs stored"),
        (40, 30, 0, 4_000, "no batch stored yet"),
    ],
)
def test_too_early_to_tell_says_nothing(operator_client, started, storing, done, total, why):
    run = storing_run(started=started, storing=storing, done=done, total=total)
    assert time_left_on(shown(operator_client, run)) == "–", why
    status = operator_client.get(f"/ingest-runs/{run.pk}/status.json").json()
    assert status["seconds_left"] is None and status["display"]["left"] == "–"


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (4, "a few seconds"),
        (42, "about 40 s"),
        (98, "about 100 s"),
        (130, "about 2 min"),
        (59 * 60 + 20, "about 59 min"),
        (3 * 3600 + 7 * 60, "about 3 h 05 min"),
    ],
)
def test_the_time_left_is_said_as_roughly_as_it_is_known(seconds, words):
    assert IngestRun.time_left_words(seconds) == words


def test_a_finished_run_shows_its_duration_and_no_time_left(operator_client):
    run = storing_run(started=40, storing=30, done=1_000, total=4_000)
    IngestRun.objects.filter(pk=run.pk).update(
        status=IngestRun.Status.SUCCEEDED, jobs_done=4_000, finished_at=timezone.now(), phase=""
    )
    page = shown(operator_client, run)
    assert "<dt>Duration</dt>" in page and "Time left" not in page and "Elapsed" not in page
    status = operator_client.get(f"/ingest-runs/{run.pk}/status.json").json()
    assert status["seconds_left"] is None


def test_the_api_gives_the_estimate_and_its_schema_says_what_it_is(operator):
    client = APIClient()
    client.force_authenticate(operator)
    run = storing_run(started=40, storing=30, done=1_000, total=4_000)
    body = client.get(f"/api/v1/ingest-runs/{run.pk}/").json()
    assert body["seconds_left"] == pytest.approx(90, abs=1)
    early = storing_run(started=8, storing=3, done=400, total=4_000)
    assert client.get(f"/api/v1/ingest-runs/{early.pk}/").json()["seconds_left"] is None
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    field = schema["components"]["schemas"]["IngestRun"]["properties"]["seconds_left"]
    assert field["type"] == "number" and field["nullable"] is True and field["readOnly"] is True
    assert "estimate" in field["description"] and "null" in field["description"]


def test_the_importer_notes_when_it_began_storing_jobs(monkeypatch):
    monkeypatch.undo()  # the clock runs
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    run = ingest.execute_run(run.pk)
    assert run.status == IngestRun.Status.SUCCEEDED
    assert run.started_at <= run.storing_started_at <= run.finished_at
    assert run.seconds_left is None  # over


def test_a_connectors_pull_which_is_never_estimated_has_no_time_left_row(operator_client):
    """A pull stores what its connector fetches as it comes, with no total to estimate from: a row that
    would say "–" to the end is left out."""
    run = storing_run(started=40, storing=None, done=10, total=0)
    IngestRun.objects.filter(pk=run.pk).update(source=IngestRun.Source.CONNECTOR, phase="pulling jobs")
    page = shown(operator_client, run)
    assert "<dt>Elapsed</dt>" in page and "Time left" not in page
