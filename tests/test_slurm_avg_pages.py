"""Where a job's utilization is Slurm's step-accounting average (no GPU samples, `util_source`), the pages
agree with the digests and with each other: the job page compares two such runs' utilization, the overview
and a team page say a low average could not be judged and link to the averages, the jobs list and the API
filter by where a figure came from, and /metrics counts a team's low averages apart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from tests.factories import ClusterFactory, JobFactory
from tests.reading import as_read
from tests.test_jobs_page import triaged
from tests.test_monitoring import samples
from tests.test_slurm_step_util import FIXTURES, SLURM_WEEK, _text, import_archive, prometheus_util, slurm_jobs
from triage import monitoring
from triage.labeling.models import Assignment, Study, StudyJob, StudyRater
from triage.taxonomy import Category

__all__ = ["slurm_jobs"]  # a fixture, imported for the tests here

pytestmark = pytest.mark.django_db

MONDAY = datetime(2026, 11, 16, tzinfo=UTC)


def _run(team, cluster, days, util, source, **fields):
    start = MONDAY + timedelta(days=days)
    return JobFactory(team=team, cluster=cluster, name="nightly", user="dana", start_time=start,
                      end_time=start + timedelta(hours=3), mean_gpu_util=util, util_source=source,
                      state="COMPLETED", **fields)  # fmt: skip


def _runs_section(client, job) -> str:
    response = client.get(reverse("dashboard:job-detail", args=[job.pk]))
    assert response.status_code == 200
    return response.content.decode().split('id="runs"')[1].split("</section>")[0]


# -- 1. the job page's "what changed" for runs the digest lists ----------------------------------------
def test_the_job_page_compares_the_utilization_of_runs_whose_figure_is_slurms_average(client, operator, team_a):
    """The weekly digest listed 'nightly: 30 % (Slurm avg) -> 80 %' under runs that got better and linked to
    the job's runs, where no line said what changed: an average gets no verdict (insufficient data), and
    the page compared only runs the rules had judged. It now compares their utilization alone."""
    from triage.digests import services

    cluster = ClusterFactory(name="slurm-no-dcgm")
    before = _run(team_a, cluster, -5, 30, "slurm_steps")
    after = _run(team_a, cluster, 2, 80, "")
    triaged(before, "insufficient_data")  # what triage says of an average
    triaged(after, "classified", Category.MODEL_CHECKPOINTING)
    _, text, _ = services.render_triplet("team-digest", services.build_context("team", "2026-W47", team_a))
    assert "nightly (dana, slurm-no-dcgm): 30 % (Slurm avg) → 80 %" in text  # what the reader clicked from
    client.force_login(operator)
    section = _text(_runs_section(client, after))
    assert (
        "Since the run before (2026-11-11 00:00 UTC): mean GPU utilization 30 % Slurm avg → 80 % · causes not"
        " compared: Slurm avg is Slurm's step-accounting average (one figure for the whole run, no time"
        " series), which the rules cannot judge" in section.replace("&rarr;", "→").replace("&#x27;", "'")
    )
    assert "no longer found" not in section and "new in this run" not in section  # no verdict to compare with


def test_two_averages_are_compared_too_and_a_run_without_a_figure_is_not(client, operator, team_a):
    cluster = ClusterFactory(name="slurm-no-dcgm")
    _run(team_a, cluster, -5, 30, "slurm_steps")
    second = _run(team_a, cluster, -3, 70, "slurm_steps")
    client.force_login(operator)
    change = client.get(reverse("dashboard:job-detail", args=[second.pk])).context["run_change"]
    assert (change.util_before, change.util_after, change.causes_compared) == (30, 70, False)
    assert change.before_from_steps and change.after_from_steps
    third = _run(team_a, cluster, -1, None, "")  # no samples and no average: nothing to compare
    assert client.get(reverse("dashboard:job-detail", args=[third.pk])).context["run_change"] is None


def test_two_sampled_runs_without_a_verdict_are_still_not_compared(client, operator, team_a):
    cluster = ClusterFactory(name="dcgm")
    _run(team_a, cluster, -5, 30, "")
    second = _run(team_a, cluster, -3, 70, "")
    client.force_login(operator)  # not triaged yet: its causes would be a guess, as before
    assert client.get(reverse("dashboard:job-detail", args=[second.pk])).context["run_change"] is None


def test_a_blind_rater_sees_no_comparison_of_averaged_runs(client, operator, researcher, team_a):
    cluster = ClusterFactory(name="slurm-no-dcgm")
    _run(team_a, cluster, -5, 30, "slurm_steps")
    after = _run(team_a, cluster, 2, 80, "slurm_steps")
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=after, position=1), rater=researcher)
    client.force_login(researcher)
    assert 'id="run-change"' not in _runs_section(client, after)


# -- 2. and 3. the overview and a team page: a low average was not judged; a link to the averages -------
def test_the_overview_and_a_team_page_say_a_low_average_could_not_be_judged_and_link_to_them(
    client, operator, slurm_jobs
):
    sampled, summarised = slurm_jobs  # 45 %: at or below the 50 % line
    client.force_login(operator)
    overview = client.get(reverse("dashboard:overview"), SLURM_WEEK)
    html = overview.content.decode()
    assert overview.context["totals"].slurm_avg_low_jobs == 1
    said = _text(html.split('id="slurm-avg"')[1].split("</p>")[0]).replace("&#x27;", "'")
    assert said.endswith(
        "include it. It is at or below 50 % and could not be judged: the rules need a time series to find a cause,"
        " so it has none, and is not counted as unclassified either."
    )
    link = html.split('id="slurm-avg"')[1].split('href="')[1].split('"')[0].replace("&amp;", "&")
    listed = client.get(link)
    assert [job.external_id for job in listed.context["page"].object_list] == ["4250_3"]
    team = client.get(reverse("dashboard:team-detail", args=[summarised.team.slug]), SLURM_WEEK)
    assert "It is at or below 50 % and could not be judged" in _text(team.content.decode())


def test_a_period_of_averages_some_low_links_to_the_low_ones(client, operator, team_a):
    cluster = ClusterFactory(name="slurm-no-dcgm")
    for days, util in ((0, 20), (1, 45), (2, 90)):
        JobFactory(team=team_a, cluster=cluster, start_time=MONDAY + timedelta(days=days), mean_gpu_util=util,
                   util_source="slurm_steps")  # fmt: skip
    client.force_login(operator)
    html = as_read(
        client.get(reverse("dashboard:overview"), {"from": "2026-11-16", "to": "2026-11-22"}).content.decode()
    )
    note = html.split('id="slurm-avg-not-judged"')[1].split("</span>")[0]
    assert "2 of them</a> are at or below 50 % and could not be judged" in note
    link = note.split('href="')[1].split('"')[0].replace("&amp;", "&")
    assert "util_source=slurm_step_accounting" in link and "util_max=50" in link
    listed = client.get(link).context["page"].object_list
    assert sorted(job.mean_gpu_util for job in listed) == [20, 45]


def test_the_not_judged_count_comes_from_the_figures_not_the_rules_so_a_blind_rater_reads_the_same(
    client, operator, researcher, slurm_jobs
):
    """A rater in a blind study must not learn what the rules found: the count is of low Slurm averages
    (their util_source), the same for them as for anyone, whatever the rules said or have yet to say."""
    _, summarised = slurm_jobs  # not triaged at all here
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=summarised, position=1), rater=researcher)
    notes = []
    for user in (operator, researcher):
        client.force_login(user)
        html = client.get(reverse("dashboard:overview"), SLURM_WEEK).content.decode()
        notes.append(html.split('id="slurm-avg"')[1].split("</p>")[0])
    assert notes[0] == notes[1] and "could not be judged" in notes[0]


# -- 3. the jobs list and the API filter by where the figure came from ---------------------------------
def test_the_jobs_list_filters_by_utilization_source(client, operator, slurm_jobs):
    client.force_login(operator)
    url = reverse("dashboard:job-list")
    averaged = client.get(url, {"util_source": "slurm_step_accounting"})
    assert [job.external_id for job in averaged.context["page"].object_list] == ["4250_3"]
    assert "The jobs whose utilization figure is" in averaged.content.decode()
    assert 'aria-label="Where the utilization figure came from"' in averaged.content.decode()
    sampled = client.get(url, {"util_source": "samples"})
    assert [job.external_id for job in sampled.context["page"].object_list] == ["4242"]  # not the CPU job's none
    wrong = client.get(url, {"util_source": "dcgm"})
    assert "Where the utilization figure came from: Select a valid choice." in _text(wrong.content.decode())


def test_the_api_filters_by_utilization_source_and_refuses_an_unknown_one(client, operator, slurm_jobs):
    client.force_login(operator)
    got = client.get("/api/v1/jobs/", {"util_source": "slurm_step_accounting"}).json()
    assert [row["external_id"] for row in got["results"]] == ["4250_3"]
    got = client.get("/api/v1/jobs/", {"util_source": "samples"}).json()
    assert [row["external_id"] for row in got["results"]] == ["4242"]
    refused = client.get("/api/v1/jobs/", {"util_source": "slurm_steps"})
    assert refused.status_code == 400 and refused.json() == {
        "util_source": [
            "Select a valid choice. 'slurm_steps' is not one of the available choices: samples, slurm_step_accounting."
        ]
    }  # the stored value is not the API's name for it: the answer lists the ones it takes
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/jobs/"]["get"]["parameters"]}
    assert parameters["util_source"]["schema"]["enum"] == ["samples", "slurm_step_accounting"]


# -- 4. the jobs list's no_util note ------------------------------------------------------------------
def test_the_no_util_note_says_there_is_no_slurm_average_either(client, operator, slurm_jobs):
    client.force_login(operator)
    response = client.get(reverse("dashboard:job-list"), {"no_util": "true"})
    assert [job.external_id for job in response.context["page"].object_list] == ["4245"]
    assert (
        "The jobs without a utilization figure: neither GPU samples nor a Slurm step-accounting average were"
        " supplied for them." in response.content.decode()
    )
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/jobs/"]["get"]["parameters"]}
    assert "neither GPU samples nor a Slurm step-accounting average" in parameters["no_util"]["description"]


# -- 5. /metrics: a team's low averages apart -------------------------------------------------------
def test_metrics_count_each_teams_low_slurm_averages_apart(team_a, team_b):
    now = MONDAY + timedelta(days=6)
    JobFactory(team=team_a, start_time=now - timedelta(days=1), mean_gpu_util=20)
    JobFactory(team=team_a, start_time=now - timedelta(days=1), mean_gpu_util=30, util_source="slurm_steps")
    JobFactory(team=team_a, start_time=now - timedelta(days=1), mean_gpu_util=80, util_source="slurm_steps")
    JobFactory(team=team_b, start_time=now - timedelta(days=1), mean_gpu_util=10)
    got = samples(monitoring.exposition(now).decode())
    assert got[("fleet_triage_team_low_utilization_jobs", (("team", "team-a"),))] == 2
    assert got[("fleet_triage_team_low_utilization_jobs_slurm_avg", (("team", "team-a"),))] == 1
    assert got[("fleet_triage_team_low_utilization_jobs_slurm_avg", (("team", "team-b"),))] == 0


# -- 6. a GPU job with neither samples nor gpuutil ---------------------------------------------------
def test_a_gpu_job_without_samples_or_gpuutil_has_no_source_wherever_it_is_read(client, operator, tmp_path):
    """Stored util_source is "" (`UtilSource.SAMPLES`, the default every earlier row has): it says only
    "not Slurm's average", and with no figure every reader says no source, not "samples"."""
    import json

    from fleet.models import Job
    from triage.dashboard import queries

    doc = json.loads((FIXTURES / "sacct_v0.0.41.json").read_bytes())
    for record in doc["jobs"]:
        for step in record.get("steps", []):
            step["tres"]["requested"]["average"] = []  # a Slurm without gpuutil accounting
    import_archive(
        tmp_path,
        {"native/slurm/sacct.json": json.dumps(doc), "native/prometheus/4242/gpu.json": prometheus_util("4242", 25)},
    )
    job = Job.objects.get(external_id="4250_3")
    assert job.gpu_count > 0 and job.mean_gpu_util is None
    assert job.util_source == Job.UtilSource.SAMPLES == "" and not job.util_from_steps
    assert job.mean_gpu_util_source is None
    client.force_login(operator)
    assert client.get(f"/api/v1/jobs/{job.pk}/").json()["mean_gpu_util_source"] is None
    for source in ("samples", "slurm_step_accounting"):
        assert not Job.objects.filter(queries.UTIL_SOURCES[source], pk=job.pk).exists()
    assert queries.totals(Job.objects.filter(pk=job.pk), 50.0).slurm_avg_jobs == 0
