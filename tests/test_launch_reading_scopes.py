"""What a job's scripts and command set, and where it holds (rules revisions 12 to 15): what a `bash -c '...'`
string (or `sh -c`) exports ends with that child shell, and a subshell's with its `)`; `sbatch --wrap "..."`'s string
is a script of its own, whose `bash <<EOF` bodies are child shells as a script's are; a batch script is read in the
language its first line runs it with, whatever its name (sacct's `batch_script.sh` of a `#!/usr/bin/env python3`
job); env's `-S` string takes `${NAME}` from the environment env starts in, where the script shows it; and the job's
command is read as a script's line is (section 9); a plain variable a branch sets is known later in that branch
(section 10), and one set earlier on the launch's own line as on a line of its own (section 11); the job's command's
plain variables as a script's, and one an `&&` chain sets in the rest of that chain (section 12). Revision 14: the job's
command's `-c` strings and here-documents take its variables (section 13), an `&&` chain's value holds in the
compound command it runs (section 14), a prefix assignment is its command's alone (section 15), a `-c` string starts
with the variables where it runs (section 16), `f() ( ... )` ends at its `)` (section 17), `env -S 'bash -c
"..."'`'s string is read (section 18), `sbatch --wrap '...'` and salloc's `bash -c '...'` take the variables
exported before them (section 19), a subshell an `&&` chain runs sets its own first and leaves the chain's values
after it (section 20), the command's here-document bodies are read as a script's (section 21), the variables a `-c`
string's shell is given are its environment, which the string may set again (section 22), and a `{ ...; }` group an
`&&` chain runs leaves what it set for sure to the rest of that chain (section 23), and sbatch's `--export` is read
wherever its options give it, SBATCH_EXPORT where they give none (section 24), and a quoted here-document body's `&&`
chains and subshells are read as a script's (section 25). Revision 15: a `{ ...; }` group's values go on in its `&&`
chain where the chain set nothing before it (section 26), a quoted here-document body's groups and branches are read
as a script's (section 27), an empty `--export=` passes no variable (section 28), and a value a loop sets again is not
known in its body (section 29); and where bash knows the value: after a `{ ...; }` group, in an `if`'s other arm,
after a pipeline, in a loop that sets the value it had, and srun's in a `-c` string in a loop as in the loop (section
30)."""

from __future__ import annotations

import pytest

from tests.test_evidence_remote_reads import DATA_ROOT_FLAG, flag_reads
from tests.test_launch_reading import LOADER_SCRIPT, launches
from tests.test_slurm_launches import one_busy_gpu_of_eight, oversubscription
from tests.test_triage_edge_cases import run
from triage.evidence.scripts import command_code_facts, extract_script_evidence


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


# --- 3. a batch script's language is its first line's ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "shebang"),
    [
        ("batch_script.sh", "#!/usr/bin/env python3"),
        ("batch_script.sh", "#!/usr/bin/python"),
        ("submit.slurm", "#!/usr/bin/env -S python3 -u"),
        ("job.sbatch", "#!/opt/conda/bin/python3.11"),
    ],
)
def test_a_python_batch_script_under_a_shell_name_is_read_as_python(path, shebang):
    # sacct keeps a job's batch script as batch_script.sh; sbatch runs it with its first line's interpreter. A Python
    # one was read as shell commands: its DataLoader never seen, a Python line taken for a command
    script = f"{shebang}\n#SBATCH --ntasks-per-node=2\n#SBATCH -c 8\n{LOADER_SCRIPT}"
    evidence = extract_script_evidence([(path, script)])
    assert (evidence.python_files, evidence.shell_files) == (1, 0)
    (loader,) = evidence.of("dataloader")
    assert (loader.path, loader.detail["num_workers"]) == (path, 4)
    # sbatch reads the #SBATCH lines of a script in any language: the job's layout is still read
    assert [(f.line, f.detail) for f in evidence.of("slurm_layout")] == [
        (2, {"ntasks_per_node": 2}),
        (3, {"cpus_per_task": 8}),
    ]


def test_a_python_batch_scripts_sbatch_lines_are_read_up_to_its_first_line_of_code():
    script = '#!/usr/bin/env python3\n# a comment\n\n#SBATCH -c 8\n"""Train."""\n#SBATCH --ntasks-per-node=4\n'
    evidence = extract_script_evidence([("batch_script.sh", script)])
    assert [(f.line, f.detail) for f in evidence.of("slurm_layout")] == [(4, {"cpus_per_task": 8})]


def test_a_python_file_without_a_first_line_is_no_batch_script():
    # sbatch runs no script without an interpreter line: its #SBATCH lines give nothing
    evidence = extract_script_evidence([("train.py", f"#SBATCH -c 8\n{LOADER_SCRIPT}")])
    assert evidence.of("slurm_layout") == [] and evidence.python_files == 1


@pytest.mark.parametrize("shebang", ["#!/bin/bash", "#!/usr/bin/env bash", ""])
def test_a_shell_batch_script_is_still_a_shell_script(shebang):
    evidence = extract_script_evidence([("batch_script.sh", f"{shebang}\nsrun -n 4 python train.py\n")])
    assert (evidence.python_files, evidence.shell_files) == (0, 1)
    assert [f.detail.get("processes") for f in evidence.of("shell_launch")] == [4]


# --- 4. env -S: `${NAME}` from env's environment ------------------------------------------------------------------


def _workers(run_sh: str, command: str = "") -> list:
    evidence = extract_script_evidence([("train.py", LOADER_SCRIPT), ("run.sh", run_sh)], command=command)
    return [f.detail["num_workers"] for f in evidence.of("dataloader")]


@pytest.mark.parametrize(
    ("run_sh", "workers"),
    [
        # env(1): "-S ... supports ${VARNAME} expansion" from the environment env is started in: the script's exports
        ("export W=0\nenv -S 'python train.py --workers ${W}'", 0),
        ("W=0\nexport W\n/usr/bin/env -S 'python train.py --workers ${W}'", 0),
        ("W=0 env -S 'python train.py --workers ${W}'", 0),  # set for env's command alone
        ("export W=0\nenv -i -S 'python train.py --workers ${W}'", 0),  # expanded before -i empties the environment
        ("export W=0\nsrun -n 2 env -S 'python train.py --workers ${W}'", 0),
        # not known: a variable not exported (the environment may hold one of that name), an escaped or single-quoted
        # `${W}` (env passes it on as written), one whose value is not known, one sudo's reset environment drops
        ("W=0\nenv -S 'python train.py --workers ${W}'", None),
        ("export W=0\nenv -S 'python train.py --workers \\${W}'", None),
        ("export W=0\nenv -S \"python train.py --workers '\\${W}'\"", None),
        ("export W=$(nproc)\nenv -S 'python train.py --workers ${W}'", None),
        ("export W=0\nsudo env -S 'python train.py --workers ${W}'", None),
        ("export W=0\nenv -S 'python train.py --workers ${X}'", None),
    ],
)
def test_env_s_takes_a_known_variable_from_its_environment(run_sh, workers):
    # `${W}` in env's string was always unknown, so `num_workers=args.workers` was not read as the launch's 0
    assert _workers(f"#!/bin/bash\n{run_sh}\n") == [workers]


def test_env_s_in_the_jobs_command_takes_the_variables_set_for_it():
    assert _workers("#!/bin/bash\ntrue\n", "W=0 env -S 'python train.py --workers ${W}'") == [0]


def test_a_variable_exported_in_a_child_shell_is_not_envs():
    run_sh = "#!/bin/bash\nbash <<'EOF'\nexport W=0\nEOF\nenv -S 'python train.py --workers ${W}'\n"
    assert _workers(run_sh) == [None]


# --- 5. csh, tcsh, fish: not read as sh, and said so --------------------------------------------------------------

TCSH_BATCH = "#!/bin/tcsh\n#SBATCH --ntasks-per-node=8\nsetenv SLURM_NTASKS 1\nsrun python train.py\n"


@pytest.mark.parametrize(
    ("path", "text", "program"),
    [
        ("batch_script.sh", TCSH_BATCH, "tcsh"),
        ("run.sh", "#!/bin/csh -f\nsrun -n 8 python train.py\n", "csh"),
        ("launch", "#!/usr/bin/env fish\nset -x SLURM_NTASKS 1\nsrun python train.py\n", "fish"),
        ("run.csh", "srun -n 8 python train.py\n", "csh"),
        ("job.fish", "srun -n 8 python train.py\n", "fish"),
    ],
)
def test_a_csh_or_fish_script_is_not_read_as_sh_and_says_so(path, text, program):
    # Their syntax is not sh's (`setenv NAME value`, `set -x NAME value`, `if (...) then`, `foreach`): read as sh, a
    # tcsh batch script's `setenv SLURM_NTASKS 1` was no export, so its srun ran the allocation's 8 tasks; one with
    # no shell's suffix was not read, and nothing said so
    evidence = extract_script_evidence([(path, text)])
    assert evidence.of("shell_launch") == [] and evidence.shell_files == 0
    assert evidence.notes == [
        f"{path} is a {program} script: triage reads the commands of sh-family shell scripts (sh, bash, zsh, ksh) "
        "and Python, so none of its commands were read"
    ]


def test_a_tcsh_batch_scripts_sbatch_lines_are_still_the_jobs():
    # sbatch reads #SBATCH lines in a script of any language
    evidence = extract_script_evidence([("batch_script.sh", TCSH_BATCH)])
    assert [(f.line, f.detail) for f in evidence.of("slurm_layout")] == [(2, {"ntasks_per_node": 8})]


def test_a_jobs_scripts_in_sh_and_python_say_nothing_of_unread_ones():
    evidence = extract_script_evidence([("run.sh", "#!/bin/bash\nsrun -n 2 python train.py\n"), ("train.py", "")])
    assert evidence.notes == []


def test_the_jobs_evidence_says_which_script_was_not_read():
    # the job page shows the evidence's notes ("Note: ..."): an unread script was left out without a word
    frame = one_busy_gpu_of_eight()
    evidence, _ = run(120, frame, gpu_count=8, scripts=[("batch_script.sh", TCSH_BATCH)])
    assert evidence.summary()["notes"] == [
        "batch_script.sh is a tcsh script: triage reads the commands of sh-family shell scripts (sh, bash, zsh, ksh) "
        "and Python, so none of its commands were read"
    ]


@pytest.mark.parametrize(
    "command",
    [
        "sbatch -n 2 --wrap 'python train.py --workers 0'",
        "sbatch --wrap='srun python train.py --workers=0'",
        "salloc -n 2 srun python train.py --workers 0",
        "salloc -n 2 bash -c 'python train.py --workers 0'",
    ],
)
def test_the_options_a_wrapped_or_salloc_command_gives_its_script_are_read(command):
    # the command sbatch wraps, or salloc runs, was no launch of train.py: `num_workers=args.workers` kept its default
    assert _workers("#!/bin/bash\ntrue\n", command) == [0]


# --- 6. a script's plain variables in its launch counts -------------------------------------------------------------


def _counts(run_sh: str) -> list:
    return [count for _, _, count in launches(f"#!/bin/bash\n{run_sh}\n")]


