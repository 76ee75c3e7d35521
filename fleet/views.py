"""Plain pages over the canonical data. Every view is login-only and scoped to what the user may see."""

from __future__ import annotations

import csv
import logging
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import DatabaseError, connection
from django.db.models import Count, Q
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from config.api_paths import wants_json
from config.methods import read_only, with_form
from fleet import audit, ingest, machine_tokens, personal_tokens
from fleet.access import operator_required
from fleet.docs_pages import rendered_document
from fleet.exports import spreadsheet_safe
from fleet.filters import AuditEventFilter, IngestRunFilter, PersonalTokenFilter, narrowed
from fleet.models import AuditEvent, IngestRun, MachineToken, PersonalToken
from fleet.tasking import tasks_run_here
from fleet.uploads import format_size

logger = logging.getLogger(__name__)

JOBS_PER_PAGE = 50
# A run's errors on its page; all of them are in the CSV (an archive of broken exports can have thousands).
ERRORS_PER_PAGE = 200


@operator_required
@read_only
def ingest_run_list(request):
    """Every run, newest first; `?status=`, `?source=`, `?by=` (a user name or token:<prefix>) and
    `?connector=` (a connector's name) narrow it. A value the list does not know is said on the page,
    and every run shown instead."""
    runs = IngestRun.objects.select_related("created_by", "api_key", "connector")
    run_filter = IngestRunFilter(request.GET or None, queryset=runs)
    shown, filtered = narrowed(run_filter, runs)
    page = Paginator(shown, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = list(page.object_list)
    ingest.tell_no_process_holds(page.object_list)  # "stopped" beside a run's status: one query for the page
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "page": page,
        "filter": run_filter,
        "filtered": filtered,
        "total": runs.count() if filtered else page.paginator.count,
        "query": query.urlencode(),
    }
    return render(request, "fleet/ingest_run_list.html", context)


@operator_required
@read_only
def ingest_run_detail(request, pk: int):
    run = get_object_or_404(IngestRun.objects.select_related("created_by", "api_key", "connector"), pk=pk)
    # In row order even for a run stored before the importer sorted them, or a connector's.
    errors = [{**error, "consequence": ingest.error_consequence(error)} for error in ingest.in_row_order(run.errors)]
    page = Paginator(errors, ERRORS_PER_PAGE).get_page(request.GET.get("page"))
    # With more than a page of errors, how they fall by file and field says more than any one of them.
    error_kinds = ingest.error_kinds(errors) if page.has_other_pages() else []
    context = {
        "run": run,
        "page": page,
        "error_kinds": error_kinds,
        "rows_named": any(error.get("row") is not None for error in errors),  # how rows count is said then
        # What the errors cost: "1 job rejected (not stored); 3 errors rejected nothing." (ingest.errors_summary).
        "errors_summary": ingest.errors_summary(errors, run.jobs_rejected),
        "tasks_run_here": tasks_run_here(),  # no REDIS_URL: nothing is queued, no worker or beat comes
        # An upload's or Import now's thread about to begin it (no REDIS_URL): neither lost nor to be imported again.
        "importing_here": ingest.importing_here(run.pk),
    }
    context["worker_stopped"] = run.no_process_holds  # asked once: Elapsed, Rate and Time left ask it too
    # Pending again after an attempt that stored jobs (Mark failed keeps them), or imported again (counted unchanged).
    context["stored_before"] = stored = ingest.stored_by_earlier_attempts(run)
    being_imported = context["importing_here"] or (
        run.status == IngestRun.Status.RUNNING and not context["worker_stopped"]
    )
    if stored and being_imported:
        context["earlier_kept"] = ingest.earlier_attempt_kept(stored)
    if context["worker_stopped"]:
        context["stalled_sweep_at"] = ingest.stalled_sweep_at(run)
    return render(request, "fleet/ingest_run_detail.html", context)


