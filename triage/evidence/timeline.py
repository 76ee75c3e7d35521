"""Phases of a job from its metric series: active span, idle head and tail, idle gaps, dips, bursts.

Pure numpy/pandas over the normalised frame of `fleet.series` (no Django). Times are float seconds
since the epoch. Missing data is never idleness: an interval between two samples longer than the
hole threshold (max(3 sampling periods, 300 s), the same rule as `fleet.series.summarize`) is a
hole; an idle stretch never spans a hole, and the time after the last sample is not a tail.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fleet.series import GAP_PERIODS, MIN_GAP_S

# The host and extra GPU metrics the rules read (others are listed as present but not gridded).
HOST_COLUMNS = ("cpu_util", "net_rx_bytes_per_s")
GPU_EXTRA_COLUMNS = ("pcie_rx_bytes_per_s",)


@dataclass(frozen=True)
class Span:
    """A stretch of the job's time line, [start, end) in epoch seconds, with what happened in it."""

    start: float
    end: float
    label: str = ""
    samples: int = 0
    mean_util: float | None = None

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)


@dataclass
class Timeline:
    """The job's GPU series on one time grid (rows: timestamps, columns: devices)."""

    t: np.ndarray  # sample times, epoch seconds, sorted
    dt: np.ndarray  # the time each sample stands for (a hole after it: one sampling period)
    hole_after: np.ndarray  # bool: the interval after this sample is a hole (missing data)
    util: np.ndarray  # (samples, devices) GPU util %, NaN = no sample from that device
    devices: list[tuple[str, int]]
    period: float
    mem_share: np.ndarray | None  # (samples, devices) GPU memory used / total, 0-1
    host: dict[str, np.ndarray] = field(default_factory=dict)  # per sample, averaged over hosts
    gpu_extra: dict[str, np.ndarray] = field(default_factory=dict)  # per sample, mean over devices
    metrics: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self.t.size)

    @property
    def end(self) -> float:
        return float(self.t[-1] + self.dt[-1]) if self.n else 0.0

    def mask(self, start: float, end: float) -> np.ndarray:
        return (self.t >= start) & (self.t < end)


