"""Evidence for one job: metadata, series phases, log events, script facts and trace facts.

Pure code (no Django): `build_evidence` takes plain data in and hands an `Evidence` back; the
Django layer (`triage.services`) loads it from the database and storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pandas as pd

from fleet.canonical import as_utc
from triage.evidence.logs import LogEvidence, LogLine, extract_log_evidence
from triage.evidence.scripts import (
    CodeFact,
    ScriptEvidence,
    apply_step_tasks,
    command_code_facts,
    command_facts,
    extract_script_evidence,
    settle_launch_configs,
)
from triage.evidence.timeline import (
    Phases,
    Span,
    StoredSeries,
    Timeline,
    build_timeline,
    find_phases,
    read_series,
    unused_gpu_hours,
)
from triage.evidence.traces import TraceFacts, trace_facts

__all__ = [
    "CodeFact",
    "Evidence",
    "JobInfo",
    "LogLine",
    "Span",
    "StoredSeries",
    "build_evidence",
    "iso",
    "read_series",
]


@dataclass(frozen=True)
class JobInfo:
    """What the scheduler says about the job (canonical fields, no ORM)."""

    start: datetime
    end: datetime
    gpu_count: int
    node_count: int = 1
    cpu_count: int | None = None
    job_type: str = "batch"
    command: str = ""
    state: str = ""
    coverage: float | None = None  # from ingest; recomputed here when None
    mean_gpu_util: float | None = None
    peak_gpu_mem_util: float | None = None
    unused_gpu_hours: float | None = None
    gpu_hours: float = 0.0
    # The share of a physical GPU each device is (a MIG slice, a time-sliced replica): GPU-hours count it.
    gpu_share: float = 1.0
    # (id, program name, tasks) of each step the scheduler ran the job's programs in (the job's `steps` label,
    # `fleet.canonical.step_tasks`; Slurm's sacct steps): the processes an srun launch started (`apply_step_tasks`).
    step_tasks: tuple[tuple[str, str, int], ...] = ()

    @property
    def start_s(self) -> float:
        return _epoch(self.start)

    @property
    def end_s(self) -> float:
        return _epoch(self.end)

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_s - self.start_s)

    @property
    def running(self) -> bool:
        return self.state.upper() in ("RUNNING", "PENDING", "CONFIGURING", "COMPLETING")


@dataclass
class Evidence:
    job: JobInfo
    timeline: Timeline | None
    phases: Phases | None
    logs: LogEvidence
    scripts: ScriptEvidence
    traces: list[TraceFacts]
    command_kinds: list[str]
    thresholds: dict
    notes: list[str] = field(default_factory=list)

    # --- conveniences for rules ---
    @property
    def metrics(self) -> tuple[str, ...]:
        return self.timeline.metrics if self.timeline else ()

    @property
    def has_memory(self) -> bool:
        return self.phases is not None and self.phases.peak_mem_share is not None

    @property
    def interactive(self) -> bool:
        """Driven by a person: an interactive job type, or a session program as the job's command."""
        if self.job.job_type == "interactive":
            return True
        if "interactive" in self.command_kinds:
            return True
        if "sleep infinity" in self.job.command:
            return True
        return bool(self.scripts.of("shell_interactive"))

    def unused(self, start: float, end: float) -> float:
        if self.timeline is None:
            return 0.0
        return unused_gpu_hours(self.timeline, start, end, self.job.gpu_count) * self.job.gpu_share

    def allocated_hours(self, start: float, end: float) -> float:
        return max(0.0, end - start) / 3600.0 * self.job.gpu_count * self.job.gpu_share

    def summary(self) -> dict:
        """The evidence a person can check, as JSON (stored with the job's triage result)."""
        p = self.phases
        data = {
            "metrics": list(self.metrics),
            "sampling_period_s": round(self.timeline.period, 1) if self.timeline else None,
            "log_files": self.logs.files,
            "log_events": len(self.logs.events),
            "log_lines_with_timestamps": self.logs.timestamped_lines,
            "python_files": self.scripts.python_files,
            "shell_files": self.scripts.shell_files,
            "config_files": self.scripts.config_files,
            "frameworks": sorted(self.scripts.frameworks),
            "traces": [trace.as_dict() for trace in self.traces],
            "notes": self.notes,
        }
        if p is not None:
            data["phases"] = [span_dict(span) for span in (p.head, p.training, p.tail) if span is not None]
            data["training_mean_util"] = _round(p.training_mean_util)
            data["peak_gpu_mem_share"] = _round(p.peak_mem_share, 3)
            data["idle_gaps"] = [span_dict(s) for s in p.idle_gaps[:50]]
            data["holes"] = [span_dict(s) for s in p.holes[:50]]
            data["device_mean_util"] = [_round(v) for v in p.device_mean_util]
            data["cpu_util_training"] = _round(p.cpu_training)
        return data


def build_evidence(
    job: JobInfo,
    frame: pd.DataFrame | StoredSeries | None,
    *,
    logs: list[tuple[str, str]] = (),
    scripts: list[tuple[str, str]] = (),
    traces: list[tuple[str, bytes]] = (),
    thresholds: dict,
) -> Evidence:
    timeline = build_timeline(frame, start_s=job.start_s, end_s=job.end_s)
    phases = None
    if timeline is not None and timeline.n:
        phases = find_phases(
            timeline,
            idle_util=thresholds["idle_util"],
            gap_rel=thresholds["gap_relative_util"],
            gap_min_s=thresholds["gap_min_s"],
            dip_rel=thresholds["exchange_dip_relative_util"],
        )
    facts = [f for path, content in traces if (f := trace_facts(path, content)) is not None]
    script_evidence = extract_script_evidence(list(scripts), command=job.command)
    if job.command:  # the flags the job was submitted with (--bf16, --deepspeed ds.json) are facts like its scripts'
        script_evidence.facts.extend(command_code_facts(job.command))
        settle_launch_configs(script_evidence.facts)  # `accelerate launch --config_file acc.yaml`: the job's file's
    if job.step_tasks:  # the tasks its srun launches started, as the scheduler counted them
        apply_step_tasks(script_evidence.facts, job.step_tasks)
    return Evidence(
        job=job,
        timeline=timeline,
        phases=phases,
        logs=extract_log_evidence(list(logs), as_utc(job.start)),
        scripts=script_evidence,
        traces=facts,
        command_kinds=command_facts(job.command) if job.command else [],
        thresholds=thresholds,
        notes=list(script_evidence.notes),  # a script whose commands were not read (a tcsh one) says so
    )


def iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def span_dict(span: Span) -> dict:
    out = {"start": iso(span.start), "end": iso(span.end), "minutes": round(span.seconds / 60, 1), "label": span.label}
    if span.mean_util is not None:
        out["mean_util"] = round(span.mean_util, 1)
    return out


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def _epoch(moment: datetime) -> float:
    return as_utc(moment).timestamp()
