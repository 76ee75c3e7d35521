"""Single sign-on: OpenID Connect's authorization code flow by mozilla-django-oidc, with our rules.

The library sends the browser to the provider with a state, a nonce and a PKCE challenge kept in the
session, takes the code back, trades it (with the client secret) for tokens, checks the ID token's
signature against the provider's JWKS and the nonce. On top of that (`SsoBackend`):

- the ID token must come from OIDC_ISSUER and be meant for OIDC_CLIENT_ID (the library checks
  neither), and the userinfo's `sub` must be the ID token's;
- a sign-in is the account whose stored (issuer, subject) it is (`fleet.models.SsoIdentity`), or a
  new account; never an existing one found by username or email address, which the provider may let
  its users set (an account takeover). An account of that username already here is refused: an
  administrator links it by adding its SSO identity in the admin;
- teams (`Owner` rows) and roles (the operators and researchers groups) are set from the groups
  claim on every sign-in, through OIDC_TEAM_GROUPS, OIDC_OPERATOR_GROUPS and OIDC_RESEARCHER_GROUPS:
  a team left at the provider is left here at the next sign-in. Someone in no mapped group is told
  they have no access (and an account that had some loses it), instead of seeing empty pages.

After the sign-in:

- logging out of an SSO session ends the provider's session too, where it has an end_session_endpoint
  (OIDC_OP_LOGOUT_ENDPOINT): the library's logout view, with `provider_logout_url` sending the browser
  there with the ID token as id_token_hint and our login page to come back to; the admin site's own
  "Log out" does the same (`admin_logout`);
- an SSO session is checked with the provider again every OIDC_RECHECK_MINUTES (`SsoSessionRefresh`,
  the library's SessionRefresh): the browser goes there with prompt=none and back through the
  callback, which applies the groups again, or shows "No access", or logs out with a message when
  the provider no longer knows the person. A JSON request or the API is answered 401, never sent away.
  Before sending the browser there, the provider is asked whether it answers at all
  (`provider_answers`): while it does not, the page is served and the session goes on unchecked for
  OIDC_RECHECK_GRACE_MINUTES past the due time, then ends with a message saying why (instead of the
  browser's own "cannot reach" page for the provider's address).

Every refusal is a page saying what happened, never a 500; the client secret is neither shown nor
logged. Local logins are untouched by all this (break-glass administrators).
"""

from __future__ import annotations

import logging
import threading
import time
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import jwt
import requests
from django.conf import settings
from django.contrib import admin, auth, messages
from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.views import LoginView, redirect_to_login
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import render, resolve_url
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.middleware import SessionRefresh
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
    OIDCLogoutView,
)

from config.api_paths import under_api
from config.methods import read_only
from fleet import audit
from fleet.access import OPERATORS_GROUP, RESEARCHERS_GROUP
from fleet.auth import get_user_with_profile
from fleet.models import Owner, SsoIdentity, Team

logger = logging.getLogger(__name__)


class Refused(Exception):
    """A sign-in that must not go on, with what the person is told."""

    def __init__(self, title: str, message: str, status: int = 403):
        super().__init__(message)
        self.title, self.message, self.status = title, message, status


class _Raced(Exception):
    """This person's account appeared between a sign-in's lookup and its making of it."""


def mapped_access(groups) -> tuple[set[str], set[str]]:
    """(team slugs, role group names) the provider's groups give, by the settings' mappings."""
    groups = set(groups)
    teams = {slug for group in groups for slug in settings.OIDC_TEAM_GROUPS.get(group, ())}
    roles = set()
    if groups & set(settings.OIDC_OPERATOR_GROUPS):
        roles.add(OPERATORS_GROUP)
    if groups & set(settings.OIDC_RESEARCHER_GROUPS):
        roles.add(RESEARCHERS_GROUP)
    return teams, roles


