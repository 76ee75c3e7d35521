"""Job-dimension rules: interactive sessions, oversubscribed GPUs, unreleased allocations, non-DL work."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import pairwise

from fleet.logevents import TRAINING_FINISHED
from fleet.numbers import share_text
from fleet.series import device_name
from triage.evidence import Evidence, Span
from triage.evidence.logs import UntimedRun
from triage.evidence.scripts import bound_gpus
from triage.rules.common import distributed_launches, launch_config_lines, srun_python_launches, srun_task_lines
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
                f"{who}: GPUs idle {share_text(idle_share)} of the covered time, with {len(bursts)} bursts of work; "
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
    distributed = ev.scripts.of("ddp", "data_parallel", "init_process_group") + distributed_launches(ev)
    fixed = ev.scripts.of("fixed_device")
    # A python in several srun tasks: Slurm starts a process a task, which must pick its GPU from SLURM_LOCALID.
    srun = srun_python_launches(ev)
    srun_tasks = {"srun_tasks": max(f.detail["processes"] for f in srun)} if srun else {}
    bindings = {f.detail.get("gpu_binding") for f in srun}
    if srun and None not in bindings:
        # ... unless Slurm binds each task its own GPU (`--gpus-per-task=1`): each sees it as cuda:0, so the tasks do
        # not share one, a pinned cuda:0 is each task's own, and SLURM_LOCALID would name a GPU it cannot see.
        srun_tasks["gpu_binding"] = min(bindings)
        fixed = []
        # tasks that hold fewer GPUs than the job has leave the rest bound to no task: nothing can run there
        held = bound_gpus(srun_tasks["gpu_binding"], srun_tasks["srun_tasks"])
        if held is not None and held < ev.job.gpu_count:
            srun_tasks["bound_gpus"] = held
    confidence = 0.85 if not distributed else 0.6
    if fixed:
        confidence = 0.95
    training_hours = p.training.seconds / 3600.0
    hours = sum((1.0 - means[i] / 100.0) * training_hours for i in unused) * ev.job.gpu_share
    names = ", ".join(
        f"{host + ':' if host else ''}{device_name(gpu)}" for host, gpu in (devices[i] for i in unused[:8])
    )
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
            # the #SBATCH lines that gave srun its tasks, the Accelerate config that gave a launch its processes
            code=fixed + srun_task_lines(ev, srun) + launch_config_lines(ev, distributed) + distributed,
            numbers={
                "idle_gpus": len(unused),
                "gpu_count": ev.job.gpu_count,
                "device_mean_util": [round(m, 1) for m in means],
                **srun_tasks,
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
    quiet: _Quiet | None = None  # what the stretch without stamped lines held, when lines without a time sat in it
    cpu_until: float | None = None  # with no such lines: where the CPUs' sustained work in the silent stretch ended


@dataclass(frozen=True)
class _Quiet:
    """The tail's stretch without stamped lines, judged when lines printed without a time sit around it (pycocotools'
    print()s): their position bounds them by the stamped lines around them, never when, so what they were is read
    from the durations they print of their own work and from the CPU's use in the stretch."""

    start: float
    end: float
    untimed: list[UntimedRun]
    lines: int  # lines without a time in those runs
    timed_s: float  # their own timings' work that must fall inside the stretch (a lower bound)
    busy_until: float | None  # the end of the last sample with the CPUs at work in the stretch
    cores: float | None  # the CPU cores busy on average where it is judged held (None without CPU metrics)
    cpus: int | None
    verdict: str  # "work": the whole stretch was work; "idle": the CPUs idled in what is held; "unsure"

    @property
    def work_end(self) -> float:
        """Where the work in the stretch ends at the latest that its timings and CPU show (at its start: none)."""
        return max(self.start + self.timed_s, self.busy_until or self.start)


