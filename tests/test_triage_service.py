"""Triage stored and shown: idempotent results, evidence that points into the stored artifacts, the
findings API, the job page, the rule-set editor with background re-triage, and the command."""

from __future__ import annotations

import json
from datetime import datetime
from io import StringIO

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.urls import reverse

from fleet import ingest
from fleet.models import Artifact, Job, Owner, Team
from tests.factories import JobFactory
from tests.reading import as_read
from triage import services
from triage.dashboard.queries import hours_text
from triage.models import Finding, JobTriage, RetriageRun, RuleSet
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(demo_archive, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        ingest.execute_run(ingest.create_run(demo_archive).pk)
    return json.loads(demo_archive.with_suffix(".truth.json").read_text())


def planted(truth, category: str) -> Job:
    job_id = next(j["job_id"] for j in truth["jobs"] if category in j["categories"])
    return Job.objects.get(external_id=job_id)


def test_ingest_triages_every_new_job_and_retriage_replaces_not_duplicates(demo):
    assert JobTriage.objects.count() == Job.objects.count() == len(demo["jobs"])
    job = planted(demo, "model_checkpointing")
    before = list(job.findings.values_list("category", "gpu_hours"))
    services.triage_job(job)
    services.triage_job(job)
    assert JobTriage.objects.filter(job=job).count() == 1
    assert list(job.findings.values_list("category", "gpu_hours")) == before
    assert ("model_checkpointing",) in [(c,) for c, _ in before]


def test_evidence_points_at_real_log_lines_script_lines_and_times_inside_the_job(demo):
    for category in ("model_checkpointing", "host_gpu_transfer", "lengthy_library_install"):
        job = planted(demo, category)
        finding = job.findings.get(category=category)
        texts = {
            a.path: default_storage.open(a.file.name).read().decode().split("\n")
            for a in job.artifacts.exclude(kind=Artifact.Kind.TRACE)
        }
        checked = 0
        for line in finding.evidence["log_lines"]:
            assert texts[line["path"]][line["line"] - 1].strip().startswith(line["text"][:60].strip()), line
            checked += 1
        for fact in finding.evidence["code"]:
            # the line itself, or a call over several lines quoted whole from it (cut at 200 characters, "…")
            first, quote = texts[fact["path"]][fact["line"] - 1].strip(), fact["code"].removesuffix("…")
            assert quote == first or quote.startswith(first) or first.startswith(quote), fact
            checked += 1
        assert checked, category
        for window in finding.evidence["windows"]:
            start = datetime.fromisoformat(window["start"].replace("Z", "+00:00"))
            end = datetime.fromisoformat(window["end"].replace("Z", "+00:00"))
            assert job.start_time <= start < end <= job.end_time
        assert finding.gpu_hours > 0 and finding.guidance["recoverable_gpu_hours"] == pytest.approx(
            finding.gpu_hours, abs=0.0005
        )


def test_loader_bound_guidance_uses_the_jobs_own_cpus_and_workers(demo):
    job = planted(demo, "data_preprocessing")
    finding = job.findings.get(category="data_preprocessing")
    numbers = finding.evidence["numbers"]
    assert numbers["cpu_util_training"] >= 85 and numbers["cpu_count"] == job.cpu_count
    guidance = finding.guidance
    assert f"{job.cpu_count} CPUs for {job.gpu_count} GPUs give " in guidance["change"]
    assert f"num_workers={guidance['settings']['suggested_workers']}" in guidance["after"]
    assert (
        "4.92x"
        in planted(demo, "improper_batch_size").findings.get(category="improper_batch_size").guidance["expected_effect"]
    )


def test_findings_api_lists_filters_and_details_jobs_scoped_to_the_team(demo, client, operator, researcher):
    client.force_login(operator)
    everything = client.get("/api/v1/jobs/").json()
    assert everything["count"] == len(demo["jobs"])
    job = planted(demo, "remote_data_reading")
    found = client.get("/api/v1/jobs/", {"category": "remote_data_reading"}).json()
    assert job.pk in [row["id"] for row in found["results"]]
    assert all("remote_data_reading" in row["categories"] for row in found["results"])
    low = client.get("/api/v1/jobs/", {"low_util": "true"}).json()
    assert all(row["mean_gpu_util"] <= 50 for row in low["results"]) and low["count"] < everything["count"]
    by_key = client.get("/api/v1/jobs/", {"cluster": job.cluster.name, "external_id": job.external_id}).json()
    assert [row["id"] for row in by_key["results"]] == [job.pk]
    in_range = client.get("/api/v1/jobs/", {"started_after": job.start_time.isoformat(), "team": job.team.slug}).json()
    assert job.pk in [row["id"] for row in in_range["results"]]

    detail = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert detail["triage"]["status"] == "classified" and detail["triage"]["rule_set_version"] == 1
    (finding,) = [f for f in detail["findings"] if f["category"] == "remote_data_reading"]
    assert finding["evidence"]["windows"] and finding["guidance"]["before"] and finding["dimension"] == "data"

    # A member sees their team's jobs only; another team's job is a 404.
    member = Owner.objects.create(user=researcher, team=Team.objects.exclude(pk=job.team_id).first()).user
    member.groups.clear()
    client.force_login(member)
    assert client.get(f"/api/v1/jobs/{job.pk}/").status_code == 404
    assert client.get("/api/v1/jobs/").json()["count"] == Job.objects.filter(team__owners__user=member).count()


def test_schema_documents_the_jobs_filters(client, operator):
    client.force_login(operator)
    schema = client.get("/api/v1/schema/", {"format": "json"}).content.decode()
    for name in ("low_util", "category", "started_after", "external_id"):
        assert name in schema


def test_job_page_shows_findings_with_evidence_and_fix(demo, client, member_a):
    job = planted(demo, "unreleased_job")
    job.team = Team.objects.get(slug="team-a")
    job.save()
    client.force_login(member_a)
    page = client.get(reverse("triage:job", args=[job.pk])).content.decode()
    assert "Unreleased job" in page and "GPU-hours" in page and "How to fix it" in page
    other = Job.objects.exclude(team__slug="team-a").first()
    assert client.get(reverse("triage:job", args=[other.pk])).status_code == 404


def test_operator_saves_a_threshold_and_every_job_is_retriaged_with_the_new_version(
    demo, client, operator, member_a, django_capture_on_commit_callbacks
):
    url = reverse("triage:rule-set")
    client.force_login(member_a)
    assert client.get(url).status_code == 404
    client.force_login(operator)
    page = client.get(url).content.decode()
    assert "install_min_s" in page and ">600.0<" in page  # the default is shown beside the value
    install_job = planted(demo, "lengthy_library_install")
    minutes = install_job.findings.get(category="lengthy_library_install").evidence["numbers"]["install_minutes"]

    form = dict(RuleSet.current().effective_thresholds().items())
    form["install_min_s"] = (minutes + 5) * 60  # longer than this job's install
    form["note"] = "installs under the new limit are fine"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, form)
    assert response.status_code == 302
    v2 = RuleSet.objects.get(version=2)
    run = RetriageRun.objects.get(rule_set=v2)
    assert (run.status, run.jobs_done, run.jobs_total) == ("done", Job.objects.count(), Job.objects.count())
    assert JobTriage.objects.filter(rule_set=v2).count() == Job.objects.count()
    current = install_job.triage_results.get(is_current=True)
    assert current.rule_set == v2
    assert not current.findings.filter(category="lengthy_library_install").exists()
    assert Finding.objects.filter(job=install_job, rule_set__version=1, category="lengthy_library_install").exists()
    progress = client.get(reverse("triage:retriage-progress", args=[run.pk])).json()
    assert progress["percent"] == 100
    assert "v2" in client.get(url).content.decode()


