"""Idle alerts: one email, as it happens, about a running job whose GPUs have all been idle a while.

The weekly digest tells a team a week later; a job burning 8 idle GPUs now needs telling now. After
each import or pull (`jobs_ingested`, answered in `triage.receivers`) `check_jobs` looks at the jobs
that are still running: one whose every GPU has been below the idle threshold (IDLE_UTIL_THRESHOLD,
the one a job's idle GPU-hours are counted by) for at least `AlertSettings.idle_minutes` at the end
of its series, its last sample at most IDLE_ALERT_MAX_AGE_MINUTES old by the wall clock, gets one
alert to its team digest's recipients (`services.team_recipients`) who did not turn alerts off
(`Subscription.alerts`).

The idle stretch is read off the stored series as triage reads it (`triage.evidence.timeline`): a
hole in the samples ends a stretch (missing data is never idle time), and a job without samples
never alerts. Its first idle sample is the stretch's start: a `Delivery` per address, job and start
is the idempotency record (claimed, then stamped, as a digest's), so pulling the job again sends
nothing new, and a job that worked and idled again has a new start and alerts again. What the
alert said is kept in the delivery (`details`), so a retried one says the same.

A team may also have a chat webhook (`TeamWebhook`, set by operators): the same alert is posted
there once per stretch too, a delivery of its own (`triage.digests.webhooks`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.urls import reverse
from django.utils import timezone

from fleet.models import Job, price_for
from fleet.money import cents, cost_of
from triage.evidence.timeline import build_timeline

from . import services, weeks
from .models import AlertSettings, Delivery, DigestKind, Subscription, TeamWebhook

logger = logging.getLogger(__name__)

TEMPLATE_NAME = "idle-alert"


@dataclass(frozen=True)
class IdleStretch:
    since: datetime  # the first sample of the stretch
    until: datetime  # the end of the series
    seconds: float

    @property
    def minutes(self) -> int:
        return int(self.seconds // 60)


def idle_at_end(job: Job, threshold: float) -> IdleStretch | None:
    """The stretch at the end of the job's series in which every GPU was below `threshold` %, or None
    when its last sample is busy, or it has no GPU samples. A hole ends the stretch: it starts after it."""
    if not job.series_file or not job.sample_count:
        return None
    from triage.services import load_series

    try:
        series = load_series(job)
    except OSError:
        logger.warning("The series of job %s is missing from storage; no idle alert", job)
        return None
    tl = build_timeline(series, start_s=job.start_time.timestamp(), end_s=job.end_time.timestamp())
    if tl is None or not tl.n:
        return None
    idle = np.nanmax(tl.util, axis=1) < threshold
    if not idle[-1]:
        return None
    # The last sample that breaks the stretch: a busy one, or one followed by a hole.
    breaks = ~idle
    breaks[:-1] |= tl.hole_after[:-1]
    broken = np.flatnonzero(breaks)
    first = int(broken[-1]) + 1 if broken.size else 0
    since, until = float(tl.t[first]), tl.end
    return IdleStretch(
        since=datetime.fromtimestamp(since, tz=UTC),
        until=datetime.fromtimestamp(until, tz=UTC),
        seconds=max(0.0, until - since),
    )


def alert_recipients(job: Job) -> list:
    """The team digest's recipients, less those who turned this team's alerts off."""
    opted_out = set(
        Subscription.objects.filter(kind=DigestKind.TEAM, team_id=job.team_id, alerts=False).values_list(
            "user_id", flat=True
        )
    )
    return [user for user in services.team_recipients(job.team) if user.pk not in opted_out]


def _cause(job: Job) -> dict | None:
    """The biggest cause of the job's current triage, when that triage has seen the job as it is now."""
    from triage.models import JobTriage

    result = JobTriage.objects.filter(job=job, is_current=True).first()
    if result is None or result.triaged_at < job.updated_at:
        return None
    finding = result.findings.order_by("-gpu_hours", "category").first()
    if finding is None:
        return None
    return {"category": finding.category, "label": finding.category_enum.label, "summary": finding.summary}


def gpu_figures(job: Job, idle_seconds: float) -> dict:
    """The job's GPUs as an alert gives them a script, for `idle_seconds` idle: `gpu_count` devices of `gpu_model`,
    each priced as `gpu_share` of a GPU (1.0: whole GPUs; a MIG slice less), and `idle_gpu_hours`, what
    `cost_so_far` prices (the GPUs, each at its share, times the idle hours; to 3 places). A new alert's
    (`facts`), and a kept alert's that lacks them while its job is there (`webhooks.with_figures`)."""
    share = job.gpu_share or 1.0
    return {
        "gpu_count": job.gpu_count,
        "gpu_model": job.gpu_model,
        "gpu_share": share,
        "idle_gpu_hours": round(job.gpu_count * share * idle_seconds / 3600, 3),
    }


