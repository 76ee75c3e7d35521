"""Single sign-on after the sign-in (fleet/sso.py), against the real provider on loopback
(tests/oidc_provider.py): logging out ends the provider's session too (RP-initiated logout), and an
SSO session is re-checked with the provider silently (prompt=none) every OIDC_RECHECK_MINUTES, so a
group removed there takes effect here without waiting for the session to end."""

# ruff: noqa: F811  (the fixtures of tests/test_sso.py, imported, are the tests' arguments)

from __future__ import annotations

import logging
import re
import time
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from config.sso import oidc_settings
from fleet.models import MachineToken, Team
from fleet.sso import forget_provider_answers
from tests.factories import JobFactory, UserFactory
from tests.test_browser import SHOTS, body_text, browser  # noqa: F401  (browser: the shared Chromium fixture)
from tests.test_sso import MAPPINGS, apply_oidc_settings, provider, sign_in, sso, teams_of  # noqa: F401  (fixtures)


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


def configure(settings, monkeypatch, **env):
    """Settings from the environment as start-up makes them, with these variables changed (None: unset)."""
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    apply_oidc_settings(settings)


def recheck_due(client: Client) -> None:
    """As if OIDC_RECHECK_MINUTES had passed since the last check with the provider."""
    session = client.session
    session["oidc_id_token_expiration"] = 0
    session.save()


def due_since(client: Client, minutes: float) -> None:
    """As if the session's check with the provider had fallen due this many minutes ago."""
    session = client.session
    session["oidc_id_token_expiration"] = time.time() - minutes * 60
    session.save()


def follow_to_provider(response) -> requests.Response:
    """The browser following a redirect to the provider: its answer (not followed further)."""
    assert response.status_code == 302, response
    return requests.get(response["Location"], allow_redirects=False, timeout=10)


def back_from_provider(client: Client, at_provider: requests.Response):
    assert at_provider.status_code == 302, at_provider.text
    back = urlsplit(at_provider.headers["Location"])
    return client.get(back.path, {key: values[0] for key, values in parse_qs(back.query).items()})


# --- logout --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_logging_out_of_an_sso_session_ends_the_providers_session_too(sso):
    client = Client()
    sign_in(client)
    assert sso.signed_in
    out = client.post("/logout/")
    assert out.status_code == 302 and out["Location"].startswith(f"{sso.url}/logout?")
    asked = query_of(out["Location"])
    assert asked["post_logout_redirect_uri"] == "http://testserver/login/"
    assert asked["client_id"] == "fleet-triage"
    hint = jwt.decode(asked["id_token_hint"], options={"verify_signature": False})
    assert hint["sub"] == "0b6c-ada"  # the ID token this sign-in got
    assert client.get("/jobs/").status_code == 302  # logged out here at once
    assert "oidc_id_token" not in client.session

    at_provider = follow_to_provider(out)
    assert at_provider.status_code == 302, at_provider.text  # the provider took the hint as its own
    assert at_provider.headers["Location"] == "http://testserver/login/"
    assert not sso.signed_in  # logged out there: the next sign-in asks for the password again


@pytest.mark.django_db
def test_logout_stays_a_post_with_csrf(sso):
    client = Client(enforce_csrf_checks=True)
    sign_in(client)
    assert client.get("/logout/").status_code == 405
    assert client.post("/logout/").status_code == 403  # no CSRF token: a link elsewhere cannot log out
    assert client.get("/jobs/").status_code == 200
    assert not sso.logouts


@pytest.mark.django_db
def test_a_local_account_logs_out_here_only(sso):
    client = Client()
    client.force_login(UserFactory(username="break-glass", is_superuser=True))
    out = client.post("/logout/")
    assert out.status_code == 302 and out["Location"] == "/login/"
    assert client.get("/jobs/").status_code == 302


@pytest.mark.django_db
def test_without_an_end_session_endpoint_logout_stays_here_and_no_id_token_is_kept(sso, settings, monkeypatch):
    configure(settings, monkeypatch, OIDC_END_SESSION_ENDPOINT=None)
    client = Client()
    sign_in(client)
    assert "oidc_id_token" not in client.session  # kept only for the logout's hint
    out = client.post("/logout/")
    assert out.status_code == 302 and out["Location"] == "/login/"
    assert client.get("/jobs/").status_code == 302
    assert not sso.logouts


@pytest.mark.django_db
def test_logging_out_with_sso_off_is_as_before(settings):
    assert settings.OIDC_ENABLED is False
    client = Client()
    client.force_login(UserFactory())
    assert client.post("/logout/")["Location"] == "/login/"


