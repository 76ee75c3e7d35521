"""Hand-written edge cases the demo generator does not produce, run through the pure evidence + rules.

Each job is a series built here plus the scripts and logs in tests/triage_cases/.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from triage.evidence import JobInfo, build_evidence
from triage.evidence.scripts import extract_script_evidence
from triage.evidence.traces import trace_facts
from triage.rules import Status, default_thresholds, triage
from triage.taxonomy import Category

CASES = Path(__file__).resolve().parent / "triage_cases"
START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


def series(minutes: float, util, *, period: int = 30, gpus: int = 1, mem=None, cpu=None, upto: float | None = None):
    """A normalised frame: util(t_minutes, gpu) -> %, mem(t, gpu) -> share of 80 GiB, cpu(t) -> %."""
    times = np.arange(0, (upto if upto is not None else minutes) * 60, period)
    rows = []
    for gpu in range(gpus):
        for t in times:
            row = {"timestamp": START + timedelta(seconds=float(t)), "host": "n1", "gpu": gpu}
            row["gpu_util"] = float(util(t / 60, gpu))
            if mem is not None:
                row["gpu_mem_used_mib"] = 81920 * float(mem(t / 60, gpu))
                row["gpu_mem_total_mib"] = 81920.0
            rows.append(row)
    if cpu is not None:
        for t in times:
            rows.append(
                {"timestamp": START + timedelta(seconds=float(t)), "host": "n1", "gpu": None, "cpu_util": cpu(t / 60)}
            )
    frame = pd.DataFrame(rows)
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    frame["gpu"] = frame["gpu"].astype("Int16")
    return frame


def run(minutes, frame, *, logs=(), scripts=(), traces=(), **job):
    info = JobInfo(start=START, end=START + timedelta(minutes=minutes), gpu_count=job.pop("gpu_count", 1), **job)
    evidence = build_evidence(
        info, frame, logs=list(logs), scripts=list(scripts), traces=list(traces), thresholds=default_thresholds()
    )
    return evidence, triage(evidence)


def categories(result) -> set[Category]:
    return {f.category for f in result.findings}


def save_stalls(saves: list[int], minutes: int, *, busy: float):
    """A 4-hour, 1-GPU job busy at `busy` %, idle for `minutes` from each of `saves` (minutes), memory 45 %."""
    frame = series(240, lambda t, g: 0 if any(s <= t < s + minutes for s in saves) else busy, mem=lambda t, g: 0.45)
    return saves, frame


def case(name: str) -> tuple[str, str]:
    return name, (CASES / name).read_text()


@pytest.mark.parametrize("offset_s", [0.001, 1.0, 7.0])
def test_hosts_sampled_out_of_step_are_judged_as_hosts_sampled_together(offset_s):
    """Each host's exporter is scraped at its own moment. On the grid of every distinct time each GPU
    filled one slot in eight, so eight out-of-step hosts looked covered an eighth of the time
    ("insufficient data"), and that grid grew with hosts x hosts x samples."""
    hosts = 8
    aligned = pd.concat(
        [series(60, lambda t, gpu: 20.0 if t > 40 else 85.0, gpus=2).assign(host=f"n{h}") for h in range(hosts)],
        ignore_index=True,
    )
    staggered = aligned.copy()
    staggered["timestamp"] += pd.to_timedelta(staggered["host"].str[1:].astype(int) * offset_s, unit="s")
    (together, expected), (apart, got) = (run(60, frame, gpu_count=2 * hosts) for frame in (aligned, staggered))
    assert apart.timeline.util.shape[0] <= together.timeline.util.shape[0] + 1
    assert got.coverage == pytest.approx(expected.coverage, abs=0.01) and expected.coverage > 0.95
    assert got.mean_util == pytest.approx(expected.mean_util, abs=0.5)
    assert got.status == expected.status and categories(got) == categories(expected)


def test_only_gpu_util_still_finds_an_idle_tail_and_nothing_it_cannot_see():
    # Busy at 35 % for 2 h, then 90 min of nothing: no memory, CPU, logs or scripts.
    frame = series(210, lambda t, g: 35 if t < 120 else 0)
    evidence, result = run(210, frame)
    assert evidence.metrics == ("gpu_util",)
    assert result.status == Status.CLASSIFIED
    assert categories(result) == {Category.UNRELEASED_JOB}
    tail = result.findings[0]
    assert tail.windows[0].seconds == pytest.approx(90 * 60, abs=60)
    assert tail.gpu_hours == pytest.approx(1.5, abs=0.05)


def _eval_log(printing: tuple[int, int], *, trained: int = 150) -> str:
    """A log stamped each minute of training, 'Training finished' at its end, then pycocotools-style
    evaluation lines each minute from `printing[0]` to `printing[1]` minutes."""

    def at(minute: float) -> str:
        return f"{START + timedelta(minutes=minute):%Y-%m-%d %H:%M:%S},000"

    lines = [f"{at(m)} INFO step {m * 100} loss 0.5" for m in range(0, trained)]
    lines.append(f"{at(trained)} INFO Training finished in 2:30:00")
    lines += [f"{at(m)} INFO Evaluating image batch {m - trained}/60 (COCO bbox)" for m in range(*printing)]
    return "\n".join(lines)


def test_an_unreleased_tails_share_says_what_it_is_a_share_of():
    """The share beside the tail's minutes read a bare "(29 %)"; it is of the run's length."""
    frame = series(210, lambda t, g: 40 if t < 150 else 0)
    _, result = run(210, frame, logs=[("train.log", _eval_log((0, 0)))])
    (held,) = [f for f in result.findings if f.category == Category.UNRELEASED_JOB]
    assert (
        held.summary == "Every GPU idled for the last 60 min of the run (29 % of its length) after the work was done."
    )


def test_an_idle_tail_while_the_log_keeps_printing_is_cpu_work_not_an_unreleased_allocation():
    # 150 min of training, then a 60-minute CPU-only COCO evaluation that logs every minute up to the end.
    # It was called "idle for the last 60 min of the run after the work was done".
    frame = series(210, lambda t, g: 40 if t < 150 else 0)
    log = _eval_log((152, 210))
    _, result = run(210, frame, logs=[("train.log", log)])
    assert Category.UNRELEASED_JOB not in categories(result)
    (work,) = [f for f in result.findings if f.category == Category.NON_DL_JOB]
    assert work.sub_cause == "cpu_work_after_training"
    assert work.summary.startswith("Every GPU idled for 60 min after the GPU work (29 % of the run) while the log kept")
    assert work.windows[0].seconds == pytest.approx(60 * 60, abs=60)
    assert work.gpu_hours == pytest.approx(1.0, abs=0.03)
    assert [line.text for line in work.log_lines] == [log.split("\n")[151], log.split("\n")[-1]]
    assert [line.line_no for line in work.log_lines] == [152, 209]


def test_an_idle_tail_whose_log_falls_silent_is_unreleased_from_the_last_line():
    # 40 minutes of CPU evaluation that logs, then 80 minutes of nothing until the walltime.
    frame = series(270, lambda t, g: 40 if t < 150 else 0)
    _, result = run(270, frame, logs=[("train.log", _eval_log((152, 190)))])
    found = {f.category: f for f in result.findings}
    assert set(found) == {Category.UNRELEASED_JOB, Category.NON_DL_JOB}
    held, work = found[Category.UNRELEASED_JOB], found[Category.NON_DL_JOB]
    assert held.windows[0].start == (START + timedelta(minutes=189)).timestamp()
    assert held.numbers["tail_minutes"] == pytest.approx(81, abs=1)
    assert held.summary.startswith(
        "Every GPU idled for the last 120 min of the run (44 % of its length); the log printed 38 lines"
    )
    assert held.summary.endswith("then nothing for 81 min (30 % of the run) while the allocation was held.")
    assert held.log_lines[-1].line_no == 189  # the last line printed
    assert work.numbers["cpu_minutes"] == pytest.approx(39, abs=1)
    assert held.gpu_hours + work.gpu_hours == pytest.approx(2.0, abs=0.05)


def test_an_unreleased_silence_quotes_the_line_before_it_and_the_one_after():
    # Evaluation lines 152-169 min, nothing for 91 min, then the job's closing lines at 260-269 min. The finding
    # quoted the last line of the tail (269 min, after the silence), not what the job printed when it went quiet.
    frame = series(270, lambda t, g: 40 if t < 150 else 0)
    log = _eval_log((152, 170)) + "".join(
        f"\n{START + timedelta(minutes=m):%Y-%m-%d %H:%M:%S},000 INFO writing results {m}" for m in range(260, 270)
    )
    _, result = run(270, frame, logs=[("train.log", log)])
    held = next(f for f in result.findings if f.category == Category.UNRELEASED_JOB)
    assert held.windows[0].start == (START + timedelta(minutes=169)).timestamp()
    assert held.windows[0].end == (START + timedelta(minutes=260)).timestamp()
    quoted = [line.text for line in held.log_lines]
    assert log.split("\n")[-1] not in quoted
    assert quoted[-2:] == [
        f"{START + timedelta(minutes=169):%Y-%m-%d %H:%M:%S},000 INFO Evaluating image batch 19/60 (COCO bbox)",
        f"{START + timedelta(minutes=260):%Y-%m-%d %H:%M:%S},000 INFO writing results 260",
    ]


def test_a_silent_tail_with_busy_cpus_is_cpu_work_not_an_unreleased_allocation():
    # No log line and no untimed print in the 60-min tail, but 8 of 32 cores busy (25 %) all through it: the job
    # worked on the CPU. It was called unreleased (0.85, "after the work was done").
    frame = series(210, lambda t, g: 40 if t < 150 else 0, cpu=lambda t: 30 if t < 150 else 25)
    log = _eval_log((0, 0))
    _, result = run(210, frame, logs=[("train.log", log)], cpu_count=32)
    assert Category.UNRELEASED_JOB not in categories(result)
    (work,) = [f for f in result.findings if f.category == Category.NON_DL_JOB]
    assert work.sub_cause == "cpu_work_after_training"
    assert work.summary.startswith("Every GPU idled for 60 min after the GPU work (29 % of the run) while the CPUs")
    assert "(the log printed nothing; CPU 25 % of the allocation, about 8 of 32 cores)" in work.summary
    # Busy for 30 min, then idle for 30: the last 30 are held, the first 30 are work.
    frame = series(210, lambda t, g: 40 if t < 150 else 0, cpu=lambda t: 30 if t < 180 else 0.05)
    _, result = run(210, frame, logs=[("train.log", log)], cpu_count=32)
    found = {f.category: f for f in result.findings}
    held = found[Category.UNRELEASED_JOB]
    assert held.windows[0].start == (START + timedelta(minutes=180)).timestamp()
    assert held.summary == (
        "Every GPU idled for the last 60 min of the run (29 % of its length); the CPUs kept working (at least 0.64 of "
        "32 cores busy for 10 min or more) until 11:00 UTC, then nothing for 30 min (14 % of the run) while the "
        "allocation was held."
    )
    assert found[Category.NON_DL_JOB].windows[0].end == held.windows[0].start
    # One noisy sample over the line in an idle tail is no work: still unreleased, the whole tail.
    frame = series(210, lambda t, g: 40 if t < 150 else 0, cpu=lambda t: 30 if t < 150 else (9 if t == 180 else 0.5))
    _, result = run(210, frame, logs=[("train.log", log)], cpu_count=32)
    assert categories(result) == {Category.UNRELEASED_JOB}
    assert result.findings[0].windows[0].seconds == pytest.approx(60 * 60, abs=60)


def test_an_idle_nodes_housekeeping_on_a_large_allocation_is_no_cpu_work_in_its_tail():
    # 4 nodes of 96 CPUs idle after training at about 1 % (each node's kernel, exporters and agents): 3.8 cores of
    # 384, every sample over half a core. It was called CPU work ("the CPUs kept working (at least 0.5 cores
    # busy)"), the held hour none of the finding; the demo's idle tails on such jobs tripped it on many seeds.
    noise = lambda t: 1.0 + 0.4 * math.sin(7 * t)  # noqa: E731
    frame = series(210, lambda t, g: 40 if t < 150 else 0, cpu=lambda t: 30 if t < 150 else noise(t))
    _, result = run(210, frame, logs=[("train.log", _eval_log((0, 0)))], cpu_count=384, node_count=4)
    assert categories(result) == {Category.UNRELEASED_JOB}
    assert result.findings[0].windows[0].seconds == pytest.approx(60 * 60, abs=60)
    # 10 % of them (38 cores) is work, as before.
    frame = series(210, lambda t, g: 40 if t < 150 else 0, cpu=lambda t: 30 if t < 150 else 10)
    _, result = run(210, frame, logs=[("train.log", _eval_log((0, 0)))], cpu_count=384, node_count=4)
    assert categories(result) == {Category.NON_DL_JOB}


def test_one_busy_sample_in_a_silence_with_untimed_prints_is_no_work_as_in_one_without():
    # The stretch with pycocotools' prints around it used a single sample over the line as work (to 11:50 UTC
    # here), the stretch without them a window of tail_floor_s: one test for both now.
    cpu = lambda t: 30 if t < 150 else (9 if t == 200 else 0.05)  # noqa: E731
    held = _coco_tail(QUICK_COCO, cpu=cpu, cpu_count=32)[Category.UNRELEASED_JOB]
    assert held.confidence == 0.85 and "were work" not in held.summary
    assert held.windows[0].start < (START + timedelta(minutes=153)).timestamp()
    frame = series(245, lambda t, g: 40 if t < 150 else 0, cpu=cpu)
    quiet = "\n".join([_eval_log((151, 152)), f"{START + timedelta(minutes=240):%Y-%m-%d %H:%M:%S},000 INFO bye"])
    _, result = run(245, frame, logs=[("train.log", quiet)], cpu_count=32)
    assert categories(result) == {Category.UNRELEASED_JOB}


def test_a_cpu_jobs_numbers_give_the_cpu_its_summary_quotes():
    # A CPU job whose GPU showed a blip now and then (10 % for 3 samples, while its CPU paused at 5 %): the summary
    # said "the CPUs worked (median 90 %)" and numbers.cpu_util was 5.0, the CPU at those blips alone.
    frame = series(120, lambda t, g: 10 if t in (30, 60, 90) else 0, mem=lambda t, g: 0.01,
                   cpu=lambda t: 5 if t in (30, 60, 90) else 90)  # fmt: skip
    _, result = run(120, frame, scripts=[("etl.py", "import pandas as pd\n")], cpu_count=16)
    (found,) = result.findings
    assert found.category == Category.NON_DL_JOB and found.sub_cause == "no_framework"
    assert "while the CPUs worked (median 90 %)" in found.summary and found.numbers["cpu_util"] == 90.0


def test_stalls_that_fill_most_of_training_are_still_stalls():
    # Remote reads stall 8 GPUs for 5 min (3 % util) between 3 min of work at 80 %: the stalls are most of the
    # samples, so the busiest GPU's median over training (the "usual peak") was the stall level itself and no stall
    # was below 0.3 times it. The finding was whole-run at 0.55 ("reads its data straight from remote storage.")
    # with no stall located; the usual peak is now over the samples in which a GPU worked.
    frame = series(240, lambda t, g: 3 if t >= 10 and (t - 10) % 8 < 5 else 80, gpus=8)
    log = "\n".join(
        f"{START + timedelta(minutes=m):%Y-%m-%d %H:%M:%S},000 INFO data: opening shard s3://bucket/train-{m:05d}.tar"
        for m in range(10, 234, 8)
    )
    script = ("train.py", 'import torch\nparser.add_argument("--data", default="s3://bucket")\n')
    _, result = run(240, frame, logs=[("train.log", log)], scripts=[script], gpu_count=8)
    found = next(f for f in result.findings if f.category == Category.REMOTE_DATA_READING)
    assert found.numbers["stalls"] == 28 and found.confidence == 0.95 and found.time_located
    # Known by a remote URL only: what it fetches (shards or samples) the scripts do not say.
    assert "the GPUs stalled 28 times (140 min) while data was fetched over the network." in found.summary


def test_host_syncs_are_counted_once_a_call_and_quoted_once_a_line():
    # `x.cpu().numpy()` waits for the GPU once, at `.cpu()`; the finding said "calls cpu, item, numpy", counted 3
    # calls per step for 2 and quoted line 7 twice.
    script = (
        "import torch\n"
        "def train(loader, model, optimizer):\n"
        "    for inputs, targets in loader:\n"
        "        loss = model(inputs.cuda()).sum()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        predictions = model.last.argmax(dim=-1).cpu().numpy()\n"
        "        print(loss.item())\n"
    )
    _, result = run(120, series(120, lambda t, g: 30), scripts=[("train.py", script)])
    (found,) = [f for f in result.findings if f.sub_cause == "sync_in_training_loop"]
    assert found.summary.startswith("The training step calls .cpu(), .item() on every step (2 calls on 2 lines)")
    assert [c.line for c in found.code] == [7, 8] and found.numbers["calls_per_step"] == 2


def test_a_dataloader_line_is_quoted_once_in_a_findings_evidence():
    # The demo's OOM-retry job builds its training DataLoader twice, word for word (again after fitting the
    # batch size): its gpu_memory_bound finding quoted the same DataLoader line twice, and so did the loader
    # findings. Two loaders built on one line were that line quoted twice.
    loader = "train_loader = DataLoader(train_set, shuffle=True, batch_size=16, num_workers=0)"
    script = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        f"{loader}\n"
        "args.batch_size = fit_batch_size(model, train_set, args.batch_size)\n"
        f"{loader}\n"
        "for inputs, targets in train_loader:\n"
        "    loss = model(inputs.cuda()).sum()\n"
    )
    _, result = run(120, series(120, lambda t, g: 30, mem=lambda t, g: 0.9), scripts=[("train.py", script)])
    found = {f.category: f for f in result.findings}
    assert {Category.GPU_MEMORY_BOUND, Category.DATA_PREPROCESSING, Category.HOST_GPU_TRANSFER} <= set(found)
    for category in (Category.GPU_MEMORY_BOUND, Category.DATA_PREPROCESSING, Category.HOST_GPU_TRANSFER):
        quoted = [c.text for c in found[category].code if "DataLoader(" in c.text]
        assert quoted == [loader], category
    one_line = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "train_loader, val_loader = DataLoader(ds, batch_size=8, num_workers=0), DataLoader(vs, batch_size=8)\n"
        "for x in train_loader:\n    loss = model(x.cuda()).sum()\n"
    )
    _, result = run(120, series(120, lambda t, g: 30, mem=lambda t, g: 0.3), scripts=[("train.py", one_line)])
    for finding in result.findings:
        lines = [c.line for c in finding.code]
        assert len(lines) == len(set(lines)), finding.category


COCO_PRINTS = """loading annotations into memory...
Done (t=0.52s)
creating index...
index created!
Loading and preparing results...
DONE (t=4.12s)
creating index...
index created!
Running per image evaluation...
Evaluate annotation type *bbox*
DONE (t=4790.12s).
Accumulating evaluation results...
DONE (t=310.55s).
 Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.412"""


# The same evaluation's prints with timings too short to fill the silence.
QUICK_COCO = COCO_PRINTS.replace("4790.12", "47.90").replace("310.55", "3.10")


def _coco_tail(prints: str, *, cpu=None, **job):
    """150 min of training, then a COCO evaluation stamped at its start (151 min) and end (240 min) only, its
    pycocotools `prints` without times in between, to the run's end at 245 min."""
    frame = series(245, lambda t, g: 40 if t < 150 else 0, cpu=cpu)
    end = f"{START + timedelta(minutes=240):%Y-%m-%d %H:%M:%S},000 INFO bbox mAP 0.412"
    _, result = run(245, frame, logs=[("train.log", "\n".join([_eval_log((151, 152)), prints, end]))], **job)
    return {f.category: f for f in result.findings}


