"""Checks every request passes before any view reads it."""

from __future__ import annotations

from django.http import HttpResponseBadRequest, JsonResponse

NUL_MESSAGE = "contains a NUL character (%00), which no field of this site accepts."


class RefuseNulInQueryMiddleware:
    """A query string with a NUL character is a 400 before any view runs, naming the parameters.

    No text a person types holds one, and PostgreSQL can neither store nor compare text that does:
    a filter given one (`?cluster=%00`) failed its query, a server error. Forms already refuse NUL
    in their own fields (Django's ProhibitNullCharactersValidator); this covers the query
    parameters that views and filters read directly, on every page and the API alike. The API's
    answer has the shape of its other 400s: each parameter in error with its messages.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        refused = [
            key.replace("\x00", "%00")
            for key, values in request.GET.lists()
            if "\x00" in key or any("\x00" in value for value in values)
        ]
        if not refused:
            return self.get_response(request)
        if request.path_info.startswith("/api/"):
            return JsonResponse({key: [f"This parameter {NUL_MESSAGE}"] for key in refused}, status=400)
        message = f"The query parameter {', '.join(refused)} {NUL_MESSAGE}"
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