def form_action(response) -> str:
    return next(d for d in response["Content-Security-Policy"].split("; ") if d.startswith("form-action"))


@pytest.mark.django_db
def test_the_pages_let_the_logout_form_go_on_to_the_providers_logout(sso, settings, monkeypatch):
    # A browser holds a form's redirects to the page's form-action too: with 'self' alone, Chromium
    # stopped the logout's redirect to the provider, whose session stayed open.
    client = Client()
    sign_in(client)
    assert form_action(client.get("/jobs/")) == f"form-action 'self' {sso.url.split('/realms/')[0]}"
    configure(settings, monkeypatch, OIDC_END_SESSION_ENDPOINT=None)
    assert form_action(client.get("/jobs/")) == "form-action 'self'"  # no logout there: ours only


# --- the admin site's own logout -------------------------------------------------------------


def admin_logout_token(client: Client) -> str:
    """The CSRF token of the admin's "Log out" form, read off the admin's index as a browser has it."""
    page = client.get("/admin/")
    assert page.status_code == 200, page
    form = re.search(r'<form id="logout-form" method="post" action="([^"]+)">(.*?)</form>', page.content.decode(), re.S)
    assert form and form[1] == "/admin/logout/"
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form[2])[1]


@pytest.mark.django_db
def test_the_admins_log_out_ends_the_providers_session_too(sso):
    # A staff account that signs in with SSO clicks "Log out" in the admin's header: as the app's logout.
    client = Client(enforce_csrf_checks=True)
    sign_in(client)
    User.objects.filter(username="ada").update(is_staff=True)
    out = client.post("/admin/logout/", {"csrfmiddlewaretoken": admin_logout_token(client)})
    assert out.status_code == 302 and out["Location"].startswith(f"{sso.url}/logout?")
    asked = query_of(out["Location"])
    assert asked["post_logout_redirect_uri"] == "http://testserver/login/"
    assert jwt.decode(asked["id_token_hint"], options={"verify_signature": False})["sub"] == "0b6c-ada"
    assert out["Cache-Control"].startswith("max-age=0")  # the address holds the ID token: never cached
    assert client.get("/admin/")["Location"].startswith("/admin/login/")  # logged out here at once
    at_provider = follow_to_provider(out)
    assert at_provider.headers["Location"] == "http://testserver/login/"
    assert not sso.signed_in  # and there


@pytest.mark.django_db
def test_the_admins_log_out_stays_a_post_with_csrf_for_an_sso_session(sso):
    client = Client(enforce_csrf_checks=True)
    sign_in(client)
    User.objects.filter(username="ada").update(is_staff=True)
    assert client.get("/admin/logout/").status_code == 405
    assert client.post("/admin/logout/").status_code == 403  # no CSRF token: a link elsewhere cannot log out
    assert client.get("/admin/").status_code == 200
    assert not sso.logouts and sso.signed_in


@pytest.mark.django_db
def test_a_local_account_s_admin_log_out_is_the_admins_as_before(sso):
    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory(username="break-glass", is_staff=True, is_superuser=True))
    out = client.post("/admin/logout/", {"csrfmiddlewaretoken": admin_logout_token(client)})
    assert out.status_code == 302 and out["Location"] == "/login/"  # Django's logout, to LOGOUT_REDIRECT_URL
    assert client.get("/admin/")["Location"].startswith("/admin/login/")
    assert not sso.logouts


