"""How a share is written, in one place: the pages, the digests and the rules' own words ("GPUs idle
29 % of the covered time") all write it with `share_text`.

Pure Python: no Django, so the rules (which must not import Django) and the dashboard can both use it.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

# Between a figure and its unit on a page ("28\u00a0%", "7.3\u00a0GPU-hours", "2.50\u00a0USD"): a no-break
# space, so a phone never puts the figure at a line's end and its unit on the next. Only in HTML: what is
# read as plain text (an email's text part, CSV, JSON, webhooks, the rules' stored summaries) keeps an
# ordinary space, so `share_text` writes one and the pages pass what they show through `keep_units`.
NBSP = "\u00a0"

# A space after a digit and before a unit: %, GPU-hours (unused, idle or recoverable ones too), a currency code,
# points, seconds, minutes, hours.
_FIGURE_UNIT = re.compile(
    r"(?<=\d) (?=%|(?:unused |idle |recoverable )?GPU-hours\b|[A-Z]{3}\b|pts\b|s\b|ms\b|min\b|h\b)"
)


def keep_units(text: str) -> str:
    """`text` with each figure's space before its unit made a no-break space, for a page: "idle 29 % for
    3 s" -> "idle 29\u00a0% for 3\u00a0s". Plain text (emails' text part, CSV, JSON) keeps the space."""
    return _FIGURE_UNIT.sub(NBSP, text)


def share_text(value: float | None) -> str:
    """A share (0.51) as every page, digest and finding writes it: "51 %", whole percent and a space
    before the sign as the app writes its other percentages (the teams table's "51 %", "+12 %";
    `f"{share:.0%}"` wrote "51%"); "–" for none. A page keeps "51" and "%" on one line with `keep_units`."""
    return "–" if value is None else f"{100 * value:.0f} %"


THOUSANDTH = Decimal("0.001")


def hours_to_thousandth(hours: float) -> float:
    """GPU-hours as the JSON API and the jobs CSV give a job's recoverable GPU-hours and a fix's: to 3 places (a
    thousandth of an hour, 3.6 s), half up on the decimal the figure reads as (2.1255 is 2.126, 0.0125 0.013), so
    a job's figure and its one finding's guidance's are the same number, as documented in the API schema."""
    return float(Decimal(repr(float(hours))).quantize(THOUSANDTH, rounding=ROUND_HALF_UP))
