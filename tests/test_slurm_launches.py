"""Slurm launches: the GPUs Slurm binds to each srun task (`--gpus-per-task`, `--gpu-bind`), the allocation a bare
srun takes from `salloc` and from sbatch's own command line, and sacct's step task counts as the count that ran."""

from __future__ import annotations

import pytest
import yaml

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


@pytest.mark.parametrize(
    ("command", "processes", "binding"),
    [
        # the job's submitted command exports srun's input variables for the srun after it, as a script's line does
        ("export SLURM_NTASKS=4 && srun python train.py", 4, None),
        ("export SLURM_NTASKS=4; srun python train.py", 4, None),
        ("export SLURM_NTASKS=2 SLURM_GPUS_PER_TASK=1 && srun python train.py", 2, "--gpus-per-task=1"),
        ("export SLURM_NTASKS=2 && srun torchrun --nproc_per_node 4 train.py", 8, None),
        ('sbatch --wrap "export SLURM_NTASKS=4; srun python train.py"', 4, None),
        ("sbatch --wrap='export SLURM_NTASKS=4 && srun python train.py'", 4, None),
        # in the wrapped script, over sbatch's own allocation; srun's own options win over both
        ('sbatch -n 8 --wrap "export SLURM_NTASKS=4; srun python train.py"', 4, None),
        ('sbatch -n 8 --gpus-per-task=1 --wrap "export SLURM_GPU_BIND=none; srun python train.py"', 8, None),
        ("export SLURM_NTASKS=4 && srun -n 2 python train.py", 2, None),
        # a plain assignment sets a variable the environment holds already (sbatch exports SLURM_NTASKS for -n)
        ('sbatch -n 8 --wrap "SLURM_NTASKS=4; srun python train.py"', 4, None),
        ("SLURM_NTASKS=4; srun python train.py", None, None),
        # a value the command does not show, or one it unsets, is not known
        ("export SLURM_NTASKS=$N && srun python train.py", None, None),
        ('sbatch -n 8 --wrap "unset SLURM_NTASKS; srun python train.py"', None, None),
        # an allocation the command makes sets its own options' variables over those exported before it
        ('export SLURM_NTASKS=4; sbatch -n 8 --wrap "srun python train.py"', 8, None),
        ("export SLURM_NTASKS=4; salloc -n 8 srun python train.py", 8, None),
        ("export SLURM_NTASKS=4; salloc -N 1 srun python train.py", 4, None),
        # torchrun's options from the environment (PET_*): not known, as after a script's export
        ("export PET_NPROC_PER_NODE=4 && torchrun train.py", None, None),
    ],
)
def test_variables_the_jobs_command_exports_apply_to_the_srun_after_them(command, processes, binding):
    # `export SLURM_NTASKS=4 && srun python train.py` (sacct's submit_line, or an `sbatch --wrap` command) starts four
    # tasks, as the same export in a batch script does; the command's export was not followed: one task, or the
    # allocation's count.
    (launch,) = [f for f in command_code_facts(command) if f.kind == "command_launch"]
    assert launch.detail.get("processes") == processes
    assert launch.detail.get("gpu_binding") == binding


def test_an_srun_job_whose_command_exports_its_tasks_is_uneven_use():
    finding = oversubscription(command="export SLURM_NTASKS=8 && srun python train.py")
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8
    finding = oversubscription(command='sbatch --gres=gpu:8 --wrap "export SLURM_NTASKS=8; srun python train.py"')
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8


def accelerate_config(num_processes: int = 8, num_machines: int | None = 2) -> str:
    """An Accelerate config file for several machines, as `accelerate config` writes it."""
    machines = f"num_machines: {num_machines}\n" if num_machines is not None else ""
    return (
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmachine_rank: 0\nmixed_precision: bf16\n"
        f"{machines}num_processes: {num_processes}\n"
    )


@pytest.mark.parametrize(
    ("script", "config", "processes"),
    [
        # srun runs `accelerate launch` once a task, each starting its share of the config's num_processes, which
        # counts over its num_machines: two tasks of a config of 8 processes on 2 machines are 8 processes
        ("srun -N 2 accelerate launch --config_file acc.yaml train.py", accelerate_config(), 8),
        (
            "#SBATCH -N 2 --ntasks-per-node=1\nsrun accelerate launch --config_file acc.yaml t.py",
            accelerate_config(),
            8,
        ),
        ("export SLURM_NTASKS=2\nsrun accelerate launch --config_file acc.yaml t.py", accelerate_config(), 8),
        ("srun -N 2 accelerate launch --config_file acc.yaml --num_processes 16 t.py", accelerate_config(), 16),
        ("srun -N 4 accelerate launch --config_file acc.yaml t.py", accelerate_config(16, 4), 16),
        # the line's --num_machines wins over the config's
        ("srun -N 2 accelerate launch --config_file acc.yaml --num_machines 1 t.py", accelerate_config(), 16),
        # one task: the config's count
        ("srun -n 1 accelerate launch --config_file acc.yaml train.py", accelerate_config(), 8),
        # not known: a count that is no whole share, a config that names no machines, tasks not known
        ("srun -N 2 accelerate launch --config_file acc.yaml train.py", accelerate_config(8, 3), None),
        ("srun -N 2 accelerate launch --config_file acc.yaml train.py", accelerate_config(8, None), None),
        ("srun accelerate launch --config_file acc.yaml train.py", accelerate_config(), None),
    ],
)
def test_an_accelerate_config_counts_its_processes_over_its_machines_under_srun(script, config, processes):
    # `srun -N 2 accelerate launch --config_file acc.yaml` (num_processes: 8, num_machines: 2) starts 4 processes on
    # each of its 2 nodes: 8. The config's num_machines was not read, so the count was not known.
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n{script}\n"), ("acc.yaml", config)])
    (launched,) = evidence.of("shell_launch")
    assert launched.detail.get("processes") == processes
    (setting,) = evidence.of("launch_config")
    assert setting.detail.get("num_machines") == yaml.safe_load(config).get("num_machines")


def test_an_accelerate_config_under_srun_counts_in_the_jobs_command_and_in_its_step():
    files = [("acc.yaml", accelerate_config())]
    evidence, _ = run(
        120,
        one_busy_gpu_of_eight(),
        gpu_count=8,
        scripts=files,
        command="srun -N 2 accelerate launch --config_file acc.yaml train.py",
    )
    (launched,) = evidence.scripts.of("command_launch")
    assert launched.detail.get("processes") == 8 and launched.detail["launch_config"] == "acc.yaml"
    script = ("run.sh", "#!/bin/bash\nsrun accelerate launch --config_file acc.yaml train.py\n")
    steps = (("7.0", "accelerate", 2),)
    evidence, _ = run(120, one_busy_gpu_of_eight(), gpu_count=8, scripts=[script, *files], step_tasks=steps)
    (launched,) = evidence.scripts.of("shell_launch")
    assert (launched.detail.get("processes"), launched.detail.get("step")) == (8, "7.0")