def test_triage_command_one_job_dry_run_and_a_given_version(demo):
    job = planted(demo, "api_misuse")
    out = StringIO()
    call_command("triage", "--job", f"{job.cluster.name}/{job.external_id}", "--dry-run", stdout=out)
    assert "api_misuse" in out.getvalue() and "would be" in out.getvalue()
    JobTriage.objects.filter(job=job).delete()
    call_command("triage", "--job", f"{job.cluster.name}/{job.external_id}", "--rule-set", "1", stdout=StringIO())
    assert job.findings.filter(category="api_misuse", rule_set__version=1).exists()
    out = StringIO()
    call_command("triage", "--all", stdout=out)
    assert f"({Job.objects.count()} jobs were triaged)" in out.getvalue()


def test_a_vanished_job_is_skipped_and_a_job_without_series_is_insufficient_data(db):
    job = JobFactory()
    assert services.triage_jobs([job.pk, 10**9]) == {"insufficient_data": 1}
    assert job.triage_results.get().reason == "no GPU utilization samples"


def test_the_sweep_triages_jobs_whose_triage_was_lost_and_only_those(
    demo, django_capture_on_commit_callbacks, settings
):
    """A triage task lost with the broker leaves jobs without a result; the beat's sweep queues them."""
    from datetime import timedelta

    from triage.tasks import sweep_untriaged_task

    lost = list(Job.objects.order_by("pk")[:5])
    before = {job.pk: sorted(job.findings.values_list("category", flat=True)) for job in lost}
    JobTriage.objects.filter(job__in=lost).delete()  # and their findings
    # Stored a moment ago: probably still queued, so a sweep that waits 15 minutes leaves them alone.
    assert services.sweep_untriaged(timedelta(minutes=15), limit=100) == 0
    with django_capture_on_commit_callbacks(execute=True):
        assert services.sweep_untriaged(timedelta(0), limit=3) == 3  # bounded per sweep
    assert JobTriage.objects.filter(job__in=lost).count() == 3
    settings.TRIAGE_SWEEP_MINUTES = 0
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_untriaged_task.apply().get() == {"queued": 2, "outdated": 0}
    assert {job.pk: sorted(job.findings.values_list("category", flat=True)) for job in lost} == before
    assert JobTriage.objects.count() == Job.objects.count()  # one result each, none twice
    assert services.sweep_untriaged(timedelta(0), limit=100) == 0


