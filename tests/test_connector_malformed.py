"""A pull that meets a malformed answer (what tests/test_connector_fuzz.py finds at random, here
through the loopback server and the sync): the pull ends with the connector's own error, naming
the API path and the field, shown on the connector's page — never a crash that leaves the page
saying nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from fleet.connectors import sync
from fleet.connectors.models import Connector
from fleet.models import Job
from tests.connector_servers import FakePlatform
from tests.test_connectors_kubernetes import pod_list
from tests.test_connectors_sync import NOW, make_connector, pod

pytestmark = pytest.mark.django_db
T = NOW - timedelta(hours=3)
JOB = {"apiVersion": "batch/v1", "kind": "Job", "name": "resnet", "uid": "job-uid", "controller": True}


@pytest.fixture(autouse=True)
def _fast_http(settings):
    settings.CONNECTOR_HTTP_TIMEOUT = 2
    settings.CONNECTOR_HTTP_RETRIES = 2
    settings.CONNECTOR_HTTP_BACKOFF = 0.01
    settings.CONNECTOR_HTTP_BACKOFF_MAX = 0.05


def test_a_page_whose_metadata_is_not_an_object_fails_the_pull_saying_where(client, operator):
    """The review's finding: a PodList page whose `metadata` is a list stopped the pull with an
    AttributeError ("the pull stopped: AttributeError: 'list' object has no attribute 'get'")."""
    first = pod("a-0", "a-0", owner=JOB, start=T, end=T + timedelta(minutes=30))

    def pages(path, query):
        if not query.get("continue"):
            return 200, pod_list([first], token="page-2"), {}
        return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": ["page-3"], "items": []}, {}

    with FakePlatform() as server:
        server.route("/api/v1/pods", pages)
        connector = make_connector("kubernetes", server.url)
        result = sync.sync_connector(connector.pk)
    assert result.status == "failed"
    assert result.message == "kubernetes-test api/v1/pods: expected 'metadata' to be an object (got a list)"
    assert Job.objects.count() == 0  # the listing did not end: no job is known whole
    client.force_login(operator)
    page = client.get(f"/connectors/{connector.pk}/").content.decode()
    assert "api/v1/pods: expected &#x27;metadata&#x27; to be an object (got a list)" in page
    assert Connector.objects.get(pk=connector.pk).consecutive_failures == 1


def test_a_pod_of_a_malformed_shape_is_reported_and_the_others_stored():
    """A pod whose labels are not an object, or whose container has no text name, stopped the pull
    (listing, Ray detection or reading its logs); it is now that pod's error, by position and field."""
    good = pod("good-0", "good-0", owner=JOB, start=T, end=T + timedelta(minutes=30))
    labels = pod("odd-1", "odd-1", start=T, end=T + timedelta(minutes=30))
    labels["metadata"]["labels"] = True
    container = pod("odd-2", "odd-2", start=T, end=T + timedelta(minutes=30))
    container["spec"]["containers"][0]["name"] = ["main"]
    # A container's resources that are no object (or whose limits are none) stopped the pull with an
    # AttributeError where it asks whether a pod holds a GPU, before any job was read (the fuzz found `true`).
    resources = pod("odd-3", "odd-3", start=T, end=T + timedelta(minutes=30))
    resources["spec"]["containers"][0]["resources"] = True
    limits = pod("odd-4", "odd-4", start=T, end=T + timedelta(minutes=30))
    limits["spec"]["initContainers"] = [{"name": "init", "resources": {"limits": ["nvidia.com/gpu"]}}]
    pods = [good, labels, container, resources, limits]
    with FakePlatform() as server:
        server.route("/api/v1/namespaces/", lambda path, query: (200, b"epoch 1 done\n", {}))
        server.route("/api/v1/pods", lambda path, query: (200, pod_list(pods), {}))
        connector = make_connector("kubernetes", server.url)
        result = sync.sync_connector(connector.pk)
    assert result.status == "partial", result.message
    assert list(Job.objects.values_list("external_id", flat=True)) == ["job-uid"]
    assert [e["message"] for e in result.errors] == [
        "pod 2: 'metadata.labels' is not an object of text values, so it was skipped",
        "pod 3: a container's name in 'spec.containers' is not text, so it was skipped",
        "pod 4: a container's 'resources' in 'spec.containers' is not an object, so it was skipped",
        "pod 5: a container's 'resources.limits' in 'spec.initContainers' is not an object, so it was skipped",
    ]
    assert {e["file"] for e in result.errors} == {"kubernetes-test api/v1/pods"}


