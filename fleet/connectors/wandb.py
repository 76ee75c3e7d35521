"""Weights & Biases: runs as jobs, and the system metrics W&B records for them as series, for teams
that track their training in W&B on machines without a DCGM exporter (shared/reference/platform-apis.md §8).

W&B has one API, GraphQL, at `{url}/graphql` (the public cloud's is https://api.wandb.ai; a
W&B Server has its own host), with HTTP basic auth: user `api`, password the API key.

    project(name, entityName) { runs(filters, after, first, order) { edges { node {...} }, pageInfo } }
        filters: a MongoDB-style JSON string; `heartbeatAt` and `state` are filterable
    project(name, entityName) { run(name) { events(samples) } }
        the system-metrics stream: a list of JSON lines, one per sample, with `_timestamp` (Unix
        seconds) and `system.gpu.{i}.gpu` (%), `system.gpu.{i}.memoryAllocatedBytes`,
        `system.gpu.{i}.memoryAllocated` (% of the GPU's memory), `system.cpu` (the process's CPU %),
        `system.network.recv`/`sent` (bytes) and `system.disk.in`/`out` (MiB) since the run began…
        for every GPU the machine shows, with those the run's process used repeated as
        `system.gpu.process.{i}.*` (older SDKs write the keys without `system.`)
    project(name, entityName) { run(name) { files(names) { edges { node { name directUrl } } } } }
        a run's saved files, each with a pre-signed storage address fetched without our credentials

A run's `systemMetrics` holds the latest value of each system key, which says whether it used a GPU
and which (`run_gpus`). W&B records no end time: a run that has finished (or failed, crashed, was killed)
stopped at its last heartbeat, so runs are pulled in windows of `heartbeatAt`, like MLflow's end
times; a run still running is stored once it stops.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from fleet.archive.parser import parse_timestamp
from fleet.canonical import SERIES_KEYS, ArtifactRecord, JobRecord, RecordError
from fleet.connectors.base import (
    SHAPE_ERRORS,
    BadData,
    BaseConnector,
    Batch,
    ConfigError,
    counter_rates,
    mapping_option,
    number_option,
    shape_problem,
    time_watermark,
    time_windows,
)
from fleet.connectors.generic import frame_from_samples
from fleet.connectors.http import HttpStatusError
from fleet.connectors.registry import register
from fleet.gpu_models import gpu_model_name
from fleet.quoting import library_error

MIB = 2**20
MAX_PAGES = 10_000  # a server whose cursors never run out stops here
# W&B run states as the states the rest of the product uses (Slurm's words); "running" and
# "pending" runs have not stopped and are not asked for.
STATES = {"finished": "COMPLETED", "failed": "FAILED", "crashed": "FAILED", "killed": "CANCELLED"}

RUNS_QUERY = """
query FleetTriageRuns($entity: String!, $project: String!, $filters: JSONString, $cursor: String,
                      $perPage: Int, $order: String) {
  project(name: $project, entityName: $entity) {
    runs(filters: $filters, after: $cursor, first: $perPage, order: $order) {
      edges { node {
        name displayName state createdAt heartbeatAt group jobType tags commit config systemMetrics
        user { username }
      } }
      pageInfo { endCursor hasNextPage }
    }
  }
}"""

EVENTS_QUERY = """
query FleetTriageRunEvents($entity: String!, $project: String!, $name: String!, $samples: Int) {
  project(name: $project, entityName: $entity) { run(name: $name) { events(samples: $samples) } }
}"""

FILES_QUERY = """
query FleetTriageRunFiles($entity: String!, $project: String!, $name: String!, $names: [String]) {
  project(name: $project, entityName: $entity) {
    run(name: $name) { files(names: $names, first: 10) { edges { node { name sizeBytes directUrl } } } }
  }
}"""
# The files of a run the rules read: the console output (log lines: data-loader warnings, pip
# installs, checkpoints) and the pinned packages. W&B saves both when it runs.
RUN_FILES = {"output.log": "log", "requirements.txt": "script"}
# The run's metadata holds its command line (`executable`, `program`, `args`) and its program's
# path from the repository's root (`codePath`); where code saving is on (`save_code=True`, or the
# project's setting), W&B keeps a copy of that program under `code/`: the training script the
# rules read for remote paths, loader settings and checkpoint calls.
METADATA_FILE = "wandb-metadata.json"
CODE_SUFFIXES = (".py", ".sh")
MAX_METADATA_BYTES = 2**20
MAX_COMMAND_CHARS = 4096  # a command line with megabytes of arguments keeps its start
# What W&B names as the program of a run started from a notebook or an interactive interpreter.
INTERACTIVE_PROGRAMS = ("<python with no main file>",)

PROJECT_QUERY = """
query FleetTriageProject($entity: String!, $project: String!) {
  project(name: $project, entityName: $entity) { name runCount }
}"""

_SYSTEM_PREFIX = re.compile(r"^system[./]")
_GPU_KEY = re.compile(r"^gpu\.(?P<gpu>\d{1,5})\.(?P<what>gpu|memoryAllocatedBytes|memoryAllocated)$")
# W&B reads every GPU its machine shows (NVML), the run's or not, and repeats the readings of those
# its process (or a child) holds a context on as `gpu.process.{i}.*`.
_PROCESS_GPU_KEY = re.compile(r"^gpu\.process\.(?P<gpu>\d{1,5})\.")
# The host's traffic, as totals since the run began: key -> (canonical rate, bytes in its unit).
# W&B's disk megabytes are 2^20 bytes (its monitor divides the byte counts by 1024 twice).
HOST_COUNTERS = {
    "network.recv": ("net_rx_bytes_per_s", 1),
    "network.sent": ("net_tx_bytes_per_s", 1),
    "disk.in": ("disk_read_bytes_per_s", MIB),
    "disk.out": ("disk_write_bytes_per_s", MIB),
}


def _key(name: str) -> str:
    """A system key without the `system.` (or `system/`) that newer SDKs and the UI put before it."""
    return _SYSTEM_PREFIX.sub("", name)


def _json_object(value, what: str) -> dict:
    """A field W&B sends as a JSON string (or, from some servers, already as an object)."""
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise TypeError(f"{what} is not a JSON object")
    return value


def run_gpus(system_metrics: dict) -> list[int]:
    """The GPU indexes that are the run's, sorted: those its process used (`gpu.process.{i}.*`), or
    where W&B could not tell (no process keys: a container whose process ids NVML does not see),
    every GPU the machine showed (`gpu.{i}.gpu`).

    Counting every GPU of the machine would give a run its neighbours' GPUs on a shared machine,
    and each rank of a distributed run (one W&B run a process) all of the machine's: eight ranks
    on an eight-GPU machine would be 64 GPUs' hours instead of 8."""
    machine, used = set(), set()
    for name in system_metrics:
        key = _key(str(name))
        match = _GPU_KEY.match(key)
        if match and match["what"] == "gpu":
            machine.add(int(match["gpu"]))
        elif match := _PROCESS_GPU_KEY.match(key):
            used.add(int(match["gpu"]))
    return sorted(used or machine)