def test_a_job_with_a_repository_of_files_is_read_within_the_budget_and_says_what_it_left(
    db, settings, client, operator
):
    """A job that brought 40 scripts, a 3 MiB log and a trace: with room for 5 files and 2 MiB, triage
    reads the log (in part), then the script its command names, and notes the rest instead of loading
    every file of the job into the worker's memory."""
    from tests.conftest import store_artifact

    settings.TRIAGE_READ_FILES, settings.TRIAGE_READ_BYTES = 5, 2 * 2**20
    job = JobFactory(command="torchrun --nproc_per_node=8 src/zz_train.py --data s3://bucket/imagenet")
    store_artifact(job, "log", "stdout.log", b"epoch 1\n" * (3 * 2**20 // 8))
    for n in range(40):
        store_artifact(job, "script", f"src/m{n:02}.py", f"import torch\nx = {n}\n".encode())
    store_artifact(job, "script", "src/zz_train.py", b"import torch\nDATA = 's3://bucket/imagenet'\n")
    store_artifact(job, "trace", "trace.json", b"{}")
    opened = []
    real_read = services._read
    services._read = lambda name, limit=-1: opened.append(name) or real_read(name, limit)
    try:
        evidence = services.load_evidence(job, RuleSet.current().effective_thresholds())
    finally:
        services._read = real_read
    assert len(opened) == 1  # the 3 MiB log used up the 2 MiB: nothing else was opened
    assert evidence.notes[-1].startswith("triage read 1 of the job's 43 files, the last of them in part")

    settings.TRIAGE_READ_BYTES = 16 * 2**20
    evidence = services.load_evidence(job, RuleSet.current().effective_thresholds())
    assert evidence.scripts.python_files == 4  # zz_train.py, the one the command names, then m00–m02
    assert any(fact.path == "src/zz_train.py" for fact in evidence.scripts.facts)
    assert "triage read 5 of the job's 43 files (at most 5 files and 16 MiB)" in evidence.notes[-1]

    services.triage_job(job)
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "Note: triage read 5 of the job&#x27;s 43 files" in page


def test_a_healthy_jobs_page_says_why_no_causes_were_sought(demo, client, operator):
    """A healthy job's "Why the GPUs idled" showed only "Healthy · mean GPU util 78.4 %", though its
    GPUs still left GPU-hours unused: the page now says where the line is and that those still count."""
    result = JobTriage.objects.filter(is_current=True, status="healthy", job__unused_gpu_hours__gt=0).first()
    client.force_login(operator)
    page = as_read(client.get(reverse("dashboard:job-detail", args=[result.job_id])).content.decode())
    unused = hours_text(result.job.unused_gpu_hours)  # "2.1": to the tenth, as the jobs list
    assert "Above the 50 % mean utilization below which the rules look for causes" in page
    assert f"its {unused} unused GPU-hours still count in its team's waste" in page


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"low_util_threshold": 150}, "low_util_threshold", "less than or equal to 100"),
        ({"min_coverage": 2}, "min_coverage", "less than or equal to 1"),
        ({"min_samples": 2.5}, "min_samples", "Enter a whole number"),
        ({"min_samples": 10**20}, "min_samples", "less than or equal to 1000000"),
        ({"idle_util": 60}, "idle_util", "keep it under low_util_threshold (50 %)"),
    ],
)
def test_a_threshold_its_unit_cannot_hold_is_refused_before_anything_is_retriaged(client, operator, changes, field,
                                                                                   message):  # fmt: skip
    """150 %, a share of 2 or 2.5 samples were saved as a new version and every job re-triaged."""
    url = reverse("triage:rule-set")
    client.force_login(operator)
    form = dict(RuleSet.current().effective_thresholds()) | changes
    response = client.post(url, form)
    assert response.status_code == 200 and RuleSet.objects.count() == 1 and not RetriageRun.objects.exists()
    assert message in " ".join(response.context["form"].errors[field])
    assert message.split(" (")[0] in response.content.decode()


