"""What a job's scripts and command set, and where it holds (rules revision 12): what a `bash -c '...'` string (or
`sh -c`) exports ends with that child shell; `sbatch --wrap "..."`'s string is a script of its own, whose `bash
<<EOF` bodies are child shells as a script's are; a batch script is read in the language its first line runs it
with, whatever its name (sacct's `batch_script.sh` of a `#!/usr/bin/env python3` job); and env's `-S` string takes
`${NAME}` from the environment env starts in, where the script shows it."""

from __future__ import annotations

import pytest

from tests.test_launch_reading import launches
from tests.test_slurm_launches import oversubscription
from triage.evidence.scripts import command_code_facts


def command_launches(command: str) -> list[tuple[str, object]]:
    return [
        (f.detail["argv"][-1], f.detail.get("processes"))
        for f in command_code_facts(command)
        if f.kind == "command_launch"
    ]


# --- 1. `bash -c '...'`: a child shell ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "export SLURM_NTASKS=4\nbash -c 'export SLURM_NTASKS=2; srun python prepare.py'\nsrun python train.py",
            [("prepare.py", 2), ("train.py", 4)],
        ),
        (
            "export SLURM_NTASKS=4 && sh -c 'export SLURM_NTASKS=2 && srun python prepare.py' && srun python train.py",
            [("prepare.py", 2), ("train.py", 4)],
        ),
        (  # an exported variable set again in the child: the child's environment, not the command's
            "export SLURM_NTASKS=4; /bin/bash -lc 'SLURM_NTASKS=2; srun python prepare.py'; srun python train.py",
            [("prepare.py", 2), ("train.py", 4)],
        ),
        (  # a shell inside the string's shell: its export ends with it, before prepare.py
            "/bin/bash -c \"export SLURM_NTASKS=4; sh -c 'export SLURM_NTASKS=2'; srun python prepare.py\"\n"
            "srun python train.py",
            [("prepare.py", 4), ("train.py", None)],
        ),
    ],
)
def test_what_a_shells_c_string_exports_stays_in_that_shell(command, expected):
    # The job's command is read as one list of commands, a `-c` string's too: what the string set was taken by the
    # commands after the shell that ran it (train.py's srun ran the string's 2 tasks, not the 4 exported before)
    assert command_launches(command) == expected


def test_a_shells_c_string_still_has_what_the_command_exported_before_it():
    assert command_launches("export SLURM_NTASKS=4; bash -c 'srun python train.py'") == [("train.py", 4)]


def test_a_script_the_command_runs_after_a_c_string_has_the_commands_environment():
    # run.sh's bare srun took the 2 tasks of a `bash -c` string that ran before it
    assert launches("#!/bin/bash\nsrun python train.py\n", "bash -c 'export SLURM_NTASKS=2' && bash run.sh") == [
        (2, "python", None)
    ]


def test_one_busy_gpu_of_eight_after_a_c_strings_export_is_unused_gpus():
    # The command's srun runs one task: seven GPUs unused. The `bash -c` string's SLURM_NTASKS=8 made it 8 tasks
    # sharing the GPUs unevenly, a fix for a launch the job did not make
    command = "bash -c 'export SLURM_NTASKS=8; echo ready'\nsrun python train.py"
    assert oversubscription(command=command).sub_cause == "unused_gpus"


# --- 2. `sbatch --wrap "..."`: a script of its own ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            "sbatch -n 8 --wrap 'export SLURM_NTASKS=4\nbash <<EOF\nexport SLURM_NTASKS=2\nsrun python prepare.py\n"
            "EOF\nsrun python train.py'",
            [("prepare.py", 2), ("train.py", 4)],
        ),
        ("sbatch -n 8 --wrap 'bash <<EOF\nexport SLURM_NTASKS=2\nEOF\nsrun python train.py'", [("train.py", 8)]),
        ("sbatch -n 8 --wrap \"bash -c 'export SLURM_NTASKS=2'; srun python train.py\"", [("train.py", 8)]),
    ],
)
def test_a_here_document_in_a_wrapped_command_runs_in_a_child_shell(command, expected):
    # `sbatch --wrap` runs its string as a batch script of its own: a `bash <<EOF` body there is a child shell, as in
    # a script, and its export ended with it; it gave the wrapped srun after it the body's 2 tasks
    assert command_launches(command) == expected


def test_a_script_a_wrapped_command_runs_has_the_wraps_environment_not_a_child_shells():
    command = "sbatch -n 8 --wrap 'bash <<EOF\nexport SLURM_NTASKS=2\nEOF\nbash run.sh'"
    assert launches("#!/bin/bash\nsrun python train.py\n", command) == [(2, "python", 8)]


def test_what_a_wrapped_command_sets_is_not_the_submitting_commands():
    # the wrap's commands run in the batch job, not in the shell that submits it
    command = "sbatch -n 8 --wrap 'export SLURM_NTASKS=2'\nexport SLURM_NTASKS=4; srun python train.py"
    assert command_launches(command) == [("train.py", 4)]
