"""A job's timeline as a Plotly figure: per-device series, downsampled for display, holes drawn as gaps.

Pure pandas/numpy (no Django): the view loads the series and the log events and hands them here.
Downsampling uses MinMaxLTTB (tsdownsample), which keeps every spike and dip of a long series
while sending a few thousand points instead of hundreds of thousands.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from tsdownsample import MinMaxLTTBDownsampler

from fleet.canonical import METRICS
from fleet.logevents import LOG_EVENT_WORDS
from fleet.series import MIN_GAP_S, column_without_values, device_name, gap_threshold_s

POINTS_PER_TRACE = 1000
# Above this many devices a panel draws their mean and their lowest-to-highest band instead of a line
# each (as ClusterCockpit draws large jobs): thousands of lines are a blur, and megabytes to send.
MAX_DEVICE_LINES = 32
# Above this many GPUs on more than one host, a host is one colour and one legend entry (its GPUs and
# its CPU line toggle together): a legend entry a GPU made a column taller than the chart, and a node
# that lags stands out as one colour.
MAX_DEVICE_ENTRIES = 8
# The metric columns the timeline always draws; the view reads only these and the extra ones asked for.
COLUMNS = ("gpu_util", "gpu_mem_used_mib", "gpu_mem_total_mib", "cpu_util")
# The series' other metrics (fleet.canonical.METRICS), drawn as a panel each when asked for (the metrics
# behind the job's findings, or chosen under "More metrics"), in this order: each one's name on its axis.
EXTRA_METRICS: dict[str, str] = {
    "sm_active": "SM active",
    "tensor_active": "Tensor active",
    "dram_active": "DRAM active",
    "pcie_rx_bytes_per_s": "PCIe rx",
    "pcie_tx_bytes_per_s": "PCIe tx",
    "host_mem_used_mib": "Host memory",
    "net_rx_bytes_per_s": "Network rx",
    "net_tx_bytes_per_s": "Network tx",
    "disk_read_bytes_per_s": "Disk read",
    "disk_write_bytes_per_s": "Disk write",
}
# Decimal units for a rate, by the highest value in the window: "PCIe rx (GB/s)" rather than 3e+09.
_RATE_UNITS = ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s"))
PALETTE = ["#2f5fd0", "#e0a03c", "#1e8449", "#c0392b", "#8e44ad", "#16a085", "#d35400", "#7f8c8d"]
EVENT_COLOURS = {
    "install": "#27ae60",
    "download": "#2980b9",
    "checkpoint_save": "#d35400",
    "upload": "#8e44ad",
    "training_finished": "#1d2330",
    "oom": "#c0392b",
    "nccl_error": "#c0392b",
    "dataloader_warning": "#e67e22",
}


def event_colour(kind: str) -> str:
    """A log event kind's colour, on the timeline's markers and the file page's tags alike."""
    return EVENT_COLOURS.get(kind, "#7f8c8d")


@dataclass(frozen=True)
class Marker:
    """Something to mark on the time axis: a log event."""

    at: datetime
    kind: str
    label: str
    url: str = ""  # where a click on it leads (the event's line in its log); "" for nowhere


def _downsample(t_ms: np.ndarray, values: np.ndarray, points: int, gap_ms: float) -> tuple[list, list]:
    """Downsample one device's series and break the line at each hole of the original series."""
    keep = np.isfinite(values)  # an infinity would make the figure's JSON invalid (no chart at all)
    t_ms, values = t_ms[keep], values[keep]
    # Holes are found on the full series: after downsampling, kept points are far apart anyway.
    hole_starts = t_ms[:-1][np.diff(t_ms) > gap_ms] if len(t_ms) > 1 else t_ms[:0]
    if len(t_ms) > points:
        index = MinMaxLTTBDownsampler().downsample(t_ms, values, n_out=points)
        t_ms, values = t_ms[index], values[index]
    xs: list = t_ms.tolist()
    ys: list = np.round(values.astype(float), 2).tolist()
    if len(xs) < 2 or not len(hole_starts):
        return xs, ys
    # A pair of neighbouring kept points that has a hole start between them gets a null in between.
    holes_before = np.searchsorted(hole_starts, t_ms, side="left")
    _break_after(np.nonzero(np.diff(holes_before) > 0)[0], t_ms, xs, ys)
    return xs, ys


