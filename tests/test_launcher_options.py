"""A distributed launcher's own options read as its argument parser reads them (`_launcher_options`): torchrun,
deepspeed and `accelerate launch` parse theirs with argparse, so the last of a repeated option wins, a unique
prefix of a long option is that option (torchrun's and deepspeed's parsers; Accelerate's refuses prefixes since
0.29, `allow_abbrev=False`, where older releases took them), and a prefix of two option strings is refused
(Python 3.11's argparse exits even where both name one option: `--nproc` of `--nproc-per-node` and
`--nproc_per_node`): such a launch starts nothing the reader can count."""

from __future__ import annotations

import argparse
import re

import pytest

from tests.test_evidence_shell import assert_launch_reads
from tests.test_triage_edge_cases import run, series
from triage.evidence.scripts import command_code_facts, extract_script_evidence
from triage.taxonomy import Category


@pytest.mark.parametrize(
    ("launch", "processes", "sub_cause"),
    [
        # the last value of a repeated option wins, in either of its spellings
        ("torchrun --nproc_per_node 1 --nproc_per_node 8 train.py", 8, "uneven_use"),
        ("torchrun --nproc_per_node=8 --nproc-per-node 1 train.py", 1, "unused_gpus"),
        ("torchrun --nnodes 2 --nproc_per_node 1 --nnodes 1 train.py", 1, "unused_gpus"),
        ("python -m torch.distributed.launch --nproc_per_node 1 --nproc_per_node 4 train.py", 4, "uneven_use"),
        ("deepspeed --num_gpus 8 --num_accelerators 1 train.py", 1, "unused_gpus"),
        ("deepspeed --num_gpus 1 --num_gpus 4 train.py", 4, "uneven_use"),
        ("deepspeed --include localhost:0,1 -i localhost:0 train.py", 1, "unused_gpus"),
        ("accelerate launch --num_processes 1 --num_processes 8 train.py", 8, "uneven_use"),
        ("accelerate launch --num_processes 8 --num-processes=1 train.py", 1, "unused_gpus"),
        # mpirun is no argparse: a count given twice, differently, is not known
        ("mpirun -np 1 -np 8 python train.py", None, "uneven_use"),
        ("mpirun -np 1 -np 1 python train.py", 1, "unused_gpus"),
    ],
)
def test_the_last_value_of_a_repeated_launcher_option_wins(launch, processes, sub_cause):
    # `torchrun --nproc_per_node 1 --nproc_per_node 8 train.py` starts eight processes (argparse keeps the last
    # value), yet the first was read: an 8-GPU job so launched with seven GPUs idle was "unused GPUs" (one process)
    # rather than uneven use of the GPUs its eight processes share.
    assert_launch_reads(launch, processes, sub_cause)


@pytest.mark.parametrize(
    ("launch", "processes", "sub_cause"),
    [
        # a unique prefix of one option string is that option (torchrun's and deepspeed's parsers allow them)
        ("torchrun --nproc_per 8 train.py", 8, "uneven_use"),
        ("torchrun --nproc-per-n=1 --nnodes 1 train.py", 1, "unused_gpus"),
        ("torchrun --nproc_per_node 1 --nn 2 train.py", 2, "uneven_use"),
        ("deepspeed --num_g 1 train.py", 1, "unused_gpus"),
        ("deepspeed --num_acc 1 --num_n 1 train.py", 1, "unused_gpus"),
        ("deepspeed --num_gpus 1 --num_n=2 train.py", 2, "uneven_use"),
        ("deepspeed --inc localhost:0 train.py", 1, "unused_gpus"),
        ("deepspeed -ilocalhost:0,1 train.py", 2, "uneven_use"),  # a short option's value glued to it
        ("deepspeed --num_gpus 1 --host hosts train.py", None, "uneven_use"),  # --hostfile: every host in the file
        # a prefix of two option strings: Python 3.11's argparse exits ("ambiguous option"), even for two spellings
        # of one option; older torchrun releases had only --nproc_per_node. Not known either way
        ("torchrun --nproc 8 train.py", None, "uneven_use"),
        ("torchrun --nproc=1 train.py", None, "uneven_use"),
        ("torchrun --n 1 train.py", None, "uneven_use"),  # --nnodes, --nproc-per-node, --node-rank ...
        ("torchrun --nproc_per_node 1 --master 10.0.0.1 train.py", None, "uneven_use"),  # -addr or -port
        ("deepspeed --num 1 train.py", None, "uneven_use"),
        ("deepspeed --num_gpus 1 --no_ssh train.py", 1, "unused_gpus"),  # an option's whole name, not a prefix
        # accelerate launch refuses prefixes since 0.29 (allow_abbrev=False); older releases took them: not known
        ("accelerate launch --num_proc 1 train.py", None, "uneven_use"),
        ("accelerate launch --num_processes 1 --cp train.py", None, "uneven_use"),
        ("accelerate launch --num-processes 1 train.py", 1, "unused_gpus"),  # its documented hyphen spelling
    ],
)
def test_a_launcher_option_is_read_as_its_argparse_parser_reads_a_prefix(launch, processes, sub_cause):
    # `torchrun --nproc_per 8 train.py` starts eight processes (argparse takes a unique prefix), yet the count was
    # read from --nproc_per_node alone, so it was torchrun's default, one: "unused GPUs" rather than uneven use.
    # `torchrun --nproc 8 train.py` does not start at all under Python 3.11: it was one process too.
    assert_launch_reads(launch, processes, sub_cause)


