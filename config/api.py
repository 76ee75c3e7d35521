"""The JSON API under /api/v1/: one router that each app registers its viewsets on.

Apps add their routes in their own `api.py` (imported below), so this file only wires them.
"""

from importlib import import_module

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import DefaultRouter

router = DefaultRouter()

# Each app's api module registers its viewsets on `router` when imported.
API_MODULES = ["fleet.api", "triage.api"]

for module in API_MODULES:
    import_module(module)

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("", include(router.urls)),
]