def run_status(run: IngestRun) -> dict:
    """What the progress page polls: the same figures the API gives, without the error list."""
    return {
        "id": run.pk,
        "status": run.status,
        "status_display": run.get_status_display(),
        "finished": run.is_finished,
        "phase": run.phase,
        "jobs_total": run.jobs_total,
        "jobs_counted": run.jobs_counted,  # false while the archive is read (its total is not known), or for a pull
        "jobs_done": run.jobs_done,
        "jobs_processed": run.jobs_processed,  # stored or rejected: what the bar shows
        "jobs_created": run.jobs_created,
        "jobs_updated": run.jobs_updated,
        "jobs_unchanged": run.jobs_unchanged,
        "jobs_rejected": run.jobs_rejected,
        "samples": run.samples,
        "errors": len(run.errors),
        "duration_s": run.duration_s,
        "seconds_left": run.seconds_left,
        # The same figures as the page words them (what its script shows while the run goes on).
        "display": {
            "count": run.count_display,
            "jobs": run.jobs_display,
            "samples": f"{run.samples:,}",
            "duration": run.duration_display,
            "left": run.time_left_display,
            "rate": run.rate_display,
        },
    }


# A run left pending by a lost task (a worker lost it, the queue was flushed), or left running with no
# worker holding it (its worker died: a run lock tells on PostgreSQL, the recorded owner on SQLite):
# beat's sweep (fleet.recover_pending_runs) gets to it after INGEST_REQUEUE_MINUTES (a running one, the
# visibility timeout more); these let an operator act now. A run a worker holds is never touched.
@operator_required
@require_POST
def ingest_run_requeue(request, pk: int):
    run = get_object_or_404(IngestRun, pk=pk)
    if run.status == IngestRun.Status.RUNNING:
        who = request.user.get_username()
        waited = f"The worker importing this run had stopped (no worker held it when {who} queued it again)"
        recovery = ingest.requeue_run(run.pk, waited=waited, stalled_before=timezone.now(), background=True)
    else:
        # Without REDIS_URL, begun in a thread as an upload's import (the run claimed once), not in this request.
        recovery = ingest.requeue_run(run.pk, background=True)
    if recovery.outcome in ("queued", "failed"):
        # Without REDIS_URL, "started" in a thread of this process, or "ran" to its end here (over at once),
        # where "queued" would promise a worker.
        outcome = "started" if recovery.started_here else "ran" if recovery.ran_here else recovery.outcome
        audit.record(request.user, "ingest_run.requeue", run, {"outcome": outcome, "status": run.status})
    failed_here = recovery.ran_here and IngestRun.objects.filter(pk=run.pk, status=IngestRun.Status.FAILED).exists()
    ok = recovery.outcome == "queued" and not failed_here
    (messages.success if ok else messages.error)(request, recovery.message)
    return redirect("fleet:ingest-run-detail", run.pk)


@operator_required
@require_POST
def ingest_run_fail(request, pk: int):
    run = get_object_or_404(IngestRun, pk=pk)
    who = request.user.get_username()
    if run.status == IngestRun.Status.RUNNING:
        message = (
            f"Marked failed by {who} while running with no worker holding it (its worker had stopped): the jobs "
            "stored so far are kept; send the archive again to import the rest (stored jobs are skipped)."
        )
        recovery = ingest.mark_failed(run.pk, message, stopped=True)
    else:
        # Pending again after an attempt whose worker stopped: the jobs that attempt stored stay (`run_failure`).
        stored = ingest.jobs_stored(run.pk)
        message = f"Marked failed by {who} while pending: nothing was imported."
        if stored:
            message = (
                f"Marked failed by {who} while pending: {ingest.earlier_attempt_kept(stored)}, the rest was not "
                "imported; send the archive again to import it (stored jobs are skipped)."
            )
        recovery = ingest.mark_failed(run.pk, message)
    if recovery.outcome == "failed":
        audit.record(request.user, "ingest_run.fail", run, {"archive": run.archive_name, "status": run.status})
        said = "The run is marked failed; its upload is discarded."
        if not tasks_run_here():  # a lost task may yet reach a worker; none runs without REDIS_URL
            said += " Should its task still reach a worker, the worker finds the run finished and imports nothing."
        messages.success(request, said)
    else:
        messages.error(request, recovery.message)
    return redirect("fleet:ingest-run-detail", run.pk)


@operator_required
@read_only
def ingest_run_status(request, pk: int):
    run = get_object_or_404(IngestRun, pk=pk)
    return JsonResponse(run_status(run))