def test_python_3_11_argparse_refuses_a_prefix_of_two_spellings_of_one_option():
    # What the reading above takes for argparse's behaviour, checked on this interpreter's argparse with
    # torchrun's two spellings of its count: the prefix of both exits, the prefix of one is that option, and the
    # last value given wins.
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--nnodes", default="1:1")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", default="1")
    with pytest.raises(SystemExit):
        parser.parse_args(["--nproc", "8"])
    assert parser.parse_args(["--nproc_per", "8"]).nproc_per_node == "8"
    assert parser.parse_args(["--nproc-per-node", "1", "--nproc_per_node=8"]).nproc_per_node == "8"


@pytest.mark.parametrize(
    ("launch", "stage"),
    [
        ("accelerate launch --use_deepspeed --zero_stage 2 --zero_stage 3 train.py", 3),
        ("accelerate launch --use_deepspeed --zero-stage 3 train.py", 3),
        ("accelerate launch --use_deepspeed --zero 3 train.py", None),  # a prefix: refused since 0.29
    ],
)
def test_accelerates_zero_flags_are_read_as_its_parser_reads_them(launch, stage):
    evidence = extract_script_evidence([("run.sh", f"#!/bin/bash\n{launch}\n")])
    assert [f.detail["stage"] for f in evidence.of("zero_config")] == ([stage] if stage else [])


def accelerate_config(distributed_type: str, num_processes: int | None = None) -> str:
    """An Accelerate config file as `accelerate config` writes it."""
    count = f"num_processes: {num_processes}\n" if num_processes is not None else ""
    return (
        "compute_environment: LOCAL_MACHINE\ndebug: false\n"
        f"distributed_type: {distributed_type}\ndowncast_bf16: 'no'\ngpu_ids: all\nmachine_rank: 0\n"
        f"main_training_function: main\nmixed_precision: bf16\nnum_machines: 1\n{count}use_cpu: false\n"
    )


EIGHT = accelerate_config("MULTI_GPU", 8)
ONE = accelerate_config("'NO'", 1)
DEFAULT = ".cache/huggingface/accelerate/default_config.yaml"


@pytest.mark.parametrize(
    ("files", "launch", "processes", "sub_cause"),
    [
        # --config_file: the count and the kind of launch are the file's where the line gives none
        ([("configs/acc.yaml", EIGHT)], "accelerate launch --config_file configs/acc.yaml train.py", 8, "uneven_use"),
        ([("configs/acc.yaml", ONE)], "accelerate launch --config_file configs/acc.yaml train.py", 1, "unused_gpus"),
        ([("acc.yaml", EIGHT)], "accelerate launch --config_file=/home/me/proj/acc.yaml train.py", 8, "uneven_use"),
        (
            [("ds.yaml", accelerate_config("DEEPSPEED", 4))],
            "accelerate launch --config_file ds.yaml t.py",
            4,
            "uneven_use",
        ),
        # the line's own count wins over the file's; a config of no distributed type runs one process whatever the
        # count (Accelerate's simple launcher), unless the line asks for a distributed launch
        (
            [("acc.yaml", accelerate_config("DEEPSPEED", 8))],
            "accelerate launch --config_file acc.yaml --num_processes 1 train.py",
            1,
            "unused_gpus",
        ),
        # MULTI_GPU with one process, as `--multi_gpu --num_processes 1`: every GPU in older releases
        ([("acc.yaml", EIGHT)], "accelerate launch --config_file acc.yaml --num_processes 1 t.py", None, "uneven_use"),
        ([("acc.yaml", ONE)], "accelerate launch --config_file acc.yaml --num_processes 8 train.py", 1, "unused_gpus"),
        (
            [("acc.yaml", ONE)],
            "accelerate launch --config_file acc.yaml --multi_gpu --num_processes 8 t.py",
            8,
            "uneven_use",
        ),
        # run by salloc in an allocation of its own: the same
        ([("acc.yaml", ONE)], "salloc -N 1 accelerate launch --config_file acc.yaml train.py", 1, "unused_gpus"),
        # without --config_file, the default one in the user's cache, where the job brought it
        ([(DEFAULT, EIGHT)], "accelerate launch train.py", 8, "uneven_use"),
        ([(DEFAULT, ONE)], "accelerate launch train.py", 1, "unused_gpus"),
        ([(DEFAULT, ONE)], "accelerate launch --config_file other.yaml train.py", None, "uneven_use"),
        # not known: a file the job did not bring, one it does not name, a config that gives no count
        ([("acc.yaml", ONE)], "accelerate launch train.py", None, "uneven_use"),
        ([("acc.yaml", ONE)], "accelerate launch --config_file one_gpu.yaml train.py", None, "uneven_use"),
        (
            [("acc.yaml", accelerate_config("MULTI_GPU"))],
            "accelerate launch --config_file acc.yaml t.py",
            None,
            "uneven_use",
        ),
        (
            [("acc.yaml", accelerate_config("XLA", 8))],
            "accelerate launch --config_file acc.yaml t.py",
            None,
            "uneven_use",
        ),
    ],
)
def test_accelerate_launch_takes_its_count_from_the_config_file_the_job_brought(files, launch, processes, sub_cause):
    # `accelerate launch --config_file configs/acc.yaml train.py` starts the config's num_processes (MULTI_GPU) or
    # one process (distributed_type NO), yet with the config among the job's files its count was not known: an
    # 8-GPU job so launched with one process and seven GPUs idle was "uneven use" of GPUs no process shares.
    assert_launch_reads(launch, processes, sub_cause, files=files)


