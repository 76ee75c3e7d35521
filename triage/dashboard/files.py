"""A window of lines of a job's log or script, for the file page: pure, over the file's bytes in chunks.

Lines are numbered as log events and script facts number them (split at "\\n" only), so a link to
`path:line` from an event or a finding lands on that line. A line is shown as a terminal last
showed it (`fleet.logevents.terminal_line`: the last carriage-return segment, no colours): a
progress bar that redrew itself 500 times on one line is one line here too, not 500. Memory stays
bounded whatever the file holds: past `max_chars` a line's bytes are counted, not kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from fleet.canonical import without_nul
from fleet.logcut import Gap
from fleet.logevents import terminal_line

PAGE_LINES = 1000  # lines a page shows
MAX_LINE_CHARS = 2000  # characters shown of one line; the rest is counted


@dataclass
class Line:
    number: int
    text: str
    more_bytes: int = 0  # bytes of the line past what is shown
    gap: bool = False  # the marker where a log over the size limit had its middle left out (`fleet.logcut`)


@dataclass
class TextWindow:
    first: int  # number of the first line asked for
    lines: list[Line] = field(default_factory=list)
    total_lines: int = 0

    resume: int | None = None  # after a gap on this page: the page that goes on from the line after it

    @property
    def last(self) -> int:
        return max((line.number for line in self.lines), default=self.first - 1)


def page_start(line: int, page_lines: int = PAGE_LINES) -> int:
    """The first line of the page that holds `line` (pages start at 1, 1 + page_lines, …)."""
    return (max(line, 1) - 1) // page_lines * page_lines + 1


def read_window(
    chunks: Iterable[bytes], first: int, count: int = PAGE_LINES, max_chars: int = MAX_LINE_CHARS
) -> TextWindow:
    """Lines `first` to `first + count - 1` of the bytes in `chunks`, and how many lines there are."""
    window = TextWindow(first=first)

    def take(number: int, head: bytes, tail: bytes, length: int) -> None:
        window.lines.append(_shown(number, head, tail, length, max_chars))

    window.total_lines = _each_line(chunks, first, first + count, take, max_chars * 4)
    return window


def read_log_window(chunks: Iterable[bytes], first: int, gap: Gap | None, count: int = PAGE_LINES) -> TextWindow:
    """`read_window` for a log whose middle may have been left out: lines `first` to `first + count - 1` by
    the log's own numbers (as its events and findings name them), the marker line standing for those left
    out, and how many lines the log had."""
    if gap is None:
        return read_window(chunks, first, count)
    start, stop = gap.physical(first), gap.physical(first + count - 1)
    window = read_window(chunks, start, stop - start + 1)
    window.first = first
    for line in window.lines:
        _renumber(line, gap)
    if window.total_lines > gap.marker_line:
        window.total_lines = gap.number(window.total_lines) or window.total_lines
    if window.lines and window.lines[-1].gap:  # the page ends at the gap: the next one starts after it
        window.resume = page_start(gap.resume_line)
    return window


def _renumber(line: Line, gap: Gap) -> None:
    number = gap.number(line.number)
    if number is None:
        line.gap, line.number = True, gap.resume_line - 1
    else:
        line.number = number


def find_log_lines(chunks: Iterable[bytes], query: str, gap: Gap | None) -> Matches:
    """`find_lines`, numbered by the log's own line numbers; the marker line is no match."""
    found = find_lines(chunks, query)
    if gap is not None:
        for line in found.lines:
            _renumber(line, gap)
        kept = [line for line in found.lines if not line.gap]
        found.total -= len(found.lines) - len(kept)
        found.lines = kept
    return found


@dataclass
class Matches:
    query: str
    lines: list[Line] = field(default_factory=list)  # the first `limit` lines that hold the query
    total: int = 0  # every line that holds it


MAX_MATCHES = 500  # lines a search lists; the rest are counted
MAX_QUERY_CHARS = 200  # of a search's text


def find_lines(
    chunks: Iterable[bytes], query: str, limit: int = MAX_MATCHES, max_chars: int = MAX_LINE_CHARS
) -> Matches:
    """The lines that hold `query` (ignoring case), as the page shows them; a line is searched in its
    first and last `4 × max_chars` bytes, which is all of it for any line a person would read."""
    found = Matches(query)
    needle = query.encode("utf-8").lower()

    def take(number: int, head: bytes, tail: bytes, length: int) -> None:
        if needle in head.lower() or (length > len(head) and needle in tail.lower()):
            found.total += 1
            if len(found.lines) < limit:
                found.lines.append(_shown(number, head, tail, length, max_chars))

    _lines_holding(chunks, needle, take, max_chars * 4)
    return found


