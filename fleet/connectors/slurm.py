"""Slurm: `sacct --json` output and slurmrestd's accounting endpoint (`/slurmdb/v0.0.4x/jobs`).

Both speak the same JSON (the `data_parser` plugin), so one pure normaliser, `parse_sacct`, reads
an uploaded file, a file inside an archive and a slurmrestd response alike. It accepts the
layouts of data_parser v0.0.39 to v0.0.42 (and the older openapi dbv0.0.37/38 of Slurm 21.08/22.05):

- `state.current` as a string (<= v0.0.39) or an array of strings (>= v0.0.40);
- numbers as plain values or `{"set", "infinite", "number"}` wrappers (unset/infinite = no value);
- `exit_code.status` as a string or an array, `return_code` plain or wrapped;
- the GPU count from `tres.allocated` entries of type `gres` named `gpu` or `gpu:<model>`, matched by
  type and name (TRES ids are site-specific); the untyped entry wins, so `gres/gpu` and
  `gres/gpu:a100` listed together are not counted twice;
- a MIG slice as the gres type (`gpu:a100_1g.5gb`, `gpu:3g.40gb`: `fleet.gpu_models.slurm_mig_slice`) is
  its share of the parent GPU (`gpu_share`: compute slices / 7, an A30's / 4) and the job's GPU model
  is the parent the type names (`a100`), so it is priced at the parent's row, as a Kubernetes pod on a
  slice is; a type naming no GPU takes the node's from dcgm-exporter's `modelName` (`describe`, with a
  metrics source), else it stays a device counted whole under its own name, as before, and says so;
- Slurm 21.08's start-time bug (`time.start` filled from `eligible`): start = end - elapsed;
- the job's mean GPU utilization from its steps' `gres/gpuutil` averages (`steps_gpu_util`), a
  summary the importer uses only when the job has no GPU samples;
- array tasks (`<array job>_<task>`) and heterogeneous components (`<het job>+<offset>`) as jobs of
  their own; `account` -> team through the operator's mapping; `submit_line` and `script` as
  script artifacts; unfinished jobs (pending, running, ...) and jobs that never started are left
  for a later pull.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from fleet.canonical import (
    MAX_EPOCH_SECONDS,
    STEPS_LABEL,
    TIME_RANGE,
    ArtifactRecord,
    JobRecord,
    RecordError,
)
from fleet.connectors.base import (
    SHAPE_ERRORS,
    BadData,
    BaseConnector,
    Batch,
    TransientError,
    json_document,
    json_kind,
    mapping_option,
    number_option,
    shape_problem,
    time_watermark,
    time_windows,
)
from fleet.connectors.prometheus import PrometheusConnector, SeriesRequest
from fleet.connectors.registry import register
from fleet.gpu_models import slurm_mig_slice

FINISHED_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
    }
)
INTERACTIVE_COMMANDS = frozenset({"salloc", "srun"})
DEFAULT_API_VERSION = "v0.0.40"
MAX_WRONG_WINDOW = 3
MAX_ARTIFACT_BYTES = 20 * 2**20
# A MIG slice as a GPU's gres type ("gpu:3g.20gb", "gpu:a100_1g.10gb"): NVML gives no utilization for it.
MIG_TYPE = re.compile(r"\d+g\.\d+gb", re.IGNORECASE)
# What a MIG slice whose gres type names no GPU (`gpu:1g.10gb`) is called while its GPU is not known: it is
# then counted whole under its type's name (priced by a row of that name), as every slice was before.
UNKNOWN_PARENT = "its GPU unknown, counted whole"
# A step's per-GPU figure above 100 % by more than this is no reading (a sentinel such as INFINITE64,
# or a count of something else); up to it, overlapping processes' sums are clipped to 100 %.
MAX_STEP_UTIL = 150.0


@dataclass
class SacctParse:
    data_parser: str  # e.g. "v0.0.40"; "" when the document does not say
    jobs: list[JobRecord] = field(default_factory=list)
    artifacts: dict[str, list[ArtifactRecord]] = field(default_factory=dict)
    errors: list[RecordError] = field(default_factory=list)
    unfinished: int = 0  # pending/running jobs and jobs that never started: not stored yet
    without_gpus: int = 0  # left out because the connector keeps GPU jobs only
    repeated: list[tuple[int, str]] = field(default_factory=list)  # (entry, job id) listed again: the first kept


def number(value):
    """A plain number, or the number inside a `{set, infinite, number}` wrapper; None when unset/infinite."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def first_text(value) -> str:
    """The first string of a string-or-array field (state, exit status)."""
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return "" if value is None else str(value)


