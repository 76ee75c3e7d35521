"""Job-dimension rules: interactive sessions, oversubscribed GPUs, unreleased allocations, non-DL work."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import pairwise

from fleet.logevents import TRAINING_FINISHED
from triage.evidence import Evidence, Span
from triage.rules.registry import Finding, register
from triage.taxonomy import Category

SESSION_WORDS = ("jupyter", "code-server", "sshd", "tmux", "sleep infinity")


@register(Category.INTERACTIVE_JOB)
def interactive_job(ev: Evidence, th: dict) -> list[Finding]:
    p = ev.phases
    idle_share = p.idle_share
    code = ev.scripts.of("shell_interactive") + [f for f in ev.scripts.of("shell_sleep") if "infinity" in f.text]
    declared = ev.interactive
    bursts = [b for b in p.bursts if b.seconds >= 60]
    if declared:
        if idle_share < th["interactive_min_idle_share"]:
            return []
        confidence = 0.9
    else:
        # Metric-only: several short bursts separated by long idle stretches, and no sign of a training loop.
        trained = bool(ev.logs.of("epoch")) or bool(ev.scripts.of("dataloader", "training_arguments"))
        if trained or len(bursts) < 3 or idle_share < 0.7:
            return []
        confidence = 0.45
    program = next((word for word in SESSION_WORDS if word in ev.job.command), None)
    if declared:
        # The session's program: in the command, else the one the job script starts; a batch job's type is no program.
        started = next((f.detail["argv"][0] for f in ev.scripts.of("shell_interactive") if f.detail.get("argv")), None)
        program = program or started or ("interactive" if ev.job.job_type == "interactive" else None)
        who = f"A session driven by a person ({program or 'interactive'})"
    else:
        # Guessed from the metrics alone: the job's type (batch) is no session program, so it is not named as one.
        kind = ev.job.job_type or "batch"
        who = f"Looks like a session driven by a person (a {kind} job that runs no session program)"
    # The waste is where the person left the GPUs idle, between the bursts: those stretches are the
    # finding's windows (shaded on the timeline) and its GPU-hours. A burst's own headroom is not
    # the session's doing.
    idle = [span for span in p.idle_stretches if span.seconds >= 60]
    idle_hours = sum(ev.unused(span.start, span.end) for span in idle)
    return [
        Finding(
            category=Category.INTERACTIVE_JOB,
            sub_cause=program.replace(" ", "_") if program else "session",
            confidence=confidence,
            summary=(
                f"{who}: GPUs idle {idle_share:.0%} of the covered time, with {len(bursts)} bursts of work; "
                "the windows are the idle stretches between them."
                + ("" if declared else " No log or code shows a training loop.")
            ),
            windows=idle[:50],
            code=code,
            numbers={"idle_share": round(idle_share, 3), "bursts": len(bursts), "job_type": ev.job.job_type},
            time_located=True,
            gpu_hours=idle_hours,
        )
    ]


@register(Category.GPU_OVERSUBSCRIPTION)
def gpu_oversubscription(ev: Evidence, th: dict) -> list[Finding]:
    p = ev.phases
    if ev.job.gpu_count < 2 or p.training is None or ev.interactive or len(p.device_mean_util) < 2:
        return []
    means = p.device_mean_util
    unused = [i for i, m in enumerate(means) if m < th["oversub_idle_util"]]
    used = [i for i, m in enumerate(means) if m >= th["oversub_idle_util"]]
    if not unused or not used:
        return []
    devices = ev.timeline.devices
    distributed = ev.scripts.of("ddp", "data_parallel", "init_process_group") + [
        f for f in ev.scripts.of("shell_launch") if f.detail.get("launcher") in ("torchrun", "deepspeed", "accelerate")
    ]
    fixed = ev.scripts.of("fixed_device")
    confidence = 0.85 if not distributed else 0.6
    if fixed:
        confidence = 0.95
    training_hours = p.training.seconds / 3600.0
    hours = sum((1.0 - means[i] / 100.0) * training_hours for i in unused)
    names = ", ".join(f"{host + ':' if host else ''}GPU {gpu}" for host, gpu in (devices[i] for i in unused[:8]))
    return [
        Finding(
            category=Category.GPU_OVERSUBSCRIPTION,
            sub_cause="unused_gpus" if not distributed else "uneven_use",
            confidence=confidence,
            summary=(
                f"{len(unused)} of {ev.job.gpu_count} GPUs stayed idle through training ({names}); "
                + (
                    "the code pins one device and has no DDP/launcher."
                    if fixed and not distributed
                    else "only some GPUs worked."
                )
            ),
            windows=[p.training],
            code=fixed + distributed,
            numbers={
                "idle_gpus": len(unused),
                "gpu_count": ev.job.gpu_count,
                "device_mean_util": [round(m, 1) for m in means],
            },
            time_located=True,
            gpu_hours=hours,
        )
    ]


def _long_enough(seconds: float, run: float, th: dict) -> bool:
    """An idle stretch at the end the unreleased-job rule counts: tail_min_s or tail_min_share of the run, never
    under tail_floor_s."""
    return (seconds >= th["tail_min_s"] or seconds >= th["tail_min_share"] * run) and seconds >= th["tail_floor_s"]


@dataclass(frozen=True)
class _Tail:
    silent: Span | None  # the idle tail's stretch without a log line: the allocation held after the work
    working: list[Span]  # the rest of the tail, while the log kept printing: work on the CPU
    printed: list[tuple[float, int, int]]  # the lines printed in the tail (time, file index, line)


def _tail(ev: Evidence, th: dict) -> _Tail | None:
    """The idle tail split by the log: a job that still prints while its GPUs idle (a COCO evaluation
    or sklearn metrics on the CPU after training) is working, not holding an unreleased allocation.

    Lines printed within `log_match_tolerance_s` (and a period) of the tail's start close the work
    (the last save, "training finished"); lines that say the job holds on are not work. The tail's
    longest stretch without a line is what the job held idle. None without an idle tail to judge.
    """
    if "_tail" in ev.__dict__:
        return ev.__dict__["_tail"]
    p = ev.phases
    found = None
    if p is not None and p.tail is not None and p.training is not None:
        tail = p.tail
        closing = tail.start + th["log_match_tolerance_s"] + ev.timeline.period
        printed = ev.logs.printed_between(closing, tail.end)
        if not printed:
            found = _Tail(tail, [], [])
        else:
            marks = [tail.start] + [t for t, _, _ in printed] + [tail.end]
            a, b = max(pairwise(marks), key=lambda pair: pair[1] - pair[0])
            # Only a silence as long as an unreleased tail is one (the lines after a silence in the middle
            # are most often the job's end); shorter ones are the work pausing between lines.
            run = max(p.series_end - p.series_start, 1.0)
            if _long_enough(b - a, run, th):
                working = [Span(x, y, "CPU work") for x, y in ((tail.start, a), (b, tail.end)) if y - x >= 60]
                found = _Tail(Span(a, b, "idle tail"), working, printed)
            else:
                found = _Tail(None, [Span(tail.start, tail.end, "CPU work")], printed)
    ev.__dict__["_tail"] = found
    return found


@register(Category.UNRELEASED_JOB)
def unreleased_job(ev: Evidence, th: dict) -> list[Finding]:
    p = ev.phases
    if p.tail is None or p.training is None or ev.interactive:
        return []
    tail = p.tail
    run = max(p.series_end - p.series_start, 1.0)
    if not _long_enough(tail.seconds, run, th):
        return []
    split = _tail(ev, th)
    idle = split.silent if split is not None else tail
    if idle is None or not _long_enough(idle.seconds, run, th):
        return []  # the log kept printing: work, not an allocation held idle
    finished = [e for e in ev.logs.of(TRAINING_FINISHED) if e.t is not None and e.t <= tail.start + ev.timeline.period]
    sleeps = [f for f in ev.scripts.of("shell_sleep") if f.detail.get("after_launch")]
    loops = list(ev.logs.hold_lines)
    confidence = 0.75 + 0.1 * bool(finished) + 0.1 * bool(sleeps or loops)
    # Lines printed without a time (pycocotools' print()s) between stamped lines around the silence: the log's
    # order says only that each was printed between those two times, not when, so they may be the work that
    # filled the silence (an evaluation stamped at its start and end) or all printed at its start. Said, and
    # the finding is less sure; their times are never guessed.
    untimed = ev.logs.untimed_between(idle.start, idle.end)
    unsure = sum(run[3] for run in untimed)
    if unsure:
        confidence = min(confidence, 0.5)
    sub = "trailing_sleep" if sleeps else ("idle_process" if loops else "idle_tail")
    if idle is tail:
        summary = (
            f"Every GPU idled for the last {tail.seconds / 60:.0f} min of the run "
            f"({tail.seconds / run:.0%}) after the work was done."
        )
    else:
        summary = (
            f"Every GPU idled for the last {tail.seconds / 60:.0f} min of the run ({tail.seconds / run:.0%}); "
            f"the log printed {len(split.printed)} line{'s' if len(split.printed) > 1 else ''} in it, then "
            f"{'no line with a time' if unsure else 'nothing'} for {idle.seconds / 60:.0f} min "
            f"({idle.seconds / run:.0%}) while the allocation was held."
        )
    if unsure:
        earliest, latest = min(run[4] for run in untimed), max(run[5] for run in untimed)
        summary += (
            f" Yet {unsure} line{'s' if unsure > 1 else ''} without a time sit between stamped lines around that "
            f"stretch (printed between {_clock(earliest)} and {_clock(latest)} UTC): a log's order bounds them by "
            "those lines, not when they were printed, so part of the stretch may have been work such as an "
            "evaluation that prints no times."
        )
    quoted = [ev.logs.quoted(index, line, t) for t, index, line in split.printed[-1:]] if idle is not tail else []
    quoted += [
        replace(ev.logs.quoted(index, first, before), estimated=True, t_next=after)
        for index, first, _, _, before, after in untimed[:1]
    ]
    return [
        Finding(
            category=Category.UNRELEASED_JOB,
            sub_cause=sub,
            confidence=confidence,
            summary=summary,
            windows=[Span(idle.start, idle.end, "idle tail")],
            log_lines=finished[-1:] + quoted + loops[:2],
            code=sleeps,
            numbers={
                "tail_minutes": round(idle.seconds / 60, 1),
                "tail_share": round(idle.seconds / run, 3),
                **({"untimed_lines": unsure} if unsure else {}),
            },
            time_located=True,
            gpu_hours=ev.unused(idle.start, idle.end),
        )
    ]


@register(Category.NON_DL_JOB)
def non_dl_job(ev: Evidence, th: dict) -> list[Finding]:
    p = ev.phases
    if ev.interactive:
        return []
    mean = ev.job.mean_gpu_util
    per_time_max = max(p.device_mean_util) if p.device_mean_util else 0.0
    if mean is None:
        mean = per_time_max
    if mean > th["non_dl_max_util"]:
        return _cpu_work_after_training(ev, th)
    if p.peak_mem_share is not None and p.peak_mem_share * 100 > th["non_dl_max_mem"]:
        return _cpu_work_after_training(ev, th)
    imports = ev.scripts.of("framework_import")
    if imports:
        return _cpu_work_after_training(ev, th)
    confidence = 0.5
    if ev.scripts.python_files:
        confidence += 0.3  # code was there and imports no deep-learning framework
    if p.peak_mem_share is not None:
        confidence += 0.1
    cpu = p.cpu_training
    cpu_all = _median_cpu(ev)
    if cpu_all is not None and cpu_all >= 30:
        confidence += 0.1
    return [
        Finding(
            category=Category.NON_DL_JOB,
            sub_cause="no_framework" if ev.scripts.python_files else "gpu_unused",
            confidence=confidence,
            summary=(
                f"GPU util {mean:.1f} % and GPU memory "
                f"{'unused' if p.peak_mem_share is not None else 'unknown'} for the whole run"
                + (f" while the CPUs worked (median {cpu_all:.0f} %)" if cpu_all is not None else "")
                + ("; the code imports no deep-learning framework." if ev.scripts.python_files else ".")
            ),
            windows=[Span(p.series_start, p.series_end, "whole run")],
            code=ev.scripts.of("shell_launch")[:3],
            numbers={"mean_util": round(mean, 2), "cpu_util": cpu if cpu is None else round(cpu, 1)},
            time_located=True,
            gpu_hours=ev.unused(p.series_start, p.series_end),
        )
    ]


def _cpu_work_after_training(ev: Evidence, th: dict) -> list[Finding]:
    """Non-GPU work inside a GPU job: after the GPU work, every GPU idles while the log keeps printing (a
    COCO evaluation, sklearn metrics, an export on the CPU) for as long as an unreleased tail would last."""
    p = ev.phases
    split = _tail(ev, th)
    if split is None or not split.working:
        return []
    run = max(p.series_end - p.series_start, 1.0)
    seconds = sum(span.seconds for span in split.working)
    if not _long_enough(seconds, run, th):
        return []
    first, last = split.printed[0], split.printed[-1]
    lines = [ev.logs.quoted(index, line, t) for t, index, line in ([first, last] if first != last else [first])]
    cpu = _cpu_between(ev, split.working)
    return [
        Finding(
            category=Category.NON_DL_JOB,
            sub_cause="cpu_work_after_training",
            confidence=0.6,
            summary=(
                f"Every GPU idled for {seconds / 60:.0f} min after the GPU work ({seconds / run:.0%} of the run) "
                f"while the log kept printing ({len(split.printed)} lines"
                + (f"; CPU {cpu:.0f} % of the allocation" if cpu is not None else "")
                + "): work on the CPU, such as a final evaluation or metrics, on a GPU allocation."
            ),
            windows=split.working,
            log_lines=lines,
            numbers={
                "cpu_minutes": round(seconds / 60, 1),
                "cpu_share": round(seconds / run, 3),
                "lines_printed": len(split.printed),
                "cpu_util": None if cpu is None else round(cpu, 1),
            },
            time_located=True,
            gpu_hours=sum(ev.unused(span.start, span.end) for span in split.working),
        )
    ]


def _clock(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%H:%M")


def _cpu_between(ev: Evidence, spans: list[Span]) -> float | None:
    import numpy as np

    values = ev.timeline.host.get("cpu_util") if ev.timeline else None
    if values is None:
        return None
    rows = np.zeros(len(values), dtype=bool)
    for span in spans:
        rows |= ev.timeline.mask(span.start, span.end)
    chosen = values[rows] if values.ndim == 1 else values[rows].ravel()
    finite = chosen[np.isfinite(chosen)]
    return float(np.mean(finite)) if finite.size else None


def _median_cpu(ev: Evidence) -> float | None:
    import numpy as np

    values = ev.timeline.host.get("cpu_util") if ev.timeline else None
    if values is None:
        return None
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else None