def facts(job: Job, stretch: IdleStretch, threshold: float) -> dict:
    """What the alert says (kept in each delivery's `details`, posted as is to a generic JSON webhook):
    plain JSON. Each figure in words ("2,000.50", "2 GPUs (A100)", as the emails and Slack show it) has
    its value beside it for a script: an amount as a decimal string in major units of `currency` (an
    ISO 4217 code), as the API gives every amount ("2000.50"), hours and GPUs as JSON numbers."""
    price = price_for(job.cluster, job.gpu_model)
    figures = gpu_figures(job, stretch.seconds)
    gpus = job.gpu_count * figures["gpu_share"]
    per_hour = cost_of(gpus, price.price_per_gpu_hour) if price else None
    so_far = cost_of(gpus * stretch.seconds / 3600, price.price_per_gpu_hour) if price else None
    return {
        "job_id": job.pk,
        "external_id": job.external_id,
        "name": job.name,
        "cluster": job.cluster.name,
        "user": job.user,
        "team": str(job.team),
        "team_slug": job.team.slug,
        "gpus": job.gpus_text + (f" ({job.gpu_model})" if job.gpu_model else ""),
        "gpu_count": figures["gpu_count"],
        "gpu_model": figures["gpu_model"],
        "gpu_share": figures["gpu_share"],
        "idle_since": stretch.since.isoformat(),
        "last_sample": stretch.until.isoformat(),
        "idle_minutes": stretch.minutes,
        "idle_hours": round(stretch.seconds / 3600, 3),
        "idle_gpu_hours": figures["idle_gpu_hours"],
        "threshold": threshold,
        "cost_per_hour": None if per_hour is None else cents(per_hour),  # as the job page
        "cost_per_hour_decimal": None if per_hour is None else str(per_hour),
        "cost_so_far": None if so_far is None else cents(so_far),
        "cost_so_far_decimal": None if so_far is None else str(so_far),
        "currency": price.currency if price else "",
        "cause": _cause(job),
        "job_url": services.absolute(reverse("dashboard:job-detail", args=[job.pk])),
    }


@dataclass
class CheckResult:
    jobs: int = 0  # running jobs looked at
    alerting: list[int] = field(default_factory=list)  # jobs idle long enough
    deliveries: list[int] = field(default_factory=list)  # queued emails to send
    webhook_deliveries: list[int] = field(default_factory=list)  # queued chat webhook posts

    def as_dict(self) -> dict:
        return {
            "jobs": self.jobs,
            "alerting": len(self.alerting),
            "deliveries": len(self.deliveries),
            "webhook_deliveries": len(self.webhook_deliveries),
        }


def running(job_ids: list[int]):
    """The still-running jobs among `job_ids` (their state as stored, `Job.UNFINISHED_STATES`)."""
    jobs = Job.objects.filter(pk__in=job_ids, sample_count__gt=0).exclude(series_file="")
    return [job for job in jobs.select_related("cluster", "team").order_by("pk") if job.unfinished]


def check_jobs(job_ids: list[int]) -> CheckResult:
    """Find the running jobs idle long enough and queue one delivery per recipient and idle stretch, and
    one per team chat webhook and stretch; returns the deliveries still to send (new ones, and any of
    the same stretch left queued)."""
    result = CheckResult()
    config = AlertSettings.current()
    if not config.enabled:
        return result
    threshold = settings.IDLE_UTIL_THRESHOLD
    # A job whose last sample is older than this is not idle now (an archive of last week's jobs).
    max_age = settings.IDLE_ALERT_MAX_AGE_MINUTES
    oldest = timezone.now() - timedelta(minutes=max_age) if max_age else datetime.min.replace(tzinfo=UTC)
    jobs = running(job_ids)
    webhooks = {
        webhook.team_id: webhook
        for webhook in TeamWebhook.objects.filter(team_id__in={job.team_id for job in jobs}, enabled=True)
    }
    for job in jobs:
        result.jobs += 1
        stretch = idle_at_end(job, threshold)
        if stretch is None or stretch.seconds < config.idle_minutes * 60 or stretch.until < oldest:
            continue
        result.alerting.append(job.pk)
        recipients = alert_recipients(job)
        webhook = webhooks.get(job.team_id)
        if not recipients and webhook is None:
            continue
        details = facts(job, stretch, threshold)
        by_address: dict[str, object] = {}
        for user in recipients:
            by_address.setdefault(user.email.strip().lower(), user)
        common = {
            "team_id": job.team_id,
            "iso_week": weeks.week_of(stretch.since),
            "job": job,
            "idle_since": stretch.since,
            "details": details,
        }
        rows = [
            Delivery(recipient=address, user=user, kind=DigestKind.IDLE_ALERT, **common)
            for address, user in by_address.items()
        ]
        if webhook is not None:
            rows.append(Delivery(webhook=webhook, kind=DigestKind.IDLE_ALERT_WEBHOOK, **common))
        # This stretch's alert exists already: never a second one.
        Delivery.objects.bulk_create(rows, ignore_conflicts=True)
        queued = (
            Delivery.objects.filter(job=job, idle_since=stretch.since, status=Delivery.Status.QUEUED)
            .order_by("pk")
            .values_list("pk", "kind")
        )
        for pk, kind in queued:
            (result.webhook_deliveries if kind == DigestKind.IDLE_ALERT_WEBHOOK else result.deliveries).append(pk)
    return result


