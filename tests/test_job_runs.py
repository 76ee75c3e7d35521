"""A job's other runs (same name, user and cluster) on its page: what changed since the run before,
scoped to what the viewer may see, and never giving away a blind rater's findings."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from tests.factories import ClusterFactory, JobFactory
from tests.reading import as_read
from tests.test_jobs_page import triaged
from triage.dashboard import queries
from triage.labeling.models import Assignment, Study, StudyJob, StudyRater
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

DAY = datetime(2026, 11, 2, tzinfo=UTC)


def run(team, day: int, cluster=None, **fields):
    fields.setdefault("name", "resnet-nightly")
    fields.setdefault("user", "ana")
    start = DAY + timedelta(days=day)
    extra = {"cluster": cluster} if cluster is not None else {}
    return JobFactory(team=team, start_time=start, end_time=start + timedelta(hours=2), **extra, **fields)


@pytest.fixture
def nightly(team_a):
    cluster = ClusterFactory(name="alpha")
    first = run(team_a, 0, cluster, mean_gpu_util=22, state="COMPLETED")
    triaged(first, "classified", Category.DATA_PREPROCESSING, Category.MODEL_CHECKPOINTING)
    second = run(team_a, 1, cluster, mean_gpu_util=71, state="COMPLETED")
    triaged(second, "classified", Category.MODEL_CHECKPOINTING)
    third = run(team_a, 2, cluster, mean_gpu_util=88)
    triaged(third, "healthy")
    # Not runs of it: another name, another user, another cluster.
    run(team_a, 1, cluster, name="resnet-nightly-v2")
    run(team_a, 1, cluster, user="bo")
    run(team_a, 1, ClusterFactory(name="beta"))
    return first, second, third


def page(client, job):
    response = client.get(reverse("dashboard:job-detail", args=[job.pk]))
    assert response.status_code == 200
    return response


def test_the_page_lists_the_runs_before_and_after_and_what_the_last_change_did(client, operator, nightly):
    first, second, third = nightly
    client.force_login(operator)
    response = page(client, second)
    runs = response.context["runs"]
    assert [job.pk for job in runs.earlier] == [first.pk] and [job.pk for job in runs.later] == [third.pk]
    change = response.context["run_change"]
    assert (change.util_before, change.util_after) == (22, 71)
    assert change.gone == [Category.DATA_PREPROCESSING] and change.kept == [Category.MODEL_CHECKPOINTING]
    assert change.new == []
    html = as_read(response.content.decode())
    section = html.split('id="runs"')[1].split("</section>")[0]
    assert "1 before this one and 1 after it" in section
    assert "22 % &rarr; <strong>71 %</strong>" in section
    assert "no longer found: " in section and Category.DATA_PREPROCESSING.label in section.split("still found")[0]
    assert section.count("(this run)") == 1
    for other in (first, third):
        assert reverse("dashboard:job-detail", args=[other.pk]) in section


def test_every_run_link_lists_exactly_the_runs(client, operator, nightly):
    client.force_login(operator)
    link = page(client, nightly[0]).context["runs_query"]
    listed = client.get(reverse("dashboard:job-list") + "?" + link)
    assert {job.pk for job in listed.context["page"].object_list} == {job.pk for job in nightly}
    assert "The runs of the job named <strong>resnet-nightly</strong>" in listed.content.decode()
    api = client.get("/api/v1/jobs/", {"cluster": "alpha", "user": "ana", "name": "resnet-nightly"}).json()
    assert {row["id"] for row in api["results"]} == {job.pk for job in nightly}


def test_the_first_run_has_no_change_and_a_job_without_a_name_no_runs(client, operator, nightly, team_a):
    client.force_login(operator)
    response = page(client, nightly[0])
    assert response.context["run_change"] is None and 'id="run-change"' not in response.content.decode()
    unnamed = run(team_a, 3, name="")
    run(team_a, 4, name="")
    response = page(client, unnamed)
    assert response.context["runs"] is None and 'id="runs"' not in response.content.decode()


def test_a_run_not_triaged_yet_is_not_compared(client, operator, nightly, team_a):
    client.force_login(operator)
    fourth = run(team_a, 3, nightly[0].cluster)  # the rules have not run on it
    response = page(client, fourth)
    assert [job.pk for job in response.context["runs"].earlier] == [job.pk for job in nightly]
    assert response.context["run_change"] is None  # "no longer found" would be a guess


def test_a_member_sees_only_the_runs_of_their_teams(client, member_a, nightly, team_b):
    moved = run(team_b, 5, nightly[0].cluster)  # the same job, charged to another team
    client.force_login(member_a)
    runs = page(client, nightly[0]).context["runs"]
    assert moved.pk not in [job.pk for job in runs.later] and runs.later_total == 2
    assert client.get(reverse("dashboard:job-detail", args=[moved.pk])).status_code == 404


def test_a_long_history_lists_ten_runs_each_side_with_the_totals(client, operator, team_a):
    cluster = ClusterFactory(name="alpha")
    jobs = [run(team_a, day, cluster) for day in range(25)]
    client.force_login(operator)
    response = page(client, jobs[12])
    runs = response.context["runs"]
    assert [job.pk for job in runs.earlier] == [job.pk for job in jobs[2:12]]
    assert [job.pk for job in runs.later] == [job.pk for job in jobs[13:23]]
    assert (runs.earlier_total, runs.later_total) == (12, 12)
    section = response.content.decode().split('id="runs"')[1]
    assert "12 earlier runs; the 10 just before this one" in section
    assert "12 later runs; the 10 just after this one" in section


def test_runs_started_at_the_same_moment_keep_one_order(team_a):
    cluster = ClusterFactory(name="alpha")
    same = [run(team_a, 0, cluster) for _ in range(3)]  # a sweep submitted at once
    middle = queries.job_runs(type(same[0]).objects.all(), same[1])
    assert [job.pk for job in middle.earlier] == [same[0].pk] and [job.pk for job in middle.later] == [same[2].pk]


def test_a_blind_rater_sees_no_run_s_causes(client, researcher, operator, nightly):
    first, second, third = nightly
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=second, position=1), rater=researcher)
    client.force_login(researcher)
    # Rating the second run: the first run's causes would say what the rules found on it.
    response = page(client, second)
    section = response.content.decode().split('id="runs"')[1].split("</section>")[0]
    assert response.context["run_change"] is None
    assert Category.DATA_PREPROCESSING.label not in section and Category.MODEL_CHECKPOINTING.label not in section
    assert "hidden while you label it" in section
    # On the third run's page the second's causes stay hidden; the first's may show.
    section = page(client, third).content.decode().split('id="runs"')[1].split("</section>")[0]
    rows = section.split("<tr")
    second_row = next(row for row in rows if reverse("dashboard:job-detail", args=[second.pk]) in row)
    assert "hidden while you label it" in second_row and Category.MODEL_CHECKPOINTING.label not in second_row
    assert page(client, third).context["run_change"] is None  # its run before is hidden


def test_the_change_is_since_the_last_run_that_ended_successfully_as_in_the_digests(client, operator, nightly, team_a):
    """The page compared a run with the run just before it even when that one had failed (its low
    utilization the crash, not the cause), while the digest's runs that got better skip such runs.
    It now compares with the same run the digest does, says which and what it skipped, and still
    lists every run."""
    first, second, third = nightly
    crashed = run(team_a, 3, first.cluster, mean_gpu_util=4, state="FAILED")
    triaged(crashed, "classified", Category.DATA_PREPROCESSING)
    hung = run(team_a, 4, first.cluster, mean_gpu_util=9, state="TIMEOUT")
    triaged(hung, "classified", Category.DATA_PREPROCESSING)
    fixed = run(team_a, 5, first.cluster, mean_gpu_util=93, state="COMPLETED")
    triaged(fixed, "healthy")
    client.force_login(operator)

    response = page(client, fixed)
    assert response.context["runs"].previous.pk == third.pk
    assert [job.pk for job in response.context["runs"].earlier] == [first.pk, second.pk, third.pk, crashed.pk, hung.pk]
    section = as_read(response.content.decode()).split('id="runs"')[1].split("</section>")[0]
    assert (
        f'Since its run of <a href="{reverse("dashboard:job-detail", args=[third.pk])}">2026-11-04 00:00 UTC</a>,'
        " the last that ended successfully (the 2 runs after it are not compared: FAILED, TIMEOUT):"
        " mean GPU utilization\n    88 % &rarr; <strong>93 %</strong>"
    ) in section
    assert "4 %" not in section.split("</p>")[1]  # the failed run's utilization is no "before"
    for skipped in (crashed, hung):  # still listed
        assert reverse("dashboard:job-detail", args=[skipped.pk]) in section.split("</p>", 2)[2]

    # The same run before as the digest's runs that got better.
    from triage.dashboard.periods import Period

    period = Period(DAY + timedelta(days=5), DAY + timedelta(days=6), "custom")
    third.mean_gpu_util = 30
    third.save(update_fields=["mean_gpu_util"])
    [improved] = queries.improved_runs(type(fixed).objects.all(), period, threshold=50)
    assert improved.previous_id == page(client, fixed).context["runs"].previous.pk == third.pk

    # With no earlier run that ended successfully, the page compares with none and says so.
    lone = [run(team_a, day, first.cluster, name="lone", mean_gpu_util=90, state=state)
            for day, state in ((0, "CANCELLED"), (1, "FAILED"), (2, "COMPLETED"))]  # fmt: skip
    for job in lone:
        triaged(job, "healthy")
    response = page(client, lone[2])
    assert response.context["run_change"] is None
    assert "No earlier run ended successfully (CANCELLED, FAILED), so this one is compared with none." in (
        as_read(response.content.decode())
    )


@pytest.mark.parametrize("state", ["FAILED", "TIMEOUT", "RUNNING", "Failed"])
def test_a_run_that_did_not_end_successfully_is_compared_and_says_so(client, operator, nightly, team_a, state):
    """The digests never count such a run as one that got better, but the page compared it as if its
    utilization measured a fix. It still compares it, and says plainly what the run's state is."""
    fourth = run(team_a, 3, nightly[0].cluster, mean_gpu_util=97, state=state)
    triaged(fourth, "healthy")
    client.force_login(operator)
    section = as_read(page(client, fourth).content.decode()).split('id="runs"')[1].split("</section>")[0]
    assert "88 % &rarr; <strong>97 %</strong>" in section  # still compared with the run before
    assert (
        f"This run has not ended successfully ({state}): its utilization says little about whether a fix worked."
    ) in section


