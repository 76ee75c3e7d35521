"""The overview's and a team's links to the jobs list open the jobs they counted, whatever the reader's
time zone: the pages' periods are whole UTC days, and so are the list's start dates."""

import html
import re
from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse

from fleet.models import UserProfile
from tests.factories import JobFactory
from triage.models import Finding, JobTriage, RuleSet
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

WEEK = {"from": "2026-11-16", "to": "2026-11-22"}
# New York is 5 h behind UTC in November: a job started early on a UTC day began the evening before there.
STARTS = {
    "first-utc-morning": datetime(2026, 11, 16, 2, 0, tzinfo=UTC),  # 15 Nov 21:00 in New York
    "midweek": datetime(2026, 11, 19, 12, 0, tzinfo=UTC),
    "last-utc-evening": datetime(2026, 11, 22, 23, 0, tzinfo=UTC),
    "after-the-week": datetime(2026, 11, 23, 3, 0, tzinfo=UTC),  # 22 Nov 22:00 in New York
    "also-after": datetime(2026, 11, 23, 1, 0, tzinfo=UTC),  # 22 Nov 20:00 in New York
}
IN_THE_WEEK = {"first-utc-morning", "midweek", "last-utc-evening"}


@pytest.fixture
def week_jobs(team_a):
    jobs = [JobFactory(team=team_a, name=name, start_time=start, mean_gpu_util=10) for name, start in STARTS.items()]
    rule_set = RuleSet.current()
    for job in jobs:
        result = JobTriage.objects.create(job=job, rule_set=rule_set, status="classified", is_current=True)
        Finding.objects.create(result=result, job=job, rule_set=rule_set, category=Category.MODEL_CHECKPOINTING,
                               confidence=0.9, summary="s", gpu_hours=1.0, evidence={}, guidance={})  # fmt: skip
    return jobs


@pytest.fixture
def new_yorker(operator):
    UserProfile.objects.update_or_create(user=operator, defaults={"time_zone": "America/New_York"})
    client = Client()
    client.force_login(operator)
    return client


def listed(client, href: str) -> set[str]:
    response = client.get(html.unescape(href))
    assert response.status_code == 200
    return {job.name for job in response.context["page"].object_list}


def test_the_overviews_low_jobs_link_lists_the_jobs_it_counted_for_a_reader_in_new_york(new_yorker, week_jobs):
    page = new_yorker.get(reverse("dashboard:overview"), WEEK).content.decode()
    link = re.search(r'<a href="([^"]*/jobs/\?[^"]*util_max[^"]*)">(\d+) of (\d+) jobs</a>', page)
    assert link, "the overview's low-utilization jobs link"
    assert link.group(2) == "3"
    assert listed(new_yorker, link.group(1)) == IN_THE_WEEK


def test_a_teams_cause_link_lists_the_jobs_it_counted_for_a_reader_in_new_york(new_yorker, week_jobs):
    page = new_yorker.get(reverse("dashboard:team-detail", args=["team-a"]), WEEK).content.decode()
    link = re.search(r'<a href="([^"]*/jobs/\?[^"]*category=model_checkpointing[^"]*)">', page)
    assert link, "the team's cause row links to the list"
    row = re.search(r'<span class="cell-label">Jobs</span><span>(\d+)</span>', page)
    assert row.group(1) == "3"
    assert listed(new_yorker, link.group(1)) == IN_THE_WEEK


def test_the_lists_start_dates_are_utc_days_and_the_form_says_so(new_yorker, week_jobs):
    """Typed into the list's own form too: the same dates are the same jobs on every page and for everyone."""
    response = new_yorker.get(reverse("dashboard:job-list"), {"start_from": "2026-11-16", "start_to": "2026-11-22"})
    assert {job.name for job in response.context["page"].object_list} == IN_THE_WEEK
    assert "Started (UTC)" in response.content.decode()
    one_day = new_yorker.get(reverse("dashboard:job-list"), {"start_from": "2026-11-23", "start_to": "2026-11-23"})
    assert {job.name for job in one_day.context["page"].object_list} == {"after-the-week", "also-after"}


@pytest.mark.parametrize("last", ["9999-12-31", "0001-01-01"])
def test_the_furthest_dates_a_date_box_takes_are_no_server_error(new_yorker, week_jobs, last):
    response = new_yorker.get(reverse("dashboard:job-list"), {"start_from": "0001-01-01", "start_to": last})
    assert response.status_code == 200
    assert len(response.context["page"].object_list) == (len(STARTS) if last.startswith("9") else 0)
