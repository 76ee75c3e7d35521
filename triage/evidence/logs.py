"""Log evidence: recognised events with file, line number and a time, even for lines printed without one.

Uses the shared extractor `fleet.logevents` (pure). A line without its own timestamp (tqdm bars,
Trainer dicts, tracebacks) gets the time of the nearest earlier timestamped line of the same file as
its time, marked `estimated`; a file with no timestamp at all gives events without times, which
rules may still count but never place on the time line.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import NamedTuple

import numpy as np

from fleet import logevents
from fleet.logcut import MARKER_START, Gap, find_gap
from fleet.logevents import scan_log, terminal_line

MAX_LINE = 300


@dataclass(frozen=True)
class LogLine:
    kind: str
    path: str
    line_no: int
    t: float | None  # epoch seconds
    estimated: bool  # the line had no timestamp; t is the previous timestamped line's
    text: str
    t_next: float | None = None  # for an estimated line: the next timestamped line's time (an upper bound)

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "path": self.path,
            "line": self.line_no,
            "t": self.t,
            "time_estimated": self.estimated,
            "text": self.text[:MAX_LINE],
        }


# Numbers of at most 18 digits (int() refuses text of over 4,300), as fleet.logevents reads epochs.
_BATCH = re.compile(r"\bbatch[ _-]?size\b\s*[=:]?\s*(\d{1,18})\b", re.IGNORECASE)
_WORKER_WARNING = re.compile(
    r"This DataLoader will create (\d{1,18}) worker processes in total\. Our suggested max number of worker in current "
    r"system is (\d{1,18})\b",
    re.IGNORECASE,
)
_SLOW_LOADER = re.compile(r"does not have many workers", re.IGNORECASE)
# Lightning names the loader ("The 'train_dataloader' does not ...", 1.x: "The dataloader, train_dataloader, does
# not ...") and suggests a count (2.x: "to `num_workers=15`", 1.x: "(try 16 which is the number of cpus ...").
_SLOW_LOADER_NAME = re.compile(r"'(\w{1,80})' does not have many workers|dataloader, (\w{1,80}), does not", re.I)
_SLOW_LOADER_SUGGESTS = re.compile(r"to `?num_workers=(\d{1,6})`?|\(try (\d{1,6}) which is the number of cpus", re.I)
_SOCKET = re.compile(r"\bUsing network Socket\b|NET/Socket", re.IGNORECASE)
_DATAPARALLEL = re.compile(r"nn\.DataParallel|torch/nn/parallel/_functions\.py|data_parallel", re.IGNORECASE)
# pycocotools' own timing of each step it prints without a time: "Done (t=0.52s)" (loading annotations), "DONE
# (t=4790.12s)." (evaluate, accumulate). Each measures work done between the lines around it.
_COCO_DONE = re.compile(r"^\s*DONE \(t=(\d{1,9}(?:\.\d{1,6})?)s\)\.?\s*$", re.IGNORECASE)
_INSPECT_ALIVE = re.compile(r"\bholding the node\b|\bkeeping the process alive\b|\bsleep (?:infinity|\d+[hd]?)\b", re.I)


class WorkerWarning(NamedTuple):
    """A warning about a DataLoader's worker count, named by what printed it: PyTorch's "This DataLoader will create
    32 worker processes in total. Our suggested max number of worker in current system is 16" (too many), or
    Lightning's "The 'train_dataloader' does not have many workers which may be a bottleneck" (too few)."""

    created: int  # PyTorch's: the workers the loader creates (0 for Lightning's)
    suggested_max: int  # PyTorch's: its suggested most for the machine (0 for Lightning's)
    line: LogLine
    by: str = "PyTorch"  # "PyTorch" or "Lightning"
    loader: str = ""  # Lightning's: the loader it names ('train_dataloader')
    suggests: str = ""  # Lightning's suggestion, in words ("`num_workers=15`", "16, the machine's CPUs")

    def said(self) -> str:
        """What it warned of, for a finding's summary."""
        if self.by == "Lightning":
            loader = repr(self.loader) if self.loader else "a loader"
            text = f"Lightning warned that {loader} does not have many workers"
            return text + (f" (it suggests {self.suggests})" if self.suggests else "")
        return (
            f"PyTorch warned that the DataLoader would create {self.created} worker processes, more than the "
            f"{self.suggested_max} it suggests for the machine"
        )


class UntimedRun(NamedTuple):
    """Lines printed without a timestamp between two stamped lines of one file. The log's order bounds when they
    were printed (between `before` and `after`), never when within them; `timed_s` adds up the durations they
    print of their own work (pycocotools' "DONE (t=4790.12s)."), done between those two times too."""

    file: int  # index into LogEvidence.paths
    first: int  # first and last line (1-based)
    last: int
    count: int  # non-blank lines
    before: float  # the stamped lines' times around them
    after: float
    timed_s: float = 0.0
    timed_line: int = 0  # the line printing the longest of those durations (0: none)


