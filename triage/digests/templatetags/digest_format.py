"""Number formats of the digests, shared by the text and HTML parts so both say the same."""

from django import template

from triage.digests import services

register = template.Library()


@register.filter
def hours(value) -> str:
    return "–" if value is None else services.fmt_hours(float(value))


@register.filter
def share(value) -> str:
    return services.fmt_share(None if value is None else float(value))


@register.filter
def money(value) -> str:
    return "–" if value is None else services.fmt_money(float(value))