@pytest.mark.parametrize("state", ["COMPLETED", "Succeeded", ""])
def test_a_run_that_ended_successfully_or_has_no_state_has_no_note(client, operator, nightly, team_a, state):
    fourth = run(team_a, 3, nightly[0].cluster, mean_gpu_util=97, state=state)
    triaged(fourth, "healthy")
    client.force_login(operator)
    html = as_read(page(client, fourth).content.decode())
    assert "88 % &rarr; <strong>97 %</strong>" in html
    assert "has not ended successfully" not in html and 'id="run-state-note"' not in html


def test_a_blind_rater_of_a_failed_run_sees_no_comparison_nor_its_note(client, researcher, operator, nightly, team_a):
    failed = run(team_a, 3, nightly[0].cluster, mean_gpu_util=97, state="FAILED")
    triaged(failed, "healthy")
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=failed, position=1), rater=researcher)
    client.force_login(researcher)
    response = page(client, failed)
    assert response.context["run_change"] is None
    assert 'id="run-change"' not in response.content.decode() and "has not ended successfully" not in (
        response.content.decode()
    )


def test_one_job_ended_successfully_by_the_same_rule_as_the_query(team_a):
    states = ["COMPLETED", "completed", "Succeeded", "", "FAILED", "RUNNING", "TIMEOUT", "CANCELLED by 42", "PENDING"]
    jobs = [run(team_a, day, state=state) for day, state in enumerate(states)]
    Job = type(jobs[0])
    by_query = set(Job.objects.filter(queries._ended_successfully()).values_list("pk", flat=True))
    assert {job.pk for job in jobs if queries.ended_successfully(job)} == by_query
    assert len(by_query) == 4
