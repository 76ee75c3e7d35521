"""The archive importer as a user meets it: `manage.py ingest_archive`, the run it records, the jobs it stores."""

from __future__ import annotations

import dataclasses
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.forms.models import model_to_dict

from fleet import ingest
from fleet.archive.parser import parse_archive
from fleet.models import Artifact, Cluster, GpuModelPrice, IngestRun, Job, LogEvent, Team
from tests.conftest import EXAMPLE_ARCHIVE, write_zip

pytestmark = pytest.mark.django_db

MANIFEST = json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1", "created_at": "2026-11-20T00:00:00Z"})
JOBS = (
    "job_id,user,team,gpu_count,start_time,end_time,name\n"
    "j1,ann,vision,2,2026-11-02T10:00:00Z,2026-11-02T11:00:00Z,resnet\n"
    "j2,bob,nlp,1,2026-11-02T10:00:00Z,2026-11-02T12:00:00Z,bert\n"
    "j3,cat,nlp,1,2026-11-03T00:00:00Z,2026-11-03T01:00:00Z,gpt\n"
)


def metrics_rows(job_id: str, start: str, minutes: int, util: float, gpus: int = 1) -> str:
    from datetime import datetime, timedelta

    t0 = datetime.fromisoformat(start.replace("Z", "+00:00"))
    rows = []
    for m in range(0, minutes * 60, 30):
        for gpu in range(gpus):
            ts = (t0 + timedelta(seconds=m)).strftime("%Y-%m-%dT%H:%M:%SZ")
            rows.append(f"{job_id},{ts},node1,{gpu},{util},20000,81920")
    return "\n".join(rows) + "\n"


HEADER = "job_id,timestamp,host,gpu,gpu_util,gpu_mem_used_mib,gpu_mem_total_mib\n"


def good_members() -> dict[str, str]:
    return {
        "manifest.json": MANIFEST,
        "jobs.csv": JOBS,
        "metrics.csv": HEADER
        + metrics_rows("j1", "2026-11-02T10:00:00Z", 60, 40.0, gpus=2)
        + metrics_rows("j2", "2026-11-02T10:00:00Z", 120, 90.0)
        + metrics_rows("j3", "2026-11-03T00:00:00Z", 60, 2.0),
        "logs/j1/stdout.log": (
            "2026-11-02 10:00:05,000 INFO Epoch 1/3\n2026-11-02 10:20:00,000 INFO Saving model checkpoint to /ckpt\n"
        ),
        "scripts/j1/train.py": "import torch\n",
    }


def run_command(path, *options: str) -> tuple[int, str, str]:
    """`manage.py ingest_archive PATH [options]` in-process: (exit code, stdout, stderr)."""
    from io import StringIO

    out, err = StringIO(), StringIO()
    try:
        call_command("ingest_archive", str(path), *options, stdout=out, stderr=err)
        code = 0
    except CommandError as exc:
        code = exc.returncode
        err.write(str(exc))
    return code, out.getvalue(), err.getvalue()


def snapshot() -> dict:
    """Every stored row of the canonical tables, for comparing imports."""
    return {
        model.__name__: sorted(
            (json.dumps(model_to_dict(obj), sort_keys=True, default=str), str(getattr(obj, "updated_at", "")))
            for obj in model.objects.all()
        )
        for model in (Team, Cluster, Job, Artifact, LogEvent)
    }


def test_example_archive_imports_every_job_with_summaries():
    parsed = parse_archive(EXAMPLE_ARCHIVE)
    code, out, err = run_command(EXAMPLE_ARCHIVE)
    assert code == 0, err
    run = IngestRun.objects.get()
    assert f"Ingest run {run.pk}" in out
    assert run.status == IngestRun.Status.SUCCEEDED
    assert Job.objects.count() == len(parsed.jobs) > 0
    for job in Job.objects.all():
        assert job.gpu_hours == pytest.approx(job.gpu_count * job.wall_hours)
        if job.external_id in parsed.series:
            assert job.mean_gpu_util is not None
            assert job.series_file.name.startswith("series/")
            assert 0 < job.coverage <= 1


