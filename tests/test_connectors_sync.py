"""The pull service against loopback servers playing slurmrestd, Kubernetes and the generic API,
with faults injected: 500s, timeouts, 429 + Retry-After, truncated JSON, dropped connections and
repeated pages. Every pull must end with each job stored exactly once and the watermark right."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from io import StringIO
from urllib.parse import urlencode

import pytest
from django.core.management import call_command

from fleet.archive import parse_archive
from fleet.connectors import sync
from fleet.connectors.base import parse_time_watermark
from fleet.connectors.models import Connector
from fleet.models import Artifact, Cluster, GpuModelPrice, IngestRun, Job
from tests.connector_servers import FakePlatform
from tests.fixtures.connectors.make_slurm_fixtures import job as sacct_job

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_http(settings):
    # A second: the loopback server answers in milliseconds, but under CI's load (two test workers on
    # two cores) an answer took longer than half a second and used up a retry meant for a fault.
    settings.CONNECTOR_HTTP_TIMEOUT = 1.0
    settings.CONNECTOR_HTTP_RETRIES = 3
    settings.CONNECTOR_HTTP_BACKOFF = 0.01
    settings.CONNECTOR_HTTP_BACKOFF_MAX = 0.05


NOW = datetime.now(UTC).replace(microsecond=0)


# -- the generic API ------------------------------------------------------------------------------
def generic_job(n: int) -> dict:
    start = NOW - timedelta(hours=30) + timedelta(minutes=10 * n)
    return {
        "job_id": f"g-{n}",
        "user": "alice",
        "team": "vision" if n % 2 else "nlp",
        "gpu_count": 2,
        "start_time": start.isoformat(),
        "end_time": (start + timedelta(minutes=30)).isoformat(),
        "name": f"train-{n}",
    }


class GenericApi:
    """Jobs in change order; the cursor is the index of the next job."""

    def __init__(self, count: int):
        self.jobs = [generic_job(n) for n in range(count)]

    def install(self, server: FakePlatform) -> None:
        server.route("/jobs/", self.job_part)
        server.route("/jobs", self.jobs_page)

    def jobs_page(self, path, query):
        cursor = int(query.get("cursor") or 0)
        limit = int(query["limit"])
        page = self.jobs[cursor : cursor + limit]
        next_cursor = cursor + len(page)
        return 200, {"jobs": page, "next_cursor": str(next_cursor), "has_more": next_cursor < len(self.jobs)}, {}

    def job_part(self, path, query):
        _, _, job_id, what = path.split("/")
        job = next(j for j in self.jobs if j["job_id"] == job_id)
        start = datetime.fromisoformat(job["start_time"])
        if what == "series":
            samples = [
                {"timestamp": (start + timedelta(seconds=60 * i)).isoformat(), "host": "n1", "gpu": g, "gpu_util": 40.0}
                for i in range(31)
                for g in (0, 1)
            ]
            return 200, {"samples": samples}, {}
        return 200, {"artifacts": [{"kind": "log", "path": "stdout.log", "content": f"hello from {job_id}\n"}]}, {}


def make_connector(kind: str, url: str, **fields) -> Connector:
    defaults = {"name": f"{kind}-test", "kind": kind, "url": url, "cluster": "c1"}
    defaults.update(fields)
    return Connector.objects.create(**defaults)


def test_generic_pull_survives_every_fault_and_stores_each_job_once():
    api = GenericApi(25)
    with FakePlatform() as server:
        api.install(server)
        server.fault("/jobs", "500", "429")  # first page: a 500, then a 429 with Retry-After: 1
        connector = make_connector("generic", server.url, options={"page_size": 10})
        began = time.monotonic()
        # later pages: truncated JSON, a dropped connection, a timeout, the previous page again
        server.fault("/jobs", "ok", "truncated", "ok", "drop")
        server.fault("/jobs/g-3/series", "timeout")
        server.fault("/jobs/g-4/artifacts", "truncated")
        server.fault("/jobs/g-5/series", "drop")
        result = sync.sync_connector(connector.pk)
        elapsed = time.monotonic() - began
    assert result.status == "succeeded", result.errors
    assert elapsed >= 1.0  # Retry-After was honoured
    assert Job.objects.count() == 25 and result.created == 25 and result.updated == 0
    assert sorted(Job.objects.values_list("external_id", flat=True)) == sorted(f"g-{n}" for n in range(25))
    assert Artifact.objects.count() == 25
    job = Job.objects.get(external_id="g-3")
    assert job.mean_gpu_util == pytest.approx(40.0) and job.sample_count == 62
    connector.refresh_from_db()
    assert connector.watermark == "25" and connector.last_error == "" and connector.last_success_at
    assert connector.locked_until is None
    assert {"500", "429", "truncated", "drop", "timeout"} <= {fault for _, fault, _ in server.requests}


def test_a_repeated_page_stores_nothing_twice():
    api = GenericApi(30)
    with FakePlatform() as server:
        api.install(server)
        server.fault("/jobs", "ok", "repeat", "ok", "repeat")
        connector = make_connector("generic", server.url, options={"page_size": 10, "series": False})
        result = sync.sync_connector(connector.pk)
    assert result.status == "succeeded", result.errors
    assert Job.objects.count() == 30 and result.created == 30 and result.unchanged == 0
    connector.refresh_from_db()
    assert connector.watermark == "30"


def test_a_failure_part_way_keeps_the_watermark_at_the_last_stored_page_and_the_next_pull_resumes():
    api = GenericApi(25)
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, options={"page_size": 10, "series": False})
        server.fault("/jobs", "ok", *["500"] * 10)  # page 2 fails beyond every retry
        failed = sync.sync_connector(connector.pk)
        connector.refresh_from_db()
        answered_500 = f"{server.url.removeprefix('http://')} answered HTTP 500"
        assert failed.status == "failed" and failed.message.startswith(answered_500)  # the sentence, no class name
        assert connector.watermark == "10" and Job.objects.count() == 10
        assert connector.last_error and connector.consecutive_failures == 1 and connector.locked_until is None
        assert IngestRun.objects.get(pk=failed.run_id).status == IngestRun.Status.FAILED

        server.faults.clear()
        resumed = sync.sync_connector(connector.pk)
        assert resumed.status == "succeeded"
        # The pull restarts at the watermark: page 1 is not asked for again.
        cursors = [q.get("cursor") for p, f, q in server.requests if p == "/jobs" and not f]
        assert cursors[-2:] == ["10", "20"]
    connector.refresh_from_db()
    assert Job.objects.count() == 25 and resumed.created == 15
    assert connector.watermark == "25" and connector.last_error == "" and connector.consecutive_failures == 0

    again = sync.sync_connector(connector.pk)  # nothing new: nothing stored, watermark unchanged
    assert again.created == again.updated == 0
    connector.refresh_from_db()
    assert connector.watermark == "25"


def test_bad_records_are_recorded_and_not_retried():
    api = GenericApi(3)
    api.jobs[1]["end_time"] = "2000-01-01T00:00:00Z"  # before its start
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, options={"series": False})
        result = sync.sync_connector(connector.pk)
        requests = server.count("/jobs")
    assert result.status == "partial"
    assert Job.objects.count() == 2
    assert any(e["job_id"] == "g-1" and "before start_time" in e["message"] for e in result.errors)
    assert requests == 1  # one page: nothing retried
    assert Connector.objects.get(pk=connector.pk).watermark == "3"


class LongValueSeries(GenericApi):
    """Job g-1's series has a utilization of 5,000 letters."""

    def job_part(self, path, query):
        status, body, headers = super().job_part(path, query)
        if path.startswith("/jobs/g-1/series"):
            body["samples"][0]["gpu_util"] = "x" * 5000
        return status, body, headers


