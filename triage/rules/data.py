"""Data-dimension rules: host-GPU transfer, gradient exchange, CPU preprocessing, remote reads,
external downloads and intermediate uploads."""

from __future__ import annotations

import re

from fleet.logevents import REMOTE_READ, UPLOAD
from fleet.numbers import share_text
from triage.evidence import Evidence
from triage.evidence.remote_reads import read_kind
from triage.rules.common import (
    distributed_launches,
    explained_gaps,
    gaps_of,
    periodic,
    plural,
    quoted_once,
    srun_task_lines,
    start_up_downloads,
    startup,
    unexplained_gaps,
)
from triage.rules.registry import Finding, register
from triage.taxonomy import Category

# A loader's finding that rests on its worker count alone, when the workers it lacks would wait on remote reads: below
# remote_data_reading's whole-run 0.45 and 0.55, so the remote reads lead the job page and take more of the waste.
_BEHIND_REMOTE = 0.4
_WANDB = re.compile(r"\bwandb\b|\bW&B\b|\bWeights (?:&|and) Biases\b", re.IGNORECASE)


def _training(ev: Evidence) -> bool:
    return ev.phases.training is not None and not ev.interactive


def training_loaders(ev: Evidence) -> list:
    """The DataLoaders that feed the training loop (else every assigned one, else all)."""
    loaders = ev.scripts.of("dataloader")
    feeding = [f for f in loaders if f.detail.get("feeds_training")]
    if feeding:
        return feeding
    assigned = [f for f in loaders if f.detail.get("assigned_to")]
    return (assigned or loaders) + ev.scripts.of("training_arguments")


@register(Category.HOST_GPU_TRANSFER)
def host_gpu_transfer(ev: Evidence, th: dict) -> list[Finding]:
    if not _training(ev):
        return []
    loaders = training_loaders(ev)
    pageable = [f for f in loaders if f.detail.get("pin_memory") is not True]
    blocking = [f for f in ev.scripts.of("device_copy") if not f.detail.get("non_blocking")]
    # The training step's copies, where a step loop (one that runs backward) makes them: evaluate()'s copy of its
    # batch runs in a pass over a held-out set now and then, rarely what stalls the GPUs, and quoting the same
    # `inputs = inputs.to(device)` again beside the step's says nothing new. Elsewhere every copy in a loop counts.
    blocking = [f for f in blocking if f.detail.get("in_step_loop")] or blocking
    traces = [t for t in ev.traces if t.pageable_share_of_steps >= th["pageable_min_share"]]
    if not (pageable or traces):
        return []
    confidence = 0.6 + 0.2 * bool(pageable and blocking) + 0.2 * bool(traces)
    if not pageable and not traces:
        return []
    parts = []
    if pageable:
        explicit = any(f.detail.get("pin_memory_given") for f in pageable)
        parts.append(
            f"DataLoader{'s' if len(pageable) > 1 else ''} without pinned memory "
            f"({'`pin_memory=False`' if explicit else '`pin_memory` left at its default, `False`'})"
        )
    if blocking:
        copies = plural(len(blocking), "blocking copy", "blocking copies")
        parts.append(f"{copies} to the GPU (no `non_blocking=True`)")
    if traces:
        share = max(t.pageable_share_of_steps for t in traces)
        parts.append(f"pageable host-to-device copies take {share_text(share)} of profiled step time")
    pcie = ev.phases.pcie_rx_training
    return [
        Finding(
            category=Category.HOST_GPU_TRANSFER,
            sub_cause="pageable_memory" if pageable or traces else "blocking_copy",
            confidence=confidence,
            summary="Host-to-GPU copies from pageable memory stall each step: " + "; ".join(parts) + ".",
            windows=[ev.phases.training],
            code=quoted_once(pageable)[:3] + blocking[:4],
            numbers={
                "pageable_loaders": len(pageable),
                "blocking_copies": len(blocking),
                "pcie_rx_gb_s": None if pcie is None else round(pcie / 1e9, 2),
                "traces": [t.as_dict() for t in traces[:2]],
            },
        )
    ]


