"""How a job's shell scripts and its command are read for launches (rules revision 10): a here-document's body is
data, not commands; `env -i` / `env -u` and `sudo -i` hand their command the environment they do; `--ntasks-per-gpu`
starts N training processes a GPU, which the loader rules count. Rules revision 11: `env -S STRING` runs the words
its string splits into, a shebang that runs a shell through env makes a shell script, and what a `bash <<EOF`
body exports ends with the child shell that runs it."""

from __future__ import annotations

import pytest

from tests.test_slurm_launches import launch_of, oversubscription
from tests.test_triage_edge_cases import case, run, series
from triage.evidence.scripts import command_code_facts, extract_script_evidence, split_command
from triage.guidance import guidance_for
from triage.taxonomy import Category


def launches(script: str, command: str = "") -> list[tuple[int, str, object]]:
    evidence = extract_script_evidence([("run.sh", script)], command=command)
    return [(f.line, f.detail["launcher"], f.detail.get("processes")) for f in evidence.of("shell_launch")]


# --- 1. here-documents ------------------------------------------------------------------------------------------

WRITES_A_SCRIPT = """#!/bin/bash
#SBATCH -n 8
cat <<EOF > next.sh
#!/bin/bash
#SBATCH -n 4
pip install -r requirements.txt
srun -n 4 python other.py
EOF
srun python train.py
"""


def test_a_here_documents_body_is_data_not_commands():
    # The body that `cat` writes to next.sh was read as the script's own lines: a `srun -n 4 python other.py` launch
    # (4 processes) and a pip install, on lines 6 and 7, neither of which this job runs
    evidence = extract_script_evidence([("run.sh", WRITES_A_SCRIPT)])
    assert [(f.line, f.detail.get("processes")) for f in evidence.of("shell_launch")] == [(9, 8)]
    assert evidence.of("shell_install") == []


@pytest.mark.parametrize(
    "opening",
    [
        "cat <<EOF > next.sh",
        "cat << EOF > next.sh",
        "cat <<'EOF' > next.sh",
        'cat <<"EOF" > next.sh',
        "cat <<\\EOF > next.sh",
        "cat > next.sh <<EOF",
        "cat>next.sh<<EOF",
        "tee next.sh >/dev/null <<EOF && chmod +x next.sh",
        "sbatch <<EOF",  # a batch script submitted from the here-document: another job's
        "python - <<EOF",  # Python reads it: no shell commands
        "ssh node2 bash <<EOF",  # another host's shell
        "cat <<EOF | sbatch",
    ],
)
def test_every_spelling_of_a_here_document_keeps_its_body_out(opening):
    script = f"#!/bin/bash\n{opening}\nsrun -n 4 torchrun --nproc_per_node 2 other.py\nEOF\nsrun -n 2 python train.py\n"
    found = [item for item in launches(script) if item[1] != "python" or item[0] != 2]
    assert found == [(5, "python", 2)]


def test_a_dash_here_document_ends_at_its_tab_indented_delimiter():
    script = (
        "#!/bin/bash\nif true; then\n\tcat <<-EOF > a.sh\n\tsrun -n 4 python other.py\n\tEOF\nfi\n"
        "srun -n 2 python t.py\n"
    )
    assert launches(script) == [(7, "python", 2)]
    # without the dash, a tab-indented `EOF` ends nothing: the rest of the script is the body (bash warns of it)
    script = "#!/bin/bash\ncat <<EOF > a.sh\n\tEOF\nsrun -n 2 python t.py\n"
    assert launches(script) == []


def test_a_here_documents_delimiter_is_its_whole_line():
    script = "#!/bin/bash\ncat <<EOF > a.sh\nEOF2\n EOF\nsrun -n 4 python other.py\nEOF\nsrun -n 2 python t.py\n"
    assert launches(script) == [(7, "python", 2)]
    # in an unquoted here-document a backslash-newline is removed first: `x\` then `EOF` is the line "xEOF"
    script = "#!/bin/bash\ncat <<EOF > a.sh\nx\\\nEOF\nsrun -n 4 python other.py\nEOF\nsrun -n 2 python t.py\n"
    assert launches(script) == [(7, "python", 2)]
    # in a quoted one it is itself: `x\` is a line, `EOF` ends the body
    script = "#!/bin/bash\ncat <<'EOF' > a.sh\nx\\\nEOF\nsrun -n 2 python t.py\n"
    assert launches(script) == [(5, "python", 2)]