def test_untimed_prints_whose_own_timings_fill_the_silence_are_cpu_work_not_an_unreleased_tail():
    # pycocotools times its evaluation itself ("DONE (t=4790.12s).", 85 min in all) between the stamped lines
    # around the 90 silent minutes: that stretch was the evaluation, not the allocation held. It was called
    # unreleased (0.5, "may have been work").
    found = _coco_tail(COCO_PRINTS)
    assert Category.UNRELEASED_JOB not in found
    work = found[Category.NON_DL_JOB]
    assert work.sub_cause == "cpu_work_after_training"
    assert [(w.start, w.end) for w in work.windows] == [
        ((START + timedelta(minutes=150)).timestamp(), (START + timedelta(minutes=245)).timestamp())
    ]
    assert work.summary.startswith(
        "Every GPU idled for 95 min after the GPU work (39 % of the run) while the job kept working: the log printed "
        "1 line with a time and 14 without; pycocotools' own timings add up to 85 min."
    )
    assert work.numbers["untimed_lines"] == 14 and work.numbers["timed_minutes"] == pytest.approx(85.1)
    assert [(line.text, line.estimated) for line in work.log_lines[-2:]] == [
        ("loading annotations into memory...", True),
        ("DONE (t=4790.12s).", True),
    ]


def test_untimed_prints_around_a_silence_without_cpu_metrics_are_said_and_lower_its_confidence():
    # Nothing tells what the 14 lines without a time were: the silence is unreleased at most 0.5 sure, and says so.
    held = _coco_tail(QUICK_COCO)[Category.UNRELEASED_JOB]
    assert held.confidence == 0.5 and held.numbers["untimed_lines"] == 14
    assert held.summary.endswith(
        "Then no line with a time for 90 min, only 14 lines without a time, printed between 10:31 and 12:00 UTC. "
        "The last 89 min (36 % of the run) may have been held idle or spent on work that prints no times; no CPU "
        "metrics tell, so this is unsure."
    )
    assert (held.log_lines[1].line_no, held.log_lines[1].text, held.log_lines[1].estimated) == (
        153,
        "loading annotations into memory...",
        True,
    )
    assert held.log_lines[-1].text.endswith("INFO bbox mAP 0.412")  # the line after the silence, quoted last
    # The same silence with nothing printed in it is as sure as before.
    quiet = "\n".join([_eval_log((151, 152)), f"{START + timedelta(minutes=240):%Y-%m-%d %H:%M:%S},000 INFO bye"])
    _, result = run(245, series(245, lambda t, g: 40 if t < 150 else 0), logs=[("train.log", quiet)])
    held = next(f for f in result.findings if f.category == Category.UNRELEASED_JOB)
    assert held.confidence == 0.85 and "untimed_lines" not in held.numbers and "unsure" not in held.summary


def test_idle_cpus_through_a_silence_with_untimed_prints_make_it_a_held_allocation():
    # 32 CPUs, 0.05 % used (0.016 cores) through the silence: nothing worked, whatever was printed around it.
    held = _coco_tail(QUICK_COCO, cpu=lambda t: 30 if t < 150 else 0.05, cpu_count=32)[Category.UNRELEASED_JOB]
    assert held.confidence == 0.85 and held.numbers["idle_cpu_cores"] == 0.02
    assert held.summary.endswith(
        "The last 89 min (36 % of the run) the allocation was held idle: the CPUs idled too (about 0.016 of 32 "
        "cores busy)."
    )
    # Without the job's CPU count its share tells: 0.05 % of any allocation is under an idle node's housekeeping.
    held = _coco_tail(QUICK_COCO, cpu=lambda t: 30 if t < 150 else 0.05)[Category.UNRELEASED_JOB]
    assert held.confidence == 0.85
    assert held.summary.endswith("the CPUs idled too (CPU 0.05 % of the allocation, whose CPU count is unknown).")
    # 1.8 % of an allocation of unknown size neither clearly worked (2 %) nor idled (1.5 %): unsure.
    held = _coco_tail(QUICK_COCO, cpu=lambda t: 30 if t < 150 else 1.8)[Category.UNRELEASED_JOB]
    assert held.confidence == 0.5
    assert "the CPUs, CPU 1.8 % of the allocation, whose CPU count is unknown, neither clearly" in held.summary


def test_idle_housekeeping_of_a_multi_node_allocation_through_a_silence_with_untimed_prints_is_held_idle():
    # 4 nodes of 96 CPUs idle at about 1 % after training (3.8 cores: kernel, exporters, agents) around pycocotools'
    # prints. The idle test was a fixed 0.1 core, so the held 89 min came out unsure (0.5, "neither clearly worked
    # nor idled"); it scales with the allocation as the busy test does.
    noise = lambda t: 1.0 + 0.4 * math.sin(7 * t)  # noqa: E731
    cpu = lambda t: 30 if t < 150 else noise(t)  # noqa: E731
    held = _coco_tail(QUICK_COCO, cpu=cpu, cpu_count=384, node_count=4)[Category.UNRELEASED_JOB]
    assert held.confidence == 0.85 and "unsure" not in held.summary
    assert held.summary.endswith("the CPUs idled too (about 3.8 of 384 cores busy).")
    # 1.8 % of them (7 cores) is neither clear work (2 %) nor idle (1.5 %): unsure, as before.
    held = _coco_tail(QUICK_COCO, cpu=lambda t: 30 if t < 150 else 1.8, cpu_count=384, node_count=4)[
        Category.UNRELEASED_JOB
    ]
    assert held.confidence == 0.5 and "the CPUs, about 6.9 of 384 cores busy, neither clearly worked" in held.summary
    # One node of 8 CPUs: 1.5 % (0.12 cores) is idle, 2.5 % (0.2 cores) is neither idle nor half a core of work.
    held = _coco_tail(QUICK_COCO, cpu=lambda t: 30 if t < 150 else 1.5, cpu_count=8)[Category.UNRELEASED_JOB]
    assert held.confidence == 0.85
    held = _coco_tail(QUICK_COCO, cpu=lambda t: 30 if t < 150 else 2.5, cpu_count=8)[Category.UNRELEASED_JOB]
    assert held.confidence == 0.5


def test_a_busy_cpu_in_a_silence_with_untimed_prints_is_work_up_to_its_last_busy_sample():
    # One core of 32 busy (3.2 %) for 40 min after training, then idle: the 40 min are the evaluation, the
    # 50 after it the allocation held; busy to the end, all of it is work.
    found = _coco_tail(QUICK_COCO, cpu=lambda t: 30 if t < 150 else (3.2 if t < 190 else 0.05), cpu_count=32)
    held, work = found[Category.UNRELEASED_JOB], found[Category.NON_DL_JOB]
    assert held.windows[0].start == (START + timedelta(minutes=190)).timestamp()
    assert held.confidence == 0.85 and held.numbers["tail_minutes"] == 50
    assert "The first 40 min of it were work (the CPUs worked until 11:10 UTC)." in held.summary
    assert work.windows[0].end == held.windows[0].start and work.gpu_hours == pytest.approx(0.75, abs=0.02)
    found = _coco_tail(QUICK_COCO, cpu=lambda t: 30 if t < 150 else 3.2, cpu_count=32)
    assert Category.UNRELEASED_JOB not in found
    assert "CPU 3 % of the allocation, about 1 of 32 cores" in found[Category.NON_DL_JOB].summary


def test_a_tail_with_only_the_closing_lines_and_a_hold_line_is_still_unreleased():
    frame = series(270, lambda t, g: 40 if t < 150 else 0)
    log = _eval_log((0, 0)) + f"\n{START + timedelta(minutes=160):%Y-%m-%d %H:%M:%S},000 INFO keeping the process alive"
    _, result = run(270, frame, logs=[("train.log", log)])
    assert categories(result) == {Category.UNRELEASED_JOB}
    assert result.findings[0].windows[0].seconds == pytest.approx(120 * 60, abs=60)


def test_only_gpu_util_periodic_gaps_are_called_checkpoints_with_low_confidence():
    # 4-minute stalls every 20 minutes; nothing else is known about the job.
    frame = series(240, lambda t, g: 0 if (t % 20) >= 16 and t < 235 else 40)
    _, result = run(240, frame)
    (finding,) = result.findings
    assert finding.category == Category.MODEL_CHECKPOINTING
    assert finding.sub_cause == "periodic_gaps" and finding.confidence < 0.5
    assert len(finding.windows) >= 10
    # Nothing showed a save: the summary says it is a guess from the pattern (it said the job "saved
    # checkpoints synchronously", as when log lines at the gaps show it).
    assert finding.summary.startswith("11 idle gaps (44 min in all), one about every 20 min: no log or code ties")
    assert "saved checkpoints" not in finding.summary


def test_only_gpu_util_steady_low_utilization_is_unclassified_not_guessed():
    frame = series(120, lambda t, g: 30)
    _, result = run(120, frame)
    assert result.status == Status.UNCLASSIFIED and result.findings == []


def test_no_logs_script_facts_still_find_pageable_copies_and_a_long_install():
    # 15 idle minutes at the start (the install of run.sh), then training at 30 %.
    frame = series(120, lambda t, g: 0 if t < 15 else 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[case("pageable_train.py"), case("install_run.sh")])
    found = {f.category: f for f in result.findings}
    assert set(found) == {Category.HOST_GPU_TRANSFER, Category.LENGTHY_LIBRARY_INSTALL}
    transfer = found[Category.HOST_GPU_TRANSFER]
    lines = {(c.path, c.line) for c in transfer.code}
    assert ("pageable_train.py", 18) in lines  # the DataLoader call, not the comment above it
    assert ("pageable_train.py", 20) in lines  # inputs.cuda() without non_blocking
    install = found[Category.LENGTHY_LIBRARY_INSTALL]
    assert install.confidence <= 0.5 and [c.line for c in install.code] == [4, 4]  # pip twice, one logical line