def _shown(number: int, head: bytes, tail: bytes, length: int, max_chars: int) -> Line:
    """A line as the page shows it: a line redrawn with carriage returns as its last segment, any
    other line from its beginning, as a terminal showed it, cut at `max_chars`."""
    raw = head if length <= len(head) or b"\r" not in tail else tail
    text = terminal_line(without_nul(raw.decode("utf-8", errors="replace")))
    shown = text[:max_chars]
    cut = length > len(head) or len(text) > max_chars
    more = max(0, length - len(shown.encode("utf-8", errors="replace"))) if cut else 0
    return Line(number, shown, more)


def _each_line(
    chunks: Iterable[bytes], first: int, stop: float, take: Callable[[int, bytes, bytes, int], None], keep: int
) -> int:
    """Split the bytes at "\n" and call `take(number, head, tail, length)` for each line numbered
    `first` to `stop - 1` (its first and last `keep` bytes and its length); returns the number of lines.
    The lines outside are only counted, a chunk at a time, so a page deep into a large log costs
    little more than its own lines."""
    number, length, head, tail = 1, 0, b"", b""
    last_byte = b"\n"  # what the bytes so far end with ("\n" for none: no line begun)
    for chunk in chunks:
        last_byte = chunk[-1:] or last_byte
        start = 0
        if number < first:
            ends = chunk.count(b"\n")
            if number + ends < first:  # every line this chunk ends or begins comes before the window
                number += ends
                continue
            while number < first:  # skip to the start of line `first`, in this chunk
                start = chunk.find(b"\n", start) + 1
                number += 1
        while True:
            if number >= stop:  # past the window: the rest is only counted
                number += chunk.count(b"\n", start)
                break
            end = chunk.find(b"\n", start)
            length, head, tail = _grown(length, head, tail, chunk[start:] if end < 0 else chunk[start:end], keep)
            if end < 0:
                break
            take(number, head, tail, length)
            number, length, head, tail = number + 1, 0, b"", b""
            start = end + 1
    # A last line without its "\n" counts; a file that ends with one has no empty line after it.
    if last_byte == b"\n":
        return number - 1
    if first <= number < stop:
        take(number, head, tail, length)
    return number


def _grown(length: int, head: bytes, tail: bytes, piece: bytes, keep: int) -> tuple[int, bytes, bytes]:
    """A line's length and its first and last `keep` bytes, once `piece` is added to its end."""
    if len(head) < keep:
        head += piece[: keep - len(head)]
    return length + len(piece), head, (tail + piece[-keep:])[-keep:]


def _lines_holding(chunks: Iterable[bytes], needle: bytes, take: Callable[[int, bytes, bytes, int], None], keep: int):
    """`_each_line` for a search: `take` is called for each line that holds `needle` (as lower-case
    bytes) anywhere, and for each line that runs across chunks; the lines between are only counted,
    so a search costs per line that matches, not per line of the file."""
    number, length, head, tail = 1, 0, b"", b""  # the line begun in an earlier chunk, kept as `_each_line` keeps it
    last_byte = b"\n"
    for chunk in chunks:
        last_byte = chunk[-1:] or last_byte
        first_end = chunk.find(b"\n")
        length, head, tail = _grown(length, head, tail, chunk if first_end < 0 else chunk[:first_end], keep)
        if first_end < 0:
            continue
        take(number, head, tail, length)
        number, length, head, tail = number + 1, 0, b"", b""
        last_end = chunk.rfind(b"\n")
        body = chunk[first_end + 1 : last_end + 1]  # whole lines, each ending in "\n"
        lower, position = body.lower(), 0
        while position < len(body) and (found := lower.find(needle, position)) >= 0:
            line_start = body.rfind(b"\n", 0, found) + 1
            line_end = body.find(b"\n", max(found, line_start))
            number += body.count(b"\n", position, line_start)
            line = body[line_start:line_end]
            take(number, line[:keep], line[-keep:], len(line))
            number, position = number + 1, line_end + 1
        number += body.count(b"\n", position)
        rest = chunk[last_end + 1 :]
        length, head, tail = len(rest), rest[:keep], rest[-keep:]
    if last_byte == b"\n":
        return number - 1
    take(number, head, tail, length)
    return number


def marked(text: str, query: str) -> list[tuple[str, bool]]:
    """`text` cut into (part, holds the query) pieces, ignoring case, for the page to mark the matches."""
    if not query:
        return [(text, False)]
    # re.split with one group alternates: the text between matches, a match, the text between, …
    parts = re.split(f"({re.escape(query)})", text, flags=re.IGNORECASE)
    return [(part, index % 2 == 1) for index, part in enumerate(parts) if part]
