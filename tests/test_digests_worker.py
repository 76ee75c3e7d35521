"""The digest task on a real `celery worker` over Redis, mailing a real SMTP server on loopback that
refuses the first attempt: the worker's own retry, with its backoff countdown, delivers exactly once."""

from __future__ import annotations

import time
import uuid

import pytest
from aiosmtpd.controller import Controller

from tests.conftest import free_port as _free_port
from tests.conftest import require_service
from tests.test_digests import BASE_URL, WEEK, Inbox, fleet  # noqa: F401 (fixture)
from tests.test_services import celery_worker
from tests.waiting import wait_for
from triage.digests.models import Delivery, DigestKind

pytestmark = pytest.mark.services


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_retries_a_refused_digest_with_backoff_and_delivers_once(storage_dir, fleet, member_a):  # noqa: F811
    require_service("REDIS_URL")
    from config.celery import app
    from triage.digests.tasks import send_digest_task

    inbox = Inbox(fail_first=1)
    controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    app.conf.task_always_eager = False
    queue = f"test-digests-{uuid.uuid4().hex[:8]}"
    storage_dir.mkdir(parents=True, exist_ok=True)
    env = {
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(controller.port),
        "EMAIL_TIMEOUT": "10",
        "PUBLIC_BASE_URL": BASE_URL,
        "DIGEST_RETRY_BACKOFF": "1",
    }
    team_id = member_a.team_memberships.get().team_id
    try:
        with celery_worker(queue, storage_dir, env=env) as worker:
            started = time.monotonic()
            send_digest_task.apply_async(args=[DigestKind.TEAM, WEEK, team_id], queue=queue)

            # The first attempt is refused (451); the retry comes back after the backoff countdown.
            def sent():
                return {"attempts": inbox.attempts, "delivered": len(inbox.envelopes)}

            wait_for("the retry to deliver", sent, 60, until=lambda now: now["delivered"], every=0.2)
            assert time.monotonic() - started >= 1  # it waited for the backoff
            # Sending the same week again, on the worker, delivers nothing new.
            again = send_digest_task.apply_async(args=[DigestKind.TEAM, WEEK, team_id], queue=queue)
            assert again.get(timeout=60)["skipped"] == 1
            assert worker.poll() is None
    finally:
        controller.stop()
    assert inbox.attempts == 2 and len(inbox.to(member_a.email)) == 1
    delivery = Delivery.objects.get(recipient=member_a.email, iso_week=WEEK)
    assert delivery.status == Delivery.Status.SENT and delivery.attempts == 2