def _time(node: dict, name: str) -> datetime:
    try:
        return parse_timestamp(node.get(name))
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _config_value(config: dict, key: str) -> str:
    value = config.get(key)
    if isinstance(value, dict):  # W&B keeps each config entry as {"value": ..., "desc": ...}
        value = value.get("value")
    return value.strip() if isinstance(value, str) else ""


def job_from_run(
    node,
    *,
    entity: str,
    project: str,
    cluster: str,
    team_key: str = "team",
    user_teams: dict[str, str] | None = None,
    default_team: str = "",
) -> JobRecord | None:
    """The canonical job of one stopped run, or None for a run that recorded no GPU metric (not a GPU
    job, or its system metrics are off) or has not stopped. Raises ValueError/TypeError/KeyError on a
    bad shape."""
    name = str(node["name"] or "")
    if not name:
        raise ValueError("the run has no name (its run id)")
    state = str(node.get("state") or "")
    system = _json_object(node.get("systemMetrics"), "systemMetrics")
    gpus = run_gpus(system)
    if not gpus or state not in STATES:  # no GPU job, or still running (a server ignoring the filter)
        return None
    start, end = _time(node, "createdAt"), _time(node, "heartbeatAt")
    if end < start:
        raise ValueError(f"heartbeatAt {end.isoformat()} is before createdAt {start.isoformat()}")
    config = _json_object(node.get("config"), "config")
    user = str((node.get("user") or {}).get("username") or "unknown")
    team = _config_value(config, team_key) or (user_teams or {}).get(user) or default_team or entity
    tags = node.get("tags") or []
    if not isinstance(tags, list):
        raise TypeError("tags is not a list")
    labels = {"wandb_entity": entity, "wandb_project": project, "wandb_run_id": name}
    for field_name, label in (("group", "wandb_group"), ("jobType", "wandb_job_type")):
        if node.get(field_name):
            labels[label] = str(node[field_name])
    if tags:
        labels["wandb_tags"] = [str(tag) for tag in tags]
    if node.get("commit"):
        labels["git_commit"] = str(node["commit"])
    return JobRecord(
        external_id=f"{entity}/{project}/{name}",  # W&B's own run path: run ids are unique per project only
        user=user,
        team=team,
        gpu_count=len(gpus),
        start_time=start,
        end_time=end,
        cluster=cluster,
        name=str(node.get("displayName") or ""),
        node_count=1,  # W&B records one machine a run; a multi-node job is a group of runs
        state=STATES[state],
        job_type="batch",
        labels=labels,
        raw={
            "entity": entity,
            "project": project,
            "run": name,
            "state": state,
            "gpus": gpus,
            "system_metric_keys": sorted(system),
        },
    )