def test_a_malformed_artifact_is_reported_and_the_jobs_other_files_kept():
    """One artifact of a job the generic API describes wrongly (no kind, a path out of the job's folder, bad
    base64, not an object) cost the job every log and script: the first bad one threw the whole list away.
    Each is now reported by its place and the job keeps the good ones."""
    from fleet.models import Artifact
    from tests.test_connectors_sync import GenericApi

    api = GenericApi(2)
    good = api.job_part

    def job_part(path, query):
        if path == "/jobs/g-1/artifacts":
            return 200, {"artifacts": [
                {"kind": "log", "path": "stdout.log", "content": "hello\n"},
                {"path": "no-kind.txt", "content": "x"},
                {"kind": "script", "path": "../escape.py", "content": "x"},
                {"kind": "script", "path": "train.py", "content_base64": "not base64!"},
                "not an object",
                {"kind": "script", "path": "train2.py", "content": "import torch\n"},
            ]}, {}  # fmt: skip
        return good(path, query)

    api.job_part = job_part
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, options={"series": False})
        result = sync.sync_connector(connector.pk)
    assert result.status == "partial" and result.created == 2
    assert sorted(Artifact.objects.filter(job__external_id="g-1").values_list("path", flat=True)) == [
        "stdout.log",
        "train2.py",
    ]
    assert {error["job_id"] for error in result.errors} == {"g-1"}, result.errors
    said = [error["message"] for error in result.errors]
    assert len(said) == 4 and all(line.startswith("artifacts: ") for line in said), said
    assert any("artifact 2 ('no-kind.txt')" in line and "needs a kind" in line for line in said), said
    assert any("artifact 5" in line and "not an object" in line for line in said), said


@pytest.mark.parametrize(
    ("kind", "path", "answer", "said"),
    [
        (
            "generic",
            "/jobs",
            b'"oops"',
            'generic-test: /jobs answered a JSON string ("oops"), expected an object '
            "{'jobs': [...], 'next_cursor': ...}",
        ),
        ("generic", "/jobs", b"[1, 2]", "generic-test: /jobs answered a list, expected an object {'jobs': [...], "),
        (
            "kubernetes",
            "/api/v1/pods",
            b'"oops"',
            'kubernetes-test api/v1/pods: the answer is a JSON string ("oops"), expected an object',
        ),
        ("kubernetes", "/api/v1/pods", b"oops", "/api/v1/pods: the response is not valid JSON (Expecting value"),
    ],
)
def test_an_answer_that_is_json_but_not_an_object_says_what_it_was(kind, path, answer, said):
    """A JSON string ("oops", as a proxy's error page may answer) is valid JSON: the pull said "not valid
    JSON" of it, as of a body that is not JSON at all. It now says what the answer was."""
    with FakePlatform() as server:
        server.route(path, lambda p, query: (200, answer, {}))
        connector = make_connector(kind, server.url)
        result = sync.sync_connector(connector.pk)
    assert result.status == "failed"
    assert said in result.message, result.message


@pytest.mark.parametrize(
    ("what", "said"),
    [
        ("series", "expected an object with a 'samples' list, got a JSON string (\"oops\")"),
        ("artifacts", "expected an object with an 'artifacts' list, got a JSON string (\"oops\")"),
    ],
)
def test_a_json_string_for_a_jobs_series_or_artifacts_is_that_jobs_error_and_the_others_are_stored(what, said):
    """A proxy's error page answering `"oops"` for one job's series or artifacts: the pull says what the
    answer was, at which path, and stores that job (without it) and the pull's other jobs whole."""
    from fleet.models import Artifact
    from tests.test_connectors_sync import GenericApi

    api = GenericApi(3)
    good = api.job_part

    def job_part(path, query):
        if path == f"/jobs/g-1/{what}":
            return 200, b'"oops"', {}
        return good(path, query)

    api.job_part = job_part
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url)
        result = sync.sync_connector(connector.pk)
    assert result.status == "partial" and result.created == 3, (result.status, result.message, result.errors)
    assert [(error["job_id"], error["message"]) for error in result.errors] == [
        ("g-1", f"{what}: generic-test jobs/g-1/{what}: {said}")
    ]
    stored = {job.external_id: job for job in Job.objects.all()}
    assert sorted(stored) == ["g-0", "g-1", "g-2"]
    for job_id in ("g-0", "g-2"):  # the other jobs: their series and files
        assert stored[job_id].sample_count == 62
        assert Artifact.objects.filter(job=stored[job_id]).count() == 1
    # g-1 keeps what did answer
    assert stored["g-1"].sample_count == (0 if what == "series" else 62)
    assert Artifact.objects.filter(job=stored["g-1"]).count() == (1 if what == "series" else 0)
