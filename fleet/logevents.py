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
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from fleet.canonical import without_nul
from fleet.logcut import MARKER_START, find_gap

INSTALL = "install"
DOWNLOAD = "download"
EPOCH = "epoch"
CHECKPOINT_SAVE = "checkpoint_save"
UPLOAD = "upload"
TRAINING_FINISHED = "training_finished"
DATALOADER_WARNING = "dataloader_warning"
OOM = "oom"
NCCL_ERROR = "nccl_error"
REMOTE_READ = "remote_read"  # the job reads its input from remote storage (s3://, hdfs://, ...)
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
    REMOTE_READ,
)
# How a page names each kind, where a person reads (the stored kind stays the identifier, in addresses and the API).
LOG_EVENT_WORDS = {
    CHECKPOINT_SAVE: "checkpoint save",
    TRAINING_FINISHED: "training finished",
    DATALOADER_WARNING: "DataLoader warning",
    NCCL_ERROR: "NCCL error",
    REMOTE_READ: "remote read",
}
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
# wget prints "--2026-10-05 12:00:03--  https://..." when it starts a download (its message keeps the
# "--" before the URL, `_WGET_START`: a URL alone on a line, a run's page or a dashboard's address, is
# no download). Hugging Face
# transformers' explicit format (`logging.enable_explicit_format()`, its example scripts) puts the
# level and source first: "[INFO|trainer.py:3478] 2026-10-05 12:00:03,123 >> Saving ..."; LLaMA-Factory
# "[INFO|2026-10-05 12:00:03] llamafactory...: ...".
_TIMESTAMP = re.compile(
    r"^\s*(?:\[[A-Za-z]+\|(?:[\w./-]+:\d+\]\s*)?)?"
    r"(?:\[|--)?(?P<date>\d{4}[-/]\d{2}[-/]\d{2})[T ](?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2})?\]?"
)
# glog (JAX, absl, TensorFlow's and PyTorch's C++ code): "I0501 12:00:00.123456  1234 file.cc:42] msg", a
# severity letter, month and day (the year only with glog's --log_year_in_prefix), the time, the thread
# id and the source. A line without its year gets one only from the job's start (`started`): the year
# that puts it at or after the start, so a job that runs past New Year dates January's lines right.
_GLOG = re.compile(
    r"^[IWEF](?P<year>\d{4})?(?P<month>\d{2})(?P<day>\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d{1,9}))?"
    r"\s+\d+\s+[\w./<>-]+:\d+\] ?"
)
# Other frameworks' year-less stamps, dated like glog lines. detectron2 (and PaddleDetection, which took its
# logger) prints "[11/02 10:00:00 d2.engine.train_loop]: msg" to a terminal ("WARNING " or "ERROR " before a
# warning's or error's) and "[11/02 10:00:00] d2.engine.train_loop INFO: msg" to its log.txt; mmengine (MMDetection
# 3, MMPretrain, MMSegmentation 1) prints "11/02 10:00:00 - mmengine - INFO - msg" to a terminal (its log file
# has the year: "2026/11/02 10:00:00 - ...", read by _TIMESTAMP). The logger's name is part of the stamp.
_D2 = re.compile(
    r"^(?:(?:WARNING|ERROR) )?\[(?P<month>\d{2})/(?P<day>\d{2}) (?P<time>\d{2}:\d{2}:\d{2})"
    r"(?: [\w.-]+\]:|\] [\w.-]+(?= (?:DEBUG|INFO|WARNING|ERROR|CRITICAL):))"
)
_MMENGINE = re.compile(
    r"^(?P<month>\d{2})/(?P<day>\d{2}) (?P<time>\d{2}:\d{2}:\d{2})"
    r" - [\w.-]+(?= - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - )"
)
_YEARLESS = (_GLOG, _D2, _MMENGINE)
# A year-less line may be printed this long before the job's recorded start and keep its year (its host's
# clock is local time, the start UTC).
_GLOG_EARLY = timedelta(days=2)
# What may sit between the timestamp and the message: a separator and a log level.
_WGET_START = re.compile(r"--\s+(?:https?|ftp)://")
_LEVEL = re.compile(r"^[\s:|>-]*(?:(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL|NOTICE)\b[\s:|>-]*)?")

