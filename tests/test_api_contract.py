"""The JSON API held to its own OpenAPI schema over real HTTP, with requests generated from that
schema (schemathesis): whatever a client sends, the answer is never a server error, its status
code is one the schema documents, and its body has the documented type and shape.

The examples are the same on every run (`derandomize`), so CI is reproducible. To explore further,
run schemathesis' own command against a running server, e.g.
`.venv/bin/st run http://127.0.0.1:8000/api/v1/schema/ -H "Authorization: Api-Key $TOKEN"`.

Deliberately not checked: that every request outside the schema is refused (the filters treat an
empty query parameter as absent, as the pages' filter forms do), and schemathesis' `ignored_auth`,
which counts a garbled token beside a valid session as "invalid authentication accepted" (either
credential is enough, by design). Refusal without credentials is `test_access_matrix.py`'s.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from fleet.models import IngestRun, MachineToken
from tests.factories import ClusterFactory, JobFactory

pytestmark = pytest.mark.django_db(transaction=True)  # the live server sees the test's rows

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


# The schema as /api/v1/schema/ serves it, generated without a request (no database needed).
schema = schemathesis.openapi.from_dict(
    json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True), default=str))
)


@pytest.fixture
def callers(upload_dirs, operator, team_a, team_b):
    """Credentials per kind of caller: an operator's session for reading, a machine token for pushing
    (a session's POST needs a CSRF token, which a script does not have)."""
    cluster = ClusterFactory(name="c1")
    for index in range(3):
        JobFactory(cluster=cluster, team=team_a if index % 2 else team_b, mean_gpu_util=10.0 + index)
    token, key = MachineToken.objects.create_key(name="exporter", created_by=operator)
    IngestRun.objects.create(source=IngestRun.Source.API, archive_name="push.zip", api_key=token)
    browser = Client()
    browser.force_login(operator)
    return {
        "session": {"cookies": {"sessionid": browser.cookies["sessionid"].value}},
        "token": {"headers": {"Authorization": f"Api-Key {key}"}},
    }


@schema.parametrize()
@settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_answer_of_the_api_is_documented_and_never_a_server_error(case, callers, live_server):
    credentials = callers["token"] if case.method == "POST" else callers["session"]
    case.call_and_validate(base_url=live_server.url, checks=CHECKS, **credentials)


@pytest.mark.parametrize("address", ["/api/v1/nothing-here/", "/api/v1/ingest-runs/1.5/", "/api/v1/jobs/1/%0A/"])
def test_an_unknown_api_address_is_a_json_404_like_the_apis_own(client, address):
    response = client.get(address)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}


def test_an_unknown_page_elsewhere_is_still_the_sites_html_404(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
