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
    # What the schema says of this 503, so a client generated from it keeps `detail` and reads the wait:
    # it described the run only, without `detail` or `Retry-After`.
    schema = APIClient().get("/api/v1/schema/", {"format": "json"}).json()
    documented = schema["paths"]["/api/v1/archives/"]["post"]["responses"]["503"]
    name = documented["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
    component = schema["components"]["schemas"][name]
    assert set(body) == set(component["properties"]) and "detail" in component["required"]
    assert documented["headers"]["Retry-After"]["schema"] == {"type": "integer"}


def test_the_command_s_async_import_says_it_was_not_queued(queue_down):
    with pytest.raises(CommandError, match="could not be reached, so the archive was not imported"):
        call_command("ingest_archive", str(EXAMPLE_ARCHIVE), "--async")
    assert IngestRun.objects.get().status == IngestRun.Status.FAILED


# Every other button that queues work, with the queue unreachable: each said 'Server Error (500)'.
SAYS_QUEUE = "The task queue (Redis at 127.0.0.1:1, REDIS_URL) could not be reached"


def messages_on(response) -> str:
    assert response.status_code == 200
    page = response.content.decode()
    assert "sekrit" not in page  # the URL's password is never shown
    return page


def test_pull_now_says_the_pull_was_not_queued(operator, queue_down):
    from fleet.connectors.models import Connector
    from fleet.models import AuditEvent

    connector = Connector.objects.create(name="slurm-prod", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    client = Client()
    client.force_login(operator)
    page = messages_on(client.post(f"/connectors/{connector.pk}/sync/", follow=True))
    assert f"{SAYS_QUEUE}, so no pull of slurm-prod was queued: check that Redis is running, then try again." in page
    assert not AuditEvent.objects.filter(action="connector.sync").exists()


def test_saving_rules_keeps_the_version_and_says_its_re_triage_was_not_queued(operator, queue_down):
    from triage.models import RetriageRun, RuleSet

    first = RuleSet.current()
    RuleSet.objects.create(version=2, thresholds=first.effective_thresholds() | {"min_samples": 7})
    client = Client()
    client.force_login(operator)
    page = messages_on(client.post("/triage/rules/v1/restore/", follow=True))
    said = (
        "the task queue (Redis at 127.0.0.1:1, REDIS_URL) could not be reached, so the re-triage of every job with "
        "it was not queued (the jobs keep their findings): check that Redis is running, then re-triage them with "
        "manage.py triage --all."
    )
    assert f"Saved rule set v3, but {said}" in page
    run = RetriageRun.objects.get()
    assert run.rule_set.version == 3 and run.status == RetriageRun.Status.FAILED
    assert RuleSet.current().version == 3  # saved; only its re-triage waits


def test_a_digest_s_retry_says_it_was_not_sent_again(operator, team_a, queue_down):
    from fleet.models import AuditEvent
    from triage.digests.models import Delivery, DigestKind

    delivery = Delivery.objects.create(
        recipient="a@example.org", kind=DigestKind.TEAM, team=team_a, iso_week="2026-W47",
        status=Delivery.Status.FAILED, last_error="451 try later",
    )  # fmt: skip
    client = Client()
    client.force_login(operator)
    page = messages_on(client.post(f"/digests/deliveries/{delivery.pk}/retry/", follow=True))
    assert f"{SAYS_QUEUE}, so the team digest for 2026-W47 was not sent again: check that Redis is running" in page
    assert Delivery.objects.get(pk=delivery.pk).status == Delivery.Status.FAILED
    assert not AuditEvent.objects.filter(action="digest.retry").exists()


def test_triage_from_a_page_and_digests_from_the_command_say_so(queue_down):
    from fleet.tasking import QueueUnreachable
    from tests.factories import JobFactory
    from triage.labeling.services import triage_missing
    from triage.models import RuleSet

    with pytest.raises(QueueUnreachable, match="could not be reached, so no triage was queued"):
        triage_missing([JobFactory().pk], RuleSet.current())
    with pytest.raises(CommandError, match="could not be reached, so 1 digest\\(s\\) for 2026-W47 were not queued"):
        call_command("send_digests", "--week", "2026-W47", "--operators", "--async")


def test_a_password_reset_looks_the_same_with_the_queue_down(member_a, queue_down):
    response = Client().post("/password/reset/", {"email": member_a.email})
    assert response.status_code == 302 and response["Location"] == "/password/reset/sent/"