@register(Category.DATA_EXCHANGE)
def data_exchange(ev: Evidence, th: dict) -> list[Finding]:
    p = ev.phases
    if ev.job.gpu_count < 2 or not _training(ev):
        return []
    # A drop that a save, upload or remote read explains is not a gradient exchange.
    explained = explained_gaps(ev)
    dips = [t for t in p.aligned_dips if not any(g.span.start <= t < g.span.end for g in explained)]
    dip_share = len(dips) / max(p.training_samples, 1)
    dataparallel = ev.scripts.of("data_parallel")
    manual = [f for f in ev.scripts.of("manual_collective") if f.detail.get("in_loop")]
    socket_env = [
        f
        for f in ev.scripts.of("env")
        if (f.detail["name"] == "NCCL_IB_DISABLE" and f.detail["value"] == "1")
        or f.detail["name"] == "NCCL_P2P_DISABLE"
    ]
    socket_lines = ev.logs.socket_lines
    metric = dip_share >= th["exchange_min_dip_share"]
    code_signal = bool(dataparallel or manual)
    if not (metric or code_signal):
        return []
    sockets = bool(socket_env or socket_lines)
    if dataparallel:
        sub = "dataparallel"
    elif manual:
        sub = "unbucketed_allreduce_over_sockets" if sockets else "unbucketed_allreduce"
    elif sockets:  # dips and NCCL over sockets, no all-reduce of its own in the loop
        sub = "nccl_over_sockets"
    else:
        sub = "synchronisation_dips"
    confidence = 0.55 + 0.3 * metric + 0.15 * code_signal
    parts = []
    if metric:
        parts.append(f"every GPU dips at once in {share_text(dip_share)} of training samples")
    if dataparallel:
        parts.append("nn.DataParallel scatters inputs and gathers outputs through GPU 0 every step")
    if manual:
        parts.append("gradients are all-reduced one parameter at a time in the step loop")
    if sockets:
        parts.append("NCCL runs over TCP sockets, not InfiniBand")
    return [
        Finding(
            category=Category.DATA_EXCHANGE,
            sub_cause=sub,
            confidence=confidence,
            summary=f"Gradient/parameter exchange between {ev.job.gpu_count} GPUs on "
            f"{plural(ev.job.node_count, 'node')} stalls training: " + "; ".join(parts) + ".",
            windows=[p.training],
            log_lines=(socket_lines + ev.logs.dataparallel_lines)[:3],
            code=(dataparallel + manual + socket_env)[:5],
            numbers={"aligned_dip_share": round(dip_share, 3), "gpus": ev.job.gpu_count, "nodes": ev.job.node_count},
        )
    ]