def test_a_librarys_error_quoting_a_long_value_is_cut_in_the_pulls_error():
    """pandas' and float()'s errors quote the whole value they could not read: the run's error (on its
    page and in its CSV) repeated a 5,000-character series value whole."""
    api = LongValueSeries(3)
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, options={"artifacts": False})
        result = sync.sync_connector(connector.pk)
    assert result.status == "partial", result.errors
    [error] = [e for e in result.errors if e["job_id"] == "g-1"]
    message = error["message"]
    assert message.startswith("series: generic-test jobs/g-1/series: Unable to parse string 'xxx"), message[:300]
    assert message.endswith("x…") and len(message) < 300, f"{len(message):,} characters"


def test_jobs_the_database_cannot_keep_are_reported_and_the_others_stored():
    """A live pull meets the rule archive rows and native files meet (`JobRecord.unstorable`): a NUL
    character (PostgreSQL keeps none) or a job id too long to keep whole is that job's error; its
    series and files are not fetched, and the rest of the pull is stored."""
    api = GenericApi(4)
    api.jobs[1]["name"] = "tr\u0000ain"
    api.jobs[2]["job_id"] = "g-" + "9" * 300
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url)
        result = sync.sync_connector(connector.pk)
        fetched = {path for path, _, _ in server.requests if path.startswith("/jobs/")}
    assert result.status == "partial"
    assert sorted(Job.objects.values_list("external_id", flat=True)) == ["g-0", "g-3"]
    assert {(e["job_id"][:10], e["field"], e["message"]) for e in result.errors} == {
        ("g-1", "name", "contains a NUL character (\\u0000), which cannot be stored; remove it"),
        # the job schema's limit, as in an archive
        ("g-" + "9" * 8, "job_id", "is 302 characters long; at most 200 allowed"),
    }
    assert fetched == {f"/jobs/{job}/{part}" for job in ("g-0", "g-3") for part in ("series", "artifacts")}


def test_generic_jobs_on_mig_slices_and_shared_replicas_are_charged_their_share():
    """A job object's `gpu_share` and `gpu_unit` are read as an archive's job rows are: a job on two
    1g.10gb slices of an H100 priced at 7.00 an hour costs 2 x 1/7 x 7.00 an hour, not 2 x 7.00."""
    api = GenericApi(3)
    api.jobs[0].update(gpu_model="H100", gpu_share="1/7", gpu_unit="MIG 1g.10gb slice")
    api.jobs[1].update(gpu_model="H100", gpu_share=0.25, gpu_unit="time-sliced GPU (1 of 4)")
    api.jobs[2].update(gpu_model="H100")  # no share: whole GPUs
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="H100", price_per_gpu_hour=Decimal("7.00"))
    result = pull_generic(api)
    assert result.status == "succeeded", result.errors
    slices, replicas, whole = (Job.objects.get(external_id=f"g-{n}") for n in range(3))
    # two devices for half an hour each
    assert (slices.gpus_text, slices.gpu_share_text) == ("2 MIG 1g.10gb slices", "1/7 of a GPU each")
    assert slices.gpu_hours == pytest.approx(1 / 7) and slices.cost == Decimal("1.00")
    assert (replicas.gpus_text, replicas.gpu_share_text) == ("2 time-sliced GPUs (1 of 4)", "1/4 of a GPU each")
    assert replicas.gpu_hours == pytest.approx(0.25) and replicas.cost == Decimal("1.75")
    assert (whole.gpus_text, whole.gpu_share_text) == ("2 GPUs", "")
    assert whole.gpu_hours == pytest.approx(1.0) and whole.cost == Decimal("7.00")


def archive_errors(tmp_path, jobs: list[dict]) -> list[tuple[str, str, str]]:
    """The (job id, field, message) errors of an uploaded archive whose jobs.jsonl holds `jobs`."""
    folder = tmp_path / "archive"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"format": "fleet-archive", "version": 1, "cluster": "c1"}))
    (folder / "jobs.jsonl").write_text("".join(json.dumps(job) + "\n" for job in jobs))
    return [(error.job_id, error.field, error.message) for error in parse_archive(folder).errors]


