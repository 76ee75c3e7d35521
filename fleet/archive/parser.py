"""Parsing a fleet archive (format v1) into canonical records. Pure: no Django, no disk writes.

The rules, in short (docs/archive-format.md is the user-facing version):

- A problem that leaves nothing to store raises `ArchiveError` (no/invalid manifest, no jobs
  file, a missing required column in the jobs file, an unreadable container or shared metrics file).
- A problem with one job rejects that job only: it lands in `ParsedArchive.rejected` with the
  errors that say file, row, field and value; every other job is still accepted.
- Problems that lose no job's data (unknown job ids in metrics or artifacts, unknown metric
  columns, truncated artifacts) are recorded in `ParsedArchive.errors` and change nothing else.
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import json
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from functools import cache, cached_property
from importlib import resources

import fastjsonschema
import jsonschema
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from fleet import series as series_lib
from fleet.archive.reader import (
    MANIFEST_NAME,
    ArchiveError,
    ArchiveReader,
    ReaderLimits,
    open_archive,
)
from fleet.canonical import (
    JOB_TYPES,
    MAX_EPOCH_SECONDS,
    MAX_HOST_CHARS,
    METRIC_BOUNDS,
    METRICS,
    TIME_RANGE,
    ArtifactRecord,
    JobRecord,
    RecordError,
    as_utc,
    host_length_text,
    loads_json,
    range_text,
)
from fleet.connectors.native import NativeFiles  # native sacct/kubectl/Prometheus files (issue 6)
from fleet.exports import unguarded_column
from fleet.logcut import HeadTail, format_bytes
from fleet.quoting import EXCERPT_CHARS, joined, library_error, named, quoted, shortened

__all__ = [
    "ArchiveError",
    "ArchiveStream",
    "ParsedArchive",
    "ParsedJob",
    "gpu_fields",
    "parse_archive",
    "parse_timestamp",
    "parse_timestamps",
]

JOB_FILES = ("jobs.csv", "jobs.jsonl")
SHARE_MEANING = "the share of a physical GPU each device is"
GPU_FIELDS = ("gpu_share", "gpu_unit")  # what a job's devices are; see gpu_fields
JOB_REQUIRED = ("job_id", "user", "team", "gpu_count", "start_time", "end_time")
SHARED_METRICS_FILES = ("metrics.csv", "metrics.parquet")
METRICS_FOLDER = "metrics"
METRICS_SUFFIXES = (".csv", ".parquet")
# Text cells of a metrics CSV that our series download (fleet.exports.series_csv_chunks) guards
# against spreadsheet formulas; read without the guard, so that a download imports as it was.
GUARDED_TEXT_COLUMNS = ("job_id", "host")
ARTIFACT_FOLDERS = {"logs": "log", "scripts": "script", "traces": "trace"}
LONG_FORM_COLUMNS = ("metric", "value")
METRIC_KEY_COLUMNS = ("job_id", "timestamp", "host", "gpu")
READ_COLUMNS = frozenset((*METRIC_KEY_COLUMNS, *LONG_FORM_COLUMNS, *METRICS))  # what a metrics file is read for
# Cells that mean "no value" in a metric column (compared case-insensitively, after trimming).
MISSING_TOKENS = ("", "nan", "na", "n/a", "null", "none")
MAX_GPU_INDEX = 32767  # the series stores GPU indexes as Int16
# Streaming: rows per batch read from a metrics file, and the rows one spill bucket aims to hold
# (a bucket is what is in memory at once while jobs are assembled and stored).
BATCH_ROWS = 256 * 1024
CSV_BLOCK_BYTES = 8 << 20
BUCKET_ROWS = 1_000_000
# Spilled rows are LZ4-compressed: about a quarter of the bytes on disk (demo metrics), and less
# CPU for compressing than the kernel spent writing and reading the bytes saved.
SPILL_IPC = pa.ipc.IpcWriteOptions(compression="lz4")
# How often the copying of logs and scripts says how far it is (a call per file would cost more
# than the copying of a small file).
PROGRESS_EVERY_S = 0.5
# Rough sizes, used only to choose how many buckets to spill into (never for limits).
CSV_BYTES_PER_ROW = 40


@dataclass
class ParsedArchive:
    """What an archive holds, split into what can be stored and what was wrong.

    - `jobs`, `series`, `artifacts` only hold accepted jobs. A series frame is normalised
      (`fleet.series.normalize`), holds every metrics file's rows of that job, and only the metric
      columns that have at least one value for it (`gpu_util` always).
    - `rejected` is keyed by job id; a row whose job id cannot be read is keyed "<jobs.csv row N>".
    - `errors` lists every problem in the order found: the rejected jobs' errors and also notes that
      rejected nothing (unknown job ids, unknown metric columns, truncated artifacts).
    - `duplicate_samples` counts the repeated (job, host, gpu, timestamp) rows that were dropped.
    """

    manifest: dict
    cluster: str  # the manifest's default cluster
    jobs: dict[str, JobRecord]  # accepted jobs by external id, cluster filled in
    series: dict[str, pd.DataFrame] = field(default_factory=dict)  # job id -> normalised frame; absent = no metrics
    artifacts: dict[str, list[ArtifactRecord]] = field(default_factory=dict)
    rejected: dict[str, list[RecordError]] = field(default_factory=dict)  # job id -> why it was rejected
    errors: list[RecordError] = field(default_factory=list)  # every problem found, in the order found
    duplicate_samples: int = 0


@dataclass
class ParsedJob:
    """One accepted job with everything it brought: what `ArchiveStream` yields."""

    record: JobRecord
    series: series_lib.SeriesSlice | None  # the normalised series (`.frame()`), None when the job has no metrics
    artifacts: list[ArtifactRecord]


def parse_archive(
    path: str | os.PathLike,
    *,
    artifact_max_bytes: int = 20 * 2**20,
    limits: ReaderLimits | None = None,
) -> ParsedArchive:
    """Parse a .zip, .tar.gz/.tgz or folder in the v1 layout; ArchiveError when nothing can be stored.

    Holds every job's series in memory at the end; the importer uses `ArchiveStream` instead.
    """
    with ArchiveStream(path, artifact_max_bytes=artifact_max_bytes, limits=limits) as stream:
        jobs = list(stream)
        return ParsedArchive(
            manifest=stream.manifest,
            cluster=stream.cluster,
            jobs={job.record.external_id: job.record for job in sorted(jobs, key=lambda j: j.record.external_id)},
            series={job.record.external_id: job.series.frame() for job in jobs if job.series is not None},
            artifacts={job.record.external_id: job.artifacts for job in jobs if job.artifacts},
            rejected=stream.rejected,
            errors=stream.errors,
            duplicate_samples=stream.duplicate_samples,
        )


class ArchiveStream:
    """An archive read in bounded memory, handed over job by job.

    Entering it reads the manifest and the jobs file, then streams every metrics file in batches
    (Parquet row groups, CSV blocks), validating each batch and spilling its valid rows to a
    private temporary folder in buckets of jobs; artifacts are spilled there too, under generated
    names. After that every error is known (`errors`, `rejected`, `jobs`). Iterating assembles one
    bucket at a time and yields a `ParsedJob` per accepted job; `duplicate_samples` is final once
    the iteration ends. Leaving it removes the temporary folder.

        with ArchiveStream(path) as stream:
            for job in stream: ...
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        artifact_max_bytes: int = 20 * 2**20,
        limits: ReaderLimits | None = None,
        progress: Callable[[str], None] | None = None,
        bucket_rows: int = BUCKET_ROWS,
        work_dir: str | os.PathLike | None = None,
        name: str = "",
    ):
        self.path = path
        self.name = name  # how errors name the archive: the user's file name, where `path` is a stored copy
        self.work_dir = work_dir  # where the temporary folder goes (default: the system's temp folder)
        self.artifact_max_bytes = artifact_max_bytes
        self.limits = limits
        self.progress = progress or (lambda phase: None)
        self.bucket_rows = bucket_rows
        self._reader: ArchiveReader | None = None
        self._work: str | None = None
        self._parser: _ArchiveParser | None = None

    def __enter__(self) -> ArchiveStream:
        try:
            if self.work_dir is not None:
                os.makedirs(self.work_dir, exist_ok=True)
            self._work = tempfile.mkdtemp(prefix="fleet-archive-", dir=self.work_dir)
            self._reader = open_archive(self.path, self.limits, name=self.name)
            self._parser = _ArchiveParser(
                self._reader,
                self.artifact_max_bytes,
                work=self._work,
                progress=self.progress,
                bucket_rows=self.bucket_rows,
            )
            self._parser.prepare()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        if self._parser is not None:
            self._parser.close()
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    def __iter__(self) -> Iterator[ParsedJob]:
        return self._parser.iter_jobs()

    manifest = property(lambda self: self._parser.manifest)
    cluster = property(lambda self: self._parser.manifest["cluster"])
    jobs = property(lambda self: self._parser.accepted)  # accepted jobs by id, known once entered
    rejected = property(lambda self: self._parser.rejected)
    errors = property(lambda self: self._parser.errors)
    duplicate_samples = property(lambda self: self._parser.duplicate_samples)


# ---------------------------------------------------------------------------------------------
# Timestamps
# ---------------------------------------------------------------------------------------------
# Same shapes as the job schema's "time" definition.
_ISO_PATTERN = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
_EPOCH_PATTERN = r"\d+(?:\.\d+)?"
_ISO = re.compile(_ISO_PATTERN)
_EPOCH = re.compile(_EPOCH_PATTERN)
TIMESTAMP_HINT = "expected ISO 8601 or Unix seconds"
# Units finer than milliseconds that a Unix time too large for seconds may be counted in.
_FINER_UNITS = (("microseconds", 1_000_000), ("nanoseconds", 1_000_000_000))


