"""Personal API tokens: a person makes their own on /account/tokens/, and a script reads the API with
it as that person (their teams' jobs, nothing more), read-only; revoked, expired or owned by a
deactivated account, it is a 401 saying so. Operators see and revoke everyone's on the tokens page."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from fleet.models import AuditEvent, IngestRun, Job, MachineToken, Owner, PersonalToken
from tests.conftest import EXAMPLE_ARCHIVE
from tests.factories import ClusterFactory, JobFactory
from tests.reading import table_rows

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 2, 10, tzinfo=UTC)


@pytest.fixture
def jobs(team_a, team_b):
    cluster = ClusterFactory(name="c1")
    ours = JobFactory(
        cluster=cluster, team=team_a, name="our-job", start_time=START, end_time=START + timedelta(hours=2)
    )
    theirs = JobFactory(
        cluster=cluster, team=team_b, name="their-job", start_time=START, end_time=START + timedelta(hours=2)
    )
    return ours, theirs


def make_token(client: Client, name: str = "notebook", lifetime: str = "90") -> tuple[str, str]:
    """Create a token on the page as the logged-in client; (its key, the page's HTML)."""
    page = client.post("/account/tokens/", {"name": name, "lifetime": lifetime})
    assert page.status_code == 200
    html = page.content.decode()
    key = re.search(r'<pre class="code" tabindex="0" id="token-value">([^<]+)</pre>', html).group(1)
    return key, html


def bearer(key: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


def refused(response, *words: str) -> str:
    assert response.status_code == 401, response.content
    assert "Bearer" in response["WWW-Authenticate"]
    detail = response.json()["detail"]
    assert all(word in detail for word in words), detail
    return detail


@pytest.fixture
def member_key(client, member_a):
    client.force_login(member_a)
    return make_token(client)[0]


def test_a_member_makes_a_token_that_reads_their_teams_jobs_and_not_another_teams(member_key, jobs):
    ours, theirs = jobs
    api = APIClient()
    listed = api.get("/api/v1/jobs/", **bearer(member_key))
    assert listed.status_code == 200
    assert [job["name"] for job in listed.json()["results"]] == ["our-job"]
    assert api.get(f"/api/v1/jobs/{ours.pk}/", **bearer(member_key)).json()["name"] == "our-job"
    # Another team's job is a 404, as with the session: not a 403 that says it exists.
    assert api.get(f"/api/v1/jobs/{theirs.pk}/", **bearer(member_key)).status_code == 404
    assert api.get(f"/api/v1/jobs/{theirs.pk}/series/csv/", **bearer(member_key)).status_code == 404
    teams = api.get("/api/v1/teams/", {"from": "2026-11-01", "to": "2026-11-07"}, **bearer(member_key))
    assert [row["team"] for row in teams.json()["teams"]] == ["team-a"]
    # What the owner's session may not (an operator's list) is refused alike.
    assert api.get("/api/v1/ingest-runs/", **bearer(member_key)).status_code == 403
    token = PersonalToken.objects.get()
    assert token.last_used_at is not None


def test_the_token_follows_its_owner_at_each_request(member_key, member_a, jobs):
    api = APIClient()
    assert api.get(f"/api/v1/jobs/{jobs[0].pk}/", **bearer(member_key)).status_code == 200
    Owner.objects.filter(user=member_a).delete()  # left the team
    assert api.get(f"/api/v1/jobs/{jobs[0].pk}/", **bearer(member_key)).status_code == 404
    assert api.get("/api/v1/jobs/", **bearer(member_key)).json()["results"] == []
    member_a.is_active = False
    member_a.save()
    refused(api.get("/api/v1/jobs/", **bearer(member_key)), "owner's account is deactivated")


def test_an_operators_token_reads_as_an_operator_and_still_pushes_nothing(client, operator, jobs, upload_dirs):
    client.force_login(operator)
    key, _ = make_token(client, "ops notebook")
    api = APIClient()
    assert {job["name"] for job in api.get("/api/v1/jobs/", **bearer(key)).json()["results"]} == {
        "our-job",
        "their-job",
    }
    assert api.get("/api/v1/ingest-runs/", **bearer(key)).status_code == 200
    with open(EXAMPLE_ARCHIVE, "rb") as handle:
        pushed = api.post("/api/v1/archives/", {"file": handle}, format="multipart", **bearer(key))
    assert pushed.status_code == 403 and "WWW-Authenticate" not in pushed
    assert pushed.json()["detail"].startswith("Personal tokens only read: a 'POST' request with one is refused.")
    assert IngestRun.objects.count() == 0
    for method in ("put", "patch", "delete"):
        answer = getattr(api, method)(f"/api/v1/jobs/{jobs[0].pk}/", **bearer(key))
        assert answer.status_code == 403, method
        assert f"a '{method.upper()}' request with one is refused" in answer.json()["detail"]
    assert Job.objects.count() == 2


@pytest.mark.parametrize("role", ["operator", "researcher"])
def test_the_pages_say_a_whole_fleet_readers_token_reads_every_teams_jobs(client, role, request, member_a):
    """An operator's or a researcher's token reads every team's jobs (the test above), but their settings and
    tokens pages said it reads "your teams' jobs", and they are in no team: they read it as a token for
    nothing. A member's pages still say their teams'."""
    client.force_login(request.getfixturevalue(role))
    settings_page = client.get("/password/").content.decode()
    assert "they read every team's jobs and findings through the API, as your login does" in settings_page
    listing = client.get("/account/tokens/").content.decode()
    assert "every team's jobs (their findings and metric series)" in listing and "your teams" not in listing
    _, made = make_token(client)
    assert "Read every team's jobs with it, with their findings:" in made and "your teams" not in made

    client.force_login(member_a)
    assert "they read your teams' jobs and findings" in client.get("/password/").content.decode()
    listing = client.get("/account/tokens/").content.decode()
    assert "the jobs of your teams (their findings and metric series)" in listing
    assert "a command that reads your teams' jobs" in listing


def test_revoked_expired_and_wrong_keys_are_401s_saying_why_never_echoing_the_key(member_key):
    api = APIClient()
    prefix, secret = member_key.split(".")
    refused(api.get("/api/v1/jobs/", **bearer(f"zzzzzzzz.{secret}")), "No personal token has this key's prefix")
    refused(api.get("/api/v1/jobs/", **bearer(f"{prefix}.{secret[:-1]}")), "secret does not match")
    refused(api.get("/api/v1/jobs/", **bearer("nope")), "not a personal token", "Bearer <prefix>.<secret>")
    token = PersonalToken.objects.get()
    token.expiry_date = datetime(2026, 1, 5, 12, tzinfo=UTC)
    token.save()
    expired = refused(api.get("/api/v1/jobs/", **bearer(member_key)), "expired on 2026-01-05 12:00 UTC")
    token.revoked = True
    token.save()
    revoked = refused(api.get("/api/v1/jobs/", **bearer(member_key)), "was revoked", "/account/tokens/")
    for detail in (expired, revoked):
        assert secret not in detail


def test_a_key_under_the_other_kinds_scheme_is_told_which_to_use(member_key):
    api = APIClient()
    refused(api.get("/api/v1/jobs/", HTTP_AUTHORIZATION=f"Api-Key {member_key}"), "personal token's", "Bearer <key>")
    _, machine_key = MachineToken.objects.create_key(name="cron", reads_jobs=True)
    refused(api.get("/api/v1/jobs/", **bearer(machine_key)), "machine token's", "Api-Key <key>")
    # A personal key is no machine token for /metrics either, and reaches no page: those take a login.
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Api-Key {member_key}").status_code == 403
    assert Client().get("/metrics", **bearer(member_key)).status_code == 403
    page = Client().get("/jobs/", **bearer(member_key))
    assert page.status_code == 302 and "/login/" in page["Location"]


def test_no_credentials_name_both_token_schemes():
    answer = APIClient().get("/api/v1/jobs/")
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"] == 'Api-Key realm="api", Bearer realm="api"'
    assert "'Authorization: Bearer <token>'" in answer.json()["detail"]


def test_the_key_is_shown_once_and_only_its_hash_kept(client, member_a):
    client.force_login(member_a)
    key, html = make_token(client, "weekly notebook", "30")
    assert f'curl -H "Authorization: Bearer {key}"' in html
    assert "no-store" in client.post("/account/tokens/", {"name": "again", "lifetime": "7"})["Cache-Control"]
    PersonalToken.objects.filter(name="again").delete()
    token = PersonalToken.objects.get()
    assert token.owner == member_a and token.name == "weekly notebook"
    assert key.split(".")[1] not in token.hashed_key and key not in token.pk
    assert timedelta(days=29, hours=23) < token.expiry_date - timezone.now() <= timedelta(days=30)
    again = client.get("/account/tokens/").content.decode()
    assert key not in again and "weekly notebook" in again and f"{token.prefix}…" in again
    assert "never" in again  # not used yet


def test_expiry_is_required_and_at_most_a_year(client, member_a):
    client.force_login(member_a)
    for lifetime, error in (("", "Choose how long the token lasts."), ("3650", "7, 30, 90 or 180 days, or 1 year")):
        page = client.post("/account/tokens/", {"name": "forever", "lifetime": lifetime})
        assert page.status_code == 200 and error in page.content.decode()
    blank = client.post("/account/tokens/", {"name": "  ", "lifetime": "90"}).content.decode()
    assert "Give the token a name" in blank
    assert not PersonalToken.objects.exists()
    # The form offers 90 days unless told otherwise.
    assert '<option value="90" selected>90 days</option>' in client.get("/account/tokens/").content.decode()


def test_a_person_sees_and_revokes_only_their_own(client, member_a, outsider):
    client.force_login(member_a)
    key, _ = make_token(client, "alice laptop")
    token = PersonalToken.objects.get()
    other = Client()
    other.force_login(outsider)
    assert "alice laptop" not in other.get("/account/tokens/").content.decode()
    assert other.post(f"/account/tokens/{token.prefix}/revoke/").status_code == 404
    assert other.post(f"/tokens/personal/{token.prefix}/revoke/").status_code == 404  # the operators' address
    token.refresh_from_db()
    assert not token.revoked
    answer = client.post(f"/account/tokens/{token.prefix}/revoke/", follow=True)
    assert "Token “alice laptop”" in answer.content.decode() and "is revoked" in answer.content.decode()
    token.refresh_from_db()
    assert token.revoked
    refused(APIClient().get("/api/v1/jobs/", **bearer(key)), "was revoked")
    assert [e.action for e in AuditEvent.objects.order_by("pk")] == ["personal_token.create", "personal_token.revoke"]
    revoke = AuditEvent.objects.get(action="personal_token.revoke")
    assert revoke.actor == member_a and revoke.details["prefix"] == token.prefix
    assert revoke.details["owner"] == "alice-member"
    assert key.split(".")[1] not in str(AuditEvent.objects.values_list("details", flat=True))


def test_an_operator_sees_everyones_tokens_and_revokes_one(client, member_a, operator):
    client.force_login(member_a)
    key, _ = make_token(client, "alice laptop")
    token = PersonalToken.objects.get()
    APIClient().get("/api/v1/jobs/", **bearer(key))
    ops = Client()
    ops.force_login(operator)
    page = ops.get("/tokens/").content.decode()
    table = page.split('id="personal-token-table"', 1)[1]
    assert "alice-member" in table and "alice laptop" in table and f"{token.prefix}…" in table
    assert key not in page
    answer = ops.post(f"/tokens/personal/{token.prefix}/revoke/", follow=True).content.decode()
    assert "alice-member&#x27;s token “alice laptop”" in answer
    token.refresh_from_db()
    assert token.revoked
    event = AuditEvent.objects.get(action="personal_token.revoke")
    assert event.actor == operator and event.details["owner"] == "alice-member"
    refused(APIClient().get("/api/v1/jobs/", **bearer(key)), "was revoked")


def test_a_personal_token_s_revoke_addresses_hold_its_prefix_not_its_key_s_hash(client, member_a, operator):
    """Addresses land in access logs and browser history: the owner's and the operators' revoke forms
    name a token by its prefix (shown beside it), never by the library's id, the prefix and the key's
    hash; an address with the hash finds no token."""
    client.force_login(member_a)
    make_token(client, "alice laptop")
    token = PersonalToken.objects.get()
    own = re.findall(r'<form method="post" action="([^"]*/revoke/)"', client.get("/account/tokens/").content.decode())
    assert own == [f"/account/tokens/{token.prefix}/revoke/"]
    ops = Client()
    ops.force_login(operator)
    listed = re.findall(r'<form method="post" action="(/tokens/personal/[^"]*)"', ops.get("/tokens/").content.decode())
    assert listed == [f"/tokens/personal/{token.prefix}/revoke/"]
    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 404
    assert ops.post(f"/tokens/personal/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert not token.revoked
    assert ops.post(listed[0]).status_code == 302
    token.refresh_from_db()
    assert token.revoked


def test_the_forms_need_the_sessions_csrf_token(member_a, operator):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(member_a)
    assert strict.post("/account/tokens/", {"name": "x", "lifetime": "90"}).status_code == 403
    assert not PersonalToken.objects.exists()
    token, _ = PersonalToken.objects.create_key(
        owner=member_a, name="x", expiry_date=timezone.now() + timedelta(days=1)
    )
    assert strict.post(f"/account/tokens/{token.prefix}/revoke/").status_code == 403
    ops = Client(enforce_csrf_checks=True)
    ops.force_login(operator)
    assert ops.post(f"/tokens/personal/{token.prefix}/revoke/").status_code == 403
    token.refresh_from_db()
    assert not token.revoked


def test_the_settings_page_leads_to_the_tokens(client, member_a):
    client.force_login(member_a)
    page = client.get("/password/").content.decode()
    assert 'href="/account/tokens/"' in page


def test_the_schema_declares_the_bearer_scheme_for_reads_not_for_pushes(client):
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    scheme = schema["components"]["securitySchemes"]["PersonalToken"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    assert {"PersonalToken": []} in schema["paths"]["/api/v1/jobs/"]["get"]["security"]
    assert {"PersonalToken": []} not in schema["paths"]["/api/v1/archives/"]["post"]["security"]


def _token(owner, name: str, *, days: int = 30, revoked: bool = False) -> PersonalToken:
    token, _ = PersonalToken.objects.create_key(
        owner=owner, name=name, expiry_date=timezone.now() + timedelta(days=days), revoked=revoked
    )
    return token


def test_a_person_has_at_most_the_settings_number_of_live_tokens(client, member_a, settings):
    settings.PERSONAL_TOKENS_PER_USER = 2
    # Revoked and expired ones do not count: they read nothing.
    _token(member_a, "old", revoked=True)
    _token(member_a, "gone", days=-1)
    client.force_login(member_a)
    make_token(client, "one")
    make_token(client, "two")
    page = client.post("/account/tokens/", {"name": "three", "lifetime": "90"})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="token-value"' not in html
    assert "You already have 2 active tokens, the most one person may have." in html
    assert "Revoke one you no longer use" in html
    assert PersonalToken.objects.filter(owner=member_a).count() == 4
    assert not PersonalToken.objects.filter(name="three").exists()
    assert AuditEvent.objects.filter(action="personal_token.create").count() == 2  # "one" and "two"
    # Revoking one makes room for a new one.
    client.post(f"/account/tokens/{PersonalToken.objects.get(name='one').prefix}/revoke/")
    make_token(client, "three")
    assert PersonalToken.objects.filter(name="three").exists()


def test_the_twenty_first_live_token_is_refused_saying_why(client, member_a):
    from fleet import personal_tokens

    for number in range(20):  # the default PERSONAL_TOKENS_PER_USER
        personal_tokens.create(member_a, f"script {number}", 30)
    with pytest.raises(personal_tokens.TooManyTokens, match="You already have 20 active tokens"):
        personal_tokens.create(member_a, "one more", 30)
    client.force_login(member_a)
    page = client.post("/account/tokens/", {"name": "one more", "lifetime": "90"}).content.decode()
    [alert] = re.findall(r'<p class="error" role="alert"[^>]*>([^<]+)</p>', page)
    assert alert == (
        "You already have 20 active tokens, the most one person may have. "
        "Revoke one you no longer use below, then create this one."
    )
    assert PersonalToken.objects.filter(owner=member_a).count() == 20


def test_the_limit_is_per_person(client, member_a, outsider, settings):
    settings.PERSONAL_TOKENS_PER_USER = 1
    _token(outsider, "oscar's")
    client.force_login(member_a)
    make_token(client, "alice's")
    assert PersonalToken.objects.filter(owner=member_a).count() == 1


def _personal_table(page: str) -> str:
    return page.split('id="personal-tokens"', 1)[1]


def test_the_operators_list_of_personal_tokens_comes_in_pages(client, operator, member_a, outsider, monkeypatch):
    monkeypatch.setattr("fleet.views.PERSONAL_TOKENS_PER_PAGE", 3)
    for n in range(4):
        _token(member_a, f"alice-{n}")
    for n in range(2):
        _token(outsider, f"oscar-{n}")
    MachineToken.objects.create_key(name="nightly-export", created_by=operator)
    client.force_login(operator)
    first = client.get("/tokens/").content.decode()
    table = _personal_table(first)
    assert len(table_rows(first, "Personal tokens")) == 3
    assert "Showing 1–3 of 6 tokens" in table
    assert 'href="?page=2#personal-tokens"' in table
    second = _personal_table(client.get("/tokens/", {"page": "2"}).content.decode())
    assert "Showing 4–6 of 6 tokens" in second
    # The machine tokens are listed in full on every page.
    assert "nightly-export" in client.get("/tokens/", {"page": "2"}).content.decode().split('id="personal-tokens"')[0]
    # A page past the end is the last one, as the other lists.
    assert "Showing 4–6 of 6 tokens" in _personal_table(client.get("/tokens/", {"page": "9"}).content.decode())


def test_the_operators_list_of_personal_tokens_is_filtered_by_owner(client, operator, member_a, outsider, monkeypatch):
    monkeypatch.setattr("fleet.views.PERSONAL_TOKENS_PER_PAGE", 2)
    for n in range(3):
        _token(member_a, f"alice-{n}")
    _token(outsider, "oscar-laptop")
    client.force_login(operator)
    page = client.get("/tokens/", {"owner": "oscar-outsider"}).content.decode()
    table = _personal_table(page)
    assert "oscar-laptop" in table and "alice-0" not in table
    assert '<option value="alice-member">alice-member (3)</option>' in table
    alice = _personal_table(client.get("/tokens/", {"owner": "alice-member"}).content.decode())
    # The pages keep the filter.
    assert 'href="?owner=alice-member&amp;page=2#personal-tokens"' in alice
    # An owner with no token is said, and every token shown instead, never a server error.
    unknown = client.get("/tokens/", {"owner": "nobody"})
    assert unknown.status_code == 200
    table = _personal_table(unknown.content.decode())
    assert "Nobody called “nobody” has a personal token" in table
    assert "Showing 1–2 of 4 tokens" in table


def test_the_operators_table_says_when_a_tokens_owner_is_deactivated(client, operator, member_a):
    client.force_login(member_a)
    member_key, _ = make_token(client, "alice laptop")
    member_a.is_active = False
    member_a.save()
    refused(APIClient().get("/api/v1/jobs/", **bearer(member_key)), "owner's account is deactivated")
    ops = Client()
    ops.force_login(operator)
    page = ops.get("/tokens/").content.decode()
    [row] = table_rows(page, "Personal tokens")
    assert row[:2] == ["alice-member", "alice laptop"] and row[6] == "owner deactivated"
    assert '<span class="status failed">owner deactivated</span>' in _personal_table(page)
    # An operator may still revoke it (so it stays refused if the account comes back).
    assert "aria-label=\"Revoke alice-member's token alice laptop" in _personal_table(page)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_on_postgresql_two_creations_at_once_cannot_pass_the_limit(member_a, settings, monkeypatch):
    """The limit is counted under a lock on the person's row: two tokens made at once (two tabs, a
    double click) both counted the tokens before either was saved, and both were made."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connections

    from tests.conftest import blocked_query, require_postgresql
    from tests.waiting import wait_for

    require_postgresql("the second creation waits on a row lock held by the first, which SQLite has not")
    settings.PERSONAL_TOKENS_PER_USER = 1
    # The first creation stops after counting the tokens, just before it saves its own.
    counted, go_on = threading.Event(), threading.Event()
    create_key = PersonalToken.objects.create_key

    def wait_then_create_key(**fields):
        if not counted.is_set():
            counted.set()
            go_on.wait(30)
        return create_key(**fields)

    monkeypatch.setattr(PersonalToken.objects, "create_key", wait_then_create_key)

    tabs = [Client(), Client()]
    for tab in tabs:
        tab.force_login(member_a)

    def post(tab: Client, name: str):
        try:
            return tab.post("/account/tokens/", {"name": name, "lifetime": "90"}).content.decode()
        finally:
            connections.close_all()

    pool = ThreadPoolExecutor(2)
    try:
        first = pool.submit(post, tabs[0], "first tab")
        assert counted.wait(30), "the first creation never came to saving its token"
        second = pool.submit(post, tabs[1], "second tab")
        # It waits for the first to finish (or, counting without a lock, it is done at once).
        wait_for("the second creation to wait for the first (or be done)", lambda: second.done() or blocked_query(), 30)
        go_on.set()
        assert 'id="token-value"' in first.result(timeout=30)
        assert "You already have 1 active tokens, the most one person may have." in second.result(timeout=30)
    finally:
        go_on.set()  # before waiting for the threads: a failed test must not leave one waiting
        pool.shutdown()
    assert list(PersonalToken.objects.filter(owner=member_a).values_list("name", flat=True)) == ["first tab"]