def test_summary_columns_follow_the_series(tmp_path):
    code, _, err = run_command(write_zip(tmp_path / "a.zip", good_members()))
    assert code == 0, err
    j1 = Job.objects.get(external_id="j1")
    assert j1.mean_gpu_util == pytest.approx(40.0)
    assert j1.gpu_hours == pytest.approx(2.0)
    assert j1.unused_gpu_hours == pytest.approx(2.0 * 0.6, rel=0.02)
    assert j1.idle_gpu_hours == pytest.approx(0.0)
    assert j1.peak_gpu_mem_util == pytest.approx(100 * 20000 / 81920, rel=1e-3)
    j3 = Job.objects.get(external_id="j3")
    assert j3.idle_gpu_hours == pytest.approx(1.0, rel=0.02)
    assert {e.kind for e in LogEvent.objects.filter(job=j1)} >= {"epoch", "checkpoint_save"}
    assert set(j1.artifacts.values_list("kind", "path")) == {("log", "stdout.log"), ("script", "train.py")}
    assert Team.objects.filter(slug="nlp").exists()


def test_log_events_are_stored_as_the_log_reads(tmp_path):
    """Every event of an imported log, read back from the database: kind, line, text, and its time
    as an aware UTC instant (a line with an offset converted; a line without a time keeps none)."""
    from datetime import UTC, datetime

    from fleet.logevents import extract_log_events

    log = (
        "2026-11-02 10:00:05,250 INFO Epoch 1/3\n"
        "plain line\n"
        "2026-11-02T12:20:00+02:00 Saving model checkpoint to /ckpt\n"
        "pip install torch==2.3 'quoted' <b>text</b>\n"
        # A time UTC cannot say (before year 1 once the offset is taken off): the event, without a
        # time; it once failed the whole import with an OverflowError.
        "0001-01-01 00:00:00+05:00 Epoch 2/3\n"
    )
    members = good_members() | {"logs/j1/stdout.log": log}
    code, _, err = run_command(write_zip(tmp_path / "a.zip", members))
    assert code == 0, err
    stored = [
        (e.kind, e.line_no, e.timestamp, e.text, e.artifact.path)
        for e in LogEvent.objects.filter(job__external_id="j1").select_related("artifact").order_by("line_no", "kind")
    ]
    expected = sorted((e.kind, e.line_no, e.timestamp, e.text, "stdout.log") for e in extract_log_events(log))
    assert stored == sorted(expected, key=lambda e: (e[1], e[0]))
    assert [(kind, line, moment) for kind, line, moment, *_ in stored] == [
        ("epoch", 1, datetime(2026, 11, 2, 10, 0, 5, 250000, tzinfo=UTC)),
        ("checkpoint_save", 3, datetime(2026, 11, 2, 10, 20, tzinfo=UTC)),
        ("install", 4, None),
        ("epoch", 5, None),
    ]
    assert all(event.job_id == event.artifact.job_id for event in LogEvent.objects.select_related("artifact"))
    # Stored as the database compares times (the job page selects the events of a time window).
    epoch_time = datetime(2026, 11, 2, 10, 0, 5, 250000, tzinfo=UTC)
    assert list(LogEvent.objects.filter(timestamp=epoch_time).values_list("kind", flat=True)) == ["epoch"]
    window = (epoch_time, datetime(2026, 11, 2, 10, 20, tzinfo=UTC))
    assert LogEvent.objects.filter(timestamp__range=window).count() == 2


def test_glog_lines_are_stored_with_the_year_of_the_jobs_start(tmp_path):
    """A JAX/absl log ("I1102 10:20:00.000000 140 checkpoint_manager.py:1041] ...") has no year: its events
    had no time on the job page's Log events table; the job's start (2026-11-02) gives it."""
    from datetime import UTC, datetime

    log = "I1102 10:20:00.500000  140 checkpoint_manager.py:1041] [process=0] Saving checkpoint at step 500.\n"
    code, _, err = run_command(write_zip(tmp_path / "a.zip", good_members() | {"logs/j1/stdout.log": log}))
    assert code == 0, err
    (event,) = LogEvent.objects.filter(job__external_id="j1")
    assert (event.kind, event.timestamp) == ("checkpoint_save", datetime(2026, 11, 2, 10, 20, 0, 500000, tzinfo=UTC))


