"""CSV exports that are safe to open in a spreadsheet."""

from __future__ import annotations

import csv
from collections.abc import Iterable

# Spreadsheets run a cell that starts with one of these as a formula (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _needs_guard(text: str) -> bool:
    # A text that already starts with guard quotes before a formula gets one more, so that
    # spreadsheet_unsafe can undo exactly one and every value survives an export/import round trip.
    return text.startswith(FORMULA_STARTS) or (text.startswith("'") and _needs_guard(text[1:]))


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