def _break_after(positions: np.ndarray, t_ms: np.ndarray, xs: list, *columns: list) -> None:
    """Put a point with no value just after each of these positions, so the lines break there."""
    for offset, position in enumerate(positions):
        at = position + 1 + offset
        xs.insert(at, int(t_ms[position] + 1))
        for column in columns:
            column.insert(at, None)


def _device_statistics(
    t_ms: np.ndarray, values: np.ndarray, start_ms: float, end_ms: float, points: int, gap_ms: float
) -> tuple[list, list, list, list]:
    """All devices' samples in `points` time buckets: (x, lowest, mean, highest), with a null where the
    series has a hole (no bucket for longer than the hole threshold)."""
    keep = np.isfinite(values)
    t_ms, values = t_ms[keep], values[keep]
    if not len(t_ms):
        return [], [], [], []
    width = max(1.0, (end_ms - start_ms) / points)
    bucket = np.clip((t_ms - start_ms) // width, 0, points - 1).astype(np.int64)
    order = np.argsort(bucket, kind="stable")
    bucket, values = bucket[order], values[order]
    starts = np.r_[0, np.flatnonzero(np.diff(bucket)) + 1]
    counts = np.diff(np.r_[starts, len(values)])
    lowest = np.minimum.reduceat(values, starts)
    highest = np.maximum.reduceat(values, starts)
    mean = np.add.reduceat(values.astype(np.float64), starts) / counts
    x = (start_ms + (bucket[starts] + 0.5) * width).astype(np.int64)
    xs = x.tolist()
    columns = [np.round(c.astype(float), 2).tolist() for c in (lowest, mean, highest)]
    _break_after(np.flatnonzero(np.diff(x) > max(gap_ms, 2 * width)), x, xs, *columns)
    return xs, *columns


def _statistics_traces(
    count: int, kind: str, axis: str, first_panel: bool, stats, value_format: str = "%{y:.0f}"
) -> list[dict]:
    """The band from the lowest to the highest device and the mean line, for a panel of many devices."""
    xs, lowest, mean, highest = stats
    what = f"{count:,} {kind}"
    common = {"type": "scatter", "mode": "lines", "x": xs, "xaxis": "x", "yaxis": axis, "connectgaps": False}
    return [
        {
            **common,
            "y": lowest,
            "name": f"lowest of {what}",
            "legendgroup": f"{kind}-range",
            "showlegend": False,
            "line": {"width": 0.6, "color": "#7f8c8d"},
            "hovertemplate": f"lowest: {value_format}<extra></extra>",
        },
        {
            **common,
            "y": highest,
            "name": f"lowest to highest of {what}",
            "legendgroup": f"{kind}-range",
            "showlegend": first_panel,
            "fill": "tonexty",
            "fillcolor": "rgba(47,95,208,0.18)",
            "line": {"width": 0.6, "color": "#7f8c8d"},
            "hovertemplate": f"highest: {value_format}<extra></extra>",
        },
        {
            **common,
            "y": mean,
            "name": f"mean of {what}",
            "legendgroup": f"{kind}-mean",
            "showlegend": first_panel,
            "line": {"width": 1.6, "color": PALETTE[0]},
            "hovertemplate": f"mean: {value_format}<extra></extra>",
        },
    ]


def _epoch_ms(timestamps: pd.Series) -> np.ndarray:
    """Milliseconds since the epoch, whatever the resolution of the stored timestamps."""
    return timestamps.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ms]").astype(np.int64)


def _gap_ms(device_times: list[np.ndarray]) -> float:
    """The hole threshold of fleet.series: max(3 x sampling period, 5 min), from the devices' own steps."""
    steps = np.concatenate([np.diff(t) for t in device_times]) if device_times else np.array([])
    steps = steps[steps > 0]
    period_ms = float(np.median(steps)) if len(steps) else MIN_GAP_S * 1000
    return gap_threshold_s(period_ms / 1000) * 1000


def wall_clock_ms(t_ms: np.ndarray, zone: str) -> np.ndarray:
    """Instants (ms since the epoch) as the reader's clock in `zone` shows them, written as ms since the epoch
    as if that clock were UTC: Plotly's date axis has no zones and draws a number as UTC's wall clock.

    The one conversion of the timeline's times: its lines, shaded windows, log events and range.
    """
    t_ms = np.asarray(t_ms, dtype=np.int64)
    if zone == "UTC" or not len(t_ms):
        return t_ms
    local = pd.DatetimeIndex(t_ms.astype("datetime64[ms]")).tz_localize("UTC").tz_convert(zone).tz_localize(None)
    return local.as_unit("ms").asi8


