"""Kubernetes: the pods API (`GET /api/v1/pods`, paginated with `continue`), and pod logs.

Pure part: `parse_pod_list` reads a PodList (the API's pages and `kubectl get pods -o json` alike),
`parse_node_list` a NodeList's GPU labels (the same two ways), `jobs_from_pods` groups pods into jobs:

- job identity from `ownerReferences` (Job, PyTorchJob, MPIJob, RayCluster, ...: the
  controller's uid); a pod of a JobSet's Job is its JobSet's (the `jobset.sigs.k8s.io/jobset-uid`
  label); a pod without an owner is a job of its own. Pods of long-running workloads
  (ReplicaSet, StatefulSet, DaemonSet) are not jobs and are left out;
- a KubeRay RayJob's head and worker pods (owned by the RayCluster it made: labels `ray.io/cluster`,
  `ray.io/node-type`) and its submitter Job's pod (`ray job submit` against the cluster's head service)
  are one job, named after the RayJob; it ends when the RayJob does (its `status.endTime`, else its
  submitter's finish), head and workers still running counted as ending then;
- a job is finished when every pod of it has finished (phase Succeeded/Failed); start is the
  earliest pod start, end the latest container finish; a pod that never ran (turned away by the
  kubelet, failed before its image was pulled) is not part of it;
- GPU count from `resources.limits` of `nvidia.com/gpu`, `nvidia.com/gpu.shared` and
  `nvidia.com/mig-*` (a pod needs max(sum of its containers, largest init container)), summed over
  pods that ran *at the same time* — a retried pod does not double the count;
- the share of a physical GPU each device is (`gpu_share`, what GPU-hours and cost count): 1 for a
  whole GPU, compute slices / 7 for a MIG slice (`1g.10gb` of an A100/H100 is 1/7; A30's profiles
  /4), 1/replicas for a time-sliced or MPS replica: the replicas GPU Feature Discovery labels the pod's node
  with (`nvidia.com/gpu.replicas`; `nvidia.com/mig-1g.10gb.replicas` for a MIG slice's), else the operator's
  `shared_gpu_replicas`, else counted whole and named so (a plain `nvidia.com/gpu` is such a slice or replica
  when its node's `nvidia.com/gpu.product` label, or the pod's node selector of it, ends `-MIG-<profile>` or
  `-SHARED`: MIG's single strategy, time-slicing without renaming). The nodes are listed once a pull;
  the job's `gpu_replicas` label says where each pod's replicas came from;
- GPU model from the pods' `nvidia.com/gpu.product` node selector, else (`describe`) dcgm-exporter's
  `modelName` on the job's own series, else its GPU pods' nodes' `nvidia.com/gpu.product` label
  (`node_gpu_model`; the job's `gpu_model_from` label names the nodes), spelt as its source spells it;
- team from a label the operator names (else the namespace), through the operator's mapping;
  queue from Kueue's `kueue.x-k8s.io/queue-name` label, else the namespace.
"""

from __future__ import annotations

import logging
import math
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime

from fleet.canonical import ArtifactRecord, JobRecord, RecordError, as_utc
from fleet.connectors.base import (
    SHAPE_ERRORS,
    BadData,
    BaseConnector,
    Batch,
    ConnectorError,
    TransientError,
    json_document,
    json_kind,
    mapping_option,
    number_option,
    parse_time_watermark,
    shape_problem,
    time_watermark,
)
from fleet.connectors.http import HttpStatusError
from fleet.connectors.prometheus import PrometheusConnector, SeriesRequest
from fleet.connectors.registry import register
from fleet.gpu_models import MIG_PROFILE, gpu_model_key, gpu_model_name, mig_share
from fleet.quoting import named, quoted

logger = logging.getLogger(__name__)

GPU_RESOURCE = "nvidia.com/gpu"
# The other names NVIDIA's device plugin gives GPUs: a MIG slice under the "mixed" strategy
# (`nvidia.com/mig-1g.10gb`), and a replica of a shared GPU when time-slicing or MPS renames it
# (`renameByDefault: true`: `nvidia.com/gpu.shared`, `nvidia.com/mig-1g.10gb.shared`). Each counts
# as one GPU device of the pod.
GPU_RESOURCE_SHARED = "nvidia.com/gpu.shared"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
SHARED_SUFFIX = ".shared"
# A MIG profile's share of its GPU (compute slices / 7, an A30's / 4) is `fleet.gpu_models.mig_share`, which
# the Slurm connector's gres types use too.
# GPU Feature Discovery's product label on a node whose devices are all `nvidia.com/gpu` but no whole GPU:
# MIG's "single" strategy (`NVIDIA-A100-SXM4-40GB-MIG-1g.5gb`) and time-slicing or MPS without
# `renameByDefault` (`NVIDIA-A100-SXM4-80GB-SHARED`).
PRODUCT_SUFFIXES = re.compile(r"(?:-MIG-(?P<profile>[1-7]g\.\d+gb(?:\+\w+)*))?(?P<shared>-SHARED)?$")
# JobSet (and Kubeflow Trainer's TrainJob, built on it) owns Jobs, which own the pods; it labels the
# pods with its own uid and name, which are the job's identity.
JOBSET_UID_LABEL = "jobset.sigs.k8s.io/jobset-uid"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
# An MPIJob (MPI Operator v2) owns its workers, whose containers run sshd and never exit, while mpirun runs
# in a launcher pod owned by a Job of its own; both carry the Kubeflow labels below. The launcher's end
# is the job's.
KUBEFLOW_JOB_NAME_LABEL = "training.kubeflow.org/job-name"
KUBEFLOW_ROLE_LABEL = "training.kubeflow.org/job-role"
# KubeRay: a RayCluster owns its head and worker pods, labelled with the cluster's name and the node's type; a
# RayJob owns the RayCluster it made (not the pods) and a submitter Job, named as the RayJob, whose pod runs
# `ray job submit` against the cluster's head service `<cluster>-head-svc` (in its RAY_DASHBOARD_ADDRESS
# env, or in its command on older KubeRay) and returns when the Ray job ends.
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_NODE_TYPE_LABEL = "ray.io/node-type"
RAY_ORIGIN_NAME_LABEL = "ray.io/originated-from-cr-name"
RAY_HEAD_SERVICE = re.compile(r"(?<![-a-z0-9])([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)-head-svc\b")
RAYJOB_FINISHED = frozenset({"Complete", "Failed"})  # status.jobDeploymentStatus
RAY_JOB_STATES = {"SUCCEEDED": "Succeeded", "FAILED": "Failed", "STOPPED": "Failed"}  # status.jobStatus
NOT_JOBS = frozenset({"ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController", "Node"})
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# The job's label saying its GPU model was read from its nodes' GPU_PRODUCT_LABEL (no node selector named one)
GPU_MODEL_FROM = "gpu_model_from"
# GPU Feature Discovery labels a node with the replicas of each GPU resource its device plugin shares
# (time-slicing or MPS): `nvidia.com/gpu.replicas` (1 on a node not shared), `nvidia.com/mig-1g.10gb.replicas`
# under MIG's mixed strategy. The label's name is the resource's as the plugin advertises it unrenamed.
REPLICAS_SUFFIX = ".replicas"
MAX_REPLICAS = 1024
PAGE_SIZE = 500
NODES_PATH = "api/v1/nodes"
# The ClusterRole rule that lets the ServiceAccount list nodes (docs/connectors.md, RBAC)
NODES_RULE = 'apiGroups: [""], resources: [nodes], verbs: [list]'
# A container's log is stored per run, `{pod}/{container}.run{N}.log` (runs counted from 1, the current one
# `restartCount` + 1): a later pull of the job keeps the runs an earlier one stored and it could not read again.
RUN_LOG = re.compile(r"^(?P<pod>[^/]+)/(?P<container>[^/]+)\.run(?P<run>[1-9]\d*)\.log$")
MAX_REPEATS = 3
MAX_RELISTS = 3  # listings begun again after a 410 Gone that gave no token to go on with


@dataclass
class RayJobLink:
    """A RayJob as its pods (and the RayJob itself, when it could be listed) show it."""

    owner: dict  # {"kind": "RayJob", "name": ..., "uid": ...}: the job's name and owner labels
    cluster_uid: str  # its RayCluster's uid: the job's identity, whether or not the RayJob was listed
    cluster: str  # the RayCluster's name
    listed: bool = False  # its status was read from the RayJob itself
    finished: bool = False  # listed, and its status.jobDeploymentStatus is Complete or Failed
    end: datetime | None = None  # then its status.endTime
    state: str = ""  # Succeeded / Failed, from status.jobStatus
    entrypoint: str = ""  # spec.entrypoint, or what its submitter submits


@dataclass
class PodJobs:
    jobs: list[JobRecord] = field(default_factory=list)
    errors: list[RecordError] = field(default_factory=list)
    unfinished: int = 0
    # The jobs whose GPU model their GPU pods' nodes would have named, had the nodes been read (no node selector
    # named one): a pull whose node listing was refused or failed says how many (`_node_error`)
    models_unread: set[str] = field(default_factory=set)


# The lists a file of an archive's native/kubernetes/ may be (`list_kind`), as an error message names them
LISTS = {
    "PodList": "a PodList (kubectl get pods -o json)",
    "NodeList": "a NodeList (kubectl get nodes -o json)",
    "List": "a PodList (kubectl get pods -o json) or a NodeList (kubectl get nodes -o json)",
}
FIELDS_NAMED = 6  # of a document that is no list, the fields its error names
FIELD_NAME_CHARS = 40


