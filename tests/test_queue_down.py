"""An archive sent while the task queue (Redis) cannot be reached: the run fails at once, saying so.

Before, the upload page answered a bare "Server Error (500)" after about 20 s (queuing the task
first subscribed to its result in Redis, retried that, then raised a RuntimeError), the API answered
the same HTML page where every other answer is JSON, and `ingest_archive --async` a traceback; each
left a run *pending* for ever with its archive kept in UPLOAD_DIR. Here the broker is a real Redis
URL on which nothing listens (the `queue_down` fixture, in conftest.py), so Celery and kombu fail as they do
with Redis down.
"""

from __future__ import annotations

import time

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from fleet.models import IngestRun, MachineToken
from tests.conftest import EXAMPLE_ARCHIVE

# Real commits: a run is queued once the transaction that created it commits, as in production.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("upload_dirs")]

SAYS = "The task queue (Redis at 127.0.0.1:1, REDIS_URL) could not be reached, so the archive was not imported"


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


def test_the_upload_page_shows_the_run_failed_and_why(operator, upload_dirs, queue_down):
    client = Client()
    client.force_login(operator)
    began = time.monotonic()
    with open(EXAMPLE_ARCHIVE, "rb") as handle:
        response = client.post("/ingest-runs/upload/", {"file": handle})
    assert time.monotonic() - began < 10  # kombu's publish retries, not the result store's 20 s
    run = IngestRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/ingest-runs/{run.pk}/"
    assert run.status == IngestRun.Status.FAILED and run.finished_at is not None
    assert run.errors[0]["message"].startswith(SAYS)
    page = client.get(response["Location"]).content.decode()
    assert "could not be reached, so the archive was not imported" in page and "sekrit" not in page
    assert leftovers(upload_dirs) == []  # the archive is not kept for a run that will never run


def test_a_push_is_a_503_in_json_naming_the_queue(operator, queue_down):
    _, key = MachineToken.objects.create_key(name="exporter-01", created_by=operator)
    with open(EXAMPLE_ARCHIVE, "rb") as handle:
        response = APIClient().post(
            "/api/v1/archives/", {"file": handle}, format="multipart", HTTP_AUTHORIZATION=f"Api-Key {key}"
        )
    assert response.status_code == 503 and response["Content-Type"] == "application/json"
    assert response["Retry-After"] == "60"
    body = response.json()
    assert body["status"] == "failed" and body["finished"] is True
    assert body["detail"].startswith(SAYS) and body["errors"][0]["message"] == body["detail"]


def test_the_command_s_async_import_says_it_was_not_queued(queue_down):
    with pytest.raises(CommandError, match="could not be reached, so the archive was not imported"):
        call_command("ingest_archive", str(EXAMPLE_ARCHIVE), "--async")
    assert IngestRun.objects.get().status == IngestRun.Status.FAILED
