"""Model-dimension rules: batch size, checkpointing, GPU memory."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

import numpy as np

from fleet.logevents import CHECKPOINT_SAVE, DOWNLOAD, OOM, REMOTE_READ, UPLOAD
from fleet.numbers import share_text
from triage.evidence import Evidence
from triage.evidence.scripts import JOB_COMMAND
from triage.rules.common import explained_gaps, gaps_of, periodic, quoted_once, unexplained_gaps
from triage.rules.registry import Finding, register
from triage.taxonomy import Category


def _training_ok(ev: Evidence) -> bool:
    """A training/evaluation phase to judge: GPU work that is not a person's session."""
    p = ev.phases
    return p.training is not None and p.training_mean_util is not None and not ev.interactive


_STALL_NAMES = {CHECKPOINT_SAVE: "checkpoint save", UPLOAD: "upload", REMOTE_READ: "remote read", DOWNLOAD: "download"}


def _step_util(ev: Evidence, th: dict) -> tuple[float, str]:
    """The training-phase mean util the batch-size and memory rules judge, and what it leaves out.

    The paper's condition is about the GPUs' work in training and evaluation: GPUs the program never
    used (an oversubscribed job's) and the stalls a save, upload or remote read explains (other
    findings' windows) are not steps, and would make fast steps look starved.
    """
    p, tl = ev.phases, ev.timeline
    means = p.device_mean_util
    used = [i for i, m in enumerate(means) if m >= th["oversub_idle_util"]]
    if not used or len(used) == len(means):
        used = list(range(len(means)))
    explained = explained_gaps(ev)
    stalls = [g.span for g in explained]
    # Regular gaps the checkpoint rule ties to saves without log times (a save in the loop, as many
    # saves in the log as gaps) are stalls as well.
    untimed = _checkpoint_gaps(ev, th)
    untimed_gaps = untimed.spans if untimed is not None and untimed.sub == "periodic_gaps" else []
    stalls += untimed_gaps
    if len(used) == len(means) and not stalls:
        return p.training_mean_util, ""
    rows = tl.mask(p.training.start, p.training.end)
    for span in stalls:
        rows &= ~tl.mask(span.start, span.end)
    weights = tl.dt[rows]
    values = tl.util[rows][:, used]
    present = ~np.isnan(values).all(axis=1)
    if not present.any() or weights[present].sum() <= 0:
        return p.training_mean_util, ""
    util = float(np.average(np.nanmean(values[present], axis=1), weights=weights[present]))
    parts = []
    if len(used) < len(means):
        parts.append(f"on the {len(used)} GPU{'s' if len(used) > 1 else ''} that worked")
    if explained:
        counts = {kind: sum(g.kind == kind for g in explained) for kind in _STALL_NAMES}
        named = [f"{n} {_STALL_NAMES[kind]}{'s' if n > 1 else ''}" for kind, n in counts.items() if n]
        parts.append("outside the stalls of " + " and ".join(named))
    if untimed_gaps:
        n = len(untimed_gaps)
        parts.append(f"outside {n} regular idle gap{'s' if n > 1 else ''} taken for checkpoint saves")
    return util, " " + ", ".join(parts)


def _batch_sizes(ev: Evidence) -> tuple[int | None, list, list]:
    code = [f for f in ev.scripts.of("dataloader", "training_arguments") if isinstance(f.detail.get("batch_size"), int)]
    # The loader a training-step loop iterates, where the code tells: an evaluation loader's batch (often twice the
    # training one) is not the step's, and quoting it says nothing of the training.
    if any(f.detail.get("feeds_training") for f in code):
        code = [f for f in code if f.kind != "dataloader" or f.detail.get("feeds_training")]
    lines = ev.logs.batch_sizes
    size = code[0].detail["batch_size"] if code else (lines[0][0] if lines else None)
    return size, quoted_once(code)[:2], [line for _, line in lines[:2]]


def _peak_pct(peak: float | None) -> float | None:
    """The peak GPU memory (%) as a finding stores it (numbers' peak_gpu_mem_pct): one decimal."""
    return None if peak is None else round(peak, 1)


