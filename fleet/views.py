"""Plain pages over the canonical data. Every view is login-only and scoped to what the user may see."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Q
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from fleet.access import is_operator, sees_whole_fleet
from fleet.models import Cluster, IngestRun, Job, Team

JOBS_PER_PAGE = 50


@login_required
def home(request):
    return redirect("fleet:job-list")


@login_required
def job_list(request):
    jobs = Job.objects.visible_to(request.user).select_related("cluster", "team")
    teams = Team.objects.all() if sees_whole_fleet(request.user) else Team.objects.filter(owners__user=request.user)
    filters = {
        "q": request.GET.get("q", "").strip(),
        "team": request.GET.get("team", ""),
        "cluster": request.GET.get("cluster", ""),
    }
    if filters["q"]:
        jobs = jobs.filter(
            Q(external_id__icontains=filters["q"]) | Q(name__icontains=filters["q"]) | Q(user__icontains=filters["q"])
        )
    if filters["team"]:
        jobs = jobs.filter(team__slug=filters["team"])
    if filters["cluster"]:
        jobs = jobs.filter(cluster__name=filters["cluster"])
    page = Paginator(jobs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "fleet/job_list.html",
        {
            "page": page,
            "filters": filters,
            "teams": teams,
            "clusters": Cluster.objects.all(),
            "query": query.urlencode(),
        },
    )


@login_required
def job_detail(request, pk: int):
    # Scoped lookup: another team's job is indistinguishable from a missing one.
    job = get_object_or_404(Job.objects.visible_to(request.user).select_related("cluster", "team", "ingest_run"), pk=pk)
    return render(
        request,
        "fleet/job_detail.html",
        {
            "job": job,
            "artifacts": job.artifacts.all(),
            "events": job.log_events.select_related("artifact")[:500],
        },
    )


@login_required
def ingest_run_list(request):
    if not is_operator(request.user):
        raise Http404
    runs = IngestRun.objects.select_related("created_by")
    page = Paginator(runs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "fleet/ingest_run_list.html", {"page": page})


@login_required
def ingest_run_detail(request, pk: int):
    if not is_operator(request.user):
        raise Http404
    run = get_object_or_404(IngestRun, pk=pk)
    return render(request, "fleet/ingest_run_detail.html", {"run": run})


@require_GET
def healthz(request):
    """Liveness for load balancers and compose: the process answers and the database is reachable."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
