"""What a job's shell scripts set: the environment its launch runs in (`env` facts the rules read: NCCL's socket
switches, CUDA_VISIBLE_DEVICES) and the variables a launch line's `$DATA` takes (`_ShellVariables`), both read by
one reading of a command's assignments (`_assignments`); and what program a launch line runs (`_program`)."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.test_slurm_launches import guide_of, launch_of
from tests.test_triage_edge_cases import run, series
from triage.evidence.scripts import command_code_facts, command_facts, extract_script_evidence, split_shell
from triage.taxonomy import Category

RUN_SH = """#!/bin/bash
#SBATCH --gpus-per-node=2
set -euo pipefail
export CUDA_VISIBLE_DEVICES=0,1 NCCL_IB_DISABLE=1
DATA=s3://vision-datasets/shards
readonly NCCL_SOCKET_IFNAME=eth0
NCCL_P2P_DISABLE=1 torchrun --nproc_per_node 2 train.py --data-root $DATA --log-dir=/scratch/logs
export OUT
OUT=s3://vision-datasets/runs/$SLURM_JOB_ID
aws s3 cp --recursive /scratch/logs s3://vision-datasets/runs/
"""

TRAIN = """import argparse

import fsspec

parser = argparse.ArgumentParser()
parser.add_argument("--data-root", default="/local_ssd/shards")
args = parser.parse_args()
with fsspec.open(f"{args.data_root}/index.json", "rt") as handle:
    index = handle.read()