@pytest.mark.django_db(transaction=True)
def test_a_browser_logging_out_of_the_admin_ends_the_providers_session_too(sso, browser, live_server):
    """In headless Chromium: a staff account signed in with SSO clicks the admin's "Log out", passes
    through the provider's logout and lands on the login page, signed out here and there."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    base = live_server.url
    browser.get(f"{base}/login/?next=/jobs/")
    browser.find_element(By.LINK_TEXT, "Sign in with Keycloak").click()
    assert browser.current_url == f"{base}/jobs/"
    User.objects.filter(username="ada").update(is_staff=True)
    SHOTS.mkdir(exist_ok=True)
    browser.get(f"{base}/admin/")
    for width, height in ((1280, 800), (390, 844)):
        browser.set_window_size(width, height)
        browser.save_screenshot(str(SHOTS / f"admin-sso-{width}.png"))
    browser.find_element(By.CSS_SELECTOR, "#logout-form button").click()
    WebDriverWait(browser, 10).until(lambda page: page.current_url == f"{base}/login/")
    assert not sso.signed_in and sso.logouts
    browser.get(f"{base}/admin/")
    assert browser.current_url.startswith(f"{base}/admin/login/")
    for width, height in ((1280, 800), (390, 844)):
        browser.set_window_size(width, height)
        browser.save_screenshot(str(SHOTS / f"admin-sso-logged-out-{width}.png"))


# --- the silent re-check -------------------------------------------------------------------


@pytest.mark.django_db
def test_a_session_is_rechecked_silently_and_follows_the_providers_groups(sso):
    JobFactory(team=Team.objects.create(slug="vision", name="Vision"))
    client = Client()
    sign_in(client)
    ada = User.objects.get(username="ada")
    assert teams_of(ada) == {"vision"}
    assert client.get("/jobs/").status_code == 200  # not due: no trip to the provider
    assert len(sso.auth_requests) == 1

    sso.person["groups"] = ["gpu-speech"]  # moved to another team at the provider
    recheck_due(client)
    page = client.get("/jobs/?state=failed")
    asked = query_of(page["Location"])
    assert page["Location"].startswith(f"{sso.url}/auth?")
    assert asked["prompt"] == "none" and asked["code_challenge_method"] == "S256"
    assert asked["redirect_uri"] == "http://testserver/login/sso/callback/"
    done = back_from_provider(client, follow_to_provider(page))
    assert done.status_code == 302 and done["Location"] == "/jobs/?state=failed"  # back where they were
    assert teams_of(ada) == {"speech"}
    assert client.get("/jobs/").context["user"] == ada
    assert len(sso.auth_requests) == 2  # checked again only when due again


@pytest.mark.django_db
def test_a_recheck_finding_no_mapped_group_ends_the_session_with_the_no_access_page(sso):
    client = Client()
    sign_in(client)
    sso.person["groups"] = []
    recheck_due(client)
    page = back_from_provider(client, follow_to_provider(client.get("/jobs/")))
    assert page.status_code == 403 and b"No access" in page.content
    assert teams_of(User.objects.get(username="ada")) == set()
    assert client.get("/jobs/")["Location"].startswith("/login/")  # logged out: to our login page


@pytest.mark.django_db
def test_a_refused_silent_recheck_logs_out_with_a_message(sso):
    client = Client()
    sign_in(client)
    sso.signed_in = False  # the provider's session ended (expired, or logged out elsewhere)
    recheck_due(client)
    done = back_from_provider(client, follow_to_provider(client.get("/jobs/?state=failed")))
    assert done.status_code == 302 and done["Location"] == "/login/?next=/jobs/%3Fstate%3Dfailed"
    login = client.get(done["Location"])
    assert login.status_code == 200
    assert "Your Keycloak session has ended, so you were logged out. Sign in again." in login.content.decode()
    again = client.get("/jobs/")
    assert again.status_code == 302 and again["Location"].startswith("/login/")  # not to the provider


@pytest.mark.django_db
def test_json_and_api_requests_are_answered_not_sent_to_the_provider(sso):
    client = Client()
    sign_in(client)
    recheck_due(client)
    for path, headers in [
        ("/api/v1/jobs/", {}),
        ("/jobs/1/timeline.json", {"HTTP_ACCEPT": "application/json"}),
        ("/jobs/", {"HTTP_X_REQUESTED_WITH": "XMLHttpRequest"}),
    ]:
        answer = client.get(path, **headers)
        assert answer.status_code == 401, path
        assert answer["Content-Type"] == "application/json"
        assert "reload the page" in answer.json()["detail"]
    assert len(sso.auth_requests) == 1  # none of them started a trip to the provider
    assert client.get("/jobs/")["Location"].startswith(f"{sso.url}/auth?")  # the next page does
    # A script's machine token is no session: never checked, never redirected.
    _, key = MachineToken.objects.create_key(name="exporter", reads_jobs=True)
    assert Client().get("/api/v1/jobs/", HTTP_AUTHORIZATION=f"Api-Key {key}").status_code == 200


@pytest.mark.django_db
def test_local_sessions_are_never_rechecked(sso):
    client = Client()
    client.force_login(UserFactory(username="break-glass", is_superuser=True))
    assert client.get("/jobs/").status_code == 200
    assert not sso.auth_requests


@pytest.mark.django_db
def test_rechecks_are_off_with_zero_minutes(sso, settings, monkeypatch):
    configure(settings, monkeypatch, OIDC_RECHECK_MINUTES="0")
    client = Client()
    sign_in(client)
    recheck_due(client)
    assert client.get("/jobs/").status_code == 200


# --- settings ------------------------------------------------------------------------------


def test_settings_of_logout_and_rechecks(provider, monkeypatch):
    for name, value in {**provider.environment(), **MAPPINGS}.items():
        monkeypatch.setenv(name, value)
    got = oidc_settings()
    assert got["OIDC_OP_LOGOUT_ENDPOINT"] == f"{provider.url}/logout"
    assert got["OIDC_STORE_ID_TOKEN"] is True
    assert got["OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS"] == 15 * 60
    monkeypatch.setenv("OIDC_RECHECK_MINUTES", "5")
    monkeypatch.delenv("OIDC_END_SESSION_ENDPOINT")
    got = oidc_settings()
    assert got["OIDC_OP_LOGOUT_ENDPOINT"] == "" and got["OIDC_STORE_ID_TOKEN"] is False
    assert got["OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS"] == 300
    monkeypatch.setenv("OIDC_END_SESSION_ENDPOINT", "http://sso.example.org/logout")
    with pytest.raises(Exception, match="OIDC_END_SESSION_ENDPOINT=.* must be https://"):
        oidc_settings()


@pytest.mark.django_db
def test_signing_in_over_another_accounts_session_keeps_the_hint(sso):
    # A shared computer: someone's local session is open; the next person signs in with SSO over it.
    client = Client()
    client.force_login(UserFactory(username="break-glass"))
    sign_in(client)
    assert client.get("/jobs/").context["user"].username == "ada"
    out = client.post("/logout/")
    assert jwt.decode(query_of(out["Location"])["id_token_hint"], options={"verify_signature": False})["sub"] == (
        "0b6c-ada"
    )
    assert out["Cache-Control"].startswith("max-age=0")  # the address holds the ID token: never cached


@pytest.mark.django_db
def test_a_recheck_that_cannot_be_verified_logs_out_with_a_page(sso):
    client = Client()
    sign_in(client)
    sso.tamper = "signature"
    recheck_due(client)
    page = back_from_provider(client, follow_to_provider(client.get("/jobs/")))
    assert page.status_code == 400 and b"could not be verified" in page.content
    assert client.get("/jobs/")["Location"].startswith("/login/")  # logged out, not sent round again


@pytest.mark.django_db
def test_a_recheck_whose_provider_fails_logs_out_with_a_page(sso, settings):
    client = Client()
    sign_in(client)
    settings.OIDC_OP_TOKEN_ENDPOINT = "http://127.0.0.1:9/token"  # discard port: nothing listens
    recheck_due(client)
    page = back_from_provider(client, follow_to_provider(client.get("/jobs/")))
    assert page.status_code == 502 and b"could not be reached" in page.content
    assert client.get("/jobs/")["Location"].startswith("/login/")


@pytest.mark.django_db(transaction=True)
def test_a_browser_rechecked_and_refused_lands_on_the_login_page_told_why(sso, browser, live_server):
    """In headless Chromium: signed in, then the provider's session ends; the next page's silent
    check goes there and back, and the login page says why (WCAG 2.1 AA, phone and desktop)."""
    from django.contrib.sessions.backends.db import SessionStore
    from selenium.webdriver.common.by import By

    from tests.test_accessibility import narrow_window_problems, violations

    base = live_server.url
    browser.get(f"{base}/login/?next=/jobs/")
    browser.find_element(By.LINK_TEXT, "Sign in with Keycloak").click()
    assert browser.current_url == f"{base}/jobs/"
    session = SessionStore(browser.get_cookie("sessionid")["value"])
    session["oidc_id_token_expiration"] = 0
    session.save()
    sso.signed_in = False
    browser.get(f"{base}/jobs/?state=failed")
    assert browser.current_url == f"{base}/login/?next=/jobs/%3Fstate%3Dfailed"
    assert "Your Keycloak session has ended, so you were logged out. Sign in again." in body_text(browser)
    assert violations(browser) + narrow_window_problems(browser) == []
    SHOTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (390, 844)):
        browser.set_window_size(width, height)
        browser.save_screenshot(str(SHOTS / f"login-sso-recheck-{width}.png"))


# --- the provider down when a check falls due ------------------------------------------------
# A due check sends the browser to the provider; while it cannot be reached that was the browser's
# own error page instead of ours. Now the provider is asked first (its discovery document, a
# short timeout, the answer kept PROBE_CACHE_SECONDS): down, the page is served and the session
# kept, unchecked, for OIDC_RECHECK_GRACE_MINUTES (default 3 x OIDC_RECHECK_MINUTES) past the due
# time; after that it ends with a message saying why.


def stop(provider) -> None:
    """The provider's process gone: its port refuses connections."""
    provider.__exit__(None, None, None)


