"""The demo-fleet generator: a seeded GPU fleet in archive format v1, with planted causes of idle GPUs.

`generate_demo_fleet()` writes one archive (`.zip` or `.tar.gz`) holding `manifest.json`, `jobs.csv`,
`metrics.parquet`, `logs/<job_id>/stdout.log` and `scripts/<job_id>/{train.py,run.sh,requirements.txt}`,
and, beside it and never inside it, a ground-truth JSON that lists the categories planted in every job.

How a job is made, in three steps that share one plan so that metrics, logs and code agree:
1. `plan_fleet()` picks the categories of every job (round-robin first, so each of the 15 appears even
   at small N), then the job's shape (team, cluster, GPUs, duration) and a timeline of phases
   (boot, install, download, load, train with evaluation dips, checkpoint/upload gaps, final, idle tail).
2. `_job_series()` turns the timeline into per-GPU and per-host series with numpy, one vector per
   metric: a phase code per sample indexes per-phase tables, then noise, warm-up and per-GPU spread.
3. `_job_log()` and `_job_scripts()` write the lines and the code that show the same causes at the
   same times (a "Saving model checkpoint" line opens every checkpoint gap, `torch.save` sits in the
   step loop, pip lines fill the install phase, ...).

Everything is derived from the seed and a fixed fleet end date, never from the clock, so one seed
gives a byte-identical archive. Pure Python + numpy/pyarrow: no Django models.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from string import Template

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fleet.canonical import METRICS
from triage.taxonomy import PAPER_SHARE, Category

# --- Fleet shape ------------------------------------------------------------------------------------

# The fleet's last moment; jobs spread over the weeks before it. Fixed, so a seed is reproducible.
FLEET_END = datetime(2026, 11, 23, tzinfo=UTC)
FLEET_SPAN = timedelta(days=35)
MAX_DURATION_S = 47.5 * 3600  # the partitions' two-day walltime, with margin
DEFAULT_CLUSTER = "alpha"
GENERATOR_NAME = "make_demo_fleet"
TRUTH_FORMAT = "fleet-demo-truth"
ARCHIVE_SUFFIXES = (".zip", ".tar.gz")

JOBS_CSV_COLUMNS = (
    "job_id",
    "user",
    "team",
    "gpu_count",
    "start_time",
    "end_time",
    "name",
    "cluster",
    "gpu_model",
    "node_count",
    "cpu_count",
    "state",
    "job_type",
    "queue",
    "command",
    "submit_time",
)
GPU_METRICS = (
    "gpu_util",
    "gpu_mem_used_mib",
    "gpu_mem_total_mib",
    "sm_active",
    "tensor_active",
    "dram_active",
    "pcie_rx_bytes_per_s",
    "pcie_tx_bytes_per_s",
)
HOST_METRICS = (
    "cpu_util",
    "host_mem_used_mib",
    "net_rx_bytes_per_s",
    "net_tx_bytes_per_s",
    "disk_read_bytes_per_s",
    "disk_write_bytes_per_s",
)
if set(GPU_METRICS) | set(HOST_METRICS) != set(METRICS):  # pragma: no cover - guards a rename in fleet
    raise ImportError("demo generator metric columns differ from fleet.canonical.METRICS")

METRICS_SCHEMA = pa.schema(
    [
        pa.field("job_id", pa.string(), nullable=False),
        pa.field("timestamp", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("host", pa.string(), nullable=False),
        pa.field("gpu", pa.int16()),
        *(pa.field(name, pa.float32()) for name in METRICS),
    ]
)
JOBS_PER_ROW_GROUP = 64  # one parquet row group per batch of jobs keeps memory flat at any fleet size
HEALTHY_SHARE = 0.63
DOUBLE_SHARE = 0.22  # share of problem jobs that carry a second category
DEFECT_SHARE = 0.02  # share of jobs with a metrics hole, and again with duplicated samples


@dataclass(frozen=True)
class GpuModel:
    name: str
    memory_mib: int
    partition: str
    gpus_per_node: int
    cpus_per_gpu: int
    host_mem_gib: int  # per node


GPU_MODELS = {
    model.name: model
    for model in (
        GpuModel("A100-80GB", 81920, "a100", 8, 12, 1024),
        GpuModel("H100-80GB", 81920, "h100", 8, 16, 2048),
        GpuModel("A100-40GB", 40960, "a100-40g", 8, 8, 512),
        GpuModel("V100-32GB", 32768, "v100", 8, 6, 384),
        GpuModel("T4", 16384, "t4", 4, 8, 192),
    )
}


@dataclass(frozen=True)
class NodePool:
    gpu_model: str
    first_node: int
    nodes: int
    weight: float


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    weight: float
    period_s: int  # the exporters' scrape interval; long or wide jobs are kept at 60 s
    pools: tuple[NodePool, ...]


CLUSTERS = {
    "alpha": ClusterSpec(
        "alpha",
        0.6,
        30,
        (NodePool("A100-80GB", 1, 64, 0.5), NodePool("H100-80GB", 65, 32, 0.3), NodePool("A100-40GB", 97, 32, 0.2)),
    ),
    "beta": ClusterSpec(
        "beta",
        0.4,
        15,
        (NodePool("V100-32GB", 1, 48, 0.35), NodePool("A100-40GB", 49, 48, 0.4), NodePool("T4", 97, 32, 0.25)),
    ),
}
MAX_ROWS_PER_JOB_AT_BASE_PERIOD = 6000  # above this, a job is sampled every 60 s


@dataclass(frozen=True)
class Project:
    """A workload a team runs again and again; its family decides the code the job ships."""

    slug: str
    family: str  # image | text | causal | audio | tabular | etl | sklearn
    arch: str  # torchvision architecture, Hugging Face model id, or a short model name
    dataset: str
    classes: int = 1000
    hf_class: str = ""
    params_m: float = 0.0  # millions of parameters, as the training log reports them


TEAMS: dict[str, tuple[Project, ...]] = {
    "vision": (
        Project("resnet50-imagenet", "image", "resnet50", "imagenet-1k", 1000, params_m=25.6),
        Project("vit-b16-inat", "image", "vit_b_16", "inat2021", 10000, params_m=86.6),
        Project("convnext-tiny-places", "image", "convnext_tiny", "places365", 365, params_m=28.6),
        Project("efficientnet-b3-food101", "image", "efficientnet_b3", "food101", 101, params_m=12.2),
        Project("swin-t-imagenet", "image", "swin_t", "imagenet-1k", 1000, params_m=28.3),
    ),
    "nlp": (
        Project(
            "bert-base-mnli",
            "text",
            "bert-base-uncased",
            "mnli",
            3,
            "AutoModelForSequenceClassification",
            params_m=109.5,
        ),
        Project(
            "roberta-large-sst2",
            "text",
            "roberta-large",
            "sst2",
            2,
            "AutoModelForSequenceClassification",
            params_m=355.4,
        ),
        Project(
            "deberta-v3-anli",
            "text",
            "microsoft/deberta-v3-base",
            "anli",
            3,
            "AutoModelForSequenceClassification",
            params_m=184.4,
        ),
        Project(
            "distilbert-imdb",
            "text",
            "distilbert-base-uncased",
            "imdb",
            2,
            "AutoModelForSequenceClassification",
            params_m=66.4,
        ),
    ),
    "speech": (
        Project(
            "whisper-small-cv",
            "audio",
            "openai/whisper-small",
            "common_voice_16",
            0,
            "AutoModelForSpeechSeq2Seq",
            params_m=241.7,
        ),
        Project(
            "wav2vec2-librispeech",
            "audio",
            "facebook/wav2vec2-base",
            "librispeech",
            0,
            "AutoModelForCTC",
            params_m=94.4,
        ),
        Project(
            "hubert-base-commands",
            "audio",
            "facebook/hubert-base-ls960",
            "speech_commands",
            0,
            "AutoModelForCTC",
            params_m=94.4,
        ),
    ),
    "recsys": (
        Project("dlrm-criteo", "tabular", "dlrm", "criteo-1tb", 2, params_m=540.2),
        Project("two-tower-ml20m", "tabular", "two_tower", "movielens-20m", 2, params_m=48.2),
        Project("din-taobao", "tabular", "din", "taobao-ctr", 2, params_m=12.7),
        Project("sasrec-books", "tabular", "sasrec", "amazon-books", 2, params_m=3.1),
    ),
    "rl": (
        Project("decision-transformer-atari", "tabular", "decision_transformer", "atari-dqn-replay", 18, params_m=2.4),
        Project("cql-hopper", "tabular", "cql", "d4rl-hopper", 6, params_m=1.1),
        Project("iql-antmaze", "tabular", "iql", "d4rl-antmaze", 8, params_m=0.9),
    ),
    "genai": (
        Project("gpt2-medium-owt", "causal", "gpt2-medium", "openwebtext", 0, "AutoModelForCausalLM", params_m=354.8),
        Project(
            "llama2-7b-sft", "causal", "meta-llama/Llama-2-7b-hf", "alpaca", 0, "AutoModelForCausalLM", params_m=6738.4
        ),
        Project(
            "mistral-7b-chat",
            "causal",
            "mistralai/Mistral-7B-v0.1",
            "ultrachat",
            0,
            "AutoModelForCausalLM",
            params_m=7241.7,
        ),
        Project(
            "pythia-1b-dedup",
            "causal",
            "EleutherAI/pythia-1b",
            "pile-dedup",
            0,
            "AutoModelForCausalLM",
            params_m=1011.8,
        ),
    ),
    "platform": (
        Project("mlperf-resnet50", "image", "resnet50", "imagenet-1k", 1000, params_m=25.6),
        Project(
            "mlperf-bert",
            "text",
            "bert-large-uncased",
            "wikipedia",
            2,
            "AutoModelForSequenceClassification",
            params_m=335.1,
        ),
        Project("dlrm-benchmark", "tabular", "dlrm", "criteo-1tb", 2, params_m=540.2),
    ),
    "research": (
        Project("simclr-cifar", "image", "resnet18", "cifar100", 100, params_m=11.7),
        Project(
            "moe-pythia-410m",
            "causal",
            "EleutherAI/pythia-410m",
            "pile-dedup",
            0,
            "AutoModelForCausalLM",
            params_m=405.3,
        ),
        Project("graph-transformer-products", "tabular", "graph_transformer", "ogbn-products", 47, params_m=23.5),
        Project("regnet-ablation", "image", "regnet_y_16gf", "imagenet-1k", 1000, params_m=83.6),
    ),
}
TEAM_WEIGHTS = {
    "vision": 0.16,
    "nlp": 0.15,
    "speech": 0.10,
    "recsys": 0.12,
    "rl": 0.08,
    "genai": 0.17,
    "platform": 0.07,
    "research": 0.15,
}
NON_DL_PROJECTS = (
    Project("feature-etl", "etl", "pandas", "clickstream"),
    Project("sessionize-logs", "etl", "pandas", "app-logs"),
    Project("parquet-compaction", "etl", "pyarrow", "events"),
    Project("gbdt-ranker", "sklearn", "HistGradientBoostingClassifier", "search-ranking"),
    Project("kmeans-embeddings", "sklearn", "MiniBatchKMeans", "item-embeddings"),
)
# Teams where a category is most at home; the rest draw from every team.
TEAM_AFFINITY: dict[Category, tuple[str, ...]] = {
    Category.NON_DL_JOB: ("platform", "recsys", "research"),
    Category.DATA_EXCHANGE: ("genai", "nlp", "research", "vision"),
    Category.EXTERNAL_DATA_USAGE: ("nlp", "genai", "speech"),
    Category.REMOTE_DATA_READING: ("vision", "genai", "speech", "recsys"),
    Category.GPU_MEMORY_BOUND: ("genai", "nlp", "vision", "research", "speech"),
    Category.DATA_PREPROCESSING: ("vision", "speech", "recsys", "research"),
}
FIRST_NAMES = (
    "alice",
    "bruno",
    "chen",
    "dara",
    "emil",
    "fatima",
    "gabriel",
    "hana",
    "ivan",
    "jun",
    "kofi",
    "lena",
    "marco",
    "nadia",
    "omar",
    "priya",
    "quinn",
    "rosa",
    "sven",
    "tariq",
    "uma",
    "viktor",
    "wei",
    "xenia",
    "yusuf",
    "zoe",
    "amir",
    "bea",
    "carlos",
    "dmitri",
    "elif",
    "felix",
    "greta",
    "hiro",
    "ines",
    "jonas",
    "kira",
    "luis",
    "mei",
    "nils",
    "olga",
    "pablo",
    "ravi",
    "sara",
    "tomas",
    "ursula",
    "vera",
    "yan",
)
LAST_INITIALS = "abcdefghijklmnoprstuvwyz"

# The second category a job may carry, given its first. Exclusive shapes (interactive, non-DL) carry one.
SECONDARY: dict[Category, tuple[Category, ...]] = {
    Category.IMPROPER_BATCH_SIZE: (
        Category.MODEL_CHECKPOINTING,
        Category.HOST_GPU_TRANSFER,
        Category.DATA_PREPROCESSING,
        Category.LENGTHY_LIBRARY_INSTALL,
        Category.UNRELEASED_JOB,
    ),
    Category.GPU_MEMORY_BOUND: (Category.MODEL_CHECKPOINTING, Category.EXTERNAL_DATA_USAGE),
    Category.HOST_GPU_TRANSFER: (
        Category.DATA_PREPROCESSING,
        Category.IMPROPER_BATCH_SIZE,
        Category.MODEL_CHECKPOINTING,
        Category.INTERMEDIATE_UPLOAD,
    ),
    Category.DATA_PREPROCESSING: (Category.HOST_GPU_TRANSFER, Category.MODEL_CHECKPOINTING),
    Category.REMOTE_DATA_READING: (Category.MODEL_CHECKPOINTING, Category.INTERMEDIATE_UPLOAD),
    Category.DATA_EXCHANGE: (Category.MODEL_CHECKPOINTING, Category.LENGTHY_LIBRARY_INSTALL),
    Category.API_MISUSE: (Category.MODEL_CHECKPOINTING, Category.INTERMEDIATE_UPLOAD, Category.UNRELEASED_JOB),
    Category.GPU_OVERSUBSCRIPTION: (Category.LENGTHY_LIBRARY_INSTALL, Category.UNRELEASED_JOB),
    Category.MODEL_CHECKPOINTING: (
        Category.IMPROPER_BATCH_SIZE,
        Category.INTERMEDIATE_UPLOAD,
        Category.HOST_GPU_TRANSFER,
        Category.DATA_EXCHANGE,
    ),
    Category.INTERMEDIATE_UPLOAD: (Category.MODEL_CHECKPOINTING, Category.IMPROPER_BATCH_SIZE),
    Category.LENGTHY_LIBRARY_INSTALL: (
        Category.IMPROPER_BATCH_SIZE,
        Category.EXTERNAL_DATA_USAGE,
        Category.UNRELEASED_JOB,
        Category.DATA_PREPROCESSING,
    ),
    Category.EXTERNAL_DATA_USAGE: (
        Category.LENGTHY_LIBRARY_INSTALL,
        Category.GPU_MEMORY_BOUND,
        Category.IMPROPER_BATCH_SIZE,
    ),
    Category.UNRELEASED_JOB: (Category.IMPROPER_BATCH_SIZE, Category.LENGTHY_LIBRARY_INSTALL),
    Category.INTERACTIVE_JOB: (),
    Category.NON_DL_JOB: (),
}

# Categories that set the training phase's utilization and memory level; the others add idle
# stretches (install, download, gaps, tail) on top of whatever level the job runs at.
# (util range %, GPU memory range as a share of the device). Memory bands keep each planted job on
# its side of the paper's thresholds: <= 50 % for a small batch, > 80 % for memory-bound, else between.
LEVEL_PROFILE: dict[Category, tuple[tuple[float, float], tuple[float, float]]] = {
    Category.IMPROPER_BATCH_SIZE: ((14, 40), (0.08, 0.40)),
    Category.GPU_MEMORY_BOUND: ((18, 42), (0.86, 0.96)),
    Category.HOST_GPU_TRANSFER: ((24, 44), (0.54, 0.76)),
    Category.DATA_PREPROCESSING: ((12, 36), (0.54, 0.76)),
    Category.API_MISUSE: ((26, 44), (0.54, 0.76)),
    Category.REMOTE_DATA_READING: ((55, 78), (0.54, 0.76)),  # between read stalls
    Category.DATA_EXCHANGE: ((46, 62), (0.54, 0.76)),  # between synchronisation dips
    Category.GPU_OVERSUBSCRIPTION: ((70, 92), (0.54, 0.76)),  # on the one GPU in use
}
HEALTHY_PROFILE = ((72, 96), (0.35, 0.95))
OVERLAY_PROFILE = ((55, 78), (0.54, 0.76))  # jobs whose only causes are idle stretches
MIDDLE_MEMORY = (0.54, 0.76)
PLANTED_MAX_MEAN_UTIL = 44.0  # expected mean of a planted job, before noise: safely under the 50 % threshold

# Phase codes: one per sample; per-phase tables turn them into metric values.
(
    BOOT,
    INSTALL,
    DOWNLOAD,
    LOAD,
    TRAIN,
    EVAL,
    CHECKPOINT,
    UPLOAD,
    STALL,
    SYNC,
    FINAL,
    TAIL,
    BURST,
    SESSION,
    CPU_WORK,
    HANG,
) = range(16)
N_PHASES = 16
BLOCKING = (CHECKPOINT, UPLOAD, STALL, HANG)  # phases in which the training loop makes no steps
CUDA_CONTEXT_MIB = 420


# --- Plans ------------------------------------------------------------------------------------------


@dataclass
class Window:
    """A stretch of a job's timeline, in seconds from its start: a checkpoint gap, a burst, ..."""

    start: float
    end: float
    phase: int
    intensity: float = 1.0
    step: int = 0


@dataclass
class JobPlan:
    """Everything decided about one job; metrics, logs and scripts are all rendered from it."""

    seed: int
    index: int
    categories: tuple[Category, ...]
    variants: dict[Category, str]
    cluster: str
    team: str
    user: str
    project: Project
    gpu: GpuModel
    gpu_count: int
    node_count: int
    hosts: tuple[str, ...]
    gpu_indices: tuple[int, ...]  # physical GPU indices used on every node
    cpu_count: int
    job_type: str
    queue: str
    name: str
    style: str  # loop | trainer | cpu
    start: datetime
    submit: datetime
    duration_s: float
    period_s: int
    # timeline, seconds from start; each phase ends where the next begins
    boot_end: float
    install_end: float
    download_end: float
    train_start: float
    train_end: float
    final_end: float
    warmup_s: float
    windows: list[Window]
    gpu_levels: np.ndarray
    gpu_active: np.ndarray
    gpu_mem_frac: np.ndarray
    util_noise: float
    eval_factor: float
    sync_every: int
    sync_factor: float
    tail_holds_memory: bool
    host_profile: dict[str, np.ndarray]
    hyper: dict
    state: str = "COMPLETED"
    failure: str = ""  # what ended a FAILED job, rendered into its log
    holes: list[tuple[int, float, float]] = field(default_factory=list)  # (node, start, end)
    duplicate_rows: int = 0
    notes: list[str] = field(default_factory=list)
    defects: list[str] = field(default_factory=list)
    job_id: str = ""

    @property
    def end(self) -> datetime:
        return self.start + timedelta(seconds=self.duration_s)

    @property
    def multi_node(self) -> bool:
        return self.node_count > 1

    @property
    def world_size(self) -> int:
        """Processes the launcher starts: one per GPU for DDP jobs, one for single-process jobs."""
        return self.gpu_count if self.hyper.get("launcher") in ("torchrun", "srun-torchrun") else 1

    def has(self, category: Category) -> bool:
        return category in self.categories


