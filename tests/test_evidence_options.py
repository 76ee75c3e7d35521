"""The parsed command-line options a script's facts read through, whatever name holds them.

A DataLoader's `num_workers=args.workers`, a Trainer's `precision=args.precision` are the options' defaults (or, for
the remote reads, what the launch line gives): read so through `args` and `opt` only, while the remote reads knew any
name bound to `parser.parse_args()` and `self.args`, and the precision hand-off had a list of its own. One test of
"holds the parsed options" (`_PythonFacts.holds_options`) now serves them all.
"""

from __future__ import annotations

import pytest

from tests.test_triage_edge_cases import case, categories, run, series
from triage.evidence.scripts import extract_script_evidence
from triage.taxonomy import Category

_, NO_WORKERS = case("no_workers_train.py")
HELD_BY_SELF = NO_WORKERS.replace(
    """def main(dataset, model, optimizer):
    args = parse_args()
    loader = DataLoader(dataset, batch_size=256, shuffle=True, num_workers=args.workers, pin_memory=True)
""",
    """class Loaders:
    def __init__(self, hparams):
        self.hparams = hparams

    def train(self, dataset):
        return DataLoader(dataset, batch_size=256, shuffle=True, num_workers=self.hparams.workers, pin_memory=True)


def main(dataset, model, optimizer):
    hparams = parse_args()
    loader = Loaders(hparams).train(dataset)
""",
)


@pytest.mark.parametrize(
    ("script", "line"),
    [
        (NO_WORKERS, 20),
        (NO_WORKERS.replace("args = parse_args()", "opts = parse_args()").replace("args.workers", "opts.workers"), 20),
        (HELD_BY_SELF, 23),
    ],
)
def test_a_loader_without_workers_is_found_whatever_name_holds_the_options(script, line):
    # `opts = parse_args(); DataLoader(..., num_workers=opts.workers)` and `self.hparams.workers` (self.hparams =
    # hparams, hparams = parse_args()) were an unknown number of workers: no finding, where `args.workers` had one.
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6, cpu=lambda t: 7.0)
    _, result = run(120, frame, scripts=[("train.py", script)], cpu_count=16)
    assert categories(result) == {Category.DATA_PREPROCESSING}
    (finding,) = result.findings
    assert finding.sub_cause == "no_workers" and [c.line for c in finding.code] == [line]


PRECISION_FROM_OPTIONS = """import argparse

import lightning as L
from transformers import TrainingArguments


class Finetune:
    def __init__(self, hparams):
        self.hparams = hparams

    def arguments(self):
        return TrainingArguments(output_dir="out", bf16=self.hparams.bf16)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", default="bf16-mixed")
    parser.add_argument("--bf16", action="store_true")
    hparams = parser.parse_args()
    trainer = L.Trainer(precision=hparams.precision, devices=8)
    return trainer, Finetune(hparams).arguments()
"""


def test_precision_read_from_options_under_any_name_is_their_default_or_the_command_lines():
    # `L.Trainer(precision=hparams.precision)` (default bf16-mixed) was precision "from a variable", to be settled by
    # a config file, and so was `bf16=self.hparams.bf16`, which a flag sets.
    evidence = extract_script_evidence([("train.py", PRECISION_FROM_OPTIONS)])
    assert [(f.line, f.detail["dtype"]) for f in evidence.of("mixed_precision")] == [(20, "bf16")]
    assert [(f.line, f.detail["source"], f.detail["why"]) for f in evidence.of("precision_elsewhere")] == [
        (12, "flags", '`return TrainingArguments(output_dir="out", bf16=self.hparams.bf16)` sets it from a '
         "command-line flag"),
    ]  # fmt: skip


CONFIG_NOT_OPTIONS = """import argparse

from omegaconf import OmegaConf
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=8)
parser.add_argument("--config", default="conf.yaml")
args = parser.parse_args()
cfg = OmegaConf.load(args.config)
loader = DataLoader(dataset, batch_size=cfg.batch_size, num_workers=cfg.workers)
"""


def test_a_config_object_named_cfg_is_no_parsed_options_unless_bound_to_them():
    # `cfg` was read as the parsed options wherever it was used: a config's `cfg.workers` took --workers' default.
    (loader,) = extract_script_evidence([("train.py", CONFIG_NOT_OPTIONS)]).of("dataloader")
    assert loader.detail["num_workers"] is None
    parsed = CONFIG_NOT_OPTIONS.replace("cfg = OmegaConf.load(args.config)", "cfg = parser.parse_args()")
    (loader,) = extract_script_evidence([("train.py", parsed)]).of("dataloader")
    assert loader.detail["num_workers"] == 8