@pytest.mark.parametrize(
    ("run_sh", "processes"),
    [
        ("NGPUS=4\ntorchrun --nproc_per_node=$NGPUS train.py", 4),
        ("NGPUS=4\ntorchrun --nproc_per_node ${NGPUS} train.py", 4),
        ('export NGPUS=4\ntorchrun --nproc_per_node "$NGPUS" train.py', 4),
        ("export NGPUS=4\nsrun -n $NGPUS python train.py", 4),
        ("NODES=2\nsrun -N $NODES --ntasks-per-node=1 torchrun --nproc_per_node=4 train.py", 8),
        ("export NGPUS=4\nmpirun -np $NGPUS python train.py", 4),
        ("N=2\nexport SLURM_NTASKS=$N\nsrun python train.py", 2),  # srun's input variable from a known one
        ("export NGPUS=4\nbash <<'EOF'\ntorchrun --nproc_per_node=$NGPUS train.py\nEOF", 4),  # the child's, exported
        ("NGPUS=4\nbash <<EOF\ntorchrun --nproc_per_node=$NGPUS train.py\nEOF", 4),  # expanded by the script
        ("NGPUS=4\n{ NGPUS=8; }\ntorchrun --nproc_per_node=$NGPUS train.py", 8),  # a group runs in the shell
    ],
)
def test_a_launch_count_takes_a_variable_the_script_set_plainly(run_sh, processes):
    # `$NGPUS` was a count the launch line does not show: not known, as if no number had been given
    assert _counts(run_sh) == [processes]


@pytest.mark.parametrize(
    "run_sh",
    [
        # what the line's variable holds is not known: Slurm's own value in a GPU job, a branch's, a loop's, a
        # function's called later, a child shell's own, a plain variable a quoted body's child shell does not have
        "NGPUS=${SLURM_GPUS_ON_NODE:-4}\ntorchrun --nproc_per_node=$NGPUS train.py",
        'NGPUS=4\nif [ -n "$BIG" ]; then NGPUS=8; fi\ntorchrun --nproc_per_node=$NGPUS train.py',
        'NGPUS=4\nif [ -n "$BIG" ]; then\n  NGPUS=8\nfi\ntorchrun --nproc_per_node=$NGPUS train.py',
        'NGPUS=4\nif [ -n "$BIG" ]; then true; else export NGPUS=8; fi\ntorchrun --nproc_per_node=$NGPUS train.py',
        'NGPUS=4\ncase "$SIZE" in\n  big) NGPUS=8 ;;\nesac\ntorchrun --nproc_per_node=$NGPUS train.py',
        "NGPUS=4\nfor n in 2 8; do NGPUS=$n; done\ntorchrun --nproc_per_node=$NGPUS train.py",
        "setup() {\n  NGPUS=8\n}\nNGPUS=4\nsetup\ntorchrun --nproc_per_node=$NGPUS train.py",
        "NGPUS=4\nbash -c 'torchrun --nproc_per_node=$NGPUS train.py'",  # not exported: the child's own NGPUS
        "NGPUS=4\nbash <<'EOF'\ntorchrun --nproc_per_node=$NGPUS train.py\nEOF",
        "NGPUS=4\nsource env.sh\ntorchrun --nproc_per_node=$NGPUS train.py",
    ],
)
def test_a_launch_count_from_a_variable_not_known_there_stays_unknown(run_sh):
    assert _counts(run_sh) == [None]


@pytest.mark.parametrize(
    "run_sh",
    [
        'W=4\nif [ -n "$DEBUG" ]; then W=0; fi\npython train.py --workers $W',
        "W=4\nfor w in 0 1; do W=$w; done\npython train.py --workers $W",
    ],
)
def test_a_scripts_option_from_a_variable_set_in_a_branch_is_not_the_value_before_it(run_sh):
    # `--workers $W` read as the 4 set before the branch: a loader told it has 4 workers it may not have had
    assert _workers(f"#!/bin/bash\n{run_sh}\n") == [None]


def test_one_process_launched_by_a_variable_on_eight_gpus_is_unused_gpus():
    # torchrun's `--nproc_per_node=$NGPUS` was not known: seven idle GPUs read as uneven use of eight processes
    scripts = [("run.sh", "#!/bin/bash\nNGPUS=1\ntorchrun --nproc_per_node=$NGPUS train.py\n")]
    assert oversubscription(scripts=[*scripts, ("train.py", "import torch\n")]).sub_cause == "unused_gpus"


def test_eight_tasks_launched_by_a_variable_are_not_unused_gpus():
    scripts = [("run.sh", "#!/bin/bash\nNGPUS=8\nsrun -n $NGPUS python train.py\n")]
    assert oversubscription(scripts=[*scripts, ("train.py", "import torch\n")]).sub_cause == "uneven_use"


# --- 7. `bash -c '...'` inside a script: a child shell, read ---------------------------------------------------------


@pytest.mark.parametrize(
    ("run_sh", "expected"),
    [
        ("bash -c 'torchrun --nproc_per_node=8 train.py'", [(2, "torchrun", 8)]),
        ('cd /work && sh -ec "srun -n 4 python train.py"', [(2, "python", 4)]),
        (  # what the string exports ends with its shell; it has what the script exported before it
            "export SLURM_NTASKS=4\nbash -c 'export SLURM_NTASKS=2; srun python prepare.py'\nsrun python train.py",
            [(3, "python", 2), (4, "python", 4)],
        ),
        ("export NGPUS=4\nbash -lc 'torchrun --nproc_per_node=$NGPUS train.py'", [(3, "torchrun", 4)]),
        ("bash -c \"sh -c 'torchrun --nproc_per_node 2 train.py'\"", [(2, "torchrun", 2)]),
        ("srun -n 2 bash -c 'torchrun --nproc_per_node 2 train.py'", [(2, "torchrun", 4)]),  # once a task (section 9)
    ],
)
def test_a_c_string_in_a_script_is_read_as_a_child_shell(run_sh, expected):
    # a `-c` string inside a script was not read at all: its launch unseen
    assert launches(f"#!/bin/bash\n{run_sh}\n") == expected


def test_a_c_string_in_a_script_gives_its_script_options():
    assert _workers("#!/bin/bash\nbash -c 'python train.py --workers 0'\n") == [0]


def test_eight_tasks_launched_in_a_c_string_are_not_unused_gpus():
    scripts = [("run.sh", "#!/bin/bash\nbash -c 'srun -n 8 python train.py'\n"), ("train.py", "import torch\n")]
    assert oversubscription(scripts=scripts).sub_cause == "uneven_use"


# --- 8. a launch after a shell reserved word, and what a branch sets ------------------------------------------------


@pytest.mark.parametrize(
    ("run_sh", "expected"),
    [
        ('if [ -n "$X" ]; then srun -n 4 python train.py; fi', [(2, "python", 4)]),
        ('if [ -n "$X" ]; then true; else srun -n 4 python train.py; fi', [(2, "python", 4)]),
        ("for i in 1 2; do srun -n 4 python train.py; done", [(2, "python", 4)]),
        ("while true; do torchrun --nproc_per_node=8 train.py; done", [(2, "torchrun", 8)]),
        ("until false; do torchrun --nproc_per_node=8 train.py; done", [(2, "torchrun", 8)]),
        ('case "$M" in a) srun -n 4 python train.py;; esac', [(2, "python", 4)]),
        (
            'case "$M" in\n  a) srun -n 2 python a.py;;\n  *) srun -n 4 python b.py;;\nesac',
            [(3, "python", 2), (4, "python", 4)],
        ),
        (  # an `if` in a `case` item: its `fi` closes the `if`, and the next item is still the case's
            'case "$M" in\n  (a) if true; then srun -n 2 python a.py; fi;;\n  *) srun -n 4 python b.py;;\nesac',
            [(3, "python", 2), (4, "python", 4)],
        ),
        (
            "if a; then if b; then srun -n 2 python a.py; fi; fi\nN=4\nsrun -n $N python b.py",
            [(2, "python", 2), (4, "python", 4)],
        ),
        ("{ srun -n 4 python train.py; }", [(2, "python", 4)]),
        ("! srun -n 4 python train.py", [(2, "python", 4)]),
        ("time srun -n 4 python train.py", [(2, "python", 4)]),
        ("time -p srun -n 4 python train.py", [(2, "python", 4)]),
        ("if true; then time -v srun -n 4 python train.py; fi", [(2, "python", 4)]),  # GNU time's option, as before
        ("if srun -n 4 python train.py; then echo ok; fi", [(2, "python", 4)]),
    ],
)
def test_a_launch_after_a_reserved_word_is_read(run_sh, expected):
    # `then srun ...` was a command whose program is `then`: the launch was not seen at all
    assert launches(f"#!/bin/bash\n{run_sh}\n") == expected


def test_a_launch_after_a_reserved_word_gives_its_script_options():
    assert _workers('#!/bin/bash\nif [ -n "$X" ]; then python train.py --workers 0; fi\n') == [0]


def test_a_value_set_in_a_branch_is_not_known_to_a_launch_in_one_after_it():
    run_sh = 'NGPUS=4\nif [ -n "$BIG" ]; then NGPUS=8; fi\nfor i in 1; do torchrun --nproc_per_node=$NGPUS x.py; done'
    assert _counts(run_sh) == [None]


def test_eight_tasks_launched_in_a_branch_are_not_unused_gpus():
    scripts = [("run.sh", '#!/bin/bash\nif [ -n "$X" ]; then srun -n 8 python train.py; fi\n')]
    assert oversubscription(scripts=[*scripts, ("train.py", "import torch\n")]).sub_cause == "uneven_use"


@pytest.mark.parametrize(
    "run_sh",
    [
        'export SLURM_NTASKS=4\nif [ -n "$SMALL" ]; then\n  export SLURM_NTASKS=2\nfi\nsrun python train.py',
        'export SLURM_NTASKS=4\nif [ -n "$SMALL" ]; then export SLURM_NTASKS=2; fi\nsrun python train.py',
        'export SLURM_NTASKS=4\ncase "$SIZE" in\n  small) export SLURM_NTASKS=2 ;;\nesac\nsrun python train.py',
        "export SLURM_NTASKS=4\nfor n in 2; do\n  export SLURM_NTASKS=$n\ndone\nsrun python train.py",
        "export SLURM_NTASKS=4\nwhile false; do\n  export SLURM_NTASKS=2\ndone\nsrun python train.py",
    ],
)
def test_srun_input_variables_set_in_a_branch_are_not_known_after_it(run_sh):
    # the branch's `export SLURM_NTASKS=2` was taken as run: train.py's srun read as 2 tasks (or its line unseen, 4)
    assert _counts(run_sh) == [None]


def test_srun_input_variables_set_at_the_top_are_still_known():
    assert _counts('if [ -n "$X" ]; then echo x; fi\nexport SLURM_NTASKS=2\nsrun python train.py') == [2]


@pytest.mark.parametrize(
    ("run_sh", "processes"),
    [
        ("NGPUS=4\ntorchrun --nproc_per_node=${NGPUS:-1} train.py", 4),
        ("NGPUS=4\ntorchrun --nproc_per_node=${NGPUS-1} train.py", 4),
        ("NGPUS=4\nsrun -n ${NGPUS:-1} python train.py", 4),
        # not known: a variable the script did not set plainly, and Slurm's own, which Slurm sets when the job runs
        ("torchrun --nproc_per_node=${NGPUS:-1} train.py", None),
        ("SLURM_GPUS_ON_NODE=4\ntorchrun --nproc_per_node=${SLURM_GPUS_ON_NODE:-1} train.py", None),
        ("torchrun --nproc_per_node=${SLURM_GPUS_ON_NODE:-4} train.py", None),
    ],
)
def test_a_default_expansion_takes_the_value_the_script_set(run_sh, processes):
    # `${NGPUS:-1}` was never read: the count unknown though the script set NGPUS=4 just before
    assert _counts(run_sh) == [processes]