def samples_from_events(events: list, gpus: list[int] | None = None) -> list[dict]:
    """Rows of the generic contract's samples (timestamp, host, gpu, canonical metrics) from a run's
    system-metrics stream: one row per GPU (of `gpus` only, when given: the run's, `run_gpus`) and
    a host row per sample. Memory in bytes becomes MiB; a GPU's total memory is its allocated
    memory over the allocated share, where both are recorded. Network and disk traffic, which W&B
    records as totals since the run began, become bytes a second."""
    wanted = None if gpus is None else set(gpus)
    samples = []
    hosts: dict[float, dict] = {}
    counters: dict[str, list[tuple[float, float]]] = {}
    for line in events:
        event = _json_object(line, "an events line")
        stamp = event.get("_timestamp")
        if isinstance(stamp, bool) or not isinstance(stamp, int | float):
            raise ValueError(f"an events line has no _timestamp in Unix seconds (got {stamp!r:.40})")
        readings: dict[int, dict] = {}
        host = hosts.setdefault(float(stamp), {"timestamp": float(stamp), "host": "", "gpu": None})
        for name, value in event.items():
            key = _key(name)
            match = _GPU_KEY.match(key)
            if not match and key != "cpu" and key not in HOST_COUNTERS:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} at {stamp}: the value {value!r:.40} is not a number")
            if key == "cpu":
                host["cpu_util"] = float(value)
                continue
            if key in HOST_COUNTERS:
                counters.setdefault(key, []).append((float(stamp), float(value)))
                continue
            if wanted is not None and int(match["gpu"]) not in wanted:
                continue  # another job's GPU on the same machine
            row = readings.setdefault(
                int(match["gpu"]), {"timestamp": float(stamp), "host": "", "gpu": int(match["gpu"])}
            )
            if match["what"] == "gpu":
                row["gpu_util"] = float(value)
            elif match["what"] == "memoryAllocatedBytes":
                row["gpu_mem_used_mib"] = value / MIB
            else:
                row["_mem_share"] = float(value)
        for index in sorted(readings):
            row = readings[index]
            share = row.pop("_mem_share", None)
            if share and "gpu_mem_used_mib" in row:
                row["gpu_mem_total_mib"] = row["gpu_mem_used_mib"] * 100 / share
            samples.append(row)
    for key, points in counters.items():
        metric, unit = HOST_COUNTERS[key]
        for stamp, rate in counter_rates(points, scale=unit).items():
            hosts[stamp][metric] = rate
    samples.extend(row for row in hosts.values() if len(row) > len(SERIES_KEYS))  # a metric beside its keys
    return sorted(samples, key=lambda row: (row["timestamp"], row["gpu"] is None, row["gpu"] or 0))


def _projects(options: dict) -> tuple[str, list[str]]:
    entity = options.get("entity")
    if not isinstance(entity, str) or not entity.strip():
        raise ConfigError("option 'entity' must name the W&B entity (a team or user name), e.g. \"vision-lab\"")
    projects = options.get("projects")
    if not isinstance(projects, list) or not projects or not all(isinstance(p, str) and p.strip() for p in projects):
        raise ConfigError('option \'projects\' must be a JSON list of project names, e.g. ["resnet", "llm"]')
    return entity.strip(), [p.strip() for p in projects]


