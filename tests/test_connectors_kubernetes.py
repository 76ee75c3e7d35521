"""The Kubernetes connector against a loopback server answering as the API server does on a GPU
cluster run by the NVIDIA GPU Operator: MIG slices and shared (time-sliced) GPUs as their own
resources, pods the kubelet turned away, JobSets, expired `continue` tokens (410), RBAC refusals
(403) in the API server's own words, a projected service-account token that rotates under a pull,
and TLS with the cluster's own CA."""

from __future__ import annotations

import html
import os
import re
import ssl
from datetime import UTC, datetime, timedelta

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
    410 Gone with reason Expired. Without a token of its own in the Status to go on with, the listing starts again
    from the first page."""
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


EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


def expired(fresh: str = "") -> dict:
    """The API server's 410 for an expired `continue` token: a Status whose own `metadata.continue` (when it gives
    one) goes on with the rest of the list at the latest revision."""
    answer = status(410, "Expired", EXPIRED)
    answer["metadata"] = {"continue": fresh} if fresh else {}
    return answer


def test_a_listing_slower_than_etcds_compaction_goes_on_with_the_inconsistent_continue_token():
    """On a cluster whose listing outlasts etcd's compaction (thousands of pods, a busy API server) every
    `continue` token had expired by the time it was used: the listing began again from the first page, three
    times, and the pull failed (*the pod listing kept expiring*), every pull, storing nothing. The 410's Status
    carries a token for the rest of the list (at the latest revision); the listing now goes on with it, keeping
    the pages it read, each pod once."""
    pods = [pod(f"job-{n}", f"p{n}", start=T, end=T + timedelta(minutes=30 + n)) for n in range(7)]

    def pages(path, query):
        token = query.get("continue") or "0"
        if not token.startswith("inconsistent-") and token != "0":  # every token is stale once it is used
            return 410, expired(f"inconsistent-{token}"), {}
        start = int(token.removeprefix("inconsistent-"))
        more = start + 2 < len(pods)
        return 200, pod_list(pods[start : start + 2], str(start + 2) if more else ""), {}

    with FakePlatform() as server:
        server.route("/api/v1/pods", pages)
        result = pull(server, options={"page_size": 2, "fetch_logs": False})
        asked = [q.get("continue", "") for p, _, q in server.requests if p == "/api/v1/pods"]
    assert result.status == "succeeded", result.errors
    assert asked == ["", "2", "inconsistent-2", "4", "inconsistent-4", "6", "inconsistent-6"]
    assert Job.objects.count() == 7 and result.created == 7


def test_a_listing_that_cannot_go_on_fails_after_a_bounded_number_of_tries():
    """An API server whose every token expires, and whose 410 offers no token to go on with (or one that expires
    too), cannot be listed: the pull says so after a few tries instead of listing again and again."""
    pods = [pod(f"job-{n}", f"p{n}", start=T, end=T + timedelta(minutes=30 + n)) for n in range(4)]

    def no_way_on(path, query):
        if query.get("continue"):
            return 410, expired(), {}
        return 200, pod_list(pods[:2], "2"), {}

    def stale_again(path, query):
        if query.get("continue"):
            return 410, expired(f"inconsistent-{len(server.requests)}"), {}
        return 200, pod_list(pods[:2], "2"), {}

    for answer in (no_way_on, stale_again):
        with FakePlatform() as server:
            server.route("/api/v1/pods", answer)
            result = pull(server, name=answer.__name__, options={"page_size": 2, "fetch_logs": False})
            asked = server.count("/api/v1/pods")
        assert result.status == "failed" and "410 Gone" in result.message, result.message
        assert asked <= 10
    assert not Job.objects.exists()


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


def kubelet_token_dir(folder, token: str):
    """The layout the kubelet writes a projected volume in: `token -> ..data/token`, `..data` a link to
    a timestamped folder, swapped atomically when the token is renewed."""
    stamp = f"..{datetime.now(UTC):%Y_%m_%d_%H_%M_%S.%f}"
    (folder / stamp).mkdir()
    (folder / stamp / "token").write_text(token)
    tmp = folder / "..data_tmp"
    tmp.symlink_to(stamp)
    os.replace(tmp, folder / "..data")
    if not (folder / "token").is_symlink():
        (folder / "token").symlink_to("..data/token")


def test_a_projected_token_that_rotates_during_a_pull_is_read_again(settings, tmp_path):
    """The kubelet renews a projected service-account token (`expirationSeconds`, at least 10 minutes)
    under a running pull; once the old one expires the API server answers 401. The pull failed there
    (or its jobs lost their logs); the connector now reads the file again on a 401 and goes on."""
    folder = tmp_path / "serviceaccount"
    folder.mkdir()
    settings.CONNECTOR_SECRET_DIRS = [str(folder)]
    kubelet_token_dir(folder, "token-one")
    pods = [pod(f"job-{n}", f"p{n}", start=T, end=T + timedelta(minutes=30 + n)) for n in range(4)]
    current = {"token": "token-one"}

    def authorised(handler):
        def answer(path, query):
            if query["_headers"].get("Authorization") != f"Bearer {current['token']}":
                return 401, status(401, "Unauthorized", "Unauthorized"), {}
            return handler(path, query)

        return answer

    def pages(path, query):
        start = int(query.get("continue") or 0)
        if start == 2 and current["token"] == "token-one":  # renewed, and the old token expired, mid-listing
            kubelet_token_dir(folder, "token-two")
            current["token"] = "token-two"
            return 401, status(401, "Unauthorized", "Unauthorized"), {}
        more = start + 2 < len(pods)
        return 200, pod_list(pods[start : start + 2], str(start + 2) if more else ""), {}

    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", authorised(lambda path, query: (200, b"epoch 1\n", {})))
        server.route("/api/v1/pods", authorised(pages))
        connector = make_connector("kubernetes", server.url, auth=Connector.Auth.BEARER, options={"page_size": 2})
        connector.set_secret_reference(f"file:{folder}/token")
        connector.save()
        result = sync.sync_connector(connector.pk)
        sent = [q["_headers"].get("Authorization") for _, _, q in server.requests]
    assert result.status == "succeeded", result.message
    assert not result.errors
    assert Job.objects.count() == 4
    assert sent[:2] == ["Bearer token-one", "Bearer token-one"] and set(sent[2:]) == {"Bearer token-two"}

    # A token the server refuses while the file holds no other is a real refusal: said, not asked again.
    current["token"] = "token-three"
    Job.objects.all().delete()
    with FakePlatform() as server:
        server.route("/api/v1/pods", authorised(pages))
        Connector.objects.filter(pk=connector.pk).update(url=server.url, watermark="")
        result = sync.sync_connector(connector.pk)
        tries = server.count("/api/v1/pods")
    assert result.status == "failed" and "refused the credentials (HTTP 401" in result.message
    assert tries == 1


def make_ca(folder):
    """A cluster CA (as kubeadm makes one) and an API server certificate for 127.0.0.1 signed by it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(text):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("kubernetes"))
        .issuer_name(name("kubernetes"))
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, True, False, False, True, False, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(name("kube-apiserver"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("kubernetes.default.svc"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (folder / "ca.crt").write_bytes(ca.public_bytes(pem))
    (folder / "tls.crt").write_bytes(cert.public_bytes(pem))
    (folder / "tls.key").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return folder / "ca.crt"


class TlsPlatform(FakePlatform):
    def __init__(self, folder):
        super().__init__()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(folder / "tls.crt", folder / "tls.key")
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.httpd.server_address[1]}"


def test_the_clusters_ca_bundle_is_used_even_where_the_environment_names_another(tmp_path, monkeypatch):
    """In-cluster, the API server's certificate is signed by the cluster's own CA
    (`/var/run/secrets/kubernetes.io/serviceaccount/ca.crt`), given as the connector's CA bundle. Where
    the image sets REQUESTS_CA_BUNDLE (or CURL_CA_BUNDLE) for its own use, `requests` put that in place of
    the connector's bundle, and every pull failed on TLS."""
    import certifi

    ca = make_ca(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", certifi.where())
    with TlsPlatform(tmp_path) as server:
        serve(server, [pod("resnet-0", "p1", start=T, end=T + timedelta(hours=1))])
        result = pull(server, ca_bundle=str(ca), name="k8s-tls")
        trusting = pull(server, name="k8s-no-ca")
    assert result.status == "succeeded", result.message
    assert Job.objects.filter(external_id="p1").exists()
    # Without the bundle the certificate is not trusted, and the page says what to check.
    assert trusting.status == "failed" and "The TLS connection to 127.0.0.1" in trusting.message
    assert "check the CA bundle" in trusting.message


def test_a_pods_gpu_model_comes_from_dcgm_and_prices_its_job(tmp_path):
    """Few pods name their GPU model (a `nvidia.com/gpu.product` node selector); the job's model was
    empty, so on a cluster of H100 and L4 nodes priced per model every pod was charged the default
    price. dcgm-exporter's `modelName` on the job's own GPU series (as the GPU Operator's
    ServiceMonitor stores them, without honorLabels) now names it; a model the pod names stays."""
    from decimal import Decimal

    from fleet.models import Cluster, GpuModelPrice
    from tests.test_connectors_prometheus import _binaries, backfilled_tsdb, running_prometheus

    prometheus, promtool = _binaries()
    exporter = 'pod="nvidia-dcgm-exporter-x",namespace="gpu-operator",container="nvidia-dcgm-exporter"'
    gpus = [  # (node, gpu, model, workload pod)
        ("h1", 0, "NVIDIA H100 80GB HBM3", "llm-0"),
        ("h1", 1, "NVIDIA H100 80GB HBM3", "llm-0"),
        ("l1", 0, "NVIDIA L4", "infer-0"),
        ("l1", 1, "NVIDIA L4", ""),  # idle, no pod
    ]
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for host, gpu, model, workload in gpus:
        labels = f'gpu="{gpu}",UUID="GPU-{host}-{gpu}",modelName="{model}",Hostname="{host}",{exporter}'
        if workload:
            labels += f',exported_pod="{workload}",exported_namespace="ml",exported_container="main"'
        stamp = T.timestamp()
        while stamp <= (T + timedelta(hours=1)).timestamp():
            lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 50.0 {int(stamp)}")
            stamp += 15
    lines.append("# EOF")
    tsdb = backfilled_tsdb(promtool, tmp_path, "\n".join(lines) + "\n")
    selected = pod("pinned-0", "p3", start=T, end=T + timedelta(hours=1), namespace="ml", node="h1")
    selected["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    pods = [
        pod("llm-0", "p1", gpus=2, start=T, end=T + timedelta(hours=1), namespace="ml", node="h1"),
        pod("infer-0", "p2", start=T, end=T + timedelta(hours=1), namespace="ml", node="l1"),
        selected,
        # no dcgm-exporter series: its node's nvidia.com/gpu.product label names its model
        pod("t4-0", "p4", start=T, end=T + timedelta(hours=1), namespace="ml", node="t1"),
    ]
    # GPU Feature Discovery's labels: dcgm-exporter's modelName, the job's own GPUs' as it ran, comes first
    nodes = [node(name, **{"nvidia.com/gpu.product": product}) for name, product in
             (("h1", "NVIDIA-H100-80GB-HBM3"), ("l1", "NVIDIA-L4"), ("t1", "Tesla-T4"))]  # fmt: skip
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour=Decimal("1.00"))
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="NVIDIA H100 80GB HBM3", price_per_gpu_hour=Decimal("4.00"))
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="NVIDIA L4", price_per_gpu_hour=Decimal("0.50"))
    config = "global:\n  scrape_interval: 15s\nscrape_configs: []\n"
    with (
        running_prometheus(prometheus, tmp_path, config, f"--storage.tsdb.path={tsdb}") as url,
        FakePlatform() as server,
    ):
        serve(server, pods)
        serve_nodes(server, nodes)
        prom = Connector.objects.create(name="prom", kind="prometheus", url=url, options={"step": "15s"})
        result = pull(server, metrics_from=prom, options={"fetch_logs": False})
    assert result.status == "succeeded", result.errors
    jobs = {j.name: j for j in Job.objects.all()}
    assert jobs["llm-0"].gpu_model == "NVIDIA H100 80GB HBM3" and jobs["llm-0"].cost == Decimal("8.00")
    assert jobs["infer-0"].gpu_model == "NVIDIA L4" and jobs["infer-0"].cost == Decimal("0.50")
    assert jobs["pinned-0"].gpu_model == "NVIDIA-H100-80GB-HBM3"  # its own, as the pod names it
    assert "gpu_model_from" not in jobs["llm-0"].labels
    assert jobs["t4-0"].gpu_model == "Tesla-T4" and jobs["t4-0"].cost == Decimal("1.00")  # no T4 row: the default
    assert jobs["t4-0"].labels["gpu_model_from"] == "label nvidia.com/gpu.product of t1"


