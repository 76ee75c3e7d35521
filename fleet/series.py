"""A job's metric series: the normalised frame, its per-job summary and its Parquet form.

Pure pandas/numpy, vectorised over samples; no Django. The normalised frame is the one shape that
the parsers hand over, the store keeps (as one zstd Parquet blob per job) and triage reads:

    timestamp  datetime64[ms, UTC]
    host       string                (empty when the source has no host)
    gpu        Int16                 (GPU index; <NA> for host-level rows)
    <metric>   float32               canonical metric columns present, in `METRICS` order (NaN = missing)

sorted by host, gpu, timestamp, with at most one row per (host, gpu, timestamp).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from fleet.canonical import METRICS, SERIES_KEYS, SeriesSummary

KEY_COLUMNS = SERIES_KEYS
# A hole is an interval without samples longer than this many sampling periods, and never shorter
# than MIN_GAP_S (Prometheus' 5-minute lookback): holes are missing data, not idle time.
GAP_PERIODS = 3
MIN_GAP_S = 300.0


def gap_threshold_s(period_s: float) -> float:
    """Seconds without a sample after which a series has a hole (missing data, not idle time)."""
    return max(GAP_PERIODS * period_s, MIN_GAP_S)


DEFAULT_IDLE_THRESHOLD = 5.0
MAX_DEVICES_PER_HOST = 2**15  # GPU indexes are Int16
# A job on two or more MIG instances of one GPU has a device for each: its `gpu` is
# MIG_DEVICE_BASE + 16 x the GPU's index + the instance id (GPU_I_ID, 0-14), `device_name` reads it back.
# A job on one instance of a GPU keeps the GPU's own index.
MIG_DEVICE_BASE = 4096


def mig_device(gpu: int, instance: int) -> int:
    """The `gpu` value of MIG instance `instance` of GPU `gpu`, for a job on several instances of it."""
    return MIG_DEVICE_BASE + gpu * 16 + instance


def device_name(gpu) -> str:
    """A `gpu` value as a person reads it: "GPU 3", or "GPU 0 MIG instance 7"."""
    gpu = int(gpu)
    if gpu >= MIG_DEVICE_BASE:
        parent, instance = divmod(gpu - MIG_DEVICE_BASE, 16)
        return f"GPU {parent} MIG instance {instance}"
    return f"GPU {gpu}"


def empty_frame(metrics: tuple[str, ...] = ("gpu_util",)) -> pd.DataFrame:
    columns = {
        "timestamp": pd.Series([], dtype="datetime64[ms, UTC]"),
        "host": pd.Series([], dtype="string"),
        "gpu": pd.Series([], dtype="Int16"),
    }
    columns.update({name: pd.Series([], dtype="float32") for name in METRICS if name in metrics})
    return pd.DataFrame(columns)


def normalize(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The frame in normalised form, and how many duplicate (host, gpu, timestamp) rows were dropped.

    Input: a `timestamp` column (datetime-like or ISO 8601 text; naive means UTC), optional `host`
    (missing = "") and `gpu` (missing = host-level rows), and any columns; only canonical metric
    columns are kept. Of duplicate keys the first row in input order is kept.
    """
    out = _typed(frame)
    duplicated = out.duplicated(subset=list(KEY_COLUMNS), keep="first").to_numpy()
    dropped = int(duplicated.sum())
    if dropped:
        out = out[~duplicated]
    out = out.sort_values(["host", "gpu", "timestamp"], na_position="last", kind="stable").reset_index(drop=True)
    return out, dropped


def normalize_many(frame: pd.DataFrame, key: str = "job_id") -> tuple[dict[str, pd.DataFrame], int]:
    """`normalize` for many series in one vectorised pass: one normalised frame per value of `key`.

    Duplicates are (key, host, gpu, timestamp) repeats; the first in input order is kept. A metric
    column with no value at all for a key is left out of that key's frame (`gpu_util` always stays).
    Returns ({key value: frame}, duplicate rows dropped).
    """
    slices, dropped = normalize_batch(frame, key)
    return {value: part.frame() for value, part in slices.items()}, dropped


