"""How a job's shell scripts and its command are read for launches (rules revision 10): a here-document's body is
data, not commands; `env -i` / `env -u` and `sudo -i` hand their command the environment they do; `--ntasks-per-gpu`
starts N training processes a GPU, which the loader rules count."""

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


def test_a_jobs_command_with_a_here_document_reads_its_body_as_data():
    # a Kubernetes container's `bash -c` string that writes a config with a here-document, then launches
    command = "/bin/bash -c 'cat <<EOF > /tmp/hosts\nsrun -n 4 python other.py\nEOF\nsrun -n 2 python train.py'"
    assert [argv[0] for argv in split_command(command)] == ["cat", "srun"]
    (launch,) = command_code_facts(command)
    assert launch.detail["processes"] == 2


def test_a_here_document_writing_a_launch_script_is_no_uneven_use():
    # One busy GPU of eight, a job whose batch script writes (but does not run) an 8-task launch: it was read as
    # eight srun tasks, uneven use; the job runs one python, seven GPUs unused
    script = "#!/bin/bash\ncat <<'EOF' > multi.sh\n#!/bin/bash\nsrun -n 8 python train.py\nEOF\npython train.py\n"
    finding = oversubscription(scripts=[("run.sh", script)])
    assert finding.sub_cause == "unused_gpus"
    assert [c.line for c in finding.code] in ([], [6])