def list_kind(doc) -> str:
    """Which list a document says it is, by its `kind`: "PodList" (a Pod too: one pod where a list was meant),
    "NodeList" (or a Node), else "List" (kubectl's kindless `List`, which `kubectl get pods,nodes` fills with both,
    told apart by their items' kinds)."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind in ("PodList", "Pod"):
        return "PodList"
    if kind in ("NodeList", "Node"):
        return "NodeList"
    return "List"


def list_problem(doc, expected: str) -> str | None:
    """What keeps `doc` from being the list `expected` ("PodList", "NodeList", "List": either) with an 'items'
    list, in the words of an error message: the list expected and what was found, with its kind and its first
    fields; None when it has an 'items' list."""
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return None
    found = json_kind(doc)
    if isinstance(doc, dict):
        kind = doc.get("kind")
        if isinstance(kind, str) and kind:
            found += f" of kind {quoted(kind, FIELD_NAME_CHARS)}"
        found += " with no 'items'" if "items" not in doc else f" whose 'items' is {json_kind(doc['items'])}"
        fields = [named(key, FIELD_NAME_CHARS) for key in list(doc)[:FIELDS_NAMED]]
        if len(doc) > FIELDS_NAMED:
            fields.append(f"and {len(doc) - FIELDS_NAMED:,} more")
        found += f" (its fields: {', '.join(fields)})" if fields else " (it has no fields)"
    return f"expected {LISTS[expected]} with an 'items' list; found {found}"


def parse_pod_list(data: bytes | str | dict, *, source: str = "pods") -> tuple[list[dict], str]:
    """(pods, continue token) of a PodList page or a `kubectl get pods -o json` List."""
    doc = json_document(data, source)
    if problem := list_problem(doc, "PodList"):
        raise BadData(f"{source}: {problem}")
    # A NodeList's items carry no kind either (an archive's native files: `parse_node_list` reads them)
    pod_kinds = ("Pod",) if doc.get("kind") == "NodeList" else (None, "Pod")
    pods = [p for p in doc["items"] if isinstance(p, dict) and (p.get("kind") in pod_kinds)]
    return pods, continue_token(doc, source)


def continue_token(doc: dict, source: str) -> str:
    """A list page's `metadata.continue` ("" on the last page); BadData when `metadata` is not an object."""
    metadata = doc.get("metadata")
    if metadata in (None, ""):
        return ""
    if not isinstance(metadata, dict):
        raise BadData(f"{source}: expected 'metadata' to be an object (got {json_kind(metadata)})")
    token = metadata.get("continue")
    if token not in (None, "") and not isinstance(token, str):
        raise BadData(f"{source}: expected 'metadata.continue' to be text (got {json_kind(token)})")
    return token or ""


def _objects(value) -> bool:
    return value in (None, "") or (isinstance(value, list) and all(isinstance(item, dict) for item in value))


def _text(value) -> bool:
    return value is None or isinstance(value, str)


def pod_problem(pod) -> str | None:
    """What is wrong with the shape of a pod where every step after the listing reads it (its names,
    labels, owners, containers and their statuses), or None. A pod with one is reported and skipped:
    read as it is, it stopped the pull with an AttributeError or TypeError instead."""
    if not isinstance(pod, dict):
        return "not an object"
    for part in ("metadata", "spec", "status"):
        if pod.get(part) not in (None, "") and not isinstance(pod[part], dict):
            return f"'{part}' is not an object"
    meta, spec, status = (pod.get(part) or {} for part in ("metadata", "spec", "status"))
    for name in ("name", "namespace", "uid"):
        if not _text(meta.get(name)):
            return f"'metadata.{name}' is not text"
    for name in ("labels", "annotations"):
        value = meta.get(name)
        if value not in (None, "") and not (isinstance(value, dict) and all(_text(v) for v in value.values())):
            return f"'metadata.{name}' is not an object of text values"
    if not _objects(meta.get("ownerReferences")):
        return "'metadata.ownerReferences' is not a list of objects"
    if not _text(spec.get("nodeName")):
        return "'spec.nodeName' is not text"
    for part, name in (
        (spec, "spec.containers"), (spec, "spec.initContainers"),
        (status, "status.containerStatuses"), (status, "status.initContainerStatuses"),
    ):  # fmt: skip
        items = part.get(name.split(".")[1])
        if not _objects(items):
            return f"'{name}' is not a list of objects"
        if not all(_text(item.get("name")) for item in items or []):
            return f"a container's name in '{name}' is not text"
        if name.startswith("spec."):  # what a pod asks for: read for its GPUs (`pod_gpus`) and CPUs
            for item in items or []:
                resources = item.get("resources")
                if resources in (None, ""):
                    continue
                if not isinstance(resources, dict):
                    return f"a container's 'resources' in '{name}' is not an object"
                for kind in ("limits", "requests"):
                    if resources.get(kind) not in (None, "") and not isinstance(resources[kind], dict):
                        return f"a container's 'resources.{kind}' in '{name}' is not an object"
    return None


def _time(text) -> datetime | None:
    if not text:
        return None
    try:
        return as_utc(datetime.fromisoformat(str(text).replace("Z", "+00:00")))
    except (ValueError, OverflowError):  # overflow: year 1 or 9999 moved out of the calendar by its offset
        return None


def _quantity(value) -> float:
    """A Kubernetes quantity as a number: "2" -> 2, "500m" -> 0.5."""
    text = str(value or "0").strip()
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return 0.0


def is_gpu_resource(name: str) -> bool:
    """Whether a resource name is a GPU device: a whole GPU, a MIG slice, or a shared GPU's replica."""
    return name in (GPU_RESOURCE, GPU_RESOURCE_SHARED) or name.startswith(MIG_RESOURCE_PREFIX)


def gpu_resources(pod: dict) -> list[str]:
    """The GPU resource names a pod's containers ask for (`nvidia.com/mig-1g.10gb`, ...)."""
    spec = pod.get("spec") or {}
    names = set()
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = container.get("resources") or {}
        for kind in ("limits", "requests"):
            names.update(name for name in resources.get(kind) or {} if is_gpu_resource(str(name)))
    return sorted(names)


def mig_profile(name: str) -> str:
    """The MIG profile a resource name is a slice of (`1g.10gb`), "" when it is no MIG slice."""
    if not name.startswith(MIG_RESOURCE_PREFIX):
        return ""
    profile = name[len(MIG_RESOURCE_PREFIX) :].removesuffix(SHARED_SUFFIX)
    return profile if MIG_PROFILE.match(profile) else ""


def is_shared(name: str) -> bool:
    """Whether a GPU resource name is a time-sliced or MPS replica (`nvidia.com/gpu.shared`, `….shared`)."""
    return name == GPU_RESOURCE_SHARED or name.endswith(SHARED_SUFFIX)


def node_replicas(labels: dict | None, name: str) -> int:
    """The replicas GPU Feature Discovery labelled a node with for GPU resource `name` (`nvidia.com/gpu.shared`
    and `nvidia.com/gpu` read `nvidia.com/gpu.replicas`); 0 when the node has no such label, or not a whole
    number from 1 to MAX_REPLICAS."""
    return replicas_value((labels or {}).get(name.removesuffix(SHARED_SUFFIX) + REPLICAS_SUFFIX))


def replicas_value(value) -> int:
    """A `….replicas` label's value as a whole number from 1 to MAX_REPLICAS, else 0."""
    text = str(value).strip()
    if not text.isascii() or not text.isdigit():
        return 0
    replicas = int(text)
    return replicas if 1 <= replicas <= MAX_REPLICAS else 0


def parse_node_list(data: bytes | str | dict, *, source: str = "nodes", listed: bool = False, page: int = 1):
    """({node name: its `nvidia.com/` labels}, problems) of a NodeList page or of the Nodes of a `kubectl get nodes
    -o json` List (a `kubectl get pods,nodes` List's pods are `parse_pod_list`'s); the one reading of nodes for a
    live pull (`list_nodes`, `listed`: every item is a node) and an archive's native files alike. A node of the
    wrong shape (its `metadata`, a name that is not text, labels that are not an object of text values) is
    reported (file, position, field) and skipped, as a pod is; a `….replicas` label that is not a whole number
    from 1 to MAX_REPLICAS is reported and not read (kept as it is, so a job on the node says the label was
    there but unreadable: `node_replicas` reads it as none). BadData when it is no list of items at all."""
    doc = json_document(data, source)
    if problem := list_problem(doc, "NodeList"):
        raise BadData(f"{source}: {problem}")
    kindless_are_nodes = listed or doc.get("kind") == "NodeList"
    nodes: dict[str, dict] = {}
    problems: list[RecordError] = []
    for index, item in enumerate(doc["items"], start=1):
        kind = item.get("kind") if isinstance(item, dict) else None
        if kind != "Node" and not (kindless_are_nodes and kind is None):
            continue
        where = f"page {page}, node {index}" if page > 1 else f"node {index}"

        def problem(what: str, field: str, row: int = index, where: str = where) -> None:
            problems.append(RecordError(source, f"{where}: {what}", row=row, field=field))

        if not isinstance(item, dict):
            problem("not an object, so it was skipped", "")
            continue
        meta = item.get("metadata")
        if not isinstance(meta, dict):
            problem("'metadata' is not an object, so it was skipped", "metadata")
            continue
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            problem(f"'metadata.name' is {'empty' if name == '' else 'not text'}, so it was skipped", "metadata.name")
            continue
        where = f"{where} ({name})"
        labels = meta.get("labels")
        if labels in (None, ""):
            labels = {}
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            problem(
                "'metadata.labels' is not an object of text values, so it was skipped", "metadata.labels", where=where
            )
            continue
        gpu_labels = {}
        for key, value in labels.items():
            if not key.startswith("nvidia.com/"):
                continue
            if key.endswith(REPLICAS_SUFFIX) and not replicas_value(value):
                what = f"label {key} is {value[:40]!r}, not a whole number from 1 to {MAX_REPLICAS}, so it was not read"
                problem(what, f"metadata.labels.{key}", where=where)
            gpu_labels[key] = value
        nodes[name] = gpu_labels
    return nodes, problems


