"""Web hygiene a user relies on without seeing it: throttled logins, CSP, CSRF, deploy checks."""

import os
import re
import subprocess
import sys

import pytest
from django.core import mail
from django.http import HttpResponseForbidden
from django.template import engines
from django.test import Client
from django.urls import resolve, reverse
from rest_framework.views import APIView

from tests.conftest import EXAMPLE_ARCHIVE, REPO
from tests.routes import routes
from tests.test_access_matrix import ROWS, snapshot

pytestmark = pytest.mark.django_db


@pytest.mark.login_throttling
def test_repeated_wrong_passwords_lock_the_login_out(client, member_a, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("login"), {"username": "alice-member", "password": "wrong"})
    response = client.post(reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"})
    assert response.status_code == 429
    assert b"Too many failed logins" in response.content
    assert "_auth_user_id" not in client.session


@pytest.mark.login_throttling
def test_one_wrong_password_does_not_lock_the_user_out(client, member_a):
    client.post(reverse("login"), {"username": "alice-member", "password": "wrong"})
    response = client.post(reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"})
    assert response.status_code == 302


# --- A person changes their own password ------------------------------------------------------------

OLD_PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "a brand new passphrase 42"


def test_a_member_changes_the_password_an_operator_gave_them(member_a):
    """There was no way for anyone but a staff user (the Django admin) to change a password: a
    member kept the one an operator mailed them for good."""
    browser, elsewhere = Client(), Client()
    browser.post(reverse("login"), {"username": "alice-member", "password": OLD_PASSWORD})
    elsewhere.post(reverse("login"), {"username": "alice-member", "password": OLD_PASSWORD})
    page = browser.get(reverse("dashboard:overview")).content.decode()
    assert f'href="{reverse("password_change")}"' in page, "the top bar links to the password page"

    response = browser.post(
        reverse("password_change"),
        {"old_password": OLD_PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302 and response["Location"] == reverse("password_change_done")
    assert browser.get(reverse("dashboard:overview")).status_code == 200, "this session stays logged in"
    gone = elsewhere.get(reverse("dashboard:overview"))
    assert gone.status_code == 302 and "/login/" in gone["Location"], "the other session is logged out"
    assert Client().post(reverse("login"), {"username": "alice-member", "password": OLD_PASSWORD}).status_code == 200
    assert Client().post(reverse("login"), {"username": "alice-member", "password": NEW_PASSWORD}).status_code == 302


def test_a_wrong_old_password_or_a_weak_new_one_changes_nothing(member_a):
    client = Client()
    client.force_login(member_a)
    wrong = client.post(
        reverse("password_change"),
        {"old_password": "guess", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert wrong.status_code == 200 and b"Your old password was entered incorrectly" in wrong.content
    weak = client.post(
        reverse("password_change"),
        {"old_password": OLD_PASSWORD, "new_password1": "12345678", "new_password2": "12345678"},
    )
    assert weak.status_code == 200 and b"too common" in weak.content
    member_a.refresh_from_db()
    assert member_a.check_password(OLD_PASSWORD)


# --- A login left idle ends --------------------------------------------------------------------------


@pytest.fixture
def clock(monkeypatch):
    """Django's clock (sessions' expiry, the idle middleware), moved on by hand."""
    from datetime import timedelta

    from django.utils import timezone

    real_now = timezone.now
    offset = {"by": timedelta(0)}
    monkeypatch.setattr(timezone, "now", lambda: real_now() + offset["by"])

    def advance(**delta):
        offset["by"] += timedelta(**delta)

    return advance


def _logged_in(client) -> bool:
    return client.get(reverse("dashboard:overview")).status_code == 200


def test_a_login_left_idle_ends_after_the_idle_timeout(member_a, clock, settings):
    """A session lasted two weeks from the login whatever happened: a browser left open on a shared
    computer stayed logged in for days."""
    assert settings.SESSION_COOKIE_AGE == 8 * 60 * 60  # SESSION_IDLE_MINUTES' default
    client = Client()
    client.post(reverse("login"), {"username": "alice-member", "password": OLD_PASSWORD})
    assert _logged_in(client)
    clock(hours=8, minutes=1)
    response = client.get(reverse("dashboard:overview"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_login_in_use_stays_while_each_pause_is_shorter_than_the_timeout(member_a, clock):
    client = Client()
    client.post(reverse("login"), {"username": "alice-member", "password": OLD_PASSWORD})
    for _ in range(4):  # 24 hours of work, never 8 hours idle
        assert _logged_in(client)
        clock(hours=6)
    assert _logged_in(client)


def test_the_session_is_not_written_on_every_request(member_a, clock):
    """Moving the expiry on at each request (SESSION_SAVE_EVERY_REQUEST) is an UPDATE per page, series
    and poll; it moves at most every five minutes."""
    from django.contrib.sessions.models import Session
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.post(reverse("login"), {"username": "alice-member", "password": OLD_PASSWORD})
    assert _logged_in(client)
    key = client.session.session_key
    first = Session.objects.get(session_key=key).expire_date
    clock(minutes=4)
    with CaptureQueriesContext(connection) as queries:
        assert _logged_in(client)
    assert not [query for query in queries if "django_session" in query["sql"] and "UPDATE" in query["sql"]]
    assert Session.objects.get(session_key=key).expire_date == first
    clock(minutes=2)
    assert _logged_in(client)
    assert Session.objects.get(session_key=key).expire_date > first


def test_the_first_page_after_logging_in_does_not_write_the_session_again(member_a):
    """The login's own response saves the session; the first page after it wrote it once more (an
    UPDATE on every first page of every login)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.post(reverse("login"), {"username": "alice-member", "password": OLD_PASSWORD})
    with CaptureQueriesContext(connection) as queries:
        assert _logged_in(client)
    assert not [query for query in queries if "django_session" in query["sql"] and "UPDATE" in query["sql"]]


# --- Login throttling behind a reverse proxy --------------------------------------------------------
#
# Served over HTTPS the app sits behind a proxy (SECURE_PROXY_SSL_HEADER): every request's REMOTE_ADDR
# is the proxy's. Counted by (username, REMOTE_ADDR), five wrong passwords from anyone locked the
# user out for everyone. TRUSTED_PROXIES says how many proxies append to X-Forwarded-For; the
# address the outermost of them saw is the client's.

PROXY = "10.0.0.5"


def _through_proxy(client_address, spoofed=""):
    """A login client behind one proxy that appends the address it saw to X-Forwarded-For."""
    forwarded = f"{spoofed}, {client_address}" if spoofed else client_address
    return Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded)


@pytest.mark.login_throttling
def test_behind_a_proxy_an_attackers_wrong_passwords_do_not_lock_the_victim_out(member_a, settings):
    settings.TRUSTED_PROXIES = 1
    attacker = _through_proxy("203.0.113.66")
    for _ in range(settings.AXES_FAILURE_LIMIT + 1):
        attacker.post(reverse("login"), {"username": "alice-member", "password": "wrong"})
    victim = _through_proxy("198.51.100.7")
    response = victim.post(reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"})
    assert response.status_code == 302, "the victim, at another address, was locked out by the attacker's failures"
    assert "_auth_user_id" in victim.session


@pytest.mark.login_throttling
def test_behind_a_proxy_a_forged_forwarded_for_does_not_escape_the_lockout(member_a, settings):
    settings.TRUSTED_PROXIES = 1
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        # Each try claims another address; the proxy appends the real one after it.
        _through_proxy("203.0.113.66", spoofed=f"192.0.2.{attempt}").post(
            reverse("login"), {"username": "alice-member", "password": "wrong"}
        )
    again = _through_proxy("203.0.113.66", spoofed="192.0.2.200")
    response = again.post(reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"})
    assert response.status_code == 429


@pytest.mark.login_throttling
@pytest.mark.parametrize("forwarded", ["not-an-address", "", "10.0.0.1, <script>"])
def test_a_forwarded_for_that_is_no_address_counts_the_proxy_address(member_a, settings, forwarded):
    settings.TRUSTED_PROXIES = 1
    for _ in range(settings.AXES_FAILURE_LIMIT):
        Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded).post(
            reverse("login"), {"username": "alice-member", "password": "wrong"}
        )
    response = Client(REMOTE_ADDR=PROXY).post(
        reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"}
    )
    assert response.status_code == 429


@pytest.mark.login_throttling
def test_without_trusted_proxies_the_forwarded_for_header_is_ignored(member_a, settings):
    """Reached directly, a client could write any X-Forwarded-For: it must not pick its own address."""
    settings.TRUSTED_PROXIES = 0
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        Client(REMOTE_ADDR="203.0.113.66", HTTP_X_FORWARDED_FOR=f"192.0.2.{attempt}").post(
            reverse("login"), {"username": "alice-member", "password": "wrong"}
        )
    response = Client(REMOTE_ADDR="203.0.113.66", HTTP_X_FORWARDED_FOR="192.0.2.99").post(
        reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"}
    )
    assert response.status_code == 429


# --- Nothing a login shows is kept in a browser's or a proxy's cache --------------------------------


def _uncached(response) -> bool:
    return "no-store" in response.get("Cache-Control", "") and "private" in response.get("Cache-Control", "")


def test_every_page_and_download_a_member_opens_is_not_cached(world):
    """A team's pages, exports, series and files carried no Cache-Control: after logging out on a
    shared computer, Back (or the browser's cache) showed the next person the team's jobs."""
    from tests.test_access_matrix import client_for

    client = client_for("member", world)
    cached = []
    for row in ROWS:
        if row.method != "GET" or row.expected["member"] != "200":
            continue
        path = row.path.format(**world["params"])
        response = client.get(path)
        assert response.status_code == 200, path
        if not _uncached(response):
            cached.append(f"{path}: {response.get('Cache-Control', 'no Cache-Control')}")
    assert not cached, "pages a browser may keep:\n" + "\n".join(cached)


def test_a_new_machine_tokens_key_is_not_cached(operator):
    client = Client()
    client.force_login(operator)
    response = client.post(reverse("fleet:token-list"), {"name": "ci"})
    assert response.status_code == 200 and b"not shown again" in response.content
    assert _uncached(response)


def test_the_api_read_with_a_machine_token_is_not_cached(world):
    from fleet.models import MachineToken

    token, key = MachineToken.objects.create_key(name="reader", reads_jobs=True, created_by=world["users"]["operator"])
    response = Client(HTTP_AUTHORIZATION=f"Api-Key {key}").get("/api/v1/jobs/")
    assert response.status_code == 200
    assert _uncached(response)


def test_static_files_are_still_cached(client, member_a):
    client.force_login(member_a)
    response = client.get("/static/css/app.css")
    assert response.status_code == 200
    assert "no-store" not in response.get("Cache-Control", "")


def test_pages_carry_a_content_security_policy(client, operator):
    client.force_login(operator)
    policy = client.get(reverse("dashboard:job-list"))["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-eval" not in policy


def test_login_form_refuses_a_post_without_csrf_token(member_a):
    strict = Client(enforce_csrf_checks=True)
    response = strict.post(reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"})
    assert response.status_code == 403


# --- CSRF on every form ---------------------------------------------------------------------------
#
# CsrfViewMiddleware refuses a POST, PUT, PATCH or DELETE without a valid token in process_view, before
# the view runs, for every view not marked csrf_exempt. So the tests below walk every URL pattern
# (tests/routes.py): the exempt views are exactly the allow-list, every other one refuses a logged-in
# operator's token-less request, the exempt API views still refuse a session without the token, and
# every form in the templates carries the token.

UNSAFE_METHODS = ("post", "put", "patch", "delete")

# Every csrf_exempt view, by URL name (an unnamed pattern by its route), and why it may be.
# docs/access-control.md ("CSRF") says the same; keep the two together.
DRF = (
    "DRF API view: APIView.as_view() marks it exempt and DRF's SessionAuthentication enforces CSRF "
    "itself for a session-authenticated request; a machine token rides in the Authorization header, "
    "which a cross-site form cannot send"
)
CSRF_EXEMPT = {
    "api-root": f"{DRF}; GET only",
    "api-schema": f"{DRF}; GET only, the public OpenAPI schema",
    "api-docs": f"{DRF}; GET only, the public reference page over the schema",
    "job-list": f"{DRF}; GET only",
    "job-detail": f"{DRF}; GET only",
    "job-series": f"{DRF}; GET only, the job's series as a download",
    "team-report-list": f"{DRF}; GET only",
    "team-report-causes": f"{DRF}; GET only",
    "ingest-run-list": f"{DRF}; GET only",
    "ingest-run-detail": f"{DRF}; GET only",
    "archive-list": f"{DRF}; POST: an operator's session with the CSRF token, or a machine token",
    "api-not-found": (
        "the API's JSON 404 for any address under /api/ it does not have, whatever the method: it "
        "reads and changes nothing, and a script's POST to a wrong address should learn that, not "
        "meet an HTML CSRF refusal"
    ),
    "digests:unsubscribe": (
        "RFC 8058 one-click unsubscribe: mail clients POST it with no cookie and no CSRF token; the "
        "signed token in the URL is its authority, and all it can do is turn that one digest off"
    ),
}

# Values for URL parameters no access-matrix row fills (the admin's, the API's format suffix). Any
# value that resolves will do: the middleware refuses before the view looks anything up.
SAMPLE_PARAMS = {
    "object_id": "1",
    "id": "1",
    "content_type_id": "1",
    "app_label": "fleet",
    "format": "json",
    "url": "no-such-page/",
}


def csrf_refusal(request, reason=""):
    """CSRF_FAILURE_VIEW while testing: a 403 that says it came from CsrfViewMiddleware, not from a view."""
    response = HttpResponseForbidden(reason)
    response["X-CSRF-Refused"] = reason
    return response


def matrix_params(world) -> dict[str, dict]:
    """URL name -> the parameters of its first row in the access matrix: real objects of the `world`."""
    found: dict[str, dict] = {}
    for row in ROWS:
        if row.name != "admin" and row.name not in found:
            found[row.name] = resolve(row.path.format(**world["params"]).split("?")[0]).kwargs
    return found


def sample_path(route, known: dict) -> str:
    """A path that resolves to `route`'s view, with the matrix's real objects where it has them."""
    missing = [p for p in route.params if p not in known and p not in SAMPLE_PARAMS]
    assert not missing, f"{route.label}: add a value for URL parameter(s) {missing} to SAMPLE_PARAMS"
    values = {p: known.get(p, SAMPLE_PARAMS.get(p)) for p in route.params}
    if route.name:
        path = reverse(route.name, kwargs=values)
    else:  # the admin's unnamed redirects and catch-all: fill in the pattern's own text
        filled = re.sub(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>[^)]*\)", lambda m: str(values[m[1] or m[2]]), route.route)
        path = "/" + filled.replace("^", "").replace("$", "")
    assert resolve(path).func is route.callback, f"{path} does not reach the view of {route.label}"
    return path


def api_routes():
    """The URL patterns served by Django REST framework views."""
    return [
        r
        for r in routes()
        if isinstance(getattr(r.callback, "cls", None), type) and issubclass(r.callback.cls, APIView)
    ]


def accepted_unsafe_methods(route) -> set[str]:
    actions = getattr(route.callback, "actions", None)  # a viewset route's {method: action}
    methods = (
        actions
        if actions is not None
        else [m for m in route.callback.cls.http_method_names if hasattr(route.callback.cls, m)]
    )
    return {m for m in methods if m in UNSAFE_METHODS}


def operator_browser(operator, client_class=Client):
    """The operator's browser as a cross-site form finds it: logged in, CSRF cookie set, no token sent."""
    browser = client_class(enforce_csrf_checks=True)
    browser.force_login(operator)
    browser.get(reverse("login"))
    assert "csrftoken" in browser.cookies
    return browser


def test_the_csrf_exempt_views_are_exactly_the_allow_list():
    exempt = {route.label for route in routes() if getattr(route.callback, "csrf_exempt", False)}
    new = sorted(exempt - CSRF_EXEMPT.keys())
    assert not new, (
        f"csrf_exempt views not on the allow-list: {new}. Drop the exemption (a form posts with "
        "{% csrf_token %}, a script sends the X-CSRFToken header), or, if the view truly must accept "
        "cross-site requests, add it to CSRF_EXEMPT in tests/test_web_security.py with the reason, and "
        "to the CSRF section of docs/access-control.md."
    )
    stale = sorted(CSRF_EXEMPT.keys() - exempt)
    assert not stale, f"on CSRF_EXEMPT but no longer exempt (or gone): {stale}; take them off the list and the doc"


def test_every_other_view_refuses_an_unsafe_request_without_the_csrf_token(world, settings):
    settings.CSRF_FAILURE_VIEW = "tests.test_web_security.csrf_refusal"
    browser = operator_browser(world["users"]["operator"])
    known = matrix_params(world)
    before, sent = snapshot(), len(mail.outbox)
    checked, failures = 0, []
    for route in routes():
        if route.label in CSRF_EXEMPT:
            continue
        path = sample_path(route, known.get(route.name, {}))
        for method in UNSAFE_METHODS:
            response = getattr(browser, method)(path)
            if response.status_code != 403 or "X-CSRF-Refused" not in response:
                failures.append(f"{method.upper()} {path} ({route.label}): {response.status_code}")
        checked += 1
    assert not failures, "answered without the CSRF token:\n" + "\n".join(failures)
    assert checked > 100  # the admin's patterns included: the walk found the whole URLconf
    assert snapshot() == before and len(mail.outbox) == sent


# --- A page answers the methods it takes, and 405 to the rest -------------------------------------------


def test_a_page_refuses_put_patch_and_delete_with_405_and_says_what_it_allows(world):
    """Function views ran for any method: a PUT, PATCH or DELETE to a page, with the session's CSRF
    token, was answered as a GET (200 and the page), as if the page took it. Now 405 with an Allow
    header, as the class-based views and the API answer; HEAD answers as GET does, and OPTIONS names
    the methods without running the page."""
    from tests.test_access_matrix import client_for

    client = client_for("operator", world)  # the test client sends no CSRF check: the view decides
    client.raise_request_exception = False
    checked, failures = set(), []
    for row in ROWS:
        if row.method != "GET" or row.name in ("admin", "logout") or row.expected["operator"] != "200":
            continue
        path = row.path.format(**world["params"])
        for method in ("put", "patch", "delete"):
            response = getattr(client, method)(path)
            allowed = {m.strip() for m in response.get("Allow", "").split(",")}
            if response.status_code != 405 or not {"GET", "HEAD"} <= allowed or method.upper() in allowed:
                failures.append(f"{method.upper()} {path}: {response.status_code}, Allow: {response.get('Allow')}")
        head = client.head(path)
        body = b"".join(head.streaming_content) if head.streaming else head.content
        if head.status_code != 200 or body:
            failures.append(f"HEAD {path}: {head.status_code}, {len(body)} bytes")
        options = client.options(path)
        if row.name != "api-docs" and (options.status_code != 200 or "GET" not in options.get("Allow", "")):
            failures.append(f"OPTIONS {path}: {options.status_code}, Allow: {options.get('Allow')}")
        if row.name == "api-docs" and options.status_code >= 500:
            failures.append(f"OPTIONS {path}: {options.status_code}")
        checked.add(row.name)
    assert not failures, "pages that take what they should refuse:\n" + "\n".join(failures)
    assert {"dashboard:job-list", "dashboard:settings", "login", "connectors:edit", "fleet:healthz"} <= checked


def test_a_head_request_to_an_unsubscribe_link_does_not_unsubscribe(world):
    """A link scanner may send HEAD: like its GET, it only asks."""
    before = snapshot()
    unsubscribe = ROWS[[row.name for row in ROWS].index("digests:unsubscribe")].path.format(**world["params"])
    assert Client().head(unsubscribe).status_code == 200
    assert snapshot() == before


def test_forms_still_post_and_a_refused_put_changes_nothing(world):
    from tests.test_access_matrix import client_for

    client = client_for("operator", world)
    before = snapshot()
    assert client.put(reverse("dashboard:settings"), "default_currency=EUR").status_code == 405
    assert client.delete(reverse("connectors:edit", args=[world["params"]["connector"]])).status_code == 405
    assert snapshot() == before
    response = client.post(reverse("digests:settings"), {})
    assert response.status_code == 302


def test_the_api_refuses_a_session_without_the_csrf_token_whatever_the_method(world):
    from rest_framework.test import APIClient

    browser = operator_browser(world["users"]["operator"], APIClient)
    known = matrix_params(world)
    failures = []
    for route in api_routes():
        path = sample_path(route, known.get(route.name, {}))
        for method in UNSAFE_METHODS:
            response = getattr(browser, method)(path)
            # The schema says why in YAML; the reference page's HTML renderer only "403 Forbidden".
            html_refusal = route.name == "api-docs" and response.content == b"403 Forbidden"
            said = b"CSRF Failed" in response.content or html_refusal
            if response.status_code != 403 or not said:
                failures.append(f"{method.upper()} {path} ({route.label}): {response.status_code} {response.content!r}")
    assert not failures, "the API answered a session without the CSRF token:\n" + "\n".join(failures)


def test_the_api_endpoints_that_change_state_are_the_known_ones():
    writes = {(route.name, method) for route in api_routes() for method in accepted_unsafe_methods(route)}
    assert writes == {("archive-list", "post")}, (
        f"the API's state-changing endpoints are now {sorted(writes)}: give each new one a check like "
        "test_a_machine_token_needs_no_csrf_token_and_a_session_needs_it"
    )


def test_a_machine_token_needs_no_csrf_token_and_a_session_needs_it(world, settings, tmp_path):
    from rest_framework.test import APIClient

    from fleet.models import IngestRun

    settings.UPLOAD_DIR = tmp_path / "uploads"
    url = reverse("archive-list")

    def push(client, **headers):
        with open(EXAMPLE_ARCHIVE, "rb") as archive:
            return client.post(url, {"file": archive}, format="multipart", **headers)

    machine = APIClient(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Api-Key {world['key']}")
    pushed = push(machine)
    assert pushed.status_code == 202, pushed.content
    assert IngestRun.objects.get(pk=pushed.json()["id"]).api_key.name == "pusher"

    browser = operator_browser(world["users"]["operator"], APIClient)
    before = IngestRun.objects.count()
    refused = push(browser)
    assert refused.status_code == 403 and "CSRF Failed" in refused.json()["detail"]
    assert IngestRun.objects.count() == before
    uploaded = push(browser, HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    assert uploaded.status_code == 202, uploaded.content
    assert IngestRun.objects.get(pk=uploaded.json()["id"]).created_by == world["users"]["operator"]


def test_one_click_unsubscribe_works_without_cookie_or_csrf_token_and_a_forged_one_does_not(member_a, team_a):
    from triage.digests.models import DigestKind, Subscription
    from triage.digests.services import unsubscribe_token

    mail_client = Client(enforce_csrf_checks=True)
    one_click = {"data": "List-Unsubscribe=One-Click", "content_type": "application/x-www-form-urlencoded"}
    forged = mail_client.post(reverse("digests:unsubscribe", args=["not-a-token"]), **one_click)
    assert forged.status_code == 400 and not Subscription.objects.exists()
    token = unsubscribe_token(member_a.pk, DigestKind.TEAM, team_a.pk)
    response = mail_client.post(reverse("digests:unsubscribe", args=[token]), **one_click)
    assert response.status_code == 200
    assert Subscription.objects.get(user=member_a, kind=DigestKind.TEAM).active is False


# Templates whose POST forms carry no {% csrf_token %}, and why they may.
TOKENLESS_FORMS = {"digests/unsubscribe.html": "posts to the csrf-exempt one-click unsubscribe (CSRF_EXEMPT)"}
POST_FORM = re.compile(r"<form\b[^>]*\bmethod=[\"']?post\b.*?</form>", re.IGNORECASE | re.DOTALL)
CSRF_TAG = re.compile(r"\{%\s*csrf_token\s*%\}")


def test_every_post_form_in_the_templates_carries_the_csrf_token():
    from pathlib import Path

    tokenless, forms = set(), 0
    for directory in engines["django"].template_dirs:
        folder = Path(directory)
        if not folder.is_relative_to(REPO) or ".venv" in folder.relative_to(REPO).parts:
            continue  # Django's and other packages' templates
        for template in folder.rglob("*.html"):
            for form in POST_FORM.findall(template.read_text(encoding="utf-8")):
                forms += 1
                if not CSRF_TAG.search(form):
                    tokenless.add(template.relative_to(folder).as_posix())
    assert forms > 10
    assert tokenless == TOKENLESS_FORMS.keys(), (
        f"POST forms without {{% csrf_token %}}: {sorted(tokenless - TOKENLESS_FORMS.keys())}; "
        f"no longer token-less (take off TOKENLESS_FORMS): {sorted(TOKENLESS_FORMS.keys() - tokenless)}"
    )


INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.IGNORECASE)


def test_no_template_holds_script_the_content_security_policy_would_block():
    """script-src 'self' blocks inline scripts and on...= handlers: a page that has one silently
    loses that behaviour (the rules page's re-triage progress once did). Scripts go in static/js."""
    from pathlib import Path

    offending, templates = [], 0
    for directory in engines["django"].template_dirs:
        folder = Path(directory)
        if not folder.is_relative_to(REPO) or ".venv" in folder.relative_to(REPO).parts:
            continue
        for template in folder.rglob("*.html"):
            templates += 1
            text = template.read_text(encoding="utf-8")
            for pattern in (INLINE_SCRIPT, INLINE_HANDLER):
                offending += [f"{template.relative_to(folder)}: {match}" for match in pattern.findall(text)]
    assert templates > 20
    assert offending == []


def test_deploy_checks_are_clean_under_production_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL"}} | {
        "DEBUG": "0",
        "HTTPS": "1",
        "SECRET_KEY": "a-long-random-production-secret-key-0123456789-abcdefghijklmnop",
        "ALLOWED_HOSTS": "triage.example.org",
        "DATA_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_test_client_login_still_works_for_other_tests(client, member_a):
    assert client.login(username="alice-member", password="correct horse battery staple")