@pytest.mark.django_db
@pytest.mark.parametrize("outage", ["stopped", "503"])
def test_a_due_check_with_the_provider_down_serves_the_page_and_keeps_the_session(sso, outage, caplog):
    client = Client()
    sign_in(client)
    if outage == "stopped":
        stop(sso)
    else:
        sso.unavailable = 503  # a proxy in front of it answering for it
    due_since(client, minutes=5)
    with caplog.at_level(logging.WARNING, logger="fleet.sso"):
        page = client.get("/jobs/?state=failed")
    assert page.status_code == 200  # our page, not a redirect to a provider the browser cannot reach
    assert page.context["user"].username == "ada"
    assert "SSO: the identity provider did not answer" in caplog.text
    assert f"{sso.url}/.well-known/openid-configuration" in caplog.text
    # The pages' data requests and the API go on too (not 401 "reload the page" for the whole outage).
    assert client.get("/api/v1/jobs/").status_code == 200
    assert client.get("/jobs/").status_code == 200
    assert len(sso.auth_requests) == 1  # the sign-in's only: no silent re-check was started


@pytest.mark.django_db
def test_the_provider_is_asked_once_a_while_and_the_check_is_made_once_it_answers(sso, settings):
    JobFactory(team=Team.objects.create(slug="vision", name="Vision"))
    client = Client()
    sign_in(client)
    ada = User.objects.get(username="ada")
    sso.unavailable = 503
    due_since(client, minutes=5)
    for _ in range(3):
        assert client.get("/jobs/").status_code == 200
    assert sso.discovery_requests == 1  # its answer kept a while: not asked on every request
    sso.unavailable = None  # back, and meanwhile ada moved to another team there
    sso.person["groups"] = ["gpu-speech"]
    assert client.get("/jobs/").status_code == 200  # the kept answer still says down
    settings.OIDC_PROBE_CACHE_SECONDS = 0  # as if that while had passed
    page = client.get("/jobs/?state=failed")
    assert sso.discovery_requests == 2
    assert page["Location"].startswith(f"{sso.url}/auth?") and query_of(page["Location"])["prompt"] == "none"
    done = back_from_provider(client, follow_to_provider(page))
    assert done.status_code == 302 and done["Location"] == "/jobs/?state=failed"
    assert teams_of(ada) == {"speech"}
    assert client.session["oidc_id_token_expiration"] > time.time()  # checked: not due again for a while
    assert client.get("/jobs/").status_code == 200