@pytest.mark.parametrize(
    ("script", "binding"),
    [
        # --ntasks-per-gpu implicitly sets --tres-bind=gres/gpu:single:<ntasks> (srun(1), sbatch(1); --gpu-bind is
        # the same as --tres-bind=gres/gpu:...): each task sees only the GPU it shares with the other N-1
        ("srun -n 8 --ntasks-per-gpu=1 python train.py", "--ntasks-per-gpu=1"),
        ("srun -n 8 --ntasks-per-gpu 2 python train.py", "--ntasks-per-gpu=2"),
        ("#SBATCH -n 8 --ntasks-per-gpu=1\nsrun python train.py", "--ntasks-per-gpu=1"),
        ("export SLURM_NTASKS_PER_GPU=1\nsrun -n 8 python train.py", "--ntasks-per-gpu=1"),
        # an explicit binding overrides it, --gpu-bind or --tres-bind=gres/gpu:...
        ("srun -n 8 --ntasks-per-gpu=1 --gpu-bind=none python train.py", None),
        ("srun -n 8 --ntasks-per-gpu=1 --tres-bind=gres/gpu:none python train.py", None),
        ("srun -n 8 --ntasks-per-gpu=1 --tres-bind=gres/gpu:closest python train.py", "--gpu-bind=closest"),
        ("#SBATCH -n 8 --ntasks-per-gpu=1\nsrun --gpu-bind=none python train.py", None),
        # a count not shown
        ("srun -n 8 --ntasks-per-gpu=$N python train.py", None),
    ],
)
def test_ntasks_per_gpu_binds_each_task_to_its_gpu(script, binding):
    launched = launch_of(f"#!/bin/bash\n{script}\n")
    assert launched.detail.get("gpu_binding") == binding


def test_tasks_bound_by_ntasks_per_gpu_are_told_of_the_gpus_they_leave():
    # 4 tasks, 2 a GPU, hold 2 GPUs of the job's 8: the other 6 are bound to no task; the fix does not tell the tasks
    # to pick their GPU from SLURM_LOCALID (each sees only its own, as cuda:0)
    finding = oversubscription(command="srun -n 4 --ntasks-per-gpu=2 python train.py")
    assert finding.numbers["gpu_binding"] == "--ntasks-per-gpu=2" and finding.numbers["bound_gpus"] == 2
    guide = guide_of(finding)
    assert "the other 6 are bound to no task" in guide["change"] and "SLURM_LOCALID" not in guide["after"]
    script = "#!/bin/bash\n#SBATCH -n 8\n#SBATCH --ntasks-per-gpu=1\nsrun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)])
    assert finding.numbers["gpu_binding"] == "--ntasks-per-gpu=1" and "bound_gpus" not in finding.numbers
    assert [(c.path, c.line) for c in finding.code] == [("run.sh", 2), ("run.sh", 3), ("run.sh", 4)]


def test_a_launcher_whose_command_sets_its_count_in_the_environment_stays_unknown_in_its_step():
    # torchrun takes --nproc-per-node from PET_NPROC_PER_NODE: the step's tasks times torchrun's default is not known
    steps = (("7.0", "torchrun", 2),)
    command = "export PET_NPROC_PER_NODE=4 && srun torchrun train.py"
    evidence, _ = run(120, one_busy_gpu_of_eight(), gpu_count=8, command=command, step_tasks=steps)
    (launched,) = evidence.scripts.of("command_launch")
    assert launched.detail.get("processes") is None
    evidence, _ = run(120, one_busy_gpu_of_eight(), gpu_count=8, command="srun torchrun train.py", step_tasks=steps)
    (launched,) = evidence.scripts.of("command_launch")
    assert launched.detail.get("processes") == 2


@pytest.mark.parametrize(
    ("script", "processes"),
    [
        # srun(1), sbatch(1), of --ntasks-per-gpu: "specify the GPUs wanted (e.g. via --gpus or --gres) without
        # specifying --ntasks, and the total task count will be automatically determined": N tasks for every GPU
        ("#SBATCH --gres=gpu:8 --ntasks-per-gpu=1\nsrun python train.py", 8),
        ("#SBATCH --gres=gpu:a100:4\n#SBATCH --ntasks-per-gpu=2\nsrun python train.py", 8),
        ("#SBATCH --gres=gpu:a100 --ntasks-per-gpu=2\nsrun python train.py", 2),  # a --gres count defaults to 1
        ("#SBATCH --gres=nvme:1,gpu:4 --ntasks-per-gpu=2\nsrun python train.py", 8),
        ("#SBATCH --gpus=8 --ntasks-per-gpu=1\nsrun python train.py", 8),
        ("#SBATCH -G 4 --ntasks-per-gpu=2\nsrun python train.py", 8),
        ("#SBATCH --gpus=volta:3,kepler:1 --ntasks-per-gpu=1\nsrun python train.py", 4),
        # --gres and --gpus-per-node are each node's GPUs, --gpus the job's
        ("#SBATCH --gpus-per-node=4 -N 2 --ntasks-per-gpu=1\nsrun python train.py", 8),
        ("#SBATCH --gres=gpu:4 --nodes=2 --ntasks-per-gpu=1\nsrun python train.py", 8),
        ("#SBATCH --gpus=8 -N 2 --ntasks-per-gpu=1\nsrun python train.py", 8),
        # srun's own options, and over its allocation's
        ("srun --gpus=8 --ntasks-per-gpu=1 python train.py", 8),
        ("#SBATCH --gres=gpu:8\nsrun --ntasks-per-gpu=1 python train.py", 8),
        ("#SBATCH --gres=gpu:8\nexport SLURM_NTASKS_PER_GPU=1\nsrun python train.py", 8),
        # with --ntasks the task count is that (Slurm works out the GPUs instead)
        ("#SBATCH --gres=gpu:8 -n 4 --ntasks-per-gpu=1\nsrun python train.py", 4),
        # not known: a count not shown, a node range
        ("#SBATCH --gres=gpu:$G --ntasks-per-gpu=1\nsrun python train.py", None),
        ("#SBATCH --gpus-per-node=4 -N 1-2 --ntasks-per-gpu=1\nsrun python train.py", None),
    ],
)
def test_ntasks_per_gpu_counts_the_tasks_from_the_gpus_requested(script, processes):
    # `#SBATCH --gres=gpu:8 --ntasks-per-gpu=1` with a bare srun starts 8 tasks, one a GPU; the count was not read
    # (the srun's python a single process)
    assert launch_of(f"#!/bin/bash\n{script}\n").detail.get("processes") == processes


def test_tasks_counted_from_the_gpus_requested_are_uneven_use_quoting_those_lines():
    script = "#!/bin/bash\n#SBATCH --gres=gpu:8\n#SBATCH --ntasks-per-gpu=1\nsrun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)])
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8
    assert finding.numbers["gpu_binding"] == "--ntasks-per-gpu=1"
    assert [(c.path, c.line) for c in finding.code] == [("run.sh", 2), ("run.sh", 3), ("run.sh", 4)]
    (launch,) = command_code_facts('sbatch --gpus=8 --ntasks-per-gpu=1 --wrap="srun python train.py"')
    assert launch.detail.get("processes") == 8


