"""The MLflow connector: runs become jobs and their system metrics series, pulled from a loopback
server playing an MLflow tracking server (runs/search with page tokens, get-history with page
tokens, bearer auth) with faults injected; and the pure mapping of a run on its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from fleet.connectors import sync
from fleet.connectors.base import ConfigError, ConnectorSettings, parse_time_watermark
from fleet.connectors.http import HttpClient
from fleet.connectors.mlflow import MlflowConnector, job_from_run, samples_from_histories, system_keys
from fleet.connectors.models import Connector
from fleet.models import Job
from fleet.series import from_parquet_bytes
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import _fast_http, make_connector  # noqa: F401  (the fixture, used by name)

NOW = datetime.now(UTC).replace(microsecond=0)
MB = 1e6 / 2**20  # one of MLflow's megabytes in MiB


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def run(n: int, *, gpus: int = 2, node: str = "", team: str | None = "vision", **info) -> dict:
    """A finished run as runs/search answers it: ended 20 + 37n minutes ago after 30 minutes."""
    end = NOW - timedelta(minutes=20 + 37 * n)
    prefix = f"system/{node}/" if node else "system/"
    metrics = [{"key": f"{prefix}gpu_{i}_utilization_percentage", "value": 40.0, "timestamp": ms(end), "step": 3}
               for i in range(gpus)]  # fmt: skip
    metrics += [{"key": f"{prefix}gpu_{i}_memory_usage_megabytes", "value": 1000.0, "timestamp": ms(end), "step": 3}
                for i in range(gpus)]  # fmt: skip
    metrics += [
        {"key": f"{prefix}cpu_utilization_percentage", "value": 55.0, "timestamp": ms(end), "step": 3},
        {"key": f"{prefix}network_receive_megabytes", "value": 1800.0, "timestamp": ms(end), "step": 3},
        {"key": "loss", "value": 0.1, "timestamp": ms(end), "step": 900},  # a training metric: not a series
    ]
    tags = [{"key": "mlflow.user", "value": "alice"}, {"key": "mlflow.source.name", "value": "train.py"}]
    if team:
        tags.append({"key": "team", "value": team})
    return {
        "info": {
            "run_id": f"run{n:03d}",
            "run_uuid": f"run{n:03d}",
            "experiment_id": "7",
            "run_name": f"resnet-{n}",
            "user_id": "alice",
            "status": "FINISHED",
            "start_time": ms(end - timedelta(minutes=30)),
            "end_time": ms(end),
            "artifact_uri": f"mlflow-artifacts:/7/run{n:03d}/artifacts",
            "lifecycle_stage": "active",
        }
        | info,
        "data": {"metrics": metrics, "params": [{"key": "lr", "value": "0.1"}], "tags": tags},
    }


class Mlflow:
    """runs/search over `runs` (end-time filter, two runs a page) and get-history (100 points a page)."""

    def __init__(self, runs: list[dict]):
        self.runs = runs

    def install(self, server: FakePlatform) -> None:
        server.route("/api/2.0/mlflow/runs/search", self.search)
        server.route("/api/2.0/mlflow/metrics/get-history", self.history)
        server.route("/api/2.0/mlflow/experiments/get", self.experiment)
        server.route("/api/2.0/mlflow/artifacts/list", lambda path, query: (200, {}, {}))  # no artifacts

    @staticmethod
    def authorised(query) -> bool:
        return query["_headers"].get("Authorization") == "Bearer mlflow-token"

    def search(self, path, query):
        if not self.authorised(query):
            return 401, {"error_code": "UNAUTHENTICATED", "message": "token required"}, {}
        body = query["_json"]
        assert body["experiment_ids"] == ["7"] and body["order_by"] == ["attributes.end_time ASC"]
        low, high = (int(part.split()[-1]) for part in body["filter"].split(" AND "))
        ended = sorted(
            (r for r in self.runs if low <= (r["info"]["end_time"] or -1) < high), key=lambda r: r["info"]["end_time"]
        )
        offset = int(body.get("page_token") or 0)
        page = ended[offset : offset + 2]
        more = offset + 2 < len(ended)
        return 200, {"runs": page} | ({"next_page_token": str(offset + 2)} if more else {}), {}

    def history(self, path, query):
        if not self.authorised(query):
            return 401, {"error_code": "UNAUTHENTICATED"}, {}
        found = next(r for r in self.runs if r["info"]["run_id"] == query["run_id"])
        start, key = found["info"]["start_time"], query["metric_key"]
        value = 55.0 if "cpu" in key else 40.0 if "utilization" in key else 1000.0
        points = [{"key": key, "value": value, "timestamp": start + 10_000 * i, "step": i} for i in range(180)]
        if "network" in key:  # megabytes received since the run began: 25 MB a second
            points = [point | {"value": 250.0 * i} for i, point in enumerate(points)]
        offset = int(query.get("page_token") or 0)
        more = offset + 100 < len(points)
        return (
            200,
            {"metrics": points[offset : offset + 100]} | ({"next_page_token": str(offset + 100)} if more else {}),
            {},
        )

    def experiment(self, path, query):
        return 200, {"experiment": {"experiment_id": query["experiment_id"], "name": "imagenet"}}, {}


def mlflow_connector(url: str, **options) -> Connector:
    return make_connector(
        "mlflow",
        url,
        auth=Connector.Auth.BEARER,
        secret_ref="env:FLEET_SECRET_TEST_MLFLOW_TOKEN",
        options={"experiment_ids": ["7"], "window_hours": 1, "initial_days": 0.5} | options,
    )


@pytest.mark.django_db
def test_an_mlflow_pull_stores_each_finished_gpu_run_once_with_its_system_metrics(monkeypatch):
    monkeypatch.setenv("FLEET_SECRET_TEST_MLFLOW_TOKEN", "mlflow-token")
    runs = [run(n) for n in range(5)]
    runs.append(run(5, gpus=0))  # no GPU metrics: not a GPU job
    runs.append(run(6) | {"info": run(6)["info"] | {"status": "RUNNING", "end_time": None}})  # not ended yet
    runs.append(run(7, team=None, node="node-a", status="FAILED"))
    api = Mlflow(runs)
    with FakePlatform() as server:
        api.install(server)
        server.fault("/api/2.0/mlflow/runs/search", "500", "ok", "timeout", "429", "ok", "truncated")
        server.fault("/api/2.0/mlflow/metrics/get-history", "503", "ok", "drop")
        connector = mlflow_connector(server.url, user_teams={"alice": "Research"})
        before = datetime.now(UTC)
        result = sync.sync_connector(connector.pk)
        after = datetime.now(UTC)
    assert result.status == "succeeded", result.errors
    assert sorted(Job.objects.values_list("external_id", flat=True)) == [
        "run000",
        "run001",
        "run002",
        "run003",
        "run004",
        "run007",
    ]
    job = Job.objects.get(external_id="run001")
    assert (job.name, job.user, job.team.name, job.gpu_count, job.state) == (
        "resnet-1",
        "alice",
        "vision",
        2,
        "COMPLETED",
    )
    assert job.command == "train.py" and job.job_type == "batch" and job.labels["mlflow_experiment_id"] == "7"
    assert job.mean_gpu_util == pytest.approx(40.0)  # from the 180 samples of each GPU, two pages of history each
    assert job.sample_count == 180 * 2  # GPU samples: two GPUs, 180 each
    with job.series_file.open("rb") as blob:
        series = from_parquet_bytes(blob.read())
    assert series["cpu_util"].dropna().tolist() == [55.0] * 180  # the host's CPU, as a host-level row
    assert series["gpu_mem_used_mib"].dropna().iloc[0] == pytest.approx(1000 * MB)
    # The network total became bytes a second, from the second sample on, on the host's rows.
    received = series.loc[series["gpu"].isna(), "net_rx_bytes_per_s"]
    assert received.isna().iloc[0] and received.iloc[1:].tolist() == pytest.approx([25e6] * 179)
    untagged = Job.objects.get(external_id="run007")
    assert (untagged.team.name, untagged.state, untagged.labels["nodes"]) == ("Research", "FAILED", ["node-a"])
    connector.refresh_from_db()
    watermark = parse_time_watermark(connector.watermark)
    assert before - timedelta(minutes=2, seconds=1) <= watermark <= after - timedelta(minutes=2)

    with FakePlatform() as server:  # the next pull asks only for what ended since, and stores nothing again
        api.install(server)
        Connector.objects.filter(pk=connector.pk).update(url=server.url)
        again = sync.sync_connector(connector.pk)
    assert again.status == "succeeded" and again.created == again.updated == 0


@pytest.mark.django_db
def test_an_mlflow_pull_without_its_token_fails_and_says_so(monkeypatch):
    monkeypatch.setenv("FLEET_SECRET_TEST_MLFLOW_TOKEN", "wrong")
    with FakePlatform() as server:
        Mlflow([run(0)]).install(server)
        result = sync.sync_connector(mlflow_connector(server.url).pk)
    assert result.status == "failed" and Job.objects.count() == 0
    assert "401" in " ".join(str(error) for error in result.errors)


def test_a_run_maps_to_a_job_and_a_bad_run_is_refused_by_name():
    job = job_from_run(run(0, node="n1") | {}, cluster="c1")
    assert (job.external_id, job.cluster, job.gpu_count, job.node_count, job.labels["nodes"]) == (
        "run000",
        "c1",
        2,
        1,
        ["n1"],
    )
    notebook = run(1)
    notebook["data"]["tags"].append({"key": "mlflow.source.type", "value": "NOTEBOOK"})
    assert job_from_run(notebook, cluster="c1").job_type == "interactive"  # a notebook is a session
    assert job_from_run(run(2, team=None), cluster="c1").team == "unassigned"
    assert job_from_run(run(2, team=None), cluster="c1", default_team="ml").team == "ml"
    assert job_from_run(run(3, gpus=0), cluster="c1") is None
    assert job_from_run(run(3, status="RUNNING", end_time=None), cluster="c1") is None  # stored once it ends
    killed = job_from_run(run(4, status="KILLED"), cluster="c1")
    assert killed.state == "CANCELLED"
    for broken, problem in [
        (run(5, end_time=1), "before start_time"),
        (run(5, start_time="soon"), "start_time must be milliseconds"),
        (run(5, start_time=10**19), "timestamp"),
        (run(5, run_id="", run_uuid=""), "no run_id"),
    ]:
        with pytest.raises(ValueError, match=problem):
            job_from_run(broken, cluster="c1")


def test_system_metrics_become_canonical_series_in_mib_with_the_gpu_s_total_memory():
    keys = system_keys(
        ["system/gpu_0_utilization_percentage", "system/gpu_0_memory_usage_megabytes",
         "system/gpu_0_memory_usage_percentage", "system/gpu_0_power_usage_watts", "system/cpu_utilization_percentage",
         "system/network_receive_megabytes", "system/disk_usage_megabytes", "accuracy"]
    )  # fmt: skip
    assert keys == [
        "system/cpu_utilization_percentage", "system/gpu_0_memory_usage_megabytes",
        "system/gpu_0_memory_usage_percentage", "system/gpu_0_utilization_percentage",
        "system/network_receive_megabytes",
    ]  # fmt: skip
    at = ms(NOW)
    samples = samples_from_histories(
        {
            "system/gpu_0_utilization_percentage": [{"value": 35, "timestamp": at}],
            "system/gpu_0_memory_usage_megabytes": [{"value": 20_000.0, "timestamp": at}],
            "system/gpu_0_memory_usage_percentage": [{"value": 25.0, "timestamp": at}],
            "system/cpu_utilization_percentage": [{"value": 80.0, "timestamp": at}],
        }
    )
    gpu, host = samples
    assert gpu["gpu"] == 0 and gpu["gpu_util"] == 35 and gpu["gpu_mem_used_mib"] == pytest.approx(20_000 * MB)
    assert gpu["gpu_mem_total_mib"] == pytest.approx(80_000 * MB)  # used over its share
    assert host["gpu"] is None and host["cpu_util"] == 80.0 and "gpu_util" not in host
    # Megabytes (10^6 bytes) sent since the run began, per node: bytes a second between samples; a
    # total that went down (the node's counters reset) has no rate, and the next is measured from it.
    sent = samples_from_histories(
        {
            "system/node-a/network_transmit_megabytes": [
                {"value": v, "timestamp": at + 10_000 * i} for i, v in enumerate([5.0, 105.0, 305.0, 2.0, 52.0])
            ],
            "system/node-b/network_transmit_megabytes": [{"value": 7.0, "timestamp": at + 10_000}],
        }
    )
    assert [(row["host"], row["timestamp"] - at / 1000, row["net_tx_bytes_per_s"]) for row in sent] == [
        ("node-a", 10, 10e6), ("node-a", 20, 20e6), ("node-a", 40, 5e6),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="is not a number"):
        samples_from_histories({"system/gpu_0_utilization_percentage": [{"value": "high", "timestamp": at}]})


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({}, "option 'experiment_ids' must be a JSON list"),
        ({"experiment_ids": "7"}, "option 'experiment_ids' must be a JSON list"),
        ({"experiment_ids": ["7"], "window_hours": "x"}, "option 'window_hours' must be a number"),
        ({"experiment_ids": ["7"], "user_teams": ["alice"]}, "option 'user_teams' must be a JSON object"),
    ],
)
def test_wrong_options_are_named(options, problem):
    settings = ConnectorSettings(name="ml", kind="mlflow", url="http://127.0.0.1:9/", options=options)
    with pytest.raises(ConfigError, match=problem):
        MlflowConnector(settings, HttpClient(settings))


def test_the_check_names_the_experiments():
    with FakePlatform() as server:
        Mlflow([]).install(server)
        settings = ConnectorSettings(name="ml", kind="mlflow", url=server.url, options={"experiment_ids": ["7"]})
        assert MlflowConnector(settings, HttpClient(settings)).check() == {"experiments": {"7": "imagenet"}}


class MlflowArtifacts(Mlflow):
    """Mlflow plus artifacts/list (one page of a folder at a time) and the server's get-artifact."""

    tree = {
        "": [
            {"path": "train.log", "is_dir": False, "file_size": 60},
            {"path": "gone.log", "is_dir": False, "file_size": 10},
            {"path": "metrics.png", "is_dir": False, "file_size": 9000},
            {"path": "model", "is_dir": True},
        ],
        "model": [
            {"path": "model/requirements.txt", "is_dir": False, "file_size": 14},
            {"path": "model/model.pkl", "is_dir": False, "file_size": 10**9},
        ],
    }
    files = {"train.log": b"epoch 1\nWARNING: DataLoader is slow\n", "model/requirements.txt": b"torch==2.3.0\n"}

    def install(self, server: FakePlatform) -> None:
        server.route("/api/2.0/mlflow/artifacts/list", self.listing)  # before the base's empty listing
        server.route("/get-artifact", self.download)
        super().install(server)

    def listing(self, path, query):
        if not self.authorised(query):
            return 401, {"error_code": "UNAUTHENTICATED"}, {}
        items = self.tree[query.get("path", "")]
        if query.get("page_token"):
            return 200, {"root_uri": "s3://bucket", "files": items[2:]}, {}
        return (
            200,
            {"root_uri": "s3://bucket", "files": items[:2], "next_page_token": "2"}
            if len(items) > 2
            else {"files": items},
            {},
        )

    def download(self, path, query):
        if not self.authorised(query):
            return 401, {"error_code": "UNAUTHENTICATED"}, {}
        content = self.files.get(query["path"])
        if content is None:
            return 404, {"error_code": "RESOURCE_DOES_NOT_EXIST"}, {}
        return 200, content, {}


