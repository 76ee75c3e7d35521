"""A crontab read in a time zone of its own (DIGEST_TIMEZONE) rather than the Celery app's UTC.

Celery evaluates a crontab in `schedule.tz`; overriding it is all that is needed, plus pickling the
zone along, because the default beat scheduler stores its schedule entries in a shelve.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from celery.schedules import crontab

from fleet.quoting import joined


class ZonedCrontab(crontab):
    def __init__(self, minute="*", hour="*", day_of_week="*", day_of_month="*", month_of_year="*", **kwargs):
        self.zone = kwargs.pop("zone", "UTC")
        ZoneInfo(self.zone)  # fail at start-up on an unknown zone, not at the first tick
        super().__init__(minute, hour, day_of_week, day_of_month, month_of_year, **kwargs)

    @property
    def tz(self):
        return ZoneInfo(self.zone)

    def __reduce__(self):
        cls, args, state = super().__reduce__()
        return cls, args, {**state, "zone": self.zone}

    def __setstate__(self, state) -> None:
        state = dict(state)
        self.zone = state.pop("zone", "UTC")
        super().__setstate__(state)

    def __eq__(self, other) -> bool:
        if isinstance(other, ZonedCrontab):
            return self.zone == other.zone and super().__eq__(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"<zoned crontab: {self._orig_minute} {self._orig_hour} {self._orig_day_of_week} {self.zone}>"


DAY_NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")  # crontab's 0-6


def describe(schedule) -> str:
    """A beat schedule in words, for the pages that say when digests go out: "Mondays at 07:00 UTC".
    A crontab's days, hours and minutes as it holds them (after parsing), in its time zone; '' for a
    schedule that is not a crontab (an interval says nothing a reader could plan around)."""
    if not isinstance(schedule, crontab):
        return ""
    days = sorted(schedule.day_of_week)
    when = "every day" if len(days) == len(DAY_NAMES) else joined([f"{DAY_NAMES[day]}s" for day in days])
    times = joined([f"{hour:02d}:{minute:02d}" for hour in sorted(schedule.hour) for minute in sorted(schedule.minute)])
    zone = getattr(schedule, "zone", None) or str(schedule.tz)
    return f"{when} at {times} {zone}"
