"""The Kubernetes connector against a loopback server answering as the API server does on a GPU
cluster run by the NVIDIA GPU Operator: MIG slices and shared (time-sliced) GPUs as their own
resources, pods the kubelet turned away, JobSets, expired `continue` tokens (410), RBAC refusals
(403) in the API server's own words."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fleet.connectors import sync
from fleet.connectors.models import Connector
from fleet.models import Job
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import NOW, make_connector, pod

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_http(settings):
    settings.CONNECTOR_HTTP_TIMEOUT = 2
    settings.CONNECTOR_HTTP_RETRIES = 2
    settings.CONNECTOR_HTTP_BACKOFF = 0.01
    settings.CONNECTOR_HTTP_BACKOFF_MAX = 0.05


T = NOW - timedelta(hours=3)
JOB = {"apiVersion": "batch/v1", "kind": "Job", "name": "resnet", "uid": "job-uid", "controller": True}


def status(code: int, reason: str, message: str) -> dict:
    """A `Status` as the API server answers an error."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def pod_list(pods: list[dict], token: str = "") -> dict:
    # Items of a real PodList carry no kind/apiVersion of their own.
    items = [{k: v for k, v in p.items() if k != "kind"} for p in pods]
    return {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "9", "continue": token},
        "items": items,
    }


def serve(server: FakePlatform, pods: list[dict]) -> None:
    server.route("/api/v1/namespaces/", lambda path, query: (200, b"epoch 1 done\n", {}))
    server.route("/api/v1/pods", lambda path, query: (200, pod_list(pods), {}))


def with_resources(item: dict, resources: dict) -> dict:
    item["spec"]["containers"][0]["resources"] = {"limits": resources, "requests": resources}
    return item


def pull(server: FakePlatform, **fields) -> sync.SyncResult:
    connector = make_connector("kubernetes", server.url, **fields)
    return sync.sync_connector(connector.pk)


def test_pods_on_mig_slices_and_shared_gpus_are_gpu_jobs():
    """With MIG's mixed strategy a pod asks for `nvidia.com/mig-1g.10gb`, and with time-slicing or MPS
    renamed (`renameByDefault`) for `nvidia.com/gpu.shared`: such pods counted no GPU, and with
    `gpu_jobs_only` (the default) their jobs were left out of the fleet altogether."""
    mig = with_resources(pod("embed-0", "p1", start=T, end=T + timedelta(hours=1)), {"nvidia.com/mig-1g.10gb": "1"})
    shared = with_resources(
        pod("notebook-0", "p2", start=T, end=T + timedelta(hours=1), namespace="nlp"), {"nvidia.com/gpu.shared": "1"}
    )
    two_slices = with_resources(
        pod("eval-0", "p3", start=T, end=T + timedelta(hours=1)), {"nvidia.com/mig-3g.40gb": "2", "cpu": "4"}
    )
    cpu_only = with_resources(pod("etl-0", "p4", start=T, end=T + timedelta(hours=1)), {"cpu": "4"})
    with FakePlatform() as server:
        serve(server, [mig, shared, two_slices, cpu_only])
        result = pull(server)
    assert result.status == "succeeded", result.errors
    jobs = {j.name: j for j in Job.objects.all()}
    assert sorted(jobs) == ["embed-0", "eval-0", "notebook-0"]
    assert jobs["embed-0"].gpu_count == 1 and jobs["embed-0"].labels["gpu_resources"] == ["nvidia.com/mig-1g.10gb"]
    assert jobs["notebook-0"].gpu_count == 1 and jobs["notebook-0"].labels["gpu_resources"] == ["nvidia.com/gpu.shared"]
    assert jobs["eval-0"].gpu_count == 2


def test_a_job_whose_first_pod_the_kubelet_turned_away_is_stored_from_its_retry():
    """A pod the kubelet rejects (`UnexpectedAdmissionError` when the device plugin cannot allocate its
    GPUs) ends `Failed` with no start time and no container status; the Job's controller makes another
    pod, which runs. The whole job was refused on every pull ('pod resnet-a finished without
    start/finish times') and never stored."""
    turned_away = pod("resnet-a", "p1", owner=JOB, phase="Failed", gpus=2, start=T, end=None)
    turned_away["status"] = {
        "phase": "Failed",
        "reason": "UnexpectedAdmissionError",
        "message": "Pod was rejected: Allocate failed due to requested number of devices unavailable",
    }
    ran = pod("resnet-b", "p2", owner=JOB, gpus=2, start=T + timedelta(minutes=1), end=T + timedelta(hours=1))
    # It was OOM-killed once and restarted in place (restartPolicy: OnFailure) before it succeeded.
    ran["status"]["containerStatuses"][0].update(
        restartCount=1, lastState={"terminated": {"reason": "OOMKilled", "exitCode": 137, "startedAt": "x"}}
    )
    never_started = pod("bare", "p3", phase="Failed", start=T, end=None)  # a bare pod evicted before it ran
    never_started["status"] = {"phase": "Failed", "reason": "Evicted", "startTime": T.strftime("%Y-%m-%dT%H:%M:%SZ")}
    with FakePlatform() as server:
        serve(server, [turned_away, ran, never_started])
        result = pull(server)
    assert result.status == "succeeded", result.errors
    assert not result.errors
    job = Job.objects.get()
    assert job.external_id == "job-uid" and job.gpu_count == 2 and job.state == "Succeeded"
    assert job.start_time == T + timedelta(minutes=1) and job.end_time == T + timedelta(hours=1)
    assert job.labels["pods"] == ["resnet-b"]
    assert job.labels["pods_never_ran"] == ["resnet-a: UnexpectedAdmissionError"]
    assert job.labels["reasons"] == ["OOMKilled"] and job.labels["restarts"] == 1


