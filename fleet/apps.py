from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "fleet"
    verbose_name = "Fleet data"

    def ready(self):
        from fleet import lifecycle, receivers  # noqa: F401  (connects signal receivers)
