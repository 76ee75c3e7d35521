"""Everything the digests read from the triage engine's models, in one place.

The triage models are still growing; only this module names them, so a change there is a change
here. All figures are SQL aggregates over the *current* triage of each job (`result__is_current`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Sum, Value
from django.db.models.functions import Coalesce

from fleet.costs import Conversion
from triage.dashboard import queries
from triage.feedback import Tally, set_aside_causes, tally
from triage.models import Feedback, Finding, JobTriage, TriageStatus
from triage.taxonomy import Category

ZERO = Value(0.0)
HEALTHY, UNCLASSIFIED = TriageStatus.HEALTHY.value, TriageStatus.UNCLASSIFIED.value
INSUFFICIENT_DATA = TriageStatus.INSUFFICIENT_DATA.value
# Keys of a finding's guidance JSON (triage.guidance) that may hold the change to make, most specific first.
FIX_KEYS = ("fix", "one_line", "change", "action")
# The changes triage.guidance writes are one or two sentences, the second with this job's own settings.
FIX_MAX_CHARS = 280


@dataclass(frozen=True)
class CategoryWaste:
    """A cause's recoverable GPU-hours in some jobs. No cost: no digest shows one by cause, and a sum of
    the findings' costs would read 0 for a cause found only in unpriced jobs (the dashboard's
    `queries.by_category` counts those, for its "–")."""

    category: Category
    gpu_hours: float  # recoverable GPU-hours attributed to this cause
    jobs: int

    @property
    def label(self) -> str:
        return self.category.label


@dataclass(frozen=True)
class CauseFix:
    """One cause of a job and the change to make for it (or, when its guidance names none, what was seen)."""

    category: Category
    fix: str
    summary: str


@dataclass
class JobWaste:
    job_id: int
    recoverable_gpu_hours: float  # of the causes nobody set aside
    categories: list[Category] = field(default_factory=list)
    fix: str = ""  # the change to make, from the guidance of the job's biggest finding not set aside
    summary: str = ""  # what that finding saw, shown when its guidance names no change
    set_aside: list[Category] = field(default_factory=list)  # causes answered wrong or intended
    # Every cause not set aside with its own change, the costliest first (`fix` is the first's).
    fixes: list[CauseFix] = field(default_factory=list)


@dataclass(frozen=True)
class SetAside:
    """The jobs of the week whose people answered every cause found wrong or intended: nothing
    left to fix, so they are not among the fixes that pay most (their waste still counts)."""

    jobs: int = 0
    gpu_hours: float = 0.0
    job_ids: tuple[int, ...] = ()  # those jobs, the most GPU-hours set aside first, for the digest to name


def current_findings(jobs):
    return Finding.objects.filter(result__is_current=True, job__in=jobs)


def waste_by_category(jobs, conversion: Conversion | None = None) -> list[CategoryWaste]:
    """Recoverable GPU-hours and jobs per cause: the dashboard's rows (`queries.by_category`, their owner),
    so a digest's causes are its team page's and Causes page's."""
    known = set(Category.values)
    return [
        CategoryWaste(Category(row["category"]), row["hours"], row["jobs"])
        for row in queries.by_category(jobs, conversion)
        if row["category"] in known
    ]


def top_jobs(jobs, limit: int) -> tuple[list[JobWaste], SetAside]:
    """The jobs with the most recoverable GPU-hours, each with its causes and the change each needs
    (the one that pays most first), and what was left out of them.

    A cause its people answered wrong or intended (and nobody right) is set aside: its hours do not
    rank the job and its guidance is not the job's fix, since the team has said it will not make
    that change. A job whose every cause is set aside is not listed; `SetAside` counts those jobs
    and their hours. The causes list of a listed job still names every cause found.
    """
    set_aside = set_aside_causes(jobs)
    hours: dict[int, float] = {}
    turned_down: dict[int, float] = {}
    for job_id, category, gpu_hours in (
        current_findings(jobs).filter(gpu_hours__gt=0).values_list("job_id", "category", "gpu_hours")
    ):
        into = turned_down if (job_id, category) in set_aside else hours
        into[job_id] = into.get(job_id, 0.0) + gpu_hours
    ranked = sorted(hours, key=lambda job_id: (-hours[job_id], job_id))[:limit]
    left_out = sorted(
        (job_id for job_id in turned_down if job_id not in hours), key=lambda job_id: (-turned_down[job_id], job_id)
    )
    by_job = {job_id: JobWaste(job_id, hours[job_id]) for job_id in ranked}
    # One query for the findings of all the listed jobs; the biggest finding of a job gives its fix.
    for finding in (
        current_findings(jobs)
        .filter(job_id__in=by_job)
        .only("job_id", "category", "gpu_hours", "summary", "guidance")
        .order_by("job_id", "-gpu_hours", "category")
    ):
        entry = by_job[finding.job_id]
        category = Category(finding.category) if finding.category in Category.values else None
        if category is not None and category not in entry.categories:
            entry.categories.append(category)
        if (finding.job_id, finding.category) in set_aside:
            if category is not None:
                entry.set_aside.append(category)
            continue
        if not entry.summary:
            entry.fix = fix_line(finding.guidance)
            entry.summary = one_line(finding.summary)
        if category is not None and all(known.category != category for known in entry.fixes):
            entry.fixes.append(CauseFix(category, fix_line(finding.guidance), one_line(finding.summary)))
    return list(by_job.values()), SetAside(
        len(left_out), sum(turned_down[job_id] for job_id in left_out), tuple(left_out)
    )