@pytest.mark.parametrize(
    ("binding", "source"),
    [
        ("opts = parser.parse_args()", "flags"),
        ("opts, _ = parser.parse_known_args()", "flags"),
        ("opts = OmegaConf.load('conf.yaml')", "config"),
    ],
)
def test_a_precision_setting_is_the_command_lines_where_what_it_reads_holds_the_options(binding, source):
    # `bf16=opts.bf16` was a command-line flag whatever `opts` held (a config loaded from YAML too); now `opts` is the
    # options where it is bound to them, as for every other fact. absl's FLAGS (below) is the command line's.
    script = (
        "import argparse\nfrom omegaconf import OmegaConf\nfrom transformers import TrainingArguments\n"
        f"parser = argparse.ArgumentParser()\nparser.add_argument('--bf16', action='store_true')\n{binding}\n"
        "arguments = TrainingArguments(output_dir='out', bf16=opts.bf16)\n"
        "absl_arguments = TrainingArguments(output_dir='out', fp16=FLAGS.fp16)\n"
    )
    facts = extract_script_evidence([("train.py", script)]).of("precision_elsewhere")
    handed = [f.detail["source"] for f in facts if f.text.startswith(("arguments", "absl_arguments"))]
    assert handed == [source, "flags"]


SWITCHES = """import argparse

import torch
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--pin-mem", action="store_true")
parser.add_argument("--no-persistent", dest="persistent", action="store_false")
parser.add_argument("--prefetch", action=argparse.BooleanOptionalAction)
parser.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True)
args = parser.parse_args()
loader = DataLoader(dataset, batch_size=64, num_workers=8, pin_memory=args.pin_mem,
                    persistent_workers=args.persistent, prefetch_factor=args.prefetch, shuffle=args.shuffle)
"""


def test_a_switch_options_default_is_argparses():
    # `add_argument("--pin-mem", action="store_true")` gave no default at all, so `pin_memory=args.pin_mem` was an
    # unknown value; argparse makes it False (store_false True; BooleanOptionalAction None unless a default is given).
    (loader,) = extract_script_evidence([("train.py", SWITCHES)]).of("dataloader")
    assert (loader.detail["pin_memory"], loader.detail["persistent_workers"]) == (False, True)
    assert loader.detail["prefetch_factor"] is None


AMP = """import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--amp", action="store_true"{default})
args = parser.parse_args()
with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
    loss = model(batch)
"""


@pytest.mark.parametrize("default", ["", ", default=False"])
@pytest.mark.parametrize(
    ("launch", "precision"),
    [(None, None), ("python train.py --epochs 3", "fp32"), ("python train.py --amp", "mixed")],
)
def test_precision_from_a_switch_is_the_command_lines_whether_or_not_its_default_is_written(default, launch, precision):
    # A precision setting read from a switch (`autocast(enabled=args.amp)`, `--amp` a store_true) is what the job's
    # command line makes it: unknown with no launch line seen, fp32 or mixed with one. Written with `default=False`
    # it was fp32 even unseen (the default taken for the command line), so the same switch read two ways.
    scripts = [("train.py", AMP.format(default=default))]
    if launch:
        scripts.append(("run.sh", f"#!/bin/bash\n{launch}\n"))
    (fact,) = extract_script_evidence(scripts[:1]).of("precision_elsewhere")
    assert (fact.line, fact.detail["source"]) == (8, "flags")
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.93)
    _, result = run(120, frame, scripts=scripts)
    (finding,) = [f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND]
    assert finding.numbers["precision"] == precision


