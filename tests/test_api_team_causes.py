"""`GET /api/v1/teams/{slug}/causes/`: why a team's GPUs idled over a period, as its team page's
"Why this team's GPUs idled" gives it (cause, jobs, recoverable GPU-hours, cost, the change to make).
The teams report had only totals: a script could say how much a team wasted, not why."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from fleet.models import MachineToken
from fleet.money import to_cents
from fleet.numbers import hours_to_thousandth
from tests.factories import ClusterFactory, JobFactory
from tests.test_dashboard import WEEK_START, _finding, fleet  # noqa: F401  (the fixture, used by name)
from tests.test_labeling_blind import blind_study  # noqa: F401  (the fixture, used by name)
from triage.models import Finding
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

WEEK = {"from": "2026-11-16", "to": "2026-11-22"}


def url(slug: str) -> str:
    return f"/api/v1/teams/{slug}/causes/"


@pytest.fixture
def causes_of_team_a(fleet):  # noqa: F811
    """Team A's week: checkpointing on both its jobs (3 + 1.5 GPU-hours), data loading on one, and an
    unpriced job with a cause of its own; last week's job a cause the week leaves out."""
    (low, _), last_week = fleet
    result = _finding(low, Category.MODEL_CHECKPOINTING, 3.0).result
    result.findings.update(cost="6.25", currency="USD")  # the job's price, 2 USD a GPU-hour (and a quarter)
    Finding.objects.create(
        result=result, job=low, rule_set=result.rule_set, category=Category.DATA_PREPROCESSING, confidence=0.9,
        summary="s", gpu_hours=1.25, evidence={}, guidance={},
    )  # fmt: skip
    other = JobFactory(team=low.team, start_time=WEEK_START + timedelta(days=3), gpu_hours=4, cost=None)
    _finding(other, Category.MODEL_CHECKPOINTING, 1.5)
    unpriced = JobFactory(team=low.team, start_time=WEEK_START + timedelta(days=4), gpu_hours=2, cost=None)
    _finding(unpriced, Category.INTERACTIVE_JOB, 0.5)
    _finding(last_week, Category.NON_DL_JOB, 2.0)
    return low.team


def page_causes(client, slug: str, params: dict) -> list[tuple]:
    """The team page's causes, as the page has them: cause, jobs, GPU-hours, cost (None for "–"), change."""
    page = client.get(reverse("dashboard:team-detail", args=[slug]), params)
    assert page.status_code == 200
    return [
        (
            row["category"].value,
            row["jobs"],
            hours_to_thousandth(row["hours"]),
            to_cents(Decimal(repr(row["spend"]))) if row["cost_known"] else None,
            row["change"],
            row["set_aside"],
        )
        for row in page.context["causes"]
    ]


def api_causes(answer) -> list[tuple]:
    assert answer.status_code == 200, answer.content
    return [
        (
            c["category"],
            c["jobs"],
            c["recoverable_gpu_hours"],
            None if c["cost"] is None else Decimal(c["cost"]),
            c["change"],
            c["set_aside_jobs"],
        )
        for c in answer.json()["causes"]
    ]


def test_a_teams_causes_are_its_team_pages_for_the_same_period(client, member_a, causes_of_team_a):
    client.force_login(member_a)
    answer = client.get(url("team-a"), WEEK)
    listed = api_causes(answer)
    assert listed == page_causes(client, "team-a", WEEK)
    # Most recoverable GPU-hours first; the week's, not the week before's (non_dl_job); the unpriced
    # job's cause has no cost (the page's "–"), not a cost of 0.
    assert [(c[0], c[1], c[2]) for c in listed] == [
        ("model_checkpointing", 2, 4.5),
        ("data_preprocessing", 1, 1.25),
        ("interactive_job", 1, 0.5),
    ]
    assert listed[0][3] == Decimal("6.25") and listed[2][3] is None and listed[0][4] != ""
    report = answer.json()
    assert {k: report[k] for k in ("team", "name", "period_start", "period_end", "cluster", "currency")} == {
        "team": "team-a",
        "name": "Team A",
        "period_start": "2026-11-16",
        "period_end": "2026-11-22",
        "cluster": None,
        "currency": "USD",
    }
    labels = {c["category"]: c["label"] for c in report["causes"]}
    assert labels["model_checkpointing"] == Category.MODEL_CHECKPOINTING.label
    # The week before, as the page shows it: its own cause only.
    before = {"from": "2026-11-09", "to": "2026-11-15"}
    assert [c[0] for c in api_causes(client.get(url("team-a"), before))] == ["non_dl_job"]
    assert api_causes(client.get(url("team-a"), before)) == page_causes(client, "team-a", before)