@register(Category.DATA_PREPROCESSING)
def data_preprocessing(ev: Evidence, th: dict) -> list[Finding]:
    if not _training(ev):
        return []
    p = ev.phases
    cpu = p.cpu_training
    loaders = training_loaders(ev)
    workers = [f.detail.get("num_workers") for f in loaders if isinstance(f.detail.get("num_workers"), int)]
    num_workers = min(workers) if workers else None
    warnings = ev.logs.worker_warnings
    cpus = ev.job.cpu_count
    per_process = cpus // max(ev.job.node_count, 1) if cpus else None
    saturated = cpu is not None and cpu >= th["cpu_saturated"]
    few = num_workers is not None and num_workers < th["loader_min_workers"]
    too_many = bool(warnings and warnings[0].created) or (
        num_workers is not None and per_process is not None and num_workers > per_process
    )
    host_wait = [t for t in ev.traces if t.host_wait_share >= th["host_wait_min_share"]]
    # With no or few workers the loading runs on a few cores only: those can be saturated while the
    # allocation's CPU figure stays low (one busy core of 16 is 6 %).
    loader_cores = busy_cores = None
    if few and cpu is not None and cpus:
        loader_cores = _training_processes(ev) * (num_workers + 1)  # a process loads its own batches at 0 workers
        busy_cores = cpu / 100 * cpus
    loaders_busy = (
        loader_cores is not None and loader_cores < cpus and busy_cores >= th["cpu_saturated"] / 100 * loader_cores
    )
    if saturated:
        confidence = 0.8 + 0.1 * bool(few or too_many or warnings)
    elif loaders_busy:
        confidence = 0.7 + 0.1 * bool(warnings or host_wait)
    elif cpu is None and (num_workers == 0 or warnings or host_wait):
        confidence = 0.55 + 0.1 * bool(host_wait)
    else:
        return []
    if too_many:
        sub = "too_many_workers"
    elif num_workers == 0:
        sub = "no_workers"
    elif few:
        sub = "few_workers"
    else:
        sub = "cpu_bound_transforms"
    # Without a CPU metric the finding rests on the worker count alone. When the loader reads remote storage
    # (remote_data_reading), the few loading processes wait on those reads, not on CPU work: one wait, which the
    # remote reads cause and the missing workers fail to hide. The loader stays, as the contributing cause, below
    # the remote reads, so they lead and take more of the waste (the job's unused GPU-hours are shared once).
    remote = None
    if cpu is None and few and not too_many:
        remote = next(iter(remote_data_reading(ev, th)), None)
        if remote is not None:
            confidence = _BEHIND_REMOTE
    parts = []
    if loaders_busy:
        processes = loader_cores // (num_workers + 1)
        who = f"{processes} training process{'es' if processes > 1 else ''}"
        parts.append(
            f"the CPUs ran at {cpu:.0f} % of the allocation ({cpus} cores), about {round(busy_cores, 1):g} cores busy: "
            + (
                f"all that {who} loading {'their' if processes > 1 else 'its'} own batches can use"
                if num_workers == 0
                else f"all that {who} with {num_workers} loader worker{'s' if num_workers > 1 else ''} each can use"
            )
        )
    elif cpu is not None:
        parts.append(f"the CPUs ran at {cpu:.0f} % of the allocation ({cpus or '?'} cores)")
    if num_workers is not None:
        parts.append(f"`num_workers={num_workers}`")  # a setting, as code: as the fix writes it (guidance)
    said = list(dict.fromkeys(w.said() for w in warnings))  # each warning once, as it was printed first
    parts.extend(said[:2])
    if host_wait:
        wait = share_text(host_wait[0].host_wait_share)
        parts.append(f"the profiler shows the GPU waiting on the host {wait} of idle time")
    summary = "Data loading and preprocessing on the CPU cannot keep the GPUs fed: " + "; ".join(parts) + "."
    behind = {}
    if remote is not None:
        where = ", ".join(_remote_urls(ev)) or "remote URLs in the log"
        behind = {"contributes_to": Category.REMOTE_DATA_READING.value, "remote_reads": where}
        if num_workers == 0:
            many = _training_processes(ev) > 1
            summary += (
                f" The training process{'es' if many else ''} read{'' if many else 's'} every batch from remote "
                f"storage {'themselves' if many else 'itself'} ({where}), so this is the remote reads' wait, not one "
                "of its own: with no worker, nothing overlaps the reads with the steps."
            )
        else:
            summary += (
                f" Its loader workers read every batch from remote storage ({where}), so this is the remote reads' "
                f"wait, not one of its own: {num_workers} a process are too few to overlap the reads with the steps."
            )
    return [
        Finding(
            category=Category.DATA_PREPROCESSING,
            sub_cause=sub,
            confidence=confidence,
            summary=summary,
            windows=[p.training],
            log_lines=[w.line for w in warnings[:2]],
            code=quoted_once(loaders)[:3] + _tasks_per_gpu_lines(ev),
            numbers={
                "cpu_util_training": None if cpu is None else round(cpu, 1),
                "cpu_count": cpus,
                "gpu_count": ev.job.gpu_count,
                "node_count": ev.job.node_count,
                "num_workers": num_workers,
                "suggested_max_workers": warnings[0].suggested_max if warnings and warnings[0].suggested_max else None,
                # What was measured or seen, for the guidance to say so and no more (CPU metric, warning, trace).
                "cpu_busy": "allocation" if saturated else ("loading_cores" if loaders_busy else None),
                "loading_processes": loader_cores // (num_workers + 1) if loaders_busy else None,
                "busy_cores": round(busy_cores, 1) if loaders_busy else None,
                "worker_warning_by": warnings[0].by if warnings else None,
                "worker_warnings": said[:2],
                "host_wait_share": round(host_wait[0].host_wait_share, 3) if host_wait else None,
                **({"tasks_per_gpu": _tasks_per_gpu(ev)} if _tasks_per_gpu(ev) > 1 else {}),
                **_layout(ev),
                **behind,
            },
        )
    ]