_PATTERNS: dict[str, re.Pattern] = {
    INSTALL: re.compile(
        r"\b(?:pip3?|python3? -m pip|uv pip|conda|mamba|micromamba|apt-get|apt|yum|dnf)\s+install\b"
        r"|^\s*Successfully installed\b|^\s*Collecting\s+\S|^\s*Installing collected packages\b"
        r"|^\s*Requirement already satisfied\b"
        # apt-get and conda progress, wheels built from source
        r"|^\s*Get:\d+ https?://|^\s*Fetched \d+(?:\.\d+)? [kMG]?B in\b|^\s*Setting up \S+ \("
        r"|^\s*Setting up [\w.+-]+ \.\.\.|^\s*Building wheels? for\b|^\s*Successfully built\b"
        r"|^\s*Solving environment\b|^\s*Collecting package metadata\b|^\s*Downloading and Extracting Packages"
        r"|^\s*(?:Preparing|Verifying|Executing) transaction\b",
        re.IGNORECASE,
    ),
    DOWNLOAD: re.compile(
        r"^\s*Downloading\b|\bDownloading\s+\S|\bFetching \d+ files\b|\b(?:hf_hub_download|snapshot_download)\b"
        r"|(?:^|[\s;&|])(?:wget|curl)\s+\S|^--\s+(?:https?|ftp)://\S|\) - ['‘\"].+['’\"] saved \[\d+"
        r"|\bfrom the Hugging Face Hub\b|\btorch\.hub\.load\b|\bload_dataset\("
        r"|^\s*download: s3://|\b(?:aws\s+)?s3\s+(?:cp|sync)\s+(?:\S+\s+)*s3://\S+\s+(?!s3://)\S",
        re.IGNORECASE,
    ),
    CHECKPOINT_SAVE: re.compile(
        # "saved" only when it is not about loading: "Loading saved checkpoint ..." is no save.
        r"(?<!loading )(?<!load )(?<!from )\bsav(?:e|ing|ed)\s+(?:the\s+)?(?:model\s+)?checkpoints?\b"
        r"|\bcheckpoints?\s+(?:saved|written)\b"
        r"|\b(?:save|saving)\s+(?:the\s+)?(?:final\s+|best\s+|trained\s+)?model\b|\bmodel (?:weights )?saved\b"
        r"|\btorch\.save\b|\bsave_pretrained\b"
        # DeepSpeed "[Torch] Checkpoint global_step500 is about to be saved!", Accelerate's save_state
        r"|\bcheckpoint\s+\S+\s+is\s+about\s+to\s+be\s+saved\b|\bsaving current state to\b",
        re.IGNORECASE,
    ),
    UPLOAD: re.compile(
        r"\bupload(?:ing|ed)?\b|\bpush(?:ing|ed)? to (?:the )?hub\b|\bpush_to_hub\b|\bput_object\b"
        r"|\b(?:aws\s+)?s3\s+(?:cp|sync|mv)\s+(?:--?\S+\s+)*(?!s3://)\S+\s+s3://"
        r"|\blog_artifacts?\(|\blogged artifacts?\b|\bwandb\.save\b|\bgsutil\s+(?:-m\s+)?cp\b|\bazcopy\s+copy\b",
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
    # Reading (not writing) a remote URL: "opening shard s3://...", "slow read: hdfs://... took 40s".
    REMOTE_READ: re.compile(
        r"\b(?:open(?:ing|ed)?|read(?:ing)?|load(?:ing)?|stream(?:ing)?|fetch(?:ing)?|slow read)\b[^\n]*?"
        r"\b(?:s3a?|gs|hdfs|abfss?|wasbs?|az|oss|webhdfs)://",
        re.IGNORECASE,
    ),
}
# Words (lower case) without which a pattern cannot match: checked first, since substring tests are
# much cheaper than the patterns and most lines match none.
_KEYWORDS: dict[str, tuple[str, ...]] = {
    INSTALL: (
        "install", "collect", "requirement", "get:", "fetched", "setting up", "building", "built", "solving",
        "package metadata", "downloading and extracting", "transaction",
    ),
    DOWNLOAD: ("download", "fetching", "wget", "curl", "s3", "saved [", "hub", "load_dataset", "://"),
    CHECKPOINT_SAVE: ("sav", "checkpoint"),
    UPLOAD: ("upload", "push", "put_object", "s3", "artifact", "wandb.save", "gsutil", "azcopy"),
    TRAINING_FINISHED: ("train",),
    DATALOADER_WARNING: ("dataloader",),
    OOM: ("memory",),
    NCCL_ERROR: ("nccl", "watchdog", "processgroup"),
    REMOTE_READ: ("://",),
}  # fmt: skip
# "Epoch 3", "Epoch [3/10]", "epoch: 3", Keras' "Epoch 3/10", Lightning's "Epoch 3: 100%|...", mmcv's
# "Epoch [3][50/500]"; not "Num Epochs = 3" or "epochs=3". mmengine (MMDetection 3 and its kin) right-aligns the
# epoch behind the loop's name, "Epoch(train)  [3][ 50/500]" and "Epoch(val) [3][50/50]"; its
# "Epoch(test) [50/500]" names a batch, no epoch.
# Numbers of at most 18 digits: int() refuses text of over 4,300 digits (a ValueError that once
# failed the import of a log saying "Epoch 999…"), and no epoch, batch or worker count is longer.
_EPOCH_WORD = re.compile(
    r"\bepoch(?:\((?:train|val)\)\s*\[\s*(\d{1,18})\]\[|\s*(?::\s*|\[\s*)?(\d{1,18})\b)", re.IGNORECASE
)
# HF Trainer's metrics dicts: {'loss': 0.69, 'learning_rate': 4.5e-05, 'epoch': 0.27}
_EPOCH_DICT = re.compile(r"""^\s*\{.*['"]epoch['"]\s*:\s*([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?\d+)?)""")
# A file's download progress bar, "model.safetensors:  45%|####5 | ...": kept apart from the other
# download patterns because its word, "%|", is on every progress bar of a long log (epochs, steps),
# where it alone, not all the download alternatives, needs trying.
_FILE_PROGRESS = re.compile(
    r"^\s*[\w./-]+\.(?:json|safetensors|bin|pth|pt|model|txt|msgpack|h5|gguf): +\d+%\|", re.IGNORECASE
)
# (kind, words of which a line must hold one, pattern): a kind is found when any of its probes matches.
_PROBES: tuple[tuple[str, frozenset[str], re.Pattern], ...] = (
    *((kind, frozenset(_KEYWORDS[kind]), pattern) for kind, pattern in _PATTERNS.items()),
    (DOWNLOAD, frozenset({"%|"}), _FILE_PROGRESS),
)
# A cheap first pass: a line without any of these words (lower case) cannot match any pattern.
_ANY_WORDS = tuple(sorted({word for _, words, _ in _PROBES for word in words} | {"epoch"}))
# The probes (by position in _PROBES, ascending) each word can start: a line tries only those of its words.
_PROBES_OF = {word: tuple(i for i, (_, words, _) in enumerate(_PROBES) if word in words) for word in _ANY_WORDS}


def extract_log_events(text: str, started: datetime | None = None) -> list[LogEventRecord]:
    """The events of a log; `started` (the job's start, aware) dates year-less lines (glog, detectron2, mmengine).

    A log kept as its head and tail (`fleet.logcut`) is numbered as the log was: a line after the marker by
    the line it was, and the marker itself is no event."""
    events = _scan(text, None, started)
    if MARKER_START in text and (gap := find_gap([text.encode("utf-8", errors="surrogateescape")])) is not None:
        events = [replace(e, line_no=n) for e in events if (n := gap.number(e.line_no)) is not None]
    return events


def scan_log(text: str, started: datetime | None = None) -> tuple[list[LogEventRecord], list[datetime | None]]:
    """`extract_log_events(text, started)` and the `line_timestamp` of every physical line, in one pass.

    Each line's timestamp is parsed once, for the events and for the line times alike.
    """
    stamps: list[datetime | None] = []
    return _scan(text, stamps, started), stamps


def _scan(text: str, stamps: list[datetime | None] | None, started: datetime | None) -> list[LogEventRecord]:
    """The events of `text`; when `stamps` is a list, every line's leading timestamp is appended to it."""
    events: list[LogEventRecord] = []
    last_epoch: int | None = None
    for line_no, physical in enumerate(text.split("\n"), start=1):
        line = terminal_line(physical)
        if not line:
            if stamps is not None:
                stamps.append(None)
            continue
        stamp = None
        if stamps is not None:
            stamp = _stamp(body := _after(_RANK_PREFIX, line), started)
            stamps.append(_moment(stamp, started) if stamp else None)
        lowered = line.lower()
        hits = {word for word in _ANY_WORDS if word in lowered}
        if not hits:
            continue
        if stamps is None:
            stamp = _stamp(body := _after(_RANK_PREFIX, line), started)
        # Its time is worked out only for a line that turns out to hold an event (a quarter of them).
        rest = body[stamp.end() :] if stamp else body
        message = rest if stamp and _WGET_START.match(rest) else _after(_LEVEL, rest)
        kinds = []
        if len(hits) == 1:  # most event lines: one word's probes, already in order
            probes = _PROBES_OF[next(iter(hits))]
        else:
            probes = sorted(frozenset().union(*(_PROBES_OF[word] for word in hits)))  # in _PROBES order
        for index in probes:
            kind, _, pattern = _PROBES[index]
            if kind not in kinds and pattern.search(message):
                kinds.append(kind)
        epoch = _epoch_number(message) if "epoch" in hits else None  # both its patterns need the word
        if epoch is not None and epoch != last_epoch:
            kinds.insert(0, EPOCH)
            last_epoch = epoch
        if not kinds:
            continue
        shown = without_nul(line.strip())[:MAX_TEXT]  # stored as text, which cannot hold NUL
        timestamp = stamps[-1] if stamps is not None else _moment(stamp, started) if stamp else None
        if len(kinds) == 1:
            events.append(LogEventRecord(kinds[0], line_no, timestamp, shown))
        else:
            ordered = sorted(kinds, key=_KIND_ORDER.get)
            events.extend(LogEventRecord(kind, line_no, timestamp, shown) for kind in ordered)
    return events


_KIND_ORDER = {kind: index for index, kind in enumerate(LOG_EVENT_KINDS)}


def line_timestamp(physical: str, started: datetime | None = None) -> datetime | None:
    """The leading timestamp (aware UTC) of one log line as `extract_log_events` reads it, if any."""
    line = terminal_line(physical)
    if not line:
        return None
    stamp = _stamp(_after(_RANK_PREFIX, line), started)
    return _moment(stamp, started) if stamp else None


def _stamp(body: str, started: datetime | None) -> re.Match | None:
    """The leading timestamp's match: a dated one, else (knowing the job's start) a year-less one: glog's,
    detectron2's or mmengine's."""
    stamp = _TIMESTAMP.match(body)
    if stamp is None and started is not None and body:
        first = body[0]
        if first in "IWEF":
            stamp = _GLOG.match(body)
        if stamp is None and first in "[WE":
            stamp = _D2.match(body)
        if stamp is None and first in "01":
            stamp = _MMENGINE.match(body)
    return stamp


def _after(prefix: re.Pattern, text: str) -> str:
    """`text` without what `prefix` (anchored at its start) matches there: `prefix.sub("", text,
    count=1)`, without building a new string when nothing matches (most lines)."""
    match = prefix.match(text)
    return text[match.end() :] if match and match.end() else text


def terminal_line(physical: str) -> str:
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
    return int(match.group(1) or match.group(2)) if match else None


def _moment(match: re.Match, started: datetime | None = None) -> datetime | None:
    """The aware UTC time a `_TIMESTAMP` (or year-less: `_GLOG`, `_D2`, `_MMENGINE`) match names (None for an
    impossible date such as 02-30, or one that is not a time in UTC's calendar)."""
    if match.re in _YEARLESS:
        return _yearless_moment(match, started)
    date, clock, frac, tz = match.group("date", "time", "frac", "tz")
    text = f"{date.replace('/', '-')}T{clock}"
    if frac:
        text += "." + frac[:6].ljust(6, "0")
    in_utc = not tz or tz == "Z"
    # Parsed with its offset, UTC for a line without one: an aware datetime at once, where
    # `replace(tzinfo=UTC)` afterwards cost six times the parse (this runs for every log line).
    text += "+00:00" if in_utc else tz
    try:
        return datetime.fromisoformat(text) if in_utc else datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError):  # overflow: year 1 or 9999 moved out of the calendar by its offset
        return None


def _yearless_moment(match: re.Match, started: datetime | None) -> datetime | None:
    """A glog, detectron2 or mmengine line's time (UTC, as lines without an offset are read): its own year if
    glog's has one, else the first of the start's year and the next that is not before the start (less
    `_GLOG_EARLY`)."""
    parts = match.groupdict()
    year, month, day, clock, frac = (parts.get(name) for name in ("year", "month", "day", "time", "frac"))
    rest = f"{month}-{day}T{clock}" + ("." + frac[:6].ljust(6, "0") if frac else "") + "+00:00"
    if year:
        years = [int(year)]
    elif started is None:
        return None
    else:
        started = started if started.tzinfo is not None else started.replace(tzinfo=UTC)
        years = [started.year - 1, started.year, started.year + 1]
    for candidate in years:
        try:
            moment = datetime.fromisoformat(f"{candidate:04d}-{rest}")
        except ValueError:  # 02-29 in a year without it, 13-01
            continue
        if year or moment >= started - _GLOG_EARLY:
            return moment
    return None