@dataclass
class LogEvidence:
    events: list[LogLine]
    files: int
    lines: int
    timestamped_lines: int
    batch_sizes: list[tuple[int, LogLine]]
    worker_warnings: list[WorkerWarning]
    socket_lines: list[LogLine]
    dataparallel_lines: list[LogLine]
    hold_lines: list[LogLine]  # "holding the node", "keeping the process alive"
    # Every line printed with its own timestamp: its time, file (index into `paths`) and line number,
    # compact (a long log has a million), to tell whether a job still printed while its GPUs idled.
    stamped_t: array = field(default_factory=lambda: array("d"))
    stamped_file: array = field(default_factory=lambda: array("i"))
    stamped_line: array = field(default_factory=lambda: array("i"))
    paths: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list, repr=False)  # the logs as read, to quote a line
    # Lines printed without a timestamp between two stamped lines of one file, run by run.
    untimed_runs: list[UntimedRun] = field(default_factory=list)
    # Each file's gap, where a log over the size limit had its middle left out (`fleet.logcut`), or None:
    # line numbers here are the log's own, as the file page and the log events show them.
    gaps: list[Gap | None] = field(default_factory=list, repr=False)

    def of(self, *kinds: str) -> list[LogLine]:
        return [event for event in self.events if event.kind in kinds]

    def printed_between(self, start: float, end: float) -> list[tuple[float, int, int]]:
        """(time, file index, line number) of the lines stamped in [start, end], in time order, less
        those that only say the job holds on ("keeping the process alive", "sleep 12h")."""
        times = np.frombuffer(self.stamped_t, dtype=np.float64) if len(self.stamped_t) else np.empty(0)
        chosen = np.flatnonzero((times >= start) & (times <= end))
        holding = {(line.path, line.line_no) for line in self.hold_lines}
        found = [
            (float(times[i]), self.stamped_file[i], self.stamped_line[i])
            for i in chosen
            if (self.paths[self.stamped_file[i]], self.stamped_line[i]) not in holding
        ]
        return sorted(found)

    def quoted(self, file_index: int, line_no: int, t: float | None) -> LogLine:
        """A stamped line as evidence to quote (the line as a terminal last showed it)."""
        text = self.texts[file_index]
        gap = self.gaps[file_index] if file_index < len(self.gaps) else None
        begin = 0
        for _ in range((gap.physical(line_no) if gap else line_no) - 1):
            begin = text.find("\n", begin) + 1
        finish = text.find("\n", begin)
        raw = text[begin : finish if finish >= 0 else len(text)]
        return LogLine("fact", self.paths[file_index], line_no, t, False, terminal_line(raw).strip()[:MAX_LINE])

    def untimed_between(self, start: float, end: float) -> list[UntimedRun]:
        """The runs of untimed lines that may have been printed within (start, end): those whose stamped lines
        around them are not both before it or both after it; keep-alive lines ("sleep 12h") not counted."""
        holding = {(line.path, line.line_no) for line in self.hold_lines}
        found = []
        for run in self.untimed_runs:
            if run.before < end and run.after > start:
                path = self.paths[run.file]
                held = sum(1 for where, line in holding if where == path and run.first <= line <= run.last)
                if run.count > held:
                    found.append(run._replace(count=run.count - held))
        return found

    @property
    def has_timestamps(self) -> bool:
        return self.timestamped_lines > 0


