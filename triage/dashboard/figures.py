"""Plotly figure specs as plain dicts: passed to the page with json_script, drawn by vendored plotly.js."""

from __future__ import annotations

import html
import math

BASE_LAYOUT = {
    "margin": {"l": 50, "r": 20, "t": 10, "b": 40},
    "font": {"family": "system-ui, sans-serif", "size": 12, "color": "#1d2330"},
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "hovermode": "x unified",
    # Above the plot, anchored by its foot: Plotly widens the top margin to fit it, however many
    # rows its entries wrap to on a narrow window (pinned at y=1.12 a second row covered the bars).
    "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"},
}
# Weeks along the bottom; their labels turn only when they would overlap (a narrow window).
# They are ISO weeks in UTC whatever zone the reader chose (config.middleware.UserTimeZoneMiddleware),
# and the axis says so.
# Each week is its Monday's date, 2026-11-16; turned, the last one reaches some 50 px past the plot's right
# edge, which WEEKS_RIGHT_MARGIN leaves room for. The axis widens the bottom margin to fit them (automargin
# "height") but not the sides: a side pushed out on a phone stayed out when the window widened, and the
# chart was drawn some pixels off the one a wide window draws.
WEEKS_AXIS = {"type": "category", "nticks": 6, "title": {"text": "Week from Monday 00:00 UTC"}, "automargin": "height"}
WEEKS_RIGHT_MARGIN = 60
USED = "#2f5fd0"
UNUSED = "#e0a03c"
UNSAMPLED = "#b8bec9"
# The weekly trend's third series: GPU time no GPU samples cover (a job with no utilization figure, a
# hole in a series), which is neither used nor unused; the pages explain it when it is drawn.
UNSAMPLED_NAME = "GPU-hours without samples"
# What a trace's values are, for its "The numbers" table (`as_table`), which writes them as the page's
# cards and tables do: GPU-hours to a tenth with a thousands separator, percent whole, counts grouped.
# A figure says it under "numbers" (plotly.js is handed only its "data" and "layout").
GPU_HOURS, PERCENT, COUNT = "gpu_hours", "percent", "count"


def _numbers(units: list[str], dates: list[str] | None = None) -> dict:
    """A figure's "numbers": the unit of each trace's values, in the traces' order, and for a chart of
    weeks each row's date as the table writes it (the week's Monday, as the chart labels it)."""
    return {"units": units, **({"dates": dates} if dates is not None else {})}


def _week_dates(rows: list[dict]) -> list[str]:
    """Each week's Monday as the app writes a date, "2026-11-16": the weekly charts' labels (they said
    "Nov 16", with no year) and their numbers tables' rows."""
    return [row["week"].strftime("%Y-%m-%d") for row in rows]


def _layout(**extra) -> dict:
    return {**BASE_LAYOUT, **extra}


def weekly_trend(rows: list[dict]) -> dict:
    """Each week's GPU-hours stacked as used, unused and, when there are any, those without samples:
    the bars add up to the GPU-hours the cards count (used and unused alone drew 0 for a cluster
    whose jobs had no GPU samples while its GPU-hours card said 8.0)."""
    weeks = _week_dates(rows)  # 2026-11-16, as the app writes a date and the numbers table says it
    used = [round(row["covered"] - row["unused"], 1) for row in rows]
    unused = [round(row["unused"], 1) for row in rows]
    # max(): coverage is at most 1, but the float product may come back a hair above the hours (-0.0).
    unsampled = [max(0.0, round(row["hours"] - row["covered"], 1)) for row in rows]
    data = [
        {"type": "bar", "x": weeks, "y": used, "name": "Used GPU-hours", "marker": {"color": USED}},
        {"type": "bar", "x": weeks, "y": unused, "name": "Unused GPU-hours", "marker": {"color": UNUSED}},
    ]
    if any(unsampled):  # a fully sampled fleet keeps its two series, with no legend entry of zeros
        data.append({"type": "bar", "x": weeks, "y": unsampled, "name": UNSAMPLED_NAME, "marker": {"color": UNSAMPLED}})
    return {
        "data": data,
        "numbers": _numbers([GPU_HOURS] * len(data), _week_dates(rows)),
        "layout": _layout(
            barmode="stack",
            xaxis=WEEKS_AXIS,
            yaxis={"title": {"text": "GPU-hours"}},
            height=280,
            margin={**BASE_LAYOUT["margin"], "r": WEEKS_RIGHT_MARGIN},
        ),
    }


