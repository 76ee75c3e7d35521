"""Slurm launches: the GPUs Slurm binds to each srun task (`--gpus-per-task`, `--gpu-bind`), the allocation a bare
srun takes from `salloc` and from sbatch's own command line, and sacct's step task counts as the count that ran."""

from __future__ import annotations

import pytest

from tests.test_triage_edge_cases import run, series
from triage.evidence.scripts import command_code_facts, extract_script_evidence
from triage.guidance import guidance_for
from triage.taxonomy import Category


def launch_of(script: str, command: str = ""):
    (launched,) = extract_script_evidence([("run.sh", script)], command=command).of("shell_launch")
    return launched


def one_busy_gpu_of_eight():
    return series(120, lambda t, g: 60 if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)


def oversubscription(**job):
    _, result = run(120, one_busy_gpu_of_eight(), gpu_count=8, node_count=1, **job)
    (finding,) = [f for f in result.findings if f.category == Category.GPU_OVERSUBSCRIPTION]
    return finding


def guide_of(finding) -> dict:
    return guidance_for(
        finding.category,
        finding.sub_cause,
        finding.numbers,
        gpu_hours=finding.gpu_hours,
        price_per_gpu_hour=None,
        currency="",
        job={"gpu_count": 8, "node_count": 1},
    )


@pytest.mark.parametrize(
    ("sbatch", "launch", "binding"),
    [
        # --gpus-per-task implicitly sets --gpu-bind=per_task:<n> (srun(1), sbatch(1)): each task sees its GPU as cuda:0
        ("", "srun -n 8 --gpus-per-task=1 python train.py", "--gpus-per-task=1"),
        ("", "srun -n 8 --gpus-per-task 1 python train.py", "--gpus-per-task=1"),
        ("", "srun -n 8 --gpus-per-task=a100:1 python train.py", "--gpus-per-task=a100:1"),
        ("#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-task=1", "srun python train.py", "--gpus-per-task=1"),
        ("#SBATCH --ntasks=8 --gpus-per-task=1", "srun --cpu-bind=cores python train.py", "--gpus-per-task=1"),
        ("", "srun -n 8 --gpu-bind=single:1 python train.py", "--gpu-bind=single:1"),
        ("", "srun -n 8 --gpu-bind=closest python train.py", "--gpu-bind=closest"),
        (
            "",
            "srun -n 8 --gpu-bind=verbose,map_gpu:0,1,2,3,4,5,6,7 python train.py",
            "--gpu-bind=verbose,map_gpu:0,1,2,3,4,5,6,7",
        ),
        ("#SBATCH -n 8\n#SBATCH --gpu-bind=per_task:1", "srun python train.py", "--gpu-bind=per_task:1"),
        # --gpu-bind=none turns the binding off; srun's own options win over the allocation's
        ("", "srun -n 8 --gpus-per-task=1 --gpu-bind=none python train.py", None),
        ("#SBATCH -n 8 --gpus-per-task=1", "srun --gpu-bind=none python train.py", None),
        ("#SBATCH -n 8 --gpu-bind=none", "srun --gpus-per-task=1 python train.py", None),
        # no binding given, or one not known
        ("", "srun -n 8 python train.py", None),
        ("", "srun -n 8 --gpus-per-task=$GPT python train.py", None),
        ("", "srun -n 8 $SRUN_ARGS --gpus-per-task=1 python train.py", None),
    ],
)
def test_the_gpus_slurm_binds_to_each_srun_task_are_read(sbatch, launch, binding):
    launched = launch_of(f"#!/bin/bash\n{sbatch}\n{launch}\n")
    assert launched.detail.get("gpu_binding") == binding