@pytest.mark.parametrize(
    ("workers", "known"),
    [
        ("4 if use_cuda else 0", 4),  # use_cuda = torch.cuda.is_available(): the job has GPUs
        ("0 if not torch.cuda.is_available() else 6", 6),
        ('0 if device == "cpu" else 6', 6),
        ("args.workers if args.device == 'cuda' else 0", 8),
        ("0 if args.debug else args.workers", 8),  # --debug a store_true: off unless given
        ("0 if args.smoke_test else 8", 8),  # a debug run's switch, not an option here: the real run's branch
        ("8 if fast else 8", 8),
        ("8 if fast else 2", None),  # a condition not known, values that differ: unknown
    ],
)
def test_a_conditional_expression_is_the_branch_a_gpu_job_runs(workers, known):
    # `num_workers=4 if use_cuda else 0` was an unknown number of workers, whatever the condition.
    script = (
        "import argparse\nimport torch\nfrom torch.utils.data import DataLoader\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--workers', type=int, default=8)\n"
        "parser.add_argument('--debug', action='store_true')\nparser.add_argument('--device', default='cuda')\n"
        "args = parser.parse_args()\nuse_cuda = torch.cuda.is_available()\n"
        f"loader = DataLoader(dataset, batch_size=64, num_workers={workers}, pin_memory=True)\n"
    )
    (loader,) = extract_script_evidence([("train.py", script)]).of("dataloader")
    assert loader.detail["num_workers"] == known


def test_a_loader_without_workers_on_the_gpu_branch_is_found():
    # `num_workers=args.workers if torch.cuda.is_available() else 2` with --workers 0: the GPU job loads on one core
    # (it was an unknown number of workers: no finding).
    script = NO_WORKERS.replace(
        "num_workers=args.workers,", "num_workers=args.workers if torch.cuda.is_available() else 2,"
    )
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6, cpu=lambda t: 7.0)
    _, result = run(120, frame, scripts=[("train.py", script)], cpu_count=16)
    assert categories(result) == {Category.DATA_PREPROCESSING}
    assert result.findings[0].sub_cause == "no_workers"


def test_a_precision_setting_whose_condition_reads_a_switch_is_the_command_lines():
    # `bf16=True if args.bf16 else False` reads the --bf16 switch as `bf16=args.bf16` does: not its default's fp32.
    script = (
        "import argparse\nfrom transformers import TrainingArguments\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--bf16', action='store_true')\nargs = parser.parse_args()\n"
        "arguments = TrainingArguments(output_dir='out', bf16=True if args.bf16 else False)\n"
    )
    evidence = extract_script_evidence([("train.py", script)])
    assert [f.detail["source"] for f in evidence.of("precision_elsewhere")] == ["flags"]
    assert evidence.of("full_precision") == []


WALRUS_LOADER = """import logging

import torch
from torch.utils.data import DataLoader

log = logging.getLogger(__name__)


def main(train_set, val_set, model, optimizer):
    val_loader = DataLoader(val_set, batch_size=512, num_workers=0)
    {bind}
    for inputs, targets in {iterate}:
        loss = torch.nn.functional.cross_entropy(model(inputs.cuda(non_blocking=True)), targets.cuda())
        loss.backward()
        optimizer.step()
    return val_loader
"""
TRAIN_LOADER = "DataLoader(train_set, batch_size=256, shuffle=True, num_workers=8, pin_memory=True)"


@pytest.mark.parametrize(
    ("bind", "iterate"),
    [
        (f"log.info('%d batches an epoch', len(train_loader := {TRAIN_LOADER}))", "train_loader"),
        ("pass", f"(train_loader := {TRAIN_LOADER})"),
        (f"train_loader: DataLoader = {TRAIN_LOADER}", "train_loader"),
    ],
)
def test_a_loader_bound_by_a_walrus_or_an_annotation_is_known_to_feed_training(bind, iterate):
    # `(train_loader := DataLoader(...))` and `train_loader: DataLoader = DataLoader(...)` bound no name, so the
    # evaluation loader, the only one assigned, was taken for the training loader: its num_workers=0 and unpinned
    # memory were findings ('no workers', 'pageable memory') quoting it.
    script = WALRUS_LOADER.format(bind=bind, iterate=iterate)
    loaders = extract_script_evidence([("train.py", script)]).of("dataloader")
    assert [(f.line, f.detail["assigned_to"], f.detail["feeds_training"]) for f in loaders] == [
        (10, "val_loader", False),
        (11 if bind != "pass" else 12, "train_loader", True),
    ]
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6, cpu=lambda t: 7.0)
    _, result = run(120, frame, scripts=[("train.py", script)], cpu_count=16)
    assert [(f.sub_cause, [c.line for c in f.code]) for f in result.findings if f.sub_cause == "no_workers"] == []
    assert not [f for f in result.findings if ("train.py", 10) in [(c.path, c.line) for c in f.code]]


