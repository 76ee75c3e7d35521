"""The JSON API under /api/v1/: one router that each app registers its viewsets on.

Apps add their routes in their own `api.py` (imported below), so this file only wires them.
"""

from importlib import import_module

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.reverse import reverse
from rest_framework.routers import DefaultRouter


class APIRoot(DefaultRouter.APIRootView):
    """The API's entry points, and where its OpenAPI schema is."""

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response.data["schema"] = reverse("api-schema", request=request, format=kwargs.get("format"))
        return response


router = DefaultRouter()
router.APIRootView = APIRoot

# Each app's api module registers its viewsets on `router` when imported.
API_MODULES = ["fleet.api", "triage.api"]

for module in API_MODULES:
    import_module(module)

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("", include(router.urls)),
]