def test_whole_number_thresholds_show_as_whole_numbers(client, operator):
    client.force_login(operator)
    page = client.get(reverse("triage:rule-set")).content.decode()
    assert 'name="min_samples" value="5"' in page  # not "5.0"


def test_triaging_many_jobs_reads_their_clusters_prices_once_a_batch_not_once_a_job(demo):
    """Findings are priced at their job's GPU-hour price (fleet.money.cost_of): looked up job by job, a
    retriage of the fleet asked the database for the cluster's prices once per job."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from fleet.models import Cluster, GpuModelPrice

    for cluster in Cluster.objects.all():
        GpuModelPrice.objects.get_or_create(cluster=cluster, gpu_model="", defaults={"price_per_gpu_hour": "2.00"})
    ids = list(Job.objects.values_list("pk", flat=True))
    assert len(ids) > 20
    with CaptureQueriesContext(connection) as queries:
        services.triage_jobs(ids)
    price_queries = [q for q in queries.captured_queries if "gpumodelprice" in q["sql"].lower()]
    assert len(price_queries) <= -(-len(ids) // 100), len(price_queries)  # one per chunk of 100 jobs
    priced = Finding.objects.filter(job__cost__isnull=False).exclude(cost=None)
    assert priced.exists()


def test_a_job_reading_s3_through_a_loader_without_workers_has_its_waste_counted_once_remote_reads_first(
    tmp_path, client, operator, django_capture_on_commit_callbacks
):
    """The job reads its shards from S3 through a DataLoader with num_workers=0: the remote reads and the loader
    without workers are one wait. Both causes are found (the study counts every issue of a job), the remote reads are
    the one to fix first (the loader said so, by the alphabet, when they tied), and the dashboard's and digests'
    waste by cause add up to the job's unused GPU-hours, not twice them."""
    from pathlib import Path

    from tests.conftest import write_zip
    from triage.dashboard import queries
    from triage.digests import findings

    script = (Path(__file__).parent / "triage_cases" / "remote_no_workers_train.py").read_text()
    metrics = "job_id,timestamp,host,gpu,gpu_util,gpu_mem_used_mib,gpu_mem_total_mib\n" + "".join(
        f"r1,2026-11-02T{10 + minute // 60:02d}:{minute % 60:02d}:00Z,n1,0,30,48000,80000\n" for minute in range(120)
    )
    archive = write_zip(
        tmp_path / "remote.zip",
        {
            "manifest.json": json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"}),
            "jobs.csv": "job_id,user,team,gpu_count,cpu_count,start_time,end_time,command\n"
            "r1,ann,vision,1,16,2026-11-02T10:00:00Z,2026-11-02T12:00:00Z,python train.py\n",
            "metrics.csv": metrics,
            "scripts/r1/train.py": script,
        },
    )
    with django_capture_on_commit_callbacks(execute=True):
        ingest.execute_run(ingest.create_run(archive).pk)
    job = Job.objects.get(external_id="r1")
    found = {f.category: f for f in job.findings.all()}
    assert set(found) == {"remote_data_reading", "data_preprocessing"}
    assert found["remote_data_reading"].gpu_hours > found["data_preprocessing"].gpu_hours

    client.force_login(operator)
    page = client.get(reverse("triage:job", args=[job.pk])).content.decode()
    lead = page.split('id="finding-remote_data_reading"')[1].split('class="finding"')[0]
    assert "Fix this first" in lead and page.count("Fix this first") == 1
    assert "so this is the remote reads&#x27; wait, not one of its own" in page

    jobs = Job.objects.filter(pk=job.pk)
    by_category = queries.by_category(jobs)
    assert sum(row["hours"] for row in by_category) == pytest.approx(job.unused_gpu_hours, abs=1e-3)
    assert sum(row.gpu_hours for row in findings.waste_by_category(jobs)) == pytest.approx(
        job.unused_gpu_hours, abs=1e-3
    )
    (top,), _ = findings.top_jobs(jobs, limit=5)
    assert top.recoverable_gpu_hours == pytest.approx(job.unused_gpu_hours, abs=1e-3)
    assert top.categories[0] == Category.REMOTE_DATA_READING


