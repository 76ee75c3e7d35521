"""Prometheus (`/api/v1/query_range`) with dcgm-exporter and node_exporter series.

Pure part (no Django, tested on bytes): `parse_query_range` reads a response body,
`frame_from_results` turns series into the canonical frame, `dcgm_selectors` builds the PromQL
that finds one job's GPUs. The connector class adds HTTP, windows and label autodetection.

What the normaliser handles (platform-apis.md §1–3):
- dcgm-exporter names -> canonical metrics: GPU_UTIL (else 100 x PROF_GR_ENGINE_ACTIVE; always so on a
  MIG instance, whose GPU_UTIL is unsupported and reads 0) -> gpu_util; FB_USED -> gpu_mem_used_mib and
  FB_USED + FB_FREE (+ FB_RESERVED) -> gpu_mem_total_mib (MiB); PROF_SM_ACTIVE (else
  PROF_GR_ENGINE_ACTIVE) -> sm_active; PIPE_TENSOR_ACTIVE, DRAM_ACTIVE (ratios 0–1);
  PROF_PCIE_RX/TX_BYTES (B/s). node_exporter counters through rate(), joined to node names by
  node_uname_info.
- both `hostname` and `Hostname` labels (renamed upstream on 2026-05-12); `nodename`/`instance`
  as a last resort for host-level series.
- placeholder values (>= 9.2e18, DCGM's "not supported" sentinels), NaN and ±Inf are dropped.
- points outside [job start, job end] are clipped (the 5-minute staleness lookback makes a series
  "extend" past its last scrape).
- a GPU that appears in several series at once (shared by several `hpc_job`s, or reported under
  both host label spellings) is one device: the first reading is kept, readings are never summed.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd

from fleet import series as series_lib
from fleet.canonical import METRICS
from fleet.connectors.base import BadData, BaseConnector, Batch, ConfigError, json_document, number_option
from fleet.connectors.registry import register
from fleet.quoting import library_error

# DCGM values at or above this are sentinels for "field not supported / blank", not data.
PLACEHOLDER_MIN = 9.2e18
MAX_POINTS_PER_SERIES = 11_000  # Prometheus refuses query_range with more points per series
DEFAULT_STEP_S = 30.0

DCGM_METRICS: dict[str, str] = {
    "DCGM_FI_DEV_GPU_UTIL": "gpu_util",
    "DCGM_FI_DEV_FB_USED": "gpu_mem_used_mib",
    "DCGM_FI_DEV_FB_FREE": "_fb_free_mib",
    "DCGM_FI_DEV_FB_RESERVED": "_fb_reserved_mib",
    "DCGM_FI_PROF_SM_ACTIVE": "sm_active",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "_gr_engine_active",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "tensor_active",
    "DCGM_FI_PROF_DRAM_ACTIVE": "dram_active",
    "DCGM_FI_PROF_PCIE_RX_BYTES": "pcie_rx_bytes_per_s",
    "DCGM_FI_PROF_PCIE_TX_BYTES": "pcie_tx_bytes_per_s",
}
HOST_LABELS = ("hostname", "Hostname", "nodename", "instance")
GPU_METRIC = "DCGM_FI_DEV_GPU_UTIL"
# `/api/v1/labels` is always asked over a time range: without one, Thanos and Mimir look through every
# block they hold (years of them) and slow down, hit their limits or time out. A job's labels are its UTC
# days' (asked once a pull, shared by the pull's other jobs of those days); a check asks over the last day.
LABELS_DAY_S = 86_400
LABELS_MAX_DAYS = 3  # a job over more days not yet asked: one request over its own window instead
# Node-level series from node_exporter; `{rate}` is the rate window, `{nodes}` the node name regex.
# node_exporter's `instance` is ip:port, so the node name comes from node_uname_info.
_NODE_JOIN = ' * on(instance) group_left(nodename) node_uname_info{{nodename=~"{nodes}"}}'
NODE_QUERIES: dict[str, str] = {
    "cpu_util": '100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{{mode="idle"}}[{rate}])))' + _NODE_JOIN,
    "host_mem_used_mib": "(node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes) / 1048576" + _NODE_JOIN,
    "net_rx_bytes_per_s": "sum by (instance) (rate(node_network_receive_bytes_total"
    '{{device!~"lo|veth.*|docker.*|cali.*|flannel.*|cni.*"}}[{rate}]))' + _NODE_JOIN,
    "net_tx_bytes_per_s": "sum by (instance) (rate(node_network_transmit_bytes_total"
    '{{device!~"lo|veth.*|docker.*|cali.*|flannel.*|cni.*"}}[{rate}]))' + _NODE_JOIN,
    "disk_read_bytes_per_s": "sum by (instance) (rate(node_disk_read_bytes_total"
    '{{device!~"loop.*|ram.*|dm-.*"}}[{rate}]))' + _NODE_JOIN,
    "disk_write_bytes_per_s": "sum by (instance) (rate(node_disk_written_bytes_total"
    '{{device!~"loop.*|ram.*|dm-.*"}}[{rate}]))' + _NODE_JOIN,
}


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    timestamps: np.ndarray  # float seconds
    values: np.ndarray  # float64


@dataclass(frozen=True)
class SeriesRequest:
    """Which GPUs (and hosts) were one job's, and when. Built by the connector that lists the job."""

    start: datetime
    end: datetime
    hpc_job: str = ""  # Slurm job id as dcgm-exporter's `hpc_job` label carries it
    hosts: tuple[str, ...] = ()  # the job's nodes
    gpus: tuple[int, ...] = ()  # GPU indexes on those nodes, when known (empty: all of them)
    namespace: str = ""  # Kubernetes
    pods: tuple[str, ...] = ()
    exclusive: bool = False  # the job had its nodes to itself: node-level series are the job's


