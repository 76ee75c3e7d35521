"""A job above the low-utilization line is not searched for causes: the jobs list's and a team page's
Why column said "healthy" of one that left 11.5 GPU-hours unused, in a table titled "Jobs that left the
most GPU time unused", while the digest says "above 50 % GPU utilization, not searched for causes"."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from tests.factories import ClusterFactory, JobFactory
from triage.models import JobTriage, RuleSet, low_util_threshold

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 17, 9, tzinfo=UTC)


def healthy_job(team, name, unused):
    job = JobFactory(
        cluster=ClusterFactory(name="alpha"), team=team, name=name, start_time=START, mean_gpu_util=67.0,
        gpu_hours=35.0, unused_gpu_hours=unused,
    )  # fmt: skip
    JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="healthy", is_current=True)
    return job


def why_of(page: str, name: str) -> str:
    row = page.split(name, 1)[1].split("</tr>", 1)[0]
    return row.split('class="why"', 1)[1]


def test_a_job_above_the_line_that_left_gpu_time_unused_is_not_called_healthy(client, operator, team_a):
    healthy_job(team_a, "big-idle-run", 11.5)
    healthy_job(team_a, "busy-run", 0.9)
    healthy_job(team_a, "one-hour-run", 0.96)  # "1.0" in the Unused column: not called healthy beside it
    client.force_login(operator)
    line = f"above {low_util_threshold():.0f}\u00a0% — not checked"
    jobs = client.get(reverse("dashboard:job-list")).content.decode()
    team = client.get(reverse("dashboard:team-detail", args=[team_a.slug]), {"from": "2026-11-16", "to": "2026-11-22"})
    for page in (jobs, team.content.decode()):
        assert line in why_of(page, "big-idle-run") and ">healthy<" not in why_of(page, "big-idle-run")
    # Nothing left idle worth naming: healthy it is.
    assert ">healthy<" in why_of(jobs, "busy-run") and "not checked" not in why_of(jobs, "busy-run")
    assert line in why_of(jobs, "one-hour-run")
