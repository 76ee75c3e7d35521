"""Canonical fleet data (design.md): teams, clusters, prices, jobs and what they left behind."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from functools import cached_property

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from rest_framework_api_key.models import AbstractAPIKey

from fleet.gpu_models import gpu_model_key, gpu_model_name
from fleet.numbers import NBSP
from fleet.timezones import validate_time_zone


class TeamQuerySet(models.QuerySet):
    def visible_to(self, user) -> TeamQuerySet:
        """Teams a user may see: all for operators and researchers, else the teams they belong to."""
        from fleet.access import sees_whole_fleet

        if not user.is_authenticated:
            return self.none()
        if sees_whole_fleet(user):
            return self
        return self.filter(owners__user=user)


class Team(models.Model):
    """A group of people who run jobs and receive one digest."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class Owner(models.Model):
    """Membership of a platform user in a team: what a team member may see."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="owners")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="owner_unique_user_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"


class UserProfile(models.Model):
    """A platform user's own settings: what they chose for themselves, whatever their teams."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    # The IANA zone pages show times in (fleet.timezones); what is stored, exported and mailed stays UTC.
    time_zone = models.CharField(max_length=64, default="UTC", validators=[validate_time_zone])

    def __str__(self) -> str:
        return f"{self.user}: {self.time_zone}"


class SsoIdentity(models.Model):
    """Who a platform user is at the single sign-on provider: its issuer and the subject (`sub`) it
    gives them, which never changes. A sign-in finds its user by this pair only, never by a username
    or an email address that matches (fleet/sso.py); an administrator may link a local account by
    adding one in the admin."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    last_login_groups = models.JSONField(
        default=list, blank=True, help_text="The provider's groups at the last sign-in."
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique_subject")]
        verbose_name = "SSO identity"
        verbose_name_plural = "SSO identities"

    def __str__(self) -> str:
        return f"{self.user} = {self.subject} at {self.issuer}"


class ClusterQuerySet(models.QuerySet):
    def visible_to(self, user) -> ClusterQuerySet:
        """Clusters a user may see: all for operators and researchers, else those their teams ran jobs
        on. A cluster's name says what the fleet runs and where; a member's cluster menus listed every one."""
        from fleet.access import sees_whole_fleet

        if not user.is_authenticated:
            return self.none()
        if sees_whole_fleet(user):
            return self
        return self.filter(Exists(Job.objects.filter(cluster=OuterRef("pk"), team__owners__user=user)))


class Cluster(models.Model):
    """One scheduler domain (a Slurm cluster, a Kubernetes cluster) whose job ids are unique within it."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=300, blank=True)

    objects = ClusterQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


CURRENCY_CODE = RegexValidator(r"^[A-Z]{3}$", "A three-letter currency code (ISO 4217), such as USD or EUR.")


