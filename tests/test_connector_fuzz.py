"""Property-based fuzzing of what the connectors read from the platforms they pull: Prometheus,
slurmrestd, the Kubernetes API, MLflow, W&B and the generic REST contract.

Whatever a platform answers — any JSON value, or a valid answer with a value somewhere in it
replaced or removed — a connector hands back records (bad ones reported as RecordErrors) or stops
with its own ConnectorError naming what it read, never another exception: the sync reports a
ConnectorError on the connector's page, and anything else as a crash. FUZZ_EXAMPLES as in
tests/test_archive_fuzz.py (150 by default here).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fleet.canonical import RecordError
from fleet.connectors import generic, kubernetes, mlflow, prometheus, slurm, wandb
from fleet.connectors.base import BadData, ConnectorError, ConnectorSettings
from tests.test_archive_fuzz import _DELETE, JSON_VALUES, _changed
from tests.test_archive_fuzz import FUZZ as ARCHIVE_FUZZ

# Each example is a few milliseconds (no network, no database): more of them than the archive's.
FUZZ = settings(ARCHIVE_FUZZ, max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")))
FIXTURES = Path(__file__).parent / "fixtures" / "connectors"
# Fixed times (no wall clock): every document below is built around them.
NOW = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
END = NOW - timedelta(hours=2)
START = END - timedelta(minutes=30)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class Answers:
    """An HttpClient stand-in: each JSON request is answered by the first document whose key its path
    starts with (the longest keys first); files and logs are a line of text."""

    def __init__(self, documents: dict[str, object]):
        self.documents = sorted(documents.items(), key=lambda item: -len(item[0]))

    def _answer(self, path: str):
        return next(doc for prefix, doc in self.documents if path.startswith(prefix))

    def get_json(self, path, params=None):
        return self._answer(path)

    def post_form_json(self, path, form):
        return self._answer(path)

    def request_json(self, method, path, **kwargs):
        return self._answer(path)

    def get_bytes(self, path, params=None, *, max_bytes=None):
        return b"epoch 1 done\n"

    def get_head_tail(self, path, params=None, *, max_bytes):
        return b"epoch 1 done\n", False

    def get_signed_bytes(self, url, *, max_bytes, head_tail=False):
        content = json.dumps({"program": "train.py", "args": ["--lr", "0.1"]}).encode()
        return (content, False) if head_tail else content

    def close(self):
        pass


def connector(cls, documents: dict[str, object], metrics_documents: dict[str, object] | None = None, **options):
    settings = ConnectorSettings(name=f"{cls.kind}-fuzz", kind=cls.kind, url="http://platform", options=options)
    metrics = None
    if metrics_documents is not None:
        metrics_settings = ConnectorSettings(name="prom-fuzz", kind="prometheus", url="http://prom")
        metrics = prometheus.PrometheusConnector(metrics_settings, Answers(metrics_documents))
    return cls(settings, Answers(documents), metrics)


def pull_cleanly(source, watermark: str = "", until: datetime = NOW) -> int:
    """What a pull does with the connector (`sync._pull` and `_job`): the records it hands back are
    whole, its errors RecordErrors; a ConnectorError ends it (the sync reports that). Returns how
    many jobs it read."""
    jobs = 0
    try:
        for batch in source.list_jobs(watermark, until):
            assert all(isinstance(error, RecordError) and error.message for error in batch.errors)
            for record in batch.jobs:
                jobs += 1
                assert record.end_time >= record.start_time
                for step in (source.describe, source.fetch_series, source.fetch_artifacts):
                    try:
                        step(record)
                    except BadData as exc:  # recorded against the job, which is stored
                        assert str(exc)  # noqa: PT017 - either outcome is fine
    except ConnectorError as exc:
        assert str(exc)  # noqa: PT017 - either outcome is fine
    return jobs


def mutated(documents: dict[str, object], data, changes: int) -> dict[str, object]:
    """The documents with 1..changes values replaced by any JSON value, or removed."""
    documents = dict(documents)
    for _ in range(changes):
        key = data.draw(st.sampled_from(sorted(documents)))
        new = _changed(documents[key], data)
        documents[key] = None if new is _DELETE else new
    return documents


CHANGES = st.integers(1, 4)


# -- Prometheus --------------------------------------------------------------------------------------
SERIES_LABELS = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "gpu01", "hpc_job": "4242",
                 "modelName": "NVIDIA A100-SXM4-80GB"}  # fmt: skip


def prometheus_documents() -> dict[str, object]:
    times = [START.timestamp() + 60 * i for i in range(5)]
    return {
        "api/v1/labels": {"status": "success", "data": sorted(SERIES_LABELS) + ["instance"]},
        "api/v1/series": {"status": "success", "data": [SERIES_LABELS]},
        "api/v1/query_range": {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [{"metric": SERIES_LABELS, "values": [[t, "42"] for t in times]}],
            },
        },
    }


def prometheus_series_cleanly(documents) -> None:
    source = prometheus.PrometheusConnector(
        ConnectorSettings(name="prom-fuzz", kind="prometheus", url="http://prom"), Answers(documents)
    )
    request = prometheus.SeriesRequest(start=START, end=END, hpc_job="4242", hosts=("gpu01",), exclusive=True)
    try:
        source.gpu_models(request)
        frame = source.fetch_job_series(request)
    except ConnectorError as exc:
        assert str(exc)  # noqa: PT017 - either outcome is fine
        return
    assert frame is None or {"timestamp", "host", "gpu", "gpu_util"} <= set(frame.columns)


def test_the_valid_prometheus_answers_give_a_series():
    source = connector(prometheus.PrometheusConnector, prometheus_documents())
    request = prometheus.SeriesRequest(start=START, end=END, hpc_job="4242", hosts=("gpu01",))
    assert source.gpu_models(request) == ["NVIDIA A100-SXM4-80GB"]
    assert list(source.fetch_job_series(request)["gpu_util"]) == [42.0] * 5


def test_label_names_and_series_labels_that_are_not_text_are_named():
    """Both stopped a pull with "unhashable type: 'list'"."""
    documents = prometheus_documents()
    request = prometheus.SeriesRequest(start=START, end=END, hpc_job="4242")
    documents["api/v1/series"] = {"status": "success", "data": [{"modelName": ["A100"], "gpu": "0"}]}
    with pytest.raises(
        BadData, match=r"^prometheus-fuzz: /api/v1/series: a series is not an object of label names and"
    ):
        connector(prometheus.PrometheusConnector, documents).gpu_models(request)
    documents["api/v1/labels"] = {"status": "success", "data": ["gpu", ["modelName"]]}
    with pytest.raises(BadData, match=r"^prometheus-fuzz: /api/v1/labels: 'data' is not a list of label names$"):
        connector(prometheus.PrometheusConnector, documents).fetch_job_series(request)


@FUZZ
@given(doc=JSON_VALUES)
@example(doc=None)  # an answer of `null`: was TypeError from the JSON decoder
@example(doc={"status": "success", "data": {"resultType": "matrix", "result": [{"values": [[10**400, "1"]]}]}})
def test_any_json_as_a_query_range_answer_gives_series_or_bad_data(doc):
    try:
        series = prometheus.parse_query_range(doc, source="prom query_range")
    except BadData as exc:
        assert str(exc).startswith("prom query_range: ")  # noqa: PT017 - either outcome is fine
        return
    assert all(item.timestamps.shape == item.values.shape for item in series)


@FUZZ
@given(data=st.data(), changes=CHANGES)
def test_mutated_prometheus_answers_give_a_series_or_bad_data(data, changes):
    prometheus_series_cleanly(mutated(prometheus_documents(), data, changes))


# -- Slurm -----------------------------------------------------------------------------------------
def sacct_documents() -> dict[str, object]:
    return {name: json.loads((FIXTURES / name).read_text()) for name in ("sacct_v0.0.40.json", "sacct_dbv0.0.37.json")}


def parses_sacct_cleanly(doc) -> None:
    try:
        parsed = slurm.parse_sacct(doc, cluster="c1", source="slurm slurmdb/v0.0.40/jobs")
    except BadData as exc:
        assert str(exc).startswith("slurm slurmdb/v0.0.40/jobs: ")  # noqa: PT017 - either outcome is fine
        return
    assert all(isinstance(error, RecordError) and error.message for error in parsed.errors)
    for job in parsed.jobs:
        assert job.end_time >= job.start_time and job.gpu_count > 0


@FUZZ
@given(doc=JSON_VALUES)
@example(doc=[])  # was TypeError from the JSON decoder
def test_any_json_as_a_sacct_answer_gives_jobs_or_bad_data(doc):
    parses_sacct_cleanly(doc)


@FUZZ
@given(data=st.data(), changes=CHANGES)
def test_mutated_sacct_answers_give_jobs_or_errors_by_row(data, changes):
    for doc in mutated(sacct_documents(), data, changes).values():
        parses_sacct_cleanly(doc)


@FUZZ
@given(data=st.data(), changes=CHANGES, gpus=st.integers(-1, 8), seconds=st.floats(allow_nan=True))
def test_mutated_steps_give_a_utilization_or_none(data, changes, gpus, seconds):
    doc = mutated(sacct_documents(), data, changes)["sacct_v0.0.40.json"]
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    for job in jobs if isinstance(jobs, list) else []:
        if isinstance(job, dict):
            util = slurm.steps_gpu_util(job, gpus, seconds)
            assert util is None or 0 <= util <= 100


# -- Kubernetes -----------------------------------------------------------------------------------
def kubernetes_documents() -> dict[str, object]:
    job = {"apiVersion": "batch/v1", "kind": "Job", "name": "resnet", "uid": "job-uid", "controller": True}
    pods = []
    for n in range(2):
        pods.append(
            {
                "metadata": {
                    "name": f"resnet-{n}",
                    "namespace": "vision",
                    "uid": f"pod-{n}",
                    "labels": {"team": "vision"},
                    "creationTimestamp": iso(START - timedelta(seconds=30)),
                    "ownerReferences": [job],
                },
                "spec": {
                    "nodeName": f"n{n}",
                    "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "8"}}}],
                },
                "status": {
                    "phase": "Succeeded",
                    "startTime": iso(START),
                    "containerStatuses": [
                        {"name": "main", "restartCount": 1, "state": {"terminated": {
                            "exitCode": 0, "reason": "Completed", "startedAt": iso(START), "finishedAt": iso(END)}}}
                    ],
                },
            }
        )  # fmt: skip
    return {
        "api/v1/pods": {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}, "items": pods},
        "api/v1/nodes": node_list(),
    }


def node_list() -> dict:
    """The nodes as the connector lists them for shared GPUs' replicas: one time-sliced, one not."""
    from tests.test_connectors_kubernetes import POOLS

    return {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}, "items": POOLS[2:4]}


