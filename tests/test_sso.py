"""Single sign-on with OpenID Connect (fleet/sso.py, config/sso.py), against a real provider on
loopback (tests/oidc_provider.py): the browser's whole redirect dance is driven by Django's test
client, the provider's endpoints are real HTTP, its ID tokens RS256-signed by a key made here."""

from __future__ import annotations

import io
import logging
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db.models.query import QuerySet
from django.test import Client

from config.sso import ENDPOINTS, content_security_policy, oidc_settings
from fleet.access import is_operator, is_researcher
from fleet.models import AuditEvent, Job, Owner, SsoIdentity, Team
from fleet.sso import forget_provider_answers
from tests.factories import JobFactory, UserFactory
from tests.oidc_provider import CLIENT_SECRET, FakeProvider
from tests.test_browser import SHOTS, body_text, browser  # noqa: F401  (browser: the shared Chromium fixture)
from tests.test_settings import _run

MAPPINGS = {
    "OIDC_TEAM_GROUPS": "gpu-vision=vision,gpu-speech=speech",
    "OIDC_OPERATOR_GROUPS": "platform-admins",
    "OIDC_RESEARCHER_GROUPS": "ml-research",
}


# The policy start-up made without single sign-on, which start-up with it extends (config/settings.py).
BASE_CSP = django_settings.CONTENT_SECURITY_POLICY


def apply_oidc_settings(settings) -> None:
    """The settings start-up makes from the environment as it now is (config/settings.py)."""
    oidc = oidc_settings()
    for name, value in oidc.items():
        setattr(settings, name, value)
    settings.CONTENT_SECURITY_POLICY = content_security_policy(BASE_CSP, oidc)


@pytest.fixture
def provider():
    with FakeProvider() as running:
        running.person = {
            "sub": "0b6c-ada",
            "preferred_username": "ada",
            "email": "ada@example.org",
            "email_verified": True,
            "given_name": "Ada",
            "groups": ["gpu-vision"],
        }
        yield running
    # Stopped, it leaves no request behind: a test of a provider that hangs ends its stalled answers too.
    left = running.handlers_left(within=2.0)
    assert not left, f"{len(left)} request(s) to the stopped provider still being handled: {left}"


@pytest.fixture
def sso(provider, settings, monkeypatch):
    """Single sign-on on, configured through the environment as a deployment would."""
    for name, value in {**provider.environment(), **MAPPINGS}.items():
        monkeypatch.setenv(name, value)
    apply_oidc_settings(settings)
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "fleet.sso.SsoBackend"]
    forget_provider_answers()  # a port an earlier test's provider had may be this one's
    return provider


