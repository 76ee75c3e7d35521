"""Checks every request passes before any view reads it."""

from __future__ import annotations

import zoneinfo

from django.conf import settings
from django.http import HttpResponseBadRequest, JsonResponse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers

from config.api_paths import under_api

HEALTHZ_PATH = "/healthz"
NUL_MESSAGE = "contains a NUL character (%00), which no field of this site accepts."


class RefuseNulMiddleware:
    """An address, query string or form with a NUL character is a 400 before any view runs, naming
    where it is.

    No text a person types holds one, and PostgreSQL can neither store nor compare text that does:
    a filter given one (`?cluster=%00`), a token's name or its id in the address failed its query,
    a server error. Django's forms refuse NUL in their own fields; this covers the addresses, query
    parameters and form fields that views and filters read directly, on every page and the API
    alike. A page's form body is read here as the CSRF check after it reads it anyway (the upload
    cap is already in place); the API's bodies are left to its serializers, which refuse NUL
    themselves, so an archive pushed through it is parsed once, by the API. The API's answer has
    the shape of its other 400s: each field in error ("address" for the path) with its messages.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        api = under_api(request)
        in_address = "\x00" in request.path_info  # a part of it a view looks up
        fields = _with_nul(request.GET)
        if request.method == "POST" and not api:
            fields += _with_nul(request.POST)
        if not in_address and not fields:
            return self.get_response(request)
        if api:
            refused = (["address"] if in_address else []) + fields
            return JsonResponse({key: [f"This {NUL_MESSAGE}"] for key in refused}, status=400)
        where = (["the address"] if in_address else []) + [f"the field {name}" for name in fields]
        message = f"{' and '.join(where)} {NUL_MESSAGE}"
        return HttpResponseBadRequest(message[0].upper() + message[1:], content_type="text/plain; charset=utf-8")


def _with_nul(fields) -> list[str]:
    """The names of the fields (a QueryDict) whose name or any value holds a NUL, NUL shown as %00."""
    return [
        key.replace("\x00", "%00")
        for key, values in fields.lists()
        if "\x00" in key or any("\x00" in value for value in values)
    ]


class PrivateResponsesMiddleware:
    """What a logged-in person or a machine token is answered is never kept in a cache: a team's
    pages, exports, series and files, a new token's key. Without a Cache-Control header a browser
    could keep them, and Back after logging out on a shared computer showed them to the next person.
    Answers that say how to cache themselves are left as they are; static files never reach here
    (WhiteNoise serves them first), so they stay cached."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user = getattr(request, "user", None)
        signed_in = user is not None and user.is_authenticated
        if (signed_in or request.META.get("HTTP_AUTHORIZATION")) and not response.has_header("Cache-Control"):
            add_never_cache_headers(response)
        return response


class IdleSessionMiddleware:
    """A login ends after SESSION_COOKIE_AGE (SESSION_IDLE_MINUTES) without a request, not two weeks
    after it began whatever was done since (Django's default, with the session never saved again).

    Each request of a logged-in person would push the expiry on (SESSION_SAVE_EVERY_REQUEST), but
    that writes the session row on every page, series and poll: one UPDATE a request on PostgreSQL.
    Here the session is written, and its expiry and cookie moved on, only when its last move is
    older than a tenth of the timeout (five minutes at most): a session then ends between
    SESSION_COOKIE_AGE less that step and SESSION_COOKIE_AGE after the last request.
    """

    KEY = "_fleet_seen"

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            step = min(300, settings.SESSION_COOKIE_AGE // 10)
            if int(timezone.now().timestamp()) - request.session.get(self.KEY, 0) >= step:
                self.seen(request)
        return self.get_response(request)

    @classmethod
    def seen(cls, request) -> None:
        """The session's expiry moved on now (it is modified: saved, with a new expiry and cookie).
        Also called at login (fleet.receivers), whose response saves the session anyway: else the
        first page after logging in wrote it once more."""
        request.session[cls.KEY] = int(timezone.now().timestamp())


class HealthzMiddleware:
    """`/healthz` is answered before the host check and the HTTPS redirect.

    Probes ask by address over plain HTTP: compose's healthcheck inside the web container
    (`http://127.0.0.1:8000/healthz`), a Kubernetes kubelet at the pod's IP. With ALLOWED_HOSTS set
    to the site's name, such a probe was refused (400, DisallowedHost), and with HTTPS=1 redirected
    to https:// on a port that speaks none: the web container showed "unhealthy" while it served
    everyone. The answer says only whether the process and its database respond.

    Under URL_PREFIX it also answers at `<prefix>/healthz` with the prefix still on the path: a probe
    straight at the web process asks there whether the proxy takes the prefix off (nginx's snippet) or
    gunicorn does (SCRIPT_NAME, which refuses /healthz), so one address answers in both set-ups.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info in (HEALTHZ_PATH, settings.URL_PREFIX + HEALTHZ_PATH) and request.method == "GET":
            from fleet.views import healthz

            return healthz(request)
        return self.get_response(request)


class UserTimeZoneMiddleware:
    """Pages show times in the zone the person chose on their settings page (fleet.UserProfile,
    fleet.timezones), and their labels name it (the `time_zone` of fleet.context_processors).

    Only what templates render moves: stored times, period and week boundaries, CSV files and mails
    stay UTC, and the API (DRF writes times in the active zone) is left in UTC, its machine format.
    The zone is per thread, so it is put back to UTC when the request ends, whatever happened: the
    next request of this thread may be someone else's, or nobody's."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        zone = None
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and not under_api(request):
            zone = _chosen_zone(user)
        if zone is None:
            timezone.deactivate()
            return self.get_response(request)
        timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def _chosen_zone(user) -> zoneinfo.ZoneInfo | None:
    """The user's zone; None for UTC, no choice, or a name this machine's zone data no longer has. Read
    from the profile the authentication backends load with the user (fleet.auth): no query of its own."""
    from fleet.accounts import chosen_time_zone
    from fleet.timezones import DEFAULT, canonical

    name = canonical(chosen_time_zone(user))
    return None if name in (None, DEFAULT) else zoneinfo.ZoneInfo(name)
