"""Machine tokens on a request: which token it carries, or why it is refused.

Tokens come from djangorestframework-api-key (`fleet.models.MachineToken`): only a prefix and a
hash of the key are stored. The API authenticates them with `MachineTokenAuthentication` so that
a script learns what is wrong with its token (a 401 with `WWW-Authenticate`) apart from what its
token may not do (a 403); `/metrics`, a plain view, asks `machine_token`. A token is never a
person: the request's user stays anonymous, the token is `request.auth`.

No refusal repeats the key: it is a secret, and answers end up in logs and CI output.
"""

from __future__ import annotations

from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed

SCHEME = "Api-Key"
NOT_A_KEY = (
    f"This is not a machine token: send 'Authorization: {SCHEME} <prefix>.<secret>', "
    "the key as the tokens page showed it."
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
    from fleet.models import MachineToken  # here: settings name this module before the apps are ready

    prefix, dot, secret = key.partition(".")
    # A key is printable ASCII, "<prefix>.<secret>"; anything else is no key at all, rather than a
    # lookup PostgreSQL refuses (a NUL).
    if not (dot and prefix and secret and key.isascii() and key.isprintable()):
        raise TokenRefused(NOT_A_KEY)
    token = MachineToken.objects.filter(prefix=prefix).first()
    if token is None:
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
        return f'{SCHEME} realm="api"'