def test_logs_without_timestamps_are_counted_but_never_placed_on_the_time_line():
    log = "\n".join(
        ["Epoch 1/3", *[f"step {i} loss 0.5" for i in range(5)], "Saving model checkpoint", "Epoch 2/3", "done"]
    )
    frame = series(240, lambda t, g: 0 if (t % 30) >= 25 and t < 235 else 45, mem=lambda t, g: 0.6)
    evidence, result = run(240, frame, logs=[("stdout.log", log)], scripts=[case("checkpoint_train.py")])
    assert not evidence.logs.has_timestamps
    assert all(e.t is None for e in evidence.logs.events)
    finding = next(f for f in result.findings if f.category == Category.MODEL_CHECKPOINTING)
    assert finding.sub_cause == "periodic_gaps"
    assert [(c.path, c.line) for c in finding.code] == [("checkpoint_train.py", 11)]
    assert finding.summary.endswith("the training loop saves a checkpoint, and no log time ties the saves to the gaps.")


def test_keras_log_without_timestamps_with_a_save_per_gap_is_checkpointing():
    # Keras prints no times: "Epoch 3/8", progress bars, "Epoch 3: saving model to ...". The log's eight
    # saves and the eight regular gaps were not put together, because the job had a log (no finding).
    saves, frame = save_stalls([30 + 25 * k for k in range(8)], 5, busy=38)
    lines = []
    for k in range(1, 9):
        lines += [f"Epoch {k}/8", *[f"{i}/500 [====>....] - ETA: 10s - loss: 0.5" for i in range(0, 500, 100)]]
        lines.append(f"Epoch {k}: saving model to /ckpt/cp-{k:04d}.ckpt")
    _, result = run(240, frame, logs=[("stdout.log", "\n".join(lines))])
    finding = next(f for f in result.findings if f.category == Category.MODEL_CHECKPOINTING)
    assert finding.sub_cause == "periodic_gaps" and finding.confidence == 0.6
    assert [line.line_no for line in finding.log_lines] == [7 * k for k in range(1, 9)]
    assert finding.summary.endswith("the log, without times, has 8 checkpoint saves, about one per gap.")


@pytest.mark.parametrize("busy", [85, 38])
def test_fast_steps_between_untimed_saves_are_checkpointing_not_a_small_batch(busy):
    # Steps at 85 % and a 12-minute save every 20 minutes, in a Keras log without times: the mean is
    # under 50 %. The gaps tied to the saves without log times were left in the util the batch rule
    # judged, so the job was also told each step gave the GPU too little work. Slow steps (38 %) between
    # the same saves still are a small batch, judged without the gaps.
    saves = [10 + 20 * k for k in range(11)]
    frame = series(240, lambda t, g: 0 if any(s <= t < s + 12 for s in saves) else busy, mem=lambda t, g: 0.45)
    lines = []
    for k in range(1, 12):
        lines += [f"Epoch {k}/11", *[f"{i}/500 [====>....] - ETA: 10s - loss: 0.5" for i in range(0, 500, 100)]]
        lines.append(f"Epoch {k}: saving model to /ckpt/cp-{k:04d}.ckpt")
    _, result = run(240, frame, logs=[("stdout.log", "\n".join(lines))])
    assert result.mean_util < 50
    found = {f.category: f for f in result.findings}
    assert found[Category.MODEL_CHECKPOINTING].sub_cause == "periodic_gaps"
    if busy == 85:
        assert set(found) == {Category.MODEL_CHECKPOINTING}
    else:
        assert set(found) == {Category.MODEL_CHECKPOINTING, Category.IMPROPER_BATCH_SIZE}
        batch = found[Category.IMPROPER_BATCH_SIZE]
        assert batch.numbers["training_mean_util"] == pytest.approx(38, abs=0.5)
        assert "GPU util 38 % outside 11 regular idle gaps taken for checkpoint saves (<= 50 %)" in batch.summary


def test_a_jax_jobs_glog_save_lines_are_placed_at_their_gaps():
    # absl/glog lines carry month and day but no year ("I1102 08:30:03.000000 140 checkpoint_manager.py:1041]");
    # they had no time, so a log with nothing else left the saves unmatched and no finding was made.
    saves, frame = save_stalls([10 + 20 * k for k in range(11)], 12, busy=85)
    log = "\n".join(
        f"I{START + timedelta(minutes=s, seconds=3):%m%d %H:%M:%S}.000000 140 checkpoint_manager.py:1041] "
        f"[process=0] Saving checkpoint at step {s * 100}."
        for s in saves
    )
    evidence, result = run(240, frame, logs=[("train.log", log)])
    assert evidence.logs.has_timestamps
    finding = next(f for f in result.findings if f.category == Category.MODEL_CHECKPOINTING)
    assert finding.sub_cause == "sync_save" and len(finding.windows) == 11
    assert finding.log_lines[0].t == (START + timedelta(minutes=10, seconds=3)).timestamp()


@pytest.mark.parametrize(
    "stamp",
    [
        "[{t:%m/%d %H:%M:%S} fvcore.common.checkpoint]: ",  # detectron2 on a terminal
        "[{t:%m/%d %H:%M:%S}] fvcore.common.checkpoint INFO: ",  # detectron2's log.txt, PaddleDetection
        "{t:%m/%d %H:%M:%S} - mmengine - INFO - ",  # mmengine (MMDetection 3) on a terminal
    ],
)
def test_detectron2_and_mmengine_save_lines_are_placed_at_their_gaps(stamp):
    # Their stamps carry month and day but no year; the lines had no time, so the saves were never matched.
    saves, frame = save_stalls([10 + 20 * k for k in range(11)], 12, busy=85)
    log = "\n".join(
        stamp.format(t=START + timedelta(minutes=s, seconds=3)) + f"Saving checkpoint to ./output/model_{s:07d}.pth"
        for s in saves
    )
    evidence, result = run(240, frame, logs=[("log.txt", log)])
    assert evidence.logs.timestamped_lines == 11
    finding = next(f for f in result.findings if f.category == Category.MODEL_CHECKPOINTING)
    assert finding.sub_cause == "sync_save" and len(finding.windows) == 11
    assert finding.log_lines[0].t == (START + timedelta(minutes=10, seconds=3)).timestamp()


def test_an_untimed_log_with_saves_that_do_not_match_the_gaps_gives_no_checkpoint_finding():
    # Hugging Face prints three lines per save (one save here, not three), and there are eight gaps.
    saves, frame = save_stalls([30 + 25 * k for k in range(8)], 5, busy=38)
    log = (
        "Saving model checkpoint to out/checkpoint-500\nConfiguration saved in out/checkpoint-500/config.json\n"
        "Model weights saved in out/checkpoint-500/model.safetensors\n"
    )
    _, result = run(240, frame, logs=[("stdout.log", log)])
    assert Category.MODEL_CHECKPOINTING not in categories(result)


def test_memory_bound_and_checkpoint_stalled_job_gets_both_findings_with_located_waste():
    saves = [30 + 25 * k for k in range(8)]  # a 5-minute synchronous save every 25 minutes

    def util(t, g):
        return 0 if any(s <= t < s + 5 for s in saves) else 38

    frame = series(240, util, mem=lambda t, g: 0.93)
    log = "\n".join(
        f"2026-11-02 {8 + (s // 60):02d}:{s % 60:02d}:05,000 INFO __main__: Saving model checkpoint to /ckpt/{s}.pt"
        for s in saves
    )
    _, result = run(240, frame, logs=[("stdout.log", log)])
    found = {f.category: f for f in result.findings}
    assert set(found) == {Category.GPU_MEMORY_BOUND, Category.MODEL_CHECKPOINTING}
    checkpoint = found[Category.MODEL_CHECKPOINTING]
    assert len(checkpoint.windows) == 8 and [line.line_no for line in checkpoint.log_lines] == list(range(1, 9))
    assert checkpoint.gpu_hours == pytest.approx(8 * 5 / 60, rel=0.15)
    assert found[Category.GPU_MEMORY_BOUND].gpu_hours > 0
    total = sum(f.gpu_hours for f in result.findings)
    assert total == pytest.approx(result.unused_gpu_hours, rel=0.01)


@pytest.mark.parametrize(
    ("source", "dtype"),
    [
        ("with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x).sum()\n", "bfloat16"),
        ("scaler = torch.amp.GradScaler('cuda')\n", None),
        ("with torch.cuda.amp.autocast():\n    loss = model(x).sum()\n", None),
        ("model = model.half()\n", "float16"),
        ("args = TrainingArguments(output_dir='out', bf16=True)\n", "bf16"),
        ("trainer = L.Trainer(precision='16-mixed', devices=1)\n", "fp16"),
        ("trainer = L.Trainer(precision='bf16-mixed')\n", "bf16"),
        ("accelerator = Accelerator(mixed_precision='fp16')\n", "fp16"),
        ("cfg.SOLVER.AMP.ENABLED = True\n", None),  # detectron2
        ("optim_wrapper = dict(type='AmpOptimWrapper', optimizer=dict(type='AdamW', lr=1e-4))\n", None),  # mmengine
    ],
)
def test_mixed_precision_in_the_code_is_a_fact(source, dtype):
    evidence = extract_script_evidence([("train.py", "import torch\n" + source)])
    (fact,) = evidence.of("mixed_precision")
    assert fact.line == 2 and fact.detail["dtype"] == dtype


@pytest.mark.parametrize(
    "source",
    [
        "args = TrainingArguments(output_dir='out', fp16=False)\n",
        "trainer = L.Trainer(precision='32-true')\n",
        "accelerator = Accelerator(mixed_precision='no')\n",
        "# with torch.autocast('cuda'):\n",
    ],
)
def test_full_precision_settings_are_no_mixed_precision_fact(source):
    assert extract_script_evidence([("train.py", "import torch\n" + source)]).of("mixed_precision") == []


def test_a_call_over_several_lines_is_quoted_whole_without_its_comments():
    # The quote of `TrainingArguments(` written over several lines was its first line, "args = TrainingArguments(",
    # which shows none of what the finding is about (batch size, workers, precision).
    source = (
        "import torch\nfrom transformers import TrainingArguments\n"
        "args = TrainingArguments(\n"
        "    output_dir='out',  # where checkpoints go\n"
        "    per_device_train_batch_size=4,\n"
        "    # bf16=True,\n"
        "    dataloader_num_workers=8,\n"
        ")\n"
        "big = TrainingArguments(\n" + "".join(f"    option_{i}='{'x' * 10}',\n" for i in range(20)) + ")\n"
    )
    first, long = extract_script_evidence([("train.py", source)]).of("training_arguments")
    assert (first.line, first.as_dict()["code"]) == (
        3,
        "args = TrainingArguments(output_dir='out', per_device_train_batch_size=4, dataloader_num_workers=8)",
    )
    assert long.line == 9 and len(long.as_dict()["code"]) == 200 and long.as_dict()["code"].endswith("…")


def test_small_batch_guidance_gives_the_memory_room_as_an_upper_bound():
    # Peak memory 12 % at batch 8 was "room for about 6x the batch (8 -> 48 per GPU)", as if all of it grew with
    # the batch; the weights, gradients and optimizer state in it do not.
    from triage.guidance import guidance_for

    numbers = {"training_mean_util": 26.0, "peak_gpu_mem_pct": 12.1, "batch_size": 8}
    guide = guidance_for(Category.IMPROPER_BATCH_SIZE, "small_batch", numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert guide["change"].endswith(
        "For this job: peak GPU memory 12 % leaves room for up to about 6x the batch (8 -> 48 per GPU); weights, "
        "gradients and optimizer state do not grow with it, so raise it in steps and watch the peak."
    )


def test_small_batch_guidance_under_zero_offload_says_the_room_is_the_offloads():
    # Under ZeRO offload the GPU memory a small-batch finding measures is low because the optimizer state lives
    # in host memory: "room for up to 2x the batch" held only while the job keeps offloading, which the offload
    # finding's own advice (turn it off if the model fits) would take back.
    from triage.guidance import guidance_for

    numbers = {
        "training_mean_util": 30.0,
        "peak_gpu_mem_pct": 35.0,
        "batch_size": 8,
        "zero_offload": "the optimizer state to cpu",
    }
    guide = guidance_for(Category.IMPROPER_BATCH_SIZE, "small_batch", numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert guide["change"].endswith(
        "For this job: peak GPU memory 35 % leaves room for up to about 2x the batch (8 -> 16 per GPU); weights, "
        "gradients and optimizer state do not grow with it, so raise it in steps and watch the peak. That room is "
        "measured while ZeRO offloads the optimizer state to cpu: ending the offload takes part of it back."
    )


@pytest.mark.parametrize(
    ("sub_cause", "before", "after"),
    [
        ("cli", "subprocess.run(['aws', 's3', 'cp'", "uploader.submit(subprocess.run"),
        ("mlflow", "mlflow.log_artifacts(local", "uploader.submit(client.log_artifacts, run_id"),
        ("sdk", "client.upload_file(", "uploader.submit(client.upload_file"),
    ],
)
def test_upload_guidance_shows_the_kind_of_upload_the_job_does(sub_cause, before, after):
    # A job uploading with mlflow.log_artifacts or boto3's upload_file was shown an `aws s3 cp` subprocess to move
    # into a thread, which it does not have.
    from triage.guidance import guidance_for

    guide = guidance_for(Category.INTERMEDIATE_UPLOAD, sub_cause, {"uploads": 3}, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert guide["before"].startswith(before) and after in guide["after"]


def test_the_batch_size_is_the_training_loaders_not_the_evaluation_loaders():
    # The evaluation loader, written first with twice the batch, was read as the job's batch size ("Batch size 64
    # per GPU") and quoted beside the training loader.
    script = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "def main(train_set, val_set, model, optimizer):\n"
        "    val_loader = DataLoader(val_set, batch_size=64, pin_memory=True, num_workers=4)\n"
        "    train_loader = DataLoader(train_set, batch_size=32, pin_memory=True, num_workers=4)\n"
        "    for inputs, targets in train_loader:\n"
        "        loss = model(inputs.cuda(non_blocking=True)).sum()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
    )
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.3)
    _, result = run(120, frame, scripts=[("train.py", script)])
    batch = next(f for f in result.findings if f.category == Category.IMPROPER_BATCH_SIZE)
    assert batch.numbers["batch_size"] == 32 and [c.line for c in batch.code] == [5]


def test_mixed_precision_flags_on_a_launch_line_are_a_fact():
    script = (
        "#!/bin/bash\naccelerate launch --mixed_precision bf16 train.py\ntorchrun train.py --bf16\n"
        "python t.py --fp16 False\n"
    )
    facts = extract_script_evidence([("run.sh", script)]).of("mixed_precision")
    assert [(f.line, f.detail["dtype"]) for f in facts] == [(2, "bf16"), (3, "bf16")]


@pytest.mark.parametrize(
    ("source", "precision", "first_change"),
    [
        ("loss = model(x).sum()\n", "fp32", "Train in mixed precision"),
        ("with torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x).sum()\n", "mixed",
         "The job already trains in mixed precision"),
        (None, None, "Train in mixed precision (`torch.autocast` with bf16, or fp16 with `torch.amp.GradScaler`) if"),
    ],
)  # fmt: skip
def test_memory_bound_guidance_follows_the_precision_the_code_shows(source, precision, first_change):
    # The guidance said "if the job runs in fp32" to every job: nothing looked at whether its code used autocast.
    from triage.guidance import guidance_for

    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.93)
    scripts = [("train.py", "import torch\n" + source)] if source else []
    _, result = run(120, frame, scripts=scripts)
    finding = next(f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND)
    assert finding.numbers["precision"] == precision
    guide = guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert guide["change"].startswith(first_change)
    if precision == "mixed":
        assert "`torch.autocast` with bf16" not in guide["change"] and [c.line for c in finding.code] == [2]
        assert guide["change"].endswith("`with torch.autocast('cuda', dtype=torch.bfloat16):` (train.py:2) sets mixed "
                                        "precision already.")  # fmt: skip
        assert "gradient_checkpointing_enable()" in guide["after"]
    if precision == "fp32":
        assert guide["change"].endswith(
            "For this job: none of its code, configs or launch flags sets autocast, GradScaler, bf16 or fp16 (fp32)."
        )