def test_two_here_documents_on_one_line_are_read_one_after_the_other():
    script = (
        "#!/bin/bash\ncat <<A >a.sh; cat <<B >b.sh\nsrun python a.py\nA\nsrun python b.py\nB\nsrun -n 2 python t.py\n"
    )
    assert launches(script) == [(7, "python", 2)]


@pytest.mark.parametrize(
    "line",
    [
        "echo $((1 << 3))",  # an arithmetic shift
        "(( x = 1 << 3 ))",
        "cat <<< 'srun -n 4 python other.py'",  # a here-string: one word, no body
        "echo '<<EOF'",  # quoted
        "echo x # cat <<EOF",  # a comment
    ],
)
def test_what_is_no_here_document_opens_no_body(line):
    assert launches(f"#!/bin/bash\n{line}\nsrun -n 2 python t.py\nEOF\n") == [(3, "python", 2)]


@pytest.mark.parametrize(
    "opening",
    ["bash <<EOF", "bash -s <<'EOF'", "sh -ex <<EOF", "/bin/bash <<-EOF", "bash -s -- arg1 <<EOF", "bash << EOF 2>&1"],
)
def test_a_here_document_a_shell_reads_is_its_commands(opening):
    # `bash <<EOF` runs its body as commands (a shell with no script file and no -c reads them from standard input):
    # they are read as lines of the script where they stand
    script = f"#!/bin/bash\n#SBATCH -n 8\n{opening}\n\tsrun python train.py\nEOF\n"
    assert launches(script) == [(4, "python", 8)]


@pytest.mark.parametrize("opening", ["bash run.sh <<EOF", "bash -c 'cat' <<EOF", "srun bash <<EOF", "sudo bash <<EOF"])
def test_a_here_document_fed_to_a_script_or_a_wrapped_shell_is_data(opening):
    # a shell running a script file or a -c string reads its standard input as that program's data; a shell under
    # srun or sudo is left unread (which tasks, which environment: not known)
    script = f"#!/bin/bash\n{opening}\nsrun -n 4 python other.py\nEOF\nsrun -n 2 python t.py\n"
    assert [item for item in launches(script) if item[0] != 2] == [(5, "python", 2)]


@pytest.mark.parametrize("opening", ["bash <<EOF", "bash -s <<'EOF'", "sh <<-EOF"])
def test_what_a_shell_reading_a_here_document_exports_stays_in_that_shell(opening):
    # `bash <<EOF` runs its body in a child shell: its exports are that shell's and end with it. The srun after the
    # body took the body's SLURM_NTASKS=2 (2 tasks); the allocation's 8 are its own. The body still sees what the
    # script exported before it (SLURM_NTASKS_PER_NODE would not reach a bare srun past the export)
    script = (
        "#!/bin/bash\n#SBATCH -n 8\nexport SLURM_NTASKS=4\n"
        f"{opening}\nsrun python prepare.py\nexport SLURM_NTASKS=2\nsrun python shard.py\nEOF\n"
        "srun python train.py\n"
    )
    assert launches(script) == [(5, "python", 4), (7, "python", 2), (9, "python", 4)]


def test_a_jobs_command_with_a_here_document_reads_its_body_as_data():
    # a Kubernetes container's `bash -c` string that writes a config with a here-document, then launches
    command = "/bin/bash -c 'cat <<EOF > /tmp/hosts\nsrun -n 4 python other.py\nEOF\nsrun -n 2 python train.py'"
    assert [argv[0] for argv in split_command(command)] == ["cat", "srun"]
    (launch,) = command_code_facts(command)
    assert launch.detail["processes"] == 2


@pytest.mark.parametrize(
    "command",
    [
        "export SLURM_NTASKS=4\nbash <<'EOF'\nexport SLURM_NTASKS=2\nsrun python prepare.py\nEOF\nsrun python train.py",
        "export SLURM_NTASKS=4 && sh -s <<EOF\nexport SLURM_NTASKS=2\nsrun python prepare.py\nEOF\n"
        "srun python train.py",
        "/bin/bash -c 'export SLURM_NTASKS=4\nbash <<EOF\nexport SLURM_NTASKS=2\nsrun python prepare.py\nEOF\n"
        "srun python train.py'",
    ],
)
def test_what_a_here_document_in_the_jobs_command_exports_stays_in_its_shell(command):
    # The job's command, read as one list of commands, gave the srun after the body the body's SLURM_NTASKS=2: the
    # child shell's export ended with it, so train.py runs the 4 tasks the command exported before the body
    assert [(f.detail["argv"][-1], f.detail.get("processes")) for f in command_code_facts(command)] == [
        ("prepare.py", 2),
        ("train.py", 4),
    ]