def test_triage_rescan_logs_replaces_the_events_an_older_extractor_stored(tmp_path):
    """The Log events table is computed at import: a job imported before the extractor learned a format
    kept its old events (here: none had a time, one was not found) until re-imported. `triage
    --rescan-logs` finds them again from the stored log; a log missing from storage keeps its events."""
    from io import StringIO

    from django.core.files.storage import default_storage

    code, _, err = run_command(write_zip(tmp_path / "a.zip", good_members()))
    assert code == 0, err
    fresh = sorted(LogEvent.objects.filter(job__external_id="j1").values_list("kind", "line_no", "timestamp", "text"))
    assert len(fresh) == 2
    LogEvent.objects.filter(job__external_id="j1", kind="epoch").delete()  # as an older extractor left them
    LogEvent.objects.filter(job__external_id="j1").update(timestamp=None)
    out = StringIO()
    call_command("triage", "--job", "c1/j1", "--rescan-logs", stdout=out)
    assert "Log events found again for 1 jobs." in out.getvalue()
    again = sorted(LogEvent.objects.filter(job__external_id="j1").values_list("kind", "line_no", "timestamp", "text"))
    assert again == fresh
    log = Artifact.objects.get(job__external_id="j1", kind="log")
    default_storage.delete(log.file.name)
    LogEvent.objects.filter(job__external_id="j1").update(timestamp=None)
    out = StringIO()
    # In the command whatever REDIS_URL says (CI sets it): with a broker --all queues the work instead.
    call_command("triage", "--all", "--rescan-logs", "--in-process", stdout=out)
    assert "1 kept theirs (a log missing from storage)" in out.getvalue()
    assert LogEvent.objects.filter(job__external_id="j1").count() == 2
    with pytest.raises(CommandError, match="cannot be a dry run"):
        call_command("triage", "--all", "--rescan-logs", "--dry-run", stdout=StringIO())


def test_triage_all_rescan_logs_fans_out_to_the_workers_when_a_broker_is_configured(tmp_path, monkeypatch, settings):
    """With a broker, `triage --all --rescan-logs` ran every job in the command, one at a time; it queues
    them in batches as a new rule set's re-triage does, with its progress, and the tasks can run twice."""
    from io import StringIO

    from fleet.tasking import QueueUnreachable
    from triage import services
    from triage.models import RetriageRun
    from triage.tasks import rescan_and_triage_task

    code, _, err = run_command(write_zip(tmp_path / "a.zip", good_members()))
    assert code == 0, err
    fresh = sorted(LogEvent.objects.values_list("job_id", "kind", "line_no", "timestamp"))
    LogEvent.objects.update(timestamp=None)  # as an older extractor left them
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr(services, "RETRIAGE_BATCH", 1)
    queued = []
    monkeypatch.setattr(
        "triage.management.commands.triage.publish", lambda task, args, **kw: queued.append((task, args))
    )
    out = StringIO()
    call_command("triage", "--all", "--rescan-logs", stdout=out)
    jobs = Job.objects.count()
    run = RetriageRun.objects.get()
    assert (run.jobs_total, run.jobs_done, run.status) == (jobs, 0, RetriageRun.Status.RUNNING)
    assert [task for task, _ in queued] == [rescan_and_triage_task] * jobs  # one job per batch here
    assert f"Queued the log rescan and triage of {jobs} jobs with rule set v1 in {jobs} tasks" in out.getvalue()
    assert "/rules/" in out.getvalue()
    assert LogEvent.objects.filter(timestamp__isnull=False).count() == 0  # nothing done in the command
    for _, args in queued + queued[:1]:  # the workers; the first batch delivered twice
        rescan_and_triage_task(*args)
    assert sorted(LogEvent.objects.values_list("job_id", "kind", "line_no", "timestamp")) == fresh
    run.refresh_from_db()
    assert run.status == RetriageRun.Status.DONE
    # --in-process keeps it in the command; a queue that cannot be reached fails the run and says so.
    out = StringIO()
    call_command("triage", "--all", "--rescan-logs", "--in-process", stdout=out)
    assert f"Log events found again for {jobs} jobs." in out.getvalue()

    def unreachable(task, args, **kw):
        raise QueueUnreachable("The task queue (Redis at localhost:6379, REDIS_URL) could not be reached, so ...")

    monkeypatch.setattr("triage.management.commands.triage.publish", unreachable)
    with pytest.raises(CommandError, match="could not be reached"):
        call_command("triage", "--all", "--rescan-logs", stdout=StringIO())
    assert RetriageRun.objects.order_by("-pk").first().status == RetriageRun.Status.FAILED


