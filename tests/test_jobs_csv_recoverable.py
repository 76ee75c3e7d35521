"""The jobs CSV's recoverable GPU-hours: the list sorts by them (`?sort=recoverable`), and the export had none."""

import csv
import io
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from tests.factories import JobFactory
from tests.test_jobs_page import _found
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

MONDAY = datetime(2026, 11, 2, 9, tzinfo=UTC)


def exported(client, **params) -> tuple[list[str], dict[str, dict]]:
    response = client.get(reverse("dashboard:job-list"), {"format": "csv", **params})
    reader = csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    rows = list(reader)
    return reader.fieldnames, {row["name"]: row for row in rows}


def test_the_jobs_csv_ends_with_each_jobs_recoverable_gpu_hours(client, operator, team_a):
    """Appended last, so a consumer reading columns by position reads the ones it had; of the chosen cause
    alone when the export is filtered by one, as the list and the cause's page count them."""
    ckpt, batch = Category.MODEL_CHECKPOINTING, Category.IMPROPER_BATCH_SIZE
    _found(JobFactory(team=team_a, name="two-causes", start_time=MONDAY), (ckpt, 1.25), (batch, 10.0))
    JobFactory(team=team_a, name="nothing-found", start_time=MONDAY)
    client.force_login(operator)
    columns, rows = exported(client)
    assert columns[-1] == "recoverable_gpu_hours" and columns[-2] == "gpu_unit"
    assert rows["two-causes"]["recoverable_gpu_hours"] == "11.25"
    assert rows["nothing-found"]["recoverable_gpu_hours"] == ""
    _, rows = exported(client, category=ckpt.value, sort="recoverable")
    assert rows["two-causes"]["recoverable_gpu_hours"] == "1.25"


def test_the_jobs_csv_says_nothing_of_a_job_its_viewer_rates_blind(client, operator, researcher, team_a):
    """A job its viewer rates in a blind study has no figure (it would say what the rules found)."""
    from triage.labeling.models import Assignment, Study, StudyJob, StudyRater

    blind = JobFactory(team=team_a, name="rated-blind", start_time=MONDAY)
    _found(blind, (Category.MODEL_CHECKPOINTING, 50.0))
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=blind, position=1), rater=researcher)
    client.force_login(researcher)
    for params in ({}, {"sort": "recoverable"}):
        _, rows = exported(client, **params)
        assert rows["rated-blind"]["recoverable_gpu_hours"] == "", params
    client.force_login(operator)
    assert exported(client)[1]["rated-blind"]["recoverable_gpu_hours"] == "50.0"
