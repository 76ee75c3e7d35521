"""Times a user types or sends, at the edges: a UTC offset PostgreSQL refuses (beyond ±15:59, which
Python accepts) is the same instant in UTC; an instant with no datetime in UTC (before year 1) is a
400 or a form error naming the field, never a server error. Found by tests/test_api_contract.py on
PostgreSQL; these hold the API filter, the timeline's zoom and the study form to it on both databases.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from fleet.series import to_parquet_bytes
from tests.factories import JobFactory
from tests.test_timeline import series
from triage.labeling.forms import StudyForm

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 2, tzinfo=UTC)
FAR_EAST = "+17:47"  # Python accepts it, PostgreSQL does not
BEFORE_YEAR_ONE = "0001-01-01T00:00:00+05:00"  # 31 Dec of year 0 in UTC: no such datetime


@pytest.fixture
def two_jobs(team_a):
    early = JobFactory(team=team_a, start_time=START, end_time=START + timedelta(hours=1))
    late = JobFactory(team=team_a, start_time=START + timedelta(hours=6), end_time=START + timedelta(hours=7))
    return early, late


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_the_jobs_api_takes_any_utc_offset_as_the_same_instant(client, operator, two_jobs):
    early, late = two_jobs
    client.force_login(operator)
    # 21:47 on 2 Nov at +17:47 is 04:00 UTC: after the early job's start, before the late one's.
    cut = "2026-11-02T21:47:00" + FAR_EAST
    assert ids(client.get("/api/v1/jobs/", {"started_before": cut})) == [early.pk]
    assert ids(client.get("/api/v1/jobs/", {"started_after": cut})) == [late.pk]
    assert ids(client.get("/api/v1/jobs/", {"started_after": "2026-11-02T04:00:00Z"})) == [late.pk]


def test_the_jobs_api_refuses_a_time_before_year_one_in_utc(client, operator, two_jobs):
    client.force_login(operator)
    response = client.get("/api/v1/jobs/", {"started_after": BEFORE_YEAR_ONE})
    assert response.status_code == 400
    assert "between the years 1 and 9999" in response.json()["started_after"][0]


def test_the_timeline_zoom_refuses_a_time_before_year_one_in_utc(client, operator, team_a):
    job = JobFactory(team=team_a, start_time=START, end_time=START + timedelta(hours=1))
    job.series_file.save("s.parquet", ContentFile(to_parquet_bytes(series(1, 3600, 15))))
    client.force_login(operator)
    url = reverse("dashboard:job-timeline", args=[job.pk])
    response = client.get(url, {"start": BEFORE_YEAR_ONE})
    assert response.status_code == 400 and "ISO 8601" in response.json()["error"]
    zoomed = client.get(url, {"start": "2026-11-02T18:17:00" + FAR_EAST, "end": "2026-11-02T00:40:00Z"})
    assert zoomed.status_code == 200  # 18:17 at +17:47 is 00:30 UTC: a ten-minute window
    assert zoomed.json()["data"]


def study_form(**times) -> StudyForm:
    return StudyForm(
        data={
            "name": "Edges",
            "strategy": "random",
            "sample_size": 2,
            "seed": 1,
            "low_util_threshold": 50,
            "labels_per_job": 2,
            **times,
        }
    )


def test_the_study_form_takes_a_period_in_any_offset_as_utc_and_names_an_impossible_one(researcher):
    form = study_form(period_start="2026-11-02T17:47:00" + FAR_EAST)
    form.is_valid()
    assert "period_start" not in form.errors
    assert form.cleaned_data["period_start"] == datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
    assert form.cleaned_data["period_start"].utcoffset() == timedelta(0)
    form = study_form(period_start=BEFORE_YEAR_ONE)
    assert not form.is_valid()
    assert "between the years 1 and 9999" in form.errors["period_start"][0]