def _quiet(ev: Evidence, th: dict, start: float, end: float, run: float) -> _Quiet | None:
    """The stretch [start, end] without stamped lines, judged by the lines printed without a time around it: None
    when there are none. pycocotools times its steps ("DONE (t=4790.12s).") between the lines around them, so
    their sum is work that lasted at least that long, placed from the stretch's start (where an evaluation after
    training begins); the CPU's samples say when the CPUs' sustained work ended (`_cpu_work_until`, the same test
    as a stretch without such lines) and whether they idled after (on average at most `_cpu_idle_level`). Work that
    leaves less than an unreleased tail is the whole stretch's."""
    import numpy as np

    untimed = ev.logs.untimed_between(start, end)
    if not untimed:
        return None
    timed = sum(max(0.0, r.timed_s - max(0.0, start - r.before) - max(0.0, r.after - end)) for r in untimed)
    timed = min(timed, end - start)
    busy_until = _cpu_work_until(ev, th, start, end)
    cores = None
    cpus = ev.job.cpu_count
    values = ev.timeline.host.get("cpu_util") if ev.timeline else None
    if values is not None:
        after = max(start + timed, busy_until or start)
        rest = ev.timeline.mask(after, end) & np.isfinite(values)
        if rest.any():
            cores = float(np.mean(values[rest])) / 100.0 * (cpus or 1)
    judged = _Quiet(start, end, untimed, sum(r.count for r in untimed), timed, busy_until, cores, cpus, "unsure")
    if not _long_enough(end - judged.work_end, run, th):
        return replace(judged, verdict="work")
    if cores is not None and cores / (cpus or 1) * 100.0 <= _cpu_idle_level(ev, th):
        return replace(judged, verdict="idle")
    return judged


def _cpu_idle_level(ev: Evidence, th: dict) -> float:
    """The CPU % of the allocation at or under which its CPUs idled, on average, in what an idle tail holds: at most
    `tail_cpu_idle_cores` cores (CPU % x the job's CPUs, when known) or `tail_cpu_idle_share` % of the allocation,
    whichever is more, as `_cpu_busy_level` scales its level. An idle node's housekeeping keeps about 1 % of its CPUs
    busy: 4 nodes of 96 CPUs idle are 3.8 cores busy, far over a tenth of a core."""
    cpus = ev.job.cpu_count
    level = th["tail_cpu_idle_share"]
    if cpus:
        level = max(level, th["tail_cpu_idle_cores"] / cpus * 100.0)
    return level


def _cpu_busy_level(ev: Evidence, th: dict) -> float:
    """The CPU % of the allocation at which its CPUs count as working in an idle tail: at least
    `tail_cpu_busy_cores` cores (CPU % x the job's CPUs, when known) and at least `tail_cpu_busy_share` % of the
    allocation. An idle node's housekeeping (kernel, exporters, agents) keeps about 1 % of its CPUs busy, so on a
    large allocation half a core is inside it: 0.5 cores of 384 CPUs is 0.13 %."""
    cpus = ev.job.cpu_count
    level = th["tail_cpu_busy_share"]
    if cpus:
        level = max(level, th["tail_cpu_busy_cores"] / cpus * 100.0)
    return level


def _cpu_work_until(ev: Evidence, th: dict, start: float, end: float) -> float | None:
    """Where the CPUs' sustained work in [start, end] ended: the end of the last `tail_floor_s` window (samples
    without a hole between them) in which every sample was at the busy level (`_cpu_busy_level`). None without CPU
    samples or without such a window. A window, not a sample: one sample over the line is noise or a monitoring
    agent. The one test of CPU work in an idle tail, whether or not lines printed without a time sit in it."""
    import numpy as np

    values = ev.timeline.host.get("cpu_util") if ev.timeline else None
    if values is None:
        return None
    rows = np.flatnonzero(ev.timeline.mask(start, end) & np.isfinite(values))
    if not rows.size:
        return None
    times, finish = ev.timeline.t[rows], ev.timeline.t[rows] + ev.timeline.dt[rows]
    busy = values[rows] >= _cpu_busy_level(ev, th)
    # A run of busy samples starts at a busy sample after an idle one, a hole or another row of the grid.
    broken = np.ones(rows.size, dtype=bool)
    broken[1:] = ~busy[:-1] | ev.timeline.hole_after[rows[:-1]] | (np.diff(rows) > 1)
    first = np.maximum.accumulate(np.where(busy & broken, np.arange(rows.size), -1))
    lasting = busy & (first >= 0) & (finish - times[np.maximum(first, 0)] >= th["tail_floor_s"])
    if not lasting.any():
        return None
    return min(float(finish[np.flatnonzero(lasting)[-1]]), end)