def _training_processes(ev: Evidence) -> int:
    """How many training processes load batches: one per GPU when launched so (torchrun, DDP) or without
    DataParallel, N per GPU for srun tasks started with `--ntasks-per-gpu=N` (`_tasks_per_gpu`), one for a
    DataParallel job."""
    launched = ev.scripts.of("ddp", "init_process_group") or distributed_launches(ev)
    if launched or not ev.scripts.of("data_parallel"):
        return max(1, ev.job.gpu_count) * _tasks_per_gpu(ev)
    return 1


def _tasks_per_gpu_lines(ev: Evidence) -> list:
    """The lines that start several training processes a GPU (`_tasks_per_gpu`), quoted where a loader finding counts
    them: the `#SBATCH --ntasks-per-gpu` lines a bare srun took them from, and the srun line."""
    launches = [f for f in distributed_launches(ev) if (f.detail.get("tasks_per_gpu") or 1) > 1]
    return quoted_once(srun_task_lines(ev, launches) + launches) if launches else []


def _tasks_per_gpu(ev: Evidence) -> int:
    """The srun tasks a GPU of the job's distributed launch (`srun --ntasks-per-gpu=2 python train.py`, or a bare srun
    under `#SBATCH --ntasks-per-gpu=2`: its launch's `tasks_per_gpu`), each a training process; 1 where none says."""
    return max((f.detail.get("tasks_per_gpu") or 1 for f in distributed_launches(ev)), default=1)


def _layout(ev: Evidence) -> dict:
    """The job's Slurm task layout from its scripts (`#SBATCH --ntasks-per-node=8`, `srun ... -c 12`; later lines
    win): tasks_per_node and cpus_per_task, each when given. One task per GPU is the usual layout without torchrun,
    and then a task's CPUs, not the node's, are what its DataLoader workers share."""
    layout: dict = {}
    for fact in ev.scripts.of("slurm_layout"):
        layout |= {k: v for k, v in fact.detail.items() if k in ("ntasks_per_node", "cpus_per_task")}
    found = {}
    if "ntasks_per_node" in layout:
        found["tasks_per_node"] = layout["ntasks_per_node"]
    if "cpus_per_task" in layout:
        found["cpus_per_task"] = layout["cpus_per_task"]
    return found


def _remote_reads(ev: Evidence) -> list:
    """The scripts' remote paths that hold data the job reads, and their calls that read remote storage per sample
    (a Dataset's boto3 `get_object`, an s3fs `open`, `requests.get` ...; one line once, the URL's fact first). A
    download once at start-up is the download phase's (external_data_usage), not a remote read."""
    paths = [f for f in ev.scripts.of("remote_path") if f.detail.get("purpose") == "read"]
    seen = {(f.path, f.line) for f in paths}
    calls = [f for f in ev.scripts.of("remote_read") if f.detail.get("per_sample") and (f.path, f.line) not in seen]
    return paths + quoted_once(calls)


