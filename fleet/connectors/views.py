"""Operator pages: the connectors with their health, one connector's page (health, recent pulls,
actions), and the create/edit form. Operators only."""

from __future__ import annotations

from celery.result import EagerResult
from django.conf import settings
from django.contrib import messages
from django.db.models import Prefetch
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from config.methods import read_only, with_form
from fleet import audit
from fleet.access import operator_required
from fleet.connectors import registry, sync
from fleet.connectors.forms import ConnectorForm
from fleet.connectors.models import Connector, ConnectorDeletion
from fleet.connectors.tasks import sync_connector_task
from fleet.tasking import QueueUnreachable, publish

RECENT_RUNS = 20


@operator_required
@read_only
def connector_list(request):
    under_way = ConnectorDeletion.objects.exclude(status__in=sync.FINISHED_DELETIONS)
    connectors = Connector.objects.select_related("metrics_from", "last_run").prefetch_related(
        "served", Prefetch("deletions", queryset=under_way, to_attr="deletions_under_way")
    )
    return render(request, "connectors/connector_list.html", {"connectors": connectors})


@operator_required
@read_only
def connector_detail(request, pk: int):
    connector = get_object_or_404(Connector.objects.select_related("metrics_from", "last_run"), pk=pk)
    context = {
        "connector": connector,
        "runs": connector.runs.order_by("-created_at", "-pk")[:RECENT_RUNS],
        "run_count": connector.runs.count(),
        "served": connector.served.order_by("name"),
        "under_way": sync.deletion_under_way(connector),
    }
    return render(request, "connectors/connector_detail.html", context)


@operator_required
@with_form
def connector_create(request):
    form = ConnectorForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        connector = form.save()
        audit.record(request.user, "connector.create", connector, {"fields": sorted(form.changed_data)})
        messages.success(request, f"Connector {connector.name} saved.")
        return redirect("connectors:detail", connector.pk)
    return _form_page(request, form, None)


@operator_required
@with_form
def connector_edit(request, pk: int):
    connector = get_object_or_404(Connector, pk=pk)
    form = ConnectorForm(request.POST or None, instance=connector)
    if request.method == "POST" and form.is_valid():
        form.save()
        audit.record(request.user, "connector.edit", connector, {"fields": sorted(form.changed_data)})
        messages.success(request, f"Connector {connector.name} saved.")
        return redirect("connectors:detail", connector.pk)
    return _form_page(request, form, connector)


@operator_required
@with_form
def connector_delete(request, pk: int):
    """GET: what deleting it does, and a button; POST: delete it. Its ingest runs stay (IngestRun.connector
    is SET_NULL); its jobs stay too unless "with_jobs" is ticked: then a task deletes them in batches, with
    the clusters that leaves empty, and the connector last (sync.start_deletion); the deletion's page shows
    how far it got. Refused while other connectors take their series from it (metrics_from is PROTECT) or
    a pull of it runs."""
    connector = get_object_or_404(Connector, pk=pk)
    served = list(connector.served.order_by("name"))
    if request.method == "POST" and not served:
        name, with_jobs = connector.name, request.POST.get("with_jobs") == "1"
        if with_jobs and sync.deletion_plan(connector).deletable:
            return _delete_with_jobs(request, connector)
        refused = sync.delete_connector(connector, request.user)
        if refused:
            messages.error(request, refused)
            if Connector.objects.filter(pk=connector.pk).exists():
                return redirect("connectors:detail", connector.pk)
            return redirect("connectors:list")
        messages.success(request, f"Connector {name} deleted. The jobs it imported and its pulls' ingest runs stay.")
        return redirect("connectors:list")
    context = {
        "connector": connector,
        "served": served,
        "plan": sync.deletion_plan(connector),
        "under_way": sync.deletion_under_way(connector),
    }
    return render(request, "connectors/connector_confirm_delete.html", context)