@pytest.mark.django_db
def test_an_mlflow_pull_keeps_the_runs_logs_and_requirements_and_not_their_models(monkeypatch):
    monkeypatch.setenv("FLEET_SECRET_TEST_MLFLOW_TOKEN", "mlflow-token")
    with FakePlatform() as server:
        MlflowArtifacts([run(0)]).install(server)
        server.fault("/get-artifact", "503")
        result = sync.sync_connector(mlflow_connector(server.url).pk)
        downloads = sorted(q["path"] for p, f, q in server.requests if p == "/get-artifact" and not f)
    assert result.status == "succeeded", result.errors
    job = Job.objects.get(external_id="run000")
    stored = {a.path: a.kind for a in job.artifacts.all()}
    assert stored == {"train.log": "log", "model/requirements.txt": "script"}  # gone.log: 404, skipped
    assert downloads == ["gone.log", "model/requirements.txt", "train.log"]  # never the model or the image
    with job.artifacts.get(path="train.log").file.open("rb") as log:
        assert b"DataLoader is slow" in log.read()


@pytest.mark.django_db
def test_artifacts_can_be_left_out_or_chosen(monkeypatch):
    monkeypatch.setenv("FLEET_SECRET_TEST_MLFLOW_TOKEN", "mlflow-token")
    with FakePlatform() as server:
        MlflowArtifacts([run(0)]).install(server)
        sync.sync_connector(mlflow_connector(server.url, fetch_artifacts=False).pk)
        assert not any(p.startswith(("/get-artifact", "/api/2.0/mlflow/artifacts")) for p, _, _ in server.requests)
    assert not Job.objects.get(external_id="run000").artifacts.exists()
    Job.objects.all().delete()
    Connector.objects.all().delete()
    with FakePlatform() as server:
        MlflowArtifacts([run(0)]).install(server)
        sync.sync_connector(mlflow_connector(server.url, artifact_patterns=["*.pkl"]).pk)
    assert not Job.objects.get(external_id="run000").artifacts.exists()  # model.pkl matched, but 404 here
    Job.objects.all().delete()
    Connector.objects.all().delete()
    with FakePlatform() as server:
        MlflowArtifacts([run(0)]).install(server)
        sync.sync_connector(mlflow_connector(server.url, artifact_patterns=["*.log"], artifact_max_bytes=7).pk)
    log = Job.objects.get(external_id="run000").artifacts.get(path="train.log")
    with log.file.open("rb") as stored:
        kept = stored.read()
    # a larger log keeps its first and last halves (its end says why the run ended), a marker line between
    assert log.truncated and kept.startswith(b"epo\n[\xe2\x80\xa6 Fleet Triage left out ") and kept.endswith(b"low\n")
    settings = ConnectorSettings(name="ml", kind="mlflow", url="http://127.0.0.1:9/",
                                 options={"experiment_ids": ["7"], "artifact_patterns": "*.log"})  # fmt: skip
    with pytest.raises(ConfigError, match="option 'artifact_patterns' must be a JSON list"):
        MlflowConnector(settings, HttpClient(settings))