def causes_of(job_ids) -> dict[int, list[Category]]:
    """The causes the current triage found in each of these jobs, the costliest first."""
    by_job: dict[int, list[Category]] = {}
    found = current_findings(job_ids).order_by("job_id", "-gpu_hours", "category").values_list("job_id", "category")
    for job_id, category in found:
        if category in Category.values:
            by_job.setdefault(job_id, []).append(Category(category))
    return by_job


@dataclass(frozen=True)
class Answer:
    """One person's answer on a cause found in a listed job (the job page's *Is this why…?*)."""

    category: Category
    verdict: str  # its label: "Wrong: not the cause"
    user: str


def answers_on(job_ids) -> dict[int, list[Answer]]:
    """The answers given on the causes of these jobs, by job, oldest first: a digest shows a team
    what it said of a finding instead of only repeating it."""
    by_job: dict[int, list[Answer]] = {}
    given = Feedback.objects.filter(job_id__in=job_ids).select_related("user").order_by("job_id", "updated_at")
    for answer in given:
        if answer.category in Category.values:
            by_job.setdefault(answer.job_id, []).append(
                Answer(Category(answer.category), answer.get_verdict_display(), answer.user.get_username())
            )
    return by_job


def answers_given(period, hidden: frozenset[int] = frozenset()) -> list[tuple[Category, Tally]]:
    """The answers given (or changed) during the period, on any job but those in `hidden`, added up
    per cause; the most disputed first."""
    given = Feedback.objects.filter(updated_at__gte=period.start, updated_at__lt=period.end)
    if hidden:
        given = given.exclude(job_id__in=hidden)
    return sorted(tally(given).items(), key=lambda item: (-item[1].wrong, -item[1].total, item[0].label))


def unclassified(jobs) -> dict:
    """Low-utilization jobs the rules could not explain: how many, and the unused GPU-hours they hold."""
    row = JobTriage.objects.filter(is_current=True, status=TriageStatus.UNCLASSIFIED, job__in=jobs).aggregate(
        jobs=Count("job", distinct=True), unused=Coalesce(Sum("job__unused_gpu_hours"), ZERO)
    )
    return {"jobs": row["jobs"], "unused_gpu_hours": row["unused"]}


def unused_by_status(jobs) -> dict[str, float]:
    """Unused GPU-hours of these jobs by the status of their current triage (healthy, classified,
    unclassified, ...): where the hours no cause accounts for are."""
    rows = (
        JobTriage.objects.filter(is_current=True, job__in=jobs)
        .values("status")
        .annotate(unused=Coalesce(Sum("job__unused_gpu_hours"), ZERO))
        .order_by()
    )
    return {row["status"]: row["unused"] for row in rows}


def fix_line(guidance) -> str:
    """The change to make, on one line, from a finding's guidance (whatever its shape); '' if none."""
    if isinstance(guidance, str):
        return one_line(guidance)
    if not isinstance(guidance, dict):
        return ""
    for key in FIX_KEYS:
        value = guidance.get(key)
        if isinstance(value, dict):  # e.g. {"change": {"text": ..., "before": ..., "after": ...}}
            value = value.get("text") or value.get("summary")
        if isinstance(value, str) and value.strip():
            return one_line(value)
    return ""


def one_line(text: str) -> str:
    text = " ".join((text or "").split())
    if len(text) > FIX_MAX_CHARS:
        text = text[: FIX_MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return text
