"""Fleet aggregates for the dashboard, computed in SQL over the jobs' summary columns.

Nothing here loads every job into Python: each figure is one aggregate query whose size does
not grow with the number of jobs.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from functools import reduce
from typing import NamedTuple

from django.db.models import Case, Count, F, FloatField, Max, Min, OuterRef, Q, Subquery, Sum, Value, When
from django.db.models.functions import Cast, Coalesce, Floor, NullIf
from django.urls import reverse

from fleet import costs
from fleet.canonical import SUCCESSFUL_STATES
from fleet.costs import Conversion
from fleet.logevents import LOG_EVENT_KINDS
from fleet.models import Cluster, Job
from fleet.money import to_cents, whole
from fleet.numbers import share_text
from fleet.quoting import joined, quoted

from .periods import Period

ZERO = Value(0.0)


def _float(expression):
    return Cast(expression, FloatField())


# Unused GPU-hours are only known for the covered part of a job, so the waste share divides
# by covered GPU-hours; otherwise a job with a hole would look less wasteful than it is.
COVERED_HOURS = F("gpu_hours") * Coalesce(F("coverage"), ZERO)

# The jobs whose mean GPU utilization is Slurm's step-accounting average, not from samples (as
# `Job.util_from_steps`); `util_source` is in the summary indexes, so counting them reads no row.
SLURM_AVG = Q(util_source=Job.UtilSource.SLURM_STEPS, mean_gpu_util__isnull=False)

# The jobs list's and the API's `?util_source=`: the jobs whose figure came from each source, by the
# names the API's `mean_gpu_util_source` and the jobs CSV give it (a job without a figure is in neither).
UTIL_SOURCES = {
    "samples": Q(mean_gpu_util__isnull=False) & ~Q(util_source=Job.UtilSource.SLURM_STEPS),
    "slurm_step_accounting": SLURM_AVG,
}
UTIL_SOURCE_CHOICES = [("samples", "GPU samples"), ("slurm_step_accounting", "Slurm avg (step accounting)")]


def _spend(conversion: Conversion):
    """SQL: the sum of the rows' costs in the reporting currency (those without a rate left out)."""
    return Coalesce(Sum(conversion.amount()), ZERO)


PRICED = Q(cost__isnull=False)  # a job with a cost
UNPRICED = Q(cost=None, gpu_hours__gt=0)  # a job with GPU-hours to price and no price (`fleet.costs.unpriced`)


def in_figures(conversion: Conversion) -> Q:
    """The jobs (or findings) whose cost a total in the conversion's currency holds: priced, in a currency it
    converts. `priced_jobs` counts these: a job priced in a currency without a rate is in no figure."""
    return PRICED & conversion.converts()


def in_no_figure(conversion: Conversion) -> Q:
    """The jobs (or findings) with GPU-hours priced in a currency without a rate: what the pages' note says
    a total leaves out (`Pricing.left_out`); counted as `left_out_jobs`."""
    return PRICED & ~conversion.converts() & Q(gpu_hours__gt=0)


def no_cost_figure(priced_jobs: int, unpriced_jobs: int, left_out_jobs: int = 0) -> bool:
    """The one rule for "–" instead of a cost (pages, digests and their subjects, the teams CSV and API's
    null): none of the jobs' costs is in the figure, and some have GPU-hours with no price or a price in a
    currency without an exchange rate, so the cost is unknown, not a 0 that reads as free."""
    return bool(unpriced_jobs or left_out_jobs) and not priced_jobs


def no_cost_why(unpriced_jobs: int, left_out_jobs: int) -> str:
    """Why there is no cost figure (`no_cost_figure`), as the "–" cells and the Cost cards say it
    (before "in this period"): no GPU-hour price, no exchange rate, or some of each."""
    if not left_out_jobs:
        return "no price set"
    return "no exchange rate set" if not unpriced_jobs else "no price or exchange rate set"


def cost_known(row: dict) -> bool:
    """Whether a row of `by_team` or `by_category` has a cost figure (`no_cost_figure`)."""
    return not no_cost_figure(row["priced_jobs"], row["unpriced_jobs"], row["left_out_jobs"])


def cost_figure(row: dict) -> dict:
    """What a page's or digest's row of `by_team` or `by_category` says of its cost: `cost_known`, and
    `no_cost_why` for the "–" cell when it is not known ("" when it is)."""
    if cost_known(row):
        return {"cost_known": True, "no_cost_why": ""}
    return {"cost_known": False, "no_cost_why": no_cost_why(row["unpriced_jobs"], row["left_out_jobs"])}


def cost_order(amount: str):
    """`by_team`'s order by a cost annotation ("spend", "wasted_cost"), the highest first and the
    teams without a cost figure (`cost_known`) last, after any priced at 0."""
    unknown = When(Q(priced_jobs=0) & (Q(unpriced_jobs__gt=0) | Q(left_out_jobs__gt=0)), then=Value(None))
    return Case(unknown, default=F(amount), output_field=FloatField()).desc(nulls_last=True)


def _wasted_cost(conversion: Conversion):
    """SQL: the sum of what the jobs' unused GPU-hours cost, in the reporting currency."""
    wasted = conversion.amount() * Coalesce(F("unused_gpu_hours"), ZERO) / NullIf(COVERED_HOURS, ZERO)
    return Coalesce(Sum(wasted), ZERO)