@pytest.mark.django_db
def test_a_provider_that_hangs_is_given_up_on_quickly(sso, settings, monkeypatch, caplog):
    configure(settings, monkeypatch, OIDC_PROBE_TIMEOUT="0.3")
    client = Client()
    sign_in(client)
    sso.stall = 10  # accepts the connection, answers nothing for longer than any page may wait
    due_since(client, minutes=5)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="fleet.sso"):
        page = client.get("/jobs/")
    assert page.status_code == 200 and page.context["user"].username == "ada"
    assert time.monotonic() - started < 5  # the probe's timeout, not the provider's stall nor OIDC_TIMEOUT
    assert "(ReadTimeout, within 0.3 s)" in caplog.text  # OIDC_PROBE_TIMEOUT's, not the default 2 s


@pytest.mark.django_db
def test_past_the_grace_a_session_the_provider_could_not_check_ends_with_a_message(sso, caplog):
    client = Client()
    sign_in(client)
    stop(sso)
    due_since(client, minutes=44)  # OIDC_RECHECK_MINUTES 15: 45 minutes' grace by default
    assert client.get("/jobs/").status_code == 200
    due_since(client, minutes=46)
    with caplog.at_level(logging.WARNING, logger="fleet.sso"):
        done = client.get("/jobs/?state=failed")
    assert done.status_code == 302 and done["Location"] == "/login/?next=/jobs/%3Fstate%3Dfailed"
    assert "SSO: logged out ada: the session could not be checked with the provider for 46 minutes" in caplog.text
    login = client.get(done["Location"]).content.decode()
    assert (
        "Keycloak could not be reached to check your sign-in, so you were logged out. "
        "Sign in again when it is back." in login
    )
    assert client.get("/jobs/")["Location"].startswith("/login/")  # logged out here


@pytest.mark.django_db
def test_past_the_grace_a_data_request_is_told_the_session_ended(sso):
    client = Client()
    sign_in(client)
    stop(sso)
    due_since(client, minutes=46)
    answer = client.get("/jobs/1/timeline.json", HTTP_ACCEPT="application/json")
    assert answer.status_code == 401
    assert "could not be reached to check your sign-in, so you were logged out" in answer.json()["detail"]
    assert client.get("/jobs/")["Location"].startswith("/login/")