DS_BF16 = (
    '{\n  "train_micro_batch_size_per_gpu": 4,\n  "bf16": {\n    "enabled": true\n  },\n'
    '  "zero_optimization": {"stage": 2}\n}\n'
)


@pytest.mark.parametrize(
    ("path", "text", "line", "setting", "dtype"),
    [
        ("ds_config.json", DS_BF16, 4, "bf16.enabled", "bf16"),
        ("ds_config.json", '{"fp16": {"enabled": true, "loss_scale": 0}, "zero_optimization": {"stage": 3}}', 1,
         "fp16.enabled", "fp16"),
        ("ds_config.yaml", "train_batch_size: 64\nfp16:\n  enabled: true\n", 3, "fp16.enabled", "fp16"),
        ("accelerate.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: bf16\n",
         3, "mixed_precision", "bf16"),
        ("conf/config.yaml", "model:\n  name: vit\ntrainer:\n  devices: 8\n  precision: bf16-mixed\n", 5,
         "trainer.precision", "bf16"),
        ("configs/mask_rcnn.yaml",
         "_BASE_: Base-RCNN-FPN.yaml\nSOLVER:\n  IMS_PER_BATCH: 16\n  AMP:\n    ENABLED: true\n",
         5, "SOLVER.AMP.ENABLED", None),
        ("llama_sft.yaml", "model_name_or_path: meta-llama/Llama-3-8B\nbf16: true\n", 2, "bf16", "bf16"),
    ],
)  # fmt: skip
def test_mixed_precision_in_a_config_file_is_a_fact(path, text, line, setting, dtype):
    # DeepSpeed's JSON, Accelerate's config, Hydra/Lightning, detectron2 and LLaMA-Factory YAML were never read:
    # a job whose bf16 lived there was told it trained in fp32.
    (fact,) = extract_script_evidence([(path, text)]).of("mixed_precision")
    assert (fact.path, fact.line, fact.detail["call"], fact.detail["dtype"]) == (path, line, setting, dtype)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("accelerate.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: no\n"),
        ("accelerate.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"),  # its default
        ("ds_config.json", '{"train_batch_size": 64, "fp16": {"enabled": false}}'),
        ("ds_config.json", '{"train_batch_size": 64, "zero_optimization": {"stage": 2}}'),  # DeepSpeed's default
        ("conf/trainer.yaml", "trainer:\n  precision: 32\n"),
    ],
)
def test_full_precision_in_a_config_file_is_a_fact(path, text):
    evidence = extract_script_evidence([(path, text)])
    assert evidence.of("mixed_precision") == [] and len(evidence.of("full_precision")) == 1


def test_a_config_that_cannot_be_read_or_expands_is_passed_over():
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    evidence = extract_script_evidence([("bomb.yaml", bomb), ("broken.json", '{"bf16": {"enabled": tru'),
                                        ("deep.yaml", "[" * 5000 + "]" * 5000)])  # fmt: skip
    assert evidence.of("mixed_precision") == [] and len(evidence.parse_errors) == 2


@pytest.mark.parametrize(
    ("command", "dtype"),
    [
        ("torchrun --nproc_per_node 8 train.py --bf16", "bf16"),
        ("accelerate launch --mixed_precision fp16 train.py", "fp16"),
        ("python train.py trainer.precision=bf16-mixed", "bf16"),
        ("python train.py +amp=true", None),
    ],
)
def test_mixed_precision_on_the_jobs_command_line_is_seen(command, dtype):
    # command_facts only told the kinds of commands; --bf16 on the submitted command was never seen.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.93)
    _, result = run(120, frame, scripts=[("train.py", "import torch\nloss = model(x).sum()\n")], command=command)
    finding = next(f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND)
    assert finding.numbers["precision"] == "mixed"
    quoted = [c for c in finding.code if c.kind == "mixed_precision"]
    assert quoted[0].path == "job command" and quoted[0].detail["dtype"] == dtype


HF_SCRIPT = (
    "import torch\nfrom transformers import HfArgumentParser, Trainer, TrainingArguments\n"
    "args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
)
DS_SCRIPT = "import deepspeed\nengine, *_ = deepspeed.initialize(args=args, model=model)\n"
ACC_SCRIPT = "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
# What `accelerate config` writes when asked for a DeepSpeed config file: no mixed_precision of its own.
ACC_DS = """compute_environment: LOCAL_MACHINE
debug: false
deepspeed_config:
  deepspeed_config_file: configs/ds_zero3.json
  zero3_init_flag: true
distributed_type: DEEPSPEED
machine_rank: 0
num_machines: 1
num_processes: 8
"""
DS_AUTO = '{"train_micro_batch_size_per_gpu": "auto", "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}}'
ACC_DS_LAUNCH = "accelerate launch --use_deepspeed --deepspeed_config_file ds.json {}train.py"
MM_TRAIN = (
    "from mmengine.config import Config\nfrom mmengine.runner import Runner\n"
    "cfg = Config.fromfile(args.config)\nrunner = Runner.from_cfg(cfg)\nrunner.train()\n"
)
MM_CONFIG = """default_scope = 'mmdet'
model = dict(type='RTMDet', data_preprocessor=dict(type='DetDataPreprocessor', batch_augments=None))
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=0.004, weight_decay=0.05),
    paramwise_cfg=dict(norm_decay_mult=0, bias_decay_mult=0, bypass_duplicate=True))
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=300, val_interval=10)
"""
MM_CHILD = """_base_ = './_base_/rtm.py'
optim_wrapper = dict(optimizer=dict(lr=0.001))
train_cfg = dict(max_epochs=36)
"""

# A fine-tuning config that switches its base's AmpOptimWrapper back to fp32.
MM_BACK = """_base_ = './_base_/rtm.py'
optim_wrapper = dict(
    _delete_=True,
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=0.001))
"""
MM_AMP = MM_CONFIG.replace("'OptimWrapper'", "'AmpOptimWrapper'")
MM_APEX = "optim_wrapper = dict(type='ApexOptimWrapper'{}, optimizer=dict(type='SGD', lr=0.02))\n"


@pytest.mark.parametrize(
    ("scripts", "command", "precision", "unknown"),
    [
        # the config it names was brought and sets bf16
        ([("train.py", HF_SCRIPT), ("ds_config.json", DS_BF16)], "deepspeed train.py --deepspeed ds_config.json",
         "mixed", None),
        # the config it names was not brought
        ([("train.py", HF_SCRIPT)], "deepspeed train.py --deepspeed configs/ds_config.json", None,
         "its command names configs/ds_config.json, which the job did not bring"),
        # HfArgumentParser reads --bf16 from a command line nobody saw
        ([("train.py", HF_SCRIPT)], "", None,
         "`args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()` reads --bf16/--fp16 from the "
         "command line, and no launch line of the job was seen"),
        # ... and one that was seen, without --bf16: fp32
        ([("train.py", HF_SCRIPT)], "torchrun train.py --output_dir out", "fp32", None),
        # deepspeed.initialize without a DeepSpeed config
        ([("train.py", DS_SCRIPT)], "deepspeed train.py", None,
         "`engine, *_ = deepspeed.initialize(args=args, model=model)` takes fp16/bf16 from a DeepSpeed config, and "
         "the job brought no such file"),
        # DeepSpeed's "auto" leaves it to the HF Trainer's flags, unseen
        ([("train.py", "import torch\n"), ("ds.json", '{"train_batch_size": "auto", "bf16": {"enabled": "auto"}}')],
         "", None, '`bf16.enabled: auto` in ds.json leaves it to the trainer\'s --bf16/--fp16, and no launch line of '
         "the job was seen"),
        # autocast(enabled=args.amp): the flag decides, and the launch line does not set it
        ([("train.py", "import torch\nwith torch.autocast('cuda', enabled=args.amp):\n    y = model(x)\n")],
         "python train.py --epochs 3", "fp32", None),
        # Accelerate handing DeepSpeed its own file, which was brought and sets bf16 / sets none (fp32)
        ([("train.py", ACC_SCRIPT), ("accelerate.yaml", ACC_DS), ("ds_zero3.json", DS_BF16)],
         "accelerate launch --config_file accelerate.yaml train.py", "mixed", None),
        ([("train.py", ACC_SCRIPT), ("accelerate.yaml", ACC_DS),
          ("ds_zero3.json", '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 3}}')],
         "accelerate launch --config_file accelerate.yaml train.py", "fp32", None),
        # ... not brought: Accelerate's own default (fp32) is not the job's precision
        ([("train.py", ACC_SCRIPT), ("accelerate.yaml", ACC_DS)],
         "accelerate launch --config_file accelerate.yaml train.py", None,
         "accelerate.yaml:4 names configs/ds_zero3.json, which the job did not bring"),
        # DeepSpeed's "auto" under Accelerate is Accelerate's mixed_precision: `no` on the launch line, in
        # Accelerator(...) or (by default) in the Accelerate config brought is fp32; nothing that sets it is unknown
        ([("train.py", ACC_SCRIPT), ("ds.json", DS_AUTO)], ACC_DS_LAUNCH.format("--mixed_precision no "), "fp32", None),
        # ... the same as `python -m accelerate.commands.launch` (its `--mixed_precision no` went unread: unknown)
        ([("train.py", ACC_SCRIPT), ("ds.json", DS_AUTO)], ACC_DS_LAUNCH.format("--mixed_precision no ").replace(
          "accelerate launch", "python -m accelerate.commands.launch"), "fp32", None),
        ([("train.py", ACC_SCRIPT.replace("Accelerator()", "Accelerator(mixed_precision='no')")), ("ds.json", DS_AUTO)],
         "", "fp32", None),
        ([("train.py", ACC_SCRIPT), ("accelerate.yaml", ACC_DS), ("configs/ds_zero3.json", DS_AUTO)],
         "accelerate launch --config_file accelerate.yaml train.py", "fp32", None),
        ([("ds.json", DS_AUTO), ("train.py", ACC_SCRIPT)], ACC_DS_LAUNCH.format(""), None,
         "`fp16.enabled: auto` in ds.json takes Accelerate's mixed_precision, which nothing the job brought sets "
         "(`accelerate launch --mixed_precision`, Accelerate's config file or `Accelerator(mixed_precision=...)`)"),
        # ... handed on the launch line (`accelerate launch --deepspeed_config_file`): the file was not brought, so
        # precision cannot be told (it blamed Accelerate's config file); brought, it settles it (it was unknown)
        ([("train.py", ACC_SCRIPT)], ACC_DS_LAUNCH.replace("ds.json", "configs/ds_zero3.json").format(""), None,
         "its command names configs/ds_zero3.json, which the job did not bring"),
        ([("train.py", ACC_SCRIPT), ("ds.json", '{"zero_optimization": {"stage": 3}}')], ACC_DS_LAUNCH.format(""),
         "fp32", None),
        ([("train.py", ACC_SCRIPT), ("configs/ds.json", DS_BF16)],
         "accelerate launch --deepspeed_config_file=configs/ds.json train.py", "mixed", None),
        # an mmengine config in Python: fp32 OptimWrapper, AmpOptimWrapper, a _base_ brought or not
        ([("tools/train.py", MM_TRAIN), ("configs/rtm.py", MM_CONFIG)], "python tools/train.py configs/rtm.py",
         "fp32", None),
        ([("tools/train.py", MM_TRAIN), ("configs/rtm.py", MM_CONFIG.replace("'OptimWrapper'", "'AmpOptimWrapper'"))],
         "python tools/train.py configs/rtm.py", "mixed", None),
        ([("tools/train.py", MM_TRAIN), ("configs/rtm_ft.py", MM_CHILD), ("configs/_base_/rtm.py", MM_CONFIG)],
         "python tools/train.py configs/rtm_ft.py", "fp32", None),
        ([("tools/train.py", MM_TRAIN), ("configs/rtm_ft.py", MM_CHILD)], "python tools/train.py configs/rtm_ft.py",
         None, "configs/rtm_ft.py:1 names ./_base_/rtm.py, which the job did not bring"),
        # the child's own wrapper type wins over its base's: AmpOptimWrapper inherited is mixed, switched back fp32
        ([("tools/train.py", MM_TRAIN), ("configs/rtm_ft.py", MM_CHILD), ("configs/_base_/rtm.py", MM_AMP)],
         "python tools/train.py configs/rtm_ft.py", "mixed", None),
        ([("tools/train.py", MM_TRAIN), ("configs/rtm_ft32.py", MM_BACK), ("configs/_base_/rtm.py", MM_AMP)],
         "python tools/train.py configs/rtm_ft32.py", "fp32", None),
        # mmengine's ApexOptimWrapper is AMP through NVIDIA Apex: O1 (its default) and O2 mixed, O3 pure fp16, O0 fp32
        # (it was read as no wrapper type at all: fp32 in a config without _base_, unknown with one not brought)
        ([("tools/train.py", MM_TRAIN), ("configs/rtm.py", MM_APEX.format(""))],
         "python tools/train.py configs/rtm.py", "mixed", None),
        ([("tools/train.py", MM_TRAIN), ("configs/rtm.py", MM_APEX.format(", opt_level='O2'"))],
         "python tools/train.py configs/rtm.py", "mixed", None),
        ([("tools/train.py", MM_TRAIN), ("configs/rtm.py", "_base_ = './_base_/rtm.py'\n" + MM_APEX.format(
          ", opt_level='O3'"))], "python tools/train.py configs/rtm.py", "mixed", None),
        ([("tools/train.py", MM_TRAIN), ("configs/rtm_ft.py", MM_CHILD.splitlines()[0] + "\n" + MM_APEX.format(
          ", opt_level='O0'")),
          ("configs/_base_/rtm.py", MM_AMP)], "python tools/train.py configs/rtm_ft.py", "fp32", None),
    ],
)  # fmt: skip
def test_memory_bound_precision_from_configs_and_flags(scripts, command, precision, unknown):
    # Only .py code was read: a job whose precision lived in a config or on its command line was told it trained
    # in fp32, and one whose code left it to a file it did not bring was told so as confidently.
    from triage.guidance import guidance_for

    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.93)
    _, result = run(120, frame, scripts=scripts, command=command)
    finding = next(f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND)
    assert finding.numbers["precision"] == precision
    assert finding.numbers.get("precision_unknown") == unknown
    guide = guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    if any(path == "configs/rtm.py" for path, _ in scripts) and precision == "fp32":
        # the wrapper's call spans lines: its quote says what it sets, not "optim_wrapper = dict("
        assert [fact.text for fact in finding.code] == ["optim_wrapper = dict(type='OptimWrapper', ...)"]
    if any(path == "configs/rtm_ft32.py" for path, _ in scripts):
        assert [(fact.path, fact.line) for fact in finding.code] == [("configs/rtm_ft32.py", 2)]
    if precision == "fp32" and any(text == DS_AUTO for _, text in scripts):
        # the "auto" and what settles it are quoted: the reader sees why it is fp32
        assert finding.code[0].text == "fp16.enabled: auto" and len(finding.code) >= 2
    if unknown:
        assert "(fp32)" not in guide["change"]
        assert guide["change"].endswith(
            f"For this job: whether it already trains in mixed precision cannot be told: {unknown}. Check that first."
        )
        assert finding.code  # the line that leaves it open is quoted