def _tail(ev: Evidence, th: dict) -> _Tail | None:
    """The idle tail split by the log: a job that still prints while its GPUs idle (a COCO evaluation
    or sklearn metrics on the CPU after training) is working, not holding an unreleased allocation.

    Lines printed within `log_match_tolerance_s` (and a period) of the tail's start close the work
    (the last save, "training finished"); lines that say the job holds on are not work. The tail's
    longest stretch without a line is what the job held idle, less the work that lines printed without a
    time in it show (`_quiet`). None without an idle tail to judge.
    """
    if "_tail" in ev.__dict__:
        return ev.__dict__["_tail"]
    p = ev.phases
    found = None
    if p is not None and p.tail is not None and p.training is not None:
        tail = p.tail
        run = max(p.series_end - p.series_start, 1.0)
        closing = tail.start + th["log_match_tolerance_s"] + ev.timeline.period
        printed = ev.logs.printed_between(closing, tail.end)
        if not printed:
            a, b = tail.start, tail.end
        else:
            marks = [tail.start] + [t for t, _, _ in printed] + [tail.end]
            a, b = max(pairwise(marks), key=lambda pair: pair[1] - pair[0])
        # Only a silence as long as an unreleased tail is one (the lines after a silence in the middle
        # are most often the job's end); shorter ones are the work pausing between lines.
        if printed and not _long_enough(b - a, run, th):
            found = _Tail(None, [Span(tail.start, tail.end, "CPU work")], printed)
        else:
            quiet = _quiet(ev, th, a, b, run)
            held = a if quiet is None else quiet.work_end
            cpu_until = _cpu_work_until(ev, th, a, b) if quiet is None else None
            if cpu_until is not None:
                held = cpu_until if _long_enough(b - cpu_until, run, th) else b
            if quiet is not None and quiet.verdict == "work":
                held = b
            pieces = [(tail.start, tail.end)] if held >= b else [(tail.start, held), (b, tail.end)]
            working = [Span(x, y, "CPU work") for x, y in pieces if y - x >= 60]
            silent = Span(held, b, "idle tail") if b > held else None
            if quiet is None and not printed and cpu_until is None:
                silent, working = tail, []
            found = _Tail(silent, working, printed, quiet, cpu_until)
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
    quiet = split.quiet if split is not None else None
    # Lines printed without a time (pycocotools' print()s) around the silence: the log's order says only that each
    # was printed between the stamped lines around it, not when, so they may be work that filled the silence. Their
    # own timings and the CPU's use are read (`_quiet`); when the CPUs idled in what is held, it was held idle, else
    # the finding says it cannot tell and is less sure. Their times are never guessed.
    unsure = quiet is not None and quiet.verdict == "unsure"
    if unsure:
        confidence = min(confidence, 0.5)
    sub = "trailing_sleep" if sleeps else ("idle_process" if loops else "idle_tail")
    # Each share says what it is of ("36 % of the run"): a bare "(36 %)" left the reader to guess.
    minutes = f"{idle.seconds / 60:.0f} min ({share_text(idle.seconds / run)} of the run)"
    of_run = f"the last {tail.seconds / 60:.0f} min of the run ({share_text(tail.seconds / run)} of its length)"
    if idle is tail:
        summary = f"Every GPU idled for {of_run} after the work was done."
    elif quiet is None and split.cpu_until is not None:
        summary = (
            f"Every GPU idled for {of_run}; "
            + (f"the log printed {_lines(len(split.printed))} with a time in it and " if split.printed else "")
            + f"the CPUs kept working ({_busy_words(ev, th)} for {th['tail_floor_s'] / 60:g} min or more) until "
            f"{_clock(split.cpu_until)} UTC, then nothing for {minutes} while the allocation was held."
        )
    elif quiet is None:
        summary = (
            f"Every GPU idled for {of_run}; "
            f"the log printed {_lines(len(split.printed))} in it, then nothing for {minutes} "
            "while the allocation was held."
        )
    else:
        summary = f"Every GPU idled for {of_run}"
        if split.printed:
            summary += f"; the log printed {_lines(len(split.printed))} with a time in it"
        summary += "." + _quiet_words(quiet, idle, minutes)
    quoted = []
    if idle is not tail:
        # The last stamped line before the silence (what the job was doing when it went quiet) and, when the log
        # spoke again inside the tail, the first one after it.
        before = ev.logs.printed_between(float("-inf"), idle.start)[-1:]
        after = ev.logs.printed_between(idle.end, tail.end)[:1] if idle.end < tail.end else []
        said = {(e.path, e.line_no) for e in finished[-1:]}
        quoted = [ev.logs.quoted(index, line, t) for t, index, line in before]
        if quiet is not None:
            quoted += _untimed_quotes(ev, quiet)
        quoted += [ev.logs.quoted(index, line, t) for t, index, line in after if (t, index, line) not in before]
        quoted = [q for q in quoted if (q.path, q.line_no) not in said]
    elif quiet is not None:
        quoted = _untimed_quotes(ev, quiet)
    numbers = {"tail_minutes": round(idle.seconds / 60, 1), "tail_share": round(idle.seconds / run, 3)}
    if quiet is not None:
        numbers |= _quiet_numbers(quiet)
    return [
        Finding(
            category=Category.UNRELEASED_JOB,
            sub_cause=sub,
            confidence=confidence,
            summary=summary,
            windows=[Span(idle.start, idle.end, "idle tail")],
            log_lines=finished[-1:] + quoted + loops[:2],
            code=sleeps,
            numbers=numbers,
            time_located=True,
            gpu_hours=ev.unused(idle.start, idle.end),
        )
    ]


