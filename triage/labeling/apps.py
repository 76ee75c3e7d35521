from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "triage.labeling"
    label = "labeling"
    verbose_name = "Labeling studies"
