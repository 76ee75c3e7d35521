"""Labeling studies: a sample of jobs, raters' blind labels, adjudicated and frozen gold sets."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from fleet.models import Job
from triage.labeling.sampling import STRATEGY_LABELS, Strategy
from triage.taxonomy import Category

# What a rater may pick for a job: the 15 categories, or one of two answers outside them.
NONE_OF_THESE = "none"
OTHER = "other"
EXTRA_OPTIONS = [(NONE_OF_THESE, "None of these"), (OTHER, "Other")]
OPTION_CHOICES = [*Category.choices, *EXTRA_OPTIONS]
OPTIONS = [value for value, _ in OPTION_CHOICES]
OPTION_LABELS = dict(OPTION_CHOICES)
# A rationale (and the note of "other") is a few sentences on the evidence seen, as a feedback comment
# (1,000) is; twice that leaves room for a log line quoted. The form's maxlength and `clean_answer` say it.
RATIONALE_MAX_CHARS = 2000
SAMPLING_CHOICES = [(s.value, STRATEGY_LABELS[s]) for s in Strategy]


class Study(models.Model):
    """A labeling campaign: how its jobs were drawn, who labels them, and whether raters see findings."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="labeling_studies_led",
        help_text="The study's lead, who adjudicates disagreements and freezes gold sets.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    strategy = models.CharField(max_length=30, choices=SAMPLING_CHOICES, default=Strategy.RANDOM.value)
    sample_size = models.PositiveIntegerField(null=True, blank=True)
    seed = models.BigIntegerField()
    period_start = models.DateTimeField(null=True, blank=True)
    period_end = models.DateTimeField(null=True, blank=True)
    low_util_only = models.BooleanField(default=True)
    low_util_threshold = models.FloatField(default=50.0, help_text="Mean GPU util (%) at or below which a job is low.")
    disputed_only = models.BooleanField(
        default=False, help_text="Only jobs where someone answered that a cause the rules found is wrong."
    )
    labels_per_job = models.PositiveSmallIntegerField(default=2)
    show_findings = models.BooleanField(
        default=False, help_text="Raters see the rules' findings while labeling (blind when off)."
    )
    sampling_record = models.JSONField(default=dict, blank=True, help_text="How the sample was drawn, for the record.")
    raters = models.ManyToManyField(settings.AUTH_USER_MODEL, through="StudyRater", related_name="labeling_studies")

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name


class StudyRater(models.Model):
    """A rater of a study; once they submit, their labels are final and they may see everyone's."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="rater_links")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["user__username"]
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="studyrater_unique_study_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.study}"


class StudyJob(models.Model):
    """One sampled job, in labeling order, with the stratum it was drawn from."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    job = models.ForeignKey(Job, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()
    stratum = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["study", "position"]
        constraints = [models.UniqueConstraint(fields=["study", "job"], name="studyjob_unique_study_job")]

    def __str__(self) -> str:
        return f"{self.study} #{self.position}: {self.job_id}"


class Assignment(models.Model):
    """One rater's task on one sampled job, and (once saved) their answer."""

    class Source(models.TextChoices):
        WEB = "web", "Labeling page"
        IMPORT = "import", "Imported"

    class SkipReason(models.TextChoices):
        """Why a rater cannot judge a job (a skip: no labels, and the job leaves their queue)."""

        NOT_ENOUGH_EVIDENCE = "not_enough_evidence", "Not enough evidence to judge"
        DATA_BROKEN = "data_broken", "The job's data is broken or missing"
        OUTSIDE_EXPERTISE = "outside_expertise", "Outside my expertise"
        OTHER = "other", "Other (say why)"

    item = models.ForeignKey(StudyJob, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    saved_at = models.DateTimeField(null=True, blank=True, db_index=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.WEB)
    other_note = models.TextField(blank=True, help_text='What "other" means for this job.')
    # A skip instead of an answer: saved_at stays empty (no labels), skipped_at says when it was skipped.
    skipped_at = models.DateTimeField(null=True, blank=True)
    skip_reason = models.CharField(max_length=30, choices=SkipReason.choices, blank=True)
    skip_note = models.CharField(max_length=300, blank=True, help_text="The rater's words on why they skipped.")

    class Meta:
        ordering = ["item__position", "rater__username"]
        constraints = [models.UniqueConstraint(fields=["item", "rater"], name="assignment_unique_item_rater")]

    def __str__(self) -> str:
        return f"{self.rater} on {self.item}"


class Label(models.Model):
    """One option a rater chose for a job, with their rationale."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="labels")
    option = models.CharField(max_length=40, choices=OPTION_CHOICES)
    rationale = models.TextField(blank=True)

    class Meta:
        ordering = ["assignment", "option"]
        constraints = [models.UniqueConstraint(fields=["assignment", "option"], name="label_unique_assignment_option")]

    def __str__(self) -> str:
        return f"{self.assignment}: {self.option}"


class Adjudication(models.Model):
    """The lead's resolution of a disagreement on one job (a draft until a gold set is frozen)."""

    item = models.OneToOneField(StudyJob, on_delete=models.CASCADE, related_name="adjudication")
    options = models.JSONField(default=list)
    note = models.TextField()
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"adjudication of {self.item}"


class GoldSet(models.Model):
    """A frozen, numbered version of a study's gold labels. Never edited: freezing again makes a new one."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="gold_sets")
    version = models.PositiveIntegerField()
    note = models.CharField(max_length=300, blank=True)
    frozen_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    frozen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "-version"]
        constraints = [models.UniqueConstraint(fields=["study", "version"], name="goldset_unique_study_version")]

    def __str__(self) -> str:
        return f"{self.study} gold v{self.version}"


class GoldItem(models.Model):
    """The gold answer for one job: the raters' unanimous options, or the lead's adjudication."""

    class Resolution(models.TextChoices):
        AGREED = "agreed", "Raters agreed"
        ADJUDICATED = "adjudicated", "Adjudicated"

    gold_set = models.ForeignKey(GoldSet, on_delete=models.CASCADE, related_name="items")
    job = models.ForeignKey(Job, on_delete=models.PROTECT, related_name="+")
    options = models.JSONField(default=list)
    resolution = models.CharField(max_length=20, choices=Resolution.choices)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["gold_set", "job_id"]
        constraints = [models.UniqueConstraint(fields=["gold_set", "job"], name="golditem_unique_set_job")]

    def __str__(self) -> str:
        return f"{self.gold_set}: {self.job_id}"

    @property
    def categories(self) -> set[str]:
        return {o for o in self.options if o in Category.values}
