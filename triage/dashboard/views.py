"""Dashboard pages: thin views over the aggregate queries, scoped to the jobs a user may see."""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Max
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render

from fleet.access import sees_whole_fleet
from fleet.models import Cluster, Job, Team
from fleet.series import from_parquet_bytes
from triage.models import Finding
from triage.taxonomy import Category

from . import figures, queries, timeline
from .periods import PRESETS, parse_period

TEAM_SORTS = {
    "team": "team__slug",
    "gpu_hours": "-hours",
    "unused": "-unused",
    "cost": "-spend",
    "jobs": "-jobs",
    "low_util_jobs": "-low_util_jobs",
}


def _scope(request):
    """The jobs this user may see, narrowed to the chosen cluster, and the period to show."""
    jobs = Job.objects.visible_to(request.user)
    cluster = request.GET.get("cluster", "")
    if cluster:
        jobs = jobs.filter(cluster__name=cluster)
    latest = jobs.aggregate(latest=Max("start_time"))["latest"]
    period, problem = parse_period(request.GET, latest)
    return jobs, period, problem, cluster


def _context(request, jobs, period, problem, cluster) -> dict:
    return {
        "period": period,
        "period_problem": problem,
        "presets": list(PRESETS),
        "cluster": cluster,
        "clusters": Cluster.objects.all(),
        "period_query": "&".join(f"{k}={v}" for k, v in period.query().items()),
        "low_threshold": settings.LOW_UTIL_THRESHOLD,
    }


@login_required
def overview(request):
    jobs, period, problem, cluster = _scope(request)
    threshold = settings.LOW_UTIL_THRESHOLD
    current = queries.totals(queries.in_period(jobs, period), threshold)
    previous = queries.totals(queries.in_period(jobs, period.previous), threshold)
    period_jobs = queries.in_period(jobs, period)
    kpis = [
        ("GPU-hours", current.gpu_hours, previous.gpu_hours, "{:,.0f}", False),
        ("Unused GPU-hours", current.unused_gpu_hours, previous.unused_gpu_hours, "{:,.0f}", True),
        ("Waste share", current.waste_share, previous.waste_share, "{:.0%}", True),
        ("Cost", current.cost, previous.cost, "{:,.0f}", False),
        ("Wasted cost", current.wasted_cost, previous.wasted_cost, "{:,.0f}", True),
        ("Low-utilization jobs", current.low_util_jobs, previous.low_util_jobs, "{:,}", True),
    ]
    cards = [
        {
            "label": label,
            "value": fmt.format(value) if value is not None else "–",
            "change": queries.change(value, before),
            "worse_when_up": worse_when_up,
        }
        for label, value, before, fmt, worse_when_up in kpis
    ]
    teams = queries.by_team(period_jobs, threshold, limit=10)
    categories = [row | {"label": Category(row["category"]).label} for row in queries.by_category(period_jobs)]
    unclassified, triaged_low = queries.unclassified_share(period_jobs, threshold)
    context = _context(request, jobs, period, problem, cluster) | {
        "cards": cards,
        "totals": current,
        "trend_figure": figures.weekly_trend(queries.weekly_trend(jobs, period)),
        "teams_figure": figures.top_teams(teams),
        "histogram_figure": figures.utilization_histogram(queries.utilization_histogram(period_jobs), threshold),
        "categories": categories,
        "categories_figure": figures.categories_vs_paper(categories),
        "unclassified": unclassified,
        "triaged_low": triaged_low,
        "currency": settings.DEFAULT_CURRENCY,
    }
    return render(request, "dashboard/overview.html", context)


@login_required
def team_list(request):
    jobs, period, problem, cluster = _scope(request)
    sort = request.GET.get("sort", "unused")
    rows = queries.by_team(
        queries.in_period(jobs, period), settings.LOW_UTIL_THRESHOLD, order=TEAM_SORTS.get(sort, "-unused")
    )
    context = _context(request, jobs, period, problem, cluster) | {"rows": rows, "sort": sort}
    return render(request, "dashboard/team_list.html", context)


@login_required
def team_detail(request, slug: str):
    visible = Team.objects.all() if sees_whole_fleet(request.user) else Team.objects.filter(owners__user=request.user)
    team = get_object_or_404(visible, slug=slug)
    jobs, period, problem, cluster = _scope(request)
    jobs = jobs.filter(team=team)
    period_jobs = queries.in_period(jobs, period)
    threshold = settings.LOW_UTIL_THRESHOLD
    context = _context(request, jobs, period, problem, cluster) | {
        "team": team,
        "totals": queries.totals(period_jobs, threshold),
        "trend_figure": figures.weekly_trend(queries.weekly_trend(jobs, period)),
        "users": queries.by_user(period_jobs),
        "worst_jobs": period_jobs.filter(unused_gpu_hours__isnull=False)
        .select_related("cluster")
        .order_by("-unused_gpu_hours")[:15],
    }
    return render(request, "dashboard/team_detail.html", context)


@login_required
def job_timeline(request, pk: int):
    """The job's timeline figure as JSON; `?start=&end=` (ISO 8601) re-samples a zoomed window."""
    job = get_object_or_404(Job.objects.visible_to(request.user), pk=pk)
    start, end = job.start_time, job.end_time
    try:
        if request.GET.get("start"):
            start = max(start, _aware(datetime.fromisoformat(request.GET["start"])))
        if request.GET.get("end"):
            end = min(end, _aware(datetime.fromisoformat(request.GET["end"])))
    except ValueError:
        return JsonResponse({"error": "start and end must be ISO 8601 times"}, status=400)
    if end <= start:
        return JsonResponse({"error": "end must be after start"}, status=400)
    if not job.series_file:
        return JsonResponse({"data": [], "layout": {}, "empty": "No metric samples were supplied for this job."})
    with job.series_file.open("rb") as blob:
        frame = from_parquet_bytes(blob.read())
    markers = [
        timeline.Marker(
            at=event.timestamp, kind=event.kind, label=f"{event.artifact.path}:{event.line_no} {event.text}"
        )
        for event in job.log_events.filter(timestamp__range=(start, end)).select_related("artifact")[:500]
    ]
    figure = timeline.build_timeline(frame, start=start, end=end, markers=markers, windows=_finding_windows(job))
    return JsonResponse(figure)


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
                {"start": _aware(start), "end": _aware(end), "label": category.label, "colour": category.colour}
            )
    return windows


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