@pytest.mark.parametrize(
    ("command", "script", "processes"),
    [
        # the wrapped command's exports before it runs the script are the script's environment, which its bare srun
        # reads (over sbatch's own options and the script's #SBATCH lines, which sbatch never read)
        ('sbatch --wrap "export SLURM_NTASKS=4; bash run.sh"', "srun python train.py", 4),
        ("sbatch -n 8 --wrap 'export SLURM_NTASKS=4 && ./run.sh'", "srun python train.py", 4),
        ('sbatch --wrap "export SLURM_NTASKS=4; sh /home/u/run.sh"', "#SBATCH -n 2\nsrun python train.py", 4),
        ('sbatch --wrap "export SLURM_NTASKS=4 SLURM_GPUS_PER_TASK=1; bash run.sh"', "srun python train.py", 4),
        # the script's own export wins; an export after the script, or before another one, is not its
        ('sbatch --wrap "export SLURM_NTASKS=4; bash run.sh"', "export SLURM_NTASKS=2\nsrun python train.py", 2),
        ('sbatch -n 8 --wrap "bash run.sh; export SLURM_NTASKS=4"', "srun python train.py", 8),
        ('sbatch -n 8 --wrap "export SLURM_NTASKS=4; bash other.sh"', "srun python train.py", 8),
        # a value not shown is not known; salloc's command and the job's own command line are read the same way
        ('sbatch -n 8 --wrap "export SLURM_NTASKS=$N; bash run.sh"', "srun python train.py", None),
        ('sbatch -n 8 --wrap "SLURM_NTASKS=4 bash run.sh"', "srun python train.py", 4),  # for that one command
        ("salloc -n 8 bash run.sh", "srun python train.py", 8),
        ("export SLURM_NTASKS=4 && bash run.sh", "srun python train.py", 4),
    ],
)
def test_the_wrapped_commands_exports_reach_the_srun_lines_of_the_script_it_runs(command, script, processes):
    # `sbatch --wrap "export SLURM_NTASKS=4; bash run.sh"`: run.sh's bare srun starts 4 tasks; only sbatch's own
    # options reached the script (one task: unused GPUs)
    assert launch_of(f"#!/bin/bash\n{script}\n", command).detail.get("processes") == processes
    if "GPUS_PER_TASK" in command:
        assert launch_of(f"#!/bin/bash\n{script}\n", command).detail.get("gpu_binding") == "--gpus-per-task=1"


def test_a_script_run_after_the_wrapped_commands_export_is_uneven_use():
    script = "#!/bin/bash\nsrun python train.py\n"
    command = 'sbatch --gres=gpu:8 --wrap "export SLURM_NTASKS=8; bash run.sh"'
    finding = oversubscription(scripts=[("run.sh", script)], command=command)
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8


@pytest.mark.parametrize(
    ("command", "script", "processes"),
    [
        # sbatch(1): the batch script "may contain options preceded with "#SBATCH""; with --wrap "the sbatch-generated
        # wrapper script is used". A script the wrapped command runs is not the batch script: sbatch never read its
        # #SBATCH lines (they gave the count: 8, or 4 a node on sbatch's two nodes)
        ('sbatch --wrap "bash run.sh"', "#SBATCH -n 8\nsrun python train.py", None),
        ('sbatch -N 2 --wrap "bash run.sh"', "#SBATCH --ntasks-per-node=4\nsrun python train.py", 2),
        ("sbatch -N 2 --wrap './run.sh'", "#SBATCH --ntasks-per-node=4\nsrun python train.py", 2),
        ('sbatch --wrap "srun bash /home/u/run.sh"', "#SBATCH -n 8\nsrun python train.py", None),
        # nor does salloc's command, or a command line that runs the script without sbatch
        ("salloc -N 1 bash run.sh", "#SBATCH -n 8\nsrun python train.py", 1),
        ("bash run.sh", "#SBATCH -n 8\nsrun python train.py", None),
        ("export SLURM_NTASKS=4 && bash run.sh", "#SBATCH -N 2\nsrun python train.py", 4),
        # the script sbatch was given is the batch script, named or not (sacct's script artifact, batch_script.sh)
        ("sbatch run.sh", "#SBATCH -n 8\nsrun python train.py", 8),
        ("sbatch -N 2 run.sh --epochs 3", "#SBATCH --ntasks-per-node=4\nsrun python train.py", 8),
        ("sbatch train.sh", "#SBATCH -n 8\nsrun python train.py", 8),
        ("", "#SBATCH -n 8\nsrun python train.py", 8),
    ],
)
def test_a_script_the_jobs_command_runs_takes_no_allocation_from_its_sbatch_lines(command, script, processes):
    # `sbatch --wrap "bash run.sh"`: run.sh's `#SBATCH -n 8` were read as the allocation, 8 tasks (uneven use), though
    # sbatch never read them
    assert launch_of(f"#!/bin/bash\n{script}\n", command).detail.get("processes") == processes


def test_the_sbatch_lines_of_a_script_run_by_the_wrapped_command_give_no_task_layout():
    # nor are they the job's layout (a task's CPUs, the tasks a node: the data rules' `slurm_layout` facts)
    script = "#!/bin/bash\n#SBATCH -c 12 --ntasks-per-node=8\nsrun python train.py\n"
    wrapped = extract_script_evidence([("run.sh", script)], command='sbatch --wrap "bash run.sh"')
    assert wrapped.of("slurm_layout") == []
    (layout,) = extract_script_evidence([("run.sh", script)], command="sbatch run.sh").of("slurm_layout")
    assert layout.detail == {"cpus_per_task": 12, "ntasks_per_node": 8}
    # sacct's job: its script artifact is the generated wrapper, which runs run.sh
    wrapper = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\nbash run.sh\n"
    evidence = extract_script_evidence(
        [("batch_script.sh", wrapper), ("run.sh", script)], command='sbatch --gres=gpu:8 --wrap "bash run.sh"'
    )
    (launched,) = evidence.of("shell_launch")
    assert launched.path == "run.sh" and launched.detail.get("processes") is None


def test_a_wrapped_scripts_sbatch_lines_are_no_uneven_use():
    # its #SBATCH --ntasks=8 made it eight tasks on 8 GPUs with one busy, uneven use; Slurm started one
    script = "#!/bin/bash\n#SBATCH --ntasks=8\nsrun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)], command='sbatch --gres=gpu:8 --wrap "bash run.sh"')
    assert finding.sub_cause == "unused_gpus" and "srun_tasks" not in finding.numbers  # one task, 7 GPUs idle
    finding = oversubscription(scripts=[("run.sh", script)], command="sbatch --gres=gpu:8 run.sh")
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8