def test_the_valid_pod_list_gives_its_job():
    assert pull_cleanly(connector(kubernetes.KubernetesConnector, kubernetes_documents(), prometheus_documents())) == 1


@FUZZ
@given(doc=JSON_VALUES)
@example(doc={"items": [], "metadata": ["not", "an", "object"]})  # was AttributeError
def test_any_json_as_a_pod_list_gives_pods_or_bad_data(doc):
    try:
        pods, token = kubernetes.parse_pod_list(doc, source="k8s api/v1/pods")
    except BadData as exc:
        assert str(exc).startswith("k8s api/v1/pods: ")  # noqa: PT017 - either outcome is fine
        return
    assert all(isinstance(pod, dict) for pod in pods) and isinstance(token, str)


@FUZZ
@given(doc=JSON_VALUES, listed=st.booleans())
def test_any_json_as_a_node_list_gives_nodes_or_bad_data(doc, listed):
    try:
        nodes, problems = kubernetes.parse_node_list(doc, source="k8s api/v1/nodes", listed=listed)
    except BadData as exc:
        assert str(exc).startswith("k8s api/v1/nodes: ")  # noqa: PT017 - either outcome is fine
        return
    assert all(isinstance(name, str) and all(isinstance(v, str) for v in labels.values())
               for name, labels in nodes.items())  # fmt: skip
    assert all(isinstance(problem, RecordError) and problem.message for problem in problems)