"""


def test_a_launch_scripts_environment_and_variables_are_read_from_its_assignments():
    evidence = extract_script_evidence([("run.sh", RUN_SH), ("train.py", TRAIN)])
    env = [(f.line, f.detail["name"], f.detail["value"]) for f in evidence.of("env")]
    assert env == [
        (4, "CUDA_VISIBLE_DEVICES", "0,1"),
        (4, "NCCL_IB_DISABLE", "1"),
        (6, "NCCL_SOCKET_IFNAME", "eth0"),
        (7, "NCCL_P2P_DISABLE", "1"),
    ]
    # a line that only sets variables runs nothing; the one that sets them for its command runs that command
    assert [f.line for f in evidence.of("shell_launch")] == [7]
    assert [f.line for f in evidence.of("shell_upload")] == [10]
    # `$DATA` on the launch line is the plain value set above it: train.py reads its index from there
    (read,) = evidence.of("remote_read")
    assert (read.path, read.line, read.detail["url"]) == ("train.py", 8, "s3://vision-datasets/shards/index.json")


@pytest.mark.parametrize(
    "launch",
    [
        "torchrun --nproc_per_node 8 train.py",
        "NCCL_DEBUG=INFO OMP_NUM_THREADS=4 torchrun --nproc_per_node 8 train.py",
        "/opt/conda/bin/torchrun --nproc_per_node 8 train.py",
        "nohup torchrun --nproc_per_node 8 train.py",
    ],
)
def test_a_launcher_is_known_by_its_program_after_the_commands_environment_wrapper_and_path(launch):
    # A launch line's launcher was its first word: `NCCL_DEBUG=INFO torchrun ...` launched by "NCCL_DEBUG=INFO", and
    # `/opt/conda/bin/torchrun` or `nohup torchrun` by neither torchrun, so a job with seven of its eight GPUs idle was
    # "unused GPUs" (no launcher seen) rather than a distributed launch that used only some of them.
    (launched,) = extract_script_evidence([("run.sh", f"#!/bin/bash\n{launch}\n")]).of("shell_launch")
    assert launched.detail["launcher"] == "torchrun"
    frame = series(120, lambda t, g: 60 if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)
    _, result = run(120, frame, gpu_count=8, scripts=[("run.sh", f"#!/bin/bash\n{launch}\n")])
    (finding,) = [f for f in result.findings if f.category == Category.GPU_OVERSUBSCRIPTION]
    assert finding.sub_cause == "uneven_use" and [(c.path, c.line) for c in finding.code] == [("run.sh", 2)]


@pytest.mark.parametrize(
    ("launch", "launcher"),
    [
        ("srun --ntasks-per-node 8 -c 12 python train.py --data-root s3://vision-datasets/shards", "python"),
        (
            "srun -N 2 --gpus-per-task 1 torchrun --nproc_per_node 8 train.py --data-root s3://vision-datasets/shards",
            "torchrun",
        ),
        (
            "srun --cpus-per-task=12 torchrun --nproc_per_node 8 train.py --data-root s3://vision-datasets/shards",
            "torchrun",
        ),
    ],
)
def test_a_launch_under_srun_is_known_whatever_options_srun_takes(launch, launcher):
    # srun's own options with a value after a space (`-c 12`, `-N 2`) left the value as the program: the line was no
    # launch at all, so its flags (the data root train.py reads) went unread.
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n{launch}\n"), ("train.py", TRAIN)])
    assert [f.detail["launcher"] for f in evidence.of("shell_launch")] == [launcher]
    (read,) = evidence.of("remote_read")
    assert read.detail["url"] == "s3://vision-datasets/shards/index.json"


@pytest.mark.parametrize(
    ("launch", "launcher"),
    [
        ("python -m torch.distributed.launch --nproc_per_node=8 --use_env train.py", "torchrun"),
        ("python3 -u -m torch.distributed.run --nproc_per_node 8 train.py", "torchrun"),
        ("NCCL_DEBUG=INFO /opt/conda/bin/python -m torch.distributed.launch --nproc_per_node 8 train.py", "torchrun"),
        ("srun -N 1 python -m torch.distributed.run --nproc_per_node 8 train.py", "torchrun"),
        ("accelerate launch --num_processes 8 train.py", "accelerate"),
        ("python -m accelerate.commands.launch --num_processes 8 train.py", "accelerate"),
        ("deepspeed --num_gpus 8 train.py --deepspeed", "deepspeed"),
        ("python -m deepspeed.launcher.runner --num_gpus 8 train.py", "deepspeed"),
        ("horovodrun -np 8 -H localhost:8 python train.py", "horovodrun"),
        ("mpirun -np 8 --bind-to none python train.py", "mpirun"),
    ],
)
def test_a_distributed_launch_is_known_whether_by_its_command_or_python_m(launch, launcher):
    # `python -m torch.distributed.launch` / `python -m torch.distributed.run` (torchrun's older forms, common in
    # papers' code) were launches whose launcher was "python", and horovodrun and mpirun were launchers the rules did
    # not take for distributed: a job with seven of its eight GPUs idle so launched was "unused GPUs" (no launcher).
    script = f"#!/bin/bash\n{launch}\n"
    (launched,) = extract_script_evidence([("run.sh", script)]).of("shell_launch")
    assert launched.detail["launcher"] == launcher
    frame = series(120, lambda t, g: 60 if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)
    _, result = run(120, frame, gpu_count=8, scripts=[("run.sh", script)])
    (finding,) = [f for f in result.findings if f.category == Category.GPU_OVERSUBSCRIPTION]
    assert finding.sub_cause == "uneven_use" and [(c.path, c.line) for c in finding.code] == [("run.sh", 2)]


@pytest.mark.parametrize(
    "launch",
    [
        "accelerate launch --mixed_precision no --use_deepspeed --zero_stage 3 train.py",
        "python -m accelerate.commands.launch --mixed_precision no --use_deepspeed --zero_stage 3 train.py",
        "NCCL_DEBUG=INFO srun accelerate launch --mixed_precision no --use_deepspeed --zero_stage 3 train.py",
    ],
)
def test_an_accelerate_launchs_settings_are_read_however_it_is_run(launch):
    # Accelerate's `--mixed_precision no` and `--zero_stage 3` were read only where the line's first word was
    # `accelerate`: not of `python -m accelerate.commands.launch`, nor behind srun or an environment assignment.
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n{launch}\n")])
    assert [f.detail["switch"] for f in evidence.of("full_precision")] == ["--mixed_precision no"]
    assert [f.detail["stage"] for f in evidence.of("zero_config")] == [3]


@pytest.mark.parametrize(
    "command",
    ["torchrun --nproc_per_node 8 train.py", "python -m torch.distributed.run --nproc_per_node 8 train.py"],
)
def test_a_distributed_launch_in_the_jobs_submitted_command_is_one(command):
    # A job submitted as `torchrun --nproc_per_node 8 train.py` (no launch script among its files) with seven of its
    # eight GPUs idle was "unused GPUs" (no launcher seen): only a shell script's launch line counted.
    frame = series(120, lambda t, g: 60 if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)
    _, result = run(120, frame, gpu_count=8, command=command)
    (finding,) = [f for f in result.findings if f.category == Category.GPU_OVERSUBSCRIPTION]
    assert finding.sub_cause == "uneven_use" and [(c.path, c.line) for c in finding.code] == [("job command", 1)]


def assert_launch_reads(launch: str, processes, sub_cause: str, files: list[tuple[str, str]] = ()):
    """The launch line as a script's line and as the job's submitted command: the processes its launch fact
    counts, and the sub-cause of an 8-GPU job so launched with one GPU busy. `files`: the job's other files (an
    Accelerate config), brought either way. Returns the script's launch fact."""
    script = f"#!/bin/bash\n{launch}\n"
    files = list(files)
    (launched,) = extract_script_evidence([("run.sh", script), *files]).of("shell_launch")
    assert launched.detail.get("processes") == processes
    frame = series(120, lambda t, g: 60 if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)
    for scripts, command in (([("run.sh", script), *files], ""), (files, launch)):  # a script's, the job's command
        _, result = run(120, frame, gpu_count=8, scripts=scripts, command=command)
        (finding,) = [f for f in result.findings if f.category == Category.GPU_OVERSUBSCRIPTION]
        assert finding.sub_cause == sub_cause, (launch, command)
    return launched


