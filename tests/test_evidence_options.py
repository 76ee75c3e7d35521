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
