"""Native platform files inside a v1 archive, read by the live connectors' own normalisers.

Layout (docs/archive-format.md, "Native files"):

    native/slurm/<any>.json               `sacct --json` output, any data_parser version
    native/kubernetes/<any>.json          `kubectl get pods -o json` (a List of Pods), and `kubectl get nodes -o json`
                                          (a List of Nodes: shared GPUs' replicas, as a live pull reads them), told
                                          apart by the items' kind; one `kubectl get pods,nodes -o json` holds both
    native/prometheus/<job_id>/<any>.json a verbatim `query_range` response for that job; the metric
                                          comes from `__name__`, else from the file name (a dcgm-exporter
                                          or canonical name, e.g. DCGM_FI_DEV_GPU_UTIL.json)

Jobs from sacct/kubectl files are added to those of jobs.csv/jsonl (which may then be left out);
a job id both name is taken from jobs.csv. Prometheus files give series to any job of the archive.
Pure: reads through the archive reader, no Django.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

import pandas as pd

from fleet import series as series_lib
from fleet.canonical import ArtifactRecord, JobRecord, RecordError
from fleet.connectors.base import BadData, json_document
from fleet.connectors.kubernetes import jobs_from_pods, list_kind, list_problem, parse_node_list, parse_pod_list
from fleet.connectors.prometheus import Series, canonical_name, frame_from_results, parse_query_range
from fleet.connectors.slurm import parse_sacct
from fleet.quoting import named, quoted

logger = logging.getLogger(__name__)

SLURM_FOLDER = "native/slurm/"
KUBERNETES_FOLDER = "native/kubernetes/"
PROMETHEUS_FOLDER = "native/prometheus/"
IGNORED = "ignored: native files go in native/slurm/, native/kubernetes/ or native/prometheus/<job_id>/"
LISTED_TWICE = "job listed twice; the first is kept"
ALSO_IN_JOBS_FILE = "also in the jobs file, which wins"
# The effect (`RecordError.effect`) of a job's listing that is not stored because another listing of the job is.
ANOTHER_LISTING = "listing"


def _member_message(message: str, name: str) -> str:
    """A connector's message about member `name`, which begins with the name as its source (`BadData`), with a long
    name cut to its first characters and its length (`fleet.quoting.named`), as every archive message quotes one."""
    prefix = f"{name}: "
    return f"{named(name)}: {message[len(prefix) :]}" if message.startswith(prefix) else message


@dataclass
class NativeFiles:
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    artifacts: dict[str, list[ArtifactRecord]] = field(default_factory=dict)
    errors: list[RecordError] = field(default_factory=list)
    prometheus: dict[str, list[tuple[str, Series]]] = field(default_factory=dict)  # job id -> (file, series)
    extra: dict[str, JobRecord] = field(default_factory=dict)  # native jobs that join the archive's (`settle`)

    @classmethod
    def read(cls, reader, names: list[str], cluster: str, artifact_max_bytes: int) -> NativeFiles:
        native = cls()
        pods: list[dict] = []
        pod_files: list[str] = []
        nodes: dict[str, dict] | None = None  # {name: labels} once a nodes file is read (None: no nodes read)
        for name in sorted(n for n in names if n.startswith("native/") and n.endswith(".json")):
            try:
                if name.startswith(SLURM_FOLDER):
                    native._sacct(reader.read(name), name, cluster, artifact_max_bytes)
                elif name.startswith(KUBERNETES_FOLDER):
                    doc = json_document(reader.read(name), name)
                    # Told by its kind: a PodList, a NodeList, or kubectl's List of either or both (by its items')
                    kind = list_kind(doc)
                    if problem := list_problem(doc, kind):
                        raise BadData(f"{name}: {problem}")
                    found, problems = parse_node_list(doc, source=name) if kind != "PodList" else ({}, [])
                    native.errors.extend(problems)
                    # An empty list (`kubectl get nodes -o json` of no nodes) is a nodes file read, listing none
                    if found or problems or kind == "NodeList" or not doc["items"]:
                        nodes = {**(nodes or {}), **found}
                    file_pods = parse_pod_list(doc, source=name)[0]
                    if file_pods or kind == "PodList" or not (found or problems):
                        pods.extend(file_pods)
                        pod_files.append(name)
                elif name.startswith(PROMETHEUS_FOLDER):
                    native._prometheus(reader.read(name), name)
                else:
                    native.errors.append(RecordError(name, IGNORED))
            except BadData as exc:
                native.errors.append(RecordError(name, _member_message(str(exc), name)))
        if pods:
            parsed = jobs_from_pods(
                pods, cluster=cluster, gpu_jobs_only=False, source=", ".join(pod_files), nodes=nodes, nodes_file=True
            )
            native.errors.extend(parsed.errors)
            for job in parsed.jobs:
                native._add(job, pod_files[0])
        return native

    def _sacct(self, data: bytes, name: str, cluster: str, artifact_max_bytes: int) -> None:
        parsed = parse_sacct(
            data, cluster=cluster, gpu_jobs_only=False, source=name, artifact_max_bytes=artifact_max_bytes
        )
        self.errors.extend(parsed.errors)
        if parsed.unfinished:
            self.errors.append(RecordError(name, f"{parsed.unfinished} unfinished or never-started jobs ignored"))
        for index, job_id in parsed.repeated:  # dropped by the parser, as a pull's overlapping windows repeat jobs
            self.errors.append(RecordError(name, LISTED_TWICE, row=index, job_id=job_id, effect=ANOTHER_LISTING))
        for job in parsed.jobs:
            if self._add(job, name):
                self.artifacts[job.external_id] = parsed.artifacts.get(job.external_id, [])

    def _add(self, job: JobRecord, name: str) -> bool:
        error = job.storage_error(name)
        if error is not None:
            self.errors.append(replace(error, effect="rejected"))  # the job is not stored
            return False
        if job.external_id in self.jobs:
            self.errors.append(RecordError(name, LISTED_TWICE, job_id=job.external_id, effect=ANOTHER_LISTING))
            return False
        self.jobs[job.external_id] = job
        return True

    def _prometheus(self, data: bytes, name: str) -> None:
        parts = PurePosixPath(name).relative_to(PROMETHEUS_FOLDER).parts
        if len(parts) != 2:
            self.errors.append(RecordError(name, "ignored: Prometheus files go in native/prometheus/<job_id>/"))
            return
        job_id, stem = parts[0], PurePosixPath(parts[1]).stem
        for item in parse_query_range(data, source=name):
            if canonical_name(item.labels, fallback=stem) is None:
                self.errors.append(RecordError(name, f"ignored: no canonical metric for {quoted(stem)}", job_id=job_id))
                return
            labels = {**item.labels, "__name__": item.labels.get("__name__") or stem}
            self.prometheus.setdefault(job_id, []).append((name, Series(labels, item.timestamps, item.values)))

    # -- the parser's hook -------------------------------------------------------------------
    def replaces_jobs_file(self, reader, job_files: tuple[str, ...]) -> bool:
        """True when the archive has native jobs and no jobs.csv/jsonl: then none is needed."""
        return bool(self.jobs) and not any(name in reader for name in job_files)

    def settle(self, job_ids: set[str], accepted: dict[str, JobRecord]) -> list[RecordError]:
        """Decide which native jobs join the archive's (`extra`: those the jobs file does not name —
        that file wins) and drop Prometheus files of unknown jobs. Returns every native problem."""
        for job_id, job in self.jobs.items():
            if job_id in job_ids:
                self.errors.append(RecordError("native/", ALSO_IN_JOBS_FILE, job_id=job_id))
            else:
                self.extra[job_id] = job
        # A native listing not stored leaves the job to another (`ANOTHER_LISTING`), unless the jobs file's row won
        # and was rejected: then the job is not stored at all.
        self.errors = [
            replace(error, effect="rejected" if error.job_id in job_ids - accepted.keys() else ANOTHER_LISTING)
            if error.effect == ANOTHER_LISTING or error.message == ALSO_IN_JOBS_FILE
            else error
            for error in self.errors
        ]
        for job_id in [j for j in self.prometheus if j not in accepted and j not in self.extra]:
            first_file = self.prometheus.pop(job_id)[0][0]
            self.errors.append(RecordError(first_file, "no such job in the archive; ignored", job_id=job_id))
        return self.errors

    def has_series(self, job_id: str) -> bool:
        """Whether a native Prometheus file has series for the job (`series_for` adds them)."""
        return bool(self.prometheus.get(job_id))

    def series_for(self, job: JobRecord, frame: pd.DataFrame | None) -> pd.DataFrame | None:
        """The job's frame with its native Prometheus series added (clipped to the job's window)."""
        results = self.prometheus.pop(job.external_id, None)
        if not results:
            return frame
        native = frame_from_results(((None, s) for _, s in results), start=job.start_time, end=job.end_time)
        if native is None:
            return frame
        if frame is None or not len(frame):
            return native
        return series_lib.normalize(pd.concat([frame, native], ignore_index=True))[0]

    def artifacts_for(self, job_id: str) -> list[ArtifactRecord]:
        return self.artifacts.pop(job_id, [])
