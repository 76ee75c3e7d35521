"""The `Connector` model: one configured source an operator set up, its schedule, watermark and health.

Imported at the end of fleet/models.py so its migration lives in the fleet app.
"""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator, URLValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from fleet.connectors import secrets
from fleet.connectors.base import ConfigError, ConnectorSettings, header_problem
from fleet.connectors.registry import kinds

MAX_INTERVAL_MINUTES = 366 * 24 * 60  # a year


class ServiceURLValidator(URLValidator):
    """Django's URL check, but with single-label hosts (`prometheus`, `slurmrestd`) and http(s) only.

    Inside a Kubernetes namespace or a compose network a platform answers on its bare service
    name, and Django's validator wants a dotted name with a top-level domain (or `localhost`),
    so it refused `https://prometheus:9090`. Everything else is Django's: the user:pass part,
    IPv4/IPv6 literals, the port, the path, a dotted host's rules. A user name or password in
    the URL is refused (see `__call__`).
    """

    # All digits is not a name but an address to a resolver (http://2130706433 is 127.0.0.1), and a
    # dotted host keeps Django's rule against a numeric top-level label ("999.1.1.1").
    single_label_re = r"(?![0-9]+(?:[:/?#]|\Z))" + URLValidator.hostname_re
    dotted_host_re = URLValidator.hostname_re + URLValidator.domain_re + URLValidator.tld_re  # Django's
    host_re = "(" + dotted_host_re + "|" + single_label_re + ")"
    # Django's pattern with the host above: its `regex` is built from its own `host_re` when the
    # class is defined, so a subclass has to build it again.
    regex = re.compile(
        r"^(?:[a-z0-9.+-]*)://"  # scheme is validated separately
        r"(?:[^\s:@/]+(?::[^\s:@/]*)?@)?"  # user:pass authentication
        r"(?:" + URLValidator.ipv4_re + "|" + URLValidator.ipv6_re + "|" + host_re + ")"
        r"(?::[0-9]{1,5})?"  # port
        r"(?:[/?#][^\s]*)?"  # resource path
        r"\Z",
        re.IGNORECASE,
    )
    schemes = ["http", "https"]  # what the connectors' HTTP client speaks
    message = "Enter an http(s) URL with a host, e.g. https://prometheus:9090 or https://slurm.example.org."

    def __call__(self, value):
        super().__call__(value)
        # The URL is shown on the connectors' pages and in their pull errors, so a password in it
        # would be echoed to everyone who sees them; credentials go where they are kept encrypted.
        if "@" in urlsplit(str(value)).netloc:
            raise ValidationError(
                "Leave the user name and password out of the URL: choose basic auth and enter them as the "
                "user name and the secret, which is stored encrypted and never shown again.",
                code="credentials_in_url",
            )


validate_service_url = ServiceURLValidator()


# What `scontrol token` prints before the JWT itself.
SCONTROL_TOKEN_PREFIX = "SLURM_JWT="  # noqa: S105 (a prefix to drop, not a password)


