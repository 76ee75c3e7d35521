"""Triage of the demo fleet, scored against its ground truth: precision and recall per category."""

from __future__ import annotations

import pytest

from fleet import ingest
from fleet.models import Job
from triage.accuracy import format_table, load_truth, score
from triage.demo.generator import generate_demo_fleet
from triage.models import Finding, JobTriage

pytestmark = pytest.mark.django_db
BAR = 0.9


@pytest.fixture(scope="module")
def fleet_200(tmp_path_factory):
    archive = tmp_path_factory.mktemp("triage-accuracy") / "demo.zip"
    summary = generate_demo_fleet(archive, jobs=200, seed=42)
    return archive, summary.truth_path


def test_demo_fleet_meets_the_precision_and_recall_bar_for_every_category(
    fleet_200, settings, django_capture_on_commit_callbacks
):
    archive, truth_path = fleet_200
    # Ingest answers with triage (the jobs_ingested signal), as it does in production.
    with django_capture_on_commit_callbacks(execute=True):
        run = ingest.execute_run(ingest.create_run(archive).pk)
    assert run.jobs_created == 200
    assert JobTriage.objects.filter(is_current=True).count() == 200

    predicted: dict[tuple[str, str], set[str]] = {}
    for cluster, external_id, category in Finding.objects.filter(result__is_current=True).values_list(
        "job__cluster__name", "job__external_id", "category"
    ):
        predicted.setdefault((cluster, external_id), set()).add(category)
    scores = score(predicted, load_truth(truth_path))
    print("\n" + format_table(scores))  # the table the closing note quotes (pytest -s shows it)
    below = [(s.category.value, s.precision, s.recall) for s in scores if s.lowest is None or s.lowest < BAR]
    assert below == []
    assert all(s.true_positives + s.false_negatives > 0 for s in scores)  # every category was planted

    # Healthy jobs (mean util above the threshold) get no low-utilization findings.
    healthy = Job.objects.filter(mean_gpu_util__gt=settings.LOW_UTIL_THRESHOLD)
    assert healthy.count() > 100
    assert not Finding.objects.filter(job__in=healthy).exists()
    statuses = dict(JobTriage.objects.filter(job__in=healthy).values_list("job_id", "status"))
    assert set(statuses.values()) <= {"healthy", "insufficient_data"}
    # The only exception: an exporter outage left too little of the run covered (missing data, not idleness).
    for job in healthy.filter(pk__in=[pk for pk, status in statuses.items() if status != "healthy"]):
        assert job.coverage < 0.8


def test_a_category_neither_planted_nor_found_is_not_measured_not_perfect():
    """It read 1.00 / 1.00 and passed the bar untested (the labeling pages show "–" for the same)."""
    from triage.taxonomy import Category

    truth = {("c", "1"): {Category.MODEL_CHECKPOINTING.value}}
    scores = {s.category: s for s in score({("c", "1"): {Category.MODEL_CHECKPOINTING.value}}, truth)}
    assert scores[Category.MODEL_CHECKPOINTING].lowest == 1.0
    untouched = scores[Category.API_MISUSE]
    assert (untouched.precision, untouched.recall, untouched.lowest) == (None, None, None)
    missed = score({}, truth)[list(Category).index(Category.MODEL_CHECKPOINTING)]
    assert (missed.precision, missed.recall, missed.lowest) == (None, 0.0, 0.0)
    assert "api_misuse                       0     0    0    0    0         –      –" in format_table(
        list(scores.values())
    )


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("--jobs", "0", "--jobs must be at least 1"), ("--min", "nan", "--min must be a score from 0 to 1")],
)
def test_the_accuracy_command_refuses_options_that_measure_nothing(option, value, message):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=message):
        call_command("triage_accuracy", option, value)