def _delete_with_jobs(request, connector):
    deletion, refused = sync.start_deletion(connector, request.user)
    if deletion is None:
        messages.error(request, refused)
        under_way = sync.deletion_under_way(connector)
        if under_way is not None:
            return redirect("connectors:deletion", under_way.pk)
        if Connector.objects.filter(pk=connector.pk).exists():
            return redirect("connectors:detail", connector.pk)
        return redirect("connectors:list")
    if deletion.status == ConnectorDeletion.Status.SUCCEEDED:  # no REDIS_URL: the task ran in this request
        messages.success(request, _deleted_sentence(deletion))
        return redirect("connectors:list")
    if deletion.status == ConnectorDeletion.Status.FAILED:
        messages.error(request, f"Connector {deletion.name} was not deleted: {deletion.message}"[:600])
    else:
        jobs = f"{deletion.jobs_total:,} job{pluralize(deletion.jobs_total)}"
        messages.info(
            request, f"Connector {deletion.name} and the {jobs} it imported are being deleted by a worker: "
            "this page shows how far it has got."
        )  # fmt: skip
    return redirect("connectors:deletion", deletion.pk)


def _deleted_sentence(deletion: ConnectorDeletion) -> str:
    jobs = f"{deletion.jobs_deleted:,} job{pluralize(deletion.jobs_deleted)}"
    if deletion.kind != ConnectorDeletion.Kind.CONNECTOR:
        return _other_deleted_sentence(deletion, jobs)
    said = f"Connector {deletion.name} deleted, with the {jobs} it imported"
    if clusters := deletion.clusters_deleted:
        said += f" and the cluster{pluralize(clusters)} {', '.join(clusters)}"
    said += ". Its pulls' ingest runs stay."
    if deletion.kept:
        kept = deletion.kept
        said += f" {kept:,} of its jobs stay{pluralize(kept, 's,')}: a labeling study or gold set holds them."
    if priced := deletion.priced:
        said += f" The cluster{pluralize(priced)} {', '.join(priced)} stay{pluralize(priced, 's,')}"
        said += f", with {pluralize(priced, 'its,their')} GPU prices."
    return said


def _other_deleted_sentence(deletion: ConnectorDeletion, jobs: str) -> str:
    kinds = ConnectorDeletion.Kind
    if deletion.kind == kinds.TEAM:
        said = f"Team {deletion.name} deleted, with its {jobs}, its memberships and its digests."
    elif deletion.kind == kinds.INGEST_RUN and deletion.with_jobs:
        said = f"Ingest run {deletion.name} deleted, with the {jobs} it stored last."
    elif deletion.kind == kinds.INGEST_RUN:
        said = f"Ingest run {deletion.name} deleted; the jobs it stored stay."
    else:
        said = f"{jobs[0].upper()}{jobs[1:]} deleted, of the {deletion.name} chosen in the admin."
    if kept := deletion.kept:
        said += f" {kept:,} job{pluralize(kept)} stay{pluralize(kept, 's,')}: a labeling study or gold set holds them."
    return said


# Where each kind's page leads back to: the list its deletion started from (or near it).
_BACK = {
    ConnectorDeletion.Kind.CONNECTOR: ("connectors:list", "Connectors"),
    ConnectorDeletion.Kind.TEAM: ("dashboard:team-list", "Teams"),
    ConnectorDeletion.Kind.INGEST_RUN: ("fleet:ingest-run-list", "Ingest runs"),
    ConnectorDeletion.Kind.JOBS: ("dashboard:job-list", "Jobs"),
}


@operator_required
@read_only
def deletion_detail(request, pk: int):
    """A deletion with its jobs (a connector's, a team's, an ingest run's, jobs chosen in the admin): how
    far it has got (its script polls the status), then how it ended. Served at /connectors/deletions/<id>/
    (connectors:deletion) and /deletions/<id>/ (fleet:deletion) alike."""
    deletion = get_object_or_404(ConnectorDeletion.objects.select_related("requested_by", "connector"), pk=pk)
    said = _deleted_sentence(deletion) if deletion.status == ConnectorDeletion.Status.SUCCEEDED else ""
    namespace = request.resolver_match.namespace or "fleet"
    back_url, back_label = _BACK[deletion.kind]
    context = {
        "deletion": deletion,
        "said": said,
        "batch": settings.JOB_DELETE_BATCH,
        "status_url": reverse(f"{namespace}:deletion-status", args=[deletion.pk]),
        "back_url": reverse(back_url),
        "back_label": back_label,
    }
    return render(request, "connectors/deletion_detail.html", context)


@operator_required
@read_only
def deletion_status(request, pk: int):
    deletion = get_object_or_404(ConnectorDeletion, pk=pk)
    return JsonResponse(
        {
            "id": deletion.pk,
            "status": deletion.status,
            "status_display": deletion.get_status_display(),
            "finished": deletion.is_finished,
            "jobs_total": deletion.jobs_total,
            "jobs_deleted": deletion.jobs_deleted,
            "display": {"count": deletion.count_display},
        }
    )