@pytest.mark.parametrize("header", ["setup()", "function setup", "setup ()"])
def test_a_function_whose_brace_is_on_the_next_line_ends_with_its_closing_brace(header):
    # the `{` on the next line counted a second level: every line after the function read as in a branch
    run_sh = f"{header}\n{{\n  echo hi\n}}\nNGPUS=4\ntorchrun --nproc_per_node=$NGPUS train.py"
    assert _counts(run_sh) == [4]


# --- 9. the job's command as a script line, subshells, `a|b)` patterns, `srun bash -c`, a branch's own exports ------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("if true; then srun -n 4 python train.py; fi", [("train.py", 4)]),
        ("for i in 1; do torchrun --nproc_per_node=4 t.py; done", [("t.py", 4)]),
        ("while true; do\n  torchrun --nproc_per_node=8 t.py\ndone", [("t.py", 8)]),
        ('case "$M" in a) srun -n 4 python train.py;; esac', [("train.py", 4)]),
        ("{ srun -n 4 python train.py; }", [("train.py", 4)]),
        ("bash -c 'if true; then srun -n 2 python train.py; fi'", [("train.py", 2)]),
        (  # what a branch exports is not known after it, as in a script
            'export SLURM_NTASKS=4; if [ -n "$X" ]; then export SLURM_NTASKS=2; fi; srun python train.py',
            [("train.py", None)],
        ),
    ],
)
def test_the_jobs_command_is_read_past_its_reserved_words(command, expected):
    # the job's command line was not read as a script's line: `then srun ...` was a command whose program is `then`
    # (its launch not seen), and a branch's export was taken as run for the srun after it
    assert command_launches(command) == expected


def test_eight_tasks_launched_in_a_branch_of_the_jobs_command_are_not_unused_gpus():
    command = 'if [ -n "$X" ]; then srun -n 8 python train.py; fi'
    assert oversubscription(command=command).sub_cause == "uneven_use"


@pytest.mark.parametrize(
    ("run_sh", "expected"),
    [
        ("( srun -n 4 python train.py )", [(2, "python", 4)]),
        ("(srun -n 4 python train.py)", [(2, "python", 4)]),
        ("(cd /work && srun -n 4 python train.py) > train.log 2>&1", [(2, "python", 4)]),
        (  # the subshell ends with its `)`: a plain variable after it is known again at the top
            "( srun -n 2 python a.py )\nN=4\nsrun -n $N python b.py",
            [(2, "python", 2), (4, "python", 4)],
        ),
        (  # what a subshell exports ends with it; in it, it is known
            "export SLURM_NTASKS=4\n( export SLURM_NTASKS=2; srun python a.py )\nsrun python b.py",
            [(3, "python", 2), (4, "python", 4)],
        ),
        (
            "export SLURM_NTASKS=4\n(\n  export SLURM_NTASKS=2\n  srun python a.py\n)\nsrun python b.py",
            [(5, "python", 2), (7, "python", 4)],
        ),
        ("N=4\n(\n  N=2\n)\nsrun -n $N python b.py", [(6, "python", 4)]),
        ("( if x; then srun -n 2 python a.py; fi )\nN=4\nsrun -n $N python b.py", [(2, "python", 2), (4, "python", 4)]),
    ],
)
def test_a_subshells_parentheses_are_no_words_and_what_it_sets_ends_with_it(run_sh, expected):
    # `( srun ... )` gave train.py a `)` argument and left every later line one level deep (read as in a branch);
    # `(srun ...)` ran a program `(srun`: the launch was not seen
    assert launches(f"#!/bin/bash\n{run_sh}\n") == expected


def test_a_subshells_closing_parenthesis_is_no_argument_of_its_script():
    evidence = extract_script_evidence([("run.sh", "#!/bin/bash\n( srun -n 4 python train.py --workers 0 )\n")])
    assert [f.detail["argv"][-2:] for f in evidence.of("shell_launch")] == [["--workers", "0"]]
    assert _workers("#!/bin/bash\n(python train.py --workers 0)\n") == [0]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("( srun -n 4 python train.py )", [("train.py", 4)]),
        ("(export SLURM_NTASKS=2; srun python a.py); srun python b.py", [("a.py", 2), ("b.py", None)]),
    ],
)
def test_a_subshell_in_the_jobs_command(command, expected):
    assert command_launches(command) == expected


@pytest.mark.parametrize(
    ("run_sh", "expected"),
    [
        ('case "$M" in\n  python|torchrun) srun -n 4 python train.py;;\nesac', [(3, "python", 4)]),
        ('case "$M" in python|torchrun) srun -n 4 python train.py;; esac', [(2, "python", 4)]),
        ('case "$M" in\n  a | b ) srun -n 4 python train.py;;\nesac', [(3, "python", 4)]),
        ('case "$M" in\n  (python|torchrun)\n    srun -n 4 python train.py;;\nesac', [(4, "python", 4)]),
        (  # the case still ends with its esac
            'case "$M" in\n  a|b|c ) srun -n 2 python a.py;;\nesac\nN=4\nsrun -n $N python b.py',
            [(3, "python", 2), (6, "python", 4)],
        ),
        ("nvidia-smi | tee gpus.log\nsrun -n 4 python train.py", [(3, "python", 4)]),  # a pipe outside a case
    ],
)
def test_a_case_pattern_of_several_alternatives_is_read_as_one(run_sh, expected):
    # `python|torchrun)` was read as a command `python` (a launch of unknown count) and a pattern `torchrun)`;
    # `a | b )` as a command `b ) srun ...`: the item's launch not seen
    assert launches(f"#!/bin/bash\n{run_sh}\n") == expected


@pytest.mark.parametrize(
    ("run_sh", "expected"),
    [
        ("srun -n 1 bash -c 'torchrun --nproc_per_node=4 train.py'", [(2, "torchrun", 4)]),
        ("srun -n 2 sh -c 'torchrun --nproc_per_node=4 train.py'", [(2, "torchrun", 8)]),
        ("srun -n 2 bash -lc 'cd /work && python train.py'", [(2, "python", 2)]),
        ("export NGPUS=4\nsrun -n 1 bash -c 'torchrun --nproc_per_node=$NGPUS train.py'", [(3, "torchrun", 4)]),
        ("nohup bash -c 'srun -n 4 python train.py' &", [(2, "python", 4)]),
    ],
)
def test_a_c_string_under_a_wrapper_is_read_as_the_command_it_wraps(run_sh, expected):
    # `srun bash -c '...'` runs the string in each task: its launch was not read at all
    assert launches(f"#!/bin/bash\n{run_sh}\n") == expected


def test_a_c_string_under_srun_in_the_jobs_command_is_read():
    command = "srun -n 2 bash -c 'torchrun --nproc_per_node=4 train.py'"
    assert command_launches(command) == [("train.py", 8)]
    assert _workers("#!/bin/bash\ntrue\n", "srun -n 2 sh -c 'python train.py --workers 0'") == [0]


def test_eight_processes_launched_through_srun_bash_c_are_not_unused_gpus():
    # the launch was not seen: seven idle GPUs read as unused, a fix for a launch the job did not make
    run_sh = "#!/bin/bash\nsrun -n 1 bash -c 'torchrun --nproc_per_node=8 train.py'\n"
    assert oversubscription(scripts=[("run.sh", run_sh), ("train.py", "import torch\n")]).sub_cause == "uneven_use"


def test_one_task_launching_one_process_through_srun_bash_c_is_still_unused_gpus():
    scripts = [("run.sh", "#!/bin/bash\nsrun -n 1 bash -c 'python train.py'\n"), ("train.py", "import torch\n")]
    assert oversubscription(scripts=scripts).sub_cause == "unused_gpus"


@pytest.mark.parametrize(
    ("run_sh", "processes"),
    [
        ("if x; then export SLURM_NTASKS=2; srun python t.py; fi", 2),
        ("if x; then\n  export SLURM_NTASKS=2\n  srun python t.py\nfi", 2),
        ("for i in 1 2; do export SLURM_NTASKS=2; srun python t.py; done", 2),
        ('case "$M" in\n  a|b)\n    export SLURM_NTASKS=2\n    srun python t.py;;\nesac', 2),
        ("if a; then export SLURM_NTASKS=2; if b; then srun python t.py; fi; fi", 2),  # in a branch in it
        # not known: another branch's, an inner branch's, another item's, after the branch
        ("export SLURM_NTASKS=4\nif x; then export SLURM_NTASKS=2; else srun python t.py; fi", None),
        ("export SLURM_NTASKS=4\nif x; then export SLURM_NTASKS=2; elif y; then srun python t.py; fi", None),
        ("if a; then if b; then export SLURM_NTASKS=2; fi; srun python t.py; fi", None),
        ('case "$M" in\n  a) export SLURM_NTASKS=2;;\n  b) srun python t.py;;\nesac', None),
        ("if x; then export SLURM_NTASKS=2; fi; srun python t.py", None),
        ("if x; then export SLURM_NTASKS=2; fi\nif y; then srun python t.py; fi", None),
    ],
)
def test_an_srun_input_variable_a_branch_exports_is_known_in_that_branch(run_sh, processes):
    # `then export SLURM_NTASKS=2; srun python t.py` ran t.py with 2 tasks; it was not known, as after the branch
    assert _counts(run_sh) == [processes]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("if x; then export SLURM_NTASKS=2; srun python t.py; fi", [("t.py", 2)]),
        ("if x; then export SLURM_NTASKS=2; else srun python t.py; fi", [("t.py", None)]),
    ],
)
def test_an_srun_input_variable_a_branch_of_the_jobs_command_exports_is_known_in_that_branch(command, expected):
    assert command_launches(command) == expected


# --- 10. a plain variable a branch sets, known later in that branch ----------------------------------------------


