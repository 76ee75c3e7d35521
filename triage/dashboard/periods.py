"""The reporting period a dashboard page shows, parsed from the query string."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from fleet.quoting import quoted

PRESETS = {"7d": 7, "30d": 30, "90d": 90}
DEFAULT_PRESET = "7d"
# Custom dates beyond these are refused: the pages compare with the period before and chart the weeks
# around, which near year 1 or 9999 have no dates at all (a server error, not a wrong figure). They
# hold every job's times (1970 to 5138) with the weeks around them, so no page's own link is refused.
EARLIEST, LATEST = date(1969, 1, 1), date(5139, 12, 31)
# Nor may a period be longer than this: the period before a long one (which the overview compares
# with) would start before year 1. A century holds any fleet's history.
MAX_DAYS = 36_525


@dataclass(frozen=True)
class Period:
    start: datetime  # inclusive, aware UTC
    end: datetime  # exclusive
    preset: str  # "7d", "30d", "90d" or "custom"

    @property
    def length(self) -> timedelta:
        return self.end - self.start

    @property
    def previous(self) -> Period:
        return Period(self.start - self.length, self.start, self.preset)

    @property
    def with_previous(self) -> Period:
        """This period and the one before it, as one (a comparison's figures need both)."""
        return Period(self.previous.start, self.end, "custom")

    @property
    def last_day(self) -> date:
        return (self.end - timedelta(seconds=1)).date()

    def query(self) -> dict[str, str]:
        if self.preset == "custom":
            return {"from": self.start.date().isoformat(), "to": self.last_day.isoformat()}
        return {"period": self.preset}


def utc_day_start(day: date) -> datetime:
    """Midnight UTC at the start of `day`: a period's days, and the jobs list's start dates, are UTC days."""
    return datetime.combine(day, time.min, tzinfo=UTC)


class PeriodError(ValueError):
    """A query string that names no period (bad dates, an unknown preset): what is wrong, and with
    which parameter ("from", "to" or "period")."""

    def __init__(self, message: str, param: str):
        super().__init__(message)
        self.param = param


def parse_period(params, latest: datetime | None) -> tuple[Period, str]:
    """The period `period_from` reads, or on bad input the last 7 days and a message that says so:
    what the pages show."""
    try:
        return period_from(params, latest), ""
    except PeriodError as exc:
        return _preset(DEFAULT_PRESET, _anchor(latest)), f"{exc}; showing the last 7 days."


def period_from(params, latest: datetime | None) -> Period:
    """A period from `?period=7d|30d|90d` or `?from=YYYY-MM-DD&to=YYYY-MM-DD` (inclusive days).

    Presets end at the day of the newest data rather than today, so an archive imported a week
    late still opens on its own last week — but never after today: one job dated in the future
    would otherwise take every preset away from the fleet. Raises PeriodError on bad input.
    """
    anchor = _anchor(latest)
    raw_from, raw_to = params.get("from", "").strip(), params.get("to", "").strip()
    if raw_from or raw_to:
        first = _day(raw_from, "from") if raw_from else None
        last = _day(raw_to, "to") if raw_to else anchor - timedelta(days=1)
        first = first or last - timedelta(days=PRESETS[DEFAULT_PRESET] - 1)
        if first > last:
            raise PeriodError("The start date is after the end date", "from")
        if (last - first).days >= MAX_DAYS:
            raise PeriodError("A period may span at most 100 years", "to")
        return Period(utc_day_start(first), utc_day_start(last + timedelta(days=1)), "custom")
    preset = params.get("period", DEFAULT_PRESET)
    if preset not in PRESETS:
        # Listing them, as the API's choice filters do: the message alone sent a script's author to the schema.
        raise PeriodError(f"Unknown period {quoted(preset)} (the periods: {', '.join(PRESETS)})", "period")
    return _preset(preset, anchor)


def _day(text: str, param: str) -> date:
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise PeriodError(_no_day(text) or "Dates must look like 2026-11-23", param) from None
    if not EARLIEST <= day <= LATEST:
        raise PeriodError(f"Dates must lie between {EARLIEST} and {LATEST}", param)
    return day


def _no_day(text: str) -> str | None:
    """What is wrong with a date written as one (2026-02-30) that the calendar does not have; None
    for text not shaped as a date at all."""
    shaped = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text, re.ASCII)
    if shaped is None:
        return None
    year, month, _ = (int(part) for part in shaped.groups())
    if year == 0:
        return "There is no year 0000: years start at 0001"
    if not 1 <= month <= 12:
        return f"There is no month {shaped.group(2)}: months run from 01 to 12"
    first = date(year, month, 1)
    return f"There is no day {text}: {first:%B %Y} has {calendar.monthrange(year, month)[1]} days"


def _anchor(latest: datetime | None) -> date:
    """The day after the period presets end: the newest data's, or today's if that is earlier."""
    now = datetime.now(tz=UTC)
    return min(latest or now, now).date() + timedelta(days=1)


def _preset(preset: str, anchor: date) -> Period:
    return Period(utc_day_start(anchor - timedelta(days=PRESETS[preset])), utc_day_start(anchor), preset)
