"""Formatting of agreement figures for the labeling pages."""

from django import template
from django.utils.html import format_html

from fleet.numbers import NBSP
from triage.labeling.agreement import NO_DISAGREEMENT, TOO_FEW_JOBS, too_few_jobs_text
from triage.labeling.models import OPTION_LABELS

register = template.Library()


@register.filter
def ratio(value, digits: int = 3):
    """A kappa, alpha or score, or a dash where it is undefined."""
    return "–" if value is None else f"{value:.{digits}f}"


@register.filter
def rules_revisions(revisions):
    """The revisions of the rules' code behind a set of results: "rules revision 2", or while some jobs
    are not yet re-triaged after an upgrade, "rules revisions 1 and 2"; "" for none."""
    if not revisions:
        return ""
    if len(revisions) == 1:
        return f"rules revision {revisions[0]}"
    return f"rules revisions {', '.join(str(r) for r in revisions[:-1])} and {revisions[-1]}"


@register.filter
def percent(value):
    """An agreement share (0.996) to one decimal, "99.6 %", unlike the rest of the product's whole-percent
    shares (`fleet.numbers.share_text`), on purpose: a category's raw agreement counts every job both
    raters left it off (most jobs, for most categories), so it sits near 100 % in any study of more than
    a few dozen jobs, and whole percent would write one disagreement in 250 jobs as "100 %", perfect
    agreement, beside a kappa below 1 (docs/labeling.md)."""
    return "–" if value is None else f"{100 * value:.1f}{NBSP}%"  # on one line on a phone


@register.filter
def estimate(value):
    """A statistic with its bootstrap interval: 0.812 [0.701, 0.903]; or, where no interval could be
    drawn, why not: 1.000 (too few positive labels for an interval)."""
    if value is None or value.value is None:
        # Said beside the dash, as a missing interval's reason is: a title shows on no phone.
        return format_html('– <small class="no-interval">({})</small>', "undefined: every job got the same answer")
    if value.low is None:
        share = value.agreed_interval
        if value.no_interval_reason == NO_DISAGREEMENT and share is not None:
            # Every resample would agree perfectly too: say on how many jobs the figure rests, and the
            # exact interval of the share of jobs agreed on, which does narrow with more jobs.
            return format_html(
                # Two lines, so the figure's column stays narrow (its cells do not wrap).
                '{} <small class="no-interval">(agreed on all {} jobs: {};<br>'
                "jobs agreed: {}–{}\u00a0%, exact {}\u00a0% interval)"
                "</small>",
                f"{value.value:.3f}",
                value.units,
                NO_DISAGREEMENT,
                f"{100 * share[0]:.1f}",
                f"{100 * share[1]:.0f}",
                f"{100 * value.confidence:g}",
            )
        if value.no_interval_reason:
            return format_html('{} <small class="no-interval">({})</small>', f"{value.value:.3f}", _reason(value))
        return f"{value.value:.3f}"
    return format_html("{} <small>[{}, {}]</small>", f"{value.value:.3f}", f"{value.low:.3f}", f"{value.high:.3f}")


@register.filter
def option_label(value):
    return OPTION_LABELS.get(value, value)


@register.filter
def signed(value):
    return "–" if value is None else f"{value:+.3f}"


@register.filter
def interval_only(value):
    """Under a headline figure: its interval, or why it has none, and the jobs it rests on (a headline
    alpha of 1.000 on one job read like one on four hundred)."""
    if value is None or value.value is None:
        return ""
    jobs = f"{value.units} job{'' if value.units == 1 else 's'}"
    if value.low is not None:
        return f"{100 * value.confidence:g}{NBSP}% CI [{value.low:.3f}, {value.high:.3f}] · {jobs}"
    if value.no_interval_reason == NO_DISAGREEMENT:
        return f"{jobs}, all agreed: {NO_DISAGREEMENT}"
    return f"{jobs}: {_reason(value)}" if value.no_interval_reason else jobs


def _reason(value) -> str:
    """Why there is no interval; too few jobs says how many there are and how many it takes."""
    if value.no_interval_reason == TOO_FEW_JOBS:
        return too_few_jobs_text(value.units)
    return value.no_interval_reason
