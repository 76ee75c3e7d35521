"""MLflow tracking servers: runs as jobs, and the system metrics MLflow logs for them as series,
for teams whose cluster has no DCGM exporter (shared/reference/platform-apis.md §8).

    POST {url}/api/2.0/mlflow/runs/search   {"experiment_ids", "filter", "order_by", "max_results", "page_token"}
        -> {"runs": [{"info": {...}, "data": {"metrics": [...], "tags": [...]}}], "next_page_token"}
    GET  {url}/api/2.0/mlflow/metrics/get-history  ?run_id=&metric_key=&max_results=&page_token=
        -> {"metrics": [{"key", "value", "timestamp" (ms), "step"}], "next_page_token"}
    GET  {url}/api/2.0/mlflow/artifacts/list  ?run_id=&path=&page_token=
        -> {"root_uri", "files": [{"path", "is_dir", "file_size"}], "next_page_token"}
    GET  {url}/get-artifact  ?run_uuid=&path=   -> the file (the tracking server's own download
        route, which its UI uses; it serves the file from whatever artifact store the run has)

MLflow logs system metrics (`log_system_metrics=True`) every 10 s under `system/`, or
`system/<node_id>/` when `MLFLOW_SYSTEM_METRICS_NODE_ID` is set: `gpu_{i}_utilization_percentage`,
`gpu_{i}_memory_usage_megabytes` (10^6 bytes), `gpu_{i}_memory_usage_percentage`,
`cpu_utilization_percentage`, `system_memory_usage_megabytes`, `network_receive_megabytes` and
`network_transmit_megabytes` (totals since the run began). A run's `data.metrics` holds the
latest value of every key it logged, which says which series to ask for and how many GPUs it had.

Runs are pulled in windows of their end time, like Slurm's jobs: a run still running has no end
time and is stored once it ends.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from fnmatch import fnmatchcase

from fleet.archive.parser import parse_timestamp
from fleet.canonical import ArtifactRecord, JobRecord, RecordError
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
from fleet.quoting import library_error

API = "api/2.0/mlflow"
SEARCH_PAGE_SIZE = 500
HISTORY_PAGE_SIZE = 25_000  # Databricks' cap on get-history's max_results
MAX_PAGES = 10_000  # a server whose page tokens never run out stops here
MEGABYTE_MIB = 1e6 / 2**20  # MLflow's megabytes are 10^6 bytes
# MLflow run states as the states the rest of the product uses (Slurm's words).
STATES = {"FINISHED": "COMPLETED", "FAILED": "FAILED", "KILLED": "CANCELLED"}

# system/[<node>/]gpu_<i>_<what> and system/[<node>/]<host metric>
_GPU_KEY = re.compile(r"^system/(?:(?P<node>[^/]+)/)?gpu_(?P<gpu>\d{1,5})_(?P<what>[a-z_]+)$")
_HOST_KEY = re.compile(
    r"^system/(?:(?P<node>[^/]+)/)?(?P<what>cpu_utilization_percentage|system_memory_usage_megabytes"
    r"|network_receive_megabytes|network_transmit_megabytes)$"
)
# The host's network traffic, which MLflow logs as megabytes since the run began (older versions:
# since the machine booted): the canonical rate each total becomes.
NETWORK_TOTALS = {"network_receive_megabytes": "net_rx_bytes_per_s", "network_transmit_megabytes": "net_tx_bytes_per_s"}
GPU_SERIES = ("utilization_percentage", "memory_usage_megabytes", "memory_usage_percentage")
# The artifacts the rules can read, as people log them (`mlflow.log_artifact("train.log")`, a
# model's pinned packages, the training script), at the root or one folder down.
ARTIFACT_PATTERNS = ("*.log", "*.out", "*.err", "stdout*", "stderr*", "requirements.txt", "*/requirements.txt",
                     "*.py", "*.sh")  # fmt: skip
SCRIPT_SUFFIXES = (".py", ".sh", ".txt")  # requirements.txt is a script, as in archives
MAX_ARTIFACTS = 20  # a run that logged thousands of matching files keeps its first ones


def system_keys(metric_keys) -> list[str]:
    """The system-metric keys of a run that become series (GPU utilization and memory, CPU, host
    memory), in a stable order."""
    keep = []
    for key in metric_keys:
        gpu = _GPU_KEY.match(key)
        if (gpu and gpu["what"] in GPU_SERIES) or _HOST_KEY.match(key):
            keep.append(key)
    return sorted(set(keep))


def _devices(keys: list[str]) -> tuple[set[tuple[str, int]], set[str]]:
    """The (node, GPU index) pairs and the nodes a run's system keys name ("" for no node id)."""
    gpus, nodes = set(), set()
    for key in keys:
        match = _GPU_KEY.match(key) or _HOST_KEY.match(key)
        nodes.add(match["node"] or "")
        if match.re is _GPU_KEY:
            gpus.add((match["node"] or "", int(match["gpu"])))
    return gpus, nodes


