"""The one registry of triage rules, their findings, and the default thresholds. Pure Python.

A rule is a small function `rule(evidence, thresholds) -> list[Finding]` for one category,
registered with `@register(Category.X)`. `triage(evidence)` decides the job's status, runs every
rule when the job is a low-utilization one, and shares the job's unused GPU-hours among the
findings: time-located findings (a checkpoint gap, an install phase, an idle tail) keep the
GPU-hours of their windows; whole-run causes (batch size, loader, ...) share what is left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fleet.numbers import share_text
from triage.evidence import CodeFact, Evidence, LogLine, Span, span_dict
from triage.taxonomy import Category

# name: (default, unit, what it controls). Operators edit these per rule-set version.
THRESHOLDS: dict[str, tuple[float, str, str]] = {
    "low_util_threshold": (
        50.0,
        "%",
        "Jobs with mean GPU util at or below this are triaged; above it they are healthy.",
    ),
    "idle_util": (
        5.0,
        "%",
        "A GPU below this utilization is idle, in the rules' findings (a job's Idle GPU-hours figure is "
        "computed when it is imported, by the IDLE_UTIL_THRESHOLD setting).",
    ),
    "min_coverage": (0.8, "share", "Below this share of the run covered by samples a job is 'insufficient data'."),
    "min_samples": (5, "samples", "Fewer GPU samples than this is 'insufficient data'."),
    "gap_relative_util": (0.3, "x median", "Inside training, a stall is every GPU below this times the usual peak."),
    "gap_min_s": (60.0, "s", "Shortest stall counted as an idle gap (also needs two samples)."),
    "log_match_tolerance_s": (90.0, "s", "How far before a gap a log line may be and still explain it."),
    "batch_util_max": (50.0, "%", "Improper batch size: training-phase mean util at or below this ..."),
    "batch_mem_max": (50.0, "%", "... and peak GPU memory at or below this (paper's condition)."),
    "small_batch_size": (8, "samples", "Without memory metrics: a per-GPU batch size at or below this is small."),
    "memory_util_max": (50.0, "%", "GPU memory bound: training-phase mean util at or below this ..."),
    "memory_mem_min": (80.0, "%", "... and peak GPU memory above this (paper's condition)."),
    "checkpoint_min_gaps": (2, "gaps", "Model checkpointing: at least this many idle gaps that start with a save."),
    "periodic_max_cv": (
        0.35,
        "ratio",
        "Without logs: gap spacing this regular (coefficient of variation) is periodic.",
    ),
    "periodic_min_gaps": (3, "gaps", "Without logs: at least this many regular gaps."),
    "upload_min_gaps": (1, "gaps", "Intermediate upload: at least this many idle gaps that start with an upload."),
    "remote_min_stalls": (2, "gaps", "Remote data reading: at least this many stalls at remote reads."),
    "install_min_s": (600.0, "s", "Lengthy installation: installing took at least this long (paper: 10 min)."),
    "download_min_s": (300.0, "s", "External data: fetching before training took at least this long."),
    "tail_min_s": (1800.0, "s", "Unreleased job: idle tail at least this long ..."),
    "tail_min_share": (0.10, "share", "... or at least this share of the run ..."),
    "tail_floor_s": (600.0, "s", "... but never shorter than this."),
    "tail_cpu_busy_cores": (
        0.5,
        "cores",
        "Unreleased job: in an idle tail's stretch without a stamped log line, the CPUs worked where every sample "
        "for tail_floor_s had at least this many cores busy (CPU % x the job's CPUs, when known) ...",
    ),
    "tail_cpu_busy_share": (
        2.0,
        "%",
        "... and at least this % of the allocation (an idle node's own housekeeping is about 1 %).",
    ),
    "tail_cpu_idle_cores": (
        0.1,
        "cores",
        "Unreleased job: where lines printed without a time sit around the stretch, at most this many cores busy on "
        "average after its work (CPU % x the job's CPUs, when known) ...",
    ),
    "tail_cpu_idle_share": (
        1.5,
        "%",
        "... or at most this % of the allocation, whichever is more, is the allocation held idle; more is unsure.",
    ),
    "oversub_idle_util": (5.0, "%", "GPU oversubscription: a GPU whose training-phase mean is below this is unused."),
    "exchange_dip_relative_util": (
        0.5,
        "x median",
        "Data exchange: a dip is every busy GPU below this times its median.",
    ),
    "exchange_min_dip_share": (
        0.08,
        "share",
        "Data exchange: aligned dips in at least this share of training samples.",
    ),
    "cpu_saturated": (85.0, "%", "Data preprocessing: CPU use of the allocation at or above this during training."),
    "loader_min_workers": (4, "workers", "Data preprocessing: fewer DataLoader workers than this is few."),
    "interactive_min_idle_share": (0.5, "share", "Interactive job: idle share of the session at least this."),
    "non_dl_max_util": (2.0, "%", "Non-DL job: mean GPU util at most this ..."),
    "non_dl_max_mem": (5.0, "%", "... and peak GPU memory at most this."),
    "pageable_min_share": (
        0.05,
        "share",
        "Trace: pageable host-to-device copies take at least this share of step time.",
    ),
    "host_wait_min_share": (0.5, "share", "Trace: host-wait at least this share of GPU idle time (input-bound)."),
}


def default_thresholds() -> dict[str, float]:
    return {name: value for name, (value, _, _) in THRESHOLDS.items()}


class Status:
    HEALTHY = "healthy"
    CLASSIFIED = "classified"
    UNCLASSIFIED = "unclassified"
    INSUFFICIENT_DATA = "insufficient_data"


@dataclass
class Finding:
    category: Category
    sub_cause: str
    confidence: float
    summary: str
    windows: list[Span] = field(default_factory=list)
    log_lines: list[LogLine] = field(default_factory=list)
    code: list[CodeFact] = field(default_factory=list)
    numbers: dict = field(default_factory=dict)
    time_located: bool = False
    gpu_hours: float = 0.0

    def evidence(self) -> dict:
        return {
            "windows": [span_dict(w) for w in self.windows[:100]],
            "log_lines": [line.as_dict() for line in self.log_lines[:50]],
            "code": [fact.as_dict() for fact in self.code[:30]],
            "numbers": self.numbers,
        }


@dataclass
class TriageResult:
    status: str
    reason: str
    findings: list[Finding]
    mean_util: float | None
    coverage: float | None
    unused_gpu_hours: float | None


Rule = Callable[[Evidence, dict], list[Finding]]
RULES: dict[Category, Rule] = {}


def register(category: Category) -> Callable[[Rule], Rule]:
    def decorator(function: Rule) -> Rule:
        if category in RULES:
            raise ValueError(f"a rule for {category} is already registered")
        function.category = category
        RULES[category] = function
        return function

    return decorator


def _coverage(ev: Evidence) -> float | None:
    tl = ev.timeline
    if tl is None:
        return 0.0
    if ev.job.running:
        # A running job is judged on what has happened so far.
        end = min(ev.job.end_s, tl.end)
        allocated = max(end - ev.job.start_s, 1e-9)
    else:
        allocated = max(ev.job.duration_s, 1e-9)
    devices = max(ev.job.gpu_count, 1)
    covered = float((tl.dt[:, None] * ~np.isnan(tl.util)).sum())
    return min(1.0, covered / (allocated * devices))


def triage(ev: Evidence) -> TriageResult:
    th = ev.thresholds
    tl, phases = ev.timeline, ev.phases
    if tl is None or phases is None:
        return TriageResult(Status.INSUFFICIENT_DATA, "no GPU utilization samples", [], None, 0.0, None)
    coverage = _coverage(ev)
    if ev.job.coverage is not None and not ev.job.running:
        coverage = min(coverage, ev.job.coverage) if coverage is not None else ev.job.coverage
    util_mean = ev.job.mean_gpu_util
    if util_mean is None or ev.job.running:
        per_time = np.nanmean(tl.util, axis=1)
        util_mean = float((per_time * tl.dt).sum() / tl.dt.sum()) if tl.dt.sum() > 0 else float(per_time.mean())
    unused = ev.unused(ev.job.start_s, ev.job.end_s)
    samples = int((~np.isnan(tl.util)).sum(axis=0).min()) if tl.util.size else 0
    if samples < th["min_samples"]:
        return TriageResult(
            Status.INSUFFICIENT_DATA, f"only {samples} samples per GPU", [], util_mean, coverage, unused
        )
    if coverage is not None and coverage < th["min_coverage"]:
        return TriageResult(
            Status.INSUFFICIENT_DATA,
            f"samples cover {share_text(coverage)} of the run (< {share_text(th['min_coverage'])}); "
            "missing data is not idleness",
            [],
            util_mean,
            coverage,
            unused,
        )
    if util_mean > th["low_util_threshold"]:
        return TriageResult(
            Status.HEALTHY, f"mean GPU util {share_text(util_mean / 100)}", [], util_mean, coverage, unused
        )

    findings: list[Finding] = []
    for category, rule in RULES.items():
        for finding in rule(ev, th):
            finding.category = category
            finding.confidence = round(min(1.0, max(0.0, finding.confidence)), 2)
            findings.append(finding)
    _attribute(findings, unused)
    status = Status.CLASSIFIED if findings else Status.UNCLASSIFIED
    reason = f"mean GPU util {share_text(util_mean / 100)}"
    return TriageResult(status, reason, findings, util_mean, coverage, unused)


def _attribute(findings: list[Finding], unused: float) -> None:
    located = sum(f.gpu_hours for f in findings if f.time_located)
    if located > unused > 0:  # windows of several findings may overlap; never claim more than was unused
        scale = unused / located
        for finding in findings:
            if finding.time_located:
                finding.gpu_hours *= scale
        located = unused
    whole_run = [f for f in findings if not f.time_located]
    remaining = max(0.0, unused - located)
    weight = sum(f.confidence for f in whole_run)
    for finding in whole_run:
        finding.gpu_hours = remaining * finding.confidence / weight if weight else 0.0
    for finding in findings:
        finding.gpu_hours = round(finding.gpu_hours, 4)