def request_from_labels(job) -> SeriesRequest:
    """A request from a job's labels: `hpc_job`, `hosts` (or `nodes`), `gpus`, `namespace`, `pods`, `exclusive`."""
    labels = job.labels or {}

    def names(key: str) -> tuple[str, ...]:
        value = labels.get(key) or ()
        return (value,) if isinstance(value, str) else tuple(str(v) for v in value)

    return SeriesRequest(
        start=job.start_time,
        end=job.end_time,
        hpc_job=str(labels.get("hpc_job") or ""),
        hosts=names("hosts") or names("nodes"),
        gpus=tuple(int(g) for g in labels.get("gpus") or ()),
        namespace=str(labels.get("namespace") or ""),
        pods=names("pods"),
        exclusive=bool(labels.get("exclusive", False)),
    )


# ---------------------------------------------------------------------------------------------
# Pure normalisers
# ---------------------------------------------------------------------------------------------
def parse_query_range(data: bytes | str | dict, *, source: str = "query_range") -> list[Series]:
    """The series of one `query_range` response; BadData for an error response or a wrong shape."""
    doc = json_document(data, source)
    if not isinstance(doc, dict):
        raise BadData(f"{source}: expected a JSON object")
    if doc.get("status") != "success":
        raise BadData(f"{source}: Prometheus error {doc.get('errorType', '')}: {doc.get('error', doc.get('status'))}")
    payload = doc.get("data") or {}
    if not isinstance(payload, dict) or not isinstance(payload.get("result") or [], list):
        raise BadData(f"{source}: expected 'data' to be an object with a 'result' list")
    if payload.get("resultType") not in ("matrix", "vector"):
        raise BadData(f"{source}: expected a matrix result, got {payload.get('resultType')!r}")
    out = []
    for item in payload.get("result") or []:
        if not isinstance(item, dict):
            raise BadData(f"{source}: a result is not an object")
        points = item.get("values")
        if points is None and "value" in item:  # instant vector
            points = [item["value"]]
        try:
            array = np.array([(float(t), _value(v)) for t, v in points or []], dtype="float64").reshape(-1, 2)
        except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: a time of 10^400
            raise BadData(f'{source}: a sample is not [time, "value"] ({library_error(exc)})') from exc
        labels = item.get("metric") or {}
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            raise BadData(f"{source}: a result's 'metric' is not an object of label names and text values")
        out.append(Series(labels=dict(labels), timestamps=array[:, 0], values=array[:, 1]))
    return out


def _value(text) -> float:
    try:
        return float(text)  # "NaN", "+Inf" included
    except (TypeError, ValueError):
        return math.nan


def host_of(labels: dict[str, str]) -> str:
    for name in HOST_LABELS:
        if labels.get(name):
            return labels[name]
    return ""


def canonical_name(labels: dict[str, str], fallback: str = "") -> str | None:
    """The canonical (or internal `_`) column a series belongs to, None when it is not one we keep."""
    name = labels.get("__name__") or fallback
    if name in DCGM_METRICS:
        return DCGM_METRICS[name]
    if name in METRICS:
        return name
    return None