def _ms_time(value, name: str) -> datetime:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)  # the REST API's int64 fields may arrive as JSON strings
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be milliseconds since the epoch (got {value!r:.40})")
    return parse_timestamp(value / 1000)  # within the years any job can have run, or ValueError


def _pairs(items, what: str) -> dict[str, str]:
    if not isinstance(items, list):
        raise TypeError(f"data.{what} is not a list")
    return {str(item["key"]): str(item.get("value", "")) for item in items}


def job_from_run(
    run,
    *,
    cluster: str,
    team_tag: str = "team",
    user_teams: dict[str, str] | None = None,
    default_team: str = "",
) -> JobRecord | None:
    """The canonical job of one finished run, or None for a run that logged no GPU metrics (not a
    GPU job, or its system metrics are off) or has not ended. Raises ValueError/TypeError/KeyError
    on a bad shape."""
    info, data = run["info"], run.get("data") or {}
    run_id = str(info.get("run_id") or info.get("run_uuid") or "")
    if not run_id:
        raise ValueError("the run has no run_id")
    tags = _pairs(data.get("tags") or [], "tags")
    keys = system_keys(item["key"] for item in (data.get("metrics") or []))
    gpus, nodes = _devices(keys)
    if not gpus or info.get("end_time") in (None, 0, "0"):  # no GPU job, or not ended (a server ignoring the filter)
        return None
    start = _ms_time(info.get("start_time"), "start_time")
    end = _ms_time(info.get("end_time"), "end_time")
    if end < start:
        raise ValueError(f"end_time {end.isoformat()} is before start_time {start.isoformat()}")
    user = str(info.get("user_id") or tags.get("mlflow.user") or "unknown")
    team = tags.get(team_tag) or (user_teams or {}).get(user) or default_team or "unassigned"
    source = tags.get("mlflow.source.name", "")
    commit = tags.get("mlflow.source.git.commit", "")
    labels = {"mlflow_experiment_id": str(info.get("experiment_id") or ""), "mlflow_run_id": run_id}
    if any(nodes):
        labels["nodes"] = sorted(node for node in nodes if node)
    if commit:
        labels["git_commit"] = commit
    return JobRecord(
        external_id=run_id,
        user=user,
        team=team,
        gpu_count=len(gpus),
        start_time=start,
        end_time=end,
        cluster=cluster,
        name=str(info.get("run_name") or tags.get("mlflow.runName") or ""),
        node_count=max(1, len({node for node, _ in gpus})),
        state=STATES.get(str(info.get("status") or ""), str(info.get("status") or "")),
        # A run started from a notebook is an interactive session: the taxonomy judges those apart.
        job_type="interactive" if tags.get("mlflow.source.type") == "NOTEBOOK" else "batch",
        command=source,
        labels=labels,
        raw={"info": info, "tags": tags, "system_metric_keys": keys},
    )


