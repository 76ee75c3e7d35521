"""Which HTTP methods a page answers.

Django's class-based views answer only the methods they have handlers for (405, with an Allow
header, for the rest) and OPTIONS with that Allow header. A function view runs for any method:
without a decorator a PUT, PATCH or DELETE to a page (with the session's CSRF token) was answered
as a GET, 200 and the page, as if the page took them. `allow_methods` gives function views the class-based
views' behaviour with Django's own `require_http_methods`: GET brings HEAD, OPTIONS is answered with
the Allow header without running the view, anything else is a 405 naming what is allowed.
Put it under the access decorator, as `require_POST` is, so that who may not see a page is still
sent to the login page or told 404.
"""

from __future__ import annotations

from functools import wraps

from django.http import HttpResponse
from django.views.decorators.http import require_http_methods


def allow_methods(*methods: str):
    allowed = [*methods, *(["HEAD"] if "GET" in methods else []), "OPTIONS"]

    def decorator(view):
        guarded = require_http_methods(allowed)(view)

        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method == "OPTIONS":
                response = HttpResponse()
                response.headers["Allow"] = ", ".join(allowed)
                response.headers["Content-Length"] = "0"
                return response
            return guarded(request, *args, **kwargs)

        return wrapper

    return decorator


# A page that only shows (GET, HEAD, OPTIONS), and a page with a form (and POST).
read_only = allow_methods("GET")
with_form = allow_methods("GET", "POST")