def test_the_pods_of_a_jobset_are_one_job():
    """A JobSet (and Kubeflow Trainer's TrainJob on it) owns one Job per replicated job, and those own
    the pods: each child Job was stored as a job of its own, a 2-node training run as two 4-GPU jobs."""
    pods = []
    for index, node in enumerate(("n1", "n2")):
        owner = {"kind": "Job", "name": f"llm-workers-{index}", "uid": f"child-{index}", "controller": True}
        labels = {
            "jobset.sigs.k8s.io/jobset-name": "llm",
            "jobset.sigs.k8s.io/jobset-uid": "jobset-uid",
            "jobset.sigs.k8s.io/replicatedjob-name": "workers",
            "jobset.sigs.k8s.io/job-index": str(index),
        }
        pods.append(
            pod(f"llm-workers-{index}-0-x", f"p{index}", owner=owner, labels=labels, gpus=4, node=node, start=T,
                end=T + timedelta(hours=2), namespace="nlp")
        )  # fmt: skip
    with FakePlatform() as server:
        serve(server, pods)
        result = pull(server)
    assert result.status == "succeeded", result.errors
    job = Job.objects.get()
    assert (job.external_id, job.name, job.gpu_count, job.node_count) == ("jobset-uid", "llm", 8, 2)
    assert job.labels["owner_kind"] == "JobSet" and job.labels["pods"] == ["llm-workers-0-0-x", "llm-workers-1-0-x"]


def test_an_expired_continue_token_restarts_the_listing_and_stores_each_job_once():
    """etcd compacts the revision a `continue` token names after ~5 minutes; the API server then answers
    410 Gone with reason Expired. The listing starts again from the first page."""
    pods = [pod(f"job-{n}", f"p{n}", start=T, end=T + timedelta(minutes=30 + n)) for n in range(5)]
    expired = {"done": False}

    def pages(path, query):
        start = int(query.get("continue") or 0)
        if start == 2 and not expired["done"]:
            expired["done"] = True
            message = (
                "The provided continue parameter is too old to display a consistent list result. You can start a "
                "new list without the continue parameter, or use the continue token in this response to retrieve "
                "the remainder of the results."
            )
            return 410, status(410, "Expired", message), {}
        more = start + 2 < len(pods)
        return 200, pod_list(pods[start : start + 2], str(start + 2) if more else ""), {}

    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", lambda path, query: (200, b"", {}))
        server.route("/api/v1/pods", pages)
        result = pull(server, options={"page_size": 2, "fetch_logs": False})
        firsts = [q for p, _, q in server.requests if p == "/api/v1/pods" and "continue" not in q]
    assert result.status == "succeeded", result.errors
    assert len(firsts) == 2  # the listing began again
    assert Job.objects.count() == 5 and result.created == 5


def test_rbac_refusals_name_what_the_service_account_may_not_do():
    """Listing pods across the cluster needs a ClusterRole; reading logs needs `get` on `pods/log` too.
    The API server's 403 says which (user, verb, resource, scope) and the page quotes it; a job whose
    logs are refused is stored without them, the refusal recorded on the run."""
    user = "system:serviceaccount:fleet:triage"
    cluster_scope = status(
        403,
        "Forbidden",
        f'pods is forbidden: User "{user}" cannot list resource "pods" in API group "" at the cluster scope',
    )
    with FakePlatform() as server:
        server.route("/api/v1/pods", lambda path, query: (403, cluster_scope, {}))
        result = pull(server)
    assert result.status == "failed"
    assert "does not let these credentials read /api/v1/pods (HTTP 403" in result.message
    assert 'cannot list resource \\"pods\\"' in result.message or 'cannot list resource "pods"' in result.message
    assert "at the cluster scope" in result.message

    logs = status(
        403,
        "Forbidden",
        f'pods "resnet-b" is forbidden: User "{user}" cannot get resource "pods/log" in API group "" in the '
        'namespace "vision"',
    )
    Job.objects.all().delete()
    Connector.objects.all().delete()
    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", lambda path, query: (403, logs, {}))
        server.route(
            "/api/v1/pods",
            lambda path, query: (200, pod_list([pod("resnet-b", "p2", start=T, end=T + timedelta(hours=1))]), {}),
        )  # noqa: E501
        result = pull(server)
    assert result.status in ("succeeded", "partial") and Job.objects.count() == 1
    (error,) = result.errors
    assert 'cannot get resource "pods/log"' in error["message"] and "HTTP 403" in error["message"]
