"""The job page's Job card: how long the job waited in the queue, between Submitted and Started."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from tests.factories import JobFactory
from triage.templatetags.durations import wait_text

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "under 1 min"), (59, "under 1 min"), (13 * 60 + 20, "13 min"), (90 * 60, "1 h 30 min"),
     (3 * 3600, "3 h"), (26 * 3600 + 5 * 60, "1 d 2 h"), (2 * 86400, "2 d")],
)  # fmt: skip
def test_a_wait_reads_as_a_person_would_say_it(seconds, text):
    assert wait_text(timedelta(seconds=seconds)) == text


@pytest.mark.django_db
def test_the_job_card_says_how_long_the_job_queued_when_both_times_are_known(client, member_a, team_a):
    queued = JobFactory(team=team_a, submit_time=START - timedelta(minutes=13), start_time=START,
                        end_time=START + timedelta(hours=1))  # fmt: skip
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[queued.pk])).content.decode()
    assert '<dt>Queued</dt><dd id="job-queued">13 min</dd>' in page
    unknown = JobFactory(team=team_a, submit_time=None, start_time=START, end_time=START + timedelta(hours=1))
    page = client.get(reverse("dashboard:job-detail", args=[unknown.pk])).content.decode()
    assert "job-queued" not in page
    # A source whose submit time is after the start (clocks apart) has no wait to show, not a negative one.
    odd = JobFactory(team=team_a, submit_time=START + timedelta(minutes=5), start_time=START,
                     end_time=START + timedelta(hours=1))  # fmt: skip
    assert "job-queued" not in client.get(reverse("dashboard:job-detail", args=[odd.pk])).content.decode()
