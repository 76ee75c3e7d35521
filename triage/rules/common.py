"""Helpers the rules share: which log line explains which idle gap, and the start-up phase split."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleet.logevents import CHECKPOINT_SAVE, DOWNLOAD, INSTALL, REMOTE_READ, UPLOAD
from triage.evidence import CodeFact, Evidence, LogLine, Span
from triage.evidence.scripts import LAUNCHERS

BLOCKING_KINDS = (CHECKPOINT_SAVE, UPLOAD, REMOTE_READ, DOWNLOAD)
# At least this share of a job's one-sample stalls must start at a blocking line for any of them to count as one.
_SHORT_STALLS_MATCHED = 0.5


def plural(count: int, noun: str, nouns: str = "") -> str:
    """A count and its noun in a summary, agreeing: "1 node", "3 nodes" (not "node(s)", "1 copies");
    `nouns` where the plural is not the noun and an s ("blocking copy", "blocking copies")."""
    return f"{count} {noun}" if count == 1 else f"{count} {nouns or noun + 's'}"


def distributed_launches(ev: Evidence) -> list[CodeFact]:
    """The job's launch lines (its scripts' and its submitted command) that start a distributed launcher
    (torchrun, deepspeed, accelerate, horovodrun, mpirun): one training process per GPU. Not one that starts a
    single process (`mpirun -np 1`, `torchrun train.py`, `deepspeed --num_gpus 1`: its `processes`) nor one that
    trains on the CPU (`accelerate launch --cpu`: `on_cpu`). A python that srun starts in several tasks is one
    too (`srun -n 8 python train.py`, or a bare `srun python train.py` under `#SBATCH --ntasks-per-node=8`: its
    `processes`, srun's tasks)."""
    return [f for f in ev.scripts.of("shell_launch", "command_launch") if _distributed(f.detail)]


def srun_python_launches(ev: Evidence) -> list[CodeFact]:
    """The job's distributed launches that are a python in several srun tasks (`srun -n 8 python train.py`):
    Slurm starts the processes, and each must pick its own GPU from its task (SLURM_LOCALID)."""
    return [f for f in distributed_launches(ev) if f.detail.get("launcher") not in LAUNCHERS]


def srun_task_lines(ev: Evidence, launches: list[CodeFact]) -> list[CodeFact]:
    """The batch script's `#SBATCH` lines that gave these srun launches their task count (a bare `srun python
    train.py` under `#SBATCH --ntasks-per-node=8`: its `sbatch_lines`), as the script's `slurm_layout` facts."""
    wanted = {(f.path, line) for f in launches for line in f.detail.get("sbatch_lines", ())}
    return [f for f in ev.scripts.of("slurm_layout") if (f.path, f.line) in wanted]


def launch_config_lines(ev: Evidence, launches: list[CodeFact]) -> list[CodeFact]:
    """The Accelerate config files' settings that gave these launches their count (`accelerate launch --config_file
    acc.yaml`: its `launch_config`), as the config's `launch_config` facts."""
    wanted = {f.detail["launch_config"] for f in launches if f.detail.get("launch_config")}
    return [f for f in ev.scripts.of("launch_config") if f.path in wanted]


def _distributed(launch: dict) -> bool:
    if launch.get("on_cpu"):
        return False
    processes = launch.get("processes")
    if launch.get("launcher") in LAUNCHERS:
        return processes != 1
    return processes is not None and processes > 1  # a python under srun: its tasks


def quoted_once(facts: list[CodeFact]) -> list[CodeFact]:
    """The facts to quote, each line once: a line already quoted (two DataLoaders built on one line) or the
    same code written again further down (the demo's OOM-retry job builds its training DataLoader twice, word
    for word, the second time after fitting the batch size) is left out; the first is kept."""
    seen: set = set()
    out = []
    for fact in facts:
        keys = {(fact.path, fact.line), (fact.path, fact.text)}
        if not keys & seen:
            out.append(fact)
        seen |= keys
    return out


@dataclass(frozen=True)
class ExplainedGap:
    span: Span  # the part of an idle gap this line explains
    kind: str  # checkpoint_save | upload | remote_read | download
    line: LogLine


def explained_gaps(ev: Evidence) -> list[ExplainedGap]:
    """Idle gaps in training split at the blocking log lines (save, upload, remote read) that start them.

    A line explains the stretch of the gap from when it was printed to the next such line (or the
    gap's end). A line may be printed up to `log_match_tolerance_s` (and one sampling period)
    before the first idle sample. Cached on the evidence.
    """
    cached = ev.__dict__.get("_explained_gaps")
    if cached is not None:
        return cached
    out: list[ExplainedGap] = []
    if ev.phases is not None and ev.timeline is not None:
        tolerance = ev.thresholds["log_match_tolerance_s"] + ev.timeline.period
        events = [e for e in ev.logs.events if e.kind in BLOCKING_KINDS and e.t is not None]
        times = np.array([e.t for e in events]) if events else np.array([])
        # One long sample (a 60 s scrape) can hold a whole quick save; shorter single samples are noise.
        stalls = [span for span in ev.phases.short_stalls if span.seconds >= ev.thresholds["gap_min_s"]]
        short = {id(span) for span in stalls}
        candidates = sorted(ev.phases.idle_gaps + stalls, key=lambda span: span.start)
        used: set[tuple[str, int]] = set()  # a line explains one gap: the first after it
        # A line that starts a stall is printed before the first idle sample (give or take half a period);
        # a line printed in the middle of a stall (say, after an evaluation pass) did not cause it.
        lead = 0.5 * ev.timeline.period
        for gap in candidates:
            if not events:
                break
            lo, hi = np.searchsorted(times, gap.start - tolerance), np.searchsorted(times, gap.end)
            inside = [e for e in _one_per_moment(events[lo:hi]) if (e.path, e.line_no) not in used]
            if inside and id(gap) in short and inside[0].t > gap.start + lead:
                continue
            for index, event in enumerate(inside):
                begin = gap.start if index == 0 and event.t <= gap.start + lead else max(gap.start, event.t)
                finish = inside[index + 1].t if index + 1 < len(inside) else gap.end
                finish = min(max(finish, begin), gap.end)
                used.add((event.path, event.line_no))
                if finish > begin:
                    out.append(ExplainedGap(Span(begin, finish, event.kind, 0, gap.mean_util), event.kind, event))
        # One-sample stalls stand for a quick save only where they are as rare as the lines: in a job whose steps
        # drop every GPU for a sample again and again (a gradient exchange's dips in a third of its samples) a
        # save line lands beside one by chance, and the stall is the job's own rhythm, not the save's doing.
        matched = {id(span) for span in stalls if any(span.start <= g.span.start < span.end for g in out)}
        if matched and len(matched) < _SHORT_STALLS_MATCHED * len(stalls):
            out = [g for g in out if not any(id(s) in matched and s.start <= g.span.start < s.end for s in stalls)]
    ev.__dict__["_explained_gaps"] = out
    return out


def _one_per_moment(events: list[LogLine]) -> list[LogLine]:
    """The first line of each kind in a run of lines printed together (one save prints several)."""
    kept: list[LogLine] = []
    for event in events:
        if kept and kept[-1].kind == event.kind:
            continue
        kept.append(event)
    return kept


def gaps_of(ev: Evidence, kind: str) -> list[ExplainedGap]:
    return [g for g in explained_gaps(ev) if g.kind == kind]


def unexplained_gaps(ev: Evidence) -> list[Span]:
    explained = explained_gaps(ev)
    if ev.phases is None:
        return []
    return [
        gap
        for gap in ev.phases.idle_gaps
        if not any(e.span.start < gap.end and gap.start < e.span.end for e in explained)
    ]


def periodic(spans: list[Span], max_cv: float, min_count: int) -> bool:
    if len(spans) < min_count:
        return False
    starts = np.array([s.start for s in spans])
    intervals = np.diff(starts)
    if intervals.size < 2 or intervals.mean() <= 0:
        return False
    return float(intervals.std() / intervals.mean()) <= max_cv


@dataclass(frozen=True)
class Startup:
    install: Span | None
    install_lines: list[LogLine]
    download: Span | None
    download_lines: list[LogLine]


def startup(ev: Evidence) -> Startup:
    """Install and download phases from timestamped log lines before the GPUs first got busy.

    Downloads printed while installing (pip fetching wheels) belong to the install. Without GPU
    activity the whole run counts (a job that never reached training).
    """
    cached = ev.__dict__.get("_startup")
    if cached is not None:
        return cached
    limit = ev.phases.first_active if ev.phases and ev.phases.first_active is not None else ev.job.end_s
    # Lines printed up to one sampling period after the first busy sample still belong to the start.
    slack = ev.timeline.period if ev.timeline else 0.0
    early = [e for e in ev.logs.events if e.t is not None and e.t <= limit + slack]
    installs = [e for e in early if e.kind == INSTALL]
    install = None
    if installs:
        install = Span(installs[0].t, max(e.t for e in installs), "installing")
    downloads = [
        e
        for e in early
        if e.kind == DOWNLOAD and not (install and install.start <= e.t <= install.end and not e.estimated)
    ]
    # An estimated-time line inside the install window is a pip progress line; one after it is ours.
    downloads = [e for e in downloads if not (install and e.t <= install.end)]
    download = None
    if downloads:
        first = downloads[0].t
        last = downloads[-1]
        # A line with an estimated time happened after its stamp: the phase lasts until the next stamped line.
        end = last.t
        if last.estimated:
            end = min(last.t_next, limit) if last.t_next is not None else limit
        download = Span(first, max(end, first), "downloading")
    result = Startup(install, installs, download, downloads)
    ev.__dict__["_startup"] = result
    return result


def start_up_downloads(ev: Evidence) -> list:
    """Reads of remote storage that run once, not per sample (`s3.download_file(...)` in a `stage()` before
    training): the data download phase's code, as `aws s3 cp` in a job script is."""
    return [f for f in ev.scripts.of("remote_read") if not f.detail.get("per_sample")]


def first_value(facts, key):
    for fact in facts:
        value = fact.detail.get(key)
        if value is not None:
            return value
    return None