@pytest.mark.parametrize(
    ("launch", "processes", "sub_cause"),
    [
        ("mpirun -np 1 python train.py", 1, "unused_gpus"),
        ("mpirun -n 1 --bind-to none python train.py", 1, "unused_gpus"),
        ("horovodrun -np 1 -H localhost:1 python train.py", 1, "unused_gpus"),
        ("torchrun --nproc_per_node=1 train.py", 1, "unused_gpus"),
        ("torchrun --nproc-per-node 1 --nnodes 1 train.py", 1, "unused_gpus"),
        ("python -m torch.distributed.launch --nproc_per_node 1 train.py", 1, "unused_gpus"),
        ("mpirun -np 8 python train.py", 8, "uneven_use"),
        ("torchrun --nproc_per_node=1 --nnodes=2 train.py", 2, "uneven_use"),  # one a node, on two nodes
        ("torchrun --nproc_per_node=4 --nnodes=2 train.py", 8, "uneven_use"),
        ("torchrun --nproc_per_node=$GPUS train.py", None, "uneven_use"),  # not known: a launcher's
        ("mpirun python train.py", None, "uneven_use"),
    ],
)
def test_a_launcher_starting_one_process_is_no_distributed_launch(launch, processes, sub_cause):
    # `mpirun -np 1` (and `torchrun --nproc_per_node=1`) start one training process, yet counted as a distributed
    # launch: a job of eight GPUs so launched, seven of them idle, was "uneven use" of GPUs its processes share,
    # not GPUs nothing runs on.
    assert_launch_reads(launch, processes, sub_cause)