def frame_from_results(
    results: Iterable[tuple[str | None, Series]], *, start: datetime, end: datetime
) -> pd.DataFrame | None:
    """The normalised frame for (metric column or None = read `__name__`, series) pairs, clipped to the job.

    None when no sample survives. Placeholders, NaN and ±Inf are dropped; a (host, gpu, time, metric)
    reading seen twice keeps its first value — readings of one GPU are never summed.
    """
    start_s, end_s = start.timestamp(), end.timestamp()
    parts = []
    for metric, item in results:
        column = metric if metric is not None else canonical_name(item.labels)
        if column is None or item.timestamps.size == 0:
            continue
        if column == "gpu_util" and item.labels.get("GPU_I_ID"):
            # A MIG instance: DCGM does not support GPU_UTIL there, and dcgm-exporter reports it as
            # 0 — read as data, a busy slice would look idle. Its utilization comes from
            # GR_ENGINE_ACTIVE below, as NVIDIA advises.
            continue
        keep = (
            np.isfinite(item.values)
            & (np.abs(item.values) < PLACEHOLDER_MIN)
            & (item.timestamps >= start_s)
            & (item.timestamps <= end_s)
        )
        if not keep.any():
            continue
        gpu = item.labels.get("gpu", "")
        instance = item.labels.get("GPU_I_ID", "")
        parts.append(
            pd.DataFrame(
                {
                    "timestamp": item.timestamps[keep],
                    "host": host_of(item.labels),
                    "gpu": int(gpu) if gpu.isdigit() else -1,
                    "instance": int(instance) if instance.isdigit() and gpu.isdigit() else -1,
                    "metric": column,
                    "value": item.values[keep],
                }
            )
        )
    if not parts:
        return None
    long = pd.concat(parts, ignore_index=True)
    # Two MIG instances of one GPU in the job are two devices (two slices, two readings), not one GPU
    # whose readings collide; a job on one instance of a GPU keeps the GPU's index.
    mig = long[long["instance"] >= 0]
    if not mig.empty:
        instances = mig.groupby(["host", "gpu"])["instance"].nunique()
        several = set(instances[instances > 1].index)
        split = (long["instance"] >= 0) & pd.Series(
            [key in several for key in zip(long["host"], long["gpu"], strict=True)], index=long.index
        )
        if split.any():
            long.loc[split, "gpu"] = series_lib.mig_device(long.loc[split, "gpu"], long.loc[split, "instance"])
    long = long.drop(columns="instance")
    long["timestamp"] = (long["timestamp"] * 1000).round().astype("int64")
    long = long.drop_duplicates(subset=["timestamp", "host", "gpu", "metric"], keep="first")
    wide = long.pivot(index=["timestamp", "host", "gpu"], columns="metric", values="value").reset_index()
    wide.columns.name = None
    if "_fb_free_mib" in wide.columns and "gpu_mem_used_mib" in wide.columns:
        reserved = wide["_fb_reserved_mib"].fillna(0.0) if "_fb_reserved_mib" in wide.columns else 0.0
        wide["gpu_mem_total_mib"] = wide["gpu_mem_used_mib"] + wide["_fb_free_mib"] + reserved
    if "_gr_engine_active" in wide.columns:
        engine = wide["_gr_engine_active"]
        if "sm_active" in wide.columns:
            wide["sm_active"] = wide["sm_active"].fillna(engine)
        else:
            wide["sm_active"] = engine
        # Where GPU_UTIL has no reading (MIG instances; exporters configured without it), the share
        # of time the graphics/compute engine was busy is the same measure, as a ratio.
        wide["gpu_util"] = wide["gpu_util"].fillna(engine * 100.0) if "gpu_util" in wide.columns else engine * 100.0
    if "gpu_util" not in wide.columns:
        wide["gpu_util"] = np.nan
    wide["timestamp"] = pd.to_datetime(wide["timestamp"], unit="ms", utc=True)
    wide["gpu"] = wide["gpu"].where(wide["gpu"] >= 0)
    columns = ["timestamp", "host", "gpu", *[m for m in METRICS if m in wide.columns]]
    frame, _ = series_lib.normalize(wide[columns])
    return frame


def _regex(values: Iterable[str]) -> str:
    # RE2 in PromQL; label values of pods and nodes are DNS names, so escaping dots is enough.
    return "|".join(re.escape(v).replace("\\-", "-") for v in values)


