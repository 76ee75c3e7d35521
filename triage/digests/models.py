"""Who wants which weekly digest, and one row per digest delivered to one address for one ISO week.

A `Delivery` is the idempotency record: unique per (recipient, kind, team, ISO week), claimed with a
conditional UPDATE before the message goes out and stamped after, so a retried task, a redelivered
message or a second beat never send one digest twice (healthchecks' `sendreports` claim).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from fleet.connectors import secrets
from fleet.connectors.http import where
from fleet.models import Job, Team


class DigestKind(models.TextChoices):
    TEAM = "team", "Team digest"
    OPERATOR = "operator", "Operator digest"
    # Not a digest a subscription is kept for: the "idle now" email about one running job, sent to the
    # team digest's recipients who did not turn alerts off (`Subscription.alerts`). Its deliveries
    # are listed with the digests'; its unsubscribe link turns off that team's alerts only.
    IDLE_ALERT = "idle_alert", "Idle alert"
    # The same alert posted to a team's chat webhook (`TeamWebhook`): one delivery per webhook, job and
    # idle stretch, naming it by `webhook`, its `recipient` (an email address) left empty.
    IDLE_ALERT_WEBHOOK = "idle_alert_webhook", "Idle alert (chat webhook)"


class Subscription(models.Model):
    """A user's explicit choice about one digest. Without a row the default applies: team members get
    their teams' digests and operators the operator digest; `active=False` is an unsubscribe."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="digest_subscriptions")
    kind = models.CharField(max_length=20, choices=DigestKind.choices)
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="digest_subscriptions")
    active = models.BooleanField(default=True)
    # A team digest's recipient also gets its "idle now" alerts (`triage.digests.alerts`) unless this
    # is off; an unsubscribed recipient (`active=False`) gets neither.
    alerts = models.BooleanField(default=True, help_text="Also send this team's idle-job alerts.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user_id", "kind", "team_id"]
        constraints = [
            # Two partial constraints because NULLs are distinct in a plain unique constraint.
            models.UniqueConstraint(
                fields=["user", "kind", "team"], condition=Q(team__isnull=False), name="digest_sub_unique_team"
            ),
            models.UniqueConstraint(
                fields=["user", "kind"], condition=Q(team__isnull=True), name="digest_sub_unique_fleet"
            ),
            models.CheckConstraint(
                condition=Q(kind=DigestKind.TEAM, team__isnull=False) | Q(kind=DigestKind.OPERATOR, team__isnull=True),
                name="digest_sub_team_iff_team_kind",
            ),
        ]

    def __str__(self) -> str:
        what = self.team or "fleet"
        return f"{self.user} {'subscribed to' if self.active else 'unsubscribed from'} {self.kind} digest ({what})"