def extract_log_evidence(logs: list[tuple[str, str]], started: datetime | None = None) -> LogEvidence:
    """Events of every log file; `logs` is [(path, text)]; `started`, the job's start, dates year-less lines."""
    evidence = LogEvidence([], 0, 0, 0, [], [], [], [], [])
    for path, text in logs:
        evidence.files += 1
        gap = find_gap([text.encode("utf-8", "surrogateescape")]) if MARKER_START in text else None
        if gap is not None:  # the marker is no line of the log: blank here (no event, no untimed print)
            lines = text.split("\n")
            lines[gap.marker_line - 1] = ""
            text = "\n".join(lines)
        marks = _marks(evidence)
        physical = text.split("\n")
        evidence.lines += len(physical)
        records, stamps = scan_log(text, started)  # each line's timestamp parsed once, for events and times alike
        file_index = len(evidence.paths)
        evidence.paths.append(path)
        evidence.texts.append(text)
        # Times of every line: its own, else the last seen (estimated).
        times: list[tuple[float | None, bool]] = []
        last: float | None = None
        for line_no, stamp in enumerate(stamps, start=1):
            if stamp is not None:
                last = stamp.timestamp()
                evidence.timestamped_lines += 1
                times.append((last, False))
                evidence.stamped_t.append(last)
                evidence.stamped_file.append(file_index)
                evidence.stamped_line.append(line_no)
            else:
                times.append((last, True))
        upper: list[float | None] = [None] * len(times)
        following = None
        for index in range(len(times) - 1, -1, -1):
            upper[index] = following
            if not times[index][1]:
                following = times[index][0]
        _untimed_runs(evidence, file_index, physical, times)
        for record in records:
            t, estimated = times[record.line_no - 1]
            t_next = upper[record.line_no - 1] if estimated else t
            evidence.events.append(LogLine(record.kind, path, record.line_no, t, estimated, record.text, t_next))
        # A few facts that are not events of their own.
        for index, raw in enumerate(physical):
            if not raw or len(raw) > 5000:
                continue
            has_batch = "atch" in raw
            if not (
                has_batch
                or "DataLoader" in raw
                or "many workers" in raw  # Lightning's warning names 'train_dataloader'
                or "Socket" in raw
                or "arallel" in raw
                or "hold" in raw
                or "alive" in raw
                or "sleep" in raw
            ):
                continue
            t, estimated = times[index]
            line = LogLine("fact", path, index + 1, t, estimated, raw.strip()[:MAX_LINE])
            if has_batch and (match := _BATCH.search(raw)):
                evidence.batch_sizes.append((int(match.group(1)), line))
            if match := _WORKER_WARNING.search(raw):
                evidence.worker_warnings.append(WorkerWarning(int(match.group(1)), int(match.group(2)), line))
            elif _SLOW_LOADER.search(raw):
                name = _SLOW_LOADER_NAME.search(raw)
                count = _SLOW_LOADER_SUGGESTS.search(raw)
                suggests = ""
                if count:
                    by_count = f"`num_workers={count.group(1)}`"  # a setting, as code (the summary's words)
                    suggests = by_count if count.group(1) else f"{count.group(2)}, the machine's CPUs"
                loader = (name.group(1) or name.group(2)) if name else ""
                evidence.worker_warnings.append(WorkerWarning(0, 0, line, "Lightning", loader, suggests))
            if _SOCKET.search(raw):
                evidence.socket_lines.append(line)
            if _DATAPARALLEL.search(raw):
                evidence.dataparallel_lines.append(line)
            if _INSPECT_ALIVE.search(raw):
                evidence.hold_lines.append(line)
        evidence.gaps.append(gap)
        if gap is not None:
            _renumber(evidence, marks, gap)
    evidence.events.sort(key=lambda e: (e.t if e.t is not None else float("inf"), e.path, e.line_no))
    return evidence


def _marks(evidence: LogEvidence) -> tuple[int, ...]:
    """How long each list of lines is before a file is read: its lines are those after."""
    return (
        len(evidence.events),
        len(evidence.batch_sizes),
        len(evidence.worker_warnings),
        len(evidence.socket_lines),
        len(evidence.dataparallel_lines),
        len(evidence.hold_lines),
        len(evidence.stamped_line),
        len(evidence.untimed_runs),
    )


def _renumber(evidence: LogEvidence, marks: tuple[int, ...], gap: Gap) -> None:
    """The file's lines (read by their place in the stored file) numbered as the log numbered them."""

    def number(line_no: int) -> int:
        return gap.number(line_no) or line_no

    def moved(line: LogLine) -> LogLine:
        return replace(line, line_no=number(line.line_no))

    events, batches, warnings, sockets, parallel, holds, stamped, runs = marks
    evidence.events[events:] = [moved(line) for line in evidence.events[events:]]
    evidence.batch_sizes[batches:] = [(size, moved(line)) for size, line in evidence.batch_sizes[batches:]]
    evidence.worker_warnings[warnings:] = [w._replace(line=moved(w.line)) for w in evidence.worker_warnings[warnings:]]
    evidence.socket_lines[sockets:] = [moved(line) for line in evidence.socket_lines[sockets:]]
    evidence.dataparallel_lines[parallel:] = [moved(line) for line in evidence.dataparallel_lines[parallel:]]
    evidence.hold_lines[holds:] = [moved(line) for line in evidence.hold_lines[holds:]]
    for index in range(stamped, len(evidence.stamped_line)):
        evidence.stamped_line[index] = number(evidence.stamped_line[index])
    evidence.untimed_runs[runs:] = [
        run._replace(
            first=number(run.first),
            last=number(run.last),
            timed_line=number(run.timed_line) if run.timed_line else 0,
        )
        for run in evidence.untimed_runs[runs:]
    ]


def _untimed_runs(
    evidence: LogEvidence, file_index: int, physical: list[str], times: list[tuple[float | None, bool]]
) -> None:
    """Append the file's runs of non-blank lines without a timestamp that have a stamped line on each side, with
    the durations they print of their own work."""
    first = count = 0
    before: float | None = None
    timed, longest, longest_line = 0.0, 0.0, 0
    for index, (t, estimated) in enumerate(times):
        if not estimated:  # a stamped line closes the run before it
            if count and before is not None:
                evidence.untimed_runs.append(
                    UntimedRun(file_index, first, index, count, before, t, timed, longest_line)
                )
            before, count = t, 0
            timed, longest, longest_line = 0.0, 0.0, 0
        elif physical[index].strip():
            if not count:
                first = index + 1
            count += 1
            if "(t=" in physical[index] and (match := _COCO_DONE.match(physical[index])):
                seconds = float(match.group(1))
                timed += seconds
                if seconds > longest:
                    longest, longest_line = seconds, index + 1


KINDS = logevents.LOG_EVENT_KINDS