def data_parser_version(meta: dict) -> str:
    plugin = meta.get("plugin") if isinstance(meta, dict) else None
    if not isinstance(plugin, dict):  # absent, or not the object Slurm writes: no version to read
        return ""
    for key in ("data_parser", "type", "name"):
        found = re.search(r"v0\.0\.(\d+)", str(plugin.get(key) or ""))
        if found:
            return f"v0.0.{found.group(1)}"
    return ""


def expand_hostlist(text: str) -> list[str]:
    """Slurm host list -> host names: "gpu[01-02,05],login1" -> gpu01, gpu02, gpu05, login1."""
    if not text or text in ("None assigned", "(null)"):
        return []
    items, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += char == "["
        depth -= char == "]"
        current += char
    items.append(current)
    hosts: list[str] = []
    for item in filter(None, (i.strip() for i in items)):
        hosts.extend(_expand_one(item))
    return hosts


def _expand_one(item: str) -> list[str]:
    match = re.match(r"^([^\[]*)\[([^\]]+)\](.*)$", item)
    if not match:
        return [item]
    prefix, ranges, rest = match.groups()
    out = []
    for part in ranges.split(","):
        low, _, high = part.partition("-")
        if high and low.isdigit() and high.isdigit():
            width = len(low)
            names = [f"{n:0{width}d}" for n in range(int(low), int(high) + 1)]
        else:
            names = [low]
        for name in names:
            out.extend(prefix + name + tail for tail in _expand_one(rest) or [""])
    return out


def gpu_allocation(tres_entries) -> tuple[int, str]:
    """(GPU count, GPU model) from `tres.allocated`: type "gres", name "gpu" or "gpu:<model>"."""
    untyped, typed, model = None, 0, ""
    for entry in tres_entries or []:
        if not isinstance(entry, dict) or entry.get("type") != "gres":
            continue
        name = str(entry.get("name") or "")
        count = int(number(entry.get("count")) or 0)
        if name == "gpu":
            untyped = (untyped or 0) + count
        elif name.startswith("gpu:"):
            typed += count
            model = model or name.split(":", 1)[1]
    return (untyped if untyped is not None else typed), model


def gpu_slice(model: str) -> dict:
    """The job fields (`gpu_model`, `gpu_share`, `gpu_unit`) of GPUs of gres type `model`: a MIG slice
    (`a100_1g.5gb`) is its share of the GPU the type names (`a100`); one of a GPU it does not name
    (`1g.10gb`) is counted whole under the type, and its unit says so; any other type, whole GPUs."""
    found = slurm_mig_slice(model)
    if found is None:
        return {"gpu_model": model}
    if not found.parent:
        return {"gpu_model": model, "gpu_share": 1.0, "gpu_unit": f"MIG {found.profile} slice ({UNKNOWN_PARENT})"}
    return {"gpu_model": found.parent, "gpu_share": found.share, "gpu_unit": f"MIG {found.profile} slice"}


def _gpu_types(tres_entries) -> set[str]:
    return {
        str(entry.get("name"))[4:]
        for entry in tres_entries or []
        if isinstance(entry, dict) and entry.get("type") == "gres" and str(entry.get("name") or "").startswith("gpu:")
    }


def _tres_count(tres_entries, kind: str) -> int | None:
    for entry in tres_entries or []:
        if isinstance(entry, dict) and entry.get("type") == kind:
            value = number(entry.get("count"))
            return int(value) if value is not None else None
    return None


