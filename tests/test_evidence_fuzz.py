"""Property-based fuzzing of what triage reads from a job's uploaded files: profiler traces, scripts,
logs and the command line. Whatever a job brought, its evidence is worked out (or the file is
skipped), never an exception that would leave the job untriaged. FUZZ_EXAMPLES as in
tests/test_archive_fuzz.py."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from fleet import logevents
from tests.test_archive_fuzz import _DELETE, EDITS, FUZZ, JSON_VALUES, _changed, mutate
from triage.evidence.logs import extract_log_evidence
from triage.evidence.scripts import command_facts, extract_script_evidence
from triage.evidence.traces import trace_facts

TRACE = {
    "distributedInfo": {"rank": 0},
    "traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 5, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 30,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 60,
         "dur": 40, "args": {"bytes": 4096, "correlation": 2}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 120},
        {"ph": "X", "cat": "cpu_op", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "ts": 0,
         "dur": 8},
    ],
}  # fmt: skip
SCRIPT = """import torch
from torch.utils.data import DataLoader
loader = DataLoader(ds, batch_size=32, num_workers=0)
for step, batch in enumerate(loader):
    loss = model(batch.cuda()).sum()
    loss.backward()
    print(loss.item())
    if step % 100 == 0:
        torch.save(model.state_dict(), "ckpt.pt")