@pytest.mark.parametrize(
    ("scripts", "command", "set_by"),
    [
        ([("train.py", "import torch\nargs = TrainingArguments(\n    output_dir='out',\n    bf16=False,\n)\n")], "",
         "`bf16=False` (train.py:2)"),
        ([("train.py", "import torch\ntrainer = L.Trainer(precision='32-true')\n")], "",
         "`precision='32-true'` (train.py:2)"),
        ([("train.py", ACC_SCRIPT), ("ds.json", DS_AUTO)], ACC_DS_LAUNCH.format("--mixed_precision no "),
         "`--mixed_precision no` (the job's command)"),
        ([("tools/train.py", MM_TRAIN), ("configs/rtm.py", MM_CONFIG)], "python tools/train.py configs/rtm.py",
         "`type='OptimWrapper'` (configs/rtm.py:3)"),
    ],
)  # fmt: skip
def test_memory_bound_guidance_names_the_setting_that_keeps_it_in_fp32(scripts, command, set_by):
    # The demo's fp32 HF jobs set bf16=False in their TrainingArguments, and were told "none of its code, configs or
    # launch flags sets autocast, GradScaler, bf16 or fp16": true, and no help finding the switch to turn.
    from triage.guidance import guidance_for

    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.93)
    _, result = run(120, frame, scripts=scripts, command=command)
    finding = next(f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND)
    assert finding.numbers["precision"] == "fp32" and finding.numbers["precision_set_by"] == set_by
    guide = guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert guide["change"].endswith(
        f"For this job: {set_by} keeps it in fp32; set bf16 there first (fp16 with loss scaling on GPUs without "
        "bf16, such as V100 and T4)."
    )
    assert len({(c.path, c.line) for c in finding.code}) == len(finding.code)  # no line quoted twice


@pytest.mark.parametrize(
    ("scripts", "command", "set_by"),
    [
        ([("train.py", HF_SCRIPT.replace("args, =", "x, =") + "args = TrainingArguments(output_dir='o', bf16=True)\n")],
         "", "`args = TrainingArguments(output_dir='o', bf16=True)` (train.py:4)"),
        ([("train.py", "import torch\n"), ("ds_config.json", DS_BF16)], "deepspeed train.py --deepspeed ds_config.json",
         "`bf16.enabled: true` (ds_config.json:4)"),
        ([("tools/train.py", MM_TRAIN), ("configs/rtm.py", MM_APEX.format(""))], "python tools/train.py configs/rtm.py",
         "`optim_wrapper = dict(type='ApexOptimWrapper', optimizer=dict(type='SGD', lr=0.02))` (configs/rtm.py:1)"),
    ],
)  # fmt: skip
def test_memory_bound_guidance_names_the_setting_that_already_sets_mixed_precision(scripts, command, set_by):
    # A job already in mixed precision was told 'its code sets mixed precision (quoted with the evidence)', leaving
    # the reader to find which of the quoted lines does.
    from triage.guidance import guidance_for

    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.93)
    _, result = run(120, frame, scripts=scripts, command=command)
    finding = next(f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND)
    assert finding.numbers["precision"] == "mixed" and finding.numbers["precision_set_by"] == set_by
    guide = guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert f"For this job: {set_by} sets mixed precision already." in guide["change"]


def test_autocast_switched_off_is_no_mixed_precision():
    source = "import torch\nwith torch.autocast('cuda', enabled=False):\n    y = model(x)\n"
    assert extract_script_evidence([("train.py", source)]).of("mixed_precision") == []


def test_fast_steps_stalled_by_long_saves_are_checkpointing_not_a_small_batch():
    # Steps run at 85 %; a 12-minute save to NFS every 20 minutes brings the run's mean to 38 %. The
    # batch-size rule judged that 38 % and told the team each step gave the GPU too little work.
    saves, frame = save_stalls([10 + 20 * k for k in range(11)], 12, busy=85)
    log = "\n".join(
        f"{(START + timedelta(minutes=s, seconds=3)):%Y-%m-%d %H:%M:%S},000 Saving model checkpoint to /nfs/c/{s}.pt"
        for s in saves
    )
    _, result = run(240, frame, logs=[("stdout.log", log)])
    assert result.mean_util < 50
    assert categories(result) == {Category.MODEL_CHECKPOINTING}
    # It says where the saves went, which makes each one slow (the sub-cause said so; the summary did not).
    (found,) = result.findings
    assert found.sub_cause == "sync_save_remote"
    assert "saved checkpoints synchronously to NFS (/nfs/c/); the GPUs wait" in found.summary
    s3 = log.replace("/nfs/c/", "s3://ckpt/run-7/")
    (found,) = run(240, frame, logs=[("stdout.log", s3)])[1].findings
    assert "synchronously to remote storage (s3://ckpt/run-7/); the GPUs wait" in found.summary


def test_slow_steps_between_saves_are_a_small_batch_judged_without_the_saves():
    saves, frame = save_stalls([30 + 25 * k for k in range(8)], 5, busy=38)
    log = "\n".join(
        f"{(START + timedelta(minutes=s, seconds=3)):%Y-%m-%d %H:%M:%S},000 INFO Saving model checkpoint to /c/{s}.pt"
        for s in saves
    )
    _, result = run(240, frame, logs=[("stdout.log", log)])
    found = {f.category: f for f in result.findings}
    assert set(found) == {Category.MODEL_CHECKPOINTING, Category.IMPROPER_BATCH_SIZE}
    batch = found[Category.IMPROPER_BATCH_SIZE]
    assert batch.numbers["training_mean_util"] == pytest.approx(38, abs=0.5)
    assert "GPU util 38 % outside the stalls of 8 checkpoint saves" in batch.summary


@pytest.mark.parametrize(("busy", "expected"), [(70, set()), (30, {Category.IMPROPER_BATCH_SIZE})])
def test_eight_gpus_of_which_one_works_judge_the_batch_on_the_gpu_that_worked(busy, expected):
    # 7 of 8 GPUs idle: the job's mean is under 10 %, but GPU 0's steps are what the batch size decides.
    frame = series(120, lambda t, g: busy if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)
    _, result = run(120, frame, gpu_count=8)
    assert categories(result) == {Category.GPU_OVERSUBSCRIPTION} | expected
    if expected:
        batch = next(f for f in result.findings if f.category == Category.IMPROPER_BATCH_SIZE)
        assert batch.summary.startswith("Training-phase GPU util 30 % on the 1 GPU that worked (<= 50 %)")


@pytest.mark.parametrize(("cpu", "found"), [(7.0, True), (3.0, False)])
def test_no_loader_workers_with_one_busy_core_of_sixteen_is_data_preprocessing(cpu, found):
    # num_workers=0: the training process loads every batch on one core, 1/16 of the allocation. With a
    # CPU metric at 7 % the rule saw no saturation and said nothing (it spoke only without a CPU metric).
    # At 3 % (half a core) the process is not even busy loading: then it is no loader problem.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6, cpu=lambda t: cpu)
    _, result = run(120, frame, scripts=[case("no_workers_train.py")], cpu_count=16)
    assert categories(result) == ({Category.DATA_PREPROCESSING} if found else set())
    if found:
        (finding,) = result.findings
        assert finding.sub_cause == "no_workers" and finding.confidence == 0.7
        assert "about 1.1 cores busy: all that 1 training process loading its own batches can use" in finding.summary
        assert [c.line for c in finding.code] == [20]


def _remote_shard_log(minutes: range) -> str:
    return "\n".join(
        f"{START + timedelta(minutes=m):%Y-%m-%d %H:%M:%S},000 INFO data: opening shard "
        f"s3://vision-datasets/imagenet-shards/train-{m:05d}.tar"
        for m in minutes
    )


def test_remote_reads_through_a_loader_without_workers_are_one_wait_led_by_the_remote_reads():
    from triage.guidance import guidance_for

    # The training process reads every batch from S3 itself (num_workers=0), and no CPU metric shows work of its
    # own. Both rules spoke of that one wait, at 0.55 each, over the same training window: "Data loading and
    # preprocessing on the CPU cannot keep the GPUs fed: num_workers=0." beside "Training reads its data straight from
    # remote storage", half the waste each, and the loader (first by its name) was the one to fix first.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[case("remote_no_workers_train.py")], cpu_count=16)
    assert categories(result) == {Category.REMOTE_DATA_READING, Category.DATA_PREPROCESSING}  # the study counts both
    remote, loader = sorted(result.findings, key=lambda f: -f.gpu_hours)
    assert remote.category == Category.REMOTE_DATA_READING and remote.confidence == 0.55
    assert (loader.category, loader.sub_cause, loader.confidence) == (Category.DATA_PREPROCESSING, "no_workers", 0.4)
    assert loader.numbers["contributes_to"] == "remote_data_reading"
    assert loader.numbers["remote_reads"] == "s3://vision-datasets/imagenet-shards"
    assert loader.summary == (
        "Data loading and preprocessing on the CPU cannot keep the GPUs fed: `num_workers=0`. The training process "
        "reads every batch from remote storage itself (s3://vision-datasets/imagenet-shards), so this is the remote "
        "reads' wait, not one of its own: with no worker, nothing overlaps the reads with the steps."
    )
    # The waste is counted once: the two share the job's unused GPU-hours, 0.55 : 0.4, the remote reads leading.
    assert remote.gpu_hours + loader.gpu_hours == pytest.approx(result.unused_gpu_hours, abs=1e-3)
    assert remote.gpu_hours == pytest.approx(result.unused_gpu_hours * 0.55 / 0.95, abs=1e-3)
    guide = guidance_for(loader.category, loader.sub_cause, loader.numbers, gpu_hours=loader.gpu_hours,
                         price_per_gpu_hour=None, currency="", job={"gpu_count": 1, "cpu_count": 16})  # fmt: skip
    assert guide["change"].endswith(
        "use `num_workers=15` (now 0). Its batches come from remote storage (s3://vision-datasets/imagenet-shards): "
        "workers overlap those reads with the steps; staging the data on local disk (Remote data reading) removes them."
    )


def test_remote_read_stalls_through_a_loader_without_workers_keep_their_windows_and_the_loader_follows():
    # Shard opens stall the GPU 5 min in 8 and the log times them: the stalls are the remote reads' own waste; the
    # loader without workers that makes the training process wait for them is their contributing cause.
    frame = series(240, lambda t, g: 3 if t >= 10 and (t - 10) % 8 < 5 else 80, mem=lambda t, g: 0.6)
    log = _remote_shard_log(range(10, 234, 8))
    scripts = [case("remote_no_workers_train.py")]
    _, result = run(240, frame, logs=[("train.log", log)], scripts=scripts, cpu_count=16)
    found = {f.category: f for f in result.findings}
    assert set(found) == {Category.REMOTE_DATA_READING, Category.DATA_PREPROCESSING}
    remote, loader = found[Category.REMOTE_DATA_READING], found[Category.DATA_PREPROCESSING]
    assert remote.time_located and remote.confidence == 0.95 and remote.numbers["stalls"] == 28
    assert loader.confidence == 0.4 and loader.numbers["contributes_to"] == "remote_data_reading"
    assert remote.gpu_hours > loader.gpu_hours
    assert remote.gpu_hours + loader.gpu_hours == pytest.approx(result.unused_gpu_hours, abs=1e-3)


LIGHTNING_FEW_WORKERS = (
    f"{START + timedelta(minutes=1):%Y-%m-%d %H:%M:%S},000 WARNING The 'train_dataloader' does not have many workers "
    "which may be a bottleneck. Consider increasing the value of the `num_workers` argument"
)
# Lightning 2's whole line, as its warning module prints it, and pytorch_lightning 1.x's wording.
LIGHTNING_2_FEW_WORKERS = (
    f"{START + timedelta(minutes=1):%Y-%m-%d %H:%M:%S},000 /opt/conda/lib/python3.11/site-packages/lightning/pytorch/"
    "trainer/connectors/data_connector.py:441: The 'train_dataloader' does not have many workers which may be a "
    "bottleneck. Consider increasing the value of the `num_workers` argument` to `num_workers=15` in the `DataLoader` "
    "to improve performance."
)
LIGHTNING_1_FEW_WORKERS = (
    f"{START + timedelta(minutes=1):%Y-%m-%d %H:%M:%S},000 /usr/lib/python3/site-packages/pytorch_lightning/trainer/"
    "data_loading.py:132: UserWarning: The dataloader, train_dataloader, does not have many workers which may be a "
    "bottleneck. Consider increasing the value of the `num_workers` argument` (try 16 which is the number of cpus on "
    "this machine) in the `DataLoader` init to improve performance."
)
PYTORCH_TOO_MANY_WORKERS = (
    f"{START + timedelta(minutes=1):%Y-%m-%d %H:%M:%S},000 /usr/lib/python3/site-packages/torch/utils/data/"
    "dataloader.py:557: UserWarning: This DataLoader will create 32 worker processes in total. Our suggested max "
    "number of worker in current system is 16, which is smaller than what this DataLoader is going to create."
)


def test_lightnings_warning_of_a_loader_with_few_workers_is_read_as_one():
    # The log reader looked for worker warnings only on lines that say "DataLoader" (or "batch"): Lightning's names
    # 'train_dataloader', so its warning was never read and a job with 2 workers and no CPU metric had no finding.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    name, text = case("no_workers_train.py")
    text = text.replace("type=int, default=0", "type=int, default=2")
    _, result = run(120, frame, scripts=[(name, text)], logs=[("train.log", LIGHTNING_FEW_WORKERS)], cpu_count=16)
    (finding,) = result.findings
    assert (finding.category, finding.sub_cause) == (Category.DATA_PREPROCESSING, "few_workers")
    assert finding.confidence == 0.55
    assert [line.line_no for line in finding.log_lines] == [1]
    assert finding.summary.endswith(
        "`num_workers=2`; Lightning warned that 'train_dataloader' does not have many workers."
    )