def resource_share(name: str, shared_replicas: int = 0) -> float:
    """The share of one physical GPU one device of a GPU resource is: 1 for `nvidia.com/gpu`, a MIG
    slice's compute slices over its parent's (1g.10gb of an H100: 1/7), and a shared replica's
    share divided by the replicas the operator set (`shared_gpu_replicas`; unknown: counted whole)."""
    share = 1.0
    profile = mig_profile(name)
    if profile:
        share = mig_share(profile)
    if is_shared(name) and shared_replicas > 0:
        share /= shared_replicas
    return share


def resource_unit(name: str) -> str:
    """What one device of a GPU resource is called on the pages: "" for a whole GPU."""
    profile = mig_profile(name)
    shared = is_shared(name)
    if profile:
        return f"MIG {profile} slice replica" if shared else f"MIG {profile} slice"
    if shared:
        return "shared GPU replica"
    if name.startswith(MIG_RESOURCE_PREFIX):
        return "MIG slice"
    return ""


def product_resource(product: str) -> str:
    """The resource name the device plugin gives one device of a node labelled `product` under MIG's
    "mixed" strategy and with `renameByDefault` (`…-MIG-1g.5gb` -> `nvidia.com/mig-1g.5gb`, `…-SHARED` ->
    `nvidia.com/gpu.shared`), so that its share and name are the ones those get; "" for a whole GPU."""
    match = PRODUCT_SUFFIXES.search(product or "")
    if not match or not (match["profile"] or match["shared"]):
        return ""
    name = f"{MIG_RESOURCE_PREFIX}{match['profile']}" if match["profile"] else GPU_RESOURCE
    return name + SHARED_SUFFIX if match["shared"] else name


def pod_gpu_shares(pod: dict, shared_replicas: int = 0, node_labels: dict | None = None) -> float:
    """The pod's GPU devices in whole GPUs (`pod_gpus` weighted by `resource_share`), a replica's replicas its
    node's (`node_labels`, `node_replicas`), else `shared_replicas`."""
    spec = pod.get("spec") or {}

    def shares(container: dict) -> float:
        resources = container.get("resources") or {}
        asked = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        return sum(
            int(_quantity(value)) * resource_share(str(name), node_replicas(node_labels, str(name)) or shared_replicas)
            for name, value in asked.items()
            if is_gpu_resource(str(name))
        )

    main = sum(shares(c) for c in spec.get("containers") or [])
    init = max((shares(c) for c in spec.get("initContainers") or []), default=0.0)
    return max(main, init)


def pod_gpus(pod: dict) -> int:
    spec = pod.get("spec") or {}

    def gpus(container: dict) -> int:
        resources = container.get("resources") or {}
        # Extended resources have limits equal to requests (or requests only); either says how many.
        asked = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        return sum(int(_quantity(value)) for name, value in asked.items() if is_gpu_resource(str(name)))

    main = sum(gpus(c) for c in spec.get("containers") or [])
    init = max((gpus(c) for c in spec.get("initContainers") or []), default=0)
    return max(main, init)


def pod_cpus(pod: dict) -> float:
    total = 0.0
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        total += _quantity((resources.get("limits") or {}).get("cpu") or (resources.get("requests") or {}).get("cpu"))
    return total


def _pod_window(pod: dict) -> tuple[datetime | None, datetime | None]:
    status = pod.get("status") or {}
    starts, ends = [], []
    for container in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated:
            starts.append(_time(terminated.get("startedAt")))
            ends.append(_time(terminated.get("finishedAt")))
    start = _time(status.get("startTime")) or min((s for s in starts if s), default=None)
    end = max((e for e in ends if e), default=None)
    return start, end


def pod_ran(pod: dict) -> bool:
    """Whether any container of a pod ever started. A pod the kubelet turned away (phase Failed,
    reason `UnexpectedAdmissionError` when the device plugin could not give it its GPUs, `OutOfnvidia.com/gpu`,
    `NodeAffinity`), or one that failed before its image was pulled (`DeadlineExceeded`, an eviction), never
    ran: it has no start or finish times and used no GPU time."""
    status = pod.get("status") or {}
    for container in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        for state in (container.get("state") or {}, container.get("lastState") or {}):
            if "running" in state or (state.get("terminated") or {}).get("startedAt"):
                return True
    return False


