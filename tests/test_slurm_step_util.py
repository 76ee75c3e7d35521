"""Slurm sites without DCGM: a job's mean GPU utilization from its steps' `gres/gpuutil` averages
(sacct's TRESUsageInAve), used only when the job has no GPU samples, and said to be an average."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from fleet.connectors.slurm import parse_sacct, steps_gpu_util
from tests.reading import as_read

FIXTURES = Path(__file__).parent / "fixtures" / "connectors"


def sacct(version: str = "v0.0.40") -> dict:
    return json.loads((FIXTURES / f"sacct_{version}.json").read_text())


def gpus(n: int, name: str = "gpu") -> list[dict]:
    return [{"type": "gres", "name": name, "id": 1001, "count": n}]


def a_step(suffix, *, elapsed, tasks, gpu_entries, gpuutil, wrapped=False):
    count = {"set": True, "infinite": False, "number": gpuutil} if wrapped else gpuutil
    average = [] if gpuutil is None else [{"type": "gres", "name": "gpuutil", "id": 1002, "count": count}]
    step = {
        "step": {"id": f"7.{suffix}", "name": suffix},
        "time": {"elapsed": elapsed},
        "tres": {"requested": {"average": average}, "allocated": [{"type": "cpu", "count": 4}, *gpu_entries]},
    }
    if tasks is not None:
        step["tasks"] = {"count": tasks}
    return step


def job_of(steps, gpu_count=4, name="gpu") -> dict:
    return {"steps": steps, "tres": {"allocated": gpus(gpu_count, name)}}


# -- the parser, on sacct --json bytes ------------------------------------------------------------
@pytest.mark.parametrize("version", ["v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42"])
def test_step_averages_become_the_jobs_mean_utilization_per_gpu(version):
    jobs = {job.external_id: job for job in parse_sacct((FIXTURES / f"sacct_{version}.json").read_bytes()).jobs}
    # srun's 8 tasks of 1 GPU at 74 % for 3580 of the job's 3600 s; the batch and extern steps' 0 add nothing
    assert jobs["4242"].summary_gpu_util == pytest.approx(74 * 3580 / 3600)
    # one task on 4 GPUs shows 180 (its smUtil summed over them): 45 % a GPU, not 100 % (180 clipped)
    assert jobs["4250_3"].summary_gpu_util == pytest.approx(45.0)


def test_sacct_before_gpuutil_gives_no_figure():
    # Slurm 21.08 has no gres/gpuutil; its step here has a gpuutil entry but no task count: no guess
    jobs = parse_sacct((FIXTURES / "sacct_dbv0.0.37.json").read_bytes()).jobs
    assert [job.summary_gpu_util for job in jobs] == [None, None]


def test_a_step_whose_gpus_per_task_are_unknown_gives_the_job_no_figure():
    doc = sacct()
    del doc["jobs"][0]["steps"][2]["tasks"]  # srun's step: 74, but per how many GPUs?
    [train] = [job for job in parse_sacct(doc).jobs if job.external_id == "4242"]
    assert train.summary_gpu_util is None
    # nor when the step lists no GPUs of its own while the job's steps cannot be told apart
    step = a_step("0", elapsed=600, tasks=2, gpu_entries=[], gpuutil=50)
    del step["tres"]["allocated"]
    assert steps_gpu_util(job_of([step]), 4, 600) is None


def test_time_no_step_covers_counts_as_idle():
    # salloc for an hour, one srun step of half an hour on all 4 GPUs at 80 %: the GPUs sat idle the rest
    step = a_step("0", elapsed=1800, tasks=4, gpu_entries=gpus(4), gpuutil=80, wrapped=True)
    assert steps_gpu_util(job_of([step]), 4, 3600) == pytest.approx(40.0)


def test_a_step_without_gpus_is_left_out_and_overlapping_steps_are_clipped():
    cpu_step = a_step("0", elapsed=3600, tasks=1, gpu_entries=[], gpuutil=None)  # preprocessing on CPUs
    gpu_step = a_step("1", elapsed=3600, tasks=2, gpu_entries=gpus(4), gpuutil=190)  # 2 tasks of 2 GPUs at 95 %
    assert steps_gpu_util(job_of([cpu_step, gpu_step]), 4, 3600) == pytest.approx(95.0)
    twice = a_step("2", elapsed=3600, tasks=2, gpu_entries=gpus(4), gpuutil=190)
    assert steps_gpu_util(job_of([gpu_step, twice]), 4, 3600) == 100.0


@pytest.mark.parametrize(
    ("gpuutil", "why"),
    [
        ({"set": True, "infinite": True, "number": 0}, "infinite"),
        ({"set": False, "infinite": False, "number": 0}, "unset"),
        (18446744073709551614, "Slurm's NO_VAL64 as a plain number"),
        (-5, "negative"),
    ],
)
def test_unreadable_values_give_no_figure(gpuutil, why):
    step = a_step("0", elapsed=600, tasks=1, gpu_entries=gpus(1), gpuutil=0)
    step["tres"]["requested"]["average"][0]["count"] = gpuutil
    assert steps_gpu_util(job_of([step], 1), 1, 600) is None, why


def test_mig_slices_give_no_figure():
    # NVML has no utilization for MIG instances; Slurm reports 0, which would read as an idle job
    step = a_step("0", elapsed=600, tasks=1, gpu_entries=gpus(1, "gpu:a100_3g.40gb"), gpuutil=0)
    assert steps_gpu_util(job_of([step], 1, "gpu:a100_3g.40gb"), 1, 600) is None


def test_a_step_of_an_odd_shape_leaves_the_job_readable():
    doc = sacct()
    doc["jobs"][0]["steps"][2]["tasks"] = {"count": [8]}
    doc["jobs"][0]["steps"][1]["tres"]["allocated"] = [{"type": "gres", "name": "gpu", "count": {"number": "x"}}]
    parsed = parse_sacct(copy.deepcopy(doc))
    assert parsed.errors == [] and {job.external_id for job in parsed.jobs} == {"4242", "4250_3"}
    assert next(job for job in parsed.jobs if job.external_id == "4242").summary_gpu_util is None


# -- stored: only for jobs without GPU samples, said where it came from ------------------------------
T0 = 1715000000
MANIFEST = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"})


def prometheus_util(job_id: str, value: float, gpus_: int = 8) -> str:
    times = [T0 + 60 * i for i in range(61)]
    result = [
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": str(g), "hostname": "gpu01", "hpc_job": job_id},
         "values": [[t, str(value)] for t in times]}
        for g in range(gpus_)
    ]  # fmt: skip
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def import_archive(tmp_path, members: dict) -> None:
    from fleet import ingest
    from tests.conftest import write_zip

    path = write_zip(tmp_path / "sacct.zip", {"manifest.json": MANIFEST, **members})
    run = ingest.execute_run(ingest.create_run(path).pk)
    assert run.status == "succeeded", run.errors


@pytest.mark.django_db
def test_native_sacct_in_an_archive_gives_jobs_without_samples_slurms_average(tmp_path):
    from fleet.models import Job

    sacct_bytes = (FIXTURES / "sacct_v0.0.41.json").read_bytes()
    import_archive(
        tmp_path,
        {"native/slurm/sacct.json": sacct_bytes, "native/prometheus/4242/gpu.json": prometheus_util("4242", 25)},
    )
    sampled, summarised = Job.objects.get(external_id="4242"), Job.objects.get(external_id="4250_3")
    # samples win over Slurm's average
    assert sampled.mean_gpu_util == pytest.approx(25) and sampled.mean_gpu_util_source == "samples"
    assert sampled.sample_count > 0 and not sampled.util_from_steps
    # no samples: Slurm's step average, whose unused GPU-hours follow from it; no idle hours, no samples
    assert summarised.mean_gpu_util == pytest.approx(45.0) and summarised.util_from_steps
    assert summarised.mean_gpu_util_source == "slurm_step_accounting"
    assert summarised.gpu_hours == pytest.approx(4 * 1200 / 3600)
    assert summarised.unused_gpu_hours == pytest.approx(summarised.gpu_hours * 0.55)
    assert summarised.idle_gpu_hours is None and summarised.sample_count == 0 and summarised.coverage == 1.0
    assert Job.objects.get(external_id="4245").mean_gpu_util is None  # the CPU job: no GPU step, no figure


@pytest.mark.django_db
def test_a_slurm_pull_without_a_metrics_source_stores_slurms_average(monkeypatch, settings):
    from fleet.connectors import sync
    from fleet.models import Job
    from tests.connector_servers import FakePlatform
    from tests.fixtures.connectors.make_slurm_fixtures import step
    from tests.test_connectors_sync import Slurmrestd, _slurm_with_token

    settings.CONNECTOR_HTTP_RETRIES = 1
    api = Slurmrestd(1)
    record = api.jobs[0]
    start = record["time"]["start"]
    gpu_tres = record["tres"]["allocated"][-1:]
    # `srun` with 2 tasks of 2 GPUs each, at 60 % a GPU (120 a task), for the whole job
    record["steps"] = [
        step(41, 9000, "0", start=start, elapsed=5400, nodes="gpu01", tasks=2, gpus=gpu_tres, gpuutil=120)
    ]
    with FakePlatform() as server:
        api.install(server)
        connector = _slurm_with_token(server.url, monkeypatch)  # no metrics_from: no samples to fetch
        result = sync.sync_connector(connector.pk)
    assert result.status == "succeeded", result.errors
    job = Job.objects.get(external_id="9000")
    assert job.mean_gpu_util == pytest.approx(60.0) and job.util_from_steps and not job.series_file


# -- what people see: an average, said to be one ----------------------------------------------------
@pytest.fixture
def slurm_jobs(db, tmp_path):
    from fleet.models import Job

    sacct_bytes = (FIXTURES / "sacct_v0.0.41.json").read_bytes()
    import_archive(
        tmp_path,
        {"native/slurm/sacct.json": sacct_bytes, "native/prometheus/4242/gpu.json": prometheus_util("4242", 25)},
    )
    return Job.objects.get(external_id="4242"), Job.objects.get(external_id="4250_3")


def test_the_job_page_says_the_figure_is_slurms_average_and_why_there_is_no_timeline(client, operator, slurm_jobs):
    from django.urls import reverse

    sampled, summarised = slurm_jobs
    client.force_login(operator)
    page = as_read(client.get(reverse("dashboard:job-detail", args=[summarised.pk])).content.decode())
    assert (
        "<dt>Mean GPU utilization</dt><dd>45 % " in page
        and "from Slurm's step accounting (an average of the whole run; no time series)" in page
    )
    assert "100 % of GPU time" not in page and "none (0 samples)" in page  # not a full sample coverage
    timeline = client.get(reverse("dashboard:job-timeline", args=[summarised.pk])).json()
    assert timeline["data"] == [] and "Slurm's step accounting, one average for the whole run" in timeline["empty"]
    sampled_page = as_read(client.get(reverse("dashboard:job-detail", args=[sampled.pk])).content.decode())
    assert "step accounting" not in sampled_page and "100 % of GPU time" in sampled_page


def test_the_jobs_list_and_the_api_mark_slurms_average(client, operator, slurm_jobs):
    from django.urls import reverse

    sampled, summarised = slurm_jobs
    client.force_login(operator)
    rows = re.split(r"<tr[ >]", as_read(client.get(reverse("dashboard:job-list")).content.decode()))
    [summarised_row] = [row for row in rows if "4250_3" in row]
    [sampled_row] = [row for row in rows if "/4242<" in row or "4242</a>" in row]
    assert "45 %" in summarised_row and "Slurm avg" in summarised_row
    assert "25 %" in sampled_row and "Slurm avg" not in sampled_row
    jobs = {job["external_id"]: job for job in client.get("/api/v1/jobs/").json()["results"]}
    assert jobs["4250_3"]["mean_gpu_util_source"] == "slurm_step_accounting"
    assert jobs["4242"]["mean_gpu_util_source"] == "samples"
    assert jobs["4245"]["mean_gpu_util_source"] is None and jobs["4245"]["mean_gpu_util"] is None
    detail = client.get(f"/api/v1/jobs/{summarised.pk}/").json()
    assert detail["mean_gpu_util_source"] == "slurm_step_accounting" and detail["sample_count"] == 0


def test_triage_finds_no_cause_in_an_average(slurm_jobs):
    from triage.services import triage_job

    _, summarised = slurm_jobs  # 45 %: low, but an average has no idle gaps or phases to explain
    result = triage_job(summarised)
    assert result.status == "insufficient_data" and not result.findings.exists()
    assert result.reason == "no GPU utilization samples"


def test_the_totals_count_slurms_average_as_a_figure_and_its_unused_hours(slurm_jobs):
    from fleet.models import Job
    from triage.dashboard import queries

    sampled, summarised = slurm_jobs
    totals = queries.totals(Job.objects.all(), 40.0)
    assert totals.no_util_jobs == 1  # only the CPU job: the average is a figure
    assert totals.unused_gpu_hours == pytest.approx(sampled.unused_gpu_hours + summarised.unused_gpu_hours)
    assert totals.covered_gpu_hours == pytest.approx(sampled.gpu_hours * sampled.coverage + summarised.gpu_hours)


def test_the_jobs_csv_says_where_each_figure_came_from(client, operator, slurm_jobs):
    import csv
    import io

    from django.urls import reverse

    client.force_login(operator)
    response = client.get(reverse("dashboard:job-list"), {"format": "csv"})
    rows = {row["job_id"]: row for row in csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))}
    assert (
        rows["4250_3"]["mean_gpu_util_source"] == "slurm_step_accounting" and rows["4250_3"]["mean_gpu_util"] == "45.0"
    )
    assert rows["4242"]["mean_gpu_util_source"] == "samples" and rows["4245"]["mean_gpu_util_source"] == ""


# -- a period's figures: how many are Slurm's averages -------------------------------------------------
SLURM_WEEK = {"from": "2024-05-06", "to": "2024-05-12"}  # the fixture's jobs start on 2024-05-06


def _text(html: str) -> str:
    """A page's words, without its tags and with its white space as single spaces."""
    import re

    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_the_overview_and_a_team_page_say_how_many_figures_are_slurms_average(client, operator, slurm_jobs):
    from django.urls import reverse

    sampled, summarised = slurm_jobs
    client.force_login(operator)
    response = client.get(reverse("dashboard:overview"), SLURM_WEEK)
    totals = response.context["totals"]
    assert totals.slurm_avg_jobs == 1 and totals.measured_jobs >= 2
    assert (
        f"1 of the period's {totals.measured_jobs} utilization figures is Slurm avg : from Slurm's step accounting"
        " (an average of the whole run; no time series), for a job without GPU samples; the histogram and the"
        " low-utilization count include it." in _text(response.content.decode())
    )
    # the team of the averaged job: its one figure; the team of the sampled job: nothing to say
    team = client.get(reverse("dashboard:team-detail", args=[summarised.team.slug]), SLURM_WEEK)
    assert team.context["totals"].slurm_avg_jobs == 1
    assert "The period's one utilization figure is Slurm avg : from Slurm's step accounting" in _text(
        team.content.decode()
    )
    sampled_team = client.get(reverse("dashboard:team-detail", args=[sampled.team.slug]), SLURM_WEEK)
    assert 'id="slurm-avg"' not in sampled_team.content.decode()