@dataclass(frozen=True)
class Totals:
    jobs: int
    gpu_hours: float
    covered_gpu_hours: float
    unused_gpu_hours: float
    idle_gpu_hours: float
    cost: float
    wasted_cost: float
    low_util_jobs: int
    # Jobs without a mean GPU utilization (no GPU samples): the histogram, the low-utilization count
    # and the waste leave them out, so the pages count them rather than let them vanish.
    no_util_jobs: int = 0
    # Jobs whose mean GPU utilization is Slurm's step-accounting average (no GPU samples; `Job.util_from_steps`):
    # counted like the others, and the pages say how many of the figures are such averages.
    slurm_avg_jobs: int = 0
    # Those of them at or below the low-utilization threshold: counted among the low-utilization jobs, but
    # with no time series the rules cannot judge them (neither a cause nor unclassified); from
    # `util_source`, not from the triage results, so a blind rater's count says nothing of the rules.
    slurm_avg_low_jobs: int = 0
    # Jobs whose cost is in the figures (`in_figures`), jobs with GPU-hours but no price (`fleet.costs.unpriced`),
    # and jobs priced in a currency without a rate (`in_no_figure`): with none of the first and some of the
    # others, the cost is not 0 but unknown (`cost_unknown`).
    priced_jobs: int = 0
    unpriced_jobs: int = 0
    left_out_jobs: int = 0

    @property
    def cost_unknown(self) -> bool:
        """No job's cost in the figures, but some with GPU-hours to price: the pages and digests show "–"
        for the cost and wasted cost, not a 0 that reads as free (and the cost note says why)."""
        return no_cost_figure(self.priced_jobs, self.unpriced_jobs, self.left_out_jobs)

    @property
    def no_cost_why(self) -> str:
        """Why the cost is unknown (`no_cost_why`), "" when it is not."""
        return no_cost_why(self.unpriced_jobs, self.left_out_jobs) if self.cost_unknown else ""

    @property
    def waste_share(self) -> float | None:
        return self.unused_gpu_hours / self.covered_gpu_hours if self.covered_gpu_hours else None

    @property
    def measured_jobs(self) -> int:
        """The jobs with a mean GPU utilization: what the histogram and the low-utilization count are of."""
        return self.jobs - self.no_util_jobs


class Pricing(NamedTuple):
    """How a page or digest adds its jobs' costs up: the currency its figures are in, the
    `conversion` that gets them there (pass it to `totals`, `by_team`, `by_category`), and a note
    for the reader ("" for none; a sentence without its full stop, after which a page tells an
    operator where to change prices and rates); `warning` when the note says a figure is incomplete."""

    currency: str
    note: str
    warning: bool
    conversion: Conversion
    left_out: tuple[str, ...] = ()  # the currencies left out of the figures for want of a rate


def _cost_by_currency(jobs, reporting: str) -> dict[str, float]:
    # Grouped in SQL: a row per currency, not one per job of the period.
    by_currency: dict[str, float] = {}
    for row in jobs.exclude(cost=None).order_by().values("currency").annotate(total=Sum(_float(F("cost")))):
        code = row["currency"] or reporting
        by_currency[code] = by_currency.get(code, 0.0) + (row["total"] or 0.0)
    return by_currency


def pricing(jobs, conversion: Conversion | None = None, *, shown=None) -> Pricing:
    """How these jobs' costs add up. Jobs all priced in one currency are added in it as they are;
    jobs in several are converted into the reporting currency at the operators' rates, and the note
    says at which, or which currencies were left out for want of a rate (and how much).

    `shown`: the jobs whose figures the page shows, when the currency is chosen over more (the
    overview chooses it over its period and the one before, so that both are in the same money):
    the note then names the amounts left out of the period shown, not of both."""
    conversion = conversion or Conversion.current()
    reporting = conversion.currency
    by_currency = _cost_by_currency(jobs, reporting)
    unpriced = unpriced_by(jobs if shown is None else shown, "cluster__name")
    if not by_currency:
        if not unpriced:  # no job with GPU-hours to price (an empty period): nothing is missing
            return Pricing(reporting, "", False, conversion)
        return Pricing(reporting, _none_priced_note(unpriced, in_period=shown is not None), True, conversion)
    # Priced jobs beside unpriced ones: the totals hold only the priced, so the note says what is missing.
    missing = _unpriced_note(unpriced, in_period=shown is not None)
    if len(by_currency) == 1:
        [code] = by_currency
        return Pricing(code, missing, bool(missing), Conversion(code))
    foreign = sorted(code for code in by_currency if code != reporting)
    unconverted = [code for code in foreign if conversion.rate_of(code) is None]
    if unconverted:
        in_shown = by_currency if shown is None else _cost_by_currency(shown, reporting)
        amounts = joined([f"{whole(in_shown.get(code, 0.0))} {code}" for code in unconverted])
        if shown is not None:
            amounts += " in this period"  # the week, in a digest
        note = (
            f"Costs in {joined(unconverted)} ({amounts}) are left out of the cost figures: no exchange rate"
            f" to {reporting} is set for {'them' if len(unconverted) > 1 else 'it'}"
        )
        return Pricing(reporting, _and(note, missing), True, conversion, tuple(unconverted))
    rates = joined([f"1 {code} = {conversion.rate_of(code):,.6g} {reporting}" for code in foreign])
    note = f"Costs in {joined(foreign)} are converted to {reporting} at {rates}"
    return Pricing(reporting, _and(note, missing), bool(missing), conversion)


def unpriced_by(jobs, key: str) -> dict[str, tuple[int, float]]:
    """Per value of `key` (a cluster's name, a team's slug), its jobs with GPU-hours but no cost (no
    price for their cluster and GPU model) and those GPU-hours: what every cost total leaves out."""
    return {row[key]: (row["jobs"], row["gpu_hours"]) for row in costs.unpriced(jobs, key)}