@FUZZ
@given(data=st.data(), changes=CHANGES)
def test_mutated_pod_lists_give_jobs_or_errors(data, changes):
    documents = mutated(kubernetes_documents(), data, changes)
    pull_cleanly(connector(kubernetes.KubernetesConnector, documents, prometheus_documents()), until=NOW)


@FUZZ
@given(pods=st.lists(JSON_VALUES, max_size=4))
def test_any_pods_give_jobs_or_errors(pods):
    parsed = kubernetes.jobs_from_pods([p for p in pods if isinstance(p, dict)], gpu_jobs_only=False)
    assert all(isinstance(error, RecordError) and error.message for error in parsed.errors)


# -- MLflow ---------------------------------------------------------------------------------------
def mlflow_documents() -> dict[str, object]:
    metrics = [{"key": f"system/gpu_{i}_utilization_percentage", "value": 40.0, "timestamp": ms(END), "step": 3}
               for i in range(2)]  # fmt: skip
    metrics.append({"key": "system/cpu_utilization_percentage", "value": 55.0, "timestamp": ms(END), "step": 3})
    run = {
        "info": {"run_id": "run001", "experiment_id": "7", "user_id": "alice", "status": "FINISHED",
                 "start_time": ms(START), "end_time": ms(END)},
        "data": {"metrics": metrics, "tags": [{"key": "team", "value": "vision"}]},
    }  # fmt: skip
    history = [{"key": "k", "value": 40.0 + i, "timestamp": ms(START) + 60_000 * i, "step": i} for i in range(5)]
    return {
        "api/2.0/mlflow/runs/search": {"runs": [run]},
        "api/2.0/mlflow/metrics/get-history": {"metrics": history},
        "api/2.0/mlflow/artifacts/list": {"files": [{"path": "train.log", "is_dir": False, "file_size": 10}]},
    }