def job_key(pod: dict) -> tuple[str, dict | None]:
    """(job identity, owner reference) of a pod: its controller's uid, else its own uid."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(JOBSET_UID_LABEL):  # a pod of a JobSet's Job: the JobSet is the job
        uid = str(labels[JOBSET_UID_LABEL])
        return uid, {"kind": "JobSet", "name": str(labels.get(JOBSET_NAME_LABEL) or uid), "uid": uid}
    owners = meta.get("ownerReferences") or []
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    if owner is not None:
        return str(owner.get("uid") or f"{meta.get('namespace')}/{owner.get('kind')}/{owner.get('name')}"), owner
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}"), None


def peak_concurrent(intervals: list[tuple[datetime, datetime, int]]) -> int:
    """The most GPUs held at one moment by pods with (start, end, gpus)."""
    events = sorted([(s, g) for s, _, g in intervals] + [(e, -g) for _, e, g in intervals], key=lambda x: (x[0], x[1]))
    peak = current = 0
    for _, delta in events:
        current += delta
        peak = max(peak, current)
    return peak


def jobs_from_pods(
    pods: list[dict],
    *,
    cluster: str = "",
    team_label: str = "",
    user_label: str = "",
    namespace_teams: dict[str, str] | None = None,
    gpu_jobs_only: bool = True,
    source: str = "pods",
    shared_replicas: int = 0,
    ray_jobs: list[dict] | None = None,
    nodes: dict[str, dict] | None = None,
    nodes_file: bool = False,
    nodes_partial: bool = False,
) -> PodJobs:
    """Finished jobs from pods (pods seen twice, e.g. on a repeated page, count once). `ray_jobs`: the
    RayJobs, when they could be listed (their status says when a RayJob ended); without them a RayJob is
    found from its submitter's pod. `nodes`: {node name: its labels}, when they could be listed (None: not
    read), whose GPU Feature Discovery labels say how many replicas a shared GPU's pod was one of; `nodes_file`:
    they are an archive's nodes file (a node missing is not in it), not the cluster's at the pull (no longer
    listed); `nodes_partial`: the listing failed after these were read (a node missing was not read)."""
    groups: dict[str, tuple[dict | None, dict[str, dict]]] = {}
    result = PodJobs()
    mpi_jobs = _mpi_jobs(pods)
    ray_links, submitters = ray_job_links(pods, ray_jobs)
    for index, pod in enumerate(pods, start=1):
        problem = pod_problem(pod)
        if problem:
            result.errors.append(RecordError(source, f"pod {index}: {problem}, so it was skipped", row=index))
            continue
        try:
            meta = pod.get("metadata") or {}
            key, owner = job_key(pod)
            labels = meta.get("labels") or {}
            if labels.get(KUBEFLOW_ROLE_LABEL) == "launcher":  # an MPIJob's launcher joins its workers
                mpi = mpi_jobs.get((meta.get("namespace"), labels.get(KUBEFLOW_JOB_NAME_LABEL)))
                key, owner = (str(mpi.get("uid")), mpi) if mpi else (key, owner)
            # A RayJob's head and workers (its RayCluster's pods) and its submitter's pod: one job.
            ray = submitters.get(str(meta.get("uid") or meta.get("name")))
            if ray is None and labels.get(RAY_CLUSTER_LABEL):
                ray = ray_links.get((meta.get("namespace"), str(labels[RAY_CLUSTER_LABEL])))
            if ray is not None:
                key, owner = ray.cluster_uid, ray.owner
            if owner is not None and owner.get("kind") in NOT_JOBS:
                continue
            uid = str(meta.get("uid") or meta.get("name"))
            groups.setdefault(key, (owner, {}))[1][uid] = pod
        except SHAPE_ERRORS as exc:
            result.errors.append(RecordError(source, shape_problem(f"pod {index}", exc), row=index))
    teams = namespace_teams or {}
    ray_by_key = {link.cluster_uid: link for link in ray_links.values()}
    for key, (owner, members) in groups.items():
        try:
            _add_pod_job(
                result,
                key,
                owner,
                members,
                cluster,
                team_label,
                user_label,
                teams,
                gpu_jobs_only,
                source,
                shared_replicas,
                ray_by_key.get(key),
                nodes,
                nodes_file,
                nodes_partial,
            )
        except SHAPE_ERRORS as exc:
            result.errors.append(RecordError(source, shape_problem(f"the pods of job {key}", exc), job_id=key))
    return result


def _mpi_jobs(pods: list[dict]) -> dict[tuple, dict]:
    """{(namespace, MPIJob name): its owner reference}, from the pods an MPIJob owns (its workers)."""
    found = {}
    for pod in pods:
        try:
            meta = pod.get("metadata") or {}
            _, owner = job_key(pod)
            if owner is not None and owner.get("kind") == "MPIJob":
                found[(meta.get("namespace"), owner.get("name"))] = owner
        except SHAPE_ERRORS:  # reported by the grouping that follows
            continue
    return found


def ray_job_links(pods: list[dict], ray_jobs: list[dict] | None = None) -> tuple[dict[tuple, RayJobLink], dict]:
    """({(namespace, RayCluster name): its RayJob}, {submitter pod uid: its RayJob}).

    A RayCluster is a RayJob's when a listed RayJob names it in `status.rayClusterName` (not one that runs on
    an existing cluster, `spec.clusterSelector`: that cluster is not the job's, and its submitter is a Job of its
    own, whatever the cluster is called), or when a pod of a Job submits to its head service (`<cluster>-head-svc`)
    of a cluster named after the Job: KubeRay's submitter. A RayCluster of neither (one a person started, a
    RayService's, one RayJobs share) stays a job of its own, as before."""
    clusters: dict[tuple, tuple[str, str]] = {}  # (namespace, cluster name) -> (cluster name, RayCluster uid)
    for pod in pods:
        try:
            meta = pod.get("metadata") or {}
            name = (meta.get("labels") or {}).get(RAY_CLUSTER_LABEL)
            _, owner = job_key(pod)
            if name and owner is not None and owner.get("kind") == "RayCluster" and owner.get("uid"):
                clusters[(meta.get("namespace"), str(name))] = (str(name), str(owner["uid"]))
        except SHAPE_ERRORS:  # reported by the grouping that follows
            continue
    links: dict[tuple, RayJobLink] = {}
    by_job_name: dict[tuple, RayJobLink] = {}
    on_shared: set[tuple] = set()  # (namespace, name) of the listed RayJobs run on an existing cluster
    for item in ray_jobs or []:
        try:
            meta, spec, status = (item.get(k) or {} for k in ("metadata", "spec", "status"))
            where = (meta.get("namespace"), str(status.get("rayClusterName") or ""))
            if spec.get("clusterSelector"):
                on_shared.add((meta.get("namespace"), str(meta.get("name"))))
                continue
            if where not in clusters:
                continue
            finished = status.get("jobDeploymentStatus") in RAYJOB_FINISHED
            link = RayJobLink(
                owner={
                    "apiVersion": "ray.io/v1",
                    "kind": "RayJob",
                    "name": str(meta.get("name")),
                    "uid": str(meta.get("uid") or ""),
                },
                cluster_uid=clusters[where][1],
                cluster=where[1],
                listed=True,
                finished=finished,
                end=_time(status.get("endTime")) if finished else None,
                # A finished RayJob without a jobStatus (the Ray job's own was never read): its deployment's.
                state=RAY_JOB_STATES.get(
                    str(status.get("jobStatus") or "").upper(),
                    {"Complete": "Succeeded", "Failed": "Failed"}.get(status.get("jobDeploymentStatus"), ""),
                ),
                entrypoint=str(spec.get("entrypoint") or ""),
            )
            links[where] = link
            if spec.get("submissionMode") in (None, "", "K8sJobMode"):  # a submitter Job, named as the RayJob
                by_job_name[(meta.get("namespace"), str(meta.get("name")))] = link
        except SHAPE_ERRORS:
            continue
    submitters: dict[str, RayJobLink] = {}
    for pod in pods:
        try:
            meta = pod.get("metadata") or {}
            _, owner = job_key(pod)
            if owner is None or owner.get("kind") != "Job" or (meta.get("labels") or {}).get(RAY_CLUSTER_LABEL):
                continue
            namespace = meta.get("namespace")
            link = by_job_name.get((namespace, str(owner.get("name"))))
            target = _submits_to(pod)
            # A Job whose pod submits to a cluster named after the Job is its RayJob's submitter (a RayJob names
            # its RayCluster `<rayjob>-<5 characters>`, older KubeRay `<rayjob>-raycluster-<5>`, and its submitter
            # Job as itself); with the RayJobs not listed, that is how the RayJob is found. A Job that submits to
            # another cluster (a person's Job sending work to a shared RayCluster) does not make it its job.
            name = str((meta.get("labels") or {}).get(RAY_ORIGIN_NAME_LABEL) or owner.get("name"))
            # The submitter of a RayJob listed as run on an existing cluster is its own, whatever the cluster's name.
            if (namespace, name) in on_shared or (namespace, str(owner.get("name"))) in on_shared:
                continue
            if link is None and (namespace, target) in clusters and str(target).startswith(f"{name}-"):
                link = links.get((namespace, target))
                if link is None:
                    cluster, uid = clusters[(namespace, target)]
                    link = RayJobLink({"kind": "RayJob", "name": name, "uid": ""}, uid, cluster)
                    links[(namespace, target)] = link
            if link is not None:
                submitters[str(meta.get("uid") or meta.get("name"))] = link
                if not link.entrypoint:
                    link.entrypoint = _submitted_entrypoint(pod)
        except SHAPE_ERRORS:
            continue
    return links, submitters


def _pod_text(pod: dict) -> list[str]:
    """Each container's command and args, and its env values, as text."""
    out = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        out.append(" ".join(str(x) for x in (container.get("command") or []) + (container.get("args") or [])))
        out.extend(str(e.get("value") or "") for e in container.get("env") or [] if isinstance(e, dict))
    return out


def _submits_to(pod: dict) -> str | None:
    """The RayCluster a pod runs `ray job submit` against (its head service's name), None for other pods."""
    texts = _pod_text(pod)
    if not any("ray job submit" in text for text in texts):
        return None
    for text in texts:
        found = RAY_HEAD_SERVICE.search(text)
        if found:
            return found.group(1)
    return None


def _submitted_entrypoint(pod: dict) -> str:
    """What a submitter submits: the part of its `ray job submit ... -- <entrypoint>` after the `--`."""
    for text in _pod_text(pod):
        at = text.find("ray job submit")
        if at >= 0 and " -- " in text[at:]:
            return text[at:].split(" -- ", 1)[1].strip()
    return ""


def _is_ray_node(pod: dict) -> bool:
    return bool(((pod.get("metadata") or {}).get("labels") or {}).get(RAY_CLUSTER_LABEL))


def _ray_end(ray: RayJobLink | None, group: list[dict]) -> datetime | None:
    """When a RayJob ended: its status's endTime, else (not listed, or no endTime) when its submitter finished;
    None while it runs, or for no RayJob."""
    if ray is None or (ray.listed and not ray.finished):
        return None
    if ray.end is not None:
        return ray.end
    submitters = [p for p in group if not _is_ray_node(p)]
    if not submitters or any(_phase(p) not in FINISHED_PHASES for p in submitters):
        return None
    return max((end for p in submitters if (end := _pod_window(p)[1])), default=None)


def _phase(pod: dict):
    return (pod.get("status") or {}).get("phase")


def _launcher_end(owner: dict | None, group: list[dict]) -> datetime | None:
    """When an MPIJob's launcher finished (its workers, running sshd, end with it); None otherwise."""
    if owner is None or owner.get("kind") != "MPIJob":
        return None
    for pod in group:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get(KUBEFLOW_ROLE_LABEL) == "launcher" and _phase(pod) in FINISHED_PHASES:
            return _pod_window(pod)[1]
    return None


def _add_pod_job(
    result,
    key,
    owner,
    members,
    cluster,
    team_label,
    user_label,
    teams,
    gpu_jobs_only,
    source,
    shared_replicas=0,
    ray: RayJobLink | None = None,
    nodes: dict[str, dict] | None = None,
    nodes_file: bool = False,
    nodes_partial: bool = False,
) -> None:
    """The job of one group of pods, added to `result` (or counted as unfinished, or reported)."""
    group = sorted(members.values(), key=lambda p: str((p.get("metadata") or {}).get("name", "")))
    if ray is not None:  # the head first: its labels (team, user, queue) are the RayJob's pod template's
        node_type = {"head": 0, "worker": 1}
        group.sort(
            key=lambda p: node_type.get(((p.get("metadata") or {}).get("labels") or {}).get(RAY_NODE_TYPE_LABEL), 2)
        )
    launcher_end = _launcher_end(owner, group) or _ray_end(ray, group)
    if launcher_end is None and any(_phase(p) not in FINISHED_PHASES for p in group):
        result.unfinished += 1
        return
    # Pods that never ran (turned away by the kubelet, failed before their image was pulled) held no
    # GPU time and have no times: the job is its other pods (a Job's retry that did run).
    never_ran = [p for p in group if not pod_ran(p)]
    group = [p for p in group if pod_ran(p)]
    if not group:
        return
    windows = [(_pod_window(p), p) for p in group]
    if launcher_end is not None:  # an MPIJob's workers (sshd), a RayJob's head and workers: they end with it
        windows = [
            ((start, launcher_end if _phase(p) not in FINISHED_PHASES else end), p) for (start, end), p in windows
        ]
    if any(start is None or end is None for (start, end), _ in windows):
        name = (group[0].get("metadata") or {}).get("name")
        result.errors.append(RecordError(source, f"pod {name} finished without start/finish times", job_id=key))
        return
    intervals = [(start, end, pod_gpus(p)) for (start, end), p in windows]
    gpus = peak_concurrent(intervals)
    if gpu_jobs_only and gpus == 0:
        return
    job = _job(key, owner, group, intervals, gpus, cluster, team_label, user_label, teams)
    if not job.gpu_model and nodes:
        model, on = node_gpu_model(group, nodes)
        if model:  # said with the job's labels: dcgm-exporter's modelName, read later (`describe`), comes first
            job = replace(job, gpu_model=model)
            job.labels[GPU_MODEL_FROM] = f"label {GPU_PRODUCT_LABEL} of {', '.join(on)}"
    if not job.gpu_model and gpus and _nodes_unread(group, nodes, nodes_partial):
        result.models_unread.add(job.external_id)
    share = gpu_share_of(
        group, shared_replicas, product=job.gpu_model, nodes=nodes, nodes_file=nodes_file, nodes_partial=nodes_partial
    )
    replicas = share.pop("replicas", None)
    if replicas:  # shown on the job page: where each replica's share came from
        job.labels["gpu_replicas"] = replicas
    job = replace(job, **share)
    if ray is not None:
        job = _ray_job(job, ray, group)
    if never_ran:
        job.labels["pods_never_ran"] = [
            f"{(p.get('metadata') or {}).get('name')}: {(p.get('status') or {}).get('reason') or 'never started'}"
            for p in never_ran
        ]
    result.jobs.append(job)


