"""Trace evidence from PyTorch profiler (Kineto) JSON traces. Pure Python.

- Host-to-device copies: time and bytes of `Memcpy HtoD (Pageable -> Device)` versus
  `(Pinned -> Device)` (shared/reference/platform-apis.md §7); pre-2021 traces name categories
  `Memcpy`/`Kernel`/`Runtime`, which are accepted too.
- GPU idle time per stream split the way Holistic Trace Analysis does it
  (`_analyze_idle_time_for_stream`): for consecutive kernels on a stream, the interval between
  them is *host wait* when the runtime call that launched the next kernel started after the previous
  kernel had ended (the CPU did not enqueue work fast enough), *kernel wait* when the interval is
  shorter than `consecutive_kernel_delay` (30 µs; launch overhead), and *other* otherwise.
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass, field

KERNEL_CATEGORIES = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
RUNTIME_CATEGORIES = {"cuda_runtime", "Runtime", "cuda_driver"}
CONSECUTIVE_KERNEL_DELAY_US = 30.0


@dataclass
class TraceFacts:
    path: str
    rank: int | None = None
    span_us: float = 0.0
    h2d_pageable_us: float = 0.0
    h2d_pageable_bytes: int = 0
    h2d_pinned_us: float = 0.0
    h2d_pinned_bytes: int = 0
    kernel_us: float = 0.0
    idle_host_wait_us: float = 0.0
    idle_kernel_wait_us: float = 0.0
    idle_other_us: float = 0.0
    profiler_steps: int = 0
    step_us: float = 0.0
    examples: list[dict] = field(default_factory=list)  # a few pageable copies to show

    @property
    def idle_us(self) -> float:
        return self.idle_host_wait_us + self.idle_kernel_wait_us + self.idle_other_us

    @property
    def pageable_share_of_steps(self) -> float:
        base = self.step_us or self.span_us
        return self.h2d_pageable_us / base if base else 0.0

    @property
    def host_wait_share(self) -> float:
        return self.idle_host_wait_us / self.idle_us if self.idle_us else 0.0

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "rank": self.rank,
            "h2d_pageable_ms": round(self.h2d_pageable_us / 1000, 3),
            "h2d_pageable_bytes": self.h2d_pageable_bytes,
            "h2d_pinned_ms": round(self.h2d_pinned_us / 1000, 3),
            "h2d_pinned_bytes": self.h2d_pinned_bytes,
            "pageable_share_of_step_time": round(self.pageable_share_of_steps, 4),
            "idle_ms": {
                "host_wait": round(self.idle_host_wait_us / 1000, 3),
                "kernel_wait": round(self.idle_kernel_wait_us / 1000, 3),
                "other": round(self.idle_other_us / 1000, 3),
            },
            "host_wait_share_of_idle": round(self.host_wait_share, 4),
            "profiler_steps": self.profiler_steps,
            "examples": self.examples,
        }


# A gzipped trace is inflated up to this size and no further: stored traces are capped (the
# artifact limit) compressed, and a small file can inflate to gigabytes (a decompression bomb).
MAX_TRACE_JSON_BYTES = 256 * 2**20


# Event times and durations are microseconds; beyond this (31,700 years) a value is garbage, and
# sums of such values would overflow to infinity, which no JSON column stores.
MAX_EVENT_US = 1e18


class TraceTooLarge(ValueError):
    """A gzipped trace inflates beyond MAX_TRACE_JSON_BYTES."""


def load_trace(content: bytes, max_bytes: int = MAX_TRACE_JSON_BYTES):
    """The trace's JSON; ValueError (TraceTooLarge included) or OSError when it cannot be read."""
    if content[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip
        try:
            content = inflater.decompress(content, max_bytes + 1)
        except zlib.error as exc:
            raise ValueError(f"not a readable gzip file ({exc})") from exc
        if len(content) > max_bytes:
            raise TraceTooLarge(f"inflates to more than {max_bytes} bytes")
        if not inflater.eof:
            raise ValueError("the gzip file is truncated")
    return json.loads(content.decode("utf-8"))


def trace_facts(path: str, content: bytes) -> TraceFacts | None:
    """Facts of one trace, or None when it is not a Kineto/Chrome trace (nor readable as one).

    Traces are uploaded files: every value is checked for the type Kineto writes before it is
    used, and an event that does not fit is passed over."""
    try:
        trace = load_trace(content)
    except (ValueError, OSError, RecursionError):
        return None
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace if isinstance(trace, list) else None
    if not isinstance(events, list):
        return None
    info = trace.get("distributedInfo") if isinstance(trace, dict) else None
    rank = info.get("rank") if isinstance(info, dict) else None
    facts = TraceFacts(path=path, rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None)
    runtime_start: dict[object, float] = {}
    gpu_ops: list[tuple[object, float, float, object]] = []  # (stream key, ts, end, correlation)
    first, last = float("inf"), 0.0
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        try:
            ts, dur = float(event.get("ts", 0)), float(event.get("dur", 0))
        except (TypeError, ValueError, OverflowError):
            continue
        if not (abs(ts) < MAX_EVENT_US and 0 <= dur < MAX_EVENT_US):  # NaN fails too
            continue
        first, last = min(first, ts), max(last, ts + dur)
        category, name = event.get("cat", ""), str(event.get("name", ""))
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        correlation = args.get("correlation")
        if not isinstance(correlation, int | str):  # a key of `runtime_start`: a scalar, as Kineto writes
            correlation = None
        if not isinstance(category, str):
            continue
        if category in RUNTIME_CATEGORIES:
            if correlation is not None:
                runtime_start[correlation] = ts
        elif category in KERNEL_CATEGORIES:
            stream = (str(event.get("pid")), str(event.get("tid")))
            gpu_ops.append((stream, ts, ts + dur, correlation))
            if category in ("kernel", "Kernel"):
                facts.kernel_us += dur
            if name.startswith("Memcpy HtoD"):
                pageable = "Pageable" in name
                size = _byte_count(args.get("bytes"))
                if pageable:
                    facts.h2d_pageable_us += dur
                    facts.h2d_pageable_bytes += size
                    if len(facts.examples) < 3:
                        facts.examples.append({"name": name, "ts_us": ts, "dur_us": dur, "bytes": size})
                elif "Pinned" in name:
                    facts.h2d_pinned_us += dur
                    facts.h2d_pinned_bytes += size
        elif category == "user_annotation" and name.startswith("ProfilerStep#"):
            facts.profiler_steps += 1
            facts.step_us += dur
    facts.span_us = max(0.0, last - first) if gpu_ops or facts.profiler_steps else 0.0

    gpu_ops.sort(key=lambda op: (str(op[0]), op[1]))
    previous: dict[object, float] = {}
    for stream, ts, end, correlation in gpu_ops:
        key = str(stream)
        if key in previous:
            prev_end = previous[key]
            interval = ts - prev_end
            if interval > 0:
                launched = runtime_start.get(correlation)
                if launched is not None and launched > prev_end:
                    facts.idle_host_wait_us += interval
                elif interval < CONSECUTIVE_KERNEL_DELAY_US:
                    facts.idle_kernel_wait_us += interval
                else:
                    facts.idle_other_us += interval
            previous[key] = max(prev_end, end)
        else:
            previous[key] = end
    return facts


def _byte_count(value) -> int:
    """A copy's size in bytes as Kineto writes it (an integer); 0 for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return max(0, int(value))