@pytest.mark.parametrize(
    ("script", "command", "processes"),
    [
        # env(1) runs its command with the NAME=VALUE words before it set: srun reads SLURM_NTASKS from them
        ("#SBATCH -n 8\nenv SLURM_NTASKS=4 srun python train.py", "", 4),
        ("env NCCL_DEBUG=INFO SLURM_NTASKS=4 srun python train.py", "", 4),
        ("srun python train.py", 'sbatch -n 8 --wrap "env SLURM_NTASKS=4 bash run.sh"', 4),
        ("srun python train.py", "env SLURM_NTASKS=4 bash run.sh", 4),
        # for that one command only
        ("#SBATCH -n 8\nenv SLURM_NTASKS=4 true\nsrun python train.py", "", 8),
    ],
)
def test_the_variables_env_sets_for_its_command_are_srun_input(script, command, processes):
    # `env SLURM_NTASKS=4 srun python train.py`: the words after `env` were not read (8, the #SBATCH line's count)
    assert launch_of(f"#!/bin/bash\n{script}\n", command).detail.get("processes") == processes


def test_envs_own_options_are_read_as_env_reads_them():
    # `env -u NAME` leaves the count unknown (SLURM_NPROCS may still give it); `env -i` empties the environment before
    # its NAME=VALUE words: never the #SBATCH line's 8 (tests/test_launch_reading.py has more)
    for line, processes in (
        ("env -u SLURM_NTASKS srun python train.py", None),
        ("env -i SLURM_NTASKS=4 srun python train.py", 4),
    ):
        assert launch_of(f"#!/bin/bash\n#SBATCH -n 8\n{line}\n").detail.get("processes") == processes


def test_the_jobs_command_under_env_is_read_with_its_variables():
    (launch,) = command_code_facts("env SLURM_NTASKS=4 srun python x.py")
    assert launch.detail.get("processes") == 4


@pytest.mark.parametrize(
    ("script", "processes"),
    [
        # srun(1), INPUT ENVIRONMENT VARIABLES: SLURM_GPUS "Same as -G, --gpus", SLURM_GPUS_PER_NODE "Same as
        # --gpus-per-node": the GPUs --ntasks-per-gpu counts its tasks from
        ("#SBATCH --ntasks-per-gpu=1\nexport SLURM_GPUS=8\nsrun python train.py", 8),
        ("export SLURM_NTASKS_PER_GPU=2 SLURM_GPUS_PER_NODE=4\nsrun python train.py", 8),
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_GPUS_PER_NODE=4 SLURM_JOB_NUM_NODES=2\nsrun python train.py", 8),
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_GPUS=volta:3,kepler:1\nsrun python train.py", 4),
        ("SLURM_NTASKS_PER_GPU=1 SLURM_GPUS=8 srun python train.py", 8),
        # srun's own options win; a count not shown is not known
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_GPUS=8\nsrun --gpus=2 python train.py", 2),
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_GPUS=$G\nsrun python train.py", None),
    ],
)
def test_the_gpus_srun_reads_from_its_environment_count_its_tasks_per_gpu(script, processes):
    # `export SLURM_GPUS=8` under `#SBATCH --ntasks-per-gpu=1`: a bare srun's 8 tasks were not counted (one process)
    assert launch_of(f"#!/bin/bash\n{script}\n").detail.get("processes") == processes


def test_the_jobs_command_exporting_the_gpus_counts_its_tasks_per_gpu():
    (launch,) = command_code_facts("export SLURM_NTASKS_PER_GPU=1 SLURM_GPUS=8 && srun python train.py")
    assert launch.detail.get("processes") == 8
    (launch,) = command_code_facts('sbatch --ntasks-per-gpu=2 --wrap "export SLURM_GPUS_PER_NODE=4; srun python t.py"')
    assert launch.detail.get("processes") == 8


@pytest.mark.parametrize(
    ("script", "layouts"),
    [
        # sbatch(1): "sbatch will stop processing further #SBATCH directives once the first non-comment
        # non-whitespace line has been reached in the script": the later ones are comments, not the job's layout
        ("#SBATCH -c 4\nmodule load cuda\n#SBATCH -c 32 --ntasks-per-node=8", [{"cpus_per_task": 4}]),
        ("#SBATCH -n 8\ncd /work\n#SBATCH --gpus-per-task=1 --gpu-bind=closest", [{"ntasks": 8}]),
        ("set -e\n#SBATCH --ntasks-per-node=8 -c 12", []),
        # the shebang, blank lines and comments before them are no command
        ("\n# train the model\n##SBATCH -n 2\n   # indented note\n\n#SBATCH -c 12", [{"cpus_per_task": 12}]),
    ],
)
def test_sbatch_lines_after_the_scripts_first_command_give_no_layout(script, layouts):
    # `#SBATCH -c 32` after `module load cuda` was read as the job's CPUs per task (the data rules' task layout)
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n{script}\nsrun python train.py\n")])
    assert [fact.detail for fact in evidence.of("slurm_layout")] == layouts
    (launched,) = evidence.of("shell_launch")
    assert launched.detail.get("gpu_binding") is None
    assert launched.detail.get("processes") == (8 if layouts == [{"ntasks": 8}] else None)


@pytest.mark.parametrize(
    ("script", "command", "processes"),
    [
        # `/usr/bin/env` is env(1) by its path
        ("#SBATCH -n 8\n/usr/bin/env SLURM_NTASKS=4 srun python train.py", "", 4),
        ("srun python train.py", "/usr/bin/env SLURM_NTASKS=4 bash run.sh", 4),
        # srun reads SLURM_JOB_NUM_NODES as -N (src/srun/opt.c, env_vars: `{ "SLURM_JOB_NUM_NODES", 'N' }`, Slurm
        # 20.02 on); SLURM_NNODES, which srun read before, is no input of it any more
        ("export SLURM_NTASKS_PER_NODE=4 SLURM_JOB_NUM_NODES=2\nsrun python train.py", "", 8),
        ("export SLURM_NTASKS_PER_NODE=4 SLURM_NNODES=2\nsrun python train.py", "", 4),
        ("export SLURM_NNODES=2\nsrun --ntasks-per-node=4 python train.py", "", 4),
        ("#SBATCH -N 2 --ntasks-per-node=4\nexport SLURM_NNODES=1\nsrun -N 2 python train.py", "", 8),
    ],
)
def test_usr_bin_env_and_slurm_job_num_nodes_are_srun_input(script, command, processes):
    # `export SLURM_NNODES=2` before a bare srun was read as srun's `-N 2`: 8 tasks where srun starts 4
    assert launch_of(f"#!/bin/bash\n{script}\n", command).detail.get("processes") == processes


def test_the_jobs_command_under_usr_bin_env_is_read_with_its_variables():
    (launch,) = command_code_facts("/usr/bin/env SLURM_NTASKS=4 srun python x.py")
    assert launch.detail.get("processes") == 4