def _none_priced_note(unpriced: dict[str, tuple[int, float]], in_period: bool) -> str:
    """'No GPU-hour price is set for 3 jobs on cluster gamma in this period (12.5 GPU-hours), so there
    is no cost figure': no job is priced, so the costs are unknown ("–", `Totals.cost_unknown`), not 0."""
    jobs = sum(count for count, _ in unpriced.values())
    hours = sum(hours for _, hours in unpriced.values())
    where = f"cluster{'s' if len(unpriced) > 1 else ''} {joined(list(unpriced))}"
    if in_period:
        where += " in this period"  # the week, in a digest
    return (
        f"No GPU-hour price is set for {jobs} job{'' if jobs == 1 else 's'} on {where} ({hours:,.1f} GPU-hours),"
        " so there is no cost figure"
    )


def _unpriced_note(unpriced: dict[str, tuple[int, float]], in_period: bool) -> str:
    """'3 jobs on cluster gamma in this period (12.5 GPU-hours) have no GPU-hour price, so the cost
    figures leave them out', or "" when every job is priced."""
    if not unpriced:
        return ""
    jobs = sum(count for count, _ in unpriced.values())
    hours = sum(hours for _, hours in unpriced.values())
    where = f"cluster{'s' if len(unpriced) > 1 else ''} {joined(list(unpriced))}"
    if in_period:
        where += " in this period"  # the week, in a digest
    one = jobs == 1
    return (
        f"{jobs} job{'' if one else 's'} on {where} ({hours:,.1f} GPU-hours) {'has' if one else 'have'} no GPU-hour"
        f" price, so the cost figures leave {'it' if one else 'them'} out"
    )


def _and(note: str, more: str) -> str:
    """Two of a note's sentences as one (a note has no full stop of its own)."""
    return f"{note}; {more}" if more else note


def left_out_amounts_by_team(jobs, currencies: tuple[str, ...]) -> dict[str, list[dict]]:
    """Per team slug, what its jobs cost in each currency a total left out, by currency:
    [{"currency": "EUR", "amount": Decimal("20.00")}, ...]."""
    amounts: dict[str, list[dict]] = {}
    rows = (
        jobs.filter(currency__in=currencies)
        .exclude(cost=None)
        .values("team__slug", "currency")
        .annotate(total=Sum("cost"))
        .order_by("team__slug", "currency")
    )
    for row in rows:
        amount = to_cents(Decimal(str(row["total"])))
        amounts.setdefault(row["team__slug"], []).append({"currency": row["currency"], "amount": amount})
    return amounts


def amounts_said(parts: list[dict]) -> str:
    """Amounts by currency in words, as the teams CSV says what a cost left out: "20.00 EUR; 5.00 GBP", "" for none."""
    return "; ".join(f"{part['amount']:.2f} {part['currency']}" for part in parts)


def _job_figures(low_util_threshold: float, conversion: Conversion) -> dict:
    """SQL: what `totals` adds up over a set of jobs and `by_team` over each team's, one set of expressions for
    both, so a team's row and the fleet's cards count the same way."""
    return {
        "jobs": Count("pk"),
        "hours": Coalesce(Sum("gpu_hours"), ZERO),
        "covered": Coalesce(Sum(COVERED_HOURS), ZERO),
        "unused": Coalesce(Sum("unused_gpu_hours"), ZERO),
        "idle": Coalesce(Sum("idle_gpu_hours"), ZERO),
        "spend": _spend(conversion),
        "wasted_cost": _wasted_cost(conversion),
        "low_util_jobs": Count("pk", filter=Q(mean_gpu_util__lte=low_util_threshold)),
        "no_util_jobs": Count("pk", filter=Q(mean_gpu_util=None)),
        "slurm_avg_jobs": Count("pk", filter=SLURM_AVG),
        "slurm_avg_low_jobs": Count("pk", filter=SLURM_AVG & Q(mean_gpu_util__lte=low_util_threshold)),
        "priced_jobs": Count("pk", filter=in_figures(conversion)),
        "unpriced_jobs": Count("pk", filter=UNPRICED),
        "left_out_jobs": Count("pk", filter=in_no_figure(conversion)),
    }


def totals(jobs, low_util_threshold: float, conversion: Conversion | None = None) -> Totals:
    row = jobs.aggregate(**_job_figures(low_util_threshold, conversion or Conversion.current()))
    return Totals(
        jobs=row["jobs"],
        gpu_hours=row["hours"],
        covered_gpu_hours=row["covered"],
        unused_gpu_hours=row["unused"],
        idle_gpu_hours=row["idle"],
        cost=row["spend"],
        wasted_cost=row["wasted_cost"],
        low_util_jobs=row["low_util_jobs"],
        no_util_jobs=row["no_util_jobs"],
        slurm_avg_jobs=row["slurm_avg_jobs"],
        slurm_avg_low_jobs=row["slurm_avg_low_jobs"],
        priced_jobs=row["priced_jobs"],
        unpriced_jobs=row["unpriced_jobs"],
        left_out_jobs=row["left_out_jobs"],
    )


def no_such_cluster(cluster: str, clusters=None) -> str | None:
    """What is wrong with a cluster name from the address, or None: a name no cluster has would
    narrow to no job at all, an empty fleet that looks like a quiet one (the pages fall back to
    every cluster, the API refuses it). `clusters`: those the viewer may see (all by default); one
    they may not is answered as one that does not exist, so its name cannot be found by trying."""
    if cluster and not (Cluster.objects.all() if clusters is None else clusters).filter(name=cluster).exists():
        return f"There is no cluster named {quoted(cluster)}"
    return None


def narrowed(jobs, cluster: str):
    """The jobs of one cluster ("" for every cluster), and the newest start among them: where a
    period's presets end (`periods.period_from`)."""
    if cluster:
        jobs = jobs.filter(cluster__name=cluster)
    return jobs, jobs.aggregate(latest=Max("start_time"))["latest"]