def test_a_batch_of_jobs_ends_once_its_artifacts_are_large(tmp_path, monkeypatch, settings):
    """Jobs are stored INGEST_STORE_BATCH to a transaction, or fewer once their artifacts reach
    STORE_BATCH_BYTES (large logs): the progress moves after each such batch."""
    members = good_members() | {f"logs/{job}/stdout.log": f"{job} Epoch 1\n" * 50 for job in ("j2", "j3")}
    archive = write_zip(tmp_path / "a.zip", members)

    def progress_steps() -> list[int]:
        run = ingest.create_run(archive)
        seen: list[int] = []
        ingest.execute_run(run.pk, on_progress=lambda current: seen.append(current.jobs_done))
        return sorted({done for done in seen if done})

    assert progress_steps() == [3]  # three small jobs: one batch
    Job.objects.all().delete()
    settings.INGEST_STORE_BATCH = 2
    assert progress_steps() == [2, 3]
    Job.objects.all().delete()
    settings.INGEST_STORE_BATCH = 100
    monkeypatch.setattr(ingest, "STORE_BATCH_BYTES", 100)  # each job's artifacts are over 100 bytes
    assert progress_steps() == [1, 2, 3]
    assert Job.objects.count() == 3 and LogEvent.objects.filter(job__external_id="j3").count() == 1


def test_importing_the_same_archive_twice_changes_nothing(tmp_path):
    archive = write_zip(tmp_path / "a.zip", good_members())
    assert run_command(archive)[0] == 0
    before = snapshot()
    code, out, _ = run_command(archive)
    assert code == 0
    assert snapshot() == before
    assert "0 created, 0 updated, 3 unchanged" in out


def test_a_new_blob_encoding_leaves_unchanged_jobs_unchanged(tmp_path, monkeypatch):
    """A fingerprint hashes what a job holds, not how its blob is encoded: after an upgrade that
    encodes series differently (another compression, a newer pyarrow), re-importing an archive
    still finds its jobs unchanged and leaves their rows and blobs alone."""
    from fleet import series as series_lib

    archive = write_zip(tmp_path / "a.zip", good_members())
    assert run_command(archive)[0] == 0
    before = snapshot()
    monkeypatch.setattr(series_lib, "PARQUET_OPTIONS", {**series_lib.PARQUET_OPTIONS, "compression": "snappy"})
    code, out, _ = run_command(archive)
    assert code == 0 and "0 created, 0 updated, 3 unchanged" in out
    assert snapshot() == before
    # A changed job is encoded the new way; the unchanged ones keep their blobs.
    members = good_members()
    members["metrics.csv"] = members["metrics.csv"].replace(",2.0,", ",3.0,")  # j3's utilization
    code, out, _ = run_command(write_zip(tmp_path / "b.zip", members))
    assert code == 0 and "0 created, 1 updated, 2 unchanged" in out
    assert Job.objects.get(external_id="j3").mean_gpu_util == pytest.approx(3.0)


def test_a_job_imported_again_beside_other_jobs_is_unchanged(tmp_path):
    """The same job in another archive, among other jobs (its series read back at another place in
    another batch), is recognised as the same."""
    assert run_command(write_zip(tmp_path / "a.zip", good_members()))[0] == 0
    members = good_members()
    members["jobs.csv"] = JOBS.replace("j3,cat", "j0,cat")  # j3 gone, j0 new and sorted first
    members["metrics.csv"] = (
        HEADER
        + metrics_rows("j0", "2026-11-03T00:00:00Z", 60, 7.0)
        + "".join(
            members["metrics.csv"].splitlines(keepends=True)[1:][::-1]  # every row in reverse order
        ).replace("j3,", "j0,")
    )
    code, out, err = run_command(write_zip(tmp_path / "b.zip", members))
    assert code == 0, err
    assert "1 created, 0 updated, 2 unchanged" in out