def test_a_script_the_jobs_command_runs_after_a_here_document_has_the_commands_environment():
    command = "export SLURM_NTASKS=4\nbash <<EOF\nexport SLURM_NTASKS=2\nEOF\nbash run.sh"
    assert launches("#!/bin/bash\nsrun python train.py\n", command) == [(2, "python", 4)]


def test_a_here_document_writing_a_launch_script_is_no_uneven_use():
    # One busy GPU of eight, a job whose batch script writes (but does not run) an 8-task launch: it was read as
    # eight srun tasks, uneven use; the job runs one python, seven GPUs unused
    script = "#!/bin/bash\ncat <<'EOF' > multi.sh\n#!/bin/bash\nsrun -n 8 python train.py\nEOF\npython train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)])
    assert finding.sub_cause == "unused_gpus"
    assert [c.line for c in finding.code] in ([], [6])


# --- 2. env -i / env -u / env VAR=x ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "processes"),
    [
        # env(1): "-i, --ignore-environment: start with an empty environment"; its NAME=VALUE words then set it
        ("env -i srun -n 4 python train.py", 4),
        ("env -i srun python train.py", None),  # no SLURM_NTASKS, no allocation: srun's default, one task
        ("env -i SLURM_NTASKS=4 srun python train.py", 4),
        ("env --ignore-environment SLURM_NTASKS=4 srun python train.py", 4),
        ("env - SLURM_NTASKS=4 srun python train.py", 4),
        ("SLURM_NTASKS=2 env -i srun python train.py", None),  # what was set before env -i is gone
        ("/usr/bin/env -i PATH=/usr/bin:/bin srun -n 2 python train.py", 2),
        # env's other options before the command are its own: `-u NAME` unsets NAME, `-C DIR`, `-0`, `-v`
        ("env -u SLURM_NTASKS_PER_NODE srun python train.py", 8),
        ("env -C /scratch -v srun python train.py", 8),
        ("env --chdir=/scratch SLURM_NTASKS=4 srun python train.py", 4),
        # without -i, the script's environment and env's words
        ("env SLURM_NTASKS=4 srun python train.py", 4),
        ("env NCCL_DEBUG=INFO srun python train.py", 8),
    ],
)
def test_envs_options_are_read_as_env_reads_them(line, processes):
    # `env -i srun -n 4 python train.py` was no launch at all (its program was taken to be `-i`)
    launched = launch_of(f"#!/bin/bash\n#SBATCH -n 8\n{line}\n")
    assert launched.detail.get("processes") == processes


def test_an_env_whose_command_is_not_known_is_no_launch():
    # `--help` runs nothing; an `-S` string env refuses (an escape it does not know, a quote left open, a `$` that is
    # no `${NAME}`, a backslash at its end) runs nothing either: env exits with its usage error
    for line in (
        "env --help srun -n 4 python train.py",
        "env -S 'srun -n 4 python train.py \\q'",
        "env -S 'srun -n 4 \"python train.py'",
        "env -S 'srun -n $N python train.py'",
        "env -S 'srun -n 4 python train.py \\'",
    ):
        assert extract_script_evidence([("run.sh", f"#!/bin/bash\n{line}\n")]).of("shell_launch") == [], line