def first_start(jobs) -> datetime | None:
    """The oldest start among the jobs: where the data begins."""
    return jobs.aggregate(first=Min("start_time"))["first"]


def data_starts_after(jobs, moment: datetime) -> date | None:
    """The day the jobs start when that is after `moment` (a previous period's start), else None: that
    period is then only partly in the data, and its figures are no full period's (the dashboard's cards,
    the digests' changes)."""
    first = first_start(jobs)
    return first.date() if first and first.date() > moment.date() else None


def in_period(jobs, period: Period):
    # A job belongs to the period it started in, so each job is counted exactly once.
    return jobs.filter(start_time__gte=period.start, start_time__lt=period.end)


def week_starts(period: Period, weeks: int) -> list[datetime]:
    """Mondays 00:00 UTC of the `weeks` ISO weeks that end with the one holding the period's last day."""
    last_monday = (period.end - timedelta(seconds=1)).date()
    last_monday -= timedelta(days=last_monday.weekday())
    return [datetime.combine(last_monday - timedelta(weeks=i), time.min, tzinfo=UTC) for i in range(weeks)][::-1]


def weekly_trend(jobs, period: Period, weeks: int = 12) -> list[dict]:
    """Used and unused GPU-hours for each of the `weeks` ISO weeks up to the period's end.

    One query: a UNION ALL of one aggregate per week, each a range of the `job_period_summary`
    index, which holds every column it reads. Portable, and on SQLite at 100,000 jobs ten times
    faster (19 against 200 ms, with an index holding these columns) than one pass with a filtered
    sum per week and column (36 conditions a row); grouping by a truncated date is slower still
    (SQLite computes it in Python).
    """
    starts = week_starts(period, weeks)
    per_week = [
        jobs.filter(start_time__gte=week_start, start_time__lt=week_start + timedelta(weeks=1))
        .annotate(week=Value(i))
        .values("week")
        .annotate(
            hours=Coalesce(Sum("gpu_hours"), ZERO),
            unused=Coalesce(Sum("unused_gpu_hours"), ZERO),
            covered=Coalesce(Sum(COVERED_HOURS), ZERO),
        )
        .order_by()
        for i, week_start in enumerate(starts)
    ]
    rows = {row["week"]: row for row in per_week[0].union(*per_week[1:], all=True)}  # a week without jobs: no row
    empty = {"hours": 0.0, "unused": 0.0, "covered": 0.0}
    trend = [{**empty, **rows.get(i, {}), "week": week_start} for i, week_start in enumerate(starts)]
    # Leading weeks before the first job are noise on a young fleet; keep the span that has data.
    while trend and not trend[0]["hours"]:
        trend.pop(0)
    return trend


def by_team(
    jobs,
    low_util_threshold: float,
    order: str = "-unused",
    limit: int | None = None,
    conversion: Conversion | None = None,
) -> list[dict]:
    rows = (
        jobs.values("team__slug", "team__name")
        .annotate(**_job_figures(low_util_threshold, conversion or Conversion.current()))
        # In the query, so the teams can be sorted by it; None without covered GPU time.
        .annotate(waste_share=F("unused") / NullIf(F("covered"), 0.0))
        .order_by(order, "team__slug")
    )
    return list(rows[:limit] if limit else rows)


# The job fields the overview breaks its GPU time down by (`by_value`): which GPU model, which queue (partition).
BREAKDOWN_FIELDS = ("gpu_model", "queue")


def by_values(jobs, low_util_threshold: float, conversion: Conversion | None = None) -> dict[str, list[dict]]:
    """Per field of `BREAKDOWN_FIELDS`, a row per value of it (its `value`; "" for the jobs with none recorded, a
    row of its own so the rows add up to `totals`) with `by_team`'s figures and `waste_share`, most unused
    GPU-hours first. One query grouped by every field at once (a fleet's GPU models x queues are a few dozen
    rows), each value's rows then added up as `totals_from_teams` adds the teams'."""
    figures = _job_figures(low_util_threshold, conversion or Conversion.current())
    combinations = list(jobs.values(*BREAKDOWN_FIELDS).annotate(**figures).order_by())
    tables = {}
    for by in BREAKDOWN_FIELDS:
        groups: dict[str, list[dict]] = {}
        for row in combinations:
            groups.setdefault(row[by], []).append(row)
        rows = []
        for value, group in groups.items():
            added = {key: sum(row[key] for row in group) for key in figures}
            added["waste_share"] = added["unused"] / added["covered"] if added["covered"] else None  # as Totals's
            rows.append(added | {"value": value})
        tables[by] = sorted(rows, key=lambda row: (-row["unused"], row["value"]))
    return tables


class Chargeback(NamedTuple):
    """What each team's GPU time and its waste cost over a period: the teams CSV and `GET
    /api/v1/teams/`. Per team (its slug as `team`): name, jobs, gpu_hours, unused_gpu_hours,
    waste_share (None without covered GPU time), cost and wasted_cost (None where the pages show "–",
    `cost_known`), low_util_jobs, cost_left_out
    (and costs_left_out, the same amounts by currency as [{"currency", "amount"}]):
    what its cost leaves out in currencies without an exchange rate ("20.00 EUR"), unpriced_jobs
    and unpriced_gpu_hours: its jobs with no GPU-hour price, which its cost leaves out too, and
    slurm_step_accounting_jobs: its jobs whose utilization figure is Slurm's step-accounting average."""

    currency: str
    teams: list[dict]


