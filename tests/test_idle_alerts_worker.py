"""The idle-alert check on a real `celery worker` over Redis, mailing a real SMTP server on loopback
that refuses the first attempt and posting to the team's chat webhook on loopback that answers 500
first: each send task's retry, with its backoff, delivers the alert once, and checking the same job
again on the worker sends nothing."""

from __future__ import annotations

import uuid

import pytest
from aiosmtpd.controller import Controller

from tests.conftest import free_port as _free_port
from tests.conftest import require_service
from tests.connector_servers import FakePlatform
from tests.test_digests import BASE_URL, Inbox
from tests.test_idle_alerts import archive, busy_then_idle, run_command
from tests.test_services import celery_worker
from tests.waiting import wait_for
from triage.digests.models import AlertSettings, Delivery, DigestKind, TeamWebhook

HOOK_PATH = "/services/T1/B1/worker-test-token"

pytestmark = pytest.mark.services


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_checks_a_pulled_job_and_alerts_once(tmp_path, storage_dir, member_a):
    require_service("REDIS_URL")
    from config.celery import app
    from fleet.models import Job
    from triage.digests.tasks import check_idle_alerts_task

    # Stored (and triaged) here with alerts off, so that the worker is the one to check it.
    AlertSettings.objects.update_or_create(pk=1, defaults={"enabled": False})
    path = archive(tmp_path, "a.zip", [{"id": "9", "state": "RUNNING", "minutes": 120, "util": busy_then_idle}])
    assert run_command(path)[0] == 0
    job = Job.objects.get(external_id="9")
    AlertSettings.objects.filter(pk=1).update(enabled=True)

    inbox = Inbox(fail_first=1)
    controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    hook = FakePlatform()
    hook.route(HOOK_PATH, lambda path, query: (200, b"ok", {}))
    hook.fault(HOOK_PATH, "500")
    hook.__enter__()
    webhook = TeamWebhook(team=job.team)
    webhook.set_url(hook.url + HOOK_PATH)  # encrypted with the key the worker derives from the same SECRET_KEY
    webhook.save()
    app.conf.task_always_eager = False
    queue = f"test-alerts-{uuid.uuid4().hex[:8]}"
    env = {
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(controller.port),
        "EMAIL_TIMEOUT": "10",
        "PUBLIC_BASE_URL": BASE_URL,
        "DIGEST_RETRY_BACKOFF": "1",
        "IDLE_ALERT_MAX_AGE_MINUTES": "0",  # the job ran on 2026-11-20 (tests.test_idle_alerts.any_sample_age)
        "ALERT_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",  # the chat server is on loopback, refused by default
    }
    try:
        with celery_worker(queue, storage_dir, env=env) as worker:
            first = check_idle_alerts_task.apply_async(args=[[job.pk]], queue=queue)
            assert first.get(timeout=60) == {"jobs": 1, "alerting": 1, "deliveries": 1, "webhook_deliveries": 1}

            def retried():
                return {"mails delivered": len(inbox.envelopes), "webhook posts answered": hook.count(HOOK_PATH, "")}

            retries_done = {"mails delivered": 1, "webhook posts answered": 1}
            wait_for(
                "the mail's and the webhook's retries", retried, 60, until=lambda now: now == retries_done, every=0.2
            )
            again = check_idle_alerts_task.apply_async(args=[[job.pk]], queue=queue)
            expected = {"jobs": 1, "alerting": 1, "deliveries": 0, "webhook_deliveries": 0}
            assert again.get(timeout=60) == expected
            assert worker.poll() is None
    finally:
        controller.stop()
        hook.__exit__()
    assert hook.count(HOOK_PATH, "500") == 1 and hook.count(HOOK_PATH, "") == 1
    post = Delivery.objects.get(kind=DigestKind.IDLE_ALERT_WEBHOOK)
    assert (post.status, post.attempts, post.response_status) == (Delivery.Status.SENT, 2, 200)
    assert inbox.attempts == 2 and len(inbox.to(member_a.email)) == 1
    assert "Idle now: train-9 on c1" in inbox.to(member_a.email)[0]["Subject"]
    delivery = Delivery.objects.get(kind=DigestKind.IDLE_ALERT)
    assert delivery.status == Delivery.Status.SENT and delivery.attempts == 2