def sign_in(client: Client, next_url: str = "", *, state: str | None = None):
    """Click "Sign in with ...", let the provider answer (it signs the person in at once), and come
    back to the callback, as a browser would. Returns the callback's response."""
    start = client.get("/login/sso/" + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302, start
    at_provider = requests.get(start["Location"], allow_redirects=False, timeout=10)
    assert at_provider.status_code == 302, at_provider.text
    back = urlsplit(at_provider.headers["Location"])
    query = {key: values[0] for key, values in parse_qs(back.query).items()}
    if state is not None:
        query["state"] = state
    return client.get(back.path, query)


def teams_of(user) -> set[str]:
    return set(Owner.objects.filter(user=user).values_list("team__slug", flat=True))


@pytest.mark.django_db
def test_sso_off_offers_no_button_and_no_sso_pages(settings):
    assert settings.OIDC_ENABLED is False
    page = Client().get("/login/")
    assert b"Sign in with" not in page.content
    assert b"/login/sso/" not in page.content
    assert Client().get("/login/sso/").status_code == 404
    assert Client().get("/login/sso/callback/", {"code": "c", "state": "s"}).status_code == 404


@pytest.mark.django_db
def test_login_page_offers_the_provider_and_keeps_the_password_form(sso):
    page = Client().get("/login/?next=/jobs/")
    html = page.content.decode()
    assert "Sign in with Keycloak" in html
    assert 'href="/login/sso/?next=/jobs/"' in html
    assert 'name="password"' in html  # break-glass administrators still log in locally
    assert CLIENT_SECRET not in html


@pytest.mark.django_db
def test_the_provider_is_asked_with_state_nonce_and_pkce(sso):
    start = Client().get("/login/sso/")
    query = parse_qs(urlsplit(start["Location"]).query)
    assert start["Location"].startswith(f"{sso.url}/auth?")
    assert query["client_id"] == ["fleet-triage"]
    assert query["scope"] == ["openid email profile groups"]
    assert query["redirect_uri"] == ["http://testserver/login/sso/callback/"]
    assert query["code_challenge_method"] == ["S256"]
    assert query["state"] and query["nonce"] and query["code_challenge"]
    assert "client_secret" not in query


@pytest.mark.django_db
def test_first_sign_in_creates_the_user_with_their_teams(sso):
    JobFactory(team=Team.objects.create(slug="vision", name="Vision"))
    client = Client()
    done = sign_in(client, "/jobs/")
    assert done.status_code == 302 and done["Location"] == "/jobs/"
    user = User.objects.get(username="ada")
    assert (user.email, user.first_name, user.has_usable_password()) == ("ada@example.org", "Ada", False)
    assert SsoIdentity.objects.get(user=user).subject == "0b6c-ada"
    assert teams_of(user) == {"vision"}
    assert not is_operator(user) and not is_researcher(user)
    jobs = client.get("/jobs/")
    assert jobs.status_code == 200 and jobs.context["user"] == user
    assert Job.objects.visible_to(user).count() == 1
    # The client secret travelled to the token endpoint only.
    assert sso.token_requests[-1]["client_secret"] == CLIENT_SECRET


@pytest.mark.django_db
def test_next_sign_in_follows_the_providers_groups(sso):
    sign_in(Client())
    ada = User.objects.get(username="ada")
    assert teams_of(ada) == {"vision"}

    sso.person["groups"] = ["gpu-speech", "platform-admins", "unmapped-group"]
    sso.person["email"] = "ada.lovelace@example.org"
    done = sign_in(Client())
    assert done.status_code == 302
    ada = User.objects.get(username="ada")
    assert teams_of(ada) == {"speech"}  # left vision at the provider: left it here
    assert is_operator(ada) and not is_researcher(ada)
    assert ada.email == "ada.lovelace@example.org"
    event = AuditEvent.objects.filter(action="sso.access-synced").latest("pk")
    assert event.details == {
        "teams_added": ["speech"],
        "teams_removed": ["vision"],
        "roles_added": ["operators"],
    }

    sso.person["groups"] = ["ml-research"]
    sign_in(Client())
    ada = User.objects.get(username="ada")
    assert teams_of(ada) == set()
    assert is_researcher(ada) and not is_operator(ada)
    assert User.objects.filter(username="ada").count() == 1


@pytest.mark.django_db
def test_groups_only_in_the_id_token_count_too(sso):
    # Entra ID puts groups in the ID token; its userinfo (Microsoft Graph) has none.
    sso.userinfo_leaves_out = {"groups"}
    sso.person["groups"] = ["gpu-speech"]
    assert sign_in(Client()).status_code == 302
    assert teams_of(User.objects.get(username="ada")) == {"speech"}


@pytest.mark.django_db
def test_someone_in_no_mapped_group_is_told_they_have_no_access(sso):
    sso.person["groups"] = ["marketing"]
    client = Client()
    page = sign_in(client)
    assert page.status_code == 403
    assert b"No access" in page.content and b"none of your groups" in page.content
    assert not User.objects.filter(username="ada").exists()
    assert client.get("/jobs/").status_code == 302  # not logged in: to the login page


@pytest.mark.django_db
def test_an_account_whose_groups_are_all_gone_loses_its_access(sso):
    client = Client()
    sign_in(client)
    assert client.get("/jobs/").status_code == 200
    sso.person["groups"] = []
    page = sign_in(client)  # signing in again in the same browser: its session ends too
    assert page.status_code == 403 and b"No access" in page.content
    assert teams_of(User.objects.get(username="ada")) == set()
    assert client.get("/jobs/").status_code == 302


@pytest.mark.django_db
def test_a_local_account_is_never_taken_over_by_name_or_email(sso):
    admin = UserFactory(username="ada", email="ada@example.org", is_superuser=True)
    client = Client()
    page = sign_in(client)
    assert page.status_code == 403
    assert b"exists here already and is not linked" in page.content
    assert client.get("/jobs/").status_code == 302
    assert not SsoIdentity.objects.exists()
    # An administrator links it explicitly: then the sign-in is that account.
    SsoIdentity.objects.create(user=admin, issuer=sso.url, subject="0b6c-ada")
    assert sign_in(client).status_code == 302
    assert client.get("/jobs/").context["user"] == admin


@pytest.mark.django_db
def test_the_subject_not_the_username_finds_the_account(sso):
    sign_in(Client())
    sso.person = {**sso.person, "sub": "someone-else", "preferred_username": "ada"}
    page = sign_in(Client())
    assert page.status_code == 403  # another person at the provider calling themselves ada
    assert SsoIdentity.objects.get().subject == "0b6c-ada"


@pytest.mark.django_db
@pytest.mark.parametrize("tamper", ["nonce", "signature", "issuer", "audience"])
def test_a_forged_or_replayed_id_token_is_refused_with_a_page(sso, tamper, caplog):
    sso.tamper = tamper
    client = Client()
    with caplog.at_level(logging.WARNING):
        page = sign_in(client)
    assert page.status_code == 400
    assert b"Sign-in failed" in page.content and b"could not be verified" in page.content
    assert not User.objects.filter(username="ada").exists()
    assert client.get("/jobs/").status_code == 302
    assert CLIENT_SECRET not in caplog.text


@pytest.mark.django_db
def test_a_wrong_state_is_refused_with_a_page(sso):
    client = Client()
    page = sign_in(client, state="not-the-state")
    assert page.status_code == 400 and b"Sign-in failed" in page.content
    assert client.get("/jobs/").status_code == 302


@pytest.mark.django_db
def test_a_callback_without_a_started_sign_in_or_used_twice_is_refused(sso):
    client = Client()
    start = client.get("/login/sso/")
    back = requests.get(start["Location"], allow_redirects=False, timeout=10).headers["Location"]
    assert Client().get(back).status_code == 400  # another browser: no state in its session
    assert client.get(back).status_code == 302  # signed in
    again = client.get(back)
    assert again.status_code == 400 and b"Sign-in failed" in again.content


@pytest.mark.django_db
def test_the_providers_own_refusal_is_shown(sso):
    client = Client()
    client.get("/login/sso/")
    page = client.get("/login/sso/callback/", {"error": "access_denied", "state": "x"})
    assert page.status_code == 400
    assert b"Keycloak did not sign you in (access_denied)" in page.content


@pytest.mark.django_db
def test_an_unreachable_provider_is_a_page_not_a_500(sso, settings, caplog):
    settings.OIDC_OP_TOKEN_ENDPOINT = "http://127.0.0.1:9/token"  # discard port: nothing listens
    client = Client()
    with caplog.at_level(logging.WARNING):
        page = sign_in(client)
    assert page.status_code == 502 and b"could not be reached" in page.content
    assert CLIENT_SECRET not in caplog.text


@pytest.mark.django_db
def test_a_deactivated_account_cannot_sign_in(sso):
    sign_in(Client())
    User.objects.filter(username="ada").update(is_active=False)
    client = Client()
    page = sign_in(client)
    assert page.status_code == 403 and b"disabled" in page.content
    assert client.get("/jobs/").status_code == 302


@pytest.mark.django_db
def test_unverified_email_is_not_kept(sso):
    sso.person["email_verified"] = False
    sign_in(Client())
    assert User.objects.get(username="ada").email == ""


def missed_by(monkeypatch, reads: set[str], times: int = 1):
    """This sign-in's reads ran before another request's (a double click's other click) committed the
    account: the first `times` lookups of the identity ("lookup") and checks of the name ("name")
    find nothing, though the rows are there. Its inserts then meet the database's real constraints."""
    missed = {"lookup": 0, "name": 0}
    real_first, real_exists = QuerySet.first, QuerySet.exists

    def first(queryset):
        if queryset.model is SsoIdentity and "lookup" in reads and missed["lookup"] < times:
            missed["lookup"] += 1
            return None
        return real_first(queryset)

    def exists(queryset):
        if queryset.model is User and "name" in reads and missed["name"] < times:
            missed["name"] += 1
            return False
        return real_exists(queryset)

    monkeypatch.setattr(QuerySet, "first", first)
    monkeypatch.setattr(QuerySet, "exists", exists)
    return missed


@pytest.mark.django_db
@pytest.mark.parametrize("reads", [{"lookup", "name"}, {"lookup"}], ids=["insert-refused", "name-taken"])
def test_a_double_clicked_first_sign_in_is_the_account_the_other_click_made(sso, monkeypatch, reads):
    sign_in(Client())  # the other click, committed first
    ada = User.objects.get(username="ada")
    missed = missed_by(monkeypatch, reads)
    client = Client()
    done = sign_in(client, "/jobs/")
    assert missed == {"lookup": 1, "name": 1 if "name" in reads else 0}
    assert done.status_code == 302 and done["Location"] == "/jobs/"  # not a 500, nor "not linked"
    assert client.get("/jobs/").context["user"] == ada
    assert User.objects.filter(username="ada").count() == SsoIdentity.objects.count() == 1
    assert teams_of(ada) == {"vision"}


@pytest.mark.django_db
def test_a_sign_in_that_keeps_colliding_is_a_page_not_a_500(sso, monkeypatch):
    sign_in(Client())
    missed_by(monkeypatch, {"lookup", "name"}, times=2)  # the retry misses it too: tried once, then a page
    page = sign_in(Client())
    assert page.status_code == 409
    assert b"at the same moment" in page.content and b"Try again" in page.content


# --- settings, checked at start-up --------------------------------------------------------


def configure(monkeypatch, provider_env: dict, **overrides):
    for name, value in {**provider_env, **MAPPINGS, **overrides}.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


ENV = {
    "OIDC_ISSUER": "https://sso.example.org/realms/gpu",
    "OIDC_AUTHORIZATION_ENDPOINT": "https://sso.example.org/realms/gpu/protocol/openid-connect/auth",
    "OIDC_TOKEN_ENDPOINT": "https://sso.example.org/realms/gpu/protocol/openid-connect/token",
    "OIDC_USERINFO_ENDPOINT": "https://sso.example.org/realms/gpu/protocol/openid-connect/userinfo",
    "OIDC_JWKS_URI": "https://sso.example.org/realms/gpu/protocol/openid-connect/certs",
    "OIDC_CLIENT_ID": "fleet-triage",
    "OIDC_CLIENT_SECRET": "from-env",
}


def test_settings_off_without_an_issuer(monkeypatch):
    for name in [*ENV, *MAPPINGS, "OIDC_CLIENT_SECRET_FILE"]:
        monkeypatch.delenv(name, raising=False)
    assert oidc_settings() == {"OIDC_ENABLED": False}
    monkeypatch.setenv("OIDC_CLIENT_ID", "x")
    with pytest.raises(ImproperlyConfigured, match="OIDC_CLIENT_ID set without OIDC_ISSUER"):
        oidc_settings()


def test_settings_read_the_mappings_and_the_secret_file(monkeypatch, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-file\n")
    configure(monkeypatch, ENV, OIDC_CLIENT_SECRET=None, OIDC_CLIENT_SECRET_FILE=str(secret))
    monkeypatch.setenv("OIDC_TEAM_GROUPS", "/gpu/vision=vision, gpu-all=vision, gpu-all=speech")
    got = oidc_settings()
    assert got["OIDC_RP_CLIENT_SECRET"] == "from-file"
    assert got["OIDC_TEAM_GROUPS"] == {"/gpu/vision": ("vision",), "gpu-all": ("vision", "speech")}
    assert got["OIDC_OPERATOR_GROUPS"] == ("platform-admins",)
    assert got["OIDC_USE_PKCE"] is True and got["OIDC_RP_SIGN_ALGO"] == "RS256"
    assert got["OIDC_PROVIDER_NAME"] == "single sign-on"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"OIDC_TOKEN_ENDPOINT": None}, "set OIDC_TOKEN_ENDPOINT too"),
        ({"OIDC_CLIENT_ID": ""}, "set OIDC_CLIENT_ID too"),
        ({"OIDC_CLIENT_SECRET": None}, "set OIDC_CLIENT_SECRET or OIDC_CLIENT_SECRET_FILE too"),
        ({"OIDC_CLIENT_SECRET_FILE": "/nonexistent/secret"}, "not both"),
        ({"OIDC_CLIENT_SECRET": None, "OIDC_CLIENT_SECRET_FILE": "/nonexistent/secret"}, "cannot be read"),
        ({"OIDC_JWKS_URI": "http://sso.example.org/certs"}, "must be https://"),
        ({"OIDC_ISSUER": "sso.example.org"}, "is not an https:// URL"),
        ({"OIDC_SCOPES": "email profile"}, "must include openid"),
        ({"OIDC_SIGN_ALGO": "HS256"}, "OIDC_SIGN_ALGO='HS256' is not one of"),
        ({"OIDC_TEAM_GROUPS": "gpu-vision"}, "is not group=team-slug"),
        ({"OIDC_TEAM_GROUPS": "gpu-vision=a team"}, "is not group=team-slug"),
        (
            {"OIDC_TEAM_GROUPS": None, "OIDC_OPERATOR_GROUPS": None, "OIDC_RESEARCHER_GROUPS": None},
            "no group gives access",
        ),
    ],
)
def test_settings_name_what_is_wrong(monkeypatch, overrides, message):
    configure(monkeypatch, ENV, **overrides)
    with pytest.raises(ImproperlyConfigured, match=message) as raised:
        oidc_settings()
    assert "from-env" not in str(raised.value)  # the secret is never in a message