@pytest.mark.django_db
def test_past_the_grace_an_api_request_under_a_url_prefix_is_told_in_json(sso, settings):
    """Served under a prefix (a proxy's SCRIPT_NAME, or FORCE_SCRIPT_NAME) the API's path is
    /triage/api/v1/...: it was taken for a page and sent to the login page."""
    client = Client()
    sign_in(client)
    stop(sso)
    due_since(client, minutes=46)
    settings.FORCE_SCRIPT_NAME = "/triage"
    answer = client.get("/api/v1/jobs/")
    assert answer.status_code == 401, answer.get("Location")
    assert "could not be reached to check your sign-in, so you were logged out" in answer.json()["detail"]


@pytest.mark.django_db
def test_the_grace_is_a_setting_and_zero_ends_the_session_at_once(sso, settings, monkeypatch):
    configure(settings, monkeypatch, OIDC_RECHECK_GRACE_MINUTES="10")
    client = Client()
    sign_in(client)
    stop(sso)
    due_since(client, minutes=9)
    assert client.get("/jobs/").status_code == 200
    due_since(client, minutes=11)
    assert client.get("/jobs/")["Location"] == "/login/?next=/jobs/"

    configure(settings, monkeypatch, OIDC_RECHECK_GRACE_MINUTES="0")
    client = Client()
    client.force_login(User.objects.get(username="ada"), backend="fleet.sso.SsoBackend")
    due_since(client, minutes=0.1)
    assert client.get("/jobs/")["Location"] == "/login/?next=/jobs/"  # a page saying why, not the browser's


def test_settings_of_the_recheck_grace(provider, monkeypatch):
    for name, value in {**provider.environment(), **MAPPINGS}.items():
        monkeypatch.setenv(name, value)
    assert oidc_settings()["OIDC_RECHECK_GRACE_SECONDS"] == 45 * 60  # 3 x OIDC_RECHECK_MINUTES (15)
    monkeypatch.setenv("OIDC_RECHECK_MINUTES", "5")
    assert oidc_settings()["OIDC_RECHECK_GRACE_SECONDS"] == 15 * 60
    monkeypatch.setenv("OIDC_RECHECK_GRACE_MINUTES", "120")
    assert oidc_settings()["OIDC_RECHECK_GRACE_SECONDS"] == 120 * 60
    monkeypatch.setenv("OIDC_RECHECK_GRACE_MINUTES", "-1")
    with pytest.raises(Exception, match="OIDC_RECHECK_GRACE_MINUTES=-1 is below the minimum of 0"):
        oidc_settings()


def test_settings_of_the_provider_probe(provider, monkeypatch):
    """How long the server waits for the provider's answer, and how long it keeps it: 2 s and 30 s
    unless set; a value that is not seconds in range stops start-up, naming it and saying what it is."""
    for name, value in {**provider.environment(), **MAPPINGS}.items():
        monkeypatch.setenv(name, value)
    got = oidc_settings()
    assert (got["OIDC_PROBE_TIMEOUT"], got["OIDC_PROBE_CACHE_SECONDS"]) == (2.0, 30.0)
    monkeypatch.setenv("OIDC_PROBE_TIMEOUT", "0.5")
    monkeypatch.setenv("OIDC_PROBE_CACHE_SECONDS", "0")  # ask every time
    got = oidc_settings()
    assert (got["OIDC_PROBE_TIMEOUT"], got["OIDC_PROBE_CACHE_SECONDS"]) == (0.5, 0.0)
    monkeypatch.setenv("OIDC_PROBE_CACHE_SECONDS", "300")
    assert oidc_settings()["OIDC_PROBE_CACHE_SECONDS"] == 300.0
    for name, raw, words in [
        ("OIDC_PROBE_TIMEOUT", "2s", "OIDC_PROBE_TIMEOUT='2s' is not a number"),
        ("OIDC_PROBE_TIMEOUT", "0", "OIDC_PROBE_TIMEOUT='0' is outside"),
        ("OIDC_PROBE_TIMEOUT", "inf", "OIDC_PROBE_TIMEOUT='inf' is outside"),
        ("OIDC_PROBE_TIMEOUT", "60", "OIDC_PROBE_TIMEOUT='60' is outside"),
        ("OIDC_PROBE_CACHE_SECONDS", "-1", "OIDC_PROBE_CACHE_SECONDS='-1' is outside"),
        ("OIDC_PROBE_CACHE_SECONDS", "nan", "OIDC_PROBE_CACHE_SECONDS='nan' is outside"),
        ("OIDC_PROBE_CACHE_SECONDS", "1d", "OIDC_PROBE_CACHE_SECONDS='1d' is not a number"),
    ]:
        monkeypatch.setenv("OIDC_PROBE_TIMEOUT", "2")
        monkeypatch.setenv("OIDC_PROBE_CACHE_SECONDS", "30")
        monkeypatch.setenv(name, raw)
        with pytest.raises(ImproperlyConfigured, match=re.escape(words)) as raised:
            oidc_settings()
        assert "seconds" in str(raised.value), raised.value  # what the value is, not only that it is wrong