def _busy_words(ev: Evidence, th: dict) -> str:
    """The busy level of `_cpu_busy_level` in words: 'at least 0.64 of 32 cores busy'."""
    level, cpus = _cpu_busy_level(ev, th), ev.job.cpu_count
    if cpus:
        return f"at least {level / 100 * cpus:.2g} of {cpus} cores busy"
    return f"at least {level:g} % of the allocation busy"


def _lines(n: int) -> str:
    return f"{n} line{'s' if n != 1 else ''}"


def _cores(quiet: _Quiet) -> str:
    """The CPU cores busy in what is held, in words: 'about 0.02 of 32 cores busy'."""
    if quiet.cores is None:
        return ""
    if quiet.cpus:
        return f"about {quiet.cores:.2g} of {quiet.cpus} cores busy"
    return f"CPU {quiet.cores * 100:.2g} % of the allocation, whose CPU count is unknown"


def _quiet_words(quiet: _Quiet, held: Span, minutes: str) -> str:
    """What an unreleased finding says of its stretch without stamped lines (`minutes`: the held part's)."""
    lines = _lines(quiet.lines)
    first, last = min(r.before for r in quiet.untimed), max(r.after for r in quiet.untimed)
    around = f"{lines} without a time, printed between {_clock(first)} and {_clock(last)} UTC"
    work = quiet.work_end - quiet.start
    said = f" Then no line with a time for {(quiet.end - quiet.start) / 60:.0f} min, only {around}."
    if work >= 60:
        how = []
        if quiet.timed_s >= 60:
            how.append(f"pycocotools' own timings (DONE (t=...s)) add up to {quiet.timed_s / 60:.0f} min")
        if quiet.busy_until is not None and quiet.busy_until - quiet.start >= 60:
            how.append(f"the CPUs worked until {_clock(quiet.busy_until)} UTC")
        said += f" The first {work / 60:.0f} min of it were work ({'; '.join(how)})."
    if quiet.verdict == "idle":
        said += f" The last {minutes} the allocation was held idle: the CPUs idled too ({_cores(quiet)})."
    else:
        if quiet.cores is None:
            why = "no CPU metrics tell"
        else:
            why = f"the CPUs, {_cores(quiet)}, neither clearly worked nor idled"
        said += (
            f" The last {minutes} may have been held idle or spent on work that prints no times; {why}, "
            "so this is unsure."
        )
    return said


def _quiet_numbers(quiet: _Quiet) -> dict:
    numbers: dict = {"untimed_lines": quiet.lines}
    if quiet.timed_s:
        numbers["timed_minutes"] = round(quiet.timed_s / 60, 1)
    if quiet.cores is not None:
        numbers["idle_cpu_cores"] = round(quiet.cores, 2)
    return numbers


