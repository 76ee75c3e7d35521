"""Refusals Django makes before the API's views run (a Host it does not serve, too many fields or
files, a form field over the memory cap) and a server error: JSON under /api/, like the API's own
answers, and the HTML pages elsewhere as before. Run with DEBUG off, as a deployment does (with
DEBUG on Django shows its debugging page for these, to the developer)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("upload_dirs")]


@pytest.fixture(autouse=True)
def deployed(settings):
    settings.DEBUG = False


def is_json(response) -> bool:
    return response["Content-Type"] == "application/json"


@pytest.mark.parametrize("path", ["/api/v1/jobs/", "/api/v1/nope/", "/api/v1", "/api/v1/schema/"])
def test_a_host_the_site_does_not_serve_is_a_json_400_under_the_api(client, operator, path):
    """A script sent to the site by another name (a load balancer's, an IP) got Django's HTML 'Bad
    Request (400)' page, with no word of why, where every other API refusal is JSON."""
    client.force_login(operator)
    response = client.get(path, HTTP_HOST="fleet.internal.example")
    assert response.status_code == 400 and is_json(response), response.content[:200]
    assert response.json() == {
        "detail": "This site does not answer to the host 'fleet.internal.example' (the request's Host header): "
        "use the address an operator gave you."
    }


def test_a_long_host_is_quoted_by_its_opening(client):
    response = client.get("/api/v1/jobs/", HTTP_HOST="h" * 5000)
    assert response.status_code == 400 and is_json(response)
    assert f"'{'h' * 100}…' (5,000 characters)" in response.json()["detail"]
    assert len(response.json()["detail"]) < 300


def test_a_page_with_a_host_the_site_does_not_serve_is_still_the_html_400(client):
    response = client.get("/jobs/", HTTP_HOST="fleet.internal.example")
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")


def test_too_many_query_parameters_is_a_json_400_saying_how_many_are_taken(client, operator, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    client.force_login(operator)
    query = "&".join(f"f{i}=1" for i in range(10))
    response = client.get(f"/api/v1/jobs/?{query}")
    assert response.status_code == 400 and is_json(response), response.content[:200]
    assert response.json() == {"detail": "The request sends more than 5 fields (query parameters and form fields)."}
    page = client.get(f"/jobs/?{query}")
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")


def test_a_push_of_several_files_is_a_json_400(client, operator, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 1
    client.force_login(operator)
    files = [SimpleUploadedFile(f"week-{i}.zip", b"PK") for i in range(3)]
    response = client.post("/api/v1/archives/", {"file": files})
    assert response.status_code == 400 and is_json(response), response.content[:200]
    assert response.json() == {"detail": "The request sends more than 1 file; push one archive a request."}


def test_a_form_field_over_the_memory_cap_is_a_json_413(client, operator, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    client.force_login(operator)
    archive = SimpleUploadedFile("week.zip", b"PK")
    response = client.post("/api/v1/archives/", {"note": "x" * 1000, "file": archive})
    assert response.status_code == 413 and is_json(response), response.content[:200]
    assert response.json() == {
        "detail": "The request's fields (besides the archive) are larger than 100 bytes; send the archive alone."
    }


def test_a_server_error_under_the_api_is_json(operator, monkeypatch):
    """A failure in a view answered the API's client with the HTML 'Server Error (500)' page."""
    from triage.api import JobViewSet

    def fail(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(JobViewSet, "list", fail)
    client = Client(raise_request_exception=False)
    client.force_login(operator)
    response = client.get("/api/v1/jobs/")
    assert response.status_code == 500 and is_json(response), response.content[:200]
    assert response.json() == {"detail": "Server error: the request failed here, not because of what was sent."}
    assert "boom" not in response.content.decode()


def test_a_long_content_type_or_method_refused_is_quoted_by_its_opening(client, operator):
    """DRF's 415 and 405 repeated the Content-Type header and the method whole."""
    client.force_login(operator)
    response = client.post("/api/v1/archives/", b"x", content_type="application/" + "x" * 4988)
    assert response.status_code == 415 and is_json(response)
    assert response.json() == {
        "detail": f"Unsupported media type 'application/{'x' * 88}…' (5,000 characters) in request."
    }
    response = client.generic("M" * 5000, "/api/v1/jobs/")
    assert response.status_code == 405 and is_json(response)
    assert response.json() == {"detail": f"Method '{'M' * 100}…' (5,000 characters) not allowed."}
    short = client.post("/api/v1/archives/", b"x", content_type="application/json").json()
    assert short == {"detail": "Unsupported media type 'application/json' in request."}
