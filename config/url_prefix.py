"""Serving the product under a path prefix (https://ops.example.com/triage/): URL_PREFIX, read into the
settings that make every address the service hands out start with it.

The reverse proxy in front takes the prefix off the path before passing the request on (nginx:
`location /triage/ { proxy_pass http://127.0.0.1:8000/; }`), so the application's URLs stay as they
are; FORCE_SCRIPT_NAME puts the prefix back in front of each address reverse() and {% url %} give,
in the web processes (per request) and in the main thread of workers and commands (django.setup()).
Mails link to `public_url(reverse(...))`, which takes the prefix from the settings, so a worker's
other threads build the same links. No imports of the apps: the settings module loads it.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from django.core.exceptions import ImproperlyConfigured

_PREFIX = re.compile(r"(/[A-Za-z0-9._~-]+)+")


def url_prefix(raw: str) -> str:
    """URL_PREFIX as the settings use it: "" for none, else "/a" or "/a/b" (no slash at its end)."""
    value = raw.strip().rstrip("/")
    if value and not _PREFIX.fullmatch(value):
        raise ImproperlyConfigured(
            f"URL_PREFIX={raw!r} must be a path such as /triage: a slash, then letters, digits, '.', '_', "
            "'-' or '~' (more parts each after a slash), no query, host or scheme."
        )
    return value


def base_without_prefix(url: str, prefix: str) -> str:
    """PUBLIC_BASE_URL without the prefix at its end, where it was given with it: links are
    PUBLIC_BASE_URL + reverse(...), and reverse() puts the prefix in front already."""
    url = url.rstrip("/")
    parts = urlsplit(url)
    if prefix and parts.path.rstrip("/") == prefix:
        return urlunsplit(parts._replace(path="")).rstrip("/")
    return url


def prefix_settings(raw: str, *, public_base_url: str | None = None) -> dict:
    """The settings URL_PREFIX=`raw` decides (PUBLIC_BASE_URL too, when given): the prefix as
    FORCE_SCRIPT_NAME (None for none), the static files under it, and the session, CSRF and language
    cookies sent only to addresses under it, so another application on the same host does not receive
    this one's login. Without a prefix, Django's own names and paths."""
    prefix = url_prefix(raw)
    # Under a prefix the session and CSRF cookies have names of their own (sessionid_triage): an
    # application at the host's root sends its `sessionid` and `csrftoken`, path /, to /triage/ too,
    # after ours, and Django reads the last of a name: the login did not hold, and no form posted.
    own = prefix.replace("/", "_")
    found = {
        "SESSION_COOKIE_NAME": f"sessionid{own}",
        "CSRF_COOKIE_NAME": f"csrftoken{own}",
        "URL_PREFIX": prefix,
        "FORCE_SCRIPT_NAME": prefix or None,
        # Absolute, not relative to the script prefix: the web process reads STATIC_URL once, at start-up,
        # before any request has set the prefix (a relative "static/" was read then as /static/).
        "STATIC_URL": f"{prefix}/static/",
        "SESSION_COOKIE_PATH": f"{prefix}/",
        "CSRF_COOKIE_PATH": f"{prefix}/",
        "LANGUAGE_COOKIE_PATH": f"{prefix}/",
    }
    if public_base_url is not None:
        found["PUBLIC_BASE_URL"] = base_without_prefix(public_base_url, prefix)
    return found


def public_url(path: str) -> str:
    """The address a mail links to: PUBLIC_BASE_URL, URL_PREFIX, then `path`, an address reverse() gave.

    reverse() puts the script prefix of the thread it runs on in front, and Django sets that per thread:
    per request in the web processes, by django.setup() on the main thread of a worker or command. On any
    other thread it is "/" — each task's thread in a threads pool (`celery worker --pool threads`) — and a
    mail built there linked outside the prefix. So the thread's prefix is taken off and URL_PREFIX put in
    its place: the same link whichever thread builds it."""
    from django.conf import settings
    from django.urls import get_script_prefix

    within = path.removeprefix(get_script_prefix()).lstrip("/")
    return f"{settings.PUBLIC_BASE_URL}{settings.URL_PREFIX}/{within}"