def normalize_batch(frame: pd.DataFrame, key: str = "job_id") -> tuple[dict[str, SeriesSlice], int]:
    """`normalize_many` without building each key's frame: ({key value: its `SeriesSlice`}, dropped).

    The importer's form: every series stays a slice of one sorted frame, which is converted to
    Arrow once, so a job's blob and summary come from views instead of a frame of its own.
    """
    if frame.empty:
        return {}, 0
    out = _typed(frame, extra=(key,))
    # One stable sort on integer codes, (key, host, gpu, timestamp), host-level rows (no GPU) last:
    # duplicates end up next to each other with the first in input order first, so dropping every
    # row equal to the one before keeps what `normalize` keeps. Sorting on the text columns
    # themselves costs several times more.
    key_codes = pd.factorize(out[key])[0]
    host_codes, host_names = pd.factorize(out["host"], sort=True)
    gpu = out["gpu"].to_numpy(dtype="int32", na_value=MAX_DEVICES_PER_HOST)
    stamps = out["timestamp"].array.asi8
    if out["timestamp"].hasnans:  # missing times last, as `normalize` sorts them
        stamps = np.where(out["timestamp"].isna().to_numpy(), np.iinfo(np.int64).max, stamps)
    order = np.lexsort((stamps, gpu, host_codes, key_codes))
    key_codes, host_codes, gpu, stamps = key_codes[order], host_codes[order], gpu[order], stamps[order]
    repeated = np.zeros(len(order), dtype=bool)
    repeated[1:] = (
        (key_codes[1:] == key_codes[:-1])
        & (host_codes[1:] == host_codes[:-1])
        & (gpu[1:] == gpu[:-1])
        & (stamps[1:] == stamps[:-1])
    )
    dropped = int(repeated.sum())
    if dropped:
        order, key_codes, host_codes = order[~repeated], key_codes[~repeated], host_codes[~repeated]
    starts = np.r_[0, np.flatnonzero(key_codes[1:] != key_codes[:-1]) + 1]
    keys = out[key].iloc[order[starts]].to_numpy()
    out = out.drop(columns=[key]).take(order).reset_index(drop=True)
    ends = np.r_[starts[1:], len(out)]
    metrics = [name for name in METRICS if name in out.columns]
    has_values = np.logical_or.reduceat(out[metrics].notna().to_numpy(), starts, axis=0)
    # Host codes in the order the names sort: within one normalised series (sorted by host) they
    # order devices exactly as `summarize`'s codes of first appearance.
    batch = _SeriesBatch(out, host_codes=host_codes, host_names=np.asarray(host_names, dtype=object))
    slices = {}
    for index, (begin, end) in enumerate(zip(starts, ends, strict=True)):
        kept = tuple(m for m, present in zip(metrics, has_values[index], strict=True) if present or m == "gpu_util")
        slices[keys[index]] = SeriesSlice(batch, int(begin), int(end), (*KEY_COLUMNS, *kept))
    return slices, dropped


class _SeriesBatch:
    """Normalised series sorted into one table, with what slices of it share: the numpy columns a
    summary reads. The frame itself is not kept (a slice's `frame()` is rebuilt from the table, as
    `from_parquet_bytes` does), so a bucket is held once in memory, not twice."""

    def __init__(self, frame: pd.DataFrame, *, host_codes: np.ndarray, host_names: np.ndarray):
        self.table = to_arrow(frame)
        self._empty = frame.iloc[:0]
        self._schemas: dict[tuple[str, ...], pa.Schema] = {}
        self.columns = _summary_columns(frame, host_codes=host_codes)
        self.host_names = host_names  # by host code (-1: none)
        # What `SeriesSlice.content_digest` hashes of the other columns: the float metric columns
        # themselves (views, which the Arrow table shares), anything else (not in a normalised
        # frame) as pandas' hash of each value.
        self.values = {
            name: np.ascontiguousarray(
                column.to_numpy() if column.dtype in (np.float32, np.float64) else _hashed(column)
            )
            for name, column in frame.items()
            if name not in KEY_COLUMNS
        }

    def schema(self, columns: tuple[str, ...]) -> pa.Schema:
        """The Arrow schema, pandas metadata included, of a frame with just these columns."""
        schema = self._schemas.get(columns)
        if schema is None:
            empty = self._empty[list(columns)]
            schema = self._schemas[columns] = pa.Schema.from_pandas(empty, preserve_index=False)
        return schema