def groups_of(claims: dict) -> list[str]:
    """The groups claim as a list of names: providers send a list, a few one string for one group."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


def sync_access(user, teams: set[str], roles: set[str]) -> dict:
    """Make the user's team memberships and roles exactly these; record a change in the audit log.
    A team named by a mapping but not yet here (no job has named it) is created, so the membership
    holds once its jobs arrive."""
    had_teams = set(Owner.objects.filter(user=user).values_list("team__slug", flat=True))
    had_roles = set(user.groups.filter(name__in=(OPERATORS_GROUP, RESEARCHERS_GROUP)).values_list("name", flat=True))
    Owner.objects.filter(user=user).exclude(team__slug__in=teams).delete()
    for slug in sorted(teams - had_teams):
        team, _ = Team.objects.get_or_create(slug=slug, defaults={"name": slug})
        Owner.objects.get_or_create(user=user, team=team)
    for name in (OPERATORS_GROUP, RESEARCHERS_GROUP):
        if name in roles and name not in had_roles:
            user.groups.add(Group.objects.get_or_create(name=name)[0])
        elif name not in roles and name in had_roles:
            user.groups.remove(Group.objects.get(name=name))
    change = {
        "teams_added": sorted(teams - had_teams),
        "teams_removed": sorted(had_teams - teams),
        "roles_added": sorted(roles - had_roles),
        "roles_removed": sorted(had_roles - roles),
    }
    change = {key: value for key, value in change.items() if value}
    if change:
        audit.record(user, "sso.access-synced", user, change)
    return change


class SsoBackend(OIDCAuthenticationBackend):
    """The library's backend with our identity rule and access sync (see the module's docstring)."""

    def get_user(self, user_id):
        # With the user's profile, as fleet.auth's backend: their time zone without a query of its own.
        return get_user_with_profile(user_id)

    def get_or_create_user(self, access_token, id_token, payload):
        issuer, audience = payload.get("iss"), payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        # Raised as Refused: the library would take a SuspiciousOperation from here for a mere failure.
        if issuer != settings.OIDC_ISSUER or settings.OIDC_RP_CLIENT_ID not in audiences:
            raise unverified(f"an ID token of issuer {issuer!r} for audience {audience!r}")
        subject = payload.get("sub")
        if not isinstance(subject, str) or not subject:
            raise unverified("an ID token without a subject")
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != subject:
            raise unverified("a userinfo answer about another subject than the ID token's")
        claims = {**payload, **userinfo}
        groups = groups_of(claims)
        teams, roles = mapped_access(groups)
        try:
            user = self._sign_in(issuer, subject, claims, groups, teams, roles)
        except (IntegrityError, _Raced):
            # Another first sign-in of this person (a double click) made the account between this one's
            # lookup and its insert: this one rolled back, and is that account, found by a new lookup.
            logger.info("SSO: a first sign-in of %s at %s met another one's; looking it up again", subject, issuer)
            try:
                user = self._sign_in(issuer, subject, claims, groups, teams, roles)
            except (IntegrityError, _Raced):
                raise Refused(
                    "Sign-in failed",
                    "Your account was being made by another sign-in at the same moment. Try again from the login page.",
                    409,
                ) from None
        if not (teams or roles):
            raise no_access()
        logger.info("SSO: %s signed in (teams %s, roles %s)", user.get_username(), sorted(teams), sorted(roles))
        return user

    def _sign_in(self, issuer, subject, claims, groups, teams, roles):
        """The account of (issuer, subject), made on a first sign-in, with its access synced: all or
        nothing. IntegrityError or _Raced: another request made it meanwhile (the caller looks again)."""
        with transaction.atomic():
            identity = SsoIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
            if identity is None:
                if not (teams or roles):
                    raise no_access()
                user = self._new_user(claims, issuer, subject)
                identity = SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)
            user = identity.user
            if not user.is_active:
                raise Refused(
                    "Account disabled",
                    "Your account here has been disabled. Ask an administrator of Fleet Triage.",
                )
            self._update_user(user, claims)
            identity.last_login_groups = groups
            identity.save(update_fields=["last_login_groups"])
            sync_access(user, teams, roles)
        return user

    def _username(self, claims) -> str:
        username = claims.get(settings.OIDC_USERNAME_CLAIM)
        if not isinstance(username, str) or not username.strip():
            raise Refused(
                "Sign-in refused",
                f"The identity provider sent no {settings.OIDC_USERNAME_CLAIM!r} claim to name your account by. "
                "Ask an administrator to check OIDC_USERNAME_CLAIM and the scopes asked for.",
            )
        username = username.strip()
        max_length = get_user_model()._meta.get_field("username").max_length
        if len(username) > max_length:
            raise Refused(
                "Sign-in refused", f"Your user name at the identity provider is longer than {max_length} characters."
            )
        return username

    def _new_user(self, claims, issuer, subject):
        username = self._username(claims)
        users = get_user_model().objects
        if users.filter(username__iexact=username).exists():
            if SsoIdentity.objects.filter(issuer=issuer, subject=subject).exists():
                raise _Raced  # not someone else's account: this person's, made since the lookup
            # Never taken over by name: a local account (a break-glass admin's) stays theirs.
            raise Refused(
                "Sign-in refused",
                f"An account named {username!r} exists here already and is not linked to your sign-in. "
                "An administrator can link it (SSO identities, in the admin) or rename it.",
            )
        user = users.create_user(username, email=self._email(claims))  # no usable password: no reset mail
        return user

    @staticmethod
    def _email(claims) -> str:
        """The address, unless the provider says it is not verified (it may let people type any)."""
        email = claims.get("email")
        if not isinstance(email, str) or claims.get("email_verified") is False:
            return ""
        return email.strip()[:254]

    def _update_user(self, user, claims) -> None:
        fields = []
        email = self._email(claims)
        if email and email != user.email:
            user.email = email
            fields.append("email")
        for claim, field in (("given_name", "first_name"), ("family_name", "last_name")):
            value = claims.get(claim)
            if isinstance(value, str) and value[:150] != getattr(user, field):
                setattr(user, field, value[:150])
                fields.append(field)
        if fields:
            user.save(update_fields=fields)


UNVERIFIED = (
    "This sign-in could not be verified, so it was refused. Try again from the login page; if it keeps "
    "failing, tell an administrator (the server's log says why)."
)


def unverified(reason: str) -> Refused:
    logger.warning("SSO: refused a sign-in that could not be verified: %s", reason)
    return Refused("Sign-in failed", UNVERIFIED, 400)


def no_access() -> Refused:
    return Refused(
        "No access",
        f"You signed in with {settings.OIDC_PROVIDER_NAME}, but none of your groups there gives access to "
        "Fleet Triage. Ask your platform team to add you to your team's group.",
    )


def refusal(request, title: str, message: str, status: int):
    return render(
        request,
        "registration/sso_refused.html",
        {"title": title, "message": message, "provider": settings.OIDC_PROVIDER_NAME},
        status=status,
    )


class _RequestView(OIDCAuthenticationRequestView):
    pass


def addressed_publicly(request):
    """The request, whose absolute addresses (the library's redirect_uri, built from the Host header
    by request.build_absolute_uri) start with OIDC_REDIRECT_BASE_URL when it is set: a proxy that
    rewrites the Host header then cannot change the address the provider sends the browser back to."""
    base = getattr(settings, "OIDC_REDIRECT_BASE_URL", "")
    if base:
        request.build_absolute_uri = lambda location=None: urljoin(f"{base}/", location or request.get_full_path())
    return request


BACKEND = f"{__name__}.SsoBackend"
# The states of the silent re-checks under way (a few: one a tab), so the callback knows one.
RECHECK_STATES = "sso_recheck_states"


def signed_in_with_sso(request) -> bool:
    return request.user.is_authenticated and request.session.get(BACKEND_SESSION_KEY) == BACKEND


class _CallbackView(OIDCAuthenticationCallbackView):
    recheck = False  # this callback ends a silent re-check (SsoSessionRefresh), not a sign-in
    next_url = ""  # the page the re-check interrupted

    def login_success(self):
        # Over another account's session (a shared computer), Django's login would empty the session,
        # and with it the ID token just kept for the logout's hint and the page to go on to: that
        # session ends first, and they move to the new one.
        user = getattr(self.request, "user", None)
        if self.recheck and user != self.user:
            # Someone else signed in to the provider in this browser since: the page must not turn into
            # their account under the person looking at it. Both sign in again, on purpose.
            logger.info("SSO: a silent re-check of %s came back for another account; logged out", user)
            auth.logout(self.request)
            return self._logged_out(f"{settings.OIDC_PROVIDER_NAME} now signs in another account in this browser")
        if user is not None and user.is_authenticated and user != self.user:
            kept = {
                key: self.request.session[key]
                for key in ("oidc_id_token", "oidc_login_next")
                if key in self.request.session
            }
            auth.logout(self.request)
            self.request.session.update(kept)
        return super().login_success()

    def _logged_out(self, why: str):
        """To the login page, back to the page the re-check interrupted, saying why they are there."""
        messages.info(self.request, f"{why}, so you were logged out. Sign in again.")
        if self.next_url:
            return redirect_to_login(self.next_url)
        return HttpResponseRedirect(resolve_url(settings.LOGIN_URL))

    def login_failure(self):
        error = self.request.GET.get("error")
        if self.recheck and error:
            # The provider would not vouch for the person without asking them (login_required: its own
            # session ended or was logged out): the library logged them out here; they sign in again.
            logger.info("SSO: a silent re-check was refused by the provider (%s); logged out", error[:100])
            return self._logged_out(f"Your {settings.OIDC_PROVIDER_NAME} session has ended")
        if error:
            # The provider's own refusal (access_denied: the person said no, or is not allowed the app).
            message = f"{settings.OIDC_PROVIDER_NAME} did not sign you in ({error[:100]})."
        else:
            message = "This sign-in could not be completed (it was started in another browser, or already used)."
        return refusal(self.request, "Sign-in failed", message + " Try again from the login page.", 400)


@read_only
def sso_login(request):
    """Off: no such page. On: to the provider, with state, nonce and PKCE kept in the session."""
    if not settings.OIDC_ENABLED:
        raise Http404
    return _RequestView.as_view(http_method_names=["get", "head"])(addressed_publicly(request))


@read_only
def sso_callback(request):
    """Where the provider sends the browser back: signed in, or a page saying why not."""
    if not settings.OIDC_ENABLED:
        raise Http404
    state = request.GET.get("state")
    rechecks = request.session.get(RECHECK_STATES, [])
    recheck = bool(state) and state in rechecks and signed_in_with_sso(request)
    if state in rechecks:
        request.session[RECHECK_STATES] = [other for other in rechecks if other != state]
    next_url = (request.session.get("oidc_login_next") or "") if recheck else ""
    try:
        view = _CallbackView.as_view(http_method_names=["get", "head"], recheck=recheck, next_url=next_url)
        return view(addressed_publicly(request))  # the token request names the same redirect_uri
    except Refused as refused:
        # No access, disabled: no session of an earlier login stays either; nor one whose re-check failed.
        if refused.status == 403 or recheck:
            auth.logout(request)
        return refusal(request, refused.title, refused.message, refused.status)
    except (SuspiciousOperation, jwt.PyJWTError) as exc:
        if recheck:
            auth.logout(request)
        refused = unverified(str(exc))
        return refusal(request, refused.title, refused.message, refused.status)
    except requests.RequestException as exc:
        # Its type and the answer's status only: never a request's body, which holds the client secret.
        status = getattr(exc.response, "status_code", None)
        logger.warning("SSO: the identity provider could not be asked: %s (status %s)", type(exc).__name__, status)
        if recheck:
            auth.logout(request)
        return refusal(
            request,
            "Sign-in failed",
            f"{settings.OIDC_PROVIDER_NAME} could not be reached or refused the sign-in. Try again in a moment.",
            502,
        )


class SsoLoginView(LoginView):
    """Django's login page, offering "Sign in with <provider>" above the password form when SSO is on.
    While the provider does not answer the server (`provider_answers`: its short timeout and kept
    answer, so the page stays quick), a notice beside the button says so; the button stays, as the
    browser may reach the provider where the server cannot."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["sso_provider"] = settings.OIDC_PROVIDER_NAME if settings.OIDC_ENABLED else None
        context["sso_not_answering"] = settings.OIDC_ENABLED and not provider_answers()
        return context


