"""Links from a `path:line` (a log event, a finding's log line or code fact) to that line of the job's file."""

from django import template

from fleet.logevents import LOG_EVENT_WORDS
from triage.dashboard.queries import file_url

register = template.Library()


@register.simple_tag
def file_line_url(job_pk: int, artifact_pk: int, line: int | None = None) -> str:
    """The page of a job's file, opened at `line` (`queries.file_url`)."""
    return file_url(job_pk, artifact_pk, line)


@register.simple_tag(takes_context=True)
def job_file_url(context, kind: str, path: str, line: int | None = None) -> str:
    """The file page at `line` ("" when the page has no `job_files` or the job has no such file)."""
    job_files = context.get("job_files") or {}
    pk = job_files.get(f"{kind}:{path}")
    if pk is None:
        return ""
    return file_url(context["job"].pk, pk, line)


@register.filter
def event_words(kind: str) -> str:
    """A log event's kind as a page says it: "checkpoint save" for `checkpoint_save`."""
    return LOG_EVENT_WORDS.get(kind, kind)