def test_the_valid_mlflow_answers_give_a_run():
    assert pull_cleanly(connector(mlflow.MlflowConnector, mlflow_documents(), experiment_ids=["7"])) == 1


@FUZZ
@given(data=st.data(), changes=CHANGES)
def test_mutated_mlflow_answers_give_runs_or_errors(data, changes):
    pull_cleanly(connector(mlflow.MlflowConnector, mutated(mlflow_documents(), data, changes), experiment_ids=["7"]))


# -- W&B ------------------------------------------------------------------------------------------
def wandb_documents() -> dict[str, object]:
    system = {f"system.gpu.{i}.gpu": 30.0 for i in range(2)} | {"system.cpu": 60.0}
    node = {
        "name": "r0001", "displayName": "resnet", "state": "finished", "createdAt": iso(START),
        "heartbeatAt": iso(END), "tags": ["baseline"], "config": json.dumps({"team": {"value": "vision"}}),
        "systemMetrics": json.dumps(system), "user": {"username": "alice"},
    }  # fmt: skip
    events = [json.dumps({"_timestamp": START.timestamp() + 60 * i, "system.gpu.0.gpu": 30.0, "system.cpu": 50.0})
              for i in range(5)]  # fmt: skip
    files = [{"node": {"name": name, "directUrl": f"http://storage/{name}"}}
             for name in ("wandb-metadata.json", "output.log", "requirements.txt")]  # fmt: skip
    project = {
        "runs": {"edges": [{"node": node}], "pageInfo": {"hasNextPage": False, "endCursor": "c1"}},
        "run": {"events": events, "files": {"edges": files}},
        "runCount": 1,
    }
    return {"graphql": {"data": {"project": project}}}


def test_the_valid_wandb_answers_give_a_run():
    assert pull_cleanly(connector(wandb.WandbConnector, wandb_documents(), entity="lab", projects=["p"])) == 1


@FUZZ
@given(data=st.data(), changes=CHANGES)
def test_mutated_wandb_answers_give_runs_or_errors(data, changes):
    documents = mutated(wandb_documents(), data, changes)
    pull_cleanly(connector(wandb.WandbConnector, documents, entity="lab", projects=["p"]))


# -- the generic REST contract --------------------------------------------------------------------
def generic_documents() -> dict[str, object]:
    job = {"job_id": "g-1", "user": "alice", "team": "vision", "gpu_count": 2, "start_time": iso(START),
           "end_time": iso(END), "name": "train", "labels": {"queue": "a"}}  # fmt: skip
    samples = [{"timestamp": iso(START + timedelta(minutes=i)), "host": "n1", "gpu": 0, "gpu_util": 40.0}
               for i in range(5)]  # fmt: skip
    return {
        "jobs": {"jobs": [job], "next_cursor": "1", "has_more": False},
        "jobs/g-1/series": {"samples": samples},
        "jobs/g-1/artifacts": {"artifacts": [{"kind": "log", "path": "stdout.log", "content": "hello\n"}]},
    }


def test_the_valid_generic_answers_give_a_job():
    assert pull_cleanly(connector(generic.GenericConnector, generic_documents())) == 1


@FUZZ
@given(data=st.data(), changes=CHANGES)
def test_mutated_generic_answers_give_jobs_or_errors(data, changes):
    pull_cleanly(connector(generic.GenericConnector, mutated(generic_documents(), data, changes)))


@FUZZ
@given(doc=JSON_VALUES, job_id=st.sampled_from(["g-1"]))
@example(doc={"samples": [None]}, job_id="g-1")  # was TypeError
@example(doc={"artifacts": [None]}, job_id="g-1")  # was AttributeError
@example(doc={"samples": [{"timestamp": "2026-11-02T10:00:00Z", "gpu": -(2**63) - 1}]}, job_id="g-1")  # OverflowError
def test_any_json_as_series_or_artifacts_gives_records_or_bad_data(doc, job_id):
    for parse in (
        lambda: generic.frame_from_samples(doc, source="series of g-1"),
        lambda: generic.artifacts_from_doc(doc, job_id, max_bytes=100, source="artifacts of g-1"),
    ):
        try:
            parse()
        except BadData as exc:
            assert " of g-1: " in str(exc)  # noqa: PT017 - either outcome is fine


