"""CSV exports that are safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import re
from collections.abc import Collection, Iterable, Iterator
from datetime import datetime
from itertools import chain

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from fleet.canonical import SERIES_KEYS
from fleet.series import column_without_values

# Spreadsheets run a cell that starts with one of these as a formula (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


# A plain number (-0.25, +3, -1.5e-3) is read as that number, never run: a negative kappa or interval
# bound must stay a number for a script's float() and a spreadsheet's sums.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _needs_guard(text: str) -> bool:
    # A text that already starts with guard quotes before a formula gets one more, so that
    # spreadsheet_unsafe can undo exactly one and every value survives an export/import round trip.
    if text.startswith(FORMULA_STARTS):
        return not _PLAIN_NUMBER.fullmatch(text)
    return text.startswith("'") and _needs_guard(text[1:])


def spreadsheet_safe(value) -> str:
    """The cell as text, prefixed with a quote when a spreadsheet would run it as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if _needs_guard(text) else text


def spreadsheet_unsafe(text: str) -> str:
    """The value `spreadsheet_safe` was given: for importing our own CSV exports back."""
    return text[1:] if text.startswith("'") and _needs_guard(text[1:]) else text


class _Echo:
    """A file-like object whose write() returns the line, for streaming csv.writer output."""

    def write(self, value: str) -> str:
        return value


def stream_csv_rows(header: list[str], rows: Iterable[Iterable]) -> Iterable[str]:
    """CSV lines (header first) with every cell made spreadsheet-safe, for a StreamingHttpResponse."""
    writer = csv.writer(_Echo())
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow([spreadsheet_safe(cell) for cell in row])


# `spreadsheet_safe` for a whole Arrow text column at once: the same cells get the same one quote.
_FORMULA_CELL = r"^('*[=+\-@\t\r])"  # any guard quotes, then one of FORMULA_STARTS
_GUARDED_CELL = r"^'('*[=+\-@\t\r])"  # a cell `spreadsheet_safe` guarded: its quote, then the rest


def unguarded_column(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """`spreadsheet_unsafe` for a whole Arrow text column: a CSV this module wrote reads back as the
    values it was given."""
    return pc.replace_substring_regex(column, pattern=_GUARDED_CELL, replacement=r"\1")


SERIES_CSV_BATCH_ROWS = 65_536


def series_csv_chunks(
    source,
    job_id: str,
    batch_rows: int = SERIES_CSV_BATCH_ROWS,
    *,
    metrics: Collection[str] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Iterator[bytes]:
    """A job's stored series (its zstd Parquet blob, a file or a buffer) as CSV in the archive's
    wide form (`job_id,timestamp,host,gpu,<metric>…`, docs/archive-format.md), so that the download
    imports again as `metrics/<job_id>.csv`. Read and written a batch of rows at a time, so a job of
    thousands of GPUs streams in bounded memory; metrics without a single value are left out (the
    blob's column statistics say which), timestamps are ISO 8601 UTC to the millisecond, and text
    cells are made spreadsheet-safe.

    Narrowed (the API's `?metrics=&start=&end=`): `metrics`, the metric columns to keep (the key columns
    always; one the series lacks is left out), and the rows from `start` (included) to `end` (left out),
    each batch filtered as it is read, so memory stays a batch's."""
    parquet = pq.ParquetFile(source)
    names = [
        name
        for name in parquet.schema_arrow.names
        if not column_without_values(parquet, name) and (metrics is None or name in SERIES_KEYS or name in metrics)
    ]
    job_cell = spreadsheet_safe(job_id)
    batches = parquet.iter_batches(batch_size=batch_rows, columns=names)
    tables = (pa.Table.from_batches([batch]) for batch in batches)
    if (start is not None or end is not None) and "timestamp" in names:
        tables = (table for table in (_between(table, start, end) for table in tables) if table.num_rows)
    first = next(tables, None)
    if first is None:  # no rows at all: the header alone
        first = parquet.schema_arrow.empty_table().select(names)
    header = True
    for table in chain([first], tables):
        if "timestamp" in names:
            stamps = pc.strftime(table["timestamp"], format="%Y-%m-%dT%H:%M:%SZ")
            table = table.set_column(names.index("timestamp"), "timestamp", stamps)
        if "host" in names:
            hosts = pc.replace_substring_regex(table["host"], pattern=_FORMULA_CELL, replacement=r"'\1")
            table = table.set_column(names.index("host"), "host", hosts)
        table = table.add_column(0, "job_id", pa.array([job_cell] * table.num_rows, pa.string()))
        out = pa.BufferOutputStream()
        pa_csv.write_csv(table, out, pa_csv.WriteOptions(include_header=header))
        header = False
        yield out.getvalue().to_pybytes()


def _between(table: pa.Table, start: datetime | None, end: datetime | None) -> pa.Table:
    """The rows of a series batch sampled from `start` (included) to `end` (left out)."""
    stamps = table["timestamp"]
    keep = None
    for bound, compare in ((start, pc.greater_equal), (end, pc.less)):
        if bound is not None:
            test = compare(stamps, pa.scalar(bound, type=stamps.type))
            keep = test if keep is None else pc.and_(keep, test)
    return table.filter(keep)