def _peak_text(peak: float) -> str:
    """The peak GPU memory as a finding's summary and its fix (triage.guidance) both write it: the stored
    value (_peak_pct) in whole percent. The summary wrote the measured value, the fix the stored one, so
    12.51 % read "13 %" in the one and "12 %" in the other."""
    return share_text(_peak_pct(peak) / 100)


_BEHIND_OFFLOAD = 0.5  # below the zero_offload finding's 0.75: its advice leads, and it takes more of the waste


@register(Category.IMPROPER_BATCH_SIZE)
def improper_batch_size(ev: Evidence, th: dict) -> list[Finding]:
    if not _training_ok(ev):
        return []
    p = ev.phases
    util, basis_of_util = _step_util(ev, th)
    if util > th["batch_util_max"]:
        return []
    size, code, lines = _batch_sizes(ev)
    tail = ": each step gives the GPU too little work."
    offloaded = ""
    if p.peak_mem_share is not None:
        peak = p.peak_mem_share * 100
        if peak > th["batch_mem_max"] or peak < th["non_dl_max_mem"]:
            return []
        confidence = 0.85 if peak <= th["batch_mem_max"] * 0.85 else 0.7
        basis = f"peak GPU memory {_peak_text(peak)} (<= {th['batch_mem_max']:.0f} %)"
        # ZeRO offload keeps the optimizer state or the parameters in host memory: the GPU memory it freed says
        # nothing of the batch, and the steps wait on PCIe (gpu_memory_bound's zero_offload, 0.75). A larger batch
        # still spreads those copies over more samples, so it stays, as the second cause.
        zero, offloads = _zero_offloads(ev)
        if offloads and util <= th["memory_util_max"] and peak <= th["memory_mem_min"]:
            confidence = _BEHIND_OFFLOAD
            offloaded = " and ".join(offloads)  # the guidance says the memory room is measured under it
            basis += f", low because ZeRO offloads {offloaded} ({_where(zero)})"
            tail = ": the offload stalls the steps first; a larger batch would spread its copies over more samples."
    else:
        if size is None or size > th["small_batch_size"]:
            return []
        confidence = 0.45
        peak = None
        basis = f"batch size {size} per GPU (no GPU memory metric)"
    return [
        Finding(
            category=Category.IMPROPER_BATCH_SIZE,
            sub_cause="small_batch",
            confidence=confidence,
            summary=(
                f"Training-phase GPU util {util:.0f} %{basis_of_util} (<= {th['batch_util_max']:.0f} %) with {basis}"
                + tail
                + (f" Batch size {size} per GPU." if size is not None and peak is not None else "")
            ),
            windows=[p.training],
            log_lines=lines,
            code=code,
            numbers={
                "training_mean_util": round(util, 1),
                "peak_gpu_mem_pct": _peak_pct(peak),
                "batch_size": size,
                **({"zero_offload": offloaded} if offloaded else {}),
            },
        )
    ]