def cell_quoted(value, limit: int = EXCERPT_CHARS) -> str:
    """A value read from an archive as its messages quote it: `repr` ('2026-11-02', 12.5, None), whole up to
    `limit` characters; a longer one by its first `limit` characters, an ellipsis and its length
    (`fleet.quoting.quoted`: 'aaaa…' (5,000 characters)), so a run's errors, its page and its CSV never
    repeat a 5,000-character cell whole."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return quoted(value if value.isprintable() else repr(value)[1:-1], limit)
    text = repr(value)
    return text if len(text) <= limit else f"{shortened(text, limit)} ({len(text):,} characters)"


def timestamp_message(value) -> str:
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value).strip()
    if text == "":
        return f"timestamp is empty ({TIMESTAMP_HINT})"
    if _EPOCH.fullmatch(text) and (seconds := float(text)) >= MAX_EPOCH_SECONDS:  # inf past a float's range
        if seconds / 1_000 < MAX_EPOCH_SECONDS:
            return f"unparseable timestamp {cell_quoted(text)} ({TIMESTAMP_HINT}; this looks like milliseconds)"
        number = repr(text) if len(text) <= 40 else f"of {len(text):,} digits ('{text[:12]}…')"  # digits only
        unit = next((unit for unit, per_second in _FINER_UNITS if seconds / per_second < MAX_EPOCH_SECONDS), None)
        return f"timestamp {number} is out of range ({TIME_RANGE}{f'; this looks like {unit}' if unit else ''})"
    if _ISO.fullmatch(text):
        try:
            in_range = _in_epoch_range(as_utc(datetime.fromisoformat(text)))
        except OverflowError:  # a time of year 1 or 9999 whose offset moves it out of the calendar
            in_range = False
        except ValueError:  # no such date or time
            in_range = True
        if not in_range:
            return f"timestamp {cell_quoted(text)} is out of range ({TIME_RANGE})"
    return f"unparseable timestamp {cell_quoted(text)} ({TIMESTAMP_HINT})"


_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _epoch_us(moment: datetime) -> int:
    """Whole microseconds since the epoch, exactly (a datetime's own resolution)."""
    return (as_utc(moment) - _UNIX_EPOCH) // timedelta(microseconds=1)


def _in_epoch_range(moment: datetime) -> bool:
    return 0 <= moment.timestamp() < MAX_EPOCH_SECONDS


def parse_timestamp(value) -> datetime:
    """An aware UTC datetime from ISO 8601 (naive = UTC) or Unix seconds; ValueError with a user message."""
    if isinstance(value, bool) or value is None:
        raise ValueError(timestamp_message(value))
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:  # a JSON integer no float holds
            raise ValueError(timestamp_message(value)) from None
    else:
        text = str(value).strip()
        if _EPOCH.fullmatch(text):
            seconds = float(text)
        elif _ISO.fullmatch(text):
            try:
                moment = as_utc(datetime.fromisoformat(text))
            except (ValueError, OverflowError):  # no such date, or a year-1 time with an offset
                raise ValueError(timestamp_message(value)) from None
            if not _in_epoch_range(moment):
                raise ValueError(timestamp_message(value))
            return moment
        else:
            raise ValueError(timestamp_message(value))
    if not (0 <= seconds < MAX_EPOCH_SECONDS):
        raise ValueError(timestamp_message(value))
    return datetime.fromtimestamp(seconds, tz=UTC)


def parse_timestamps(column: pd.Series | pa.Array | pa.ChunkedArray) -> tuple[pd.Series, np.ndarray]:
    """Vectorised `parse_timestamp`: (datetime64[ms, UTC] series with NaT where bad, bad mask)."""
    values = _arrow(column)
    kind = values.type
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        result = _from_typed_times(values)
    elif _is_number(kind):
        result = _from_epoch_seconds(pc.cast(values, pa.float64(), safe=False).to_numpy(zero_copy_only=False))
    elif _is_text(kind) or pa.types.is_null(kind):
        text = _trimmed_text(values)
        is_epoch = _matches(text, _EPOCH_PATTERN)
        is_iso = _matches(text, _ISO_PATTERN)
        result = _from_epoch_seconds(_to_float(text, is_epoch))
        if is_iso.any():
            iso_text = pd.Series(pc.if_else(pa.array(is_iso), text, pa.scalar(None, text.type)).to_pandas())
            from_iso = pd.to_datetime(iso_text, format="ISO8601", utc=True, errors="coerce").dt.as_unit("ms")
            millis = from_iso.array.asi8
            outside = from_iso.notna().to_numpy() & ((millis < 0) | (millis >= MAX_EPOCH_SECONDS * 1000))
            result = result.where(~is_iso, from_iso.mask(outside))
    else:  # booleans, durations, nested values: never a time
        result = pd.Series(pd.NaT, index=range(len(values)), dtype="datetime64[ms, UTC]")
    result = result.reset_index(drop=True).dt.floor("ms").dt.as_unit("ms")
    return result, result.isna().to_numpy()


# Units of a typed time column per second (Arrow dates count days, or milliseconds for date64).
_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _from_typed_times(values: pa.Array) -> pd.Series:
    """A Parquet timestamp or date column as datetime64[ms, UTC] (naive = UTC), floored to the
    millisecond; NaT for missing cells and, as for epoch seconds, times before 1970 or from
    MAX_EPOCH_SECONDS on (whatever the column's type can hold, a time of year 300,000 is an error)."""
    kind = values.type
    if pa.types.is_timestamp(kind):
        per_second, per_unit_ms = _UNITS_PER_SECOND[kind.unit], None
    elif pa.types.is_date32(kind):
        per_second, per_unit_ms = 1 / 86_400, 86_400_000
    else:  # date64: milliseconds
        per_second, per_unit_ms = 1_000, 1
    raw = pc.fill_null(values.cast(pa.int32() if pa.types.is_date32(kind) else pa.int64()), 0).to_numpy()
    raw = raw.astype("int64", copy=False)  # days as int32 would overflow once made milliseconds
    valid = values.is_valid().to_numpy(zero_copy_only=False) & (raw >= 0) & (raw < MAX_EPOCH_SECONDS * per_second)
    raw = np.where(valid, raw, 0)
    if per_unit_ms is not None:
        millis = raw * per_unit_ms
    else:  # timestamps: whole milliseconds, rounded down as `dt.floor` would
        millis = raw * (1_000 // per_second) if per_second < 1_000 else raw // (per_second // 1_000)
    stamps = millis.astype("datetime64[ms]")
    stamps[~valid] = np.datetime64("NaT")
    return pd.Series(stamps).dt.tz_localize("UTC")


def _from_epoch_seconds(seconds: np.ndarray) -> pd.Series:
    valid = np.isfinite(seconds) & (seconds >= 0) & (seconds < MAX_EPOCH_SECONDS)
    millis = np.where(valid, np.round(np.where(valid, seconds, 0.0) * 1000.0), np.nan)
    return pd.Series(pd.to_datetime(millis, unit="ms", utc=True)).dt.as_unit("ms")


# ---------------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------------
@cache
def _validator(name: str, fields: tuple[str, ...] = ()) -> jsonschema.Draft202012Validator:
    """The schema `name`, or with `fields` only those properties' rules (nothing required)."""
    text = resources.files("fleet").joinpath("schemas", name).read_text(encoding="utf-8")
    schema = json.loads(text)
    defs = schema.get("$defs", {})
    if fields:
        schema = {"type": "object", "properties": {field: schema["properties"][field] for field in fields}}
    return jsonschema.Draft202012Validator(_inline_local_refs(schema, defs))


@cache
def _compiled(name: str, fields: tuple[str, ...] = ()) -> Callable[[dict], object]:
    """The same schema compiled to Python by fastjsonschema: a valid row passes in a tenth of the
    time `jsonschema` takes (0.03 against 0.39 ms), which an import pays for every job row. It
    only says whether a row is valid; `_validator` words the errors of a row that is not."""
    schema = dict(_validator(name, fields).schema)
    # Every keyword the schema uses means the same in draft 7, which fastjsonschema compiles; it
    # does not know the 2020-12 URI. tests/test_archive_fuzz.py holds the two to the same verdicts.
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    return fastjsonschema.compile(schema)


def schema_problems(name: str, record: dict, fields: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """(field, message) of each way the record breaks the schema `name` (none for a valid record);
    with `fields`, only the rules of those fields."""
    try:
        _compiled(name, fields)(record)
        return
    except fastjsonschema.JsonSchemaException:
        pass
    for error in _validator(name, fields).iter_errors(record):
        yield _schema_problem(error)


def _inline_local_refs(node, defs: dict):
    """The schema with each {"$ref": "#/$defs/x"} replaced by x itself: the same rules, but the
    validator no longer resolves a reference for every row and field (40 % of its time per job row)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if len(node) == 1 and isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            return _inline_local_refs(defs[ref[8:]], defs)
        return {key: _inline_local_refs(value, defs) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline_local_refs(value, defs) for value in node]
    return node


def _schema_problem(error: jsonschema.ValidationError) -> tuple[str, str]:
    """(field, message) for one schema error, in words a person filling in a CSV understands."""
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in error.instance]
        return (missing[0] if missing else ""), "required field is missing"
    field_name = ".".join(str(part) for part in error.absolute_path)
    value = error.instance
    if error.validator == "const":
        return field_name, f"must be {error.validator_value!r} (got {cell_quoted(value)})"
    if error.validator == "enum":
        allowed = ", ".join(repr(v) for v in error.validator_value if v not in ("", None))
        return field_name, f"must be one of {allowed} (got {cell_quoted(value)})"
    if error.validator == "pattern":
        if (words := _PATTERN_WORDS.get(error.validator_value)) is not None:
            return field_name, f"must be {words} (got {cell_quoted(value)})"
        return field_name, f"invalid value {cell_quoted(value)} (must match {error.validator_value})"
    if error.validator == "type":
        kinds = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return (
            field_name,
            f"must be {' or '.join(_TYPE_WORDS.get(kind, kind) for kind in kinds)} (got {cell_quoted(value)})",
        )
    if error.validator == "maxLength":
        return field_name, f"is {len(value)} characters long; at most {error.validator_value} allowed"
    if error.validator == "minLength":
        return field_name, f"is {len(value)} characters long; at least {error.validator_value} needed"
    if error.validator in ("anyOf", "oneOf"):  # the validator's words: "is not valid under any of the given schemas"
        expected = _EXPECTED.get(field_name)
        if expected is None:
            description = error.schema.get("description")
            return field_name, f"invalid value {cell_quoted(value)}" + (
                f" (expected: {description})" if description else ""
            )
        return field_name, f"must be {expected} (got {cell_quoted(value)})"
    return field_name, f"invalid value {cell_quoted(value)}: {error.message.replace(repr(value), cell_quoted(value))}"


# What each field whose schema offers alternatives (anyOf) must be, in words; the schema's own
# rules, so a value the field's parsing accepts but the schema refuses (a share with an exponent or a
# sign, a cluster name with a space) is told what to write. Rows are trimmed first, so a count or a
# time the schema refuses has already failed its own parsing; their words are for `schema_problems`'
# other callers. tests/test_archive_parser.py holds every such field to a case.
_COUNT_WORDS = "a whole number of 0 or more in digits only, such as 4"
_TIME_WORDS = "ISO 8601 such as 2026-10-05T09:00:00Z or Unix seconds such as 1791190800"
_EXPECTED = {
    "gpu_share": "a number more than 0 and at most 1 in plain digits such as 0.25, or a fraction like 1/7",
    "gpu_count": _COUNT_WORDS,
    "node_count": f"{_COUNT_WORDS}, or empty",
    "cpu_count": f"{_COUNT_WORDS}, or empty",
    "start_time": _TIME_WORDS,
    "end_time": _TIME_WORDS,
    "submit_time": f"{_TIME_WORDS}, or empty",
    "cluster": "1 to 100 letters, digits, '_' or '-', or empty",
}
# A pattern's rule in words, for the patterns a person writes by hand (the manifest's cluster name,
# a job's id), rather than the regular expression.
_PATTERN_WORDS = {
    "^[A-Za-z0-9_-]{1,100}$": "1 to 100 letters, digits, '_' or '-'",
    "^[A-Za-z0-9_.:\\[\\]+-]+$": "letters, digits or . _ : [ ] + - with no spaces or slashes",
    # JSON Schema has no case-insensitive enum; exports write "Interactive" and "BATCH".
    "^([Bb][Aa][Tt][Cc][Hh]|[Ii][Nn][Tt][Ee][Rr][Aa][Cc][Tt][Ii][Vv][Ee])?$": (
        "batch or interactive in any letter case, or empty"
    ),
}
# A JSON type in words ("must be text or empty"), not the schema's ['string', 'null'].
_TYPE_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "empty",
}


# ---------------------------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------------------------
class _Unreadable(Exception):
    """A data file that cannot be read at all (truncated Parquet, broken CSV, duplicate header);
    `row` and `field` where one cell or column is to blame."""

    def __init__(self, message: str, *, row: int | None = None, field: str = ""):
        super().__init__(message)
        self.row, self.field = row, field


@dataclass
class _Table:
    table: pa.Table
    rows: np.ndarray  # 1-based data row number of each table row
    header: list[str]
    ragged: list[tuple[int | None, int, int, str]]  # (row, expected fields, actual fields, text) of skipped rows


class _ArchiveParser:
    def __init__(
        self,
        reader: ArchiveReader,
        artifact_max_bytes: int,
        *,
        work: str,
        progress: Callable[[str], None],
        bucket_rows: int = BUCKET_ROWS,
    ):
        self.reader = reader
        self.artifact_max_bytes = artifact_max_bytes
        self.work = work
        self.progress = progress
        self.bucket_rows = bucket_rows
        self.errors: list[RecordError] = []
        self.rejected: dict[str, list[RecordError]] = {}
        self.jobs: dict[str, JobRecord] = {}
        self.accepted: dict[str, JobRecord] = {}
        self.job_ids: set[str] = set()  # every job id the jobs file names, accepted or rejected
        self.jobs_file = ""
        self.manifest: dict = {}
        self.duplicate_samples = 0
        self._spill: _Spill | None = None
        self._job_ragged: list[tuple[int | None, int, int, str]] = []
        # job -> (kind, path, offset, length, truncated) of its artifacts in one append-only spill file:
        # one file for all of them, because creating a file per artifact costs more than copying it.
        self._artifacts: dict[str, list[tuple[str, str, int, int, bool]]] = {}
        self._artifact_spill = None
        self._read_ahead: _ReadAhead | None = None

    # -- bookkeeping ---------------------------------------------------------------------------
    def note(self, error: RecordError) -> None:
        self.errors.append(_short_names(replace(error, effect=error.effect or "note")))

    def reject(self, key: str, error: RecordError) -> None:
        error = _short_names(replace(error, effect="rejected"))
        self.rejected.setdefault(key, []).append(error)
        self.errors.append(error)

    def prepare(self) -> None:
        """Everything but assembling series: after this every error and rejection is known."""
        names = self.reader.names()
        self.progress("reading manifest")
        self.manifest = self._parse_manifest()
        # Native files (issue 6): sacct --json, kubectl pods, Prometheus responses; see fleet/connectors/native.py.
        self.native = NativeFiles.read(self.reader, names, self.manifest["cluster"], self.artifact_max_bytes)
        self.progress("reading jobs")
        if not self.native.replaces_jobs_file(self.reader, JOB_FILES):
            self._parse_jobs(self.manifest["cluster"])

        metric_files = [n for n in SHARED_METRICS_FILES if n in self.reader]
        metric_files += [n for n in names if n.startswith(METRICS_FOLDER + "/")]
        self._spill = _Spill(self.work, sorted(self.job_ids), self._estimate_rows(metric_files), self.bucket_rows)
        for priority, name in enumerate(metric_files):
            self.progress(f"reading metrics ({named(name)})")
            self._parse_metrics_file(name, priority)
        self._spill.flush()  # a failed write (a full disk) fails the reading of the metrics
        self.accepted = {job_id: record for job_id, record in self.jobs.items() if job_id not in self.rejected}
        for error in self.native.settle(self.job_ids, self.accepted):  # native files (issue 6)
            if error.effect == "rejected":  # a job the database cannot keep: not stored, counted as rejected
                self.reject(error.job_id or error.file, error)
            else:
                self.note(error)
        self.accepted.update(self.native.extra)
        # The first bucket of series is read back and normalised while the logs and scripts are
        # copied (nothing in them rejects a job), instead of after.
        v1_jobs = {k: v for k, v in self.accepted.items() if k not in self.native.extra}  # native files (issue 6)
        self._read_ahead = _ReadAhead(self._normalised_buckets(v1_jobs))
        self.progress("reading logs, scripts and traces")
        self._parse_artifacts(names, self.accepted)

    def iter_jobs(self) -> Iterator[ParsedJob]:
        """Accepted jobs, one spill bucket of series at a time (and the next one being read ahead)."""
        accepted = self.accepted
        for bucket_jobs, series in self._read_ahead:
            for job_id in bucket_jobs:
                record = accepted[job_id]
                job_series = series.pop(job_id, None)
                if job_series is not None:
                    self._note_outside_window(record, job_series.timestamps_ms())
                if self.native.has_series(job_id):  # adds native Prometheus series (issue 6)
                    frame_of_job = self.native.series_for(record, job_series.frame() if job_series else None)
                    job_series = series_lib.as_slice(frame_of_job)
                yield ParsedJob(record=record, series=job_series, artifacts=self._load_artifacts(job_id))
        for job_id, record in sorted(self.native.extra.items()):  # jobs from native files (issue 6)
            series = series_lib.as_slice(self.native.series_for(record, None))
            yield ParsedJob(record=record, series=series, artifacts=self.native.artifacts_for(job_id))

    def _normalised_buckets(self, jobs: dict[str, JobRecord]) -> Iterator[tuple[list[str], dict]]:
        """Each spill bucket's jobs and their series ({job id: `SeriesSlice`}), read back and normalised."""
        for bucket_jobs, frame in self._spill.buckets(jobs, self._pivot_long):
            series: dict[str, series_lib.SeriesSlice] = {}
            if frame is not None and len(frame):
                series, dropped = series_lib.normalize_batch(frame, key="job_id")
                self.duplicate_samples += dropped
            del frame
            # Arrow's allocator keeps what a bucket's reading freed for reuse; give it back, so the
            # process holds about one bucket's worth, not the most any bucket needed.
            pa.default_memory_pool().release_unused()
            yield bucket_jobs, series

    def _note_outside_window(self, job: JobRecord, stamps_ms: np.ndarray) -> None:
        """Samples before start_time or after end_time are kept but not counted; say so once per job."""
        # On the raw milliseconds: comparing datetimes costs more than the rest of the check. A
        # window edge with microseconds rounds inwards, so whole milliseconds compare exactly.
        # Worked out from datetimes, not pandas' nanoseconds, which end in 2262 (times go to 5138).
        start_us, end_us = _epoch_us(job.start_time), _epoch_us(job.end_time)
        outside = (stamps_ms < -(-start_us // 1_000)) | (stamps_ms > end_us // 1_000)
        count = int(np.count_nonzero(outside))
        if not count:
            return
        first_ms = int(stamps_ms[np.argmax(outside)])
        first = (_UNIX_EPOCH + timedelta(milliseconds=first_ms)).isoformat().replace("+00:00", "Z")
        plural = "1 sample lies" if count == 1 else f"{count} samples lie"
        message = (
            f"{plural} outside the job's window {job.start_time.isoformat().replace('+00:00', 'Z')} – "
            f"{job.end_time.isoformat().replace('+00:00', 'Z')} (first at {first}); kept, but not counted "
            "in its utilization"
        )
        self.note(RecordError("metrics", message, field="timestamp", job_id=job.external_id))

    def _estimate_rows(self, metric_files: list[str]) -> int:
        """A guess of the metric rows, only to choose the number of spill buckets."""
        total = 0
        for name in metric_files:
            size = self.reader.member(name).size or 0
            total += size // CSV_BYTES_PER_ROW if name.endswith(".csv") else size // 4
        return total

    def _load_artifacts(self, job_id: str) -> list[ArtifactRecord]:
        records = []
        for kind, path, offset, length, truncated in self._artifacts.pop(job_id, []):
            self._artifact_spill.seek(offset)
            content = self._artifact_spill.read(length)
            records.append(ArtifactRecord(job_id=job_id, kind=kind, path=path, content=content, truncated=truncated))
        return records

    def close(self) -> None:
        if self._read_ahead is not None:  # before the spill it reads goes away
            self._read_ahead.close()
            self._read_ahead = None
        if self._spill is not None:
            self._spill.close()
        if self._artifact_spill is not None:
            self._artifact_spill.close()
            self._artifact_spill = None

    # -- manifest ------------------------------------------------------------------------------
    def _parse_manifest(self) -> dict:
        if MANIFEST_NAME not in self.reader:
            raise ArchiveError.of(MANIFEST_NAME, "missing: every archive needs a manifest.json at its root")
        data = self.reader.read(MANIFEST_NAME)
        try:
            manifest = loads_json(data.decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise ArchiveError.of(MANIFEST_NAME, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        except json.JSONDecodeError as exc:
            raise ArchiveError.of(MANIFEST_NAME, f"not valid JSON: {exc.msg}", row=exc.lineno) from exc
        except ValueError as exc:  # NaN, or nested deeper than the parser follows (was a RecursionError)
            raise ArchiveError.of(MANIFEST_NAME, f"not valid JSON: {library_error(exc)}") from exc
        errors = sorted(_validator("manifest.schema.json").iter_errors(manifest), key=lambda e: list(e.absolute_path))
        if errors:
            field_name, message = _schema_problem(errors[0])
            raise ArchiveError.of(MANIFEST_NAME, message, field=field_name)
        return manifest

    # -- jobs ----------------------------------------------------------------------------------
    def _parse_jobs(self, cluster: str) -> None:
        present = [name for name in JOB_FILES if name in self.reader]
        if not present:
            raise ArchiveError.of("jobs.csv", "missing: the archive needs a jobs.csv or a jobs.jsonl at its root")
        if len(present) > 1:
            raise ArchiveError.of("jobs.jsonl", "both jobs.csv and jobs.jsonl are present; keep exactly one")
        self.jobs_file = name = present[0]
        entries = self._job_rows_csv(name) if name.endswith(".csv") else self._job_rows_jsonl(name)
        if not entries and not self.rejected:
            raise ArchiveError.of(name, "holds no jobs")

        by_id: dict[str, list[tuple[int, dict]]] = {}
        for row, record in entries:
            job_id = _text(record.get("job_id"))
            if job_id == "":
                self.reject(_row_key(name, row), RecordError(name, "required value is empty", row=row, field="job_id"))
                continue
            by_id.setdefault(job_id, []).append((row, record))

        for job_id, occurrences in by_id.items():
            self.job_ids.add(job_id)
            row, record = occurrences[0]
            conflict = next((other for other in occurrences[1:] if _differing_keys(record, other[1])), None)
            if conflict is not None:
                other_row, other = conflict
                differing = _differing_keys(record, other)
                rows = joined([str(r) for r, _ in occurrences])
                message = (
                    f"job_id {cell_quoted(job_id)} appears in rows {rows} with different values "
                    f"(row {row} vs row {other_row}): {_differences(record, other, differing)}"
                )
                self.reject(job_id, RecordError(name, message, row=other_row, field=differing[0], job_id=job_id))
                continue
            job, problems = job_from_row(record, cluster)
            for field_name, message in problems:
                self.reject(job_id, RecordError(name, message, row=row, field=field_name, job_id=job_id))
            if job is not None and not problems:
                self.jobs[job_id] = job

    def _job_rows_csv(self, name: str) -> list[tuple[int, dict]]:
        try:
            table = _concat_tables(list(self._iter_csv(name)))
        except _Unreadable as exc:
            raise ArchiveError.of(name, str(exc)) from exc
        missing = [column for column in JOB_REQUIRED if column not in table.header]
        if missing:
            listed = ", ".join(f"'{column}'" for column in missing)
            raise ArchiveError.of(
                name,
                f"required column {listed} is missing (jobs need {', '.join(JOB_REQUIRED)})"
                if len(missing) == 1
                else f"required columns {listed} are missing (jobs need {', '.join(JOB_REQUIRED)})",
                field=missing[0],
            )
        job_index = table.header.index("job_id")
        for row, expected, actual, text in self._job_ragged:
            fields = _split_csv_line(text)
            job_id = fields[job_index].strip() if len(fields) > job_index else ""
            message = f"row has {actual} fields, expected {expected}; the file is truncated or the row is malformed"
            key = job_id if job_id else _row_key(name, row)
            if job_id:
                self.job_ids.add(job_id)
            self.reject(key, RecordError(name, message, row=row, job_id=job_id))
        records = table.table.to_pylist()
        entries = []
        for row, record in zip(table.rows.tolist(), records, strict=True):
            entries.append((row, {key: _text(value) for key, value in record.items()}))
        # A job whose row was ragged stays rejected even if another, intact row names it.
        return [(row, record) for row, record in entries if record.get("job_id", "") not in self.rejected]

    def _job_rows_jsonl(self, name: str) -> list[tuple[int, dict]]:
        text = self._decode(name)
        entries = []
        for line_no, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = loads_json(line)
            except json.JSONDecodeError as exc:
                message = f"not valid JSON ({exc.msg} at column {exc.colno}); the line is truncated or malformed"
                self.reject(_row_key(name, line_no), RecordError(name, message, row=line_no))
                continue
            except ValueError as exc:  # NaN, Infinity, or nested too deeply
                self.reject(
                    _row_key(name, line_no), RecordError(name, f"not valid JSON: {library_error(exc)}", row=line_no)
                )
                continue
            if not isinstance(record, dict):
                message = f"each line must be a JSON object (got {type(record).__name__})"
                self.reject(_row_key(name, line_no), RecordError(name, message, row=line_no))
                continue
            entries.append((line_no, json_job_row(record)))
        return entries

    # -- metrics -------------------------------------------------------------------------------
    def _parse_metrics_file(self, name: str, priority: int) -> None:
        file_job = None
        if name not in SHARED_METRICS_FILES:
            relative = name[len(METRICS_FOLDER) + 1 :]
            suffix = next((s for s in METRICS_SUFFIXES if relative.endswith(s)), None)
            if "/" in relative or suffix is None or relative == suffix:
                self.note(RecordError(name, "ignored: per-job metrics files are metrics/<job_id>.csv or .parquet"))
                return
            file_job = relative[: -len(suffix)]
            if file_job not in self.job_ids:
                self.note(
                    RecordError(
                        name,
                        f"job {quoted(file_job)} is not in {self.jobs_file}; the file was ignored",
                        field="job_id",
                        job_id=file_job,
                    )
                )
                return
        tally = _FileTally()
        try:
            batches = self._iter_csv(name, tally) if name.endswith(".csv") else self._iter_parquet(name, tally)
            with closing(batches):  # its temporary copy goes now, not when the generator is collected
                for table in batches:
                    if file_job is None and len(table.rows):  # how far into a shared file: progress page, bar
                        of = f" of {tally.file_rows:,}" if tally.file_rows else ""
                        self.progress(f"reading metrics ({name}): {int(table.rows[-1]):,}{of} rows")
                    frame = self._metrics_rows(name, table, file_job, tally)
                    if tally.stop:
                        break
                    if frame is not None and len(frame):
                        self._spill.add(frame, priority, long_form=tally.long_form)
        except _Unreadable as exc:
            if file_job is None:
                raise ArchiveError.of(name, str(exc), row=exc.row, field=exc.field) from exc
            self.reject(file_job, RecordError(name, str(exc), row=exc.row, field=exc.field, job_id=file_job))
            return
        self._finish_metrics_file(name, file_job, tally)

    def _finish_metrics_file(self, name: str, file_job: str | None, tally: _FileTally) -> None:
        """Turn what the batches found into one error per (job, field) and one note per unknown job."""
        if tally.header is None and file_job is not None:  # an empty per-job file: nothing to read
            tally.header = []
        for job_id, (row, count) in tally.unknown.items():
            plural = "row was" if count == 1 else f"{count} rows were"
            if job_id == "":
                message = f"empty job_id; {plural} ignored"
            else:
                message = f"job {cell_quoted(job_id)} is not in {self.jobs_file}; its {plural} ignored"
            self.note(RecordError(name, message, row=row, field="job_id", job_id=job_id))
        # Rows the CSV reader had to skip (wrong number of fields).
        for row, expected, actual, text in tally.ragged:
            message = f"row has {actual} fields, expected {expected}; the file is truncated or the row is malformed"
            if file_job is not None:
                self.reject(file_job, RecordError(name, message, row=row, job_id=file_job))
                continue
            fields = _split_csv_line(text)
            index = tally.header.index("job_id") if tally.header and "job_id" in tally.header else 0
            job_id = fields[index].strip() if len(fields) > index else ""
            if job_id in self.job_ids:
                self.reject(job_id, RecordError(name, message, row=row, job_id=job_id))
            elif job_id:
                self.note(
                    RecordError(name, message + f"; job {cell_quoted(job_id)} is not in {self.jobs_file}", row=row)
                )
            else:
                for other in sorted(tally.file_jobs):
                    self.reject(other, RecordError(name, message + "; its job cannot be told", row=row, job_id=other))
        if tally.missing:
            for job_id in sorted(tally.file_jobs) or ([file_job] if file_job else []):
                message = (
                    f"required column '{tally.missing}' is missing, so this job's metrics in the file cannot be read"
                )
                self.reject(job_id, RecordError(name, message, field=tally.missing, job_id=job_id))
            return
        for (job_id, field_name), (row, message, count) in tally.bad.items():
            more = count - 1
            message += f" (and {more} more rows of this job)" if more else ""
            self.reject(job_id, RecordError(name, message, row=row, field=field_name, job_id=job_id))
        if tally.long_form:
            for job_id in sorted(tally.file_jobs - tally.util_jobs):
                message = "no gpu_util rows: long-form metrics need at least one 'gpu_util' row per job"
                self.reject(job_id, RecordError(name, message, field="metric", job_id=job_id))

    def _metrics_rows(
        self, name: str, table: _Table, file_job: str | None, tally: _FileTally
    ) -> pa.Table | pd.DataFrame | None:
        """One batch's valid rows as job_id + key columns + metric columns (an Arrow table; long form:
        a frame of metric and value columns, pivoted later); bad rows are tallied per job."""
        rows = table.rows
        columns = set(table.table.column_names)
        long_form = set(LONG_FORM_COLUMNS) <= columns
        first_batch = tally.header is None
        if first_batch:
            tally.header = list(table.header)
            tally.long_form = long_form
        n = table.table.num_rows

        from_csv = name.endswith(".csv")

        def column(column_name: str) -> pa.ChunkedArray:
            values = table.table.column(column_name)
            if from_csv and column_name in GUARDED_TEXT_COLUMNS:
                values = unguarded_column(values)
            return values

        # Which job each row belongs to.
        if file_job is not None:
            ids = _Text.constant(file_job, n)
            if "job_id" in columns and n:
                given = _string_values(column("job_id"))
                mismatch = (given != file_job) & (given != "")
                if mismatch.any() and file_job not in self.rejected:
                    first = int(np.argmax(mismatch))
                    self.reject(
                        file_job,
                        RecordError(
                            name,
                            f"job_id {quoted(given[first])} does not match the file name (expected {quoted(file_job)})",
                            row=int(rows[first]),
                            field="job_id",
                            job_id=file_job,
                        ),
                    )
        elif "job_id" in columns:
            ids = _Text.of(column("job_id"))
        else:
            raise ArchiveError.of(
                name,
                "required column is missing: a shared metrics file must say which job each row is for",
                field="job_id",
            )
        keep = self._known_job_rows(ids, rows, tally)
        file_jobs = ids.uniques_of(keep)
        tally.file_jobs |= file_jobs

        required = ["timestamp"] + ([] if long_form else ["gpu_util"])
        missing = [column for column in required if column not in columns]
        if missing:
            tally.missing = missing[0]
            tally.stop = file_job is not None  # a shared file is read on, to learn every job it names
            return None

        timestamps, bad = parse_timestamps(column("timestamp"))
        self._reject_rows("timestamp", bad & keep, ids, rows, column("timestamp"), timestamp_message, tally)

        if "host" in columns:
            host = _trimmed_text(_arrow(column("host")))
            too_long = pc.greater(pc.utf8_length(host), MAX_HOST_CHARS).fill_null(False).to_numpy(zero_copy_only=False)
            self._reject_rows("host", too_long & keep, ids, rows, host, lambda name: host_length_text(len(name)), tally)
        else:
            host = pa.array(np.full(n, "", dtype=object))
        if "gpu" in columns:
            gpu, bad = _parse_gpu(column("gpu"))
            self._reject_rows("gpu", bad & keep, ids, rows, column("gpu"), _gpu_message, tally)
        else:
            gpu = pd.array(np.zeros(n, dtype="int16"), dtype="Int16")  # no gpu column: one job-level device, GPU 0

        if long_form:
            keys = {"job_id": ids.series(), "timestamp": timestamps, "host": host.to_pandas(), "gpu": gpu}
            out = self._long_values(name, column, pd.DataFrame(keys), keep, ids, rows, tally)
            keep = out.pop("_keep").to_numpy(dtype=bool)
        else:
            unknown = [c for c in table.table.column_names if c not in METRICS and c not in METRIC_KEY_COLUMNS]
            if unknown and first_batch:
                self.note(RecordError(name, "unknown metric columns ignored", field=", ".join(map(named, unknown))))
            metrics = {}
            for metric in (m for m in METRICS if m in columns):
                checked = _metric_in_range(column(metric), metric)
                if checked is None:  # some cell needs a message: check them one by one
                    values, bad, describe = _metric_values(column(metric), metric)
                    self._reject_rows(metric, bad & keep, ids, rows, column(metric), describe, tally)
                    checked = pa.array(values.astype("float32"))  # what the series stores
                metrics[metric] = checked
            # Straight to Arrow, which is what the spill writes: a pandas frame in between would
            # copy every column into one block and back out again.
            keys = {"job_id": ids.arrow(), "timestamp": pa.array(timestamps), "host": host, "gpu": pa.array(gpu)}
            out = pa.table(keys | metrics)

        bad_jobs = set(self.rejected) | {job_id for job_id, _ in tally.bad}
        if bad_jobs:
            keep = keep & ~ids.isin(bad_jobs)
        if isinstance(out, pa.Table):
            return out if keep.all() else out.filter(pa.array(keep))
        return out[keep]

    def _long_values(self, name, column, out, keep, ids: _Text, rows, tally) -> pd.DataFrame:
        metric = _string_values(column("metric"))
        known = pd.Series(metric).isin(list(METRICS)).to_numpy()
        unknown = sorted(set(pd.unique(metric[keep & ~known])) - tally.unknown_metrics)
        if unknown:
            tally.unknown_metrics |= set(unknown)
            self.note(
                RecordError(name, "unknown metric names ignored", field="metric: " + ", ".join(map(named, unknown)))
            )
        keep = keep & known
        values, bad = _numeric(column("value"))
        for name_of_metric in pd.unique(metric[keep]):
            rows_of_metric = metric == name_of_metric
            checked, bad_of_metric, describe = _checked_metric(values, bad, name_of_metric)
            self._reject_rows(
                "value", bad_of_metric & rows_of_metric & keep, ids, rows, column("value"), describe, tally
            )
            values = np.where(rows_of_metric, checked, values)
        tally.util_jobs |= ids.uniques_of(keep & (metric == "gpu_util"))
        out["metric"] = metric
        out["value"] = values
        out["_keep"] = keep
        return out

    def _pivot_long(self, out: pd.DataFrame) -> pd.DataFrame:
        """Long-form rows (one file's, for one bucket of jobs) in the wide form."""
        keys = ["job_id", "timestamp", "host", "gpu", "metric"]
        duplicated = out.duplicated(subset=keys, keep="first").to_numpy()
        self.duplicate_samples += int(duplicated.sum())
        out = out[~duplicated].copy()
        out["gpu"] = out["gpu"].fillna(-1).astype("int16")  # pivot cannot index on missing values
        wide = out.pivot(index=keys[:-1], columns="metric", values="value").reset_index()
        wide.columns.name = None
        wide["gpu"] = wide["gpu"].astype("Int16").mask(wide["gpu"] == -1)
        return wide

    def _known_job_rows(self, ids: _Text, rows: np.ndarray, tally: _FileTally) -> np.ndarray:
        """Mask of rows whose job is in the jobs file; unknown or empty job ids are tallied for one note each."""
        known = ids.isin(self.job_ids)
        if known.all():
            return known
        job_ids = ids.values
        unknown = pd.DataFrame({"job_id": job_ids[~known], "row": rows[~known]})
        counts = unknown["job_id"].value_counts(sort=False)
        for job_id, row in unknown.drop_duplicates("job_id").itertuples(index=False):
            first, count = tally.unknown.get(job_id, (int(row), 0))
            tally.unknown[job_id] = (first, count + int(counts[job_id]))
        return known

    def _reject_rows(self, field_name, bad, ids: _Text, rows, cells, describe, tally: _FileTally) -> None:
        """Tally each job's bad rows: its first bad row and cell, and how many more there are."""
        if not bad.any():
            return
        job_ids = ids.values
        positions = np.flatnonzero(bad)
        found = pd.DataFrame({"job_id": job_ids[positions], "position": positions})
        counts = found["job_id"].value_counts(sort=False)
        firsts = found.drop_duplicates("job_id")
        values = _cell_values(_arrow(cells).take(pa.array(firsts["position"].to_numpy())))
        for job_id, position, value in zip(firsts["job_id"], firsts["position"], values, strict=True):
            key = (job_id, field_name)
            if key in tally.bad:
                row, message, count = tally.bad[key]
                tally.bad[key] = (row, message, count + int(counts[job_id]))
            else:
                tally.bad[key] = (int(rows[position]), describe(value), int(counts[job_id]))

    # -- artifacts -----------------------------------------------------------------------------
    def _parse_artifacts(self, names: list[str], accepted: dict[str, JobRecord]) -> None:
        """Copy accepted jobs' artifacts (up to the size limit) into a spill file in the work folder."""
        unknown: dict[tuple[str, str], list[str]] = {}
        spill = self._artifact_spill = open(os.path.join(self.work, "artifacts.spill"), "w+b")  # noqa: SIM115 (closed by close())
        names = [name for name in names if name.partition("/")[0] in ARTIFACT_FOLDERS]
        last_progress = time.monotonic()
        for done, name in enumerate(names):
            now = time.monotonic()
            if now - last_progress >= PROGRESS_EVERY_S:  # how far, for the progress page and bar
                last_progress = now
                self.progress(f"reading logs, scripts and traces: {done:,} of {len(names):,} files")
            folder, _, rest = name.partition("/")
            kind = ARTIFACT_FOLDERS[folder]
            if not rest:
                continue
            job_id, _, path = rest.partition("/")
            if not path:
                self.note(RecordError(name, f"ignored: files in {folder}/ belong in {folder}/<job_id>/<file>"))
                continue
            if job_id not in self.job_ids:
                unknown.setdefault((folder, job_id), []).append(name)
                continue
            if job_id not in accepted:
                continue
            limit = _format_bytes(self.artifact_max_bytes)
            if kind == "log":  # its end says why the job ended: the head and the tail, the middle counted
                with self.reader.open(name) as stream:
                    kept = HeadTail(self.artifact_max_bytes).feed_all(iter(lambda: stream.read(1 << 20), b""))
                content, truncated = kept.content(), kept.truncated
                if truncated:
                    half = format_bytes(kept.head_limit)
                    self.note(
                        RecordError(
                            name,
                            f"larger than {limit} ({format_bytes(kept.total_bytes)}); its first and last {half} "
                            "were kept, a marked line in place of the middle",
                            job_id=job_id,
                        )
                    )
            else:
                content = self.reader.read(name, max_bytes=self.artifact_max_bytes + 1)
                truncated = len(content) > self.artifact_max_bytes
                if truncated:
                    content = content[: self.artifact_max_bytes]
                    message = f"larger than {limit}; only the first {limit} were kept"
                    self.note(RecordError(name, message, job_id=job_id))
            offset = spill.seek(0, os.SEEK_END)
            spill.write(content)
            self._artifacts.setdefault(job_id, []).append((kind, path, offset, len(content), truncated))
            del content
        for (folder, job_id), files in unknown.items():
            count = "1 file was" if len(files) == 1 else f"{len(files)} files were"
            message = f"job {quoted(job_id)} is not in {self.jobs_file}; {count} ignored"
            self.note(RecordError(f"{folder}/{job_id}/", message, field="job_id", job_id=job_id))

    # -- reading data files --------------------------------------------------------------------
    def _decode(self, name: str) -> str:
        data = self.reader.read(name)
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise ArchiveError.of(
                name, f"not UTF-8 text: invalid byte 0x{data[exc.start]:02x} on line {line} (save the file as UTF-8)"
            ) from exc

    def _iter_csv(self, name: str, tally: _FileTally | None = None) -> Iterator[_Table]:
        """The file in batches, every column as text; rows with the wrong number of fields are skipped and tallied.

        The bytes pass a text check first (no NUL bytes, valid UTF-8, not another file type with a
        .csv name), so a binary file is named for what it is instead of failing somewhere in Arrow.
        """
        ragged: list[tuple[int | None, int, int, str]] = []

        def on_invalid_row(row) -> str:
            ragged.append((row.number, row.expected_columns, row.actual_columns, row.text))
            return "skip"

        stream = io.BufferedReader(_TextGuard(self.reader.open(name)), buffer_size=1 << 20)
        try:
            start = stream.peek(1 << 20)
            header_line = start.split(b"\n", 1)[0]
            if not header_line.strip(b"\r\n\t \xef\xbb\xbf"):
                raise _Unreadable("cannot be read as CSV: the file is empty or its first line (the header) is blank")
            try:
                header = pa_csv.read_csv(io.BytesIO(header_line + b"\n")).schema.names
            except (pa.ArrowException, ValueError) as exc:
                raise _Unreadable(f"cannot be read as CSV: {library_error(exc)}") from exc
            _check_header(header)
            clean = [c.strip() for c in header]
            try:
                reader = pa_csv.open_csv(
                    stream,
                    read_options=pa_csv.ReadOptions(use_threads=False, block_size=CSV_BLOCK_BYTES),
                    parse_options=pa_csv.ParseOptions(invalid_row_handler=on_invalid_row),
                    convert_options=pa_csv.ConvertOptions(column_types=dict.fromkeys(header, pa.string())),
                )
            except (pa.ArrowException, ValueError) as exc:
                raise _Unreadable(f"cannot be read as CSV: {library_error(exc)}") from exc
            next_row = 1  # data rows count from 1 after the header
            skipped: list[int] = []
            yielded = False
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                except (pa.ArrowException, ValueError) as exc:
                    raise _Unreadable(f"cannot be read as CSV: {library_error(exc)}") from exc
                # Arrow numbers rows from 1 at the header; data rows count from 1 after it.
                for number, expected, actual, text in ragged:
                    row = None if number is None else number - 1
                    if row is not None:
                        skipped.append(row)
                    if tally is not None:
                        tally.ragged.append((row, expected, actual, text))
                    else:
                        self._job_ragged.append((row, expected, actual, text))
                ragged.clear()
                rows, next_row, skipped = _take_rows(batch.num_rows, next_row, skipped)
                table = pa.Table.from_batches([batch]).rename_columns(clean)
                yielded = True
                yield _Table(table=table, rows=rows, header=clean, ragged=[])
            for number, expected, actual, text in ragged:  # rows skipped after the last batch
                row = None if number is None else number - 1
                target = tally.ragged if tally is not None else self._job_ragged
                target.append((row, expected, actual, text))
            if not yielded:
                # A header and no rows: still one (empty) batch, so the columns are checked.
                empty = pa.table({c: pa.array([], pa.string()) for c in clean})
                yield _Table(table=empty, rows=np.arange(1, 1), header=clean, ragged=[])
        finally:
            stream.close()

    def _iter_parquet(self, name: str, tally: _FileTally | None = None) -> Iterator[_Table]:
        """The file in batches of rows. It is first copied (counted, like every read) to the work folder,
        because Parquet keeps its index at the end and a compressed member cannot seek cheaply."""
        local = os.path.join(self.work, f"parquet-{_next_id()}")
        with self.reader.open(name) as source, open(local, "wb") as target:
            head = source.read(4)
            if head != b"PAR1":
                raise _Unreadable(_not_parquet(head + source.peek(64)[:60]))
            target.write(head)
            shutil.copyfileobj(source, target, 1 << 20)
        try:
            try:
                parquet = pq.ParquetFile(local)
                header = [str(c) for c in parquet.schema_arrow.names]
            except (pa.ArrowException, ValueError, OSError) as exc:
                raise _Unreadable(
                    f"cannot be read as Parquet; the file is truncated or corrupt ({library_error(exc)})"
                ) from exc
            _check_header(header)
            _check_parquet_types(parquet.schema_arrow)
            if tally is not None:
                tally.file_rows = parquet.metadata.num_rows
            clean = [c.strip() for c in header]
            first = 1
            # The next batch is read (decompressed and decoded, without the GIL) while this one is checked.
            batches = _ReadAhead(_parquet_batches(parquet))
            try:
                for batch in batches:
                    table = _checked_columns(pa.Table.from_batches([batch]).rename_columns(clean), first)
                    yield _Table(table=table, rows=np.arange(first, first + table.num_rows), header=clean, ragged=[])
                    first += table.num_rows
            finally:
                batches.close()  # before the file goes
            if first == 1:  # no rows: still one (empty) batch, so the columns are checked
                empty = _checked_columns(parquet.schema_arrow.empty_table().rename_columns(clean), 1)
                yield _Table(table=empty, rows=np.arange(1, 1), header=clean, ragged=[])
        finally:
            os.unlink(local)


# ---------------------------------------------------------------------------------------------
# Streaming helpers
# ---------------------------------------------------------------------------------------------
def _parquet_batches(parquet: pq.ParquetFile) -> Iterator[pa.RecordBatch]:
    """The file's rows in batches of at most BATCH_ROWS, one row group at a time.

    One reader over all row groups buffers ahead as the file grows (400 MiB for the 10,000-job
    benchmark archive, 160 MiB for a quarter of it); a reader per row group holds one row group at a
    time, so memory stays what the largest row group needs, however large the file.
    """
    for group in range(parquet.num_row_groups):
        batches = parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group])
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except (pa.ArrowException, ValueError, OSError) as exc:
                raise _Unreadable(
                    f"cannot be read as Parquet; the file is truncated or corrupt ({library_error(exc)})"
                ) from exc
            yield batch


_ids = itertools.count(1)


def _next_id() -> int:
    """A fresh number for a file in the work folder: what is stored never carries an archive's name."""
    return next(_ids)


@dataclass
class _FileTally:
    """What the batches of one metrics file found, turned into errors once the file ends."""

    header: list[str] | None = None
    long_form: bool = False
    stop: bool = False  # nothing more of this file can be used
    missing: str = ""  # a required column the file lacks
    unknown: dict[str, tuple[int, int]] = field(default_factory=dict)  # job id -> (first row, rows)
    bad: dict[tuple[str, str], tuple[int, str, int]] = field(default_factory=dict)  # (job, field) -> (row, msg, n)
    ragged: list[tuple[int | None, int, int, str]] = field(default_factory=list)
    file_jobs: set[str] = field(default_factory=set)
    util_jobs: set[str] = field(default_factory=set)
    unknown_metrics: set[str] = field(default_factory=set)
    file_rows: int | None = None  # the rows a Parquet file says it holds (for progress only)


def _take_rows(count: int, next_row: int, skipped: list[int]) -> tuple[np.ndarray, int, list[int]]:
    """Data row numbers of the next `count` kept rows, given the row numbers the CSV reader skipped."""
    candidates = np.arange(next_row, next_row + count + len(skipped))
    if skipped:
        candidates = candidates[~np.isin(candidates, np.asarray(skipped))]
    rows = candidates[:count]
    following = int(rows[-1]) + 1 if count else next_row
    return rows, following, [row for row in skipped if row >= following]


def _concat_tables(tables: list[_Table]) -> _Table:
    if len(tables) == 1:
        return tables[0]
    return _Table(
        table=pa.concat_tables([t.table for t in tables]),
        rows=np.concatenate([t.rows for t in tables]),
        header=tables[0].header,
        ragged=[],
    )


_MAGIC = (
    (b"PK\x03\x04", "a ZIP archive"),
    (b"PAR1", "a Parquet file"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ", "xz-compressed data"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
)


def _sniff(head: bytes) -> str | None:
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    lowered = head.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html")):
        return "an HTML page"
    return None


def _not_parquet(head: bytes) -> str:
    kind = _sniff(head)
    if kind is None:
        try:
            head.decode("utf-8")
            kind = "text (CSV?)" if head.strip() else None
        except UnicodeDecodeError:
            kind = None
    if kind is None:
        return "is not a Parquet file (it does not start with 'PAR1'); it is empty, truncated or of another type"
    return f"is {kind}, not a Parquet file (wrong extension?)"


class _TextGuard(io.RawIOBase):
    """Passes a text file's bytes through, refusing NUL bytes, invalid UTF-8 and other file types by name."""

    def __init__(self, raw: io.BufferedIOBase):
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._line = 1
        self._first = True

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._raw.read(len(buffer))
        if self._first and data:
            self._first = False
            kind = _sniff(data[:64])
            if kind is not None:
                raise _Unreadable(f"is {kind}, not CSV text (wrong extension?)")
        nul = data.find(b"\x00")
        if nul >= 0:
            line = self._line + data.count(b"\n", 0, nul)
            raise _Unreadable(f"contains a NUL byte on line {line}; a CSV file must be text, not binary data")
        try:
            self._decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            position = max(0, min(exc.start, len(data) - 1))
            line = self._line + data.count(b"\n", 0, position)
            byte = exc.object[exc.start] if exc.start < len(exc.object) else 0
            raise _Unreadable(
                f"not UTF-8 text: invalid byte 0x{byte:02x} on line {line} (save the file as UTF-8)"
            ) from None
        self._line += data.count(b"\n")
        n = len(data)
        buffer[:n] = data
        return n

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _ReadAhead:
    """A generator's items, each next one produced on a thread of its own while the caller handles
    the one before: a spill bucket is read back and normalised while the jobs of the previous one
    are stored, a Parquet batch read while the one before is checked (Arrow's reads, LZ4 and numpy's
    sorts release the GIL). One item at most is held ahead, so memory grows by one item, not with
    the archive. What the generator raises is raised to the caller in its place. `close()` waits
    for the item in flight, then closes it."""

    _END = object()

    def __init__(self, items: Iterator):
        self._items = items
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead")
        self._next: Future | None = self._executor.submit(next, items, self._END)

    def __iter__(self) -> _ReadAhead:
        return self

    def __next__(self):
        if self._next is None:
            raise StopIteration
        try:
            item = self._next.result()
        except BaseException:
            self.close()
            raise
        if item is self._END:
            self.close()
            raise StopIteration
        self._next = self._executor.submit(next, self._items, self._END)
        return item

    def close(self) -> None:
        if self._next is None:
            return
        self._next.cancel()
        self._next = None
        self._executor.shutdown(wait=True)
        self._items.close()


class _Spill:
    """Metric rows on disk, in buckets of jobs, so only one bucket is ever assembled in memory.

    Jobs are split into contiguous ranges of their sorted ids; each batch of valid rows is written
    as one Arrow IPC file per bucket it touches, tagged with its file's priority (the order in
    which duplicates are resolved) and whether it is long form (pivoted per bucket, once all its
    rows are together).
    """

    def __init__(self, work: str, job_ids: list[str], estimated_rows: int, bucket_rows: int):
        self.folder = os.path.join(work, "spill")
        os.makedirs(self.folder, exist_ok=True)
        count = max(1, min(len(job_ids), -(-estimated_rows // max(1, bucket_rows))))
        self.bucket_of = {job_id: index * count // max(1, len(job_ids)) for index, job_id in enumerate(job_ids)}
        self.count = count
        self.parts: list[list[tuple[int, int, bool, str]]] = [[] for _ in range(count)]
        self._sequence = 0
        # Batches are written on a thread of their own while the next one is checked (LZ4 and the
        # file writes release the GIL); one at most waits, so memory holds two batches, not more.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spill")
        self._pending: Future | None = None

    def add(self, rows: pa.Table | pd.DataFrame, priority: int, *, long_form: bool) -> None:
        """Spill a batch of valid rows (written on the spill's thread; a failed write raises here or in `flush`)."""
        self.flush()
        self._pending = self._writer.submit(self._write, rows, priority, long_form)

    def flush(self) -> None:
        """Wait for the batch being written; what writing it raised is raised here."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        self._writer.shutdown(wait=True)

    def _write(self, rows: pa.Table | pd.DataFrame, priority: int, long_form: bool) -> None:
        if isinstance(rows, pd.DataFrame):  # long form
            for column in rows.columns:
                if column in METRICS or column == "value":
                    rows[column] = rows[column].astype("float32")
            rows = pa.Table.from_pandas(rows, preserve_index=False)
        # Looked up once per distinct job, not once per row.
        encoded = pc.dictionary_encode(rows["job_id"]).combine_chunks()
        bucket_of_job = np.array([self.bucket_of[job_id] for job_id in encoded.dictionary.to_pylist()], dtype="int64")
        buckets = bucket_of_job[encoded.indices.to_numpy(zero_copy_only=False)]
        present = np.unique(bucket_of_job)  # of the distinct jobs: the same buckets, without sorting every row
        for bucket in present:
            table = rows.filter(pa.array(buckets == bucket)) if len(present) > 1 else rows
            self._sequence += 1
            path = os.path.join(self.folder, f"part-{self._sequence}.arrow")
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema, options=SPILL_IPC) as writer:
                writer.write_table(table)
            self.parts[int(bucket)].append((priority, self._sequence, long_form, path))

    def buckets(
        self, accepted: dict[str, JobRecord], pivot: Callable[[pd.DataFrame], pd.DataFrame]
    ) -> Iterator[tuple[list[str], pd.DataFrame | None]]:
        """Each bucket's accepted jobs and their rows (None without any); call after `flush`."""
        members: list[list[str]] = [[] for _ in range(self.count)]
        for job_id in sorted(accepted):
            members[self.bucket_of[job_id]].append(job_id)
        wanted = pa.array(list(accepted), type=pa.string())
        for bucket in range(self.count):
            parts = sorted(self.parts[bucket])
            self.parts[bucket] = []
            frames = []
            for (_priority, long_form), group in itertools.groupby(parts, key=lambda p: (p[0], p[2])):
                paths = [p[3] for p in group]
                tables = []
                for path in paths:
                    with pa.memory_map(path) as source:
                        tables.append(pa.ipc.open_file(source).read_all())
                    os.unlink(path)
                table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
                del tables
                accepted_rows = pc.is_in(table["job_id"], value_set=wanted)
                if not pc.all(accepted_rows).as_py():  # a copy only when some jobs were rejected
                    table = table.filter(accepted_rows)
                frame = table.to_pandas()
                del table
                if long_form and len(frame):
                    frame = pivot(frame)
                if len(frame):
                    frames.append(frame)
            if not members[bucket]:
                continue
            if not frames:
                yield members[bucket], None
            else:
                yield members[bucket], pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------
def json_job_row(record: dict) -> dict:
    """A job row given as a JSON object (a jobs.jsonl line, a generic REST job object) as `job_from_row`
    reads it: keys and text values trimmed, a numeric job id as its text (Slurm ids are numbers)."""
    record = {str(key).strip(): (value.strip() if isinstance(value, str) else value) for key, value in record.items()}
    if isinstance(record.get("job_id"), int) and not isinstance(record.get("job_id"), bool):
        record["job_id"] = str(record["job_id"])  # Slurm ids are numbers; accept them as such
    return record


def job_from_row(record: dict, default_cluster: str) -> tuple[JobRecord | None, list[tuple[str, str]]]:
    """The job a row describes, or every (field, message) problem that rejects it: the per-job checks
    of an archive's job rows (required fields, counts, times, job type, labels, the job schema,
    `gpu_fields`, what the database cannot keep), which the generic REST connector's job objects
    keep to as well."""
    problems: list[tuple[str, str]] = []
    for name in JOB_REQUIRED:
        if name not in record:
            problems.append((name, "required field is missing"))
        elif _text(record[name]) == "":
            problems.append((name, "required value is empty"))

    def count(name: str, default):
        value = record.get(name)
        if value is None or _text(value) == "":
            return default
        number = _as_count(value)
        if number is None:
            problems.append((name, f"must be a whole number of 0 or more, such as 4 (got {cell_quoted(value)})"))
        return number

    def moment(name: str) -> datetime | None:
        value = record.get(name)
        if value is None or _text(value) == "":
            return None
        try:
            return parse_timestamp(value)
        except ValueError as exc:
            problems.append((name, str(exc)))
            return None

    gpu_count = count("gpu_count", None)
    gpu_share, gpu_unit, gpu_problems = gpu_fields(record)
    problems.extend(gpu_problems)
    node_count = count("node_count", 1)
    cpu_count = count("cpu_count", None)
    start, end, submit = moment("start_time"), moment("end_time"), moment("submit_time")
    if start is not None and end is not None and end < start:
        problems.append(("end_time", f"end_time {end.isoformat()} is before start_time {start.isoformat()}"))
    job_type = _text(record.get("job_type")).lower() or "batch"
    if job_type not in JOB_TYPES:
        problems.append(
            ("job_type", f"must be one of {', '.join(JOB_TYPES)} (got {cell_quoted(record.get('job_type'))})")
        )
    labels = record.get("labels")
    if labels is None or labels == "":
        labels = {}
    elif isinstance(labels, str):
        try:
            labels = loads_json(labels)
        except ValueError:
            labels = None
    if not isinstance(labels, dict):
        problems.append(
            ("labels", f'must be a JSON object, e.g. {{"project": "x"}} (got {cell_quoted(record.get("labels"))})')
        )

    reported = {name for name, _ in problems}
    for field_name, message in schema_problems("job.schema.json", record):
        if field_name.split(".")[0] not in reported:
            problems.append((field_name, message))
            reported.add(field_name)
    if problems:
        return None, problems
    job = JobRecord(
        external_id=_text(record["job_id"]),
        user=_text(record["user"]),
        team=_text(record["team"]),
        gpu_count=gpu_count,
        start_time=start,
        end_time=end,
        cluster=_text(record.get("cluster")) or default_cluster,
        name=_text(record.get("name")),
        gpu_model=_text(record.get("gpu_model")),
        gpu_share=gpu_share,
        gpu_unit=gpu_unit,
        node_count=node_count,
        cpu_count=cpu_count,
        state=_text(record.get("state")),
        job_type=job_type,
        command=_text(record.get("command")),
        queue=_text(record.get("queue")),
        submit_time=submit,
        labels=labels,
        raw=dict(record),
    )
    # What the database cannot keep (a NUL character a JSON line spelled as \u0000, a count beyond any
    # job), by the rule every source's jobs meet.
    problem = job.unstorable()
    return (None, [problem]) if problem is not None else (job, [])


def gpu_fields(record: dict) -> tuple[float, str, list[tuple[str, str]]]:
    """A job row's `gpu_share` (the share of a physical GPU each device is: a number, its decimal text
    or a fraction's text such as "1/7" for a MIG 1g slice; 1 when absent or empty) and `gpu_unit` (what
    a device is; "" when absent), with the (field, message) problems that reject the row: the rules of
    an archive's job rows, which the generic REST connector's job objects keep to as well."""
    values = {name: value.strip() if isinstance(value, str) else value for name in GPU_FIELDS
              if (value := record.get(name)) is not None}  # fmt: skip
    problems: list[tuple[str, str]] = []
    share = 1.0
    value = values.get("gpu_share")
    if value is not None and _text(value) != "":
        number = _as_share(value)
        if number is None:
            problems.append(("gpu_share", f"not a number or a fraction like 1/7: {cell_quoted(value)}"))
        elif not 0.0 < number <= 1.0:  # NaN fails this too
            problems.append(
                ("gpu_share", f"must be more than 0 and at most 1 ({SHARE_MEANING}), got {cell_quoted(_text(value))}")
            )
        else:
            share = number
    if values:
        for field_name, message in schema_problems("job.schema.json", values, GPU_FIELDS):
            if field_name not in {name for name, _ in problems}:
                problems.append((field_name, message))
    return share, _text(values.get("gpu_unit")), problems


def _text(value) -> str:
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else str(value)


def _differing_keys(record: dict, other: dict) -> list[str]:
    """The fields whose values differ between two rows of one job, in the first row's column order;
    a field one row leaves out and the other gives as null is the same (empty when every field agrees)."""
    keys = [*record, *(key for key in other if key not in record)]
    return [key for key in keys if record.get(key) != other.get(key)]


# How much of a conflict between two rows of one job its error spells out.
DIFFERENCES_NAMED = 6
DIFFERENCE_VALUE_CHARS = 40


def _differences(record: dict, other: dict, keys: list[str]) -> str:
    """Each differing field with both rows' values, e.g. "gpu_count '2' vs '4', end_time '…' vs '…'";
    at most DIFFERENCES_NAMED fields, each name and value cut to DIFFERENCE_VALUE_CHARS."""

    def shown(value) -> str:
        return "(none)" if value is None else shortened(repr(value), DIFFERENCE_VALUE_CHARS)

    said = [
        f"{shortened(key, DIFFERENCE_VALUE_CHARS)} {shown(record.get(key))} vs {shown(other.get(key))}"
        for key in keys[:DIFFERENCES_NAMED]
    ]
    rest = keys[DIFFERENCES_NAMED:]
    if rest:
        fields = "field" if len(rest) == 1 else "fields"
        said.append(f"and {len(rest)} more {fields} ({shortened(', '.join(rest), 4 * DIFFERENCE_VALUE_CHARS)})")
    return ", ".join(said)


def _short_names(error: RecordError) -> RecordError:
    """The error with a long member name in its file column (and a long job id, which a member's name may give:
    metrics/<job_id>.csv) cut to its first characters and its length, as the messages quote them (`named`): the
    error report, its page and its CSV never repeat a 5,000-character name whole."""
    return replace(error, file=named(error.file), job_id=named(error.job_id))


def _as_share(value) -> float | None:
    """A number, its decimal text or a fraction's text ("1/7") as a float; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:  # a JSON integer no float holds: out of range, as its text would be
            return math.inf if value > 0 else -math.inf
    text = str(value).strip()
    if not text.isascii():
        return None
    numerator, slash, denominator = text.partition("/")
    try:
        if slash:
            return float(Fraction(int(numerator), int(denominator)))
        return float(text)
    except (ValueError, ZeroDivisionError):
        return None


def _as_count(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        return int(value) if value.is_integer() and value >= 0 else None
    text = str(value).strip()
    return int(text) if text.isascii() and text.isdigit() else None


def _row_key(file: str, row: int | None) -> str:
    """The `rejected` key for a row whose job id cannot be read."""
    return f"<{file} row {row}>" if row is not None else f"<{file}>"


def _split_csv_line(text: str) -> list[str]:
    """The fields of one (ragged) CSV row, to find which job it belonged to."""
    try:
        return next(csv.reader([text]), [])
    except csv.Error:  # a field over the csv module's limit (128 KiB); quotes aside, commas still split
        return text.split(",")


def _check_header(header: list[str]) -> None:
    names = [c.strip() for c in header]
    duplicates = sorted({c for c in names if names.count(c) > 1})
    if duplicates:
        raise _Unreadable(f"column {cell_quoted(duplicates[0])} appears more than once in the header")


def _check_parquet_types(schema: pa.Schema) -> None:
    """A column the importer reads must hold one plain value a cell: nested values (lists, structs,
    maps) have no reading as a job id, a time or a measurement."""
    for column in schema:
        kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        name = column.name.strip()
        if name in READ_COLUMNS and pa.types.is_nested(kind):
            raise _Unreadable(
                f"column {cell_quoted(name)} holds {kind} values; expected one text, number or time a cell",
                field=named(name),
            )


def _cell_values(cells: pa.Array) -> list:
    """The cells as Python values for a message. A time a Parquet column can hold may lie beyond
    Python's datetime (the year 10,000 and later): such a cell is given as its raw count of units."""
    if not pa.types.is_temporal(cells.type):
        return cells.to_pylist()
    values = []
    for index in range(len(cells)):
        cell = cells.slice(index, 1)
        try:
            values.append(cell.to_pylist()[0])
        except (OverflowError, ValueError):
            raw = cell.cast(pa.int32() if pa.types.is_date32(cells.type) else pa.int64())[0].as_py()
            values.append(f"{raw} ({cells.type})")
    return values


def _checked_columns(table: pa.Table, first_row: int) -> pa.Table:
    """The columns the importer reads, with their text checked to be UTF-8, columns of bytes
    (Parquet byte arrays without the UTF-8 annotation, as some writers store text) read as text,
    and half-precision floats widened to float32 (few Arrow kernels take them). Parquet does not
    check that its text is UTF-8: a cell that is not makes the file unreadable, as in a CSV file,
    instead of failing whatever reads it later."""
    for index, name in enumerate(table.column_names):
        column = table.column(index)
        kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        if name in READ_COLUMNS and pa.types.is_float16(kind):
            table = table.set_column(index, name, pc.cast(_arrow(column), pa.float32()))
            continue
        is_bytes = pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind)
        if name not in READ_COLUMNS or not (is_bytes or _is_text(kind)):
            continue
        try:
            if is_bytes:
                table = table.set_column(index, name, pc.cast(_arrow(column), pa.string()))
            else:
                for chunk in column.chunks:  # UTF-8 included; a few ms a million cells
                    (chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk).validate(full=True)
        except pa.ArrowInvalid:
            plain = _arrow(column)
            cells = plain.cast(pa.binary()).to_pylist() if not is_bytes else plain.to_pylist()
            row, cell, error = next(
                (row, data, bad) for row, data in enumerate(cells) if data is not None and (bad := _utf8_error(data))
            )
            raise _Unreadable(
                f"column {cell_quoted(name)}, row {first_row + row}: not UTF-8 text "
                f"(invalid byte 0x{cell[error.start]:02x}; write the column as text, in UTF-8)",
                row=first_row + row,
                field=named(name),
            ) from None
    return table


def _utf8_error(data: bytes) -> UnicodeDecodeError | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc
    return None


def _data_rows(count: int, skipped: list[int]) -> np.ndarray:
    """1-based data row numbers of the rows kept when the rows in `skipped` were left out."""
    if not skipped:
        return np.arange(1, count + 1)
    all_rows = np.arange(1, count + len(skipped) + 1)
    return np.setdiff1d(all_rows, np.asarray(skipped), assume_unique=True)[:count]


def _arrow(column) -> pa.Array:
    """One contiguous, plain (not dictionary-encoded) Arrow array for a column or pandas Series."""
    if isinstance(column, pd.Series):
        try:
            column = pa.array(column, from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError):  # mixed Python types in an object column
            column = pa.array(column.astype("string"), from_pandas=True)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    return column


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _is_number(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)


def _trimmed_text(values: pa.Array) -> pa.Array:
    """Each cell as trimmed text, "" for missing cells."""
    if not _is_text(values.type):
        values = pc.cast(values, pa.string())
    return pc.fill_null(pc.utf8_trim_whitespace(values), "")


def _matches(text: pa.Array, pattern: str) -> np.ndarray:
    return pc.match_substring_regex(text, f"^(?:{pattern})$").to_numpy(zero_copy_only=False)


def _to_float(text: pa.Array, valid: np.ndarray) -> np.ndarray:
    """float64 of the cells where `valid` (they match a number pattern), NaN elsewhere."""
    if not valid.any():
        return np.full(len(text), np.nan)
    chosen = pc.if_else(pa.array(valid), text, pa.scalar(None, text.type))
    try:
        return pc.cast(chosen, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:  # e.g. an exponent beyond float64: let pandas make it inf
        return pd.to_numeric(pd.Series(chosen.to_pylist(), dtype=object), errors="coerce").to_numpy(dtype="float64")


def _string_values(column) -> np.ndarray:
    """Trimmed text of each cell as an object array, "" for missing cells."""
    return _Text.of(column).values


class _Text:
    """A text column (trimmed, "" for missing cells) in the forms a batch needs: the cells as an
    object array, as codes into the distinct values (tests on ids run once per distinct value, not
    once per row), as Arrow text (what the spill writes) and as a pandas column (long form)."""

    def __init__(self, codes: np.ndarray, uniques: np.ndarray, arrow: pa.Array | None):
        self.codes, self.uniques, self._arrow = codes, uniques, arrow

    @cached_property
    def values(self) -> np.ndarray:
        """The cells as an object array: made only when a batch has something to report by row."""
        return self.uniques[self.codes]

    @classmethod
    def of(cls, column) -> _Text:
        text = _trimmed_text(_arrow(column))
        encoded = pc.dictionary_encode(text)
        uniques = np.array(encoded.dictionary.to_pylist(), dtype=object)
        return cls(encoded.indices.to_numpy(zero_copy_only=False), uniques, text)

    @classmethod
    def constant(cls, value: str, length: int) -> _Text:
        return cls(np.zeros(length, dtype=np.int64), np.array([value], dtype=object), None)

    def isin(self, wanted) -> np.ndarray:
        """Mask of the cells whose value is in the set `wanted`."""
        return np.fromiter((value in wanted for value in self.uniques), bool, len(self.uniques))[self.codes]

    def uniques_of(self, mask: np.ndarray) -> set[str]:
        return set(self.uniques[np.unique(self.codes[mask])])

    def series(self) -> pd.Series | np.ndarray:
        return self._arrow.to_pandas() if self._arrow is not None else self.values

    def arrow(self) -> pa.Array:
        if self._arrow is not None:
            return self._arrow
        return pa.array(self.uniques, type=pa.string()).take(pa.array(self.codes))


_NUMBER_PATTERN = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"


def _numeric(column) -> tuple[np.ndarray, np.ndarray]:
    """(float64 values with NaN for missing cells, mask of cells that are neither finite numbers nor missing)."""
    values = _arrow(column)
    kind = values.type
    if pa.types.is_null(kind):
        return np.full(len(values), np.nan), np.zeros(len(values), dtype=bool)
    if _is_number(kind):
        # Unchecked: an integer beyond 2**53 becomes the nearest float, as in a CSV file.
        numbers = pc.cast(values, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
        bad = np.isinf(numbers)
    elif _is_text(kind):
        text = _trimmed_text(values)
        missing = pc.is_in(pc.utf8_lower(text), value_set=pa.array(MISSING_TOKENS)).to_numpy(zero_copy_only=False)
        valid = _matches(text, _NUMBER_PATTERN)
        numbers = _to_float(text, valid)
        bad = ~(valid | missing) | np.isinf(numbers)
    else:  # booleans, times, nested values: not numbers
        numbers = np.full(len(values), np.nan)
        bad = values.is_valid().to_numpy(zero_copy_only=False)
    return np.where(bad, np.nan, numbers), bad


def _all_within(column: pa.ChunkedArray, low: float, high: float) -> bool:
    """Whether every value of a numeric column is missing or a finite number in [low, high], from
    one pass for its smallest and largest: the fast paths that skip the cell-by-cell checks (which
    pass over a column half a dozen times and copy it as often) when no cell needs a message."""
    bounds = pc.min_max(column)  # of the values that are neither missing nor NaN; NaN when all are NaN
    smallest, largest = bounds["min"].as_py(), bounds["max"].as_py()
    if smallest is None:  # every value missing
        return True
    return low <= smallest <= largest <= high and math.isfinite(smallest) and math.isfinite(largest)


def _metric_in_range(column: pa.ChunkedArray, metric: str) -> pa.ChunkedArray | None:
    """A column of floats none of which needs a message (`_all_within` the metric's bounds), as the
    float32 column the series stores; None when one does."""
    if not pa.types.is_floating(column.type) or not _all_within(column, *METRIC_BOUNDS[metric]):
        return None
    if column.type != pa.float32():
        column = pc.cast(column, pa.float32(), safe=False)  # as numpy's astype: beyond float32 is inf
    if column.null_count:
        column = pc.fill_null(column, pa.scalar(np.nan, pa.float32()))  # the series' missing value is NaN
    return column


def _metric_values(column, metric: str):
    values, bad = _numeric(column)
    return _checked_metric(values, bad, metric)


def _checked_metric(values: np.ndarray, bad: np.ndarray, metric: str):
    """(values with NaN where invalid, invalid mask, message for an invalid cell) for one metric's cells."""
    low, high = METRIC_BOUNDS[metric]
    out_of_range = ~bad & ~np.isnan(values) & ((values < low) | (values > high))
    unit = METRICS[metric]

    def describe(value) -> str:
        number = _maybe_float(value)
        if number is not None and np.isfinite(number):
            hint = "; this looks like percent" if unit == "ratio" and 1 < number <= 100 else ""
            return f"{metric} value {cell_quoted(value)} is out of range ({range_text(low, high, unit)}{hint})"
        return f"non-numeric {metric} value {cell_quoted(value)}"

    return np.where(out_of_range, np.nan, values), bad | out_of_range, describe


def _parse_gpu(column: pa.ChunkedArray) -> tuple[pd.arrays.IntegerArray, np.ndarray]:
    if pa.types.is_integer(column.type) and _all_within(column, 0, MAX_GPU_INDEX):  # no cell to check
        indexes = pc.cast(column, pa.int16())
        values = np.asarray(pc.fill_null(indexes, 0).to_numpy(zero_copy_only=False), dtype="int16")
        missing = np.asarray(pc.is_null(indexes).to_numpy(zero_copy_only=False), dtype=bool)
        return pd.arrays.IntegerArray(values, missing), np.zeros(len(values), dtype=bool)
    values, bad = _numeric(column)
    present = ~np.isnan(values)
    bad = bad | present & ((values < 0) | (values > MAX_GPU_INDEX) | (np.mod(np.where(present, values, 0), 1) != 0))
    gpu = pd.array(np.where(present & ~bad, values, np.nan), dtype="Float64").astype("Int16")
    return gpu, bad


def _gpu_message(value) -> str:
    return f"GPU index must be a non-negative integer or empty for host rows (got {cell_quoted(value)})"


def _maybe_float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _format_bytes(size: int) -> str:
    if size % 2**20 == 0:
        return f"{size // 2**20} MiB"
    if size % 2**10 == 0:
        return f"{size // 2**10} KiB"
    return f"{size} bytes"
