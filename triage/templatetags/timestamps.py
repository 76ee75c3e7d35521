"""Timestamps in free text (an ingest error's problem) kept whole on the page."""

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()

# An ISO date, with its time and offset when it has them: 2026-10-28, 2026-10-28T14:03:00Z,
# 2026-10-29 09:00:00.5+02:00.
_ISO = re.compile(r"\b(\d{4}-\d{2}-\d{2})(?:([T ])(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?))?")


def _whole(match) -> str:
    date, between, time = match.groups()
    if not time:
        return f'<span class="when">{date}</span>'
    # One box (app.css, span.timestamp): taken whole to the next line where it fits on one; where no line
    # has room for it (a phone's card), "2026-10-28T" over "14:03:00Z", never broken inside either.
    if between == "T":
        return f'<span class="timestamp"><span class="when">{date}T</span><wbr><span class="when">{time}</span></span>'
    return f'<span class="timestamp"><span class="when">{date}</span> <span class="when">{time}</span></span>'


@register.filter
def whole_timestamps(text) -> str:
    """The text escaped, each ISO timestamp in it kept whole on a line: the errors table broke one at its
    hyphen, "2026-" at a line's end and "10-28T14:03:00Z" under it. Only where no line has room for it
    does it break, and then between its date and its time."""
    if text is None:
        return ""
    return mark_safe(_ISO.sub(_whole, escape(str(text))))  # noqa: S308 - escaped first