def _selector(matchers: dict[str, tuple[str, str]], name_regex: str) -> str:
    parts = [f'__name__=~"{name_regex}"'] + [f'{label}{op}"{value}"' for label, (op, value) in matchers.items()]
    return "{" + ", ".join(parts) + "}"


def dcgm_selectors(request: SeriesRequest, labels: set[str], names: Iterable[str] = DCGM_METRICS) -> list[str]:
    """Vector selectors (to be joined with `or`) that find the job's GPUs, in the label variant in use.

    Kubernetes: `namespace`/`pod`, the `exported_*` variant Prometheus writes when the scrape does
    not honour labels, and the old `pod_namespace`/`pod_name`. Slurm: `hpc_job` when the exporter
    has the job mapping, else the job's nodes (and GPU indexes when known) for exclusive nodes.
    """
    name_regex = "|".join(names)
    if request.pods:
        pods = _regex(request.pods)
        variants = [("exported_namespace", "exported_pod"), ("namespace", "pod"), ("pod_namespace", "pod_name")]
        present = [(ns, pod) for ns, pod in variants if pod in labels] or [("namespace", "pod")]
        out = []
        for ns, pod in present:
            matchers = {pod: ("=~", pods)}
            if request.namespace:
                matchers[ns] = ("=", request.namespace)
            out.append(_selector(matchers, name_regex))
        return out
    if request.hpc_job and "hpc_job" in labels:
        return [_selector({"hpc_job": ("=", request.hpc_job)}, name_regex)]
    if request.hosts:
        host_labels = [h for h in ("hostname", "Hostname") if h in labels] or ["hostname", "Hostname"]
        out = []
        for host_label in host_labels:
            matchers = {host_label: ("=~", _regex(request.hosts))}
            if request.gpus:
                matchers["gpu"] = ("=~", "|".join(str(g) for g in request.gpus))
            out.append(_selector(matchers, name_regex))
        return out
    return []


def windows(start: datetime, end: datetime, step_s: float, max_points: int) -> list[tuple[float, float]]:
    """[start, end] cut into query windows of at most `max_points` points per series, not overlapping."""
    begin, stop = start.timestamp(), end.timestamp()
    span = step_s * (max_points - 1)
    out = []
    while begin <= stop:
        out.append((begin, min(stop, begin + span)))
        begin += span + step_s
    return out


def parse_duration_s(value) -> float:
    """Seconds from a number or a Prometheus duration such as "30s", "1m", "1m30s"."""
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {value!r}")
    return sum(float(n) * units[u] for n, u in parts)