def test_check_connection_says_when_the_label_selector_matches_no_pod(client, operator):
    """`label_selector` selects pods; a node label (`nvidia.com/gpu.present=true`, which GPU Feature
    Discovery puts on nodes) matches none, and every pull stored nothing while **Check connection**
    said `pods_visible: True` (it listed without the selector)."""
    pods = [pod("resnet-0", "p1", start=T, end=T + timedelta(hours=1), labels={"team": "vision"})]

    def pages(path, query):
        wanted = query.get("labelSelector")
        matching = [p for p in pods if not wanted or wanted in p["metadata"]["labels"]]  # "key" selectors only
        return 200, pod_list(matching), {}

    with FakePlatform() as server:
        server.route("/api/v1/pods", pages)
        wrong = make_connector(
            "kubernetes", server.url, name="k8s", options={"label_selector": "nvidia.com/gpu.present"}
        )
        client.force_login(operator)
        page = client.post(f"/connectors/{wrong.pk}/check/", follow=True).content.decode()
        assert "k8s answers. pods_visible: False" in page
        assert "label_selector: &#x27;nvidia.com/gpu.present&#x27; matches no pod: pulls will store nothing" in page
        Connector.objects.filter(pk=wrong.pk).update(options={"label_selector": "team"})
        page = client.post(f"/connectors/{wrong.pk}/check/", follow=True).content.decode()
    assert "k8s answers. pods_visible: True" in page


def test_a_node_that_is_down_costs_its_pods_logs_not_the_pull():
    """The API server reads a pod's log from its node's kubelet; for a node that is down (NotReady after an
    Xid error, being drained) it answers 500 to every try. That failed the pull, and every pull after it,
    until the pod was deleted: no job of the cluster was stored meanwhile. Now the job is stored with the
    logs that could be read, the others named in its labels, and the node is not asked again."""
    owner = {"kind": "PyTorchJob", "name": "llm", "uid": "ptj", "controller": True}
    end = T + timedelta(hours=1)
    pods = [
        pod("llm-master-0", "p1", owner=owner, start=T, end=end, node="n1"),
        pod("llm-worker-0", "p2", owner=owner, start=T, end=end, node="n2"),
        pod("llm-worker-1", "p3", owner=owner, start=T, end=end, node="n2"),
        pod("lone", "p4", start=T, end=end + timedelta(minutes=1), node="n2"),
    ]
    unreachable = status(
        500, "", 'Get "https://10.0.0.2:10250/containerLogs/vision/llm-worker-0/main": dial tcp 10.0.0.2:10250: '
        "connect: no route to host"
    )  # fmt: skip

    def logs(path, query):
        name = path.split("/")[-2]
        if name == "llm-master-0":
            return 200, b"2026-01-01T00:00:00Z epoch 1 done\n", {}
        return 500, unreachable, {}

    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", logs)
        server.route("/api/v1/pods", lambda path, query: (200, pod_list(pods), {}))
        result = pull(server)
        asked = {p.split("/")[-2] for p, _, _ in server.requests if p.endswith("/log")}
    assert result.status in ("succeeded", "partial"), result.message
    llm = Job.objects.get(external_id="ptj")
    assert [a.path for a in llm.artifacts.all()] == ["llm-master-0/main.run1.log"]
    worker, other = llm.labels["logs_unavailable"]
    assert worker.startswith("llm-worker-0: ") and "HTTP 500" in worker
    assert other == "llm-worker-1: its node n2 did not serve logs"
    assert "llm-worker-1" not in asked  # one dead node costs one pod's retries, not every pod's
    lone = Job.objects.get(external_id="p4")  # its only log unreadable: stored, the reason on the run
    assert not lone.artifacts.exists()
    (error,) = result.errors
    assert error["job_id"] == "p4" and "no log could be read: lone:" in error["message"]


def test_the_job_page_says_what_kubernetes_said_about_the_pods(client, operator):
    """The pods' reasons (OOMKilled before a restart, Evicted), pods that never ran and logs that could not
    be read were kept in the job's labels, which no page shows: an operator saw a 'Succeeded' job and
    nothing of the OOM kill or of the pod the kubelet turned away."""
    turned_away = pod("resnet-a", "p1", owner=JOB, phase="Failed", start=T, end=None)
    turned_away["status"] = {"phase": "Failed", "reason": "UnexpectedAdmissionError"}
    ran = with_resources(
        pod("resnet-b", "p2", owner=JOB, start=T, end=T + timedelta(hours=1)), {"nvidia.com/mig-3g.40gb": "1"}
    )
    ran["status"]["containerStatuses"][0].update(
        restartCount=2, lastState={"terminated": {"reason": "OOMKilled", "exitCode": 137, "startedAt": "x"}}
    )
    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", lambda path, query: (500, status(500, "", "no route to host"), {}))
        server.route("/api/v1/pods", lambda path, query: (200, pod_list([turned_away, ran]), {}))
        pull(server)
    job = Job.objects.get()
    client.force_login(operator)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "1 (Job resnet, namespace vision); GPUs as nvidia.com/mig-3g.40gb" in page
    assert '<dd id="job-reasons">OOMKilled; 2 container restarts</dd>' in page
    assert "resnet-a: UnexpectedAdmissionError <span" in page and "(no GPU time counted)" in page
    assert '<dt>Logs not read</dt><dd id="job-logs-unavailable">resnet-b: ' in page and "HTTP 500" in page