@pytest.mark.parametrize(
    ("launch", "command", "finding"),
    [
        ("python train.py --workers 8", "", False),  # the launch gives the loader eight workers
        ("torchrun --nproc_per_node 1 train.py --workers=8 --epochs 3", "", False),
        (None, "python train.py --workers 8", False),  # the job's submitted command
        # a '#' inside a word is no comment (bash: only at a word's beginning): `--workers 8` after it is passed
        ("python train.py --comment=a#b --workers 8", "", False),
        (None, "python train.py --tag=exp#3 --workers 8", False),
        ("python train.py --epochs 3 # --workers 8", "", True),  # a comment passes nothing
        ("python train.py --epochs 3", "", True),  # not passed: the default, no workers
        (None, "", True),  # no launch seen: the default
        ("python train.py --workers 0", "", True),
        # launch lines that differ: which the job ran is not known, so no finding rests on either
        ("python train.py --workers 8\npython train.py --workers 0", "", False),
    ],
)
def test_a_loaders_workers_are_the_ones_the_jobs_launch_passes(launch, command, finding):
    # `num_workers=args.workers` over `--workers default=0` was 'no workers' even where the job's launch passed
    # `--workers 8`: the code's facts took the argparse default, and only the remote reads the launch line's value.
    scripts = [("train.py", NO_WORKERS)]
    if launch:
        scripts.append(("run.sh", f"#!/bin/bash\n{launch}\n"))
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6, cpu=lambda t: 7.0)
    _, result = run(120, frame, scripts=scripts, cpu_count=16, command=command)
    assert [f.sub_cause for f in result.findings if f.category == Category.DATA_PREPROCESSING] == (
        ["no_workers"] if finding else []
    )


@pytest.mark.parametrize(
    ("launch", "workers"),
    [
        ("python train.py --num-workers 8", 8),  # dest num_workers
        ("python train.py --num-workers=6", 6),
        ("python train.py -j 4", 4),  # its short name
        ("python train.py", 0),
        ("python train.py --num-workers $WORKERS", None),  # a shell variable not set in the script: not known
    ],
)
def test_an_options_value_from_the_launch_is_read_by_its_dest_name(launch, workers):
    script = (
        "import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('-j', '--num-workers', type=int, default=0)\n"
        "parser.add_argument('--pin', action='store_true')\nargs = parser.parse_args()\n"
        "loader = DataLoader(dataset, num_workers=args.num_workers, pin_memory=args.pin)\n"
    )
    (loader,) = extract_script_evidence([("train.py", script), ("run.sh", f"#!/bin/bash\n{launch}\n")]).of("dataloader")
    assert (loader.detail["num_workers"], loader.detail["pin_memory"]) == (workers, False)
    (pinned,) = extract_script_evidence([("train.py", script)], command="python train.py --pin").of("dataloader")
    assert pinned.detail["pin_memory"] is True


USE_AMP = AMP.replace('"--amp"', '"--use-amp"').replace("args.amp", "args.use_amp")


@pytest.mark.parametrize(
    ("launch", "precision"),
    [("python train.py --use-amp", "mixed"), ("python train.py --epochs 3", "fp32"), (None, None)],
)
def test_a_precision_switch_of_any_name_is_mixed_where_the_launch_passes_it(launch, precision):
    # `autocast(enabled=args.use_amp)` of a store_true `--use-amp` launched with `--use-amp` was fp32: the precision
    # rule knew only --bf16/--fp16/--amp/--half on a launch line, so a launch passing another switch set none.
    scripts = [("train.py", USE_AMP.format(default=""))]
    if launch:
        scripts.append(("run.sh", f"#!/bin/bash\n{launch}\n"))
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.93)
    _, result = run(120, frame, scripts=scripts)
    (finding,) = [f for f in result.findings if f.category == Category.GPU_MEMORY_BOUND]
    assert finding.numbers["precision"] == precision


def test_a_sweeps_jobs_that_differ_only_in_a_number_no_fact_reads_share_one_reading():
    # Launches' numbers now count (`--workers 8`), but only for the options the script's facts read: jobs of a sweep
    # over `--lr` still read the script once, while another `--workers` is another reading (and another value).
    from triage.evidence.scripts import _file_evidence, _given_options

    script = NO_WORKERS.replace(
        'parser.add_argument("--workers", type=int, default=0)',
        'parser.add_argument("--workers", type=int, default=0)\n    parser.add_argument("--lr", default=0.1)',
    ).replace("optimizer.step()", "optimizer.step(args.lr)")

    def read(options: str):
        return _file_evidence("train.py", script, _given_options("train.py", [f"python train.py {options}".split()]))

    assert read("--lr 0.01 --workers 8") is read("--lr 0.02 --workers 8")
    (eight,), (none,) = read("--lr 0.01 --workers 8").of("dataloader"), read("--lr 0.01 --workers 0").of("dataloader")
    assert (eight.detail["num_workers"], none.detail["num_workers"]) == (8, 0)


