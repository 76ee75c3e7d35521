"""Who wants which weekly digest, and one row per digest delivered to one address for one ISO week.

A `Delivery` is the idempotency record: unique per (recipient, kind, team, ISO week), claimed with a
conditional UPDATE before the message goes out and stamped after, so a retried task, a redelivered
message or a second beat never send one digest twice (healthchecks' `sendreports` claim).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from fleet.models import Team


class DigestKind(models.TextChoices):
    TEAM = "team", "Team digest"
    OPERATOR = "operator", "Operator digest"


class Subscription(models.Model):
    """A user's explicit choice about one digest. Without a row the default applies: team members get
    their teams' digests and operators the operator digest; `active=False` is an unsubscribe."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="digest_subscriptions")
    kind = models.CharField(max_length=20, choices=DigestKind.choices)
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="digest_subscriptions")
    active = models.BooleanField(default=True)
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
    """One digest for one address and one ISO week: queued → sending → sent, or failed."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    recipient = models.EmailField(max_length=254)
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

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["recipient", "kind", "team", "iso_week"],
                condition=Q(team__isnull=False),
                name="digest_delivery_unique_team",
            ),
            models.UniqueConstraint(
                fields=["recipient", "kind", "iso_week"],
                condition=Q(team__isnull=True),
                name="digest_delivery_unique_fleet",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} digest {self.iso_week} to {self.recipient} ({self.status})"

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