def provider_logout_url(request) -> str:
    """Where logging out sends the browser (the library's OIDC_OP_LOGOUT_URL_METHOD, called before
    the session ends): for an SSO session, the provider's end_session_endpoint, to end its session
    too and come back to our login page; else (a local account, or a provider without one) our login
    page."""
    here = resolve_url(settings.LOGOUT_REDIRECT_URL)
    endpoint = getattr(settings, "OIDC_OP_LOGOUT_ENDPOINT", "")
    if not (settings.OIDC_ENABLED and endpoint and signed_in_with_sso(request)):
        return here
    params = {
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "post_logout_redirect_uri": addressed_publicly(request).build_absolute_uri(here),
    }
    id_token = request.session.get("oidc_id_token")
    if id_token:  # absent in a session from before the endpoint was set: the provider may ask to confirm
        params["id_token_hint"] = id_token
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"


@method_decorator(never_cache, name="dispatch")  # the provider's address carries the ID token
class SsoLogoutView(OIDCLogoutView):
    """The library's logout: a POST (CSRF-checked; a GET is 405, ALLOW_LOGOUT_GET_METHOD never being
    set), ending the provider's session too for an SSO session (`provider_logout_url`), then ours."""


def _admin_logout(request):
    if signed_in_with_sso(request):
        return SsoLogoutView.as_view()(request)
    return admin.site.logout(request)