def build_timeline(frame: pd.DataFrame | None, *, start_s: float, end_s: float) -> Timeline | None:
    """The job's samples inside [start_s, end_s] on one grid, or None when there is no GPU util sample.

    Vectorised over rows with numpy (no per-row Python): triage must cost no more than loading the series.
    """
    if frame is None or frame.empty or "gpu_util" not in frame.columns or "gpu" not in frame.columns:
        return None
    ts = _seconds(frame["timestamp"])
    in_window = (ts >= start_s) & (ts <= end_s)
    gpu_all = frame["gpu"].to_numpy(dtype="float64", na_value=np.nan)
    is_gpu = ~np.isnan(gpu_all)
    # Each metric column once, as float64 with NaN for missing values.
    wanted = ("gpu_util", "gpu_mem_used_mib", "gpu_mem_total_mib", *HOST_COLUMNS, *GPU_EXTRA_COLUMNS)
    columns = {name: frame[name].to_numpy(dtype="float64", na_value=np.nan) for name in wanted if name in frame}
    util_all = columns["gpu_util"]
    gpu_rows = in_window & is_gpu & ~np.isnan(util_all)
    if not gpu_rows.any():
        return None
    if "host" in frame.columns:
        host_codes, host_names = pd.factorize(frame["host"].fillna(""), sort=True)
    else:
        host_codes, host_names = np.zeros(len(frame), dtype=np.int64), pd.Index([""])
    device_key = host_codes[gpu_rows].astype(np.int64) * 65536 + gpu_all[gpu_rows].astype(np.int64)
    # Hash-based factorize (linear) rather than np.unique (a sort) per row: this runs once per job.
    device_codes, keys = pd.factorize(device_key, sort=True)
    time_index, times = pd.factorize(ts[gpu_rows], sort=True)
    keys, times = np.asarray(keys), np.asarray(times, dtype=np.float64)
    util = np.full((times.size, keys.size), np.nan)
    util[time_index, device_codes] = np.clip(util_all[gpu_rows], 0, 100)
    devices = [(str(host_names[k // 65536]), int(k % 65536)) for k in keys]

    mem_share = None
    if "gpu_mem_used_mib" in frame.columns and "gpu_mem_total_mib" in frame.columns:
        used = columns["gpu_mem_used_mib"][gpu_rows]
        total = columns["gpu_mem_total_mib"][gpu_rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(total > 0, used / total, np.nan)
        if np.isfinite(share).any():
            mem_share = np.full_like(util, np.nan)
            mem_share[time_index, device_codes] = share

    steps = np.diff(times)
    positive = steps[steps > 0]
    period = float(np.median(positive)) if positive.size else 60.0
    hole_threshold = max(GAP_PERIODS * period, MIN_GAP_S)
    hole_after = np.zeros(times.size, dtype=bool)
    hole_after[:-1] = steps > hole_threshold
    dt = np.empty(times.size)
    dt[:-1] = np.where(hole_after[:-1], period, steps)
    dt[-1] = max(0.0, min(period, end_s - times[-1]))
    dt = np.minimum(dt, np.maximum(0.0, end_s - times))

    gpu_extra = {}
    for name in GPU_EXTRA_COLUMNS:
        if name in frame.columns:
            values = columns[name][gpu_rows]
            gpu_extra_values = _mean_by(time_index, values, times.size)
            if gpu_extra_values is not None:
                gpu_extra[name] = gpu_extra_values

    host = {}
    host_rows = in_window & ~is_gpu
    if host_rows.any():
        # Host samples may sit on their own grid: each GPU sample takes the nearest earlier host sample
        # (averaged over hosts at equal times), unless that is further away than a hole.
        host_index, host_times = pd.factorize(ts[host_rows], sort=True)
        host_times = np.asarray(host_times, dtype=np.float64)
        position = np.clip(np.searchsorted(host_times, times, side="right") - 1, 0, host_times.size - 1)
        close = np.abs(host_times[position] - times) <= hole_threshold
        for name in HOST_COLUMNS:
            if name in frame.columns:
                values = columns[name][host_rows]
                per_time = _mean_by(host_index, values, host_times.size)
                if per_time is not None:
                    host[name] = np.where(close, per_time[position], np.nan)

    metrics = tuple(
        name
        for name in frame.columns
        if name not in ("timestamp", "host", "gpu")
        and not np.isnan(
            columns[name] if name in columns else frame[name].to_numpy(dtype="float64", na_value=np.nan)
        ).all()
    )
    return Timeline(
        t=times,
        dt=dt,
        hole_after=hole_after,
        util=util,
        devices=devices,
        period=period,
        mem_share=mem_share,
        host=host,
        gpu_extra=gpu_extra,
        metrics=metrics,
    )


def _seconds(column: pd.Series) -> np.ndarray:
    """Epoch seconds (float) of a datetime column, whatever its unit or time zone."""
    values = column.array
    if isinstance(column.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(column.dtype):
        return np.asarray(pd.DatetimeIndex(values).as_unit("ms").asi8, dtype=np.float64) / 1000.0
    return pd.DatetimeIndex(pd.to_datetime(column, utc=True)).as_unit("ms").asi8 / 1000.0


def _mean_by(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray | None:
    """Mean of `values` per group `index` (NaN ignored); None when every value is NaN."""
    valid = ~np.isnan(values)
    if not valid.any():
        return None
    sums = np.bincount(index[valid], weights=values[valid], minlength=size)
    counts = np.bincount(index[valid], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _runs_fast(mask: np.ndarray, breaks: np.ndarray) -> list[tuple[int, int]]:
    """`runs` vectorised: a run continues while consecutive samples are True and no hole lies between."""
    if not mask.any():
        return []
    m = mask.astype(np.int8)
    starts = np.flatnonzero(m & np.r_[1, (1 - m[:-1]) | breaks[:-1].astype(np.int8)])
    ends = np.flatnonzero(m & np.r_[(1 - m[1:]) | breaks[:-1].astype(np.int8), 1])
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


@dataclass
class Phases:
    """What the series says about the job's course."""

    first_active: float | None  # first sample with any GPU at or above the idle threshold
    last_active_end: float | None  # end of the last such sample
    series_start: float
    series_end: float  # end of the last sample (not the job's end: after it there is no data)
    head: Span | None  # idle stretch before the first activity
    tail: Span | None  # idle stretch after the last activity, up to the last sample
    training: Span | None  # first activity to last activity
    training_mean_util: float | None  # time-weighted, all present devices
    training_median_peak: float | None  # median over samples of the busiest device
    peak_mem_share: float | None  # 0-1
    device_mean_util: list[float]  # per device, over the training span
    idle_gaps: list[Span]  # stretches inside the training span where every GPU idled
    short_stalls: list[Span]  # one-sample stalls: a gap only when a log line explains it (a quick save)
    aligned_dips: list[float]  # times of one-sample drops of every busy GPU at once (gradient exchange)
    training_samples: int
    bursts: list[Span]  # active stretches, for sessions driven by a person
    idle_share: float  # share of covered time with every GPU below the idle threshold
    cpu_training: float | None  # median CPU util during the training span (% of allocation)
    net_rx_training: float | None
    pcie_rx_training: float | None
    holes: list[Span]


def find_phases(tl: Timeline, *, idle_util: float, gap_rel: float, gap_min_s: float, dip_rel: float) -> Phases:
    busiest = np.nanmax(tl.util, axis=1)
    present = ~np.isnan(tl.util)
    active = busiest >= idle_util
    holes = [Span(float(tl.t[i] + tl.dt[i]), float(tl.t[i + 1]), "no data") for i in np.flatnonzero(tl.hole_after)]
    covered = float(tl.dt.sum())
    idle_share = float(tl.dt[~active].sum() / covered) if covered > 0 else 0.0
    series_start, series_end = float(tl.t[0]), tl.end
    peak_mem = float(np.nanmax(tl.mem_share)) if tl.mem_share is not None and np.isfinite(tl.mem_share).any() else None

    bursts = [
        Span(float(tl.t[a]), float(tl.t[b] + tl.dt[b]), "active", b - a + 1)
        for a, b in _runs_fast(active, tl.hole_after)
    ]
    if not active.any():
        return Phases(
            None, None, series_start, series_end, None, None, None, None, None, peak_mem,
            [float(np.nanmean(tl.util[:, d])) for d in range(tl.util.shape[1])],
            [], [], [], 0, bursts, idle_share, _median(tl.host.get("cpu_util")), None, None, holes,
        )  # fmt: skip
    first, last = int(np.argmax(active)), int(active.size - 1 - np.argmax(active[::-1]))
    first_active, last_active_end = float(tl.t[first]), float(tl.t[last] + tl.dt[last])
    head = Span(series_start, first_active, "before the first GPU activity", first) if first > 0 else None
    tail = (
        Span(last_active_end, series_end, "after the last GPU activity", active.size - 1 - last)
        if last < active.size - 1
        else None
    )
    inside = np.zeros(active.size, dtype=bool)
    inside[first : last + 1] = True
    w = tl.dt[inside]
    u = tl.util[inside]
    weights = w[:, None] * present[inside]
    totals = weights.sum(axis=0)
    sums = (np.nan_to_num(u) * weights).sum(axis=0)
    device_mean = [float(x) for x in np.where(totals > 0, sums / np.maximum(totals, 1e-12), 0.0)]
    per_time_mean = np.nanmean(u, axis=1)
    training_mean = float(np.average(per_time_mean, weights=w)) if w.sum() > 0 else float(np.nanmean(u))
    median_peak = float(np.median(busiest[inside]))

    stall_util = min(idle_util, gap_rel * median_peak)
    stalled = inside & (busiest < max(stall_util, 0.5))
    idle_gaps, short_stalls = [], []
    for a, b in _runs_fast(stalled, tl.hole_after):
        span = Span(
            float(tl.t[a]), float(tl.t[b] + tl.dt[b]), "idle gap", b - a + 1, float(np.nanmean(busiest[a : b + 1]))
        )
        if b > a and span.seconds >= gap_min_s:
            idle_gaps.append(span)
        else:
            short_stalls.append(span)

    # Aligned dips: every busy device far below its usual level at the same sample, for one or two samples.
    busy_devices = [d for d, m in enumerate(device_mean) if m >= idle_util]
    aligned: list[float] = []
    if len(busy_devices) >= 2:
        sub = tl.util[:, busy_devices]
        inside_sub = sub[inside]
        medians = np.nanmedian(inside_sub, axis=0) if np.isnan(inside_sub).any() else np.median(inside_sub, axis=0)
        in_gap = np.zeros(active.size, dtype=bool)
        for gap in idle_gaps:
            in_gap |= (tl.t >= gap.start) & (tl.t < gap.end)
        low = np.all((sub < dip_rel * medians) | np.isnan(sub), axis=1) & inside & ~in_gap
        # One-sample drops of every GPU at once; evaluation passes and stalls last longer.
        aligned = [float(tl.t[a]) for a, b in _runs_fast(low, tl.hole_after) if a == b]

    training_mask = inside
    return Phases(
        first_active=first_active,
        last_active_end=last_active_end,
        series_start=series_start,
        series_end=series_end,
        head=head,
        tail=tail,
        training=Span(first_active, last_active_end, "training and evaluation", int(inside.sum()), training_mean),
        training_mean_util=training_mean,
        training_median_peak=median_peak,
        peak_mem_share=peak_mem,
        device_mean_util=device_mean,
        idle_gaps=idle_gaps,
        short_stalls=short_stalls,
        aligned_dips=aligned,
        training_samples=int(inside.sum()),
        bursts=bursts,
        idle_share=idle_share,
        cpu_training=_median(tl.host.get("cpu_util"), training_mask & active),
        net_rx_training=_median(tl.host.get("net_rx_bytes_per_s"), training_mask & active),
        pcie_rx_training=_median(tl.gpu_extra.get("pcie_rx_bytes_per_s"), training_mask & active),
        holes=holes,
    )


def _median(values: np.ndarray | None, mask: np.ndarray | None = None) -> float | None:
    if values is None:
        return None
    chosen = values[mask] if mask is not None else values
    chosen = chosen[np.isfinite(chosen)]
    return float(np.median(chosen)) if chosen.size else None


def unused_gpu_hours(tl: Timeline, start: float, end: float, gpu_count: int) -> float:
    """GPU-hours left unused in [start, end): (1 - util) over every allocated GPU, samples clipped to the span.

    A device without a sample at some time counts as absent (no data), so a missing GPU adds nothing.
    """
    seconds = np.clip(np.minimum(tl.t + tl.dt, end) - np.maximum(tl.t, start), 0.0, None)
    if not seconds.any():
        return 0.0
    idle_fraction = np.nansum(1.0 - tl.util / 100.0, axis=1)
    present = np.sum(~np.isnan(tl.util), axis=1)
    # GPUs the series does not list at all (a job with 8 GPUs whose series shows 1) are not guessed at.
    scale = np.where(present > 0, np.minimum(1.0, gpu_count / np.maximum(present, 1)), 0.0)
    return float((seconds * idle_fraction * np.where(scale < 1, scale, 1.0)).sum() / 3600.0)