# --- The message ---------------------------------------------------------------------------------


def context_for(delivery: Delivery) -> dict:
    details = dict(delivery.details or {})
    if delivery.user_id and details.get("cause"):
        from triage.labeling.services import blinded_job_ids

        if delivery.job_id in blinded_job_ids(delivery.user):
            details["cause"] = None  # they rate this job blind: no rule's finding before they submit
    since = datetime.fromisoformat(details["idle_since"]) if details.get("idle_since") else None
    minutes = int(details.get("idle_minutes") or 0)
    return {
        "alert": details,
        "idle_since": since,
        "idle_for": idle_for_text(minutes),
        "settings_url": services.absolute(reverse("digests:settings")),
    }


def idle_for_text(minutes: int) -> str:
    """90 -> "1 h 30 min", 45 -> "45 min"."""
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h" + (f" {rest:02d} min" if rest else "")


def make_message(delivery: Delivery, connection=None) -> EmailMultiAlternatives:
    context = context_for(delivery)
    label = f"Stop the idle alerts of {context['alert'].get('team', 'this team')}"
    return services.compose_message(delivery, TEMPLATE_NAME, context, f"idle-alert.{delivery.pk}", connection, label)


# --- Sending -------------------------------------------------------------------------------------


@dataclass
class SendResult:
    sent: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    retry: str = ""

    def as_dict(self) -> dict:
        return {"sent": len(self.sent), "skipped": len(self.skipped), "failed": len(self.failed), "retry": self.retry}


def send_deliveries(delivery_ids: list[int], *, final_attempt: bool = True) -> SendResult:
    """Send these alert deliveries, each at most once (claimed before, stamped after), as
    `services.send_group` sends a digest: a transient SMTP error stops the attempt and asks for a
    retry, unless this is the final attempt, when the rest are marked failed."""
    result = SendResult()
    deliveries = list(
        Delivery.objects.filter(pk__in=delivery_ids, kind=DigestKind.IDLE_ALERT).select_related("user").order_by("pk")
    )
    if not deliveries:
        return result
    connection = get_connection()
    try:
        for delivery in deliveries:
            if delivery.status == Delivery.Status.SENT:
                result.skipped.append(delivery.recipient)
                continue
            message = make_message(delivery, connection=connection)
            if not delivery.claim():
                result.skipped.append(delivery.recipient)
                continue
            try:
                message.send()
            except Exception as exc:
                transient = services.is_transient(exc)
                error = services.describe(exc)
                delivery.mark_unsent(error, final=final_attempt or not transient)
                logger.warning("Idle alert %s to %s failed: %s", delivery.pk, delivery.recipient, error)
                if transient and not final_attempt:
                    result.retry = error
                    break
                result.failed.append(delivery.recipient)
                if transient:  # final attempt, the server still failing: the rest fail too, visibly
                    queued = (Delivery.Status.QUEUED,)
                    fail_deliveries([d.pk for d in deliveries], f"not sent: {error}", statuses=queued)
                    break
                continue
            delivery.mark_sent(message.extra_headers["Message-ID"])
            result.sent.append(delivery.recipient)
    finally:
        connection.close()
    return result


def fail_deliveries(delivery_ids: list[int], reason: str, statuses=(Delivery.Status.QUEUED, Delivery.Status.SENDING)):
    kinds = (DigestKind.IDLE_ALERT, DigestKind.IDLE_ALERT_WEBHOOK)
    Delivery.objects.filter(pk__in=delivery_ids, kind__in=kinds, status__in=statuses).update(
        status=Delivery.Status.FAILED, last_error=reason[:2000]
    )


def retry_delivery(delivery: Delivery) -> None:
    """The deliveries page's Retry button for a failed alert. Raises fleet.tasking.QueueUnreachable."""
    from fleet.tasking import publish

    from .tasks import send_idle_alert_webhook_task, send_idle_alerts_task

    if delivery.kind == DigestKind.IDLE_ALERT_WEBHOOK:
        publish(send_idle_alert_webhook_task, (delivery.pk,), not_done="the idle alert was not posted again")
    else:
        publish(send_idle_alerts_task, ([delivery.pk],), not_done="the idle alert was not sent again")


def queue_check(job_ids: list[int]) -> None:
    """Queue the idle check of the still-running jobs among `job_ids` (the `jobs_ingested` receiver),
    when alerts are on; a finished job is never looked at."""
    if not job_ids or not AlertSettings.current().enabled:
        return
    states = {state.lower() for state in Job.UNFINISHED_STATES}
    candidates = []
    for first in range(0, len(job_ids), 500):
        rows = Job.objects.filter(pk__in=job_ids[first : first + 500], sample_count__gt=0).values_list("pk", "state")
        candidates += [pk for pk, state in rows if state.strip().lower() in states]
    if not candidates:
        return
    from triage.services import QUEUE_RETRY_POLICY

    from .tasks import check_idle_alerts_task

    for first in range(0, len(candidates), 200):
        batch = sorted(candidates[first : first + 200])
        check_idle_alerts_task.apply_async((batch,), retry_policy=QUEUE_RETRY_POLICY)