def _as_before_the_upgrade(job: Job, day: int) -> None:
    """The job's current result as an older release left it: its rules revision before today's, its
    findings in the old rules' words, triaged on 2026-11-<day>."""
    from datetime import UTC

    result = job.triage_results.get(is_current=True)
    result.findings.update(summary="what the old rules said")
    JobTriage.objects.filter(pk=result.pk).update(rules_revision=0, triaged_at=datetime(2026, 11, day, tzinfo=UTC))


@pytest.fixture
def no_catchup_mark():
    """The sweep's mark of the batch it queued lives in the cache, which is Redis when REDIS_URL is set and
    outlives a test run: a mark left by an earlier run names job ids this run's fresh database reuses."""
    from django.core.cache import cache

    cache.delete(services.CATCHUP_KEY)
    yield
    cache.delete(services.CATCHUP_KEY)


def test_the_sweep_retriages_results_of_an_older_rules_revision_oldest_first_and_leaves_current_ones(
    demo, django_capture_on_commit_callbacks, settings, operator, client, no_catchup_mark
):
    """After an upgrade whose rules conclude or say something else, the jobs triaged before it follow the
    deployed rules without anyone running `triage --all`: beat's sweep re-triages them in batches, oldest
    first; a job triaged by the current rules is left as it is, and human labels are never touched."""
    from triage.labeling.models import Assignment, Label, Study, StudyJob
    from triage.rules import RULES_REVISION
    from triage.tasks import sweep_untriaged_task

    jobs = list(Job.objects.filter(findings__isnull=False).distinct().order_by("pk")[:4])
    fresh = {job.pk: sorted(job.findings.values_list("category", "summary")) for job in jobs}
    assert {job.triage_results.get().rules_revision for job in jobs} == {RULES_REVISION}
    older, current = jobs[:3], jobs[3]
    for day, job in zip((5, 6, 1), older, strict=True):  # the third was triaged first
        _as_before_the_upgrade(job, day)
    current.findings.update(summary="left as the current rules stored it")
    current_result = current.triage_results.get()
    study = Study.objects.create(name="causes", created_by=operator, seed=1)
    item = StudyJob.objects.create(study=study, job=older[0], position=1)
    label = Label.objects.create(
        assignment=Assignment.objects.create(item=item, rater=operator), option="data_preprocessing", rationale="mine"
    )

    client.force_login(operator)
    page = client.get(reverse("triage:rule-set")).content.decode()
    assert "3 jobs still carry findings from an older release" in page
    assert "1,000 at a time" in page  # TRIAGE_RULES_CATCHUP_BATCH, with the separator counts have elsewhere

    def summaries(job):
        return sorted(job.findings.values_list("category", "summary"))

    with django_capture_on_commit_callbacks(execute=True):
        assert services.sweep_outdated(limit=1) == 1
    assert summaries(older[2]) == fresh[older[2].pk]  # oldest first
    assert older[2].triage_results.get().rules_revision == RULES_REVISION
    assert {summary for job in older[:2] for _, summary in summaries(job)} == {"what the old rules said"}

    # A batch still queued (its task not run yet) is not queued again by the next sweep.
    with django_capture_on_commit_callbacks() as queued:
        assert services.sweep_outdated(limit=1) == 1
    assert services.sweep_outdated(limit=1) == 0
    assert summaries(older[0]) != fresh[older[0].pk]
    for callback in queued:  # the worker reaches it
        callback()
    assert summaries(older[0]) == fresh[older[0].pk]

    settings.TRIAGE_RULES_CATCHUP_BATCH = 10
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_untriaged_task.apply().get() == {"queued": 0, "outdated": 1}
    for job in older:
        assert summaries(job) == fresh[job.pk]
        assert job.triage_results.get().rules_revision == RULES_REVISION
    # No churn: the job the current rules triaged kept its result, and nothing is left to catch up.
    kept = "left as the current rules stored it"
    assert summaries(current) == [(category, kept) for category, _ in fresh[current.pk]]
    assert current.triage_results.get().triaged_at == current_result.triaged_at
    assert services.sweep_outdated(limit=100) == 0
    assert JobTriage.objects.count() == Job.objects.count()
    assert Label.objects.get(pk=label.pk).rationale == "mine"
    assert "from an older release" not in client.get(reverse("triage:rule-set")).content.decode()
    detail = client.get(f"/api/v1/jobs/{older[0].pk}/").json()
    assert detail["triage"]["rules_revision"] == RULES_REVISION


def test_the_rules_pages_retriage_progress_writes_its_counts_with_the_thousands_separator(client, operator):
    """'1,000 of 4,000 jobs', as the page's other counts (intcomma) and as retriage.js writes it live."""
    RetriageRun.objects.create(
        rule_set=RuleSet.current(), status=RetriageRun.Status.RUNNING, jobs_total=4000, jobs_done=1000
    )
    client.force_login(operator)
    page = client.get(reverse("triage:rule-set")).content.decode()
    assert "1,000 of 4,000 jobs · Running" in page