@pytest.mark.parametrize(
    ("log", "said"),
    [
        (LIGHTNING_2_FEW_WORKERS, "Lightning warned that 'train_dataloader' does not have many workers (it suggests "
         "`num_workers=15`)"),
        (LIGHTNING_1_FEW_WORKERS, "Lightning warned that 'train_dataloader' does not have many workers (it suggests "
         "16, the machine's CPUs)"),
        (PYTORCH_TOO_MANY_WORKERS, "PyTorch warned that the DataLoader would create 32 worker processes, more than "
         "the 16 it suggests for the machine"),
    ],
)  # fmt: skip
def test_a_worker_warning_is_named_by_what_printed_it_and_what_it_said(log, said):
    # The finding said "PyTorch warned about the worker count" for Lightning's warning too: a reader looking for
    # PyTorch's warning in the log found Lightning's, and neither said what it warned of.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    name, text = case("no_workers_train.py")
    text = text.replace("type=int, default=0", "type=int, default=2")
    _, result = run(120, frame, scripts=[(name, text)], logs=[("train.log", log)], cpu_count=16)
    (finding,) = result.findings
    assert finding.category == Category.DATA_PREPROCESSING
    assert finding.summary.endswith(f"`num_workers=2`; {said}.")
    assert "PyTorch" not in finding.summary or "PyTorch warned" in said
    assert finding.numbers["worker_warning_by"] == said.split()[0]


def test_a_loader_with_few_workers_that_lightning_warns_of_follows_the_remote_reads_too():
    # Two workers and Lightning's "does not have many workers" warning, no CPU metric: the workers wait on S3 as the
    # training process did without them.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    name, text = case("remote_no_workers_train.py")
    text = text.replace("type=int, default=0", "type=int, default=2")
    _, result = run(120, frame, scripts=[(name, text)], logs=[("train.log", LIGHTNING_FEW_WORKERS)], cpu_count=16)
    loader = next(f for f in result.findings if f.category == Category.DATA_PREPROCESSING)
    assert (loader.sub_cause, loader.confidence, loader.numbers["contributes_to"]) == (
        "few_workers",
        0.4,
        "remote_data_reading",
    )
    assert loader.summary.endswith(
        "Its loader workers read every batch from remote storage (s3://vision-datasets/imagenet-shards), so this is "
        "the remote reads' wait, not one of its own: 2 a process are too few to overlap the reads with the steps."
    )


@pytest.mark.parametrize("workers", [0, 8])
def test_a_loader_whose_cores_the_cpu_metric_shows_busy_is_its_own_cause_beside_remote_reads(workers):
    # With a CPU metric that shows the loading core busy (1.1 of 16 cores: all one process without workers can use)
    # the loader has evidence of its own, measured: it keeps its confidence and leads. With 8 workers it is not
    # found at all, whatever the data's place.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6, cpu=lambda t: 7)
    name, text = case("remote_no_workers_train.py")
    text = text.replace("type=int, default=0", f"type=int, default={workers}")
    _, result = run(120, frame, scripts=[(name, text)], cpu_count=16)
    found = {f.category: f for f in result.findings}
    remote = found[Category.REMOTE_DATA_READING]
    assert remote.confidence == 0.55 and "contributes_to" not in remote.numbers
    if workers:
        assert set(found) == {Category.REMOTE_DATA_READING}
        return
    loader = found[Category.DATA_PREPROCESSING]
    assert loader.confidence == 0.7 and "contributes_to" not in loader.numbers
    assert remote.gpu_hours + loader.gpu_hours == pytest.approx(result.unused_gpu_hours, abs=1e-3)


def test_dataparallel_on_eight_gpus_is_data_exchange_not_oversubscription_or_api_misuse():
    # GPU 0 gathers and works more; every GPU dips together on one sample in three.
    def util(t, g):
        if round(t * 2) % 3 == 0:
            return 4
        return 62 if g == 0 else 38

    frame = series(180, util, gpus=8, mem=lambda t, g: 0.74 if g == 0 else 0.55)
    _, result = run(180, frame, gpu_count=8, scripts=[case("dataparallel_train.py")])
    (finding,) = result.findings
    assert finding.category == Category.DATA_EXCHANGE and finding.sub_cause == "dataparallel"
    assert [c.line for c in finding.code] == [9]
    assert finding.numbers["aligned_dip_share"] > 0.25


DDP_SCRIPT = (
    "train.py",
    "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
    "dist.init_process_group('nccl')\nmodel = DDP(build(), device_ids=[rank])\n"
    "for batch in loader:\n    loss = model(batch).sum()\n    loss.backward()\n    opt.step()\n",
)


def _exchange_guidance(finding):
    from triage.guidance import guidance_for

    return guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=finding.gpu_hours,
                        price_per_gpu_hour=None, currency="", job={"gpu_count": 8, "node_count": 1})  # fmt: skip


@pytest.mark.parametrize(
    ("logs", "sub", "shown", "not_shown"),
    [
        ((), "synchronisation_dips", ["model.no_sync()", "bucket_cap_mb"], ["NCCL_IB_DISABLE", "dist.all_reduce"]),
        (
            [("out.log", "2026-11-02 08:00:05 NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n")],
            "nccl_over_sockets",
            ["NET/Socket", "NET/IB"],
            ["dist.all_reduce"],
        ),
    ],
)
def test_a_ddp_jobs_exchange_guidance_shows_only_what_was_found(logs, sub, shown, not_shown):
    # A DDP job whose only sign is dips every GPU shares was shown a per-parameter all-reduce loop and
    # `export NCCL_IB_DISABLE=1` as its "before" code, though its script has neither.
    frame = series(180, lambda t, g: 4 if round(t * 2) % 3 == 0 else 40, gpus=8, mem=lambda t, g: 0.55)
    _, result = run(180, frame, gpu_count=8, scripts=[DDP_SCRIPT], logs=logs)
    finding = next(f for f in result.findings if f.category == Category.DATA_EXCHANGE)
    assert finding.sub_cause == sub
    guide = _exchange_guidance(finding)
    code = guide["before"] + guide["after"]
    assert all(text in code for text in shown), code
    assert not any(text in code for text in not_shown), code


def test_interactive_session_with_bursts_is_interactive_and_not_unreleased():
    bursts = [(20, 35), (90, 100), (200, 230)]

    def util(t, g):
        return 70 if any(a <= t < b for a, b in bursts) else 0

    frame = series(360, util, mem=lambda t, g: 0.3)
    _, result = run(360, frame, job_type="interactive", command="srun --pty jupyter lab --no-browser")
    assert categories(result) == {Category.INTERACTIVE_JOB}
    (finding,) = result.findings
    assert finding.sub_cause == "jupyter" and finding.numbers["bursts"] == 3
    # Its windows are where the GPU sat idle (before, between and after the bursts), not the bursts,
    # and its GPU-hours are those windows' whole hours: the bursts' own headroom (70 % used) is left out.
    assert [(w.start, w.end) for w in finding.windows] == [
        (START.timestamp() + a * 60, START.timestamp() + b * 60) for a, b in [(0, 20), (35, 90), (100, 200), (230, 360)]
    ]
    assert finding.gpu_hours == pytest.approx((20 + 55 + 100 + 130) / 60, rel=0.01)
    assert finding.gpu_hours < result.unused_gpu_hours


def test_a_batch_job_guessed_to_be_a_session_is_not_called_a_batch_session():
    # No session program, no interactive job type: bursts and idle stretches alone. The summary read
    # "A session driven by a person (batch)", naming the job's type as if it were the session's program.
    bursts = [(20, 35), (90, 100), (200, 230)]
    frame = series(360, lambda t, g: 70 if any(a <= t < b for a, b in bursts) else 0, mem=lambda t, g: 0.3)
    _, result = run(360, frame, job_type="batch", command="sbatch run.sh")
    finding = next(f for f in result.findings if f.category == Category.INTERACTIVE_JOB)
    assert finding.confidence < 0.5
    assert finding.sub_cause == "session"
    assert finding.summary.startswith(
        "Looks like a session driven by a person (a batch job that runs no session program): GPUs idle"
    )
    assert "(batch)" not in finding.summary


def test_a_batch_job_whose_script_starts_jupyter_names_jupyter():
    bursts = [(20, 35), (90, 100), (200, 230)]
    frame = series(360, lambda t, g: 70 if any(a <= t < b for a, b in bursts) else 0, mem=lambda t, g: 0.3)
    script = ("run.sh", "#!/bin/bash\n#SBATCH --gres=gpu:1\njupyter lab --no-browser --port 8888\n")
    _, result = run(360, frame, job_type="batch", command="sbatch run.sh", scripts=[script])
    (finding,) = result.findings
    assert finding.sub_cause == "jupyter"
    assert finding.summary.startswith("A session driven by a person (jupyter): GPUs idle")


def test_very_short_job_is_insufficient_data():
    frame = series(2, lambda t, g: 0)
    _, result = run(2, frame)
    assert result.status == Status.INSUFFICIENT_DATA and "samples" in result.reason


def test_running_job_is_judged_on_its_samples_so_far_and_has_no_tail():
    # Submitted for 24 h, 3 h in: data up to now, at 30 % with a pageable loader.
    frame = series(24 * 60, lambda t, g: 30, mem=lambda t, g: 0.6, upto=180)
    _, result = run(24 * 60, frame, state="RUNNING", scripts=[case("pageable_train.py")])
    assert result.status == Status.CLASSIFIED
    assert categories(result) == {Category.HOST_GPU_TRANSFER}


def test_finished_job_with_samples_for_half_its_run_is_insufficient_data():
    frame = series(24 * 60, lambda t, g: 30, upto=12 * 60)
    _, result = run(24 * 60, frame, state="COMPLETED")
    assert result.status == Status.INSUFFICIENT_DATA
    assert result.reason == "samples cover 50 % of the run (< 80 %); missing data is not idleness"  # "50 %" as the app


def test_a_hole_in_the_series_is_never_an_idle_gap():
    # Busy at 40 % with a 20-minute exporter outage in the middle: no gap, no finding from the hole.
    frame = series(240, lambda t, g: 40, mem=lambda t, g: 0.6)
    frame = frame[~frame["timestamp"].between(START + timedelta(minutes=100), START + timedelta(minutes=120))]
    evidence, result = run(240, frame)
    assert evidence.phases.idle_gaps == [] and len(evidence.phases.holes) == 1
    assert result.findings == []


def test_healthy_job_gets_no_findings_even_with_a_suspicious_script():
    frame = series(120, lambda t, g: 80, mem=lambda t, g: 0.2)
    _, result = run(120, frame, scripts=[case("pageable_train.py")])
    assert result.status == Status.HEALTHY and result.findings == []


def test_script_facts_come_from_the_syntax_tree_with_lines():
    facts = extract_script_evidence([case("pageable_train.py"), case("install_run.sh")])
    (loader,) = facts.of("dataloader")
    assert (loader.line, loader.detail["pin_memory"], loader.detail["num_workers"]) == (18, False, 6)
    assert [(f.path, f.line) for f in facts.of("shell_install")] == [("install_run.sh", 4), ("install_run.sh", 4)]
    assert [f.line for f in facts.of("shell_launch")] == [6]


def test_trace_facts_split_pageable_copies_and_idle_time_like_hta():
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 1000},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 0, "dur": 300, "args": {"correlation": 1}},
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Pageable -> Device)",
            "pid": 0,
            "tid": 7,
            "ts": 10,
            "dur": 300,
            "args": {"correlation": 1, "bytes": 4096},
        },
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 500, "dur": 5, "args": {"correlation": 2}},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gemm",
            "pid": 0,
            "tid": 7,
            "ts": 510,
            "dur": 100,
            "args": {"correlation": 2},
        },
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 520, "dur": 5, "args": {"correlation": 3}},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "relu",
            "pid": 0,
            "tid": 7,
            "ts": 620,
            "dur": 50,
            "args": {"correlation": 3},
        },
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Pinned -> Device)",
            "pid": 0,
            "tid": 7,
            "ts": 800,
            "dur": 20,
            "args": {"correlation": 4, "bytes": 4096},
        },
    ]
    import json

    facts = trace_facts("rank0.pt.trace.json", json.dumps({"traceEvents": events}).encode())
    assert facts.h2d_pageable_us == 300 and facts.h2d_pinned_us == 20
    assert facts.idle_host_wait_us == 200  # kernel 2 was launched at 500, after the copy ended at 310
    assert facts.idle_kernel_wait_us == 10  # relu started 10 us after gemm: launch overhead
    assert facts.idle_other_us == 130  # the pinned copy waited on something else
    assert facts.pageable_share_of_steps == pytest.approx(0.3)


@pytest.mark.django_db
def test_logs_and_scripts_with_nul_characters_are_triaged_and_stored(tmp_path, storage_dir):
    """Evidence quotes log and script lines; PostgreSQL keeps no NUL in text or jsonb (this failed the
    triage of such a job there). The lines are stored without them."""
    import json as json_module

    from fleet import ingest
    from fleet.models import Job
    from tests.conftest import write_zip
    from tests.test_ingest import good_members
    from triage.models import Finding
    from triage.services import triage_job

    members = good_members()
    members["logs/j1/stdout.log"] += (
        "2026-11-02 10:21:00,000 WARNING This DataLoader will create 16 worker processes in total. "
        "Our suggested max number of worker in current system is 2\x00\x00\n"
    )
    members["scripts/j1/run.sh"] = "#!/bin/bash\npip install torch\x00\nsleep 600\x00\npython train.py\n"
    run = ingest.execute_run(ingest.create_run(write_zip(tmp_path / "a.zip", members)).pk)
    assert run.status == "succeeded"
    job = Job.objects.get(external_id="j1")
    assert triage_job(job).status == "classified"
    stored = json_module.dumps([list(f) for f in Finding.objects.filter(job=job).values_list("evidence", "summary")])
    assert "current system is 2" in stored and "\\u0000" not in stored


def _ingested_job(tmp_path, extra: dict, job_id: str = "j1"):
    from fleet import ingest
    from fleet.models import Job
    from tests.conftest import write_zip
    from tests.test_ingest import good_members

    members = good_members()
    for name, text in extra.items():
        members[name] = members.get(name, "") + text
    run = ingest.execute_run(ingest.create_run(write_zip(tmp_path / "a.zip", members)).pk)
    assert run.status == "succeeded", run.errors
    return Job.objects.get(external_id=job_id)


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["b'2'", "...", "1j", "1e999"])
def test_script_constants_json_cannot_say_are_stored_as_text_or_null(tmp_path, storage_dir, value):
    """Evidence quotes constants from a script's syntax tree: bytes, `...` and complex numbers have no
    JSON form and 1e999 is infinite (jsonb refuses it); each failed the job's triage and the rest of
    its batch. They are stored as their text, or null for an infinity."""
    import json as json_module

    from triage.models import Finding
    from triage.services import triage_job

    script = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        f"loader = DataLoader(ds, batch_size=4, prefetch_factor={value}, num_workers=0)\n"
        "for x in loader:\n    model(x.cuda())\n"
    )
    job = _ingested_job(tmp_path, {"scripts/j1/train.py": script})
    result = triage_job(job)
    assert result.status != "error", result.reason
    stored = json_module.dumps([f.evidence for f in Finding.objects.filter(job=job)] + [result.evidence])
    assert "Infinity" not in stored and "NaN" not in stored


