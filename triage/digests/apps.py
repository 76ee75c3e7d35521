from django.apps import AppConfig


class DigestsConfig(AppConfig):
    name = "triage.digests"
    label = "digests"
    verbose_name = "Weekly digests"
