"""What a script is told when its token is refused: a 401 with `WWW-Authenticate` and what is wrong
with the token (never the key itself), or a 403 naming what the token may not do."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from fleet.models import IngestRun, MachineToken
from tests.conftest import EXAMPLE_ARCHIVE

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("upload_dirs")]


@pytest.fixture
def key():
    return MachineToken.objects.create_key(name="cron")[1]


def get(path: str, authorization: str | None = None):
    extra = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    return APIClient().get(path, **extra)


def refused_as_unauthenticated(response, *words: str) -> str:
    assert response.status_code == 401, response.content
    assert response["WWW-Authenticate"].startswith("Api-Key")
    detail = response.json()["detail"]
    assert all(word in detail for word in words), detail
    return detail


def test_no_credentials_at_all_is_a_401_saying_what_to_send():
    for path in ("/api/v1/jobs/", "/api/v1/ingest-runs/", "/api/v1/teams/", "/api/v1/"):
        refused_as_unauthenticated(get(path), "Log in", "Authorization: Api-Key <token>")


def test_another_scheme_is_a_401_saying_which_one_the_api_takes(key):
    refused_as_unauthenticated(
        get("/api/v1/jobs/", f"Token {key}"), "Api-Key <token>", "Bearer <token>", "another scheme"
    )
    assert key not in get("/api/v1/jobs/", f"Token {key}").content.decode()
    # Bearer is personal tokens' scheme: a machine token's key sent with it is told to use Api-Key.
    refused_as_unauthenticated(
        get("/api/v1/jobs/", f"Bearer {key}"), "machine token's", "'Authorization: Api-Key <key>'"
    )
    assert key not in get("/api/v1/jobs/", f"Bearer {key}").content.decode()


@pytest.mark.parametrize("garbage", ["nope", "", "no\x00pe.nope", "é.é", "abc."])
def test_a_key_that_is_no_key_is_a_401(garbage):
    refused_as_unauthenticated(get("/api/v1/ingest-runs/", f"Api-Key {garbage}"), "not a machine token")


def test_an_unknown_a_mistyped_a_revoked_and_an_expired_token_each_say_so_and_never_echo_the_key(key):
    prefix, secret = key.split(".")
    unknown = refused_as_unauthenticated(get("/api/v1/ingest-runs/", f"Api-Key zzzzzzzz.{secret}"), "prefix")
    wrong = refused_as_unauthenticated(get("/api/v1/ingest-runs/", f"Api-Key {prefix}.{secret[:-1]}"), "secret")
    token = MachineToken.objects.get(prefix=prefix)
    token.expiry_date = timezone.now() - timedelta(days=1)
    token.save()
    expired = refused_as_unauthenticated(get("/api/v1/ingest-runs/", f"Api-Key {key}"), "expired")
    token.revoked = True
    token.save()
    revoked = refused_as_unauthenticated(get("/api/v1/ingest-runs/", f"Api-Key {key}"), "was revoked")
    for detail in (unknown, wrong, expired, revoked):
        assert secret not in detail and secret[:-1] not in detail


def test_a_revoked_token_pushes_nothing(key):
    MachineToken.objects.filter(prefix=key.split(".")[0]).update(revoked=True)
    with open(EXAMPLE_ARCHIVE, "rb") as handle:
        pushed = APIClient().post(
            "/api/v1/archives/", {"file": handle}, format="multipart", HTTP_AUTHORIZATION=f"Api-Key {key}"
        )
    refused_as_unauthenticated(pushed, "revoked")
    assert IngestRun.objects.count() == 0


def test_a_good_token_without_the_permission_is_a_403_naming_what_it_may_not_do(key):
    jobs = get("/api/v1/jobs/", f"Api-Key {key}")
    assert jobs.status_code == 403 and "WWW-Authenticate" not in jobs
    assert jobs.json()["detail"].startswith("This token may not read jobs; an operator can allow it on the tokens page")
    teams = get("/api/v1/teams/", f"Api-Key {key}").json()["detail"]
    assert teams.startswith("This token may not read the teams' report")
    root = get("/api/v1/", f"Api-Key {key}")
    assert root.status_code == 403 and "needs a person's login" in root.json()["detail"]
    assert get("/api/v1/ingest-runs/", f"Api-Key {key}").status_code == 200  # its own runs: it may push


def test_people_keep_their_refusals(client, member_a):
    client.force_login(member_a)
    assert client.get("/api/v1/ingest-runs/").status_code == 403  # an operator's
    csrf = APIClient(enforce_csrf_checks=True)
    csrf.force_login(member_a)
    with open(EXAMPLE_ARCHIVE, "rb") as handle:
        posted = csrf.post("/api/v1/archives/", {"file": handle}, format="multipart")
    assert posted.status_code == 403 and "CSRF" in posted.json()["detail"]


def test_the_schema_documents_the_401(client):
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    assert {"401", "403"} <= set(schema["paths"]["/api/v1/jobs/"]["get"]["responses"])