@pytest.mark.django_db
def test_the_probe_waits_at_most_oidc_timeout(sso, settings, monkeypatch, caplog):
    """A probe timeout above OIDC_TIMEOUT waits OIDC_TIMEOUT: never longer than a request to the provider."""
    configure(settings, monkeypatch, OIDC_PROBE_TIMEOUT="5", OIDC_TIMEOUT="0.3")
    sso.stall = 10
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="fleet.sso"):
        assert NOT_ANSWERING in Client().get("/login/").content.decode()
    assert time.monotonic() - started < 4
    assert "(ReadTimeout, within 0.3 s)" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_browser_whose_check_falls_due_with_the_provider_down_sees_our_pages(sso, browser, live_server):
    """In headless Chromium: the provider stops; a due check serves the page (not the browser's
    "cannot reach" page), and past the grace the login page says why the session ended."""
    from django.contrib.sessions.backends.db import SessionStore
    from selenium.webdriver.common.by import By

    from tests.test_accessibility import narrow_window_problems, violations

    base = live_server.url
    browser.get(f"{base}/login/?next=/jobs/")
    browser.find_element(By.LINK_TEXT, "Sign in with Keycloak").click()
    assert browser.current_url == f"{base}/jobs/"
    stop(sso)
    forget_provider_answers()  # the login page's answer (it answered) is kept a while: as if it had run out

    def due_minutes_ago(minutes: float) -> None:
        session = SessionStore(browser.get_cookie("sessionid")["value"])
        session["oidc_id_token_expiration"] = time.time() - minutes * 60
        session.save()

    due_minutes_ago(5)
    browser.get(f"{base}/jobs/?state=failed")
    assert browser.current_url == f"{base}/jobs/?state=failed"
    assert browser.find_element(By.TAG_NAME, "h1").text
    due_minutes_ago(46)
    browser.get(f"{base}/jobs/?state=failed")
    assert browser.current_url == f"{base}/login/?next=/jobs/%3Fstate%3Dfailed"
    text = body_text(browser)
    assert "Keycloak could not be reached to check your sign-in, so you were logged out." in text
    assert violations(browser) + narrow_window_problems(browser) == []
    SHOTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (390, 844)):
        browser.set_window_size(width, height)
        browser.save_screenshot(str(SHOTS / f"login-sso-provider-down-{width}.png"))


# --- the login page while the provider does not answer ---------------------------------------
# Its button sent the browser to a provider that could not be reached (the browser's own error page).
# The same probe (its short timeout, its kept answer) now has the page say so beside the button,
# which stays: the browser may reach the provider where the server cannot.

NOT_ANSWERING = "Keycloak is not answering right now"
LOCAL_ACCOUNT = "If you have a local account here, you can log in with it below."


