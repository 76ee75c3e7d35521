"""The JSON API under /api/v1/: one router that each app registers its viewsets on.

Apps add their routes in their own `api.py` (imported below), so this file only wires them.
"""

from importlib import import_module

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import JsonResponse
from django.urls import include, path, re_path
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework import exceptions
from rest_framework.reverse import reverse
from rest_framework.routers import DefaultRouter
from rest_framework.views import exception_handler as drf_exception_handler

from config.api_paths import under_api
from fleet.models import MachineToken
from fleet.quoting import quoted


class APIRoot(DefaultRouter.APIRootView):
    """The API's entry points, and where its OpenAPI schema is."""

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response.data["schema"] = reverse("api-schema", request=request, format=kwargs.get("format"))
        return response


class Router(DefaultRouter):
    """DRF's router, each address also answering without its trailing slash: a script that leaves
    it off must reach the same view, as APPEND_SLASH cannot redirect a POST (and a 301 to follow is
    no answer for a GET either). The slashless twin comes first under the same name, so `reverse`
    (the last pattern of a name) still gives the documented address, with the slash; the schema
    leaves the twins out (`config.api_schema.without_slashless_twins`)."""

    def get_urls(self):
        urls = super().get_urls()
        twins = [
            re_path(pattern.pattern.regex.pattern.removesuffix("/$") + "$", pattern.callback, name=pattern.name)
            for pattern in urls
            if pattern.pattern.regex.pattern.endswith("/$") and pattern.pattern.regex.pattern != "^/$"
        ]
        return twins + urls


router = Router()
router.APIRootView = APIRoot

# Each app's api module registers its viewsets on `router` when imported.
API_MODULES = ["fleet.api", "triage.api"]

for module in API_MODULES:
    import_module(module)

schema_view = SpectacularAPIView.as_view()


def not_found() -> JsonResponse:
    """The API's 404 for an address it does not have, the same body as its own 404s."""
    return JsonResponse({"detail": "Not found."}, status=404)


@csrf_exempt  # it changes nothing; a POST to a wrong address gets the 404, not an HTML CSRF refusal
def api_not_found(request, *args, **kwargs):
    """Any other address under /api/, whatever the method: the API's JSON 404 (with DEBUG on,
    Django would answer its HTML page, and APPEND_SLASH a redirect)."""
    return not_found()


urlpatterns = [
    re_path(r"^schema$", schema_view, name="api-schema"),  # as the router's twins
    path("schema/", schema_view, name="api-schema"),
    # GET only: its OPTIONS (DRF's metadata, rendered by a template renderer without a template) was a 500.
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", http_method_names=["get", "head"]),
        name="api-docs",
    ),
    path("", include(router.urls)),
    re_path(r"^", api_not_found, name="api-not-found"),  # last: any other address under /api/v1/
]


# The site's error handlers (config.urls): under /api/ a JSON body like the API's own refusals, for a
# client that parses every answer; elsewhere Django's page. They answer what Django refuses before the
# API's views run (a Host it does not serve, too many fields or files, a form field over the memory
# cap), an address under /api/ no view has, and a failure in a view (a 403 is always the API's own: its
# views are exempt from Django's CSRF check and check it themselves). With DEBUG on, Django shows its
# debugging page instead of the 400 and 500 handlers, to the developer.


def page_not_found(request, exception):
    """`handler404`."""
    if under_api(request):
        return not_found()
    return defaults.page_not_found(request, exception)


def bad_request(request, exception):
    """`handler400`: a SuspiciousOperation Django raised while reading the request, said in words
    (Django's page says only "Bad Request (400)"); a body field over the memory cap is a 413."""
    if not under_api(request):
        return defaults.bad_request(request, exception)
    status = 400
    if isinstance(exception, DisallowedHost):
        detail = (
            f"This site does not answer to the host {quoted(request.META.get('HTTP_HOST', ''))} "
            "(the request's Host header): use the address an operator gave you."
        )
    elif isinstance(exception, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        detail = f"The request sends more than {limit:,} fields (query parameters and form fields)."
    elif isinstance(exception, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        detail = f"The request sends more than {limit:,} file{'' if limit == 1 else 's'}; push one archive a request."
    elif isinstance(exception, RequestDataTooBig):
        status = 413
        detail = (
            f"The request's fields (besides the archive) are larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} "
            "bytes; send the archive alone."
        )
    else:
        detail = "The request could not be read (a malformed request)."
    return JsonResponse({"detail": detail}, status=status)


def server_error(request):
    """`handler500`: what failed is in the server's log, not in the answer."""
    if under_api(request):
        detail = "Server error: the request failed here, not because of what was sent."
        return JsonResponse({"detail": detail}, status=500)
    return defaults.server_error(request)


NO_CREDENTIALS = (
    "Log in, or send a machine token as 'Authorization: Api-Key <token>' "
    "or your personal token as 'Authorization: Bearer <token>'."
)
OTHER_SCHEME = (
    "This API takes a machine token as 'Authorization: Api-Key <token>', a personal token as "
    "'Authorization: Bearer <token>' (or a login session); the Authorization header sent uses another scheme."
)
ONLY_FOR_PEOPLE = (
    "A machine token may not do this: it does only what its boxes on the tokens page allow (push archives, "
    "read /metrics, the teams' report, the jobs); "
    "the rest needs a person's login."
)


def exception_handler(exc, context):
    """DRF's, with refusals a script's author can act on: a request with no credentials is told
    which to send (DRF says only that none were provided), and a machine token refused where only people
    are let in is told so (DRF's "You do not have permission"); a 415's media type and a 405's method
    are quoted by their opening (`fleet.quoting.quoted`)."""
    request = context["request"]
    if isinstance(exc, exceptions.NotAuthenticated):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        exc.detail = exceptions.ErrorDetail(OTHER_SCHEME if header else NO_CREDENTIALS, exc.default_code)
    elif (
        isinstance(exc, exceptions.PermissionDenied)
        and isinstance(request.auth, MachineToken)  # a personal token is its owner: their session's refusal
        and str(exc.detail) == str(exceptions.PermissionDenied.default_detail)
    ):
        exc.detail = exceptions.ErrorDetail(ONLY_FOR_PEOPLE, exc.default_code)
    elif isinstance(exc, exceptions.UnsupportedMediaType):
        # DRF's repeat the Content-Type header and the method whole: quoted as the API quotes a value.
        detail = f"Unsupported media type {quoted(request.content_type)} in request."
        exc.detail = exceptions.ErrorDetail(detail, exc.default_code)
    elif isinstance(exc, exceptions.MethodNotAllowed):
        exc.detail = exceptions.ErrorDetail(f"Method {quoted(request.method)} not allowed.", exc.default_code)
    return drf_exception_handler(exc, context)