@pytest.mark.parametrize(
    ("outer", "inner", "processes"),
    [
        # a script the batch script runs is no batch script: sbatch read only the batch script's #SBATCH lines, and
        # the script runs in that allocation (its 8 tasks), whatever its own #SBATCH lines say
        ("#SBATCH -n 8\nbash inner.sh", "#SBATCH -n 4\nsrun python train.py", 8),
        ("#SBATCH -n 8\n./inner.sh --epochs 3", "#SBATCH -n 4\nsrun python train.py", 8),
        ("#SBATCH -N 2\nexport SLURM_NTASKS=4\nsource /home/u/inner.sh", "#SBATCH -n 8\nsrun python train.py", 4),
        ("#SBATCH -N 2\nSLURM_NTASKS=4 bash inner.sh", "#SBATCH -n 8\nsrun python train.py", 4),
        ("echo start\nbash inner.sh", "#SBATCH -n 8\nsrun python train.py", None),
        # a script that is not run by the other keeps its lines
        ("#SBATCH -n 2\necho inner.sh", "#SBATCH -n 8\nsrun python train.py", 8),
    ],
)
def test_a_script_the_batch_script_runs_takes_the_batch_scripts_allocation(outer, inner, processes):
    # sacct's batch_script.sh running `bash inner.sh`: inner.sh's #SBATCH lines were read as the allocation
    scripts = [("batch_script.sh", f"#!/bin/bash\n{outer}\n"), ("inner.sh", f"#!/bin/bash\n{inner}\n")]
    evidence = extract_script_evidence(scripts)
    (launched,) = evidence.of("shell_launch")
    assert launched.path == "inner.sh" and launched.detail.get("processes") == processes
    if "echo inner.sh" not in outer:  # nor are inner.sh's #SBATCH lines the job's layout
        assert "inner.sh" not in [fact.path for fact in evidence.of("slurm_layout")]


@pytest.mark.parametrize(
    ("line", "processes"),
    [
        # a wrapper named by its path runs the command after it, as by its name: GNU time, nohup, stdbuf, sudo, srun
        ("/usr/bin/time srun -n 8 python train.py", 8),
        ("/usr/bin/nohup srun python train.py", 8),
        ("/usr/bin/stdbuf srun python train.py", 8),
        ("/usr/bin/sudo srun -n 4 python train.py", 4),
        ("/usr/bin/srun python train.py", 8),
        ("/opt/slurm/bin/srun -n 4 python train.py", 4),
        ("/usr/bin/time /opt/slurm/bin/srun python train.py", 8),
        # GNU time(1)'s options before its command (`-v`, `-o FILE`, `-f FORMAT`, `--output=FILE`, `--`), and
        # coreutils stdbuf(1)'s (`-oL`, `-o L`, `--output=L`), are theirs, not the command
        ("/usr/bin/time -v srun -n 4 python train.py", 4),
        ("/usr/bin/time -o time.log -f %M srun python train.py", 8),
        ("/usr/bin/time -vo time.log srun python train.py", 8),
        ("/usr/bin/time --output=time.log --verbose -- srun python train.py", 8),
        ("time -p srun -n 4 python train.py", 4),
        ("stdbuf -oL -e L srun python train.py", 8),
        ("/usr/bin/stdbuf --output=L srun -n 4 python train.py", 4),
    ],
)
def test_wrappers_named_by_their_path_run_the_launch_after_them(line, processes):
    # `/usr/bin/time srun ...`, `/usr/bin/nohup srun ...`: no launch was found at all (only `env` was known by path)
    launched = launch_of(f"#!/bin/bash\n#SBATCH -n 8\n{line}\n")
    assert launched.detail["launcher"] == "python" and launched.detail.get("processes") == processes


def test_a_job_timed_by_usr_bin_time_is_uneven_use_of_its_srun_tasks():
    # its 8 srun tasks on 8 GPUs, one busy: the launch under /usr/bin/time was not seen (no srun tasks counted)
    script = "#!/bin/bash\n#SBATCH --ntasks=8\n/usr/bin/time -v srun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)])
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8


def test_the_jobs_command_under_a_wrapper_named_by_its_path_is_read():
    (launch,) = command_code_facts("/usr/bin/nohup /usr/bin/srun -n 4 python x.py")
    assert launch.detail.get("processes") == 4
    (launch,) = command_code_facts('sbatch -n 8 --wrap "/usr/bin/time -v srun python x.py"')
    assert launch.detail.get("processes") == 8


@pytest.mark.parametrize(
    ("script", "processes"),
    [
        # srun(1), INPUT ENVIRONMENT VARIABLES: SLURM_GRES "Same as --gres", SLURM_STEP_GRES "Same as --gres (only
        # applies to job steps, not to job allocations)": their GPUs, as --gres's, are what --ntasks-per-gpu counts
        ("#SBATCH --ntasks-per-gpu=1\nexport SLURM_GRES=gpu:8\nsrun python train.py", 8),
        ("export SLURM_NTASKS_PER_GPU=2 SLURM_GRES=gpu:a100:4\nsrun python train.py", 8),
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_STEP_GRES=gpu:4\nsrun python train.py", 4),
        ("SLURM_NTASKS_PER_GPU=1 SLURM_GRES=gpu:8,nvme:1 srun python train.py", 8),
        # srun takes SLURM_STEP_GRES only where --gres (or SLURM_GRES) gives none
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_GRES=gpu:8 SLURM_STEP_GRES=gpu:2\nsrun python train.py", 8),
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_STEP_GRES=gpu:2 SLURM_GRES=gpu:8\nsrun python train.py", 8),
        # srun's own --gres wins; a gres of no GPU asks none; a value not shown is not known
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_GRES=gpu:8\nsrun --gres=gpu:2 python train.py", 2),
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_GRES=nvme:1\nsrun python train.py", None),
        ("export SLURM_NTASKS_PER_GPU=1 SLURM_GRES=$G\nsrun python train.py", None),
        # no allocation puts SLURM_GRES in the batch script's environment (sbatch(1)'s OUTPUT ENVIRONMENT VARIABLES
        # list none), so a plain assignment of it, not exported, is the shell's variable, not srun's input
        ("#SBATCH --gres=gpu:8 --ntasks-per-gpu=1\nSLURM_GRES=gpu:2\nsrun python train.py", 8),
        ("#SBATCH --gres=gpu:8 --ntasks-per-gpu=1\nSLURM_STEP_GRES=gpu:2\nsrun python train.py", 8),
    ],
)
def test_the_gres_srun_reads_from_its_environment_counts_its_tasks_per_gpu(script, processes):
    # `export SLURM_GRES=gpu:8` under `#SBATCH --ntasks-per-gpu=1`: a bare srun's 8 tasks were not counted (one process)
    assert launch_of(f"#!/bin/bash\n{script}\n").detail.get("processes") == processes


def test_a_job_whose_gres_is_exported_is_uneven_use_of_its_tasks_per_gpu():
    # `export SLURM_GRES=gpu:8` under `#SBATCH --ntasks-per-gpu=1`: one process, unused GPUs; srun started 8 tasks
    script = "#!/bin/bash\n#SBATCH --ntasks-per-gpu=1\nexport SLURM_GRES=gpu:8\nsrun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)])
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8