ABBREVIATED = (
    "import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser({parser})\n"
    "parser.add_argument('-j', '--workers', type=int, default=0)\n"
    "parser.add_argument('-w', '--warmup', type=int, default=0)\n"
    "parser.add_argument('--work-dir', default='out')\nparser.add_argument('--pin', action='store_true')\n"
    "args = parser.parse_args()\nloader = DataLoader(dataset, num_workers=args.workers, pin_memory=args.pin)\n"
)


@pytest.mark.parametrize(
    ("parser", "options", "workers", "pin"),
    [
        ("", "-j8", 8, False),  # a short option's value glued on, as argparse takes it
        ("", "-j8 --pin", 8, True),
        ("", "--worker 8", 8, False),  # a unique prefix of --workers: argparse's abbreviation
        ("", "--worke=6 --pi", 6, True),
        ("", "--work 8", None, False),  # --workers or --work-dir: argparse refuses it, so not known
        ("allow_abbrev=False", "--worker 8", 0, False),  # no abbreviations: --worker is no option of its
        ("allow_abbrev=False", "-j8", 8, False),  # a glued short value is read all the same
        ("", "-w4", 0, False),  # -w is --warmup's, not --workers'
    ],
)
def test_a_glued_short_value_and_an_abbreviated_option_are_read_as_argparse_reads_them(parser, options, workers, pin):
    # `-j8` and `--worker 8` were not read: the loader had --workers' default (0), a 'no workers' finding for a job
    # launched with eight.
    script = ABBREVIATED.format(parser=parser)
    (loader,) = extract_script_evidence([("train.py", script)], command=f"python train.py {options}").of("dataloader")
    assert (loader.detail["num_workers"], loader.detail["pin_memory"]) == (workers, pin)


def test_an_abbreviated_number_is_read_again_for_each_value():
    # The reading is shared across numbers given to options the facts do not read; an abbreviation of one they read
    # (`--worker 8`) is one of those that count.
    from triage.evidence.scripts import _file_evidence, _given_options

    script = ABBREVIATED.format(parser="")

    def workers(options: str):
        given = _given_options("train.py", [f"python train.py {options}".split()])
        (loader,) = _file_evidence("train.py", script, given).of("dataloader")
        return loader.detail["num_workers"]

    assert (workers("--worker 8"), workers("--worker 4"), workers("-j2"), workers("-j3")) == (8, 4, 2, 3)


GROUPED = (
    "import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n"
    "parser.add_argument('-j', '--workers', type=int, default=0)\n"
    "parser.add_argument('-v', '--verbose', action='store_true')\n"
    "parser.add_argument('-q', '--quiet', action='store_true')\n"
    "parser.add_argument('-p', '--pin', action='store_true')\n"
    "parser.add_argument('-w', '--warmup', type=int, default=0)\n"
    "args = parser.parse_args()\nloader = DataLoader(dataset, num_workers=args.workers, pin_memory=args.pin)\n"
)


@pytest.mark.parametrize(
    ("options", "workers", "pin"),
    [
        ("-vj8", 8, False),  # -v, then -j with 8 glued on
        ("-vj 8", 8, False),  # the last of the group takes the next word
        ("-qvp", 0, True),  # three switches
        ("-vpj8 -q", 8, True),
        ("-pj4", 4, True),
        ("-vw4", 0, False),  # -w is --warmup's
        ("-pv --workers 2", 2, True),
    ],
)
def test_grouped_short_switches_are_read_as_argparse_reads_them(options, workers, pin):
    # `-vj8` (store_true switches grouped, the last one taking a glued value) was read as -v with the value 'j8':
    # --workers kept its default 0, a 'no workers' finding for a job launched with eight, and `-pv` did not pin.
    # The expectations are argparse's own (parse_args of GROUPED's parser).
    (loader,) = extract_script_evidence([("train.py", GROUPED)], command=f"python train.py {options}").of("dataloader")
    assert (loader.detail["num_workers"], loader.detail["pin_memory"]) == (workers, pin)


