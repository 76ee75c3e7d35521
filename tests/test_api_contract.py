"""The JSON API held to its own OpenAPI schema over real HTTP, with requests generated from that
schema (schemathesis): whatever a client sends, the answer is never a server error, its status
code is one the schema documents, its content type one documented for that code, and its body and
headers have the documented types and shapes.

The schema is the one the running server serves at /api/v1/schema/, and every operation is called
by each kind of caller the API has: an operator's login session and a team member's (with their
CSRF token, so their uploads get past it), a machine token an operator made to read jobs and the
teams' report, a push-only token, and the member's personal token (Bearer: what the member sees,
read-only: its pushes are the documented 403). Requests are both well-formed (positive) and ill-formed
(negative: wrong types, values outside the enums, missing required parts). The database holds the
example archive's jobs (with findings and series) and runs, and half the path parameters are drawn
from their ids, so details and series downloads are answered too, not only 404s.

CI draws the same 15 examples per operation and caller every run (the `ci` profile, tests/conftest.py);
`FUZZ_EXAMPLES` sets how many and draws new ones every run, for a hunt:
`FUZZ_EXAMPLES=500 .venv/bin/python -m pytest tests/test_api_contract.py` (with `HYPOTHESIS_PROFILE=ci`
beside it, the same ones every run).
To explore further, run schemathesis' own command against a running server, e.g.
`.venv/bin/st run http://127.0.0.1:8000/api/v1/schema/ -H "Authorization: Api-Key $TOKEN"`.

Deliberately not checked: that every request outside the schema is refused (the filters treat an
empty query parameter as absent, as the pages' filter forms do), and schemathesis' `ignored_auth`,
which counts a garbled token beside a valid session as "invalid authentication accepted" (either
credential is enough, by design). Refusal without credentials is `test_access_matrix.py`'s.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
import schemathesis
from django.core.management import call_command
from django.test import Client, override_settings
from django.utils import timezone
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from fleet.models import IngestRun, Job, MachineToken, PersonalToken
from tests.conftest import EXAMPLE_ARCHIVE

pytestmark = pytest.mark.django_db(transaction=True)  # the live server sees the test's rows

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES") or "15")

# The ids of the rows the test stored, for path parameters to hit (set by the `fleet` fixture:
# ids differ between runs, as the database's sequences go on).
KNOWN_IDS: dict[str, list[int]] = {"jobs": [], "ingest-runs": []}


def served_schema() -> dict:
    """The schema as the app serves it at /api/v1/schema/ (asked in-process at collection, as the
    test functions are made from it before the live server starts; serving it needs no database)."""
    with override_settings(ALLOWED_HOSTS=["testserver"]):  # as pytest-django's test environment, not set up yet
        response = Client().get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200, response.content
    return response.json()


schema = schemathesis.openapi.from_dict(served_schema())


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    # Half the time an id of a stored row (of the operation's kind), so the detail and the series
    # answer with their bodies; otherwise the generated id, mostly a 404.
    if not path_parameters or "id" not in path_parameters or context.operation is None:
        return st.just(path_parameters)
    kind = context.operation.path.split("/")[3]
    return st.booleans().flatmap(
        lambda known: st.integers(0, 99).map(
            lambda index: (
                {**path_parameters, "id": KNOWN_IDS[kind][index % len(KNOWN_IDS[kind])]}
                if known and KNOWN_IDS.get(kind)
                else path_parameters
            )
        )
    )


CSRF_SECRET = "fuzz" * 8  # any 32 letters: Django checks the header against the cookie


def session_of(user) -> dict:
    """A login session's cookies and CSRF header, as a browser's script would send them."""
    browser = Client()
    browser.force_login(user)
    return {
        "cookies": {"sessionid": browser.cookies["sessionid"].value, "csrftoken": CSRF_SECRET},
        "headers": {"X-CSRFToken": CSRF_SECRET},
    }


@pytest.fixture
def fleet(upload_dirs, operator, member_a, team_a, team_b):
    """The example archive imported (jobs with findings and series, and its run), one job of the
    member's team and the rest another team's, and a run pushed by the push token; returns each kind
    of caller's credentials."""
    call_command("ingest_archive", str(EXAMPLE_ARCHIVE), stdout=open(os.devnull, "w"))  # noqa: SIM115
    jobs = list(Job.objects.order_by("pk"))
    Job.objects.filter(pk=jobs[0].pk).update(team=team_a)
    Job.objects.exclude(pk=jobs[0].pk).update(team=team_b)
    _reader, reading_key = MachineToken.objects.create_key(
        name="reader", created_by=operator, reads_jobs=True, reads_reports=True
    )
    pusher, push_key = MachineToken.objects.create_key(name="exporter", created_by=operator)
    IngestRun.objects.create(source=IngestRun.Source.API, archive_name="push.zip", api_key=pusher)
    _personal, personal_key = PersonalToken.objects.create_key(
        owner=member_a, name="notebook", expiry_date=timezone.now() + timedelta(days=90)
    )
    KNOWN_IDS["jobs"] = [job.pk for job in jobs]
    KNOWN_IDS["ingest-runs"] = list(IngestRun.objects.values_list("pk", flat=True))
    return {
        "operator": session_of(operator),
        "member": session_of(member_a),
        "reading": token(reading_key),
        "push": token(push_key),
        "personal": {"headers": {"Authorization": f"Bearer {personal_key}"}},
    }


