"""The reporting period a dashboard page shows, parsed from the query string."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

PRESETS = {"7d": 7, "30d": 30, "90d": 90}
DEFAULT_PRESET = "7d"
# Custom dates beyond these are refused: the pages compare with the period before and chart the weeks
# around, which near year 1 or 9999 have no dates at all (a server error, not a wrong figure). They
# hold every job's times (1970 to 5138) with the weeks around them, so no page's own link is refused.
EARLIEST, LATEST = date(1969, 1, 1), date(5139, 12, 31)


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


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def parse_period(params, latest: datetime | None) -> tuple[Period, str]:
    """A period from `?period=7d|30d|90d` or `?from=YYYY-MM-DD&to=YYYY-MM-DD` (inclusive days).

    Presets end at the day of the newest data rather than today, so an archive imported a week
    late still opens on its own last week — but never after today: one job dated in the future
    would otherwise take every preset away from the fleet. Returns the period and a message for bad input.
    """
    now = datetime.now(tz=UTC)
    anchor = min(latest or now, now).date() + timedelta(days=1)
    raw_from, raw_to = params.get("from", "").strip(), params.get("to", "").strip()
    if raw_from or raw_to:
        try:
            first = date.fromisoformat(raw_from) if raw_from else None
            last = date.fromisoformat(raw_to) if raw_to else anchor - timedelta(days=1)
        except ValueError:
            return _preset(DEFAULT_PRESET, anchor), "Dates must look like 2026-11-23; showing the last 7 days."
        if not all(EARLIEST <= day <= LATEST for day in (first, last) if day is not None):
            message = f"Dates must lie between {EARLIEST} and {LATEST}; showing the last 7 days."
            return _preset(DEFAULT_PRESET, anchor), message
        first = first or last - timedelta(days=PRESETS[DEFAULT_PRESET] - 1)
        if first > last:
            return _preset(DEFAULT_PRESET, anchor), "The start date is after the end date; showing the last 7 days."
        return Period(_day_start(first), _day_start(last + timedelta(days=1)), "custom"), ""
    preset = params.get("period", DEFAULT_PRESET)
    if preset not in PRESETS:
        return _preset(DEFAULT_PRESET, anchor), f"Unknown period '{preset}'; showing the last 7 days."
    return _preset(preset, anchor), ""


def _preset(preset: str, anchor: date) -> Period:
    return Period(_day_start(anchor - timedelta(days=PRESETS[preset])), _day_start(anchor), preset)