@pytest.mark.parametrize(
    ("script", "layouts", "processes"),
    [
        # sbatch reads a directive only where the line begins with "#SBATCH" (src/sbatch/opt.c, _opt_batch_script:
        # `xstrncmp(line, "#SBATCH", 7)` on the line as written); an indented one is a comment, to sbatch as to the
        # shell, and, being a comment, does not end the directives either
        ("  #SBATCH -n 8", [], None),
        ("\t#SBATCH --ntasks=8 -c 12", [], None),
        ("  #SBATCH -n 4\n#SBATCH -n 8", [{"ntasks": 8}], 8),
        ("#SBATCH -c 12\n    #SBATCH -c 32 --ntasks-per-node=8", [{"cpus_per_task": 12}], None),
    ],
)
def test_an_indented_sbatch_line_is_no_directive(script, layouts, processes):
    # `  #SBATCH -n 8` was read as the allocation: eight tasks, and its -c as the job's CPUs per task
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n{script}\nsrun python train.py\n")])
    assert [fact.detail for fact in evidence.of("slurm_layout")] == layouts
    (launched,) = evidence.of("shell_launch")
    assert launched.detail.get("processes") == processes


def test_a_job_whose_sbatch_line_is_indented_has_unused_gpus():
    # its indented `#SBATCH --ntasks=8` made it eight tasks, uneven use; sbatch started one task on 8 GPUs
    script = "#!/bin/bash\n  #SBATCH --ntasks=8\nsrun python train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)])
    assert finding.sub_cause == "unused_gpus" and "srun_tasks" not in finding.numbers


@pytest.mark.parametrize(
    ("directive", "layout"),
    [
        # sbatch reads a directive's words up to an unquoted, unescaped '#': "found an un-escaped #, rest of line is a
        # comment" (src/sbatch/opt.c, _get_argument), so a note after the options is no option
        ("#SBATCH --ntasks=8  # was -n 4", {"ntasks": 8}),
        ("#SBATCH -N 2 --ntasks-per-node=4 #-N 1 to debug", {"nodes": 2, "ntasks_per_node": 4}),
        ("#SBATCH -n 8# -n 2", {"ntasks": 8}),
        # a quoted or escaped '#' is part of its word, and the words after it are read
        ("#SBATCH --comment='run #3' -n 8", {"ntasks": 8}),
        ("#SBATCH --comment=run\\#3 -n 8", {"ntasks": 8}),
    ],
)
def test_an_sbatch_lines_trailing_comment_gives_no_options(directive, layout):
    # `#SBATCH --ntasks=8  # was -n 4` was read as 4 tasks (the comment's `-n 4` taken for an option)
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n{directive}\nsrun python train.py\n")])
    assert [fact.detail for fact in evidence.of("slurm_layout")] == [layout]
    (launched,) = evidence.of("shell_launch")
    assert launched.detail.get("processes") == 8  # each asks for 8 tasks


@pytest.mark.parametrize(
    ("script", "layouts", "processes"),
    [
        # sbatch reads the script a line at a time, to each '\n' (src/sbatch/opt.c, _next_line), joining none: a
        # directive's trailing '\' escapes nothing and the next line is a line of its own; bash, too, ends a comment at
        # its newline, backslash and all, so the line after it is run
        ("#SBATCH -n 4 \\\n#SBATCH -n 8", [{"ntasks": 4}, {"ntasks": 8}], 8),
        # the next line, not beginning with #SBATCH, is the script's first command: it ends the directives
        ("#SBATCH -N 2 \\\n  --ntasks-per-node=4", [{"nodes": 2}], 2),
        ("#SBATCH -n 8 \\", [{"ntasks": 8}], 8),
        ("# four tasks to debug: \\\n#SBATCH -n 8", [{"ntasks": 8}], 8),
    ],
)
def test_an_sbatch_line_ending_in_a_backslash_is_not_joined_to_the_next(script, layouts, processes):
    # `#SBATCH -n 4 \` then `#SBATCH -n 8` was one line, its second directive read as a comment: 4 tasks
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n{script}\nsrun python train.py\n")])
    assert [fact.detail for fact in evidence.of("slurm_layout")] == layouts
    (launched,) = evidence.of("shell_launch")
    assert launched.detail.get("processes") == processes


def test_the_line_after_a_comment_ending_in_a_backslash_is_run():
    # `# note \` then the srun line: the launch was read as part of the comment, so there was none
    for comment in ("#SBATCH -n 8 \\", "# run on 4 \\"):
        launched = launch_of(f"#!/bin/bash\n{comment}\nsrun -n 4 python train.py\n")
        assert launched.detail.get("processes") == 4


@pytest.mark.parametrize(
    ("line", "processes"),
    [
        # sudo's own options before its command, as its getopt reads them (sudo 1.9, src/parse_args.c:
        # "+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv" and its long options): `-u USER`, `-g GROUP`, `-C NUM`,
        # `-D DIR`, `-p PROMPT`, `-T TIMEOUT` take a value (the rest of the word, else the next word), `--` ends them
        ("sudo -u alice srun -n 4 python train.py", 4),
        ("sudo -E srun python train.py", 8),
        ("sudo --preserve-env=PATH,LD_LIBRARY_PATH srun -n 4 python train.py", 4),
        ("sudo -- srun -n 4 python train.py", 4),
        ("sudo -Eu alice srun -n 4 python train.py", 4),
        ("sudo -ualice -g gpu srun -n 4 python train.py", 4),
        ("/usr/bin/sudo --user alice --chdir=/scratch -C 5 -T 1h srun -n 4 python train.py", 4),
        ("sudo --us alice srun -n 4 python train.py", 4),  # getopt_long takes a long option's unambiguous prefix
        # VAR=value words, among its options, set the command's environment (sudo(8)): srun's input variables too
        ("sudo SLURM_NTASKS=4 srun python train.py", 4),
        ("sudo -u alice NCCL_DEBUG=INFO SLURM_NTASKS=4 -H srun python train.py", 4),
        ("sudo nccl_debug=info -u alice srun -n 4 python train.py", 4),
    ],
)
def test_sudos_own_options_are_not_its_command(line, processes):
    # `sudo -u alice srun -n 4 python train.py`: `-u` was taken for the command, so there was no launch at all
    launched = launch_of(f"#!/bin/bash\n#SBATCH -n 8\n{line}\n")
    assert launched.detail["launcher"] == "python" and launched.detail.get("processes") == processes


@pytest.mark.parametrize(
    "line",
    [
        # sudo runs no command: it lists (`-l`, the command only checked), edits (`-e`), validates, prints its
        # version; `-h HOST` runs a command only where the policy supports remote hosts (sudo(8): "The sudoers
        # plugin does not currently support running remote commands"); an option it does not know is a usage error
        "sudo -l srun -n 4 python train.py",
        "sudo -e train.py",
        "sudo -v srun -n 4 python train.py",
        "sudo -h gpu01 srun -n 4 python train.py",
        "sudo --list srun -n 4 python train.py",
        "sudo -X srun -n 4 python train.py",
        "sudo --pres srun -n 4 python train.py",  # --preserve-env or --preserve-groups: ambiguous, a usage error
    ],
)
def test_a_sudo_that_runs_no_command_is_no_launch(line):
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n#SBATCH -n 8\n{line}\n")])
    assert evidence.of("shell_launch") == []


def test_the_jobs_command_under_sudos_options_is_read():
    (launch,) = command_code_facts("sudo -u alice -E srun -n 4 python x.py")
    assert launch.detail.get("processes") == 4