@pytest.mark.django_db
def test_the_login_page_says_when_the_provider_does_not_answer(sso):
    client = Client()
    page = client.get("/login/?next=/jobs/")
    html = page.content.decode()
    assert "Sign in with Keycloak" in html and NOT_ANSWERING not in html  # started: no notice
    stop(sso)
    forget_provider_answers()  # the kept answer (it answered) ran out
    page = client.get("/login/?next=/jobs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert NOT_ANSWERING in html and LOCAL_ACCOUNT in html
    assert 'href="/login/sso/?next=/jobs/"' in html  # the button stays: the browser may reach it
    assert 'name="password"' in html


@pytest.mark.django_db
def test_the_login_page_s_notice_goes_once_the_provider_answers_again(sso, settings):
    sso.unavailable = 503  # a proxy in front of it answering for it
    client = Client()
    assert NOT_ANSWERING in client.get("/login/").content.decode()
    assert NOT_ANSWERING in client.get("/login/").content.decode()
    assert sso.discovery_requests == 1  # the probe's kept answer: not asked on every page
    sso.unavailable = None
    settings.OIDC_PROBE_CACHE_SECONDS = 0  # as if that while had passed
    assert NOT_ANSWERING not in client.get("/login/").content.decode()
    assert sso.discovery_requests == 2


@pytest.mark.django_db
def test_the_login_page_is_served_quickly_when_the_provider_hangs(sso, settings, monkeypatch):
    configure(settings, monkeypatch, OIDC_PROBE_TIMEOUT="0.3")
    sso.stall = 10  # accepts the connection, answers nothing for longer than any page may wait
    started = time.monotonic()
    page = Client().get("/login/")
    assert time.monotonic() - started < 5  # the probe's timeout, not the provider's stall
    assert NOT_ANSWERING in page.content.decode()


@pytest.mark.django_db
def test_the_login_page_does_not_ask_the_provider_with_sso_off(settings, monkeypatch):
    assert settings.OIDC_ENABLED is False
    monkeypatch.setattr("fleet.sso.provider_answers", lambda: pytest.fail("asked with SSO off"))
    html = Client().get("/login/").content.decode()
    assert "Sign in with" not in html and "is not answering right now" not in html


@pytest.mark.django_db(transaction=True)
def test_a_browser_on_the_login_page_with_the_provider_stopped_is_told_so(sso, browser, live_server):
    """In headless Chromium: the notice beside the button, WCAG 2.1 AA and 320 px wide."""
    from selenium.webdriver.common.by import By

    from tests.test_accessibility import narrow_window_problems, violations

    stop(sso)
    forget_provider_answers()
    browser.get(f"{live_server.url}/login/?next=/jobs/")
    assert NOT_ANSWERING in browser.find_element(By.ID, "sso-not-answering").text
    button = browser.find_element(By.LINK_TEXT, "Sign in with Keycloak")
    assert button.is_displayed()
    # Tabbing to the button, a screen reader reads the notice with it (it stands after the button).
    assert button.get_attribute("aria-describedby") == "sso-not-answering"
    assert browser.find_element(By.ID, "id_password").is_displayed()
    assert violations(browser) + narrow_window_problems(browser) == []
    SHOTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (390, 844)):
        browser.set_window_size(width, height)
        browser.save_screenshot(str(SHOTS / f"login-sso-not-answering-{width}.png"))


# --- the address the provider sends the browser back to ------------------------------------


@pytest.mark.django_db
def test_a_redirect_base_url_fixes_the_addresses_given_to_the_provider(sso, settings, monkeypatch):
    # Behind a proxy that rewrites the Host header, the addresses still name the public host.
    configure(settings, monkeypatch, OIDC_REDIRECT_BASE_URL="https://fleet.example.org/")
    settings.ALLOWED_HOSTS = ["internal"]
    client = Client(HTTP_HOST="internal:8000")
    start = client.get("/login/sso/")
    assert query_of(start["Location"])["redirect_uri"] == "https://fleet.example.org/login/sso/callback/"
    done = sign_in(client)  # the token request names the same address: the provider accepts the code
    assert done.status_code == 302
    assert sso.token_requests[-1]["redirect_uri"] == "https://fleet.example.org/login/sso/callback/"
    recheck_due(client)
    recheck = client.get("/jobs/")
    assert query_of(recheck["Location"])["redirect_uri"] == "https://fleet.example.org/login/sso/callback/"
    assert back_from_provider(client, follow_to_provider(recheck)).status_code == 302
    out = client.post("/logout/")
    assert query_of(out["Location"])["post_logout_redirect_uri"] == "https://fleet.example.org/login/"


def test_settings_of_the_redirect_base_url(provider, monkeypatch):
    for name, value in {**provider.environment(), **MAPPINGS}.items():
        monkeypatch.setenv(name, value)
    assert oidc_settings()["OIDC_REDIRECT_BASE_URL"] == ""
    monkeypatch.setenv("OIDC_REDIRECT_BASE_URL", "https://fleet.example.org/")
    assert oidc_settings()["OIDC_REDIRECT_BASE_URL"] == "https://fleet.example.org"
    for wrong, message in [
        ("http://fleet.example.org", "must be https://"),
        ("https://fleet.example.org/triage/", "scheme and host only"),
        ("fleet.example.org", "not an https:// URL"),
    ]:
        monkeypatch.setenv("OIDC_REDIRECT_BASE_URL", wrong)
        with pytest.raises(Exception, match=message):
            oidc_settings()


@pytest.mark.django_db
def test_a_recheck_answered_for_someone_else_logs_out_instead_of_switching_accounts(sso):
    # Someone else signed in to the provider in this browser meanwhile: the page does not become theirs.
    client = Client()
    sign_in(client)
    sso.person = {**sso.person, "sub": "u-bob", "preferred_username": "bob"}
    recheck_due(client)
    done = back_from_provider(client, follow_to_provider(client.get("/jobs/")))
    assert done.status_code == 302 and done["Location"] == "/login/?next=/jobs/"
    login = client.get(done["Location"]).content.decode()
    assert "Keycloak now signs in another account in this browser, so you were logged out." in login
    assert client.get("/jobs/")["Location"].startswith("/login/")