def _remote_urls(ev: Evidence) -> list[str]:
    """What the job reads remotely, in words: its URLs, then the calls that name none ("boto3 get_object per sample
    in S3ImageDataset.__getitem__, data.py:18"); three at most."""
    reads = _remote_reads(ev)
    urls = sorted({f.detail["url"] for f in reads if f.kind == "remote_path"})
    calls = [_read_call(f) for f in reads if f.kind == "remote_read"]
    return (urls + list(dict.fromkeys(calls)))[:3]


def _read_call(fact) -> str:
    """A remote read in words, at its line: "boto3 get_object per sample in S3ImageDataset.__getitem__, data.py:18",
    "webdataset WebDataset streaming pipe:aws s3 cp s3://bucket/shards/..., data.py:4"."""
    d = fact.detail
    what = f"{d['client']} {d['call']}" if d["client"] != d["call"] else d["client"]
    if read_kind(d["client"]) == "shards":
        url = d.get("url") or "remote shards"
        where = f"streaming {url if len(url) <= 80 else url[:79] + '…'}"
    else:
        where = f"per sample in {d['context']}"
    return f"{what} {where}, {fact.path}:{fact.line}"


def _remote_kind(ev: Evidence, urls: list[str]) -> str:
    """object_store, hdfs, http or remote_storage: what the URLs and the reading calls say the storage is."""
    kinds = {f.detail.get("storage") for f in _remote_reads(ev) if f.kind == "remote_read"}
    if any(u.startswith(("s3", "gs", "az", "abfs", "wasb", "oss")) for u in urls) or "object_store" in kinds:
        return "object_store"
    if any(u.startswith(("hdfs", "webhdfs")) for u in urls) or "hdfs" in kinds:
        return "hdfs"
    if "http" in kinds:
        return "http"
    return "remote_storage"


def _fetched(reads: list) -> str:
    """What was being fetched while the GPUs stalled, as the reading calls found say: samples one by one through a
    client (boto3 get_object in __getitem__ ...), shards streamed (WebDataset, torchdata), or, for a job known by a
    remote URL only, its data."""
    clients = {f.detail["client"] for f in reads if f.kind == "remote_read"}
    per_sample = sorted(client for client in clients if read_kind(client) == "samples")
    streams = sorted(client for client in clients if read_kind(client) == "shards")
    said = []
    if per_sample:
        said.append(f"samples were fetched one by one through a client ({', '.join(per_sample)})")
    if streams:
        said.append(f"shards were streamed ({', '.join(streams)})")
    return " and ".join(said) or "data was fetched over the network"


@register(Category.REMOTE_DATA_READING)
def remote_data_reading(ev: Evidence, th: dict) -> list[Finding]:
    if not _training(ev):
        return []
    reads = _remote_reads(ev)
    lines = ev.logs.of(REMOTE_READ)
    stalls = gaps_of(ev, REMOTE_READ)
    if not (reads or lines):
        return []
    if len(stalls) >= th["remote_min_stalls"]:
        confidence = 0.85 + 0.1 * bool(reads)
        spans = [g.span for g in stalls]
        located = True
    elif ev.phases.training_mean_util is not None and ev.phases.training_mean_util <= th["low_util_threshold"]:
        confidence = 0.55 if reads else 0.45
        spans = [ev.phases.training]
        located = False
    else:
        return []
    urls = _remote_urls(ev)
    sub = _remote_kind(ev, urls)
    net = ev.phases.net_rx_training
    minutes = sum(s.seconds for s in spans) / 60 if located else None
    return [
        Finding(
            category=Category.REMOTE_DATA_READING,
            sub_cause=sub,
            confidence=confidence,
            summary=(
                f"Training reads its data straight from remote storage ({', '.join(urls) or 'remote URLs in the log'})"
                + (
                    f"; the GPUs stalled {len(spans)} times ({minutes:.0f} min) while {_fetched(reads)}."
                    if located
                    else "."
                )
            ),
            windows=spans,
            log_lines=[g.line for g in stalls][:20] or lines[:5],
            code=reads[:4],
            numbers={
                # The libraries that fetch samples one by one (boto3, requests ...), for the fix to show that read.
                "read_clients": sorted({f.detail["client"] for f in reads if f.kind == "remote_read"}),
                "stalls": len(stalls),
                "stall_minutes": None if minutes is None else round(minutes, 1),
                "net_rx_mb_s": None if net is None else round(net / 1e6, 1),
            },
            time_located=located,
            gpu_hours=sum(ev.unused(s.start, s.end) for s in spans) if located else 0.0,
        )
    ]


