"""A log over the size limit, kept as its head and its tail with a marker line between. Pure Python.

A job's log ends with why it ended: the traceback, the CUDA out-of-memory error, the NCCL timeout, the
"Trainer.fit stopped" line. Keeping a large log's beginning cut exactly that off. `HeadTail` is fed a
log in chunks (an archive member, a pods/log response) and keeps its first and last halves of the limit,
each cut at a line's end, with one line between that says what was left out:

    [… Fleet Triage left out 48,213 lines (31.2 MiB) from line 47,889: the log is 51.2 MiB, more than
    the 20.0 MiB kept of one log (its first and last 10.0 MiB); it goes on at line 96,102 …]

`find_gap` reads the marker back (where it is, and which line of the log follows it) so that the job
page's log viewer and the log events scan number every kept line as the log itself did: a line after the
marker is numbered from "it goes on at line N", not by its place in the stored file. The marker is only
taken as one on the line it says it stands on (`from line N` is its own line in the stored file), so a
log that prints such a line elsewhere is not misread.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MARKER_START = "[… Fleet Triage left out "
_MARKER = re.compile(
    r"\[… Fleet Triage left out (?P<lines>[\d,]+) lines? \((?P<size>[^)]*)\) from line (?P<from>[\d,]+): "
    r".*; it goes on at line (?P<resume>[\d,]+) …\]"
)
_MARKER_START_BYTES = MARKER_START.encode()


def format_bytes(count: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} bytes"


@dataclass(frozen=True)
class Gap:
    """Where a stored log's marker is and what it stands for."""

    marker_line: int  # the marker's line in the stored file (1-based)
    resume_line: int  # the log's own number of the line after the marker
    omitted_lines: int
    text: str  # the marker line

    def number(self, physical: int) -> int | None:
        """The log's own number of the stored file's line `physical`; None for the marker itself."""
        if physical < self.marker_line:
            return physical
        if physical == self.marker_line:
            return None
        return self.resume_line + physical - self.marker_line - 1

    def physical(self, number: int) -> int:
        """The stored file's line that shows the log's line `number` (the marker for a line left out)."""
        if number < self.marker_line:
            return number
        if number < self.resume_line:
            return self.marker_line
        return self.marker_line + 1 + number - self.resume_line


class HeadTail:
    """Keeps the whole log while it fits in `max_bytes`; past that, its first `max_bytes // 2` bytes and its
    last `max_bytes - max_bytes // 2`, counting the bytes and lines in between. Memory: about `max_bytes`."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.head_limit = max_bytes // 2
        self.tail_limit = max_bytes - self.head_limit
        self.buffer = bytearray()  # all of it while it fits; then the tail (trimmed now and then)
        self.head = b""
        self.total_bytes = 0
        self.newlines = 0  # in all the bytes fed
        self.over = False

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.total_bytes += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.buffer += chunk
        if not self.over and len(self.buffer) > self.max_bytes:
            self.over = True
            self.head = bytes(self.buffer[: self.head_limit])
            del self.buffer[: self.head_limit]
        if self.over and len(self.buffer) > 2 * self.tail_limit + (1 << 20):
            del self.buffer[: len(self.buffer) - self.tail_limit]

    def feed_all(self, chunks: Iterable[bytes]) -> HeadTail:
        for chunk in chunks:
            self.feed(chunk)
        return self

    @property
    def truncated(self) -> bool:
        return self.over

    def content(self) -> bytes:
        """The log, or its head, the marker line and its tail."""
        if not self.over:
            return bytes(self.buffer)
        tail = bytes(self.buffer[-self.tail_limit :]) if self.tail_limit else b""
        head = self.head
        cut = head.rfind(b"\n") + 1
        head = head[:cut] if cut else head + b"\n"  # a line longer than the head: its beginning, then the marker
        head_newlines = head.count(b"\n") if cut else 0
        begin = tail.find(b"\n") + 1
        if begin and begin < len(tail):  # start the tail at a line's beginning
            tail = tail[begin:]
        tail_newlines = tail.count(b"\n")
        kept_original = (cut or len(self.head)) + len(tail)
        omitted_bytes = self.total_bytes - kept_original
        omitted_lines = self.newlines - head_newlines - tail_newlines  # line ends left out
        resume = self.newlines - tail_newlines + 1  # the log's number of the tail's first line
        half = format_bytes(self.head_limit)
        marker_line = head.count(b"\n") + 1
        marker = (
            f"{MARKER_START}{omitted_lines:,} line{'' if omitted_lines == 1 else 's'} ({format_bytes(omitted_bytes)})"
            f" from line {marker_line:,}: the log is {format_bytes(self.total_bytes)}, more than the "
            f"{format_bytes(self.max_bytes)} kept of one log (its first and last {half}); "
            f"it goes on at line {resume:,} …]\n"
        )
        return head + marker.encode() + tail


def head_and_tail(content: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """`content` as `HeadTail` keeps it, and whether anything was left out."""
    kept = HeadTail(max_bytes).feed_all([content])
    return kept.content(), kept.truncated


def find_gap(chunks: Iterable[bytes]) -> Gap | None:
    """The marker of a stored log kept as head and tail (on the line it names), or None."""
    data = b""
    line = 1  # the stored file's line that data[0] is on
    fresh = True  # data[0] begins a line
    for chunk in chunks:
        data += chunk
        while True:
            found = data.find(_MARKER_START_BYTES)
            if found < 0:
                keep = max(0, len(data) - len(_MARKER_START_BYTES))
                line += data.count(b"\n", 0, keep)
                fresh = data[keep - 1 : keep] == b"\n" if keep else fresh
                data = data[keep:]
                break
            end = data.find(b"\n", found)
            if end < 0 and len(data) - found <= 4096:  # the rest of the line is in the next chunk
                break
            at_start = data[found - 1 : found] == b"\n" if found else fresh
            here = line + data.count(b"\n", 0, found)
            if end >= 0 and at_start and (gap := _gap(data[found:end], here)) is not None:
                return gap
            line, fresh, data = here, False, data[found + 1 :]
    return None


def _gap(raw: bytes, line: int) -> Gap | None:
    match = _MARKER.fullmatch(raw.decode("utf-8", errors="replace"))
    if not match or int(match["from"].replace(",", "")) != line:
        return None
    resume = int(match["resume"].replace(",", ""))
    if resume < line:
        return None
    return Gap(line, resume, int(match["lines"].replace(",", "")), match.group(0))


def renumber(line_no: int, gap: Gap | None) -> int | None:
    """`Gap.number`, for a log with or without a gap."""
    return line_no if gap is None else gap.number(line_no)