SHARE_IN_WORDS = "must be a number more than 0 and at most 1 in plain digits such as 0.25, or a fraction like 1/7"
SHARE_OUT_OF_RANGE = "must be more than 0 and at most 1 (the share of a physical GPU each device is), got {!r}"


def pull_generic(api):
    """`api`'s jobs pulled by a generic connector (no series), the pull's result."""
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, options={"series": False})
        return sync.sync_connector(connector.pk)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("gpu_share", "half", "not a number or a fraction like 1/7: 'half'"),
        ("gpu_share", "1/0", "not a number or a fraction like 1/7: '1/0'"),
        ("gpu_share", True, "not a number or a fraction like 1/7: True"),
        ("gpu_share", {"of": 7}, "not a number or a fraction like 1/7: {'of': 7}"),
        ("gpu_share", 0, SHARE_OUT_OF_RANGE.format("0")),
        ("gpu_share", 1.5, SHARE_OUT_OF_RANGE.format("1.5")),
        ("gpu_share", "-1/7", SHARE_OUT_OF_RANGE.format("-1/7")),
        # no float holds it; its first 100 digits and its length, as any long value an archive sends
        ("gpu_share", 10**400, SHARE_OUT_OF_RANGE.format("1" + "0" * 99)[:-1] + "…' (401 characters)"),
        ("gpu_share", "1e-1", SHARE_IN_WORDS + " (got '1e-1')"),  # the schema's anyOf, said in words
        ("gpu_unit", 7, "must be text or empty (got 7)"),
        ("gpu_unit", "slice " * 20, "is 119 characters long; at most 100 allowed"),
        ("gpu_count", "four", "must be a whole number of 0 or more, such as 4 (got 'four')"),
        ("gpu_count", "-4", "must be a whole number of 0 or more, such as 4 (got '-4')"),
        ("name", "n" * 501, "is 501 characters long; at most 500 allowed"),
        ("state", "S" * 51, "is 51 characters long; at most 50 allowed"),
        ("queue", "q" * 201, "is 201 characters long; at most 200 allowed"),
        ("gpu_model", "A" * 101, "is 101 characters long; at most 100 allowed"),
        ("team", "t" * 101, "is 101 characters long; at most 100 allowed"),
        ("user", "u" * 201, "is 201 characters long; at most 200 allowed"),
        ("cluster", "east/1", None),  # the schema's pattern for a cluster name; worded as the archive words it
        ("cluster", "c" * 101, None),
        ("command", 7, "must be text or empty (got 7)"),
        ("job_type", "cron", "must be one of batch, interactive (got 'cron')"),
        ("submit_time", "yesterday", None),
        ("labels", [1], 'must be a JSON object, e.g. {"project": "x"} (got [1])'),
    ],
)
def test_a_bad_field_is_that_jobs_error_worded_as_an_archive_words_it(tmp_path, field, value, message):
    """A job object keeps to the archive's rules (gpu_share and gpu_unit, counts, and the job schema,
    fleet/schemas/job.schema.json: lengths and patterns of cluster, name, state, queue and the rest):
    the job is not stored, the others are, and its error is the one an archive's row gets (the
    message checked word for word where given)."""
    api = GenericApi(3)
    api.jobs[1][field] = value
    result = pull_generic(api)
    assert result.status == "partial"
    assert sorted(Job.objects.values_list("external_id", flat=True)) == ["g-0", "g-2"]
    errors = [(e["file"], e["row"], e["job_id"], e["field"], e["message"]) for e in result.errors]
    (archive_error,) = archive_errors(tmp_path, api.jobs)
    assert archive_error[:2] == ("g-1", field)
    assert errors == [("generic-test /jobs", 2, "g-1", field, archive_error[2])]
    if message is not None:
        assert archive_error[2] == message


def test_generic_counts_given_as_text_are_read_as_an_archive_reads_them(tmp_path):
    """`"gpu_count": "4"` is a count, as in an archive's jobs.jsonl (and every cell of its jobs.csv)."""
    api = GenericApi(2)
    api.jobs[0].update(gpu_count="4", node_count="2", cpu_count="32")
    api.jobs[1].update(gpu_count=" 8 ", job_type="interactive")
    result = pull_generic(api)
    assert result.status == "succeeded", result.errors
    text, padded = Job.objects.get(external_id="g-0"), Job.objects.get(external_id="g-1")
    assert (text.gpu_count, text.node_count, text.cpu_count) == (4, 2, 32)
    assert (padded.gpu_count, padded.job_type) == (8, "interactive")
    assert archive_errors(tmp_path, api.jobs) == []


def test_a_generic_job_type_in_any_letter_case_is_stored_lower_case(tmp_path):
    """A platform that writes "Interactive" or "BATCH" has its jobs stored as interactive and batch,
    as an archive's rows are; an unknown type in capitals is still that job's error."""
    api = GenericApi(4)
    api.jobs[0]["job_type"] = "Interactive"
    api.jobs[1]["job_type"] = "BATCH"
    api.jobs[2]["job_type"] = " INTERACTIVE "
    api.jobs[3]["job_type"] = "Notebook"
    result = pull_generic(api)
    stored = dict(Job.objects.values_list("external_id", "job_type"))
    assert stored == {"g-0": "interactive", "g-1": "batch", "g-2": "interactive"}
    errors = [(e["row"], e["job_id"], e["field"], e["message"]) for e in result.errors]
    assert errors == [(4, "g-3", "job_type", "must be one of batch, interactive (got 'Notebook')")]
    assert archive_errors(tmp_path, api.jobs) == [("g-3", "job_type", errors[0][3])]


def test_a_job_id_the_schema_refuses_is_reported_under_that_id(tmp_path):
    api = GenericApi(2)
    api.jobs[1]["job_id"] = "g 1"
    result = pull_generic(api)
    assert list(Job.objects.values_list("external_id", flat=True)) == ["g-0"]
    errors = [(e["row"], e["job_id"], e["field"], e["message"]) for e in result.errors]
    words = "must be letters, digits or . _ : [ ] + - with no spaces or slashes (got 'g 1')"
    assert errors == [(2, "g 1", "job_id", words)]
    assert archive_errors(tmp_path, api.jobs) == [(job_id, field, message) for _, job_id, field, message in errors]