@register(Category.EXTERNAL_DATA_USAGE)
def external_data_usage(ev: Evidence, th: dict) -> list[Finding]:
    if ev.interactive:
        return []
    start = startup(ev)
    code = ev.scripts.of("hub_download", "shell_download") + start_up_downloads(ev)
    p = ev.phases
    if start.download is not None and start.download.seconds >= th["download_min_s"]:
        span = start.download
        confidence = 0.8 + 0.15 * bool(code)
        lines = start.download_lines
    elif not ev.logs.has_timestamps and code and p.head is not None and p.head.seconds >= th["download_min_s"]:
        if ev.scripts.of("shell_install") and p.head.seconds >= th["install_min_s"]:
            return []  # the head is as likely the install; lengthy_library_install speaks for it
        span = p.head
        confidence = 0.5
        lines = []
    else:
        return []
    sub = _download_kind(code, lines)
    source = {"model_hub": "the Hugging Face Hub", "torch_hub": "torch.hub", "object_store": "object storage"}.get(
        sub, "outside"
    )
    summary = (
        f"The job fetched models or data from {source} for {span.seconds / 60:.0f} min before training while the "
        "GPUs waited."
    )
    numbers: dict = {"download_minutes": round(span.seconds / 60, 1)}
    largest = _largest_transfer(lines)
    if largest is not None:
        name, size, took, rate = largest
        summary += f" The largest download, {name} ({size}), took {took} at {rate}."
        numbers["largest_download"] = name
    return [
        Finding(
            category=Category.EXTERNAL_DATA_USAGE,
            sub_cause=sub,
            confidence=confidence,
            summary=summary,
            windows=[span],
            log_lines=lines[:10],
            code=code[:4],
            numbers=numbers,
            time_located=True,
            gpu_hours=ev.unused(span.start, span.end),
        )
    ]


# A tqdm progress bar as huggingface_hub and datasets print it: 'model.safetensors: 100%|####| 2.00G/2.00G
# [16:15<00:00, 2.1MB/s]' (the name, the size in SI units, the time it took and the rate).
_PROGRESS = re.compile(
    r"^(?P<name>[^:|]{1,120}?):\s+\d{1,3}%\|[^|]*\|\s*[\d.]+\s*[kMGT]?i?B?/(?P<size>[\d.]+)\s*(?P<unit>[kMGT]?)i?B?\s*"
    r"\[(?P<took>[\d:]+)<[^,\]]*,\s*(?P<rate>[\d.]+\s*[kMGT]?i?B/s)\]"
)
_SI = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _largest_transfer(lines) -> tuple[str, str, str, str] | None:
    """The largest file a download's progress bars show: (name, size as printed, time it took in words, rate)."""
    best, most = None, 0.0
    for line in lines:
        found = _PROGRESS.match(line.text.strip())
        if found is None:
            continue
        size = float(found["size"]) * _SI[found["unit"]]
        if size > most:
            most, best = size, found
    if best is None or most < 1e6:
        return None
    parts = [int(x) for x in best["took"].split(":")]
    seconds = sum(x * 60**i for i, x in enumerate(reversed(parts)))
    took = f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds} s"
    name = best["name"].strip()
    if name.lower().startswith("downloading data"):  # datasets' own bar: 'Downloading data: 100%|...'
        name = "the dataset's data files"
    elif name.startswith("Downloading "):  # older huggingface_hub: 'Downloading (…)l-00001-of-00002.bin'
        name = name.removeprefix("Downloading ")
    # Units as the rest of the product writes them, a space after the number ('2.00 GB', '2.1 MB/s'), however the
    # bar printed them ('2.00G', '2.1MB/s').
    rate = re.sub(r"^([\d.]+)\s*", r"\1 ", best["rate"])
    return name, f"{best['size']} {best['unit']}B", took, rate