@pytest.mark.parametrize(
    ("run_sh", "processes"),
    [
        ('if [ -n "$BIG" ]; then NGPUS=8; torchrun --nproc_per_node=$NGPUS train.py; fi', 8),
        ('if [ -n "$BIG" ]; then\n  NGPUS=8\n  torchrun --nproc_per_node=$NGPUS train.py\nfi', 8),
        ('NGPUS=4\nif [ -n "$BIG" ]; then\n  NGPUS=8\n  torchrun --nproc_per_node "${NGPUS}" train.py\nfi', 8),
        ("for i in 1 2; do NGPUS=2; torchrun --nproc_per_node=$NGPUS train.py; done", 2),
        ('case "$M" in\n  a|b)\n    NGPUS=2\n    torchrun --nproc_per_node=$NGPUS train.py;;\nesac', 2),
        ("if a; then NGPUS=8; if b; then torchrun --nproc_per_node=$NGPUS train.py; fi; fi", 8),  # a branch in it
        ("if a; then\n  N=2\n  NGPUS=$N\n  torchrun --nproc_per_node=$NGPUS train.py\nfi", 2),  # from one it set
        ("if a; then N=2; srun -n $N python train.py; fi", 2),
        # not known: after the branch, in another arm or item, after an inner branch that sets it, set again
        ('NGPUS=4\nif [ -n "$BIG" ]; then NGPUS=8; fi; torchrun --nproc_per_node=$NGPUS train.py', None),
        ('if [ -n "$BIG" ]; then\n  NGPUS=8\nfi\ntorchrun --nproc_per_node=$NGPUS train.py', None),
        ("if a; then NGPUS=8; else torchrun --nproc_per_node=$NGPUS train.py; fi", None),
        ("if a; then\n  NGPUS=8\nelse\n  torchrun --nproc_per_node=$NGPUS train.py\nfi", None),
        ("if a; then NGPUS=8; elif b; then torchrun --nproc_per_node=$NGPUS train.py; fi", None),
        ('case "$M" in\n  a) NGPUS=8;;\n  b) torchrun --nproc_per_node=$NGPUS train.py;;\nesac', None),
        ("if a; then NGPUS=8; if b; then NGPUS=2; fi; torchrun --nproc_per_node=$NGPUS train.py; fi", None),
        ("if a; then\n  NGPUS=8\n  NGPUS=$(nproc)\n  torchrun --nproc_per_node=$NGPUS train.py\nfi", None),
        ("if a; then\n  NGPUS=8\n  source env.sh\n  torchrun --nproc_per_node=$NGPUS train.py\nfi", None),
        ("if a; then NGPUS=8; fi\nif b; then torchrun --nproc_per_node=$NGPUS train.py; fi", None),
        ("if a; then NGPUS=8; torchrun --nproc_per_node='$NGPUS' train.py; fi", None),  # single quotes: no value
        # set only where something else failed or succeeded, in a background job or a pipeline's subshell: not known
        ("if a; then A=1 || NGPUS=8; torchrun --nproc_per_node=$NGPUS train.py; fi", None),
        ("if a; then false && NGPUS=8; torchrun --nproc_per_node=$NGPUS train.py; fi", None),
        ("if a; then NGPUS=8 & torchrun --nproc_per_node=$NGPUS train.py; fi", None),
        ("if a; then NGPUS=8 | torchrun --nproc_per_node=$NGPUS train.py; fi", None),
    ],
)
def test_a_plain_variable_a_branch_sets_is_known_later_in_that_branch(run_sh, processes):
    # `then NGPUS=8; torchrun --nproc_per_node=$NGPUS` ran 8 processes; it was not known, as after the branch
    assert _counts(run_sh) == [processes]


def test_one_process_launched_by_a_variable_its_branch_set_on_eight_gpus_is_unused_gpus():
    # `then NGPUS=1; torchrun --nproc_per_node=$NGPUS ...` read as an unknown count: seven idle GPUs not told as unused
    run_sh = '#!/bin/bash\nif [ -n "$SMALL" ]; then\n  NGPUS=1\n  torchrun --nproc_per_node=$NGPUS train.py\nfi\n'
    scripts = [("run.sh", run_sh), ("train.py", "import torch\n")]
    assert oversubscription(scripts=scripts).sub_cause == "unused_gpus"


def test_a_scripts_option_from_a_variable_its_branch_set_is_read():
    run_sh = '#!/bin/bash\nif [ -n "$FAST" ]; then\n  W=8\n  python train.py --workers $W\nfi\n'
    assert _workers(run_sh) == [8]


# --- 11. a plain variable set earlier on the launch's own line ------------------------------------------------------


@pytest.mark.parametrize(
    ("run_sh", "processes"),
    [
        ("NGPUS=2\nNGPUS=4; torchrun --nproc_per_node=$NGPUS train.py", 4),  # 4 as bash runs it, never the 2 before
        ("NGPUS=4; torchrun --nproc_per_node=$NGPUS train.py", 4),
        ("NGPUS=4 && torchrun --nproc_per_node=$NGPUS train.py", 4),
        ("export NGPUS=4; srun -n ${NGPUS} python train.py", 4),
        ("N=2; NGPUS=$N; torchrun --nproc_per_node=$NGPUS train.py", 2),  # from one set before it on the line
        ("A=1 && NGPUS=4; torchrun --nproc_per_node=$NGPUS train.py", 4),  # after an assignment, which succeeds
        ("NGPUS=4; echo ready\ntorchrun --nproc_per_node=$NGPUS train.py", 4),  # and on the lines after
        ('NGPUS=4; if [ -n "$X" ]; then torchrun --nproc_per_node=$NGPUS train.py; fi', 4),  # in a branch after it
        ("if a; then NGPUS=8; fi; NGPUS=4; torchrun --nproc_per_node=$NGPUS train.py", 4),  # set again after the fi
        # not known: an environment prefix (for that command only, after its words are expanded), set only where
        # something else failed or succeeded, in a background job or a pipeline's subshell, not a plain value, set
        # again after it, `source`, a subshell's, a branch's, single-quoted
        ("NGPUS=4 torchrun --nproc_per_node=$NGPUS train.py", None),
        ("A=1 || NGPUS=8; torchrun --nproc_per_node=$NGPUS train.py", None),
        ("NGPUS=2\nA=1 || NGPUS=8; torchrun --nproc_per_node=$NGPUS train.py", None),
        ("cd /work && NGPUS=4; torchrun --nproc_per_node=$NGPUS train.py", None),
        ("NGPUS=4 & torchrun --nproc_per_node=$NGPUS train.py", None),
        ("NGPUS=4 | torchrun --nproc_per_node=$NGPUS train.py", None),
        ("NGPUS=$(nproc); torchrun --nproc_per_node=$NGPUS train.py", None),
        ("NGPUS=4; NGPUS=$(nproc); torchrun --nproc_per_node=$NGPUS train.py", None),
        ("NGPUS=4; read NGPUS; torchrun --nproc_per_node=$NGPUS train.py", None),
        ("NGPUS=4; source env.sh; torchrun --nproc_per_node=$NGPUS train.py", None),
        ("(NGPUS=4); torchrun --nproc_per_node=$NGPUS train.py", None),
        ("NGPUS=4; if a; then NGPUS=8; fi; torchrun --nproc_per_node=$NGPUS train.py", None),
        ("NGPUS=4; torchrun --nproc_per_node='$NGPUS' train.py", None),
        ("setup() { NGPUS=8; }\nNGPUS=4; setup; torchrun --nproc_per_node=$NGPUS train.py", None),
    ],
)
def test_a_plain_variable_set_earlier_on_the_launchs_line_is_known_as_on_a_line_of_its_own(run_sh, processes):
    # `NGPUS=4; torchrun --nproc_per_node=$NGPUS` ran 4 processes; it was not known, while the same in a branch
    # (`then NGPUS=8; torchrun ...`) and on two lines were
    assert _counts(run_sh) == [processes]


def test_an_environment_prefix_leaves_the_commands_words_the_value_before_it():
    # bash expands the command's words before the prefix `NGPUS=4` takes effect, for that command alone
    assert _counts("NGPUS=2\nNGPUS=4 torchrun --nproc_per_node=$NGPUS train.py") == [2]


def test_one_process_launched_by_a_variable_set_on_its_line_on_eight_gpus_is_unused_gpus():
    scripts = [("run.sh", "#!/bin/bash\nNGPUS=1; torchrun --nproc_per_node=$NGPUS train.py\n")]
    assert oversubscription(scripts=[*scripts, ("train.py", "import torch\n")]).sub_cause == "unused_gpus"


@pytest.mark.parametrize(
    ("run_sh", "workers"),
    [
        ("W=4\nW=0; python train.py --workers $W", [0]),  # 0 as bash runs it, not the 4 before
        ("W=0 && python train.py --workers $W", [0]),
        ("W=4\nA=1 || W=0; python train.py --workers $W", [None]),
    ],
)
def test_a_scripts_option_from_a_variable_set_earlier_on_its_line(run_sh, workers):
    assert _workers(f"#!/bin/bash\n{run_sh}\n") == workers


@pytest.mark.parametrize(
    ("run_sh", "expected"),
    [
        ('DATA=s3://b/x; python train.py --data-root "${DATA}"', [(23, "open", None, True)]),
        ("DATA=s3://b/x python train.py --data-root $DATA", []),  # a prefix: not the command's words'
        ("A=1 || DATA=s3://b/x; python train.py --data-root $DATA", []),
    ],
)
def test_a_remote_path_from_a_variable_set_earlier_on_its_line(run_sh, expected):
    # `DATA=s3://b/x; python train.py --data-root $DATA` read from s3, seen as no remote read
    assert [read for read in flag_reads(DATA_ROOT_FLAG, run_sh) if read[0] != 38] == expected


# --- 12. the job's command's plain variables, and one an `&&` chain sets ------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("NGPUS=4; torchrun --nproc_per_node=$NGPUS train.py", [("train.py", 4)]),
        ("NGPUS=4\ntorchrun --nproc_per_node=$NGPUS train.py", [("train.py", 4)]),  # a container's `-c` lines
        ("NGPUS=4 && torchrun --nproc_per_node=$NGPUS train.py", [("train.py", 4)]),
        ("export NGPUS=4; srun -n ${NGPUS} python train.py", [("train.py", 4)]),
        ("bash -c 'NGPUS=4; torchrun --nproc_per_node=$NGPUS train.py'", [("train.py", 4)]),
        ("cd /work && NGPUS=4 && torchrun --nproc_per_node=$NGPUS train.py", [("train.py", 4)]),
        ("if a; then NGPUS=8; torchrun --nproc_per_node=$NGPUS train.py; fi", [("train.py", 8)]),
        ("NGPUS=4; (torchrun --nproc_per_node=$NGPUS train.py)", [("train.py", 4)]),
        # not known, as in a script: a prefix, set only where something else failed or succeeded, on a later line
        # than an `&&` chain's, in a background job, not a plain value, single-quoted, a here-document's child shell
        ("NGPUS=4 torchrun --nproc_per_node=$NGPUS train.py", [("train.py", None)]),
        ("A=1 || NGPUS=8; torchrun --nproc_per_node=$NGPUS train.py", [("train.py", None)]),
        ("cd /work && NGPUS=4; torchrun --nproc_per_node=$NGPUS train.py", [("train.py", None)]),
        ("cd /work && NGPUS=4\ntorchrun --nproc_per_node=$NGPUS train.py", [("train.py", None)]),
        ("NGPUS=4 & torchrun --nproc_per_node=$NGPUS train.py", [("train.py", None)]),
        ("NGPUS=$(nproc); torchrun --nproc_per_node=$NGPUS train.py", [("train.py", None)]),
        ("NGPUS=4; torchrun --nproc_per_node='$NGPUS' train.py", [("train.py", None)]),
        ("bash <<'EOF'\nNGPUS=2\nEOF\ntorchrun --nproc_per_node=$NGPUS train.py", [("train.py", None)]),
        ("NGPUS=4\nbash <<'EOF'\ntorchrun --nproc_per_node=$NGPUS train.py\nEOF", [("train.py", None)]),
    ],
)
def test_a_plain_variable_the_jobs_command_sets_is_known_as_in_a_script(command, expected):
    # `NGPUS=4; torchrun --nproc_per_node=$NGPUS train.py` as the job's command read an unknown count: its plain
    # variables were not expanded at all, while the same line in a script read 4
    assert command_launches(command) == expected