def _wall_iso(at: datetime, zone: str) -> str:
    """A time for the figure's layout (range, shaded windows) or markers: ISO 8601, on the reader's clock."""
    if zone == "UTC":
        return at.isoformat()
    ms = wall_clock_ms(np.array([int(pd.Timestamp(at).value // 1_000_000)]), zone)[0]
    return pd.Timestamp(int(ms), unit="ms").isoformat()


def _legend_entry(legend: dict, window: dict, zone: str) -> dict:
    """A cause's legend entry for its shaded windows: a shape in the cause's own colour, at full opacity,
    that covers nothing (no width, no height, no outline, at its first window's start), so the legend's
    swatch is as clear as a trace's while the bands over the data keep their light tint. It leads the
    cause's legend group, and a click on it hides or shows the bands with it."""
    at = _wall_iso(window["start"], zone)
    return {
        **legend,
        "showlegend": True,
        "type": "rect",
        "xref": "x",
        "yref": "y domain",
        "x0": at,
        "x1": at,
        "y0": 0,
        "y1": 0,
        "fillcolor": window.get("colour", "#c0392b"),
        "opacity": 1,
        "line": {"width": 0},
        "layer": "below",
    }


def _on_wall_clock(xs: list, columns: list[list], zone: str) -> list:
    """A trace's x values on the reader's clock, its line broken where the clocks change (a null point):
    where they go back, the repeated hour starts a line of its own rather than one drawn back across it
    (that hour is drawn twice over the same stretch of axis, once for each offset); where they go
    forward, no line crosses the hour that does not exist and no point is put in it."""
    if zone == "UTC" or not xs:
        return xs
    t_ms = np.asarray(xs, dtype=np.int64)
    wall = wall_clock_ms(t_ms, zone)
    out: list = wall.tolist()
    changes = np.flatnonzero(np.diff(wall - t_ms) != 0)
    for offset, position in enumerate(changes):
        at = position + 1 + offset
        out.insert(at, out[at - 1])
        for column in columns:
            column.insert(at, None)
    return out


# The band over an hour the clocks repeat or skip: light, beneath the lines and the causes' shading.
CLOCK_CHANGE_COLOUR = "#7f8c8d"


@dataclass(frozen=True)
class ClockChange:
    """Where the reader's clocks change: the stretch of the wall-clock axis drawn twice (they go back) or
    never (they go forward), from `first` to `last` on that clock, and the zone's names before and after."""

    first: pd.Timestamp
    last: pd.Timestamp
    back: bool
    before: str
    after: str

    @property
    def label(self) -> str:
        span = f"{self.first:%H:%M}–{self.last:%H:%M}"
        went = "twice: clocks went back" if self.back else "skipped: clocks went forward"
        return f"{span} {went} ({self.before}, then {self.after})"


def clock_changes(start: datetime, end: datetime, zone: str) -> list[ClockChange]:
    """The changes of `zone`'s clock whose repeated or skipped stretch of wall clock meets [start, end] as
    that clock shows it: none for UTC, nor for a window away from a change."""
    if zone == "UTC":
        return []
    # The offset, hour by hour from a day before to a day after, then each change found to the second.
    first_s, last_s = int(pd.Timestamp(start).timestamp()) - 86400, int(pd.Timestamp(end).timestamp()) + 86400
    hours = np.arange(first_s - first_s % 3600, last_s + 3600, 3600, dtype=np.int64)
    offsets = (wall_clock_ms(hours * 1000, zone) - hours * 1000) // 1000
    shown = wall_clock_ms(np.array([pd.Timestamp(start).value, pd.Timestamp(end).value]) // 1_000_000, zone)
    changes = []
    for position in np.flatnonzero(np.diff(offsets) != 0):
        low, high = int(hours[position]), int(hours[position + 1])
        while high - low > 1:  # the first second on the new offset
            middle = (low + high) // 2
            offset = int((wall_clock_ms(np.array([middle * 1000]), zone)[0] // 1000) - middle)
            low, high = (middle, high) if offset == offsets[position] else (low, middle)
        old, new = int(offsets[position]), int(offsets[position + 1])
        first_ms, last_ms = (high + min(old, new)) * 1000, (high + max(old, new)) * 1000
        if last_ms <= shown[0] or first_ms >= shown[1]:
            continue
        names = [pd.Timestamp(s, unit="s", tz="UTC").tz_convert(zone).tzname() for s in (high - 1, high)]
        first, last = pd.Timestamp(first_ms, unit="ms"), pd.Timestamp(last_ms, unit="ms")
        changes.append(ClockChange(first=first, last=last, back=new < old, before=names[0], after=names[1]))
    return changes


def _mark_clock_changes(layout: dict, panel_axes: list[str], start: datetime, end: datetime, zone: str) -> None:
    """A light band over each hour the clocks repeat (the line is drawn twice over it) or skip (no line),
    on every panel, and a label saying which: "02:00–03:00 twice: clocks went back". The label stands in
    the gap under the top panel, where it covers no line; a chart of one panel has it inside, at the top."""
    under = len(panel_axes) > 1
    shown_from, shown_to = (pd.Timestamp(_wall_iso(at, zone)).tz_localize(None) for at in (start, end))
    for change in clock_changes(start, end, zone):
        # From the band's start rightwards, or from its end leftwards in the chart's right half: centred on
        # the band, the label of a band near an edge ran off the chart ("00–03:00 twice: ..." on a phone).
        leftwards = change.first + (change.last - change.first) / 2 > shown_from + (shown_to - shown_from) / 2
        at = min(change.last, shown_to) if leftwards else max(change.first, shown_from)
        for axis in panel_axes:
            layout["shapes"].append(
                {
                    "name": f"Clock change: {change.label}",
                    "type": "rect",
                    "xref": "x",
                    "yref": f"{axis} domain",
                    "x0": change.first.isoformat(),
                    "x1": change.last.isoformat(),
                    "y0": 0,
                    "y1": 1,
                    "fillcolor": CLOCK_CHANGE_COLOUR,
                    "opacity": 0.14 if change.back else 0.08,
                    "line": {"width": 0},
                    "layer": "below",
                }
            )
        layout["annotations"].append(
            {
                "text": change.label,
                "xref": "x",
                "yref": f"{panel_axes[0]} domain",
                "x": at.isoformat(),
                "xanchor": "right" if leftwards else "left",
                "y": 0 if under else 1,
                "yanchor": "top",
                "showarrow": False,
                "font": {"size": 11, "color": "#1d2330"},
                "bgcolor": "rgba(0,0,0,0)" if under else "rgba(255,255,255,0.85)",
            }
        )


def _has_values(rows: pd.DataFrame, metric: str) -> bool:
    return metric in rows and bool(np.isfinite(rows[metric].to_numpy(np.float64, na_value=np.nan)).any())


def metrics_stored(parquet: bytes) -> list[str]:
    """The extra metrics (EXTRA_METRICS, in its order) of which a stored series (its Parquet blob) has at least
    one value: a metric its source never sent, or sent empty, is not offered. Read from the file's footer
    (each column's count of missing values), so a timeline reads the columns it draws and no others: all
    of them made a 30-day series' every fetch read three times the data."""
    stored = pq.ParquetFile(pa.BufferReader(parquet))
    if not stored.metadata.num_rows:
        return []
    names = set(stored.schema_arrow.names)
    return [metric for metric in EXTRA_METRICS if metric in names and not column_without_values(stored, metric)]


def _extra_panel(metric: str, gpu_rows: pd.DataFrame, host_rows: pd.DataFrame) -> tuple[str, str, str] | None:
    """(column to draw, axis title, which rows) for an extra metric: a GPU's metric on the GPU rows, a host's
    on the host rows (wherever the series has its values); a ratio as a percentage, a rate in the unit its
    highest value reads best in, MiB as GiB from 1 GiB up. None if the window has no value of it."""
    where = next((w for w, r in (("gpu", gpu_rows), ("host", host_rows)) if _has_values(r, metric)), None)
    if where is None:
        return None
    rows = gpu_rows if where == "gpu" else host_rows
    label, unit = EXTRA_METRICS[metric], METRICS[metric]
    highest = float(np.nanmax(rows[metric].to_numpy(np.float64, na_value=np.nan)))
    if unit == "ratio":
        return f"{metric}:100", f"{label} (%)", where
    if unit == "MiB":
        return (
            (f"{metric}:{1 / 1024}", f"{label} (GiB)", where) if highest >= 1024 else (metric, f"{label} (MiB)", where)
        )
    scale, name = next(((s, n) for s, n in _RATE_UNITS if highest >= s), _RATE_UNITS[-1])
    return f"{metric}:{1 / scale}", f"{label} ({name})", where


def _device_label(host: str, gpu) -> str:
    return f"{host} {device_name(gpu)}" if pd.notna(gpu) else host


def build_timeline(
    frame: pd.DataFrame,
    *,
    start: datetime,
    end: datetime,
    markers: list[Marker] = (),
    windows: list[dict] = (),
    points_per_trace: int = POINTS_PER_TRACE,
    zone: str = "UTC",
    extra: list[str] = (),
) -> dict:
    """The figure for [start, end]: GPU utilization, GPU memory, and host CPU when present; then a panel for
    each of the `extra` metrics (EXTRA_METRICS names) the window has values of, in EXTRA_METRICS' order.

    `windows` are shaded spans: {"start": datetime, "end": datetime, "label": str, "colour": str}, and
    "idle": False for a stretch a cause slowed rather than idled (named so in the legend).
    `zone` is the reader's time zone (an IANA name): the time axis, its hover labels, the shaded windows
    and the log events are on its clock (wall_clock_ms), and the axis names it.
    """
    frame = frame[(frame["timestamp"] >= pd.Timestamp(start)) & (frame["timestamp"] <= pd.Timestamp(end))]
    frame = frame.assign(t_ms=_epoch_ms(frame["timestamp"]))
    gpu_rows = frame[frame["gpu"].notna()] if "gpu" in frame else frame.iloc[0:0]
    host_rows = frame[frame["gpu"].isna()] if "gpu" in frame else frame.iloc[0:0]
    has_memory = {"gpu_mem_used_mib", "gpu_mem_total_mib"} <= set(gpu_rows.columns)
    if has_memory:
        # In float64 (100 x a float32 near its largest overflows), and none where the total is 0.
        used, total = (gpu_rows[name].astype("float64") for name in ("gpu_mem_used_mib", "gpu_mem_total_mib"))
        gpu_rows = gpu_rows.assign(gpu_mem_pct=(100 * used / total).where(total > 0))
    extra_panels = [p for p in (_extra_panel(m, gpu_rows, host_rows) for m in EXTRA_METRICS if m in extra) if p]
    # Their scaled columns ("pcie_rx_bytes_per_s:1e-09": GB/s) added to the rows the panels draw.
    for where in ("gpu", "host"):
        scaled = {column: column.partition(":") for column, _, w in extra_panels if w == where and ":" in column}
        if not scaled:
            continue
        rows = gpu_rows if where == "gpu" else host_rows
        columns = {
            column: rows[metric].astype("float64") * float(factor) for column, (metric, _, factor) in scaled.items()
        }
        if where == "gpu":
            gpu_rows = gpu_rows.assign(**columns)
        else:
            host_rows = host_rows.assign(**columns)
    panels = [("gpu_util", "GPU util (%)", gpu_rows)]
    if has_memory:
        panels.append(("gpu_mem_pct", "GPU memory (%)", gpu_rows))
    if "cpu_util" in host_rows and host_rows["cpu_util"].notna().any():
        panels.append(("cpu_util", "CPU (%)", host_rows))
    panels += [(column, title, gpu_rows if where == "gpu" else host_rows) for column, title, where in extra_panels]

    data: list[dict] = []
    height = 1 / len(panels)
    layout: dict = {
        # b: room for the time labels and the axis title under them, fixed rather than Plotly's automargin,
        # which lays a chart narrowed to a phone out differently from one drawn there (static/js/timeline.js).
        "margin": {"l": 60, "r": 40, "t": 10, "b": 62},
        "height": 200 + 170 * len(panels),
        "showlegend": True,
        # Above the plot, anchored by its foot: Plotly widens the top margin to fit it, however many rows
        # its entries wrap to (pinned at y=1.06 by its top, a phone's second row covered the chart).
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"},
        # Plotly's toolbar (shown while the pointer is on the chart) stands down the right edge:
        # across the top it sat on the legend's last entries in a window 800 px wide.
        "modebar": {"orientation": "v"},
        "hovermode": "x",
        "font": {"family": "system-ui, sans-serif", "size": 12},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        # Plotly draws times as they are given, here on the reader's clock (the page's other times' zone),
        # which the axis names. The zoom's fields read and take the same; static/js/timeline.js turns the
        # axis's range back into UTC for the timeline's address.
        "xaxis": {
            "type": "date",
            "range": [_wall_iso(start, zone), _wall_iso(end, zone)],
            "anchor": f"y{len(panels)}",
            "title": {"text": f"Time ({zone})", "standoff": 6},
            # The hover label on the axis writes a time as the page and the From / to fields do, 24-hour
            # ("2026-11-02 18:40:00", not Plotly's "Nov 2, 2026, 18:40").
            "hoverformat": "%Y-%m-%d %H:%M:%S",
            # Its tick labels too: Plotly's own read "10:30 / Nov 2, 2026". By the ticks' spacing (ms):
            # seconds apart, minutes or hours apart, days or more. What follows a "\n" Plotly writes under
            # a tick's time only where the date changes (the first tick, midnight), as its own labels do.
            "tickformatstops": [
                {"dtickrange": [None, 60_000], "value": "%H:%M:%S\n%Y-%m-%d"},
                {"dtickrange": [60_000, 86_400_000], "value": "%H:%M\n%Y-%m-%d"},
                {"dtickrange": [86_400_000, None], "value": "%Y-%m-%d"},
            ],
        },
        "shapes": [],
        "annotations": [],
    }
    devices = sorted(
        map(tuple, gpu_rows[["host", "gpu"]].drop_duplicates().itertuples(index=False)) if len(gpu_rows) else [],
        key=lambda d: (str(d[0]), d[1]),
    )
    hosts = sorted({str(host) for host, _ in devices})
    by_host = len(devices) > MAX_DEVICE_ENTRIES and len(hosts) > 1
    if by_host:
        gpus_on = {host: sum(1 for h, _ in devices if str(h) == host) for host in hosts}
        host_colour = {host: PALETTE[i % len(PALETTE)] for i, host in enumerate(hosts)}
        colour_of = {device: host_colour[str(device[0])] for device in devices}
    else:
        colour_of = {device: PALETTE[i % len(PALETTE)] for i, device in enumerate(devices)}
    in_legend: set[str] = set()
    bands_named: set[str] = set()
    # Row positions of each device, found once and shared by every panel of the same rows.
    device_index, times_all = {}, {}
    for rows in {id(r): r for _, _, r in panels}.values():
        groups = rows.groupby(["host", "gpu"], dropna=False, sort=True).indices if len(rows) else {}
        device_index[id(rows)] = sorted(groups.items(), key=lambda item: (str(item[0][0]), str(item[0][1])))
        times_all[id(rows)] = rows["t_ms"].to_numpy(np.int64)
    gap_ms = _gap_ms([times_all[id(gpu_rows)][p] for _, p in device_index[id(gpu_rows)]][:4])
    entries = len(hosts) if by_host else len(devices)
    if entries > 6 and len(devices) <= MAX_DEVICE_LINES:  # a legend column on the right, not rows over the chart
        layout["legend"] = {"orientation": "v", "x": 1.01, "y": 1, "font": {"size": 10}}
        layout["margin"]["r"] = 150
        # There the toolbar goes back across the top, in room of its own above the chart.
        layout["modebar"] = {"orientation": "h"}
        layout["margin"]["t"] = 36
    for index, (metric, title, rows) in enumerate(panels):
        axis = "y" if index == 0 else f"y{index + 1}"
        top = 1 - index * height
        values_all = rows[metric].to_numpy(np.float64, na_value=np.nan)
        percent = title.endswith("(%)")
        # A percentage to the whole number; 0.35 GB/s is not "0".
        value_format = "%{y:.0f}" if percent else "%{y:.3~g}"
        highest = float(np.nanmax(values_all)) if np.isfinite(values_all).any() else 0.0
        layout["yaxis" if index == 0 else f"yaxis{index + 1}"] = {
            "title": {"text": title},
            "domain": [max(0.0, top - height + 0.06), top],
            # From 0 to 100 % like the GPU panels (a job's CPU at 7 % drew a line across the middle of an
            # axis from 6 to 8), higher when a container bursts past its allocation. A rate or an amount
            # from 0 to a little over its highest.
            "range": [0, 105]
            if percent and metric != "cpu_util"
            else [0, max(105.0 if percent else 1.0, round(highest * 1.05, 2))],
            "fixedrange": True,
        }
        if len(device_index[id(rows)]) > MAX_DEVICE_LINES:
            kind = "GPUs" if rows is gpu_rows else "hosts"
            start_ms, end_ms = start.timestamp() * 1000, end.timestamp() * 1000
            times = times_all[id(rows)]
            xs, *columns = _device_statistics(times, values_all, start_ms, end_ms, points_per_trace, gap_ms)
            stats = (_on_wall_clock(xs, columns, zone), *columns)
            count = len(device_index[id(rows)])
            first_of_its_kind = kind not in bands_named  # the GPU panels share one legend entry, the hosts' one
            bands_named.add(kind)
            data.extend(_statistics_traces(count, kind, axis, first_of_its_kind, stats, value_format))
            continue
        for (host, gpu), positions in device_index[id(rows)]:
            values = values_all[positions]
            if np.isnan(values).all():
                continue
            xs, ys = _downsample(times_all[id(rows)][positions], values, points_per_trace, gap_ms)
            xs = _on_wall_clock(xs, [ys], zone)
            label = _device_label(host, gpu)
            if by_host:
                count = gpus_on.get(str(host), 0)
                name = f"{host} ({count} GPU{'s' if count != 1 else ''})" if count else str(host)
                group, colour = name, host_colour.get(str(host), "#1d2330")
                shown = name not in in_legend
                in_legend.add(name)
            else:
                name = group = label
                colour, shown = colour_of.get((host, gpu), "#1d2330"), index == 0
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": xs,
                    "y": ys,
                    "yaxis": axis,
                    "xaxis": "x",
                    "name": html.escape(name),
                    "legendgroup": html.escape(group),
                    "showlegend": shown,
                    "line": {"width": 1.2, "color": colour},
                    "connectgaps": False,
                    "hovertemplate": f"{html.escape(label)}: {value_format}<extra></extra>",
                }
            )
    # A window is shaded on each panel, from its foot to its top (the panel's y-axis domain): shaded over
    # the whole chart area (paper 0 to 1), it covered the time axis's labels and the gaps between panels.
    # Each cause's shading has a legend entry ("Model checkpointing: idle windows", in its colour): without
    # one, a reader could not tell what the bands were, nor which cause a colour was. A click on it hides
    # or shows that cause's bands on every panel (one legend group). Plotly draws a shape's entry at the
    # shape's opacity: the bands' light tint made a swatch barely there (1.2:1 on the dark card), so the
    # entry is a shape of its own in the cause's full colour that covers nothing (`_legend_entry`).
    panel_axes = ["y" if index == 0 else f"y{index + 1}" for index in range(len(panels))]
    named: set[str] = set()
    for window in windows:
        label = window.get("label", "")
        legend = {}
        if label:
            # A cause that slows every step (not placed in idle windows: `idle` False) shades the stretch it
            # slowed, the training phase the GPUs worked through: not called idle.
            name = f"{label}: idle windows" if window.get("idle", True) else f"{label}: the stretch it slowed"
            legend = {"name": html.escape(name), "legendgroup": html.escape(f"cause {label}")}
            if label not in named:
                layout["shapes"].append(_legend_entry(legend, window, zone))
            named.add(label)
            legend["showlegend"] = False
        for axis in panel_axes:
            layout["shapes"].append(
                {
                    **legend,
                    "type": "rect",
                    "xref": "x",
                    "yref": f"{axis} domain",
                    "x0": _wall_iso(window["start"], zone),
                    "x1": _wall_iso(window["end"], zone),
                    "y0": 0,
                    "y1": 1,
                    "fillcolor": window.get("colour", "#c0392b"),
                    "opacity": 0.12,
                    "line": {"width": 0},
                    "layer": "below",
                }
            )
    _mark_clock_changes(layout, panel_axes, start, end, zone)
    if markers:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "Log events",
                "xaxis": "x",
                "yaxis": "y",
                "x": [_wall_iso(m.at, zone) for m in markers],
                "y": [103] * len(markers),
                "marker": {
                    "symbol": "triangle-down",
                    "size": 9,
                    "color": [event_colour(m.kind) for m in markers],
                },
                # Log text is untrusted: escaped here, and Plotly renders hover text as text.
                "text": [html.escape(f"{LOG_EVENT_WORDS.get(m.kind, m.kind)}: {m.label}")[:200] for m in markers],
                "customdata": [m.url for m in markers],
                "hovertemplate": "%{text}<extra>click: the line in its log</extra>"
                if any(m.url for m in markers)
                else "%{text}<extra></extra>",
            }
        )
    return {"data": data, "layout": layout}
