"""Slurm sites without DCGM: a job's mean GPU utilization from its steps' `gres/gpuutil` averages
(sacct's TRESUsageInAve), used only when the job has no GPU samples, and said to be an average."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from fleet.connectors.slurm import parse_sacct, steps_gpu_util

FIXTURES = Path(__file__).parent / "fixtures" / "connectors"


def sacct(version: str = "v0.0.40") -> dict:
    return json.loads((FIXTURES / f"sacct_{version}.json").read_text())


def gpus(n: int, name: str = "gpu") -> list[dict]:
    return [{"type": "gres", "name": name, "id": 1001, "count": n}]


def a_step(suffix, *, elapsed, tasks, gpu_entries, gpuutil, wrapped=False):
    count = {"set": True, "infinite": False, "number": gpuutil} if wrapped else gpuutil
    average = [] if gpuutil is None else [{"type": "gres", "name": "gpuutil", "id": 1002, "count": count}]
    step = {
        "step": {"id": f"7.{suffix}", "name": suffix},
        "time": {"elapsed": elapsed},
        "tres": {"requested": {"average": average}, "allocated": [{"type": "cpu", "count": 4}, *gpu_entries]},
    }
    if tasks is not None:
        step["tasks"] = {"count": tasks}
    return step


def job_of(steps, gpu_count=4, name="gpu") -> dict:
    return {"steps": steps, "tres": {"allocated": gpus(gpu_count, name)}}


# -- the parser, on sacct --json bytes ------------------------------------------------------------
@pytest.mark.parametrize("version", ["v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42"])
def test_step_averages_become_the_jobs_mean_utilization_per_gpu(version):
    jobs = {job.external_id: job for job in parse_sacct((FIXTURES / f"sacct_{version}.json").read_bytes()).jobs}
    # srun's 8 tasks of 1 GPU at 74 % for 3580 of the job's 3600 s; the batch and extern steps' 0 add nothing
    assert jobs["4242"].summary_gpu_util == pytest.approx(74 * 3580 / 3600)
    # one task on 4 GPUs shows 180 (its smUtil summed over them): 45 % a GPU, not 100 % (180 clipped)
    assert jobs["4250_3"].summary_gpu_util == pytest.approx(45.0)


def test_sacct_before_gpuutil_gives_no_figure():
    # Slurm 21.08 has no gres/gpuutil; its step here has a gpuutil entry but no task count: no guess
    jobs = parse_sacct((FIXTURES / "sacct_dbv0.0.37.json").read_bytes()).jobs
    assert [job.summary_gpu_util for job in jobs] == [None, None]


def test_a_step_whose_gpus_per_task_are_unknown_gives_the_job_no_figure():
    doc = sacct()
    del doc["jobs"][0]["steps"][2]["tasks"]  # srun's step: 74, but per how many GPUs?
    [train] = [job for job in parse_sacct(doc).jobs if job.external_id == "4242"]
    assert train.summary_gpu_util is None
    # nor when the step lists no GPUs of its own while the job's steps cannot be told apart
    step = a_step("0", elapsed=600, tasks=2, gpu_entries=[], gpuutil=50)
    del step["tres"]["allocated"]
    assert steps_gpu_util(job_of([step]), 4, 600) is None


def test_time_no_step_covers_counts_as_idle():
    # salloc for an hour, one srun step of half an hour on all 4 GPUs at 80 %: the GPUs sat idle the rest
    step = a_step("0", elapsed=1800, tasks=4, gpu_entries=gpus(4), gpuutil=80, wrapped=True)
    assert steps_gpu_util(job_of([step]), 4, 3600) == pytest.approx(40.0)


def test_a_step_without_gpus_is_left_out_and_overlapping_steps_are_clipped():
    cpu_step = a_step("0", elapsed=3600, tasks=1, gpu_entries=[], gpuutil=None)  # preprocessing on CPUs
    gpu_step = a_step("1", elapsed=3600, tasks=2, gpu_entries=gpus(4), gpuutil=190)  # 2 tasks of 2 GPUs at 95 %
    assert steps_gpu_util(job_of([cpu_step, gpu_step]), 4, 3600) == pytest.approx(95.0)
    twice = a_step("2", elapsed=3600, tasks=2, gpu_entries=gpus(4), gpuutil=190)
    assert steps_gpu_util(job_of([gpu_step, twice]), 4, 3600) == 100.0


@pytest.mark.parametrize(
    ("gpuutil", "why"),
    [
        ({"set": True, "infinite": True, "number": 0}, "infinite"),
        ({"set": False, "infinite": False, "number": 0}, "unset"),
        (18446744073709551614, "Slurm's NO_VAL64 as a plain number"),
        (-5, "negative"),
    ],
)
def test_unreadable_values_give_no_figure(gpuutil, why):
    step = a_step("0", elapsed=600, tasks=1, gpu_entries=gpus(1), gpuutil=0)
    step["tres"]["requested"]["average"][0]["count"] = gpuutil
    assert steps_gpu_util(job_of([step], 1), 1, 600) is None, why


def test_mig_slices_give_no_figure():
    # NVML has no utilization for MIG instances; Slurm reports 0, which would read as an idle job
    step = a_step("0", elapsed=600, tasks=1, gpu_entries=gpus(1, "gpu:a100_3g.40gb"), gpuutil=0)
    assert steps_gpu_util(job_of([step], 1, "gpu:a100_3g.40gb"), 1, 600) is None


def test_a_step_of_an_odd_shape_leaves_the_job_readable():
    doc = sacct()
    doc["jobs"][0]["steps"][2]["tasks"] = {"count": [8]}
    doc["jobs"][0]["steps"][1]["tres"]["allocated"] = [{"type": "gres", "name": "gpu", "count": {"number": "x"}}]
    parsed = parse_sacct(copy.deepcopy(doc))
    assert parsed.errors == [] and {job.external_id for job in parsed.jobs} == {"4242", "4250_3"}
    assert next(job for job in parsed.jobs if job.external_id == "4242").summary_gpu_util is None