@pytest.mark.parametrize(
    ("launch", "processes", "sub_cause"),
    [
        # srun starts its task count of the launcher, each starting the launcher's own count
        ("srun -n 8 torchrun train.py", 8, "uneven_use"),
        ("srun --ntasks=8 python -m torch.distributed.run train.py", 8, "uneven_use"),
        ("srun -n8 torchrun train.py", 8, "uneven_use"),
        ("srun -N 2 --ntasks-per-node 4 torchrun train.py", 8, "uneven_use"),
        ("srun --nodes=2 --ntasks-per-node=1 torchrun --nproc_per_node 4 train.py", 8, "uneven_use"),
        ("srun -n 1 torchrun train.py", 1, "unused_gpus"),
        ("srun -n 1 -c 12 torchrun --nproc_per_node 1 train.py", 1, "unused_gpus"),
        # without a count, the allocation's (SLURM_NTASKS): not known here
        ("srun torchrun train.py", None, "uneven_use"),
        ("srun -N 1 torchrun train.py", 1, "unused_gpus"),  # a task a node, as Slurm starts where no count is given
        ("srun --ntasks-per-node 8 torchrun train.py", 8, "uneven_use"),  # on one node
        ("srun -n $NTASKS torchrun train.py", None, "uneven_use"),
        ("srun -N 2-4 --ntasks-per-node 1 torchrun train.py", None, "uneven_use"),
        ("srun $SRUN_ARGS torchrun train.py", None, "uneven_use"),
        ("srun -n 1 --exclusive $SRUN_ARGS torchrun train.py", None, "uneven_use"),
        ("srun -n 1 -c $CPUS torchrun train.py", 1, "unused_gpus"),  # a variable that is an option's value
        # deepspeed starts its --num_gpus on its node, accelerate its share of --num_processes over --num_machines
        ("srun -n 2 deepspeed --num_gpus 4 train.py", 8, "uneven_use"),
        ("srun -N 2 accelerate launch --multi_gpu --num_processes 8 --num_machines 2 train.py", 8, "uneven_use"),
        ("srun -n 2 deepspeed --num_gpus 4 --num_nodes 2 train.py", None, "uneven_use"),
        ("srun -n 2 accelerate launch --num_processes 8 --num_machines 3 train.py", None, "uneven_use"),
    ],
)
def test_a_launch_under_srun_starts_the_launcher_once_a_task(launch, processes, sub_cause):
    # `srun -n 8 torchrun train.py` starts eight torchruns of one process each, yet read as torchrun's one process:
    # an 8-GPU job so launched with seven GPUs idle was "unused GPUs" rather than uneven use of the GPUs it runs on.
    assert_launch_reads(launch, processes, sub_cause)


@pytest.mark.parametrize(
    ("sbatch", "processes"),
    [("#SBATCH --ntasks-per-node=8", 8), ("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4", 8), ("#SBATCH -n 1", 1)],
)
def test_a_launcher_under_a_bare_srun_runs_once_a_task_of_the_allocation(sbatch, processes):
    # A bare srun takes the batch script's task layout, for a launcher as for a python: `#SBATCH
    # --ntasks-per-node=8` then `srun torchrun train.py` is eight torchruns (it was not known).
    script = f"#!/bin/bash\n{sbatch}\nsrun torchrun train.py\n"
    (launched,) = extract_script_evidence([("run.sh", script)]).of("shell_launch")
    assert launched.detail.get("processes") == processes


@pytest.mark.parametrize(
    ("launch", "processes", "sub_cause"),
    [
        # torchrun's --nproc-per-node defaults to 1 and --nnodes to 1 (torch.distributed.run's parser)
        ("torchrun train.py", 1, "unused_gpus"),
        ("torchrun --standalone train.py --epochs 3", 1, "unused_gpus"),
        ("python -m torch.distributed.launch train.py", 1, "unused_gpus"),
        ("torchrun --nnodes 2 train.py", 2, "uneven_use"),
        ("torchrun --nnodes 1:4 train.py", None, "uneven_use"),  # elastic: how many nodes join is not known
        ("PET_NPROC_PER_NODE=8 torchrun train.py", None, "uneven_use"),  # torchrun's options from its environment
        ("torchrun $DIST_ARGS train.py", None, "uneven_use"),  # options the line does not show
        ("torchrun --master_port $PORT train.py", 1, "unused_gpus"),  # a variable that is an option's value
        ("mpirun -np 1 $MPI_FLAGS python train.py", None, "uneven_use"),  # may give -np again: not known
        ("mpirun -np 1 -x $PATH_VAR python train.py", 1, "unused_gpus"),
        # deepspeed's --num_gpus defaults to every GPU of a node, --num_nodes to every host of its hostfile
        ("deepspeed --num_gpus 1 train.py", 1, "unused_gpus"),
        ("deepspeed --num_gpus=1 --num_nodes 1 train.py", 1, "unused_gpus"),
        ("deepspeed --num_accelerators 1 train.py", 1, "unused_gpus"),
        ("deepspeed --include localhost:0 train.py", 1, "unused_gpus"),
        ("deepspeed --include localhost:0,1,2,3 train.py", 4, "uneven_use"),
        ("deepspeed --num_gpus 1 --num_nodes=2 train.py", 2, "uneven_use"),
        ("deepspeed --hostfile hosts --num_gpus 1 train.py", None, "uneven_use"),  # every host in the file
        ("deepspeed --num_nodes 1 train.py", None, "uneven_use"),  # every GPU of the node
        ("deepspeed train.py", None, "uneven_use"),
        # accelerate launch's --num_processes is the total; without it, its config file's (not seen) or every GPU
        ("accelerate launch --num_processes 1 train.py", 1, "unused_gpus"),
        ("accelerate launch --num_processes=1 --mixed_precision bf16 train.py", 1, "unused_gpus"),
        ("python -m accelerate.commands.launch --num_processes 1 train.py", 1, "unused_gpus"),
        ("accelerate launch --cpu train.py", None, "unused_gpus"),  # trains on the CPU: no GPU process at all
        ("accelerate launch --num_processes 8 train.py", 8, "uneven_use"),
        ("accelerate launch --multi_gpu --num_processes 1 train.py", None, "uneven_use"),  # older: every GPU
        ("accelerate launch train.py", None, "uneven_use"),
        ("accelerate launch --config_file one_gpu.yaml train.py", None, "uneven_use"),
    ],
)
def test_a_launchers_default_count_is_its_documented_one(launch, processes, sub_cause):
    # `torchrun train.py` starts one process (--nproc-per-node defaults to 1), as `deepspeed --num_gpus 1` and
    # `accelerate launch --num_processes 1` do, yet each counted as a distributed launch: an 8-GPU job so launched,
    # seven GPUs idle, was "uneven use" of GPUs its processes share, not GPUs nothing runs on.
    assert_launch_reads(launch, processes, sub_cause)