def steps_gpu_util(job: dict, gpu_count: int, seconds: float) -> float | None:
    """The job's mean GPU utilization (%) from its steps' `gres/gpuutil` averages, or None.

    Slurm (23.02+, `AccountingStorageTRES=gres/gpuutil` and `AutoDetect=nvml`) puts in each step's
    `tres.requested.average` (TRESUsageInAve) the average over its tasks of each task's NVML `smUtil`
    summed over the GPUs the task uses: a task on 2 busy GPUs shows 200. So a step's utilization per
    GPU is that average divided by its GPUs per task (the step's allocated GPUs / `tasks.count`).

    The job's figure is the step GPU time each step kept busy, over the job's GPU time
    (`gpu_count` x `seconds`): steps are weighted by their elapsed time and GPUs, and time no step
    covers counts as idle. That is what it was: every process of a job runs in a step (batch,
    extern, interactive, srun), so GPUs outside any step had nothing running on them, and samples
    would have shown them idle too. The batch and extern steps overlap the others: their usual 0 adds
    nothing, and overlapping steps on the same GPUs are clipped at 100 % together.

    None — no figure, never a guess — when no step has a gpuutil value, or a step that held GPUs
    has one that cannot be read per GPU: no value (unset, infinite), no task count, no GPU count,
    a MIG slice (NVML gives no utilization for MIG; Slurm reports 0), or an impossible value. A step
    that held no GPUs (its `tres.allocated` lists none) cannot have used any and is left out.
    A step of an odd shape gives no figure either; the job itself is still read.
    """
    try:
        return _steps_gpu_util(job, gpu_count, seconds)
    except SHAPE_ERRORS:
        return None


def _steps_gpu_util(job: dict, gpu_count: int, seconds: float) -> float | None:
    steps = job.get("steps")
    if not isinstance(steps, list) or gpu_count <= 0 or seconds <= 0:
        return None
    if MIG_TYPE.search(gpu_allocation((job.get("tres") or {}).get("allocated"))[1]):
        return None
    busy = 0.0  # GPU-seconds, weighted by utilization
    measured = False
    for step in steps:
        if not isinstance(step, dict):
            return None
        tres = step.get("tres") if isinstance(step.get("tres"), dict) else {}
        times = step.get("time") if isinstance(step.get("time"), dict) else {}
        elapsed = number(times.get("elapsed")) or 0
        allocated = tres.get("allocated")
        if elapsed <= 0 or (isinstance(allocated, list) and gpu_allocation(allocated)[0] == 0):
            continue  # never ran, or held no GPUs
        step_gpus, model = gpu_allocation(allocated if isinstance(allocated, list) else [])
        requested = tres.get("requested") if isinstance(tres.get("requested"), dict) else {}
        value = _gres_value(requested.get("average"), "gpuutil")
        tasks = number((step.get("tasks") or {}).get("count")) if isinstance(step.get("tasks"), dict) else None
        if value is None or not tasks or tasks <= 0 or step_gpus <= 0 or MIG_TYPE.search(model):
            return None  # a step on GPUs whose use cannot be read: the job's figure would be a guess
        per_gpu = value * tasks / step_gpus
        if not 0 <= per_gpu <= MAX_STEP_UTIL:
            return None
        busy += min(per_gpu, 100.0) / 100.0 * step_gpus * elapsed
        measured = True
    if not measured:
        return None
    return min(100.0, max(0.0, 100.0 * busy / (gpu_count * seconds)))


def job_steps(job: dict) -> list[dict]:
    """The job's steps that ran its programs, each with the tasks it started, in step order (the job's `steps`
    label, `fleet.canonical.STEPS_LABEL`): `[{"id": "4242.0", "name": "python", "tasks": 8}]` from sacct's
    `steps[].step.id` (text `4242.0`, or Slurm 21.08's `{"job_id", "step_id"}`), `steps[].step.name` (the program
    srun ran) and `steps[].tasks.count`. Numbered steps only: the batch, extern and interactive steps run the batch
    script, Slurm's own process and salloc's shell, no srun. A step without a task count is left out."""
    steps = job.get("steps")
    found = []
    for step in steps if isinstance(steps, list) else ():
        about = step.get("step") if isinstance(step, dict) else None
        if not isinstance(about, dict):
            continue
        ident = about.get("id")
        if isinstance(ident, dict):  # Slurm 21.08 / 22.05 (dbv0.0.37/38)
            ident = f"{ident.get('job_id')}.{ident.get('step_id')}"
        number_part = str(ident).rpartition(".")[2]
        tasks = number((step.get("tasks") or {}).get("count")) if isinstance(step.get("tasks"), dict) else None
        if not number_part.isdigit() or isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1:
            continue
        found.append((int(number_part), {"id": str(ident), "name": str(about.get("name") or ""), "tasks": tasks}))
    return [step for _, step in sorted(found, key=lambda pair: pair[0])]


def _gres_value(entries, name: str) -> float | None:
    """The count of the `gres/<name>` entry of a TRES list, or None (absent, unset, infinite)."""
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("type") == "gres" and entry.get("name") == name:
            return number(entry.get("count"))
    return None