@register(Category.GPU_MEMORY_BOUND)
def gpu_memory_bound(ev: Evidence, th: dict) -> list[Finding]:
    if not _training_ok(ev):
        return []
    p = ev.phases
    util, basis_of_util = _step_util(ev, th)
    if util > th["memory_util_max"]:
        return []
    ooms = ev.logs.of(OOM)
    size, code, lines = _batch_sizes(ev)
    # ZeRO as the job's DeepSpeed (or Accelerate) config sets it: the guidance does not offer sharding a job
    # already has, and offload is how a job whose states do not fit in GPU memory gets by.
    zero, offloads = _zero_offloads(ev)
    if p.peak_mem_share is not None:
        peak = p.peak_mem_share * 100
        if peak <= th["memory_mem_min"]:
            return _zero_offload(ev, th, util, basis_of_util, zero, offloads, peak, code, lines) if offloads else []
        confidence = 0.85 + 0.1 * bool(ooms)
    elif ooms:
        peak = None
        confidence = 0.5
    elif offloads:
        return _zero_offload(ev, th, util, basis_of_util, zero, offloads, None, code, lines)
    else:
        return []
    sub = "oom_retry" if ooms else "memory_full"
    precision, precision_code, unknown = _precision(ev)
    # What keeps it in fp32, where the code or a config says so: the guidance names it as the setting to change.
    switch = next((f for f in precision_code if f.kind == "full_precision" and f.detail.get("switch")), None)
    set_by = None
    if precision == "fp32" and switch is not None:
        where = "the job's command" if switch.path == JOB_COMMAND else f"{switch.path}:{switch.line}"
        set_by = f"`{switch.detail['switch']}` ({where})"
    elif precision == "mixed" and precision_code and precision_code[0].text:
        # What sets mixed precision: the guidance names it, so the reader need not look for it among the evidence.
        fact = precision_code[0]
        where = "the job's command" if fact.path == JOB_COMMAND else f"{fact.path}:{fact.line}"
        set_by = f"`{fact.text}` ({where})"
    shown = {(f.path, f.line) for f in code}
    zero_numbers = {}
    if zero is not None:
        zero_numbers = {
            "zero_stage": zero.detail["stage"],
            "zero_set_by": _where(zero),
            **({"zero_offload": ", ".join(offloads)} if offloads else {}),
        }
    return [
        Finding(
            category=Category.GPU_MEMORY_BOUND,
            sub_cause=sub,
            confidence=confidence,
            summary=(
                f"Training-phase GPU util {util:.0f} %{basis_of_util} while GPU memory peaked at "
                + (f"{_peak_text(peak)} (> {th['memory_mem_min']:.0f} %)" if peak is not None else "its limit")
                + (f"; {len(ooms)} out-of-memory error(s) in the log" if ooms else "")
                + ": memory, not compute, caps the batch size."
            ),
            windows=[p.training],
            log_lines=ooms[:3] + lines,
            code=code + [f for f in precision_code[:2] if (f.path, f.line) not in shown],
            numbers={
                "training_mean_util": round(util, 1),
                "peak_gpu_mem_pct": _peak_pct(peak),
                "precision": precision,
                **({"precision_unknown": unknown} if unknown else {}),
                **({"precision_set_by": set_by} if set_by else {}),
                **zero_numbers,
            },
        )
    ]


_OFFLOADS = (("offload_optimizer", "the optimizer state"), ("offload_param", "the parameters"))


def _zero_offloads(ev: Evidence) -> tuple:
    """The job's ZeRO config fact (stage set) and what it offloads, e.g. ['the optimizer state to cpu']."""
    zero = next((f for f in ev.scripts.of("zero_config") if f.detail.get("stage")), None)
    offloads = [f"{what} to {zero.detail[key]}" for key, what in _OFFLOADS if zero.detail.get(key)] if zero else []
    return zero, offloads


def _where(fact) -> str:
    """Where a fact was read: `ds.json:4`, or the job's command."""
    return "the job's command" if fact.path == JOB_COMMAND else f"{fact.path}:{fact.line}"


def _zero_offload(ev: Evidence, th: dict, util, basis_of_util, zero, offloads, peak, code, lines) -> list[Finding]:
    """GPU memory not full, but DeepSpeed ZeRO offloads the optimizer state or the parameters to the CPU or
    NVMe: what does not fit in GPU memory lives in host memory, and every step moves it over PCIe (and, for
    the optimizer state, steps the optimizer on the CPU) while the GPUs wait. Insufficient GPU memory is the
    cause (taxonomy: model dimension), offload its costly workaround."""
    p = ev.phases
    where = _where(zero)
    optimizer = bool(zero.detail.get("offload_optimizer"))
    pcie = p.pcie_rx_training
    summary = (
        f"Training-phase GPU util {util:.0f} %{basis_of_util} (<= {th['memory_util_max']:.0f} %) while DeepSpeed "
        f"ZeRO stage {zero.detail['stage']} offloads {' and '.join(offloads)} ({where}): each step waits while "
        "they cross PCIe between host memory and the GPUs"
        + (" and the optimizer steps on the CPU" if optimizer else "")
        + "."
        + (f" GPU memory peaked at {_peak_text(peak)}." if peak is not None else "")
    )
    return [
        Finding(
            category=Category.GPU_MEMORY_BOUND,
            sub_cause="zero_offload",
            confidence=0.75 if peak is not None else 0.65,
            summary=summary,
            windows=[p.training],
            log_lines=lines,
            code=[zero] + [f for f in code if (f.path, f.line) != (zero.path, zero.line)],
            numbers={
                "training_mean_util": round(util, 1),
                "peak_gpu_mem_pct": _peak_pct(peak),
                "zero_stage": zero.detail["stage"],
                "zero_set_by": where,
                "zero_offload": ", ".join(offloads),
                "pcie_rx_gb_s": None if pcie is None else round(pcie / 1e9, 2),
                "batch_size": code[0].detail.get("batch_size") if code else None,
            },
        )
    ]


