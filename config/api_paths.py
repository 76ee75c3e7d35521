"""Whether a request is for the JSON API: one test for the middleware, error handlers and views that
answer the API in JSON and pages in HTML or with a redirect.

It reads `request.path_info`, the address within the site. Served under a prefix (a proxy's
SCRIPT_NAME, or FORCE_SCRIPT_NAME) `request.path` starts with that prefix (/triage/api/v1/...), and
a test on it took an API request for a page. No imports of the apps: the middleware loads it.
"""

from __future__ import annotations

API_PATH = "/api/"


def under_api(request) -> bool:
    """Whether the request is for an address under /api/, whatever prefix the site is served under."""
    return request.path_info.startswith(API_PATH)