def test_an_mpijob_ends_with_its_launcher():
    """MPI Operator v2: the MPIJob owns its workers, whose containers run sshd and never exit, while mpirun
    runs in a launcher pod owned by a Job of its own. The workers were never seen finished, so no MPIJob was
    ever stored (and the CPU-only launcher, a job of 0 GPUs, was left out). The launcher now joins its
    workers (the `training.kubeflow.org/job-name` and `job-role` labels), and its end is the job's."""
    mpijob = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "name": "nccl",
        "uid": "mpi-uid",
        "controller": True,
    }
    launcher_job = {"apiVersion": "batch/v1", "kind": "Job", "name": "nccl-launcher", "uid": "lj", "controller": True}
    labels = {"training.kubeflow.org/job-name": "nccl", "training.kubeflow.org/operator-name": "mpi-operator"}
    end = T + timedelta(hours=1)
    launcher = pod("nccl-launcher-x", "l1", owner=launcher_job, gpus=0, start=T + timedelta(minutes=2), end=end,
                   node="cpu1", labels={**labels, "training.kubeflow.org/job-role": "launcher"})  # fmt: skip
    launcher["spec"]["containers"][0]["command"] = ["mpirun", "-np", "8", "all_reduce_perf"]
    workers = [
        pod(f"nccl-worker-{n}", f"w{n}", owner=mpijob, gpus=4, start=T, end=None, phase="Running", node=f"g{n}",
            labels={**labels, "training.kubeflow.org/job-role": "worker"})
        for n in range(2)
    ]  # fmt: skip
    with FakePlatform() as server:
        serve(server, [*workers, launcher])
        result = pull(server)
        serve(server, workers)  # the launcher not yet finished: nothing is stored
    assert result.status == "succeeded", result.errors
    job = Job.objects.get()
    assert (job.external_id, job.name, job.gpu_count, job.node_count) == ("mpi-uid", "nccl", 8, 2)
    assert job.start_time == T and job.end_time == end and job.state == "Succeeded"
    assert job.command == "mpirun -np 8 all_reduce_perf"
    assert job.labels["owner_kind"] == "MPIJob" and job.labels["nodes"] == ["g0", "g1"]

    Job.objects.all().delete()
    Connector.objects.all().delete()
    running = pod("nccl-launcher-x", "l1", owner=launcher_job, gpus=0, start=T, end=None, phase="Running",
                  labels={**labels, "training.kubeflow.org/job-role": "launcher"})  # fmt: skip
    with FakePlatform() as server:
        serve(server, [*workers, running])
        result = pull(server)
    assert result.status == "succeeded" and not Job.objects.exists()