def _precision(ev: Evidence) -> tuple[str | None, list, str | None]:
    """(precision, facts to quote, why it is unknown). 'mixed' when the job's code, configs, launch lines or
    submitted command set reduced precision (autocast, GradScaler, bf16/fp16 in TrainingArguments, Lightning
    or Accelerate, `.half()`, `--bf16`, DeepSpeed's `"bf16": {"enabled": true}`, `mixed_precision: bf16`,
    `trainer.precision=bf16-mixed`). None with the reason when the code leaves it to something not seen: a
    flag when no launch line of the job was seen, a config file the job did not bring (or of a kind it did
    not bring), DeepSpeed's "auto". 'fp32' when its Python imports a framework, or a config says fp32, and
    nothing is left open; None without code."""
    found = _mmengine_overridden(ev, ev.scripts.of("mixed_precision"))
    if found:
        return "mixed", found, None
    facts = ev.scripts.facts
    launched = any(f.kind in ("shell_launch", "command_launch") for f in facts)
    configs = {f.detail.get("tool") for f in ev.scripts.of("config_file")}
    config_paths = {f.path for f in ev.scripts.of("config_file")}
    brought = {path.rsplit("/", 1)[-1] for path in ev.scripts.paths}
    full = ev.scripts.of("full_precision")
    open_: list = []
    # An mmengine config's `_base_` files matter only while no config the job brought sets the wrapper's type.
    wrapper_set = any(f.detail.get("setting") == "optim_wrapper.type" for f in full)
    for fact in ev.scripts.of("config_reference"):
        name = fact.detail["name"]
        if fact.detail.get("flag") == "_base_" and wrapper_set:
            continue
        if name.rsplit("/", 1)[-1] not in brought:
            where = "its command" if fact.path == JOB_COMMAND else f"{fact.path}:{fact.line}"
            open_.append((fact, f"{where} names {name}, which the job did not bring"))
    # Under Accelerate, DeepSpeed's "auto" is Accelerate's mixed_precision (its launch flag, its config file or
    # `Accelerator(mixed_precision=...)`; any of them set to bf16/fp16 was found above as mixed): settled as fp32
    # by one set to `no`, or by an Accelerate config the job brought that sets none (its default, `no`).
    accelerate_no = [f for f in full if f.detail.get("accelerate")]
    accelerate = _under_accelerate(ev)
    # Accelerate handing DeepSpeed its own file, in its config (`deepspeed_config_file:`) or on its launch line
    # (`--deepspeed_config_file ds.json`): Accelerate's own mixed_precision is ignored then, the file's is the job's.
    handing = [
        f
        for f in ev.scripts.of("config_reference")
        if f.detail.get("flag", "").lstrip("-").replace("-", "_") == "deepspeed_config_file"
    ]
    handed = any(f.detail["name"].rsplit("/", 1)[-1] in brought for f in handing)
    settled_by = accelerate_no[:1] or handing[:1]
    settled = bool(accelerate_no) or "accelerate" in configs
    auto: list = []
    for fact in ev.scripts.of("precision_elsewhere"):
        source, needs = fact.detail.get("source"), fact.detail.get("needs")
        if fact.detail.get("auto") and accelerate:
            if settled:
                auto.append(fact)
            else:
                open_.append((fact, f"`{fact.text}` in {fact.path} takes Accelerate's mixed_precision, which "
                              "nothing the job brought sets (`accelerate launch --mixed_precision`, Accelerate's "
                              "config file or `Accelerator(mixed_precision=...)`)"))  # fmt: skip
            continue
        if needs == "accelerate" and (accelerate_no or handed):
            continue  # `Accelerator()` under `accelerate launch --mixed_precision no`, or with DeepSpeed's file brought
        if source == "flags" and launched:
            continue  # the job's launch lines were seen, and none sets --bf16/--fp16
        if source == "config" and (
            needs in configs
            or (needs == "any" and configs)
            or (needs == "yaml" and any(path.lower().endswith((".yaml", ".yml")) for path in config_paths))
        ):
            continue
        if source == "flags":
            open_.append((fact, f"{fact.detail['why']}, and no launch line of the job was seen"))
        else:
            open_.append((fact, f"{fact.detail['why']}, and the job brought no such file"))
    if open_:
        return None, [fact for fact, _ in open_], open_[0][1]
    if ev.scripts.of("framework_import") or full:
        return "fp32", auto[:1] + [f for f in settled_by if auto and f not in full] + full, None
    return None, [], None


