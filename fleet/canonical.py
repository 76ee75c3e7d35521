"""Canonical fleet records: what every source (archive, Prometheus, Slurm, Kubernetes) maps onto.

Plain dataclasses with no Django imports, so parsers and connectors can be tested on bytes
and the ingest service is the only place that knows about the ORM.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass, field
from dataclasses import field as dataclass_field  # RecordError has a field named "field"
from datetime import UTC, datetime
from typing import Literal

from fleet.logcut import head_and_tail

# Canonical metric columns, in display order, with their units. `gpu_util` is the only required one.
METRICS: dict[str, str] = {
    "gpu_util": "%",
    "gpu_mem_used_mib": "MiB",
    "gpu_mem_total_mib": "MiB",
    "sm_active": "ratio",
    "tensor_active": "ratio",
    "dram_active": "ratio",
    "pcie_rx_bytes_per_s": "B/s",
    "pcie_tx_bytes_per_s": "B/s",
    "cpu_util": "%",
    "host_mem_used_mib": "MiB",
    "net_rx_bytes_per_s": "B/s",
    "net_tx_bytes_per_s": "B/s",
    "disk_read_bytes_per_s": "B/s",
    "disk_write_bytes_per_s": "B/s",
}
REQUIRED_METRICS = ("gpu_util",)
# The largest value a series keeps: metrics are stored as float32, where anything larger is infinity.
FLOAT32_MAX = 3.4028234663852886e38


def _metric_bounds(name: str) -> tuple[float, float]:
    if name == "gpu_util":
        return 0.0, 100.0
    if METRICS[name] == "ratio":
        return 0.0, 1.0
    return 0.0, FLOAT32_MAX  # cpu_util may exceed 100 % when a container bursts past its allocation


# The values each metric may take, wherever its samples come from (archives, connectors).
METRIC_BOUNDS: dict[str, tuple[float, float]] = {name: _metric_bounds(name) for name in METRICS}


# The longest host name a series keeps (a DNS name or a Kubernetes node name is at most 253): a longer
# cell is a broken export, and it would be repeated in every row of the job's stored series.
MAX_HOST_CHARS = 255


def host_length_text(length: int) -> str:
    """Why a host name is refused, without repeating it (it may be megabytes long)."""
    return f"a host name of {length:,} characters; host names are at most {MAX_HOST_CHARS}"


def range_text(low: float, high: float, unit: str) -> str:
    """What a metric's values must be, for a message: "must be 0–100 %"."""
    if high >= FLOAT32_MAX:
        return f"must be ≥ {low:g} and at most {FLOAT32_MAX:.4g}, the largest a series keeps"
    if unit == "ratio":
        return f"must be {low:g}–{high:g}, a ratio"
    return f"must be {low:g}–{high:g} {unit}"


# Key columns of every series row: which job, when, and which device (gpu is empty for host rows).
SERIES_KEYS = ("timestamp", "host", "gpu")

JOB_TYPES = ("batch", "interactive")

# Job states are kept as the source wrote them (Slurm's words, which the MLflow and W&B connectors map
# theirs onto; Kubernetes' pod phases; any text in an archive or the generic connector). These say a
# run ended as it should, compared without case; a failed, cancelled or timed-out run is not known to
# have run properly. (A run whose source records no state at all is judged by what else is known.)
SUCCESSFUL_STATES = ("COMPLETED", "SUCCEEDED")

# The times a timestamp may say, however it is written: Unix seconds from 0 up to this (larger ones
# are almost always milliseconds; 1e11 s is the year 5138). ISO text, typed Parquet times and the
# platforms' own records keep to the same moments, so a job's times never depend on their source.
MAX_EPOCH_SECONDS = 1e11
TIME_RANGE = "from 1970 up to the year 5138"


def loads_json(text: str | bytes):
    """JSON as RFC 8259 defines it. Python's `json` also reads NaN, Infinity and -Infinity, which no
    JSON column stores (PostgreSQL's jsonb refuses them): here they are a ValueError, like any other
    text that is not JSON, instead of failing the insert of a job whose raw record holds one. So is
    nesting deeper than the interpreter's stack (`[[[[…`), which `json` answers with RecursionError,
    a number too large for a float (`1e400`), which `json` reads as infinity, and a lone surrogate
    escape (`"\ud800"`), which `json` reads into a string no UTF-8 text, and so no database, holds."""
    try:
        value = json.loads(text, parse_constant=_not_json, parse_float=_finite_float)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    # Only an escape can make a surrogate (UTF-8 input cannot): look for one only when the text has one.
    escape = _SURROGATE_ESCAPE if isinstance(text, str) else _SURROGATE_ESCAPE_BYTES
    if escape.search(text) and text_path(value, lambda item: _SURROGATE.search(item) is not None) is not None:
        raise ValueError("a \\ud800–\\udfff escape not paired as UTF-16 is not text")
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is too large to store")
    return value


def _not_json(name: str):
    raise ValueError(f"{name} is not a JSON value (write null, or a number)")