@pytest.mark.django_db
def test_a_log_number_of_thousands_of_digits_is_no_batch_size_and_no_error(tmp_path, storage_dir):
    """int() refuses text of over 4,300 digits: the job's triage ended in Python's own message."""
    from triage.services import triage_job

    job = _ingested_job(tmp_path, {"logs/j1/stdout.log": "batch_size=" + "9" * 4400 + "\n"})
    assert triage_job(job).status != "error"


@pytest.mark.django_db
def test_a_result_the_database_refuses_is_that_jobs_error_and_the_batch_goes_on(tmp_path, storage_dir, monkeypatch):
    from fleet.models import Job
    from triage import services
    from triage.models import JobTriage

    _ingested_job(tmp_path, {})
    first, *others = Job.objects.order_by("pk")
    storable = services.storable

    def refused_for_the_first(value):  # a value no JSON column keeps, for the first job's evidence only
        return {"x": float("inf")} if services_job[0] == first.pk and isinstance(value, dict) else storable(value)

    services_job = [None]
    triage_job = services.triage_job

    def tracking(job, rule_set=None):
        services_job[0] = job.pk
        return triage_job(job, rule_set)

    monkeypatch.setattr(services, "storable", refused_for_the_first)
    monkeypatch.setattr(services, "triage_job", tracking)
    counts = services.triage_jobs([job.pk for job in (first, *others)])
    stored = dict(JobTriage.objects.values_list("job_id", "status"))
    assert stored[first.pk] == "error" and sum(counts.values()) == 1 + len(others)
    assert JobTriage.objects.get(job=first).reason.startswith("the result could not be stored")
    assert all(stored[job.pk] != "error" for job in others)


def test_a_script_seen_again_gives_the_same_facts_however_the_last_ones_were_used():
    """A script's facts are worked out once per process (sweeps run one script in many jobs; a rule
    change re-triages every job): the second job must get what the first got, under its own path,
    whatever a caller did to the first job's facts."""
    from triage.evidence import scripts

    text = (CASES / "checkpoint_train.py").read_text()
    shell = (CASES / "install_run.sh").read_text()
    scripts._cached_files.clear()
    first = extract_script_evidence([("train.py", text), ("run.sh", shell)])
    uncached = scripts._read_file("train.py", text)  # what reading the file afresh gives
    assert [f.as_dict() for f in first.facts if f.path == "train.py"] == [f.as_dict() for f in uncached.facts]
    assert first.facts and first.python_files == first.shell_files == 1 and "torch" in first.frameworks
    expected = [fact.as_dict() for fact in first.facts]
    for fact in first.facts:
        fact.detail["tampered"] = True
    first.frameworks.add("tampered")
    again = extract_script_evidence([("train.py", text), ("run.sh", shell)])
    assert [fact.as_dict() for fact in again.facts] == expected and "tampered" not in again.frameworks
    elsewhere = extract_script_evidence([("jobs/7/train.py", text)])
    assert {fact.path for fact in elsewhere.facts} == {"jobs/7/train.py"}
    assert any(fact.kind == "save_call" for fact in again.facts)
    changed = extract_script_evidence([("train.py", text.replace("torch.save(", "print("))])  # a new text
    assert not any(fact.kind == "save_call" for fact in changed.facts)


WANDB_LOOP = (
    "import torch\nimport wandb\n"
    "for step, batch in enumerate(loader):\n"
    "    loss = model(batch).sum()\n    loss.backward()\n    optimizer.step()\n"
    "    if step % 1000 == 0:\n"
    "        torch.save(model.state_dict(), f'/shared/ckpt/step{step}.pt')\n"
    "        wandb.save(f'/shared/ckpt/step{step}.pt')\n"
)


def test_wandb_save_in_the_loop_is_no_synchronous_upload():
    # wandb.save links the file into the run's directory and returns; W&B's own process uploads it. Regular gaps
    # in a log without times and wandb.save in the loop were called an intermediate upload (0.6, 'sdk') and shown
    # a boto3 upload_file to move into a thread.
    saves, frame = save_stalls([30 + 25 * k for k in range(8)], 5, busy=38)
    _, result = run(240, frame, scripts=[("train.py", WANDB_LOOP)], logs=[("out.log", "step 1\nstep 2\n")])
    assert Category.INTERMEDIATE_UPLOAD not in categories(result)
    # boto3's upload_file in the same place is one.
    boto = WANDB_LOOP.replace("wandb.save(", "client.upload_file(").replace("import wandb", "import boto3")
    _, result = run(240, frame, scripts=[("train.py", boto)], logs=[("out.log", "step 1\nstep 2\n")])
    assert next(f for f in result.findings if f.category == Category.INTERMEDIATE_UPLOAD).sub_cause == "sdk"


def test_gaps_at_wandb_lines_of_a_job_uploading_with_wandb_save_say_the_upload_is_in_the_background():
    from triage.guidance import guidance_for

    saves, frame = save_stalls([30 + 25 * k for k in range(8)], 5, busy=38)
    stamp = lambda m: f"{START + timedelta(minutes=m):%Y-%m-%d %H:%M:%S},000"  # noqa: E731
    log = "\n".join(f"{stamp(s)} INFO wandb: uploading /shared/ckpt/step{k}.pt" for k, s in enumerate(saves))
    _, result = run(240, frame, scripts=[("train.py", WANDB_LOOP)], logs=[("train.log", log)])
    finding = next(f for f in result.findings if f.category == Category.INTERMEDIATE_UPLOAD)
    assert (finding.sub_cause, finding.confidence) == ("wandb", 0.5)
    assert finding.summary == (
        "8 idle gaps inside training (40 min in all) opened at W&B's lines; the job uploads with wandb.save, which "
        "W&B's own process does in the background, so the loop waited for something else there (writing the "
        "file, or a wait for W&B)."
    )
    assert [c.text for c in finding.code] == ["wandb.save(f'/shared/ckpt/step{step}.pt')"]
    guide = guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert guide["change"].startswith("Nothing to move to a thread: wandb.save links the files")
    assert "upload_file" not in guide["before"] + guide["after"]
    assert guide["after"].endswith(
        "wandb.save('/local_ssd/ckpt/last.pt')  # W&B's process uploads it, again when it changes"
    )


@pytest.mark.parametrize(
    ("scripts", "asked"),
    [
        # One task per GPU (the usual Slurm layout without torchrun): --cpus-per-task is a GPU's share, 8 (64 a
        # node); it was 32, which with 4 tasks a node asks for 128 CPUs a node.
        ([("job.sbatch", "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n"
                         "#SBATCH --cpus-per-task=2\nsrun python train.py\n")],
         "request `--cpus-per-task=8` with `--ntasks-per-node=4`, 32 CPUs a node (the CPUs ran at 97 %)."),
        # ... srun's own options, not the program's `-c`
        ([("job.sh", "#!/bin/bash\nsrun --ntasks-per-node 4 -c 2 python -c 'import train'\n")],
         "request `--cpus-per-task=8` with `--ntasks-per-node=4`, 32 CPUs a node (the CPUs ran at 97 %)."),
        # one task a node: the node's 32, as before
        ([("job.sbatch", "#!/bin/bash\n#SBATCH --ntasks-per-node=1\nsrun torchrun --nproc_per_node=4 train.py\n")],
         "request `--cpus-per-task=32` (the CPUs ran at 97 %)."),
        # layout unknown: says which it assumed, and the other
        ([], "request `--cpus-per-task=32` for one task a node; with one task a GPU (`--ntasks-per-node=4`), "
             "`--cpus-per-task=8` (the CPUs ran at 97 %)."),
    ],
)  # fmt: skip
def test_loader_guidance_asks_for_cpus_per_task_in_the_jobs_task_layout(scripts, asked):
    from triage.guidance import guidance_for

    frame = series(120, lambda t, g: 30, gpus=8, cpu=lambda t: 97)
    loader = (
        "train.py",
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=1)\n",
    )
    _, result = run(120, frame, scripts=[loader, *scripts], gpu_count=8, node_count=2, cpu_count=16)
    finding = next(f for f in result.findings if f.category == Category.DATA_PREPROCESSING)
    guide = guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert guide["change"].endswith(asked)
    assert guide["after"].endswith("#SBATCH --cpus-per-task=" + asked.split("--cpus-per-task=")[1].split("`")[0])


def test_a_download_before_training_names_its_source_and_largest_file():
    # 'The job fetched models or data from outside for 23 min' said neither where from nor what: the log's
    # progress bars show a 2 GB model file that took 16 min at 2.1 MB/s.
    at = lambda m: f"{START + timedelta(minutes=m):%Y-%m-%d %H:%M:%S},000"  # noqa: E731
    log = "\n".join(
        [
            f"{at(0.2)} INFO __main__: loading bert-base-uncased and mnli from the Hugging Face Hub",
            "config.json: 100%|██████████| 665/665 [00:00<00:00, 3.12MB/s]",
            "model.safetensors: 100%|██████████| 2.00G/2.00G [16:15<00:00, 2.1MB/s]",
            "Downloading data: 100%|██████████| 1.79G/1.79G [05:48<00:00, 5.3MB/s]",
        ]
        + [f"{at(23 + k)} INFO __main__: epoch 1 step {k} loss 0.9" for k in range(0, 100, 5)]
    )
    frame = series(150, lambda t, g: 0 if t < 23 else 40)
    code = ("train.py", "import torch\nfrom transformers import AutoModel\nmodel = AutoModel.from_pretrained('bert')\n")
    _, result = run(150, frame, logs=[("stdout.log", log)], scripts=[code])
    finding = next(f for f in result.findings if f.category == Category.EXTERNAL_DATA_USAGE)
    assert finding.summary == (
        "The job fetched models or data from the Hugging Face Hub for 23 min before training while the GPUs waited. "
        "The largest download, model.safetensors (2.00 GB), took 16 min at 2.1 MB/s."
    )
    assert finding.numbers["largest_download"] == "model.safetensors"
    # datasets' own bar names no file: its data files, not a file called 'Downloading data'
    log = log.replace("1.79G/1.79G", "4.77G/4.77G")
    _, result = run(150, frame, logs=[("stdout.log", log)], scripts=[code])
    finding = next(f for f in result.findings if f.category == Category.EXTERNAL_DATA_USAGE)
    assert finding.summary.endswith("The largest download, the dataset's data files (4.77 GB), took 6 min at 5.3 MB/s.")


@pytest.mark.parametrize(
    ("line", "largest"),
    [
        ("model.safetensors: 100%|██████████| 2.00G/2.00G [16:15<00:00, 2.1MB/s]",
         ("model.safetensors", "2.00 GB", "16 min", "2.1 MB/s")),
        ("pytorch_model.bin: 100%|#####| 1.34GB/1.34GB [01:05<00:00, 20.6MB/s]",
         ("pytorch_model.bin", "1.34 GB", "1 min", "20.6 MB/s")),
        ("Downloading (…)l-00001-of-00002.bin: 100%|██| 9.98G/9.98G [12:01<00:00, 13.8MB/s]",
         ("(…)l-00001-of-00002.bin", "9.98 GB", "12 min", "13.8 MB/s")),
        ("Downloading shards: 100%|██████████| 2/2 [00:45<00:00, 22.5s/it]", None),
        ("config.json: 100%|██████████| 665/665 [00:00<00:00, 3.12MB/s]", None),  # under a megabyte: no story
    ],
)  # fmt: skip
def test_the_largest_download_is_read_from_the_progress_bars_hub_and_datasets_print(line, largest):
    from triage.evidence.logs import LogLine
    from triage.rules.data import _largest_transfer

    assert (
        _largest_transfer([LogLine(kind="download", path="x.log", line_no=1, t=None, estimated=True, text=line)])
        == largest
    )


def test_memory_bound_guidance_says_the_job_already_shards_with_zero():
    # A job on ZeRO-3 with its optimizer state offloaded to the CPU was offered 'ZeRO/FSDP sharding' as if it had
    # none; its DeepSpeed config says which stage and where it offloads.
    from triage.guidance import guidance_for

    ds = (
        '{\n  "bf16": {"enabled": true},\n  "zero_optimization": {\n    "stage": 3,\n'
        '    "offload_optimizer": {"device": "cpu", "pin_memory": true},\n    "offload_param": {"device": "none"}\n'
        "  }\n}\n"
    )
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.93)
    scripts = [("train.py", "import torch\n"), ("ds.json", ds)]
    _, result = run(120, frame, scripts=scripts, command="deepspeed train.py --deepspeed ds.json")
    finding = next(f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND)
    assert (finding.numbers["zero_stage"], finding.numbers["zero_offload"]) == (3, "the optimizer state to cpu")
    guide = guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert guide["change"].endswith(
        "For this job: `bf16.enabled: true` (ds.json:2) sets mixed precision already. It already shards with "
        "DeepSpeed ZeRO stage 3 (ds.json:4) and offloads the optimizer state to cpu: look to activation "
        "checkpointing and accumulation first."
    )
    # ZeRO-1 shards the optimizer state only: stage 3 is offered
    scripts = [("train.py", "import torch\n"), ("ds.json", ds.replace('"stage": 3', '"stage": 1'))]
    _, result = run(120, frame, scripts=scripts, command="deepspeed train.py --deepspeed ds.json")
    finding = next(f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND)
    guide = guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={})  # fmt: skip
    assert guide["change"].endswith("ZeRO stage 1 (ds.json:4) and offloads the optimizer state to cpu; stage 3 "
                                    "shards the parameters too.")  # fmt: skip


def _zero_launch(command: str):
    from triage.evidence.scripts import command_code_facts

    return next((f.detail for f in command_code_facts(command) if f.kind == "zero_config"), None)