# --- 2b. env -S: the split string ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "processes"),
    [
        # env(1): "-S, --split-string=S  process and split S into separate arguments; used to pass multiple arguments
        # on shebang lines". The command inside was not read at all (no launch)
        ('env -S "srun -n 4 python train.py"', 4),
        ("env -S'srun -n 4 python train.py'", 4),
        ("env --split-string='srun -n 4 python train.py'", 4),
        ("env --split 'srun -n 4' python train.py", 4),  # the words after the string follow its own
        ("/usr/bin/env -S 'srun -n 4 python train.py'", 4),
        # its words are env's arguments again: options, NAME=VALUE words, then the command
        ("env -S 'SLURM_NTASKS=4 srun' python train.py", 4),
        ("env -S '-i srun python train.py'", None),  # `-i` inside empties the environment: no allocation
        ("env -i -S 'SLURM_NTASKS=2 srun python train.py'", 2),
        # its quoting and escapes (coreutils src/env.c, build_argv): quotes group, `\_` separates words outside
        # double quotes, a `#` at a word's start ends the string, `${NAME}` is env's environment (not known here)
        ("env -S 'srun\\_-n\\_4 python train.py'", 4),
        ("env -S 'srun \"-n\" 4 python train.py #-n 8'", 4),
        ("env -S 'srun -n ${N} python train.py'", None),
        ("env -S 'srun -n \\${N} python train.py'", None),
    ],
)
def test_env_s_splits_its_string_into_the_command_it_runs(line, processes):
    launched = launch_of(f"#!/bin/bash\n#SBATCH -n 8\n{line}\n")
    assert launched.detail.get("processes") == processes, line


def test_a_variable_set_after_bashs_time_is_still_no_program():
    # reading env's string as its arguments keeps the VAR=value words after bash's `time` out of the program's name
    assert launch_of("#!/bin/bash\ntime NCCL_DEBUG=INFO srun -n 4 python train.py\n").detail["processes"] == 4


def test_an_option_passed_through_env_s_is_read_by_the_script():
    # `env -S "python train.py --workers 0"`: the launch was not seen, so `num_workers=args.workers` kept its default 4
    script = (
        "import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--workers', type=int, default=4)\nargs = parser.parse_args()\n"
        "loader = DataLoader(dataset, num_workers=args.workers)\n"
    )
    for launch in ('env -S "python train.py --workers 0"', "env -S 'python -u' train.py --workers 0"):
        evidence = extract_script_evidence([("train.py", script), ("run.sh", f"#!/bin/bash\n{launch}\n")])
        (loader,) = evidence.of("dataloader")
        assert loader.detail["num_workers"] == 0, launch
    (loader,) = extract_script_evidence([("train.py", script)], command="env -S 'python3 -u train.py --workers 0'").of(
        "dataloader"
    )
    assert loader.detail["num_workers"] == 0


def test_env_s_under_srun_runs_its_string_in_each_task():
    # `srun -n 4 env -S "python train.py --workers 0"`: the string was taken for srun's program ('python train.py
    # --workers 0' its launcher) and its options never reached the script
    script = (
        "import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--workers', type=int, default=4)\nargs = parser.parse_args()\n"
        "loader = DataLoader(dataset, num_workers=args.workers)\n"
    )
    run_sh = '#!/bin/bash\nsrun -n 4 env -S "python train.py --workers 0"\n'
    evidence = extract_script_evidence([("train.py", script), ("run.sh", run_sh)])
    (launched,) = evidence.of("shell_launch")
    assert (launched.detail["launcher"], launched.detail.get("processes")) == ("python", 4)
    (loader,) = evidence.of("dataloader")
    assert loader.detail["num_workers"] == 0


def test_the_jobs_command_under_env_s_is_read():
    (launch,) = command_code_facts("env -S 'srun -n 4 python x.py'")
    assert launch.detail.get("processes") == 4


@pytest.mark.parametrize("shebang", ["#!/usr/bin/env -S bash -eu", "#!/usr/bin/env bash", "#!/usr/bin/env -S sh -e"])
def test_a_script_whose_shebang_runs_a_shell_through_env_is_read(shebang):
    # A script without a shell's suffix is read as one by its first line: `#!/bin/...` only, so one that starts its
    # shell through env (`-S` passing the shell its options, as a shebang's one argument cannot) was not read at all
    evidence = extract_script_evidence([("launch", f"{shebang}\nsrun -n 4 python train.py\n")])
    assert [f.detail.get("processes") for f in evidence.of("shell_launch")] == [4]


def test_a_shebang_that_runs_python_through_env_s_is_no_shell_script():
    text = "#!/usr/bin/env -S python3 -u\nimport os\nos.system('srun -n 4 python other.py')\n"
    assert extract_script_evidence([("prepare", text)]).of("shell_launch") == []


LOADER_SCRIPT = (
    "import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n"
    "parser.add_argument('--workers', type=int, default=4)\nargs = parser.parse_args()\n"
    "loader = DataLoader(dataset, num_workers=args.workers)\n"
)


