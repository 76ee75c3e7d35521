"""ISO weeks as reporting periods: Monday 00:00 UTC up to the next Monday, like the dashboard's."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from triage.dashboard.periods import Period

WEEK_PATTERN = re.compile(r"^(\d{4})-W(\d{2})$")
# The years a job's times may fall in (fleet.canonical.TIME_RANGE), with one either side for the
# links to the week before and after: all have dates (years 1 and 9999 have none before or after).
FIRST_YEAR, LAST_YEAR = 1969, 5139


def parse_week(text: str) -> Period:
    """`2026-W48` → the period of that ISO week. Raises ValueError on anything else."""
    match = WEEK_PATTERN.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not an ISO week like 2026-W48")
    if not FIRST_YEAR <= int(match[1]) <= LAST_YEAR:
        raise ValueError(f"{text!r} is not a week from {FIRST_YEAR} to {LAST_YEAR}")
    try:
        monday = date.fromisocalendar(int(match[1]), int(match[2]), 1)
    except ValueError:
        raise ValueError(f"{text!r} is not a week of that year") from None
    start = datetime.combine(monday, time.min, tzinfo=UTC)
    return Period(start, start + timedelta(weeks=1), "custom")


def week_of(moment: datetime) -> str:
    year, week, _ = moment.astimezone(UTC).isocalendar()
    return f"{year:04d}-W{week:02d}"


def week_name(period: Period) -> str:
    return week_of(period.start)


def last_complete_week(now: datetime) -> str:
    """The ISO week before the one `now` falls in: the week a digest sent at `now` reports."""
    return week_of(now.astimezone(UTC) - timedelta(weeks=1))


def shift(week: str, weeks: int) -> str:
    return week_of(parse_week(week).start + timedelta(weeks=weeks))


def dashboard_query(period: Period) -> str:
    """The dashboard's query string for exactly this week (its custom period takes inclusive days)."""
    return f"from={period.start.date().isoformat()}&to={period.last_day.isoformat()}"


def label(period: Period) -> str:
    """A week's days, "2026-11-16 to 2026-11-22": what "2026-W47" means to a reader who does not count
    ISO weeks (a digest's heading, the digest pages' weeks), in ISO dates and worded as the dashboard's
    period note words a range, not "16–22 Nov 2026"."""
    return f"{period.start.date().isoformat()} to {period.last_day.isoformat()}"