def test_a_changed_job_is_updated_not_duplicated(tmp_path):
    assert run_command(write_zip(tmp_path / "a.zip", good_members()))[0] == 0
    first_pk = Job.objects.get(external_id="j2").pk
    members = good_members()
    members["jobs.csv"] = JOBS.replace("bert", "bert-large")
    members["logs/j1/stdout.log"] += "2026-11-02 10:50:00,000 INFO Training finished\n"
    code, out, _ = run_command(write_zip(tmp_path / "b.zip", members))
    assert code == 0
    assert "0 created, 2 updated, 1 unchanged" in out
    assert Job.objects.count() == 3
    job = Job.objects.get(external_id="j2")
    assert (job.pk, job.name) == (first_pk, "bert-large")
    assert LogEvent.objects.filter(job__external_id="j1", kind="training_finished").count() == 1
    assert Artifact.objects.filter(job__external_id="j1").count() == 2


def test_a_job_changed_by_another_import_after_it_was_looked_up_gets_its_blobs(tmp_path, monkeypatch):
    """A job that looked unchanged when its batch began (so its blobs were not written) but is
    found changed once its row is locked — another import stored another version meanwhile — is
    stored whole: its series blob is written then, not left unnamed."""
    from django.core.files.storage import default_storage

    parsed = parse_archive(write_zip(tmp_path / "a.zip", good_members()))
    cluster = Cluster.objects.create(name="c1")
    team = Team.objects.create(slug="vision", name="vision")
    run = ingest.create_run(tmp_path / "a.zip")
    first = parsed.jobs["j1"]
    ingest.store_jobs(run, [ingest.JobToStore(cluster, team, first, parsed.series["j3"], [])])
    decisions = []
    real_outcome = ingest.outcome

    def outcome_seen_too_early(existing, fp, team_id):
        decisions.append(real_outcome(existing, fp, team_id))
        return "unchanged" if len(decisions) == 1 else decisions[-1]  # the look-up before the lock

    monkeypatch.setattr(ingest, "outcome", outcome_seen_too_early)
    [(decided, job)] = ingest.store_jobs(run, [ingest.JobToStore(cluster, team, first, parsed.series["j1"], [])])
    assert decisions == ["updated", "updated"] and decided == "updated"
    job.refresh_from_db()
    assert job.series_file.name and default_storage.exists(job.series_file.name)
    assert job.mean_gpu_util == pytest.approx(40.0)


def test_a_batch_naming_the_same_job_twice_stores_it_once_last_version_winning(tmp_path):
    """Jobs are stored in batches with bulk inserts; a batch that names a job twice (a connector
    page repeating a job) must update it, not fail on the unique key or store it twice."""
    parsed = parse_archive(write_zip(tmp_path / "a.zip", good_members()))
    cluster = Cluster.objects.create(name="c1")
    team = Team.objects.create(slug="vision", name="vision")
    run = ingest.create_run(tmp_path / "a.zip")
    first = parsed.jobs["j1"]
    renamed = dataclasses.replace(first, name="resnet-v2")
    items = [
        ingest.JobToStore(cluster, team, first, parsed.series["j1"], []),
        ingest.JobToStore(cluster, team, renamed, parsed.series["j1"], []),
        ingest.JobToStore(cluster, team, first, parsed.series["j1"], []),
    ]
    outcomes = [outcome for outcome, _ in ingest.store_jobs(run, items)]
    assert outcomes == ["created", "updated", "updated"]
    assert list(Job.objects.values_list("external_id", "name")) == [("j1", "resnet")]


