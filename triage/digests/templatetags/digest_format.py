"""Number formats of the digests, shared by the text and HTML parts so both say the same; and the
deliveries page's breaking of long error words."""

import re

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

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


# A job whose state says it was still running when it was stored: its hours are those up to its last
# sample, and it may yet use its GPUs better or worse. Both parts of a digest say it in these words.
STILL_RUNNING = "still running when last stored: its hours so far"


@register.filter
def still_running(job) -> str:
    """STILL_RUNNING for a job still running when it was last stored (`Job.unfinished`), else ""."""
    return STILL_RUNNING if job.unfinished else ""


# What "Runs that got better" lists, in both parts.
@register.simple_tag
def improved_runs_intro(low_threshold) -> str:
    return (
        f"Jobs that ran again this week and averaged above {float(low_threshold):.0f} % GPU utilization, where "
        f"their previous run averaged {float(low_threshold):.0f} % or less. Only runs that finished successfully count."
    )


# A mean GPU utilization that is Slurm's step-accounting average (a job without GPU samples) is marked
# SLURM_AVG, as the dashboard's pages mark it; an email has no tooltip, so the digest says what it means.
SLURM_AVG = "Slurm avg"
SLURM_AVG_MEANS = "from Slurm's step accounting (an average of the whole run; no time series)"


@register.simple_tag
def slurm_avg_mark() -> str:
    """What "Slurm avg" means, for a digest that marks a run's figure with it."""
    return f"{SLURM_AVG}: {SLURM_AVG_MEANS}, for a run without GPU samples."


@register.simple_tag
def slurm_avg_note(totals) -> str:
    """How many of the week's utilization figures are Slurm's step-accounting averages, as the
    overview says it of a period; "" for none."""
    n, m = totals.slurm_avg_jobs, totals.measured_jobs
    if not n:
        return ""
    if n == m:
        which = "The week's one utilization figure is" if n == 1 else f"All {n} of the week's utilization figures are"
    else:
        which = f"{n} of the week's {m} utilization figures {'is' if n == 1 else 'are'}"
    jobs, them = ("a job", "it") if n == 1 else ("jobs", "them")
    return (
        f"{which} {SLURM_AVG}: {SLURM_AVG_MEANS}, for {jobs} without GPU samples; the low-utilization count"
        f" includes {them}."
    )


# Under every digest's figures: the hours of a cause (97.8) are its jobs' exact hours added up, then
# rounded, as the dashboard's pages add them; the jobs' own rounded hours (85.5 + 12.4) may add to a
# tenth more or less. Summing the rounded figures instead would part the digest from the dashboard.
ROUNDING = (
    "Totals are added up before they are rounded to a tenth of an hour, so one can differ by a tenth or so "
    "from the rounded figures it sums."
)


@register.simple_tag
def rounding_note() -> str:
    return ROUNDING


@register.filter
def break_after_underscores(text) -> str:
    """The text, escaped, free to break after each underscore (`<wbr>`): a setting's name in a delivery's error
    (ALERT_WEBHOOK_ALLOWED_NETWORKS) wraps between its words in a narrow column, not mid-word. Copied, it is the
    same text."""
    if not text:
        return ""
    return format_html_join(mark_safe("_<wbr>"), "{}", ((part,) for part in str(text).split("_")))


# An error's leading exception name, as smtplib and the senders write one: "SMTPRecipientsRefused: ...".
_ERROR_NAME = re.compile(r"([A-Za-z_][\w.]*:)(\s.*)?\Z", re.DOTALL)


@register.filter
def delivery_error(text) -> str:
    """A delivery's last error for the deliveries page, escaped: its leading exception name kept whole (a
    narrow Last error column broke 'SMTPRecipientsRefused:' mid-name; app.css, .error-name), the line free
    to break after its colon, and the rest as break_after_underscores gives it. Copied, it is the same text."""
    if not text:
        return ""
    match = _ERROR_NAME.match(str(text))
    if match is None:
        return break_after_underscores(text)
    name, rest = match.groups()
    return format_html('<span class="error-name">{}</span>{}', name, break_after_underscores(rest or ""))
