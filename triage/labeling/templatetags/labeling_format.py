"""Formatting of agreement figures for the labeling pages."""

from django import template
from django.utils.html import format_html

from triage.labeling.models import OPTION_LABELS

register = template.Library()


@register.filter
def ratio(value, digits: int = 3):
    """A kappa, alpha or score, or a dash where it is undefined."""
    return "–" if value is None else f"{value:.{digits}f}"


@register.filter
def percent(value):
    return "–" if value is None else f"{100 * value:.1f} %"


@register.filter
def estimate(value):
    """A statistic with its bootstrap interval: 0.812 [0.701, 0.903]; or, where no interval could be
    drawn, why not: 1.000 (too few positive labels for an interval)."""
    if value is None or value.value is None:
        return format_html('<span title="{}">–</span>', "undefined: every rating had the same value")
    if value.low is None:
        if value.no_interval_reason:
            return format_html(
                '{} <small class="no-interval">({})</small>', f"{value.value:.3f}", value.no_interval_reason
            )
        return f"{value.value:.3f}"
    return format_html("{} <small>[{}, {}]</small>", f"{value.value:.3f}", f"{value.low:.3f}", f"{value.high:.3f}")


@register.filter
def option_label(value):
    return OPTION_LABELS.get(value, value)


@register.filter
def signed(value):
    return "–" if value is None else f"{value:+.3f}"