def weekly_trend_names(figure: dict) -> dict:
    """The trend card's heading and the label of its chart and numbers: they name the GPU-hours without
    samples when the chart stacks them (a heading of "used and unused" sat over three series)."""
    if any(trace["name"] == UNSAMPLED_NAME for trace in figure["data"]):
        both = "Weekly GPU-hours: used, unused and without samples"
        return {"heading": both, "label": both}
    return {"heading": "Weekly GPU-hours, used and unused", "label": "Weekly used and unused GPU-hours"}


def top_teams(rows: list[dict]) -> dict:
    return _unused_bars([row["team__name"] for row in rows], [row["unused"] for row in rows])


def top_users(rows: list[dict]) -> dict:
    return _unused_bars([row["user"] for row in rows], [row["unused"] for row in rows])


def _unused_bars(names: list[str], unused: list[float]) -> dict:
    """Horizontal bars of unused GPU-hours, the largest at the top."""
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                # Team and user names come from imports; Plotly renders tick and hover text as HTML.
                "y": [html.escape(name) for name in reversed(names)],
                "x": [round(value, 1) for value in reversed(unused)],
                "marker": {"color": UNUSED},
                "name": "Unused GPU-hours",
                "hovertemplate": "%{y}: %{x} unused GPU-hours<extra></extra>",
            }
        ],
        "numbers": _numbers([GPU_HOURS]),
        "layout": _layout(
            xaxis={"title": {"text": "Unused GPU-hours"}},
            height=280,
            hovermode="closest",
            margin={"l": 110, "r": 20, "t": 10, "b": 40},
        ),
    }


def utilization_histogram(counts: list[int], low_threshold: float) -> dict:
    width = 100 // len(counts)
    labels = [f"{i * width}–{(i + 1) * width}" for i in range(len(counts))]
    colours = [UNUSED if (i + 1) * width <= low_threshold else USED for i in range(len(counts))]
    return {
        "data": [
            {
                "type": "bar",
                "x": labels,
                "y": counts,
                "marker": {"color": colours},
                "name": "Jobs",
                "hovertemplate": "%{x} %: %{y} jobs<extra></extra>",
            }
        ],
        "numbers": _numbers([COUNT]),
        "layout": _layout(
            xaxis={"title": {"text": "Mean GPU utilization (%)"}, "type": "category", "tickangle": -35},
            margin={"l": 50, "r": 20, "t": 10, "b": 75},
            yaxis={"title": {"text": "Jobs"}},
            height=260,
            hovermode="closest",
        ),
    }