@operator_required
@read_only
def ingest_run_errors_csv(request, pk: int):
    run = get_object_or_404(IngestRun, pk=pk)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="ingest-run-{run.pk}-errors.csv"'
    writer = csv.writer(response)
    # "consequence" last: a script that reads the first five columns reads them as before.
    writer.writerow(["file", "row", "field", "job_id", "message", "consequence"])
    for error in ingest.in_row_order(run.errors):
        cells = [spreadsheet_safe(error.get(key)) for key in ("file", "row", "field", "job_id", "message")]
        writer.writerow([*cells, ingest.error_consequence(error)])
    return response


@login_required
@read_only
def archive_format(request):
    """docs/archive-format.md as a page: what an archive holds, for whoever writes an exporter or
    uploads one (the upload page links here), with no checkout of the repository at hand."""
    return render(request, "fleet/archive_format.html", {"document": rendered_document("archive-format.md")})


@operator_required
@with_form
def ingest_upload(request):
    """Choose an archive and upload it; the browser script shows upload progress, then the run's."""
    context = {"max_bytes": settings.UPLOAD_MAX_BYTES, "max_size": format_size(settings.UPLOAD_MAX_BYTES)}
    if request.method != "POST":  # GET, or HEAD: the page
        return render(request, "fleet/ingest_upload.html", context)
    uploaded = request.FILES.get("file")
    if uploaded is None or not uploaded.name:
        message = "Choose an archive file (.zip or .tar.gz) to upload."
        if wants_json(request):
            return JsonResponse({"detail": message}, status=400)
        return render(request, "fleet/ingest_upload.html", {**context, "error": message}, status=400)
    run = ingest.start_upload(uploaded, source=IngestRun.Source.UPLOAD, user=request.user)
    detail_url = reverse("fleet:ingest-run-detail", args=[run.pk])
    if wants_json(request):
        return JsonResponse(
            {
                "run_id": run.pk,
                "detail_url": detail_url,
                "status_url": reverse("fleet:ingest-run-status", args=[run.pk]),
            },
            status=202,
        )
    return redirect(detail_url)


# Personal tokens on the tokens page (the machine tokens, a handful, are listed whole).
PERSONAL_TOKENS_PER_PAGE = 50


@operator_required
@with_form
def token_list(request):
    """Machine tokens: create one (its key is shown this once) that does what its boxes say (push
    archives, ticked by default; read /metrics, the teams' report, the jobs), see when each was last
    used and what it may do, revoke."""
    created, created_key = None, None
    if request.method == "POST":
        may = machine_tokens.asked_permissions(request.POST)
        try:
            created, created_key = machine_tokens.create(request.user, request.POST.get("name", ""), may)
        except machine_tokens.NoName as refused:
            messages.error(request, str(refused))
        else:
            messages.success(request, f"Token “{created.name}” created. Copy it now: it is not shown again.")
    # Each with how many runs it pushed, linked to them on the runs list (as a connector's page links to its pulls).
    pushed = Count("ingest_runs", filter=Q(ingest_runs__created_by__isnull=True))
    tokens = MachineToken.objects.select_related("created_by").annotate(pushed=pushed).order_by("revoked", "-created")
    month_end = timezone.now().date().replace(day=1) - timedelta(days=1)  # the example report's: last month
    # Everyone's personal tokens too (each person makes their own on /account/tokens/), to see and revoke:
    # by owner (`?owner=`, a user name), in pages; each owner's usable ones first.
    everyone = PersonalToken.objects.select_related("owner")
    owner_filter = PersonalTokenFilter(request.GET or None, queryset=everyone)
    shown, filtered = narrowed(owner_filter, everyone)
    shown = personal_tokens.in_state_order(shown).order_by("owner__username", "state_order", "-created")
    page = Paginator(shown, PERSONAL_TOKENS_PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = personal_tokens.with_state(list(page.object_list))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "fleet/token_list.html",
        {
            "tokens": tokens,
            "personal_page": page,
            "personal_filter": owner_filter,
            "personal_filtered": filtered,
            "query": query.urlencode(),
            "created_key": created_key,
            "created": created,
            "defaults": machine_tokens.default_permissions(),
            "last_month": (month_end.replace(day=1), month_end),
        },
    )