def test_a_distributed_launch_by_its_accelerate_config_quotes_the_config():
    # The finding says why the launch is eight processes: it quotes the config's settings beside the launch line.
    frame = series(120, lambda t, g: 60 if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)
    files = [("configs/acc.yaml", EIGHT)]
    _, result = run(
        120, frame, gpu_count=8, scripts=files, command="accelerate launch --config_file configs/acc.yaml t.py"
    )
    (finding,) = [f for f in result.findings if f.category == Category.GPU_OVERSUBSCRIPTION]
    assert [(c.path, c.line, c.text) for c in finding.code] == [
        ("configs/acc.yaml", 10, "distributed_type: MULTI_GPU, num_processes: 8"),
        ("job command", 1, "accelerate launch --config_file configs/acc.yaml t.py"),
    ]


def test_the_job_page_quotes_the_accelerate_config_that_gave_the_launch_its_processes(client, operator):
    # On the job page, the finding's code lines say why the launch is eight processes: the config's settings, then
    # the command that reads it (before, only the command, whose line names no count).
    from django.urls import reverse

    from tests.factories import JobFactory
    from triage.models import Finding, JobTriage, RuleSet

    command = "accelerate launch --config_file configs/acc.yaml t.py"
    frame = series(120, lambda t, g: 60 if g == 0 else 0, gpus=8, mem=lambda t, g: 0.4 if g == 0 else 0.0)
    _, result = run(120, frame, gpu_count=8, scripts=[("configs/acc.yaml", EIGHT)], command=command)
    (finding,) = [f for f in result.findings if f.category == Category.GPU_OVERSUBSCRIPTION]
    job = JobFactory(command=command)
    triage = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    Finding.objects.create(result=triage, job=job, rule_set=triage.rule_set, category=finding.category,
                           sub_cause=finding.sub_cause, confidence=finding.confidence, summary=finding.summary,
                           gpu_hours=1.0, evidence=finding.evidence(), guidance={})  # fmt: skip
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    code = page.split("<summary>Code</summary>")[1].split("</details>")[0]
    rows = re.findall(r"<div>(.*?)</div>", code)
    assert len(rows) == 2
    assert "configs/acc.yaml:10" in rows[0] and "<code>distributed_type: MULTI_GPU, num_processes: 8</code>" in rows[0]
    # the option's dashes kept on the line of its word on a phone (guidance_format's option_heads)
    assert rows[1] == (
        '<span class="muted">the job\'s command</span> <code>accelerate launch <span class="opt">--config_file</span> '
        "configs/acc.yaml t.py</code>"
    )


@pytest.mark.parametrize(
    ("launch", "switch"),
    [
        ("accelerate launch --mixed_precision no train.py", "--mixed_precision no"),
        ("accelerate launch --mixed-precision=no --num_processes 8 train.py", "--mixed-precision no"),
        ("accelerate launch --mixed_precision bf16 --mixed_precision no train.py", "--mixed_precision no"),
        # the training script's own option of that name is the script's, not Accelerate's
        ("accelerate launch train.py --mixed_precision no", None),
        ("accelerate launch --num_processes 8 train.py --lr 1e-4 --mixed_precision=no", None),
        ("accelerate launch --mixed_precision no --mixed_precision bf16 train.py", None),
    ],
)
def test_accelerates_mixed_precision_is_its_own_option_before_the_script(launch, switch):
    # `accelerate launch train.py --mixed_precision no` hands the script its own option; it was read as Accelerate's
    # mixed precision turned off (a full_precision fact of the launcher's), whatever the script does with it.
    for facts in (
        extract_script_evidence([("run.sh", f"#!/bin/bash\n{launch}\n")]).of("full_precision"),
        [f for f in command_code_facts(launch) if f.kind == "full_precision"],
    ):
        assert [f.detail["switch"] for f in facts if f.detail.get("accelerate")] == ([switch] if switch else [])
