"""A window of lines of a job's log or script, for the file page: pure, over the file's bytes in chunks.

Lines are numbered as log events and script facts number them (split at "\\n" only), so a link to
`path:line` from an event or a finding lands on that line. A line is shown as a terminal last
showed it (`fleet.logevents.terminal_line`: the last carriage-return segment, no colours): a
progress bar that redrew itself 500 times on one line is one line here too, not 500. Memory stays
bounded whatever the file holds: past `max_chars` a line's bytes are counted, not kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from fleet.canonical import without_nul
from fleet.logevents import terminal_line

PAGE_LINES = 1000  # lines a page shows
MAX_LINE_CHARS = 2000  # characters shown of one line; the rest is counted


@dataclass
class Line:
    number: int
    text: str
    more_bytes: int = 0  # bytes of the line past what is shown


@dataclass
class TextWindow:
    first: int  # number of the first line asked for
    lines: list[Line] = field(default_factory=list)
    total_lines: int = 0

    @property
    def last(self) -> int:
        return self.lines[-1].number if self.lines else self.first - 1


def page_start(line: int, page_lines: int = PAGE_LINES) -> int:
    """The first line of the page that holds `line` (pages start at 1, 1 + page_lines, …)."""
    return (max(line, 1) - 1) // page_lines * page_lines + 1


def read_window(
    chunks: Iterable[bytes], first: int, count: int = PAGE_LINES, max_chars: int = MAX_LINE_CHARS
) -> TextWindow:
    """Lines `first` to `first + count - 1` of the bytes in `chunks`, and how many lines there are."""
    window = TextWindow(first=first)
    keep = max_chars * 4  # bytes enough for max_chars characters of UTF-8
    # The line being read: its number, its length, its first and its last `keep` bytes (a line
    # redrawn with carriage returns shows its last segment, any other line its beginning).
    number, length, head, tail = 1, 0, b"", b""

    def finish() -> None:
        raw = head if length <= keep or b"\r" not in tail else tail
        text = terminal_line(without_nul(raw.decode("utf-8", errors="replace")))
        shown = text[:max_chars]
        cut = length > keep or len(text) > max_chars
        more = max(0, length - len(shown.encode("utf-8", errors="replace"))) if cut else 0
        window.lines.append(Line(number, shown, more))

    last_byte = b"\n"  # what the bytes so far end with ("\n" for none: no line begun)
    for chunk in chunks:
        last_byte = chunk[-1:] or last_byte
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if first <= number < first + count:
                piece = chunk[start:] if end < 0 else chunk[start:end]
                length += len(piece)
                if len(head) < keep:
                    head += piece[: keep - len(head)]
                tail = (tail + piece[-keep:])[-keep:]
            if end < 0:
                break
            if first <= number < first + count:
                finish()
            number, length, head, tail = number + 1, 0, b"", b""
            start = end + 1
    # A last line without its "\n" counts; a file that ends with one has no empty line after it.
    ended = last_byte == b"\n"
    if not ended and first <= number < first + count:
        finish()
    window.total_lines = number - 1 if ended else number
    return window