@pytest.mark.parametrize(
    ("scripts", "command"),
    [
        (
            [("run.sh", "#!/bin/bash\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-task=1\nsrun python train.py\n")],
            "",
        ),
        ([], "srun -n 8 --gpus-per-task=1 python train.py"),
        ([], "srun -n 8 --gpu-bind=single:1 python train.py"),
    ],
)
def test_tasks_each_bound_to_a_gpu_are_not_told_to_pick_it_from_slurm_localid(scripts, command):
    # Slurm sets each task's CUDA_VISIBLE_DEVICES to its own GPU, so every task sees it as cuda:0: they do not share
    # GPU 0, and `cuda:$SLURM_LOCALID` would name a GPU task 1 cannot see. The idle GPUs are tasks that did no work.
    finding = oversubscription(scripts=scripts, command=command)
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8
    assert finding.numbers["gpu_binding"] in ("--gpus-per-task=1", "--gpu-bind=single:1")
    guide = guide_of(finding)
    assert "SLURM_LOCALID" not in guide["after"] and "set_device" not in guide["after"]
    assert "cuda:0" in guide["change"] and "every task on cuda:0" not in guide["before"]
    assert "cannot see" in guide["change"]


def test_a_fixed_cuda0_is_each_bound_tasks_own_gpu_and_not_quoted_as_the_cause():
    train = 'import torch\ndevice = torch.device("cuda:0")\nmodel = torch.nn.Linear(2, 2).to(device)\n'
    script = "#!/bin/bash\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-task=1\nsrun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script), ("train.py", train)])
    assert [(c.path, c.line) for c in finding.code] == [("run.sh", 2), ("run.sh", 3), ("run.sh", 4)]
    assert finding.confidence < 0.95
    # without the binding, every task on cuda:0 is the cause, quoted
    script = "#!/bin/bash\n#SBATCH --ntasks-per-node=8\nsrun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script), ("train.py", train)])
    assert ("train.py", 2) in [(c.path, c.line) for c in finding.code]
    assert "SLURM_LOCALID" in guide_of(finding)["change"]


@pytest.mark.parametrize(
    ("script", "lines"),
    [
        # an interactive allocation, then srun in it: srun takes salloc's task layout as it takes #SBATCH's
        ("salloc -N 1 --ntasks-per-node=8 --gpus-per-task=1\nsrun python train.py", {2: 8}),
        ("salloc -n 8\nsrun python train.py", {2: 8}),
        ("#SBATCH --ntasks=2\nsalloc --ntasks=8\nsrun python train.py", {3: 8}),  # a new allocation
        # salloc running its command: the allocation holds for that command only
        ("salloc -n 8 srun python train.py\nsrun python eval.py", {1: 8, 2: None}),
        ("salloc -n 8 --gpus-per-task=1 srun --gpu-bind=closest python train.py", {1: 8}),
        ("salloc $ALLOC_ARGS\nsrun python train.py", {2: None}),  # options not shown: not known
    ],
)
def test_srun_in_a_salloc_allocation_takes_its_task_layout(script, lines):
    evidence = extract_script_evidence([("run.sh", script + "\n")])
    launched = {f.line: f.detail.get("processes") for f in evidence.of("shell_launch")}
    assert launched == lines
    for fact in evidence.of("shell_launch"):
        assert fact.detail["launcher"] == "python"


def test_a_salloc_line_is_quoted_with_the_srun_it_gave_its_tasks_and_binding():
    script = "#!/bin/bash\nsalloc -N 1 --ntasks-per-node=8 --gpus-per-task=1 --gres=gpu:8\nsrun python train.py\n"
    launched = launch_of(script)
    assert launched.detail["processes"] == 8 and launched.detail["gpu_binding"] == "--gpus-per-task=1"
    assert launched.detail["sbatch_lines"] == [2]
    finding = oversubscription(scripts=[("run.sh", script)])
    assert [(c.path, c.line) for c in finding.code] == [("run.sh", 2), ("run.sh", 3)]


def test_the_jobs_command_under_salloc_is_read_in_its_allocation():
    (launch,) = command_code_facts("salloc -n 4 --gpus-per-task=1 srun python train.py")
    assert launch.kind == "command_launch" and launch.detail["processes"] == 4
    assert launch.detail["gpu_binding"] == "--gpus-per-task=1"