def test_costs_use_the_cluster_price_and_follow_price_changes(tmp_path):
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="2.00", currency="EUR")
    assert run_command(write_zip(tmp_path / "a.zip", good_members()))[0] == 0
    j1 = Job.objects.get(external_id="j1")
    assert (str(j1.cost), j1.currency) == ("4.00", "EUR")
    GpuModelPrice.objects.filter(cluster=cluster).update(price_per_gpu_hour="3.00")
    GpuModelPrice.objects.get(cluster=cluster).save()  # the save is what reprices
    j1.refresh_from_db()
    assert str(j1.cost) == "6.00"


def test_a_job_on_mig_slices_is_billed_for_its_share_of_the_gpus(tmp_path):
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="7.00", currency="USD")
    jobs = JOBS.replace(
        "job_id,user,team,gpu_count,start_time,end_time,name",
        "job_id,user,team,gpu_count,start_time,end_time,name,gpu_share,gpu_unit",
    )
    jobs = (
        jobs.replace(",resnet\n", ",resnet,1/7,MIG 1g.10gb slice\n")
        .replace(",bert\n", ",bert,,\n")
        .replace(",gpt\n", ",gpt,,\n")
    )
    assert run_command(write_zip(tmp_path / "a.zip", {**good_members(), "jobs.csv": jobs}))[0] == 0
    j1, j2 = Job.objects.get(external_id="j1"), Job.objects.get(external_id="j2")
    # two 1g.10gb slices for an hour: 2/7 of a GPU-hour, at 7.00 a GPU-hour
    assert (j1.gpu_share, j1.gpu_unit, j1.gpu_hours) == (
        pytest.approx(1 / 7),
        "MIG 1g.10gb slice",
        pytest.approx(2 / 7),
    )
    assert str(j1.cost) == "2.00"
    assert j1.unused_gpu_hours == pytest.approx(2 / 7 * 0.6, rel=0.02)  # 40 % busy
    assert (j2.gpu_share, j2.gpu_unit, j2.gpu_hours) == (1.0, "", pytest.approx(2.0))


@pytest.mark.parametrize(
    ("change", "file", "field", "row"),
    [
        (
            {"jobs.csv": JOBS.replace("2026-11-02T10:00:00Z,2026-11-02T12:00:00Z", "yesterday,2026-11-02T12:00:00Z")},
            "jobs.csv",
            "start_time",
            2,
        ),
        ({"jobs.csv": JOBS.replace("j3,cat,nlp,1,", "j3,cat,nlp,one,")}, "jobs.csv", "gpu_count", 3),
    ],
)
def test_a_bad_job_row_is_rejected_by_file_row_and_field_and_the_rest_land(tmp_path, change, file, field, row):
    members = {**good_members(), **change}
    code, _, err = run_command(write_zip(tmp_path / "bad.zip", members))
    assert code == 1
    run = IngestRun.objects.get()
    assert run.status == IngestRun.Status.PARTIAL
    assert run.jobs_rejected == 1
    error = next(e for e in run.errors if e["field"] == field)
    assert (error["file"], error["row"]) == (file, row)
    assert file in err and field in err
    assert Job.objects.count() == 2


@pytest.mark.parametrize("jobs_file", ["jobs.csv", "jobs.jsonl"])
def test_a_job_type_in_any_letter_case_is_imported_as_its_lower_case_value(tmp_path, jobs_file):
    """Exports write "Interactive" and "BATCH": the jobs land as interactive and batch; an unknown
    type is still that row's error by file, row and field, and the other jobs land."""
    types = {"j1": "Interactive", "j2": "BATCH", "j3": "Cron"}
    lines = [line.split(",") for line in JOBS.splitlines()]
    header, rows = [*lines[0], "job_type"], [[*row, types[row[0]]] for row in lines[1:]]
    if jobs_file == "jobs.csv":
        text = "".join(",".join(row) + "\n" for row in [header, *rows])
    else:
        text = "".join(json.dumps(dict(zip(header, row, strict=True))) + "\n" for row in rows)
    members = {**good_members(), "jobs.csv": None, jobs_file: text}
    code, _, err = run_command(write_zip(tmp_path / "types.zip", {k: v for k, v in members.items() if v is not None}))
    assert code == 1
    assert dict(Job.objects.values_list("external_id", "job_type")) == {"j1": "interactive", "j2": "batch"}
    (error,) = IngestRun.objects.get().errors
    assert (error["file"], error["row"], error["field"], error["job_id"]) == (jobs_file, 3, "job_type", "j3")
    assert error["message"] == "must be one of batch, interactive (got 'Cron')"
    assert f"{jobs_file}, row 3, field 'job_type'" in err