def samples_from_histories(histories: dict[str, list]) -> list[dict]:
    """Rows of the generic contract's samples (timestamp, host, gpu, canonical metrics) from the
    histories of a run's system keys: MLflow logs all of them in one batch, so the keys of one
    device share their timestamps. Memory in MLflow's megabytes becomes MiB; a GPU's total memory
    is its used memory over the used share, where both are logged. The network totals become bytes
    a second."""
    rows: dict[tuple[int, str, int | None], dict] = {}
    totals: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for key, points in histories.items():
        gpu_match, host_match = _GPU_KEY.match(key), _HOST_KEY.match(key)
        match = gpu_match or host_match
        node = match["node"] or ""
        gpu = int(gpu_match["gpu"]) if gpu_match else None
        for point in points:
            stamp = int(point["timestamp"])
            value = point["value"]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{key} at {stamp}: the value {value!r:.40} is not a number")
            what = match["what"]
            if what in NETWORK_TOTALS:
                totals.setdefault((node, NETWORK_TOTALS[what]), []).append((stamp / 1000, float(value)))
                continue
            row = rows.setdefault((stamp, node, gpu), {"timestamp": stamp / 1000, "host": node, "gpu": gpu})
            if what == "utilization_percentage":
                row["gpu_util"] = float(value)
            elif what == "memory_usage_megabytes":
                row["gpu_mem_used_mib"] = value * MEGABYTE_MIB
            elif what == "memory_usage_percentage":
                row["_mem_share"] = float(value)
            elif what == "cpu_utilization_percentage":
                row["cpu_util"] = float(value)
            elif what == "system_memory_usage_megabytes":
                row["host_mem_used_mib"] = value * MEGABYTE_MIB
    for (node, metric), points in totals.items():
        for seconds, rate in counter_rates(points, scale=1e6).items():
            stamp = round(seconds * 1000)
            rows.setdefault((stamp, node, None), {"timestamp": stamp / 1000, "host": node, "gpu": None})[metric] = rate
    samples = []
    for row in rows.values():
        share = row.pop("_mem_share", None)
        if share and "gpu_mem_used_mib" in row:
            row["gpu_mem_total_mib"] = row["gpu_mem_used_mib"] * 100 / share
        samples.append(row)
    return sorted(samples, key=lambda row: (row["timestamp"], row["host"], row["gpu"] is None, row["gpu"] or 0))