@pytest.mark.parametrize(
    ("sbatch", "command", "processes", "binding"),
    [
        # sbatch's own options (its command line) are the allocation the script's srun runs in
        ("", "sbatch --ntasks-per-node=8 --gpus-per-task=1 run.sh", 8, "--gpus-per-task=1"),
        ("#SBATCH --gres=gpu:8", "sbatch -N 1 -n 8 run.sh", 8, None),
        ("#SBATCH --gres=gpu:8", "/usr/bin/sbatch --ntasks 8 --parsable run.sh --epochs 3", 8, None),
        # ... and win over its #SBATCH lines
        ("#SBATCH --ntasks=2", "sbatch -n 8 run.sh", 8, None),
        ("#SBATCH --ntasks=8 --gpus-per-task=1", "sbatch --gpu-bind=none run.sh", 8, None),
        ("#SBATCH --ntasks=8", "sbatch $SBATCH_ARGS run.sh", None, None),  # may give another: not known
        ("", "sbatch run.sh", None, None),
    ],
)
def test_sbatchs_own_options_are_the_allocation_of_the_scripts_srun(sbatch, command, processes, binding):
    launched = launch_of(f"#!/bin/bash\n{sbatch}\nsrun python train.py\n", command=command)
    assert launched.detail.get("processes") == processes
    assert launched.detail.get("gpu_binding") == binding
    if processes and not sbatch.startswith("#SBATCH --ntasks=8") and "$" not in command:
        assert "sbatch_lines" not in launched.detail  # no #SBATCH line gave the count


@pytest.mark.parametrize(
    ("launch", "bound"),
    [
        ("srun -n 2 --gpus-per-task=1 python train.py", 2),
        ("srun -n 2 --gpus-per-task=a100:2 python train.py", 4),
        ("srun -n 4 --gpu-bind=single:2 python train.py", 2),  # two tasks a GPU
        ("srun -n 8 --gpus-per-task=1 python train.py", None),  # all eight held
        ("srun -n 2 --gpu-bind=closest python train.py", None),  # how many each holds is not said
    ],
)
def test_gpus_bound_to_no_task_are_named_in_the_fix(launch, bound):
    # An 8-GPU job whose srun binds 2 tasks a GPU each holds 6 GPUs no task can use: they are not tasks that did no
    # work, and the fix says to request only the GPUs the tasks hold.
    finding = oversubscription(command=launch)
    assert finding.numbers.get("bound_gpus") == bound
    guide = guide_of(finding)
    if bound:
        assert f"the other {8 - bound} are bound to no task" in guide["change"]
        assert f"request {bound}" in guide["change"]
    else:
        assert "bound to no task" not in guide["change"]


@pytest.mark.parametrize(
    ("command", "processes", "binding"),
    [
        # sbatch --wrap: the job's batch script is that one command, run in sbatch's allocation
        ('sbatch -n 8 --gpus-per-task=1 --wrap="srun python train.py"', 8, "--gpus-per-task=1"),
        ("sbatch --ntasks-per-node 4 -N 2 --wrap 'srun python train.py --epochs 3'", 8, None),
        ('sbatch --wrap="srun -n 2 python train.py"', 2, None),
        ('sbatch --wrap="python train.py"', None, None),
        # sbatch's options after the wrapped command are its options too (a space-separated --wrap value included)
        ('sbatch --wrap "srun python train.py" -n 8', 8, None),
        ("sbatch --wrap 'srun python train.py' --gpus-per-task=1 --ntasks 8", 8, "--gpus-per-task=1"),
        ('sbatch -n 2 --wrap="srun python train.py" -n 8', 8, None),  # the last one given
    ],
)
def test_the_jobs_sbatch_wrap_command_runs_in_its_allocation(command, processes, binding):
    (launch,) = command_code_facts(command)
    assert launch.kind == "command_launch" and launch.detail["launcher"] == "python"
    assert launch.detail.get("processes") == processes
    assert launch.detail.get("gpu_binding") == binding


def test_a_wrapped_script_takes_sbatchs_options_given_after_the_wrap():
    # `sbatch --wrap "bash run.sh" -n 8`: the script's bare srun runs in sbatch's allocation of 8 tasks
    assert launch_of("#!/bin/bash\nsrun python train.py\n", 'sbatch --wrap "bash run.sh" -n 8').detail["processes"] == 8


