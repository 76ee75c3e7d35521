"""Phases of a job from its metric series: active span, idle head and tail, idle gaps, dips, bursts.

Pure numpy/pandas over the normalised frame of `fleet.series` (no Django). Times are float seconds
since the epoch. Missing data is never idleness: an interval between two samples longer than the
hole threshold (max(3 sampling periods, 300 s), the same rule as `fleet.series.summarize`) is a
hole; an idle stretch never spans a hole, and the time after the last sample is not a tail.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fleet.series import KEY_COLUMNS, from_parquet_bytes, gap_threshold_s

# The host and extra GPU metrics the rules read (others are listed as present but not gridded).
HOST_COLUMNS = ("cpu_util", "net_rx_bytes_per_s")
GPU_EXTRA_COLUMNS = ("pcie_rx_bytes_per_s",)
_VALUE_COLUMNS = ("gpu_util", "gpu_mem_used_mib", "gpu_mem_total_mib", *HOST_COLUMNS, *GPU_EXTRA_COLUMNS)
TRIAGE_COLUMNS = (*KEY_COLUMNS, *_VALUE_COLUMNS)  # what `read_series` reads of a stored blob


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
    """The job's GPU series on one time grid (rows: timestamps, columns: devices).

    The grids are stored column by column (Fortran order: each device's samples side by side in
    memory, as the normalised series holds them): what triage asks of them is mostly across the few
    devices at each time (the busiest, the mean), which numpy then does as a handful of whole-column
    operations instead of one tiny reduction per sample: the phases and rules of a job of the
    triage benchmark (8 GPUs) took about a quarter less time (docs/triage.md, "Speed").
    """

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


@dataclass(frozen=True)
class StoredSeries:
    """A stored series blob as triage reads it: only the columns it uses, straight from Arrow (no pandas)."""

    table: pa.Table
    metrics: tuple[str, ...]  # metric columns of the whole blob with at least one value, in column order


def read_series(data: bytes) -> StoredSeries | pd.DataFrame:
    """The stored zstd Parquet blob (`fleet.series.to_parquet_bytes`) for `build_timeline`.

    Reads only the columns triage uses; which other metrics hold values comes from the Parquet column
    statistics (a column is read after all when they cannot tell). A blob in any other shape than the
    normalised one is read whole into a frame, as `fleet.series.from_parquet_bytes` does.
    """
    try:
        source = pq.ParquetFile(pa.BufferReader(data), read_dictionary=["host"], pre_buffer=True)
    except KeyError:  # no host column
        source = pq.ParquetFile(pa.BufferReader(data), pre_buffer=True)
    schema = source.schema_arrow
    if not _plain_schema(schema):
        return from_parquet_bytes(data)
    metadata = source.metadata
    row_groups = [metadata.row_group(index) for index in range(metadata.num_row_groups)]
    metrics: dict[str, bool | None] = {}
    for index, name in enumerate(schema.names):
        if name not in KEY_COLUMNS:
            metrics[name] = _has_values(row_groups, index, name)
    unknown = [name for name, present in metrics.items() if present is None]
    read = [name for name in schema.names if name in TRIAGE_COLUMNS or name in unknown]
    table = source.read(columns=read, use_pandas_metadata=False)
    if table.column("timestamp").null_count:
        return from_parquet_bytes(data)
    if "host" in read and table.column("host").num_chunks > 1:
        table = table.unify_dictionaries()
    for name in unknown:
        metrics[name] = not np.isnan(_float64(table.column(name))).all()
    return StoredSeries(table=table, metrics=tuple(name for name, present in metrics.items() if present))


def _plain_schema(schema: pa.Schema) -> bool:
    """Flat, no index columns, ms timestamps, string hosts, integer GPUs and numeric metrics."""
    names = schema.names
    if len(set(names)) != len(names) or "timestamp" not in names:
        return False
    if any(not isinstance(c, dict) for c in (schema.pandas_metadata or {}).get("index_columns", [])):
        return False
    for field_ in schema:
        kind = field_.type
        if field_.name == "timestamp":
            ok = pa.types.is_timestamp(kind) and kind.unit == "ms"
        elif field_.name == "host":
            if pa.types.is_dictionary(kind):  # as `read_series` asks for it
                kind = kind.value_type
            ok = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        elif field_.name == "gpu":
            ok = pa.types.is_integer(kind)
        else:
            ok = pa.types.is_floating(kind) or pa.types.is_integer(kind)
        if not ok:
            return False
    return True


def _has_values(row_groups: list[pq.RowGroupMetaData], index: int, name: str) -> bool | None:
    """Whether column `index` holds a value that is neither null nor NaN, from its statistics (None: unknown)."""
    answer: bool | None = False
    for row_group in row_groups:
        column = row_group.column(index)
        stats = column.statistics
        if column.path_in_schema != name or stats is None:
            return None
        if stats.has_min_max and stats.min == stats.min and stats.max == stats.max:
            return True  # min and max are over the non-null, non-NaN values
        if not (stats.has_null_count and stats.null_count == row_group.num_rows):
            answer = None  # NaN values, or statistics without min/max: read the column to tell
    return answer


def _float64(column: pa.ChunkedArray) -> np.ndarray:
    """As float64 with NaN for nulls (what `Series.to_numpy(dtype="float64", na_value=np.nan)` gives)."""
    return np.asarray(column.to_numpy(), dtype=np.float64)  # nulls come out as NaN


@dataclass
class _Columns:
    """The arrays `build_timeline` reads, from a frame or from Arrow."""

    ts: np.ndarray  # epoch seconds, float64
    gpu: np.ndarray  # GPU index as float64, NaN on host rows
    values: dict[str, np.ndarray]  # metric columns triage reads, float64 with NaN for missing values
    host: Callable[[], tuple[np.ndarray, list[str]]]  # (code of every row, sorted host names)
    metrics: Callable[[], tuple[str, ...]]


def _frame_columns(frame: pd.DataFrame) -> _Columns | None:
    if frame is None or frame.empty or "gpu_util" not in frame.columns or "gpu" not in frame.columns:
        return None
    # Each metric column once, as float64 with NaN for missing values.
    values = {name: frame[name].to_numpy(dtype="float64", na_value=np.nan) for name in _VALUE_COLUMNS if name in frame}

    def host() -> tuple[np.ndarray, list[str]]:
        if "host" not in frame.columns:
            return np.zeros(len(frame), dtype=np.int64), [""]
        codes, names = pd.factorize(frame["host"].fillna(""), sort=True)
        return codes, [str(name) for name in names]

    def metrics() -> tuple[str, ...]:
        return tuple(
            name
            for name in frame.columns
            if name not in KEY_COLUMNS
            and not np.isnan(
                values[name] if name in values else frame[name].to_numpy(dtype="float64", na_value=np.nan)
            ).all()
        )

    return _Columns(
        ts=_seconds(frame["timestamp"]),
        gpu=frame["gpu"].to_numpy(dtype="float64", na_value=np.nan),
        values=values,
        host=host,
        metrics=metrics,
    )


def _arrow_columns(series: StoredSeries) -> _Columns | None:
    table = series.table
    names = table.column_names
    if table.num_rows == 0 or "gpu_util" not in names or "gpu" not in names:
        return None

    def host() -> tuple[np.ndarray, list[str]]:
        if "host" not in names:
            return np.zeros(table.num_rows, dtype=np.int64), [""]
        column = table.column("host")
        if pa.types.is_dictionary(column.type) and not column.null_count:
            # Read dictionary-encoded (`read_series`): the codes are there already.
            found = column.chunk(0).dictionary.to_pylist()
            indices = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False) for chunk in column.chunks])
        else:
            found = None
        if found is None or len(set(found)) != len(found):
            if pa.types.is_dictionary(column.type):
                column = pc.cast(column, column.type.value_type)
            encoded = pc.fill_null(column, "").combine_chunks().dictionary_encode()
            found = encoded.dictionary.to_pylist()
            indices = encoded.indices.to_numpy(zero_copy_only=False)
        # Codes in sorted order of the names (code point order, as pandas sorts); names no row uses
        # change no device's name or order.
        order = sorted(range(len(found)), key=found.__getitem__)
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return rank[indices], [found[i] for i in order]

    # Milliseconds as they are stored (`read_series` sent a column with nulls to the frame path).
    stamps = table.column("timestamp").to_numpy().view(np.int64)
    return _Columns(
        ts=np.asarray(stamps, dtype=np.float64) / 1000.0,
        gpu=_float64(table.column("gpu")),
        values={name: _float64(table.column(name)) for name in _VALUE_COLUMNS if name in names},
        host=host,
        metrics=lambda: series.metrics,
    )


def build_timeline(frame: pd.DataFrame | StoredSeries | None, *, start_s: float, end_s: float) -> Timeline | None:
    """The job's samples inside [start_s, end_s] on one grid, or None when there is no GPU util sample.

    Vectorised over rows with numpy (no per-row Python): triage must cost no more than loading the series.
    `frame` is a normalised series frame, or a stored blob as `read_series` reads it.
    """
    columns = _arrow_columns(frame) if isinstance(frame, StoredSeries) else _frame_columns(frame)
    if columns is None:
        return None
    ts, gpu_all, values = columns.ts, columns.gpu, columns.values
    in_window = (ts >= start_s) & (ts <= end_s)
    is_gpu = ~np.isnan(gpu_all)
    util_all = values["gpu_util"]
    gpu_rows = in_window & is_gpu & ~np.isnan(util_all)
    if not gpu_rows.any():
        return None
    host_codes, host_names = columns.host()
    device_key = host_codes[gpu_rows].astype(np.int64) * 65536 + gpu_all[gpu_rows].astype(np.int64)
    row_ts = ts[gpu_rows]
    grid = _common_grid(device_key, row_ts)
    if grid is not None:
        # Every device sampled at the same times, rows by device then time (a normalised frame):
        # the same codes the factorizations below give, without hashing, and a reshape for a scatter.
        keys, times = grid

        def on_grid(rows: np.ndarray) -> np.ndarray:
            return rows.reshape(keys.size, times.size).T  # (samples, devices), column by column (see Timeline)

        def mean_per_time(rows: np.ndarray) -> np.ndarray | None:
            # `_mean_by` over the devices of each time: the same sums (device after device), by rows.
            by_device = rows.reshape(keys.size, times.size)
            valid = ~np.isnan(by_device)
            if not valid.any():
                return None
            return _means(np.where(valid, by_device, 0.0).sum(axis=0), valid.sum(axis=0))
    else:
        # Hash-based factorize (linear) rather than np.unique (a sort) per row: this runs once per job.
        device_codes, keys = pd.factorize(device_key, sort=True)
        time_index, times = pd.factorize(row_ts, sort=True)
        keys, times = np.asarray(keys), np.asarray(times, dtype=np.float64)
        snapped = _snapped_to_one_grid(device_codes, row_ts, times.size)
        if snapped is not None:
            time_index, times = pd.factorize(snapped, sort=True)
            times = np.asarray(times, dtype=np.float64)

        def on_grid(rows: np.ndarray) -> np.ndarray:
            out = np.full((times.size, keys.size), np.nan, order="F")
            out[time_index, device_codes] = rows
            return out

        def mean_per_time(rows: np.ndarray) -> np.ndarray | None:
            return _mean_by(time_index, rows, times.size)

    util = on_grid(np.clip(util_all[gpu_rows], 0, 100))
    devices = [(host_names[k // 65536], int(k % 65536)) for k in keys.tolist()]

    mem_share = None
    if "gpu_mem_used_mib" in values and "gpu_mem_total_mib" in values:
        used = values["gpu_mem_used_mib"][gpu_rows]
        total = values["gpu_mem_total_mib"][gpu_rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(total > 0, used / total, np.nan)
        if np.isfinite(share).any():
            mem_share = on_grid(share)

    steps = np.diff(times)
    positive = steps[steps > 0]
    if positive.size and positive[0] == positive.min() == positive.max():
        period = float(positive[0])  # a regular grid (the usual case): its step, which is its median
    else:
        period = float(np.median(positive)) if positive.size else 60.0
    hole_threshold = gap_threshold_s(period)
    hole_after = np.zeros(times.size, dtype=bool)
    hole_after[:-1] = steps > hole_threshold
    dt = np.empty(times.size)
    dt[:-1] = np.where(hole_after[:-1], period, steps)
    dt[-1] = max(0.0, min(period, end_s - times[-1]))
    dt = np.minimum(dt, np.maximum(0.0, end_s - times))

    gpu_extra = {}
    for name in GPU_EXTRA_COLUMNS:
        if name in values:
            gpu_extra_values = mean_per_time(values[name][gpu_rows])
            if gpu_extra_values is not None:
                gpu_extra[name] = gpu_extra_values

    host = {}
    host_rows = in_window & ~is_gpu
    if host_rows.any():
        # Host samples may sit on their own grid: each GPU sample takes the nearest earlier host sample
        # (averaged over hosts at equal times), unless that is further away than a hole.
        host_ts = ts[host_rows]
        one_per_time = host_ts.size < 2 or bool((host_ts[1:] > host_ts[:-1]).all())
        if one_per_time:
            host_index, host_times = np.arange(host_ts.size), host_ts  # already unique and sorted
        else:
            host_index, host_times = pd.factorize(host_ts, sort=True)
            host_times = np.asarray(host_times, dtype=np.float64)
        position = np.clip(np.searchsorted(host_times, times, side="right") - 1, 0, host_times.size - 1)
        close = np.abs(host_times[position] - times) <= hole_threshold
        for name in HOST_COLUMNS:
            if name in values:
                if one_per_time:  # one sample per time, in order: the mean is the value
                    per_time = values[name][host_rows] + 0.0  # (as `_mean_by` sums from 0.0)
                    per_time = None if np.isnan(per_time).all() else per_time
                else:
                    per_time = _mean_by(host_index, values[name][host_rows], host_times.size)
                if per_time is not None:
                    host[name] = np.where(close, per_time[position], np.nan)

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
        metrics=columns.metrics(),
    )


def _snapped_to_one_grid(device_codes: np.ndarray, row_ts: np.ndarray, distinct_times: int) -> np.ndarray | None:
    """The rows' times moved to one grid of the devices' own sampling period, when devices are sampled
    out of step with each other (another host's exporter scraped a second later); None when they are not.

    On the grid of every distinct time, each device would fill one slot in N for N out-of-step hosts:
    the job would look covered 1/N of the time, and that grid grows with N x N x samples. A time moves
    at most half a period, to the slot nearest its device's sample.
    """
    devices = int(device_codes.max()) + 1 if device_codes.size else 0
    if devices < 2 or distinct_times <= 1.5 * row_ts.size / devices:  # in step, or nearly
        return None
    order = np.lexsort((row_ts, device_codes))
    codes, stamps = device_codes[order], row_ts[order]
    steps = np.diff(stamps)[codes[1:] == codes[:-1]]
    steps = steps[steps > 0]
    if not steps.size:
        return None
    period = float(np.median(steps))
    origin = float(row_ts.min())
    return origin + np.round((row_ts - origin) / period) * period


def _common_grid(device_key: np.ndarray, row_ts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(device keys, times) when rows run device by device in key order, each device with the same
    strictly increasing times; None otherwise (then the general factorization applies)."""
    size = device_key.size
    if size < 2 or not bool((device_key[1:] >= device_key[:-1]).all()):
        return None
    starts = np.concatenate(([0], np.flatnonzero(device_key[1:] != device_key[:-1]) + 1))
    count, per_device = starts.size, size // starts.size
    if per_device * count != size or not bool((np.diff(starts) == per_device).all()):
        return None
    times = row_ts[:per_device]
    if not bool((row_ts.reshape(count, per_device) == times).all()):
        return None
    if per_device > 1 and not bool((times[1:] > times[:-1]).all()):
        return None
    return device_key[starts], times.copy()


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
    return _means(sums, np.bincount(index[valid], minlength=size))


def _means(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """sums / counts, NaN where a group has no value."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _runs_fast(mask: np.ndarray, breaks: np.ndarray) -> list[tuple[int, int]]:
    """`runs` vectorised: a run continues while consecutive samples are True and no hole lies between."""
    starts, ends = _run_bounds(mask, breaks)
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def _run_bounds(mask: np.ndarray, breaks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last index of every run of `_runs_fast`, as arrays."""
    if not mask.any():
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    m = mask.astype(np.int8)
    starts = np.flatnonzero(m & np.r_[1, (1 - m[:-1]) | breaks[:-1].astype(np.int8)])
    ends = np.flatnonzero(m & np.r_[(1 - m[1:]) | breaks[:-1].astype(np.int8), 1])
    return starts, ends


def _run_means(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """`np.nanmean(values[a : b + 1])` for every run (a, b), bit for bit, with a few numpy calls in all.

    numpy sums fewer than 8 values left to right from 0.0, so runs that short without NaN are summed
    that way side by side (all runs of one length at once); other runs take `np.nanmean` itself.
    """
    lengths = ends - starts + 1
    means = np.empty(starts.size)
    alone = np.flatnonzero(lengths >= 8)
    for length in np.unique(lengths[lengths < 8]).tolist():
        chosen = np.flatnonzero(lengths == length)
        block = values[starts[chosen][:, None] + np.arange(length)]
        total = 0.0 + block[:, 0]
        for column in range(1, length):
            total = total + block[:, column]
        means[chosen] = total / length
        has_nan = np.isnan(block).any(axis=1)
        if has_nan.any():
            alone = np.r_[alone, chosen[has_nan]]
    for index in alone.tolist():
        means[index] = np.nanmean(values[starts[index] : ends[index] + 1])
    return means


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
    idle_stretches: list[Span] = field(default_factory=list)  # every GPU below the idle threshold: between bursts


def find_phases(tl: Timeline, *, idle_util: float, gap_rel: float, gap_min_s: float, dip_rel: float) -> Phases:
    busiest = np.nanmax(tl.util, axis=1)
    present = ~np.isnan(tl.util)
    active = busiest >= idle_util
    holes = [Span(float(tl.t[i] + tl.dt[i]), float(tl.t[i + 1]), "no data") for i in np.flatnonzero(tl.hole_after)]
    covered = float(tl.dt.sum())
    idle_share = float(tl.dt[~active].sum() / covered) if covered > 0 else 0.0
    series_start, series_end = float(tl.t[0]), tl.end
    peak_mem = float(np.nanmax(tl.mem_share)) if tl.mem_share is not None and np.isfinite(tl.mem_share).any() else None

    starts, ends = _run_bounds(active, tl.hole_after)
    bursts = [
        Span(begin, finish, "active", count)
        for begin, finish, count in zip(
            tl.t[starts].tolist(), (tl.t[ends] + tl.dt[ends]).tolist(), (ends - starts + 1).tolist(), strict=True
        )
    ]
    starts, ends = _run_bounds(~active, tl.hole_after)
    idle_stretches = [
        Span(begin, finish, "idle", count)
        for begin, finish, count in zip(
            tl.t[starts].tolist(), (tl.t[ends] + tl.dt[ends]).tolist(), (ends - starts + 1).tolist(), strict=True
        )
    ]
    if not active.any():
        return Phases(
            None, None, series_start, series_end, None, None, None, None, None, peak_mem,
            [float(np.nanmean(tl.util[:, d])) for d in range(tl.util.shape[1])],
            [], [], [], 0, bursts, idle_share, _median(tl.host.get("cpu_util")), None, None, holes, idle_stretches,
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
    rows = slice(first, last + 1)  # what `inside` selects, as views rather than copies
    w = tl.dt[rows]
    u = tl.util[rows]
    weights = w[:, None] * present[rows]
    totals = weights.sum(axis=0)
    sums = (np.nan_to_num(u) * weights).sum(axis=0)
    device_mean = [float(x) for x in np.where(totals > 0, sums / np.maximum(totals, 1e-12), 0.0)]
    per_time_mean = np.nanmean(u, axis=1)
    training_mean = float(np.average(per_time_mean, weights=w)) if w.sum() > 0 else float(np.nanmean(u))
    # The usual peak over the samples in which a GPU worked: over every sample, a job stalled more than half its
    # training (remote reads of 5 min between 3 min of work) had its stall level as its "usual" peak, and none
    # of its stalls was below 0.3 times that.
    working = busiest[rows]
    median_peak = float(np.median(working[active[rows]]))

    stall_util = min(idle_util, gap_rel * median_peak)
    stalled = inside & (busiest < max(stall_util, 0.5))
    idle_gaps, short_stalls = [], []
    starts, ends = _run_bounds(stalled, tl.hole_after)
    gap_rows = []
    for index, (begin, finish, count, mean) in enumerate(
        zip(
            tl.t[starts].tolist(),
            (tl.t[ends] + tl.dt[ends]).tolist(),
            (ends - starts + 1).tolist(),
            _run_means(busiest, starts, ends).tolist(),
            strict=True,
        )
    ):
        span = Span(begin, finish, "idle gap", count, mean)
        if count > 1 and span.seconds >= gap_min_s:
            idle_gaps.append(span)
            gap_rows.append(index)
        else:
            short_stalls.append(span)

    # Aligned dips: every busy device far below its usual level at the same sample, for one or two samples.
    busy_devices = [d for d, m in enumerate(device_mean) if m >= idle_util]
    aligned: list[float] = []
    if len(busy_devices) >= 2:
        sub = tl.util[:, busy_devices]
        inside_sub = sub[rows]
        by_device = inside_sub.T  # each device's samples in a row (contiguous): the cheaper way for numpy
        medians = np.nanmedian(by_device, axis=1) if np.isnan(by_device).any() else np.median(by_device, axis=1)
        # Samples inside an idle gap [start, end): t is sorted, so each gap is an index range.
        gap_starts, gap_ends = starts[np.asarray(gap_rows, dtype=np.intp)], ends[np.asarray(gap_rows, dtype=np.intp)]
        gap_begin = np.searchsorted(tl.t, tl.t[gap_starts], side="left")
        after = np.searchsorted(tl.t, tl.t[gap_ends] + tl.dt[gap_ends], side="left")
        nonempty = after > gap_begin
        marks = np.bincount(gap_begin[nonempty], minlength=active.size + 1)
        marks -= np.bincount(after[nonempty], minlength=active.size + 1)
        in_gap = np.cumsum(marks[:-1]) > 0
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
        idle_stretches=idle_stretches,
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
