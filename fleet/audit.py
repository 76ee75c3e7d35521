"""The audit log of operator actions: who changed thresholds, prices, exchange rates, tokens,
connectors, deleted data or retried a digest, when, and what exactly.

One function writes it, `record(actor, action, target, details)`, called by the views, admin hooks
and commands that make those changes (triage calls it too: fleet never imports triage). Entries
are only ever added; the page under /audit/ lists them for operators.
"""

from __future__ import annotations

import logging
from decimal import Decimal

from django.db import models
from rest_framework_api_key.models import AbstractAPIKey

logger = logging.getLogger("fleet.audit")


def record(actor, action: str, target=None, details: dict | None = None):
    """Add one entry. `actor` is a user (or None for the system), `target` a model instance or a
    short text naming what was acted on, `details` anything JSON-serialisable worth keeping."""
    from fleet.models import AuditEvent

    if target is None:
        target_type, target_id, target_repr = "", "", ""
    elif isinstance(target, models.Model):
        target_type, target_id, target_repr = target._meta.label_lower, _target_id(target), str(target)
    else:
        target_type, target_id, target_repr = "", "", str(target)
    event = AuditEvent.objects.create(
        actor=actor if actor is not None and getattr(actor, "is_authenticated", False) else None,
        actor_name=actor.get_username()
        if actor is not None and getattr(actor, "is_authenticated", False)
        else "system",
        action=action[:100],
        target_type=target_type[:100],
        target_id=target_id[:100],
        target_repr=target_repr[:300],
        details=details or {},
    )
    logger.info("audit: %s %s %s %s", event.actor_name, action, target_repr, details or "")
    return event


def _target_id(target: models.Model) -> str:
    """How an entry names its target: its primary key, but an API token (machine or personal) by its
    prefix, as its row and its addresses do: the library's id is the prefix and the key's hash."""
    return target.prefix if isinstance(target, AbstractAPIKey) else str(target.pk)


def price_details(price) -> dict:
    """What an audit entry keeps of a GPU-hour price."""
    return {
        "cluster": price.cluster.name,
        "gpu_model": price.gpu_model,
        "price_per_gpu_hour": str(price.price_per_gpu_hour),
        "currency": price.currency,
    }


def save_prices(actor, formset) -> None:
    """Save a formset of GPU-hour prices and record each price it created, changed or deleted: the
    admin's and the settings page's, so every way of changing a price is in the log."""
    _save_audited(actor, formset, "price", price_details, lambda d: f"{d['cluster']}/{d['gpu_model'] or '*'}")


def rate_details(rate) -> dict:
    """What an audit entry keeps of an exchange rate."""
    return {"currency": rate.currency, "rate": f"{Decimal(rate.rate).normalize():f}"}  # "1.08" as typed or stored


def save_rates(actor, formset) -> None:
    """Save a formset of exchange rates and record each rate it created, changed or deleted."""
    _save_audited(actor, formset, "exchange_rate", rate_details, lambda d: d["currency"])


def _save_audited(actor, formset, name: str, details_of, label_of) -> None:
    deleted = [details_of(form.instance) for form in formset.deleted_forms if form.instance.pk]
    formset.save()
    for obj in formset.new_objects:
        record(actor, f"{name}.create", obj, details_of(obj))
    for obj, fields in formset.changed_objects:
        record(actor, f"{name}.change", obj, {"fields": sorted(fields), **details_of(obj)})
    for details in deleted:
        record(actor, f"{name}.delete", label_of(details), details)


# How much of an entry's details the audit page spells out (the admin keeps the whole JSON).
LIST_ITEMS_SHOWN = 20


def readable(details, prefix: str = "") -> list[tuple[str, str]]:
    """An entry's details as (label, text) lines for the page: nested dicts flattened into dotted
    labels (`changed.idle_util`), lists joined with commas, a `changed` pair as "old → new".
    Plain text: the template escapes it. Keys in alphabetical order: PostgreSQL's jsonb keeps no
    order of its own (it sorts by length), so the order they were recorded in is lost there anyway."""
    if not isinstance(details, dict):
        return [] if details in (None, "", []) else [(prefix or "details", _text(details))]
    lines: list[tuple[str, str]] = []
    for key, value in sorted(details.items(), key=lambda item: str(item[0])):
        label = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            lines += readable(value, label)
        elif label.startswith("changed.") and isinstance(value, list) and len(value) == 2:
            lines.append((label, f"{_text(value[0])} → {_text(value[1])}"))
        else:
            lines.append((label, _text(value)))
    return lines


def _text(value) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return "; ".join(f"{label}: {text}" for label, text in readable(value)) or "–"
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        shown = ", ".join(_text(item) for item in value[:LIST_ITEMS_SHOWN])
        more = len(value) - LIST_ITEMS_SHOWN
        return f"{shown} and {more:,} more" if more > 0 else shown
    return str(value)