def _download_kind(code, lines) -> str:
    calls = " ".join(str(f.detail.get("call", "")) + " " + f.text for f in code) + " ".join(x.text for x in lines)
    if "torch.hub" in calls:
        return "torch_hub"
    if "from_pretrained" in calls or "load_dataset" in calls or "hf_hub" in calls or "Hugging Face" in calls:
        return "model_hub"
    if any(f.kind == "remote_read" and f.detail.get("storage") == "object_store" for f in code):
        return "object_store"
    if "wget" in calls or "curl" in calls:
        return "http_download"
    return "download"


@register(Category.INTERMEDIATE_UPLOAD)
def intermediate_upload(ev: Evidence, th: dict) -> list[Finding]:
    if not _training(ev):
        return []
    in_loop = [f for f in ev.scripts.of("upload_call") if f.detail.get("in_loop")]
    # wandb.save returns before its upload (W&B's own process does it): code that uploads in the background is no
    # evidence that the loop waited for an upload.
    uploads_in_loop = [f for f in in_loop if not f.detail.get("background")]
    background = [f for f in in_loop if f.detail.get("background")]
    gaps = gaps_of(ev, UPLOAD)
    wandb = False
    if len(gaps) >= th["upload_min_gaps"]:
        spans = [g.span for g in gaps]
        lines = [g.line for g in gaps]
        confidence = 0.85 + 0.1 * bool(uploads_in_loop)
        # Gaps that open at W&B's lines in a job that uploads only through wandb.save: the loop stood still there,
        # but not for the upload, which W&B makes in its own process.
        wandb = not uploads_in_loop and all(_WANDB.search(x.text) for x in lines)
        if wandb:
            confidence = 0.5
    elif not ev.logs.has_timestamps and uploads_in_loop:
        spans = unexplained_gaps(ev)
        if not periodic(spans, th["periodic_max_cv"], th["periodic_min_gaps"]):
            return []
        lines = []
        confidence = 0.6
    else:
        return []
    minutes = sum(s.seconds for s in spans) / 60
    calls = " ".join(str(f.detail.get("call", "")) for f in uploads_in_loop) + " ".join(x.text for x in lines)
    sub = "mlflow" if "mlflow" in calls or "log_artifact" in calls else ("cli" if "aws" in calls else "sdk")
    summary = f"{len(spans)} synchronous uploads inside training idled the GPUs for {minutes:.0f} min."
    if wandb:
        sub = "wandb"
        summary = (
            f"{len(spans)} idle gaps inside training ({minutes:.0f} min in all) opened at W&B's lines; the job "
            "uploads with wandb.save, which W&B's own process does in the background, so the loop waited for "
            "something else there (writing the file, or a wait for W&B)."
        )
    return [
        Finding(
            category=Category.INTERMEDIATE_UPLOAD,
            sub_cause=sub,
            confidence=confidence,
            summary=summary,
            windows=spans,
            log_lines=lines[:20],
            code=(uploads_in_loop or background)[:3],
            numbers={"uploads": len(spans), "upload_minutes": round(minutes, 1)},
            time_located=True,
            gpu_hours=sum(ev.unused(s.start, s.end) for s in spans),
        )
    ]