def chargeback(jobs, period: Period, low_util_threshold: float, order: str = "-unused") -> Chargeback:
    jobs = in_period(jobs, period)
    priced = pricing(jobs)
    left_out = left_out_amounts_by_team(jobs, priced.left_out) if priced.left_out else {}
    unpriced = unpriced_by(jobs, "team__slug")  # what the pages' cost note counts, per team
    teams = []
    for row in by_team(jobs, low_util_threshold, order=order, conversion=priced.conversion):
        unpriced_jobs, unpriced_hours = unpriced.get(row["team__slug"], (0, 0.0))
        known = cost_known(row)
        teams.append(
            {
                "team": row["team__slug"],
                "name": row["team__name"],
                "jobs": row["jobs"],
                "gpu_hours": round(row["hours"], 3),
                "unused_gpu_hours": round(row["unused"], 3),
                "waste_share": None if row["waste_share"] is None else round(row["waste_share"], 4),
                # To the cent by the one rule (half up), as the pages' whole units start from; None (null, an
                # empty cell) where the pages show "–": unknown, not 0, for a script that sums or charts it.
                "cost": float(to_cents(Decimal(repr(row["spend"])))) if known else None,
                "wasted_cost": float(to_cents(Decimal(repr(row["wasted_cost"])))) if known else None,
                "low_util_jobs": row["low_util_jobs"],
                "cost_left_out": amounts_said(left_out.get(row["team__slug"], [])),
                "costs_left_out": left_out.get(row["team__slug"], []),
                "unpriced_jobs": unpriced_jobs,
                "unpriced_gpu_hours": round(unpriced_hours, 3),
                "slurm_step_accounting_jobs": row["slurm_avg_jobs"],
            }
        )
    return Chargeback(priced.currency, teams)


def totals_from_teams(rows: list[dict]) -> Totals:
    """The period's totals as the sum of every team's row: one scan of the jobs instead of two."""
    return Totals(
        jobs=sum(r["jobs"] for r in rows),
        gpu_hours=sum(r["hours"] for r in rows),
        covered_gpu_hours=sum(r["covered"] for r in rows),
        unused_gpu_hours=sum(r["unused"] for r in rows),
        idle_gpu_hours=sum(r["idle"] for r in rows),
        cost=sum(r["spend"] for r in rows),
        wasted_cost=sum(r["wasted_cost"] for r in rows),
        low_util_jobs=sum(r["low_util_jobs"] for r in rows),
        no_util_jobs=sum(r["no_util_jobs"] for r in rows),
        slurm_avg_jobs=sum(r["slurm_avg_jobs"] for r in rows),
        slurm_avg_low_jobs=sum(r["slurm_avg_low_jobs"] for r in rows),
        priced_jobs=sum(r["priced_jobs"] for r in rows),
        unpriced_jobs=sum(r["unpriced_jobs"] for r in rows),
        left_out_jobs=sum(r["left_out_jobs"] for r in rows),
    )


def by_user(jobs, limit: int = 20) -> list[dict]:
    return list(
        jobs.values("user")
        .annotate(
            jobs=Count("pk"),
            hours=Coalesce(Sum("gpu_hours"), ZERO),
            unused=Coalesce(Sum("unused_gpu_hours"), ZERO),
        )
        .order_by("-unused", "user")[:limit]
    )