# The admin site's own logout (the "Log out" form in its header posts to /admin/logout/; config/urls.py
# puts this in the admin's URLs in place of its logout): for an SSO session the app's logout, ending
# the provider's session too, where the admin's would end only ours; a local account's is the admin's.
# Both a POST with CSRF, behind the admin's own check (someone without admin access is sent to it).
admin_logout = admin.site.admin_view(_admin_logout)


def wants_json(request) -> bool:
    """The API, a script's fetch of JSON or an XMLHttpRequest: a redirect to the provider is no use."""
    accept = request.headers.get("Accept", "")
    return (
        under_api(request)
        or request.headers.get("X-Requested-With") == "XMLHttpRequest"
        or ("application/json" in accept and "text/html" not in accept)
    )


# Whether the provider answers, asked before a due re-check sends the browser to it and by the login
# page (which says so beside its button while it does not): OIDC_PROBE_TIMEOUT at most (a provider
# that accepts connections and hangs must not hold the page), and the answer kept
# OIDC_PROBE_CACHE_SECONDS in each web process, so an outage costs one wait per process and period,
# not one a request (config/sso.py reads both from the environment). Kept in the process, not
# Django's cache: that is Redis, whose own outage would add waits.
_probe_lock = threading.Lock()
_probe_answers: dict[str, tuple[float, bool]] = {}  # discovery URL: (time.monotonic() asked, answered)