def categories_vs_paper(rows: list[dict], whose: str = "This fleet") -> dict:
    """Share of recoverable GPU-hours per category here (`whose`: the fleet, or a member's teams),
    beside the paper's share of issues."""
    from triage.taxonomy import Category

    total = sum(row["hours"] for row in rows) or 1.0
    hours = {row["category"]: row["hours"] for row in rows}
    categories = sorted(Category, key=lambda c: hours.get(c.value, 0.0))
    labels = [c.label for c in categories]
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "y": labels,
                "name": f"{html.escape(whose)} (share of recoverable GPU-hours)",
                "x": [round(100 * hours.get(c.value, 0.0) / total, 1) for c in categories],
                # One colour, the unused hours': the legend shows a trace's first colour, so bars in
                # each category's own colour gave the legend a square matching none of the others.
                "marker": {"color": UNUSED},
                "hovertemplate": "%{y}: %{x} % of recoverable GPU-hours<extra></extra>",
            },
            {
                "type": "bar",
                "orientation": "h",
                "y": labels,
                "name": "ICSE '24 study (share of issues)",
                "x": [c.paper_share for c in categories],
                "marker": {"color": "rgba(29,35,48,0.25)"},
                "hovertemplate": "%{y}: %{x} % of the paper's issues<extra></extra>",
            },
        ],
        "numbers": _numbers([PERCENT, PERCENT]),
        "layout": _layout(
            barmode="group",
            height=520,
            hovermode="closest",
            xaxis={"title": {"text": "%"}},
            # The left margin grows to the longest name (static/js/charts.js wraps them on a narrow box).
            yaxis={"automargin": True},
            margin={"l": 10, "r": 20, "t": 30, "b": 40},
        ),
    }


def category_trend(rows: list[dict], colour: str) -> dict:
    weeks = _week_dates(rows)  # 2026-11-16, as the app writes a date and the numbers table says it
    # Jobs are counted in whole numbers: ticks at 0, step, 2 × step… (left to itself, Plotly lines
    # this axis up with the GPU-hours gridlines and labels it 0.91, 1.82, …).
    job_step = max(1, math.ceil(max((r["jobs"] for r in rows), default=0) / 5))
    return {
        "data": [
            {
                "type": "bar",
                "x": weeks,
                "y": [round(r["hours"], 1) for r in rows],
                "name": "Recoverable GPU-hours",
                "marker": {"color": colour},
                "hovertemplate": "%{x}: %{y} GPU-hours<extra></extra>",
            },
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": weeks,
                "y": [r["jobs"] for r in rows],
                "name": "Jobs detected",
                "yaxis": "y2",
                "line": {"color": "#1d2330"},
            },
        ],
        "numbers": _numbers([GPU_HOURS, COUNT], _week_dates(rows)),
        "layout": _layout(
            height=280,
            xaxis=WEEKS_AXIS,
            yaxis={"title": {"text": "GPU-hours"}},
            yaxis2={
                "title": {"text": "Jobs"},
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
                "tickmode": "linear",
                "tick0": 0,
                "dtick": job_step,
                "showgrid": False,
            },
            margin={"l": 50, "r": WEEKS_RIGHT_MARGIN, "t": 10, "b": 40},  # the Jobs axis's labels fit too
        ),
    }


def as_table(figure: dict, write: dict | None = None) -> tuple[list[str], list[list]]:
    """A bar figure's numbers for a table beside it: (a column name per trace, rows of [category,
    value of each trace]), in the order a reader sees the bars (a horizontal chart draws its first
    category at the bottom, so its rows are turned round). Category labels and trace names that were
    escaped for Plotly, which renders them as HTML, come back as plain text for the template to escape.
    `write` maps a unit of the figure's "numbers" (GPU_HOURS, PERCENT, COUNT) to the function that
    writes such a value as the page does; without one a value stays as the chart has it."""
    traces = [trace for trace in figure.get("data", []) if trace.get("x") is not None and trace.get("y") is not None]
    if not traces:
        return [], []
    horizontal = traces[0].get("orientation") == "h"
    category_axis, value_axis = ("y", "x") if horizontal else ("x", "y")
    numbers = figure.get("numbers", {})
    labels = numbers.get("dates") or traces[0][category_axis]
    writers = [(write or {}).get(unit, _as_is) for unit in numbers.get("units", [])]
    writers = (writers + [_as_is] * len(traces))[: len(traces)]
    rows = [
        [
            html.unescape(str(label)),
            *(writer(trace[value_axis][index]) for writer, trace in zip(writers, traces, strict=True)),
        ]
        for index, label in enumerate(labels)
    ]
    if horizontal:
        rows.reverse()
    return [html.unescape(trace.get("name", "")) for trace in traces], rows


def _as_is(value):
    return value