def test_a_grouped_number_is_read_again_for_each_value():
    # A sweep's shared reading keeps a number given to a group that ends in an option the facts read (`-vj 8`).
    from triage.evidence.scripts import _file_evidence, _given_options

    def workers(options: str):
        given = _given_options("train.py", [f"python train.py {options}".split()])
        (loader,) = _file_evidence("train.py", GROUPED, given).of("dataloader")
        return loader.detail["num_workers"]

    assert (workers("-vj 8"), workers("-vj 4"), workers("-qj2"), workers("-qj3")) == (8, 4, 2, 3)


PASSED_THROUGH = (
    "import argparse\nfrom torch.utils.data import DataLoader\nparser = argparse.ArgumentParser()\n{positional}"
    "parser.add_argument('-j', '--workers', type=int, default=0)\n"
    "parser.add_argument('--pin', action='store_true')\n"
    "args = parser.parse_args()\nloader = DataLoader(dataset, num_workers=args.workers, pin_memory=args.pin)\n"
)


@pytest.mark.parametrize(
    ("launch", "workers", "pin"),
    [
        ('python train.py "$@"', None, None),  # the submitter's own options: any of them may be set there
        ("python train.py $@", None, None),
        ("python train.py $*", None, None),
        ("python train.py $EXTRA_ARGS", None, None),
        ("python train.py ${ARGS}", None, None),
        ("python train.py $2", None, None),  # the launch script's own argument
        ('python train.py "${@}"', None, None),
        ('python train.py "${@:2}"', None, None),
        ('torchrun --nproc_per_node 8 train.py "$@"', None, None),
        ('python train.py --workers 8 "$@"', None, None),  # argparse takes the last value: it may be the hidden one
        ('python train.py "$@" --workers 8', 8, None),  # the visible one comes last
        ('python train.py --pin "$@"', None, True),  # a store_true turned on stays on
        ("python train.py --pin $EXTRA", None, True),  # after a switch, a variable is no value of its
        ("python train.py --workers $N", None, False),  # the option's value, not hidden options
        ("python train.py --workers 8 --pin", 8, True),
    ],
)
def test_options_passed_through_unseen_make_the_scripts_defaults_unknown(launch, workers, pin):
    # `python train.py "$@"` hands the script options the reader cannot see, yet `num_workers=args.workers` was
    # --workers' default 0: a 'no workers' finding resting on a default the submitter may have overridden.
    script = PASSED_THROUGH.format(positional="")
    (loader,) = extract_script_evidence([("train.py", script), ("run.sh", f"#!/bin/bash\n{launch}\n")]).of("dataloader")
    assert (loader.detail["num_workers"], loader.detail["pin_memory"]) == (workers, pin)


@pytest.mark.parametrize(
    ("launch", "workers", "pin"),
    [
        ("python train.py $CONFIG --workers 8", 8, False),  # the variable is the positional argument's
        ("python train.py configs/a.yaml $EXTRA", None, None),  # the positional is filled: this one is more
        ('python train.py $CONFIG "$@"', None, None),
    ],
)
def test_a_variable_that_fills_a_positional_argument_passes_no_options(launch, workers, pin):
    script = PASSED_THROUGH.format(positional="parser.add_argument('config')\n")
    (loader,) = extract_script_evidence([("train.py", script)], command=launch).of("dataloader")
    assert (loader.detail["num_workers"], loader.detail["pin_memory"]) == (workers, pin)


def test_no_finding_rests_on_a_default_the_launch_may_override():
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6, cpu=lambda t: 7.0)
    for launch, finding in (('python train.py "$@"', []), ("python train.py", ["no_workers"])):
        scripts = [("train.py", NO_WORKERS), ("run.sh", f"#!/bin/bash\n{launch}\n")]
        _, result = run(120, frame, scripts=scripts, cpu_count=16)
        assert [f.sub_cause for f in result.findings if f.category == Category.DATA_PREPROCESSING] == finding
    # a remote data root's default alike: the launch may give a local one
    remote_default = (
        "import argparse\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--data-root', default='s3://vision-datasets/shards')\nargs = parser.parse_args()\n"
    )
    for launch, urls in (('python train.py "$@"', []), ("python train.py", ["s3://vision-datasets/shards"])):
        found = extract_script_evidence([("train.py", remote_default)], command=launch).of("remote_path")
        assert [f.detail["url"] for f in found] == urls