def _untimed_quotes(ev: Evidence, quiet: _Quiet) -> list:
    """The first line printed without a time around the stretch and the longest timing among them, each marked
    estimated (with the stamped lines' times around it as its bounds)."""
    first = quiet.untimed[0]
    quotes = [replace(ev.logs.quoted(first.file, first.first, first.before), estimated=True, t_next=first.after)]
    timed = max(quiet.untimed, key=lambda r: r.timed_s)
    if timed.timed_line and (timed.file, timed.timed_line) != (first.file, first.first):
        quotes.append(
            replace(ev.logs.quoted(timed.file, timed.timed_line, timed.before), estimated=True, t_next=timed.after)
        )
    return quotes


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
    cpu_all = _median_cpu(ev)
    if cpu_all is not None and cpu_all >= 30:
        confidence += 0.1
    return [
        Finding(
            category=Category.NON_DL_JOB,
            sub_cause="no_framework" if ev.scripts.python_files else "gpu_unused",
            confidence=confidence,
            summary=(
                f"GPU util {share_text(mean / 100)} and GPU memory "
                f"{'unused' if p.peak_mem_share is not None else 'unknown'} for the whole run"
                + (f" while the CPUs worked (median {cpu_all:.0f} %)" if cpu_all is not None else "")
                + ("; the code imports no deep-learning framework." if ev.scripts.python_files else ".")
            ),
            windows=[Span(p.series_start, p.series_end, "whole run")],
            code=ev.scripts.of("shell_launch")[:3],
            # The CPU the summary quotes: the whole run's median. Its "training" span is where a GPU showed any
            # activity at all, in a job that has none to speak of (a CPU job's stray samples).
            numbers={"mean_util": round(mean, 2), "cpu_util": cpu_all if cpu_all is None else round(cpu_all, 1)},
            time_located=True,
            gpu_hours=ev.unused(p.series_start, p.series_end),
        )
    ]


def _cpu_work_after_training(ev: Evidence, th: dict) -> list[Finding]:
    """Non-GPU work inside a GPU job: after the GPU work, every GPU idles while the log keeps printing (a
    COCO evaluation, sklearn metrics, an export on the CPU) for as long as an unreleased tail would last, or
    while lines printed without a time show work by their own timings or the CPU's use (`_quiet`)."""
    p = ev.phases
    split = _tail(ev, th)
    if split is None or not split.working:
        return []
    run = max(p.series_end - p.series_start, 1.0)
    seconds = sum(span.seconds for span in split.working)
    if not _long_enough(seconds, run, th):
        return []
    quiet = split.quiet
    printed = split.printed
    lines = [ev.logs.quoted(index, line, t) for t, index, line in ([printed[0], printed[-1]] if printed else [])]
    if len(printed) == 1:
        lines = lines[:1]
    if quiet is not None and quiet.work_end - quiet.start >= 60:
        lines += _untimed_quotes(ev, quiet)
    cpu = _cpu_between(ev, split.working)
    said = [f"{_lines(len(printed))} with a time" if quiet is not None else _lines(len(printed))]
    if quiet is None and split.cpu_until is not None:
        said = [f"the log printed {_lines(len(printed))} with a time" if printed else "the log printed nothing"]
    if quiet is not None:
        said[0] += f" and {quiet.lines} without"
        if quiet.timed_s >= 60:
            said.append(f"pycocotools' own timings add up to {quiet.timed_s / 60:.0f} min")
    if cpu is not None:
        cores = f", about {cpu / 100 * ev.job.cpu_count:.2g} of {ev.job.cpu_count} cores" if ev.job.cpu_count else ""
        said.append(f"CPU {cpu:.0f} % of the allocation{cores}")
    numbers = {
        "cpu_minutes": round(seconds / 60, 1),
        "cpu_share": round(seconds / run, 3),
        "lines_printed": len(printed),
        "cpu_util": None if cpu is None else round(cpu, 1),
    }
    if quiet is not None:
        numbers |= {
            "untimed_lines": quiet.lines,
            **({"timed_minutes": round(quiet.timed_s / 60, 1)} if quiet.timed_s else {}),
        }
    return [
        Finding(
            category=Category.NON_DL_JOB,
            sub_cause="cpu_work_after_training",
            confidence=0.6,
            summary=(
                f"Every GPU idled for {seconds / 60:.0f} min after the GPU work "
                f"({share_text(seconds / run)} of the run) "
                + (
                    f"while the CPUs kept working ({'; '.join(said)}): "
                    if quiet is None and split.cpu_until is not None
                    else f"while the log kept printing ({'; '.join(said)}): "
                    if quiet is None
                    else f"while the job kept working: the log printed {'; '.join(said)}. It was "
                )
                + "work on the CPU, such as a final evaluation or metrics, on a GPU allocation."
            ),
            windows=split.working,
            log_lines=lines,
            numbers=numbers,
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