def _moment(value) -> datetime | None:
    """A sacct time (Unix seconds; 0 for none); ValueError for one beyond the times a job may have."""
    seconds = number(value)
    if not seconds or seconds <= 0:
        return None
    if not seconds < MAX_EPOCH_SECONDS:  # NaN included
        raise ValueError(f"time {value!r} is out of range ({TIME_RANGE})")
    return datetime.fromtimestamp(seconds, tz=UTC)


def external_id(job: dict) -> str:
    """`<array job>_<task>` for array tasks, `<het job>+<offset>` for het components, else the job id."""
    array = job.get("array") or {}
    array_job = number(array.get("job_id"))
    task = number(array.get("task_id"))
    if array_job and task is not None:
        return f"{int(array_job)}_{int(task)}"
    het = job.get("het") or {}
    het_job = number(het.get("job_id"))
    offset = number(het.get("job_offset"))
    if het_job and offset is not None:
        return f"{int(het_job)}+{int(offset)}"
    return str(job.get("job_id"))


def parse_sacct(
    data: bytes | str | dict,
    *,
    cluster: str = "",
    account_teams: dict[str, str] | None = None,
    default_team: str = "",
    gpu_jobs_only: bool = True,
    source: str = "sacct.json",
    artifact_max_bytes: int = MAX_ARTIFACT_BYTES,
) -> SacctParse:
    """Canonical jobs from a `sacct --json` document or a slurmrestd `/slurmdb/.../jobs` response."""
    doc = json_document(data, source)
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        errors = doc.get("errors") if isinstance(doc, dict) else None
        raise BadData(f"{source}: expected an object with a 'jobs' list" + (f" (errors: {errors})" if errors else ""))
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    version = data_parser_version(meta)
    # Slurm 21.08 (openapi dbv0.0.37, with `meta.Slurm`) fills time.start from `eligible`.
    start_bug = version == "v0.0.37" or ("Slurm" in meta and not version)
    result = SacctParse(data_parser=version)
    teams = account_teams or {}
    seen: set[str] = set()
    for index, job in enumerate(doc["jobs"], start=1):
        if not isinstance(job, dict):
            result.errors.append(RecordError(source, "a job entry is not an object", row=index))
            continue
        try:
            job_id = external_id(job)
        except SHAPE_ERRORS as exc:
            result.errors.append(RecordError(source, shape_problem(f"job entry {index}", exc), row=index))
            continue
        try:
            record = _job_record(job, job_id, cluster or str(job.get("cluster") or ""), teams, default_team, start_bug)
            if gpu_jobs_only and record.gpu_count == 0:
                result.without_gpus += 1
                continue
            if job_id in seen:  # windows overlap: the same job can be listed twice
                result.repeated.append((index, job_id))  # a pull ignores it; an archive's native file says it
                continue
            artifacts = _artifacts(job, job_id, artifact_max_bytes)
        except _Skip as skip:
            if skip.reason == "unfinished":
                result.unfinished += 1
            continue
        except ValueError as exc:  # the parser's own messages
            result.errors.append(RecordError(source, str(exc), row=index, job_id=job_id))
            continue
        except SHAPE_ERRORS as exc:
            result.errors.append(RecordError(source, shape_problem(f"job {job_id}", exc), row=index, job_id=job_id))
            continue
        seen.add(job_id)
        result.jobs.append(record)
        if artifacts:
            result.artifacts[job_id] = artifacts
    return result


class _Skip(Exception):
    def __init__(self, reason: str):
        self.reason = reason


