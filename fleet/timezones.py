"""The time zones a person may choose to read pages in: IANA names, as zoneinfo knows them.

Only what pages show moves into a person's zone (config.middleware.UserTimeZoneMiddleware): what is
stored, computed (periods, ISO weeks), exported (CSV, the API) and mailed stays in UTC.
"""

from __future__ import annotations

import zoneinfo
from functools import cache

from django.core.exceptions import ValidationError

DEFAULT = "UTC"
# "localtime" is the server's own zone, whatever the machine was set to: nobody's choice.
NOT_CHOICES = {"localtime", "posixrules", "Factory"}


@cache
def names() -> tuple[str, ...]:
    """Every zone name, sorted; UTC always, even on a machine without time zone data."""
    return tuple(sorted((zoneinfo.available_timezones() - NOT_CHOICES) | {DEFAULT}))


@cache
def _by_folded_name() -> dict[str, str]:
    return {name.casefold(): name for name in names()}


def canonical(name: str) -> str | None:
    """The zone's name as IANA spells it ("europe/berlin" is "Europe/Berlin"), None for no zone."""
    return _by_folded_name().get(name.strip().casefold())


def validate_time_zone(name: str) -> None:
    if canonical(name) != name:
        raise ValidationError(
            "“%(name)s” is not a time zone name we know. Use an IANA name such as Europe/Berlin, "
            "America/New_York or UTC.",
            code="invalid",
            params={"name": name},
        )