def _ray_job(job: JobRecord, ray: RayJobLink, group: list[dict]) -> JobRecord:
    """A RayJob's job: its state is the Ray job's (its head and workers, stopped when it ended, did not finish
    it), its command what it ran (`spec.entrypoint`, or what its submitter submitted; the pods' own is
    `ray start`), and its labels name its RayCluster."""
    state = ray.state
    if not state:
        submitters = sorted((p for p in group if not _is_ray_node(p)), key=lambda p: _pod_window(p)[1] or job.end_time)
        state = _phase(submitters[-1]) if submitters else ""
    labels = {**job.labels, "ray_cluster": ray.cluster}
    return replace(
        job,
        state=state if state in FINISHED_PHASES else job.state,
        command=ray.entrypoint or job.command,
        labels=labels,
    )


def _nodes_unread(pods: list[dict], nodes: dict[str, dict] | None, nodes_partial: bool) -> bool:
    """Whether a node of the job's GPU pods was not read: none were (None), or the listing failed part way
    (`nodes_partial`) before that node."""
    if nodes is None:
        return True
    return nodes_partial and any(
        str((p.get("spec") or {}).get("nodeName") or "") not in nodes for p in pods if pod_gpus(p)
    )


def node_gpu_model(pods: list[dict], nodes: dict[str, dict]) -> tuple[str, list[str]]:
    """(GPU model, the nodes it is read from) of a job whose pods' node selectors name none: GPU Feature Discovery's
    `nvidia.com/gpu.product` label of its GPU pods' nodes, spelt as a node selector spells it (its `-SHARED` and
    `-MIG-<profile>` suffixes are dropped when it is priced, `fleet.gpu_models.gpu_model_key`, as a selector's are).
    ("", []) when no node of them is listed with the label, or when their labels name different models (a job
    across node pools of two GPUs is priced by neither)."""
    found: dict[str, str] = {}  # node -> its label
    for pod in pods:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        product = (nodes.get(node) or {}).get(GPU_PRODUCT_LABEL) if node and pod_gpus(pod) else None
        if isinstance(product, str) and gpu_model_name(product):
            found[node] = gpu_model_name(product)
    if len({gpu_model_key(product) for product in found.values()}) != 1:
        return "", []
    return sorted(found.values())[0], sorted(found)


def gpu_share_of(
    pods: list[dict],
    shared_replicas: int = 0,
    product: str = "",
    nodes: dict | None = None,
    nodes_file: bool = False,
    nodes_partial: bool = False,
) -> dict:
    """The job's `gpu_share` (the share of a physical GPU each of its GPU devices is, averaged over
    its GPU pods' devices) and `gpu_unit` (what a device is called: "MIG 1g.10gb slice"; "" for
    whole GPUs, and "GPU device" when its pods hold devices of several kinds), and for a job of shared
    replicas `replicas`: how many replicas each pod's GPU was shared into and where that came from (its node's
    label, `shared_gpu_replicas`, or unknown and counted whole). A pod asking only for `nvidia.com/gpu` on a
    node whose product label (its node's, else its node selector's, else `product`) says those are MIG slices
    or shared replicas (`product_resource`) holds such slices or replicas. `nodes`: {name: labels}, or None
    when the nodes were not read; `nodes_file`: they are an archive's nodes file, not the cluster's at the pull;
    `nodes_partial`: the listing failed part way, so a node not among them was not read (not gone)."""
    devices = sum(pod_gpus(p) for p in pods)
    if not devices:
        return {}
    total, names = 0.0, set()
    sources: dict[tuple[int, str], set[str]] = {}  # (replicas or 0, where from) -> node names

    def replicas_of(node: str, labels: dict | None, name: str) -> int:
        label = name.removesuffix(SHARED_SUFFIX) + REPLICAS_SUFFIX
        replicas = node_replicas(labels, name)
        if replicas:
            key = (replicas, f"label {label}")
        else:
            if nodes is None or (labels is None and nodes_partial):
                why = "nodes not read"
            elif labels is None:
                why = "node not in the archive's nodes file" if nodes_file else "node no longer listed"
            elif label in labels:  # there, but no whole number from 1 to MAX_REPLICAS (`parse_node_list`)
                why = f"label {label} is {str(labels[label])[:40]!r}, not a whole number from 1 to {MAX_REPLICAS}"
            else:
                why = f"no {label} label"
            if shared_replicas:
                key = (shared_replicas, f"the connector's shared_gpu_replicas: {why}")
            else:
                key = (0, f"counted whole: {why}, and no shared_gpu_replicas")
        sources.setdefault(key, set()).add(node or "an unnamed node")
        return key[0]

    for pod in pods:
        count = pod_gpus(pod)
        if not count:
            continue
        spec = pod.get("spec") or {}
        node = str(spec.get("nodeName") or "")
        labels = (nodes or {}).get(node) if node else None
        asked = gpu_resources(pod)
        pod_product = (
            (labels or {}).get(GPU_PRODUCT_LABEL) or (spec.get("nodeSelector") or {}).get(GPU_PRODUCT_LABEL) or product
        )
        as_named = product_resource(str(pod_product)) if asked == [GPU_RESOURCE] else ""
        if as_named:
            names.add(as_named)
            replicas = replicas_of(node, labels, GPU_RESOURCE) if is_shared(as_named) else 0
            total += count * resource_share(as_named, replicas)
            continue
        names.update(asked)
        for name in asked:
            if is_shared(name):
                replicas_of(node, labels, name)
        total += pod_gpu_shares(pod, shared_replicas, labels)
    share = total / devices
    units = {resource_unit(name) for name in names}
    unit = units.pop() if len(units) == 1 else "GPU device"
    unknown = [key for key in sources if not key[0]]
    if unknown and unit.endswith("replica"):
        unit += (
            " (replicas unknown, counted whole)"
            if len(unknown) == len(sources)
            else " (some replicas unknown, counted whole)"
        )
    out = {"gpu_share": 1.0 if abs(share - 1.0) < 1e-9 else share, "gpu_unit": unit}
    if sources:
        out["replicas"] = [
            f"{replicas or 'unknown'} on {', '.join(sorted(on))} ({why})"
            for (replicas, why), on in sorted(sources.items())
        ]
    return out