def _mmengine_overridden(ev: Evidence, found: list) -> list:
    """`found` less the `AmpOptimWrapper` (or `ApexOptimWrapper`) of mmengine configs whose wrapper type no config
    the job runs with takes: a config that is no other's `_base_` is what is run, and its own `optim_wrapper` type
    wins over its bases' (a fine-tuning config switching back to `OptimWrapper` is fp32 whatever its base said)."""
    configs = {f.path: f.detail for f in ev.scripts.of("config_file") if f.detail.get("tool") == "mmengine"}
    if not any(f.detail.get("call") in _MIXED_WRAPPERS and f.path in configs for f in found):
        return found
    names: dict[str, list[str]] = {}
    for path in configs:
        names.setdefault(path.rsplit("/", 1)[-1], []).append(path)

    def base_of(child: str, name: str) -> str | None:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(child), name))
        if path in configs:
            return path
        same = names.get(name.rsplit("/", 1)[-1], [])
        return same[0] if len(same) == 1 else None

    bases = {path: [b for name in d.get("bases", []) if (b := base_of(path, name))] for path, d in configs.items()}
    inherited = {base for listed in bases.values() for base in listed}

    def deciding(path: str, seen: frozenset = frozenset()) -> str | None:
        """The config whose wrapper type `path` runs with: its own, else its bases' (first that sets one)."""
        if configs[path].get("wrapper"):
            return path
        for base in bases[path]:
            if base not in seen and (decided := deciding(base, seen | {path})):
                return decided
        return None

    run = {deciding(path) for path in configs if path not in inherited}
    if not run:  # no config outside a loop of `_base_`s: which one runs cannot be told
        return found
    return [f for f in found if f.detail.get("call") not in _MIXED_WRAPPERS or f.path not in configs or f.path in run]


_MIXED_WRAPPERS = ("AmpOptimWrapper", "ApexOptimWrapper")  # mmengine's optim wrappers in mixed precision


def _under_accelerate(ev: Evidence) -> bool:
    """Whether the job runs under Hugging Face Accelerate: `accelerate launch`, an Accelerate config file, a
    setting of Accelerate's mixed_precision, or `Accelerator(...)` in its code."""
    for fact in ev.scripts.facts:
        if fact.detail.get("accelerate") or (fact.kind == "config_file" and fact.detail.get("tool") == "accelerate"):
            return True
        if fact.kind in ("shell_launch", "command_launch") and fact.detail.get("launcher") == "accelerate":
            return True
        if fact.kind in ("precision_elsewhere", "mixed_precision") and "Accelerator(" in fact.text:
            return True
    return False


def _untimed_saves(ev: Evidence) -> list:
    """The log's checkpoint saves, one per save: lines a few lines apart in one file are one save
    (Hugging Face prints the checkpoint, its config and its weights one after another)."""
    saves: list = []
    last = 0
    for line in sorted(ev.logs.of(CHECKPOINT_SAVE), key=lambda e: (e.path, e.line_no)):
        if saves and saves[-1].path == line.path and line.line_no - last <= 5:
            last = line.line_no
            continue
        saves.append(line)
        last = line.line_no
    return saves


@dataclass(frozen=True)
class _CheckpointGaps:
    spans: list
    confidence: float
    lines: list
    sub: str
    step_saves: list
    saves_in_loop: list