class SeriesSlice:
    """One normalised series as rows [begin, end) of a batch: what the importer stores and summarises.

    `frame()` is the series as `normalize` gives it; `to_parquet_bytes()` and `summarize()` equal
    the functions of those names applied to that frame, without building it.
    """

    def __init__(self, batch: _SeriesBatch, begin: int, end: int, columns: tuple[str, ...]):
        self._batch, self._begin, self._end, self.columns = batch, begin, end, columns

    @classmethod
    def of(cls, frame: pd.DataFrame) -> SeriesSlice:
        """A normalised frame (a connector's) as a slice of its own."""
        frame = frame.reset_index(drop=True)
        codes, names = pd.factorize(_host_names(frame))  # as `summarize` codes them
        batch = _SeriesBatch(frame, host_codes=codes, host_names=np.asarray(names, dtype=object))
        return cls(batch, 0, len(frame), tuple(frame.columns))

    def __len__(self) -> int:
        return self._end - self._begin

    def frame(self) -> pd.DataFrame:
        return self.to_arrow().to_pandas()

    def timestamps_ms(self) -> np.ndarray:
        """Milliseconds since the epoch, one per row."""
        return self._batch.columns.t_ms[self._begin : self._end]

    def to_arrow(self) -> pa.Table:
        batch, length = self._batch, len(self)
        arrays = [batch.table.column(name).slice(self._begin, length) for name in self.columns]
        return pa.Table.from_arrays(arrays, schema=batch.schema(self.columns))

    def to_parquet_bytes(self) -> bytes:
        return _parquet_bytes(self.to_arrow())

    def content_digest(self) -> bytes:
        """A SHA-256 of the series' columns and values: what a job's fingerprint hashes.

        Not the blob's bytes, so an upgrade that encodes blobs differently (other Parquet options,
        another pyarrow writing other metadata) does not make every job imported again look
        changed, and an unchanged job is recognised before its blob is encoded. Equal for equal
        series, wherever their rows lay in a batch (`content_digest(frame())`).
        """
        batch, begin, end = self._batch, self._begin, self._end
        digest = hashlib.sha256(f"{len(self)}\0".encode())
        for name in self.columns:
            if name == "host":  # rows are sorted by host: each run of one host, by name
                codes = batch.columns.host[begin:end]
                starts = np.r_[0, np.flatnonzero(codes[1:] != codes[:-1]) + 1]
                lengths = np.diff(np.r_[starts, len(codes)])
                names = [None if code < 0 else str(batch.host_names[code]) for code in codes[starts]]
                values = json.dumps(list(zip(names, lengths.tolist(), strict=True))).encode()
            elif name == "timestamp":
                values = batch.columns.t_ms[begin:end]
            elif name == "gpu":
                values = batch.columns.gpu[begin:end]
            else:
                values = batch.values[name][begin:end]
            kind = values.dtype.str if isinstance(values, np.ndarray) else "text"
            digest.update(f"{name}\0{kind}\0".encode())
            digest.update(values)
        return digest.digest()

    def summarize(
        self, *, start: datetime, end: datetime, gpu_count: int, idle_threshold: float = DEFAULT_IDLE_THRESHOLD
    ) -> SeriesSummary:
        if "gpu_util" not in self.columns or not len(self):
            return _empty_summary()
        columns = self._batch.columns.rows(self._begin, self._end, self.columns)
        return _summarize_columns(columns, start=start, end=end, gpu_count=gpu_count, idle_threshold=idle_threshold)


def content_digest(frame: pd.DataFrame) -> bytes:
    """`SeriesSlice.content_digest` of a normalised frame."""
    return SeriesSlice.of(frame).content_digest()


def _hashed(column: pd.Series) -> np.ndarray:
    return pd.util.hash_pandas_object(column, index=False).to_numpy()


def as_slice(series: pd.DataFrame | SeriesSlice | None) -> SeriesSlice | None:
    """The series as a `SeriesSlice`, or None when there is none or it is empty."""
    if series is None or not len(series):
        return None
    return series if isinstance(series, SeriesSlice) else SeriesSlice.of(series)


