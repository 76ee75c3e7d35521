"""Whether a request is for the JSON API, or wants JSON: one test for the middleware, error handlers
and views that answer the API in JSON and pages in HTML or with a redirect; and an address of the
site read back into the path its URLconf resolves.

It reads `request.path_info`, the address within the site. Served under a prefix (URL_PREFIX, a
proxy's SCRIPT_NAME) `request.path` starts with that prefix (/triage/api/v1/...), and a test on it
took an API request for a page. No imports of the apps: the middleware loads it.
"""

from __future__ import annotations

from django.urls import get_script_prefix

API_PATH = "/api/"


def under_api(request) -> bool:
    """Whether the request is for an address under /api/, whatever prefix the site is served under."""
    return request.path_info.startswith(API_PATH)


def wants_json(request) -> bool:
    """The API, or a page's script asking for JSON (Accept: application/json, as the upload page's
    XMLHttpRequest does): a refusal or an answer in JSON, not a page or a redirect."""
    return under_api(request) or "application/json" in request.headers.get("Accept", "")


def within_site(path: str) -> str | None:
    """An address this site handed out (a Referer's path, /triage/jobs/5/ under the prefix /triage) as
    the path the URLconf resolves (/jobs/5/); None for one outside the prefix."""
    prefix = get_script_prefix()
    return "/" + path.removeprefix(prefix) if path.startswith(prefix) else None