# PostgreSQL keeps no NUL character in text, nor \u0000 in jsonb: a value holding one cannot be stored.
NUL_MESSAGE = "contains a NUL character (\\u0000), which cannot be stored; remove it"


def nul_path(value, path: str = "") -> str | None:
    """Where a NUL character hides in text or a JSON-like value, keys included: its path below
    `path` ("labels.k", "raw.steps[2]"), or None."""
    return text_path(value, lambda text: "\x00" in text, path)


def text_path(value, bad, path: str = "") -> str | None:
    """The path below `path` of the first text in a JSON-like value, keys included, for which
    `bad(text)` is true ("labels.k", "raw.steps[2]"), or None. Iterative: a value may nest as deep
    as JSON allows."""
    pending = [(path, value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, str):
            if bad(item):
                return where
        elif isinstance(item, dict):
            for key, inner in item.items():
                inner_path = f"{where}.{key}" if where else str(key)
                if bad(str(key)):
                    return inner_path
                pending.append((inner_path, inner))
        elif isinstance(item, list | tuple):
            pending.extend((f"{where}[{index}]", inner) for index, inner in enumerate(item))
    return None


# GPUs, nodes or CPUs of one job: more than any job has, and well inside the database's integer columns.
MAX_COUNT = 1_000_000
MAX_ID_LENGTH = 200  # of a job id (the job schema's maxLength, and the column's)
# Allocated GPU-hours of one job (GPUs x wall time): 114,000 GPU-years, more than any job has; at
# the highest price a price column holds, its cost still fits the cost column (Job.cost).
MAX_GPU_HOURS = 1e9


def without_nul(text: str) -> str:
    """Text with its NUL characters (which a terminal does not show, and the database cannot keep) left out."""
    return text.replace("\x00", "") if "\x00" in text else text


def storable(value):
    """A JSON-like value as a JSON column keeps it, for what quotes input (log lines, script lines,
    constants read from a script) on its way into one: NUL characters left out of every string, keys
    included; NaN and infinities as null (jsonb refuses them); booleans, numbers (numpy's too) as
    themselves; anything else JSON has no word for (bytes, complex numbers, `...` in a script) as
    its text."""
    if isinstance(value, str):
        return without_nul(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {_storable_key(key): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return without_nul(str(value))


def _storable_key(key) -> str | int | float | bool | None:
    if isinstance(key, str):
        return without_nul(key)
    return key if key is None or isinstance(key, bool | int | float) else without_nul(str(key))


def as_utc(moment: datetime) -> datetime:
    """The same instant as an aware UTC datetime; a naive one is taken to be UTC already."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


ArtifactKind = Literal["log", "script", "trace"]

# A job's label of the steps its scheduler ran its programs in, each with the tasks (processes) it started, in step
# order: [{"id": "4242.0", "name": "python", "tasks": 8}] (Slurm: sacct's numbered steps, `steps[].tasks.count`;
# `fleet.connectors.slurm.job_steps`). Triage takes a step's count for the srun launch that ran in it.
STEPS_LABEL = "steps"


def step_tasks(labels: dict) -> tuple[tuple[str, str, int], ...]:
    """(id, program name, tasks) of each step a job's `steps` label lists, in its order; () where it lists none or
    is of another shape (a label an archive's job brings may hold anything): every step an object with a text `id`
    and `name` and a whole number of `tasks` of at least 1, or none is read."""
    steps = labels.get(STEPS_LABEL) if isinstance(labels, dict) else None
    if not isinstance(steps, list):
        return ()
    read = []
    for step in steps:
        if not isinstance(step, dict):
            return ()
        ident, name, tasks = step.get("id"), step.get("name"), step.get("tasks")
        if not (isinstance(ident, str) and isinstance(name, str) and type(tasks) is int and tasks >= 1):
            return ()
        read.append((ident, name, tasks))
    return tuple(read)


@dataclass(frozen=True)
class JobRecord:
    """One job as every source describes it. Times are aware UTC datetimes."""

    external_id: str
    user: str
    team: str
    gpu_count: int
    start_time: datetime
    end_time: datetime
    cluster: str = ""
    name: str = ""
    gpu_model: str = ""
    node_count: int = 1
    cpu_count: int | None = None
    state: str = ""
    job_type: str = "batch"
    command: str = ""
    queue: str = ""
    submit_time: datetime | None = None
    labels: dict = field(default_factory=dict, hash=False)
    raw: dict = field(default_factory=dict, hash=False, compare=False)
    # The job's mean GPU utilization (%, 0-100) from a source's own summary, not from samples: Slurm's
    # step accounting (`gres/gpuutil`, `fleet.connectors.slurm.steps_gpu_util`). Used only when the
    # job has no GPU samples; None when the source gives none (or none that can be read honestly).
    summary_gpu_util: float | None = None
    # The share of one physical GPU each of the job's `gpu_count` devices is: 1 for whole GPUs, 1/7 for
    # a MIG 1g.10gb slice of an H100, 1/replicas for a time-sliced replica. GPU-hours, cost and waste
    # count gpu_count x gpu_share; `gpu_unit` says what a device is ("MIG 1g.10gb slice"; "" = a GPU).
    gpu_share: float = 1.0
    gpu_unit: str = ""

    def unstorable(self) -> tuple[str, str] | None:
        """(field, message) for the first value the database cannot keep — a NUL character anywhere
        (the field is a path into `labels` or `raw`), a count beyond MAX_COUNT, GPU-hours beyond
        MAX_GPU_HOURS — or None."""
        if len(self.external_id) > MAX_ID_LENGTH:  # cut short, two jobs could become one
            return "external_id", f"a job id of {len(self.external_id)} characters; at most {MAX_ID_LENGTH} are kept"
        for name in ("gpu_count", "node_count", "cpu_count"):
            value = getattr(self, name)
            if value is not None and value > MAX_COUNT:
                return name, f"{value} is more than any job has (at most {MAX_COUNT:,})"
        gpu_hours = (self.end_time - self.start_time).total_seconds() / 3600 * self.gpu_count * self.gpu_share
        if gpu_hours > MAX_GPU_HOURS:
            return "end_time", (
                f"{self.gpu_count} GPUs from {self.start_time:%Y-%m-%d} to {self.end_time:%Y-%m-%d} are "
                f"{gpu_hours:,.0f} GPU-hours, more than any job has (at most {MAX_GPU_HOURS:,.0f})"
            )
        for name in ("external_id", "user", "team", "cluster", "name", "gpu_model", "gpu_unit", "queue", "state",
                     "job_type", "command", "labels", "raw"):  # fmt: skip
            found = nul_path(getattr(self, name, ""), name)
            if found is not None:
                return found, NUL_MESSAGE
        return None

    def storage_error(self, file: str) -> RecordError | None:
        """`unstorable` as the error a source reports for this job (named by `file`), or None."""
        problem = self.unstorable()
        if problem is None:
            return None
        field_name, message = problem
        return RecordError(file, message, field=field_name, job_id=without_nul(self.external_id))


@dataclass(frozen=True)
class ArtifactRecord:
    """A file that belongs to one job: a log, a script or a profiler trace."""

    job_id: str
    kind: ArtifactKind
    path: str  # relative to the job's folder in the archive, e.g. "train.py" or "rank0/stdout.log"
    content: bytes
    # the source file was larger than the size limit: `content` is its beginning, or for a log its first and
    # last halves with a marker line between (`fleet.logcut`)
    truncated: bool = False

    @classmethod
    def capped(cls, job_id: str, kind: ArtifactKind, path: str, content: bytes, max_bytes: int) -> ArtifactRecord:
        """The file's first `max_bytes`, marked truncated when there was more (read one byte past the
        limit to know); a log whole in `content`, its head and tail (its end says why the job ended)."""
        if kind == "log":
            kept, truncated = head_and_tail(content, max_bytes)
            return cls(job_id, kind, path, kept, truncated=truncated)
        return cls(job_id, kind, path, content[:max_bytes], truncated=len(content) > max_bytes)


@dataclass(frozen=True)
class RecordError:
    """A problem with one piece of input, precise enough to find and fix: file, row, field."""

    file: str
    message: str
    row: int | None = None  # 1-based data row (the header is row 0) or line number
    field: str = ""
    job_id: str = ""
    # What the importer did about it (fleet.ingest.error_consequence says it in words): "rejected" (its
    # job, or its row, was not stored), "note" (nothing rejected), "refused" (the archive; nothing
    # stored); "failed" / "stopped" (the run failed as a whole, having stored no job / some: `ingest.run_failure`);
    # "" where nobody said (a connector's pull, a run stored before errors said it).
    effect: str = dataclass_field(default="", compare=False)  # the same problem, whatever was done about it

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.field:
            where += f", field '{self.field}'"
        who = f" (job {self.job_id})" if self.job_id else ""
        return f"{where}{who}: {self.message}"

    def as_dict(self) -> dict:
        """As the run keeps it (a JSON column): text the input chose loses its NUL characters."""
        return {
            "file": without_nul(self.file),
            "row": self.row,
            "field": without_nul(self.field),
            "job_id": without_nul(self.job_id),
            "message": without_nul(self.message),
            **({"effect": self.effect} if self.effect else {}),
        }


@dataclass(frozen=True)
class SeriesSummary:
    """Per-job figures computed from its series at ingest, so dashboards aggregate in SQL.

    Hours are GPU-hours. Gaps longer than the gap threshold are missing data, not idle time:
    they are excluded from the mean and from the unused/idle hours; `coverage` says how much
    of the job's GPU time the series actually covers.
    """

    sample_count: int
    sampling_period_s: float | None
    mean_gpu_util: float | None
    peak_gpu_mem_util: float | None  # percent of the device's memory, 0–100
    covered_gpu_hours: float
    unused_gpu_hours: float | None
    idle_gpu_hours: float | None
    coverage: float  # covered GPU time / allocated GPU time, 0–1
    duplicate_samples: int = 0
    gaps: int = 0