def _typed(frame: pd.DataFrame, extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """Key and metric columns with their normalised types, in normalised column order, input row order."""
    if "timestamp" not in frame.columns:
        raise ValueError("a series frame needs a 'timestamp' column")
    frame = frame.reset_index(drop=True)
    out = pd.DataFrame({name: frame[name] for name in extra})
    timestamps = frame["timestamp"]
    if pd.api.types.is_string_dtype(timestamps.dtype) or timestamps.dtype == object:
        timestamps = pd.to_datetime(timestamps, utc=True, format="ISO8601")
    else:
        timestamps = pd.to_datetime(timestamps, utc=True)
    out["timestamp"] = timestamps.dt.floor("ms").dt.as_unit("ms")
    host = frame["host"].astype("string").fillna("") if "host" in frame.columns else ""
    out["host"] = pd.Series(host, index=out.index, dtype="string")
    if "gpu" in frame.columns:
        out["gpu"] = pd.to_numeric(frame["gpu"]).astype("Int16")
    else:
        out["gpu"] = pd.array([pd.NA] * len(frame), dtype="Int16")
    for name in METRICS:
        if name in frame.columns:
            out[name] = pd.to_numeric(frame[name]).astype("float32")
    return out


def gpu_hours(start: datetime, end: datetime, gpu_count: int) -> float:
    """Allocated GPU-hours: wall time × GPUs (0 for a job that ends before it starts)."""
    seconds = max(0.0, (end - start).total_seconds())
    return seconds / 3600.0 * max(0, gpu_count)


def summarize(
    frame: pd.DataFrame,
    *,
    start: datetime,
    end: datetime,
    gpu_count: int,
    idle_threshold: float = DEFAULT_IDLE_THRESHOLD,
) -> SeriesSummary:
    """Per-job figures from a normalised frame; see `SeriesSummary` and docs/archive-format.md.

    Only GPU rows with a `gpu_util` value inside [start, end] count. Each sample stands for the time
    until the next sample of the same device, unless that is a hole (longer than
    max(3 × sampling period, 300 s)) or there is no next sample: then it stands for one sampling
    period (cut at `end`). Holes are missing data: they add neither to the mean nor to unused or
    idle hours, and they lower `coverage`.
    """
    if "gpu_util" not in frame.columns or "gpu" not in frame.columns or frame.empty:
        return _empty_summary()
    host_codes = pd.factorize(_host_names(frame))[0]
    columns = _summary_columns(frame, host_codes=host_codes)
    return _summarize_columns(columns, start=start, end=end, gpu_count=gpu_count, idle_threshold=idle_threshold)


@dataclass(frozen=True)
class _SummaryColumns:
    """A frame's columns as `summarize` reads them (None: the frame has no such column)."""

    t_ms: np.ndarray  # int64 milliseconds since the epoch
    host: np.ndarray  # int64 codes, ordered as the devices must be
    gpu: np.ndarray  # int64, -1 for host-level rows
    util: np.ndarray | None  # float64, NaN = missing
    mem_used: np.ndarray | None
    mem_total: np.ndarray | None

    def rows(self, begin: int, end: int, present: tuple[str, ...]) -> _SummaryColumns:
        """Rows [begin, end), with only the metric columns in `present`."""

        def part(values: np.ndarray | None, name: str) -> np.ndarray | None:
            return values[begin:end] if values is not None and name in present else None

        return _SummaryColumns(
            t_ms=self.t_ms[begin:end],
            host=self.host[begin:end],
            gpu=self.gpu[begin:end],
            util=part(self.util, "gpu_util"),
            mem_used=part(self.mem_used, "gpu_mem_used_mib"),
            mem_total=part(self.mem_total, "gpu_mem_total_mib"),
        )


def _host_names(frame: pd.DataFrame) -> np.ndarray:
    if "host" not in frame.columns:
        return np.full(len(frame), "", dtype=object)
    return frame["host"].to_numpy(dtype=object, na_value="")


def _summary_columns(frame: pd.DataFrame, *, host_codes: np.ndarray) -> _SummaryColumns:
    def floats(name: str) -> np.ndarray | None:
        return frame[name].to_numpy(dtype="float64", na_value=np.nan) if name in frame.columns else None

    return _SummaryColumns(
        t_ms=pd.DatetimeIndex(pd.to_datetime(frame["timestamp"], utc=True)).as_unit("ms").asi8,
        host=host_codes.astype("int64", copy=False),
        gpu=frame["gpu"].to_numpy(dtype="int64", na_value=-1) if "gpu" in frame.columns else np.full(len(frame), -1),
        util=floats("gpu_util"),
        mem_used=floats("gpu_mem_used_mib"),
        mem_total=floats("gpu_mem_total_mib"),
    )


def _summarize_columns(
    columns: _SummaryColumns, *, start: datetime, end: datetime, gpu_count: int, idle_threshold: float
) -> SeriesSummary:
    """`summarize` on the columns of a frame that has gpu and gpu_util columns and at least one row."""
    start_s = _epoch_seconds(start)
    end_s = _epoch_seconds(end)
    allocated_s = max(0.0, end_s - start_s) * max(0, gpu_count)
    t_all = columns.t_ms / 1000.0
    in_window = (columns.gpu != -1) & (t_all >= start_s) & (t_all <= end_s)
    peak = _peak_memory_util(columns, in_window)
    util = columns.util
    rows = in_window & ~np.isnan(util)
    if not rows.any():
        return _empty_summary(peak=peak)

    host, gpu, t, util = columns.host[rows], columns.gpu[rows], t_all[rows], np.clip(util[rows], 0.0, 100.0)
    order = np.lexsort((t, gpu, host))
    t, util = t[order], util[order]
    device = host[order] * (MAX_DEVICES_PER_HOST + 1) + gpu[order]
    same_device_next = np.zeros(len(t), dtype=bool)
    same_device_next[:-1] = device[1:] == device[:-1]
    step = np.zeros(len(t))
    step[:-1] = t[1:] - t[:-1]

    positive = step[same_device_next & (step > 0)]
    if positive.size == 0:
        # One sample per device: no sampling period, so no time to weight by.
        return SeriesSummary(
            sample_count=len(t),
            sampling_period_s=None,
            mean_gpu_util=float(util.mean()),
            peak_gpu_mem_util=peak,
            covered_gpu_hours=0.0,
            unused_gpu_hours=None,
            idle_gpu_hours=None,
            coverage=0.0,
        )
    period = float(np.median(positive))
    gap_threshold = gap_threshold_s(period)
    continuous = same_device_next & (step <= gap_threshold)
    holes = same_device_next & (step > gap_threshold)
    dt = np.where(continuous, step, np.minimum(period, np.maximum(0.0, end_s - t)))

    covered_s = float(dt.sum())
    mean = float((util * dt).sum() / covered_s) if covered_s > 0 else float(util.mean())
    # At most the job's allocation: a node's exporter may report GPUs the job was not given (8 GPUs
    # of samples for a 1-GPU job), which must not make its waste exceed its GPU-hours.
    unused_s = min(float(((1.0 - util / 100.0) * dt).sum()), allocated_s)
    idle_s = min(float(dt[util < idle_threshold].sum()), allocated_s)
    coverage = min(1.0, covered_s / allocated_s) if allocated_s > 0 else 0.0
    return SeriesSummary(
        sample_count=len(t),
        sampling_period_s=period,
        mean_gpu_util=mean,
        peak_gpu_mem_util=peak,
        covered_gpu_hours=covered_s / 3600.0,
        unused_gpu_hours=unused_s / 3600.0,
        idle_gpu_hours=idle_s / 3600.0,
        coverage=coverage,
        gaps=int(holes.sum()),
    )


def _empty_summary(peak: float | None = None) -> SeriesSummary:
    return SeriesSummary(
        sample_count=0,
        sampling_period_s=None,
        mean_gpu_util=None,
        peak_gpu_mem_util=peak,
        covered_gpu_hours=0.0,
        unused_gpu_hours=None,
        idle_gpu_hours=None,
        coverage=0.0,
    )


def _peak_memory_util(columns: _SummaryColumns, rows: np.ndarray) -> float | None:
    if columns.mem_used is None or columns.mem_total is None:
        return None
    used = columns.mem_used[rows]
    total = columns.mem_total[rows]
    valid = ~np.isnan(used) & (total > 0)
    if not valid.any():
        return None
    return float(np.max(100.0 * used[valid] / total[valid]))


def _epoch_seconds(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


# The dtypes of a normalised frame, which `to_arrow` converts column by column.
_NORMALISED_DTYPES = {"timestamp": "datetime64[ms, UTC]", "host": "string", "gpu": "Int16"}
_arrow_schemas: dict[tuple, pa.Schema] = {}


def to_arrow(frame: pd.DataFrame) -> pa.Table:
    """The frame as an Arrow table, equal (pandas metadata included) to `pa.Table.from_pandas`.

    The importer converts one frame per job, and for a normalised frame `from_pandas` spends most of
    its time inferring what the dtypes already say: here the schema is worked out once per set of
    columns and each column is handed over directly. Other frames go through `from_pandas`.
    """
    key = tuple((name, str(dtype)) for name, dtype in frame.dtypes.items())
    schema = _arrow_schemas.get(key)
    if schema is None:
        normalised = all(_NORMALISED_DTYPES.get(name, "float32") == dtype for name, dtype in key)
        if not normalised or len(set(frame.columns)) != len(frame.columns):
            return pa.Table.from_pandas(frame, preserve_index=False)
        schema = _arrow_schemas.setdefault(key, pa.Schema.from_pandas(frame.iloc[:0], preserve_index=False))
    arrays = []
    for field_ in schema:
        column = frame[field_.name]
        if field_.name == "timestamp":
            missing = column.isna().to_numpy() if column.hasnans else None
            arrays.append(pa.array(column.array.asi8, mask=missing, type=field_.type))
        elif field_.name == "gpu":
            values = column.to_numpy(dtype="int16", na_value=0)
            arrays.append(pa.array(values, mask=column.isna().to_numpy(), type=field_.type))
        elif field_.name == "host":
            arrays.append(pa.array(column.array, type=field_.type))  # the string array hands itself over
        else:  # float32 metrics: NaN is missing, as from_pandas makes it
            arrays.append(pa.array(column.to_numpy(), type=field_.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=schema)


# How series blobs are encoded. Dictionary encoding only pays for the key columns (a few hosts and
# GPUs repeated); tried on every float metric it costs a third of the encoding time and saves
# nothing. Statistics only for the metric columns: triage reads their min and max to tell which
# metrics hold values without reading the columns it does not use (`read_series`; without them it
# read every column, and triage took 3.0 times the time of merely loading a series instead of 1.5);
# they cost 5 % of the encoding, which runs on the import's threads.
PARQUET_OPTIONS = {"compression": "zstd", "use_dictionary": ["host", "gpu"], "write_statistics": list(METRICS)}


def to_parquet_bytes(frame: pd.DataFrame) -> bytes:
    """The frame as zstd-compressed Parquet; `from_parquet_bytes` gives back an equal frame."""
    return _parquet_bytes(to_arrow(frame))


def _parquet_bytes(table: pa.Table) -> bytes:
    # Into an Arrow buffer, not a BytesIO: the writer then never calls back into Python (and takes
    # the GIL) for each write; 10-15 % less CPU to encode the demo fleet's series, on two threads.
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer, **PARQUET_OPTIONS)
    return buffer.getvalue().to_pybytes()


def from_parquet_bytes(data: bytes, columns: list[str] | None = None) -> pd.DataFrame:
    """The stored frame; `columns` reads only those that exist (keys are always read)."""
    # ParquetFile, not pq.read_table: read_table goes through Arrow's dataset scanner, whose
    # read-ahead tasks can still be running on Arrow's threads when it returns, and a process that
    # exits then aborts ("terminate called without an active exception", exit -6; apache/arrow
    # #34314): 128 of 150 tiny scripts that read one blob and exit, 1–5 % of real ones. Reading
    # the file directly leaves nothing running, and is a third quicker on a job's blob.
    parquet = pq.ParquetFile(pa.BufferReader(data))
    if columns is not None:
        present = set(parquet.schema_arrow.names)
        columns = [c for c in dict.fromkeys([*SERIES_KEYS, *columns]) if c in present]
    return parquet.read(columns=columns).to_pandas()


def column_without_values(parquet: pq.ParquetFile, name: str) -> bool:
    """Whether a stored series' column holds no value in any row group, by its statistics in the file's footer
    (unknown: False): a metric its source never sent, or sent empty (the CSV download leaves it out, the
    timeline does not offer it)."""
    metadata = parquet.metadata
    index = parquet.schema_arrow.get_field_index(name)
    nulls = 0
    for group in range(metadata.num_row_groups):
        column = metadata.row_group(group).column(index)
        if not column.is_stats_set or column.statistics.null_count is None:
            return False
        nulls += column.statistics.null_count
    return metadata.num_rows > 0 and nulls == metadata.num_rows
