"""sacct's steps as the task count that ran: the Slurm connector keeps each step's `tasks.count` in the job's `steps`
label, and triage takes it for the srun launch that ran in the step, over what the scripts say."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from fleet.canonical import step_tasks
from fleet.connectors.slurm import parse_sacct
from fleet.models import Job
from tests.test_slurm_launches import one_busy_gpu_of_eight, oversubscription
from tests.test_triage_edge_cases import START, run
from triage.services import job_info

FIXTURES = Path(__file__).parent / "fixtures" / "connectors"


@pytest.mark.parametrize(
    ("script", "steps", "processes", "step"),
    [
        # sacct's steps ran the tasks: a count the script leaves unknown, or gives otherwise, is the step's
        ("srun python train.py", (("7.0", "python", 8),), [8], ["7.0"]),
        ("#SBATCH --ntasks=2\nsrun python train.py", (("7.0", "python", 8),), [8], ["7.0"]),
        ("srun -n 8 python train.py", (("7.0", "python", 8),), [8], ["7.0"]),
        ("srun -n $N python3 train.py", (("7.0", "python3", 4),), [4], ["7.0"]),
        # steps of another program say nothing of this launch
        ("srun python train.py", (("7.0", "bash", 8),), [None], [None]),
        # two srun pythons, two python steps: in order
        (
            "srun -n 1 python prep.py\nsrun python train.py",
            (("7.0", "python", 1), ("7.1", "python", 8)),
            [1, 8],
            ["7.0", "7.1"],
        ),
        # a python run in steps of different counts, more than it has lines: which is which is not known
        ("srun python train.py", (("7.0", "python", 1), ("7.1", "python", 8)), [None], [None]),
        # a python not under srun is no step's
        ("python train.py", (("7.0", "python", 8),), [None], [None]),
    ],
)
def test_sacct_step_task_counts_are_the_processes_that_ran(script, steps, processes, step):
    evidence, _ = run(120, one_busy_gpu_of_eight(), gpu_count=8, scripts=[("run.sh", script + "\n")], step_tasks=steps)
    launched = evidence.scripts.of("shell_launch")
    assert [f.detail.get("processes") for f in launched] == processes
    assert [f.detail.get("step") for f in launched] == step
    for fact in launched:
        if fact.detail.get("step"):
            assert "sbatch_lines" not in fact.detail  # the count is the step's, not an #SBATCH line's


def test_a_step_count_makes_a_bare_srun_a_distributed_launch():
    script = "#!/bin/bash\nsrun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)], step_tasks=(("7.0", "python", 8),))
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8
    assert oversubscription(scripts=[("run.sh", script)]).sub_cause == "unused_gpus"


# -- the Slurm connector keeps each step's task count (sacct's steps[].tasks.count) as the job's `steps` label ------
def test_sacct_steps_task_counts_are_kept_in_the_jobs_steps_label():
    fixtures = FIXTURES
    for version in ("v0.0.39", "v0.0.40", "v0.0.41", "v0.0.42"):
        jobs = {job.external_id: job for job in parse_sacct((fixtures / f"sacct_{version}.json").read_bytes()).jobs}
        # the batch and extern steps run no program of the job's own: left out
        assert jobs["4242"].labels["steps"] == [{"id": "4242.0", "name": "python", "tasks": 8}], version
        assert step_tasks(jobs["4242"].labels) == (("4242.0", "python", 8),)
    doc = json.loads((fixtures / "sacct_v0.0.40.json").read_text())
    steps = doc["jobs"][0]["steps"]
    steps[2]["tasks"] = {"count": {"set": True, "infinite": False, "number": 4}}  # a wrapped number
    steps.append({"step": {"id": "4242.1", "name": "python3"}})  # no task count: left out
    steps.insert(0, {"step": {"id": "4242.10", "name": "torchrun"}, "tasks": {"count": 2}})  # in step order
    (job,) = [job for job in parse_sacct(doc).jobs if job.external_id == "4242"]
    assert [(s["id"], s["tasks"]) for s in job.labels["steps"]] == [("4242.0", 4), ("4242.10", 2)]
    # Slurm 21.08's step ids are objects
    old = parse_sacct((fixtures / "sacct_dbv0.0.37.json").read_bytes())
    assert all("steps" not in job.labels for job in old.jobs)  # its steps carry no task count


@pytest.mark.parametrize(
    "labels",
    [
        {},
        {"steps": "python"},
        {"steps": [{"id": "7.0", "name": "python", "tasks": "8"}]},
        {"steps": [{"id": "7.0", "name": "python", "tasks": 0}]},
        {"steps": [{"id": "7.0", "name": "python", "tasks": True}]},
        {"steps": [["7.0", "python", 8]]},
    ],
)
def test_a_steps_label_of_another_shape_gives_no_step_counts(labels):
    assert step_tasks(labels) == ()


def test_triage_reads_a_stored_jobs_steps_label():
    job = Job(
        start_time=START,
        end_time=START + timedelta(hours=1),
        gpu_count=8,
        labels={"steps": [{"id": "7.0", "name": "python", "tasks": 8}]},
    )
    assert job_info(job).step_tasks == (("7.0", "python", 8),)


@pytest.mark.django_db
def test_an_imported_sacct_jobs_step_counts_its_bare_sruns_tasks(tmp_path):
    # sacct's job 4242: `#SBATCH --gres=gpu:8` then a bare `srun python train.py`, which ran in step 4242.0 of 8
    # tasks. Its script gives no task count (one process: unused GPUs); the step says eight processes.
    from tests.test_slurm_step_util import T0, import_archive
    from triage.models import Finding
    from triage.services import triage_job

    times = [T0 + 60 * i for i in range(61)]
    result = [
        {
            "metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": str(g), "hostname": "gpu01", "hpc_job": "4242"},
            "values": [[t, "60" if g == 0 else "0"] for t in times],
        }
        for g in range(8)
    ]
    metrics = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})
    sacct = (FIXTURES / "sacct_v0.0.41.json").read_bytes()
    import_archive(tmp_path, {"native/slurm/sacct.json": sacct, "native/prometheus/4242/gpu.json": metrics})
    job = Job.objects.get(external_id="4242")
    assert job.labels["steps"] == [{"id": "4242.0", "name": "python", "tasks": 8}]
    triage_job(job)
    (finding,) = Finding.objects.filter(result__job=job, result__is_current=True, category="gpu_oversubscription")
    assert finding.sub_cause == "uneven_use" and finding.evidence["numbers"]["srun_tasks"] == 8


@pytest.mark.parametrize(
    ("script", "steps", "processes"),
    [
        # a launcher under srun runs once a task, each starting its own count on its node: the step's tasks times it
        ("srun torchrun --nproc_per_node 4 train.py", (("7.0", "torchrun", 2),), 8),
        ("srun torchrun train.py", (("7.0", "torchrun", 8),), 8),  # torchrun's default, one a task
        ("srun torchrun train.py", (("7.0", "torchrun", 1),), 1),
        ("#SBATCH --ntasks=2\nsrun torchrun --nproc_per_node 4 train.py", (("7.0", "torchrun", 4),), 16),
        ("srun python -m torch.distributed.run --nproc_per_node 4 t.py", (("7.0", "python", 2),), 8),
        ("srun deepspeed --num_gpus 4 train.py", (("7.0", "deepspeed", 2),), 8),
        # accelerate's --num_processes counts over its --num_machines: each machine starts its share
        ("srun accelerate launch --num_processes 8 --num_machines 2 train.py", (("7.0", "accelerate", 2),), 8),
        ("srun accelerate launch --multi_gpu --num_processes 4 train.py", (("7.0", "accelerate", 2),), 8),
        # the launcher's per-task count not known: none
        ("srun torchrun --nproc_per_node $GPUS train.py", (("7.0", "torchrun", 2),), None),
        ("export PET_NPROC_PER_NODE=4\nsrun torchrun train.py", (("7.0", "torchrun", 2),), None),
        ("srun deepspeed train.py", (("7.0", "deepspeed", 2),), None),
        # steps of another program say nothing of this launch
        ("srun torchrun --nproc_per_node 4 train.py", (("7.0", "python", 2),), None),
    ],
)
def test_a_launcher_under_srun_starts_its_count_in_each_task_of_its_step(script, steps, processes):
    # `srun torchrun ...` in a step of N tasks runs N torchruns, each starting its own --nproc_per_node; the step's
    # count was read for a python under srun only, so such a launch's count stayed the scripts' (or none).
    evidence, _ = run(120, one_busy_gpu_of_eight(), gpu_count=8, scripts=[("run.sh", script + "\n")], step_tasks=steps)
    (launched,) = evidence.scripts.of("shell_launch")
    assert launched.detail.get("processes") == processes
    assert launched.detail.get("step") == (steps[0][0] if processes is not None else None)


def test_a_launcher_in_a_step_of_one_task_is_one_process():
    # `srun torchrun train.py` ran in a step of one task: one process (torchrun's default), seven GPUs unused; the
    # count was not known (srun's tasks), so the finding was uneven use of GPUs the processes share.
    script = "#!/bin/bash\nsrun torchrun train.py\n"
    assert oversubscription(scripts=[("run.sh", script)]).sub_cause == "uneven_use"
    finding = oversubscription(scripts=[("run.sh", script)], step_tasks=(("7.0", "torchrun", 1),))
    assert finding.sub_cause == "unused_gpus"
    finding = oversubscription(command="srun torchrun train.py", step_tasks=(("7.0", "torchrun", 1),))
    assert finding.sub_cause == "unused_gpus"


@pytest.mark.parametrize(
    ("scripts", "command"),
    [
        ([("run.sh", "#!/bin/bash\nsalloc -N 1 srun python train.py\n")], ""),
        ([], 'sbatch --wrap="srun python train.py"'),
        ([], "salloc -N 1 srun torchrun --nproc_per_node 4 train.py"),
    ],
)
def test_a_launch_run_by_salloc_or_sbatch_wrap_takes_its_steps_count(scripts, command):
    steps = (("7.0", "python", 8),) if "python train.py" in (command or scripts[0][1]) else (("7.0", "torchrun", 2),)
    evidence, _ = run(120, one_busy_gpu_of_eight(), gpu_count=8, scripts=scripts, command=command, step_tasks=steps)
    (launched,) = evidence.scripts.of("shell_launch", "command_launch")
    assert (launched.detail.get("processes"), launched.detail.get("step")) == (8, "7.0")