@FUZZ
@given(doc=JSON_VALUES, raw=st.binary(max_size=64))
def test_any_run_metadata_gives_a_program_or_none(doc, raw):
    for metadata in (json.dumps(doc).encode(), raw):
        program = wandb.run_program(metadata)
        assert program is None or isinstance(program.command, str)


# -- the connection check: one request, its answer in the check's words ----------------------------
CHECKS = [
    (prometheus.PrometheusConnector, {}),
    (slurm.SlurmConnector, {}),
    (kubernetes.KubernetesConnector, {"label_selector": "team"}),
    (mlflow.MlflowConnector, {"experiment_ids": ["7"]}),
    (wandb.WandbConnector, {"entity": "lab", "projects": ["p"]}),
    (generic.GenericConnector, {}),
]


@FUZZ
@given(doc=JSON_VALUES)
@example(doc=["a list where an object belongs"])  # slurm's check: was AttributeError
def test_any_json_as_the_check_s_answer_gives_a_result_or_a_connector_error(doc):
    for cls, options in CHECKS:
        source = connector(cls, {"": doc}, **options)
        try:
            outcome = source.check()
        except ConnectorError as exc:
            assert str(exc)  # noqa: PT017 - either outcome is fine
            continue
        assert isinstance(outcome, dict)


def ray_documents() -> dict[str, object]:
    """A RayJob's RayCluster (head, two GPU workers), its submitter, and the RayJob as KubeRay lists it."""
    from tests.test_connectors_kubernetes import pod_list, ray_pods, rayjob

    return {
        "api/v1/pods": pod_list(ray_pods()),
        "apis/ray.io/v1/rayjobs": {"kind": "RayJobList", "metadata": {}, "items": [rayjob()]},
        "api/v1/nodes": node_list(),
    }


def test_the_valid_ray_answers_give_the_rayjob():
    from tests.test_connectors_sync import NOW as LIVE_NOW

    assert pull_cleanly(connector(kubernetes.KubernetesConnector, ray_documents()), until=LIVE_NOW + timedelta(1)) == 1


@FUZZ
@given(data=st.data(), changes=CHANGES)
def test_mutated_ray_answers_give_jobs_or_errors(data, changes):
    from tests.test_connectors_sync import NOW as LIVE_NOW

    documents = mutated(ray_documents(), data, changes)
    pull_cleanly(connector(kubernetes.KubernetesConnector, documents), until=LIVE_NOW + timedelta(1))


def test_a_rayjob_whose_metadata_is_not_an_object_is_reported_and_skipped():
    """It stopped the pull with an AttributeError; the RayJob is now found from its submitter alone."""
    from tests.test_connectors_sync import NOW as LIVE_NOW

    documents = ray_documents()
    documents["apis/ray.io/v1/rayjobs"]["items"][0]["metadata"] = True
    batches = list(connector(kubernetes.KubernetesConnector, documents).list_jobs("", LIVE_NOW + timedelta(1)))
    assert [(e.file, e.message) for b in batches for e in b.errors] == [
        ("kubernetes-fuzz apis/ray.io/v1/rayjobs", "RayJob 1: 'metadata' is not an object, so it was skipped")
    ]
    assert [job.labels["owner_kind"] for b in batches for job in b.jobs] == ["RayJob"]


GENERIC_FIELDS = [*generic.REQUIRED, "submit_time", "node_count", "cpu_count", "job_type", "labels", "cluster"]
GENERIC_FIELDS += ["gpu_share", "gpu_unit"]


@FUZZ
@given(
    fields=st.dictionaries(
        st.sampled_from(GENERIC_FIELDS),
        st.one_of(
            JSON_VALUES, st.sampled_from(["2026-11-02T10:00:00Z", "1793613600", "1e20", "-1", "batch", "1/7", 10**400])
        ),
    )
)
def test_any_generic_job_object_gives_a_job_or_a_value_error_naming_the_field(fields):
    """The generic connector reports a ValueError as that job's error (row and job id); any other
    exception would stop the pull."""
    valid = generic_documents()["jobs"]["jobs"][0]
    try:
        job = generic.job_from_object({**valid, **fields}, cluster="c1")
    except ValueError as exc:
        assert str(exc)  # noqa: PT017 - either outcome is fine
        return
    assert job.end_time >= job.start_time and job.gpu_count >= 0
