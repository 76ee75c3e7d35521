"""Triage results: versioned rule sets, per-job triage status and findings, re-triage progress."""

from __future__ import annotations

from django.conf import settings
from django.db import models, transaction

from fleet.models import Job
from triage.rules import RULES_REVISION, default_thresholds
from triage.rules.registry import Status
from triage.taxonomy import Category


class RuleSet(models.Model):
    """One version of the rule thresholds. Versions are never edited: saving makes a new one."""

    version = models.PositiveIntegerField(unique=True)
    thresholds = models.JSONField(default=dict, help_text="Overrides of the defaults, by threshold name.")
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"rule set v{self.version}"

    def effective_thresholds(self) -> dict[str, float]:
        values = default_thresholds()
        values.update({k: v for k, v in (self.thresholds or {}).items() if k in values})
        return values

    @staticmethod
    def deployment_defaults() -> dict[str, float]:
        """The thresholds version 1 starts from and the Rules page resets to: the built-in defaults,
        with the low-utilization threshold of this deployment's LOW_UTIL_THRESHOLD setting."""
        return default_thresholds() | {"low_util_threshold": settings.LOW_UTIL_THRESHOLD}

    @classmethod
    def current(cls) -> RuleSet:
        """The newest version; version 1 with the defaults is created on first use (its low-utilization
        threshold from the LOW_UTIL_THRESHOLD setting, which seeds it and nothing after)."""
        latest = cls.objects.order_by("-version").first()
        if latest is not None:
            return latest
        thresholds = cls.deployment_defaults()
        with transaction.atomic():
            rule_set, _ = cls.objects.get_or_create(version=1, defaults={"thresholds": thresholds, "note": "defaults"})
        return rule_set


def low_util_threshold() -> float:
    """The mean GPU utilization (%) at or below which a job is low-utilization: the current rule
    set's, so that the pages, digests, API and metrics count the jobs the rules look at. (They read
    a setting of their own once, and a threshold changed on the Rules page split the two.)"""
    return float(RuleSet.current().effective_thresholds()["low_util_threshold"])


class TriageStatus(models.TextChoices):
    HEALTHY = Status.HEALTHY, "Healthy"
    CLASSIFIED = Status.CLASSIFIED, "Classified"
    UNCLASSIFIED = Status.UNCLASSIFIED, "Unclassified"
    INSUFFICIENT_DATA = Status.INSUFFICIENT_DATA, "Insufficient data"
    ERROR = "error", "Error"


def current_rules_revision() -> int:
    """The revision of the deployed rules' code (`triage.rules.RULES_REVISION`): a new result's."""
    return RULES_REVISION


class JobTriage(models.Model):
    """The outcome of triaging one job with one rule-set version; `is_current` marks the newest version's.
    `rules_revision` is the revision of the rules' code that made it: results of an older one (0, stored
    before revisions were recorded) are re-triaged by beat's sweep after an upgrade."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="triage_results")
    rule_set = models.ForeignKey(RuleSet, on_delete=models.PROTECT, related_name="results")
    status = models.CharField(max_length=20, choices=TriageStatus.choices, db_index=True)
    reason = models.CharField(max_length=300, blank=True)
    is_current = models.BooleanField(default=True, db_index=True)
    mean_util = models.FloatField(null=True, blank=True)
    coverage = models.FloatField(null=True, blank=True)
    unused_gpu_hours = models.FloatField(null=True, blank=True)
    evidence = models.JSONField(default=dict, blank=True, help_text="Phases, metrics and files the rules saw.")
    rules_revision = models.PositiveIntegerField(
        default=current_rules_revision, db_index=True, help_text="The revision of the rules' code that made it."
    )
    triaged_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-rule_set__version"]
        constraints = [models.UniqueConstraint(fields=["job", "rule_set"], name="jobtriage_unique_job_rule_set")]

    def __str__(self) -> str:
        return f"{self.job} v{self.rule_set.version}: {self.status}"


def without_current_triage(jobs):
    """These jobs less those with a current triage result: still queued, or their task was lost."""
    return jobs.exclude(models.Exists(JobTriage.objects.filter(job=models.OuterRef("pk"), is_current=True)))


class Finding(models.Model):
    """One cause of low utilization found in a job, with its evidence, waste and guidance."""

    result = models.ForeignKey(JobTriage, on_delete=models.CASCADE, related_name="findings")
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="findings")
    rule_set = models.ForeignKey(RuleSet, on_delete=models.PROTECT, related_name="findings")
    category = models.CharField(max_length=40, choices=Category.choices, db_index=True)
    sub_cause = models.CharField(max_length=60, blank=True)
    confidence = models.FloatField()
    summary = models.TextField()
    gpu_hours = models.FloatField(help_text="GPU-hours this cause cost the job (recoverable estimate).")
    cost = models.DecimalField(max_digits=20, decimal_places=2, null=True, blank=True)  # as Job.cost
    currency = models.CharField(max_length=3, blank=True)
    time_located = models.BooleanField(default=False)
    evidence = models.JSONField(default=dict, help_text="{windows, log_lines, code, numbers}")
    guidance = models.JSONField(default=dict)

    class Meta:
        ordering = ["-gpu_hours", "category"]
        indexes = [models.Index(fields=["category", "rule_set"])]

    def __str__(self) -> str:
        return f"{self.job}: {self.category}"

    @property
    def category_enum(self) -> Category:
        return Category(self.category)


class RetriageRun(models.Model):
    """Background re-triage of every job after a new rule-set version, with progress for the UI."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    rule_set = models.ForeignKey(RuleSet, on_delete=models.CASCADE, related_name="retriage_runs")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    jobs_total = models.PositiveIntegerField(default=0)
    jobs_done = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"re-triage for v{self.rule_set.version}: {self.jobs_done}/{self.jobs_total}"

    @property
    def percent(self) -> int:
        return 100 if not self.jobs_total else min(100, round(100 * self.jobs_done / self.jobs_total))


class Feedback(models.Model):
    """What a person who knows the job says of one cause the rules found in it: right, wrong, or
    intended. Kept per (job, cause, person), not per finding, so it survives re-triage with a new
    rule-set version (which replaces the findings); `rule_set` is the version whose finding was judged."""

    class Verdict(models.TextChoices):
        RIGHT = "right", "Right: this is why"
        WRONG = "wrong", "Wrong: not the cause"
        EXPECTED = "expected", "Intended: it is meant to run this way"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="feedback")
    category = models.CharField(max_length=40, choices=Category.choices)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="triage_feedback")
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    comment = models.TextField(blank=True, max_length=1000)
    rule_set = models.ForeignKey(RuleSet, null=True, blank=True, on_delete=models.SET_NULL, related_name="feedback")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["job", "category", "user"], name="feedback_one_per_person_and_cause"),
        ]
        indexes = [models.Index(fields=["category", "verdict"])]

    def __str__(self) -> str:
        return f"{self.job}: {self.category} {self.verdict} ({self.user})"