@operator_required
@with_form
def token_edit(request, prefix: str):
    """Change what a machine token may do (its boxes, as when it was made), named by its prefix as its
    revoke address is. The key stays the same, so the machine that uses it needs no new secret; it is
    never shown again. A revoked token is told so and left as it is. Audited as `token.change`, with
    each changed box's old and new value (fleet.machine_tokens.change)."""
    token = get_object_or_404(MachineToken.objects.select_related("created_by"), prefix=prefix)
    label = f"Token “{token.name}” ({token.prefix}…)"
    revoked = f"{label} is revoked: what it may do can no longer be changed. Make a new token instead."
    if token.revoked:
        messages.error(request, revoked)
        return redirect("fleet:token-list")
    if request.method == "POST":
        try:
            changed = machine_tokens.change(request.user, token, machine_tokens.asked_permissions(request.POST))
        except machine_tokens.TokenRevoked:
            messages.error(request, revoked)
        else:
            if changed:
                messages.success(
                    request,
                    f"{label} {machine_tokens.change_words(changed)}. "
                    "Its key is unchanged: the machine that uses it needs no new secret.",
                )
            else:
                messages.info(request, f"{label}: nothing changed.")
        return redirect("fleet:token-list")
    permissions = [(flag, getattr(token, flag)) for flag in machine_tokens.PERMISSIONS]
    return render(request, "fleet/token_edit.html", {"token": token, "permissions": permissions})


@operator_required
@require_POST
def token_revoke(request, prefix: str):
    """Revoke a machine token, named by its prefix: its id holds the key's hash, which an address
    (access logs, browser history) must not (an old address with it finds no token, a 404)."""
    token = get_object_or_404(MachineToken, prefix=prefix)
    if machine_tokens.revoke(request.user, token):
        messages.success(request, f"Token “{token.name}” ({token.prefix}…) is revoked; pushes with it are refused.")
    return redirect("fleet:token-list")


@operator_required
@require_POST
def personal_token_revoke(request, prefix: str):
    """An operator revokes a person's own token (a leaked key, someone who left), named by its prefix
    as a machine token is."""
    token = get_object_or_404(PersonalToken.objects.select_related("owner"), prefix=prefix)
    if personal_tokens.revoke(request.user, token):
        messages.success(
            request,
            f"{token.owner.get_username()}'s token “{token.name}” ({token.prefix}…) is revoked; "
            "requests with it are refused.",
        )
    return redirect(reverse("fleet:token-list") + "#personal-tokens")


AUDIT_PER_PAGE = 100


@operator_required
@read_only
def audit_log(request):
    """Operator actions, newest first; `?action=` (e.g. token.revoke) and `?user=` (who did it, or
    `system`) narrow it. A value no entry has is said on the page, and every entry shown instead."""
    events = AuditEvent.objects.select_related("actor")
    event_filter = AuditEventFilter(request.GET or None, queryset=events)
    shown, filtered = narrowed(event_filter, events)
    page = Paginator(shown, AUDIT_PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = list(page.object_list)
    for event in page.object_list:
        event.detail_lines = audit.readable(event.details)
    query = request.GET.copy()
    query.pop("page", None)
    context = {"page": page, "filter": event_filter, "filtered": filtered, "query": query.urlencode()}
    return render(request, "fleet/audit_log.html", context)


@never_cache  # a kept "ok" would say nothing of now
@read_only
def healthz(request):
    """Liveness for load balancers and compose: the process answers and the database is reachable.

    Reached through `config.middleware.HealthzMiddleware`, ahead of the host check and the HTTPS
    redirect, so that a probe by address and plain HTTP (compose's, a Kubernetes kubelet's) is
    answered as a browser is. A database that cannot be reached is a 503 in JSON, not a server
    error page; what failed goes to the log, not to whoever asks.
    """
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        logger.warning("healthz: the database cannot be reached", exc_info=True)
        return JsonResponse({"status": "unavailable", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok"})


@read_only
def site_icon(request):
    """/favicon.ico, where a browser looks for an icon an answer does not name (the mail's text as text/plain,
    /healthz): the icon every page names (base.html), where the address was a 404 in the log."""
    return redirect(static("favicon.svg"))