def test_every_bad_field_of_a_generic_job_is_its_own_error_as_in_an_archive(tmp_path):
    """Not only the first: an archive names each bad field of a row, and so does a pull."""
    api = GenericApi(3)
    api.jobs[1].update(gpu_count="two", state="S" * 60, queue="q" * 300, gpu_share="half", labels="x")
    del api.jobs[1]["user"]
    result = pull_generic(api)
    assert result.status == "partial"
    assert sorted(Job.objects.values_list("external_id", flat=True)) == ["g-0", "g-2"]
    errors = [(e["file"], e["row"], e["job_id"], e["field"], e["message"]) for e in result.errors]
    assert {field for _, _, _, field, _ in errors} == {"user", "gpu_count", "state", "queue", "gpu_share", "labels"}
    assert {(file, row, job_id) for file, row, job_id, _, _ in errors} == {("generic-test /jobs", 2, "g-1")}
    assert [(job_id, field, message) for _, _, job_id, field, message in errors] == archive_errors(tmp_path, api.jobs)


def test_a_page_with_nan_is_refused_at_once_not_read_again_as_if_cut_short():
    """A body cut short is read again; a whole body holding NaN (which Python's json would read and
    PostgreSQL's jsonb refuses) would be the same on every read: it fails the pull at once, saying why."""
    api = GenericApi(3)
    api.jobs[1]["gpu_count"] = float("nan")  # the fake server writes it as the literal NaN
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, options={"series": False})
        result = sync.sync_connector(connector.pk)
        requests = server.count("/jobs")
    assert result.status == "failed"
    assert "the response is not valid JSON (NaN is not a JSON value" in result.message
    assert requests == 1
    assert Job.objects.count() == 0


def test_a_held_lock_means_the_second_pull_does_nothing():
    connector = make_connector("generic", "http://127.0.0.1:9")
    assert sync.acquire(connector.pk, "someone-else")
    result = sync.sync_connector(connector.pk)
    assert result.status == "locked"
    assert IngestRun.objects.count() == 0
    sync.release(connector.pk, "someone-else")
    assert Connector.objects.get(pk=connector.pk).locked_until is None


def test_an_expired_lease_can_be_taken_over():
    connector = make_connector("generic", "http://127.0.0.1:9")
    past = datetime.now(UTC) - timedelta(days=1)
    assert sync.acquire(connector.pk, "dead-worker", now=past - timedelta(days=1))
    assert sync.acquire(connector.pk, "new-worker")


def test_dry_run_stores_nothing_and_keeps_the_watermark():
    api = GenericApi(5)
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url)
        result = sync.sync_connector(connector.pk, dry_run=True)
    assert result.status == "dry-run" and result.jobs_seen == 5
    assert Job.objects.count() == 0 and IngestRun.objects.count() == 0
    assert Connector.objects.get(pk=connector.pk).watermark == ""


def test_sync_source_command(capsys):
    api = GenericApi(4)
    with FakePlatform() as server:
        api.install(server)
        make_connector("generic", server.url, name="platform")
        call_command("sync_source", "platform", "--dry-run")
        assert Job.objects.count() == 0
        call_command("sync_source", "platform")
    out = capsys.readouterr().out
    assert "dry run" in out and "4 created" in out
    assert Job.objects.count() == 4


# -- slurmrestd -----------------------------------------------------------------------------------
GPU_TRES = [{"type": "gres", "name": "gpu", "id": 1001, "count": 4}]


class Slurmrestd:
    """/slurmdb/v0.0.41/jobs: jobs that ran at any time in [start_time, end_time], in v0.0.41 layout."""

    def __init__(self, count: int):
        self.jobs = []
        for n in range(count):
            end = NOW - timedelta(minutes=20 + 37 * n)
            self.jobs.append(
                sacct_job(
                    41,
                    job_id=9000 + n,
                    name=f"job{n}",
                    user="alice",
                    account="vision" if n % 2 else "nlp",
                    state="COMPLETED",
                    start=int((end - timedelta(minutes=90)).timestamp()),
                    end=int(end.timestamp()),
                    elapsed=5400,
                    gpus=GPU_TRES,
                    nodes="gpu[01-02]",
                )
            )
        self.jobs.append(  # still running: listed by every window, stored by none
            sacct_job(41, job_id=8999, name="running", user="bob", account="nlp", state="RUNNING",
                      start=int((NOW - timedelta(hours=3)).timestamp()), end=0, elapsed=0, gpus=GPU_TRES, nodes="gpu09")
        )  # fmt: skip

    def install(self, server: FakePlatform) -> None:
        server.route("/slurmdb/v0.0.41/jobs", self.jobs_window)

    def jobs_window(self, path, query):
        token = query["_headers"].get("X-SLURM-USER-TOKEN")
        if token != "jwt-secret":
            return 401, {"errors": [{"error": "authentication failed"}]}, {}
        begin, stop = int(query["start_time"]), int(query["end_time"])
        ran = [
            j for j in self.jobs if j["time"]["start"] <= stop and (j["time"]["end"] == 0 or j["time"]["end"] >= begin)
        ]
        meta = {"plugin": {"data_parser": "data_parser/v0.0.41"}, "slurm": {"release": "24.05.8"}}
        return 200, {"meta": meta, "jobs": ran, "warnings": [], "errors": []}, {}