def test_unparseable_metric_timestamp_rejects_only_that_job(tmp_path):
    members = good_members()
    members["metrics.csv"] = members["metrics.csv"].replace("2026-11-03T00:10:00Z", "not-a-time", 1)
    code, _, err = run_command(write_zip(tmp_path / "bad.zip", members))
    assert code == 1
    run = IngestRun.objects.get()
    error = next(e for e in run.errors if e["field"] == "timestamp")
    assert error["file"] == "metrics.csv" and error["job_id"] == "j3" and error["row"]
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j2"}


def test_unknown_job_in_metrics_is_reported_and_the_jobs_land(tmp_path):
    members = good_members()
    members["metrics.csv"] += metrics_rows("ghost", "2026-11-02T10:00:00Z", 5, 50.0)
    code, _, err = run_command(write_zip(tmp_path / "ghost.zip", members))
    run = IngestRun.objects.get()
    error = next(e for e in run.errors if e["job_id"] == "ghost")
    assert (error["file"], error["field"]) == ("metrics.csv", "job_id")
    assert "ghost" in err
    assert Job.objects.count() == 3
    assert code in (0, 1)


def test_missing_required_column_stores_nothing_and_exits_2(tmp_path):
    members = good_members()
    members["jobs.csv"] = (
        JOBS.replace("job_id,user,team,", "job_id,team,")
        .replace(",ann,", ",")
        .replace(",bob,", ",")
        .replace(",cat,", ",")
    )
    code, _, err = run_command(write_zip(tmp_path / "nouser.zip", members))
    assert code == 2
    assert "jobs.csv" in err and "user" in err
    assert Job.objects.count() == 0
    assert IngestRun.objects.get().status == IngestRun.Status.FAILED


def test_truncated_archive_is_reported_and_exits_2(tmp_path):
    archive = write_zip(tmp_path / "whole.zip", good_members())
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    code, _, err = run_command(truncated)
    assert code == 2
    assert "truncated.zip" in err
    assert Job.objects.count() == 0


def test_truncated_metrics_file_rejects_its_jobs_only(tmp_path):
    members = good_members()
    members.pop("metrics.csv")
    members["metrics/j1.csv"] = HEADER + metrics_rows("j1", "2026-11-02T10:00:00Z", 60, 40.0)
    members["metrics/j2.csv"] = (HEADER + metrics_rows("j2", "2026-11-02T10:00:00Z", 60, 90.0))[:-40]
    code, _, err = run_command(write_zip(tmp_path / "cut.zip", members))
    assert code == 1
    run = IngestRun.objects.get()
    assert any(e["file"] == "metrics/j2.csv" for e in run.errors)
    assert "metrics/j2.csv" in err
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j3"}


def test_a_run_whose_row_vanished_is_tolerated():
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    run_id = run.pk
    run.delete()
    assert ingest.execute_run(run_id) is None


def test_the_task_ingests_in_process_when_no_broker_is_configured():
    from fleet.tasks import ingest_archive_task

    run = ingest.create_run(EXAMPLE_ARCHIVE)
    result = ingest_archive_task.delay(run.pk)
    assert result.get()["status"] == IngestRun.Status.SUCCEEDED
    assert Job.objects.exists()


def test_a_file_named_zip_that_is_not_one_is_named_as_typed_and_exits_2(tmp_path):
    fake = tmp_path / "exports" / "fake.zip"
    fake.parent.mkdir()
    fake.write_text("a text file renamed fake.zip\n")
    code, out, err = run_command(fake)
    assert code == 2 and "Ingest run" in out and "fake.zip" in out
    assert "fake.zip is not a zip archive (its content is not a zip file)" in err
    assert IngestRun.objects.get().errors[0]["file"] == "fake.zip"
