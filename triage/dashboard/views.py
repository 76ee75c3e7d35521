"""Dashboard pages: thin views over the aggregate queries, scoped to the jobs a user may see."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from urllib.parse import parse_qsl, urlencode, urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import F, QuerySet
from django.forms import BaseModelFormSet, modelformset_factory
from django.http import FileResponse, Http404, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone

from config.api_paths import within_site
from config.methods import read_only, with_form
from fleet import audit
from fleet.access import operator_required, sees_whole_fleet
from fleet.canonical import as_utc
from fleet.connectors.kubernetes import log_runs
from fleet.costs import Conversion, jobs_priced_by, priced_in, unpriced_jobs
from fleet.downloads import download_name, series_download
from fleet.exports import stream_csv_rows
from fleet.gpu_models import gpu_model_key
from fleet.logcut import find_gap
from fleet.models import (
    Artifact,
    Cluster,
    ExchangeRate,
    GpuModelPrice,
    Job,
    Team,
    cluster_prices,
    price_among,
    same_model_message,
)
from fleet.money import whole
from fleet.numbers import hours_to_thousandth, share_text
from fleet.series import from_parquet_bytes
from triage import feedback
from triage.guidance import GUIDES, category_guide
from triage.labeling.services import blinded_job_ids, findings_hidden_from
from triage.models import Finding, JobTriage, RuleSet, TriageStatus, low_util_threshold
from triage.taxonomy import CATEGORY_METRICS, Category

from . import figures, files, queries, timeline
from .causes import team_causes
from .filters import NOT_TRIAGED, RECOVERABLE, SORTS, JobFilter, recoverable_hours
from .periods import PRESETS, Period, parse_period

# The teams table's sorts: each `?sort=` key's order, and the name its column heading gives it (the
# sorts are also links under those names on a phone, where the headings are not shown).
TEAM_SORTS = {
    "team": ("team__slug", "Team"),
    "gpu_hours": ("-hours", "GPU-hours"),
    "unused": ("-unused", "Unused GPU-hours"),
    # A team without covered time last, not first.
    "waste_share": (F("waste_share").desc(nulls_last=True), "Waste share"),
    # A team none of whose jobs is priced ("–") last, after one priced at 0.
    "cost": (queries.cost_order("spend"), "Cost"),
    "wasted_cost": (queries.cost_order("wasted_cost"), "Wasted cost"),
    "jobs": ("-jobs", "Jobs"),
    "low_util_jobs": ("-low_util_jobs", "Low-utilization jobs"),
}
TEAM_SORT_NAMES = tuple((key, name) for key, (_, name) in TEAM_SORTS.items())


@dataclass(frozen=True)
class Scope:
    """What a dashboard page shows: the jobs this user may see on the chosen cluster, the period."""

    jobs: QuerySet
    period: Period
    problem: str  # what was wrong with the query string (shown above the page), or ""
    cluster: str  # "" for every cluster
    latest: datetime | None  # the newest start among the jobs: where the presets end
    low_threshold: float  # mean GPU util (%) at or below which a job is low-utilization (the rules')


def _scope(request) -> Scope:
    cluster = request.GET.get("cluster", "").strip()
    unknown = ""
    if missing := queries.no_such_cluster(cluster, Cluster.objects.visible_to(request.user)):
        # Not an empty fleet (whose page would blame missing prices, no jobs, ...): every cluster's.
        unknown, cluster = f"{missing}; showing all clusters.", ""
    jobs, latest = queries.narrowed(Job.objects.visible_to(request.user), cluster)
    period, problem = parse_period(request.GET, latest)
    problems = " ".join(filter(None, (unknown, problem)))
    return Scope(jobs, period, problems, cluster, latest, low_util_threshold())


def _nothing_yet(request) -> str:
    """Why a person sees no jobs at all (not merely none in a period or filter), for the page to say
    what to do next: "fleet" (nothing imported yet: an operator imports it), "no_team" (a member in
    no team), "team" (their teams' jobs not imported yet); "" when they see some."""
    if Job.objects.visible_to(request.user).exists():
        return ""
    if sees_whole_fleet(request.user):
        return "fleet"
    return "team" if Team.objects.visible_to(request.user).exists() else "no_team"


def _judged(jobs, request):
    """The jobs whose rule findings this viewer may count: all but those they rate in a blind study.
    A page's causes often come from few jobs (a team, a day, one cluster): counted, they would tell
    the rater what the rules found on the jobs they label."""
    return jobs.exclude(pk__in=blinded_job_ids(request.user))


def _context(request, scope: Scope) -> dict:
    period, cluster = scope.period, scope.cluster
    today = datetime.now(tz=UTC).date()
    return {
        "period": period,
        "period_problem": scope.problem,
        # Days since the newest job started, where the presets end: an import or a connector that
        # stopped shows here before anyone wonders why "last 7 days" is last month.
        "data_age_days": (today - scope.latest.date()).days if scope.latest else None,
        "latest": scope.latest,
        "presets": list(PRESETS),
        "cluster": cluster,
        "clusters": Cluster.objects.visible_to(request.user),  # a member's: their teams' clusters
        # The period and cluster, for links to the other pages: a team or cause opened from a page
        # shows the same jobs the page counted.
        "period_query": urlencode(period.query() | ({"cluster": cluster} if cluster else {})),
        "low_threshold": scope.low_threshold,
    }


def _pricing_context(pricing: queries.Pricing) -> dict:
    """The currency a page's costs are in, and the note on how they were added up (converted, left
    out for want of a rate, or no price set)."""
    return {"currency": pricing.currency, "cost_note": pricing.note, "cost_warning": pricing.warning}


def _jobs_query(period, cluster, **filters) -> str:
    """The jobs list's query for the jobs started in the period (on the cluster) with `filters`. A preset
    goes along beside its dates: the list filters by the dates, and a job opened from it leads to its team
    in the same preset (`_facts_links`)."""
    dates = {"start_from": period.start.date(), "start_to": period.last_day}
    preset = {} if period.preset == "custom" else {"period": period.preset}
    return urlencode(filters | dates | preset | ({"cluster": cluster} if cluster else {}))


def _back_to_list(list_query: str) -> str:
    """The `back` a page's link to a job carries (`_jobs_list_query_from`): the job page's "← Jobs" then
    opens the jobs list of what the page counted (the team or cause, period and cluster, worst first), as
    its "All … jobs" link does, not the whole list of every team and all time."""
    return urlencode({"back": list_query})


def _low_not_judged_parts(counts: queries.LowNotJudged, jobs_query: str, threshold: float) -> list[dict]:
    """What the low-utilization card counts besides the triaged jobs, each with the page that lists them
    (`_unclassified.html`): so "19 low-utilization jobs" and "the 18 triaged" add up on the page."""
    low = f"{reverse('dashboard:job-list')}?{jobs_query}&util_max={threshold:g}&status="
    parts = [
        (counts.not_triaged, "not triaged yet", low + NOT_TRIAGED, ""),
        (counts.insufficient_data, "with too little data for the rules to judge", low + "insufficient_data", ""),
        (counts.error, "whose triage failed", low + "error", ""),
        (
            counts.blinded,
            "you rate in a blind study",
            reverse("labeling:study-list"),
            " (its causes stay hidden from you until you submit your labels)",
        ),
    ]
    return [{"text": f"{n} {text}", "url": url, "after": after} for n, text, url, after in parts if n]


def _jobs_from(scope: Scope) -> date | None:
    """The day the page's jobs (this viewer's, on the chosen cluster) start when that is after the period
    before began, else None: that period is then only partly in the data, its figures are no full
    period's (`_kpi_cards`). The demo's 30 days read "+784 %" against a previous 30 days of which four
    had jobs, and its 90 days "up from 0", the rest being before anything was imported."""
    return queries.data_starts_after(scope.jobs, scope.period.previous.start)


def _kpi_cards(
    current: queries.Totals,
    previous: queries.Totals,
    *,
    jobs: bool = False,
    jobs_from: date | None = None,
    previous_period: Period | None = None,
) -> list[dict]:
    """The period's headline figures, each with its change against the previous period (the
    overview's and a team page's cards); `jobs` adds the number of jobs. A period with no job priced
    has no cost figure (`Totals.cost_unknown`): "–", as the digests show it, not a 0 that reads as free.
    `jobs_from` (`_jobs_from`): the previous period is partly before the jobs start; each change says
    so and from which day it has jobs, and is not judged better or worse (the demo's 30 days read a red
    "+784 %" against four days of jobs), or there is none when they start in this period. Under half of
    `previous_period` covered, no change is shown at all, only where the jobs start: a percentage of
    five days against thirty is no comparison, drawn with an arrow or not."""

    def money(totals: queries.Totals, value: float) -> float | None:
        return None if totals.cost_unknown else value

    # As in the digests: more or less GPU time and spend is neither good nor bad; more waste is bad,
    # but an amount of waste that moved against the waste share is judged by neither (fewer unused
    # hours while the share rose are fewer jobs, not less waste).
    # Each card's judge: from the direction its figure moved, whether up is worse (None: not judged).
    def unjudged(direction):
        return None

    def waste(direction):
        return queries.waste_judged(current)

    def amount(direction):
        return queries.waste_amount_judged(current, previous, direction)

    # GPU-hours to a tenth (`hours_text`) and money whole (`whole`), as the tables and the digests write them:
    # a digest's "Open the team's week on the dashboard" lands on these cards, which read 270 for 269.5.
    kpis = [
        ("GPU-hours", current.gpu_hours, previous.gpu_hours, queries.hours_text, unjudged),
        ("Unused GPU-hours", current.unused_gpu_hours, previous.unused_gpu_hours, queries.hours_text, amount),
        ("Waste share", current.waste_share, previous.waste_share, share_text, waste),
        ("Cost", money(current, current.cost), money(previous, previous.cost), whole, unjudged),
        ("Wasted cost", money(current, current.wasted_cost), money(previous, previous.wasted_cost), whole, amount),
        *([("Jobs", current.jobs, previous.jobs, "{:,}", unjudged)] if jobs else []),
        ("Low-utilization jobs", current.low_util_jobs, previous.low_util_jobs, "{:,}", amount),
    ]
    nothing_before = jobs_from is not None and previous.jobs == 0
    covered_days = period_days = 0
    if jobs_from is not None and previous_period is not None:
        period_days = round((previous_period.end - previous_period.start) / timedelta(days=1))
        # Days as `data_starts_after` counts them: from the previous period's first day to the jobs' first.
        covered_days = period_days - (jobs_from - previous_period.start.date()).days
    too_little_before = not nothing_before and period_days and covered_days * 2 < period_days
    cards = []
    for label, value, before, fmt, judge in kpis:
        text, direction = queries.compare(value, before, share=label == "Waste share")
        # A card with no figure this period (no price set) says so, not how much of the one before is covered.
        too_little = too_little_before and value is not None
        if nothing_before or too_little:
            text, direction = "", None
        # A previous period the data only partly covers is no full period: its change is shown, not judged.
        worse_when_up = None if jobs_from else judge(direction)
        cards.append(
            {
                "label": label,
                "value": "–" if value is None else fmt(value) if callable(fmt) else fmt.format(value),
                "change_text": text,
                "direction": direction,
                "trend": queries.trend(direction, worse_when_up),
                # Which side has no figure: a period without covered GPU time has no waste share.
                "missing": "" if nothing_before or too_little else _missing(label, value, current, previous),
                "jobs_from": jobs_from,
                "nothing_before": nothing_before,
                # Under half the previous period has jobs: "2 of 7 days", and no change.
                "too_little_before": (covered_days, period_days) if too_little else None,
            }
        )
    return cards


def _missing(label: str, value, current: queries.Totals, previous: queries.Totals) -> str:
    """What a card without a change says of the side that has no figure."""
    if label in ("Cost", "Wasted cost") and (current if value is None else previous).cost_unknown:
        if value is None:
            return f"{current.no_cost_why} in this period"
        return f"{previous.no_cost_why} in the previous period"
    return "no data in this period" if value is None else "no previous data"


@login_required
@read_only
def overview(request):
    scope = _scope(request)
    jobs, period = scope.jobs, scope.period
    threshold = scope.low_threshold
    period_jobs = queries.in_period(jobs, period)
    pricing = queries.pricing(queries.in_period(jobs, period.with_previous), shown=period_jobs)
    conversion = pricing.conversion
    all_teams = queries.by_team(period_jobs, threshold, conversion=conversion)
    current = queries.totals_from_teams(all_teams)
    previous = queries.totals(queries.in_period(jobs, period.previous), threshold, conversion)
    cards = _kpi_cards(current, previous, jobs_from=_jobs_from(scope), previous_period=period.previous)
    teams = all_teams[:10]
    # A member sees their teams' jobs only: the page says whose they are, and a member of one team
    # is shown its users (a chart of one team's bar said nothing).
    whole_fleet = sees_whole_fleet(request.user)
    teams_seen = [] if whole_fleet else list(Team.objects.visible_to(request.user).order_by("name"))
    only_team = teams_seen[0] if len(teams_seen) == 1 else None
    judged = _judged(period_jobs, request)
    categories = [
        row | {"label": Category(row["category"]).label} | queries.cost_figure(row)
        for row in queries.by_category(judged, conversion)
    ]
    unclassified, triaged_low = queries.unclassified_share(judged, threshold)
    low_not_judged = queries.low_not_judged(period_jobs, judged, threshold)
    trend = figures.weekly_trend(queries.weekly_trend(jobs, period))
    context = _context(request, scope) | {
        "cards": cards,
        "totals": current,
        "trend_figure": trend,
        "trend_names": figures.weekly_trend_names(trend),
        "whole_fleet": whole_fleet,
        "scope": teams_seen,
        "only_team": only_team,
        "teams_figure": figures.top_teams(teams) if only_team is None else None,
        "users_figure": figures.top_users(queries.by_user(period_jobs, limit=10)) if only_team else None,
        "histogram_figure": figures.utilization_histogram(queries.utilization_histogram(period_jobs), threshold),
        "categories": categories,
        "categories_figure": figures.categories_vs_paper(
            categories, "This fleet" if whole_fleet else ", ".join(team.name for team in teams_seen) or "Your jobs"
        ),
        "unclassified": unclassified,
        "triaged_low": triaged_low,
        "jobs_query": _jobs_query(period, scope.cluster),
        "low_not_judged": _low_not_judged_parts(low_not_judged, _jobs_query(period, scope.cluster), threshold),
        "nothing_yet": _nothing_yet(request) if scope.latest is None and not scope.cluster else "",
        "breakdowns": _breakdowns(period_jobs, threshold, conversion, period, scope.cluster),
    }
    context |= _pricing_context(pricing)
    return render(request, "dashboard/overview.html", context)


# The overview's tables of GPU time by a job's field (`queries.BREAKDOWN_FIELDS`): their headings, the name of
# their first column, and what a row of jobs without a value reads.
BREAKDOWNS = [
    ("gpu_model", "By GPU model", "GPU model", "No GPU model recorded"),
    ("queue", "By queue", "Queue", "No queue recorded"),
]


def _breakdowns(period_jobs, threshold: float, conversion, period, cluster: str) -> list[dict]:
    """The overview's GPU time by GPU model and by queue (partition), as its totals count it: each row links to
    the jobs list of the jobs it counted (the period, cluster and value; the list's menus offer no "none"
    value, so the row of jobs without one has no link)."""
    by_values = queries.by_values(period_jobs, threshold, conversion)
    tables = []
    for key, heading, column, none in BREAKDOWNS:
        rows = [
            row
            | queries.cost_figure(row)
            | {
                "name": row["value"] or none,
                "href": f"{reverse('dashboard:job-list')}?{_jobs_query(period, cluster, **{key: row['value']})}"
                if row["value"]
                else None,
            }
            for row in by_values[key]
        ]
        tables.append({"key": key, "heading": heading, "column": column, "rows": rows})
    return tables


@login_required
@read_only
def team_list(request):
    scope = _scope(request)
    jobs, period = scope.jobs, scope.period
    sort = request.GET.get("sort", "unused")
    if sort not in TEAM_SORTS:
        sort = "unused"  # the order the table is then in, so its heading is the one marked
    order, _ = TEAM_SORTS[sort]
    if request.GET.get("format") == "csv":
        return _teams_csv(queries.chargeback(jobs, period, scope.low_threshold, order), period)
    pricing = queries.pricing(queries.in_period(jobs, period))
    rows = queries.by_team(
        queries.in_period(jobs, period), scope.low_threshold, order=order, conversion=pricing.conversion
    )
    rows = [row | queries.cost_figure(row) for row in rows]  # without: "–", not 0
    context = _context(request, scope) | {"rows": rows, "sort": sort, "sort_choices": TEAM_SORT_NAMES}
    context["nothing_yet"] = _nothing_yet(request) if scope.latest is None and not scope.cluster else ""
    context |= _pricing_context(pricing)
    return render(request, "dashboard/team_list.html", context)


# New columns go last: a chargeback script may read the older ones by position. The columns of what a cost leaves
# out by currency (`cost_left_out_EUR`, ...) follow these, as many as the period has such currencies.
TEAMS_CSV_COLUMNS = [
    "team", "period_start", "period_end", "jobs", "gpu_hours", "unused_gpu_hours", "waste_share",
    "cost", "wasted_cost", "currency", "low_util_jobs", "cost_left_out", "unpriced_jobs", "unpriced_gpu_hours",
    "slurm_step_accounting_jobs",
]  # fmt: skip


def _teams_csv(report: queries.Chargeback, period: Period) -> StreamingHttpResponse:
    """The teams table of a period as CSV: what each team's GPU time and its waste cost (chargeback). After the
    fixed columns, one `cost_left_out_<currency>` for each currency the period's costs leave out for want of an
    exchange rate: each team's amount in it as a number (0.00 for none), which `cost_left_out` says in words."""
    first, last = period.start.date().isoformat(), period.last_day.isoformat()
    left_out = sorted({part["currency"] for row in report.teams for part in row["costs_left_out"]})

    def amounts(row: dict) -> list[str]:
        by_currency = {part["currency"]: part["amount"] for part in row["costs_left_out"]}
        return [f"{by_currency.get(currency, 0):.2f}" for currency in left_out]

    lines = (
        [
            row["team"],
            first,
            last,
            row["jobs"],
            row["gpu_hours"],
            row["unused_gpu_hours"],
            row["waste_share"],
            row["cost"],
            row["wasted_cost"],
            report.currency,
            row["low_util_jobs"],
            row["cost_left_out"],
            row["unpriced_jobs"],
            row["unpriced_gpu_hours"],
            row["slurm_step_accounting_jobs"],
            *amounts(row),
        ]
        for row in report.teams
    )
    header = TEAMS_CSV_COLUMNS + [f"cost_left_out_{currency}" for currency in left_out]
    return _csv_download(header, lines, f"teams-{first}-{last}.csv")


@login_required
@read_only
def team_detail(request, slug: str):
    team = get_object_or_404(Team.objects.visible_to(request.user), slug=slug)
    scope = _scope(request)
    jobs, period, cluster = scope.jobs, scope.period, scope.cluster
    jobs = jobs.filter(team=team)
    threshold = scope.low_threshold
    blinded = blinded_job_ids(request.user)  # as `_judged`, with the set used once more below
    # The causes as the team's API gives them (`GET /api/v1/teams/{slug}/causes/`), from the same function;
    # priced with the previous period too, so both periods' costs convert at the same rates.
    found = team_causes(jobs, period, blinded, threshold)
    pricing, totals, causes = found.pricing, found.totals, found.causes
    period_jobs, judged_jobs = found.period_jobs, found.judged_jobs
    previous = queries.totals(queries.in_period(jobs, period.previous), threshold, pricing.conversion)
    worst_jobs = list(
        period_jobs.filter(unused_gpu_hours__isnull=False).select_related("cluster").order_by("-unused_gpu_hours")[:15]
    )
    unclassified, triaged_low = queries.unclassified_share(judged_jobs, threshold)
    low_not_judged = queries.low_not_judged(period_jobs, judged_jobs, threshold)
    trend = figures.weekly_trend(queries.weekly_trend(jobs, period))
    context = _context(request, scope) | {
        "team": team,
        "totals": totals,
        "cards": _kpi_cards(
            totals, previous, jobs=True, jobs_from=_jobs_from(scope), previous_period=scope.period.previous
        ),
        "trend_figure": trend,
        "trend_names": figures.weekly_trend_names(trend),
        "users": queries.by_user(period_jobs),
        "worst_jobs": _with_triage(worst_jobs, blinded),
        "causes": causes,
        # Their total as the team's weekly digest gives it (the exact hours', rounded once).
        "causes_account_for": queries.causes_account_for([row["hours"] for row in causes], totals.unused_gpu_hours),
        "unclassified": unclassified,
        "triaged_low": triaged_low,
        # The jobs list of this team, period and cluster, for the causes' links.
        "jobs_query": _jobs_query(period, cluster, team=team.slug),
        "back_query": _back_to_list(_jobs_query(period, cluster, team=team.slug) + "&sort=unused"),
        # The teams table's order this page was opened from, for "← Teams" (the table's default: none).
        "teams_sort": sort if (sort := request.GET.get("sort", "")) in TEAM_SORTS and sort != "unused" else "",
        "low_not_judged": _low_not_judged_parts(
            low_not_judged, _jobs_query(period, cluster, team=team.slug), threshold
        ),
    }
    context |= _pricing_context(pricing)
    return render(request, "dashboard/team_detail.html", context)


@login_required
@read_only
def job_timeline(request, pk: int):
    """The job's timeline figure as JSON; `?start=&end=` (ISO 8601) re-samples a zoomed window."""
    job = get_object_or_404(Job.objects.visible_to(request.user), pk=pk)
    start, end = job.start_time, job.end_time
    try:
        if request.GET.get("start"):
            start = max(start, as_utc(datetime.fromisoformat(request.GET["start"])))
        if request.GET.get("end"):
            end = min(end, as_utc(datetime.fromisoformat(request.GET["end"])))
    except (ValueError, OverflowError):  # overflow: an offset that puts the instant before year 1 in UTC
        return JsonResponse({"error": "start and end must be ISO 8601 times"}, status=400)
    if end <= start:
        if request.GET.get("start") or request.GET.get("end"):
            return JsonResponse({"error": "end must be after start"}, status=400)
        # A job may start and end at the same moment (the schema allows it): nothing to draw, no error.
        empty = "The job started and ended at the same moment: there is no time line to draw."
        return JsonResponse({"data": [], "layout": {}, "empty": empty})
    if not job.series_file:
        if job.series_pruned_at:
            empty = (
                f"The raw series was pruned on {job.series_pruned_at:%Y-%m-%d} (series retention); the summary"
                " figures and findings on this page were computed from the full series."
            )
        elif job.util_from_steps:
            empty = (
                f"No metric samples were supplied for this job: its {job.mean_gpu_util:.1f} % mean GPU utilization is"
                " Slurm's step accounting, one average for the whole run, with no time series to draw."
            )
        else:
            empty = "No metric samples were supplied for this job."
        return JsonResponse({"data": [], "layout": {}, "empty": empty})
    with job.series_file.open("rb") as blob:
        data = blob.read()
    hide_findings = findings_hidden_from(request.user, job)
    offered = _timeline_metrics(job, timeline.metrics_stored(data), request.GET.get("metrics"), hide_findings)
    shown = [metric["name"] for metric in offered if metric["shown"]]
    frame = from_parquet_bytes(data, columns=[*timeline.COLUMNS, *shown])
    markers = [
        timeline.Marker(
            at=event.timestamp,
            kind=event.kind,
            label=f"{event.artifact.path}:{event.line_no} {event.text}",
            url=queries.file_url(job.pk, event.artifact_id, event.line_no),
        )
        for event in job.log_events.filter(timestamp__range=(start, end)).select_related("artifact")[:500]
    ]
    windows = [] if hide_findings else _finding_windows(job)
    # The window asked for is in UTC (the timeline's address); the figure is on the reader's clock.
    zone = timezone.get_current_timezone_name()
    figure = timeline.build_timeline(
        frame, start=start, end=end, markers=markers, windows=windows, zone=zone, extra=shown
    )
    return JsonResponse({**figure, "metrics": offered})


def _timeline_metrics(job: Job, stored: list[str], asked: str | None, hide_findings: bool) -> list[dict]:
    """The series' metrics beyond those the timeline always draws (`stored`), for its "More metrics" choice: each one's
    name, label, the causes found that it shows (CATEGORY_METRICS) and whether it is drawn. Drawn: those of
    `?metrics=` (comma-separated names; unknown ones ignored), or without it the metrics of the job's
    findings. A viewer rating the job blind is offered all of them, none marked: a cause's metric drawn
    by itself would give the finding away."""
    causes: dict[str, list[str]] = {}
    if not hide_findings:
        categories = Finding.objects.filter(job=job, result__is_current=True).values_list("category", flat=True)
        for category in sorted({Category(c) for c in categories}, key=list(Category).index):
            for metric in CATEGORY_METRICS[category]:
                causes.setdefault(metric, []).append(category.label)
    chosen = set(asked.split(",")) if asked is not None else set(causes)
    return [
        {
            "name": metric,
            "label": timeline.EXTRA_METRICS[metric],
            "causes": causes.get(metric, []),
            "shown": metric in chosen,
        }
        for metric in stored
    ]


def _finding_windows(job) -> list[dict]:
    """The time windows of the job's current findings, shaded on the timeline in the category's colour."""
    windows = []
    for finding in Finding.objects.filter(job=job, result__is_current=True):
        category = Category(finding.category)
        for window in (finding.evidence or {}).get("windows", [])[:100]:
            try:
                start, end = datetime.fromisoformat(window["start"]), datetime.fromisoformat(window["end"])
            except (KeyError, TypeError, ValueError):
                continue
            windows.append(
                {
                    "start": as_utc(start),
                    "end": as_utc(end),
                    "label": category.label,
                    "colour": category.colour,
                    "idle": finding.time_located,
                }
            )
    return windows


JOBS_PER_PAGE = 50
CSV_COLUMNS = [
    "cluster", "job_id", "name", "team", "user", "state", "job_type", "start_time", "end_time", "gpu_count",
    "gpu_model", "gpu_hours", "mean_gpu_util", "peak_gpu_mem_util", "unused_gpu_hours", "idle_gpu_hours",
    "coverage", "cost", "currency", "status", "categories", "answers", "mean_gpu_util_source", "gpu_share", "gpu_unit",
    # Appended (a consumer reading by position reads what it had): what the list sorts by with ?sort=recoverable.
    "recoverable_gpu_hours",
]  # fmt: skip


HIDDEN_STATUS = "hidden"  # the status column of a job whose findings its viewer may not see yet


def _filtered_jobs(request, blinded: set[int]):
    jobs = Job.objects.visible_to(request.user).select_related("cluster", "team")
    teams = Team.objects.visible_to(request.user)
    clusters = Cluster.objects.visible_to(request.user)
    job_filter = JobFilter(request.GET or None, queryset=jobs, teams=teams, clusters=clusters, blinded=blinded)
    return job_filter, (job_filter.qs if job_filter.is_bound and job_filter.is_valid() else jobs)


def _with_triage(jobs: list[Job], hidden: set[int] = frozenset()) -> list[Job]:
    """Attach each job's current status and categories in two queries, not two per job; a job in
    `hidden` (its viewer rates it in a blind study) gets neither."""
    ids = [job.pk for job in jobs if job.pk not in hidden]
    status = dict(JobTriage.objects.filter(job_id__in=ids, is_current=True).values_list("job_id", "status"))
    categories: dict[int, list[Category]] = {}
    for job_id, category in (
        Finding.objects.filter(job_id__in=ids, result__is_current=True)
        .order_by("-gpu_hours")
        .values_list("job_id", "category")
    ):
        categories.setdefault(job_id, []).append(Category(category))
    for job in jobs:
        job.triage_status = HIDDEN_STATUS if job.pk in hidden else status.get(job.pk, "")
        job.categories = categories.get(job.pk, [])
    return jobs


@login_required
@read_only
def job_list(request):
    blinded = blinded_job_ids(request.user)  # their findings are not shown, nor filtered by
    job_filter, jobs = _filtered_jobs(request, blinded)
    if request.GET.get("format") == "csv":
        return _jobs_csv(_with_recoverable_hours(job_filter, jobs, blinded), blinded)
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = _with_triage(list(page.object_list), blinded)
    query = request.GET.copy()
    query.pop("page", None)
    csv_query = query.copy()
    csv_query["format"] = "csv"
    without_run = query.copy()
    without_run.pop("run", None)
    without_name = query.copy()
    without_name.pop("name", None)
    without_no_util = query.copy()
    without_no_util.pop("no_util", None)
    without_util_source = query.copy()
    without_util_source.pop("util_source", None)
    without_sort = query.copy()  # the column headers' links: this list in another order (`sort` last)
    without_sort.pop("sort", None)
    return render(
        request,
        "dashboard/job_list.html",
        {
            "page": page,
            "filter": job_filter,
            # A member of one team can only ever see that team: no "All teams" select that has nothing to
            # choose (the whole fleet's viewers keep it, however many teams there are yet).
            "team_filter": sees_whole_fleet(request.user) or job_filter.filters["team"].queryset.count() > 1,
            "query": query.urlencode(),
            "csv_query": csv_query.urlencode(),
            "without_run_query": without_run.urlencode(),
            "without_name_query": without_name.urlencode(),
            "without_no_util_query": without_no_util.urlencode(),
            "without_util_source_query": without_util_source.urlencode(),
            "sort_query": without_sort.urlencode(),
            "sort": sort if (sort := request.GET.get("sort", "")) in SORTS else "start",
            # The preset of the page the list was opened from, kept as the list is filtered on (`_jobs_query`).
            "period_preset": preset if (preset := request.GET.get("period", "")) in PRESETS else "",
            # Each row's link carries this list (filters, order, page) to the job page, for its back link.
            "back_query": urlencode({"back": request.GET.urlencode()}) if request.GET else "",
            "low_threshold": low_util_threshold(),
            # Sorted by it, the list shows what it is sorted by (the jobs carry it: `filters.recoverable_hours`).
            "recoverable_column": job_filter.is_bound
            and not job_filter.errors
            and job_filter.form.cleaned_data.get("sort") == RECOVERABLE,
            "nothing_yet": _nothing_yet(request) if not page.object_list and not request.GET else "",
        },
    )


def _with_recoverable_hours(job_filter: JobFilter, jobs, blinded: set[int]):
    """The jobs with their `recoverable_gpu_hours`, as the list counts them sorted by them: of the filter's
    cause alone when it names one, none for a job its viewer rates blind (`filters.recoverable_hours`)."""
    if "recoverable_gpu_hours" in jobs.query.annotations:  # sorted by them
        return jobs
    valid = job_filter.is_bound and not job_filter.errors
    return recoverable_hours(jobs, job_filter.form.cleaned_data.get("category", "") if valid else "", blinded)


def _jobs_csv(jobs, hidden: set[int]) -> StreamingHttpResponse:
    def rows():
        # Batches keep memory flat on a large fleet; each batch costs three extra queries, not three per job.
        batch_size = 2000
        for offset in range(0, jobs.count(), batch_size):
            batch = _with_triage(list(jobs[offset : offset + batch_size]), hidden)
            # Answers say what the rules found: none for a job its viewer rates blind.
            answers = feedback.summaries([job.pk for job in batch if job.pk not in hidden])
            for job in batch:
                yield [
                    job.cluster.name, job.external_id, job.name, job.team.slug, job.user, job.state, job.job_type,
                    job.start_time.isoformat(), job.end_time.isoformat(), job.gpu_count, job.gpu_model,
                    round(job.gpu_hours, 3), _round(job.mean_gpu_util), _round(job.peak_gpu_mem_util),
                    _round(job.unused_gpu_hours, 3), _round(job.idle_gpu_hours, 3), _round(job.coverage, 3),
                    job.cost, job.currency, job.triage_status, " ".join(c.value for c in job.categories),
                    answers.get(job.pk, ""), job.mean_gpu_util_source or "", round(job.gpu_share, 6), job.gpu_unit,
                    None if job.recoverable_gpu_hours is None else hours_to_thousandth(job.recoverable_gpu_hours),
                ]  # fmt: skip

    return _csv_download(CSV_COLUMNS, rows(), "jobs.csv")


def _csv_download(header: list[str], rows, filename: str) -> StreamingHttpResponse:
    """Rows streamed as a CSV attachment, every cell spreadsheet-safe."""
    response = StreamingHttpResponse(stream_csv_rows(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _round(value, digits: int = 1):
    return None if value is None else round(value, digits)


ARTIFACTS_LISTED = 200  # rows of the job page's file table; a job can bring a repository of scripts
READ_CHUNK = 2**20  # bytes read at a time by the file page


@login_required
@read_only
def job_detail(request, pk: int):
    # Scoped lookup: another team's job is indistinguishable from a missing one.
    job = get_object_or_404(Job.objects.visible_to(request.user).select_related("cluster", "team", "ingest_run"), pk=pk)
    artifacts = job.artifacts.only("pk", "kind", "path", "size", "truncated")
    blinded = blinded_job_ids(request.user)
    hide_findings = job.pk in blinded  # as `findings_hidden_from`, with the set used again for the runs
    jobs_list_query = _jobs_list_query_from(request)
    return render(
        request,
        "dashboard/job_detail.html",
        {
            "job": job,
            "artifacts": artifacts[:ARTIFACTS_LISTED],
            "artifact_count": artifacts.count(),
            "events": queries.log_events_page(job, request.GET.get("events", "")),
            "log_runs": _log_runs(job),
            "hide_findings": hide_findings,
            # The timeline's caption speaks of the bands the chart has: idle windows, stretches a cause slowed.
            **_shaded_bands(job, hide_findings),
            # What the job's Idle GPU-hours were counted below when it was imported, as the settings page says it.
            "idle_threshold": settings.IDLE_UTIL_THRESHOLD,
            "job_files": queries.job_files(job),
            "jobs_list_query": jobs_list_query,
            # The page's own links (a kind of log event) keep the list to go back to.
            "back_query": urlencode({"back": jobs_list_query}) if jobs_list_query else "",
            **_facts_links(job, jobs_list_query, request.user),
            **_runs_context(request.user, job, blinded),
        },
    )


def _shaded_bands(job: Job, hide_findings: bool) -> dict:
    """Which bands the job's timeline shades: `idle_bands` (windows in which a cause left the GPUs idle) and
    `slowed_bands` (the stretch a cause slowed throughout, its finding not placed in idle windows)."""
    if hide_findings:
        return {"idle_bands": False, "slowed_bands": False}
    shaded = Finding.objects.filter(job=job, result__is_current=True, evidence__windows__0__isnull=False)
    kinds = set(shaded.values_list("time_located", flat=True).distinct())
    return {"idle_bands": True in kinds, "slowed_bands": False in kinds}


def _log_runs(job: Job) -> list[str]:
    """For a Kubernetes job with logs: which runs of its restarted containers have a log, which have none."""
    if (job.labels or {}).get("source") != "kubernetes" or not (job.labels or {}).get("restarts"):
        return []
    paths = list(job.artifacts.filter(kind=Artifact.Kind.LOG).values_list("path", flat=True))
    return log_runs(job.raw, paths) if paths else []


def _facts_links(job: Job, jobs_list_query: str, user) -> dict:
    """Where the job card's team and user lead: the team's page for the period and cluster of the jobs
    list the operator came from (`jobs_list_query`: a team's or cause's page of 30 days leads back to
    30 days, not one week of every cluster) when its dates hold the job, else for the week (Monday to
    Sunday, UTC) the job started in, as a digest opens it, so its figures hold this job; and that user's
    jobs of the team. Someone who comes from a digest to one job had no way on but the menu. Not on the
    labeling page, whose raters must not see the rules' verdicts that the team's page shows.

    A list opened from a page showing a preset ("Last 30 days") carries it (`_jobs_query`): the link is to
    that preset while it still gives the list's dates on the team's page, so the page marks its button
    (and says the same period once newer jobs have come, as the page it came from would)."""
    started = job.start_time.astimezone(UTC).date()
    team_url = reverse("dashboard:team-detail", args=[job.team.slug])
    came_from = dict(parse_qsl(jobs_list_query))
    try:
        first, last = date.fromisoformat(came_from["start_from"]), date.fromisoformat(came_from["start_to"])
    except (KeyError, ValueError):
        first = last = None
    if first and last and first <= started <= last:
        chosen = {"from": first.isoformat(), "to": last.isoformat()}
        if came_from.get("cluster") == job.cluster.name:
            chosen["cluster"] = job.cluster.name
        team_period = {"from": first, "to": last}
        if _preset_of(came_from.get("period", ""), first, last, chosen.get("cluster", ""), user):
            on_cluster = {"cluster": chosen["cluster"]} if "cluster" in chosen else {}
            chosen = {"period": came_from["period"]} | on_cluster
            team_period["days"] = PRESETS[chosen["period"]]
        team_url = f"{team_url}?{urlencode(chosen)}"
    else:
        monday = started - timedelta(days=started.weekday())
        week = urlencode({"from": monday.isoformat(), "to": (monday + timedelta(days=6)).isoformat()})
        team_url, team_period = f"{team_url}?{week}", {"week": monday}
    return {
        "team_url": team_url,
        "team_period": team_period,
        "user_jobs_url": f"{reverse('dashboard:job-list')}?{urlencode({'team': job.team.slug, 'user': job.user})}",
    }


def _preset_of(preset: str, first: date, last: date, cluster: str, user) -> bool:
    """Whether `preset` ("30d") is the period from `first` to `last` on the dashboard's pages (the jobs this
    `user` may see, on the cluster): where it ends moves with the newest job."""
    if preset not in PRESETS:
        return False
    _, latest = queries.narrowed(Job.objects.visible_to(user), cluster)
    shown, _ = parse_period({"period": preset}, latest)
    return (shown.start.date(), shown.last_day) == (first, last)


def _jobs_list_query_from(request) -> str:
    """The query of the jobs list this page was opened from (its filters, order and page), for the
    back link; "" when it was opened from anywhere else. It is the `back` parameter the list's rows
    and this page's own links carry, or else the Referer's query when that is our own list, or the
    `back` of a job page's Referer: a page reached from the job page (an answer saved, which
    redirects here, or another run) keeps the list too. Only a query string is ever taken, and
    re-encoded: never a host or a path, so the link can lead nowhere but the jobs list."""
    if "back" in request.GET:
        return _list_query(request.GET["back"])
    try:
        referer = urlsplit(request.META.get("HTTP_REFERER", ""))
    except ValueError:  # no URL at all (an unclosed IPv6 bracket): from nowhere we know
        return ""
    if referer.netloc != request.get_host():
        return ""
    if referer.path == reverse("dashboard:job-list"):
        return _list_query(referer.query)
    try:  # the Referer's path starts with the prefix the site is served under (URL_PREFIX), if any
        from_job_page = resolve(within_site(referer.path) or "").url_name == "job-detail"
    except Resolver404:
        from_job_page = False
    return _list_query(dict(parse_qsl(referer.query)).get("back", "")) if from_job_page else ""


def _list_query(query: str) -> str:
    """A jobs list's query string as the back link may use it: parsed and re-encoded, at most 50
    parameters, without a `back` of its own."""
    return urlencode([(name, value) for name, value in parse_qsl(query)[:50] if name != "back"])


# Statuses whose causes can be compared from one run to the next: the rules ran and said something.
JUDGED_STATUSES = {TriageStatus.HEALTHY, TriageStatus.CLASSIFIED, TriageStatus.UNCLASSIFIED}


def _runs_context(user, job: Job, blinded: set[int]) -> dict:
    """The other runs of the job (same name, user and cluster) with their causes, and what changed
    since the run before (the last earlier one that ended successfully, as the digests compare). While
    the viewer rates the job blind (`blinded`: the jobs they do), no run's causes are shown: the same
    job's earlier findings would give its own away. A run that itself did not end successfully is
    still compared, with a note that its utilization (a crash, a hang, half a run) is no measure of a
    fix: the digests never count such a run as one that got better."""
    runs = queries.job_runs(Job.objects.visible_to(user), job)
    if not runs.total:
        return {"runs": None}
    listed = [*runs.earlier, job, *runs.later]
    if runs.previous is not None and runs.previous not in listed:  # compared with a run further back
        listed.append(runs.previous)
    hidden = blinded | ({run.pk for run in listed} if job.pk in blinded else set())
    _with_triage(listed, hidden)
    previous, change = runs.previous, None
    if previous is not None and previous.triage_status in JUDGED_STATUSES and job.triage_status in JUDGED_STATUSES:
        change = queries.run_change(previous, job)
    elif previous is not None and HIDDEN_STATUS not in (previous.triage_status, job.triage_status):
        # A Slurm step-accounting average has no time series for the rules to judge, so no verdict: the
        # utilization alone is compared, as the digests' runs that got better (which link here) compare it.
        change = queries.util_change(previous, job)
    query = urlencode({"cluster": job.cluster.name, "user": job.user, "name": job.name})
    return {
        "runs": runs,
        "run_change": change,
        "this_run_ended_successfully": queries.ended_successfully(job),
        "runs_query": query,
        "low_threshold": low_util_threshold(),
    }


def _job_artifact(request, pk: int, artifact: int) -> Artifact:
    """One of a job's files, through the jobs the user may see: another team's is a 404 like a missing one."""
    visible = Job.objects.visible_to(request.user)
    return get_object_or_404(Artifact.objects.select_related("job__cluster"), job__in=visible, job_id=pk, pk=artifact)


def _line_number(value: str | None) -> int | None:
    """A line number from the query string; anything else (words, 0, -1, 10^20) is no line."""
    try:
        number = int(value or "")
    except ValueError:
        return None
    return number if 0 < number < 2**31 else None


@login_required
@read_only
def job_file(request, pk: int, artifact: int):
    """A page of one of the job's logs, scripts or traces, with line numbers; `?line=N` opens the
    page that holds line N and marks it (the links from log events and findings), `?from=N` a page."""
    shown = _job_artifact(request, pk, artifact)
    query = request.GET.get("q", "").strip()[: files.MAX_QUERY_CHARS]
    if query:
        return _file_search(request, shown, query)
    line = _line_number(request.GET.get("line"))
    first = files.page_start(line or _line_number(request.GET.get("from")) or 1)
    gap = _log_gap(shown)
    window = _file_window(shown, first, gap)
    if window is not None and not window.lines and window.total_lines:  # past the end: its last page
        first = files.page_start(window.total_lines)
        window = _file_window(shown, first, gap)
    pages = None
    if window is not None:
        last_page = files.page_start(max(window.total_lines, 1))
        pages = {
            "previous": first - files.PAGE_LINES if first > 1 else None,
            "next": (window.resume or first + files.PAGE_LINES) if first < last_page else None,
            "last": last_page if first < last_page else None,
        }
    return render(
        request,
        "dashboard/job_file.html",
        {
            "job": shown.job,
            "artifact": shown,
            "window": window,
            "line": line,
            "pages": pages,
            "rows": _lines_with_events(shown, window),
            "gap": gap,
        },
    )


def _log_gap(artifact: Artifact):
    """Where a log over the size limit had its middle left out (`fleet.logcut`), or None."""
    if not artifact.truncated or artifact.kind != Artifact.Kind.LOG:
        return None
    try:
        with default_storage.open(artifact.file.name, "rb") as handle:
            return find_gap(iter(lambda: handle.read(READ_CHUNK), b""))
    except OSError:
        return None


def _lines_with_events(artifact: Artifact, window: files.TextWindow | None) -> list[tuple[files.Line, list[dict]]]:
    """The page's lines, each with the log events found on it (kind, and its colour on the timeline)."""
    if window is None or not window.lines:
        return []
    found: dict[int, list[dict]] = {}
    events = artifact.events.filter(line_no__range=(window.first, window.last)).order_by("line_no", "pk")
    for line_no, kind in events.values_list("line_no", "kind"):
        found.setdefault(line_no, []).append({"kind": kind, "colour": timeline.event_colour(kind)})
    return [(line, found.get(line.number, [])) for line in window.lines]


def _file_search(request, artifact: Artifact, query: str):
    """The file page listing the lines that hold `query`, each a link to its place in the file."""
    gap = _log_gap(artifact)
    try:
        with default_storage.open(artifact.file.name, "rb") as handle:
            found = files.find_log_lines(iter(lambda: handle.read(READ_CHUNK), b""), query, gap)
    except OSError:
        found = None
    matches = [(line, files.marked(line.text, query)) for line in found.lines] if found else []
    return render(
        request,
        "dashboard/job_file.html",
        {"job": artifact.job, "artifact": artifact, "query": query, "found": found, "matches": matches, "gap": gap},
    )


def _file_window(artifact: Artifact, first: int, gap=None) -> files.TextWindow | None:
    """The page of the file from line `first` (numbered as the log was, across a `gap`), or None when the file
    is missing from storage."""
    try:
        with default_storage.open(artifact.file.name, "rb") as handle:
            return files.read_log_window(iter(lambda: handle.read(READ_CHUNK), b""), first, gap)
    except OSError:
        return None


@login_required
@read_only
def job_series(request, pk: int, fmt: str):
    """The job's metric series as a download, Parquet or CSV (`fleet.downloads`, the API's too)."""
    job = get_object_or_404(Job.objects.visible_to(request.user).select_related("cluster"), pk=pk)
    return series_download(job, fmt)


@login_required
@read_only
def job_file_raw(request, pk: int, artifact: int):
    """The file as it was stored, as a download (never shown inline: its bytes are the job's, not ours)."""
    shown = _job_artifact(request, pk, artifact)
    try:
        handle = default_storage.open(shown.file.name, "rb")
    except OSError:
        raise Http404("The file is missing from storage.") from None
    name = download_name(shown.path)
    return FileResponse(handle, as_attachment=True, filename=name, content_type="application/octet-stream")


@login_required
@read_only
def home(request):
    """The overview, with the query the address came with (a bookmarked /?cluster=...&from=...): only the
    query goes along, re-encoded after the overview's own path (under URL_PREFIX too), so nothing in it
    can take the redirect to another site."""
    target = reverse("dashboard:overview")
    return redirect(f"{target}?{request.GET.urlencode()}" if request.GET else target)


@login_required
@read_only
def category_list(request):
    scope = _scope(request)
    jobs, period = scope.jobs, scope.period
    pricing = queries.pricing(queries.in_period(jobs, period))
    judged = _judged(queries.in_period(jobs, period), request)
    found = queries.by_category(judged, pricing.conversion)
    rows = {row["category"]: row for row in found}
    verdicts = feedback.tally_by_category(judged)
    categories = [
        {
            "category": category,
            "jobs": rows.get(category.value, {}).get("jobs", 0),
            "hours": rows.get(category.value, {}).get("hours", 0.0),
            "spend": rows.get(category.value, {}).get("spend", 0.0),
            "guide": GUIDES.get(category, {}),
            "verdicts": verdicts.get(category),
        }
        | (queries.cost_figure(rows[category.value]) if category.value in rows else {"cost_known": True})
        for category in Category
    ]
    unused = queries.totals(queries.in_period(jobs, period), scope.low_threshold, pricing.conversion).unused_gpu_hours
    context = _context(request, scope) | {
        "categories": categories,
        # Their total as the operator digest gives the fleet's (the exact hours', rounded once); none without causes.
        "causes_account_for": queries.causes_account_for([row["hours"] for row in found], unused) if found else "",
    }
    context |= _pricing_context(pricing)
    return render(request, "dashboard/category_list.html", context)


CAUSE_JOBS_SHOWN = 100  # a cause's page lists this many of its jobs, those that lost the most GPU-hours


@login_required
@read_only
def category_detail(request, category: str):
    try:
        chosen = Category(category)
    except ValueError:
        raise Http404 from None
    scope = _scope(request)
    jobs, period, cluster = scope.jobs, scope.period, scope.cluster
    judged = _judged(jobs, request)
    found = Finding.objects.filter(result__is_current=True, category=chosen, job__in=queries.in_period(judged, period))
    context = _context(request, scope) | {
        "category": chosen,
        "guide": category_guide(chosen),
        # In the jobs list's order by recoverable GPU-hours (`filters.recoverable_hours`), where "All … jobs" leads.
        "findings": found.select_related("job__cluster", "job__team").order_by("-gpu_hours", "job_id")[
            :CAUSE_JOBS_SHOWN
        ],
        # The table shows the costliest; the jobs list (the same jobs) has them all, to sort, filter and export.
        "jobs_total": found.values("job_id").distinct().count(),
        "trend_figure": figures.category_trend(queries.category_trend(judged, chosen.value, period), chosen.colour),
        "verdicts": feedback.tally_by_category(queries.in_period(judged, period)).get(chosen),
        "recent_verdicts": feedback.recent(queries.in_period(judged, period), chosen.value),
        "jobs_query": _jobs_query(period, cluster, category=chosen.value),
        "back_query": _back_to_list(_jobs_query(period, cluster, category=chosen.value) + f"&sort={RECOVERABLE}"),
    }
    return render(request, "dashboard/category_detail.html", context)


class _PriceRows(BaseModelFormSet):
    """The price table's rows. Each input is named for a screen reader as the column header names
    it for the eye, with its row ("GPU model, price 2"): a cell's input has no label of its own."""

    COLUMNS = {
        "cluster": "Cluster",
        "gpu_model": "GPU model",
        "price_per_gpu_hour": "Price per GPU-hour",
        "currency": "Currency",
        "DELETE": "Delete",
    }
    ROW = "price"
    # Rows saved between this page's GET and its POST (by another operator) still fit.
    SPARE_ROWS = 20

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A POST holds the saved rows and the page's blank ones. Django's own cap is 2,000 forms: a
        # forged TOTAL_FORMS built (and rendered, each with its select of clusters) that many, 13 s a
        # request; past this bound the table says "Please submit at most N forms" instead.
        self.max_num = self.absolute_max = len(self.get_queryset()) + self.extra + self.SPARE_ROWS

    def add_fields(self, form, index):
        super().add_fields(form, index)
        for name, column in self.COLUMNS.items():
            if name in form.fields:
                row = f"new {self.ROW}" if index is None else f"{self.ROW} {index + 1}"
                form.fields[name].widget.attrs["aria-label"] = f"{column}, {row}"
                # What a model field's help says, the column's header says: without this Django names
                # "<id>_helptext" in the input's aria-describedby, which no cell of the table has.
                form.fields[name].help_text = ""


class _PriceTableRows(_PriceRows):
    # What a blank row's price field shows, as the blank exchange-rate row shows a rate (its currency
    # field shows the model's default, USD).
    EXAMPLE_PRICE = "2.50"

    def add_fields(self, form, index):
        super().add_fields(form, index)
        if index is None or index >= self.initial_form_count():
            form.fields["price_per_gpu_hour"].widget.attrs["placeholder"] = self.EXAMPLE_PRICE
        # A new row's menu opened on Django's "---------"; a cluster is required, so it asks for one.
        form.fields["cluster"].empty_label = "Choose a cluster"

    def clean(self):
        """Two rows of one cluster for one GPU model in two spellings (`fleet.gpu_models`) are refused, as
        a saved row of it is (`GpuModelPrice.clean`): one of them would never price a job."""
        super().clean()
        seen = {}
        for form in self.forms:
            data = getattr(form, "cleaned_data", None) or {}
            if not data or data.get("DELETE") or not data.get("cluster") or not data.get("gpu_model"):
                continue
            key = (data["cluster"].pk, gpu_model_key(data["gpu_model"]))
            renamed = form.instance.pk is None or {"cluster", "gpu_model"} & set(form.changed_data)
            if key in seen and seen[key] != data["gpu_model"] and renamed:
                form.add_error("gpu_model", same_model_message(data["cluster"], seen[key]))
            seen.setdefault(key, data["gpu_model"])


PriceFormSet = modelformset_factory(
    GpuModelPrice,
    formset=_PriceTableRows,
    fields=["cluster", "gpu_model", "price_per_gpu_hour", "currency"],
    extra=2,
    can_delete=True,
)


class _RateRows(_PriceRows):
    """The exchange-rate table's rows, their inputs named as the price table's are ("Currency, rate 1")."""

    COLUMNS = {"currency": "Currency", "rate": "Value in the reporting currency", "DELETE": "Delete"}
    ROW = "rate"
    # What a blank row asks for, shown in its fields: a currency other than the reporting one, and its value.
    EXAMPLES = {"EUR": ("USD", "0.93")}
    EXAMPLE = ("EUR", "1.08")

    def add_fields(self, form, index):
        super().add_fields(form, index)
        if index is None or index >= self.initial_form_count():
            currency, rate = self.EXAMPLES.get(settings.DEFAULT_CURRENCY, self.EXAMPLE)
            form.fields["currency"].widget.attrs["placeholder"] = currency
            form.fields["rate"].widget.attrs["placeholder"] = rate


RateFormSet = modelformset_factory(
    ExchangeRate, formset=_RateRows, fields=["currency", "rate"], extra=1, can_delete=True
)


def _price_removals(formset) -> list[dict]:
    """The stored prices a valid price formset deletes, each with how it reads, how many jobs it
    prices, and what those jobs are priced at once it is gone."""
    pks = [form.instance.pk for form in formset.deleted_forms if form.instance.pk]
    removals = []
    prices = GpuModelPrice.objects.filter(pk__in=pks).select_related("cluster").order_by("cluster__name", "gpu_model")
    for price in prices:
        model = price.gpu_model or "default price"
        # What its jobs are priced at then: another spelling's row of its model (`price_among`), else the default.
        remaining = cluster_prices(GpuModelPrice.objects.filter(cluster_id=price.cluster_id).exclude(pk__in=pks))
        fallback = price.gpu_model and price_among(remaining, price.gpu_model)
        then = "left without a cost"
        if fallback:
            at = f"({fallback.price_per_gpu_hour.normalize():f} {fallback.currency})"
            then = (
                f"priced at {price.cluster.name} / {fallback.gpu_model} {at}"
                if fallback.gpu_model
                else f"priced at {price.cluster.name}'s default price {at}"
            )
        removals.append(
            {
                "pk": price.pk,
                "label": f"{price.cluster.name} / {model} ({price.price_per_gpu_hour.normalize():f} "
                f"{price.currency} per GPU-hour)",
                "jobs": jobs_priced_by(price),
                "then": then,
            }
        )
    return removals


def _rate_removals(formset) -> list[dict]:
    """The stored exchange rates a valid rate formset deletes, each with how it reads, how many jobs
    are priced in its currency, and what becomes of their costs once it is gone."""
    pks = [form.instance.pk for form in formset.deleted_forms if form.instance.pk]
    removals = []
    for rate in ExchangeRate.objects.filter(pk__in=pks):
        uses = priced_in(rate.currency)
        prices = f"; price{'s' if len(uses.prices) != 1 else ''} {', '.join(uses.prices)}" if uses.prices else ""
        if uses.jobs:
            effect = (
                f"{uses.jobs} job{'s' if uses.jobs != 1 else ''} priced in {rate.currency} "
                f"(team{'s' if len(uses.teams) != 1 else ''} {_first_names(uses.teams)}{prices}), then their costs "
                f"can no longer be converted to {settings.DEFAULT_CURRENCY} and totals that mix currencies leave "
                "them out"
            )
        else:
            effect = f"no job is priced in {rate.currency}{f' ({prices[2:]})' if prices else ''}, so no total changes"
        removals.append(
            {"pk": rate.pk, "label": str(rate), "currency": rate.currency, "jobs": uses.jobs, "effect": effect}
        )
    return removals


def _first_names(names: list[str], shown: int = 10) -> str:
    """A list for a sentence, cut after `shown` names: a fleet may charge a currency to a hundred teams."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _removal_pks(removing: list[dict]) -> str:
    """What a table's confirmation button names: the stored rows ticked for deletion, "3,7"."""
    return ",".join(str(removal["pk"]) for removal in removing)


def _deletion_confirmed(request, removing: list[dict]) -> bool:
    """Whether a table's POST may delete the rows ticked in it: none are, or its confirmation button
    names those very rows (a stale page, or one ticked since, asks again)."""
    return not removing or request.POST.get("confirm_delete", "") == _removal_pks(removing)


@operator_required
@with_form
def fleet_settings(request):
    """Operators set GPU-hour prices and the exchange rates the totals convert costs at; thresholds
    are shown with where to change them. Each table is its own form: a POST saves one of them."""
    saving_rates = request.method == "POST" and "rates-TOTAL_FORMS" in request.POST
    saving_prices = request.method == "POST" and not saving_rates
    formset = PriceFormSet(
        request.POST if saving_prices else None, queryset=GpuModelPrice.objects.select_related("cluster")
    )
    rates = RateFormSet(request.POST if saving_rates else None, queryset=ExchangeRate.objects.all(), prefix="rates")
    removing, removing_rates = [], []
    if saving_prices and formset.is_valid():
        removing = _price_removals(formset)
        # Deleting a price re-prices its jobs (at the cluster's default price, or to no cost): the
        # table comes back as sent, saying what would go, until its button confirms those very rows.
        if _deletion_confirmed(request, removing):
            with transaction.atomic():
                # Each saved or deleted price re-prices its cluster's jobs (fleet.receivers), and is audited.
                audit.save_prices(request.user, formset)
            removed = "".join(
                f" Removed {removal['label']}: its {removal['jobs']} job{'s' if removal['jobs'] != 1 else ''} "
                f"{'were' if removal['jobs'] != 1 else 'was'} re-priced."
                for removal in removing
            )
            messages.success(request, "Prices saved; the affected jobs were re-priced." + removed)
            return redirect("dashboard:settings")
    if saving_rates and rates.is_valid():
        removing_rates = _rate_removals(rates)
        # Deleting a rate leaves its currency's costs out of every total that mixes currencies, with
        # nothing on those pages but a note: asked as a price's deletion is, for the same rows.
        if _deletion_confirmed(request, removing_rates):
            with transaction.atomic():
                audit.save_rates(request.user, rates)  # each deleted rate is audited
            removed = "".join(
                f" Removed {removal['label']}"
                + (
                    f": the costs of the {removal['jobs']} job{'s' if removal['jobs'] != 1 else ''} priced in "
                    f"{removal['currency']} are left out of totals that mix currencies."
                    if removal["jobs"]
                    else "."
                )
                for removal in removing_rates
            )
            messages.success(request, "Exchange rates saved; every cost total converts at them from now on." + removed)
            return redirect("dashboard:settings")
    conversion = Conversion.current()
    price_currencies = GpuModelPrice.objects.order_by().values_list("currency", flat=True).distinct()
    rule_set = RuleSet.current()
    return render(
        request,
        "dashboard/settings.html",
        {
            "formset": formset,
            "removing": removing,
            "removing_pks": _removal_pks(removing),
            "removing_jobs": sum(removal["jobs"] for removal in removing),
            "rates": rates,
            "removing_rates": removing_rates,
            "removing_rates_pks": _removal_pks(removing_rates),
            "reporting_currency": conversion.currency,
            "without_rate": sorted({code for code in price_currencies if conversion.rate_of(code) is None}),
            "unpriced": unpriced_jobs(),
            "low_threshold": low_util_threshold(),
            "idle_threshold": settings.IDLE_UTIL_THRESHOLD,
            "rule_set": rule_set,
            "rule_idle": rule_set.effective_thresholds()["idle_util"],
        },
    )