def test_slurm_pull_in_windows_with_faults(monkeypatch):
    monkeypatch.setenv("FLEET_SECRET_TEST_SLURM_JWT", "jwt-secret")
    api = Slurmrestd(8)
    with FakePlatform() as server:
        api.install(server)
        server.fault("/slurmdb/v0.0.41/jobs", "500", "ok", "timeout", "ok", "repeat", "429", "ok", "drop", "truncated")
        connector = make_connector(
            "slurm",
            server.url,
            auth=Connector.Auth.HEADER,
            secret_header="X-SLURM-USER-TOKEN",
            secret_ref="env:FLEET_SECRET_TEST_SLURM_JWT",
            options={
                "api_version": "v0.0.41",
                "window_hours": 1,
                "initial_days": 0.5,
                "account_teams": {"vision": "Computer Vision"},
            },
        )
        before = datetime.now(UTC)
        result = sync.sync_connector(connector.pk)
        after = datetime.now(UTC)
    assert result.status == "succeeded", [e["message"] for e in result.errors]
    assert Job.objects.count() == 8 == result.created
    assert not Job.objects.filter(external_id="8999").exists()
    job = Job.objects.get(external_id="9001")
    assert job.team.name == "Computer Vision" and job.gpu_count == 4 and job.node_count == 2
    assert {a.path for a in job.artifacts.all()} == {"submit_line.txt"}
    connector.refresh_from_db()
    watermark = parse_time_watermark(connector.watermark)
    settle = timedelta(minutes=5)
    assert before - settle - timedelta(seconds=1) <= watermark <= after - settle
    assert server.count("/slurmdb/v0.0.41/jobs", "repeat") == 1

    # The next pull asks only for the time since the watermark and stores nothing again.
    with FakePlatform() as server:
        api.install(server)
        Connector.objects.filter(pk=connector.pk).update(url=server.url)
        again = sync.sync_connector(connector.pk)
        windows = [int(q["start_time"]) for p, f, q in server.requests]
    assert again.created == again.updated == 0
    assert min(windows) >= int(watermark.timestamp())


def test_a_job_stored_before_the_steps_label_gets_it_from_a_re_pull_not_from_the_next_pull(
    monkeypatch, django_capture_on_commit_callbacks
):
    """docs/connectors.md, "Step task counts": the scheduled pulls ask only for the time after the
    watermark, so a job stored before the `steps` label existed keeps going without it; a re-pull
    over its time (`sync_source NAME --since ...`) stores it again with the label."""
    from fleet.signals import jobs_ingested

    api = Slurmrestd(3)
    for listed in api.jobs:
        listed["steps"][0]["tasks"] = {"count": 4}  # srun python: step <id>.0 of 4 tasks
    with FakePlatform() as server:
        api.install(server)
        connector = _slurm_with_token(server.url, monkeypatch)
        assert sync.sync_connector(connector.pk).created == 3
        # As stored by a release before the label: no `steps`, and the fingerprint of what came without it.
        for job in Job.objects.all():
            job.labels.pop("steps")
            job.fingerprint = "stored-before-the-steps-label"
            job.save(update_fields=["labels", "fingerprint"])
        following = sync.sync_connector(connector.pk)
        assert following.status == "succeeded" and following.updated == 0
        assert not Job.objects.filter(labels__has_key="steps").exists()
        since = (NOW - timedelta(days=1)).isoformat()
        out, to_triage = StringIO(), []

        def queued(sender, job_ids, **kwargs):
            to_triage.extend(job_ids)

        jobs_ingested.connect(queued)
        try:
            with django_capture_on_commit_callbacks(execute=True):  # the signal goes after the commit
                call_command("sync_source", connector.name, "--since", since, stdout=out)
        finally:
            jobs_ingested.disconnect(queued)
    assert "0 created, 3 updated, 0 unchanged" in out.getvalue()
    steps = dict(Job.objects.values_list("external_id", "labels__steps"))
    assert steps == {str(9000 + n): [{"id": f"{9000 + n}.0", "name": "python", "tasks": 4}] for n in range(3)}
    assert sorted(to_triage) == sorted(Job.objects.values_list("pk", flat=True))  # triage answers: again


def test_slurm_without_the_token_fails_and_says_so():
    api = Slurmrestd(1)
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("slurm", server.url, options={"api_version": "v0.0.41"})
        result = sync.sync_connector(connector.pk)
        assert server.count("/slurmdb/v0.0.41/jobs") == 1  # a 401 is not retried
    assert result.status == "failed" and "HTTP 401" in result.message
    connector.refresh_from_db()
    assert connector.watermark == "" and "authentication failed" in connector.last_error


def test_a_token_file_written_by_scontrol_token_is_sent_as_the_token(tmp_path, settings):
    # `scontrol token` prints `SLURM_JWT=eyJ...`; a cron job writing its output to the secret file (as
    # docs/connectors.md says) had the whole line sent as X-SLURM-USER-TOKEN: HTTP 401 on every pull.
    settings.CONNECTOR_SECRET_DIRS = [str(tmp_path)]
    (tmp_path / "slurm-jwt").write_text("SLURM_JWT=jwt-secret\n")
    api = Slurmrestd(3)
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector(
            "slurm",
            server.url,
            auth=Connector.Auth.HEADER,
            secret_header="X-SLURM-USER-TOKEN",
            secret_ref=f"file:{tmp_path / 'slurm-jwt'}",
            options={"api_version": "v0.0.41", "window_hours": 24, "initial_days": 0.5},
        )
        result = sync.sync_connector(connector.pk)
    assert result.status == "succeeded", result.message
    assert result.created == 3


def _slurm_with_token(url: str, monkeypatch) -> Connector:
    monkeypatch.setenv("FLEET_SECRET_TEST_SLURM_JWT", "jwt-secret")
    return make_connector(
        "slurm",
        url,
        auth=Connector.Auth.HEADER,
        secret_header="X-SLURM-USER-TOKEN",
        secret_ref="env:FLEET_SECRET_TEST_SLURM_JWT",
        headers={"X-Scope-OrgID": "tenant-7"},
        options={"api_version": "v0.0.41", "window_hours": 24, "initial_days": 0.5},
    )