def test_a_token_made_to_read_reports_reads_any_teams_causes_as_its_page_shows_them(client, operator, causes_of_team_a):
    _, key = MachineToken.objects.create_key(name="billing", reads_reports=True)
    script = APIClient()
    script.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    client.force_login(operator)
    assert api_causes(script.get(url("team-a"), WEEK)) == page_causes(client, "team-a", WEEK)
    assert api_causes(script.get(url("team-b"), WEEK)) == [] == page_causes(client, "team-b", WEEK)
    _, push_key = MachineToken.objects.create_key(name="cron")
    pusher = APIClient()
    pusher.credentials(HTTP_AUTHORIZATION=f"Api-Key {push_key}")
    assert pusher.get(url("team-a"), WEEK).status_code == 403


def test_another_teams_causes_are_a_404_and_bad_parameters_a_400(client, member_a, causes_of_team_a):
    client.force_login(member_a)
    assert client.get(url("team-b"), WEEK).status_code == 404
    assert client.get(url("no-such-team"), WEEK).status_code == 404
    reversed_ = client.get(url("team-a"), {"from": "2026-11-22", "to": "2026-11-16"})
    assert reversed_.status_code == 400 and reversed_.json() == {"from": ["The start date is after the end date"]}
    unknown = client.get(url("team-a"), WEEK | {"form": "2026-11-01"})
    assert unknown.status_code == 400
    assert "from, to, period, cluster" in unknown.json()["form"][0]
    assert client.get(url("team-a"), WEEK | {"cluster": "nope"}).status_code == 400


def test_the_cluster_narrows_the_causes_as_on_the_page(client, member_a, causes_of_team_a):
    beta = ClusterFactory(name="beta")
    job = JobFactory(cluster=beta, team=causes_of_team_a, start_time=WEEK_START + timedelta(days=1), gpu_hours=3)
    _finding(job, Category.NON_DL_JOB, 2.0)
    client.force_login(member_a)
    only_beta = client.get(url("team-a"), WEEK | {"cluster": "beta"})
    assert [c[0] for c in api_causes(only_beta)] == ["non_dl_job"] and only_beta.json()["cluster"] == "beta"
    assert api_causes(only_beta) == page_causes(client, "team-a", WEEK | {"cluster": "beta"})


def test_a_job_its_reader_rates_blind_is_left_out_of_the_causes_as_on_the_page(
    client,
    researcher,
    operator,
    blind_study,  # noqa: F811
):
    job = blind_study[0]
    day = {"from": job.start_time.date().isoformat(), "to": job.start_time.date().isoformat()}
    client.force_login(researcher)
    # Counted, the one job's cause would say what the rules found on a job the rater labels blind.
    assert api_causes(client.get(url("team-a"), day)) == [] == page_causes(client, "team-a", day)
    client.force_login(operator)
    assert [c[0] for c in api_causes(client.get(url("team-a"), day))] == ["api_misuse"]
    assert api_causes(client.get(url("team-a"), day)) == page_causes(client, "team-a", day)


def test_the_causes_are_read_in_a_fixed_number_of_queries(client, member_a, team_a):
    """Aggregates over the period's jobs: as many queries for 15 causes of 30 jobs as for one of one."""
    client.force_login(member_a)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            answer = client.get(url("team-a"), WEEK)
        assert answer.status_code == 200
        return len(captured)

    for i in range(30):
        job = JobFactory(team=team_a, start_time=WEEK_START + timedelta(hours=i), unused_gpu_hours=i, coverage=1.0)
        _finding(job, list(Category)[i % 15], 1.0)
        if i == 0:
            one = queries()
    assert queries() == one
    assert len(api_causes(client.get(url("team-a"), WEEK))) == 15