def _uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(rng.uniform(low, high))


def _pick(rng: np.random.Generator, options):
    return options[int(rng.integers(len(options)))]


def _weighted(rng: np.random.Generator, options, weights):
    weights = np.asarray(weights, dtype=float)
    return options[int(rng.choice(len(options), p=weights / weights.sum()))]


def _lognormal_s(rng: np.random.Generator, median_h: float, sigma: float, low_h: float, high_h: float) -> float:
    return float(np.clip(median_h * 3600 * math.exp(sigma * rng.standard_normal()), low_h * 3600, high_h * 3600))


def plan_fleet(jobs: int, seed: int) -> list[JobPlan]:
    """Every job of the fleet, decided but not rendered, in (cluster, job id) order."""
    if jobs < 1:
        raise ValueError("the demo fleet needs at least one job")
    if seed < 0:
        raise ValueError("the seed must be a non-negative integer")
    rng = np.random.default_rng([seed, 0])
    users = _make_users(rng)
    assignments = _assign_categories(jobs, rng)
    plans = [_plan_job(seed, index, categories, users) for index, categories in enumerate(assignments)]
    _assign_job_ids(plans, rng)
    _plant_defects(plans, rng)
    plans.sort(key=lambda plan: (plan.cluster, int(plan.job_id)))
    return plans


def _make_users(rng: np.random.Generator) -> dict[str, tuple[list[str], np.ndarray]]:
    """4-8 users per team, each with a 'carelessness' weight: problems cluster on a few people."""
    first_names = list(FIRST_NAMES)
    rng.shuffle(first_names)
    taken: set[str] = set()
    users = {}
    cursor = 0
    for team in TEAMS:
        names = []
        for _ in range(int(rng.integers(4, 9))):
            name = f"{first_names[cursor % len(first_names)]}.{_pick(rng, LAST_INITIALS)}"
            cursor += 1
            while name in taken:
                name += _pick(rng, LAST_INITIALS)
            taken.add(name)
            names.append(name)
        users[team] = (names, rng.lognormal(0.0, 0.8, len(names)))
    return users