@pytest.mark.parametrize(
    "shebang", ["#!/bin/python3", "#!/usr/bin/python3", "#!/usr/bin/env python3", "#!/usr/bin/env -S python3 -u"]
)
def test_a_script_whose_shebang_runs_python_is_read_as_python(shebang):
    # `#!/bin/...` made any script a shell script, `#!/bin/python3` too: its DataLoader was never seen (its lines read
    # as shell commands), nor the `--workers 0` its launch gives it; `#!/usr/bin/python3` was not read at all
    run_sh = "#!/bin/bash\nsrun -n 2 python -u train --workers 0\n"
    evidence = extract_script_evidence([("train", f"{shebang}\n{LOADER_SCRIPT}"), ("run.sh", run_sh)])
    assert (evidence.python_files, evidence.shell_files) == (1, 1)
    (loader,) = evidence.of("dataloader")
    assert (loader.path, loader.detail["num_workers"]) == ("train", 0)
    (launched,) = evidence.of("shell_launch")
    assert launched.path == "run.sh"


@pytest.mark.parametrize(
    "launch", ["./train --workers 0", "srun -n 2 ./train --workers=0", "nohup /home/u/train --workers 0 &"]
)
def test_a_python_script_run_by_its_shebang_takes_the_options_it_is_run_with(launch):
    # `./train --workers 0` runs the script by its `#!/usr/bin/python3`: that was no launch of it (python is not named),
    # so `num_workers=args.workers` kept its default 4
    evidence = extract_script_evidence(
        [("train", f"#!/usr/bin/python3\n{LOADER_SCRIPT}"), ("run.sh", f"#!/bin/bash\n{launch}\n")]
    )
    (loader,) = evidence.of("dataloader")
    assert loader.detail["num_workers"] == 0


def test_a_python_scripts_path_given_as_another_options_value_is_no_launch_of_it():
    evidence = extract_script_evidence(
        [("train", f"#!/usr/bin/python3\n{LOADER_SCRIPT}"), ("run.sh", "#!/bin/bash\npython main.py --mode train\n")]
    )
    (loader,) = evidence.of("dataloader")
    assert loader.detail["num_workers"] == 4


@pytest.mark.parametrize("shebang", ["#!/usr/bin/ksh", "#!/bin/sh -e", "#!/usr/bin/env zsh", "#! /bin/bash"])
def test_a_script_whose_shebang_runs_a_shell_is_read_as_one(shebang):
    evidence = extract_script_evidence([("launch", f"{shebang}\nsrun -n 4 python train.py\n")])
    assert [f.detail.get("processes") for f in evidence.of("shell_launch")] == [4]


def test_a_variable_env_unsets_is_not_known():
    # `env -u SLURM_NTASKS srun ...`: SLURM_NPROCS, which sbatch sets too, may still give srun its count: not known
    launched = launch_of("#!/bin/bash\n#SBATCH -n 8\nenv -u SLURM_NTASKS srun python train.py\n")
    assert launched.detail.get("processes") is None


def test_env_i_hands_a_script_it_runs_no_allocation():
    evidence = extract_script_evidence(
        [("run.sh", "#!/bin/bash\n#SBATCH -n 8\nenv -i bash inner.sh\n"), ("inner.sh", "srun python train.py\n")]
    )
    (launched,) = evidence.of("shell_launch")
    assert launched.detail.get("processes") is None


def test_the_jobs_command_under_env_i_is_read():
    (launch,) = command_code_facts("env -i SLURM_NTASKS=4 srun python x.py")
    assert launch.detail.get("processes") == 4
    (launch,) = command_code_facts('sbatch -n 8 --wrap "env -i srun python x.py"')
    assert launch.detail.get("processes") is None


def test_env_i_srun_is_uneven_use_of_its_own_tasks():
    # `env -i srun -n 8 python train.py` with one GPU busy: no launch was read (unused GPUs); srun starts 8 tasks
    finding = oversubscription(scripts=[("run.sh", "#!/bin/bash\nenv -i srun -n 8 python train.py\n")])
    assert finding.sub_cause == "uneven_use" and finding.numbers["srun_tasks"] == 8