# ---------------------------------------------------------------------------------------------
# The connector
# ---------------------------------------------------------------------------------------------
@register
class PrometheusConnector(BaseConnector):
    """A metrics source: serves the series of jobs that a Slurm, Kubernetes or generic connector lists.

    Options: `step` (default "30s"; at least the scrape interval), `max_points` (11000),
    `node_exporter` (true: node CPU, memory, network and disk for jobs on exclusive nodes),
    `host_fallback` (true: a Slurm job without `hpc_job` series is looked up by its nodes).
    """

    kind = "prometheus"
    label = "Prometheus (dcgm-exporter, node_exporter)"
    options_example = '{"step": "30s"}'
    url_example = "https://prometheus:9090"
    url_what = "the Prometheus server"
    options_schema = {
        "step": "duration",
        "max_points": "whole number",
        "node_exporter": "true or false",
        "host_fallback": "true or false",
    }
    auth_hint = "None, basic or bearer; a tenant header (X-Scope-OrgID) in Headers."
    lists_jobs = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        options = self.settings.options
        try:
            self.step_s = parse_duration_s(options.get("step", DEFAULT_STEP_S))
        except (ValueError, TypeError):
            self.step_s = None
        if self.step_s is None or not 0 < self.step_s <= 86_400:
            raise ConfigError(
                f"option 'step' must be a duration from 1ms to 1d, e.g. \"30s\" (got {options.get('step')!r:.60})"
            )
        self.max_points = number_option(options, "max_points", MAX_POINTS_PER_SERIES, low=1, high=11_000, integer=True)
        self.node_exporter = bool(options.get("node_exporter", True))
        self.host_fallback = bool(options.get("host_fallback", True))
        self._label_days: dict[int, set[str]] = {}  # UTC day number -> the label names asked over it

    def list_jobs(self, watermark: str, until: datetime):
        # Metrics only: a pull checks that the server answers and which label variants it uses.
        self.check()
        return iter([Batch(jobs=[], watermark=watermark)])

    def check(self) -> dict:
        return {"labels": sorted(self.labels())}

    def labels(self, start: datetime | None = None, end: datetime | None = None) -> set[str]:
        """The label names dcgm-exporter's GPU series carry (autodetects the variant in use) over the UTC
        days of [start, end]; without a window, over the last day."""
        if start is None or end is None:
            now = time.time()
            return self._label_names(now - LABELS_DAY_S, now)
        days = range(int(start.timestamp() // LABELS_DAY_S), int(end.timestamp() // LABELS_DAY_S) + 1)
        missing = [day for day in days if day not in self._label_days]
        if len(missing) > LABELS_MAX_DAYS:
            return self._label_names(start.timestamp(), end.timestamp())
        for day in missing:
            self._label_days[day] = self._label_names(day * LABELS_DAY_S, (day + 1) * LABELS_DAY_S)
        return set().union(*(self._label_days[day] for day in days))

    def _label_names(self, start: float, end: float) -> set[str]:
        params = {"match[]": GPU_METRIC, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        doc = self.http.get_json("api/v1/labels", params=params)
        if not isinstance(doc, dict) or doc.get("status") != "success" or not isinstance(doc.get("data"), list):
            raise BadData(f"{self.settings.name}: /api/v1/labels answered {str(doc)[:200]}")
        if not all(isinstance(name, str) for name in doc["data"]):
            raise BadData(f"{self.settings.name}: /api/v1/labels: 'data' is not a list of label names")
        return set(doc["data"])

    def query_range(self, query: str, start: float, end: float) -> list[Series]:
        form = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{self.step_s:g}"}
        doc = self.http.post_form_json("api/v1/query_range", form)
        return parse_query_range(doc, source=f"{self.settings.name} query_range")

    def gpu_models(self, request: SeriesRequest) -> list[str]:
        """The GPU models (dcgm-exporter's `modelName`) of the job's GPUs, most GPUs first; one cheap
        `/api/v1/series` request over the job's window, no samples read."""
        labels = self.labels(request.start, request.end)
        selectors = dcgm_selectors(request, labels, names=[GPU_METRIC])
        if not selectors or "modelName" not in labels:
            return []
        params = [("match[]", selector) for selector in selectors]
        params += [("start", f"{request.start.timestamp():.3f}"), ("end", f"{request.end.timestamp():.3f}")]
        doc = self.http.get_json("api/v1/series", params=params)
        if not isinstance(doc, dict) or doc.get("status") != "success" or not isinstance(doc.get("data"), list):
            raise BadData(f"{self.settings.name}: /api/v1/series answered {str(doc)[:200]}")
        if not all(
            isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()) for labels in doc["data"]
        ):
            raise BadData(
                f"{self.settings.name}: /api/v1/series: a series is not an object of label names and text values"
            )
        gpus = {
            (host_of(labels), labels.get("gpu", ""), labels.get("GPU_I_ID", "")): labels.get("modelName", "")
            for labels in doc["data"]
            if isinstance(labels, dict) and labels.get("modelName")
        }
        counts = Counter(gpus.values())
        return [model for model, _ in counts.most_common()]

    def fetch_job_series(self, request: SeriesRequest) -> pd.DataFrame | None:
        labels = self.labels(request.start, request.end)
        selectors = dcgm_selectors(request, labels)
        results = self._collect(selectors, request)
        if not results and request.hpc_job and request.hosts and self.host_fallback and "hpc_job" in labels:
            fallback = SeriesRequest(start=request.start, end=request.end, hosts=request.hosts, gpus=request.gpus)
            results = self._collect(dcgm_selectors(fallback, labels), request)
        if results and request.exclusive and request.hosts and self.node_exporter:
            rate = f"{int(max(4 * self.step_s, 60))}s"
            for metric, template in NODE_QUERIES.items():
                query = template.format(rate=rate, nodes=_regex(request.hosts))
                for begin, stop in windows(request.start, request.end, self.step_s, self.max_points):
                    results.extend((metric, s) for s in self.query_range(query, begin, stop))
        if not results:
            return None
        return frame_from_results(results, start=request.start, end=request.end)

    def _collect(self, selectors: list[str], request: SeriesRequest) -> list[tuple[str | None, Series]]:
        if not selectors:
            return []
        query = " or ".join(selectors)
        out: list[tuple[str | None, Series]] = []
        for begin, stop in windows(request.start, request.end, self.step_s, self.max_points):
            out.extend((None, s) for s in self.query_range(query, begin, stop))
        return out