@pytest.mark.parametrize(
    ("launch", "processes", "sub_cause"),
    [
        # srun starts one python a task: Lightning's SLURMEnvironment, torch.distributed from SLURM_PROCID, Horovod
        ("srun -n 8 python train.py", 8, "uneven_use"),
        ("srun --ntasks=8 -c 12 python -u train.py", 8, "uneven_use"),
        ("srun --mpi=pmix -n8 python train.py", 8, "uneven_use"),
        ("srun --ntasks-per-node=8 python train.py", 8, "uneven_use"),  # on one node, Slurm's default
        ("srun -N 2 --ntasks-per-node 4 python train.py", 8, "uneven_use"),
        ("srun -N 2 python train.py", 2, "uneven_use"),  # one task a node, srun's default
        ("nohup srun -n 8 /opt/conda/bin/python3 train.py", 8, "uneven_use"),
        # one task: one process, as a python without srun
        ("srun -n 1 python train.py", 1, "unused_gpus"),
        ("srun -N 1 --ntasks-per-node=1 python train.py", 1, "unused_gpus"),
        ("srun python train.py", None, "unused_gpus"),  # Slurm's default is one task
        ("srun -n $NTASKS python train.py", None, "unused_gpus"),  # not known: no claim of several
        ("srun $SRUN_ARGS python train.py", None, "unused_gpus"),
        ("python train.py", None, "unused_gpus"),
    ],
)
def test_a_python_launch_under_srun_with_several_tasks_is_a_distributed_launch(launch, processes, sub_cause):
    # `srun -n 8 python train.py` starts eight training processes (Slurm-native distributed training), yet its
    # launcher was "python", no distributed launch: an 8-GPU job so launched with seven GPUs idle was "unused GPUs"
    # (nothing runs on them) rather than uneven use of GPUs its eight processes share (every rank on cuda:0).
    launched = assert_launch_reads(launch, processes, sub_cause)
    assert launched.detail["launcher"].startswith("python")