def _experiment_ids(options: dict) -> list[str]:
    ids = options.get("experiment_ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str | int) and str(i) for i in ids):
        raise ConfigError('option \'experiment_ids\' must be a JSON list of experiment ids, e.g. ["0", "12"]')
    return [str(i) for i in ids]


@register
class MlflowConnector(BaseConnector):
    """An MLflow tracking server. Options: `experiment_ids` (required: the experiments to pull),
    `team_tag` ("team": the run tag that names its team), `user_teams` ({user: team}) and
    `default_team` for runs without that tag, `window_hours` (24), `settle_minutes` (2),
    `initial_days` (1), `page_size` (500), `fetch_artifacts` (true), `artifact_patterns` (the logs,
    scripts and requirements.txt to fetch), `artifact_max_bytes` (20 MiB). Auth: a bearer token
    (Databricks, most servers) or basic auth (`mlflow server --app-name basic-auth`)."""

    kind = "mlflow"
    label = "MLflow (runs and their system metrics)"
    options_example = '{"experiment_ids": ["7", "12"], "team_tag": "team"}'
    url_example = "http://mlflow:5000"
    url_what = "the MLflow tracking server"
    options_schema = {
        "experiment_ids": "list of ids",
        "team_tag": "text",
        "user_teams": "names to names",
        "default_team": "text",
        "window_hours": "number",
        "settle_minutes": "number",
        "initial_days": "number",
        "page_size": "whole number",
        "fetch_artifacts": "true or false",
        "artifact_patterns": "list of text",
        "artifact_max_bytes": "whole number",
    }
    auth_hint = "Bearer (Databricks, most servers) or basic."

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        options = self.settings.options
        self.experiment_ids = _experiment_ids(options)
        self.team_tag = str(options.get("team_tag") or "team")
        self.user_teams = mapping_option(options, "user_teams")
        self.default_team = str(options.get("default_team") or "")
        self.window = timedelta(hours=number_option(options, "window_hours", 24, low=0.01, high=24 * 366))
        self.settle = timedelta(minutes=number_option(options, "settle_minutes", 2, low=0, high=24 * 60))
        self.initial = timedelta(days=number_option(options, "initial_days", 1, low=0, high=3660))
        self.page_size = number_option(options, "page_size", SEARCH_PAGE_SIZE, low=1, high=50_000, integer=True)
        self.fetch_files = bool(options.get("fetch_artifacts", True))
        self.artifact_max_bytes = number_option(
            options, "artifact_max_bytes", 20 * 2**20, low=0, high=2**30, integer=True
        )
        patterns = options.get("artifact_patterns", list(ARTIFACT_PATTERNS))
        if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
            raise ConfigError("option 'artifact_patterns' must be a JSON list of file patterns, e.g. [\"*.log\"]")
        self.artifact_patterns = patterns

    def check(self) -> dict:
        names = {}
        for experiment_id in self.experiment_ids:
            doc = self.http.get_json(f"{API}/experiments/get", params={"experiment_id": experiment_id})
            experiment = doc.get("experiment") if isinstance(doc, dict) else None
            if not isinstance(experiment, dict):
                raise BadData(f"{self.settings.name}: experiments/get answered without an experiment")
            names[experiment_id] = str(experiment.get("name") or "")
        return {"experiments": names}

    def list_jobs(self, watermark: str, until: datetime) -> Iterator[Batch]:
        for begin, stop in time_windows(watermark, until, settle=self.settle, initial=self.initial, window=self.window):
            jobs, errors = self._window(begin, stop)
            yield Batch(jobs=jobs, watermark=time_watermark(stop), errors=errors)

    def _window(self, begin: datetime, stop: datetime) -> tuple[list[JobRecord], list[RecordError]]:
        """The runs that ended in [begin, stop), every page of them."""
        begin_ms, stop_ms = int(begin.timestamp() * 1000), int(stop.timestamp() * 1000)
        body = {
            "experiment_ids": self.experiment_ids,
            "filter": f"attributes.end_time >= {begin_ms} AND attributes.end_time < {stop_ms}",
            "order_by": ["attributes.end_time ASC"],
            "max_results": self.page_size,
        }
        source = f"{self.settings.name} runs/search {begin:%Y-%m-%dT%H:%M}"
        jobs: dict[str, JobRecord] = {}
        errors: list[RecordError] = []

        def search(token: str):
            return self.http.request_json("POST", f"{API}/runs/search", json=body | _token(token))

        for runs in _pages(search, "runs", source):
            for row, run in enumerate(runs, start=1):
                try:
                    job = job_from_run(
                        run,
                        cluster=self.settings.cluster,
                        team_tag=self.team_tag,
                        user_teams=self.user_teams,
                        default_team=self.default_team,
                    )
                except SHAPE_ERRORS as exc:
                    run_id = _run_id_of(run)
                    errors.append(
                        RecordError(source, shape_problem(f"run {run_id or row}", exc), row=row, job_id=run_id)
                    )
                    continue
                # A run that ended on the window's edge, or that a server repeats on two pages, once.
                if job is not None and begin <= job.end_time < stop:
                    jobs[job.external_id] = job
        return list(jobs.values()), errors

    def fetch_series(self, job: JobRecord):
        if self.metrics is not None:  # series from Prometheus instead, found by the job's labels
            return super().fetch_series(job)
        histories = {key: self._history(job.external_id, key) for key in job.raw.get("system_metric_keys", [])}
        source = f"{self.settings.name} system metrics of run {job.external_id}"
        try:
            samples = samples_from_histories(histories)
        except SHAPE_ERRORS as exc:
            raise BadData(f"{source}: {library_error(exc)}") from exc
        return frame_from_samples({"samples": samples}, job=job, source=source)

    def fetch_artifacts(self, job: JobRecord) -> list[ArtifactRecord]:
        if not self.fetch_files:
            return []
        out = []
        for path in self._artifact_paths(job.external_id)[:MAX_ARTIFACTS]:
            kind = "script" if path.endswith(SCRIPT_SUFFIXES) else "log"
            params = {"run_uuid": job.external_id, "path": path}
            try:
                if kind == "log":  # read through: its first and last halves (its end says why the run ended)
                    content, cut = self.http.get_head_tail(
                        "get-artifact", params=params, max_bytes=self.artifact_max_bytes
                    )
                    out.append(ArtifactRecord(job.external_id, kind, path, content, truncated=cut))
                    continue
                content = self.http.get_bytes("get-artifact", params=params, max_bytes=self.artifact_max_bytes + 1)
            except HttpStatusError as exc:
                if exc.status == 404:  # deleted from the artifact store since it was listed
                    continue
                raise
            out.append(ArtifactRecord.capped(job.external_id, kind, path, content, self.artifact_max_bytes))
        return out

    def _artifact_paths(self, run_id: str) -> list[str]:
        """The run's artifact files that match the patterns: the root, and the folders one level down."""
        root = self._listing(run_id, "")
        items = list(root)
        for folder in (str(item["path"]) for item in root if item.get("is_dir") and item.get("path")):
            items.extend(self._listing(run_id, folder))
        return sorted(
            {
                path
                for path in (str(item.get("path") or "") for item in items if not item.get("is_dir"))
                if any(fnmatchcase(path, pattern) for pattern in self.artifact_patterns)
            }
        )

    def _listing(self, run_id: str, folder: str) -> list[dict]:
        params = {"run_id": run_id} | ({"path": folder} if folder else {})

        def listing(token: str):
            return self.http.get_json(f"{API}/artifacts/list", params=params | _token(token))

        source = f"{self.settings.name} artifacts/list of run {run_id}" + (f" in {folder}" if folder else "")
        items = [item for page in _pages(listing, "files", source) for item in page]
        if not all(isinstance(item, dict) for item in items):
            raise BadData(f"{source}: 'files' must be a list of objects")
        return items

    def _history(self, run_id: str, key: str) -> list[dict]:
        params = {"run_id": run_id, "metric_key": key, "max_results": HISTORY_PAGE_SIZE}

        def history(token: str):
            return self.http.get_json(f"{API}/metrics/get-history", params=params | _token(token))

        source = f"{self.settings.name} get-history of {key} for run {run_id}"
        return [point for page in _pages(history, "metrics", source) for point in page]


def _token(token: str) -> dict:
    return {"page_token": token} if token else {}


def _pages(fetch, items: str, source: str) -> Iterator[list]:
    """The `items` list of every page `fetch(page_token)` answers, following `next_page_token`."""
    token = ""
    for _page in range(MAX_PAGES):
        doc = fetch(token)
        page = doc.get(items, []) if isinstance(doc, dict) else None  # an empty answer leaves the list out
        if not isinstance(page, list):
            raise BadData(f"{source}: expected an object with a {items!r} list")
        yield page
        token = str(doc.get("next_page_token") or "")
        if not token:
            return
    raise BadData(f"{source}: more than {MAX_PAGES} pages; the server's page tokens never run out")


def _run_id_of(run) -> str:
    info = run.get("info") if isinstance(run, dict) else None
    return str(info.get("run_id") or "") if isinstance(info, dict) else ""
