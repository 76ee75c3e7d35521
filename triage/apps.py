from django.apps import AppConfig


class TriageConfig(AppConfig):
    name = "triage"
    verbose_name = "Triage"

    def ready(self):
        from triage import receivers  # noqa: F401  (connects signal receivers)
