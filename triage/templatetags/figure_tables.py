"""A chart's numbers as a table under it: what a screen reader (or anyone who wants the figures) reads."""

from django import template

from triage.dashboard.figures import as_table

register = template.Library()


@register.inclusion_tag("dashboard/_figure_table.html")
def figure_table(figure: dict, first_column: str, caption: str) -> dict:
    columns, rows = as_table(figure or {})
    return {"columns": columns, "rows": rows, "first_column": first_column, "caption": caption}