def _form_page(request, form, connector):
    # Each kind's typical options and auth beside the form, so choosing one needs no trip to the docs.
    kinds = [{"kind": kind, "label": cls.label, "example": cls.options_example, "auth": cls.auth_hint,
              "options": sorted(cls.options_schema.items())}
             for kind, cls in registry.kinds().items()]  # fmt: skip
    return render(request, "connectors/connector_form.html", {"form": form, "connector": connector, "kinds": kinds})


@require_POST
@operator_required
def connector_sync(request, pk: int):
    connector = get_object_or_404(Connector, pk=pk)
    what = "check" if connector.metrics_only else "pull"
    if sync.being_deleted(connector):  # its delete holds the lease: no pull is running, none could start
        messages.warning(request, f"{connector.name} is being deleted; no {what} was queued.")
        return _back(request, connector)
    if not connector.metrics_only:
        # A second pull would only find the lease taken and end as "locked", unseen: say so instead.
        running, run = sync.pull_running(connector)
        if running:
            if run is None:
                messages.warning(request, f"A pull of {connector.name} is already running; no other was queued.")
            else:
                link = reverse("fleet:ingest-run-detail", args=[run.pk])
                messages.warning(request, format_html(
                    'A pull of {} is already running (<a href="{}">ingest run #{}</a>); no other was queued.',
                    connector.name, link, run.pk,
                ))  # fmt: skip
            return _back(request, connector)
    try:
        queued = publish(sync_connector_task, (connector.pk,), not_done=f"no {what} of {connector.name} was queued")
    except QueueUnreachable as exc:
        messages.error(request, str(exc))
        return _back(request, connector)
    audit.record(request.user, "connector.sync", connector)
    if isinstance(queued, EagerResult) and isinstance(queued.result, dict):
        # Without REDIS_URL (the embedded mode) the task ran in this request: say how it ended, not "queued".
        _say_how_it_ended(request, connector, queued.result)
    elif connector.metrics_only:
        messages.info(request, f"{connector.name} is a metrics source: a check that it answers was queued.")
    else:
        messages.info(request, f"A pull of {connector.name} was queued.")
    return _back(request, connector)


@require_POST
@operator_required
def connector_check(request, pk: int):
    connector = get_object_or_404(Connector, pk=pk)
    outcome = sync.check_connection(connector)
    if outcome.pop("ok"):
        warnings = outcome.pop("warnings", [])  # what its pulls will lack although it answers (Kubernetes' nodes)
        details = ", ".join(f"{k}: {v}" for k, v in outcome.items())
        messages.success(request, f"{connector.name} answers. {details}"[:500])
        for warning in warnings:
            messages.warning(request, f"{connector.name}: {warning}"[:1000])
    else:
        messages.error(request, f"{connector.name}: {outcome['error']}"[:500])
    return _back(request, connector)


def _say_how_it_ended(request, connector, result: dict) -> None:
    name, status, said = connector.name, result.get("status"), result.get("message") or ""
    if connector.metrics_only:
        if status == "failed":
            messages.error(request, f"{name} was checked: {said}"[:500])
        else:
            messages.success(request, f"{name} was checked: it answers.")
        return
    run_id = result.get("run_id")
    run = format_html(' (<a href="{}">ingest run #{}</a>)', reverse("fleet:ingest-run-detail", args=[run_id]), run_id)
    if status == "failed":
        messages.error(request, format_html("The pull of {} failed{}: {}", name, run if run_id else "", said[:400]))
    elif status in ("succeeded", "partial"):
        counts = f"{result['created']} new, {result['updated']} updated, {result['unchanged']} unchanged"
        note = f", {len(result.get('errors') or [])} errors" if status == "partial" else ""
        messages.success(request, format_html("A pull of {} ran{}: {}{}.", name, run if run_id else "", counts, note))
    else:  # locked, not-due: the task's own words
        messages.info(request, f"No pull of {name} ran: {said}.")


def _back(request, connector):
    """After an action: the page it was taken on (the list's buttons say so), else the connector's."""
    if request.POST.get("back") == "list":
        return redirect("connectors:list")
    return redirect("connectors:detail", connector.pk)