# --- 4. sudo -i ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "processes"),
    [
        # sudo -i runs the command through the target user's login shell, the environment initialized whatever
        # env_reset says (sudoers(5), Command environment): srun's own options alone
        ("sudo -i srun python train.py", None),
        ("sudo -i srun -n 4 python train.py", 4),
        ("sudo --login -u alice srun -n 4 python train.py", 4),
        ("sudo -i SLURM_NTASKS=4 srun python train.py", 4),
    ],
)
def test_sudo_i_runs_its_command_in_a_login_environment(line, processes):
    launched = launch_of(f"#!/bin/bash\n#SBATCH -n 8\n{line}\n")
    assert launched.detail.get("processes") == processes


@pytest.mark.parametrize(
    "line",
    [
        # sudo refuses -i with -E / --preserve-env ("you may not specify both the -i and -E options") and with -s
        # (src/parse_args.c): a usage error, no command run. It was read as srun with the script's 8 tasks
        "sudo -iE srun python train.py",
        "sudo -E -i srun python train.py",
        "sudo -i --preserve-env srun python train.py",
        "sudo --login --preserve-env srun python train.py",
        "sudo -i -s srun python train.py",
    ],
)
def test_sudo_i_with_e_or_s_runs_nothing(line):
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n#SBATCH -n 8\n{line}\n")])
    assert evidence.of("shell_launch") == []


def test_sudo_i_keeps_the_variables_preserve_env_names():
    # --preserve-env=LIST is allowed with -i: sudo passes those variables on (parse_env_list)
    launched = launch_of("#!/bin/bash\n#SBATCH -n 8\nsudo -i --preserve-env=SLURM_NTASKS srun python train.py\n")
    assert launched.detail.get("processes") == 8


# --- 3. --ntasks-per-gpu: processes a GPU ---------------------------------------------------------------------


def _four_gpus_loading(script: str, cpu: float = 25.0):
    frame = series(120, lambda t, g: 30, gpus=4, mem=lambda t, g: 0.6, cpu=lambda t: cpu)
    _, result = run(120, frame, scripts=[case("no_workers_train.py"), ("run.sh", script)], gpu_count=4, cpu_count=32)
    return next(f for f in result.findings if f.category == Category.DATA_PREPROCESSING)


def test_tasks_per_gpu_are_the_training_processes_that_load_batches():
    # `--ntasks-per-gpu=2` on 4 GPUs starts 8 training processes, each loading its own batches at num_workers=0; the
    # loader rule counted one a GPU: "all that 4 training processes loading their own batches can use"
    script = "#!/bin/bash\n#SBATCH --gres=gpu:4 --ntasks-per-gpu=2\n#SBATCH -c 4\nsrun python train.py\n"
    finding = _four_gpus_loading(script)
    assert "about 8 cores busy: all that 8 training processes loading their own batches can use" in finding.summary
    assert finding.numbers["loading_processes"] == 8 and finding.numbers["tasks_per_gpu"] == 2
    # the lines the 8 processes come from are quoted beside the loader's: the #SBATCH line and the srun line
    assert [(c.path, c.line) for c in finding.code] == [("no_workers_train.py", 20), ("run.sh", 2), ("run.sh", 4)]
    guide = guidance_for(
        finding.category,
        finding.sub_cause,
        finding.numbers,
        gpu_hours=finding.gpu_hours,
        price_per_gpu_hour=None,
        currency="",
        job={"gpu_count": 4, "node_count": 1, "cpu_count": 32},
    )
    change = guide["change"]
    # 32 CPUs over 8 processes (it said 8 a process over 4 GPUs)
    assert "(2 training processes a GPU, `--ntasks-per-gpu=2`)" in change, change
    assert " 4 per training process" in change, change


def test_srun_ntasks_per_gpu_on_the_launch_line_counts_too():
    finding = _four_gpus_loading("#!/bin/bash\n#SBATCH --gres=gpu:4\nsrun --ntasks-per-gpu=2 python train.py\n")
    assert finding.numbers["loading_processes"] == 8


def test_one_task_a_gpu_is_one_loading_process_a_gpu():
    finding = _four_gpus_loading("#!/bin/bash\n#SBATCH --gres=gpu:4 --ntasks-per-gpu=1\nsrun python train.py\n")
    assert finding.numbers["loading_processes"] == 4 and finding.numbers.get("tasks_per_gpu") in (None, 1)