"""
SHELL = "#!/bin/bash\npip install -r requirements.txt\nwget https://x/data.tar && tar xf data.tar\npython train.py\n"
LOG = "2026-11-02 10:00:05,000 Epoch 1/3\n2026-11-02 10:00:09,000 Saving checkpoint to /ckpt\n"


@FUZZ
@given(data=st.data(), changes=st.integers(1, 4), gzipped=st.booleans())
def test_mutated_traces_give_facts_or_none(data, changes, gzipped):
    trace = TRACE
    for _ in range(changes):
        trace = _changed(trace, data)
    content = b"" if trace is _DELETE else json.dumps(trace).encode()
    facts = trace_facts("traces/j1/rank0.json", gzip.compress(content) if gzipped else content)
    if facts is not None:  # what the finding stores: JSON that PostgreSQL's jsonb takes (no NaN, no Infinity)
        json.dumps(facts.as_dict(), allow_nan=False)


@FUZZ
@given(content=st.one_of(st.binary(max_size=512), JSON_VALUES.map(lambda v: json.dumps(v).encode())))
def test_arbitrary_trace_bytes_give_facts_or_none(content):
    trace_facts("traces/j1/t.json", content)
    trace_facts("traces/j1/t.json.gz", gzip.compress(content)[: max(1, len(content) // 2)])


@FUZZ
@given(edits=EDITS, cut=st.one_of(st.none(), st.integers(min_value=0)), text=st.text(max_size=200))
def test_mutated_scripts_and_logs_give_evidence(edits, cut, text):
    def mutated(source: str) -> str:
        return mutate(source.encode(), edits, cut).decode("utf-8", errors="replace") + text

    evidence = extract_script_evidence([("train.py", mutated(SCRIPT)), ("run.sh", mutated(SHELL)), ("x.py", text)])
    json.dumps([fact.as_dict() for fact in evidence.facts], allow_nan=False)  # stored with the findings
    extract_log_evidence([("stdout.log", mutated(LOG)), ("stderr.log", text)])
    command_facts(text)
    command_facts(mutated("torchrun --nproc_per_node=8 train.py --workers 0"))


# Log line timestamps of every shape the scanner recognises, at the edges of the calendar too:
# each is an aware UTC time, or none when it names no time UTC can say.
LOG_TIMES = st.builds(
    lambda date, clock, frac, zone, sep: f"{date.replace('-', sep)}T{clock}{frac}{zone}",
    st.one_of(
        st.sampled_from(["0001-01-01", "9999-12-31", "1969-12-31", "1970-01-01", "2024-02-29", "2026-02-30"]),
        st.from_regex(r"[0-9]{4}-[01][0-9]-[0-3][0-9]", fullmatch=True),
    ),
    st.from_regex(r"[0-2][0-9]:[0-6][0-9]:[0-6][0-9]", fullmatch=True),
    st.one_of(st.just(""), st.from_regex(r"[.,][0-9]{1,9}", fullmatch=True)),
    st.one_of(st.just(""), st.just("Z"), st.from_regex(r"[+-][0-2][0-9]:?[0-5][0-9]", fullmatch=True)),
    st.sampled_from(["-", "/"]),
)


@FUZZ
@given(times=st.lists(LOG_TIMES, min_size=1, max_size=5), bracket=st.booleans())
def test_log_lines_with_any_timestamp_give_events_with_utc_times_or_none(times, bracket):
    lines = [f"[{time}] Saving model checkpoint to /ckpt" if bracket else f"{time} Epoch 1/3" for time in times]
    events = logevents.extract_log_events("\n".join(lines))
    assert all(event.timestamp is None or event.timestamp.utcoffset() == timedelta(0) for event in events)
    extract_log_evidence([("stdout.log", "\n".join(lines))])


# -- what the fuzzing found ----------------------------------------------------------------------
def test_a_gzipped_trace_is_inflated_only_up_to_the_bound_and_a_truncated_one_skipped():
    import pytest

    from triage.evidence.traces import TraceTooLarge, load_trace

    bomb = gzip.compress(b"[" + b" " * 100_000 + b"]")  # 0.1 MB from a few hundred bytes
    assert len(bomb) < 1_000
    with pytest.raises(TraceTooLarge, match="inflates to more than 50000 bytes"):
        load_trace(bomb, max_bytes=50_000)
    assert load_trace(bomb, max_bytes=200_000) == []
    whole = gzip.compress(json.dumps(TRACE).encode())
    assert trace_facts("t.json.gz", whole).kernel_us == 30
    assert trace_facts("t.json.gz", whole[: len(whole) // 2]) is None


def test_trace_events_of_the_wrong_shape_are_passed_over():
    events = [
        *TRACE["traceEvents"],
        {"ph": "X", "cat": ["kernel"], "ts": 1, "dur": 1},  # a category that is not text
        {"ph": "X", "cat": "kernel", "ts": 1, "dur": float("inf")},  # not a finite duration
        {"ph": "X", "cat": "kernel", "ts": 1.7e308, "dur": 1.7e308},  # finite, but their sum is not
        {"ph": "X", "cat": "kernel", "ts": float("nan"), "dur": 1},
        {"ph": "X", "cat": "kernel", "ts": 1, "dur": 5, "args": True, "pid": [0]},  # args not an object
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 2, "dur": 1,
         "args": {"bytes": "lots", "correlation": [1]}},
    ]  # fmt: skip
    facts = trace_facts("t.json", json.dumps({"distributedInfo": True, "traceEvents": events}).encode())
    assert facts.rank is None
    assert facts.kernel_us == 30 + 5  # the gemm and the kernel whose args were not an object
    assert facts.h2d_pageable_bytes == 4096 and facts.h2d_pageable_us == 40 + 1
    json.dumps(facts.as_dict(), allow_nan=False)  # storable: no infinity crept in


def test_a_script_nested_too_deeply_for_the_parser_is_a_parse_error_and_the_others_are_read():
    scripts = [
        ("chain.py", "x = " + "+".join(["a"] * 100_000)),  # RecursionError in ast.parse
        ("minus.py", "x = " + "-" * 100_000 + "1"),  # MemoryError in ast.parse
        ("train.py", SCRIPT),
    ]
    evidence = extract_script_evidence(scripts)
    assert evidence.parse_errors == ["chain.py: nested too deeply to be read", "minus.py: nested too deeply to be read"]
    good = extract_script_evidence(scripts[2:])
    assert good.facts and evidence.facts == good.facts and evidence.frameworks == good.frameworks == {"torch"}