def test_settings_allow_http_to_loopback_only(monkeypatch):
    configure(monkeypatch, ENV, OIDC_JWKS_URI="http://127.0.0.1:8080/certs")
    assert oidc_settings()["OIDC_OP_JWKS_ENDPOINT"] == "http://127.0.0.1:8080/certs"


@pytest.mark.django_db
@pytest.mark.login_throttling
def test_sign_in_works_behind_the_login_throttling(sso, settings):
    # As deployed: django-axes' backend first. It must neither refuse nor count an SSO sign-in.
    assert settings.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"
    client = Client()
    assert sign_in(client).status_code == 302
    assert client.get("/jobs/").context["user"].username == "ada"
    sso.tamper = "signature"
    for _ in range(settings.AXES_FAILURE_LIMIT + 1):
        assert sign_in(Client()).status_code == 400
    sso.tamper = ""
    assert sign_in(Client()).status_code == 302


def test_a_half_configured_sign_on_stops_start_up_in_one_sentence(tmp_path):
    result = _run(
        ["manage.py", "check"], DEBUG="1", DATA_DIR=str(tmp_path), OIDC_ISSUER="https://sso.example.org/realms/gpu"
    )
    assert result.returncode == 4
    assert result.stderr.startswith(
        "Fleet Triage cannot start: OIDC_ISSUER is set: set OIDC_AUTHORIZATION_ENDPOINT too"
    )