def discovery_url() -> str:
    return f"{settings.OIDC_ISSUER.rstrip('/')}/.well-known/openid-configuration"


def provider_answers() -> bool:
    """Whether the provider answers HTTP at its issuer's discovery document, which every provider of
    the docs serves where the browser is sent (any answer below 500 will do: a 404 is a provider that
    answers; a refused or timed-out connection, or a proxy's 502/503 in front of it, is not), as last
    asked within OIDC_PROBE_CACHE_SECONDS."""
    url = discovery_url()
    with _probe_lock:  # one request asks; the others at that moment wait for its answer
        asked = _probe_answers.get(url)
        if asked is not None and time.monotonic() - asked[0] < settings.OIDC_PROBE_CACHE_SECONDS:
            return asked[1]
        timeout = min(settings.OIDC_PROBE_TIMEOUT, settings.OIDC_TIMEOUT)
        try:
            with requests.get(url, timeout=timeout, allow_redirects=False, verify=settings.OIDC_VERIFY_SSL) as got:
                answered, why = got.status_code < 500, f"status {got.status_code}"
        except requests.RequestException as exc:
            answered, why = False, type(exc).__name__
        if not answered:
            logger.warning(
                "SSO: the identity provider did not answer at %s (%s, within %g s): the login page says so, and "
                "due session re-checks are put off, for up to %d minutes each, until it does",
                url,
                why,
                timeout,
                settings.OIDC_RECHECK_GRACE_SECONDS // 60,
            )
        _probe_answers[url] = (time.monotonic(), answered)
        return answered