def _job(key, owner, pods, intervals, gpus, cluster, team_label, user_label, teams) -> JobRecord:
    first = pods[0]
    meta = first.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    labels = meta.get("labels") or {}
    team_value = labels.get(team_label, "") if team_label else ""
    team = teams.get(team_value or namespace) or team_value or namespace or "unassigned"
    spec = first.get("spec") or {}
    gpu_container = next((c for c in spec.get("containers") or [] if pod_gpus({"spec": {"containers": [c]}})), None)
    container = gpu_container or next(iter(spec.get("containers") or []), {})
    command = shlex.join([str(x) for x in (container.get("command") or []) + (container.get("args") or [])])
    reasons, exit_codes, phase, restarts = [], [], "Succeeded", 0
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") == "Failed":
            phase = "Failed"
        if status.get("reason"):  # the pod's own: Evicted, DeadlineExceeded, ...
            reasons.append(str(status["reason"]))
        for item in status.get("containerStatuses") or []:
            restarts += int(item.get("restartCount") or 0)
            # lastState: how the run before a restart ended (OOMKilled, then restarted and succeeded)
            earlier = (item.get("lastState") or {}).get("terminated") or {}
            if earlier.get("reason") and earlier.get("reason") != "Completed":
                reasons.append(earlier["reason"])
            terminated = (item.get("state") or {}).get("terminated") or {}
            if terminated.get("reason") and terminated.get("reason") != "Completed":
                reasons.append(terminated["reason"])
            if terminated.get("exitCode") is not None:
                exit_codes.append(terminated["exitCode"])
    # The last pod to finish decides the outcome (earlier ones may be retries).
    last = max(zip(intervals, pods, strict=True), key=lambda pair: pair[0][1])[1]
    state = (last.get("status") or {}).get("phase") or phase
    node_selector = spec.get("nodeSelector") or {}
    # The GPU pods' nodes: an MPIJob's launcher (or a CPU-only helper pod) is on a node of its own.
    gpu_pods = [p for p in pods if pod_gpus(p)] or pods
    nodes = sorted({str(node) for p in gpu_pods if (node := (p.get("spec") or {}).get("nodeName"))})
    pod_names = [str((p.get("metadata") or {}).get("name")) for p in pods]
    return JobRecord(
        external_id=key,
        user=str(labels.get(user_label) or "") if user_label else namespace,
        team=team,
        gpu_count=gpus,
        start_time=min(start for start, _, _ in intervals),
        end_time=max(end for _, end, _ in intervals),
        cluster=cluster,
        name=str(owner.get("name") if owner else meta.get("name") or ""),
        gpu_model=str(node_selector.get(GPU_PRODUCT_LABEL) or ""),
        node_count=max(1, len(nodes)),
        cpu_count=math.ceil(max(pod_cpus(p) for p in pods)) or None,
        state=state,
        job_type="batch",
        command=command,
        queue=str(labels.get(QUEUE_LABEL) or namespace),
        submit_time=min(
            filter(None, (_time((p.get("metadata") or {}).get("creationTimestamp")) for p in pods)), default=None
        ),
        labels={
            "source": "kubernetes",
            "namespace": namespace,
            "owner_kind": str(owner.get("kind")) if owner else "Pod",
            "owner_name": str(owner.get("name")) if owner else str(meta.get("name")),
            "pods": pod_names,
            "nodes": nodes,
            "image": str(container.get("image") or ""),
            "reasons": sorted(set(reasons)),
            "exit_codes": exit_codes,
            "restarts": restarts,
            "gpu_resources": sorted({name for p in pods for name in gpu_resources(p)}),
        },
        raw={
            "owner": owner,
            "pods": [
                {
                    "name": (p.get("metadata") or {}).get("name"),
                    "uid": (p.get("metadata") or {}).get("uid"),
                    "containers": [c.get("name") for c in (p.get("spec") or {}).get("containers") or []],
                    "init_containers": [c.get("name") for c in (p.get("spec") or {}).get("initContainers") or []],
                    # restarts of each container (init containers too): its runs are numbered from them, and
                    # its previous run's log is fetched too (previous=true)
                    "restarts": {
                        str(c.get("name")): int(c.get("restartCount") or 0)
                        for c in ((p.get("status") or {}).get("initContainerStatuses") or [])
                        + ((p.get("status") or {}).get("containerStatuses") or [])
                        if c.get("restartCount")
                    },
                    "nodeName": (p.get("spec") or {}).get("nodeName"),
                    "phase": (p.get("status") or {}).get("phase"),
                }
                for p in pods
            ],
        },
    )


def run_log_path(pod: str, container: str, run: int) -> str:
    return f"{pod}/{container}.run{run}.log"


def _runs_text(runs: list[int]) -> str:
    """[1, 2, 3, 5] -> "1–3, 5"."""
    spans: list[list[int]] = []
    for run in sorted(runs):
        if spans and run == spans[-1][1] + 1:
            spans[-1][1] = run
        else:
            spans.append([run, run])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


def log_runs(raw: dict, paths: Iterable[str]) -> list[str]:
    """For each container of a job's pods (its `raw`) that restarted, which runs' logs are stored (`paths`) and
    which are not: "bert-0/main: 3 runs, logs of runs 2–3; no log of run 1 (...)". Nothing for a job whose
    logs were stored before they were named by run (`main.log`, `main.previous.log`): which runs those are
    was not recorded."""
    stored: dict[tuple[str, str], set[int]] = {}
    for path in paths:
        if found := RUN_LOG.match(path):
            stored.setdefault((found["pod"], found["container"]), set()).add(int(found["run"]))
    if not stored:
        return []
    out = []
    for pod in raw.get("pods") or [] if isinstance(raw, dict) else []:
        if not isinstance(pod, dict) or not isinstance(pod.get("restarts"), dict):
            continue
        for container, restarts in pod["restarts"].items():
            if not isinstance(restarts, int) or restarts < 1:
                continue
            runs = restarts + 1
            kept = sorted(run for run in stored.get((str(pod.get("name")), container), ()) if run <= runs)
            missing = [run for run in range(1, runs + 1) if run not in kept]
            text = f"{pod.get('name')}/{container}: {runs} runs, "
            text += f"logs of runs {_runs_text(kept)}" if kept else "no log kept"
            if kept and missing:
                text += (
                    f"; no log of run{'s' if len(missing) > 1 else ''} {_runs_text(missing)} "
                    "(the kubelet keeps a container's last two runs only)"
                )
            out.append(text)
    return out


def series_request(job: JobRecord) -> SeriesRequest:
    return SeriesRequest(
        start=job.start_time,
        end=job.end_time,
        namespace=str(job.labels.get("namespace") or ""),
        pods=tuple(job.labels.get("pods") or ()),
        hosts=tuple(job.labels.get("nodes") or ()),
    )