def _job_record(job: dict, job_id: str, cluster: str, teams: dict, default_team: str, start_bug: bool) -> JobRecord:
    state_field = job.get("state")
    state = first_text(state_field.get("current") if isinstance(state_field, dict) else state_field).upper()
    if state.split()[0:1] and state.split()[0] not in FINISHED_STATES:
        raise _Skip("unfinished")
    times = job.get("time") or {}
    end = _moment(times.get("end"))
    start = _moment(times.get("start"))
    elapsed = number(times.get("elapsed"))
    if end is None or (start is None and not elapsed):
        raise _Skip("unfinished")  # cancelled before it started: no GPU time to triage
    if start_bug and elapsed is not None:
        start = end - timedelta(seconds=float(elapsed))
    if start is None:
        start = end - timedelta(seconds=float(elapsed or 0))
    if end < start:
        raise ValueError(f"time.end {end.isoformat()} is before time.start {start.isoformat()}")
    tres = job.get("tres") or {}
    gpus, model = gpu_allocation(tres.get("allocated"))
    nodes = expand_hostlist(str(job.get("nodes") or ""))
    account = str(job.get("account") or "")
    team = teams.get(account) or account or default_team or "unassigned"
    submit_line = str(job.get("submit_line") or "")
    first_word = shlex.split(submit_line)[0].rsplit("/", 1)[-1] if _splittable(submit_line) else ""
    exit_code = job.get("exit_code") or {}
    labels = {
        "source": "slurm",
        "slurm_job_id": str(job.get("job_id")),
        "account": account,
        "partition": str(job.get("partition") or ""),
        "qos": str(job.get("qos") or ""),
        "nodes": nodes,
        "exit_status": first_text(exit_code.get("status")),
        "return_code": number(exit_code.get("return_code")),
        "reason": str((state_field or {}).get("reason") or "") if isinstance(state_field, dict) else "",
        "working_directory": str(job.get("working_directory") or ""),
    }
    if steps := job_steps(job):
        labels[STEPS_LABEL] = steps  # the tasks each ran: triage counts an srun launch's processes by its step
    for key in ("stdout_expanded", "stderr_expanded"):  # v0.0.41+
        if job.get(key):
            labels[key.removesuffix("_expanded")] = str(job[key])
    limit = number(times.get("limit"))
    if limit is not None:
        labels["time_limit_s"] = int(limit) * 60
    # A job on one MIG type is that slice; of several types (a slice and a whole GPU), whole GPUs, as before.
    gpu = gpu_slice(model) if len(_gpu_types(tres.get("allocated"))) == 1 else {"gpu_model": model}
    if "gpu_unit" in gpu:
        labels["gres_type"] = model
    return JobRecord(
        external_id=job_id,
        user=str(job.get("user") or job.get("user_name") or ""),
        team=team,
        gpu_count=gpus,
        start_time=start,
        end_time=end,
        cluster=cluster,
        name=str(job.get("name") or ""),
        **gpu,
        node_count=max(1, _tres_count(tres.get("allocated"), "node") or len(nodes) or 1),
        cpu_count=_tres_count(tres.get("allocated"), "cpu"),
        state=state.split()[0] if state else "",
        job_type="interactive" if first_word in INTERACTIVE_COMMANDS else "batch",
        command=submit_line,
        queue=labels["partition"],
        submit_time=_moment(times.get("submission")),
        labels=labels,
        raw=job,
        summary_gpu_util=steps_gpu_util(job, gpus, (end - start).total_seconds()),
    )


def _splittable(text: str) -> bool:
    try:
        return bool(shlex.split(text))
    except ValueError:
        return False


def _artifacts(job: dict, job_id: str, max_bytes: int) -> list[ArtifactRecord]:
    out = []
    for key, path in (("submit_line", "submit_line.txt"), ("script", "batch_script.sh")):
        text = job.get(key)
        if isinstance(text, str) and text.strip():
            content = text.encode()
            out.append(ArtifactRecord.capped(job_id, "script", path, content, max_bytes))
    return out


def series_request(job: JobRecord, *, exclusive: bool = False) -> SeriesRequest:
    raw = job.raw or {}
    return SeriesRequest(
        start=job.start_time,
        end=job.end_time,
        hpc_job=str(raw.get("job_id") or job.labels.get("slurm_job_id") or ""),
        hosts=tuple(job.labels.get("nodes") or ()),
        exclusive=exclusive,
    )