def utilization_histogram(jobs, bucket: int = 10) -> list[int]:
    """Job counts per utilization bucket (0–10 %, 10–20 %, …, 90–100 %)."""
    counts = [0] * (100 // bucket)
    rows = (
        jobs.filter(mean_gpu_util__isnull=False)
        .annotate(bucket=Floor(F("mean_gpu_util") / bucket))
        .values("bucket")
        .annotate(n=Count("pk"))
    )
    for row in rows:
        index = min(int(row["bucket"]), len(counts) - 1)
        counts[index] += row["n"]
    return counts


def hours_text(value: float | None) -> str:
    """GPU-hours as every page and digest writes them: to a tenth with a thousands separator ("1,234.5",
    "0.4"), on the cards and in every table alike; "–" for none."""
    return "–" if value is None else f"{float(value):,.1f}"


def hours_in_tenths(hours: float) -> Decimal:
    """Hours as `hours_text` shows them, to a tenth, as a number to add up what is shown."""
    return Decimal(f"{float(hours):.1f}")


def causes_account_for(cause_hours: list[float], unused_gpu_hours: float) -> str:
    """The causes' recoverable GPU-hours added up, against the unused GPU-hours: the one sentence a team's page
    (under its causes) and its weekly digest (`unattributed_note`) say it in, so both give the same total.

    The total is of the exact hours, rounded once, as a spreadsheet's total row is; the causes listed beside it
    are each rounded on their own, so they may add up to a tenth or so more or less (the demo's genai team in
    2026-W47: causes listed as 111.2 in all, 111.3 exactly). Where they do, it says so and what they add up to,
    so that neither figure reads as a mistake."""
    total = hours_text(sum(cause_hours))
    listed = hours_text(float(sum((hours_in_tenths(hours) for hours in cause_hours), Decimal(0))))
    rounding = (
        f" (each cause is rounded to a tenth on its own: as listed they add up to {listed})" if listed != total else ""
    )
    return f"Causes account for {total} of the {hours_text(unused_gpu_hours)} unused GPU-hours{rounding}."


def percent_text(value: float | None) -> str:
    """A figure already in percent (16.43, the study's share of a cause) written as `share_text` writes a
    share: "16 %"; "–" for none."""
    return share_text(None if value is None else value / 100)


def compare(current: float | None, previous: float | None, *, share: bool = False) -> tuple[str, int | None]:
    """A figure against the period before, as the dashboard and the digests word it: (text, direction).

    Direction is 1 (up), -1 (down), 0 (unchanged: what rounds to no change, never "-0 %") or None
    when there is nothing to compare with. A share changes by percentage points; from 0, any rise
    is "up from 0" (no percentage of nothing), and 0 after 0 is unchanged.
    """
    if current is None or previous is None:
        return "", None
    if share:
        points = round((current - previous) * 100)
        return ("unchanged", 0) if points == 0 else (f"{points:+,d} pts", 1 if points > 0 else -1)
    if not previous:
        return ("unchanged", 0) if not current else ("up from 0", 1 if current > 0 else -1)
    percent = round((current - previous) / previous * 100)
    # With a thousands separator, as every other figure ("+1,125 %", where it read "+1125 %").
    return ("unchanged", 0) if percent == 0 else (f"{percent:+,d} %", 1 if percent > 0 else -1)


def waste_judged(current: Totals) -> bool | None:
    """`worse_when_up` for a waste figure (unused GPU-hours, waste share, wasted cost): True, or None
    (a change shown but not judged) for a period without jobs, which wasted nothing because it ran
    nothing."""
    return True if current.jobs else None


def waste_amount_judged(current: Totals, previous: Totals, direction: int | None) -> bool | None:
    """`worse_when_up` for an amount of waste (unused GPU-hours, wasted cost) that moved `direction`
    (a `compare` direction): as `waste_judged`, but not judged (None) when the waste share moved the
    other way. Fewer unused GPU-hours while the share rose are fewer jobs, not less waste; more while
    it fell are more work, not more waste. The share moves by the points `compare` shows."""
    share_direction = compare(current.waste_share, previous.waste_share, share=True)[1]
    if direction and share_direction and direction != share_direction:
        return None
    return waste_judged(current)


def trend(direction: int | None, worse_when_up: bool | None) -> str:
    """better / worse / same / neutral for a `compare` direction, or '' without one."""
    if direction is None:
        return ""
    if direction == 0:
        return "same"
    if worse_when_up is None:
        return "neutral"
    return "worse" if (direction > 0) == worse_when_up else "better"


def by_category(jobs, conversion: Conversion | None = None) -> list[dict]:
    """Current findings of these jobs per category: jobs, recoverable GPU-hours and cost (in the
    reporting currency), and how many of its jobs are priced and unpriced (`cost_known`); the most
    hours first. The digests' causes are these rows too (`triage.digests.findings.waste_by_category`),
    so a page and a digest of the same jobs list the same causes, hours and order."""
    from triage.models import Finding

    conversion = conversion or Conversion.current()
    rows = (
        Finding.objects.filter(result__is_current=True, job__in=jobs)
        .values("category")
        .annotate(
            jobs=Count("job", distinct=True),
            hours=Coalesce(Sum("gpu_hours"), ZERO),
            spend=_spend(conversion),
            # A finding's cost is its job's price for its GPU-hours (None without a price): a cause
            # found only in unpriced jobs, or in jobs priced in a currency without a rate, has no cost
            # figure (`cost_known`), not a cost of 0.
            priced_jobs=Count("job", distinct=True, filter=in_figures(conversion)),
            unpriced_jobs=Count("job", distinct=True, filter=UNPRICED),
            left_out_jobs=Count("job", distinct=True, filter=in_no_figure(conversion)),
        )
        .order_by("-hours", "category")
    )
    return list(rows)


def unclassified_share(jobs, low_util_threshold: float) -> tuple[int, int]:
    """(low-utilization jobs no rule explains, low-utilization jobs the rules judged) in these jobs. A job
    they could not judge (insufficient data, such as a Slurm step-accounting average with no time series,
    or an error) is in neither: counted, "every one has a cause" would take in a job with none."""
    from triage.models import JobTriage, TriageStatus

    results = JobTriage.objects.filter(is_current=True, job__in=jobs.low_utilization(low_util_threshold)).exclude(
        status__in=[TriageStatus.INSUFFICIENT_DATA, TriageStatus.ERROR]
    )
    row = results.aggregate(total=Count("pk"), unclassified=Count("pk", filter=Q(status="unclassified")))
    return row["unclassified"], row["total"]


class LowNotJudged(NamedTuple):
    """The low-utilization jobs of a period that `unclassified_share`'s triaged figure leaves out, by why:
    the card counts them all, the note under the causes only the judged, and the page says the rest."""

    not_triaged: int  # no current result: queued, or its task lost until the sweep re-queues it
    insufficient_data: int  # too little data to judge (a Slurm step-accounting average: no time series)
    error: int  # triage failed
    blinded: int  # rated by this viewer in a blind study: counted whatever the rules found

    @property
    def total(self) -> int:
        return self.not_triaged + self.insufficient_data + self.error + self.blinded


def low_not_judged(jobs, judged, low_util_threshold: float) -> LowNotJudged:
    """Why the low-utilization `jobs` outside `unclassified_share(judged)` are outside it. `judged` is
    `jobs` less those the viewer rates blind, which are counted as such alone, never by their results."""
    from triage.models import JobTriage, TriageStatus

    current = JobTriage.objects.filter(job=OuterRef("pk"), is_current=True).values("status")[:1]
    judged_q = Q(pk__in=judged.values("pk"))
    row = (
        jobs.low_utilization(low_util_threshold)
        .annotate(current_status=Subquery(current))
        .aggregate(  # one query, as the page counts its queries
            not_triaged=Count("pk", filter=judged_q & Q(current_status__isnull=True)),
            insufficient=Count("pk", filter=judged_q & Q(current_status=TriageStatus.INSUFFICIENT_DATA)),
            error=Count("pk", filter=judged_q & Q(current_status=TriageStatus.ERROR)),
            blinded=Count("pk", filter=~judged_q),
        )
    )
    return LowNotJudged(row["not_triaged"], row["insufficient"], row["error"], row["blinded"])


def category_trend(jobs, category: str, period: Period, weeks: int = 12) -> list[dict]:
    """Jobs detected with one category, and their GPU-hours, per week up to the period's end, from
    the week of the first of `jobs` on: before it a week has no data, and its zero would read as a
    week of jobs without the cause (a week of jobs without it still counts zero)."""
    from triage.models import Finding

    first_start = jobs.aggregate(first=Min("start_time"))["first"]
    if first_start is None:
        return []
    starts = [start for start in week_starts(period, weeks) if start + timedelta(weeks=1) > first_start]
    if not starts:
        return []
    aggregates = {}
    for i, week_start in enumerate(starts):
        in_week = Q(job__start_time__gte=week_start, job__start_time__lt=week_start + timedelta(weeks=1))
        aggregates[f"jobs_{i}"] = Count("job", filter=in_week, distinct=True)
        aggregates[f"hours_{i}"] = Coalesce(Sum("gpu_hours", filter=in_week), ZERO)
    row = Finding.objects.filter(result__is_current=True, category=category, job__in=jobs).aggregate(**aggregates)
    return [{"week": s, "jobs": row[f"jobs_{i}"], "hours": row[f"hours_{i}"]} for i, s in enumerate(starts)]


# A job page lists this many of the job's log events; a log can hold hundreds of thousands (a progress
# bar written line by line, a checkpoint every step), so the page says how many there are of each kind
# and lists one kind on request.
EVENTS_SHOWN = 500


@dataclass(frozen=True)
class LogEventsPage:
    events: list  # the LogEvent rows to list, in log order
    counts: list[tuple[str, int]]  # (kind, how many) for every kind the job has, in LOG_EVENT_KINDS order
    kind: str  # the kind listed, or "" for all
    all_total: int  # how many events the job has

    @property
    def total(self) -> int:
        """How many events of the kind listed (or in all) the job has."""
        return dict(self.counts)[self.kind] if self.kind else self.all_total

    @property
    def more(self) -> bool:
        return self.total > len(self.events)


def file_url(job_pk: int, artifact_pk: int, line: int | None = None) -> str:
    """The page of one of a job's files, opened at `line` (marked) when one is given."""
    url = reverse("dashboard:job-file", args=[job_pk, artifact_pk])
    return f"{url}?line={line}#L{line}" if line else url


def job_files(job) -> dict[str, int]:
    """The files the job's current findings quote (log lines, code), by "kind:path", for the
    `job_file_url` links; only those, since a job can bring a repository of files."""
    from triage.models import Finding

    quoted = set()
    for evidence in Finding.objects.filter(job=job, result__is_current=True).values_list("evidence", flat=True):
        evidence = evidence if isinstance(evidence, dict) else {}
        for kind, key in (("log", "log_lines"), ("script", "code")):
            quoted.update((kind, item.get("path")) for item in evidence.get(key) or [] if isinstance(item, dict))
    if not quoted:
        return {}
    rows = job.artifacts.order_by().filter(path__in={path for _, path in quoted if isinstance(path, str)})
    return {f"{kind}:{path}": pk for pk, kind, path in rows.values_list("pk", "kind", "path") if (kind, path) in quoted}


def log_events_page(job, kind: str = "") -> LogEventsPage:
    """The job's log events for its page: the first EVENTS_SHOWN, of one kind when `kind` is one the job
    has (anything else lists all), with the count of each kind."""
    found = dict(job.log_events.order_by().values_list("kind").annotate(n=Count("pk")))
    counts = sorted(found.items(), key=lambda item: (_KIND_ORDER.get(item[0], len(_KIND_ORDER)), item[0]))
    kind = kind if kind in found else ""
    events = job.log_events.select_related("artifact")
    if kind:
        events = events.filter(kind=kind)
    return LogEventsPage(list(events[:EVENTS_SHOWN]), counts, kind, sum(found.values()))


_KIND_ORDER = {name: index for index, name in enumerate(LOG_EVENT_KINDS)}


RUNS_EACH_SIDE = 10  # runs listed before and after the job on its page


@dataclass
class JobRuns:
    """The other runs of a job: the jobs of the same name, user and cluster (a job submitted again,
    a nightly run, a sweep), for "did the change work?" on the job's page."""

    earlier: list  # up to RUNS_EACH_SIDE runs before the job, oldest first
    later: list  # up to RUNS_EACH_SIDE runs after it, oldest first
    earlier_total: int
    later_total: int
    # The run the job is compared with (`runs_to_compare_with`, as the digests' runs that got better
    # are), however far back, or None; and the states of the earlier runs after it, which it skips.
    previous: object = None
    skipped_states: list = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.earlier_total + self.later_total

    @property
    def skipped_state_names(self) -> str:
        """The skipped runs' states, each once, as the runs table writes them: "FAILED, TIMEOUT"."""
        return ", ".join(dict.fromkeys(self.skipped_states))


def _runs_of(cluster_id, user, name) -> Q:
    """Runs of one job: the jobs of its cluster, user and name. The arguments are a job's values, or
    `OuterRef`s in a subquery."""
    return Q(cluster_id=cluster_id, user=user, name=name)


def _earlier(start_time, pk) -> Q:
    """Jobs before one: started earlier, or at the same moment with a lower id (a sweep submitted at once)."""
    return Q(start_time__lt=start_time) | Q(start_time=start_time, pk__lt=pk)


def job_runs(jobs, job) -> JobRuns:
    """The runs of `job` (of the queryset `jobs`, which scopes them to what the viewer may see)
    before and after it, every one whatever its state, and the run it is compared with, which skips
    those that did not end successfully; none when the job has no name to match its runs by."""
    if not job.name:
        return JobRuns([], [], 0, 0)
    others = jobs.filter(_runs_of(job.cluster_id, job.user, job.name)).exclude(pk=job.pk).select_related("cluster")
    before = _earlier(job.start_time, job.pk)
    earlier = others.filter(before)
    later = others.exclude(before)
    listed = list(earlier.order_by("-start_time", "-pk")[:RUNS_EACH_SIDE])[::-1]
    previous = None
    if listed:
        compared = runs_to_compare_with(jobs, job.cluster_id, job.user, job.name, job.start_time, job.pk)
        found = compared.select_related("cluster").first()
        previous = next((run for run in listed if found is not None and run.pk == found.pk), found)
    skipped: list = []
    if listed and (previous is None or previous.pk != listed[-1].pk):  # runs in between: say which
        between = earlier
        if previous is not None:  # the runs after it
            between = earlier.exclude(_earlier(previous.start_time, previous.pk)).exclude(pk=previous.pk)
        skipped = list(between.order_by("start_time", "pk").values_list("state", flat=True))
    return JobRuns(
        earlier=listed,
        later=list(later.order_by("start_time", "pk")[:RUNS_EACH_SIDE]),
        earlier_total=earlier.count(),
        later_total=later.count(),
        previous=previous,
        skipped_states=skipped,
    )


@dataclass
class RunChange:
    """What changed from one run of a job to the next: its mean utilization and the causes found."""

    util_before: float | None
    util_after: float | None
    gone: list  # causes found in the run before, not in this one
    new: list  # causes found in this run, not in the run before
    kept: list  # causes found in both
    # False when only the utilization is compared: a run's figure is Slurm's step-accounting average,
    # which has no time series for the rules to judge, so neither its causes nor their absence say anything.
    causes_compared: bool = True
    before_from_steps: bool = False  # a figure that is Slurm's step-accounting average (marked Slurm avg)
    after_from_steps: bool = False


def run_change(before, after) -> RunChange:
    """Compare two runs whose `categories` `_with_triage` has set (in the order it lists them)."""
    before_causes, after_causes = list(before.categories), list(after.categories)
    return RunChange(
        util_before=before.mean_gpu_util,
        util_after=after.mean_gpu_util,
        gone=[c for c in before_causes if c not in after_causes],
        new=[c for c in after_causes if c not in before_causes],
        kept=[c for c in after_causes if c in before_causes],
        before_from_steps=before.util_from_steps,
        after_from_steps=after.util_from_steps,
    )


def util_change(before, after) -> RunChange | None:
    """The utilization alone of two runs one of which has Slurm's step-accounting average for a figure (the
    rules cannot judge an average, so no causes are compared): as the digests' runs that got better list
    them. None unless both have a figure and one is such an average."""
    if before.mean_gpu_util is None or after.mean_gpu_util is None:
        return None
    if not (before.util_from_steps or after.util_from_steps):
        return None
    return RunChange(
        util_before=before.mean_gpu_util,
        util_after=after.mean_gpu_util,
        gone=[],
        new=[],
        kept=[],
        causes_compared=False,
        before_from_steps=before.util_from_steps,
        after_from_steps=after.util_from_steps,
    )


def _ended_successfully() -> Q:
    """Jobs whose state says they ran to the end (`SUCCESSFUL_STATES`, in any case), and jobs with no
    state: an archive may leave `state` out (it is optional), and a fleet exported that way would
    otherwise never show a run that got better."""
    return reduce(operator.or_, (Q(state__iexact=state) for state in SUCCESSFUL_STATES), Q(state=""))


def ended_successfully(job) -> bool:
    """Whether one job ended successfully by the rule `_ended_successfully` filters with: a state in
    `SUCCESSFUL_STATES` in any case, or no state. For a job already loaded (the job page's), where a
    query for it would be one more round trip; keep the two alike."""
    return not job.state or job.state.upper() in SUCCESSFUL_STATES


def runs_to_compare_with(jobs, cluster_id, user, name, start_time, pk):
    """The runs of a job (of `jobs`: same cluster, user and name) earlier than the one with this start
    and id that ended successfully or have no state (`_ended_successfully`), the latest first: the
    first is "the run before" that run, for the digests' runs that got better and the job page's
    what changed alike. A failed, cancelled or timed-out run is skipped: its utilization may be the
    crash or the hang, not the cause. The arguments are a job's values, or `OuterRef`s in a subquery."""
    return jobs.filter(_runs_of(cluster_id, user, name), _earlier(start_time, pk), _ended_successfully()).order_by(
        "-start_time", "-pk"
    )


def improved_runs(jobs, period: Period, threshold: float, limit: int = 5) -> list:
    """Jobs of the queryset `jobs` started in the period that ended successfully above `threshold` mean
    utilization while their run before was at or below it: a fix that worked. The run before is the
    last earlier run (of `jobs`, same name, user and cluster, whenever it ran) that ended successfully
    too: a failed, cancelled or timed-out run says nothing about a fix, and its low utilization may be
    the crash or the hang, not the cause. The biggest rise first, each with `previous_util`,
    `previous_util_source` (the run before's `util_source`), `previous_id` and `previous_start` set. A
    job of several such runs in the period shows once: its later runs' run before is already above the
    line."""
    ended_well = _ended_successfully()
    before = runs_to_compare_with(
        jobs, OuterRef("cluster_id"), OuterRef("user"), OuterRef("name"), OuterRef("start_time"), OuterRef("pk")
    )
    runs = (
        in_period(jobs, period)
        .exclude(name="")
        .filter(ended_well, mean_gpu_util__gt=threshold)
        .annotate(
            previous_util=Subquery(before.values("mean_gpu_util")[:1]),
            previous_util_source=Subquery(before.values("util_source")[:1]),
            previous_id=Subquery(before.values("pk")[:1]),
            previous_start=Subquery(before.values("start_time")[:1]),
        )
        .filter(previous_util__lte=threshold)
        .select_related("cluster")
        .order_by(F("previous_util") - F("mean_gpu_util"), "start_time", "pk")
    )
    return list(runs[:limit])