@pytest.mark.parametrize(
    ("script", "processes", "binding"),
    [
        # srun reads its options from its input environment (SLURM_NTASKS is -n, SLURM_NTASKS_PER_NODE,
        # SLURM_JOB_NUM_NODES is -N, SLURM_GPUS_PER_TASK, SLURM_GPU_BIND): an exported one sets a bare srun's
        ("export SLURM_NTASKS=8\nsrun python train.py", 8, None),
        ("#SBATCH --ntasks=2\nexport SLURM_NTASKS=8\nsrun python train.py", 8, None),
        ("export SLURM_NTASKS_PER_NODE=4 SLURM_JOB_NUM_NODES=2\nsrun python train.py", 8, None),
        ("declare -x SLURM_NTASKS=8\nsrun python train.py", 8, None),
        ("SLURM_NTASKS=8 srun python train.py", 8, None),  # for that one command
        ("export SLURM_NTASKS=2\nsrun torchrun --nproc_per_node 4 train.py", 8, None),
        # SLURM_NTASKS wins over the deprecated SLURM_NPROCS, in either order
        ("export SLURM_NPROCS=4 SLURM_NTASKS=8\nsrun python train.py", 8, None),
        ("export SLURM_NTASKS=8\nexport SLURM_NPROCS=4\nsrun python train.py", 8, None),
        # srun's command-line options win over its environment
        ("export SLURM_NTASKS=8\nsrun -n 2 python train.py", 2, None),
        # a plain assignment changes the environment only where the allocation already exported it
        ("#SBATCH --ntasks=2\nSLURM_NTASKS=8\nsrun python train.py", 8, None),
        ("SLURM_NTASKS=8\nsrun python train.py", None, None),
        # a value the script does not show, or one unset, leaves the count unknown
        ("#SBATCH --ntasks=8\nexport SLURM_NTASKS=$N\nsrun python train.py", None, None),
        ("#SBATCH --ntasks=8\nunset SLURM_NTASKS\nsrun python train.py", None, None),
        # GPU binding from the environment
        ("export SLURM_NTASKS=8 SLURM_GPUS_PER_TASK=1\nsrun python train.py", 8, "--gpus-per-task=1"),
        ("export SLURM_GPU_BIND=single:1\nsrun -n 8 python train.py", 8, "--gpu-bind=single:1"),
        ("#SBATCH -n 8 --gpus-per-task=1\nexport SLURM_GPU_BIND=none\nsrun python train.py", 8, None),
        ("export SLURM_GPU_BIND=single:1\nsrun -n 8 --gpu-bind=none python train.py", 8, None),
    ],
)
def test_srun_takes_its_options_from_the_environment_the_script_sets(script, processes, binding):
    # `export SLURM_NTASKS=8` before a bare `srun python train.py` gives srun its eight tasks (srun reads its
    # options from such variables); it was read as one task (or the #SBATCH line's count), unused GPUs.
    launched = launch_of(f"#!/bin/bash\n{script}\n")
    assert launched.detail.get("processes") == processes
    assert launched.detail.get("gpu_binding") == binding


def test_an_export_that_gave_srun_its_tasks_is_quoted_with_the_srun_line():
    script = "#!/bin/bash\n#SBATCH --gres=gpu:8\nexport SLURM_NTASKS=8\nsrun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)])
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8
    assert [(c.line, c.text) for c in finding.code] == [(3, "export SLURM_NTASKS=8"), (4, "srun python train.py")]
    finding = oversubscription(command="SLURM_NTASKS=8 srun python train.py")
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8


@pytest.mark.parametrize(
    ("script", "processes"),
    [
        # salloc sets its own options' variables in its allocation, over what the script exported before it
        ("export SLURM_NTASKS=8\nsalloc -n 2\nsrun python train.py", 2),
        ("export SLURM_NTASKS=8\nsalloc -n 2 srun python train.py", 2),
        ("export SLURM_NTASKS=8\nsalloc -N 1\nsrun python train.py", 8),
    ],
)
def test_salloc_options_win_over_the_environment_exported_before_it(script, processes):
    assert launch_of(f"#!/bin/bash\n{script}\n").detail.get("processes") == processes
