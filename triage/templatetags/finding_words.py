"""A job's triage outcome and a finding's confidence in words a reader who does not know the rules
understands, for `triage/job_findings.html`; the rules' own terms (status, sub-cause, confidence,
rule-set version) stay on the page in a title for the researchers and operators who use them."""

from datetime import UTC

from django import template
from django.template.defaultfilters import floatformat
from django.utils.dateparse import parse_datetime

register = template.Library()

# The rules' confidence (0 to 1) in words, highest first: the rules give 0.9 and more where the log
# or the code shows the cause, 0.4 to 0.6 where the metrics alone suggest it.
LIKELIHOOD = (
    (0.9, "very likely the cause"),
    (0.7, "likely the cause"),
    (0.5, "possibly the cause"),
    (0.0, "the rules are unsure"),
)


@register.filter
def likelihood(confidence) -> str:
    """`confidence` in words: 0.95 is "very likely the cause", 0.8 "likely the cause", 0.6 "possibly the
    cause", 0.4 "the rules are unsure"."""
    if confidence is None:
        return ""
    return next(words for floor, words in LIKELIHOOD if float(confidence) >= floor)


@register.simple_tag
def outcome(result) -> dict:
    """What triage made of a job, said plainly: `words` "2 causes found", "Healthy", "Unclassified: no
    cause found" (the jobs list's tag), "Too little data" (the stored status's label where none of these
    fits), and `detail`: the job's mean GPU utilization, or why its data were too little."""
    if result.status == "classified":
        found = len(result.findings.all())
        words = f"{found} cause{'s' if found != 1 else ''} found"
    else:
        words = {
            "healthy": "Healthy",
            "unclassified": "Unclassified: no cause found",
            "insufficient_data": "Too little data",
        }.get(result.status, result.get_status_display())
    if result.status in ("classified", "unclassified", "healthy") and result.mean_util is not None:
        # Whole percent, rounded as the page's Summary and the jobs list round it (`floatformat:0`).
        detail = f"at a mean GPU utilization of {floatformat(result.mean_util, 0)} %"  # the page: `keep_units`
    else:
        detail = result.reason  # the rules' words on too little data ("samples cover 40 % of the run ...")
    return {"words": words, "detail": detail}


@register.filter
def instant(value):
    """A time of the evidence, ISO 8601 text in UTC ("2026-11-17T09:15:00Z"), as an aware datetime, so
    that `date` writes it in the reader's zone as the page's other times; None for text it cannot read."""
    try:
        moment = parse_datetime(str(value))
    except ValueError:
        return None
    if moment is None:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