@pytest.mark.parametrize(
    ("script", "command", "processes"),
    [
        # sbatch(1), OUTPUT ENVIRONMENT VARIABLES (Slurm 20.11): SLURM_GPUS_PER_NODE "Only set if the --gpus-per-node
        # option is specified", not for `--gres=gpu:8`: a plain assignment of it there is the shell's own variable
        ("#SBATCH --gres=gpu:8 --ntasks-per-gpu=1\nSLURM_GPUS_PER_NODE=4\nsrun python train.py", "", 8),
        ("SLURM_GPUS_PER_NODE=4\nsrun python train.py", "sbatch --gres=gpu:8 --ntasks-per-gpu=1 run.sh", 8),
        # where sbatch set it (--gpus-per-node), the plain assignment changes it, as an export would
        ("#SBATCH --gpus-per-node=8 --ntasks-per-gpu=1\nSLURM_GPUS_PER_NODE=4\nsrun python train.py", "", 4),
        (
            "#SBATCH --gres=gpu:8 --gpus-per-node=8 --ntasks-per-gpu=1\nSLURM_GPUS_PER_NODE=4\nsrun python train.py",
            "",
            4,
        ),
        ("SLURM_GPUS_PER_NODE=4\nsrun python train.py", "sbatch --gpus-per-node=8 --ntasks-per-gpu=1 run.sh", 4),
        ("#SBATCH --gres=gpu:8 --ntasks-per-gpu=1\nexport SLURM_GPUS_PER_NODE=4\nsrun python train.py", "", 4),
    ],
)
def test_a_plain_gpus_per_node_assignment_counts_only_where_sbatch_set_it(script, command, processes):
    # under `#SBATCH --gres=gpu:8 --ntasks-per-gpu=1` a bare `SLURM_GPUS_PER_NODE=4` line made srun 4 tasks; it is 8
    assert launch_of(f"#!/bin/bash\n{script}\n", command).detail.get("processes") == processes


@pytest.mark.parametrize(
    ("outer", "processes"),
    [
        ("#SBATCH --gres=gpu:8 --ntasks-per-gpu=1\nbash inner.sh", 8),
        ("#SBATCH --gpus-per-node=8 --ntasks-per-gpu=1\nbash inner.sh", 4),
        ("#SBATCH --gres=gpu:8 --ntasks-per-gpu=1\nexport SLURM_GPUS_PER_NODE=2\nbash inner.sh", 4),
    ],
)
def test_a_script_the_batch_script_runs_has_the_gpus_per_node_variable_where_sbatch_set_it(outer, processes):
    # inner.sh's plain `SLURM_GPUS_PER_NODE=4` changes the variable only where it is in its environment
    inner = "#!/bin/bash\nSLURM_GPUS_PER_NODE=4\nsrun python train.py\n"
    evidence = extract_script_evidence([("batch_script.sh", f"#!/bin/bash\n{outer}\n"), ("inner.sh", inner)])
    (launched,) = evidence.of("shell_launch")
    assert launched.detail.get("processes") == processes


def test_the_gpus_per_node_variable_gives_its_layout_and_nothing_more():
    # the note that SLURM_GPUS_PER_NODE is in the environment is no layout of the export's line
    script = "#SBATCH --gpus-per-node=8 --ntasks-per-gpu=1\nexport SLURM_GPUS_PER_NODE=4\nsrun python train.py\n"
    evidence = extract_script_evidence([("run.sh", script)])
    assert [fact.detail for fact in evidence.of("slurm_layout")] == [
        {"gpus_per_node": 8, "ntasks_per_gpu": 1},
        {"gpus_per_node": 4},
    ]


@pytest.mark.parametrize(
    ("script", "command", "processes"),
    [
        # Slurm sets SLURM_JOB_NUM_NODES in every batch job, -N given or not (src/common/env.c,
        # env_array_for_batch_job; sbatch(1), OUTPUT ENVIRONMENT VARIABLES: "Total number of nodes in the job's
        # resource allocation", no "Only set if"): a plain assignment of it changes what srun reads
        ("SLURM_JOB_NUM_NODES=2\nsrun --ntasks-per-node=4 python train.py", "", 8),
        ("#SBATCH --gpus-per-task=1\nSLURM_JOB_NUM_NODES=2\nsrun --ntasks-per-node=4 python train.py", "", 8),
        # as where -N was given
        ("#SBATCH -N 1\nSLURM_JOB_NUM_NODES=2\nsrun --ntasks-per-node=4 python train.py", "", 8),
        # SLURM_NNODES, set there too, is no srun input (src/srun/opt.c, env_vars): assigning it changes nothing
        ("#SBATCH --ntasks-per-node=4\nSLURM_NNODES=2\nsrun python train.py", "", 4),
        ("SLURM_NNODES=2\nsrun --ntasks-per-node=4 python train.py", "", 4),
        ("#SBATCH -N 1 --ntasks-per-node=4\nSLURM_NNODES=2\nsrun python train.py", "", 4),
    ],
)
def test_a_plain_node_count_assignment_is_srun_input_in_every_batch_job(script, command, processes):
    # a bare `SLURM_NNODES=2` line was read as srun's `-N 2`: 8 tasks where srun starts 4
    assert launch_of(f"#!/bin/bash\n{script}\n", command).detail.get("processes") == processes


def test_a_plain_node_count_assignment_counts_in_the_wrapped_command_not_in_a_login_shell():
    (launch,) = command_code_facts('sbatch --wrap "SLURM_JOB_NUM_NODES=2; srun --ntasks-per-node=4 python t.py"')
    assert launch.detail.get("processes") == 8  # the batch job's variable, changed
    (launch,) = command_code_facts("SLURM_JOB_NUM_NODES=2; srun --ntasks-per-node=4 python t.py")
    assert launch.detail.get("processes") == 4  # no allocation set it: the shell's own variable, not exported


def test_an_allocation_sets_its_own_node_count_over_one_exported_before_it():
    # sbatch and salloc set SLURM_JOB_NUM_NODES in the allocation they make, over the one the submitting shell exported
    line = 'export SLURM_JOB_NUM_NODES=2; sbatch --wrap "srun --ntasks-per-node=4 python t.py"'
    (launch,) = command_code_facts(line)
    assert launch.detail.get("processes") == 4
    (launch,) = command_code_facts("export SLURM_JOB_NUM_NODES=2 && salloc srun --ntasks-per-node=4 python t.py")
    assert launch.detail.get("processes") == 4


