"""Single sign-on with an OpenID Connect provider (Keycloak, Okta, Entra ID, Dex, Google): its settings.

Off unless OIDC_ISSUER is set. Then the endpoints, the client and the group mappings must be set too,
and are checked here at start-up, so a typo stops the service with a message naming the variable
rather than failing the first person who clicks "Sign in with ...". The names the library
(mozilla-django-oidc) reads are produced from ours; how a sign-in is handled is fleet/sso.py.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_str

SIGN_ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512")
ENDPOINTS = {
    # ours: the library's
    "OIDC_AUTHORIZATION_ENDPOINT": "OIDC_OP_AUTHORIZATION_ENDPOINT",
    "OIDC_TOKEN_ENDPOINT": "OIDC_OP_TOKEN_ENDPOINT",
    "OIDC_USERINFO_ENDPOINT": "OIDC_OP_USER_ENDPOINT",
    "OIDC_JWKS_URI": "OIDC_OP_JWKS_ENDPOINT",
}
# Optional: the provider's RP-initiated logout (its discovery document's end_session_endpoint).
END_SESSION_ENDPOINT = "OIDC_END_SESSION_ENDPOINT"
_SLUG = re.compile(r"[-a-zA-Z0-9_]+")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url(name: str, value: str, *, allow_http: bool) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ImproperlyConfigured(f"{name}={value!r} is not an https:// URL.")
    if parts.scheme == "http" and not (allow_http or _is_loopback(parts.hostname)):
        # The token endpoint's answer is the login; the JWKS the keys that vouch for it.
        raise ImproperlyConfigured(
            f"{name}={value!r} must be https:// (http only to this machine, or with OIDC_ALLOW_HTTP=1)."
        )
    return value


def _client_secret() -> str:
    secret, secret_file = env_str("OIDC_CLIENT_SECRET"), env_str("OIDC_CLIENT_SECRET_FILE")
    if secret and secret_file:
        raise ImproperlyConfigured("Set OIDC_CLIENT_SECRET or OIDC_CLIENT_SECRET_FILE, not both.")
    if secret_file:
        try:
            secret = Path(secret_file).read_text(encoding="utf-8").strip()
        except OSError as exc:  # the message names the file, never its content
            raise ImproperlyConfigured(
                f"OIDC_CLIENT_SECRET_FILE={secret_file!r} cannot be read: {exc.strerror}."
            ) from None
        if not secret:
            raise ImproperlyConfigured(f"OIDC_CLIENT_SECRET_FILE={secret_file!r} is empty.")
    if not secret:
        raise ImproperlyConfigured("OIDC_ISSUER is set: set OIDC_CLIENT_SECRET or OIDC_CLIENT_SECRET_FILE too.")
    return secret


def _team_groups() -> dict[str, tuple[str, ...]]:
    """OIDC_TEAM_GROUPS: "idp-group=team-slug,other-group=team-slug": the teams each group stands for."""
    mapping: dict[str, list[str]] = {}
    for entry in env_list("OIDC_TEAM_GROUPS", []):
        group, sep, slug = (part.strip() for part in entry.rpartition("="))
        if not sep or not group or not _SLUG.fullmatch(slug):
            raise ImproperlyConfigured(
                f"OIDC_TEAM_GROUPS: {entry!r} is not group=team-slug (e.g. gpu-vision=vision; a slug is "
                "letters, digits, - and _)."
            )
        mapping.setdefault(group, []).append(slug)
    return {group: tuple(slugs) for group, slugs in mapping.items()}


def _redirect_base(allow_http: bool) -> str:
    """OIDC_REDIRECT_BASE_URL: the public address (scheme and host) the provider sends browsers back
    to, whatever Host header a proxy passes on; "" when unset."""
    value = env_str("OIDC_REDIRECT_BASE_URL").strip()
    if not value:
        return ""
    value = _url("OIDC_REDIRECT_BASE_URL", value, allow_http=allow_http)
    parts = urlsplit(value)
    if parts.path.strip("/") or parts.query or parts.fragment:
        raise ImproperlyConfigured(
            f"OIDC_REDIRECT_BASE_URL={value!r} must be the scheme and host only, e.g. https://fleet.example.org."
        )
    return f"{parts.scheme}://{parts.netloc}"


def _seconds(name: str, default: float, minimum: float, maximum: float, what: str) -> float:
    """A number of seconds from the environment, in [minimum, maximum]; else a message naming the
    variable, its value and what it is."""
    try:
        return env_float(name, default, minimum=minimum, maximum=maximum)
    except ImproperlyConfigured as exc:
        raise ImproperlyConfigured(
            f"{str(exc).rstrip('.')}: it is {what}, in seconds from {minimum:g} to {maximum:g} (default {default:g})."
        ) from None


def oidc_settings() -> dict:
    """The Django settings of single sign-on, from the environment: {"OIDC_ENABLED": False} when off."""
    issuer = env_str("OIDC_ISSUER").strip()
    if not issuer:
        stray = sorted(
            name
            for name in (
                *ENDPOINTS,
                END_SESSION_ENDPOINT,
                "OIDC_REDIRECT_BASE_URL",
                "OIDC_CLIENT_ID",
                "OIDC_CLIENT_SECRET",
                "OIDC_CLIENT_SECRET_FILE",
                "OIDC_TEAM_GROUPS",
            )
            if env_str(name)
        )
        if stray:
            raise ImproperlyConfigured(f"{', '.join(stray)} set without OIDC_ISSUER: set it to turn single sign-on on.")
        return {"OIDC_ENABLED": False}
    allow_http = env_bool("OIDC_ALLOW_HTTP", False)
    settings: dict = {"OIDC_ENABLED": True, "OIDC_ISSUER": _url("OIDC_ISSUER", issuer, allow_http=allow_http)}
    for ours, theirs in ENDPOINTS.items():
        value = env_str(ours).strip()
        if not value:
            raise ImproperlyConfigured(
                f"OIDC_ISSUER is set: set {ours} too (the provider's /.well-known/openid-configuration lists it)."
            )
        settings[theirs] = _url(ours, value, allow_http=allow_http)
    end_session = env_str(END_SESSION_ENDPOINT).strip()
    if end_session:
        end_session = _url(END_SESSION_ENDPOINT, end_session, allow_http=allow_http)
    redirect_base = _redirect_base(allow_http)
    client_id = env_str("OIDC_CLIENT_ID").strip()
    if not client_id:
        raise ImproperlyConfigured("OIDC_ISSUER is set: set OIDC_CLIENT_ID too.")
    scopes = env_str("OIDC_SCOPES", "openid email profile").split()
    if "openid" not in scopes:
        raise ImproperlyConfigured(f"OIDC_SCOPES={' '.join(scopes)!r} must include openid.")
    algorithm = env_str("OIDC_SIGN_ALGO", "RS256").strip()
    if algorithm not in SIGN_ALGORITHMS:
        raise ImproperlyConfigured(f"OIDC_SIGN_ALGO={algorithm!r} is not one of {', '.join(SIGN_ALGORITHMS)}.")
    team_groups = _team_groups()
    recheck_minutes = env_int("OIDC_RECHECK_MINUTES", 15, minimum=0)
    operator_groups = tuple(env_list("OIDC_OPERATOR_GROUPS", []))
    researcher_groups = tuple(env_list("OIDC_RESEARCHER_GROUPS", []))
    if not (team_groups or operator_groups or researcher_groups):
        raise ImproperlyConfigured(
            "OIDC_ISSUER is set but no group gives access: set OIDC_TEAM_GROUPS, OIDC_OPERATOR_GROUPS "
            "or OIDC_RESEARCHER_GROUPS (a person in none of them is refused)."
        )
    settings.update(
        {
            "OIDC_PROVIDER_NAME": env_str("OIDC_PROVIDER_NAME", "single sign-on").strip() or "single sign-on",
            "OIDC_RP_CLIENT_ID": client_id,
            "OIDC_RP_CLIENT_SECRET": _client_secret(),
            "OIDC_RP_SCOPES": " ".join(scopes),
            "OIDC_RP_SIGN_ALGO": algorithm,
            "OIDC_USERNAME_CLAIM": env_str("OIDC_USERNAME_CLAIM", "preferred_username").strip(),
            "OIDC_GROUPS_CLAIM": env_str("OIDC_GROUPS_CLAIM", "groups").strip(),
            "OIDC_TEAM_GROUPS": team_groups,
            "OIDC_OPERATOR_GROUPS": operator_groups,
            "OIDC_RESEARCHER_GROUPS": researcher_groups,
            # The library's: state and nonce in the session (its defaults), PKCE S256 on top.
            "OIDC_USE_NONCE": True,
            "OIDC_USE_PKCE": True,
            "OIDC_TOKEN_USE_BASIC_AUTH": env_bool("OIDC_CLIENT_AUTH_BASIC", False),
            "OIDC_TIMEOUT": env_float("OIDC_TIMEOUT", 10.0, minimum=0.1),
            "OIDC_VERIFY_SSL": True,
            "OIDC_AUTHENTICATION_CALLBACK_URL": "sso-callback",
            # Where the provider sends the browser back (the callback, the login page after logging out):
            # from this address when set, else from the request's (its Host header; fleet/sso.py).
            "OIDC_REDIRECT_BASE_URL": redirect_base,
            "OIDC_STORE_ACCESS_TOKEN": False,
            # Logging out ends the provider's session too, where it has an end_session_endpoint: the
            # ID token is kept in the session (and goes with it) as that request's id_token_hint only.
            "OIDC_OP_LOGOUT_ENDPOINT": end_session,
            "OIDC_STORE_ID_TOKEN": bool(end_session),
            "OIDC_OP_LOGOUT_URL_METHOD": "fleet.sso.provider_logout_url",
            # An SSO session is checked with the provider again (silently, prompt=none) once this old
            # (fleet.sso.SsoSessionRefresh): its groups apply again, or the session ends. 0: never.
            "OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS": recheck_minutes * 60,
            # How long past its due time a check may be put off while the provider cannot be reached (the
            # session goes on unchecked meanwhile); then the session ends, saying why. 0: at once.
            "OIDC_RECHECK_GRACE_SECONDS": env_int("OIDC_RECHECK_GRACE_MINUTES", 3 * recheck_minutes, minimum=0) * 60,
            # Whether the provider answers is asked (fleet.sso.provider_answers) before a due check sends
            # the browser there and by the login page: waiting this long at most (and never longer than
            # OIDC_TIMEOUT; a provider that takes the connection and hangs must not hold the page), the
            # answer kept this long in each web process (0: asked every time).
            "OIDC_PROBE_TIMEOUT": _seconds(
                "OIDC_PROBE_TIMEOUT", 2.0, 0.1, 30.0, "how long a page waits for the provider's answer"
            ),
            "OIDC_PROBE_CACHE_SECONDS": _seconds(
                "OIDC_PROBE_CACHE_SECONDS", 30.0, 0.0, 3600.0, "how long the provider's answer (or silence) is kept"
            ),
        }
    )
    return settings


def content_security_policy(policy: dict, oidc: dict) -> dict:
    """The policy with the provider's origin allowed as a form's target when logging out goes on to its
    end_session endpoint: the logout form posts to us and is redirected there, and browsers hold a
    form's redirects to form-action too (Chromium stopped it at 'self', the provider's session open)."""
    endpoint = oidc.get("OIDC_OP_LOGOUT_ENDPOINT") if oidc.get("OIDC_ENABLED") else ""
    if not endpoint:
        return policy
    parts = urlsplit(endpoint)
    directives = dict(policy["DIRECTIVES"])
    directives["form-action"] = [*directives["form-action"], f"{parts.scheme}://{parts.netloc}"]
    return {**policy, "DIRECTIVES": directives}