def _wandb_time(moment: datetime) -> str:
    # W&B compares heartbeatAt as text: it must look exactly like its own times, with the Z.
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@register
class WandbConnector(BaseConnector):
    """A Weights & Biases server (the cloud or W&B Server). Options: `entity` and `projects`
    (required), `team_key` ("team": the run config key naming its team), `user_teams` ({user: team})
    and `default_team` for runs without it (else the entity), `window_hours` (24), `settle_minutes`
    (5), `initial_days` (1), `page_size` (100), `samples` (10,000: system-metric samples asked for
    a run), `fetch_files` (true: the run's output.log, requirements.txt and saved program),
    `artifact_max_bytes` (20 MiB). Auth: basic, user `api`, the API key as the secret."""

    kind = "wandb"
    label = "Weights & Biases (runs and their system metrics)"
    options_example = '{"entity": "vision-lab", "projects": ["resnet", "llm"]}'
    url_example = "https://api.wandb.ai"
    url_what = "the W&B API (the cloud's, or your W&B Server's address)"
    options_schema = {
        "entity": "text",
        "projects": "list of text",
        "team_key": "text",
        "user_teams": "names to names",
        "default_team": "text",
        "window_hours": "number",
        "settle_minutes": "number",
        "initial_days": "number",
        "page_size": "whole number",
        "samples": "whole number",
        "fetch_files": "true or false",
        "artifact_max_bytes": "whole number",
    }
    auth_hint = "Basic, user name api, the API key as the secret."

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        options = self.settings.options
        # The files `describe` listed for the last run it described, (job id, {name: address}), so
        # that `fetch_artifacts`, called next for the same run, need not list them again.
        self._listed: tuple[str, dict[str, str]] | None = None
        self.entity, self.projects = _projects(options)
        self.team_key = str(options.get("team_key") or "team")
        self.user_teams = mapping_option(options, "user_teams")
        self.default_team = str(options.get("default_team") or "")
        self.window = timedelta(hours=number_option(options, "window_hours", 24, low=0.01, high=24 * 366))
        # A run's heartbeat may be written a little after it stopped (W&B flushes every ~30 s).
        self.settle = timedelta(minutes=number_option(options, "settle_minutes", 5, low=0, high=24 * 60))
        self.initial = timedelta(days=number_option(options, "initial_days", 1, low=0, high=3660))
        self.page_size = number_option(options, "page_size", 100, low=1, high=1000, integer=True)
        self.samples = number_option(options, "samples", 10_000, low=10, high=1_000_000, integer=True)
        self.fetch_files = bool(options.get("fetch_files", True))
        self.artifact_max_bytes = number_option(
            options, "artifact_max_bytes", 20 * 2**20, low=0, high=2**30, integer=True
        )

    def query(self, query: str, source: str, **variables) -> dict:
        """The `data` of one GraphQL request; BadData naming `source` for GraphQL's own errors."""
        doc = self.http.request_json("POST", "graphql", json={"query": query, "variables": variables})
        if not isinstance(doc, dict):
            raise BadData(f"{source}: the answer is not a GraphQL response")
        errors = doc.get("errors")
        if errors:
            first = errors[0] if isinstance(errors, list) and errors else errors
            message = first.get("message") if isinstance(first, dict) else first
            raise BadData(f"{source}: W&B answered with an error: {str(message)[:300]}")
        data = doc.get("data")
        if not isinstance(data, dict):
            raise BadData(f"{source}: the answer has no 'data' object")
        return data

    def _project(self, data: dict, project: str, source: str) -> dict:
        found = data.get("project")
        if not isinstance(found, dict):
            raise BadData(f"{source}: no project {project!r} in entity {self.entity!r} that this API key can see")
        return found

    def check(self) -> dict:
        counts = {}
        for project in self.projects:
            source = f"{self.settings.name} project {self.entity}/{project}"
            found = self._project(
                self.query(PROJECT_QUERY, source, entity=self.entity, project=project), project, source
            )
            counts[project] = found.get("runCount")
        return {"entity": self.entity, "runs": counts}

    def list_jobs(self, watermark: str, until: datetime) -> Iterator[Batch]:
        for begin, stop in time_windows(watermark, until, settle=self.settle, initial=self.initial, window=self.window):
            jobs: list[JobRecord] = []
            errors: list[RecordError] = []
            for project in self.projects:
                found, bad = self._window(project, begin, stop)
                jobs.extend(found)
                errors.extend(bad)
            yield Batch(jobs=jobs, watermark=time_watermark(stop), errors=errors)

    def _window(self, project: str, begin: datetime, stop: datetime) -> tuple[list[JobRecord], list[RecordError]]:
        """The runs of one project that stopped in [begin, stop), every page of them."""
        filters = {
            "$and": [
                {"state": {"$in": sorted(STATES)}},
                {"heartbeatAt": {"$gte": _wandb_time(begin)}},
                {"heartbeatAt": {"$lt": _wandb_time(stop)}},
            ]
        }
        source = f"{self.settings.name} runs of {self.entity}/{project} {begin:%Y-%m-%dT%H:%M}"
        variables = {
            "entity": self.entity,
            "project": project,
            "filters": json.dumps(filters),
            "perPage": self.page_size,
            "order": "+heartbeat_at",
        }
        jobs: dict[str, JobRecord] = {}
        errors: list[RecordError] = []
        cursor = None
        row = 0
        for _page in range(MAX_PAGES):
            runs = self._project(self.query(RUNS_QUERY, source, **variables, cursor=cursor), project, source)
            try:
                connection = runs["runs"]
                edges = connection["edges"]
                page_info = connection["pageInfo"]
                if not isinstance(edges, list):
                    raise TypeError("runs.edges is not a list")
            except SHAPE_ERRORS as exc:
                raise BadData(shape_problem(source, exc)) from exc
            for edge in edges:
                row += 1
                node = edge.get("node") if isinstance(edge, dict) else None
                try:
                    job = job_from_run(
                        node,
                        entity=self.entity,
                        project=project,
                        cluster=self.settings.cluster,
                        team_key=self.team_key,
                        user_teams=self.user_teams,
                        default_team=self.default_team,
                    )
                except SHAPE_ERRORS as exc:
                    name = str(node.get("name") or "") if isinstance(node, dict) else ""
                    run_path = f"{self.entity}/{project}/{name}" if name else ""
                    errors.append(
                        RecordError(source, shape_problem(f"run {run_path or row}", exc), row=row, job_id=run_path)
                    )
                    continue
                # A run on the window's edge, or repeated on two pages, once.
                if job is not None and begin <= job.end_time < stop:
                    jobs[job.external_id] = job
            if not (isinstance(page_info, dict) and page_info.get("hasNextPage")):
                return list(jobs.values()), errors
            next_cursor = page_info.get("endCursor")
            if not next_cursor or next_cursor == cursor:
                raise BadData(f"{source}: the server says there are more pages but gives no new cursor")
            cursor = next_cursor
        raise BadData(f"{source}: more than {MAX_PAGES} pages; the server's cursors never run out")

    def fetch_series(self, job: JobRecord):
        if self.metrics is not None:  # series from Prometheus instead, found by the job's labels
            return super().fetch_series(job)
        raw = job.raw
        source = f"{self.settings.name} system metrics of run {job.external_id}"
        data = self.query(
            EVENTS_QUERY, source, entity=raw["entity"], project=raw["project"], name=raw["run"], samples=self.samples
        )
        try:
            run = self._project(data, raw["project"], source)["run"]
            if run is None:
                raise BadData(f"{source}: W&B no longer has this run")
            events = run["events"] or []
            if not isinstance(events, list):
                raise TypeError("events is not a list")
            samples = samples_from_events(events, raw["gpus"])
        except SHAPE_ERRORS as exc:
            raise BadData(f"{source}: {library_error(exc)}") from exc
        return frame_from_samples({"samples": samples}, job=job, source=source)

    def describe(self, job: JobRecord) -> JobRecord:
        """The run with its command line and saved program, from its metadata file; a run started
        from a notebook is an interactive session, as the taxonomy judges those apart. Its GPU model
        (what prices it) is the metadata's too (`run_gpu_model`)."""
        if not self.fetch_files:
            return job
        source = f"{self.settings.name} metadata of run {job.external_id}"
        self._listed = None
        found = self._file_addresses(job, [METADATA_FILE, *RUN_FILES], source)  # the files too: one listing
        self._listed = (job.external_id, found)
        metadata = self._download(found.get(METADATA_FILE, ""), MAX_METADATA_BYTES)
        program = run_program(metadata) if metadata is not None else None
        model = run_gpu_model(metadata) if metadata is not None else ""
        if model and not job.gpu_model:
            job = replace(job, gpu_model=model)
        if program is None:
            return job
        return replace(
            job,
            command=program.command,
            job_type="interactive" if program.interactive else job.job_type,
            raw=job.raw | {"code_file": program.code_file},
        )

    def fetch_artifacts(self, job: JobRecord) -> list[ArtifactRecord]:
        if not self.fetch_files:
            return []
        source = f"{self.settings.name} files of run {job.external_id}"
        listed, self._listed = self._listed, None
        if listed and listed[0] == job.external_id:
            found = listed[1]
        else:  # not described (its metadata could not be listed): list the files now
            found = self._file_addresses(job, [*RUN_FILES], source)
        wanted = dict(RUN_FILES)
        if job.raw.get("code_file"):  # found by `describe`, from the metadata it listed
            wanted[job.raw["code_file"]] = "script"
            found = found | self._file_addresses(job, [job.raw["code_file"]], source)
        out = []
        for name, kind in sorted(wanted.items()):
            if kind == "log":  # output.log read through: its first and last halves (its end says why it ended)
                kept = self._download(found.get(name, ""), self.artifact_max_bytes, head_tail=True)
                if kept is not None:
                    out.append(ArtifactRecord(job.external_id, kind, name, kept[0], truncated=kept[1]))
                continue
            content = self._download(found.get(name, ""), self.artifact_max_bytes + 1)
            if content is not None:
                out.append(ArtifactRecord.capped(job.external_id, kind, name, content, self.artifact_max_bytes))
        return out

    def _file_addresses(self, job: JobRecord, names: list[str], source: str) -> dict[str, str]:
        """The pre-signed addresses of those of a run's files that W&B lists, by name ("" for a
        file listed but not uploaded yet)."""
        raw = job.raw
        data = self.query(
            FILES_QUERY, source, entity=raw["entity"], project=raw["project"], name=raw["run"], names=sorted(names)
        )
        try:
            run = self._project(data, raw["project"], source)["run"]
            edges = (run or {}).get("files", {}).get("edges") or []
            files = [edge["node"] for edge in edges]
            return {str(f["name"]): str(f.get("directUrl") or "") for f in files if f["name"] in names}
        except SHAPE_ERRORS as exc:
            raise BadData(shape_problem(source, exc)) from exc

    def _download(self, address: str, max_bytes: int, *, head_tail: bool = False):
        """A file from its pre-signed address (with `head_tail`, a log's (content, truncated) as
        `fleet.logcut` keeps it); None when there is none, or storage no longer has it."""
        if not address:
            return None
        try:
            return self.http.get_signed_bytes(address, max_bytes=max_bytes, head_tail=head_tail)
        except HttpStatusError as exc:
            if exc.status in (403, 404):  # gone from storage since it was listed, or expired
                return None
            raise