class GpuModelPrice(models.Model):
    """Cost of one GPU-hour on a cluster; an empty gpu_model is the cluster's default price."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="prices")
    gpu_model = models.CharField(max_length=100, blank=True)
    price_per_gpu_hour = models.DecimalField(max_digits=10, decimal_places=4, validators=[MinValueValidator(0)])
    currency = models.CharField(max_length=3, default="USD", validators=[CURRENCY_CODE])

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "gpu_model"], name="price_unique_cluster_model")]
        verbose_name = "GPU model price"

    def __str__(self) -> str:
        return f"{self.cluster}/{self.gpu_model or '*'}: {self.price_per_gpu_hour} {self.currency}"

    def clean(self):
        """The GPU model is kept as the operator typed it (whitespace tidied); one GPU model has one
        price a cluster, whichever of its spellings (`fleet.gpu_models`) a row names it by."""
        super().clean()
        self.gpu_model = gpu_model_name(self.gpu_model)
        if not self.gpu_model or self.cluster_id is None:
            return
        stored = GpuModelPrice.objects.filter(pk=self.pk).values_list("cluster_id", "gpu_model").first()
        if stored == (self.cluster_id, self.gpu_model):
            return  # a row as it was saved (two spellings priced apart before) may still change its price
        key = gpu_model_key(self.gpu_model)
        others = GpuModelPrice.objects.filter(cluster_id=self.cluster_id).exclude(pk=self.pk).exclude(gpu_model="")
        for other in others.exclude(gpu_model=self.gpu_model).only("gpu_model"):
            if gpu_model_key(other.gpu_model) == key:
                raise ValidationError({"gpu_model": same_model_message(self.cluster, other.gpu_model)})


def same_model_message(cluster, other: str) -> str:
    return (
        f"{cluster} already has a price for this GPU model, under the name {other} (names are matched "
        "ignoring case, spaces, hyphens, a leading NVIDIA and GPU Feature Discovery's -SHARED and -MIG-… "
        "suffixes): change that row's price instead."
    )


class ExchangeRate(models.Model):
    """What one unit of a currency is worth in the reporting currency (settings.DEFAULT_CURRENCY).

    Costs are kept in the currency each cluster is priced in; the pages and digests that add costs
    up convert them at these rates, set by operators. A currency without a rate is left out of
    those totals (and the page says how much was left out), never added as if it were the
    reporting currency.
    """

    currency = models.CharField(max_length=3, unique=True, validators=[CURRENCY_CODE])
    rate = models.DecimalField(
        max_digits=16,
        decimal_places=6,
        validators=[MinValueValidator(Decimal("0.000001"))],
        help_text="The value of 1 unit of this currency in the reporting currency.",
    )

    class Meta:
        ordering = ["currency"]

    def __str__(self) -> str:
        return f"1 {self.currency} = {self.rate.normalize():f} {settings.DEFAULT_CURRENCY}"

    def clean(self) -> None:
        if self.currency == settings.DEFAULT_CURRENCY:
            raise ValidationError({"currency": f"{self.currency} is the reporting currency: its rate is 1."})


class MachineToken(AbstractAPIKey):
    """A per-machine API token (djangorestframework-api-key: prefixed, stored as a hash only, shown
    once at creation, revocable for good) that does only what it was made for: push archives, read
    /metrics, the teams' report, the jobs, each a box ticked on the tokens page.

    Its address (the revoke form's) names it by `prefix`, unique and shown on the page anyway: the
    library's `id` is the prefix and the key's hash, which has no place in access logs or history."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    # What tokens were first made for, and every token made before the permissions existed could (the
    # migration keeps them pushing); the tokens page's box is ticked, an operator unticks it for a token
    # that only reads: a Prometheus server or a billing script then pushes nothing into the fleet.
    pushes_archives = models.BooleanField(default=True, help_text="May push archives to /api/v1/archives/.")
    # One made for a Prometheus server may read /metrics (fleet-wide figures), which a pushing script
    # has no need to see.
    reads_metrics = models.BooleanField(default=False, help_text="May read the Prometheus metrics at /metrics.")
    # ...and one made for a billing or chargeback script may read every team's GPU time, waste and
    # cost (`GET /api/v1/teams/`), which neither of the others needs.
    reads_reports = models.BooleanField(
        default=False, help_text="May read every team's GPU-hours, waste and cost at /api/v1/teams/."
    )
    # ...and one made for a script that follows its pushes (or exports jobs) may read every team's
    # jobs with their findings and series (`GET /api/v1/jobs/`): a fleet-wide view no push needs.
    reads_jobs = models.BooleanField(
        default=False, help_text="May read every team's jobs, their findings and series at /api/v1/jobs/."
    )

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "machine token"
        verbose_name_plural = "machine tokens"


class PersonalToken(AbstractAPIKey):
    """A person's own read-only API token, for their scripts and notebooks (as a GitHub or GitLab
    personal access token): it acts as its owner, so a request with it sees what the owner's session
    sees in the API, checked at each request (a deactivated owner, or one who left a team, loses that
    at once), and it may only read. Made, listed and revoked on the owner's page (/account/tokens/);
    operators see and revoke everyone's on the tokens page. Always with an expiry date."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_tokens")
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "personal token"
        verbose_name_plural = "personal tokens"


class IngestRun(models.Model):
    """One upload, command-line import or connector pull, with its progress and per-row errors."""

    class Source(models.TextChoices):
        CLI = "cli", "Command line"
        UPLOAD = "upload", "Upload"
        API = "api", "API"
        CONNECTOR = "connector", "Connector"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        PARTIAL = "partial", "Partly rejected"
        FAILED = "failed", "Failed"

    source = models.CharField(max_length=20, choices=Source.choices, default=Source.CLI)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING, db_index=True)
    archive_name = models.CharField(max_length=500, help_text="The file name as the user gave it (display only).")
    archive_path = models.CharField(max_length=1000, blank=True, help_text="Where the archive is read from.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    api_key = models.ForeignKey(
        MachineToken,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="ingest_runs",
        help_text="The machine token that pushed the archive through the API.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # When its ingest task was last put on the queue: beat's sweep queues again a run still pending
    # INGEST_REQUEUE_MINUTES after that (its task was lost), or fails it when its archive is gone.
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the importer, done reading the archive, began storing its jobs: the time left is estimated from
    # the rate it has stored them at since (`seconds_left`). None before, and for a connector's pull.
    storing_started_at = models.DateTimeField(null=True, blank=True)
    phase = models.CharField(max_length=100, blank=True)
    # The process importing the run (`fleet.ingest.this_process`: host, boot, PID namespace, PID and the process's
    # start), written as it takes the run. Where run locks do not tell (SQLite), a running run whose process is
    # gone (killed) is told from one whose process is still importing it (`fleet.ingest.owner_gone`).
    owner = models.CharField(max_length=300, blank=True, help_text="The process importing the run.")
    jobs_total = models.PositiveIntegerField(default=0)
    jobs_done = models.PositiveIntegerField(default=0)
    jobs_created = models.PositiveIntegerField(default=0)
    jobs_updated = models.PositiveIntegerField(default=0)
    jobs_unchanged = models.PositiveIntegerField(default=0)
    jobs_rejected = models.PositiveIntegerField(default=0)
    samples = models.BigIntegerField(
        default=0,
        help_text="GPU samples stored: one per GPU and time (an archive's host rows, one per node and time, and "
        "duplicated rows are not counted).",
    )
    errors = models.JSONField(default=list, blank=True, help_text="[{file, row, field, job_id, message}]")
    attempts = models.PositiveIntegerField(default=0)
    # A pull's run keeps its history (and its jobs keep their run) when the connector is deleted.
    connector = models.ForeignKey(
        "fleet.Connector",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="runs",
        help_text="The connector this run is a pull of (none for archives, or once the connector is deleted).",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Ingest run {self.pk} ({self.archive_name}, {self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    @property
    def duration_s(self) -> float | None:
        """Seconds from its start to its end, or to now while it goes on; None before it starts, and for a run no
        process imports (`no_process_holds`), which records no time of its last progress to stop at: counted to
        now, the API's figure grew every second as if the import went on (its page says Elapsed "stopped")."""
        if self.started_at is None or self.no_process_holds:
            return None
        return ((self.finished_at or timezone.now()) - self.started_at).total_seconds()

    @property
    def requeue_due_at(self):
        """When beat's sweep queues this pending run again if no worker has taken it (None otherwise)."""
        if self.status != self.Status.PENDING or self.source == self.Source.CONNECTOR:
            return None
        from datetime import timedelta

        return (self.queued_at or self.created_at) + timedelta(minutes=settings.INGEST_REQUEUE_MINUTES)

    # What the run pages show (and their progress polling receives ready-made, so the page and
    # its script cannot disagree): counts with thousands separators, durations past a minute in
    # minutes, the average rate since the run started.
    @staticmethod
    def _to_tenth(moment):
        """A moment as the run's page shows it: to the tenth of a second, cut as a clock cuts it."""
        return moment.replace(microsecond=moment.microsecond // 100_000 * 100_000)

    @property
    def started_tenth(self) -> str:
        """The tenth of a second the run started in ("9" for 10:00:00.95), shown after its time."""
        return "" if self.started_at is None else str(self.started_at.microsecond // 100_000)

    @property
    def finished_tenth(self) -> str:
        return "" if self.finished_at is None else str(self.finished_at.microsecond // 100_000)

    @property
    def duration_display(self) -> str:
        """The time between the run's start and its end (or now) as its page shows them, to the tenth of a
        second: so "10:00:00.9" to "10:00:03.3" says 2.4 s, never a duration its times contradict (shown to
        the second they read 3 s apart for 2.4 s). The rate divides by the exact `duration_s`."""
        if self.started_at is None:
            return "–"
        if self.no_process_holds:
            # No process imports it (its page offers Import now / Mark failed): it counted up every second as if
            # the import went on. The run records no time of its last progress to stop at, so it says so.
            return "stopped"
        end = self.finished_at or timezone.now()
        seconds = (self._to_tenth(end) - self._to_tenth(self.started_at)).total_seconds()
        if round(seconds, 1) < 60:
            return f"{seconds:.1f} s"
        minutes, seconds = divmod(round(seconds), 60)
        if minutes < 60:
            return f"{minutes} min {seconds:02d} s"
        hours, minutes = divmod(minutes, 60)
        return f"{hours} h {minutes:02d} min"

    @property
    def rate_parts(self) -> list[str]:
        """The rate's figures, ["80.0 jobs/s", "237,935 GPU samples/s"] (["–"] before a job is done), each unit kept
        whole by no-break spaces: at 390 px it broke as "… GPU" / "samples/s". The page shows each as a box of its
        own (the polled figures too, split at " · "), so a figure goes under the one before with its unit, or at
        320 px, where "237,935 GPU samples/s" is wider than the line, breaks before its unit, never in it."""
        # None for a run no process imports ("–"): divided by the time up to now, its rate fell with every poll.
        seconds = self.duration_s
        if not seconds or not self.jobs_processed:
            return ["–"]
        jobs, samples = f"{self.jobs_processed / seconds:,.1f}", f"{self.samples / seconds:,.0f}"
        return [f"{jobs}{NBSP}jobs/s", f"{samples} GPU{NBSP}samples/s"]

    @property
    def rate_display(self) -> str:
        return " · ".join(self.rate_parts)

    # The time left is said once the rate of storing jobs means something: this long storing them, and
    # this share of the jobs to store stored (before, the first batches' pace is a wild guess).
    ESTIMATE_AFTER_SECONDS = 5
    ESTIMATE_AFTER_SHARE = 0.02

    @property
    def seconds_left(self) -> float | None:
        """About how long the run has left, from the rate it has stored jobs at since it began storing them
        (reading the archive comes first, at no rate in jobs): None until that rate means something,
        ESTIMATE_AFTER_SECONDS of storing and ESTIMATE_AFTER_SHARE of the jobs to store, once over, and for a run
        no process imports (`no_process_holds`: its page has no Time left; the API gave a number)."""
        if self.is_finished or self.storing_started_at is None:
            return None
        to_store = self.jobs_total - self.jobs_rejected
        stored = self.jobs_done
        storing = (timezone.now() - self.storing_started_at).total_seconds()
        if stored <= 0 or stored >= to_store or storing < self.ESTIMATE_AFTER_SECONDS:
            return None
        if stored < to_store * self.ESTIMATE_AFTER_SHARE or self.no_process_holds:
            return None
        return storing * (to_store - stored) / stored

    @staticmethod
    def time_left_words(seconds: float) -> str:
        """An estimate said as roughly as it is known: "about 40 s", "about 2 min", "about 3 h 05 min"."""
        if seconds < 10:
            return "a few seconds"
        if seconds < 100:
            return f"about {round(seconds / 5) * 5} s"
        if round(seconds / 60) < 60:
            return f"about {round(seconds / 60)} min"
        hours, minutes = divmod(round(seconds / 300) * 5, 60)
        return f"about {hours} h {minutes:02d} min"

    @property
    def time_left_display(self) -> str:
        """The estimate as the run's page and its polled figures say it; "–" for a run no process imports (its
        page offers Import now / Mark failed, and leaves the row out), where it went on saying "about 3 min"."""
        seconds = self.seconds_left  # None for a run no process imports
        if seconds is None:
            return "–"
        return self.time_left_words(seconds)

    @property
    def jobs_processed(self) -> int:
        """Jobs dealt with so far: stored (`jobs_done`) or rejected. A rejected job is dealt with as
        the archive is read; counted as not done, a run of 5 rejected jobs ended "0 of 5 processed"."""
        return self.jobs_done + self.jobs_rejected

    @property
    def jobs_counted(self) -> bool:
        """Whether the run knows how many jobs it has. An archive's run does once it has read the archive (its
        total, rejected jobs included, is never 0 then: an archive of no jobs is refused), not while it is pending
        or reading it; a connector's pull stores what it fetches as it comes, and knows only once it is over."""
        if self.is_finished:
            return True
        return self.source != self.Source.CONNECTOR and self.jobs_total > 0

    @property
    def jobs_counting(self) -> str:
        """How far the run's jobs are counted, which the pages word three ways: "counted" once it knows how many it
        has (`jobs_counted`), "so far" while a connector's pull goes on, "not yet" while the archive is read."""
        if self.jobs_counted:
            return "counted"
        return "so far" if self.source == self.Source.CONNECTOR else "not yet"

    @property
    def count_display(self) -> str:
        """Beside the running run's bar: "1,000 of 4,000 jobs"; "jobs not counted yet" while its archive is read,
        where it said "0 of 0 jobs" as if the archive held none; "12 jobs so far" for a connector's pull."""
        processed = self.jobs_processed
        return {
            "counted": f"{processed:,} of {self.jobs_total:,} jobs",
            "so far": f"{processed:,} job{'' if processed == 1 else 's'} so far",
            "not yet": "jobs not counted yet",
        }[self.jobs_counting]

    @property
    def jobs_display(self) -> str:
        outcomes = (
            f"{self.jobs_created:,} created, {self.jobs_updated:,} updated, {self.jobs_unchanged:,} unchanged, "
            f"{self.jobs_rejected:,} rejected"
        )
        return {
            "counted": f"{self.jobs_processed:,} of {self.jobs_total:,} processed: {outcomes}",
            "so far": f"{self.jobs_processed:,} so far: {outcomes}",
            "not yet": "not counted yet",
        }[self.jobs_counting]

    def refresh_from_db(self, using=None, fields=None, from_queryset=None):
        """Read again, the status and owner too: then `no_process_holds` is asked afresh, where it kept the answer
        of the run as first read (a run finished or taken up since said no process held it)."""
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)
        if fields is None or {"status", "owner", "source"} & {field.split("__")[0] for field in fields}:
            vars(self).pop("no_process_holds", None)

    @cached_property
    def no_process_holds(self) -> bool:
        """Whether the run reads *running* but no process imports it (its worker or web process was killed): what
        its page offers Import now / Queue again and Mark failed for (`fleet.ingest.worker_stopped`), and the runs
        list says beside its status. Never for a run a thread of this process is about to begin. Asked once per
        object (a page's or a poll's snapshot of the run, asked again once it is read again): its Elapsed, Rate and
        Time left each asked, and on PostgreSQL each asking takes the run's lock. A list answers it for all its runs
        at once (`fleet.ingest.tell_no_process_holds`)."""
        from fleet import ingest

        if self.status != self.Status.RUNNING or ingest.importing_here(self.pk):
            return False
        return ingest.worker_stopped(self)

    @property
    def uploader(self) -> str:
        """Who started it: a person, or a machine token by name."""
        if self.created_by_id:
            return self.created_by.get_username()
        if self.api_key_id:
            return f"token {self.api_key.name}"
        return ""


# An ingest run in one of these states is over; it is never run again.
FINISHED_STATUSES = (IngestRun.Status.SUCCEEDED, IngestRun.Status.PARTIAL, IngestRun.Status.FAILED)


class JobQuerySet(models.QuerySet):
    def visible_to(self, user) -> JobQuerySet:
        """Jobs a user may see: operators and researchers see the fleet, others their teams' jobs."""
        from fleet.access import sees_whole_fleet

        if not user.is_authenticated:
            return self.none()
        if sees_whole_fleet(user):
            return self
        return self.filter(team__owners__user=user)

    def low_utilization(self, threshold: float) -> JobQuerySet:
        return self.filter(mean_gpu_util__lte=threshold)


# The summary columns the dashboard adds up over a period (its indexes hold them; see Job.Meta).
# "currency" too: the cost totals convert each job's cost at its currency's rate; "util_source": the
# pages count the utilization figures that are Slurm's step-accounting averages.
SUMMARY_COLUMNS = (
    "gpu_hours", "coverage", "unused_gpu_hours", "idle_gpu_hours", "cost", "currency", "mean_gpu_util", "util_source",
)  # fmt: skip


class Job(models.Model):
    """One scheduler job with its summary figures; the series lives in `series_file`."""

    class JobType(models.TextChoices):
        BATCH = "batch", "Batch"
        INTERACTIVE = "interactive", "Interactive"

    class UtilSource(models.TextChoices):
        SAMPLES = "", "GPU samples"
        SLURM_STEPS = "slurm_steps", "Slurm step accounting"

    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="jobs")
    external_id = models.CharField(max_length=200, help_text="The scheduler's job id, unique within the cluster.")
    name = models.CharField(max_length=500, blank=True)
    user = models.CharField(max_length=200, help_text="The account that ran the job on the cluster.", db_index=True)
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="jobs")
    queue = models.CharField(max_length=200, blank=True)
    state = models.CharField(max_length=50, blank=True)
    job_type = models.CharField(max_length=20, choices=JobType.choices, default=JobType.BATCH)
    submit_time = models.DateTimeField(null=True, blank=True)
    start_time = models.DateTimeField()  # indexed first in `job_period_summary`
    end_time = models.DateTimeField()
    gpu_count = models.PositiveIntegerField()
    gpu_model = models.CharField(max_length=100, blank=True)
    # The share of one physical GPU each device is (1 whole; 1/7 a MIG 1g.10gb slice of an H100; 1/replicas
    # a time-sliced replica) and what a device is called ("" a GPU, "MIG 1g.10gb slice"): gpu_hours,
    # cost and waste count gpu_count x gpu_share.
    gpu_share = models.FloatField(default=1.0)
    gpu_unit = models.CharField(max_length=100, blank=True)
    node_count = models.PositiveIntegerField(default=1)
    cpu_count = models.PositiveIntegerField(null=True, blank=True)
    command = models.TextField(blank=True)
    labels = models.JSONField(default=dict, blank=True)
    raw = models.JSONField(default=dict, blank=True, help_text="The source record as received.")

    # Summary columns, computed at ingest (fleet.series.summarize).
    gpu_hours = models.FloatField(default=0.0, help_text="gpu_count x gpu_share x wall-clock hours")
    mean_gpu_util = models.FloatField(
        null=True, blank=True, db_index=True, help_text="%, time-weighted over covered time"
    )
    peak_gpu_mem_util = models.FloatField(null=True, blank=True, help_text="% of device memory")
    unused_gpu_hours = models.FloatField(null=True, blank=True)
    idle_gpu_hours = models.FloatField(null=True, blank=True)
    coverage = models.FloatField(
        null=True, blank=True, help_text="Share of allocated GPU time the utilization figure covers (samples), 0-1"
    )
    sample_count = models.PositiveIntegerField(default=0)
    sampling_period_s = models.FloatField(null=True, blank=True)
    # Where mean_gpu_util (and unused_gpu_hours) came from: the job's GPU samples, or, for a job without
    # any, Slurm's step accounting (an average of the whole run, no time series; coverage 1, 0 samples).
    util_source = models.CharField(max_length=20, choices=UtilSource.choices, default=UtilSource.SAMPLES, blank=True)
    # Room for MAX_GPU_HOURS at the highest price_per_gpu_hour (10^9 x 10^6).
    cost = models.DecimalField(max_digits=20, decimal_places=2, null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True)

    series_file = models.FileField(upload_to="series/", blank=True, max_length=300)
    # Set when SERIES_RETENTION_DAYS removed the raw series (fleet.lifecycle.prune_series); the
    # summary columns and findings stay.
    series_pruned_at = models.DateTimeField(null=True, blank=True)
    # Hash of everything ingested for this job; an unchanged re-import is detected and skipped.
    fingerprint = models.CharField(max_length=64, blank=True)
    ingest_run = models.ForeignKey(IngestRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-start_time", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "external_id"], name="job_unique_cluster_external_id"),
            models.CheckConstraint(condition=Q(end_time__gte=models.F("start_time")), name="job_end_after_start"),
        ]
        # The dashboard's aggregates of a period (totals, teams, weekly trend, histogram) read only
        # these columns: from the two indexes that end with them, never the wide rows (commands,
        # raw records), which made the overview of 100,000 jobs 4 times slower on SQLite. The fleet's
        # by start time, a team's (and the teams table, team by team) by team. Not the cluster: with
        # it, SQLite's plan for the jobs list filtered by cause went from 130 to 240 ms.
        indexes = [
            models.Index(fields=["team", "start_time", *SUMMARY_COLUMNS], name="job_team_summary"),
            models.Index(fields=["cluster", "start_time"]),
            models.Index(fields=["start_time", "team", *SUMMARY_COLUMNS], name="job_period_summary"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.external_id}"

    @property
    def wall_hours(self) -> float:
        return (self.end_time - self.start_time).total_seconds() / 3600

    # States that say the job had not ended when it was stored (Slurm's words, in any case; Kubernetes'
    # and the platforms' "Running" and "Pending" too): its `end_time` is then its last sample's time,
    # and its figures cover the run up to it. The counterpart of `fleet.canonical.SUCCESSFUL_STATES`.
    UNFINISHED_STATES = ("RUNNING", "PENDING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED", "RESIZING")

    @property
    def unfinished(self) -> bool:
        """Whether the job's state says it was still running (or paused) when it was stored."""
        return self.state.strip().upper() in self.UNFINISHED_STATES

    @property
    def util_from_steps(self) -> bool:
        """True when the mean GPU utilization is Slurm's step-accounting average, not from samples."""
        return self.util_source == self.UtilSource.SLURM_STEPS and self.mean_gpu_util is not None

    @property
    def mean_gpu_util_source(self) -> str | None:
        """What the API says the mean GPU utilization is from: "samples", "slurm_step_accounting" or None."""
        if self.mean_gpu_util is None:
            return None
        return "slurm_step_accounting" if self.util_from_steps else "samples"

    @property
    def gpus_text(self) -> str:
        """The job's GPU devices as a person counts them: "4 GPUs", "1 MIG 1g.10gb slice"."""
        unit = self.gpu_unit or "GPU"
        if self.gpu_count == 1:
            return f"1 {unit}"
        head, paren, tail = unit.partition(" (")
        return f"{self.gpu_count} {head}s{' (' + tail if paren else ''}"

    @property
    def gpu_share_text(self) -> str:
        """What share of a GPU each device is priced as ("1/7 of a GPU each"), "" for whole GPUs."""
        if self.gpu_share is None or self.gpu_share == 1.0:
            return ""
        share = Fraction(self.gpu_share).limit_denominator(1024)
        return f"{share.numerator}/{share.denominator} of a GPU{' each' if self.gpu_count != 1 else ''}"

    @property
    def waste_share(self) -> float | None:
        if not self.unused_gpu_hours or not self.gpu_hours:
            return None
        return self.unused_gpu_hours / self.gpu_hours


class Artifact(models.Model):
    """A log, script or trace of one job, stored through the storage API under a generated name."""

    class Kind(models.TextChoices):
        LOG = "log", "Log"
        SCRIPT = "script", "Script"
        TRACE = "trace", "Profiler trace"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="artifacts")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    path = models.CharField(max_length=500, help_text="Path within the job's folder in the source (display only).")
    file = models.FileField(upload_to="artifacts/", max_length=300)
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    truncated = models.BooleanField(default=False)

    class Meta:
        ordering = ["kind", "path"]
        constraints = [models.UniqueConstraint(fields=["job", "kind", "path"], name="artifact_unique_job_kind_path")]

    def __str__(self) -> str:
        return f"{self.job} {self.kind}:{self.path}"


class LogEvent(models.Model):
    """A recognised line in a job's log: an install, a download, an epoch, a checkpoint save, an error."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="log_events")
    artifact = models.ForeignKey(Artifact, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=40, db_index=True)
    line_no = models.PositiveIntegerField()
    timestamp = models.DateTimeField(null=True, blank=True)
    text = models.CharField(max_length=500)

    class Meta:
        ordering = ["artifact_id", "line_no"]

    def __str__(self) -> str:
        return f"{self.kind} at {self.artifact.path}:{self.line_no}"


def price_for(cluster: Cluster, gpu_model: str) -> GpuModelPrice | None:
    """The price of the GPU model on the cluster (`price_among`), else the cluster's default price."""
    return price_among(cluster_prices(cluster.prices.all()), gpu_model)


class ClusterPrices:
    """A cluster's prices, for `price_among` over many jobs: by their exact spelling and by their GPU
    model's key (`fleet.gpu_models.gpu_model_key`), "" for the default price."""

    def __init__(self, prices):
        self.exact: dict[str, GpuModelPrice] = {}
        self.by_key: dict[str, GpuModelPrice] = {}
        for price in sorted(prices, key=lambda p: (p.gpu_model, p.pk or 0)):  # the same row wins every time
            self.exact[price.gpu_model] = price
            self.by_key.setdefault(gpu_model_key(price.gpu_model), price)

    def of(self, gpu_model: str) -> GpuModelPrice | None:
        return self.exact.get(gpu_model) or self.by_key.get(gpu_model_key(gpu_model)) or self.exact.get("")


def cluster_prices(prices) -> ClusterPrices:
    """A cluster's prices (`ClusterPrices`), read once for `price_among` over many jobs."""
    return ClusterPrices(prices)


def price_among(prices: ClusterPrices, gpu_model: str) -> GpuModelPrice | None:
    """Of a cluster's prices (`cluster_prices`), the GPU model's, else the default: the rule every job is
    priced by. The GPU model's is the row spelt as the job's model is, else the row of the same model in
    another spelling (GFD's `NVIDIA-H100-80GB-HBM3` prices dcgm-exporter's `NVIDIA H100 80GB HBM3`)."""
    return prices.of(gpu_model)


from fleet.connectors.models import Connector, ConnectorDeletion  # noqa: E402,F401


class AuditEvent(models.Model):
    """One operator action, written by fleet.audit.record; never edited."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_name = models.CharField(max_length=150, help_text="Kept when the user is deleted.")
    action = models.CharField(max_length=100, db_index=True, help_text="e.g. token.create, price.change")
    target_type = models.CharField(max_length=100, blank=True)
    target_id = models.CharField(max_length=100, blank=True)
    target_repr = models.CharField(max_length=300, blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-pk"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_name} {self.action} {self.target_repr}"