def test_one_process_launched_by_a_variable_the_jobs_command_sets_on_eight_gpus_is_unused_gpus():
    command = "NGPUS=1; torchrun --nproc_per_node=$NGPUS train.py"
    assert oversubscription(command=command).sub_cause == "unused_gpus"


def test_an_option_from_a_variable_the_jobs_command_sets_is_read():
    assert _workers("#!/bin/bash\ntrue\n", "W=0; python train.py --workers $W") == [0]


@pytest.mark.parametrize(
    ("run_sh", "processes"),
    [
        # bash runs each command of an `&&` chain only where the one before it succeeded: those after an assignment
        # in it run only where it ran
        ("cd /work && NGPUS=4 && torchrun --nproc_per_node=$NGPUS train.py", [4]),
        ("NGPUS=2\ncd /work && NGPUS=4 && torchrun --nproc_per_node=$NGPUS train.py", [4]),
        ("cd /work && NGPUS=4 && nvidia-smi | tee log && torchrun --nproc_per_node=$NGPUS train.py", [4]),
        ("cd /work && NGPUS=4 && torchrun --nproc_per_node=$NGPUS train.py &", [4]),  # the chain in the background
        ("if a; then cd /work && NGPUS=8 && torchrun --nproc_per_node=$NGPUS train.py; fi", [8]),
        ("cd /work && NGPUS=4 && (torchrun --nproc_per_node=$NGPUS train.py)", [4]),  # a subshell has it too
        ("cd /work && NGPUS=4 && (NGPUS=2) && torchrun --nproc_per_node=$NGPUS train.py", [4]),  # not its 2
        ("NGPUS=4; (torchrun --nproc_per_node=$NGPUS train.py)", [4]),  # its launch was not seen (`(torchrun`)
        # not known: after a `||`, after the chain (a `;`, a later line: cd may have failed), after a command that
        # may set it again, not a plain value, an assignment after `||`, a chain in the background on a later line
        ("cd /work && NGPUS=4 || torchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("cd /work && NGPUS=4 && echo ok || torchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("cd /work || NGPUS=4 && torchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("cd /work && NGPUS=4 && echo ok; torchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("cd /work && NGPUS=4\ntorchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("NGPUS=2\ncd /work && NGPUS=4\ntorchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("cd /work && NGPUS=4 && read NGPUS && torchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("cd /work && NGPUS=4 && source env.sh && torchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("setup() { NGPUS=8; }\ncd /w && NGPUS=4 && setup && torchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("cd /work && NGPUS=$(nproc) && torchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("cd /work && NGPUS=4 | torchrun --nproc_per_node=$NGPUS train.py", [None]),
        ("NGPUS=4 && echo ok &\ntorchrun --nproc_per_node=$NGPUS train.py", [None]),  # set in the background's shell
        (
            "cd /w && NGPUS=4 && torchrun --nproc_per_node=$NGPUS a.py &\ntorchrun --nproc_per_node=$NGPUS b.py",
            [4, None],
        ),
    ],
)
def test_a_plain_variable_an_and_chain_sets_is_known_later_in_that_chain(run_sh, processes):
    # `cd /work && NGPUS=4 && torchrun --nproc_per_node=$NGPUS` ran 4 processes: read as unknown, as after a `;`
    assert _counts(run_sh) == processes


# --- 13. the job's command's `-c` strings and here-documents take its variables -------------------------------------


def _script_counts(text: str) -> list:
    return [count for _, _, count in launches(f"#!/bin/bash\n{text}\n")]


@pytest.mark.parametrize(
    ("command", "processes"),
    [
        ("export N=4; bash -c 'torchrun --nproc_per_node=$N train.py'", 4),
        ("export N=4\n/bin/bash -lc 'torchrun --nproc_per_node=$N train.py'", 4),  # a container's `-c` lines
        ("N=4; export N; sh -c 'torchrun --nproc_per_node=${N} train.py'", 4),
        ("cd /work && export N=4 && bash -c 'torchrun --nproc_per_node=$N train.py'", 4),  # set earlier in its chain
        ("if a; then export N=8; bash -c 'torchrun --nproc_per_node=$N train.py'; fi", 8),  # earlier in its branch
        ("N=8 bash -c 'torchrun --nproc_per_node=$N train.py'", 8),  # a prefix: in that shell's environment
        ("N=4\nbash <<EOF\ntorchrun --nproc_per_node=$N train.py\nEOF", 4),  # the command's shell expands the body
        ("export N=4\nbash <<'EOF'\ntorchrun --nproc_per_node=$N train.py\nEOF", 4),  # the child's, exported
        ("export N=4\nbash <<EOF\nN=2\ntorchrun --nproc_per_node=$N train.py\nEOF", 4),  # expanded before N=2 runs
        ("cd /w && N=4 && bash <<EOF\ntorchrun --nproc_per_node=$N train.py\nEOF", 4),
        # not known: not exported (the child's own N), exported only after it, escaped (the child expands it)
        ("N=4; bash -c 'torchrun --nproc_per_node=$N train.py'", None),
        ("bash -c 'torchrun --nproc_per_node=$N train.py'; export N=4", None),
        ("N=4\nbash <<EOF\ntorchrun --nproc_per_node=\\$N train.py\nEOF", None),
        ("cd /w && N=4 || bash <<EOF\ntorchrun --nproc_per_node=$N train.py\nEOF", None),
    ],
)
def test_a_c_string_or_here_document_of_the_jobs_command_takes_its_variables(command, processes):
    # `export N=4; bash -c 'torchrun --nproc_per_node=$N train.py'` as a job's command read an unknown count, while
    # the same lines in a script read 4: the command's `-c` strings and here-documents were read with no variables
    assert command_launches(command) == [("train.py", processes)]
    assert _script_counts(command) == [processes]  # as in a script


def test_one_process_launched_in_a_c_string_from_the_commands_variable_on_eight_gpus_is_unused_gpus():
    command = "export NGPUS=1\nexec bash -c 'torchrun --nproc_per_node=$NGPUS train.py'"
    assert oversubscription(command=command).sub_cause == "unused_gpus"


# --- 14. an `&&` chain's variable in the compound command that chain runs -------------------------------------------


@pytest.mark.parametrize(
    ("text", "processes"),
    [
        ('cd /w && N=4 && if [ -n "$X" ]; then torchrun --nproc_per_node=$N train.py; fi', 4),
        ("cd /w && N=4 && if a; then\n  torchrun --nproc_per_node=$N train.py\nfi", 4),
        ("cd /w && N=4 && for i in 1 2; do torchrun --nproc_per_node=$N train.py; done", 4),
        ("cd /w && N=4 && while a; do torchrun --nproc_per_node=$N train.py; done", 4),
        ('cd /w && N=4 && case "$M" in a) torchrun --nproc_per_node=$N train.py;; esac', 4),
        ("cd /w && N=4 && { cd x; torchrun --nproc_per_node=$N train.py; }", 4),
        ("cd /w && N=4 && ( cd x; torchrun --nproc_per_node=$N train.py )", 4),
        ("cd /w && N=4 && if a; then N=8; torchrun --nproc_per_node=$N train.py; fi", 8),  # set again in the arm
        ("cd /w && N=4 && if a; then N=8; else torchrun --nproc_per_node=$N train.py; fi", 4),  # in another arm
        ("cd /w && N=4 && if a; then if b; then torchrun --nproc_per_node=$N train.py; fi; fi", 4),
        ("cd /w && N=4 && if a; then :; fi && torchrun --nproc_per_node=$N train.py", 4),  # the chain goes on
        # not known: after `||`, after the compound command's `;`, set again in it (not plainly, in an arm before, by
        # `source`)
        ("cd /w && N=4 || if a; then torchrun --nproc_per_node=$N train.py; fi", None),
        ("cd /w && N=4 && if a; then :; fi; torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && if a; then N=$(nproc); torchrun --nproc_per_node=$N train.py; fi", None),
        ("cd /w && N=4 && if a; then N=8; fi && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && if a; then source env.sh; torchrun --nproc_per_node=$N train.py; fi", None),
    ],
)
def test_a_variable_an_and_chain_sets_is_known_in_the_compound_command_it_runs(text, processes):
    # `cd /w && N=4 && if ...; then torchrun --nproc_per_node=$N ...; fi` ran 4 processes where it ran: the chain
    # ended at the `;` before `then`, the count unknown
    assert _script_counts(text) == [processes]
    assert command_launches(text) == [("train.py", processes)]


# --- 15. a prefix assignment is its command's alone ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "processes"),
    [
        ("N=4; N=8 make data; torchrun --nproc_per_node=$N train.py", 4),
        ("N=4\nN=8 make data\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\nN=8 make data; torchrun --nproc_per_node=$N train.py", 4),
        ("N=4\nCUDA_VISIBLE_DEVICES=0 N=8 make data && torchrun --nproc_per_node=$N train.py", 4),
        ("cd /w && N=4 && N=8 make data && torchrun --nproc_per_node=$N train.py", 4),
        ("if a; then N=4; N=8 make data; torchrun --nproc_per_node=$N train.py; fi", 4),
        ("N=4\nif a; then N=8 make data; fi\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\nenv N=8 make data\ntorchrun --nproc_per_node=$N train.py", 4),
        # not known: a special builtin's prefix stays in a POSIX shell (dash's `sh`), a function's body's
        ("N=4; N=8 :; torchrun --nproc_per_node=$N train.py", None),
        ("N=4\nN=8 eval true\ntorchrun --nproc_per_node=$N train.py", None),
        ("f() { N=8 make data; N=2; }\nN=4\nf\ntorchrun --nproc_per_node=$N train.py", None),
    ],
)
def test_a_prefix_assignment_leaves_the_variable_as_it_was_after_its_command(text, processes):
    # `N=8 make data` sets N for prepare.py alone: the N=4 before it was taken as no longer known
    assert _script_counts(text) == [processes]
    assert command_launches(text) == [("train.py", processes)]


# --- 16. a script line's `-c` string starts with the variables where it runs -----------------------------------------


@pytest.mark.parametrize(
    ("text", "processes"),
    [
        ("export N=4; bash -c 'torchrun --nproc_per_node=$N train.py'; export N=8", 4),
        ("export N=4\nbash -c 'torchrun --nproc_per_node=$N train.py' && N=8", 4),
        ("bash -c 'torchrun --nproc_per_node=$N train.py'; export N=4", None),  # exported after it ran
        ("export N=4; bash -c 'torchrun --nproc_per_node=$N train.py'; unset N", 4),
    ],
)
def test_a_c_string_on_a_script_line_has_the_variables_where_it_runs(text, processes):
    # the child shell was made with the variables as at the end of its line: 8, and 4 where N was exported after it
    assert _script_counts(text) == [processes]
    assert command_launches(text) == [("train.py", processes)]


# --- 17. a function whose body is a subshell, `f() ( ... )`, on one line -------------------------------------------


@pytest.mark.parametrize("definition", ["f() ( srun -n 2 python a.py )", "f() (srun -n 2 python a.py)"])
def test_a_one_line_subshell_function_ends_with_its_closing_parenthesis(definition):
    # the function's level never closed: every later line read as in its body, so a variable set twice after it was
    # never known again (`N=2`, `N=4`: a function's variable, set where it is called)
    assert _script_counts(f"{definition}\nN=2\nN=4\nsrun -n $N python b.py") == [2, 4]
    assert command_launches(f"{definition}\nN=2\nN=4\nsrun -n $N python b.py") == [("a.py", 2), ("b.py", 4)]


def test_a_one_line_subshell_functions_launch_gives_its_script_options():
    # the subshell's `)` was taken for one of train.py's arguments
    assert command_launches("f() ( torchrun --nproc_per_node=2 train.py )") == [("train.py", 2)]
    assert _workers("#!/bin/bash\nf() ( python train.py --workers 0 )\nf\n") == [0]


# --- 18. `env -S 'bash -c "..."'`: the string's shell's `-c` string ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "env -S 'bash -c \"torchrun --nproc_per_node=4 train.py\"'",
        "/usr/bin/env -S 'sh -ec \"torchrun --nproc_per_node=4 train.py\"'",
        "srun -n 1 env -S 'bash -c \"torchrun --nproc_per_node=4 train.py\"'",
    ],
)
def test_a_c_string_env_s_runs_is_read(text):
    # env's string gave `bash -c "..."`, whose string was not read: no launch at all
    assert _script_counts(text) == [4]
    assert command_launches(text) == [("train.py", 4)]


@pytest.mark.parametrize(
    ("text", "processes"),
    [
        ("export N=4; env -S 'bash -c \"torchrun --nproc_per_node=${N} train.py\"'", 4),  # env's environment's N
        ("N=4; env -S 'bash -c \"torchrun --nproc_per_node=${N} train.py\"'", None),  # not exported: not env's
    ],
)
def test_a_variable_in_the_c_string_env_s_runs_is_its_environments(text, processes):
    assert _script_counts(text) == [processes]
    assert command_launches(text) == [("train.py", processes)]


def test_a_c_strings_srun_has_the_variables_its_shell_is_given():
    # `SLURM_NTASKS=2 bash -c '...'`: the string's srun runs in that environment, 2 tasks, not the allocation's 8
    script = "#!/bin/bash\n#SBATCH -n 8\nSLURM_NTASKS=2 bash -c 'srun python train.py'\n"
    assert launches(script) == [(3, "python", 2)]
    assert command_launches("sbatch -n 8 --wrap \"SLURM_NTASKS=2 bash -c 'srun python train.py'\"") == [("train.py", 2)]


# --- 19. `sbatch --wrap '...'` and `salloc ... bash -c '...'` take the variables exported before them ---------------


@pytest.mark.parametrize(
    ("command", "processes"),
    [
        ("export N=4; sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", 4),
        ("export N=4\nsbatch -N 1 --wrap='torchrun --nproc_per_node=${N} train.py'", 4),
        ("N=4 sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", 4),  # in sbatch's environment
        ("cd /w && export N=4 && sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", 4),
        ("export N=4; sbatch --export=ALL --wrap 'torchrun --nproc_per_node=$N train.py'", 4),
        ("export N=4; sbatch --export=N --wrap 'torchrun --nproc_per_node=$N train.py'", 4),  # named: passed on
        ("sbatch --export=N=4 --wrap 'torchrun --nproc_per_node=$N train.py'", 4),  # given its value
        ("export N=4; sbatch --wrap 'N=2; torchrun --nproc_per_node=$N train.py'", 2),  # the script sets its own
        ("export N=4; salloc -N 1 bash -c 'torchrun --nproc_per_node=$N train.py'", 4),
        ("export N=4; salloc -N 1 srun -n 1 bash -c 'torchrun --nproc_per_node=$N train.py'", 4),
        # not known: not exported (the batch script's shell does not have it), --export=NONE or another name alone
        ("N=4; sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4; sbatch --export=NONE --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4; sbatch --export NONE --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4; sbatch --export=M --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("sbatch --wrap 'torchrun --nproc_per_node=$N train.py'; export N=4", None),
        ("N=4; salloc -N 1 bash -c 'torchrun --nproc_per_node=$N train.py'", None),
    ],
)
def test_a_wrapped_or_allocated_string_takes_the_variables_exported_before_it(command, processes):
    # `export N=4; sbatch --wrap 'torchrun --nproc_per_node=$N ...'` ran 4 processes (sbatch passes the environment on
    # to the batch job by default, --export=ALL): the wrapped string was read with no variables, the count unknown
    assert command_launches(command) == [("train.py", processes)]


def test_an_exported_srun_variable_reaches_a_wrapped_srun_whatever_export_says():
    # sbatch(1), --export=NONE: "Only SLURM_* variables from the user environment will be defined"
    command = "export SLURM_NTASKS=2; sbatch -N 1 --export=NONE --wrap 'srun python train.py'"
    assert command_launches(command) == [("train.py", 2)]


def test_one_process_launched_in_a_wrapped_string_from_an_exported_variable_on_eight_gpus_is_unused_gpus():
    command = "export NGPUS=1; sbatch --wrap 'torchrun --nproc_per_node=$NGPUS train.py'"
    assert oversubscription(command=command).sub_cause == "unused_gpus"


# --- 20. a subshell an `&&` chain runs: what it sets first is known in it, and the chain's values after it ------------


@pytest.mark.parametrize(
    ("text", "processes"),
    [
        ("cd /w && N=4 && ( N=5; torchrun --nproc_per_node=$N train.py )", 5),
        ("cd /w && N=4 && (N=5; torchrun --nproc_per_node=$N train.py)", 5),
        ("cd /w || ( N=5; torchrun --nproc_per_node=$N train.py )", 5),  # wherever the subshell runs, N=5 ran first
        ("cd /w && N=4 && { N=5; torchrun --nproc_per_node=$N train.py; }", 5),
        ("cd /w && N=4 && (N=2) && torchrun --nproc_per_node=$N train.py", 4),  # the subshell's N=2 ended with it
        ("cd /w && N=4 && (cd x; N=2) && torchrun --nproc_per_node=$N train.py", 4),
        ("cd /w && N=4 && (cd x) && torchrun --nproc_per_node=$N train.py", 4),
        # not known: the subshell's value after it where the chain set none, after a `;`, in a pipeline's subshell
        ("cd /w && (N=2) && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && (N=2); torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && ( N=5 | torchrun --nproc_per_node=$N train.py )", None),
    ],
)
def test_a_subshell_an_and_chain_runs_sets_its_own_and_leaves_the_chains(text, processes):
    # `cd /w && N=4 && ( N=5; torchrun --nproc_per_node=$N ... )` ran 5 processes: the subshell's N=5, after the
    # chain's `&&`, was taken as made only where cd succeeded, the count unknown; and `(N=2) && torchrun ...$N` lost the
    # chain's 4
    assert _script_counts(text) == [processes]
    assert command_launches(text) == [("train.py", processes)]


# --- 21. the job's command's here-document bodies: a quoted body's own variables, quotes in an unquoted one ----------


@pytest.mark.parametrize(
    ("command", "processes"),
    [
        ("bash <<'EOF'\nN=4\ntorchrun --nproc_per_node=$N train.py\nEOF", 4),  # the child's own N
        ("bash <<'EOF'\nN=4; torchrun --nproc_per_node=$N train.py\nEOF", 4),
        ("export N=2\nbash <<'EOF'\nN=4\ntorchrun --nproc_per_node=$N train.py\nEOF", 4),
        ("cd /w && bash <<'EOF'\nN=4\ntorchrun --nproc_per_node=${N} train.py\nEOF", 4),
        ("N=4; bash <<EOF\ntorchrun --nproc_per_node='$N' train.py\nEOF", 4),  # the quotes are the body's text
        ('N=4; bash <<EOF\ntorchrun --nproc_per_node="$N" train.py\nEOF', 4),
        ('N=4; bash <<EOF\necho "don\'t"\ntorchrun --nproc_per_node=$N train.py\nEOF', 4),  # a lone quote: text
        # not known: set in a branch of the body, not plainly, after `||`; the body's N after it; `'$N'` in the
        # command's own words
        ("bash <<'EOF'\nif a; then N=4; fi\ntorchrun --nproc_per_node=$N train.py\nEOF", None),
        ("bash <<'EOF'\nN=$(nproc)\ntorchrun --nproc_per_node=$N train.py\nEOF", None),
        ("bash <<'EOF'\na || N=4\ntorchrun --nproc_per_node=$N train.py\nEOF", None),
        ("bash <<'EOF'\nN=4\nEOF\ntorchrun --nproc_per_node=$N train.py", None),
        ("N=4; torchrun --nproc_per_node='$N' train.py", None),
    ],
)
def test_a_here_document_body_of_the_jobs_command_is_read_as_a_script_reads_it(command, processes):
    # `bash <<'EOF'` with `N=4` then `torchrun --nproc_per_node=$N` in its body read an unknown count as the job's
    # command (the body's own assignments were never known), 4 in a script; and in an unquoted body `'$N'` was left
    # unexpanded, where bash expands it (single quotes are text there)
    assert command_launches(command) == [("train.py", processes)]
    assert _script_counts(command) == [processes]  # as in a script


# --- 22. the variables a `-c` string's shell is given are its environment, which the string may change ----------------


@pytest.mark.parametrize(
    ("text", "tasks"),
    [
        ("SLURM_NTASKS=2 bash -c 'export SLURM_NTASKS=4; srun python train.py'", 4),
        ("env SLURM_NTASKS=2 bash -c 'export SLURM_NTASKS=4; srun python train.py'", 4),
        ("SLURM_NTASKS=2 bash -c 'SLURM_NTASKS=4; srun python train.py'", 4),  # exported already: set again
        ("SLURM_NTASKS=2 bash -c 'unset SLURM_NTASKS; srun python train.py'", None),  # no count: Slurm's default
        ("SLURM_NTASKS=2 bash -c 'srun python train.py'", 2),  # as given
        ("env SLURM_NTASKS=2 bash -c 'cd /w && srun python train.py'", 2),
        ("SLURM_NTASKS=2 bash -c 'srun -n 4 python train.py'", 4),  # srun's own option
    ],
)
def test_a_c_strings_shell_starts_with_the_variables_it_is_given_and_may_set_them_again(text, tasks):
    # `SLURM_NTASKS=2 bash -c 'export SLURM_NTASKS=4; srun ...'` started 4 tasks: the given 2 was put on each of the
    # string's commands, over what the string itself exported
    assert command_launches(text) == [("train.py", tasks)]
    assert _script_counts(text) == [tasks]


# --- 23. a `{ ...; }` group an `&&` chain runs: what it sets for sure holds after its `}` in that chain ---------------


@pytest.mark.parametrize(
    ("text", "processes"),
    [
        ("cd /w && N=4 && { N=2; } && torchrun --nproc_per_node=$N train.py", 2),
        ("cd /w && N=4 && { cd x; N=2; } && torchrun --nproc_per_node=$N train.py", 2),
        ("cd /w && N=4 && { N=3; N=2; } && torchrun --nproc_per_node=$N train.py", 2),
        ("cd /w && N=4 && { cd x; } && torchrun --nproc_per_node=$N train.py", 4),  # not set in it: the chain's
        # not known: set in a branch of the group, or after `||` in it; after a `;`
        ("cd /w && N=4 && { if a; then N=2; fi; } && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && { a || N=2; } && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && { N=2; }; torchrun --nproc_per_node=$N train.py", None),
        # not 2: a pipeline runs the group in a subshell of its own, whose N=2 ends with it (the chain's 4, which the
        # group set again, is not kept either)
        ("cd /w && N=4 && { N=2; } | cat && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && a | { N=2; } && torchrun --nproc_per_node=$N train.py", None),
    ],
)
def test_a_group_an_and_chain_runs_leaves_what_it_sets_to_the_rest_of_the_chain(text, processes):
    # `cd /w && N=4 && { N=2; } && torchrun --nproc_per_node=$N ...` ran 2 processes (a `{ ...; }` group runs its
    # commands in this shell): the group's N=2 was taken as a branch's, and the count unknown
    assert _script_counts(text) == [processes]
    assert command_launches(text) == [("train.py", processes)]


# --- 24. sbatch's `--export` anywhere among its options, and the SBATCH_EXPORT it is run with ----------------------


@pytest.mark.parametrize(
    ("command", "processes"),
    [
        # not passed on: `--export=NONE` after `--wrap`, or after an option's value; SBATCH_EXPORT=NONE exported
        ("export N=4; sbatch --wrap 'torchrun --nproc_per_node=$N train.py' --export=NONE", None),
        ("export N=4; sbatch --wrap='torchrun --nproc_per_node=$N train.py' --export NONE", None),
        ("export N=4; sbatch -N 1 --export=NONE --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4; export SBATCH_EXPORT=NONE; sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4 SBATCH_EXPORT=NONE\nsbatch -N 1 --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4; SBATCH_EXPORT=NONE sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4; export SBATCH_EXPORT=M; sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        # passed on: the option wins over SBATCH_EXPORT, the last `--export` over those before it; SBATCH_EXPORT not
        # exported (sbatch does not see it) or naming N
        (
            "export N=4; export SBATCH_EXPORT=NONE; sbatch --export=ALL --wrap 'torchrun --nproc_per_node=$N train.py'",
            4,
        ),
        ("export N=4; sbatch --export=NONE --wrap 'torchrun --nproc_per_node=$N train.py' --export=ALL", 4),
        ("export N=4; SBATCH_EXPORT=NONE; sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", 4),
        ("export N=4; export SBATCH_EXPORT=N; sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", 4),
        ("export N=4; export SBATCH_EXPORT=ALL; sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", 4),
    ],
)
def test_sbatch_export_is_read_wherever_it_is_given_and_from_sbatch_export(command, processes):
    # `sbatch --wrap '...' --export=NONE` and an exported SBATCH_EXPORT=NONE (sbatch(1): the same as --export, which
    # wins) pass the wrapped string no N: it read the exported 4, `--export` being looked for only before `--wrap`
    # and before the first word not an option (`-N 1`'s 1), SBATCH_EXPORT not at all
    assert command_launches(command) == [("train.py", processes)]


def test_an_exported_srun_variable_reaches_a_wrapped_srun_under_sbatch_export_none():
    command = "export SLURM_NTASKS=2 SBATCH_EXPORT=NONE; sbatch -N 1 --wrap 'srun python train.py'"
    assert command_launches(command) == [("train.py", 2)]


# --- 25. a quoted here-document body's `&&` chains and subshells, as a script's -------------------------------------


@pytest.mark.parametrize(
    ("command", "processes"),
    [
        ("bash <<'EOF'\ncd /w && N=4 && torchrun --nproc_per_node=$N train.py\nEOF", 4),
        ("bash <<'EOF'\ncd /w && N=4 && cd x && torchrun --nproc_per_node=${N} train.py\nEOF", 4),
        ("export N=2\nbash <<'EOF'\ncd /w && N=4 && torchrun --nproc_per_node=$N train.py\nEOF", 4),
        ("bash <<'EOF'\n( N=4; torchrun --nproc_per_node=$N train.py )\nEOF", 4),
        ("bash <<'EOF'\n(N=4; torchrun --nproc_per_node=$N train.py)\nEOF", 4),
        ("bash <<'EOF'\nN=2\n( N=4 )\ntorchrun --nproc_per_node=$N train.py\nEOF", 2),  # the subshell's ends with it
        ("bash <<'EOF'\nN=2; ( N=4; ( N=5 ); torchrun --nproc_per_node=$N train.py )\nEOF", 4),
        ("bash <<'EOF'\ncd /w && N=4 && if a; then torchrun --nproc_per_node=$N train.py; fi\nEOF", 4),
        ("bash <<'EOF'\ncd /w && N=4 && if a; then :; fi && torchrun --nproc_per_node=$N train.py\nEOF", 4),
        # not known: after `||` or a `;` that follows the chain; the subshell's value after it; an unquoted body's
        # chain (its words are the command's to expand, before the body's shell sets N)
        ("bash <<'EOF'\ncd /w || N=4 && torchrun --nproc_per_node=$N train.py\nEOF", None),
        ("bash <<'EOF'\ncd /w && N=4; torchrun --nproc_per_node=$N train.py\nEOF", None),
        ("bash <<'EOF'\n( N=4 )\ntorchrun --nproc_per_node=$N train.py\nEOF", None),
        ("bash <<EOF\ncd /w && N=4 && torchrun --nproc_per_node=$N train.py\nEOF", None),
        ("bash <<'EOF'\ncd /w && N=4 && if a; then N=8; fi && torchrun --nproc_per_node=$N train.py\nEOF", None),
    ],
)
def test_a_quoted_here_document_bodys_chains_and_subshells_are_read_as_a_scripts(command, processes):
    # `bash <<'EOF'` with `cd /w && N=4 && torchrun --nproc_per_node=$N ...` ran 4 processes, as the same lines in a
    # script read: the body's child shell took only the values its plain lines set, the chain's and a subshell's not
    assert command_launches(command) == [("train.py", processes)]
    assert _script_counts(command) == [processes]  # as in a script


# --- 26. a `{ ...; }` group an `&&` chain runs where the chain set nothing before it; one a pipeline runs ------------


@pytest.mark.parametrize(
    ("text", "processes"),
    [
        ("cd /w && { N=2; } && torchrun --nproc_per_node=$N train.py", 2),
        ("cd /w && { cd x; N=2; } && torchrun --nproc_per_node=$N train.py", 2),
        ("{ N=2; } && torchrun --nproc_per_node=$N train.py", 2),
        ("cd /w && { N=2; } && cd x && torchrun --nproc_per_node=$N train.py", 2),
        # not known: set in a branch of the group or after `||` in it; after the group's `;`; a pipeline runs the
        # group, or an `if` or `case`, in a subshell of its own, whose values end with it
        ("cd /w && { if a; then N=2; fi; } && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && { a || N=2; } && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && { N=2; }; torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && { N=2; } | cat && torchrun --nproc_per_node=$N train.py", None),
        ("a | { N=2; } && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && if a; then N=2; fi | cat && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && a | if b; then N=2; fi && torchrun --nproc_per_node=$N train.py", None),
        ("cd /w && N=4 && case $M in a) N=2;; esac | cat && torchrun --nproc_per_node=$N train.py", None),
        # in the pipeline's subshell, its own values hold, as they are set
        ("cd /w && N=4 && a | { N=2; torchrun --nproc_per_node=$N train.py; }", 2),
        ("cd /w && N=4 && a | { torchrun --nproc_per_node=$N train.py; }", 4),
    ],
)
def test_a_group_an_and_chain_runs_leaves_its_values_to_the_chain_where_nothing_was_set_before(text, processes):
    # `cd /w && { N=2; } && torchrun --nproc_per_node=$N ...` ran 2 processes: the group's values were kept for the
    # rest of the chain only where the chain had set one before the group, else the count was unknown
    assert _script_counts(text) == [processes]
    assert command_launches(text) == [("train.py", processes)]


# --- 27. a quoted here-document body's `{ ...; }` groups and `if` / `case` branches, as a script's --------------------


@pytest.mark.parametrize(
    ("command", "processes"),
    [
        ("bash <<'EOF'\ncd /w && N=4 && { N=2; } && torchrun --nproc_per_node=$N train.py\nEOF", 2),
        ("bash <<'EOF'\ncd /w && { N=2; } && torchrun --nproc_per_node=$N train.py\nEOF", 2),
        ("bash <<'EOF'\n{ N=2; torchrun --nproc_per_node=$N train.py; }\nEOF", 2),
        ("bash <<'EOF'\nif a; then N=2; torchrun --nproc_per_node=$N train.py; fi\nEOF", 2),
        ("bash <<'EOF'\nif a; then\n  N=2\n  torchrun --nproc_per_node=$N train.py\nfi\nEOF", 2),
        ("bash <<'EOF'\ncase $M in a) N=2; torchrun --nproc_per_node=$N train.py;; esac\nEOF", 2),
        ("bash <<'EOF'\nN=4\nif a; then torchrun --nproc_per_node=$N train.py; fi\nEOF", 4),
        ("if a; then export N=2; bash <<'EOF'\ntorchrun --nproc_per_node=$N train.py\nEOF\nfi", 2),  # exported
        # not known: after the branch; the command's own plain value in a branch (the child does not have it); in a
        # pipeline
        ("bash <<'EOF'\nif a; then N=2; fi\ntorchrun --nproc_per_node=$N train.py\nEOF", None),
        ("bash <<'EOF'\nif a; then N=2; fi && torchrun --nproc_per_node=$N train.py\nEOF", None),
        ("if a; then N=2; bash <<'EOF'\ntorchrun --nproc_per_node=$N train.py\nEOF\nfi", None),
        ("bash <<'EOF'\ncd /w && N=4 && { N=2; } | cat && torchrun --nproc_per_node=$N train.py\nEOF", None),
    ],
)
def test_a_quoted_here_document_bodys_groups_and_branches_are_read_as_a_scripts(command, processes):
    # `bash <<'EOF'` with `if a; then N=2; torchrun --nproc_per_node=$N ...; fi` ran 2 processes, as the same lines in
    # a script read: in the job's command the body's compound commands kept none of the values they set
    assert command_launches(command) == [("train.py", processes)]
    assert _script_counts(command) == [processes]  # as in a script


# --- 28. sbatch's `--export` with an empty value: a list naming no variable ------------------------------------------


@pytest.mark.parametrize(
    ("command", "processes"),
    [
        # sbatch takes a value neither ALL nor NONE as a list of names: an empty one names none, SLURM_* alone passed
        ("export N=4; sbatch --export= --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4; sbatch --export '' --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4 SBATCH_EXPORT=; sbatch --wrap 'torchrun --nproc_per_node=$N train.py'", None),
        ("export N=4; sbatch --export=ALL --export= --wrap 'torchrun --nproc_per_node=$N train.py'", None),  # last
        ("export N=4 SBATCH_EXPORT=; sbatch --export=ALL --wrap 'torchrun --nproc_per_node=$N train.py'", 4),
        ("export N=4; sbatch --export= --export=ALL --wrap 'torchrun --nproc_per_node=$N train.py'", 4),
    ],
)
def test_an_empty_sbatch_export_passes_no_variable_of_the_submitting_shell(command, processes):
    assert command_launches(command) == [("train.py", processes)]


def test_an_empty_sbatch_export_still_passes_srun_variables():
    command = "export SLURM_NTASKS=2; sbatch --export= --wrap 'srun python train.py'"
    assert command_launches(command) == [("train.py", 2)]


# --- 29. a loop's body may run again: a value set later in it is not the one a pass after the first has -------------


@pytest.mark.parametrize(
    ("text", "processes"),
    [
        # not known: the first pass has 4, a later one 2 (or what the branch or `source` left)
        ("N=4; for i in 1 2; do torchrun --nproc_per_node=$N train.py; N=2; done", None),
        ("N=4; while a; do torchrun --nproc_per_node=$N train.py; N=2; done", None),
        ("N=4; until a; do torchrun --nproc_per_node=$N train.py; export N=2; done", None),
        ("cd /w && N=4 && for i in 1 2; do torchrun --nproc_per_node=$N train.py; N=2; done", None),
        ("N=4\nfor i in 1 2; do\n  torchrun --nproc_per_node=$N train.py\n  N=2\ndone", None),
        ("N=4\nwhile read x; do\n  torchrun --nproc_per_node=$N train.py\n  if a; then\n    N=2\n  fi\ndone < l", None),
        ("N=4\nfor i in 1 2; do\n  for j in 1; do :; done\n  torchrun --nproc_per_node=$N train.py\n  N=2\ndone", None),
        ("N=4\nfor i in 1 2; do\n  for j in 1; do\n    :\n  done\n  torchrun --nproc_per_node=$N t\n  N=2\ndone", None),
        ("N=4\nuntil a; do\n  torchrun --nproc_per_node=$N train.py\n  source env.sh\ndone", None),
        ("N=4\nfor i in 1 2; do\n  case $i in 1) N=2;; esac\n  torchrun --nproc_per_node=$N train.py\ndone", None),
        ("N=4\nfor N in 1 2; do\n  torchrun --nproc_per_node=$N train.py\ndone", None),
        ("bash <<'EOF'\nN=4\nfor i in 1 2; do torchrun --nproc_per_node=$N train.py; N=2; done\nEOF", None),
        # known: set before it and not in it, or set in the pass before it is read
        ("N=4\nfor i in 1 2; do\n  torchrun --nproc_per_node=$N train.py\ndone\nN=2", 4),
        ("N=4\nfor i in 1 2; do\n  for j in 1; do\n    :\n  done\n  torchrun --nproc_per_node=$N t.py\ndone\nN=2", 4),
        ("N=4; for i in 1 2; do N=2; torchrun --nproc_per_node=$N train.py; done", 2),
        ("N=4\nwhile a; do\n  N=2\n  torchrun --nproc_per_node=$N train.py\ndone", 2),
        ("bash <<'EOF'\nN=4\nfor i in 1 2; do torchrun --nproc_per_node=$N train.py; done\nEOF", 4),
    ],
)
def test_a_value_a_loop_sets_again_later_in_its_body_is_not_known_in_it(text, processes):
    # `N=4; for i in 1 2; do torchrun --nproc_per_node=$N train.py; N=2; done` read 4 processes: bash runs 4 in the
    # first pass, 2 in the second (the value before the loop was taken in the whole body)
    assert _script_counts(text) == [processes]
    assert [count for _, count in command_launches(text)] == [processes]


@pytest.mark.parametrize(
    ("text", "tasks"),
    [
        # not known: the first pass has 4, a later one 2 (or what the branch left)
        ("export SLURM_NTASKS=4; for i in 1 2; do srun python train.py; export SLURM_NTASKS=2; done", None),
        ("export SLURM_NTASKS=4\nfor i in 1 2; do\n  srun python train.py\n  export SLURM_NTASKS=2\ndone", None),
        (
            "export SLURM_NTASKS=4\nwhile a; do\n  if b; then export SLURM_NTASKS=2; fi\n  srun python train.py\ndone",
            None,
        ),
        (
            "if a; then export SLURM_NTASKS=4\n for i in 1 2; do srun python train.py; export SLURM_NTASKS=2; done\nfi",
            None,
        ),
        # known: not set in the loop, or set in the same pass before srun
        ("export SLURM_NTASKS=4\nfor i in 1 2; do\n  srun python train.py\ndone", 4),
        ("export SLURM_NTASKS=4\nfor i in 1 2; do\n  export SLURM_NTASKS=2\n  srun python train.py\ndone", 2),
        ("if a; then export SLURM_NTASKS=4\n  for i in 1 2; do srun python train.py; done\nfi", 4),
    ],
)
def test_an_srun_variable_a_loop_exports_again_later_in_its_body_is_not_known_in_it(text, tasks):
    # `export SLURM_NTASKS=4; for ...; do srun python train.py; export SLURM_NTASKS=2; done` read 4 tasks: bash's srun
    # starts 4 in the first pass, 2 in the second
    assert _script_counts(text) == [tasks]
    assert command_launches(text) == [("train.py", tasks)]


# --- 30. where bash knows the value after a group, in an `if`'s other arm, after a pipeline, in a loop -------------


@pytest.mark.parametrize(
    ("text", "processes"),
    [
        # a `{ ...; }` group runs in the shell itself: what it set for sure holds after its `}`
        ("N=4; { N=2; }; torchrun --nproc_per_node=$N train.py", 2),
        ("N=4; { N=2; }\ntorchrun --nproc_per_node=$N train.py", 2),
        ("N=4\n{\n  N=2\n}\ntorchrun --nproc_per_node=$N train.py", 2),
        ("{ N=2; }; torchrun --nproc_per_node=$N train.py", 2),
        # not for sure: in a branch of the group, after `||`; the group after `&&` or `||` may not run
        ("N=4; { a || N=2; }; torchrun --nproc_per_node=$N train.py", None),
        ("N=4; { if a; then N=2; fi; }; torchrun --nproc_per_node=$N train.py", None),
        ("N=4; a && { N=2; }; torchrun --nproc_per_node=$N train.py", None),
        ("N=4; a || { N=2; }\ntorchrun --nproc_per_node=$N train.py", None),
        ("N=4; { N=2; } &\ntorchrun --nproc_per_node=$N train.py", 4),  # a background job: a subshell
        # an `if`'s other arm: the arm that set it did not run
        ("N=4\nif a; then N=2; else torchrun --nproc_per_node=$N train.py; fi", 4),
        ("N=4\nif a; then\n  N=2\nelse\n  torchrun --nproc_per_node=$N train.py\nfi", 4),
        ("N=4\nif a; then N=2; elif b; then torchrun --nproc_per_node=$N train.py; fi", 4),
        ("N=4\nif a; then read N; else torchrun --nproc_per_node=$N train.py; fi", 4),
        # the condition runs before every arm; after the `fi`, either arm may have run; `case` may fall through (`;&`)
        ("N=4\nif N=2; then :; else torchrun --nproc_per_node=$N train.py; fi", None),
        ("N=4\nif a; then :; elif N=2; then :; else torchrun --nproc_per_node=$N train.py; fi", None),
        ("N=4\nif a; then N=2; else N=3; torchrun --nproc_per_node=$N train.py; fi", 3),
        ("N=4\nif a; then N=2; else b || N=3; torchrun --nproc_per_node=$N train.py; fi", None),
        ("N=4\nif a; then N=2; fi\ntorchrun --nproc_per_node=$N train.py", None),
        ("N=4\nif a; then N=2; else N=3; fi\ntorchrun --nproc_per_node=$N train.py", None),
        ("N=4\nif a; then N=2; elif b; then N=2; fi\ntorchrun --nproc_per_node=$N train.py", None),
        ("N=4\ncase $M in a) N=2;; *) torchrun --nproc_per_node=$N train.py;; esac", None),
        ("N=4\nif a; then if b; then N=2; else torchrun --nproc_per_node=$N train.py; fi; fi", None),
        # every arm set it the same, an `else` among them: known after the `fi`
        ("N=4\nif a; then N=2; else N=2; fi\ntorchrun --nproc_per_node=$N train.py", 2),
        ("if a; then N=2; elif b; then N=2; else N=2; fi; torchrun --nproc_per_node=$N train.py", 2),
        ("N=4\nif a; then N=2; else N=2; fi | cat\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\nb && if a; then N=2; else N=2; fi\ntorchrun --nproc_per_node=$N train.py", None),
        # a pipeline runs its parts in subshells (bash without lastpipe, the last part too): nothing they set is left
        ("N=4; { N=2; } | cat; torchrun --nproc_per_node=$N train.py", 4),
        ("N=4\n{ N=2; } | cat\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\nif a; then N=2; fi | cat\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\ncat x | { N=2; }\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\ncat x | while read l; do N=2; done\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\ncat x | while read N; do :; done\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\nfor i in 1 2; do N=2; done | cat\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\n{ N=2; } | cat && torchrun --nproc_per_node=$N train.py", 4),
        # a loop that sets it again to the value it had before it
        ("N=4; for i in 1 2; do torchrun --nproc_per_node=$N train.py; N=4; done", 4),
        ("N=4\nfor i in 1 2; do\n  torchrun --nproc_per_node=$N train.py\n  N=4\ndone", 4),
        ("N=4\nwhile a; do\n  torchrun --nproc_per_node=$N train.py\n  if b; then N=4; fi\ndone", 4),
        ("N=4\nfor i in 1 2; do :; N=4; done\ntorchrun --nproc_per_node=$N train.py", 4),
        ("N=4\nfor i in 1 2; do\n  torchrun --nproc_per_node=$N train.py\n  N=4\n  N=2\ndone", None),
        ("N=4\nfor i in 1 2; do\n  torchrun --nproc_per_node=$N train.py\n  N=$i\ndone", None),
        ('N=4\nfor i in 1 2; do\n  torchrun --nproc_per_node=$N train.py\n  N="4"\ndone', 4),  # the same value
    ],
)
def test_where_bash_knows_the_value_after_a_group_in_another_arm_after_a_pipeline_or_in_a_loop(text, processes):
    # `N=4; { N=2; }; torchrun ...$N` ran 2 processes, `N=4` then `if a; then N=2; else torchrun ...$N; fi` 4, and
    # `N=4; { N=2; } | cat; torchrun ...$N` 4: all were read as not known
    assert _script_counts(text) == [processes]
    assert [count for _, count in command_launches(text)] == [processes]


@pytest.mark.parametrize(
    ("text", "tasks"),
    [
        # a `-c` string's srun in a loop: as srun in the loop itself (section 29)
        ("export SLURM_NTASKS=4; for i in 1 2; do bash -c 'srun python train.py'; export SLURM_NTASKS=2; done", None),
        (
            "export SLURM_NTASKS=4\nfor i in 1 2; do\n  bash -c 'srun python train.py'\n  export SLURM_NTASKS=2\ndone",
            None,
        ),
        (
            "export SLURM_NTASKS=4\nfor i in 1 2; do\n  bash -c 'export SLURM_NTASKS=3; srun python train.py'\n"
            "  export SLURM_NTASKS=2\ndone",
            3,
        ),
        ("export SLURM_NTASKS=4\nfor i in 1 2; do\n  export SLURM_NTASKS=2\n  bash -c 'srun python train.py'\ndone", 2),
        ("export SLURM_NTASKS=4\nfor i in 1 2; do\n  bash -c 'srun python train.py'\ndone", 4),
    ],
)
def test_an_srun_variable_a_loop_exports_again_is_not_known_in_a_c_string_in_it(text, tasks):
    # `export SLURM_NTASKS=4; for ...; do bash -c 'srun python train.py'; export SLURM_NTASKS=2; done` read 4 tasks:
    # the loop's second pass starts 2 (a3e3e41 read srun so in the loop, not in a `-c` string there)
    assert _script_counts(text) == [tasks]
    assert command_launches(text) == [("train.py", tasks)]