@pytest.mark.sqlite_only("the plan's words are SQLite's")
def test_the_summary_aggregates_read_only_the_summary_indexes(slurm_jobs):
    """Counting Slurm's averages must not send the overview back to the wide rows: on SQLite each
    aggregate is answered from an index that holds every column it reads (a covering index)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from fleet.models import Job
    from triage.dashboard import queries
    from triage.dashboard.periods import parse_period

    sampled, _ = slurm_jobs
    period, _ = parse_period(SLURM_WEEK, None)
    jobs = queries.in_period(Job.objects.all(), period)
    with CaptureQueriesContext(connection) as captured:
        queries.totals(jobs, 40.0)
        queries.by_team(jobs, 40.0)
        queries.totals(jobs.filter(team=sampled.team), 40.0)
    aggregates = [query for query in captured.captured_queries if 'FROM "fleet_job"' in query["sql"]]
    assert len(aggregates) == 3
    for query in aggregates:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
        assert "USING COVERING INDEX job_" in plan, (query["sql"], plan)


# -- the weekly digests: the same mark and the same count -------------------------------------------
@pytest.mark.django_db
def test_the_digests_mark_slurms_average_in_runs_that_got_better_and_count_the_weeks(team_a):
    from datetime import UTC, datetime, timedelta

    from tests.factories import ClusterFactory, JobFactory
    from triage.digests import services

    monday, cluster = datetime(2026, 11, 16, tzinfo=UTC), ClusterFactory(name="slurm-no-dcgm")

    def run(name, days, util, source):
        start = monday + timedelta(days=days)
        return JobFactory(team=team_a, cluster=cluster, name=name, user="dana", start_time=start,
                          end_time=start + timedelta(hours=3), mean_gpu_util=util, util_source=source,
                          state="COMPLETED")  # fmt: skip

    run("nightly", -5, 30, "slurm_steps"), run("nightly", 2, 80, "samples")  # sampled after a Slurm average
    run("sweep", -4, 20, "samples"), run("sweep", 1, 70, "slurm_steps")
    run("plain", -3, 10, "samples"), run("plain", 3, 60, "samples")
    run("cpu", 4, None, "samples")  # no figure at all: neither counted nor marked
    means = "Slurm avg: from Slurm's step accounting (an average of the whole run; no time series)"
    week_note = (
        "1 of the week's 3 utilization figures is Slurm avg: from Slurm's step accounting (an average of the whole"
        " run; no time series), for a job without GPU samples; the low-utilization count includes it."
    )
    for kind, team in (("team", team_a), ("operator", None)):
        _, text, html = services.render_triplet(f"{kind}-digest", services.build_context(kind, "2026-W47", team))
        better = text.split("RUNS THAT GOT BETTER")[1].split("\n\n")[0]
        assert f"  {means}, for a run without GPU samples." in better.splitlines()
        assert [line.strip().split(" since")[0] for line in better.splitlines() if line.strip().startswith("+")] == [
            "+ sweep (dana, slurm-no-dcgm): 20 % → 70 % (Slurm avg)",  # each up 50 points: the earliest first
            "+ nightly (dana, slurm-no-dcgm): 30 % (Slurm avg) → 80 %",
            "+ plain (dana, slurm-no-dcgm): 10 % → 60 %",
        ]
        assert week_note in text.split("\n\n")[0], kind  # under the week's first line
        listed = as_read(html).split("Runs that got better")[1].split("</ul>")[0]
        assert "30 % <span" in listed and listed.count(">Slurm avg</span>") == 2 and "&#x27;s step accounting" in listed
        assert week_note.replace("'", "&#x27;") in html, kind
        if kind == "team":  # its footer defines the waste share
            assert "GPU-hours covered by samples or by a Slurm step-accounting average." in html


def test_the_teams_report_and_csv_count_each_teams_slurm_averages(client, operator, slurm_jobs):
    """A chargeback script read low_util_jobs and unused_gpu_hours with nothing saying that some rest on
    Slurm's averages rather than samples; the report and the teams CSV now count them per team."""
    import csv
    import io

    from django.urls import reverse

    sampled, summarised = slurm_jobs
    client.force_login(operator)
    report = client.get("/api/v1/teams/", SLURM_WEEK).json()
    counts = {row["team"]: row["slurm_step_accounting_jobs"] for row in report["teams"]}
    assert counts[summarised.team.slug] == 1 and counts[sampled.team.slug] == 0
    download = client.get(reverse("dashboard:team-list"), SLURM_WEEK | {"format": "csv"})
    header, *rows = list(csv.reader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert header[-1] == "slurm_step_accounting_jobs"  # last: scripts read the older columns by position
    assert {row[0]: int(row[-1]) for row in rows} == counts
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    row_schema = schema["components"]["schemas"]["TeamReportRow"]
    assert "slurm_step_accounting_jobs" in row_schema["required"]
    assert "Slurm's step-accounting average" in row_schema["properties"]["slurm_step_accounting_jobs"]["description"]


def test_a_low_slurm_average_is_not_counted_as_a_triaged_job_with_a_cause(client, operator, slurm_jobs):
    """The team page said 'The one triaged low-utilization job has a cause: none is unclassified.' of a
    team whose only low job was Slurm's 45 % average: triage could not judge it (no time series), so it
    has no cause; it is neither among the jobs with one nor among the unclassified."""
    from django.urls import reverse

    from fleet.models import Job
    from triage.dashboard import queries
    from triage.services import triage_job

    _, summarised = slurm_jobs
    assert triage_job(summarised).status == "insufficient_data"
    assert queries.unclassified_share(Job.objects.filter(pk=summarised.pk), 50.0) == (0, 0)
    client.force_login(operator)
    page = client.get(reverse("dashboard:team-detail", args=[summarised.team.slug]), SLURM_WEEK)
    assert page.context["triaged_low"] == 0 and "has a cause" not in page.content.decode()


@pytest.mark.django_db
def test_the_operator_digest_says_a_low_slurm_average_was_not_judged_rather_than_explained(team_a):
    """It said 'Every low-utilization job this week has a named cause.' of a week whose low jobs were a
    classified one and Slurm's 35 % average, which triage cannot judge (no time series)."""
    from datetime import UTC, datetime, timedelta

    from tests.factories import JobFactory
    from triage.digests import services
    from triage.models import JobTriage, RuleSet

    monday, rules = datetime(2026, 11, 16, tzinfo=UTC), RuleSet.current()
    sampled = JobFactory(team=team_a, start_time=monday + timedelta(days=1), mean_gpu_util=20)
    averaged = JobFactory(
        team=team_a, start_time=monday + timedelta(days=2), mean_gpu_util=35, util_source="slurm_steps"
    )
    JobTriage.objects.create(job=sampled, rule_set=rules, status="classified", is_current=True)
    JobTriage.objects.create(job=averaged, rule_set=rules, status="insufficient_data", is_current=True)
    _, text, html = services.render_triplet("operator-digest", services.build_context("operator", "2026-W47"))
    said = text.split("UNCLASSIFIED\n")[1].split("\n")[0].strip()
    assert said == (
        "Every low-utilization job the rules judged this week (1 of 2) has a named cause; the other 1 was not"
        " judged: a Slurm step-accounting average has no time series to find a cause in, and a job not triaged"
        " yet has no verdict."
    )
    assert "Every low-utilization job this week has a named cause" not in html
    assert said.replace("'", "&#x27;") in html


def test_beside_slurms_averages_a_job_without_a_figure_is_said_to_lack_one_too(client, operator, slurm_jobs):
    """'no GPU samples were supplied for it' was true of the Slurm average's job as well: the notice on
    the jobs without a figure says they have no Slurm average either, where the period has some."""
    from django.urls import reverse

    client.force_login(operator)
    page = _text(client.get(reverse("dashboard:overview"), SLURM_WEEK).content.decode())
    assert "no GPU samples were supplied for it, nor a Slurm step-accounting average, so the histogram" in page


def test_the_digests_name_the_unused_hours_of_jobs_too_thin_to_judge():
    """A Slurm average's unused GPU-hours (from the average) have no cause: triage cannot judge a job
    without a time series. The digests put them under 'other idle time (..., or in jobs not checked
    yet)', though the jobs were checked; they are named for what they are."""
    from triage.digests import services

    note = services.unattributed_note(30.0, [], {"insufficient_data": 20.0, "healthy": 4.0}, 50.0)
    assert note == (
        "Causes account for 0.0 of the 30.0 unused GPU-hours. The other 30.0 have no cause named: 4.0 in jobs"
        " above 50 % GPU utilization, which are not searched for causes; 20.0 in jobs with too little data for"
        " the rules to judge (Slurm step-accounting averages among them); 6.0 other idle time (more than a"
        " job's causes account for, or in jobs not checked yet)."
    )
