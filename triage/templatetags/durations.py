"""Durations as the pages say them: "13 min", "1 h 30 min", "1 d 2 h" (the idle alerts' words, days beyond)."""

from __future__ import annotations

from datetime import timedelta

from django import template

from triage.digests.alerts import idle_for_text

register = template.Library()


def wait_text(wait: timedelta) -> str:
    """A wait to the minute below a day ("13 min", "1 h 30 min", as the idle alerts say it), to the hour from
    a day up ("1 d 2 h"): a queue's minutes say nothing beside its days."""
    minutes = int(wait.total_seconds() // 60)
    if minutes < 1:
        return "under 1 min"
    if minutes < 24 * 60:
        return idle_for_text(minutes)
    days, hours = divmod(minutes // 60, 24)
    return f"{days} d" + (f" {hours} h" if hours else "")


@register.filter
def queue_wait(job) -> str:
    """How long the job waited between its submission and its start; "" where either time is unknown or the
    source's times are apart (submitted after it started)."""
    if job.submit_time is None or job.start_time is None or job.submit_time > job.start_time:
        return ""
    return wait_text(job.start_time - job.submit_time)