def _checkpoint_gaps(ev: Evidence, th: dict) -> _CheckpointGaps | None:
    """The idle gaps the model_checkpointing rule puts down to saves (its windows), or None.

    Shared with `_step_util`: gaps tied to saves without log times are stalls too, not steps.
    Cached on the evidence.
    """
    if "_checkpoint_gaps" in ev.__dict__:
        return ev.__dict__["_checkpoint_gaps"]
    saves_in_loop = [f for f in ev.scripts.of("save_call") if f.detail.get("in_loop")]
    step_saves = [f for f in saves_in_loop if f.detail.get("in_step_loop")]
    gaps = gaps_of(ev, CHECKPOINT_SAVE)
    found = None
    if len(gaps) >= th["checkpoint_min_gaps"]:
        confidence = 0.85 + 0.1 * bool(saves_in_loop)
        found = _CheckpointGaps([g.span for g in gaps], confidence, [g.line for g in gaps], "sync_save",
                                step_saves, saves_in_loop)  # fmt: skip
    elif not ev.logs.has_timestamps:
        # No log times to tie gaps to saves: regular idle gaps plus a save inside the training loop.
        spans = unexplained_gaps(ev)
        if periodic(spans, th["periodic_max_cv"], th["periodic_min_gaps"]):
            saves = _untimed_saves(ev)
            lines = []
            confidence = None
            if step_saves:
                confidence = 0.7
            elif abs(len(saves) - len(spans)) <= max(1, len(spans) // 5):
                confidence = 0.6  # as many saves in the log as gaps (Keras prints "Epoch 3: saving model to ...")
                lines = saves
            elif not ev.logs.files and not ev.scripts.has_code:
                confidence = 0.4  # only metrics: periodic stalls are most often checkpoints (paper: 16 % of issues)
            if confidence is not None:
                found = _CheckpointGaps(spans, confidence, lines, "periodic_gaps", step_saves, saves_in_loop)
    ev.__dict__["_checkpoint_gaps"] = found
    return found


def _save_destination(lines: list, remote: list) -> str | None:
    """Where the saves went, in words: the folder of the first save line's remote or NFS path ('remote storage
    (s3://ckpt/run/)'), else the remote path the code writes to. None when neither names one."""
    for line in lines:
        for word in line.text.split():
            if "://" in word or "/nfs/" in word:
                folder = word.strip("'\",;()")
                folder = folder.rsplit("/", 1)[0] + "/" if folder.rsplit("/", 1)[-1].count(".") else folder
                return f"{'NFS' if '://' not in folder else 'remote storage'} ({folder})"
    if remote:
        return f"remote storage ({remote[0].detail['url']})"
    return None


@register(Category.MODEL_CHECKPOINTING)
def model_checkpointing(ev: Evidence, th: dict) -> list[Finding]:
    if not _training_ok(ev):
        return []
    found = _checkpoint_gaps(ev, th)
    if found is None:
        return []
    spans, confidence, lines, sub = found.spans, found.confidence, found.lines, found.sub
    step_saves, saves_in_loop = found.step_saves, found.saves_in_loop
    remote = [f for f in ev.scripts.of("remote_path") if f.detail.get("purpose") == "write"]
    if any("://" in line.text or "/nfs/" in line.text for line in lines) or remote:
        sub = "sync_save_remote"
    minutes = sum(s.seconds for s in spans) / 60
    if sub == "periodic_gaps":
        every = float(np.mean(np.diff([s.start for s in spans]))) / 60
        if step_saves:
            why = "the training loop saves a checkpoint, and no log time ties the saves to the gaps."
        elif lines:
            why = f"the log, without times, has {len(lines)} checkpoint saves, about one per gap."
        else:
            why = (
                "no log or code ties them to saves, but regular stalls are most often synchronous checkpoint "
                "saves (an evaluation pass every N steps looks the same)."
            )
        summary = f"{len(spans)} idle gaps ({minutes:.0f} min in all), one about every {every:.0f} min: " + why
    else:
        where = _save_destination(lines, remote) if sub == "sync_save_remote" else None
        summary = (
            f"{len(spans)} idle gaps ({minutes:.0f} min in all) while the job saved checkpoints synchronously"
            + (f" to {where}" if where else "")
            + "; the GPUs wait for every save."
        )
    return [
        Finding(
            category=Category.MODEL_CHECKPOINTING,
            sub_cause=sub,
            confidence=confidence,
            summary=summary,
            windows=spans,
            log_lines=lines,
            code=step_saves or saves_in_loop,
            numbers={"gaps": len(spans), "gap_minutes": round(minutes, 1)},
            time_located=True,
            gpu_hours=sum(ev.unused(s.start, s.end) for s in spans),
        )
    ]