def token(key: str) -> dict:
    return {"headers": {"Authorization": f"Api-Key {key}"}}


def call_and_validate(case, live_server, credentials: dict) -> None:
    headers = {**(case.headers or {}), **credentials.get("headers", {})}
    case.call_and_validate(base_url=live_server.url, checks=CHECKS, headers=headers, cookies=credentials.get("cookies"))


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# Each generated request is sent by every kind of caller in turn: one test per operation, as the
# database is emptied after each (a test per caller made five times the flushes: minutes on PostgreSQL).
@schema.parametrize()
@FUZZ
def test_every_callers_answers_are_documented_and_never_a_server_error(case, fleet, live_server):
    for caller, credentials in fleet.items():
        note(f"Sent as: {caller}")  # printed with a failure
        call_and_validate(case, live_server, credentials)


@pytest.mark.parametrize("address", ["/api/v1/nothing-here/", "/api/v1/ingest-runs/1.5/", "/api/v1/jobs/1/%0A/"])
def test_an_unknown_api_address_is_a_json_404_like_the_apis_own(client, address):
    response = client.get(address)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}


def test_an_unknown_page_elsewhere_is_still_the_sites_html_404(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def test_every_security_requirement_names_a_scheme_the_schema_declares(client):
    """Each operation lets in a machine token or a login session; a client generator (and Swagger
    UI's Authorize) knows a scheme only from components.securitySchemes, and the OpenAPI
    specification requires every name an operation's `security` gives to be declared there."""
    served = client.get("/api/v1/schema/", {"format": "json"}).json()
    declared = served["components"]["securitySchemes"]
    for path, operations in served["paths"].items():
        for method, operation in operations.items():
            for requirement in operation.get("security", []):
                assert set(requirement) <= set(declared), (method, path, requirement)
    session = declared["cookieAuth"]
    assert (session["type"], session["in"], session["name"]) == ("apiKey", "cookie", "sessionid")


def test_refusals_of_how_a_request_is_sent_are_documented_too(client, operator, upload_dirs):
    """What a client can get wrong besides the parameters: an Accept header naming no type the
    operation answers (406), a push sent as JSON or a form (415) or chunked without a length (411).
    Each is a JSON `detail`; the schema listed none of these codes, so a client generated from it
    met an answer it was told could not come."""
    _token, key = MachineToken.objects.create_key(name="pusher", created_by=operator)
    auth = {"HTTP_AUTHORIZATION": f"Api-Key {key}"}
    paths = client.get("/api/v1/schema/", {"format": "json"}).json()["paths"]
    answers = {
        ("get", "/api/v1/jobs/"): client.get("/api/v1/jobs/", HTTP_ACCEPT="application/xml", **auth),
        ("get", "/api/v1/jobs/{id}/series/{fmt}/"): client.get(
            "/api/v1/jobs/1/series/csv/", HTTP_ACCEPT="text/html", **auth
        ),
        ("post", "/api/v1/archives/"): client.post(
            "/api/v1/archives/", {"file": "x"}, content_type="application/json", **auth
        ),
        ("post", "/api/v1/archives/", "chunked"): client.generic(
            "POST",
            "/api/v1/archives/",
            b"--x--\r\n",
            content_type="multipart/form-data; boundary=x",
            CONTENT_LENGTH="",
            HTTP_TRANSFER_ENCODING="chunked",
            **auth,
        ),
    }
    codes = {}
    for (method, path, *_), answer in answers.items():
        assert answer["Content-Type"] == "application/json" and answer.json()["detail"], answer.content
        assert str(answer.status_code) in paths[path][method]["responses"], (method, path, answer.status_code)
        codes[method, path] = codes.get((method, path), []) + [answer.status_code]
    assert codes == {
        ("get", "/api/v1/jobs/"): [406],
        ("get", "/api/v1/jobs/{id}/series/{fmt}/"): [406],
        ("post", "/api/v1/archives/"): [415, 411],
    }