def test_a_restarted_containers_previous_run_and_init_containers_logs_are_fetched():
    """Only the current run's log was fetched: a container OOMKilled and restarted kept its last lines
    (the CUDA out-of-memory traceback) in the previous run's log, which no pull read; an init container's log
    (a failed data download, a slow `pip install`) was not read either. Now both are stored and scanned."""
    item = pod("bert-0", "p1", start=T, end=T + timedelta(hours=1))
    item["spec"]["initContainers"] = [{"name": "fetch-data", "image": "busybox"}]
    item["status"]["containerStatuses"][0].update(
        restartCount=1, lastState={"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    )
    calm = pod("calm-0", "p2", start=T, end=T + timedelta(hours=1, minutes=1))

    def logs(path, query):
        name, container = path.split("/")[-2], query["container"]
        if query.get("previous") == "true":
            if name != "bert-0":  # the API server's answer for a container that never restarted
                return (
                    400,
                    status(400, "BadRequest", f'previous terminated container "main" in pod "{name}" not found'),
                    {},
                )
            return (
                200,
                b"2026-01-01T00:10:00Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
                {},
            )
        return 200, f"2026-01-01T00:20:00Z {container} of {name} epoch 1 done\n".encode(), {}

    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", logs)
        server.route("/api/v1/pods", lambda path, query: (200, pod_list([item, calm]), {}))
        result = pull(server)
        previous_asked = [p.split("/")[-2] for p, _, q in server.requests if q.get("previous") == "true"]
    assert result.status in ("succeeded", "partial"), result.message
    bert = Job.objects.get(external_id="p1")
    assert sorted(a.path for a in bert.artifacts.all()) == [
        "bert-0/fetch-data.run1.log",
        "bert-0/main.run1.log",
        "bert-0/main.run2.log",
    ]
    oom = bert.log_events.get(kind="oom")
    assert oom.artifact.path == "bert-0/main.run1.log" and "CUDA out of memory" in oom.text
    assert previous_asked == ["bert-0"]  # a container that never restarted has no previous run to ask for
    assert [a.path for a in Job.objects.get(external_id="p2").artifacts.all()] == ["calm-0/main.run1.log"]


def test_logs_an_earlier_pull_stored_are_kept_when_a_later_pull_cannot_read_them_again():
    """A job is stored again when it changes: here a Job's retry pod ran after the first pull stored the Job
    (its backoff outlasted `settle_minutes`). The first pull read the first pod's logs, the OOM that made it
    fail among them; by the second its node had been scaled away (the API server answers 500 for its logs),
    and storing the job again deleted them. Logs are now stored per run (`{pod}/{container}.run{N}.log`) and
    a later pull keeps the runs it could not read again."""
    first = pod("bert-0", "p1", owner=JOB, phase="Failed", start=T, end=T + timedelta(minutes=30), node="gpu-a")
    first["status"]["containerStatuses"][0].update(
        restartCount=1, lastState={"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    )
    retry = pod("bert-1", "p2", owner=JOB, start=T + timedelta(hours=1), end=T + timedelta(hours=2), node="gpu-b")
    listed, down = [first], set()

    def logs(path, query):
        name = path.split("/")[-2]
        if name in down:
            return 500, status(500, "InternalError", "dial tcp 10.0.3.7:10250: connect: no route to host"), {}
        if query.get("previous") == "true":
            return 200, b"2026-01-01T00:10:00Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2G\n", {}
        return 200, f"2026-01-01T00:20:00Z {name} epoch 1 done\n".encode(), {}

    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", logs)
        server.route("/api/v1/pods", lambda path, query: (200, pod_list(listed), {}))
        connector = make_connector("kubernetes", server.url)
        assert sync.sync_connector(connector.pk).created == 1
        listed.append(retry)
        down.add("bert-0")
        again = sync.sync_connector(connector.pk)
    assert again.updated == 1, again.errors
    job = Job.objects.get(external_id="job-uid")
    assert job.labels["pods"] == ["bert-0", "bert-1"]
    assert sorted(a.path for a in job.artifacts.all()) == [
        "bert-0/main.run1.log",
        "bert-0/main.run2.log",
        "bert-1/main.run1.log",
    ]
    assert job.log_events.get(kind="oom").artifact.path == "bert-0/main.run1.log"
    assert job.labels["logs_unavailable"][0].startswith("bert-0: ")  # not read by this pull


def test_the_job_page_says_which_runs_logs_are_kept_and_which_the_kubelet_no_longer_had(client, operator):
    """A container restarted twice ran three times; the kubelet keeps the log of its current run and of the one
    before it (`previous=true`), so by the time the job has finished and is pulled, its first run's log is gone.
    The page said nothing of it: the two logs looked like all there was."""
    item = pod("bert-0", "p1", owner=JOB, phase="Failed", start=T, end=T + timedelta(hours=1))
    item["status"]["containerStatuses"][0].update(
        restartCount=2, lastState={"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    )
    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", lambda path, query: (200, f"run {query.get('previous')}\n".encode(), {}))
        server.route("/api/v1/pods", lambda path, query: (200, pod_list([item]), {}))
        pull(server)
    job = Job.objects.get()
    assert sorted(a.path for a in job.artifacts.all()) == ["bert-0/main.run2.log", "bert-0/main.run3.log"]
    client.force_login(operator)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert (
        '<dt>Logs by run</dt><dd id="job-log-runs">bert-0/main: 3 runs, logs of runs 2–3; '
        "no log of run 1 (the kubelet keeps a container&#x27;s last two runs only)</dd>"
    ) in page


def test_a_run_read_by_an_earlier_pull_is_not_overwritten_by_the_later_runs():
    """A pull read a container after its first restart: its first run's log as `previous`, its second as the
    current. The job was stored again after a second restart, when the kubelet served runs 2 and 3 only: the
    names `main.previous.log` and `main.log` now held runs 2 and 3, and run 1 was gone. Runs keep their numbers,
    and the run only the earlier pull could read stays."""
    item = pod("ray-head-0", "p1", owner=JOB, start=T, end=T + timedelta(hours=1))
    restarts = {"count": 1}

    def listed(path, query):
        item["status"]["containerStatuses"][0]["restartCount"] = restarts["count"]
        return 200, pod_list([item]), {}

    def logs(path, query):  # the kubelet's: the current run and, with previous=true, the one before it
        run = restarts["count"] + (0 if query.get("previous") == "true" else 1)
        return 200, f"2026-01-01T00:0{run}:00Z run {run}\n".encode(), {}

    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", logs)
        server.route("/api/v1/pods", listed)
        connector = make_connector("kubernetes", server.url)
        sync.sync_connector(connector.pk)
        restarts["count"] = 2
        item["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = (T + timedelta(hours=2)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        assert sync.sync_connector(connector.pk).updated == 1
    job = Job.objects.get()
    stored = {a.path: a.file.open("rb").read().decode() for a in job.artifacts.all()}
    assert stored == {
        "ray-head-0/main.run1.log": "2026-01-01T00:01:00Z run 1\n",
        "ray-head-0/main.run2.log": "2026-01-01T00:02:00Z run 2\n",
        "ray-head-0/main.run3.log": "2026-01-01T00:03:00Z run 3\n",
    }


def test_log_runs_names_the_runs_with_and_without_a_log():
    from fleet.connectors.kubernetes import log_runs

    raw = {"pods": [{"name": "a", "restarts": {"main": 3, "init": 1}}, {"name": "b", "restarts": {}}]}
    kept_earlier = ["a/main.run1.log", "a/main.run3.log", "a/main.run4.log", "a/init.run1.log", "a/init.run2.log"]
    assert log_runs(raw, kept_earlier) == [
        "a/main: 4 runs, logs of runs 1, 3–4; no log of run 2 (the kubelet keeps a container's last two runs only)",
        "a/init: 2 runs, logs of runs 1–2",
    ]
    assert log_runs(raw, ["b/main.run1.log"]) == ["a/main: 4 runs, no log kept", "a/init: 2 runs, no log kept"]
    assert log_runs(raw, ["a/main.log", "a/main.previous.log"]) == []  # stored before runs were numbered
    assert log_runs({"pods": "garbled"}, []) == [] and log_runs([], []) == []


def test_a_refused_pods_log_is_one_error_for_the_pull_with_the_count():
    """Without `get` on pods/log the API server refuses every job's logs: the run listed one identical 403 per
    job (hundreds on a first pull), burying any other error. Now the pull says it once, with how many jobs
    were stored without logs, and stops asking in that namespace."""
    refused = status(
        403,
        "Forbidden",
        'pods "a" is forbidden: User "system:serviceaccount:fleet:triage" cannot get resource "pods/log" in API '
        'group "" in the namespace "vision"',
    )
    pods = [pod(f"job-{i}", f"p{i}", start=T, end=T + timedelta(hours=1, minutes=i)) for i in range(3)]
    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", lambda path, query: (403, refused, {}))
        server.route("/api/v1/pods", lambda path, query: (200, pod_list(pods), {}))
        result = pull(server)
        asked = [p for p, _, _ in server.requests if p.endswith("/log")]
    assert result.status in ("succeeded", "partial") and Job.objects.count() == 3
    (error,) = result.errors
    assert error["message"].startswith("artifacts: 3 jobs were stored without logs: reading pods/log is not allowed")
    assert 'cannot get resource "pods/log"' in error["message"] and "HTTP 403" in error["message"]
    assert len(asked) == 1
    assert Job.objects.get(external_id="p2").labels["logs_unavailable"] == [
        "reading pods/log is not allowed (HTTP 403)"
    ]


def test_a_pods_log_over_log_max_bytes_keeps_its_end():
    """`limitBytes` kept a log's first `log_max_bytes`: a long training log lost the out-of-memory error that
    ended it. Now the log is read through, its first and last halves kept with a marker between, and its
    lines numbered as the log numbered them."""
    from tests.test_log_head_tail import OOM_LINE, long_log

    item = pod("big-0", "p1", start=T, end=T + timedelta(hours=1))
    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", lambda path, query: (200, long_log(), {}))
        server.route("/api/v1/pods", lambda path, query: (200, pod_list([item]), {}))
        result = pull(server, options={"log_max_bytes": 8192})
        asked = [q for p, _, q in server.requests if p.endswith("/log")]
    assert result.status in ("succeeded", "partial"), result.message
    (log,) = Job.objects.get(external_id="p1").artifacts.all()
    content = log.file.read()
    assert log.truncated and content.startswith(b"2026-11-02 10:00:00,000 INFO step 1 loss")
    assert content.endswith(OOM_LINE.encode() + b"\n") and b"[\xe2\x80\xa6 Fleet Triage left out " in content
    assert log.job.log_events.get(kind="oom").line_no == 3001
    assert "limitBytes" not in asked[0]


RAY_CLUSTER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "name": "llm-ft-x7k2p",
    "uid": "rc-uid",
    "controller": True,
}


def ray_pods(*, submitter_phase: str | None = "Succeeded", end=T + timedelta(hours=1)) -> list[dict]:
    """A RayJob's RayCluster (a CPU head, two 4-GPU workers on nodes g0 and g1) still up after the Ray job ended
    (`shutdownAfterJobFinishes: false`, or its TTL not yet run out), and its submitter's pod."""

    def labels(kind, group):
        return {"ray.io/cluster": "llm-ft-x7k2p", "ray.io/node-type": kind, "ray.io/group": group, "team": "nlp"}

    head = pod("llm-ft-x7k2p-head-9qz4c", "h1", owner=RAY_CLUSTER, gpus=0, start=T, end=None, phase="Running",
               node="cpu1", labels=labels("head", "headgroup"))  # fmt: skip
    head["spec"]["containers"][0]["command"] = ["/bin/bash", "-lc", "--"]
    head["spec"]["containers"][0]["args"] = ["ulimit -n 65536; ray start --head --block --dashboard-host=0.0.0.0"]
    workers = [
        pod(f"llm-ft-x7k2p-gpu-group-worker-{n}", f"w{n}", owner=RAY_CLUSTER, gpus=4, start=T + timedelta(minutes=1),
            end=None, phase="Running", node=f"g{n}", labels=labels("worker", "gpu-group"))
        for n in range(2)
    ]  # fmt: skip
    pods = [head, *workers]
    if submitter_phase is not None:
        job = {"apiVersion": "batch/v1", "kind": "Job", "name": "llm-ft", "uid": "sj-uid", "controller": True}
        running = submitter_phase == "Running"
        submitter = pod("llm-ft-8pl2d", "s1", owner=job, gpus=0, start=T + timedelta(minutes=3),
                        end=None if running else end, phase=submitter_phase, node="cpu1",
                        labels={"batch.kubernetes.io/job-name": "llm-ft", "job-name": "llm-ft"})  # fmt: skip
        container = submitter["spec"]["containers"][0]
        container["command"] = ["/bin/bash", "-ce", "--"]
        container["args"] = [
            "until ray job status --address http://$RAY_DASHBOARD_ADDRESS $RAY_JOB_SUBMISSION_ID; do sleep 2; done; "
            "ray job submit --address http://$RAY_DASHBOARD_ADDRESS --submission-id $RAY_JOB_SUBMISSION_ID "
            "-- python train.py --epochs 3"
        ]
        container["env"] = [
            {"name": "RAY_DASHBOARD_ADDRESS", "value": "llm-ft-x7k2p-head-svc.vision.svc.cluster.local:8265"},
            {"name": "RAY_JOB_SUBMISSION_ID", "value": "llm-ft-5m9xw"},
        ]
        pods.append(submitter)
    return pods


def rayjob(name="llm-ft", uid="rj-uid", cluster="llm-ft-x7k2p", *, deployment="Complete", status="SUCCEEDED",
           end=T + timedelta(hours=1, minutes=2), **spec) -> dict:  # fmt: skip
    """A RayJob as `GET /apis/ray.io/v1/rayjobs` lists it."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "vision", "uid": uid},
        "spec": {"entrypoint": "python train.py --epochs 3", "submissionMode": "HTTPMode", **spec},
        "status": {
            "rayClusterName": cluster,
            "jobDeploymentStatus": deployment,
            "jobStatus": status,
            "startTime": (T - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **({"endTime": end.strftime("%Y-%m-%dT%H:%M:%SZ")} if end else {}),
        },
    }


def shared_cluster_and_a_persons_submit() -> list[dict]:
    """A long-running RayCluster a team shares, and a person's Job that ran `ray job submit` against it."""
    shared = {**RAY_CLUSTER, "name": "team-shared", "uid": "shared-uid"}
    worker = pod("team-shared-gpu-worker-0", "x1", owner=shared, gpus=2, start=T, end=None, phase="Running",
                 labels={"ray.io/cluster": "team-shared", "ray.io/node-type": "worker"})  # fmt: skip
    job = {"apiVersion": "batch/v1", "kind": "Job", "name": "eval", "uid": "eval-uid", "controller": True}
    submit = pod("eval-2x9kq", "e1", owner=job, gpus=0, start=T, end=T + timedelta(minutes=20))
    submit["spec"]["containers"][0]["command"] = ["sh", "-c", "ray job submit --address "
                                                  "http://team-shared-head-svc:8265 -- python eval.py"]  # fmt: skip
    return [worker, submit]


def test_a_rayjobs_head_and_workers_are_one_job_that_ends_with_its_submitter():
    """KubeRay: a RayJob owns the RayCluster it makes, which owns the head and worker pods, and a submitter Job
    whose pod runs `ray job submit` and returns when the Ray job ends; the cluster's pods run on until it is torn
    down. They were grouped as the RayCluster, never seen finished, so no RayJob was ever stored (and the
    CPU-only submitter, a job of 0 GPUs, was left out). Without RayJobs to list (404 here), the submitter's
    pod names the cluster it submits to (its RAY_DASHBOARD_ADDRESS, `<cluster>-head-svc`): one job. A person's
    Job submitting to a shared RayCluster does not make that cluster a job that ends with it."""
    end = T + timedelta(hours=1)
    with FakePlatform() as server:
        connector = make_connector("kubernetes", server.url, options={"team_label": "team"})
        serve(server, ray_pods(submitter_phase="Running"))
        result = sync.sync_connector(connector.pk)
        assert result.status == "succeeded" and not Job.objects.exists()  # the Ray job still runs
        server.routes.clear()
        serve(server, ray_pods() + shared_cluster_and_a_persons_submit())
        result = sync.sync_connector(connector.pk)
        asked = {p for p, _, _ in server.requests}
    assert result.status == "succeeded", result.errors
    assert not result.errors
    job = Job.objects.get()
    assert (job.external_id, job.name, job.gpu_count, job.node_count) == ("rc-uid", "llm-ft", 8, 2)
    assert job.start_time == T and job.end_time == end and job.state == "Succeeded"
    assert job.command == "python train.py --epochs 3" and job.team.name == "nlp"
    assert job.labels["owner_kind"] == "RayJob" and job.labels["ray_cluster"] == "llm-ft-x7k2p"
    assert job.labels["nodes"] == ["g0", "g1"] and len(job.labels["pods"]) == 4
    assert "/apis/ray.io/v1/rayjobs" in asked
    # the submitter's log (the driver's output, which `ray job submit` follows) is the job's too
    assert "llm-ft-8pl2d/main.run1.log" in {a.path for a in job.artifacts.all()}


def test_a_rayjobs_status_ends_it_without_a_submitter_and_a_shared_cluster_is_not_its():
    """A RayJob submitted over HTTP (`submissionMode: HTTPMode`) has no submitter pod: its status says when it
    ended and how. A RayJob run on an existing RayCluster (`clusterSelector`) does not make that cluster's pods
    its job. A RayJob's listing refused (RBAC) is said once for the pull, and the submitter still joins."""
    shared = {**RAY_CLUSTER, "name": "team-shared", "uid": "shared-uid"}
    shared_pods = [
        pod("team-shared-gpu-worker-0", "x1", owner=shared, gpus=2, start=T, end=None, phase="Running",
            labels={"ray.io/cluster": "team-shared", "ray.io/node-type": "worker"})
    ]  # fmt: skip
    listed = [
        rayjob(status="FAILED", deployment="Failed"),
        rayjob("probe", "rj-2", "team-shared", clusterSelector={"ray.io/cluster": "team-shared"}),
    ]
    with FakePlatform() as server:
        serve(server, ray_pods(submitter_phase=None) + shared_pods)
        server.route("/apis/ray.io/v1/rayjobs", lambda path, query: (200, {"kind": "RayJobList", "items": listed}, {}))
        result = pull(server)
    assert result.status == "succeeded", result.errors
    job = Job.objects.get()
    assert (job.external_id, job.name, job.gpu_count, job.state) == ("rc-uid", "llm-ft", 8, "Failed")
    assert job.start_time == T and job.end_time == T + timedelta(hours=1, minutes=2)
    assert job.command == "python train.py --epochs 3" and job.labels["owner_kind"] == "RayJob"

    # Still running: nothing is stored, though the cluster's pods have been up for hours.
    Job.objects.all().delete()
    Connector.objects.all().delete()
    with FakePlatform() as server:
        serve(server, ray_pods(submitter_phase=None))
        running = [rayjob(deployment="Running", status="RUNNING", end=None)]
        server.route("/apis/ray.io/v1/rayjobs", lambda path, query: (200, {"kind": "RayJobList", "items": running}, {}))
        result = pull(server)
    assert result.status == "succeeded" and not Job.objects.exists()

    refused = status(
        403,
        "Forbidden",
        'rayjobs.ray.io is forbidden: User "system:serviceaccount:fleet:triage" cannot list resource "rayjobs" in '
        'API group "ray.io" at the cluster scope',
    )
    Connector.objects.all().delete()
    with FakePlatform() as server:
        serve(server, ray_pods())
        server.route("/apis/ray.io/v1/rayjobs", lambda path, query: (403, refused, {}))
        result = pull(server)
    assert Job.objects.get().name == "llm-ft"
    (error,) = result.errors
    assert error["message"].startswith("rayjobs: listing RayJobs (ray.io/v1) is not allowed")
    assert 'cannot list resource "rayjobs"' in error["message"]


def test_a_finished_rayjob_without_a_jobstatus_takes_its_deployments():
    """A RayJob whose Ray job status was never read (the dashboard did not answer before it was torn down) still
    says Complete or Failed: its head and workers, stopped then, are no outcome ('Running')."""
    from fleet.connectors.kubernetes import jobs_from_pods

    for deployment, state in (("Complete", "Succeeded"), ("Failed", "Failed")):
        listed = [rayjob(deployment=deployment, status="")]
        (job,) = jobs_from_pods(ray_pods(submitter_phase=None), ray_jobs=listed).jobs
        assert (job.name, job.state, job.gpu_count) == ("llm-ft", state, 8)


def node(name: str, **labels: str) -> dict:
    """A Node as `GET /api/v1/nodes` lists it, with GPU Feature Discovery's labels."""
    return {
        "metadata": {"name": name, "uid": f"{name}-uid", "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"capacity": {"cpu": "64"}},
    }


# Two node pools time-sliced differently (the GPU Operator's per-node `nvidia.com/device-plugin.config`): A100s
# renamed (`renameByDefault: true`, pods ask for `nvidia.com/gpu.shared`) 4 ways, L4s not renamed (their product
# label ends -SHARED, pods ask for plain `nvidia.com/gpu`) 2 ways under MPS; and an older node whose GFD adds no
# replicas label.
POOLS = [
    node("a100-0", **{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.replicas": "4",
                      "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.count": "8"}),
    node("a100-1", **{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.replicas": "4",
                      "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.count": "8"}),
    node("l4-0", **{"nvidia.com/gpu.product": "NVIDIA-L4-SHARED", "nvidia.com/gpu.replicas": "2",
                    "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.count": "4"}),
    node("old-0", **{"nvidia.com/gpu.product": "Tesla-T4"}),
    node("h100-0", **{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.replicas": "1",
                      "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/gpu.count": "8"}),
]  # fmt: skip


def pooled_pods() -> list[dict]:
    hour = {"start": T, "end": T + timedelta(hours=1)}
    shared = {"nvidia.com/gpu.shared": "1"}
    return [
        with_resources(pod("nb-a", "pa", node="a100-0", **hour), shared),
        with_resources(pod("nb-a2", "pa2", node="a100-1", **hour), shared),
        pod("nb-l4", "pl", node="l4-0", **hour),  # plain nvidia.com/gpu, no node selector: the node says it is shared
        with_resources(pod("nb-old", "po", node="old-0", **hour), shared),
        with_resources(pod("nb-gone", "pg", node="scaled-away-0", **hour), shared),  # its node is no longer listed
        pod("train", "pt", gpus=2, node="h100-0", **hour),  # whole GPUs, on a node not shared (replicas 1)
    ]


def serve_nodes(server: FakePlatform, nodes: list[dict]) -> None:
    """The nodes in pages (`limit` honoured, `continue` to the next), as the API server pages them."""

    def page(path, query):
        at = int(query.get("continue") or 0)
        size = int(query["limit"])
        rest = at + size < len(nodes)
        return 200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"continue": str(at + size) if rest else ""},
                     "items": nodes[at : at + size]}, {}  # fmt: skip

    server.route("/api/v1/nodes", page)


def test_a_shared_gpus_replicas_are_its_nodes_pools_own(client, operator):
    """A time-sliced or MPS replica's share was 1/`shared_gpu_replicas`, one number for the whole cluster: on a
    cluster whose node pools are shared differently some pools' jobs were priced wrong, and with the option unset
    every replica counted as a whole GPU. GPU Feature Discovery labels each node with its `nvidia.com/gpu.replicas`:
    a pod's replicas are its node's, the option only where the node says nothing (or is gone), and only then
    'replicas unknown, counted whole'. The nodes are listed once a pull, page by page."""
    with FakePlatform() as server:
        serve(server, [p for p in pooled_pods() if p["metadata"]["name"] != "train"])
        serve_nodes(server, POOLS)
        result = pull(server, options={"fetch_logs": False, "shared_gpu_replicas": 8, "page_size": 2})
        node_pages = [q for p, _, q in server.requests if p == "/api/v1/nodes"]
    assert result.status == "succeeded" and not result.errors, result.errors
    assert len(node_pages) == 3 and all(q["limit"] == "2" for q in node_pages)
    jobs = {j.name: j for j in Job.objects.all()}
    share = {name: (j.gpu_share, j.gpu_unit) for name, j in jobs.items()}
    assert share == {
        "nb-a": (0.25, "shared GPU replica"),
        "nb-a2": (0.25, "shared GPU replica"),
        "nb-l4": (0.5, "shared GPU replica"),
        "nb-old": (0.125, "shared GPU replica"),
        "nb-gone": (0.125, "shared GPU replica"),
    }
    assert jobs["nb-a"].gpu_hours == pytest.approx(0.25) and jobs["nb-l4"].gpu_hours == pytest.approx(0.5)
    assert jobs["nb-a"].labels["gpu_replicas"] == ["4 on a100-0 (label nvidia.com/gpu.replicas)"]
    assert jobs["nb-old"].labels["gpu_replicas"] == [
        "8 on old-0 (the connector's shared_gpu_replicas: no nvidia.com/gpu.replicas label)"
    ]
    assert jobs["nb-gone"].labels["gpu_replicas"] == [
        "8 on scaled-away-0 (the connector's shared_gpu_replicas: node no longer listed)"
    ]

    # Without the option: the labelled pools keep their shares; the others are counted whole, and say so.
    Job.objects.all().delete()
    Connector.objects.all().delete()
    with FakePlatform() as server:
        serve(server, pooled_pods())
        serve_nodes(server, POOLS)
        result = pull(server, options={"fetch_logs": False})
    assert result.status == "succeeded" and not result.errors, result.errors
    jobs = {j.name: j for j in Job.objects.all()}
    assert (jobs["nb-a"].gpu_share, jobs["nb-l4"].gpu_share) == (0.25, 0.5)
    old = jobs["nb-old"]
    assert (old.gpu_share, old.gpu_unit) == (1.0, "shared GPU replica (replicas unknown, counted whole)")
    assert old.labels["gpu_replicas"] == [
        "unknown on old-0 (counted whole: no nvidia.com/gpu.replicas label, and no shared_gpu_replicas)"
    ]
    # The job page says where a replica's share came from, and that one counted whole is so counted.
    client.force_login(operator)
    page = client.get(f"/jobs/{jobs['nb-a'].pk}/").content.decode()
    assert "1 shared GPU replica" in page and "1/4 of a GPU" in page
    assert "4 on a100-0 (label nvidia.com/gpu.replicas)" in page
    page = client.get(f"/jobs/{old.pk}/").content.decode()
    assert "1 shared GPU replica (replicas unknown, counted whole)" in page
    assert "unknown on old-0 (counted whole: no nvidia.com/gpu.replicas label, and no shared_gpu_replicas)" in page
    train = jobs["train"]  # whole GPUs on a node not shared: as before
    assert (train.gpu_share, train.gpu_unit, train.gpu_hours) == (1.0, "", pytest.approx(2.0))
    assert "gpu_replicas" not in train.labels


def test_a_pod_without_a_node_selector_takes_its_gpu_model_from_its_nodes_label(client, operator):
    """A job's GPU model came only from its pod's `nvidia.com/gpu.product` node selector (or dcgm-exporter): a pod
    with none, on a node GPU Feature Discovery labels `Tesla-T4`, was 'of an unknown model' on its job page and
    charged the cluster's default price. The node's own label, listed once a pull, now names it, spelt as the
    selector's (its -SHARED and -MIG-<profile> suffixes priced as the selector's are); the selector still wins."""
    from decimal import Decimal

    from fleet.models import Cluster, GpuModelPrice

    hour = {"start": T, "end": T + timedelta(hours=1)}
    mig = node("mig-0", **{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"})
    pinned = pod("pinned", "pp", node="old-0", **hour)  # its selector names another spelling: the selector's is kept
    pinned["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA Tesla T4"}
    pods = [
        pod("t4", "p1", gpus=2, node="old-0", **hour),
        pod("nb-l4", "p2", node="l4-0", **hour),  # plain nvidia.com/gpu on a -SHARED node: a replica of an L4
        pod("embed", "p3", node="mig-0", **hour),  # plain nvidia.com/gpu on a -MIG-1g.5gb node: a 1/7 slice
        pod("gone", "p4", node="scaled-away-0", **hour),  # its node is not listed: no model, as before
        pinned,
    ]
    cluster = Cluster.objects.create(name="c1")
    for model, price in (("", "1.00"), ("Tesla T4", "0.35"), ("NVIDIA L4", "0.80"), ("A100-SXM4-40GB", "2.10")):
        GpuModelPrice.objects.create(cluster=cluster, gpu_model=model, price_per_gpu_hour=Decimal(price))
    with FakePlatform() as server:
        serve(server, pods)
        serve_nodes(server, [*POOLS, mig])
        result = pull(server, options={"fetch_logs": False})
    assert result.status == "succeeded" and not result.errors, result.errors
    jobs = {j.name: j for j in Job.objects.all()}
    assert {name: (j.gpu_model, j.cost) for name, j in jobs.items()} == {
        "t4": ("Tesla-T4", Decimal("0.70")),
        "nb-l4": ("NVIDIA-L4-SHARED", Decimal("0.40")),
        "embed": ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", Decimal("0.30")),
        "gone": ("", Decimal("1.00")),
        "pinned": ("NVIDIA Tesla T4", Decimal("0.35")),
    }
    client.force_login(operator)
    # The job page says where a model taken from a node came from, as Replicas per GPU says where a share did.
    page = client.get(f"/jobs/{jobs['t4'].pk}/").content.decode()
    assert (
        '2 × Tesla-T4 on 1 node <span class="muted">(model from label nvidia.com/gpu.product of old-0)</span>' in page
    )
    page = client.get(f"/jobs/{jobs['nb-l4'].pk}/").content.decode()
    assert "1 shared GPU replica of NVIDIA-L4-SHARED on 1 node" in page
    assert "(model from label nvidia.com/gpu.product of l4-0)" in page
    page = client.get(f"/jobs/{jobs['pinned'].pk}/").content.decode()  # its selector's: no note
    assert "1 × NVIDIA Tesla T4 on 1 node</dd>" in page
    assert "1 × unknown model on 1 node" in client.get(f"/jobs/{jobs['gone'].pk}/").content.decode()


def test_nodes_the_service_account_may_not_list_are_said_once_and_replicas_fall_back():
    """Nodes are cluster-scoped: a ServiceAccount granted pods in a Role cannot list them. The pull says so once,
    naming the grant, and counts replicas by `shared_gpu_replicas`, as before."""
    refused = status(
        403,
        "Forbidden",
        'nodes is forbidden: User "system:serviceaccount:fleet:triage" cannot list resource "nodes" in API group "" '
        "at the cluster scope",
    )
    with FakePlatform() as server:
        serve(server, pooled_pods())
        server.route("/api/v1/nodes", lambda path, query: (403, refused, {}))
        result = pull(server, options={"fetch_logs": False, "shared_gpu_replicas": 8})
    jobs = {j.name: j for j in Job.objects.all()}
    assert jobs["nb-a"].gpu_share == 0.125 and jobs["train"].gpu_share == 1.0
    assert jobs["nb-a"].labels["gpu_replicas"] == ["8 on a100-0 (the connector's shared_gpu_replicas: nodes not read)"]
    (error,) = result.errors
    assert error["message"].startswith("nodes: listing nodes is not allowed (grant the ServiceAccount list on nodes")
    assert 'cannot list resource "nodes"' in error["message"]

    # Both the replicas and a model the nodes would have named are said in that one error.
    assert "; 6 jobs with GPUs took no GPU model from their nodes' nvidia.com/gpu.product label" in error["message"]

    # A fleet with no shared GPU whose pods name their model by node selector is not told: it needs no nodes.
    Job.objects.all().delete()
    Connector.objects.all().delete()
    selected = pod("train", "pt", gpus=2, node="h100-0", start=T, end=T + timedelta(hours=1))
    selected["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    with FakePlatform() as server:
        serve(server, [selected])
        server.route("/api/v1/nodes", lambda path, query: (403, refused, {}))
        result = pull(server, options={"fetch_logs": False})
    assert result.status == "succeeded" and not result.errors and Job.objects.get().gpu_share == 1.0


def test_a_gpu_model_the_nodes_could_not_give_is_said_once_with_the_grant():
    """With no shared GPUs, nodes refused (403) or failing to list cost jobs without a `nvidia.com/gpu.product` node
    selector the GPU model their nodes' label names, in silence: the pull succeeded and the jobs were priced at the
    cluster's default price. The pull now says so once (it is partial), naming the ClusterRole rule for a 403."""
    from decimal import Decimal

    from fleet.models import Cluster, GpuModelPrice

    refused = status(
        403,
        "Forbidden",
        'nodes is forbidden: User "system:serviceaccount:fleet:triage" cannot list resource "nodes" in API group "" '
        "at the cluster scope",
    )
    hour = {"start": T, "end": T + timedelta(hours=1)}
    pods = [pod("train", "pt", gpus=2, node="h100-0", **hour), pod("eval", "pe", node="old-0", **hour)]
    cluster = Cluster.objects.create(name="c1")
    for model, price in (("", "1.00"), ("H100 80GB HBM3", "3.00")):
        GpuModelPrice.objects.create(cluster=cluster, gpu_model=model, price_per_gpu_hour=Decimal(price))
    with FakePlatform() as server:
        serve(server, pods)
        server.route("/api/v1/nodes", lambda path, query: (403, refused, {}))
        result = pull(server, options={"fetch_logs": False})
    assert result.status == "partial", result.errors
    jobs = {j.name: j for j in Job.objects.all()}
    assert {name: (j.gpu_model, j.cost) for name, j in jobs.items()} == {
        "train": ("", Decimal("2.00")),
        "eval": ("", Decimal("1.00")),
    }
    (error,) = result.errors
    assert error["message"].startswith(
        "nodes: listing nodes is not allowed (grant the ServiceAccount list on nodes, in a ClusterRole: nodes are "
        'cluster-scoped; the rule: apiGroups: [""], resources: [nodes], verbs: [list]); 2 jobs with GPUs took no GPU '
        "model from their nodes' nvidia.com/gpu.product label (their pods have no nvidia.com/gpu.product node "
        "selector), so they are priced at the cluster's default price"
    ), error["message"]
    assert "shared_gpu_replicas" not in error["message"]  # no shared GPU: replicas are not its business
    assert 'cannot list resource "nodes"' in error["message"]

    # The listing failing (a 500 after the HTTP client's retries) says the same, once.
    Job.objects.all().delete()
    Connector.objects.all().delete()
    with FakePlatform() as server:
        serve(server, pods)
        serve_nodes(server, POOLS)
        server.fault("/api/v1/nodes", *["500"] * 3)
        result = pull(server, options={"fetch_logs": False})
    assert result.status == "partial", result.errors
    assert [j.gpu_model for j in Job.objects.all()] == ["", ""]
    (error,) = result.errors
    assert error["message"].startswith(
        "nodes: listing nodes failed, so 2 jobs with GPUs took no GPU model from their nodes' nvidia.com/gpu.product "
        "label (their pods have no nvidia.com/gpu.product node selector) and they are priced at the cluster's "
        "default price; the jobs are stored so (pull their window again to read them from the nodes)."
    ), error["message"]


def test_a_rayjob_on_a_shared_cluster_is_not_that_clusters_pods():
    """A RayJob run on an existing RayCluster (`spec.clusterSelector`) holds no GPU of its own: its tasks run on the
    shared cluster's workers, which run before and after it and for other RayJobs too. Its submitter Job's pod
    (CPU only) is its only pod; the cluster stays a job of its own, stored when its pods have finished. A
    listed RayJob on a shared cluster whose name begins with the RayJob's (`probe` on `probe-pool`) made its
    submitter look like KubeRay's own (`<rayjob>-<5 characters>`), so the shared cluster's pods were stored as
    the RayJob's job, ending with its submitter."""
    pool = {**RAY_CLUSTER, "name": "probe-pool", "uid": "pool-uid"}
    labels = {"ray.io/cluster": "probe-pool", "ray.io/node-type": "worker"}

    def worker(end=None):
        return pod("probe-pool-gpu-worker-0", "x1", owner=pool, gpus=2, start=T, end=end,
                   phase="Succeeded" if end else "Running", node="g0", labels=labels)  # fmt: skip

    submitter_job = {"apiVersion": "batch/v1", "kind": "Job", "name": "probe", "uid": "probe-job", "controller": True}
    submitter = pod("probe-7hx2c", "s9", owner=submitter_job, gpus=0, start=T + timedelta(minutes=5),
                    end=T + timedelta(minutes=25), node="cpu1")  # fmt: skip
    submitter["spec"]["containers"][0]["command"] = ["/bin/bash", "-ce", "--"]
    submitter["spec"]["containers"][0]["args"] = [
        "ray job submit --address http://$RAY_DASHBOARD_ADDRESS -- python probe.py"
    ]
    submitter["spec"]["containers"][0]["env"] = [
        {"name": "RAY_DASHBOARD_ADDRESS", "value": "probe-pool-head-svc.vision.svc.cluster.local:8265"}
    ]
    listed = [
        rayjob("probe", "rj-probe", "probe-pool", clusterSelector={"ray.io/cluster": "probe-pool"},
               submissionMode="K8sJobMode", end=T + timedelta(minutes=25))
    ]  # fmt: skip

    def answer(pods, **options):
        Job.objects.all().delete()
        Connector.objects.all().delete()
        with FakePlatform() as server:
            serve(server, pods)
            server.route(
                "/apis/ray.io/v1/rayjobs", lambda path, query: (200, {"kind": "RayJobList", "items": listed}, {})
            )
            result = pull(server, options={"fetch_logs": False, **options})
        assert result.status == "succeeded" and not result.errors, result.errors
        return {j.name: j for j in Job.objects.all()}

    assert answer([worker(), submitter]) == {}  # the RayJob held no GPU; the shared cluster still runs
    jobs = answer([worker(), submitter], gpu_jobs_only=False)
    assert list(jobs) == ["probe"]
    probe = jobs["probe"]  # its submitter, a Job of its own: no GPU, the cluster's pods not among its own
    assert (probe.gpu_count, probe.labels["owner_kind"], probe.labels["pods"]) == (0, "Job", ["probe-7hx2c"])
    # torn down, the shared cluster is one job of its own, over its own time, whatever RayJobs it ran
    jobs = answer([worker(end=T + timedelta(hours=2)), submitter])
    pool_job = jobs["probe-pool"]
    assert list(jobs) == ["probe-pool"] and pool_job.labels["owner_kind"] == "RayCluster"
    assert (pool_job.gpu_count, pool_job.end_time) == (2, T + timedelta(hours=2))


def said(page: str) -> list[tuple[str, str]]:
    """The messages a page shows, (level, text), in order."""
    found = re.findall(r'<p class="message (\w*)"[^>]*>(.*?)</p>', page)
    return [(level, html.unescape(text)) for level, text in found]


def test_check_connection_warns_when_nodes_cannot_be_listed(client, operator):
    """A shared GPU's replicas are read from its node's labels, and nodes are cluster-scoped: a ServiceAccount
    granted pods in a namespace's Role cannot list them. **Check connection** listed one pod and said the
    connector answered, so an operator setting up a cluster of time-sliced GPUs learnt of the missing grant only
    from a pull's error, after its replicas were counted by `shared_gpu_replicas` or whole. Now it lists one node
    too: refused, it warns (the connector still answers: pods are what a pull needs), naming the ClusterRole rule
    and what pulls do meanwhile; granted, it says the nodes are visible."""
    refused = status(
        403,
        "Forbidden",
        'nodes is forbidden: User "system:serviceaccount:fleet:triage" cannot list resource "nodes" in API group "" '
        "at the cluster scope",
    )
    allowed = {"nodes": False}

    def nodes(path, query):
        if not allowed["nodes"]:
            return 403, refused, {}
        return 200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": POOLS[: int(query["limit"])]}, {}

    with FakePlatform() as server:
        serve(server, pooled_pods())
        server.route("/api/v1/nodes", nodes)
        connector = make_connector("kubernetes", server.url, name="k8s")
        client.force_login(operator)
        messages = said(client.post(f"/connectors/{connector.pk}/check/", follow=True).content.decode())
        assert messages[0] == ("success", "k8s answers. pods_visible: True")
        level, warning = messages[1]
        assert level == "warning" and len(messages) == 2
        assert warning.startswith(
            "k8s: nodes: listing nodes is not allowed, so shared GPUs' replicas cannot be read from their nodes' "
            "nvidia.com/gpu.replicas labels and pulls count them whole (no shared_gpu_replicas). Grant the "
            'ServiceAccount list on nodes in a ClusterRole (nodes are cluster-scoped): apiGroups: [""], '
            "resources: [nodes], verbs: [list]."
        )
        assert 'cannot list resource "nodes" in API group "" at the cluster scope' in warning  # the API's words
        # The nodes name the GPU model of pods without a node selector too: a cluster without shared GPUs may need them
        assert (
            "Pods without a nvidia.com/gpu.product node selector take no GPU model from their nodes' label either "
            "(only from dcgm-exporter, with metrics_from). A cluster without time-sliced or MPS GPUs whose jobs' GPU "
            "models come from node selectors or dcgm-exporter needs no such grant."
        ) in warning

        Connector.objects.filter(pk=connector.pk).update(options={"shared_gpu_replicas": 8})
        messages = said(client.post(f"/connectors/{connector.pk}/check/", follow=True).content.decode())
        assert "pulls count them by shared_gpu_replicas (8)." in messages[1][1]

        allowed["nodes"] = True
        messages = said(client.post(f"/connectors/{connector.pk}/check/", follow=True).content.decode())
        node_checks = [q for p, _, q in server.requests if p == "/api/v1/nodes"]
    assert messages == [("success", "k8s answers. pods_visible: True, nodes_visible: True")]
    assert {q["limit"] for q in node_checks} == {"1"}  # one node is enough to know


def test_a_node_of_the_wrong_shape_is_reported_and_the_others_read():
    """The nodes are read as an archive's `kubectl get nodes -o json` is (`parse_node_list`): a node whose labels
    are not text, or whose replicas label is no whole number, is reported once a pull with its page, position and
    field (it was passed over in silence, its pods' replicas then 'no label'), and the other nodes are read."""
    broken = [
        POOLS[0],
        {"metadata": {"name": "a100-1", "labels": {"nvidia.com/gpu.replicas": 4}}},
        node("old-0", **{"nvidia.com/gpu.replicas": "0"}),
    ]
    with FakePlatform() as server:
        serve(server, [p for p in pooled_pods() if p["metadata"]["name"] in ("nb-a", "nb-a2", "nb-old")])
        serve_nodes(server, broken)
        result = pull(server, options={"fetch_logs": False, "page_size": 2})
    messages = sorted(error["message"] for error in result.errors)
    assert messages == [
        "node 2 (a100-1): 'metadata.labels' is not an object of text values, so it was skipped",
        "page 2, node 1 (old-0): label nvidia.com/gpu.replicas is '0', not a whole number from 1 to 1024, so it was "
        "not read",
    ]
    jobs = {j.name: j for j in Job.objects.all()}
    assert (jobs["nb-a"].gpu_share, jobs["nb-a2"].gpu_share, jobs["nb-old"].gpu_share) == (0.25, 1.0, 1.0)
    # The job page's reason: the label was there, but unreadable (it said 'no nvidia.com/gpu.replicas label').
    assert jobs["nb-old"].labels["gpu_replicas"] == [
        "unknown on old-0 (counted whole: label nvidia.com/gpu.replicas is '0', not a whole number from 1 to 1024, "
        "and no shared_gpu_replicas)"
    ]


def test_nodes_that_fail_to_list_cost_no_job_and_are_said_once(settings):
    """Nodes are listed only for shared GPUs' replicas, and a 500 or a timeout on them (after the HTTP client's
    retries) failed the whole pull: every job of it was lost for want of an optional lookup, where a 403 or 404
    falls back. Now the pull falls back as for a 403 (`shared_gpu_replicas`, else counted whole), stores every job
    and says so once in its errors (the pull is partial). A 500 that the client's retry outlasts still reads the
    nodes."""
    settings.CONNECTOR_HTTP_TIMEOUT = 0.5
    with FakePlatform() as server:
        serve(server, pooled_pods())
        serve_nodes(server, POOLS)
        server.fault("/api/v1/nodes", "500")  # once: the retry reads them
        result = pull(server, options={"fetch_logs": False})
        assert server.count("/api/v1/nodes", "500") == 1
    assert result.status == "succeeded" and not result.errors, result.errors
    assert Job.objects.get(name="nb-a").gpu_share == 0.25

    for fault in ("500", "timeout"):
        Job.objects.all().delete()
        Connector.objects.all().delete()
        with FakePlatform() as server:
            serve(server, pooled_pods())
            serve_nodes(server, POOLS)
            server.fault("/api/v1/nodes", *[fault] * 3)  # the first try and both retries
            result = pull(server, options={"fetch_logs": False, "shared_gpu_replicas": 8})
            assert server.count("/api/v1/nodes", fault) == 3
        assert result.status == "partial", (fault, result.status, result.errors)
        jobs = {j.name: j for j in Job.objects.all()}
        assert sorted(jobs) == ["nb-a", "nb-a2", "nb-gone", "nb-l4", "nb-old", "train"]
        assert (jobs["nb-a"].gpu_share, jobs["train"].gpu_share) == (0.125, 1.0)
        assert jobs["nb-a"].labels["gpu_replicas"] == [
            "8 on a100-0 (the connector's shared_gpu_replicas: nodes not read)"
        ]
        (error,) = result.errors
        assert error["message"].startswith("nodes: listing nodes failed, so shared GPUs' replicas could not be read")
        assert "they are counted by shared_gpu_replicas (8)" in error["message"]


def test_nodes_read_before_a_later_page_fails_are_kept():
    """A later page of the nodes failing (a 500 after the HTTP client's retries) threw away the pages already read:
    every shared GPU's pod said 'nodes not read'. The nodes read are kept (their pods take their replicas and GPU
    model from them); pods on nodes not read say 'nodes not read', not 'node no longer listed'; the failure is the
    pull's error once, as for a listing that failed outright. A later page answered 404 (which on the first page
    means no nodes API, said nothing) is such a failure too: the listing was cut short."""
    for code, said_ in ((500, "answered HTTP 500"), (404, "404")):
        Job.objects.all().delete()
        Connector.objects.all().delete()

        def later_page_fails(path, query, code=code):
            if query.get("continue"):
                return code, {"kind": "Status", "code": code, "message": "etcdserver: request timed out"}, {}
            return 200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"continue": "2"},
                         "items": POOLS[:2]}, {}  # fmt: skip

        with FakePlatform() as server:
            serve(server, pooled_pods())
            server.route("/api/v1/nodes", later_page_fails)
            result = pull(server, options={"fetch_logs": False, "shared_gpu_replicas": 8, "page_size": 2})
        assert result.status == "partial", (code, result.status, result.errors)
        jobs = {j.name: j for j in Job.objects.all()}
        assert sorted(jobs) == ["nb-a", "nb-a2", "nb-gone", "nb-l4", "nb-old", "train"]
        # a100-0 and a100-1 were on the first page: their pods' replicas and model come from them.
        assert jobs["nb-a"].gpu_share == 0.25
        assert jobs["nb-a"].labels["gpu_replicas"] == ["4 on a100-0 (label nvidia.com/gpu.replicas)"]
        assert jobs["nb-a2"].gpu_model == "NVIDIA-A100-SXM4-80GB"
        # old-0 and scaled-away-0 were not read: not said to be gone.
        assert jobs["nb-old"].gpu_share == 0.125
        assert jobs["nb-old"].labels["gpu_replicas"] == [
            "8 on old-0 (the connector's shared_gpu_replicas: nodes not read)"
        ]
        assert jobs["nb-gone"].labels["gpu_replicas"] == [
            "8 on scaled-away-0 (the connector's shared_gpu_replicas: nodes not read)"
        ]
        (error,) = result.errors
        assert error["message"].startswith("nodes: listing nodes failed after 2 nodes were read"), error
        assert "they are counted by shared_gpu_replicas (8)" in error["message"]
        assert said_ in error["message"], error


def test_check_connection_says_a_pull_falls_back_when_nodes_fail(client, operator):
    """Check connection's warning for nodes that fail to list (a 500) said a pull would fail on them; a pull now
    falls back, and the warning says how it counts the replicas meanwhile."""
    with FakePlatform() as server:
        serve(server, pooled_pods())
        server.route("/api/v1/nodes", lambda path, query: (500, status(500, "InternalError", "etcd timed out"), {}))
        connector = make_connector("kubernetes", server.url, name="k8s", options={"shared_gpu_replicas": 8})
        client.force_login(operator)
        messages = said(client.post(f"/connectors/{connector.pk}/check/", follow=True).content.decode())
    assert messages[0] == ("success", "k8s answers. pods_visible: True")
    level, warning = messages[1]
    assert level == "warning" and warning.startswith("k8s: nodes: listing nodes failed (")
    assert warning.endswith(
        "); a pull lists them when a pod holds a GPU, and if they fail again counts shared GPUs' replicas by "
        "shared_gpu_replicas (8) and says so in its errors"
    )