def test_a_redirect_to_another_server_is_refused_and_the_secret_never_reaches_it(monkeypatch):
    # requests strips only Authorization when a redirect leaves the host; our secret header and
    # custom headers would follow the Location to whatever server it names.
    with FakePlatform() as elsewhere, FakePlatform() as server:
        Slurmrestd(2).install(elsewhere)
        other = elsewhere.url.replace("127.0.0.1", "localhost")
        server.route("/slurmdb/", lambda path, query: (302, b"", {"Location": other + path}))
        connector = _slurm_with_token(server.url, monkeypatch)
        result = sync.sync_connector(connector.pk)
        assert elsewhere.requests == []
        assert server.count("/slurmdb/v0.0.41/jobs") == 1  # refused, not retried
    assert result.status == "failed" and Job.objects.count() == 0
    port = other.rsplit(":", 1)[1]
    assert f"redirects to another server (http://localhost:{port})" in result.message
    assert "jwt-secret" not in result.message
    connector.refresh_from_db()
    assert "Set the connector URL" in connector.last_error and connector.watermark == ""


def test_a_redirect_on_the_same_server_is_followed_with_the_secret(monkeypatch):
    api = Slurmrestd(3)
    with FakePlatform() as server:
        api.install(server)

        def moved(path, query):
            params = urlencode({k: v for k, v in query.items() if not k.startswith("_")})
            return 301, b"", {"Location": f"{path.removeprefix('/old')}?{params}"}

        server.route("/old/", moved)
        connector = _slurm_with_token(server.url + "/old", monkeypatch)
        result = sync.sync_connector(connector.pk)
        seen = [q["_headers"] for p, _, q in server.requests if p.startswith("/slurmdb/")]
    assert result.status == "succeeded", result.message
    assert Job.objects.count() == 3
    assert seen
    assert all(h.get("X-SLURM-USER-TOKEN") == "jwt-secret" and h.get("X-Scope-OrgID") == "tenant-7" for h in seen)


def test_same_origin_rules():
    from fleet.connectors.http import same_origin

    assert same_origin("http://a:8080/x", "http://A:8080/y")
    assert same_origin("http://a/x", "https://a/x")  # the usual upgrade
    assert not same_origin("https://a/x", "http://a/x")  # a downgrade would send the secret in clear
    assert not same_origin("http://a:8080/x", "http://a:8081/x")
    assert not same_origin("http://a/x", "http://b/x")


# -- Kubernetes -----------------------------------------------------------------------------------
def pod(name, uid, *, owner=None, phase="Succeeded", gpus=1, start, end, namespace="vision", labels=None, node="n1"):
    iso = lambda t: t.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    terminated = {
        "exitCode": 0 if phase == "Succeeded" else 1,
        "reason": "Completed" if phase == "Succeeded" else "Error",
    }
    if end is not None:
        terminated.update(startedAt=iso(start), finishedAt=iso(end))
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "labels": labels or {},
            "creationTimestamp": iso(start - timedelta(seconds=30)),
            "ownerReferences": [owner] if owner else [],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "main",
                    "image": "pytorch:2",
                    "command": ["python", "train.py"],
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus), "cpu": "8"}},
                }
            ],
        },
        "status": {
            "phase": phase,
            "startTime": iso(start),
            "containerStatuses": [{"name": "main", "state": {"terminated": terminated} if end else {"running": {}}}],
        },
    }


class KubeApi:
    def __init__(self):
        t = NOW - timedelta(hours=3)
        job_owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "resnet", "uid": "job-uid-1", "controller": True}
        ptj = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": "llm",
            "uid": "ptj-uid",
            "controller": True,
        }
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-123", "uid": "rs-uid", "controller": True}
        self.pods = [
            # a Job whose first pod failed and was retried: 2 GPUs, not 4
            pod("resnet-a", "p1", owner=job_owner, phase="Failed", gpus=2, start=t, end=t + timedelta(minutes=10)),
            pod("resnet-b", "p2", owner=job_owner, gpus=2, start=t + timedelta(minutes=11), end=t + timedelta(hours=1)),
            # a PyTorchJob with two workers at once: 8 GPUs
            pod(
                "llm-worker-0", "p3", owner=ptj, gpus=4, start=t, end=t + timedelta(hours=2), namespace="nlp", node="n2"
            ),
            pod(
                "llm-worker-1", "p4", owner=ptj, gpus=4, start=t, end=t + timedelta(hours=2), namespace="nlp", node="n3"
            ),
            # still running
            pod("live", "p5", phase="Running", start=t, end=None),
            # not a job
            pod("web-123-x", "p6", owner=rs, start=t, end=t + timedelta(minutes=5)),
            # finishing about now: left for the next pull (settle time). Timed from the test's own
            # clock, not the module's: on a slow run the suite reaches this test minutes after import.
            pod("fresh", "p7", start=t, end=datetime.now(UTC) + timedelta(seconds=30)),
        ]

    def install(self, server: FakePlatform) -> None:
        server.route("/api/v1/namespaces/", self.log)
        server.route("/api/v1/pods", self.pods_page)

    def pods_page(self, path, query):
        start = int(query.get("continue") or 0)
        limit = int(query["limit"])
        items = self.pods[start : start + limit]
        more = start + limit < len(self.pods)
        return (
            200,
            {"kind": "PodList", "metadata": {"continue": str(start + limit) if more else ""}, "items": items},
            {},
        )

    def log(self, path, query):
        name = path.split("/")[-2]
        return 200, f"2024-05-06T12:00:00Z epoch 1 done on {name}\n".encode(), {}


