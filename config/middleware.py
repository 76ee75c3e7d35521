"""Checks every request passes before any view reads it."""

from __future__ import annotations

from django.http import HttpResponseBadRequest, JsonResponse

NUL_MESSAGE = "The query string contains a NUL character (%00), which no field of this site accepts."


class RefuseNulInQueryMiddleware:
    """A query string with a NUL character is a 400 before any view runs.

    No text a person types holds one, and PostgreSQL can neither store nor compare text that does:
    a filter given one (`?cluster=%00`) failed its query, a server error. Forms already refuse NUL
    in their own fields (Django's ProhibitNullCharactersValidator); this covers the query
    parameters that views and filters read directly, on every page and the API alike.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()):
            if request.path_info.startswith("/api/"):
                return JsonResponse({"detail": NUL_MESSAGE}, status=400)
            return HttpResponseBadRequest(NUL_MESSAGE, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