@pytest.mark.parametrize(
    ("script", "command", "processes"),
    [
        # sbatch given --ntasks-per-node and no --ntasks counts the job's tasks, its node count (one where none is
        # given) times the tasks a node (src/sbatch/opt.c, _opt_verify: `opt.min_nodes * opt.ntasks_per_node`), and
        # the batch job's environment holds that SLURM_NTASKS (src/common/env.c, env_array_for_batch_job), which srun
        # reads as -n, over its own --ntasks-per-node or -N ("can't honor --ntasks-per-node set to 1 which doesn't
        # match the requested tasks 16 with the number of requested nodes 2. Ignoring --ntasks-per-node.")
        ("#SBATCH -N 2 --ntasks-per-node=8\nsrun --ntasks-per-node=1 python train.py", "", 16),
        ("#SBATCH -N 2\n#SBATCH --ntasks-per-node=8\nsrun -N 1 python train.py", "", 16),
        ("srun --ntasks-per-node=1 python train.py", "sbatch -N 2 --ntasks-per-node=8 run.sh", 16),
        ("#SBATCH --ntasks-per-node=4\nexport SLURM_NTASKS_PER_NODE=8\nsrun python train.py", "", 4),
        # so a plain (not exported) SLURM_NTASKS=2 changes it, as where --ntasks was given
        ("#SBATCH --ntasks-per-node=4\nSLURM_NTASKS=2\nsrun python train.py", "", 2),
        ("#SBATCH -N 2 --ntasks-per-node=4\nSLURM_NTASKS=2\nsrun python train.py", "", 2),
        # not for a node range: sbatch counts no tasks there
        ("#SBATCH -N 2-4 --ntasks-per-node=4\nSLURM_NTASKS=2\nsrun -N 2 python train.py", "", 8),
    ],
)
def test_an_allocation_of_tasks_a_node_sets_the_jobs_task_count(script, command, processes):
    # `#SBATCH -N 2 --ntasks-per-node=8` with `srun --ntasks-per-node=1` was 2 tasks; srun starts 16
    assert launch_of(f"#!/bin/bash\n{script}\n", command).detail.get("processes") == processes


def test_the_task_count_of_tasks_a_node_quotes_the_lines_that_gave_it():
    launched = launch_of("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\nsrun python train.py\n")
    assert launched.detail.get("processes") == 8 and launched.detail["sbatch_lines"] == [2, 3]
    # salloc sets SLURM_NTASKS so too, over one exported before it
    (launch,) = command_code_facts("export SLURM_NTASKS=2 && salloc -N 2 --ntasks-per-node=4 srun python t.py")
    assert launch.detail.get("processes") == 8


@pytest.mark.parametrize(
    ("line", "processes"),
    [
        # sudo runs its command in a new, minimal environment (sudoers(5), env_reset, on by default: "the command
        # to be run with a new, minimal environment"): the script's SLURM_* variables, the allocation's own among
        # them, do not reach srun, which takes only its own options
        ("sudo srun python train.py", None),
        ("sudo -u alice srun python train.py", None),
        ("SLURM_NTASKS=4 sudo srun python train.py", None),
        ("sudo --preserve-env=PATH srun python train.py", None),
        ("sudo srun -n 4 python train.py", 4),
        # unless sudo keeps the environment (-E, --preserve-env, or a list naming srun's variables), or sets them
        ("sudo -E srun python train.py", 8),
        ("sudo --preserve-env srun python train.py", 8),
        ("sudo --preserve-env=PATH,SLURM_NTASKS srun python train.py", 8),
        ("sudo SLURM_NTASKS=4 srun python train.py", 4),
        ("sudo env SLURM_NTASKS=4 srun python train.py", 4),
    ],
)
def test_sudo_does_not_hand_the_scripts_environment_to_srun(line, processes):
    # `sudo srun python train.py` under `#SBATCH -n 8` was 8 tasks: srun under sudo sees no SLURM_NTASKS
    launched = launch_of(f"#!/bin/bash\n#SBATCH -n 8\nexport SLURM_GPUS_PER_TASK=1\n{line}\n")
    assert launched.detail.get("processes") == processes


def test_a_script_run_under_sudo_runs_in_no_allocation():
    evidence = extract_script_evidence(
        [("run.sh", "#!/bin/bash\n#SBATCH -n 8\nsudo bash inner.sh\n"), ("inner.sh", "srun python train.py\n")]
    )
    (launched,) = evidence.of("shell_launch")
    assert launched.detail.get("processes") is None


@pytest.mark.parametrize(
    ("directive", "binding"),
    [
        # sbatch(1), OUTPUT ENVIRONMENT VARIABLES: SLURM_GPU_BIND "Only set if the --gpu-bind option is specified";
        # `--tres-bind=gres/gpu:...` sets SLURM_TRES_BIND (src/common/env.c, set_env_from_opts), not it: a plain
        # assignment there is the shell's own variable and the #SBATCH line's binding stays
        ("#SBATCH -n 8 --tres-bind=gres/gpu:single:1", "--gpu-bind=single:1"),
        # where sbatch set it (--gpu-bind), the plain assignment changes it, as an export would
        ("#SBATCH -n 8 --gpu-bind=single:1", "--gpu-bind=closest"),
    ],
)
def test_a_plain_gpu_bind_assignment_counts_only_where_sbatch_set_it(directive, binding):
    # under `#SBATCH --tres-bind=gres/gpu:single:1` a bare `SLURM_GPU_BIND=closest` line replaced its binding
    launched = launch_of(f"#!/bin/bash\n{directive}\nSLURM_GPU_BIND=closest\nsrun python train.py\n")
    assert launched.detail.get("gpu_binding") == binding


@pytest.mark.parametrize(
    "script",
    [
        # bash ends a comment at its newline, the '\' in it included, so a comment line inside a continued command
        # ends that command there (`bash -c $'echo one \\\n  # c \\\necho two'` prints "one", then "two")
        "srun -n 4 \\\n  # the data loader's workers \\\npython train.py",
        "srun -n 4 \\\n  # note\npython train.py",
        "srun -n 4 \\\n  --exclusive # note \\\npython train.py",
        "srun -n 4 # note \\\npython train.py",
    ],
)
def test_a_comment_inside_a_continued_command_ends_it(script):
    # the srun line and the python line after the comment were read as one command: `srun -n 4` with no program
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n#SBATCH -n 8\n{script}\n")])
    (launched,) = evidence.of("shell_launch")
    assert launched.detail["argv"] == ["python", "train.py"]
    assert launched.detail.get("processes") is None  # a plain python, under no srun


def test_a_hash_inside_quotes_continues_the_command():
    launched = launch_of('#!/bin/bash\n#SBATCH -n 8\nsrun -n 4 --comment="a # b" \\\n  python train.py\n')
    assert launched.detail.get("processes") == 4


@pytest.mark.parametrize(
    "line",
    [
        # env(1) under sudo sets its NAME=VALUE words for the command it runs, as env alone does
        "sudo env SLURM_NTASKS=4 srun python train.py",
        "sudo -u alice /usr/bin/env NCCL_DEBUG=INFO SLURM_NTASKS=4 srun python train.py",
        "sudo SLURM_NNODES=1 env SLURM_NTASKS=4 srun python train.py",
    ],
)
def test_the_variables_env_sets_under_sudo_are_srun_input(line):
    # `sudo env SLURM_NTASKS=4 srun ...`: env's words were not read, so srun had the #SBATCH line's 8 tasks
    assert launch_of(f"#!/bin/bash\n#SBATCH -n 8\n{line}\n").detail.get("processes") == 4
