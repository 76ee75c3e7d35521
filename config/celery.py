"""The Celery app. Tasks live in each app's tasks.py and are found by autodiscovery."""

import os

from celery import Celery

from config.startup import settings_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Before Celery or Django reads them: a bad setting stops manage.py, gunicorn and celery alike with
# its message alone, not a traceback (config/startup.py).
settings_or_exit(os.environ["DJANGO_SETTINGS_MODULE"])

# DjangoTask gives every task .delay_on_commit(): enqueue only once the surrounding
# transaction has committed, so a worker never looks for a row that is not there yet.
app = Celery("fleet_triage", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