@pytest.mark.django_db(transaction=True)
def test_a_browser_signs_in_with_the_provider_and_the_pages_are_accessible(sso, browser, live_server):  # noqa: F811
    """In headless Chromium: the login page with the button (WCAG 2.1 AA, and 320 px wide), the
    click through the provider and back, signed in; then someone without access gets a page that
    passes the same checks."""
    from selenium.webdriver.common.by import By

    from tests.test_accessibility import narrow_window_problems, violations

    base = live_server.url
    browser.get(f"{base}/login/?next=/jobs/")
    button = browser.find_element(By.LINK_TEXT, "Sign in with Keycloak")
    assert browser.find_element(By.ID, "id_password").is_displayed()
    assert violations(browser) + narrow_window_problems(browser) == []
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "login-sso.png"))
    button.click()
    assert browser.current_url == f"{base}/jobs/"
    assert "None of your team's jobs have been imported yet" in body_text(browser)  # signed in, a member
    browser.get(f"{base}/password/")  # their settings: no password form, where it is instead
    assert "You sign in with Keycloak" in body_text(browser)
    assert violations(browser) + narrow_window_problems(browser) == []

    browser.delete_all_cookies()
    sso.person = {**sso.person, "sub": "u-bob", "preferred_username": "bob", "groups": ["marketing"]}
    browser.get(f"{base}/login/")
    browser.find_element(By.LINK_TEXT, "Sign in with Keycloak").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == "No access"
    assert violations(browser) + narrow_window_problems(browser) == []
    browser.save_screenshot(str(SHOTS / "login-sso-no-access.png"))


@pytest.mark.django_db
def test_an_sso_account_s_settings_page_says_where_its_password_is(sso):
    client = Client()
    sign_in(client)
    page = client.get("/password/").content.decode()
    assert "You sign in with Keycloak" in page
    assert "Change password" not in page and 'name="old_password"' not in page
    assert 'name="time_zone"' in page  # the rest of the page stays
    local = Client()
    local.force_login(UserFactory(username="break-glass"))
    assert 'name="old_password"' in local.get("/password/").content.decode()


def test_the_endpoints_command_prints_the_settings_from_the_discovery_document(provider):
    out = io.StringIO()
    call_command("oidc_endpoints", provider.url + "/", stdout=out)
    env = dict(line.split("=", 1) for line in out.getvalue().splitlines())
    assert env == {name: value for name, value in provider.environment().items() if name in env}
    assert set(env) == {"OIDC_ISSUER", *ENDPOINTS, "OIDC_END_SESSION_ENDPOINT"}
    with pytest.raises(CommandError, match="names the issuer .* not"):
        call_command("oidc_endpoints", provider.url.replace("127.0.0.1", "localhost"))  # not what tokens name
    with pytest.raises(CommandError, match="could not be read"):
        call_command("oidc_endpoints", provider.url + "/nowhere")