@dataclass(frozen=True)
class RunProgram:
    """What a run's metadata says it ran."""

    command: str  # the command line, e.g. "/usr/bin/python3 src/train.py --epochs 3"
    interactive: bool  # started from a notebook or an interactive interpreter
    code_file: str | None  # where W&B keeps a copy of the program (`code/<codePath>`), if a script


def run_program(metadata: bytes) -> RunProgram | None:
    """The program a run's `wandb-metadata.json` names, or None when it names none (or is not a
    JSON object: cut off at the size cap, not UTF-8). A saved copy is looked for only for a script
    inside the repository: not a notebook, nor a path leading out of it."""
    try:
        doc = json.loads(metadata)
    except (ValueError, RecursionError):
        return None
    program = doc.get("program") if isinstance(doc, dict) else None
    if not isinstance(program, str) or not program.strip():
        return None
    words = [program]
    if isinstance(doc.get("executable"), str) and doc["executable"].strip():
        words.insert(0, doc["executable"])
    args = doc.get("args")
    if isinstance(args, list):
        words += [str(arg) for arg in args if isinstance(arg, str | int | float)]
    interactive = program in INTERACTIVE_PROGRAMS or program.endswith(".ipynb")
    return RunProgram(shlex.join(words)[:MAX_COMMAND_CHARS], interactive, _code_file(doc.get("codePath")))


def run_gpu_model(metadata: bytes) -> str:
    """The run's GPU model as its `wandb-metadata.json` names it (nvidia-smi's name, `NVIDIA A100-SXM4-80GB`:
    its `gpu`, else its first `gpu_nvidia` entry's `name`), "" when it names none."""
    try:
        doc = json.loads(metadata)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(doc, dict):
        return ""
    found = doc.get("gpu")
    devices = doc.get("gpu_nvidia")
    if not isinstance(found, str) and isinstance(devices, list) and devices and isinstance(devices[0], dict):
        found = devices[0].get("name")
    return gpu_model_name(found) if isinstance(found, str) else ""


def _code_file(path) -> str | None:
    if not isinstance(path, str) or len(path) > 255 or not path.endswith(CODE_SUFFIXES):
        return None
    if path.startswith("/") or "\\" in path or ".." in path.split("/"):
        return None
    return f"code/{path}"