@pytest.mark.parametrize(
    ("sbatch", "launch", "processes"),
    [
        # a bare srun takes the batch script's task layout (the allocation's SLURM_NTASKS, SLURM_NTASKS_PER_NODE)
        ("#SBATCH --ntasks-per-node=8", "srun python train.py", 8),
        ("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4", "srun python train.py", 8),
        ("#SBATCH -N 2 --ntasks-per-node 4", "srun --cpu-bind=cores python train.py", 8),
        ("#SBATCH --ntasks=8", "srun python train.py", 8),
        ("#SBATCH -n 8", "srun python train.py", 8),
        ("#SBATCH --nodes=2", "srun python train.py", 2),  # one task a node
        # srun's own options win over the allocation's
        ("#SBATCH --ntasks-per-node=8", "srun -n 1 python train.py", 1),
        ("#SBATCH --ntasks=1", "srun -n 8 python train.py", 8),
        # though not over the job's task count, which sbatch works out from --ntasks-per-node and exports as
        # SLURM_NTASKS: srun's `-N 1` leaves it 8 (its own `-n` would change it)
        ("#SBATCH --nodes=2 --ntasks-per-node=4", "srun -N 1 python train.py", 8),
        ("#SBATCH --nodes=2 --ntasks-per-node=4", "srun -N 1 -n 4 python train.py", 4),
        # one task, or no srun: one process
        ("#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1", "srun python train.py", 1),
        ("#SBATCH --ntasks-per-node=8", "python train.py", None),
        # sbatch reads no #SBATCH line after the script's first command
        ("set -e\n#SBATCH --ntasks-per-node=8", "srun python train.py", None),
    ],
)
def test_a_bare_srun_in_a_batch_script_runs_the_allocations_tasks(sbatch, launch, processes):
    script = f"#!/bin/bash\n{sbatch}\n{launch}\n"
    (launched,) = extract_script_evidence([("run.sh", script)]).of("shell_launch")
    assert launched.detail.get("processes") == processes
    frame = series(120, lambda t, g: 60 if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)
    _, result = run(120, frame, gpu_count=8, scripts=[("run.sh", script)])
    (finding,) = [f for f in result.findings if f.category == Category.GPU_OVERSUBSCRIPTION]
    assert finding.sub_cause == ("uneven_use" if (processes or 1) > 1 else "unused_gpus")
    if finding.sub_cause == "uneven_use":  # the srun line, after the #SBATCH lines that gave its count
        srun = script.count("\n")
        given = [n for n, line in enumerate(script.splitlines(), 1) if _TASK_OPTION.search(line) and n < srun]
        if re.search(r" (-n ?\d|--ntasks=)", launch):  # srun's own count
            given = []
        assert [(c.path, c.line) for c in finding.code] == [("run.sh", n) for n in (*given, srun)]


_TASK_OPTION = re.compile(r"(-n |-N |--ntasks|--nodes)")


def test_an_srun_jobs_idle_gpus_are_fixed_by_a_device_a_task():
    # An 8-GPU job of `srun -n 8 python train.py` with one GPU busy runs eight processes on cuda:0: the fix is each
    # task's own device (SLURM_LOCALID), not a torchrun line that would start eight processes in each of its tasks.
    frame = series(120, lambda t, g: 60 if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)
    script = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=8\n#SBATCH --gres=gpu:8\nsrun python train.py\n"
    for scripts, command in (([("run.sh", script)], ""), ([], "srun -n 8 python train.py")):
        _, result = run(120, frame, gpu_count=8, node_count=1, scripts=scripts, command=command)
        (finding,) = [f for f in result.findings if f.category == Category.GPU_OVERSUBSCRIPTION]
        assert finding.sub_cause == "uneven_use" and finding.numbers["idle_gpus"] == 7
        guide = guide_of(finding)
        assert "SLURM_LOCALID" in guide["change"] and "torch.cuda.set_device" in guide["after"]
        assert "torchrun" not in guide["after"]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        # a '#' inside a word is part of it: bash starts a comment only at a word's beginning
        # (`bash -c 'echo a#b c # d'` prints "a#b c")
        ("python train.py --comment=a#b --workers 8", ["python", "train.py", "--comment=a#b", "--workers", "8"]),
        ("python train.py --tag=exp#3 --workers 8", ["python", "train.py", "--tag=exp#3", "--workers", "8"]),
        ("curl http://host/#frag -o out", ["curl", "http://host/#frag", "-o", "out"]),
        ("echo '#quoted' x", ["echo", "#quoted", "x"]),
        ("echo a\\ #b c", ["echo", "a #b", "c"]),  # an escaped blank does not end the word
        ("echo $# x", ["echo", "$#", "x"]),
        ("echo ${#arr[@]} x", ["echo", "${#arr[@]}", "x"]),
        # a '#' that begins a word starts a comment, to the end of its line
        ("python train.py # note --workers 8", ["python", "train.py"]),
        ("python train.py\t# note", ["python", "train.py"]),
        ("# note python train.py", []),
    ],
)
def test_a_hash_starts_a_comment_only_at_the_beginning_of_a_word(line, words):
    assert split_shell(line) == ([words] if words else [])


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("python train.py;# note --workers 8", [["python", "train.py"]]),  # after an operator, a word begins
        ("python train.py && # note", [["python", "train.py"]]),
        ("echo a|# note", [["echo", "a"]]),
        ("echo a#b; echo c#d # e", [["echo", "a#b"], ["echo", "c#d"]]),
        # a comment ends at its newline, which ends a command
        ("echo a # note\necho b", [["echo", "a"], ["echo", "b"]]),
    ],
)
def test_a_comment_after_an_operator_or_a_word_ends_the_commands(line, commands):
    assert split_shell(line) == commands


