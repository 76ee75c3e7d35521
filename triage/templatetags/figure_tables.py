"""A chart's numbers as a table under it: what a screen reader (or anyone who wants the figures) reads,
written as the page's cards and tables write the same figures (`queries.hours_text`, `percent_text`)."""

from django import template

from triage.dashboard.figures import COUNT, GPU_HOURS, PERCENT, as_table
from triage.dashboard.queries import hours_text, percent_text

register = template.Library()

# How a table writes each unit a figure's values can have; the charts keep their plain numbers.
WRITE = {
    GPU_HOURS: hours_text,
    PERCENT: percent_text,  # 16.43 -> "16 %"
    COUNT: lambda count: f"{count:,}",  # as the Jobs card: 1,234
}


@register.inclusion_tag("dashboard/_figure_table.html")
def figure_table(figure: dict, first_column: str, caption: str) -> dict:
    columns, rows = as_table(figure or {}, WRITE)
    dated = "dates" in (figure or {}).get("numbers", {})  # a date is not broken at its hyphens
    # Each row's name, and each of its figures with the name of its column: a phone's card gives them side by side.
    rows = [{"name": row[0], "figures": list(zip(columns, row[1:], strict=True))} for row in rows]
    # A table of more than one figure a row is a card a row on a phone (table.stacks): its columns did not fit.
    stacks = len(columns) > 1
    return {
        "columns": columns,
        "rows": rows,
        "first_column": first_column,
        "caption": caption,
        "dated": dated,
        "stacks": stacks,
    }