def test_zero_offload_with_gpu_memory_to_spare_is_explained_as_insufficient_gpu_memory():
    # DeepSpeed ZeRO offload keeps what did not fit in GPU memory in host memory or on NVMe and moves it over
    # PCIe every step. With GPU memory far from full (offload freed it) no rule spoke of it: the memory rule wanted
    # a peak over 80 %, so such a job was told only to raise its batch size.
    from triage.guidance import guidance_for

    ds = (
        '{\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {\n    "stage": 3,\n'
        '    "offload_optimizer": {"device": "cpu", "pin_memory": true},\n    "offload_param": {"device": "nvme"}\n'
        "  }\n}\n"
    )
    frame = series(120, lambda t, g: 30, gpus=2, mem=lambda t, g: 0.35)
    scripts = [("train.py", "import torch\nimport deepspeed\n"), ("ds.json", ds)]
    _, result = run(120, frame, scripts=scripts, gpu_count=2, command="deepspeed train.py --deepspeed ds.json")
    finding = next(f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND)
    assert (finding.sub_cause, finding.confidence) == ("zero_offload", 0.75)
    assert finding.summary == (
        "Training-phase GPU util 30 % (<= 50 %) while DeepSpeed ZeRO stage 3 offloads the optimizer state to cpu "
        "and the parameters to nvme (ds.json:4): each step waits while they cross PCIe between host memory and the "
        "GPUs and the optimizer steps on the CPU. GPU memory peaked at 35 %."
    )
    assert [(c.path, c.line) for c in finding.code] == [("ds.json", 4)]
    guide = guidance_for(finding.category, finding.sub_cause, finding.numbers, gpu_hours=1.0,
                         price_per_gpu_hour=None, currency="", job={"gpu_count": 2})  # fmt: skip
    assert guide["change"].startswith("ZeRO offload keeps what did not fit in GPU memory")
    assert "Offload only if the model does not fit without it: first try ZeRO-2" in guide["change"]
    assert guide["change"].endswith(
        "For this job: ZeRO stage 3 (ds.json:4) offloads the optimizer state to cpu, the parameters to nvme, and "
        "GPU memory peaked at 35 %: there is room to keep more on the GPUs. On its 2 GPUs, ZeRO-3 without offload "
        "holds 1/2 of the states on each; if that does not fit, more GPUs (each holds 1/N) rather than offload."
    )
    assert '"stage": 2' in guide["after"] and '"offload_param": {"device": "cpu"}' in guide["before"]

    # Accelerate's config sets ZeRO for `accelerate launch`: the same finding, less sure without a memory metric.
    accelerate = (
        "compute_environment: LOCAL_MACHINE\ndeepspeed_config:\n  gradient_accumulation_steps: 1\n"
        "  offload_optimizer_device: cpu\n  offload_param_device: none\n  zero3_init_flag: true\n  zero_stage: 2\n"
        "distributed_type: DEEPSPEED\nmixed_precision: bf16\n"
    )
    scripts = [("train.py", "import torch\n"), ("accelerate.yaml", accelerate)]
    _, result = run(120, series(120, lambda t, g: 30), scripts=scripts)
    (finding,) = [f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND]
    assert (finding.sub_cause, finding.confidence) == ("zero_offload", 0.65)
    assert finding.numbers["zero_set_by"] == "accelerate.yaml:7"
    assert finding.numbers["zero_offload"] == "the optimizer state to cpu"
    assert finding.code[0].text == "deepspeed_config: zero_stage=2, offload_optimizer_device=cpu"
    assert "and the optimizer steps on the CPU." in finding.summary and "peaked" not in finding.summary

    # The same on `accelerate launch`'s own flags, read from the job's command.
    command = "accelerate launch --use_deepspeed --zero_stage 3 --offload_param_device cpu train.py --epochs 3"
    _, result = run(120, series(120, lambda t, g: 30), scripts=[("train.py", "import torch\n")], command=command)
    (finding,) = [f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND]
    assert (finding.sub_cause, finding.numbers["zero_offload"]) == ("zero_offload", "the parameters to cpu")
    assert "ZeRO stage 3 offloads the parameters to cpu (the job's command): each step" in finding.summary

    # ZeRO without offload, or an Accelerate config that hands DeepSpeed a file the job did not bring: nothing to say.
    no_offload = accelerate.replace("offload_optimizer_device: cpu", "offload_optimizer_device: none")
    handed = accelerate.replace("  zero_stage: 2\n", "  zero_stage: 2\n  deepspeed_config_file: ds.json\n")
    for text in (no_offload, handed):
        scripts = [("train.py", "import torch\n"), ("a.yaml", text)]
        _, result = run(120, series(120, lambda t, g: 30), scripts=scripts)
        assert Category.GPU_MEMORY_BOUND not in categories(result)
    # (a script's own --zero_stage is not Accelerate's)
    assert _zero_launch("python train.py --zero_stage 3 --offload_param_device cpu") is None
    assert _zero_launch("accelerate launch --zero_stage 2 train.py --offload_param_device cpu") == {"stage": 2}
    command = command.replace("train.py", "--deepspeed_config_file ds.json train.py")
    _, result = run(120, series(120, lambda t, g: 30), scripts=[("train.py", "import torch\n")], command=command)
    assert Category.GPU_MEMORY_BOUND not in categories(result)


def test_an_aws_s3_cp_subprocess_to_a_variable_named_remote_is_an_upload_in_the_loop():
    # The demo's CLI upload job runs subprocess.run(["aws", "s3", "cp", "--recursive", local, remote]): its paths are
    # variables, so the call was not read as an upload; the finding quoted no code and was less sure (0.85).
    source = (
        "import subprocess\nimport torch\n"
        "for step, batch in enumerate(loader):\n"
        "    loss = model(batch).sum()\n    loss.backward()\n    optimizer.step()\n"
        "    if step % 100 == 0:\n"
        "        remote = f'{args.upload_to}/step_{step}'\n"
        "        subprocess.run(['aws', 's3', 'cp', '--recursive', local, remote], check=True)\n"
        "        subprocess.run(['aws', 's3', 'cp', '--recursive', shard, local_dir], check=True)\n"
    )
    saves, frame = save_stalls([30 + 25 * k for k in range(8)], 5, busy=38)
    stamp = lambda m: f"{START + timedelta(minutes=m):%Y-%m-%d %H:%M:%S},000"  # noqa: E731
    log = "\n".join(f"{stamp(s)} INFO aws s3 cp --recursive /scratch/o s3://b/step_{k}" for k, s in enumerate(saves))
    _, result = run(240, frame, scripts=[("train.py", source)], logs=[("train.log", log)])
    finding = next(f for f in result.findings if f.category == Category.INTERMEDIATE_UPLOAD)
    assert (finding.sub_cause, finding.confidence) == ("cli", 0.95)
    assert [c.line for c in finding.code] == [9]  # the copy down to local_dir is no upload


_OFFLOAD_DS = (
    '{\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {\n    "stage": 3,\n'
    '    "offload_optimizer": {"device": "cpu", "pin_memory": true}\n  }\n}\n'
)


def test_zero_offload_not_a_small_batch_leads_where_the_offload_freed_the_gpu_memory():
    # ZeRO offload moves the optimizer state to host memory: GPU memory peaked at 35 % because of it, not because
    # the batch is small. The batch-size finding (0.85) outranked the offload's (0.75), so the job page led with
    # "raise the batch size" and gave it most of the waste.
    frame = series(120, lambda t, g: 30, gpus=2, mem=lambda t, g: 0.35)
    scripts = [("train.py", "import torch\nimport deepspeed\n"), ("ds.json", _OFFLOAD_DS)]
    _, result = run(120, frame, scripts=scripts, gpu_count=2, command="deepspeed train.py --deepspeed ds.json")
    by = {f.category: f for f in result.findings}
    offload, batch = by[Category.GPU_MEMORY_BOUND], by[Category.IMPROPER_BATCH_SIZE]
    assert (offload.sub_cause, offload.confidence, batch.confidence) == ("zero_offload", 0.75, 0.5)
    assert max(result.findings, key=lambda f: f.gpu_hours) is offload
    assert offload.gpu_hours == pytest.approx(1.5 * batch.gpu_hours, abs=1e-3)
    assert batch.numbers["zero_offload"] == "the optimizer state to cpu"
    assert batch.summary == (
        "Training-phase GPU util 30 % (<= 50 %) with peak GPU memory 35 % (<= 50 %), low because ZeRO offloads the "
        "optimizer state to cpu (ds.json:4): the offload stalls the steps first; a larger batch would spread its "
        "copies over more samples."
    )
    # Without offload the low memory is the batch's: the same job is a small batch first.
    scripts = [("train.py", "import torch\nimport deepspeed\n"), ("ds.json", _OFFLOAD_DS.replace('"cpu"', '"none"'))]
    _, result = run(120, frame, scripts=scripts, gpu_count=2, command="deepspeed train.py --deepspeed ds.json")
    ((batch),) = [f for f in result.findings if f.category == Category.IMPROPER_BATCH_SIZE]
    assert batch.confidence == 0.85 and Category.GPU_MEMORY_BOUND not in categories(result)
    assert batch.summary.endswith("(<= 50 %): each step gives the GPU too little work.")


def _saves_beside_dips(every: int):
    """2 GPUs for 4 h at 45 %, scraped each minute, both dropping to 1 % for one sample every `every` minutes and at
    minutes 60, 120 and 180, with a checkpoint save printed 30 s before each of those three."""
    saves = [60, 120, 180]
    frame = series(240, lambda t, g: 1 if (t % every == 0 and t >= 10) or t in saves else 45, period=60, gpus=2,
                   mem=lambda t, g: 0.6)  # fmt: skip
    stamp = lambda m: f"{START + timedelta(minutes=m, seconds=-30):%Y-%m-%d %H:%M:%S},000"  # noqa: E731
    log = "\n".join(f"{stamp(s)} INFO __main__: Saving model checkpoint to /ckpt/{s}.pt" for s in saves)
    source = "import torch\nfor epoch in range(5):\n    for b in loader:\n        model(b).sum().backward()\n" + (
        "    torch.save(model.state_dict(), 'c.pt')\n"
    )
    return run(240, frame, logs=[("train.log", log)], scripts=[("train.py", source)], gpu_count=2)


def test_a_save_beside_one_of_a_gradient_exchanges_many_dips_is_not_a_checkpoint_stall():
    # A data-exchange job drops every GPU for one 60-s sample in a third of its samples; its per-epoch saves to
    # local disk each landed next to one such dip by chance, and the job was also called checkpoint-stalled
    # (sync_save, 0.95) in the demo fleet (1000 jobs, seeds 1, 2, 7 and 123: 5 false positives).
    _, result = _saves_beside_dips(every=3)
    assert Category.DATA_EXCHANGE in categories(result)
    assert Category.MODEL_CHECKPOINTING not in categories(result)
    # One-sample stalls that come only with the saves are the saves' doing.
    _, result = _saves_beside_dips(every=1000)
    finding = next(f for f in result.findings if f.category == Category.MODEL_CHECKPOINTING)
    assert finding.numbers["gaps"] == 3


def test_blocking_copies_quoted_are_the_training_steps_not_evaluates():
    # The demo's scripts copy `inputs = inputs.to(device)` in evaluate() and in the training loop; the finding
    # quoted both and counted 4 blocking copies. evaluate()'s pass over a held-out set is rarely the bottleneck.
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n\n"
        "def evaluate(model, loader, device):\n"
        "    for inputs, targets in loader:\n"
        "        inputs = inputs.to(device)\n        targets = targets.to(device)\n        model(inputs)\n\n"
        "train_loader = DataLoader(ds, batch_size=64, num_workers=8)\n"
        "for epoch in range(3):\n"
        "    for inputs, targets in train_loader:\n"
        "        inputs = inputs.to(device)\n        targets = targets.to(device)\n"
        "        loss = model(inputs).sum()\n        loss.backward()\n"
        "    evaluate(model, val_loader, device)\n"
    )
    frame = series(120, lambda t, g: 35, mem=lambda t, g: 0.7)
    _, result = run(120, frame, scripts=[("train.py", source)])
    finding = next(f for f in result.findings if f.category == Category.HOST_GPU_TRANSFER)
    assert [(c.line, c.text) for c in finding.code if c.kind == "device_copy"] == [
        (13, "inputs = inputs.to(device)"),
        (14, "targets = targets.to(device)"),
    ]
    assert "2 blocking copies to the GPU" in finding.summary and finding.numbers["blocking_copies"] == 2
    # Code with no step loop the rules can see (no backward in it): its copies in loops still count.
    source = source.replace("        loss.backward()\n", "        train_step(model, inputs)\n")
    _, result = run(120, frame, scripts=[("train.py", source)])
    finding = next(f for f in result.findings if f.category == Category.HOST_GPU_TRANSFER)
    assert [c.line for c in finding.code if c.kind == "device_copy"] == [6, 7, 13, 14]


def _loader_guidance(finding, cpu_count: int = 16) -> dict:
    from triage.guidance import guidance_for

    return guidance_for(
        finding.category, finding.sub_cause, finding.numbers, gpu_hours=finding.gpu_hours, price_per_gpu_hour=None,
        currency="", job={"gpu_count": 1, "node_count": 1, "cpu_count": cpu_count},
    )  # fmt: skip


def test_a_loader_finding_without_a_cpu_metric_claims_no_saturated_cpus_only_what_was_seen():
    # Its guidance said "The loader's CPUs are saturated" for a job whose CPUs nobody measured: the finding rested on
    # num_workers=0 (or a worker warning, or a trace) alone.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[case("no_workers_train.py")], cpu_count=16)
    (finding,) = result.findings
    why = _loader_guidance(finding)["why"]
    assert "saturated" not in why and "CPUs ran" not in why
    assert why == (
        "Each step waits for its batch while the loading prepares it. No CPU metric was recorded for this job, so how "
        "busy its CPUs were is not known; what was seen: `num_workers=0` (the training process loads every batch "
        "itself, between its steps)."
    )
    name, text = case("no_workers_train.py")
    text = text.replace("type=int, default=0", "type=int, default=2")
    _, result = run(120, frame, scripts=[(name, text)], logs=[("train.log", LIGHTNING_FEW_WORKERS)], cpu_count=16)
    (finding,) = result.findings
    why = _loader_guidance(finding)["why"]
    assert "saturated" not in why
    assert why.endswith(
        "what was seen: `num_workers=2`; Lightning warned that 'train_dataloader' does not have many workers."
    )


@pytest.mark.parametrize(("cpu", "said"), [
    (95.0, "The CPUs ran at 95 % of the job's allocation (16 cores) during training"),
    (7.0, "The CPUs ran at 7 % of the job's allocation (16 cores), about 1.1 cores busy: all that the 1 loading "
          "process can use"),
])  # fmt: skip
def test_a_loader_finding_with_a_cpu_metric_says_what_it_measured(cpu, said):
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6, cpu=lambda t: cpu)
    _, result = run(120, frame, scripts=[case("no_workers_train.py")], cpu_count=16)
    (finding,) = result.findings
    why = _loader_guidance(finding)["why"]
    assert why.startswith(said), why
    assert why.endswith("each step waits for its batch.")


def test_a_findings_counts_agree_with_their_nouns():
    """The demo's 32-GPU job read "1 blocking copies to the GPU"; a 1-node exchange read "on 1 node(s)" and an
    install "while 1 GPU(s) waited": the count was known, the noun guessed. Each noun agrees with its count."""
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n\n"
        "train_loader = DataLoader(ds, batch_size=64, num_workers=8)\n"
        "for epoch in range(3):\n"
        "    for inputs, targets in train_loader:\n"
        "        inputs = inputs.to(device)\n"
        "        loss = model(inputs).sum()\n        loss.backward()\n"
    )
    frame = series(120, lambda t, g: 35, mem=lambda t, g: 0.7)
    _, result = run(120, frame, scripts=[("train.py", source)])
    finding = next(f for f in result.findings if f.category == Category.HOST_GPU_TRANSFER)
    assert "1 blocking copy to the GPU (no `non_blocking=True`)" in finding.summary, finding.summary
    from triage.rules.common import plural

    assert [plural(1, "node"), plural(3, "node"), plural(1, "GPU"), plural(24, "GPU")] == [
        "1 node", "3 nodes", "1 GPU", "24 GPUs"
    ]  # fmt: skip