def test_a_continued_line_whose_hash_is_inside_a_word_continues():
    # `_logical_lines` and `split_shell` read one comment rule: `--tag=exp#3 \` goes on to the next line
    launched = launch_of("#!/bin/bash\nsrun --comment=exp#3 \\\n  -n 1 torchrun train.py\n")
    assert launched.detail.get("processes") == 1


@pytest.mark.parametrize(
    ("launch", "processes", "sub_cause"),
    [
        # srun's `-n 1` after a word with a '#' was lost with the rest of the line: no count, "uneven use"
        ("srun --comment=exp#3 -n 1 torchrun train.py", 1, "unused_gpus"),
        ("torchrun --rdzv-id=run#7 --nproc_per_node 8 train.py", 8, "uneven_use"),  # not torchrun's default 1
        ("srun -n 1 torchrun train.py # --nproc_per_node 8", 1, "unused_gpus"),  # a comment's words are no option
    ],
)
def test_a_launcher_option_after_a_word_with_a_hash_is_read(launch, processes, sub_cause):
    assert_launch_reads(launch, processes, sub_cause)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        # bash's ANSI-C quoting (bash(1), QUOTING): `$'...'` is one word, its backslash escapes decoded, `\'` a quote
        ("python train.py --note $'it\\'s' --workers 8", ["python", "train.py", "--note", "it's", "--workers", "8"]),
        ("python train.py --sep $'\\t' --workers 8", ["python", "train.py", "--sep", "\t", "--workers", "8"]),
        ("echo $'a\\nb' $'\\x41\\101\\u00e9' $'\\\\' $'\\z'", ["echo", "a\nb", "AA\u00e9", "\\", "\\z"]),
        ("echo x$'a b'y", ["echo", "xa by"]),
        ("echo $'# no comment' # a comment", ["echo", "# no comment"]),
        # inside double quotes `$'` is no quoting; `$"..."` is the string (bash's locale translation, none here)
        ("echo \"$'x'\"", ["echo", "$'x'"]),
        ('echo $"a b"', ["echo", "a b"]),
        ("echo \\$'x'", ["echo", "$x"]),  # an escaped `$` begins no quoting: `'x'` is a plain quoted word
    ],
)
def test_ansi_c_quoting_is_read_as_bash_reads_it(line, words):
    # `$'it\'s'` was read as an unbalanced quote, the whole line a parse error: its launch was not read
    assert split_shell(line) == [words]


def test_a_launch_with_an_ansi_c_quoted_word_is_read():
    assert_launch_reads("srun -n 8 python train.py --note $'it\\'s a test'", 8, "uneven_use")