def test_kubernetes_pull_with_pagination_faults_and_logs():
    api = KubeApi()
    with FakePlatform() as server:
        api.install(server)
        server.fault("/api/v1/pods", "ok", "repeat", "503", "ok", "drop")
        server.fault("/api/v1/namespaces/nlp/pods/llm-worker-1/log", "429")
        connector = make_connector(
            "kubernetes",
            server.url,
            auth=Connector.Auth.BEARER,
            options={"page_size": 2, "namespace_teams": {"nlp": "Language"}},
        )
        connector.set_secret("sa-token")
        connector.save()
        result = sync.sync_connector(connector.pk)
        tokens = {q["_headers"].get("Authorization") for _, _, q in server.requests}
    assert result.status == "succeeded", result.errors
    assert tokens == {"Bearer sa-token"}
    assert sorted(Job.objects.values_list("external_id", flat=True)) == ["job-uid-1", "ptj-uid"]
    resnet = Job.objects.get(external_id="job-uid-1")
    llm = Job.objects.get(external_id="ptj-uid")
    assert resnet.gpu_count == 2 and resnet.state == "Succeeded" and resnet.name == "resnet"
    assert llm.gpu_count == 8 and llm.team.name == "Language" and llm.node_count == 2
    assert sorted(a.path for a in llm.artifacts.all()) == ["llm-worker-0/main.run1.log", "llm-worker-1/main.run1.log"]
    connector.refresh_from_db()
    assert parse_time_watermark(connector.watermark) == llm.end_time

    # The pod that was too fresh comes with the next pull; nothing else is stored again.
    api.pods[-1] = pod("fresh", "p7", start=NOW - timedelta(hours=1), end=NOW - timedelta(minutes=5))
    with FakePlatform() as server:
        api.install(server)
        Connector.objects.filter(pk=connector.pk).update(url=server.url)
        again = sync.sync_connector(connector.pk)
    assert again.created == 1 and again.updated == 0
    assert Job.objects.count() == 3


def test_a_metrics_source_on_the_schedule_is_checked_never_pulled(client, operator):
    """A Prometheus connector (a metrics source: it lists no jobs) was pulled on the schedule like the
    others: an empty ingest run every 15 minutes, and a Lag on /connectors/ that said nothing. Its turn
    now checks that it answers (its health), with no ingest run, and the list says whom it serves."""
    from fleet.connectors.tasks import schedule_connectors_task

    with FakePlatform() as server:
        server.route("/api/v1/labels", lambda path, query: (200, {"status": "success", "data": ["Hostname"]}, {}))
        prom = make_connector("prometheus", server.url, name="prom", cluster="")
        make_connector("generic", server.url, name="slurm-prod", metrics_from=prom, enabled=False)
        assert schedule_connectors_task.delay().get() == [prom.pk]
        assert server.count("/api/v1/labels") == 1
    assert not IngestRun.objects.exists()
    prom.refresh_from_db()
    assert prom.health == "ok" and prom.last_success_at and prom.lag is None
    client.force_login(operator)
    page = client.get("/connectors/").content.decode()
    assert "series for slurm-prod" in page
    assert page.count(">Pull now</button>") == 1  # the job source's; a metrics source has Check connection
    # Down: the check fails and says so, still without an ingest run.
    Connector.objects.filter(pk=prom.pk).update(url="http://127.0.0.1:9", last_run_at=None)
    assert schedule_connectors_task.delay().get() == [prom.pk]
    prom.refresh_from_db()
    assert prom.health == "failing" and prom.consecutive_failures == 1 and "127.0.0.1:9" in prom.last_error
    assert not IngestRun.objects.exists()


def test_beat_fans_out_to_due_connectors_only():
    from fleet.connectors.tasks import schedule_connectors_task

    api = GenericApi(2)
    with FakePlatform() as server:
        api.install(server)
        due = make_connector("generic", server.url, name="due", options={"series": False})
        recent = make_connector("generic", server.url, name="recent", last_run_at=datetime.now(UTC))
        make_connector("generic", server.url, name="off", enabled=False)
        held = make_connector("generic", server.url, name="held")
        sync.acquire(held.pk, "other-worker")
        assert schedule_connectors_task.delay().get() == [due.pk]
    due.refresh_from_db()
    assert due.last_success_at and due.watermark == "2" and Job.objects.count() == 2
    assert Connector.objects.get(pk=recent.pk).last_success_at is None


# -- pulls whose worker died ---------------------------------------------------------------------------
# A pull's run was finished only by the pull itself: a worker killed mid-pull (OOM, kill -9, the hard
# time limit) left it *running* for ever on the connector's page and Ingest runs; only the lease expired.


def dead_pull(connector: Connector, *, lease_left: timedelta) -> IngestRun:
    """What a worker killed mid-pull leaves: its run *running*, part-way, and its lease (which names the
    run) running out `lease_left` from now (negative: expired)."""
    run = IngestRun.objects.create(
        archive_path=f"connector:{connector.name}",
        archive_name=f"{connector.name} pull",
        source=IngestRun.Source.CONNECTOR,
        connector=connector,
        status=IngestRun.Status.RUNNING,
        started_at=datetime.now(UTC) - timedelta(hours=1),
        attempts=1,
        phase="stored up to 10",
    )
    Connector.objects.filter(pk=connector.pk).update(
        locked_until=datetime.now(UTC) + lease_left, lock_token=sync.lease_token("d" * 32, run.pk)
    )
    return run


def lock_held_elsewhere(run_id: int) -> bool:
    """Whether some session holds the run's lock, as another worker's look sees it (PostgreSQL)."""
    import psycopg

    from fleet import ingest
    from tests.test_services import _worker_database_url

    with psycopg.connect(_worker_database_url(), autocommit=True) as other:
        taken = other.execute("SELECT pg_try_advisory_lock(%s, %s)", (ingest.RUN_LOCK_NAMESPACE, run_id)).fetchone()[0]
        if taken:
            other.execute("SELECT pg_advisory_unlock(%s, %s)", (ingest.RUN_LOCK_NAMESPACE, run_id))
    return not taken


