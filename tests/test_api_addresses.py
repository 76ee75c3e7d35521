"""The API's addresses as a script types them: with or without the trailing slash the same answer,
and an address the API does not have a JSON 404, with DEBUG on too (its technical 404 page, and
APPEND_SLASH's redirect or its RuntimeError for a POST, were HTML)."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from fleet.models import IngestRun, MachineToken
from tests.conftest import EXAMPLE_ARCHIVE
from tests.factories import JobFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("upload_dirs")]


@pytest.fixture(autouse=True)
def debug(settings):
    settings.DEBUG = True  # as a developer's server runs, where the HTML answers showed


@pytest.fixture
def script():
    _, key = MachineToken.objects.create_key(name="exporter", reads_jobs=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def test_a_push_without_the_trailing_slash_is_taken(script, django_capture_on_commit_callbacks):
    with open(EXAMPLE_ARCHIVE, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        pushed = script.post("/api/v1/archives", {"file": handle}, format="multipart")
    assert pushed.status_code == 202, pushed.content
    assert pushed["Location"].endswith(f"/api/v1/ingest-runs/{pushed.json()['id']}/")  # the address with its slash
    assert script.get(f"/api/v1/ingest-runs/{pushed.json()['id']}").json()["status"] == "succeeded"
    assert IngestRun.objects.count() == 1


def test_every_read_answers_without_the_trailing_slash_as_with_it(script, team_a):
    job = JobFactory(team=team_a)
    for path in ("/api/v1/jobs", f"/api/v1/jobs/{job.pk}", "/api/v1/ingest-runs", "/api/v1/teams"):
        bare, slashed = script.get(path), script.get(path + "/")
        assert bare.status_code == slashed.status_code, path
        assert bare.status_code in (200, 403) and bare["Content-Type"] == "application/json", path
    assert script.get(f"/api/v1/jobs/{job.pk}").json()["id"] == job.pk
    assert script.get("/api/v1/schema", {"format": "json"}).status_code == 200


@pytest.mark.parametrize("method", ["get", "post", "delete"])
@pytest.mark.parametrize("path", ["/api/v1/nope/", "/api/v1/nope", "/api/v1/jobs/1/nope/", "/api/v2/jobs/", "/api/v1"])
def test_an_address_the_api_does_not_have_is_a_json_404(method, path):
    response = getattr(Client(enforce_csrf_checks=True), method)(path)
    assert response.status_code == 404, (method, path)
    assert response["Content-Type"] == "application/json" and response.json() == {"detail": "Not found."}


def test_the_schema_documents_each_address_once_with_its_slash(client):
    paths = client.get("/api/v1/schema/", {"format": "json"}).json()["paths"]
    assert "/api/v1/jobs/" in paths and all(path.endswith("/") for path in paths)
