"""The service's own health and the fleet's recent waste as Prometheus metrics, for `/metrics`.

What an operator alerts on and graphs beside the fleet's other dashboards: imports and connector
pulls that stopped succeeding, jobs that wait for triage (a worker that is down), digests that were
not delivered, and each team's and cause's GPU time over the last `WINDOW` (jobs by start time, as
the dashboard counts them). Every figure is read from the database at scrape time in a fixed
number of aggregate queries, never one per job; the exposition format is prometheus_client's.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from django.db.models import Count, Max
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

from fleet.connectors.models import Connector
from fleet.models import IngestRun, Job
from triage import feedback
from triage.dashboard import queries
from triage.dashboard.periods import Period
from triage.digests.models import Delivery
from triage.models import Feedback, low_util_threshold
from triage.taxonomy import Category

WINDOW = timedelta(days=7)  # the span of the team and cause figures: the jobs started in it
PREFIX = "fleet_triage"


def exposition(now: datetime, hidden: frozenset[int] = frozenset()) -> bytes:
    """The metrics as Prometheus' text format; `hidden`: jobs the reader rates blind, left out of
    the cause figures (as every page leaves them out)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(now, hidden))
    return generate_latest(registry)


class _Collector:
    def __init__(self, now: datetime, hidden: frozenset[int]):
        self.now, self.hidden = now, hidden

    def collect(self) -> Iterator[Metric]:
        yield from _service_health()
        yield from _fleet_window(Period(self.now - WINDOW, self.now, "custom"), self.hidden)


def _gauge(name: str, documentation: str, labels: tuple[str, ...] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", documentation, labels=list(labels))


def _service_health() -> Iterator[Metric]:
    jobs = _gauge("jobs", "Jobs stored.")
    jobs.add_metric([], Job.objects.count())
    yield jobs
    waiting = _gauge("jobs_without_triage", "Stored jobs without a current triage result (workers behind or down).")
    waiting.add_metric([], Job.objects.exclude(triage_results__is_current=True).count())
    yield waiting

    runs = _gauge("ingest_runs", "Ingest runs (uploads, pushes, pulls) by status.", ("status",))
    last = _gauge(
        "ingest_last_finished_timestamp_seconds", "When the newest ingest run of each status finished.", ("status",)
    )
    counts = dict.fromkeys(IngestRun.Status.values, 0)
    finished: dict[str, datetime] = {}
    for row in IngestRun.objects.values("status").annotate(n=Count("pk"), last=Max("finished_at")).order_by():
        counts[row["status"]] = row["n"]
        if row["last"] is not None:
            finished[row["status"]] = row["last"]
    for status, count in counts.items():
        runs.add_metric([status], count)
    for status, at in sorted(finished.items()):
        last.add_metric([status], at.timestamp())
    yield runs
    yield last

    healthy = _gauge(
        "connector_healthy",
        "1 while an enabled connector's last pull succeeded, 0 while it fails or has never run.",
        ("connector", "kind"),
    )
    success = _gauge(
        "connector_last_success_timestamp_seconds", "When a connector last pulled successfully.", ("connector", "kind")
    )
    for connector in Connector.objects.filter(enabled=True).order_by("name"):
        labels = [connector.name, connector.kind]
        healthy.add_metric(labels, 1 if connector.health == "ok" else 0)
        if connector.last_success_at is not None:
            success.add_metric(labels, connector.last_success_at.timestamp())
    yield healthy
    yield success

    deliveries = _gauge(
        "digest_deliveries", "Digest and idle-alert deliveries (emails, chat webhook posts) by status.", ("status",)
    )
    by_status = dict.fromkeys(Delivery.Status.values, 0)
    by_status.update(Delivery.objects.values_list("status").annotate(n=Count("pk")).order_by())
    for status, count in by_status.items():
        deliveries.add_metric([status], count)
    yield deliveries


def _fleet_window(period: Period, hidden: frozenset[int]) -> Iterator[Metric]:
    jobs = queries.in_period(Job.objects.all(), period)
    threshold = low_util_threshold()
    pricing = queries.pricing(jobs)
    team = ("team",)
    figures = {
        "jobs": _gauge("team_jobs", "Jobs a team started in the last 7 days.", team),
        "hours": _gauge("team_gpu_hours", "GPU-hours of the jobs a team started in the last 7 days.", team),
        "unused": _gauge("team_unused_gpu_hours", "Unused GPU-hours of those jobs.", team),
        "low_util_jobs": _gauge(
            "team_low_utilization_jobs", f"Those jobs at or below {threshold:g} % mean GPU utilization.", team
        ),
        # A separate series, not a label: a label would split the series that alerts and dashboards already read.
        "slurm_avg_low_jobs": _gauge(
            "team_low_utilization_jobs_slurm_avg",
            "Those low-utilization jobs whose figure is Slurm's step-accounting average (no GPU samples, no time "
            "series: the rules cannot judge them).",
            team,
        ),
    }
    wasted = _gauge(
        "team_wasted_cost",
        "What those jobs' unused GPU-hours cost (costs in a currency without an exchange rate left out); no sample "
        "for a team with no cost figure (none of its jobs priced in one).",
        ("team", "currency"),
    )
    for row in queries.by_team(jobs, threshold, order="team__slug", conversion=pricing.conversion):
        for key, gauge in figures.items():
            gauge.add_metric([row["team__slug"]], row[key])
        if queries.cost_known(row):  # no sample where the pages show "–": unknown, not a 0 charted as free
            wasted.add_metric([row["team__slug"], pricing.currency], row["wasted_cost"])
    yield from figures.values()
    yield wasted

    judged = jobs.exclude(pk__in=hidden) if hidden else jobs
    cause_jobs = _gauge("cause_jobs", "Jobs started in the last 7 days that a cause was found in.", ("category",))
    cause_hours = _gauge(
        "cause_gpu_hours", "GPU-hours the causes found cost those jobs (recoverable estimate).", ("category",)
    )
    found = {row["category"]: row for row in queries.by_category(judged, pricing.conversion)}
    for category in Category:
        row = found.get(category.value, {})
        cause_jobs.add_metric([category.value], row.get("jobs", 0))
        cause_hours.add_metric([category.value], row.get("hours", 0.0))
    yield cause_jobs
    yield cause_hours
    # All answers, not the window's: a rule's disputed share moves slowly, and is alerted on as such.
    answers = _gauge(
        "cause_answers", "Answers job owners gave on the causes found, by answer.", ("category", "verdict")
    )
    tallies = feedback.tally(Feedback.objects.exclude(job_id__in=hidden) if hidden else Feedback.objects.all())
    for category in Category:
        tally = tallies.get(category, feedback.Tally())
        for verdict in Feedback.Verdict:
            answers.add_metric([category.value, verdict.value], getattr(tally, verdict.value))
    yield answers
    unclassified, triaged_low = queries.unclassified_share(judged, threshold)
    for name, documentation, value in (
        (
            "low_utilization_jobs_triaged",
            "Low-utilization jobs of the last 7 days that the rules judged (not those with too little data).",
            triaged_low,
        ),
        ("low_utilization_jobs_unclassified", "Those of them that no rule explains (unclassified).", unclassified),
    ):
        gauge = _gauge(name, documentation)
        gauge.add_metric([], value)
        yield gauge