@register
class SlurmConnector(BaseConnector):
    """slurmrestd's accounting endpoint, pulled in time windows (it has no pagination).

    Options: `api_version` ("v0.0.40"), `window_hours` (24), `settle_minutes` (5: accounting
    records land a little after the job ends), `initial_days` (1: how far back a first pull
    reaches), `account_teams` ({account: team}), `default_team`, `gpu_jobs_only` (true),
    `exclusive_nodes` (false: true lets node-level series count as the job's).
    Auth: header `X-SLURM-USER-TOKEN` (and optionally `X-SLURM-USER-NAME`).
    """

    kind = "slurm"
    label = "Slurm (slurmrestd)"
    options_example = '{"api_version": "v0.0.41", "account_teams": {"vision": "Computer Vision"}}'
    url_example = "http://slurmrestd:6820"
    url_what = "Slurm's REST API (slurmrestd)"
    options_schema = {
        "api_version": "text",
        "window_hours": "number",
        "settle_minutes": "number",
        "initial_days": "number",
        "account_teams": "names to names",
        "default_team": "text",
        "gpu_jobs_only": "true or false",
        "exclusive_nodes": "true or false",
    }
    auth_hint = "Header X-SLURM-USER-TOKEN (a JWT); X-SLURM-USER-NAME in Headers."

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        options = self.settings.options
        self.api_version = str(options.get("api_version", DEFAULT_API_VERSION))
        self.window = timedelta(hours=number_option(options, "window_hours", 24, low=0.01, high=24 * 366))
        self.settle = timedelta(minutes=number_option(options, "settle_minutes", 5, low=0, high=24 * 60))
        self.initial = timedelta(days=number_option(options, "initial_days", 1, low=0, high=3660))
        self.account_teams = mapping_option(options, "account_teams")
        self._artifacts: dict[str, list[ArtifactRecord]] = {}

    @property
    def jobs_path(self) -> str:
        return f"slurmdb/{self.api_version}/jobs"

    def check(self) -> dict:
        path = f"slurmdb/{self.api_version}/diag"
        doc = self.http.get_json(path)
        if not isinstance(doc, dict):
            raise BadData(f"{self.settings.name}: {path} answered {json_kind(doc)}, not a JSON object")
        return {"data_parser": data_parser_version(doc.get("meta"))}

    def list_jobs(self, watermark: str, until: datetime) -> Iterator[Batch]:
        for begin, stop in time_windows(watermark, until, settle=self.settle, initial=self.initial, window=self.window):
            # slurmdbd returns the jobs that ran at any time in the window; keep those that ended in it,
            # so a job is stored by the window of its end, whatever windows it spans.
            parsed = self._window(begin, stop)
            jobs = [job for job in parsed.jobs if begin <= job.end_time < stop]
            for job in jobs:
                self._artifacts[job.external_id] = parsed.artifacts.get(job.external_id, [])
            yield Batch(jobs=jobs, watermark=time_watermark(stop), errors=parsed.errors)

    def _window(self, begin: datetime, stop: datetime) -> SacctParse:
        """The jobs of one window. A response listing a finished job that did not run in the window
        answers another request (a stale cache, a repeated response): ask again, then give up."""
        options = self.settings.options
        params = {"start_time": int(begin.timestamp()), "end_time": int(stop.timestamp())}
        for _attempt in range(MAX_WRONG_WINDOW):
            doc = self.http.get_json(self.jobs_path, params=params)
            parsed = parse_sacct(
                doc,
                cluster=self.settings.cluster,
                account_teams=self.account_teams,
                default_team=str(options.get("default_team") or ""),
                gpu_jobs_only=bool(options.get("gpu_jobs_only", True)),
                source=f"{self.settings.name} {self.jobs_path} {begin:%Y-%m-%dT%H:%M}",
            )
            if all(job.start_time <= stop and job.end_time >= begin for job in parsed.jobs):
                return parsed
        raise TransientError(f"{self.settings.name}: slurmrestd keeps answering window {begin} with other jobs")

    def describe(self, job: JobRecord) -> JobRecord:
        """A job on MIG slices whose gres type names no GPU (`gpu:1g.10gb`) with its GPU model from
        dcgm-exporter's `modelName` on the job's series (the parent GPU's name on a MIG node), so that it is
        its slice's share of that GPU's price; one cheap `/api/v1/series` request, only for such jobs."""
        if not job.gpu_unit.endswith(f"({UNKNOWN_PARENT})") or not isinstance(self.metrics, PrometheusConnector):
            return job
        exclusive = bool(self.settings.options.get("exclusive_nodes", False))
        models = self.metrics.gpu_models(series_request(job, exclusive=exclusive))
        found = slurm_mig_slice(job.labels.get("gres_type"))
        if not models or found is None:
            return job
        return replace(job, gpu_model=models[0], gpu_share=found.share, gpu_unit=f"MIG {found.profile} slice")

    def fetch_series(self, job: JobRecord):
        if isinstance(self.metrics, PrometheusConnector):
            exclusive = bool(self.settings.options.get("exclusive_nodes", False))
            return self.metrics.fetch_job_series(series_request(job, exclusive=exclusive))
        return None

    def fetch_artifacts(self, job: JobRecord) -> list[ArtifactRecord]:
        return self._artifacts.pop(job.external_id, [])
