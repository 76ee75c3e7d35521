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


@pytest.mark.django_db
def test_the_job_card_leads_to_the_runs_of_the_job_with_the_change_since_the_one_before(
    client, member_a, team_a, team_b
):
    """The runs table sat below the findings, out of sight of the card; the card now says how many runs the
    job has and the utilization since the run it is compared with, as the digests say it."""
    from tests.factories import ClusterFactory
    from triage.models import JobTriage, RuleSet

    cluster = ClusterFactory()
    same = {"team": team_a, "cluster": cluster, "name": "resnet-sweep", "user": "ana", "state": "COMPLETED"}
    before = JobFactory(**same, start_time=START - timedelta(days=3), mean_gpu_util=32.0)
    this = JobFactory(**same, start_time=START, mean_gpu_util=83.0)
    for run in (before, this):  # judged by the rules: the runs' utilization is compared (an untriaged one's is not)
        JobTriage.objects.create(job=run, rule_set=RuleSet.current(), status="healthy", is_current=True)
    # Another team's run of the same name is not the viewer's to see, nor counted.
    JobFactory(**{**same, "team": team_b}, start_time=START - timedelta(days=1), mean_gpu_util=10.0)
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[this.pk])).content.decode()
    assert '<dt>Runs</dt><dd id="job-runs-link"><a href="#runs">2 runs of this job</a>' in page
    assert "32\u00a0% &rarr; 83\u00a0% since its run of 2026-10-30" in page  # as the digests say it
    alone = JobFactory(team=team_a, start_time=START)
    assert "job-runs-link" not in client.get(reverse("dashboard:job-detail", args=[alone.pk])).content.decode()
