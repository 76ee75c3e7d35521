"""How a share is written, in one place: the pages, the digests and the rules' own words ("GPUs idle
29 % of the covered time") all write it with `share_text`.

Pure Python: no Django, so the rules (which must not import Django) and the dashboard can both use it.
"""

from __future__ import annotations


def share_text(value: float | None) -> str:
    """A share (0.51) as every page, digest and finding writes it: "51 %", whole percent and a space
    before the sign as the app writes its other percentages (the teams table's "51 %", "+12 %";
    `f"{share:.0%}"` wrote "51%"); "–" for none."""
    return "–" if value is None else f"{100 * value:.0f} %"