@pytest.mark.parametrize(
    ("script", "argv", "processes"),
    [
        # bash removes a backslash-newline pair entirely: no blank is put in its place (bash(1), QUOTING)
        ("torchrun --nproc_per_node=\\\n1 train.py", ["torchrun", "--nproc_per_node=1", "train.py"], 1),
        ("srun -n\\\n8 python train.py", ["srun", "-n8", "python", "train.py"], 8),
        # a backslash followed by a blank escapes the blank: the newline after it ends the command
        ("srun -n 8 \\ \npython train.py", ["python", "train.py"], None),
        # an escaped backslash (`\\\\`) continues nothing
        ("echo done\\\\\nsrun -n 4 python train.py", ["srun", "-n", "4", "python", "train.py"], 4),
        # inside double quotes too the pair is removed
        ('srun -n 4 python train.py --note "a\\\nb"', ["srun", "-n", "4", "python", "train.py", "--note", "ab"], 4),
    ],
)
def test_a_backslash_newline_continues_a_line_as_bash_joins_it(script, argv, processes):
    # the pair was replaced by a blank (`--nproc_per_node= 1`, `-n 8`), a blank after the backslash continued the
    # line anyway, and `\\\\` at a line's end (an escaped backslash) joined the next line to it
    (launched,) = extract_script_evidence([("run.sh", f"#!/bin/bash\n{script}\n")]).of("shell_launch")
    assert launched.detail["argv"] == argv
    assert launched.detail.get("processes") == processes


@pytest.mark.parametrize(
    ("command", "processes"),
    [
        # a newline ends a command, as `;` does: a multi-line command (a Kubernetes container's, an imported job's)
        ("cd /work\nsrun -n 8 python train.py", 8),
        ("export SLURM_NTASKS=8\nsrun python train.py", 8),
        ("module load cuda &&\n  srun -n 8 python train.py", 8),
        ("# run it\nsrun -n 8 python train.py", 8),
        ("srun -n 8 \\\n  python train.py", 8),  # a backslash-newline pair is removed, as in a script
    ],
)
def test_each_line_of_a_multi_line_job_command_is_a_command(command, processes):
    # `cd /work` then the srun line was one command, `cd` with the srun's words its arguments: no launch at all
    (launch,) = [fact for fact in command_code_facts(command) if fact.kind == "command_launch"]
    assert launch.detail.get("processes") == processes
    assert launch.detail["argv"][-2:] == ["python", "train.py"]


def test_a_newline_inside_quotes_stays_in_its_word():
    assert split_shell("python train.py --note 'a\nb' --workers 8\necho c") == [
        ["python", "train.py", "--note", "a\nb", "--workers", "8"],
        ["echo", "c"],
    ]
    assert command_facts("pip install -r requirements.txt\njupyter lab --port 8888") == ["install", "interactive"]


@pytest.mark.parametrize(
    "container",
    [
        # a Kubernetes container's command and args, as the connector joins them (shlex.join): the script a shell's
        # `-c` string holds is the job's command, a line a command
        ["/bin/bash", "-c", "pip install -r requirements.txt\ntorchrun --nproc_per_node 8 train.py"],
        ["bash", "-lc", "cd /work && torchrun --nproc_per_node 8 train.py"],
        ["sh", "-e", "-c", "set -x; torchrun --nproc_per_node 8 train.py", "sh"],
        ["/bin/bash", "-o", "pipefail", "-c", "torchrun --nproc_per_node 8 train.py | tee log.txt"],
    ],
)
def test_the_script_of_a_shells_c_string_in_the_jobs_command_is_read(container):
    # `/bin/bash -c '...'` was one command, bash's: no launch was read from a Kubernetes job's command
    command = shlex.join(container)
    (launch,) = [fact for fact in command_code_facts(command) if fact.kind == "command_launch"]
    assert launch.detail["launcher"] == "torchrun" and launch.detail.get("processes") == 8
    assert "launch" in command_facts(command)


def test_a_shell_running_a_script_file_is_not_read_as_a_c_string():
    assert command_code_facts("bash run.sh 'torchrun --nproc_per_node 8 train.py'") == []


def test_a_backslash_and_a_blank_ending_a_line_are_a_word_not_a_parse_error():
    # the line was stripped before it was split: its last backslash escaped nothing, an "unbalanced quotes" error
    evidence = extract_script_evidence([("run.sh", "#!/bin/bash\nsrun -n 8 \\ \npython train.py\n")])
    assert evidence.parse_errors == []
    assert [fact.detail["argv"] for fact in evidence.of("shell_launch")] == [["python", "train.py"]]