class Connector(models.Model):
    class Kind(models.TextChoices):
        PROMETHEUS = "prometheus", "Prometheus (dcgm-exporter, node_exporter)"
        SLURM = "slurm", "Slurm (slurmrestd)"
        KUBERNETES = "kubernetes", "Kubernetes (pods API)"
        GENERIC = "generic", "Generic REST API"
        MLFLOW = "mlflow", "MLflow (runs and their system metrics)"
        WANDB = "wandb", "Weights & Biases (runs and their system metrics)"

    class Auth(models.TextChoices):
        NONE = "none", "No authentication"  # "None" read as unset on the connector's page and in its form
        BASIC = "basic", "Basic (user name + password)"
        BEARER = "bearer", "Bearer token"
        HEADER = "header", "Secret in a header (e.g. X-SLURM-USER-TOKEN)"

    name = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # Not a URLField: its validator, which always runs, refuses a bare service name. No example here:
    # each kind has its own, which the connector form gives (forms.url_help).
    url = models.CharField(
        max_length=500,
        validators=[validate_service_url],
        help_text="Base URL of the kind's service (an in-cluster service name is fine).",
    )
    cluster = models.CharField(
        max_length=100, blank=True, help_text="Cluster the jobs belong to (not needed for Prometheus)."
    )
    enabled = models.BooleanField(default=True)
    # At most a year: the beat adds it to the last run's time, which a larger one carried past the
    # calendar's end (OverflowError) and so stopped the schedule of every connector.
    interval_minutes = models.PositiveIntegerField(
        default=15, validators=[MinValueValidator(1), MaxValueValidator(MAX_INTERVAL_MINUTES)]
    )
    # PROTECT: deleting the Prometheus connector others take their series from would leave their
    # next pulls storing jobs without series, unnoticed; the delete page names them instead.
    metrics_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="served",
        limit_choices_to={"kind": "prometheus"},
        help_text="The Prometheus connector that serves these jobs' GPU series.",
    )

    auth = models.CharField(max_length=20, choices=Auth.choices, default=Auth.NONE)
    username = models.CharField(max_length=200, blank=True, help_text="Basic auth user name.")
    secret_header = models.CharField(
        max_length=100,
        blank=True,
        validators=[RegexValidator(r"^[A-Za-z0-9-]+$", "a header name")],
        help_text="Header that carries the secret, for the header auth kind.",
    )
    # Either a reference (env:NAME / file:/path) or the value encrypted with Fernet; never shown back.
    secret_ref = models.CharField(max_length=300, blank=True)
    secret_encrypted = models.TextField(blank=True)
    headers = models.JSONField(default=dict, blank=True, help_text='Extra headers, e.g. {"X-Scope-OrgID": "gpu"}.')
    ca_bundle = models.CharField(max_length=500, blank=True, help_text="Path to a CA bundle for TLS.")
    verify_tls = models.BooleanField(default=True)
    options = models.JSONField(default=dict, blank=True, help_text="Kind-specific options (docs/connectors.md).")

    # State of the pulls.
    watermark = models.CharField(max_length=500, blank=True, help_text="Everything up to here is stored.")
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_run = models.ForeignKey("fleet.IngestRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The singleton lock: taken with a conditional UPDATE, so two workers never pull one source at once.
    locked_until = models.DateTimeField(null=True, blank=True)
    lock_token = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(secret_ref="") | Q(secret_encrypted=""),
                name="connector_one_secret_source",
            )
        ]

    def __str__(self) -> str:
        return self.name

    # -- secrets -------------------------------------------------------------------------------
    @property
    def has_secret(self) -> bool:
        return bool(self.secret_ref or self.secret_encrypted)

    def set_secret(self, value: str) -> None:
        """Store a secret value encrypted (clears any reference)."""
        self.secret_encrypted = secrets.encrypt(value)
        self.secret_ref = ""

    def set_secret_reference(self, reference: str) -> None:
        # Resolved at pull time: the variable or file may exist on the workers only.
        self.secret_ref = reference
        self.secret_encrypted = ""

    def secret(self) -> str:
        if self.secret_ref:
            return secrets.resolve_reference(self.secret_ref)
        return secrets.decrypt(self.secret_encrypted)

    # -- what the pull needs -------------------------------------------------------------------
    def to_settings(self, **http) -> ConnectorSettings:
        """The settings a pull uses; ConfigError (never quoting a secret) for headers HTTP cannot send."""
        headers = {str(k): str(v) for k, v in (self.headers or {}).items()}
        problems = [header_problem(name, value, what=f"the header {name[:100]!r}") for name, value in headers.items()]
        basic = None
        if self.auth == self.Auth.BASIC:
            basic = (self.username, self.secret())
            problems.append(header_problem("Authorization", basic[0], what="the user name"))
            problems.append(header_problem("Authorization", basic[1], what="the secret"))
        elif self.auth == self.Auth.BEARER:
            headers["Authorization"] = f"Bearer {self.secret()}"
            problems.append(header_problem("Authorization", headers["Authorization"], what="the secret"))
        elif self.auth == self.Auth.HEADER:
            name = self.secret_header or "X-API-Key"
            headers[name] = self.secret()
            if self.kind == "slurm":
                # `scontrol token` prints `SLURM_JWT=<token>`: a file a cron job fills with its output
                # (docs/connectors.md) holds that line, and slurmrestd refused it whole (HTTP 401).
                headers[name] = headers[name].removeprefix(SCONTROL_TOKEN_PREFIX)
            problems.append(header_problem(name, headers[name], what="the secret"))
        problem = next((p for p in problems if p), None)
        if problem:
            raise ConfigError(f"{problem}; correct it in the connector's settings")
        verify: bool | str = (self.ca_bundle or True) if self.verify_tls else False
        rotates = self.auth != self.Auth.NONE and self.secret_ref.startswith("file:")
        return ConnectorSettings(
            name=self.name,
            kind=self.kind,
            url=self.url,
            cluster=self.cluster,
            headers=headers,
            basic_auth=basic,
            verify=verify,
            options=dict(self.options or {}),
            reread=(lambda: self.to_settings(**http)) if rotates else None,
            **http,
        )

    @property
    def connector_class(self):
        return kinds().get(self.kind)

    def is_due(self, now=None) -> bool:
        if not self.enabled:
            return False
        now = now or timezone.now()
        interval = timedelta(minutes=min(self.interval_minutes, MAX_INTERVAL_MINUTES))  # a row saved before the bound
        return self.last_run_at is None or self.last_run_at + interval <= now

    @property
    def next_due_at(self):
        """When the beat (which looks every minute) queues the next pull: now for a connector never
        pulled, a past time for an overdue one; None while it is disabled."""
        if not self.enabled:
            return None
        if self.last_run_at is None:
            return timezone.now()
        return self.last_run_at + timedelta(minutes=min(self.interval_minutes, MAX_INTERVAL_MINUTES))

    @property
    def lag(self) -> timedelta | None:
        """How far behind now the stored data is (from the watermark when it is a time)."""
        # A metrics source stores nothing of its own to be behind on (the list says whom it serves).
        moment = None if self.metrics_only else self.watermark_time
        return timezone.now() - moment if moment else None

    @property
    def metrics_only(self) -> bool:
        """A metrics source (Prometheus): it lists no jobs; other connectors' pulls read its series."""
        cls = self.connector_class
        return cls is not None and not cls.lists_jobs

    @property
    def watermark_time(self):
        """The moment a time watermark stands for (None for a cursor, or none yet)."""
        cls = self.connector_class
        return cls.watermark_time(self.watermark) if cls is not None and self.watermark else None

    @property
    def lag_text(self) -> str:
        lag = self.lag
        if lag is None:
            return ""
        minutes = int(lag.total_seconds() // 60)
        return (
            f"{minutes // 1440} d {minutes // 60 % 24} h"
            if minutes >= 1440
            else f"{minutes // 60} h {minutes % 60} min"
        )

    @property
    def health(self) -> str:
        if not self.enabled:
            return "disabled"
        if self.last_run_at is None:
            return "never run"
        if self.last_error and (self.last_success_at is None or self.last_error_at >= self.last_success_at):
            return "failing"
        return "ok"


class ConnectorDeletion(models.Model):
    """A bulk deletion of jobs done by a Celery task in batches: tens of thousands of jobs and their
    files outlast a web request (gunicorn's timeout killed it, the deletion rolled back). Its page shows
    the progress, and how it ended once done; the row stays when what it deleted has gone, as the record
    of what went. Its `kind` says what goes with the jobs: a connector (`fleet.delete_connector`), a
    team or an ingest run, or nothing (jobs chosen in the admin); those three by `fleet.delete_jobs`
    (fleet.lifecycle). The name stays from when connectors were the only kind."""

    class Kind(models.TextChoices):
        CONNECTOR = "connector", "connector"
        TEAM = "team", "team"
        INGEST_RUN = "ingest_run", "ingest run"
        JOBS = "jobs", "jobs"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Deleting"
        SUCCEEDED = "succeeded", "Deleted"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.CONNECTOR)
    connector = models.ForeignKey(Connector, null=True, blank=True, on_delete=models.SET_NULL, related_name="deletions")
    team = models.ForeignKey("fleet.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    ingest_run = models.ForeignKey(
        "fleet.IngestRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    job_ids = models.JSONField(default=list, blank=True, help_text="The jobs chosen (kind jobs).")
    with_jobs = models.BooleanField(default=True, help_text="An ingest run's: its jobs go too.")
    audit_details = models.JSONField(default=dict, blank=True, help_text="Kept for the audit entry at the end.")
    name = models.CharField(
        max_length=100, help_text="What is deleted, by name (it is gone once the deletion is done)."
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    # The connector's pull lease while the deletion holds it (fleet.connectors.sync.DELETING ends it). The
    # other kinds hold the same lease on this row instead (`locked_until`, sync.take_lease): its task renews
    # it before each batch, so one run out says its task was lost and it may be asked for again.
    lease_token = models.CharField(max_length=64, blank=True)
    locked_until = models.DateTimeField(null=True, blank=True)
    jobs_total = models.PositiveIntegerField(default=0, help_text="Jobs to delete, as last counted.")
    jobs_deleted = models.PositiveIntegerField(default=0)
    kept = models.PositiveIntegerField(default=0, help_text="Jobs a labeling study or gold set holds: they stay.")
    clusters = models.JSONField(default=list, blank=True, help_text="Clusters its jobs leave with none: deleted.")
    priced = models.JSONField(default=list, blank=True, help_text="Such clusters with GPU prices: they stay.")
    clusters_deleted = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True, help_text="Why it failed.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"Deletion of {self.target_display} ({self.status})"

    @property
    def target_display(self) -> str:
        """What is deleted, as a page's heading says it: "connector api", "team ml", "3 jobs"."""
        if self.kind == self.Kind.JOBS:
            return self.name
        return f"{self.get_kind_display()} {self.name}"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    @property
    def count_display(self) -> str:
        return f"{self.jobs_deleted:,} of {self.jobs_total:,} jobs deleted"