@register
class KubernetesConnector(BaseConnector):
    """The Kubernetes API server (bearer token of a ServiceAccount with get/list on pods and pods/log, and list on
    nodes for shared GPUs' replicas).

    Options: `label_selector` (a pod label selector, e.g. "team" or "app.kubernetes.io/part-of=training";
    a node label such as "nvidia.com/gpu.present=true" matches no pod), `namespace`
    (one namespace instead of all), `team_label` (a pod label naming the team; default: the
    namespace), `user_label`, `namespace_teams` ({namespace or label value: team}),
    `settle_minutes` (1), `fetch_logs` (true), `log_max_bytes` (20 MiB), `gpu_jobs_only` (true),
    `shared_gpu_replicas` (the time-slicing/MPS replicas of a shared GPU whose node has no `nvidia.com/gpu.replicas`
    label; unset there: a replica counts whole).
    """

    kind = "kubernetes"
    label = "Kubernetes (pods API)"
    keeps_artifacts = RUN_LOG
    options_example = '{"team_label": "team", "namespace_teams": {"ml-research": "Research"}}'
    url_example = "https://kubernetes.default.svc"
    url_what = "the Kubernetes API server"
    options_schema = {
        "label_selector": "text",
        "namespace": "text",
        "team_label": "text",
        "user_label": "text",
        "namespace_teams": "names to names",
        "settle_minutes": "number",
        "fetch_logs": "true or false",
        "log_max_bytes": "whole number",
        "gpu_jobs_only": "true or false",
        "page_size": "whole number",
        "shared_gpu_replicas": "whole number",
    }
    auth_hint = "Bearer, a ServiceAccount token (get/list pods and pods/log; list nodes for shared GPUs)."

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        options = self.settings.options
        self.settle_s = number_option(options, "settle_minutes", 1, low=0, high=24 * 60) * 60
        self.log_max_bytes = number_option(options, "log_max_bytes", 20 * 2**20, low=0, high=2**30, integer=True)
        self.page_size = number_option(options, "page_size", PAGE_SIZE, low=1, high=10_000, integer=True)
        self.namespace_teams = mapping_option(options, "namespace_teams")
        # The GPU Operator's time-slicing (or MPS) `replicas`: each `*.shared` device is 1/replicas of a GPU.
        self.shared_replicas = number_option(options, "shared_gpu_replicas", 0, low=0, high=1024, integer=True)
        # namespace -> [jobs whose logs were refused (403), the API server's first refusal], reported once a pull
        self.log_refusals: dict[str, list] = {}
        self.ray_refusal = ""  # the API server's refusal to list RayJobs (RBAC), reported once a pull
        self.node_refusal = ""  # the API server's refusal to list nodes (RBAC), reported once a pull
        self.node_failure = ""  # listing nodes failed otherwise (5xx, a timeout after retries): reported once a pull
        self.nodes_partial = False  # it failed after some pages were read: those nodes are kept
        self.pod_errors: list[RecordError] = []  # the pods of the last listing skipped for their shape (`pod_problem`)

    @property
    def pods_path(self) -> str:
        namespace = self.settings.options.get("namespace")
        return f"api/v1/namespaces/{namespace}/pods" if namespace else "api/v1/pods"

    def check(self) -> dict:
        """One pod, with the connector's own selector: a `label_selector` that matches no pod (a node
        label such as nvidia.com/gpu.present=true) made pulls store nothing while the check said the
        pods were visible."""
        selector = str(self.settings.options.get("label_selector") or "")
        params = {"limit": 1, **({"labelSelector": selector} if selector else {})}
        doc = self.http.get_json(self.pods_path, params=params)
        pods, _ = parse_pod_list(doc, source=self.settings.name)
        if not pods and selector:
            matches = f"{selector!r} matches no pod: pulls will store nothing"
            outcome = {"pods_visible": False, "label_selector": matches}
        else:
            outcome = {"pods_visible": bool(pods)}
        return {**outcome, **self.check_nodes()}

    def check_nodes(self) -> dict:
        """One node, for a shared GPU's replicas and a GPU model no node selector names (`list_nodes`):
        {"nodes_visible": True}, a warning when they cannot
        be listed (the connector still answers: a pull needs its pods, and without the nodes counts replicas by
        `shared_gpu_replicas` or whole), or nothing when the API server has no such list (404). A ServiceAccount
        granted pods in a namespace's Role is refused the nodes (cluster-scoped): the check said only that the pods
        answered, and the operator learnt of the missing grant from a pull's error after it had priced the replicas."""
        replicas = self.shared_replicas
        fallback = f"by shared_gpu_replicas ({replicas})" if replicas else "whole (no shared_gpu_replicas)"
        try:
            doc = self.http.get_json(NODES_PATH, params={"limit": 1})
        except HttpStatusError as exc:
            if exc.status == 404:
                return {}
            if exc.status == 403:
                return {
                    "warnings": [
                        "nodes: listing nodes is not allowed, so shared GPUs' replicas cannot be read from their "
                        f"nodes' nvidia.com/gpu.replicas labels and pulls count them {fallback}. Grant the "
                        f"ServiceAccount list on nodes in a ClusterRole (nodes are cluster-scoped): {NODES_RULE}. "
                        f"Pods without a {GPU_PRODUCT_LABEL} node selector take no GPU model from their nodes' label "
                        "either (only from dcgm-exporter, with metrics_from). A cluster without time-sliced or MPS "
                        "GPUs whose jobs' GPU models come from node selectors or dcgm-exporter needs no such grant. "
                        f"{exc}"
                    ]
                }
            return {"warnings": [self._nodes_failed(exc, fallback)]}
        except ConnectorError as exc:
            return {"warnings": [self._nodes_failed(exc, fallback)]}
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            got = f"expected a NodeList with an 'items' list, got {json_kind(doc)}"
            return {"warnings": [self._nodes_failed(got, fallback)]}
        return {"nodes_visible": True}

    @staticmethod
    def _nodes_failed(problem, fallback: str) -> str:
        return (
            f"nodes: listing nodes failed ({problem}); a pull lists them when a pod holds a GPU, and if they fail "
            f"again counts shared GPUs' replicas {fallback} and says so in its errors"
        )

    def list_pods(self) -> list[dict]:
        """Every pod, page by page (`_pages`), each once: keyed by uid, a pod read again is the later reading."""
        params: dict = {"limit": self.page_size}
        if self.settings.options.get("label_selector"):
            params["labelSelector"] = self.settings.options["label_selector"]
        pods: dict[str, dict] = {}
        self.pod_errors = []
        source = f"{self.settings.name} {self.pods_path}"
        for page_number, doc in enumerate(self._pages(self.pods_path, params), start=1):
            page, _ = parse_pod_list(doc, source=source)
            for index, pod in enumerate(page, start=1):
                problem = pod_problem(pod)
                if problem:
                    where = f"page {page_number}, pod {index}" if page_number > 1 else f"pod {index}"
                    self.pod_errors.append(RecordError(source, f"{where}: {problem}, so it was skipped", row=index))
                    continue
                meta = pod.get("metadata") or {}
                pods[str(meta.get("uid") or f"{meta.get('namespace') or ''}/{meta.get('name') or ''}")] = pod
        return list(pods.values())

    def _pages(self, path: str, params: dict) -> Iterator[dict]:
        """The pages of a list, following `metadata.continue`.

        A token older than etcd's compaction (about 5 minutes) is answered 410 Gone (reason Expired); the
        Status then carries a token of its own in `metadata.continue` for the rest of the list at the latest
        revision ("inconsistent": objects created, changed or deleted since the first page show as they are
        now). The listing goes on with it, keeping the pages it read, so a listing slower than the compaction
        still ends. Without one (or on a first page) it begins again, up to MAX_RELISTS times. The objects a
        pull stores are jobs that ended before it began (`settle_minutes`), which a list going on from a newer
        revision shows whole. Bounded: more than MAX_REPEATS 410s with no page between them, or a page served
        again and again, fail the pull."""
        token, seen, repeats, expired_in_a_row, relists = "", set(), 0, 0, 0
        while True:
            try:
                doc = self.http.get_json(path, params={**params, **({"continue": token} if token else {})})
            except HttpStatusError as exc:
                if exc.status != 410:
                    raise
                expired_in_a_row += 1
                if expired_in_a_row > MAX_REPEATS:
                    raise BadData(
                        f"{self.settings.name}: listing {path} failed: the API server answered 410 Gone (its continue "
                        f"token expired) {expired_in_a_row} times in a row"
                    ) from exc
                metadata = (exc.document or {}).get("metadata")
                fresh = str(metadata.get("continue") or "") if isinstance(metadata, dict) else ""
                if fresh and token:
                    logger.info("%s: continue token expired; going on with the inconsistent one", path)
                    token = fresh
                    continue
                relists += 1
                if relists > MAX_RELISTS:
                    raise BadData(
                        f"{self.settings.name}: listing {path} kept expiring (410 Gone) and the API server gave no "
                        f"token to go on with; it began again {MAX_RELISTS} times"
                    ) from exc
                token, seen, repeats = "", set(), 0
                continue
            expired_in_a_row = 0
            yield doc
            token = continue_token(doc, f"{self.settings.name} {path}") if isinstance(doc, dict) else ""
            if not token:
                return
            if token in seen:  # a page served twice: harmless once or twice, a loop after that
                repeats += 1
                if repeats > MAX_REPEATS:
                    raise BadData(f"{self.settings.name}: the API server keeps repeating a page of {path}")
            seen.add(token)

    def list_ray_jobs(self, pods: list[dict]) -> list[dict] | None:
        """KubeRay's RayJobs (`ray.io/v1`), asked for only when a pod is a Ray node; None when the API server
        has no such resource (404) or may not show it (403: the pull says so once): RayJobs are then found
        from their submitters' pods alone."""
        self.ray_refusal = ""
        if not any(_is_ray_node(p) for p in pods if isinstance(p, dict)):
            return None
        namespace = self.settings.options.get("namespace")
        path = f"apis/ray.io/v1/namespaces/{namespace}/rayjobs" if namespace else "apis/ray.io/v1/rayjobs"
        items: dict[str, dict] = {}  # by uid: a listing begun again (410 Gone) reads some twice
        try:
            for doc in self._pages(path, {"limit": self.page_size}):
                if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
                    raise BadData(f"{self.settings.name} {path}: expected a RayJobList with an 'items' list")
                for index, item in enumerate(doc["items"], start=1):
                    if isinstance(item, dict):
                        meta = item.get("metadata") or {}
                        if not isinstance(meta, dict):  # reported with the pods skipped (`pod_errors`)
                            message = f"RayJob {index}: 'metadata' is not an object, so it was skipped"
                            self.pod_errors.append(RecordError(f"{self.settings.name} {path}", message, row=index))
                            continue
                        items[str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")] = item
        except HttpStatusError as exc:
            if exc.status == 403:
                self.ray_refusal = str(exc)
            if exc.status in (403, 404):
                return None
            raise
        return list(items.values())

    def list_nodes(self, pods: list[dict]) -> dict[str, dict] | None:
        """{node name: its `nvidia.com/` labels} (GPU Feature Discovery's: the replicas a shared GPU's pod was one
        of), page by page, asked for only when a pod holds a GPU; None when the API server has no such list (404)
        or may not show it (403: nodes are cluster-scoped, so a ServiceAccount granted pods in a namespace's Role
        cannot list them; said once a pull where a job's replicas needed them). None too when the listing fails
        otherwise (a 5xx or a timeout once the HTTP client's retries are used up, a 410 that never ends, an answer
        that is no NodeList): the nodes are an optional lookup, so the pull falls back as for a 403 and says so once,
        rather than losing every job of the pull (a failure listing the pods still fails it). When a later page fails,
        the pages read are kept (`nodes_partial`): their pods take their nodes' labels, and pods on nodes not read say
        'nodes not read' (not 'no longer listed'); the failure is said once, as for one on the first page. A
        node's labels are as they are at the pull: a node relabelled since its pod ran is read as it is now, and
        one scaled away is not listed."""
        self.node_refusal = self.node_failure = ""
        self.nodes_partial = False
        if not any(pod_gpus(p) for p in pods):
            return None
        path = NODES_PATH
        source = f"{self.settings.name} {path}"
        nodes: dict[str, dict] = {}
        try:
            for page, doc in enumerate(self._pages(path, {"limit": self.page_size}), start=1):
                found, problems = parse_node_list(doc, source=source, listed=True, page=page)
                nodes.update(found)
                self.pod_errors.extend(problems)  # reported with the pods skipped, as the RayJobs' are
        except HttpStatusError as exc:
            if exc.status == 403 and not nodes:
                self.node_refusal = str(exc)
            elif exc.status != 404 or nodes:  # a later page refused or gone is a failure part way
                self.node_failure = str(exc)
            return self._nodes_so_far(nodes)
        except (TransientError, BadData) as exc:
            logger.warning("%s: listing nodes failed: %s", self.settings.name, exc)
            self.node_failure = str(exc)
            return self._nodes_so_far(nodes)
        return nodes

    def _nodes_so_far(self, nodes: dict[str, dict]) -> dict[str, dict] | None:
        """The nodes of the pages read before a later page failed (kept: their pods take their replicas and
        model from them; a node not among them was not read, `nodes_partial`), or None when none were."""
        if not nodes:
            return None
        self.nodes_partial = True
        return nodes

    def _node_error(self, nodes: dict[str, dict] | None, replicas: bool = True, models: int = 0) -> str:
        """What the pull says, once, of the nodes `list_nodes` could not read (refused, or failed on the first page
        or part way): what they would have given and what was done instead. `replicas`: a shared GPU's job needed
        its node's replicas (counted by shared_gpu_replicas or whole); `models`: how many jobs took no GPU model
        from their nodes' label (priced at the cluster's default price). "" when the nodes were read, or when no
        job needed them."""
        if not (self.node_refusal or self.node_failure) or not (replicas or models):
            return ""
        fallback = (
            f"they are counted by shared_gpu_replicas ({self.shared_replicas})"
            if self.shared_replicas
            else "with no shared_gpu_replicas they are counted whole"
        )
        partial = bool(self.node_failure and self.nodes_partial)
        link = ", so" if self.node_refusal else " and"  # a refusal says what was lost; a failure, after "so"
        lost = []
        if replicas and partial:
            lost.append(
                f"shared GPUs' replicas on the nodes not read could not be read from their nvidia.com/gpu.replicas "
                f"labels{link} {fallback} ('nodes not read')"
            )
        elif replicas:
            lost.append(
                f"shared GPUs' replicas could not be read from their nodes' nvidia.com/gpu.replicas labels{link} "
                f"{fallback}"
            )
        if models:
            their, they = ("their", "they are") if models != 1 else ("its", "it is")
            dcgm = f", unless dcgm-exporter names {their} model (metrics_from)" if self.metrics is not None else ""
            lost.append(
                f"{models} job{'s' if models != 1 else ''} with GPUs took no GPU model from {their} nodes' "
                f"{GPU_PRODUCT_LABEL} label ({their} pods have no {GPU_PRODUCT_LABEL} node selector){link} {they} "
                f"priced at the cluster's default price{dcgm}"
            )
        if self.node_refusal:
            return (
                f"nodes: listing nodes is not allowed (grant the ServiceAccount list on nodes, in a ClusterRole: nodes "
                f"are cluster-scoped; the rule: {NODES_RULE}); {'; '.join(lost)}. {self.node_refusal}"
            )
        if partial:
            count = len(nodes or {})
            failed = f"listing nodes failed after {count} node{'s were' if count != 1 else ' was'} read"
        else:
            failed = "listing nodes failed"
        return (
            f"nodes: {failed}, so {'; '.join(lost)}; the jobs are stored so (pull their window again to read them "
            f"from the nodes). {self.node_failure}"
        )

    def list_jobs(self, watermark: str, until: datetime) -> Iterator[Batch]:
        since = parse_time_watermark(watermark)
        cutoff = until.timestamp() - self.settle_s
        options = self.settings.options
        pods = self.list_pods()
        ray_jobs = self.list_ray_jobs(pods)
        nodes = self.list_nodes(pods)
        parsed = jobs_from_pods(
            pods,
            cluster=self.settings.cluster,
            team_label=str(options.get("team_label") or ""),
            user_label=str(options.get("user_label") or ""),
            namespace_teams=self.namespace_teams,
            gpu_jobs_only=bool(options.get("gpu_jobs_only", True)),
            source=self.settings.name,
            shared_replicas=self.shared_replicas,
            ray_jobs=ray_jobs,
            nodes=nodes,
            nodes_partial=self.nodes_partial,
        )
        parsed.errors[:0] = self.pod_errors
        if self.ray_refusal:  # once a pull: RayJobs still found from their submitters, without their status
            message = (
                f"rayjobs: listing RayJobs (ray.io/v1) is not allowed (grant the ServiceAccount list on rayjobs); "
                f"RayJobs are found from their submitter pods only. {self.ray_refusal}"
            )
            parsed.errors.append(RecordError(self.settings.name, message[:2000]))
        jobs = [j for j in parsed.jobs if j.end_time.timestamp() <= cutoff and (since is None or j.end_time > since)]
        # Once a pull, and only where a job needed the nodes: for its replicas (a shared GPU's), or for the GPU model
        # its nodes' label would have named (no node selector names one; counted among the jobs this pull stores).
        # A fleet whose GPUs are whole and whose pods name their model is not told.
        node_error = self._node_error(
            nodes,
            replicas=any("gpu_replicas" in job.labels for job in parsed.jobs),
            models=sum(1 for job in jobs if job.external_id in parsed.models_unread),
        )
        if node_error:
            parsed.errors.append(RecordError(self.settings.name, node_error[:2000]))
        jobs.sort(key=lambda j: (j.end_time, j.external_id))
        # One batch per distinct end time, so the watermark (the last stored end) never splits a tie.
        if parsed.errors:
            yield Batch(jobs=[], watermark=watermark, errors=parsed.errors)
        index = 0
        while index < len(jobs):
            end = jobs[index].end_time
            batch = []
            while index < len(jobs) and jobs[index].end_time == end:
                batch.append(jobs[index])
                index += 1
            yield Batch(jobs=batch, watermark=time_watermark(end))
        if self.log_refusals:  # resumed once the last batch's jobs are stored: one error for the pull
            yield Batch(jobs=[], watermark=time_watermark(jobs[-1].end_time), errors=[self.refusal_error()])

    def refusal_error(self) -> RecordError:
        """One error for every job whose logs the API server refused (RBAC), however many there were."""
        count = sum(jobs for jobs, _ in self.log_refusals.values())
        namespaces = ", ".join(sorted(self.log_refusals))
        first = next(iter(self.log_refusals.values()))[1]
        noun = "job was" if count == 1 else "jobs were"
        message = (
            f"artifacts: {count} {noun} stored without logs: reading pods/log is not allowed in {namespaces} "
            f"(grant the ServiceAccount get on pods/log). {first}"
        )
        return RecordError(self.settings.name, message[:2000])

    def describe(self, job: JobRecord) -> JobRecord:
        """The job with its GPU model from dcgm-exporter's `modelName` when its pods did not name one
        (few pods carry a `nvidia.com/gpu.product` node selector): prices are per GPU model, and a job
        without one was priced at the cluster's default price on a cluster of several models. A model read
        from the job's nodes' labels (`gpu_model_from`) gives way to it: the series are the job's own GPUs as it
        ran, the labels the nodes as they are at the pull."""
        if (job.gpu_model and GPU_MODEL_FROM not in job.labels) or not isinstance(self.metrics, PrometheusConnector):
            return job
        models = self.metrics.gpu_models(series_request(job))
        if not models:
            return job
        labels = {name: value for name, value in job.labels.items() if name != GPU_MODEL_FROM}
        return replace(job, gpu_model=models[0], labels=labels)

    def fetch_series(self, job: JobRecord):
        if isinstance(self.metrics, PrometheusConnector):
            return self.metrics.fetch_job_series(series_request(job))
        return None

    def fetch_artifacts(self, job: JobRecord) -> list[ArtifactRecord]:
        """Each pod's logs: its init containers' (a failed `pip install` or data download in one is why the
        job never trained), each container's previous run when it restarted (`previous=true`: an OOMKilled
        first attempt's last lines are in no other log) and its current run, each stored as its run
        (`run_log_path`). The kubelet keeps a container's current run and the one before it only: the runs
        before those are gone by the time a finished job is pulled. A run stored by an earlier pull of the
        job that this one cannot read again (its pod's node scaled away) is kept (`keeps_artifacts`)."""
        if not self.settings.options.get("fetch_logs", True):
            return []
        namespace = job.labels.get("namespace")
        if namespace in self.log_refusals:  # pods/log refused in this namespace earlier in the pull: not again
            self.log_refusals[namespace][0] += 1
            job.labels["logs_unavailable"] = ["reading pods/log is not allowed (HTTP 403)"]
            return []
        out, unavailable, dead_nodes = [], [], set()
        for pod in job.raw.get("pods") or []:
            node = pod.get("nodeName") or ""
            if node and node in dead_nodes:  # its kubelet did not answer for another pod: not again
                unavailable.append(f"{pod['name']}: its node {node} did not serve logs")
                continue
            restarts = pod.get("restarts") or {}
            logs = []  # (container, run number, previous): a container restarted R times is on its run R + 1
            for container in [*(pod.get("init_containers") or []), *(pod.get("containers") or [])]:
                runs = int(restarts.get(container) or 0) + 1
                if runs > 1:
                    logs.append((container, runs - 1, True))
                logs.append((container, runs, False))
            for container, run, previous in logs:
                path = f"api/v1/namespaces/{namespace}/pods/{pod['name']}/log"
                params = {"container": container, "timestamps": "true"}
                if previous:
                    params["previous"] = "true"
                try:
                    content, cut = self.http.get_head_tail(path, params=params, max_bytes=self.log_max_bytes)
                except HttpStatusError as exc:
                    if exc.status in (400, 404):  # pod garbage-collected, or a container that never ran
                        continue
                    if exc.status == 403:  # RBAC: the same for every job of the namespace, said once a pull
                        self.log_refusals[namespace] = [1, str(exc)]
                        job.labels["logs_unavailable"] = ["reading pods/log is not allowed (HTTP 403)"]
                        return out
                    raise
                except TransientError as exc:
                    # The API server reads a log from the node's kubelet: a node that is down (NotReady,
                    # being drained or scaled away) makes it answer 500 to every try. Failing the pull
                    # there stopped the connector, pull after pull, until the pod was deleted.
                    logger.warning("Logs of pod %s on node %s unavailable: %s", pod["name"], node, exc)
                    unavailable.append(f"{pod['name']}: {exc}")
                    dead_nodes.add(node)
                    break
                path = run_log_path(pod["name"], container, run)
                out.append(ArtifactRecord(job.external_id, "log", path, content, truncated=cut))
        if unavailable:
            job.labels["logs_unavailable"] = unavailable  # shown with the job's labels
            if not out:
                raise BadData(f"no log could be read: {'; '.join(unavailable)}"[:2000])
        return out