def forget_provider_answers() -> None:
    """Ask the provider afresh at the next due re-check (tests: a new provider may have an old one's port)."""
    with _probe_lock:
        _probe_answers.clear()


class SsoSessionRefresh(SessionRefresh):
    """The library's SessionRefresh for SSO sessions only (local ones are never touched): a GET once
    OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS have passed since the last check goes to the provider with
    prompt=none and comes back through the callback (`sso_callback`). A JSON request or the API is
    answered 401 with what to do instead (the library would send XMLHttpRequests a 403, and a fetch()
    after the provider, where the browser refuses to follow it).

    Its settings are read at each request, not once at start: they are turned on by tests after the
    middleware was made."""

    def __init__(self, get_response):
        super(SessionRefresh, self).__init__(get_response)  # MiddlewareMixin's: no settings read here

    OIDC_EXEMPT_URLS = property(lambda self: [])
    OIDC_OP_AUTHORIZATION_ENDPOINT = property(lambda self: settings.OIDC_OP_AUTHORIZATION_ENDPOINT)
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_STATE_SIZE = property(lambda self: self.get_settings("OIDC_STATE_SIZE", 32))
    OIDC_AUTHENTICATION_CALLBACK_URL = property(lambda self: settings.OIDC_AUTHENTICATION_CALLBACK_URL)
    OIDC_RP_SCOPES = property(lambda self: settings.OIDC_RP_SCOPES)
    OIDC_USE_NONCE = property(lambda self: settings.OIDC_USE_NONCE)
    OIDC_NONCE_SIZE = property(lambda self: self.get_settings("OIDC_NONCE_SIZE", 32))

    @property
    def exempt_urls(self):
        # The library's own names are not our URLs: ours, and the login page.
        return {reverse(name) for name in ("login", "sso-login", "sso-callback", "logout")}

    @property
    def exempt_url_patterns(self):
        return set()

    def is_refreshable_url(self, request):
        return signed_in_with_sso(request) and super().is_refreshable_url(request)

    def process_request(self, request):
        if not (settings.OIDC_ENABLED and settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS):
            return None
        due = request.session.get("oidc_id_token_expiration", 0)
        if not self.is_refreshable_url(request) or due > time.time():
            return None
        if not provider_answers():
            return self._provider_down(request, due)
        if wants_json(request):
            detail = (
                f"Your sign-in needs checking with {settings.OIDC_PROVIDER_NAME} again: reload the page. "
                "Scripts should use an API token instead."
            )
            return JsonResponse({"detail": detail, "error": detail}, status=401)
        response = super().process_request(addressed_publicly(request))
        if response is not None and response.status_code == 302:
            state = parse_qs(urlsplit(response["Location"]).query).get("state", [""])[0]
            request.session[RECHECK_STATES] = [*request.session.get(RECHECK_STATES, [])[-4:], state]
            logger.info("SSO: re-checking %s's session with the provider", request.user.get_username())
        return response

    def _provider_down(self, request, due: float):
        """A check is due but the provider does not answer: sending the browser there would show it the
        browser's own error page. Within the grace the request goes on, the session unchecked (the check
        stays due: the next request after OIDC_PROBE_CACHE_SECONDS asks the provider again); past it the
        session ends, saying why."""
        overdue = time.time() - due
        name = request.user.get_username()
        if overdue <= settings.OIDC_RECHECK_GRACE_SECONDS:
            logger.info(
                "SSO: %s's session goes on unchecked: its re-check is due but the provider does not answer", name
            )
            return None
        logger.warning(
            "SSO: logged out %s: the session could not be checked with the provider for %d minutes (grace %d)",
            name,
            overdue // 60,
            settings.OIDC_RECHECK_GRACE_SECONDS // 60,
        )
        auth.logout(request)
        why = f"{settings.OIDC_PROVIDER_NAME} could not be reached to check your sign-in, so you were logged out"
        if wants_json(request):
            detail = f"{why}: reload the page and sign in again."
            return JsonResponse({"detail": detail, "error": detail}, status=401)
        messages.info(request, f"{why}. Sign in again when it is back.")
        return redirect_to_login(request.get_full_path())
