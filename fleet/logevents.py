"""Recognised lines in a job's log: installs, downloads, epochs, checkpoint saves, errors. Pure Python.

`extract_log_events(text)` scans a log once and returns one `LogEventRecord` per recognised line
and kind. Line numbers are 1-based physical lines (split on "\\n"). A line that a progress bar
rewrote with carriage returns counts as its last segment, which is what a terminal showed; an
epoch is reported once per epoch, however many progress-bar or metrics lines mention it.

Patterns are regular expressions over log text, which is plain output, not source code.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

INSTALL = "install"
DOWNLOAD = "download"
EPOCH = "epoch"
CHECKPOINT_SAVE = "checkpoint_save"
UPLOAD = "upload"
TRAINING_FINISHED = "training_finished"
DATALOADER_WARNING = "dataloader_warning"
OOM = "oom"
NCCL_ERROR = "nccl_error"
LOG_EVENT_KINDS = (
    INSTALL,
    DOWNLOAD,
    EPOCH,
    CHECKPOINT_SAVE,
    UPLOAD,
    TRAINING_FINISHED,
    DATALOADER_WARNING,
    OOM,
    NCCL_ERROR,
)
MAX_TEXT = 500


@dataclass(frozen=True)
class LogEventRecord:
    kind: str  # one of LOG_EVENT_KINDS
    line_no: int  # 1-based line in the log
    timestamp: datetime | None  # aware UTC, when the line starts with a recognised timestamp
    text: str  # the line (its last carriage-return segment), without colour codes, at most 500 characters


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Prefixes that launchers put before a rank's output: "[rank1]: ", "1: " (srun -l, torchrun),
# "(RayTrainWorker pid=123) ".
_RANK_PREFIX = re.compile(r"^\s*(?:\[rank\d+\]:\s*|\d{1,5}:\s+|\([A-Za-z_]\w* pid=\d+(?:, ip=[\w.:]+)?\)\s*)")
_TIMESTAMP = re.compile(
    r"^\s*\[?(?P<date>\d{4}[-/]\d{2}[-/]\d{2})[T ](?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2})?\]?"
)
# What may sit between the timestamp and the message: a separator and a log level.
_LEVEL = re.compile(r"^[\s:|-]*(?:(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL|NOTICE)\b[\s:|-]*)?")

_PATTERNS: dict[str, re.Pattern] = {
    INSTALL: re.compile(
        r"\b(?:pip3?|python3? -m pip|uv pip|conda|mamba|micromamba|apt-get|apt|yum|dnf)\s+install\b"
        r"|^\s*Successfully installed\b|^\s*Collecting\s+\S|^\s*Installing collected packages\b"
        r"|^\s*Requirement already satisfied\b",
        re.IGNORECASE,
    ),
    DOWNLOAD: re.compile(
        r"^\s*Downloading\b|\bDownloading\s+\S|\bFetching \d+ files\b|\b(?:hf_hub_download|snapshot_download)\b"
        r"|(?:^|[\s;&|])(?:wget|curl)\s+\S|^\s*download: s3://|\b(?:aws\s+)?s3\s+(?:cp|sync)\s+(?:\S+\s+)*s3://\S+\s+(?!s3://)\S",
        re.IGNORECASE,
    ),
    CHECKPOINT_SAVE: re.compile(
        # "saved" only when it is not about loading: "Loading saved checkpoint ..." is no save.
        r"(?<!loading )(?<!load )(?<!from )\bsav(?:e|ing|ed)\s+(?:the\s+)?(?:model\s+)?checkpoints?\b"
        r"|\bcheckpoints?\s+(?:saved|written)\b"
        r"|\b(?:save|saving)\s+(?:the\s+)?(?:final\s+|best\s+|trained\s+)?model\b|\bmodel (?:weights )?saved\b"
        r"|\btorch\.save\b|\bsave_pretrained\b",
        re.IGNORECASE,
    ),
    UPLOAD: re.compile(
        r"\bupload(?:ing|ed)?\b|\bpush(?:ing|ed)? to (?:the )?hub\b|\bpush_to_hub\b|\bput_object\b"
        r"|\b(?:aws\s+)?s3\s+(?:cp|sync|mv)\s+(?:--?\S+\s+)*(?!s3://)\S+\s+s3://",
        re.IGNORECASE,
    ),
    TRAINING_FINISHED: re.compile(
        r"\btraining (?:finished|completed|complete|done)\b|\btrain_runtime\b|`Trainer\.fit` stopped",
        re.IGNORECASE,
    ),
    DATALOADER_WARNING: re.compile(
        r"This DataLoader will create|DataLoader worker \(pids?\b|does not have many workers"
        r"|\bDataLoader\b.*\bwarn|\bwarn\w*\b.*\bDataLoader\b",
        re.IGNORECASE,
    ),
    OOM: re.compile(
        r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|RESOURCE_EXHAUSTED:? Out of memory",
        re.IGNORECASE,
    ),
    NCCL_ERROR: re.compile(
        r"NCCL error|NCCL WARN|\bnccl(?:InternalError|SystemError|UnhandledCudaError|RemoteError|InvalidUsage)\b"
        r"|Watchdog caught collective operation timeout|ProcessGroupNCCL.*\btime(?:d)? ?out\b|NCCL timeout",
        re.IGNORECASE,
    ),
}
# "Epoch 3", "Epoch [3/10]", "epoch: 3", Lightning's "Epoch 3: 100%|..."; not "Num Epochs = 3" or "epochs=3".
_EPOCH_WORD = re.compile(r"\bepoch\s*(?::\s*|\[\s*)?(\d+)\b", re.IGNORECASE)
# HF Trainer's metrics dicts: {'loss': 0.69, 'learning_rate': 4.5e-05, 'epoch': 0.27}
_EPOCH_DICT = re.compile(r"""^\s*\{.*['"]epoch['"]\s*:\s*([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?\d+)?)""")
# A cheap first pass: lines without any of these words cannot match any pattern.
_ANY = re.compile(
    r"install|collect|requirement|download|fetch|wget|curl|s3|epoch|sav|checkpoint|torch\.save|upload|push|put_object"
    r"|train|dataloader|memory|nccl|watchdog|processgroup|weights",
    re.IGNORECASE,
)


def extract_log_events(text: str) -> list[LogEventRecord]:
    events: list[LogEventRecord] = []
    last_epoch: int | None = None
    for line_no, physical in enumerate(text.split("\n"), start=1):
        line = _visible(physical)
        if not line or not _ANY.search(line):
            continue
        body = _RANK_PREFIX.sub("", line, count=1)
        timestamp, message = _timestamp(body)
        message = _LEVEL.sub("", message, count=1)
        kinds = [kind for kind, pattern in _PATTERNS.items() if pattern.search(message)]
        epoch = _epoch_number(message)
        if epoch is not None and epoch != last_epoch:
            kinds.insert(0, EPOCH)
            last_epoch = epoch
        if not kinds:
            continue
        shown = line.strip()[:MAX_TEXT]
        events.extend(LogEventRecord(kind, line_no, timestamp, shown) for kind in sorted(kinds, key=_KIND_ORDER.get))
    return events


_KIND_ORDER = {kind: index for index, kind in enumerate(LOG_EVENT_KINDS)}


def _visible(physical: str) -> str:
    """The line as a terminal last showed it: the last non-empty carriage-return segment, no colours."""
    if "\r" in physical:
        segments = [segment for segment in physical.split("\r") if segment.strip()]
        physical = segments[-1] if segments else ""
    if "\x1b" in physical:
        physical = _ANSI.sub("", physical)
    return physical.rstrip()


def _epoch_number(body: str) -> int | None:
    match = _EPOCH_DICT.match(body)
    if match:
        value = float(match.group(1))
        return math.floor(value) if math.isfinite(value) else None
    match = _EPOCH_WORD.search(body)
    return int(match.group(1)) if match else None


def _timestamp(body: str) -> tuple[datetime | None, str]:
    """The line's leading timestamp (aware UTC) if it has one, and the rest of the line."""
    match = _TIMESTAMP.match(body)
    if not match:
        return None, body
    rest = body[match.end() :]
    date = match.group("date").replace("/", "-")
    frac = (match.group("frac") or "")[:6].ljust(6, "0") if match.group("frac") else ""
    text = f"{date}T{match.group('time')}" + (f".{frac}" if frac else "")
    tz = match.group("tz")
    if tz and tz != "Z":
        text += tz
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None, rest
    return (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)), rest