def _assign_categories(jobs: int, rng: np.random.Generator) -> list[tuple[Category, ...]]:
    """The categories of each job: () for healthy ones, one or two for the others.

    Every category is guaranteed a minimum count first (round-robin), so all 15 appear even in a
    40-job fleet; the rest follow the paper's shares blended with a uniform share, so rare
    categories still appear several times.
    """
    categories = list(Category)
    problem_jobs = min(jobs, max(len(categories), round((1 - HEALTHY_SHARE) * jobs)))
    if problem_jobs < len(categories):
        primaries = categories[:problem_jobs]
    else:
        minimum = max(1, problem_jobs // 25)
        counts = np.full(len(categories), minimum)
        weights = np.array([0.5 / len(categories) + 0.5 * PAPER_SHARE[c] / 100 for c in categories])
        extra = weights / weights.sum() * (problem_jobs - counts.sum())
        whole = np.floor(extra).astype(int)
        largest_remainders = np.argsort(-(extra - whole), kind="stable")[: problem_jobs - counts.sum() - whole.sum()]
        whole[largest_remainders] += 1
        counts += whole
        primaries = [category for category, count in zip(categories, counts, strict=True) for _ in range(count)]
    primaries = [primaries[i] for i in rng.permutation(len(primaries))]

    assignments: list[tuple[Category, ...]] = [() for _ in range(jobs)]
    slots = rng.permutation(jobs)[: len(primaries)]
    for slot, primary in zip(slots, primaries, strict=True):
        assignments[slot] = (primary,)
    can_double = [slot for slot in slots if SECONDARY[assignments[slot][0]]]
    doubles = min(len(can_double), max(2, round(DOUBLE_SHARE * len(primaries))))
    for slot in rng.permutation(can_double)[:doubles]:
        primary = assignments[slot][0]
        assignments[slot] = (primary, _pick(rng, SECONDARY[primary]))
    return assignments


def _variants(rng: np.random.Generator, categories: tuple[Category, ...], project: Project) -> dict[Category, str]:
    """The sub-cause of each planted category (what exactly the code or the job does wrong)."""
    choices = {
        Category.INTERACTIVE_JOB: (("jupyter", "code-server", "sleep"), (0.6, 0.15, 0.25)),
        Category.UNRELEASED_JOB: (("sleep", "idle_loop"), (0.6, 0.4)),
        Category.DATA_PREPROCESSING: (("workers0", "too_many_workers", "heavy_transform"), (0.4, 0.3, 0.3)),
        Category.REMOTE_DATA_READING: (("s3", "hdfs"), (0.65, 0.35)),
        Category.INTERMEDIATE_UPLOAD: (("awscli", "boto3", "mlflow"), (0.4, 0.4, 0.2)),
        Category.API_MISUSE: (("item_sync", "cpu_metrics"), (0.6, 0.4)),
        Category.LENGTHY_LIBRARY_INSTALL: (("pip", "conda", "apt_pip"), (0.6, 0.25, 0.15)),
        Category.GPU_MEMORY_BOUND: (("oom_retry", "fp32"), (0.6, 0.4)),
        Category.MODEL_CHECKPOINTING: (("nfs", "s3"), (0.6, 0.4)),
    }
    variants = {}
    for category in categories:
        if category in choices:
            options, weights = choices[category]
            variants[category] = _weighted(rng, options, weights)
        elif category == Category.EXTERNAL_DATA_USAGE:
            variants[category] = {"image": "torch_hub", "tabular": "wget"}.get(project.family, "hf_hub")
        elif category == Category.DATA_EXCHANGE:
            variants[category] = _weighted(rng, ("socket_allreduce", "dataparallel"), (0.55, 0.45))
        elif category == Category.NON_DL_JOB:
            variants[category] = project.family
    return variants


def _gpu_shape(rng: np.random.Generator, categories: tuple[Category, ...], variants: dict) -> tuple[int, int]:
    """(gpu_count, node_count)."""
    if Category.NON_DL_JOB in categories:
        return _weighted(rng, (1, 2), (0.8, 0.2)), 1
    if Category.INTERACTIVE_JOB in categories:
        return _weighted(rng, (1, 2, 4), (0.7, 0.2, 0.1)), 1
    if variants.get(Category.DATA_EXCHANGE) == "socket_allreduce":
        nodes = int(rng.integers(2, 5))
        return 8 * nodes, nodes
    if Category.DATA_EXCHANGE in categories:
        return _pick(rng, (4, 8)), 1
    if Category.GPU_OVERSUBSCRIPTION in categories:
        return _weighted(rng, (2, 4, 8), (0.4, 0.4, 0.2)), 1
    shape = _weighted(rng, ("1", "2", "4", "8", "multi"), (0.36, 0.2, 0.2, 0.16, 0.08))
    if shape == "multi":
        nodes = _weighted(rng, (2, 3, 4), (0.6, 0.15, 0.25))
        return 8 * nodes, nodes
    return int(shape), 1


def _place(
    rng: np.random.Generator, categories: tuple[Category, ...], project: Project, gpu_count: int, node_count: int
) -> tuple[ClusterSpec, GpuModel, tuple[int, ...], tuple[int, ...]]:
    """Cluster, GPU model, node numbers and the physical GPU indices used on each node."""
    per_node = gpu_count // node_count
    candidates, weights = [], []
    for cluster in CLUSTERS.values():
        for pool in cluster.pools:
            model = GPU_MODELS[pool.gpu_model]
            if model.gpus_per_node < per_node or (node_count > 1 and model.name == "T4"):
                continue
            if "7b" in project.arch.lower() and model.memory_mib < 40000:
                continue
            weight = cluster.weight * pool.weight
            if Category.GPU_MEMORY_BOUND in categories and model.memory_mib <= 40960:
                weight *= 3  # memory runs out first on the smaller cards
            if Category.INTERACTIVE_JOB in categories and model.name in ("T4", "V100-32GB"):
                weight *= 2
            candidates.append((cluster, pool, model))
            weights.append(weight)
    cluster, pool, model = _weighted(rng, candidates, weights)
    first = pool.first_node + int(rng.integers(pool.nodes - node_count + 1))
    nodes = tuple(range(first, first + node_count))
    offset = int(rng.integers(model.gpus_per_node // per_node)) * per_node
    return cluster, model, nodes, tuple(range(offset, offset + per_node))


def _plan_job(
    seed: int, index: int, categories: tuple[Category, ...], users: dict[str, tuple[list[str], np.ndarray]]
) -> JobPlan:
    rng = np.random.default_rng([seed, index, 0])
    cats = set(categories)
    affine = [TEAM_AFFINITY[c] for c in categories if c in TEAM_AFFINITY]
    team = _pick(rng, affine[0]) if affine else _weighted(rng, list(TEAM_WEIGHTS), list(TEAM_WEIGHTS.values()))
    names, carelessness = users[team]
    user = _weighted(rng, names, carelessness**2 if categories else np.ones(len(names)))
    project = _pick(rng, NON_DL_PROJECTS) if Category.NON_DL_JOB in cats else _pick(rng, TEAMS[team])
    variants = _variants(rng, categories, project)

    trainer_ok = {
        Category.EXTERNAL_DATA_USAGE,
        Category.IMPROPER_BATCH_SIZE,
        Category.LENGTHY_LIBRARY_INSTALL,
        Category.UNRELEASED_JOB,
        Category.GPU_MEMORY_BOUND,
    }
    if Category.NON_DL_JOB in cats:
        style = "cpu"
    elif project.family in ("text", "causal", "audio") and cats <= trainer_ok and rng.random() < 0.5:
        style = "trainer"
    else:
        style = "loop"
    if style == "trainer" and Category.GPU_MEMORY_BOUND in cats:
        variants[Category.GPU_MEMORY_BOUND] = "fp32"  # the Trainer's own OOM handling is silent

    gpu_count, node_count = _gpu_shape(rng, categories, variants)
    cluster, gpu, node_numbers, gpu_indices = _place(rng, categories, project, gpu_count, node_count)
    hosts = tuple(f"{cluster.name}-n{number:03d}" for number in node_numbers)
    interactive = Category.INTERACTIVE_JOB in cats

    if Category.DATA_PREPROCESSING in cats:
        cpu_count = gpu_count * _pick(rng, (2, 3, 4))  # a thin CPU request is half of this cause
    elif Category.NON_DL_JOB in cats:
        cpu_count = _pick(rng, (16, 32, 48, 64))
    elif interactive:
        cpu_count = gpu_count * 4
    else:
        cpu_count = gpu_count * gpu.cpus_per_gpu

    single_process = Category.GPU_OVERSUBSCRIPTION in cats or variants.get(Category.DATA_EXCHANGE) == "dataparallel"
    if gpu_count == 1 or style == "cpu" or single_process:
        launcher = "python"
    elif node_count > 1:
        launcher = "srun-torchrun"
    else:
        launcher = "torchrun"

    # --- timeline ---
    boot = _uniform(rng, 30, 150)
    if Category.LENGTHY_LIBRARY_INSTALL in cats:
        install = _uniform(rng, 11 * 60, 45 * 60)
    elif style != "cpu" and not interactive and rng.random() < 0.25:
        install = _uniform(rng, 15, 90)  # a quick top-up of a prebuilt environment: not a cause
    else:
        install = 0.0
    download = _uniform(rng, 8 * 60, 40 * 60) if Category.EXTERNAL_DATA_USAGE in cats else 0.0
    load = _uniform(rng, 60, 300)
    if variants.get(Category.GPU_MEMORY_BOUND) == "oom_retry":
        load += _uniform(rng, 60, 150)  # the first attempt runs out of memory and restarts smaller
    level_categories = [c for c in categories if c in LEVEL_PROFILE]
    only_overlays = bool(categories) and not level_categories
    if interactive:
        work = _uniform(rng, 1.5, 14) * 3600
    elif Category.UNRELEASED_JOB in cats:
        work = _lognormal_s(rng, 1.4, 0.7, 0.5, 12)
    elif Category.NON_DL_JOB in cats:
        work = _lognormal_s(rng, 1.2, 0.8, 0.3, 20)
    elif node_count > 1:
        work = _lognormal_s(rng, 3.0, 0.7, 1.0, 40)
    elif only_overlays and cats & {Category.LENGTHY_LIBRARY_INSTALL, Category.EXTERNAL_DATA_USAGE}:
        work = _lognormal_s(rng, 1.0, 0.5, 0.4, 4)  # the install/download is a big share of a short run
    else:
        # Healthy runs last at least 45 min, so start-up overhead cannot drag them below 50 %.
        work = _lognormal_s(rng, 1.6, 0.95, 0.5 if categories else 0.75, 40)
    final = _uniform(rng, 40, 180) if not interactive else 0.0
    tail = max(40 * 60, work * _uniform(rng, 0.4, 2.0)) if Category.UNRELEASED_JOB in cats else 0.0
    overhead = boot + install + download + load + final
    if overhead + work + tail > MAX_DURATION_S:
        scale = (MAX_DURATION_S - overhead) / (work + tail)
        work, tail = work * scale, tail * scale

    state, failure = "COMPLETED", ""
    roll = rng.random()
    if not categories and roll < 0.03:
        state, failure = "FAILED", "exception"
    elif not categories and roll < 0.06:
        state = "CANCELLED"
    elif variants.get(Category.DATA_EXCHANGE) == "socket_allreduce" and roll < 0.35:
        state, failure = "FAILED", "nccl_timeout"
    elif Category.UNRELEASED_JOB in cats:
        state = _pick(rng, ("TIMEOUT", "CANCELLED"))
    elif interactive:
        state = _weighted(rng, ("TIMEOUT", "CANCELLED", "COMPLETED"), (0.4, 0.4, 0.2))
    if failure:
        final = _uniform(rng, 2, 10)

    boot_end = boot
    install_end = boot_end + install
    download_end = install_end + download
    train_start = download_end + (0.0 if interactive else load)
    train_end = train_start + work
    final_end = train_end + final
    duration = final_end + tail

    devices = gpu_count + node_count
    period = cluster.period_s if devices * duration / cluster.period_s <= MAX_ROWS_PER_JOB_AT_BASE_PERIOD else 60
    latest_start = FLEET_SPAN.total_seconds() - duration - 1800
    start = FLEET_END - FLEET_SPAN + timedelta(seconds=round(_uniform(rng, 0, latest_start)))
    # Queue wait: seconds for an interactive session, longer for jobs that need whole nodes.
    wait = _uniform(rng, 5, 120) if interactive else float(rng.exponential(3600 if node_count > 1 else 900))
    submit = start - timedelta(seconds=round(wait))

    hyper = _hyperparameters(rng, categories, variants, project, style, launcher, work, gpu, team, user)
    if variants.get(Category.DATA_PREPROCESSING) == "too_many_workers":
        hyper["num_workers"] = 2 * cpu_count // node_count  # twice the CPUs each process may use
    windows = _windows(rng, categories, variants, project, hyper, train_start, train_end, duration, boot_end)
    if failure == "nccl_timeout":
        # One rank stops answering; the others wait in all_reduce until NCCL's 10-minute watchdog fires.
        hang_start = train_end - 600
        windows = [w for w in windows if w.end <= hang_start] + [Window(hang_start, train_end, HANG)]
    for window in windows:  # read stalls before a save delay it: name the save by the step it really ran at
        if window.phase in (CHECKPOINT, UPLOAD):
            window.step = int(_steps_at(windows, train_start, hyper["step_time"], np.array([window.start]))[0])
    total_steps = int(_steps_at(windows, train_start, hyper["step_time"], np.array([train_end]))[0])
    hyper["steps_per_epoch"] = max(1, total_steps // hyper["epochs"])
    util_range, mem_range = _profile(categories)
    level = _uniform(rng, *util_range)
    if categories:
        # A planted job is a low-utilization job (taxonomy.md: mean <= 50 %): the GPUs may run fast between
        # its stalls, but not so fast that the stalls stop mattering.
        blocked = sum(w.end - w.start for w in windows if w.phase in BLOCKING)
        busy_share = max(train_end - train_start - blocked, 1.0) / duration
        level = min(level, PLANTED_MAX_MEAN_UTIL / busy_share)
    gpu_levels = np.clip(level + rng.normal(0, 1.5, gpu_count), 3, 99)
    if node_count > 1:
        gpu_levels += np.repeat(rng.normal(0, 2.0, node_count), gpu_count // node_count)
    gpu_mem_frac = np.clip(_uniform(rng, *mem_range) + rng.normal(0, 0.006, gpu_count), *mem_range)
    gpu_active = np.ones(gpu_count, dtype=bool)
    if Category.GPU_OVERSUBSCRIPTION in cats:
        gpu_active[1:] = False
    if variants.get(Category.DATA_EXCHANGE) == "dataparallel":
        # DataParallel scatters from and gathers on GPU 0, which works (and holds) more than the rest.
        gpu_levels[0] = min(gpu_levels[0] * 1.3, 95)
        gpu_levels[1:] *= 0.9
        gpu_mem_frac[0] = mem_range[1] - 0.01
        gpu_mem_frac[1:] = np.minimum(gpu_mem_frac[1:], mem_range[0] + 0.06)
    data_starved = bool(cats & {Category.DATA_PREPROCESSING, Category.HOST_GPU_TRANSFER, Category.API_MISUSE})

    plan = JobPlan(
        seed=seed,
        index=index,
        categories=categories,
        variants=variants,
        cluster=cluster.name,
        team=team,
        user=user,
        project=project,
        gpu=gpu,
        gpu_count=gpu_count,
        node_count=node_count,
        hosts=hosts,
        gpu_indices=gpu_indices,
        cpu_count=cpu_count,
        job_type="interactive" if interactive else "batch",
        queue="interactive" if interactive else gpu.partition,
        name=_job_name(rng, project, interactive, hyper),
        style=style,
        start=start,
        submit=submit,
        duration_s=duration,
        period_s=period,
        boot_end=boot_end,
        install_end=install_end,
        download_end=download_end,
        train_start=train_start,
        train_end=train_end,
        final_end=final_end,
        warmup_s=_uniform(rng, 60, 240),
        windows=windows,
        gpu_levels=gpu_levels,
        gpu_active=gpu_active,
        gpu_mem_frac=gpu_mem_frac,
        util_noise=_uniform(rng, 0.12, 0.2) if data_starved else _uniform(rng, 0.04, 0.08),
        eval_factor=_uniform(rng, 0.35, 0.65),
        sync_every=int(rng.integers(2, 5)) if Category.DATA_EXCHANGE in cats else 0,
        sync_factor=_uniform(rng, 0.06, 0.2),
        tail_holds_memory=variants.get(Category.UNRELEASED_JOB) == "idle_loop",
        host_profile={},
        hyper=hyper,
        state=state,
        failure=failure,
    )
    plan.host_profile = _host_profile(rng, plan)
    plan.notes = _notes(plan, level)
    return plan


def _profile(categories: tuple[Category, ...]) -> tuple[tuple[float, float], tuple[float, float]]:
    """(training-phase util range, GPU memory share range) for a job's set of categories."""
    if not categories:
        return HEALTHY_PROFILE
    profiles = [LEVEL_PROFILE[c] for c in categories if c in LEVEL_PROFILE]
    if not profiles:
        return OVERLAY_PROFILE
    util_range = (min(p[0][0] for p in profiles), min(p[0][1] for p in profiles))
    if Category.IMPROPER_BATCH_SIZE in categories:
        return util_range, LEVEL_PROFILE[Category.IMPROPER_BATCH_SIZE][1]
    if Category.GPU_MEMORY_BOUND in categories:
        return util_range, LEVEL_PROFILE[Category.GPU_MEMORY_BOUND][1]
    return util_range, MIDDLE_MEMORY


# Per family: (healthy per-GPU batch size choices, too-small ones, memory-bound ones).
BATCH_SIZES = {
    "image": ((128, 192, 256), (4, 8, 16), (96, 128)),
    "text": ((32, 48, 64), (2, 4, 8), (24, 32)),
    "causal": ((8, 16), (1, 2), (4, 8)),
    "audio": ((16, 24, 32), (1, 2, 4), (16, 24)),
    "tabular": ((4096, 8192), (64, 128), (16384,)),
    "etl": ((1,), (1,), (1,)),
    "sklearn": ((1,), (1,), (1,)),
}


def _hyperparameters(
    rng: np.random.Generator,
    categories: tuple[Category, ...],
    variants: dict,
    project: Project,
    style: str,
    launcher: str,
    work: float,
    gpu: GpuModel,
    team: str,
    user: str,
) -> dict:
    healthy_sizes, small_sizes, memory_sizes = BATCH_SIZES[project.family]
    if Category.IMPROPER_BATCH_SIZE in categories:
        batch_size = _pick(rng, small_sizes)
    elif Category.GPU_MEMORY_BOUND in categories:
        batch_size = _pick(rng, memory_sizes)
    else:
        batch_size = _pick(rng, healthy_sizes)
    epochs = int(np.clip(round(work / _uniform(rng, 1200, 3 * 3600)), 1, 40))
    step_time = _uniform(rng, 0.15, 1.2)
    log_interval = max(_uniform(rng, 300, 600), work / 250)
    num_workers = min(int(rng.integers(6, 13)), gpu.cpus_per_gpu)
    preprocessing = variants.get(Category.DATA_PREPROCESSING)
    if preprocessing == "workers0":
        num_workers = 0
    elif preprocessing == "heavy_transform":
        num_workers = _pick(rng, (2, 3, 4))
    slug = project.dataset
    remote = variants.get(Category.REMOTE_DATA_READING)
    if remote == "s3":
        data_path = f"s3://{team}-datasets/{slug}"
    elif remote == "hdfs":
        data_path = f"hdfs://namenode.corp:8020/datasets/{slug}"
    elif project.family in ("etl", "sklearn"):
        data_path = f"/data/{team}/{slug}"
    else:
        data_path = f"/data/datasets/{slug}"
    checkpointing = variants.get(Category.MODEL_CHECKPOINTING)
    if checkpointing == "s3":
        checkpoint_dir = f"s3://{team}-checkpoints/{user}/{project.slug}"
    elif checkpointing == "nfs":
        checkpoint_dir = f"/mnt/nfs/{team}/checkpoints/{project.slug}"
    else:
        checkpoint_dir = f"/scratch/{user}/{project.slug}/checkpoints"
    model_path = project.arch
    if project.hf_class and Category.EXTERNAL_DATA_USAGE not in categories:
        model_path = f"/data/models/{project.arch.split('/')[-1]}"
    big_model = project.family == "causal" or "large" in project.arch
    return {
        "batch_size": batch_size,
        "epochs": epochs,
        "lr": _pick(rng, (1e-4, 3e-4, 5e-5, 2e-5, 1e-3)),
        "step_time": step_time,
        "steps_per_epoch": 1,  # set once the gaps are known
        "log_every": max(1, int(log_interval / step_time)),
        "num_workers": num_workers,
        "pin_memory": Category.HOST_GPU_TRANSFER not in categories,
        "launcher": launcher,
        "conda_env": _pick(rng, ("pt23", "pt24-cu121", "torch2", "ml-py311", f"{team}-env")),
        "data_path": data_path,
        "output_dir": f"/scratch/{user}/{project.slug}/outputs",
        "checkpoint_dir": checkpoint_dir,
        "model_path": model_path,
        "params_m": project.params_m,
        "big_model": big_model,
        "style": style,
        "upload_bucket": f"s3://{team}-artifacts/{user}/{project.slug}",
        "python": _pick(rng, ("3.10", "3.11")),
        "torch": _pick(rng, ("2.2.2", "2.3.1", "2.4.0")),
    }


def _job_name(rng: np.random.Generator, project: Project, interactive: bool, hyper: dict) -> str:
    if interactive:
        return _pick(rng, ("jupyter", "notebook", "dev-session", "vscode", "debug")) + f"-{project.slug.split('-')[0]}"
    suffix = _pick(rng, ("", "-v2", f"-bs{hyper['batch_size']}", f"-lr{hyper['lr']:g}", "-ablation", "-run"))
    if suffix == "-run":
        suffix += str(int(rng.integers(1, 30)))
    return project.slug + suffix


def _windows(
    rng: np.random.Generator,
    categories: tuple[Category, ...],
    variants: dict,
    project: Project,
    hyper: dict,
    train_start: float,
    train_end: float,
    duration: float,
    boot_end: float,
) -> list[Window]:
    """Evaluation dips, checkpoint/upload gaps, remote-read stalls and interactive bursts, sorted by start.

    Also records in `hyper` the step interval of the save/upload gaps (`save_every`, `upload_every`),
    which the job's code then uses as its argparse default.
    """
    cats = set(categories)
    step_time = hyper["step_time"]
    if Category.INTERACTIVE_JOB in cats:
        bursts = max(2, int(rng.poisson(duration / 3600 * 0.8)))
        starts = np.sort(rng.uniform(boot_end + 300, max(boot_end + 600, duration - 1800), bursts))
        windows, free_from = [], 0.0
        for start in starts:
            start = max(float(start), free_from + 120)
            end = min(start + _uniform(rng, 180, 1500), duration - 300)
            if end - start >= 120:
                windows.append(Window(start, end, BURST, intensity=_uniform(rng, 0.3, 1.0)))
                free_from = end
        return windows
    if Category.NON_DL_JOB in cats:
        return []

    gaps: list[Window] = []
    ckpt, upload = Category.MODEL_CHECKPOINTING in cats, Category.INTERMEDIATE_UPLOAD in cats
    if ckpt or upload:
        if ckpt:
            gap = _uniform(rng, 240, 600) if hyper["big_model"] else _uniform(rng, 90, 240)
        else:
            gap = _uniform(rng, 120, 420)
        interval = gap * _uniform(rng, 1.4, 2.8)
        # However short the run, the cause shows as periodic gaps: at least three saves or uploads fit.
        span = train_end - train_start - 120
        gap = min(gap, span / 12)
        interval = min(interval, span / 3 - 2.2 * gap)
        hyper["save_every"] = max(1, int(interval / step_time))
        hyper["upload_every"] = hyper["save_every"]
        cursor, event = train_start + interval, 1
        while cursor + gap * 1.6 < train_end - 120:
            step = event * hyper["save_every"]
            if ckpt:
                length = gap * _uniform(rng, 0.85, 1.15)
                gaps.append(Window(cursor, cursor + length, CHECKPOINT, step=step))
                cursor += length
            if upload:
                length = (gap * 0.6 if ckpt else gap) * _uniform(rng, 0.8, 1.2)
                gaps.append(Window(cursor, cursor + length, UPLOAD, step=step))
                cursor += length
            cursor += interval
            event += 1
    if Category.REMOTE_DATA_READING in cats:
        work_mean, stall_mean = _uniform(rng, 90, 240), _uniform(rng, 90, 240)
        cursor, shard = train_start + work_mean * 0.5, int(rng.integers(0, 400))
        busy = [(g.start, g.end) for g in gaps]
        while cursor < train_end - 120:
            length = stall_mean * _uniform(rng, 0.5, 1.5)
            if not any(start < cursor + length and cursor < end for start, end in busy):
                gaps.append(Window(cursor, cursor + length, STALL, step=shard))
                shard += 1
            cursor += length + work_mean * _uniform(rng, 0.5, 1.5)
        gaps.sort(key=lambda w: w.start)

    # An evaluation pass closes every epoch, unless a gap already occupies that moment.
    epochs = hyper["epochs"]
    epoch_len = (train_end - train_start) / epochs
    eval_len = min(_uniform(rng, 60, 240), 0.2 * epoch_len)
    evals = []
    for epoch in range(1, epochs + 1):
        end = train_start + epoch * epoch_len
        start = end - eval_len
        if not any(g.start < end and start < g.end for g in gaps):
            evals.append(Window(start, end, EVAL, step=epoch))
    return sorted(gaps + evals, key=lambda w: w.start)


def _steps_at(windows: list[Window], train_start: float, step_time: float, times: np.ndarray) -> np.ndarray:
    """The training step reached at each time: the loop does not step while a save, upload or read blocks it."""
    elapsed = np.clip(times - train_start, 0.0, None)
    for window in windows:
        if window.phase in BLOCKING:
            elapsed -= np.clip(times - window.start, 0.0, window.end - window.start)
    return (elapsed / step_time).astype(np.int64)


def _time_of_steps(windows: list[Window], train_start: float, step_time: float, steps: np.ndarray) -> np.ndarray:
    """When each step is reached: the inverse of `_steps_at`, pushing later steps past every blocking gap."""
    times = train_start + steps * step_time
    for window in windows:  # sorted by start, so each shift sees the times already shifted by earlier gaps
        if window.phase in BLOCKING:
            times = times + np.where(window.start <= times, window.end - window.start, 0.0)
    return times


def _host_profile(rng: np.random.Generator, plan: JobPlan) -> dict[str, np.ndarray]:
    """Per-phase levels of the host metrics (one value per phase code), before noise."""
    cats = set(plan.categories)
    u = _uniform
    if Category.DATA_PREPROCESSING in cats:
        cpu_train = u(rng, 90, 99)  # the loader is CPU-bound: the allocation is saturated
    elif Category.API_MISUSE in cats:
        cpu_train = u(rng, 8, 20)
    elif Category.REMOTE_DATA_READING in cats:
        cpu_train = u(rng, 10, 30)
    else:
        cpu_train = u(rng, 18, 55)
    cpu = np.zeros(N_PHASES)
    cpu[[BOOT, INSTALL, DOWNLOAD, LOAD]] = (u(rng, 1, 4), u(rng, 8, 35), u(rng, 3, 8), u(rng, 15, 40))
    cpu[[TRAIN, EVAL, SYNC, STALL]] = (cpu_train, cpu_train * 0.7, cpu_train * 0.8, u(rng, 5, 12))
    cpu[[CHECKPOINT, UPLOAD, FINAL, TAIL]] = (u(rng, 4, 9), u(rng, 3, 7), u(rng, 6, 15), u(rng, 0.3, 1.0))
    cpu[[BURST, SESSION, CPU_WORK, HANG]] = (u(rng, 10, 40), u(rng, 0.5, 2.0), u(rng, 70, 97), u(rng, 2, 5))

    base_mib = u(rng, 3000, 9000)
    train_mib = u(rng, 8e3, 60e3)  # loader workers, pinned buffers, the dataset index
    memory = np.full(N_PHASES, base_mib)
    memory[[LOAD, TRAIN, EVAL, CHECKPOINT, UPLOAD, STALL, SYNC, FINAL]] += train_mib * np.array(
        [0.6, 1, 1, 1.1, 1, 1, 1, 1]
    )
    memory[TAIL] += train_mib if plan.tail_holds_memory else 0
    memory[HANG] += train_mib
    memory[[BURST, SESSION]] += u(rng, 4e3, 20e3)
    memory[CPU_WORK] += u(rng, 30e3, 200e3)
    memory = np.minimum(memory, plan.gpu.host_mem_gib * 1024 * 0.9)

    multi_node = plan.node_count > 1
    net_train = u(rng, 1e9, 5e9) if multi_node else u(rng, 2e5, 5e6)
    if Category.REMOTE_DATA_READING in cats:
        net_train = u(rng, 40e6, 150e6)
    net_rx = np.full(N_PHASES, u(rng, 2e4, 2e5))
    net_rx[[BOOT, INSTALL, DOWNLOAD, LOAD]] = (u(rng, 5e5, 3e6), u(rng, 8e6, 60e6), u(rng, 20e6, 200e6), 20e6)
    net_rx[[TRAIN, EVAL, SYNC]] = (net_train, net_train * 0.3, net_train)
    net_rx[STALL] = u(rng, 300e6, 1.1e9)  # the loader pulls shards while the GPUs wait
    net_rx[[BURST, CPU_WORK]] = (u(rng, 1e6, 20e6), u(rng, 30e6, 300e6))
    if multi_node and Category.DATA_EXCHANGE in cats:
        net_rx[SYNC] = u(rng, 5e9, 11e9)  # gradients over sockets at the link's limit
        net_rx[TRAIN] = net_train * 0.4
    net_tx = net_rx * 0.05
    net_tx[[TRAIN, EVAL, SYNC]] = net_rx[[TRAIN, EVAL, SYNC]] if multi_node else net_tx[[TRAIN, EVAL, SYNC]]
    net_tx[CHECKPOINT] = u(rng, 150e6, 600e6)  # planted saves go to NFS or S3: over the network
    net_tx[UPLOAD] = u(rng, 80e6, 400e6)

    disk_read = np.full(N_PHASES, u(rng, 1e4, 1e5))
    local_read = 0.0 if Category.REMOTE_DATA_READING in cats else u(rng, 20e6, 400e6)
    disk_read[[LOAD, TRAIN, EVAL, CPU_WORK]] = (
        u(rng, 100e6, 600e6),
        local_read,
        local_read * 0.5,
        u(rng, 100e6, 800e6),
    )
    disk_write = np.full(N_PHASES, u(rng, 1e4, 2e5))
    disk_write[[INSTALL, DOWNLOAD, FINAL, CPU_WORK]] = (
        u(rng, 20e6, 120e6),
        net_rx[DOWNLOAD],
        200e6,
        u(rng, 20e6, 200e6),
    )
    return {
        "cpu_util": cpu,
        "host_mem_used_mib": memory,
        "net_rx_bytes_per_s": net_rx,
        "net_tx_bytes_per_s": net_tx,
        "disk_read_bytes_per_s": disk_read,
        "disk_write_bytes_per_s": disk_write,
    }


def _notes(plan: JobPlan, level: float) -> list[str]:
    """One human-readable line per planted category: what was planted and where to see it."""
    h, v = plan.hyper, plan.variants
    mem_pct = 100 * float(plan.gpu_mem_frac.max())
    gaps = {phase: [w for w in plan.windows if w.phase == phase] for phase in (CHECKPOINT, UPLOAD, STALL, BURST)}

    def minutes(windows: list[Window]) -> float:
        return sum(w.end - w.start for w in windows) / 60

    text = {
        Category.INTERACTIVE_JOB: f"{v.get(Category.INTERACTIVE_JOB)} session; {len(gaps[BURST])} bursts "
        f"({minutes(gaps[BURST]):.0f} min) in {plan.duration_s / 3600:.1f} h",
        Category.GPU_OVERSUBSCRIPTION: f"{plan.gpu_count} GPUs requested, code uses only cuda:0 (no DDP/torchrun)",
        Category.UNRELEASED_JOB: f"idle tail of {(plan.duration_s - plan.final_end) / 60:.0f} min after "
        f"'Training finished' ({v.get(Category.UNRELEASED_JOB)})",
        Category.NON_DL_JOB: f"{plan.project.arch} {plan.project.family} job, no DL framework, GPU idle",
        Category.IMPROPER_BATCH_SIZE: f"batch size {h['batch_size']}: training util ~{level:.0f} %, "
        f"peak memory {mem_pct:.0f} %",
        Category.MODEL_CHECKPOINTING: f"{len(gaps[CHECKPOINT])} synchronous saves to {h['checkpoint_dir']} every "
        f"{h.get('save_every')} steps, {minutes(gaps[CHECKPOINT]):.0f} min of gaps",
        Category.GPU_MEMORY_BOUND: f"peak memory {mem_pct:.0f} % at batch size {h['batch_size']}, "
        f"util ~{level:.0f} % ({v.get(Category.GPU_MEMORY_BOUND)})",
        Category.HOST_GPU_TRANSFER: "DataLoader(pin_memory=False), .to(device) without non_blocking; "
        f"util ~{level:.0f} %",
        Category.DATA_EXCHANGE: f"{v.get(Category.DATA_EXCHANGE)} on {plan.node_count} node(s) x "
        f"{plan.gpu_count // plan.node_count} GPUs: aligned dips every {plan.sync_every} samples",
        Category.DATA_PREPROCESSING: f"{v.get(Category.DATA_PREPROCESSING)}: num_workers={h['num_workers']} "
        f"on {plan.cpu_count} CPUs, CPU saturated, util ~{level:.0f} %",
        Category.REMOTE_DATA_READING: f"reads {h['data_path']} directly: {len(gaps[STALL])} read stalls "
        f"({minutes(gaps[STALL]):.0f} min)",
        Category.EXTERNAL_DATA_USAGE: f"{v.get(Category.EXTERNAL_DATA_USAGE)} download of "
        f"{(plan.download_end - plan.install_end) / 60:.0f} min at start",
        Category.INTERMEDIATE_UPLOAD: f"{v.get(Category.INTERMEDIATE_UPLOAD)} uploads in the loop: "
        f"{len(gaps[UPLOAD])} gaps ({minutes(gaps[UPLOAD]):.0f} min)",
        Category.API_MISUSE: f"{v.get(Category.API_MISUSE)}: host-device sync every step, util ~{level:.0f} %",
        Category.LENGTHY_LIBRARY_INSTALL: f"{v.get(Category.LENGTHY_LIBRARY_INSTALL)} install of "
        f"{(plan.install_end - plan.boot_end) / 60:.0f} min before training",
    }
    return [f"{category.value}: {text[category]}" for category in plan.categories]


def _assign_job_ids(plans: list[JobPlan], rng: np.random.Generator) -> None:
    """Slurm-like numeric ids, increasing with submit time per cluster, unique across the fleet."""
    first_id = {"alpha": 4_810_000, "beta": 920_000}
    for cluster, first in first_id.items():
        in_cluster = sorted((p for p in plans if p.cluster == cluster), key=lambda p: (p.submit, p.index))
        ids = first + np.cumsum(rng.integers(1, 40, len(in_cluster)))
        for plan, job_id in zip(in_cluster, ids, strict=True):
            plan.job_id = str(int(job_id))


def _plant_defects(plans: list[JobPlan], rng: np.random.Generator) -> None:
    """Exporter outages (holes > 5 min) and double scrapes (duplicated rows) in a few jobs."""
    count = max(1, round(DEFECT_SHARE * len(plans)))
    candidates = [p for p in plans if p.train_end - p.train_start > 60 * 60 and p.job_type == "batch"]
    for plan in (candidates[i] for i in rng.permutation(len(candidates))[:count]):
        length = _uniform(rng, 6 * 60, 25 * 60)
        start = _uniform(rng, plan.train_start + 600, plan.train_end - length - 600)
        node = int(rng.integers(plan.node_count))
        plan.holes.append((node, start, start + length))
        plan.defects.append(f"metrics hole of {length / 60:.0f} min on {plan.hosts[node]} (exporter down)")
    for i in rng.permutation(len(plans))[:count]:
        plans[i].duplicate_rows = int(rng.integers(5, 40))
        plans[i].defects.append(f"{plans[i].duplicate_rows} duplicated (device, timestamp) samples")


# --- Series -------------------------------------------------------------------------------------------


@dataclass
class JobSeries:
    """One job's metric rows: GPU rows (device-major) then host rows, with NaN where a metric is n/a."""

    timestamps_ms: np.ndarray
    host_index: np.ndarray  # index into plan.hosts
    gpu: np.ndarray  # physical GPU index, -1 on host rows
    columns: dict[str, np.ndarray]
    duplicate_gpu_rows: int = 0  # planted double scrapes, each a second row of a (GPU, time) already written
    duplicate_host_rows: int = 0

    def __len__(self) -> int:
        return self.timestamps_ms.size


def _sample_times(plan: JobPlan) -> np.ndarray:
    """Unix seconds of the scrapes inside the job, on the exporter's wall-clock grid."""
    start_s = int(plan.start.timestamp())
    first = -(-start_s // plan.period_s) * plan.period_s
    return np.arange(first, start_s + plan.duration_s, plan.period_s, dtype=np.int64)


def _phases(plan: JobPlan, rng: np.random.Generator, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The phase code of every sample, and the intensity of the window it falls in (1 elsewhere)."""
    phase = np.full(t.size, BOOT, dtype=np.int8)
    if plan.has(Category.INTERACTIVE_JOB):
        phase[t >= plan.boot_end] = SESSION
    elif plan.has(Category.NON_DL_JOB):
        phase[(t >= plan.boot_end) & (t < plan.train_end)] = CPU_WORK
        phase[t >= plan.train_end] = FINAL
    else:
        for start, end, code in (
            (plan.boot_end, plan.install_end, INSTALL),
            (plan.install_end, plan.download_end, DOWNLOAD),
            (plan.download_end, plan.train_start, LOAD),
            (plan.train_start, plan.train_end, TRAIN),
            (plan.train_end, plan.final_end, FINAL),
            (plan.final_end, math.inf, TAIL),
        ):
            phase[(t >= start) & (t < end)] = code
    intensity = np.ones(t.size)
    if plan.windows:
        starts = np.array([w.start for w in plan.windows])
        ends = np.array([w.end for w in plan.windows])
        codes = np.array([w.phase for w in plan.windows], dtype=np.int8)
        intensities = np.array([w.intensity for w in plan.windows])
        k = np.searchsorted(starts, t, side="right") - 1
        inside = (k >= 0) & (t < ends[np.maximum(k, 0)])
        phase[inside] = codes[k[inside]]
        intensity[inside] = intensities[k[inside]]
    if plan.sync_every:
        # Gradient exchange stalls every rank at once: whole samples where all GPUs dip together.
        training = np.flatnonzero(phase == TRAIN)
        phase[training[int(rng.integers(plan.sync_every)) :: plan.sync_every]] = SYNC
    return phase, intensity


def _smooth_noise(rng: np.random.Generator, scale: float, n: int) -> np.ndarray:
    """Slowly varying noise shared by all GPUs of a job (input pipeline, thermals)."""
    raw = rng.normal(0.0, scale, n + 4)
    return np.convolve(raw, np.ones(5) / 5, mode="valid")[:n]


def _three_digits(rates: np.ndarray) -> np.ndarray:
    """Byte rates kept to 3 significant digits, as dashboards show them; it also lets parquet compress them."""
    scale = 10.0 ** (np.floor(np.log10(np.maximum(rates, 1.0))) - 2)
    return np.round(rates / scale) * scale


def _gpu_metrics(
    plan: JobPlan, rng: np.random.Generator, t: np.ndarray, phase: np.ndarray, intensity: np.ndarray
) -> dict[str, np.ndarray]:
    gpus, n = plan.gpu_count, t.size
    factor_by_phase = np.zeros(N_PHASES)
    factor_by_phase[[TRAIN, EVAL, SYNC, STALL, FINAL, BURST]] = (1.0, plan.eval_factor, plan.sync_factor, 0.05, 0.2, 1)
    factor = factor_by_phase[phase] * intensity
    # The first iterations compile kernels and autotune cuDNN: utilization climbs over a few minutes.
    warm = np.clip((t - plan.train_start) / plan.warmup_s, 0.25, 1.0)
    factor = np.where(phase == TRAIN, factor * warm, factor)
    noise = rng.normal(0.0, plan.util_noise, (gpus, n)) + _smooth_noise(rng, plan.util_noise, n)
    util = plan.gpu_levels[:, None] * factor * (1.0 + noise)
    # An idle GPU reads 0 % with the odd 1-3 % blip from the driver's own work.
    blips = np.where(rng.random((gpus, n)) < 0.015, rng.integers(1, 4, (gpus, n)), 0)
    busy = (factor > 0)[None, :] & plan.gpu_active[:, None]
    util = np.clip(np.rint(np.where(busy, util, blips)), 0, 100)

    total = float(plan.gpu.memory_mib)
    target = plan.gpu_mem_frac[:, None] * total
    if plan.has(Category.INTERACTIVE_JOB):
        # A notebook keeps what its cells allocated: memory steps up with the largest burst so far.
        seen = np.maximum.accumulate(np.where(phase == BURST, intensity, 0.0))
        ramp, held = seen, seen > 0
    elif plan.has(Category.NON_DL_JOB):
        ramp, held = np.zeros(n), np.zeros(n, dtype=bool)
    else:
        ramp_span = max(plan.train_start + plan.warmup_s - plan.download_end, 1.0)
        ramp = np.clip((t - plan.download_end) / ramp_span, 0.0, 1.0)
        held = t >= plan.download_end
        if not plan.tail_holds_memory:
            held &= phase != TAIL
    walk = np.clip(np.cumsum(rng.integers(-1, 2, (gpus, n)), axis=1) * 24.0, -0.012 * total, 0.012 * total)
    memory = CUDA_CONTEXT_MIB + (target - CUDA_CONTEXT_MIB) * ramp + walk * (ramp >= 1)
    memory = np.where(held[None, :] & plan.gpu_active[:, None], memory, 0.0)
    memory = np.clip(np.rint(memory), 0, total)

    fp32 = plan.variants.get(Category.GPU_MEMORY_BOUND) == "fp32"
    sm_ratio, dram_ratio = _uniform(rng, 0.55, 0.9), _uniform(rng, 0.25, 0.7)
    tensor_ratio = 0.0 if fp32 else _uniform(rng, 0.15, 0.6)
    sm_active = np.clip(util / 100 * sm_ratio * rng.normal(1.0, 0.03, (gpus, n)), 0, 1)
    pageable = plan.has(Category.HOST_GPU_TRANSFER)
    pcie_base = _uniform(rng, 3e9, 6e9) if pageable else _uniform(rng, 0.3e9, 2e9)
    pcie_rx = util / 100 * pcie_base * rng.lognormal(0.0, 0.2, (gpus, n)) + _uniform(rng, 1e4, 5e4)
    if pageable:
        pcie_rx = np.maximum(pcie_rx, pcie_base * 0.5 * (phase == TRAIN) * plan.gpu_active[:, None])
    pcie_rx += (phase == LOAD) * plan.gpu_active[:, None] * _uniform(rng, 2e9, 8e9)  # weights to the GPU
    if plan.variants.get(Category.DATA_EXCHANGE) == "dataparallel":
        pcie_rx += (phase == SYNC) * _uniform(rng, 5e9, 10e9)  # scatter/gather through the host
    pcie_tx = pcie_rx * _uniform(rng, 0.05, 0.3)
    return {
        "gpu_util": util,
        "gpu_mem_used_mib": memory,
        "gpu_mem_total_mib": np.full((gpus, n), total),
        "sm_active": np.round(sm_active, 3),
        "tensor_active": np.round(sm_active * tensor_ratio, 3),
        "dram_active": np.round(sm_active * dram_ratio, 3),
        "pcie_rx_bytes_per_s": _three_digits(pcie_rx),
        "pcie_tx_bytes_per_s": _three_digits(pcie_tx),
    }


def _host_metrics(plan: JobPlan, rng: np.random.Generator, phase: np.ndarray) -> dict[str, np.ndarray]:
    nodes, n = plan.node_count, phase.size
    profile = plan.host_profile
    cpu = profile["cpu_util"][phase] + rng.normal(0.0, 2.5, (nodes, n))
    walk = np.clip(np.cumsum(rng.normal(0.0, 40.0, (nodes, n)), axis=1), -2000, 2000)
    metrics = {
        "cpu_util": np.round(np.clip(cpu, 0, 100), 1),
        "host_mem_used_mib": np.rint(np.maximum(profile["host_mem_used_mib"][phase] + walk, 500)),
    }
    for name in ("net_rx_bytes_per_s", "net_tx_bytes_per_s", "disk_read_bytes_per_s", "disk_write_bytes_per_s"):
        metrics[name] = _three_digits(profile[name][phase] * rng.lognormal(0.0, 0.25, (nodes, n)))
    return metrics


def _job_series(plan: JobPlan) -> JobSeries:
    rng = np.random.default_rng([plan.seed, plan.index, 1])
    epoch_s = _sample_times(plan)
    t = (epoch_s - plan.start.timestamp()).astype(float)
    n = t.size
    phase, intensity = _phases(plan, rng, t)
    gpu_metrics = _gpu_metrics(plan, rng, t, phase, intensity)
    host_metrics = _host_metrics(plan, rng, phase)

    gpus, nodes = plan.gpu_count, plan.node_count
    device_host = np.concatenate([np.repeat(np.arange(nodes), gpus // nodes), np.arange(nodes)])
    device_gpu = np.concatenate([np.tile(plan.gpu_indices, nodes), np.full(nodes, -1)])
    keep = np.ones((gpus + nodes, n), dtype=bool)
    for node, start, end in plan.holes:
        keep[np.ix_(device_host == node, (t >= start) & (t < end))] = False
    repeats = keep.ravel().astype(np.int64)
    if plan.duplicate_rows:
        kept = np.flatnonzero(repeats)
        repeats[rng.choice(kept, size=min(plan.duplicate_rows, kept.size), replace=False)] = 2
    rows = np.repeat(np.arange(repeats.size), repeats)
    doubled = repeats == 2
    on_gpu = np.repeat(device_gpu >= 0, n)  # device-major, as keep.ravel()

    columns = {}
    for name in METRICS:
        if name in gpu_metrics:
            full = np.concatenate([gpu_metrics[name].ravel(), np.full(nodes * n, np.nan)])
        else:
            full = np.concatenate([np.full(gpus * n, np.nan), host_metrics[name].ravel()])
        columns[name] = full.astype(np.float32)[rows]
    return JobSeries(
        timestamps_ms=np.tile(epoch_s * 1000, gpus + nodes)[rows],
        host_index=np.repeat(device_host, n)[rows],
        gpu=np.repeat(device_gpu, n)[rows].astype(np.int16),
        columns=columns,
        duplicate_gpu_rows=int((doubled & on_gpu).sum()),
        duplicate_host_rows=int((doubled & ~on_gpu).sum()),
    )


def _series_table(plans: list[JobPlan], series: list[JobSeries]) -> pa.Table:
    """One row group's worth of rows; job ids and hosts go in as dictionaries, written as strings."""
    counts = np.array([len(s) for s in series])
    job_ids = pa.DictionaryArray.from_arrays(
        pa.array(np.repeat(np.arange(len(plans), dtype=np.int32), counts)), pa.array([p.job_id for p in plans])
    ).cast(pa.string())
    host_offsets = np.cumsum([0] + [len(p.hosts) for p in plans[:-1]])
    host_codes = np.concatenate([s.host_index + offset for s, offset in zip(series, host_offsets, strict=True)])
    hosts = pa.DictionaryArray.from_arrays(
        pa.array(host_codes.astype(np.int32)), pa.array([host for p in plans for host in p.hosts])
    ).cast(pa.string())
    gpu = np.concatenate([s.gpu for s in series])
    arrays = [
        job_ids,
        pa.array(np.concatenate([s.timestamps_ms for s in series]), type=pa.timestamp("ms", tz="UTC")),
        hosts,
        pa.array(gpu, type=pa.int16(), mask=gpu < 0),
    ]
    for name in METRICS:
        column = np.concatenate([s.columns[name] for s in series])
        arrays.append(pa.array(column, type=pa.float32(), mask=np.isnan(column)))
    return pa.Table.from_arrays(arrays, schema=METRICS_SCHEMA)


# --- Logs ---------------------------------------------------------------------------------------------


class _Log:
    """Log lines placed on the job's timeline, rendered in time order in the formats real tools use.

    `py` lines look like Python logging (`2026-10-05 12:00:03,123 INFO __main__: ...`), `sh` lines like
    run.sh's own echo or pip piped through `ts` (`[2026-10-05T12:00:03Z] ...`), `raw` lines carry no
    timestamp (tqdm bars, Trainer dicts, NCCL, tracebacks) or their own (Jupyter, wget, Slurm).
    Multi-node jobs prefix what the ranks print with `[rankN]:`, as torchrun does.
    """

    def __init__(self, plan: JobPlan):
        self.plan = plan
        self.start = plan.start
        self.entries: list[tuple[float, int, str]] = []
        self.rank_prefix = plan.multi_node

    def at(self, t: float) -> datetime:
        return self.start + timedelta(seconds=max(t, 0.0))

    def _add(self, t: float, text: str, rank: int | None) -> None:
        if rank is not None and self.rank_prefix:
            text = f"[rank{rank}]:{text}"
        self.entries.append((t, len(self.entries), text))

    def py(self, t: float, level: str, message: str, logger: str = "__main__", rank: int | None = 0) -> None:
        stamp = self.at(t)
        self._add(t, f"{stamp:%Y-%m-%d %H:%M:%S},{stamp.microsecond // 1000:03d} {level} {logger}: {message}", rank)

    def sh(self, t: float, message: str) -> None:
        self._add(t, f"[{self.at(t):%Y-%m-%dT%H:%M:%SZ}] {message}", None)

    def raw(self, t: float, text: str, rank: int | None = None) -> None:
        self._add(t, text, rank)

    def out(self, t: float, text: str) -> None:
        """A line rank 0's Python process prints without a timestamp (tqdm, Trainer dicts, warnings)."""
        self._add(t, text, 0)

    def jupyter(self, t: float, level: str, message: str) -> None:
        stamp = self.at(t)
        self._add(t, f"[{level} {stamp:%Y-%m-%d %H:%M:%S}.{stamp.microsecond // 1000:03d} ServerApp] {message}", None)

    def render(self) -> str:
        return "".join(text + "\n" for _, _, text in sorted(self.entries))


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _tqdm_bar(done: int, total: int, elapsed: float, width: int = 10) -> str:
    fraction = done / max(total, 1)
    filled = int(fraction * width)
    bar = "█" * filled + (" " * (width - filled))
    rate = done / max(elapsed, 1e-3)
    remaining = (total - done) / max(rate, 1e-6)

    def mmss(s: float) -> str:
        s = int(s)
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"

    return f"{int(fraction * 100):3d}%|{bar}| {done}/{total} [{mmss(elapsed)}<{mmss(remaining)}, {rate:.2f}it/s]"


PIP_WHEELS = (
    ("torch", "{torch}", "cp311-cp311-manylinux1_x86_64.whl", 779.1),
    ("nvidia-cudnn-cu12", "8.9.2.26", "py3-none-manylinux1_x86_64.whl", 731.7),
    ("nvidia-cublas-cu12", "12.1.3.1", "py3-none-manylinux1_x86_64.whl", 410.6),
    ("nvidia-nccl-cu12", "2.20.5", "py3-none-manylinux2014_x86_64.whl", 176.2),
    ("triton", "2.3.1", "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", 168.1),
    ("transformers", "4.41.2", "py3-none-any.whl", 9.1),
    ("datasets", "2.19.2", "py3-none-any.whl", 0.5),
    ("deepspeed", "0.14.2", "tar.gz", 1.3),
    ("wandb", "0.17.0", "py3-none-any.whl", 6.9),
)
CONDA_PACKAGES = (
    ("pytorch-2.3.1", "1.45 GB"),
    ("cuda-toolkit-12.1.0", "0.98 GB"),
    ("libcublas-12.1.3.1", "351.4 MB"),
    ("mkl-2023.1.0", "155.6 MB"),
    ("torchvision-0.18.1", "8.5 MB"),
    ("ffmpeg-6.1.1", "9.8 MB"),
    ("numpy-1.26.4", "7.6 MB"),
)


def _install_lines(log: _Log, plan: JobPlan, rng: np.random.Generator) -> None:
    start, end = plan.boot_end, plan.install_end
    span = end - start
    py_dir = f"/opt/conda/envs/{plan.hyper['conda_env']}/lib/python{plan.hyper['python']}/site-packages"
    if not plan.has(Category.LENGTHY_LIBRARY_INSTALL):
        # A quick top-up of an environment that is already there: seconds, not minutes.
        log.sh(start + 1, "installing extra requirements")
        for i, package in enumerate(("torch", "numpy", "tqdm")):
            log.sh(start + 2 + i, f"Requirement already satisfied: {package} in {py_dir}")
        log.sh(start + 0.3 * span, "Collecting wandb==0.17.0")
        log.sh(start + 0.4 * span, "  Downloading wandb-0.17.0-py3-none-any.whl (6.9 MB)")
        log.sh(start + 0.8 * span, "Installing collected packages: wandb")
        log.sh(end - 1, "Successfully installed wandb-0.17.0")
        return
    variant = plan.variants[Category.LENGTHY_LIBRARY_INSTALL]
    log.sh(start + 1, f"setting up the environment ({variant})")
    cursor = start + 2
    if variant == "apt_pip":
        apt_span = 0.25 * span
        packages = ("ffmpeg", "libsndfile1", "libgl1", "libaio-dev", "ninja-build", "build-essential")
        for i, package in enumerate(packages):
            log.sh(
                cursor + apt_span * i / len(packages),
                f"Get:{i + 1} http://archive.ubuntu.com/ubuntu jammy/main "
                f"amd64 {package} amd64 [{int(rng.integers(90, 9000))} kB]",
            )
        log.sh(
            cursor + apt_span * 0.8,
            f"Fetched {int(rng.integers(150, 400))} MB in {int(apt_span // 60)}min "
            f"{int(apt_span % 60)}s ({int(rng.integers(400, 1500))} kB/s)",
        )
        for package in packages:
            log.sh(cursor + apt_span * 0.9, f"Setting up {package} ...")
        cursor += apt_span
    if variant == "conda":
        conda_span = 0.7 * span
        log.sh(cursor, "Channels:")
        log.sh(cursor, " - pytorch")
        log.sh(cursor, " - nvidia")
        log.sh(cursor, " - conda-forge")
        log.sh(cursor + 1, "Collecting package metadata (repodata.json): ...working... done")
        log.sh(cursor + 0.35 * conda_span, "Solving environment: ...working... done")
        log.sh(cursor + 0.36 * conda_span, "Downloading and Extracting Packages:")
        for i, (package, size) in enumerate(CONDA_PACKAGES):
            at = cursor + conda_span * (0.36 + 0.5 * (i + 1) / len(CONDA_PACKAGES))
            log.sh(at, f"{package:<22}| {size:>9} | ########## | 100%")
        log.sh(cursor + 0.9 * conda_span, "Preparing transaction: ...working... done")
        log.sh(cursor + 0.95 * conda_span, "Verifying transaction: ...working... done")
        log.sh(cursor + conda_span, "Executing transaction: ...working... done")
        cursor += conda_span
    # pip: big wheels over a slow mirror, then flash-attn compiled from source.
    pip_span = end - cursor
    download_share = 0.5
    wheels = PIP_WHEELS if variant != "conda" else ()  # conda already brought the big packages
    total_mb = sum(size for *_, size in wheels)
    rate = total_mb / (download_share * pip_span) if wheels else 1.0
    for name, version, kind, size in wheels:
        version = version.format(torch=plan.hyper["torch"])
        filename = f"{name.replace('-', '_')}-{version}-{kind}" if kind != "tar.gz" else f"{name}-{version}.tar.gz"
        log.sh(cursor, f"Collecting {name}=={version}")
        log.sh(cursor + 0.5, f"  Downloading {filename} ({size} MB)")
        cursor += size / rate
        bar = "━" * 40
        log.sh(cursor, f"     {bar} {size}/{size} MB {rate * _uniform(rng, 0.8, 1.2):.1f} MB/s eta 0:00:00")
    log.sh(cursor + 1, "Collecting flash-attn==2.5.9.post1")
    log.sh(cursor + 2, "  Downloading flash_attn-2.5.9.post1.tar.gz (2.6 MB)")
    log.sh(cursor + 20, "Building wheels for collected packages: flash-attn")
    log.sh(cursor + 21, "  Building wheel for flash-attn (setup.py): started")
    build_end = end - 0.05 * pip_span
    for at in np.arange(cursor + 21 + 180, build_end - 60, 180):
        log.sh(float(at), "  Building wheel for flash-attn (setup.py): still running...")
    log.sh(build_end, "  Building wheel for flash-attn (setup.py): finished with status 'done'")
    log.sh(build_end + 1, "Successfully built flash-attn")
    names = [name for name, *_ in wheels] + ["flash-attn"]
    log.sh(build_end + 2, "Installing collected packages: " + ", ".join(names))
    log.sh(
        end - 1,
        "Successfully installed "
        + " ".join(f"{n}-{v.format(torch=plan.hyper['torch'])}" for n, v, *_ in wheels)
        + " flash-attn-2.5.9.post1",
    )


def _python_start(plan: JobPlan) -> float:
    """When train.py starts: after run.sh's own downloads (wget), before the ones Python makes (hub)."""
    variant = plan.variants.get(Category.EXTERNAL_DATA_USAGE)
    if variant == "hf_hub":
        return plan.install_end
    if variant == "torch_hub":
        return plan.install_end + 0.4 * (plan.download_end - plan.install_end)
    return plan.download_end


def _download_lines(log: _Log, plan: JobPlan, rng: np.random.Generator) -> None:
    start, end = plan.install_end, plan.download_end
    span = end - start
    variant = plan.variants[Category.EXTERNAL_DATA_USAGE]
    project = plan.project
    if variant == "hf_hub":
        log.py(start + 8, "INFO", f"loading {project.arch} and {project.dataset} from the Hugging Face Hub")
        log.out(start + 10, "config.json: 100%|██████████| 665/665 [00:00<00:00, 3.12MB/s]")
        shards = 4 if "7b" in project.arch.lower() else 1
        shard_gb = (13.5 if shards > 1 else _uniform(rng, 0.5, 3.0)) / shards
        model_span = 0.7 * span
        for shard in range(1, shards + 1):
            at = start + model_span * shard / shards
            name = f"model-{shard:05d}-of-{shards:05d}.safetensors" if shards > 1 else "model.safetensors"
            took = model_span / shards
            log.out(
                at,
                f"{name}: 100%|██████████| {shard_gb:.2f}G/{shard_gb:.2f}G [{_clock(took)[2:]}<00:00, "
                f"{shard_gb * 1024 / took:.1f}MB/s]",
            )
        log.out(start + 0.72 * span, "generation_config.json: 100%|██████████| 188/188 [00:00<00:00, 1.02MB/s]")
        data_gb = _uniform(rng, 0.5, 6.0)
        took = 0.25 * span
        log.out(
            start + 0.97 * span,
            f"Downloading data: 100%|██████████| {data_gb:.2f}G/{data_gb:.2f}G "
            f"[{_clock(took)[2:]}<00:00, {data_gb * 1024 / took:.1f}MB/s]",
        )
        examples = int(rng.integers(50_000, 2_000_000))
        log.out(
            end - 2,
            f"Generating train split: 100%|██████████| {examples}/{examples} [00:41<00:00, "
            f"{examples / 41:.2f} examples/s]",
        )
        log.py(end - 1, "INFO", f"external data ready after {span:.0f} s")
    elif variant == "torch_hub":
        python_start = _python_start(plan)
        _wget_lines(log, plan, start + 2, python_start - 5)  # run.sh fetches the data set first
        cache = f"/home/{plan.user}/.cache/torch/hub"
        log.out(
            python_start + 10,
            f'Downloading: "https://github.com/facebookresearch/dinov2/zipball/main" to {cache}/main.zip',
        )
        log.out(
            python_start + 20,
            'Downloading: "https://dl.fbaipublicfiles.com/dinov2/dinov2_vitl14/'
            f'dinov2_vitl14_pretrain.pth" to {cache}/checkpoints/dinov2_vitl14_pretrain.pth',
        )
        took = end - python_start - 25
        log.out(end - 2, f"100%|██████████| 1.13G/1.13G [{_clock(took)[2:]}<00:00, {1157 / took:.2f}MB/s]")
    else:
        _wget_lines(log, plan, start + 2, end - 5)


def _wget_lines(log: _Log, plan: JobPlan, start: float, end: float) -> None:
    url = f"https://download.example.org/{plan.project.dataset}/{plan.project.dataset}-train.tar.gz"
    size = int((end - start) * 6.2e6)
    log.raw(start, f"--{log.at(start):%Y-%m-%d %H:%M:%S}--  {url}")
    log.raw(start + 0.2, "Resolving download.example.org (download.example.org)... 93.184.215.14")
    log.raw(start + 0.4, "HTTP request sent, awaiting response... 200 OK")
    log.raw(start + 0.5, f"Length: {size} ({size / 2**30:.1f}G) [application/gzip]")
    log.raw(start + 0.6, f"Saving to: '{plan.project.dataset}-train.tar.gz'")
    log.raw(
        end,
        f"{log.at(end):%Y-%m-%d %H:%M:%S} (5.91 MB/s) - '{plan.project.dataset}-train.tar.gz' saved [{size}/{size}]",
    )


def _nccl_lines(log: _Log, plan: JobPlan, rng: np.random.Generator, at: float) -> None:
    socket = plan.variants.get(Category.DATA_EXCHANGE) == "socket_allreduce"
    per_node = plan.gpu_count // plan.node_count
    for rank in range(plan.world_size):
        host, local = plan.hosts[rank // per_node], rank % per_node
        pid = 40000 + int(rng.integers(0, 9000))
        prefix = f"{host}:{pid}:{pid} [{local}] NCCL INFO"
        node_ip = f"10.{12 + plan.index % 40}.{rank // per_node}.{17 + rank // per_node}"
        t = at + rank * 0.01
        if rank == 0:
            log.raw(t, f"{prefix} NCCL version 2.20.5+cuda12.4", rank)
        if socket:
            log.raw(t, f"{prefix} NET/Socket : Using [0]eth0:{node_ip}<0>", rank)
            log.raw(t, f"{prefix} Using network Socket", rank)
        else:
            log.raw(t, f"{prefix} NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:{node_ip}<0>", rank)
            log.raw(t, f"{prefix} Using network IB", rank)
        log.raw(
            t + 2,
            f"{prefix} comm 0x{int(rng.integers(1 << 40)):x} rank {rank} nranks {plan.world_size} "
            f"cudaDev {local} nvmlDev {plan.gpu_indices[local]} - Init COMPLETE",
            rank,
        )


def _loss_curve(rng: np.random.Generator, fractions: np.ndarray, family: str) -> np.ndarray:
    first = {"image": 6.9, "text": 1.1, "causal": 3.6, "audio": 4.2, "tabular": 0.69}.get(family, 2.0)
    floor = first * _uniform(rng, 0.15, 0.4)
    return floor + (first - floor) * np.exp(-4 * fractions) + rng.normal(0, 0.02 * first, fractions.size)


def _training_lines(log: _Log, plan: JobPlan, rng: np.random.Generator) -> None:
    h, project = plan.hyper, plan.project
    load = plan.download_end
    train_start, train_end = plan.train_start, plan.train_end
    total_steps = int(_steps_at(plan.windows, train_start, h["step_time"], np.array([train_end]))[0])
    per_node = plan.gpu_count // plan.node_count
    env_site = f"/opt/conda/envs/{h['conda_env']}/lib/python{h['python']}/site-packages"
    python_start = _python_start(plan)
    if h["launcher"] in ("torchrun", "srun-torchrun"):
        log.raw(
            python_start + 0.5,
            f"W{log.at(python_start):%m%d %H:%M:%S}.000000 {int(rng.integers(1000, 99999))} "
            "torch/distributed/run.py:757] Setting OMP_NUM_THREADS environment variable for each process to be 1 "
            "in default, to avoid your system being overloaded, please further tune the variable for optimal "
            "performance in your application as needed.",
        )
    if plan.world_size > 1 and (plan.multi_node or plan.has(Category.DATA_EXCHANGE)):
        _nccl_lines(log, plan, rng, python_start + 20)
    if plan.has(Category.GPU_OVERSUBSCRIPTION):
        log.py(python_start + 5, "INFO", f"found {plan.gpu_count} GPUs, using cuda:0")
    elif plan.world_size == 1 and plan.gpu_count > 1:
        log.py(load + 5, "INFO", f"wrapping the model in nn.DataParallel over {plan.gpu_count} GPUs")
    else:
        log.py(
            python_start + 5,
            "INFO",
            f"world size {plan.world_size} on {plan.node_count} node(s), {per_node} GPU(s) each",
        )
    log.py(load + 30, "INFO", f"model {project.arch}: {h['params_m']:.1f}M parameters")
    log.py(
        load + 35,
        "INFO",
        f"train set: {total_steps // h['epochs'] * h['batch_size'] * plan.world_size} samples, "
        f"{h['steps_per_epoch']} steps per epoch, batch size {h['batch_size']} per GPU",
    )
    if plan.variants.get(Category.DATA_PREPROCESSING) == "too_many_workers":
        log.out(
            load + 40,
            f"{env_site}/torch/utils/data/dataloader.py:558: UserWarning: This DataLoader will create "
            f"{h['num_workers']} worker processes in total. Our suggested max number of worker in current system "
            f"is {plan.cpu_count // plan.node_count}, which is smaller than what this DataLoader is going to "
            "create. Please be aware that excessive worker creation might get DataLoader running slow or even "
            "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
        )
        log.out(load + 40, "  warnings.warn(_create_warning_msg(")
    if plan.variants.get(Category.GPU_MEMORY_BOUND) == "oom_retry":
        oom_at = train_start - _uniform(rng, 30, 60)
        total_gib = plan.gpu.memory_mib / 1024 * 0.985
        log.raw(
            oom_at,
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
            f"capacity of {total_gib:.2f} GiB of which 612.00 MiB is free. Including non-PyTorch memory, this "
            f"process has {total_gib - 0.6:.2f} GiB memory in use. Of the allocated memory "
            f"{total_gib - 2.1:.2f} GiB is allocated by PyTorch, and 1.31 GiB is reserved by PyTorch but "
            "unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
            0,
        )
        log.py(
            oom_at + 1,
            "WARNING",
            f"out of memory at batch size {h['batch_size'] * 2}; retrying with batch size {h['batch_size']}",
        )
    if plan.variants.get(Category.DATA_EXCHANGE) == "dataparallel":
        log.out(
            train_start + 20,
            f"{env_site}/torch/nn/parallel/_functions.py:68: UserWarning: Was asked to gather "
            "along dimension 0, but all input tensors were scalars; will instead unsqueeze and return a vector.",
        )
        log.out(train_start + 20, "  warnings.warn('Was asked to gather along dimension 0, but all '")

    epoch_len = (train_end - train_start) / h["epochs"]
    # The loop prints every `log_every` steps; saves, uploads and slow reads push those moments later.
    steps = np.arange(h["log_every"], total_steps, h["log_every"])
    times = _time_of_steps(plan.windows, train_start, h["step_time"], steps)
    evals = [w for w in plan.windows if w.phase == EVAL]
    in_eval = np.zeros(times.size, dtype=bool)
    for window in evals:
        in_eval |= (times >= window.start) & (times < window.end)
    kept = (times < train_end - 1) & ~in_eval
    steps, times = steps[kept], times[kept]
    fractions = (times - train_start) / max(train_end - train_start, 1)
    losses = _loss_curve(rng, fractions, project.family)
    starved = plan.has(Category.DATA_PREPROCESSING) or plan.has(Category.REMOTE_DATA_READING)
    trainer = plan.style == "trainer"

    blocking = [w for w in plan.windows if w.phase in BLOCKING]
    for epoch in range(1, h["epochs"] + 1):
        at = train_start + (epoch - 1) * epoch_len + 0.5
        for window in blocking:  # the new epoch starts once the save or upload in progress returns
            if window.start <= at < window.end:
                at = window.end + 0.5
        if not trainer and at < train_end:
            log.py(at, "INFO", f"Epoch {epoch}/{h['epochs']}")
    for at, fraction, loss, step in zip(times, fractions, losses, steps.tolist(), strict=True):
        fraction = float(fraction)
        lr = h["lr"] * min(1.0, fraction * 20) * (1 - 0.9 * fraction)
        epoch_float = round(fraction * h["epochs"], 2)
        if trainer:
            elapsed = at - train_start
            bars = [_tqdm_bar(max(step - d, 0), total_steps, elapsed - d * h["step_time"]) for d in (2, 1, 0)]
            log.out(at - 0.5, "\r" + "\r".join(bars))
            log.out(
                at,
                str(
                    {
                        "loss": round(float(loss), 4),
                        "grad_norm": round(_uniform(rng, 0.3, 3.0), 4),
                        "learning_rate": float(f"{lr:.3e}"),
                        "epoch": epoch_float,
                    }
                ),
            )
        else:
            step_time = h["step_time"] * _uniform(rng, 0.9, 1.1)
            data_time = step_time * (_uniform(rng, 0.6, 0.9) if starved else _uniform(rng, 0.005, 0.03))
            samples = h["batch_size"] * plan.world_size / step_time
            log.py(
                at,
                "INFO",
                f"epoch {int(epoch_float) + 1} step {step}/{total_steps} | loss {loss:.4f} | "
                f"lr {lr:.2e} | {samples:.1f} samples/s | data {data_time:.3f}s | step {step_time:.3f}s",
            )

    save_each_epoch = not plan.has(Category.MODEL_CHECKPOINTING) and plan.index % 2 == 0
    for window in plan.windows:
        if window.phase == EVAL:
            epoch = window.step
            val_loss = float(_loss_curve(rng, np.array([epoch / h["epochs"]]), project.family)[0]) * 1.05
            if trainer:
                runtime = window.end - window.start
                log.out(
                    window.end,
                    str(
                        {
                            "eval_loss": round(val_loss, 4),
                            "eval_runtime": round(runtime, 2),
                            "eval_samples_per_second": round(_uniform(rng, 50, 900), 3),
                            "epoch": float(epoch),
                        }
                    ),
                )
            else:
                log.py(window.start, "INFO", "running evaluation")
                log.py(
                    window.end,
                    "INFO",
                    f"epoch {epoch} | val_loss {val_loss:.4f} | "
                    f"val_acc {min(0.99, 0.5 + 0.45 * epoch / h['epochs']):.4f}",
                )
                bar = _tqdm_bar(h["steps_per_epoch"], h["steps_per_epoch"], epoch_len)
                log.out(window.start - 0.5, f"Epoch {epoch}/{h['epochs']}: {bar[:-1]}, loss={val_loss:.3f}]")
                if save_each_epoch:
                    # A small, quick save to local disk: the log line is there, the idle gap is not.
                    log.py(
                        window.end + 0.5, "INFO", f"Saving model checkpoint to {h['checkpoint_dir']}/epoch_{epoch}.pt"
                    )
        elif window.phase == CHECKPOINT:
            path = f"{h['checkpoint_dir']}/step_{window.step}.pt"
            log.py(window.start, "INFO", f"Saving model checkpoint to {path}")
            log.py(window.end, "INFO", f"checkpoint {path} saved in {window.end - window.start:.1f}s")
        elif window.phase == UPLOAD:
            _upload_lines(log, plan, window)
        elif window.phase == STALL:
            shard = f"{h['data_path']}/train-{window.step:05d}-of-01024.tar"
            log.py(window.start, "INFO", f"opening shard {shard}", logger="data")
            if window.step % 3 == 0:
                log.py(
                    window.end,
                    "WARNING",
                    f"slow read: {shard} took {window.end - window.start:.1f}s ({_uniform(rng, 2, 40):.1f} MB/s)",
                    logger="data",
                )
    _ending_lines(log, plan, rng, total_steps)


def _upload_lines(log: _Log, plan: JobPlan, window: Window) -> None:
    h = plan.hyper
    variant = plan.variants[Category.INTERMEDIATE_UPLOAD]
    local = f"{h['output_dir']}/step_{window.step}"
    remote = f"{h['upload_bucket']}/step_{window.step}"
    took = window.end - window.start
    if variant == "awscli":
        log.py(window.start, "INFO", f"aws s3 cp --recursive {local} {remote}")
        for name in ("predictions.jsonl", "samples.tar", "metrics.json"):
            log.out(window.end - 0.1, f"upload: {local}/{name} to {remote}/{name}")
    elif variant == "boto3":
        log.py(window.start, "INFO", f"uploading {local}/samples.tar to {remote}/samples.tar")
        log.py(window.end, "INFO", f"uploaded samples.tar in {took:.1f}s")
    else:
        log.py(window.start, "INFO", f"mlflow.log_artifacts({local!r}, artifact_path='step_{window.step}')")
        log.py(window.end, "INFO", f"logged artifacts for step {window.step} to MLflow in {took:.1f}s")


def _ending_lines(log: _Log, plan: JobPlan, rng: np.random.Generator, total_steps: int) -> None:
    h = plan.hyper
    end = plan.train_end
    script = f"/home/{plan.user}/{plan.project.slug}/train.py"
    if plan.failure == "exception":
        shard = f"{h['data_path']}/shard-{int(rng.integers(0, 2048)):04d}.tar"
        for text in (
            "Traceback (most recent call last):",
            f'  File "{script}", line 231, in <module>',
            "    main()",
            f'  File "{script}", line 188, in main',
            "    for batch in train_loader:",
            f"FileNotFoundError: [Errno 2] No such file or directory: '{shard}'",
        ):
            log.raw(end, text, 0)
        log.raw(end + 2, f"srun: error: {plan.hosts[0]}: task 0: Exited with exit code 1")
        return
    if plan.failure == "nccl_timeout":
        stamp = log.at(end)
        bad_rank = int(rng.integers(plan.world_size))
        seq = int(rng.integers(20_000, 90_000))
        log.raw(
            end,
            f"[E{stamp:%m%d %H:%M:%S}.{stamp.microsecond:06d} {int(rng.integers(1000, 99999))} "
            f"torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:607] [Rank {bad_rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=25557032, NumelOut=25557032, "
            "Timeout(ms)=600000) ran for 600071 milliseconds before timing out.",
            bad_rank,
        )
        log.raw(
            end + 0.1,
            f"[E{stamp:%m%d %H:%M:%S}.{stamp.microsecond:06d} ProcessGroupNCCL.cpp:1537] [PG 0 Rank "
            f"{bad_rank}] To avoid data inconsistency, we are taking the entire process down.",
            bad_rank,
        )
        log.raw(
            end + 3,
            "torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: "
            f"{bad_rank % 8} (pid: {int(rng.integers(1000, 99999))}) of binary: /opt/conda/envs/"
            f"{h['conda_env']}/bin/python",
        )
        log.raw(end + 5, f"srun: error: {plan.hosts[bad_rank // 8]}: task {bad_rank // 8}: Exited with exit code 1")
        return
    runtime = end - plan.train_start
    if plan.style == "trainer":
        log.out(
            end + 0.2,
            str(
                {
                    "train_runtime": round(runtime, 4),
                    "train_samples_per_second": round(total_steps * h["batch_size"] * plan.world_size / runtime, 3),
                    "train_steps_per_second": round(total_steps / runtime, 3),
                    "train_loss": round(_uniform(rng, 0.2, 2.5), 4),
                    "epoch": float(h["epochs"]),
                }
            ),
        )
    log.py(end + 0.5, "INFO", f"Training finished in {_clock(runtime)} ({total_steps} steps)")
    log.py(end + 1, "INFO", f"Saving final model to {h['output_dir']}/final")
    if plan.has(Category.UNRELEASED_JOB):
        if plan.variants[Category.UNRELEASED_JOB] == "idle_loop":
            log.py(plan.final_end, "INFO", "keeping the process alive for inspection; attach with py-spy dump")
        else:
            log.sh(plan.final_end, "python exited with 0; holding the node (sleep 12h)")
    else:
        log.sh(plan.final_end - 0.5, "job finished with exit code 0")


def _interactive_lines(log: _Log, plan: JobPlan, rng: np.random.Generator) -> None:
    variant = plan.variants[Category.INTERACTIVE_JOB]
    start = plan.boot_end
    host = plan.hosts[0]
    bursts = [w for w in plan.windows if w.phase == BURST]
    if variant == "jupyter":
        notebook_dir = f"/home/{plan.user}/notebooks"
        log.jupyter(start, "I", "Extension package jupyter_lsp took 0.1234s to import")
        log.jupyter(start + 0.5, "I", "jupyter_lsp | extension was successfully linked.")
        log.jupyter(start + 0.9, "I", f"Serving notebooks from local directory: {notebook_dir}")
        log.jupyter(start + 1.0, "I", "Jupyter Server 2.14.1 is running at:")
        log.jupyter(start + 1.0, "I", f"http://{host}:8888/lab?token=<redacted>")
        log.jupyter(
            start + 1.1,
            "I",
            "Use Control-C to stop this server and shut down all kernels (twice to skip confirmation).",
        )
        kernel = f"{int(rng.integers(1 << 31)):08x}-{int(rng.integers(1 << 15)):04x}-4a1b-9c3e-5d2f{plan.index:08d}"
        notebook = _pick(rng, ("explore", "debug-loader", "eval", "scratch", "viz-attention"))
        for i, burst in enumerate(bursts):
            if i == 0:
                log.jupyter(burst.start - 30, "I", f"Kernel started: {kernel}")
            elif i % 3 == 0:
                log.jupyter(burst.start - 5, "I", f"Kernel restarted: {kernel}")
            log.jupyter(burst.end + 20, "I", f"Saving file at /{notebook}.ipynb")
        if plan.state != "COMPLETED":
            return
        log.jupyter(plan.duration_s - 5, "C", "received signal 15, stopping")
        log.jupyter(plan.duration_s - 4, "I", "Shutting down 1 kernel")
    elif variant == "code-server":
        log.raw(
            start,
            f"[{log.at(start):%Y-%m-%dT%H:%M:%S}.000Z] info  code-server 4.89.1 "
            "a3ce2cb1a4e2d1e5f0a7d3ad1b4ad7d2bb4c1a61",
        )
        log.raw(
            start + 0.2, f"[{log.at(start):%Y-%m-%dT%H:%M:%S}.200Z] info  HTTP server listening on http://0.0.0.0:8080/"
        )
        log.raw(start + 0.3, f"[{log.at(start):%Y-%m-%dT%H:%M:%S}.300Z] info    - Authentication is enabled")
    else:
        log.sh(
            start,
            f"interactive session on {host}; GPUs {','.join(map(str, plan.gpu_indices))}; connect with: ssh {host}",
        )


def _cpu_job_lines(log: _Log, plan: JobPlan, rng: np.random.Generator) -> None:
    h = plan.hyper
    start, end = plan.boot_end, plan.train_end
    interval = max(_uniform(rng, 120, 400), (end - start) / 150)
    times = np.arange(start + interval, end - 1, interval)
    if plan.project.family == "etl":
        partitions = len(times)
        log.py(start + 2, "INFO", f"reading {partitions} partitions from {h['data_path']}", logger="etl")
        rows = rng.integers(400_000, 3_000_000, partitions)
        for i, (at, count) in enumerate(zip(times, rows, strict=True)):
            log.py(at, "INFO", f"partition {i + 1}/{partitions}: {count:,} rows in {interval:.1f}s", logger="etl")
        log.py(end, "INFO", f"wrote {int(rows.sum()):,} rows to {h['output_dir']}/features.parquet", logger="etl")
    else:
        n_rows, n_features = int(rng.integers(1_000_000, 20_000_000)), int(rng.integers(40, 400))
        log.py(start + 2, "INFO", f"loaded {n_rows:,} rows x {n_features} features", logger="fit")
        log.raw(
            start + 60, f"Binning {n_rows * n_features * 8 / 1e9:.3f} GB of training data: {_uniform(rng, 5, 60):.3f} s"
        )
        log.raw(start + 61, "Fitting gradient boosted rounds:")
        loss = _uniform(rng, 0.5, 0.7)
        for i, at in enumerate(times):
            loss *= _uniform(rng, 0.985, 0.999)
            log.raw(
                at,
                f"[{i + 1}/{len(times)}] 1 tree, 31 leaves, max depth = 9, train loss: {loss:.5f}, "
                f"val loss: {loss * 1.01:.5f}, in {interval:.3f}s",
            )
        log.py(end, "INFO", f"model written to {h['output_dir']}/model.joblib", logger="fit")
    log.sh(plan.final_end - 0.5, "job finished with exit code 0")


def _job_log(plan: JobPlan) -> str:
    rng = np.random.default_rng([plan.seed, plan.index, 2])
    log = _Log(plan)
    log.sh(
        0.5,
        f"job {plan.job_id} on {','.join(plan.hosts)}: {plan.gpu_count}x {plan.gpu.name}, "
        f"{plan.cpu_count} CPUs, GPUs {','.join(map(str, plan.gpu_indices))}",
    )
    if not plan.has(Category.INTERACTIVE_JOB):
        log.sh(2.0, f"conda activate {plan.hyper['conda_env']}")
    if plan.install_end > plan.boot_end:
        _install_lines(log, plan, rng)
    if plan.download_end > plan.install_end:
        _download_lines(log, plan, rng)
    if plan.has(Category.INTERACTIVE_JOB):
        _interactive_lines(log, plan, rng)
    elif plan.style == "cpu":
        _cpu_job_lines(log, plan, rng)
    else:
        _training_lines(log, plan, rng)
    if plan.state in ("TIMEOUT", "CANCELLED"):
        reason = " DUE TO TIME LIMIT" if plan.state == "TIMEOUT" else ""
        log.raw(
            plan.duration_s,
            f"slurmstepd: error: *** JOB {plan.job_id} ON {plan.hosts[0]} CANCELLED AT "
            f"{log.at(plan.duration_s):%Y-%m-%dT%H:%M:%S}{reason} ***",
        )
    return log.render()


# --- Scripts ------------------------------------------------------------------------------------------
# Each job ships the code that produced its metrics and logs: a planted cause is visible where
# taxonomy.md says code shows it (DataLoader arguments, torch.save in the step loop, uploads, .item()
# per step, DataParallel, no DL import ...). Healthy code uses pinned memory, non_blocking copies,
# enough workers, mixed precision and DDP, so that the code alone does not raise false alarms.

SCRIPT_PATH = "train.py"

DATASET_CODE = {
    ("image", "local"): '''
class ImageListDataset(Dataset):
    """Images listed in <root>/<split>.txt as "relative/path.jpg label" lines."""

    def __init__(self, root: str, split: str) -> None:
        self.root = Path(root)
        lines = (self.root / f"{split}.txt").read_text().splitlines()
        self.samples = [(path, int(label)) for path, label in (line.split() for line in lines)]
        self.transform = TRANSFORM

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        path, label = self.samples[index]
        image = Image.open(self.root / path).convert("RGB")
        return self.transform(image), label
''',
    ("image", "heavy"): '''
class ImageListDataset(Dataset):
    """Images listed in <root>/<split>.txt, equalised at full resolution before cropping."""

    def __init__(self, root: str, split: str) -> None:
        self.root = Path(root)
        lines = (self.root / f"{split}.txt").read_text().splitlines()
        self.samples = [(path, int(label)) for path, label in (line.split() for line in lines)]
        self.transform = TRANSFORM

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        path, label = self.samples[index]
        image = Image.open(self.root / path).convert("RGB").resize((1024, 1024), Image.BICUBIC)
        pixels = np.asarray(image, dtype=np.float32)
        for channel in range(3):
            values = pixels[..., channel]
            histogram, edges = np.histogram(values, bins=256, range=(0, 255))
            cdf = histogram.cumsum() / histogram.sum()
            pixels[..., channel] = np.interp(values, edges[:-1], cdf * 255)
        image = Image.fromarray(pixels.astype(np.uint8))
        return self.transform(image), label
''',
    ("image", "remote"): '''
class ImageListDataset(Dataset):
    """Images listed in <root>/<split>.txt, read straight from object storage."""

    def __init__(self, root: str, split: str) -> None:
        self.root = root.rstrip("/")
        with fsspec.open(f"{self.root}/{split}.txt", "rt") as handle:
            lines = handle.read().splitlines()
        self.samples = [(path, int(label)) for path, label in (line.split() for line in lines)]
        self.transform = TRANSFORM

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        path, label = self.samples[index]
        with fsspec.open(f"{self.root}/{path}", "rb") as handle:
            image = Image.open(handle).convert("RGB")
        return self.transform(image), label
''',
    ("text", "local"): '''
class TokenizedDataset(Dataset):
    """Pre-tokenized examples saved with torch.save: a dict of equally long tensors."""

    def __init__(self, root: str, split: str) -> None:
        self.tensors = torch.load(Path(root) / f"{split}.pt")

    def __len__(self) -> int:
        return self.tensors["input_ids"].shape[0]

    def __getitem__(self, index: int):
        return {key: value[index] for key, value in self.tensors.items()}
''',
    ("text", "heavy"): '''
class JsonlTextDataset(Dataset):
    """Raw text from <split>.jsonl, normalised and tokenized per sample."""

    def __init__(self, root: str, split: str) -> None:
        with open(Path(root) / f"{split}.jsonl") as handle:
            self.rows = [json.loads(line) for line in handle]
        self.tokenizer = AutoTokenizer.from_pretrained(MODEL_PATH, use_fast=False)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int):
        row = self.rows[index]
        words = [unicodedata.normalize("NFKC", word).lower() for word in row["text"].split()]
        encoded = self.tokenizer(
            " ".join(words), max_length=512, padding="max_length", truncation=True, return_tensors="pt"
        )
        item = {key: value[0] for key, value in encoded.items()}
        item["labels"] = torch.tensor(row["label"]) if "label" in row else item["input_ids"].clone()
        return item
''',
    ("text", "remote"): '''
class RemoteShardDataset(Dataset):
    """Examples in parquet shards in remote storage; each sample re-reads its shard."""

    def __init__(self, root: str, split: str) -> None:
        self.fs, path = fsspec.core.url_to_fs(root)
        self.shards = sorted(self.fs.glob(f"{path}/{split}-*.parquet"))
        self.rows_per_shard = 10_000

    def __len__(self) -> int:
        return len(self.shards) * self.rows_per_shard

    def __getitem__(self, index: int):
        shard, offset = divmod(index, self.rows_per_shard)
        with self.fs.open(self.shards[shard], "rb") as handle:
            row = pq.read_table(handle).slice(offset, 1).to_pylist()[0]
        return {key: torch.tensor(value) for key, value in row.items()}
''',
    ("audio", "local"): '''
class AudioFeatureDataset(Dataset):
    """Log-mel features computed offline, one .pt file per utterance, listed in <split>.tsv."""

    def __init__(self, root: str, split: str) -> None:
        self.root = Path(root)
        self.rows = [line.split("\\t") for line in (self.root / f"{split}.tsv").read_text().splitlines()]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int):
        path, label_ids = self.rows[index]
        features = torch.load(self.root / path)
        return {INPUT_KEY: features, "labels": torch.tensor([int(i) for i in label_ids.split()])}
''',
    ("audio", "heavy"): '''
class AudioFileDataset(Dataset):
    """Audio files listed in <split>.tsv, decoded, resampled and featurised per sample."""

    def __init__(self, root: str, split: str) -> None:
        self.root = Path(root)
        self.rows = [line.split("\\t") for line in (self.root / f"{split}.tsv").read_text().splitlines()]
        self.mel = torchaudio.transforms.MelSpectrogram(sample_rate=16_000, n_fft=400, n_mels=80)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int):
        path, label_ids = self.rows[index]
        waveform, sample_rate = torchaudio.load(self.root / path)
        waveform = torchaudio.functional.resample(waveform, sample_rate, 16_000)
        features = self.mel(waveform).clamp(min=1e-10).log10()
        return {INPUT_KEY: features[0], "labels": torch.tensor([int(i) for i in label_ids.split()])}
''',
    ("audio", "remote"): '''
class RemoteAudioDataset(Dataset):
    """Audio files listed in <split>.tsv, fetched one by one from remote storage."""

    def __init__(self, root: str, split: str) -> None:
        self.root = root.rstrip("/")
        with fsspec.open(f"{self.root}/{split}.tsv", "rt") as handle:
            self.rows = [line.split("\\t") for line in handle.read().splitlines()]
        self.mel = torchaudio.transforms.MelSpectrogram(sample_rate=16_000, n_fft=400, n_mels=80)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int):
        path, label_ids = self.rows[index]
        with fsspec.open(f"{self.root}/{path}", "rb") as handle:
            waveform, _ = torchaudio.load(handle)
        features = self.mel(waveform).clamp(min=1e-10).log10()
        return {INPUT_KEY: features[0], "labels": torch.tensor([int(i) for i in label_ids.split()])}
''',
    ("tabular", "local"): '''
class FeatureDataset(Dataset):
    """Dense features and labels from one parquet file, held in memory as tensors."""

    def __init__(self, root: str, split: str) -> None:
        table = pd.read_parquet(Path(root) / f"{split}.parquet")
        self.labels = torch.tensor(table.pop("label").to_numpy(), dtype=torch.long)
        self.features = torch.tensor(table.to_numpy(dtype=np.float32))

    def __len__(self) -> int:
        return self.labels.shape[0]

    def __getitem__(self, index: int):
        return self.features[index], self.labels[index]
''',
    ("tabular", "heavy"): '''
class FeatureDataset(Dataset):
    """Raw event rows; features are engineered per sample from a pandas row."""

    def __init__(self, root: str, split: str) -> None:
        self.frame = pd.read_parquet(Path(root) / f"{split}.parquet")
        self.columns = [column for column in self.frame.columns if column not in ("label", "user_id")]

    def __len__(self) -> int:
        return len(self.frame)

    def __getitem__(self, index: int):
        row = self.frame.iloc[index]
        features = [float(row[column]) for column in self.columns]
        features.append(hash(row["user_id"]) % 1000 / 1000.0)
        features.append(math.log1p(max(float(row["clicks"]), 0.0)))
        return torch.tensor(features, dtype=torch.float32), int(row["label"])
''',
    ("tabular", "remote"): '''
class RemoteFeatureDataset(Dataset):
    """Rows of parquet shards in remote storage; each sample re-reads its shard."""

    def __init__(self, root: str, split: str) -> None:
        self.fs, path = fsspec.core.url_to_fs(root)
        self.shards = sorted(self.fs.glob(f"{path}/{split}-*.parquet"))
        self.rows_per_shard = 50_000

    def __len__(self) -> int:
        return len(self.shards) * self.rows_per_shard

    def __getitem__(self, index: int):
        shard, offset = divmod(index, self.rows_per_shard)
        with self.fs.open(self.shards[shard], "rb") as handle:
            row = pq.read_table(handle).slice(offset, 1).to_pylist()[0]
        label = row.pop("label")
        return torch.tensor(list(row.values()), dtype=torch.float32), label
''',
}
DATASET_CLASS = {
    ("image", "local"): "ImageListDataset",
    ("image", "heavy"): "ImageListDataset",
    ("image", "remote"): "ImageListDataset",
    ("text", "local"): "TokenizedDataset",
    ("text", "heavy"): "JsonlTextDataset",
    ("text", "remote"): "RemoteShardDataset",
    ("audio", "local"): "AudioFeatureDataset",
    ("audio", "heavy"): "AudioFileDataset",
    ("audio", "remote"): "RemoteAudioDataset",
    ("tabular", "local"): "FeatureDataset",
    ("tabular", "heavy"): "FeatureDataset",
    ("tabular", "remote"): "RemoteFeatureDataset",
}
IMAGE_TRANSFORM = """
TRANSFORM = transforms.Compose(
    [
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ]
)
"""
TABULAR_MODEL = '''
class TabularModel(nn.Module):
    """An MLP over dense features (embeddings are precomputed upstream)."""

    def __init__(self, num_features: int, num_classes: int, hidden: int = 1024) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(num_features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)
'''

LOOP_TEMPLATE = Template('''"""$docstring"""

from __future__ import annotations

$imports

log = logging.getLogger(__name__)

MODEL_PATH = "$model_path"
$constants

def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="$data_path")
    parser.add_argument("--output-dir", default="$output_dir")
    parser.add_argument("--checkpoint-dir", default="$checkpoint_dir")
    parser.add_argument("--epochs", type=int, default=$epochs)
    parser.add_argument("--batch-size", type=int, default=$batch_size)
    parser.add_argument("--lr", type=float, default=$lr)
    parser.add_argument("--num-workers", type=int, default=$num_workers)
    parser.add_argument("--log-every", type=int, default=$log_every)
$extra_args    return parser.parse_args()

$dataset_code
$model_code

def evaluate(model: nn.Module, loader: DataLoader, device: torch.device) -> tuple[float, float]:
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for batch in loader:
$eval_body
            total_loss += loss.float().sum().item()
            correct += (logits.argmax(dim=-1) == targets).sum().item()
            seen += targets.numel()
    model.train()
    return total_loss / max(seen, 1), correct / max(seen, 1)

$helpers
def main() -> None:
    args = parse_args()
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
$setup
$prepare
    model = build_model().to(device)
$wrap
    log.info("model %s: %.1fM parameters", MODEL_PATH, sum(p.numel() for p in model.parameters()) / 1e6)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
$amp
    train_set = $dataset_class(args.data, "train")
    val_set = $dataset_class(args.data, "val")
$loaders
    log.info(
        "train set: %d samples, %d steps per epoch, batch size %d per GPU",
        len(train_set),
        len(train_loader),
        args.batch_size,
    )
$before_loop
    global_step, started = 0, time.time()
    for epoch in range(args.epochs):
        log.info("Epoch %d/%d", epoch + 1, args.epochs)
$epoch_setup
        for batch in train_loader:
            step_started = time.time()
$step_body
            global_step += 1
            if global_step % args.log_every == 0 and rank == 0:
                step_time = time.time() - step_started
                log.info(
                    "epoch %d step %d/%d | loss %.4f | lr %.2e | %.1f samples/s",
                    epoch + 1,
                    global_step,
                    args.epochs * len(train_loader),
                    loss.item(),
                    optimizer.param_groups[0]["lr"],
                    args.batch_size * world_size / step_time,
                )
$in_loop
        log.info("running evaluation")
        val_loss, val_acc = evaluate(model, val_loader, device)
        log.info("epoch %d | val_loss %.4f | val_acc %.4f", epoch + 1, val_loss, val_acc)
$after_epoch
    log.info("Training finished in %s (%d steps)", format_duration(time.time() - started), global_step)
    if rank == 0:
        log.info("Saving final model to %s/final", args.output_dir)
        Path(args.output_dir, "final").mkdir(parents=True, exist_ok=True)
        torch.save(unwrap(model).state_dict(), Path(args.output_dir, "final", "model.pt"))
$after_training

def unwrap(model: nn.Module) -> nn.Module:
    return model.module if hasattr(model, "module") else model


def format_duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


if __name__ == "__main__":
    main()
''')


def _indent(code: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else "" for line in code.strip("\n").splitlines())


def _loop_script(plan: JobPlan) -> str:
    h, project, variants = plan.hyper, plan.project, plan.variants
    family = "text" if project.family == "causal" else project.family
    dict_batch = family in ("text", "audio")
    non_blocking = "" if plan.has(Category.HOST_GPU_TRANSFER) else ", non_blocking=True"
    fp32 = variants.get(Category.GPU_MEMORY_BOUND) == "fp32"
    ddp = h["launcher"] in ("torchrun", "srun-torchrun")
    exchange = variants.get(Category.DATA_EXCHANGE)
    manual_allreduce = exchange == "socket_allreduce"
    external = variants.get(Category.EXTERNAL_DATA_USAGE)
    preprocessing = variants.get(Category.DATA_PREPROCESSING)
    if plan.has(Category.REMOTE_DATA_READING):
        data_kind = "remote"
    elif preprocessing == "heavy_transform":
        data_kind = "heavy"
    else:
        data_kind = "local"
    upload = variants.get(Category.INTERMEDIATE_UPLOAD)
    misuse = variants.get(Category.API_MISUSE)
    checkpoint = variants.get(Category.MODEL_CHECKPOINTING)

    stdlib = {"import argparse", "import logging", "import time", "from pathlib import Path"}
    third_party = {"import torch", "import torch.nn as nn"}
    if not dict_batch:
        third_party.add("import torch.nn.functional as F")
    if ddp:
        stdlib.add("import os")
    if data_kind == "heavy" and family == "text":
        stdlib |= {"import json", "import unicodedata"}
    if data_kind == "heavy" and family == "tabular":
        stdlib.add("import math")
    if upload == "awscli":
        stdlib.add("import subprocess")
    if family == "tabular" or (family == "image" and data_kind == "heavy"):
        third_party.add("import numpy as np")
    if family == "tabular" and data_kind != "remote":
        third_party.add("import pandas as pd")
    if data_kind == "remote" or checkpoint == "s3":
        third_party.add("import fsspec")
    if data_kind == "remote" and family in ("text", "tabular"):
        third_party.add("import pyarrow.parquet as pq")
    if ddp or manual_allreduce:
        third_party.add("import torch.distributed as dist")
    if ddp and not manual_allreduce:
        third_party.add("from torch.nn.parallel import DistributedDataParallel as DDP")
    third_party.add("from torch.utils.data import DataLoader, Dataset" + (", DistributedSampler" if ddp else ""))
    if family == "image":
        third_party |= {"import torchvision", "from PIL import Image", "from torchvision import transforms"}
    if family == "audio" and data_kind != "local":
        third_party.add("import torchaudio")
    if upload == "boto3":
        third_party.add("import boto3")
    if upload == "mlflow":
        third_party.add("import mlflow")
    if family in ("text", "audio"):
        tokenizer = ", AutoTokenizer" if data_kind == "heavy" and family == "text" else ""
        third_party.add(f"from transformers import {project.hf_class}{tokenizer}")
    if external == "hf_hub":
        third_party.add("from datasets import load_dataset")

    def section(lines: set[str]) -> list[str]:  # plain imports first, then from-imports, as isort orders them
        return sorted(line for line in lines if line.startswith("import ")) + sorted(
            line for line in lines if line.startswith("from ")
        )

    import_block = "\n".join(section(stdlib) + [""] + section(third_party))

    constants = ""
    if family == "image":
        constants = IMAGE_TRANSFORM
    elif family == "audio":
        constants = f'INPUT_KEY = "{"input_features" if "whisper" in project.arch else "input_values"}"\n'
    elif family == "tabular":
        constants = f"NUM_FEATURES = {13 + plan.index % 40}\n"

    if family == "image":
        if external == "torch_hub":
            model_code = f"""
def build_model() -> nn.Module:
    backbone = torch.hub.load("facebookresearch/dinov2", "dinov2_vitl14")
    return nn.Sequential(backbone, nn.Linear(1024, {project.classes}))
"""
        else:
            model_code = f"""
def build_model() -> nn.Module:
    return torchvision.models.{project.arch}(num_classes={project.classes})
"""
    elif family == "tabular":
        model_code = (
            TABULAR_MODEL
            + f"""

def build_model() -> nn.Module:
    return TabularModel(NUM_FEATURES, {project.classes})
"""
        )
    else:
        local = "" if external else ", local_files_only=True"
        labels = f", num_labels={project.classes}" if project.hf_class.endswith("SequenceClassification") else ""
        model_code = f"""
def build_model() -> nn.Module:
    return {project.hf_class}.from_pretrained(MODEL_PATH{labels}{local})
"""

    move = (
        f"batch = {{key: value.to(device{non_blocking}) for key, value in batch.items()}}"
        if dict_batch
        else "inputs, targets = batch\n"
        f"inputs = inputs.to(device{non_blocking})\ntargets = targets.to(device{non_blocking})"
    )
    forward = (
        'outputs = model(**batch)\nloss = outputs.loss.mean()\nlogits, targets = outputs.logits, batch["labels"]'
        if dict_batch
        else "logits = model(inputs)\nloss = F.cross_entropy(logits, targets)"
    )
    eval_body = _indent(move + "\n" + forward, 12)
    if fp32:
        step_body = move + "\n" + forward + "\noptimizer.zero_grad(set_to_none=True)\nloss.backward()"
    else:
        step_body = (
            move
            + '\nwith torch.autocast("cuda", dtype=amp_dtype):\n'
            + _indent(forward, 4)
            + "\noptimizer.zero_grad(set_to_none=True)\nscaler.scale(loss).backward()"
        )
    if manual_allreduce:
        step_body += (
            "\n"
            + ("" if fp32 else "scaler.unscale_(optimizer)\n")
            + "for param in model.parameters():\n    if param.grad is not None:\n"
            "        dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)\n        param.grad /= world_size"
        )
    step_body += "\noptimizer.step()" if fp32 else "\nscaler.step(optimizer)\nscaler.update()"
    if misuse == "item_sync":
        step_body += (
            "\nrunning_loss += loss.item()\ntorch.cuda.synchronize()\nstep_times.append(time.time() - step_started)"
        )
    elif misuse == "cpu_metrics":
        step_body += (
            "\npredictions = logits.argmax(dim=-1).cpu().numpy()\n"
            "batch_accuracy = float((predictions == targets.cpu().numpy()).mean())\n"
            'history.append({"step": global_step, "loss": loss.item(), "accuracy": batch_accuracy})'
        )

    if ddp:
        setup = (
            'dist.init_process_group("nccl")\nrank, world_size = dist.get_rank(), dist.get_world_size()\n'
            'local_rank = int(os.environ["LOCAL_RANK"])\ntorch.cuda.set_device(local_rank)\n'
            'device = torch.device("cuda", local_rank)\n'
            'log.info("world size %d on %d node(s), %d GPU(s) each", world_size, world_size // '
            "torch.cuda.device_count(), torch.cuda.device_count())"
        )
    elif plan.has(Category.GPU_OVERSUBSCRIPTION):
        setup = (
            'rank, world_size = 0, 1\ndevice = torch.device("cuda:0")\n'
            'log.info("found %d GPUs, using %s", torch.cuda.device_count(), device)'
        )
    elif exchange == "dataparallel":
        setup = 'rank, world_size = 0, 1\ndevice = torch.device("cuda")'
    else:
        setup = (
            'rank, world_size = 0, 1\ndevice = torch.device("cuda")\n'
            'log.info("world size %d on %d node(s), %d GPU(s) each", 1, 1, torch.cuda.device_count())'
        )
    if manual_allreduce:
        wrap = "# Gradients are averaged by hand after backward (see the step loop)."
    elif ddp:
        wrap = "model = DDP(model, device_ids=[local_rank])"
    elif exchange == "dataparallel":
        wrap = (
            'log.info("wrapping the model in nn.DataParallel over %d GPUs", torch.cuda.device_count())\n'
            "model = nn.DataParallel(model)"
        )
    else:
        wrap = ""
    amp = (
        ""
        if fp32
        else (
            "amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16\n"
            "scaler = torch.cuda.amp.GradScaler(enabled=amp_dtype == torch.float16)"
        )
    )

    loader_args = "batch_size=args.batch_size, num_workers=args.num_workers"
    if plan.has(Category.HOST_GPU_TRANSFER):
        loader_args += ", pin_memory=False" if plan.index % 2 else ""
    else:
        loader_args += ", pin_memory=True"
    if h["num_workers"] > 0 and not preprocessing:
        loader_args += ", persistent_workers=True, prefetch_factor=4"
    sampler = "sampler=DistributedSampler(train_set)" if ddp else "shuffle=True"
    val_sampler = "sampler=DistributedSampler(val_set, shuffle=False)" if ddp else "shuffle=False"
    loaders = (
        f"train_loader = DataLoader(train_set, {sampler}, {loader_args})\n"
        f"val_loader = DataLoader(val_set, {val_sampler}, {loader_args})"
    )
    helpers = ""
    extra_args = ""
    before_loop = ""
    if variants.get(Category.GPU_MEMORY_BOUND) == "oom_retry":
        helpers += (
            '''
def fit_batch_size(model: nn.Module, dataset: Dataset, batch_size: int, device: torch.device) -> int:
    """Halve the batch size until one forward/backward pass fits in GPU memory."""
    while batch_size > 1:
        try:
            batch = next(iter(DataLoader(dataset, batch_size=batch_size)))
'''
            + _indent(move + "\n" + forward, 12)
            + """
            loss.backward()
            model.zero_grad(set_to_none=True)
            return batch_size
        except torch.cuda.OutOfMemoryError:
            log.warning(
                "out of memory at batch size %d; retrying with batch size %d", batch_size, batch_size // 2
            )
            torch.cuda.empty_cache()
            batch_size //= 2
    return batch_size

"""
        )
        before_loop = "args.batch_size = fit_batch_size(model, train_set, args.batch_size, device)\n" + (
            "train_loader = DataLoader(train_set, " + sampler + ", " + loader_args + ")"
        )
    prepare = ""
    if external == "hf_hub":
        # Model weights and data come from the Hub at run time, while the GPUs wait.
        prepare = (
            'log.info("loading %s and %s from the Hugging Face Hub", MODEL_PATH, DATASET_ID)\n'
            "load_started = time.time()\nbuild_model()\nload_dataset(DATASET_ID).save_to_disk(args.data)\n"
            'log.info("external data ready after %.0f s", time.time() - load_started)'
        )
        constants += f'DATASET_ID = "{project.dataset}"\n'

    in_loop = ""
    if checkpoint:
        extra_args += f'    parser.add_argument("--save-every", type=int, default={h["save_every"]})\n'
        save = (
            'with fsspec.open(path, "wb") as handle:\n    torch.save(state, handle)'
            if checkpoint == "s3"
            else "torch.save(state, path)"
        )
        in_loop += (
            "if global_step % args.save_every == 0 and rank == 0:\n"
            '    path = f"{args.checkpoint_dir}/step_{global_step}.pt"\n'
            '    log.info("Saving model checkpoint to %s", path)\n'
            "    save_started = time.time()\n"
            '    state = {"model": unwrap(model).state_dict(), "optimizer": optimizer.state_dict(), '
            '"step": global_step}\n' + _indent(save, 4) + "\n"
            '    log.info("checkpoint %s saved in %.1fs", path, time.time() - save_started)\n'
        )
    if upload:
        extra_args += f'    parser.add_argument("--upload-every", type=int, default={h["upload_every"]})\n'
        extra_args += f'    parser.add_argument("--upload-to", default="{h["upload_bucket"]}")\n'
        helpers += '''
def write_samples(model: nn.Module, loader: DataLoader, device: torch.device, folder: str) -> None:
    """Predictions on a few validation batches, for eyeballing progress."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    _, accuracy = evaluate(model, loader, device)
    Path(folder, "metrics.json").write_text(f'{{"val_accuracy": {accuracy}}}')

'''
        if upload == "awscli":
            push = (
                'log.info("aws s3 cp --recursive %s %s", local, remote)\n'
                'subprocess.run(["aws", "s3", "cp", "--recursive", local, remote], check=True)'
            )
        elif upload == "boto3":
            push = (
                'log.info("uploading %s/samples.tar to %s/samples.tar", local, remote)\n'
                "upload_started = time.time()\n"
                'bucket, _, prefix = remote.removeprefix("s3://").partition("/")\n'
                's3.upload_file(f"{local}/samples.tar", bucket, f"{prefix}/samples.tar")\n'
                'log.info("uploaded samples.tar in %.1fs", time.time() - upload_started)'
            )
            before_loop += '\ns3 = boto3.client("s3")'
        else:
            push = (
                "upload_started = time.time()\n"
                "log.info(\"mlflow.log_artifacts(%r, artifact_path='step_%d')\", local, global_step)\n"
                'mlflow.log_artifacts(local, artifact_path=f"step_{global_step}")\n'
                'log.info("logged artifacts for step %d to MLflow in %.1fs", global_step, time.time() - upload_started)'
            )
        in_loop += (
            "if global_step % args.upload_every == 0 and rank == 0:\n"
            '    local = f"{args.output_dir}/step_{global_step}"\n'
            '    remote = f"{args.upload_to}/step_{global_step}"\n'
            "    write_samples(model, val_loader, device, local)\n" + _indent(push, 4) + "\n"
        )
    if misuse == "item_sync":
        before_loop += "\nrunning_loss, step_times = 0.0, []"
    elif misuse == "cpu_metrics":
        before_loop += "\nhistory = []"
    save_each_epoch = not checkpoint and plan.index % 2 == 0
    after_epoch = ""
    if save_each_epoch:
        after_epoch = (
            "if rank == 0:\n"
            '    path = f"{args.checkpoint_dir}/epoch_{epoch + 1}.pt"\n'
            '    log.info("Saving model checkpoint to %s", path)\n'
            "    torch.save(unwrap(model).state_dict(), path)"
        )
    epoch_setup = "train_loader.sampler.set_epoch(epoch)" if ddp else ""
    after_training = ""
    if variants.get(Category.UNRELEASED_JOB) == "idle_loop":
        after_training = (
            'log.info("keeping the process alive for inspection; attach with py-spy dump")\n'
            "while True:\n    time.sleep(600)"
        )
    elif ddp:
        after_training = "dist.destroy_process_group()"

    return LOOP_TEMPLATE.substitute(
        docstring=f"Train {project.arch} on {project.dataset} ({plan.team}/{project.slug}).",
        imports=import_block,
        model_path=h["model_path"],
        constants=constants,
        data_path=h["data_path"],
        output_dir=h["output_dir"],
        checkpoint_dir=h["checkpoint_dir"],
        epochs=h["epochs"],
        batch_size=h["batch_size"] * (2 if variants.get(Category.GPU_MEMORY_BOUND) == "oom_retry" else 1),
        lr=f"{h['lr']:g}",
        num_workers=h["num_workers"],
        log_every=h["log_every"],
        extra_args=extra_args,
        dataset_code=DATASET_CODE[(family, data_kind)],
        model_code=model_code,
        eval_body=eval_body,
        helpers=helpers,
        setup=_indent(setup, 4),
        prepare=_indent(prepare, 4),
        wrap=_indent(wrap, 4),
        amp=_indent(amp, 4),
        dataset_class=DATASET_CLASS[(family, data_kind)],
        loaders=_indent(loaders, 4),
        before_loop=_indent(before_loop, 4),
        epoch_setup=_indent(epoch_setup, 8),
        step_body=_indent(step_body, 12),
        in_loop=_indent(in_loop, 12),
        after_epoch=_indent(after_epoch, 8),
        after_training=_indent(after_training, 4),
    )


def _trainer_script(plan: JobPlan) -> str:
    h, project = plan.hyper, plan.project
    external = plan.has(Category.EXTERNAL_DATA_USAGE)
    fp32 = plan.variants.get(Category.GPU_MEMORY_BOUND) == "fp32"
    labels = f", num_labels={project.classes}" if project.hf_class.endswith("SequenceClassification") else ""
    local = "" if external else ", local_files_only=True"
    data = (
        '    log.info("loading %s and %s from the Hugging Face Hub", MODEL_PATH, DATASET_ID)\n'
        "    load_started = time.time()\n"
        f"    model = {project.hf_class}.from_pretrained(MODEL_PATH{labels})\n"
        "    dataset = load_dataset(DATASET_ID)\n"
        '    log.info("external data ready after %.0f s", time.time() - load_started)\n'
        if external
        else f"    model = {project.hf_class}.from_pretrained(MODEL_PATH{labels}{local})\n"
        "    dataset = load_from_disk(DATA_PATH)\n"
    )
    idle = (
        '    log.info("keeping the process alive for inspection; attach with py-spy dump")\n'
        "    while True:\n        time.sleep(600)\n"
        if plan.variants.get(Category.UNRELEASED_JOB) == "idle_loop"
        else ""
    )
    return f'''"""Fine-tune {project.arch} on {project.dataset} with the Hugging Face Trainer.

Team {plan.team}, project {project.slug}.
"""

from __future__ import annotations

import logging
import os
import time

from datasets import {"load_dataset" if external else "load_from_disk"}
from transformers import {project.hf_class}, Trainer, TrainingArguments

log = logging.getLogger(__name__)

MODEL_PATH = "{h["model_path"]}"
{"DATASET_ID" if external else "DATA_PATH"} = "{project.dataset if external else h["data_path"]}"
OUTPUT_DIR = "{h["output_dir"]}"


def main() -> None:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    world_size, nodes = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("SLURM_NNODES", 1))
    log.info("world size %d on %d node(s), %d GPU(s) each", world_size, nodes, world_size // nodes)
{data}    log.info("model %s: %.1fM parameters", MODEL_PATH, model.num_parameters() / 1e6)
    args = TrainingArguments(
        output_dir=OUTPUT_DIR,
        per_device_train_batch_size={h["batch_size"]},
        per_device_eval_batch_size={h["batch_size"] * 2},
        num_train_epochs={h["epochs"]},
        learning_rate={h["lr"]:g},
        warmup_ratio=0.03,
        bf16={not fp32},
        dataloader_num_workers={h["num_workers"]},
        dataloader_pin_memory=True,
        logging_steps={h["log_every"]},
        eval_strategy="epoch",
        save_strategy="epoch",
        save_total_limit=2,
        report_to="none",
    )
    trainer = Trainer(model=model, args=args, train_dataset=dataset["train"], eval_dataset=dataset["validation"])
    log.info(
        "train set: %d samples, %d steps per epoch, batch size %d per GPU",
        len(dataset["train"]),
        len(trainer.get_train_dataloader()),
        args.per_device_train_batch_size,
    )
    started = time.time()
    trainer.train()
    seconds = int(time.time() - started)
    log.info(
        "Training finished in %d:%02d:%02d (%d steps)",
        seconds // 3600,
        seconds % 3600 // 60,
        seconds % 60,
        trainer.state.global_step,
    )
    log.info("Saving final model to %s/final", OUTPUT_DIR)
    trainer.save_model(f"{{OUTPUT_DIR}}/final")
{idle}

if __name__ == "__main__":
    main()
'''


def _cpu_script(plan: JobPlan) -> str:
    h, project = plan.hyper, plan.project
    if project.family == "etl":
        return f'''"""Build per-user session features from {project.dataset} with pandas.

Team {plan.team}, project {project.slug}.
"""

from __future__ import annotations

import argparse
import glob
import logging
import time
from pathlib import Path

import pandas as pd

log = logging.getLogger("etl")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="{h["data_path"]}")
    parser.add_argument("--output-dir", default="{h["output_dir"]}")
    parser.add_argument("--session-gap-minutes", type=int, default=30)
    return parser.parse_args()


def sessionize(frame: pd.DataFrame, gap_minutes: int) -> pd.DataFrame:
    frame = frame.sort_values(["user_id", "ts"])
    new_session = frame.groupby("user_id")["ts"].diff() > pd.Timedelta(minutes=gap_minutes)
    frame["session"] = new_session.groupby(frame["user_id"]).cumsum()
    return frame.groupby(["user_id", "session"]).agg(
        events=("event", "size"),
        first_seen=("ts", "min"),
        last_seen=("ts", "max"),
        distinct_pages=("page", "nunique"),
    )


def main() -> None:
    args = parse_args()
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    partitions = sorted(glob.glob(f"{{args.data}}/*.parquet"))
    log.info("reading %d partitions from %s", len(partitions), args.data)
    features = []
    for number, path in enumerate(partitions, start=1):
        started = time.time()
        frame = pd.read_parquet(path)
        features.append(sessionize(frame, args.session_gap_minutes))
        took = time.time() - started
        log.info("partition %d/%d: %s rows in %.1fs", number, len(partitions), f"{{len(frame):,}}", took)
    result = pd.concat(features)
    Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    result.to_parquet(Path(args.output_dir) / "features.parquet")
    log.info("wrote %s rows to %s/features.parquet", f"{{len(result):,}}", args.output_dir)


if __name__ == "__main__":
    main()
'''
    if project.arch == "MiniBatchKMeans":
        estimator = "MiniBatchKMeans(n_clusters=4096, batch_size=65536, max_iter=200, verbose=1)"
        module = "sklearn.cluster"
    else:
        estimator = "HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, early_stopping=True, verbose=1)"
        module = "sklearn.ensemble"
    return f'''"""Fit a {project.arch} on {project.dataset} ({plan.team}/{project.slug}) with scikit-learn."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
from {module} import {project.arch}

log = logging.getLogger("fit")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="{h["data_path"]}")
    parser.add_argument("--output-dir", default="{h["output_dir"]}")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    frame = pd.read_parquet(args.data)
    labels = frame.pop("label").to_numpy() if "label" in frame else None
    features = frame.to_numpy(dtype=np.float32)
    log.info("loaded %s rows x %d features", f"{{features.shape[0]:,}}", features.shape[1])
    model = {estimator}
    model.fit(features, labels)
    Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    joblib.dump(model, Path(args.output_dir) / "model.joblib")
    log.info("model written to %s/model.joblib", args.output_dir)


if __name__ == "__main__":
    main()
'''


def _walltime(plan: JobPlan) -> str:
    """The job's time limit: its exact length when it hit the limit, else the next round limit above it."""
    if plan.state == "TIMEOUT":
        seconds = int(math.ceil(plan.duration_s / 60) * 60)
    else:
        seconds = next(h * 3600 for h in (4, 8, 12, 24, 48) if h * 3600 >= plan.duration_s + 600)
    days, rest = divmod(seconds, 86400)
    return f"{days}-{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


def _run_script(plan: JobPlan) -> str:
    h = plan.hyper
    per_node = plan.gpu_count // plan.node_count
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={plan.name}",
        f"#SBATCH --partition={plan.queue}",
        f"#SBATCH --nodes={plan.node_count}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gres=gpu:{per_node}",
        f"#SBATCH --cpus-per-task={plan.cpu_count // plan.node_count}",
        f"#SBATCH --time={_walltime(plan)}",
        "#SBATCH --output=logs/%j/stdout.log",
        "set -euo pipefail",
        "",
        "stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }",
        'echo "[$(stamp)] job $SLURM_JOB_ID on $SLURM_JOB_NODELIST: GPUs $CUDA_VISIBLE_DEVICES"',
        "",
    ]
    interactive = plan.variants.get(Category.INTERACTIVE_JOB)
    if interactive:
        lines += ["source /opt/conda/etc/profile.d/conda.sh", "conda activate base", ""]
        if interactive == "jupyter":
            lines.append('jupyter lab --no-browser --ip=0.0.0.0 --port=8888 --notebook-dir="$HOME/notebooks"')
        elif interactive == "code-server":
            lines.append(f'code-server --bind-addr 0.0.0.0:8080 "$HOME/{plan.project.slug}"')
        else:
            lines += [
                'echo "[$(stamp)] interactive session on $(hostname); GPUs $CUDA_VISIBLE_DEVICES; '
                'connect with: ssh $(hostname)"',
                "sleep infinity",
            ]
        return "\n".join(lines) + "\n"

    timestamps = "2>&1 | ts '[%Y-%m-%dT%H:%M:%SZ]'"
    lines += [
        "source /opt/conda/etc/profile.d/conda.sh",
        f'echo "[$(stamp)] conda activate {h["conda_env"]}"',
        f"conda activate {h['conda_env']}",
        "",
    ]
    install = plan.variants.get(Category.LENGTHY_LIBRARY_INSTALL)
    if install:
        lines.append(f'echo "[$(stamp)] setting up the environment ({install})"')
        if install == "apt_pip":
            lines.append(
                f"sudo apt-get install -y ffmpeg libsndfile1 libgl1 libaio-dev ninja-build build-essential {timestamps}"
            )
        if install == "conda":
            packages = "pytorch=2.3.1 pytorch-cuda=12.1 torchvision ffmpeg"
            lines.append(f"conda install -y -c pytorch -c nvidia -c conda-forge {packages} {timestamps}")
        else:
            lines.append(f"pip install --no-cache-dir -r requirements.txt {timestamps}")
        lines.append(f"MAX_JOBS=8 pip install flash-attn==2.5.9.post1 --no-build-isolation {timestamps}")
        lines.append("")
    elif plan.install_end > plan.boot_end:
        lines += [
            'echo "[$(stamp)] installing extra requirements"',
            f"pip install -r requirements.txt {timestamps}",
            "",
        ]
    external = plan.variants.get(Category.EXTERNAL_DATA_USAGE)
    if external in ("wget", "torch_hub"):
        dataset = plan.project.dataset
        lines += [
            f"wget https://download.example.org/{dataset}/{dataset}-train.tar.gz",
            f"tar xzf {dataset}-train.tar.gz -C {h['data_path']}",
            "",
        ]
    if plan.multi_node or plan.variants.get(Category.DATA_EXCHANGE) == "socket_allreduce":
        lines.append("export NCCL_DEBUG=INFO")
    if plan.variants.get(Category.DATA_EXCHANGE) == "socket_allreduce":
        lines += ["export NCCL_IB_DISABLE=1", "export NCCL_SOCKET_IFNAME=eth0"]
    script_args = f"--data {h['data_path']} --epochs {h['epochs']}"
    if plan.style == "trainer" or plan.style == "cpu":
        script_args = ""
    if h["launcher"] == "srun-torchrun":
        lines += [
            'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
            f'srun torchrun --nnodes="$SLURM_NNODES" --nproc_per_node={per_node} --rdzv_id="$SLURM_JOB_ID" \\',
            f'    --rdzv_backend=c10d --rdzv_endpoint="$MASTER_ADDR:29500" {SCRIPT_PATH} {script_args}'.rstrip(),
        ]
    elif h["launcher"] == "torchrun":
        lines.append(f"torchrun --standalone --nproc_per_node={per_node} {SCRIPT_PATH} {script_args}".rstrip())
    else:
        lines.append(f"python {SCRIPT_PATH} {script_args}".rstrip())
    if plan.variants.get(Category.UNRELEASED_JOB) == "sleep":
        lines += ['echo "[$(stamp)] python exited with $?; holding the node (sleep 12h)"', "sleep 12h"]
    else:
        lines.append('echo "[$(stamp)] job finished with exit code $?"')
    return "\n".join(lines) + "\n"


def _requirements(plan: JobPlan) -> str | None:
    install = plan.variants.get(Category.LENGTHY_LIBRARY_INSTALL)
    if install in ("pip", "apt_pip"):
        return (
            "\n".join(f"{name}=={version.format(torch=plan.hyper['torch'])}" for name, version, *_ in PIP_WHEELS) + "\n"
        )
    if not install and plan.install_end > plan.boot_end:
        return "wandb==0.17.0\n"
    return None


def _job_scripts(plan: JobPlan) -> dict[str, str]:
    if plan.style == "cpu":
        train = _cpu_script(plan)
    elif plan.style == "trainer":
        train = _trainer_script(plan)
    else:
        train = _loop_script(plan)
    scripts = {SCRIPT_PATH: train, "run.sh": _run_script(plan)}
    requirements = _requirements(plan)
    if requirements:
        scripts["requirements.txt"] = requirements
    return scripts


# --- Archive ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricRows:
    """The rows of metrics.parquet, by what an import makes of them: it counts GPU samples only, each
    (GPU, time) once (an ingest run's "samples"), so the rows outnumber an import's samples."""

    gpu_samples: int  # one per (job, GPU, time): what an import counts as samples
    host_rows: int  # one per (job, node, time), CPU, host memory, network and disk: stored, not counted
    duplicate_rows: int  # planted double scrapes (GPU and host rows), which an import drops

    @property
    def total(self) -> int:
        return self.gpu_samples + self.host_rows + self.duplicate_rows


@dataclass(frozen=True)
class DemoSummary:
    """What `generate_demo_fleet` wrote."""

    archive_path: Path
    truth_path: Path
    job_count: int
    metric_rows: MetricRows  # what metrics.parquet holds
    healthy_count: int
    multi_category_count: int
    category_counts: dict[str, int]  # every category, in taxonomy order, including zeros
    archive_bytes: int


def default_truth_path(archive_path: str | os.PathLike) -> Path:
    """`demo.zip` -> `demo.truth.json` beside it (likewise for `.tar.gz`)."""
    archive_path = Path(archive_path)
    suffix = _archive_suffix(archive_path)
    return archive_path.with_name(archive_path.name[: -len(suffix)] + ".truth.json")


def _archive_suffix(path: Path) -> str:
    for suffix in ARCHIVE_SUFFIXES:
        if path.name.lower().endswith(suffix) and len(path.name) > len(suffix):
            return suffix
    raise ValueError(f"the archive path must end in .zip or .tar.gz, not '{path.name}'")


def generate_demo_fleet(
    out_path: str | os.PathLike,
    jobs: int = 300,
    seed: int = 42,
    truth_path: str | os.PathLike | None = None,
    sample_density: int = 1,
) -> DemoSummary:
    """Write a demo fleet archive (format v1) and its ground truth; the same seed gives the same bytes.

    `sample_density` > 1 samples every job that many times more often (the same fleet, denser
    metrics): how benchmarks reach tens of millions of samples without more jobs.
    """
    archive_path = Path(out_path)
    suffix = _archive_suffix(archive_path)
    truth_path = Path(truth_path) if truth_path is not None else default_truth_path(archive_path)
    if truth_path.resolve() == archive_path.resolve():
        raise ValueError("the ground truth must not overwrite the archive")
    if sample_density < 1:
        raise ValueError("the sample density must be at least 1")
    plans = plan_fleet(jobs, seed)
    for plan in plans:
        plan.period_s = max(1, plan.period_s // sample_density)
    archive_path.parent.mkdir(parents=True, exist_ok=True)
    truth_path.parent.mkdir(parents=True, exist_ok=True)
    # Members are staged on disk (so 5,000 jobs never sit in memory) and packed in a fixed order.
    with tempfile.TemporaryDirectory(prefix=".demo-fleet-", dir=archive_path.parent) as work:
        staging = Path(work) / "members"
        metric_rows = _stage_members(plans, staging)
        partial = Path(work) / f"archive{suffix}"
        _pack(staging, partial, suffix)
        os.replace(partial, archive_path)
    truth = _truth(plans, seed, archive_path.name)
    partial_truth = truth_path.with_name(f".{truth_path.name}.partial")
    partial_truth.write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    os.replace(partial_truth, truth_path)

    counts = Counter(category for plan in plans for category in plan.categories)
    return DemoSummary(
        archive_path=archive_path,
        truth_path=truth_path,
        job_count=len(plans),
        metric_rows=metric_rows,
        healthy_count=sum(1 for plan in plans if not plan.categories),
        multi_category_count=sum(1 for plan in plans if len(plan.categories) > 1),
        category_counts={category.value: counts.get(category, 0) for category in Category},
        archive_bytes=archive_path.stat().st_size,
    )


def _manifest() -> dict:
    return {
        "format": "fleet-archive",
        "version": 1,
        "cluster": DEFAULT_CLUSTER,
        "created_at": f"{FLEET_END:%Y-%m-%dT%H:%M:%SZ}",
        "generator": GENERATOR_NAME,
    }


def _iso(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


def _command(plan: JobPlan) -> str:
    per_node = plan.gpu_count // plan.node_count
    interactive = plan.variants.get(Category.INTERACTIVE_JOB)
    if not interactive:
        return "sbatch run.sh"
    program = {
        "jupyter": "jupyter lab --no-browser --ip=0.0.0.0 --port=8888",
        "code-server": "code-server --bind-addr 0.0.0.0:8080",
        "sleep": "sleep infinity",
    }[interactive]
    return f"srun --partition=interactive --gres=gpu:{per_node} --cpus-per-task={plan.cpu_count} --pty {program}"


def _job_row(plan: JobPlan) -> dict[str, str | int]:
    return {
        "job_id": plan.job_id,
        "user": plan.user,
        "team": plan.team,
        "gpu_count": plan.gpu_count,
        "start_time": _iso(plan.start),
        "end_time": _iso(plan.end),
        "name": plan.name,
        "cluster": plan.cluster,
        "gpu_model": plan.gpu.name,
        "node_count": plan.node_count,
        "cpu_count": plan.cpu_count,
        "state": plan.state,
        "job_type": plan.job_type,
        "queue": plan.queue,
        "command": _command(plan),
        "submit_time": _iso(plan.submit),
    }


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def _stage_members(plans: list[JobPlan], staging: Path) -> MetricRows:
    """Write every member under `staging`; returns what the metric rows written are."""
    staging.mkdir(parents=True)
    _write_text(staging / "manifest.json", json.dumps(_manifest(), indent=2) + "\n")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=JOBS_CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_job_row(plan) for plan in plans)
    _write_text(staging / "jobs.csv", buffer.getvalue())

    gpu_rows = host_rows = duplicates = 0
    with pq.ParquetWriter(staging / "metrics.parquet", METRICS_SCHEMA, compression="zstd") as metrics:
        for first in range(0, len(plans), JOBS_PER_ROW_GROUP):
            batch = plans[first : first + JOBS_PER_ROW_GROUP]
            series = []
            for plan in batch:
                series.append(_job_series(plan))
                _write_text(staging / "logs" / plan.job_id / "stdout.log", _job_log(plan))
                for name, text in _job_scripts(plan).items():
                    _write_text(staging / "scripts" / plan.job_id / name, text)
            table = _series_table(batch, series)
            metrics.write_table(table, row_group_size=table.num_rows)
            for job in series:
                gpu_rows += int((job.gpu >= 0).sum()) - job.duplicate_gpu_rows
                host_rows += int((job.gpu < 0).sum()) - job.duplicate_host_rows
                duplicates += job.duplicate_gpu_rows + job.duplicate_host_rows
    return MetricRows(gpu_samples=gpu_rows, host_rows=host_rows, duplicate_rows=duplicates)


def _member_names(staging: Path) -> list[str]:
    """manifest.json, jobs.csv and metrics.parquet first (what a streaming reader needs first), then the rest sorted."""
    first = ["manifest.json", "jobs.csv", "metrics.parquet"]
    rest = sorted(path.relative_to(staging).as_posix() for path in staging.rglob("*") if path.is_file())
    return first + [name for name in rest if name not in first]


def _pack(staging: Path, target: Path, suffix: str) -> None:
    """Pack the staged members with fixed timestamps, modes and order, so the bytes depend on content only."""
    names = _member_names(staging)
    mtime = int(FLEET_END.timestamp())
    if suffix == ".zip":
        with zipfile.ZipFile(target, "w") as archive:
            for name in names:
                source_path = staging / name
                info = zipfile.ZipInfo(name, date_time=FLEET_END.timetuple()[:6])
                info.create_system = 3  # Unix, so the mode bits below mean "regular file, 0644"
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                # Parquet is already zstd-compressed; deflating it again costs time and saves nothing.
                info.compress_type = zipfile.ZIP_STORED if name.endswith(".parquet") else zipfile.ZIP_DEFLATED
                large = source_path.stat().st_size > zipfile.ZIP64_LIMIT
                with open(source_path, "rb") as source, archive.open(info, "w", force_zip64=large) as member:
                    shutil.copyfileobj(source, member, 1 << 20)
        return
    with (
        open(target, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=mtime) as compressed,
        tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for name in names:
            source_path = staging / name
            info = tarfile.TarInfo(name)
            info.size = source_path.stat().st_size
            info.mtime = mtime
            info.mode = 0o644
            with open(source_path, "rb") as source:
                archive.addfile(info, source)


def _truth(plans: list[JobPlan], seed: int, archive_name: str) -> dict:
    return {
        "format": TRUTH_FORMAT,
        "version": 1,
        "seed": seed,
        "archive": archive_name,
        "jobs": [
            {
                "cluster": plan.cluster,
                "job_id": plan.job_id,
                "categories": [category.value for category in plan.categories],
                "notes": "; ".join(plan.notes) if plan.notes else "healthy",
                "defects": plan.defects,
            }
            for plan in plans
        ],
    }