def test_a_pull_whose_worker_died_is_failed_and_the_next_pull_goes_on(client, operator):
    from fleet.connectors.tasks import schedule_connectors_task

    api = GenericApi(3)
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, name="slurm-prod", options={"series": False})
        Connector.objects.filter(pk=connector.pk).update(watermark="1")
        run = dead_pull(connector, lease_left=-timedelta(minutes=1))  # only the lease ran out

        assert sync.fail_stopped_pulls() == [run.pk]
        run.refresh_from_db()
        assert run.status == IngestRun.Status.FAILED and run.finished_at and run.phase == ""
        assert run.errors == [
            {
                "file": "slurm-prod",
                "row": None,
                "field": "",
                "job_id": "",
                "message": "The worker running this pull stopped before it finished (killed, out of memory, or its "
                "machine went away) or could not reach the database to record its end; the jobs it stored are kept, "
                "and the next pull starts where it left off (the connector's watermark).",
            }
        ]
        connector.refresh_from_db()
        assert connector.health == "failing" and connector.last_run_id == run.pk and connector.consecutive_failures == 1
        assert connector.last_error.startswith("The worker running this pull stopped")
        client.force_login(operator)
        page = client.get(f"/connectors/{connector.pk}/").content.decode()
        assert f"ingest run #{run.pk}</a> (failed)" in page and ">Running</span>" not in page
        assert ">Running</span>" not in client.get("/ingest-runs/").content.decode()
        assert sync.fail_stopped_pulls() == []  # idempotent

        assert schedule_connectors_task.delay().get() == [connector.pk]  # due again: pulled from the watermark
    connector.refresh_from_db()
    assert connector.health == "ok" and connector.watermark == "3" and Job.objects.count() == 2


def test_beat_fails_a_stopped_pull_before_it_fans_out():
    from fleet.connectors.tasks import schedule_connectors_task

    connector = make_connector("generic", "http://127.0.0.1:9", name="off", enabled=False)
    run = dead_pull(connector, lease_left=-timedelta(minutes=1))
    assert schedule_connectors_task.delay().get() == []
    assert IngestRun.objects.get(pk=run.pk).status == IngestRun.Status.FAILED


def test_a_pull_going_on_is_never_failed(monkeypatch):
    """A live pull holds its lease (SQLite: it is all there is to tell) and, on PostgreSQL, its run's
    lock: the sweep, run in the middle of a real pull, leaves it alone, and the pull ends as ever."""
    from django.db import connection

    from fleet.connectors.registry import connector_class

    looks = []
    generic = connector_class("generic")
    original = generic.list_jobs

    def list_jobs(self, watermark, until):
        run = IngestRun.objects.get(status=IngestRun.Status.RUNNING)
        # On PostgreSQL the sweep runs in another worker's session (in this one, the lock is this session's own).
        looks.append(lock_held_elsewhere(run.pk) if connection.vendor == "postgresql" else sync.fail_stopped_pulls())
        holder = Connector.objects.get(name="live")
        looks.append(holder.lock_token.endswith(f":run-{run.pk}"))
        yield from original(self, watermark, until)

    monkeypatch.setattr(generic, "list_jobs", list_jobs)
    api = GenericApi(2)
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, name="live", options={"series": False})
        result = sync.sync_connector(connector.pk)
    assert looks == [True if connection.vendor == "postgresql" else [], True]
    assert result.status == "succeeded" and IngestRun.objects.get().status == IngestRun.Status.SUCCEEDED
    assert Connector.objects.get(pk=connector.pk).locked_until is None


@pytest.mark.sqlite_only("on PostgreSQL the run's lock tells (see the next test)")
def test_a_pull_with_its_lease_still_running_is_left_alone_without_run_locks():
    """SQLite: nothing but the lease tells a live pull from a dead one, so a run whose lease is still its
    own is left until the lease runs out (CONNECTOR_LOCK_SECONDS, the task's hard limit + 60 s)."""
    connector = make_connector("generic", "http://127.0.0.1:9")
    run = dead_pull(connector, lease_left=timedelta(minutes=30))
    assert sync.fail_stopped_pulls() == []
    assert IngestRun.objects.get(pk=run.pk).status == IngestRun.Status.RUNNING
    Connector.objects.filter(pk=connector.pk).update(locked_until=datetime.now(UTC) - timedelta(seconds=1))
    assert sync.fail_stopped_pulls() == [run.pk]


def test_a_pull_whose_worker_died_is_failed_at_once_on_postgresql():
    """Its run's lock went with the worker's connection: failed at the next look, and its lease is
    released, so the next pull need not wait for it to run out; one whose lock a worker holds is left."""
    from tests.conftest import require_postgresql
    from tests.test_ingest_exclusive import RUN_LOCKS_NEED_POSTGRESQL, hold_run_lock, wait_until_released

    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    dead = make_connector("generic", "http://127.0.0.1:9", name="dead")
    live = make_connector("generic", "http://127.0.0.1:9", name="live")
    stopped = dead_pull(dead, lease_left=timedelta(minutes=30))
    going_on = dead_pull(live, lease_left=-timedelta(minutes=1))  # a long pull of the command line's, say
    other = hold_run_lock(going_on.pk)
    try:
        assert sync.fail_stopped_pulls() == [stopped.pk]
        assert IngestRun.objects.get(pk=going_on.pk).status == IngestRun.Status.RUNNING
    finally:
        other.close()  # that worker dies
    wait_until_released(going_on.pk)
    dead.refresh_from_db()
    assert dead.locked_until is None and dead.lock_token == "" and dead.pk in sync.due_connectors()
    assert sync.fail_stopped_pulls() == [going_on.pk]


def test_a_pull_that_raises_ends_failed_saying_why(monkeypatch):
    """An error other than the connector's (the soft time limit, the database, a bug) left the run
    running; it ends failed, saying what stopped it, and the error still reaches the task."""
    from fleet.connectors.registry import connector_class

    def list_jobs(self, watermark, until):
        raise RuntimeError("boom")
        yield

    monkeypatch.setattr(connector_class("generic"), "list_jobs", list_jobs)
    connector = make_connector("generic", "http://127.0.0.1:9")
    with pytest.raises(RuntimeError):
        sync.sync_connector(connector.pk)
    run = IngestRun.objects.get()
    assert run.status == IngestRun.Status.FAILED and run.errors[0]["message"] == "the pull stopped: RuntimeError: boom"
    connector.refresh_from_db()
    assert connector.locked_until is None and connector.last_error == "the pull stopped: RuntimeError: boom"
