"""Digest pages: preview any digest for any week, the operators' delivery list, the user's
subscription settings, and the one-click unsubscribe that works without logging in."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from config.methods import read_only, with_form
from fleet import audit
from fleet.access import is_operator, operator_required
from fleet.models import Team
from fleet.tasking import QueueUnreachable

from . import alerts, services, webhooks, weeks
from .forms import AlertSettingsForm, TeamWebhookForm
from .models import AlertSettings, Delivery, DigestKind, TeamWebhook

DELIVERIES_PER_PAGE = 50


def _week_or_404(week: str) -> str:
    try:
        weeks.parse_week(week)
    except ValueError:
        raise Http404("no such ISO week") from None
    return week


@login_required
@read_only
def index(request):
    week = request.GET.get("week", "").strip() or services.preview_week(request.user)
    try:
        weeks.parse_week(week)
    except ValueError:
        # Not what was sent (it may be anything, of any length): the form of a week, by the one shown.
        week = services.preview_week(request.user)
        messages.warning(request, f"Not an ISO week (e.g. {week}); showing {week}.")
    return render(
        request,
        "digests/index.html",
        {
            "week": week,
            "week_label": weeks.label(weeks.parse_week(week)),
            "previous_week": weeks.shift(week, -1),
            "next_week": weeks.shift(week, 1),
            "teams": Team.objects.visible_to(request.user),
            "operator": is_operator(request.user),
            "delivery": services.delivery_status(request.user),
        },
    )


def _preview(request, kind: str, week: str, team: Team | None):
    context = services.for_viewer(services.build_context(kind, week, team), request.user)
    name = services.TEMPLATE_NAMES[DigestKind(kind)]
    part = request.GET.get("part", "")
    if part == "text":
        _, text, _ = services.render_triplet(name, context)
        if request.GET.get("raw"):  # the text part exactly as mailed
            return HttpResponse(text, content_type="text/plain; charset=utf-8")
        # A page of its own (a text/plain answer has no viewport: a phone laid it out 980 px wide and
        # shrank it), the mail's lines wrapped where they are longer than the screen.
        return render(
            request,
            "digests/preview_text.html",
            {"kind": kind, "team": team, "week": week, "week_label": weeks.label(weeks.parse_week(week)), "text": text},
        )
    if part == "html":  # the HTML part exactly as mailed, with the site's icon for the browser's tab
        _, _, html = services.render_triplet(name, context)
        return HttpResponse(_with_site_icon(html))
    subject, _, html = services.render_triplet(name, context | {"embedded": True})
    return render(
        request,
        "digests/preview.html",
        {
            "kind": kind,
            "team": team,
            "week": week,
            "week_label": weeks.label(weeks.parse_week(week)),
            "previous_week": weeks.shift(week, -1),
            "next_week": weeks.shift(week, 1),
            "subject": subject,
            "html": html,
        },
    )


def _with_site_icon(html: str) -> str:
    """A mailed HTML part with the site's icon named in its head, as every page of the site names it. A mail
    names none (a mail program shows no icon of the sender's), so the browser asked the server for
    /favicon.ico, which it answers 404: an error in the console of every preview."""
    icon = f'<link rel="icon" href="{static("favicon.svg")}" type="image/svg+xml">'
    return html.replace("</head>", f"{icon}\n</head>", 1)


@login_required
@read_only
def preview_team(request, slug: str, week: str):
    # A team the user may not see is indistinguishable from a missing one.
    team = get_object_or_404(Team.objects.visible_to(request.user), slug=slug)
    return _preview(request, DigestKind.TEAM, _week_or_404(week), team)


@operator_required
@read_only
def preview_operator(request, week: str):
    return _preview(request, DigestKind.OPERATOR, _week_or_404(week), None)


@operator_required
@read_only
def delivery_list(request):
    deliveries = Delivery.objects.select_related("team", "user", "job__cluster", "webhook")
    filters = {
        "status": request.GET.get("status", ""),
        "week": request.GET.get("week", "").strip(),
        "kind": request.GET.get("kind", ""),
    }
    if filters["status"] in Delivery.Status.values:
        deliveries = deliveries.filter(status=filters["status"])
    if filters["week"]:
        deliveries = deliveries.filter(iso_week=filters["week"])
    if filters["kind"] in DigestKind.values:
        deliveries = deliveries.filter(kind=filters["kind"])
    counts = {row["status"]: row["n"] for row in _status_counts()}
    page = Paginator(deliveries, DELIVERIES_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "digests/delivery_list.html",
        {
            "page": page,
            "filters": filters,
            "statuses": Delivery.Status.choices,
            "kinds": DigestKind.choices,
            "counts": [(value, label, counts.get(value, 0)) for value, label in Delivery.Status.choices],
            "query": query.urlencode(),
            "alert_settings": AlertSettings.current(),
        },
    )


def _status_counts():
    from django.db.models import Count

    return Delivery.objects.values("status").annotate(n=Count("pk")).order_by()


@operator_required
@require_POST
def delivery_retry(request, pk: int):
    delivery = get_object_or_404(Delivery, pk=pk)
    if delivery.status != Delivery.Status.FAILED:
        messages.warning(request, "Only a failed delivery can be retried.")
    else:
        alert = delivery.kind in (DigestKind.IDLE_ALERT, DigestKind.IDLE_ALERT_WEBHOOK)
        try:
            if alert:
                alerts.retry_delivery(delivery)
            else:
                services.retry_delivery_group(delivery)
        except QueueUnreachable as exc:
            messages.error(request, str(exc))
            return redirect("digests:deliveries")
        audit.record(request.user, "digest.retry", delivery, {"kind": delivery.kind, "week": delivery.iso_week})
        if alert:
            messages.info(request, f"Sending the idle alert to {delivery.recipient_label} again.")
        else:
            messages.info(request, f"Sending the {delivery.get_kind_display().lower()} for {delivery.iso_week} again.")
    return redirect("digests:deliveries")


@login_required
@with_form
def subscription_settings(request):
    choices = services.choices_for(request.user)
    if request.method == "POST":
        wanted = set(request.POST.getlist("on"))
        alerts_wanted = set(request.POST.getlist("alerts"))
        changed = 0
        for choice in choices:
            active = choice.key in wanted
            if active != choice.active:
                services.set_subscription(request.user, choice.kind, choice.team, active)
                changed += 1
            alerts = choice.alerts_key in alerts_wanted
            if choice.team is not None and alerts != choice.alerts:
                services.set_alerts(request.user, choice.team, alerts)
                changed += 1
        messages.info(request, "Your digest settings are saved." if changed else "Nothing changed.")
        return redirect("digests:settings")
    return render(
        request,
        "digests/settings.html",
        {"choices": choices, "delivery": services.delivery_status(request.user, choices)},
    )


# Reached from an email without a session: the signed token is the authority. CSRF-exempt because
# mail clients send RFC 8058 one-click POSTs ("List-Unsubscribe=One-Click") without a CSRF token.
@with_form
@csrf_exempt
def unsubscribe(request, token: str):
    try:
        user_id, kind, team_id = services.read_unsubscribe_token(token)
    except signing.BadSignature:
        return render(request, "digests/unsubscribe.html", {"invalid": True}, status=400)
    user = get_user_model().objects.filter(pk=user_id).first()
    team = Team.objects.filter(pk=team_id).first() if team_id else None
    if user is None or (kind in (DigestKind.TEAM, DigestKind.IDLE_ALERT) and team is None):
        return render(request, "digests/unsubscribe.html", {"gone": True}, status=404)
    if kind == DigestKind.IDLE_ALERT:
        label = f"the idle-job alerts of {team}"
    else:
        label = f"the weekly digest of {team}" if team else "the weekly operator digest"
    if request.method != "POST":  # GET or HEAD
        # Only a POST unsubscribes: link scanners and previews fetch GET (and HEAD) links on their own.
        # The link is its authority and travels with the mail (a forwarded digest): the address is masked.
        address = services.masked_address(user.email)
        return render(request, "digests/unsubscribe.html", {"label": label, "user_email": address})
    if kind == DigestKind.IDLE_ALERT:  # the alerts only: the weekly digest stays as it was
        services.set_alerts(user, team, alerts=False)
    else:
        services.set_subscription(user, kind, team, active=False)
    return render(request, "digests/unsubscribe.html", {"label": label, "done": True})


@operator_required
@with_form
def alert_settings(request):
    """Operators turn idle alerts on or off and set how long a running job must idle before one."""
    current = AlertSettings.current()
    before = {"enabled": current.enabled, "idle_minutes": current.idle_minutes}
    form = AlertSettingsForm(request.POST or None, instance=current)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        after = {"enabled": saved.enabled, "idle_minutes": saved.idle_minutes}
        if after != before:
            audit.record(request.user, "idle_alerts.change", saved, {"before": before, "after": after})
            messages.success(request, "Idle alert settings saved.")
        else:
            messages.info(request, "Nothing changed.")
        return redirect("digests:alert-settings")
    kinds = (DigestKind.IDLE_ALERT, DigestKind.IDLE_ALERT_WEBHOOK)
    recent = Delivery.objects.filter(kind__in=kinds).select_related("job__cluster", "team", "webhook")[:10]
    teams = Team.objects.order_by("name").select_related("alert_webhook")
    return render(
        request,
        "digests/alert_settings.html",
        {
            "form": form,
            "threshold": settings.IDLE_UTIL_THRESHOLD,
            "max_age_hours": settings.IDLE_ALERT_MAX_AGE_MINUTES / 60,
            "recent": recent,
            "teams": [(team, getattr(team, "alert_webhook", None)) for team in teams],
        },
    )


def _webhook_state(webhook: TeamWebhook | None) -> dict | None:
    """What the audit log keeps of a webhook: never its URL, which is its secret."""
    if webhook is None:
        return None
    return {"enabled": webhook.enabled, "format": webhook.format, "host": webhook.host}


@operator_required
@with_form
def alert_webhook(request, slug: str):
    """A team's chat webhook for its idle alerts: set, change (the URL entered again) or remove."""
    team = get_object_or_404(Team, slug=slug)
    webhook = TeamWebhook.objects.filter(team=team).first()
    if request.method == "POST" and "remove" in request.POST:
        if webhook is not None:
            before = _webhook_state(webhook)
            webhook.delete()
            audit.record(request.user, "alert_webhook.delete", f"chat webhook of {team}", {"team": team.slug, **before})
            messages.success(
                request, f"The chat webhook of {team} is removed; its past posts stay on the deliveries page."
            )
        return redirect("digests:alert-webhook", team.slug)
    before = _webhook_state(webhook)  # before the form's validation writes into the instance
    form = TeamWebhookForm(request.POST or None, instance=webhook or TeamWebhook(team=team))
    if request.method == "POST" and form.is_valid():
        url_changed = bool(form.cleaned_data.get("url"))
        saved = form.save()
        after = _webhook_state(saved)
        if before != after or url_changed:
            action = "alert_webhook.create" if webhook is None else "alert_webhook.change"
            details = {"team": team.slug, "before": before, "after": after, "url_changed": url_changed}
            audit.record(request.user, action, saved, details)
            messages.success(request, f"The chat webhook of {team} is saved.")
        else:
            messages.info(request, "Nothing changed.")
        return redirect("digests:alert-webhook", team.slug)
    recent = []
    if webhook is not None:
        recent = webhook.deliveries.select_related("job__cluster")[:10]
    return render(
        request,
        "digests/alert_webhook.html",
        {
            "team": team,
            "webhook": webhook,
            "form": form,
            "recent": recent,
            "alerts_on": AlertSettings.current().enabled,
        },
    )


@operator_required
@require_POST
def alert_webhook_test(request, slug: str):
    """Post a test message to the team's stored webhook now, and say how it was answered."""
    team = get_object_or_404(Team, slug=slug)
    webhook = TeamWebhook.objects.filter(team=team).first()
    if webhook is None:
        messages.error(request, f"No webhook URL is stored for {team}: save one first.")
        return redirect("digests:alert-webhook", team.slug)
    outcome = webhooks.send_test(webhook)
    details = {"team": team.slug, "host": webhook.host, "status": outcome.status, "error": outcome.error}
    audit.record(request.user, "alert_webhook.test", webhook, details)
    if outcome.ok:
        messages.success(request, f"Test message posted: {webhook.host} answered HTTP {outcome.status}.")
    else:
        messages.error(request, f"The test message was not posted: {outcome.error}"[:600])
    return redirect("digests:alert-webhook", team.slug)