class Delivery(models.Model):
    """One digest for one address and one ISO week: queued → sending → sent, or failed. An idle
    alert is one too: for one address, one job and the start of one idle stretch of it (`job`,
    `idle_since`; `iso_week` is the week the stretch began), with what it said in `details`."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    # The address an email went to; empty for a chat webhook's post, whose webhook is `webhook`.
    recipient = models.EmailField(max_length=254, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="digest_deliveries"
    )
    kind = models.CharField(max_length=20, choices=DigestKind.choices)
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="digest_deliveries")
    iso_week = models.CharField(max_length=8, help_text="The reported week, e.g. 2026-W48.", db_index=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    message_id = models.CharField(max_length=300, blank=True)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.CASCADE, related_name="idle_alerts")
    idle_since = models.DateTimeField(null=True, blank=True, help_text="An idle alert's: when the idle stretch began.")
    details = models.JSONField(default=dict, blank=True, help_text="An idle alert's facts, as mailed (and re-sent).")
    # A chat webhook's alert: which webhook (kept when the webhook is removed, as history) and the
    # HTTP status its last attempt was answered with (the error, if any, is in `last_error`).
    webhook = models.ForeignKey(
        "TeamWebhook", null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["recipient", "kind", "team", "iso_week"],
                condition=Q(team__isnull=False, job__isnull=True),
                name="digest_delivery_unique_team",
            ),
            # One idle alert per address, job and idle stretch: pulling the job again never sends
            # it twice; a job that worked and idled again has a new stretch, and may alert again.
            models.UniqueConstraint(
                fields=["recipient", "job", "idle_since"],
                condition=Q(job__isnull=False) & ~Q(kind=DigestKind.IDLE_ALERT_WEBHOOK),
                name="digest_delivery_unique_alert",
            ),
            # And one post per chat webhook, job and stretch (those of a removed webhook, NULL, stay apart).
            models.UniqueConstraint(
                fields=["webhook", "job", "idle_since"],
                condition=Q(kind=DigestKind.IDLE_ALERT_WEBHOOK),
                name="digest_delivery_unique_webhook_alert",
            ),
            models.UniqueConstraint(
                fields=["recipient", "kind", "iso_week"],
                condition=Q(team__isnull=True),
                name="digest_delivery_unique_fleet",
            ),
        ]

    def __str__(self) -> str:
        if self.kind in (DigestKind.IDLE_ALERT, DigestKind.IDLE_ALERT_WEBHOOK):
            return f"idle alert of job {self.job_id} to {self.recipient_label} ({self.status})"
        return f"{self.kind} digest {self.iso_week} to {self.recipient} ({self.status})"

    @property
    def recipient_label(self) -> str:
        """Who it went to, as the pages say it: an address, or a chat webhook by its host (never its URL)."""
        if self.kind != DigestKind.IDLE_ALERT_WEBHOOK:
            return self.recipient
        return f"chat webhook at {self.webhook.host}" if self.webhook else "a removed chat webhook"

    # The claim: only a queued row, or a failed one being retried, moves to "sending", and only one
    # caller can make that move. A row left in "sending" by a worker that died is not taken again
    # automatically (the message may have gone out): at most once, and visible on the deliveries page.
    CLAIMABLE = (Status.QUEUED, Status.FAILED)

    def claim(self) -> bool:
        now = timezone.now()
        claimed = Delivery.objects.filter(pk=self.pk, status__in=self.CLAIMABLE).update(
            status=self.Status.SENDING, claimed_at=now, attempts=F("attempts") + 1
        )
        if claimed:
            self.status, self.claimed_at = self.Status.SENDING, now
            self.attempts += 1
        return bool(claimed)

    def mark_sent(self, message_id: str) -> None:
        self.status, self.sent_at, self.message_id, self.last_error = self.Status.SENT, timezone.now(), message_id, ""
        Delivery.objects.filter(pk=self.pk).update(
            status=self.status, sent_at=self.sent_at, message_id=message_id, last_error=""
        )

    def mark_unsent(self, error: str, *, final: bool) -> None:
        """Back to the queue for a retry, or failed for good (until someone sends the week again)."""
        self.status = self.Status.FAILED if final else self.Status.QUEUED
        self.last_error = error[:2000]
        Delivery.objects.filter(pk=self.pk).update(status=self.status, last_error=self.last_error)


class AlertSettings(models.Model):
    """The operators' switch and threshold for idle alerts: one row (pk 1), made on first use."""

    enabled = models.BooleanField(default=True, help_text="Off: no running job is checked and no alert goes out.")
    idle_minutes = models.PositiveIntegerField(
        default=60,
        validators=[MinValueValidator(5), MaxValueValidator(7 * 24 * 60)],
        help_text="A running job alerts once every GPU has been idle this many minutes at the end of its series.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "idle alert settings"
        verbose_name_plural = "idle alert settings"

    def __str__(self) -> str:
        return f"idle alerts {'on' if self.enabled else 'off'}, after {self.idle_minutes} min"

    @classmethod
    def current(cls) -> AlertSettings:
        return cls.objects.get_or_create(pk=1)[0]


class TeamWebhook(models.Model):
    """A team's chat webhook for its idle alerts (a Grafana or Alertmanager "contact point"), set by
    operators: a Slack-compatible incoming webhook (POST {"text": ...}; Slack, Mattermost, Rocket.Chat)
    or a generic JSON one (the alert's facts, for Teams workflows or a service of one's own).

    The URL carries its secret in its path (hooks.slack.com/services/T.../B.../<token>): it is kept
    encrypted as connectors' secrets are (`fleet.connectors.secrets`), never shown back, never logged;
    pages name its `host` only."""

    class Format(models.TextChoices):
        SLACK = "slack", 'Slack-compatible: {"text": …} (Slack, Mattermost, Rocket.Chat)'
        JSON = "json", "Generic JSON: the alert's facts (Teams workflows, a service of your own)"

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="alert_webhook")
    enabled = models.BooleanField(default=True, help_text="Off: the URL is kept, nothing is posted.")
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.SLACK)
    url_encrypted = models.TextField()
    host = models.CharField(max_length=300, help_text="The URL's host (and port), what the pages show.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["team__name"]

    def __str__(self) -> str:
        return f"chat webhook of {self.team} at {self.host}"

    def set_url(self, url: str) -> None:
        self.url_encrypted = secrets.encrypt(url)
        self.host = where(url)[:300] if urlsplit(url).hostname else ""

    def url(self) -> str:
        """The URL itself, for the request only. Raises fleet.connectors.base.ConfigError when it cannot be
        decrypted (SECRET_KEY or CONNECTOR_SECRET_KEY changed)."""
        return secrets.decrypt(self.url_encrypted)
