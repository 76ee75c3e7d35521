"""Celery tasks of the digests: thin wrappers that take ids and call `triage.digests.services`."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from fleet.tasking import IdempotentTask

from . import alerts, services, webhooks


class DigestTask(IdempotentTask):
    def give_up(self, reason: str, kind: str, week: str, team_id: int | None = None, *args, **kwargs) -> None:
        services.fail_group(kind, week, team_id, f"gave up: {reason}")


# Run by Celery beat weekly (DIGEST_WEEKDAY, DIGEST_HOUR in DIGEST_TIMEZONE); fans out one task per
# recipient group (a team's members, the operators). Safe to run twice: deliveries are claimed.
@shared_task(name="digests.send_weekly")
def send_weekly_task(week: str | None = None) -> dict:
    week = week or services.default_week()
    groups = services.recipient_groups(week)
    for kind, team_id in groups:
        send_digest_task.delay(kind, week, team_id)
    return {"week": week, "groups": len(groups)}


# Idempotent: every delivery is claimed with a conditional UPDATE before sending and stamped after,
# so a redelivered or retried task sends only what has not gone out yet.
@shared_task(name="digests.send_digest", base=DigestTask, bind=True)
def send_digest_task(self, kind: str, week: str, team_id: int | None = None, to: str | None = None) -> dict | None:
    retries = self.request.retries or 0
    final = retries >= settings.DIGEST_MAX_RETRIES
    result = services.send_group(kind, week, team_id, to=to, final_attempt=final)
    if result is None:  # the team was deleted before the worker reached it
        return None
    if result.retry:
        raise self.retry(countdown=services.retry_countdown(retries), max_retries=settings.DIGEST_MAX_RETRIES)
    return result.as_dict()


class IdleAlertTask(IdempotentTask):
    def give_up(self, reason: str, delivery_ids=None, *args, **kwargs) -> None:
        alerts.fail_deliveries(list(delivery_ids or []), f"gave up: {reason}")


# Queued after an import or a pull (`triage.receivers`). Idempotent: a delivery is unique per address,
# job and idle stretch, so checking the same jobs again creates nothing and sends nothing new.
@shared_task(name="digests.check_idle_alerts", base=IdempotentTask, bind=True)
def check_idle_alerts_task(self, job_ids: list[int]) -> dict:
    result = alerts.check_jobs(job_ids)
    # Sent on the queue the check came from (a worker that checks alerts also sends them).
    queue = (self.request.delivery_info or {}).get("routing_key") or None
    if result.deliveries:
        send_idle_alerts_task.apply_async((result.deliveries,), queue=queue)
    for delivery_id in result.webhook_deliveries:  # one task per post: one slow chat service holds up no other
        send_idle_alert_webhook_task.apply_async((delivery_id,), queue=queue)
    return result.as_dict()


# Idempotent: each delivery is claimed before its message goes out and stamped after; SMTP trouble is
# retried with the digests' backoff (DIGEST_MAX_RETRIES, DIGEST_RETRY_BACKOFF).
@shared_task(name="digests.send_idle_alerts", base=IdleAlertTask, bind=True)
def send_idle_alerts_task(self, delivery_ids: list[int]) -> dict:
    retries = self.request.retries or 0
    final = retries >= settings.DIGEST_MAX_RETRIES
    result = alerts.send_deliveries(delivery_ids, final_attempt=final)
    if result.retry:
        raise self.retry(countdown=services.retry_countdown(retries), max_retries=settings.DIGEST_MAX_RETRIES)
    return result.as_dict()


class IdleAlertWebhookTask(IdempotentTask):
    def give_up(self, reason: str, delivery_id=None, *args, **kwargs) -> None:
        alerts.fail_deliveries([delivery_id] if delivery_id else [], f"gave up: {reason}")


# Idempotent: the delivery is claimed before the POST and stamped after (a worker that dies between
# leaves it "sending", not posted twice). No answer, HTTP 429 or 5xx are retried with the digests'
# backoff (DIGEST_MAX_RETRIES, DIGEST_RETRY_BACKOFF), longer when the service's Retry-After says so.
@shared_task(name="digests.send_idle_alert_webhook", base=IdleAlertWebhookTask, bind=True)
def send_idle_alert_webhook_task(self, delivery_id: int) -> dict:
    retries = self.request.retries or 0
    final = retries >= settings.DIGEST_MAX_RETRIES
    result = webhooks.send_delivery(delivery_id, final_attempt=final)
    if result.retry:
        countdown = services.retry_countdown(retries)
        if result.retry_after:
            countdown = max(countdown, min(result.retry_after, settings.DIGEST_RETRY_BACKOFF_MAX))
        raise self.retry(countdown=countdown, max_retries=settings.DIGEST_MAX_RETRIES)
    return result.as_dict()
