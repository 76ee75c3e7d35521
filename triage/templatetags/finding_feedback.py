"""Each finding's verdicts and the form to give one, for `triage/job_findings.html`."""

from django import template

from triage import feedback
from triage.models import Feedback

register = template.Library()

# The extra tag of a message said next to what it is about (an answer on a finding, where the page it
# redirects to scrolls), not at the top of the page, which the reader no longer sees: the page's top
# (`base.html`) leaves these out and `placed_messages` gives them to where they belong.
PLACED = "placed"


def place_tags(place: str) -> str:
    """The extra tags of a message said at `place` ("findings", "finding-<category>")."""
    return f"{PLACED} {place}"


@register.simple_tag(takes_context=True)
def placed_messages(context, place: str) -> list:
    """The request's messages to say at `place`."""
    return [message for message in context.get("messages") or [] if place_tags(place) == message.extra_tags]


@register.inclusion_tag("triage/_finding_feedback.html", takes_context=True)
def finding_feedback(context, finding):
    """The verdicts on `finding`'s cause in its job, and the viewer's form; the job's verdicts are
    read once per page (kept on the job), not once per finding."""
    job, user = context["job"], context["request"].user
    cached = getattr(job, "_feedback_for_page", None)
    if cached is None:
        cached = job._feedback_for_page = feedback.for_job(job, user)
    given = cached.get(finding.category, feedback.JobFeedback())
    return {
        "finding": finding,
        "job": job,
        "mine": given.mine,
        "others": given.others,
        "verdicts": Feedback.Verdict.choices,
        "csrf_token": context.get("csrf_token"),
        "is_operator": context.get("is_operator", False),  # operators may remove others' answers
        "said": placed_messages(context, f"finding-{finding.category}"),
    }


@register.simple_tag
def fix_first(result) -> dict:
    """Which of a triage result's findings to fix first, and why, when it has several: the costliest
    (findings come the most GPU-hours first) among the causes its people's answers did not set aside
    (answered wrong or intended, and right by nobody), as the digests rank a job's fixes. {} for one
    finding, or when every cause but none is set aside."""
    found = list(result.findings.all())
    if len(found) < 2:
        return {}
    aside = {category for _, category in feedback.set_aside_causes([result.job_id])}
    kept = [finding for finding in found if finding.category not in aside]
    if not kept:
        return {}
    if aside:
        why = "of the causes found that no one answered wrong or intended, it cost the most GPU-hours"
    else:
        why = f"of the {len(found)} causes found, it cost the most GPU-hours"
    return {"category": kept[0].category, "why": why}
