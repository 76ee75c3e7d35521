"""Machine tokens on a request: which token it carries, or why it is refused.

Tokens come from djangorestframework-api-key (`fleet.models.MachineToken`): only a prefix and a
hash of the key are stored. The API authenticates them with `MachineTokenAuthentication` so that
a script learns what is wrong with its token (a 401 with `WWW-Authenticate`) apart from what its
token may not do (a 403); `/metrics`, a plain view, asks `machine_token`. A token is never a
person: the request's user stays anonymous, the token is `request.auth`.

Personal tokens (`fleet.models.PersonalToken`, made by a person for their own scripts) travel as
`Authorization: Bearer <key>` and are read by `PersonalTokenAuthentication`: unlike a machine token,
one acts as its owner (the request's user is the owner, checked active at each request, so the API
scopes it as their session) and may only read. A key sent under the other kind's scheme is told so.

No refusal repeats the key: it is a secret, and answers end up in logs and CI output.
"""

from __future__ import annotations

from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.permissions import SAFE_METHODS

from fleet.quoting import quoted

SCHEME = "Api-Key"
NOT_A_KEY = (
    f"This is not a machine token: send 'Authorization: {SCHEME} <prefix>.<secret>', "
    "the key as the tokens page showed it."
)
PERSONAL_SCHEME = "Bearer"
NOT_A_PERSONAL_KEY = (
    f"This is not a personal token: send 'Authorization: {PERSONAL_SCHEME} <prefix>.<secret>', "
    "the key as your tokens page showed it."
)
PERSONAL_PAGE = "/account/tokens/"
READ_ONLY = (
    "Personal tokens only read: a {method} request with one is refused. Push archives with a machine token "
    "(an operator makes one on the tokens page) or upload them in the browser."
)


class TokenRefused(Exception):
    """The request's token cannot be used; the message says why, for the script's author."""


def presented_key(request) -> str | None:
    """The key after `Authorization: Api-Key `, or None for a request without that header (no
    Authorization header, or another scheme: a session user behind a proxy's basic auth)."""
    scheme, _, key = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return key.strip() if scheme.lower() == SCHEME.lower() else None


def token_for_key(key: str):
    """The usable token the key belongs to; TokenRefused saying why there is none."""
    from fleet.models import (
        MachineToken,  # here: settings name this module before the apps are ready
        PersonalToken,
    )

    prefix = key_prefix(key, NOT_A_KEY)
    token = MachineToken.objects.filter(prefix=prefix).first()
    if token is None:
        if _is_key_of(PersonalToken, prefix, key):
            raise TokenRefused(f"This key is a personal token's: send it as 'Authorization: {PERSONAL_SCHEME} <key>'.")
        raise TokenRefused("No machine token has this key's prefix: it was mistyped, or the token was deleted.")
    if not token.is_valid(key):
        raise TokenRefused("This key's secret does not match its token: it was mistyped or cut short.")
    # Only now, to whoever holds the whole key, is it said what became of the token.
    if token.revoked:
        raise TokenRefused("This token was revoked; an operator can make a new one on the tokens page.")
    if token.has_expired:
        raise TokenRefused("This token has expired; an operator can make a new one on the tokens page.")
    MachineToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def key_prefix(key: str, not_a_key: str) -> str:
    """The prefix of a well-formed key; TokenRefused(`not_a_key`) for anything else."""
    prefix, dot, secret = key.partition(".")
    # A key is printable ASCII, "<prefix>.<secret>"; anything else is no key at all, rather than a
    # lookup PostgreSQL refuses (a NUL).
    if not (dot and prefix and secret and key.isascii() and key.isprintable()):
        raise TokenRefused(not_a_key)
    return prefix


def _is_key_of(model, prefix: str, key: str) -> bool:
    """Whether the whole key is one of `model`'s: a key sent under the other kind's scheme is told
    so, and only to whoever holds the whole key."""
    token = model.objects.filter(prefix=prefix).first()
    return token is not None and token.is_valid(key)


def personal_token_for_key(key: str):
    """The usable personal token the key belongs to, its owner active; TokenRefused saying why not.
    Made at each request, so a revoked token, a deactivated owner or an expired date refuses the
    very next one."""
    from fleet.models import MachineToken, PersonalToken

    prefix = key_prefix(key, NOT_A_PERSONAL_KEY)
    token = PersonalToken.objects.select_related("owner").filter(prefix=prefix).first()
    if token is None:
        if _is_key_of(MachineToken, prefix, key):
            raise TokenRefused(f"This key is a machine token's: send it as 'Authorization: {SCHEME} <key>'.")
        raise TokenRefused("No personal token has this key's prefix: it was mistyped, or the token was deleted.")
    if not token.is_valid(key):
        raise TokenRefused("This key's secret does not match its token: it was mistyped or cut short.")
    if token.revoked:
        raise TokenRefused(f"This personal token was revoked; make a new one on your tokens page ({PERSONAL_PAGE}).")
    if token.has_expired:
        raise TokenRefused(
            f"This personal token expired on {token.expiry_date:%Y-%m-%d %H:%M} UTC; "
            f"make a new one on your tokens page ({PERSONAL_PAGE})."
        )
    if not token.owner.is_active:
        raise TokenRefused("This token's owner's account is deactivated: its personal tokens read nothing.")
    PersonalToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def machine_token(request):
    """The usable token the request carries, if any (its last use recorded); None otherwise."""
    key = presented_key(request)
    if key is None:
        return None
    try:
        return token_for_key(key)
    except TokenRefused:
        return None


class MachineTokenAuthentication(BaseAuthentication):
    """`Authorization: Api-Key <key>`: the token as `request.auth`, the user anonymous (a token
    never stands in for a person). A key that is no usable token is a 401 saying why; a request
    without one goes on to the session. First in the API's list, so that a request with neither
    is a 401 naming this scheme (DRF asks the first class for `WWW-Authenticate`)."""

    def authenticate(self, request):
        key = presented_key(request)
        if key is None:
            return None
        from django.contrib.auth.models import AnonymousUser

        try:
            return AnonymousUser(), token_for_key(key)
        except TokenRefused as refused:
            raise AuthenticationFailed(str(refused)) from None

    def authenticate_header(self, request) -> str:
        # Both token schemes the API takes, machine tokens' first (RFC 9110 11.6.1: one challenge each).
        return f'{SCHEME} realm="api", {PERSONAL_SCHEME} realm="api"'


class PersonalTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <key>`: the token's owner as the request's user (the API scopes them as
    their session), the token as `request.auth`. A key that is no usable personal token is a 401
    saying why; a usable one on an unsafe method is a 403 saying personal tokens only read, whatever
    the address (so an operator's token pushes nothing either). Without that header, on to the
    session; no CSRF check is owed, as a token is no cookie a browser sends by itself."""

    def authenticate(self, request):
        scheme, _, key = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != PERSONAL_SCHEME.lower():
            return None
        try:
            token = personal_token_for_key(key.strip())
        except TokenRefused as refused:
            raise AuthenticationFailed(str(refused)) from None
        if request.method not in SAFE_METHODS:
            raise PermissionDenied(READ_ONLY.format(method=quoted(request.method)))
        return token.owner, token

    def authenticate_header(self, request) -> str:
        return f'{PERSONAL_SCHEME} realm="api"'
