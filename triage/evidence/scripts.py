"""Script evidence: facts about a job's code, each with `file:line`.

Python files are read with the `ast` module and shell scripts with `shlex`, never with regular
expressions over source text, so a commented-out `torch.save` or a string that merely mentions
`pin_memory=True` is not a fact. Pure Python; no Django.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import hashlib
import itertools
import json
import re
import shlex
import threading
import tokenize
from collections import ChainMap, OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import yaml

from triage.evidence.pyast import dotted
from triage.evidence.remote_reads import RemoteReads

DL_FRAMEWORKS = {
    "torch",
    "tensorflow",
    "jax",
    "flax",
    "mxnet",
    "paddle",
    "keras",
    "lightning",
    "pytorch_lightning",
    "transformers",
    "deepspeed",
    "accelerate",
    "oneflow",
    "mindspore",
    "horovod",
}
REMOTE_SCHEMES = (
    "s3://",
    "s3a://",
    "gs://",
    "hdfs://",
    "abfs://",
    "abfss://",
    "wasb://",
    "wasbs://",
    "az://",
    "oss://",
)
SAVE_CALLS = {"save", "save_pretrained", "save_checkpoint", "save_model", "save_state", "async_save"}
UPLOAD_METHODS = {"upload_file", "upload_fileobj", "put_object", "log_artifact", "log_artifacts", "push_to_hub"}
SYNC_METHODS = {"item", "cpu", "numpy", "tolist"}
HUB_CALLS = {"load_dataset", "hf_hub_download", "snapshot_download", "urlretrieve"}
INTERACTIVE_PROGRAMS = {
    "jupyter",
    "jupyter-lab",
    "jupyter-notebook",
    "code-server",
    "sshd",
    "tmux",
    "screen",
    "ipython",
}
# Distributed launchers (one training process a GPU, for the rules), each also as the module `python -m` runs:
# `python -m torch.distributed.launch` / `torch.distributed.run` are torchrun's older forms, common in papers' code.
LAUNCHERS = {"torchrun", "deepspeed", "horovodrun", "mpirun", "accelerate"}
_LAUNCHER_MODULES = {
    "torch.distributed.launch": ("torchrun", []),
    "torch.distributed.run": ("torchrun", []),
    "accelerate.commands.launch": ("accelerate", ["launch"]),  # `accelerate launch`
    "accelerate.commands.accelerate_cli": ("accelerate", []),
    "deepspeed.launcher.runner": ("deepspeed", []),
    "horovod.runner.launch": ("horovodrun", []),
}
_DATA_ROLE = re.compile(r"data|dataset|train|input|shard|root|corpus|source", re.IGNORECASE)
_WRITE_ROLE = re.compile(r"checkpoint|ckpt|output|upload|save|artifact|log|export|result|dest", re.IGNORECASE)


@dataclass(frozen=True)
class CodeFact:
    kind: str
    path: str
    line: int
    text: str  # the source line, stripped
    detail: dict = field(default_factory=dict, hash=False)

    def as_dict(self) -> dict:
        code = self.text if len(self.text) <= QUOTE_MAX_CHARS else self.text[: QUOTE_MAX_CHARS - 1] + "…"
        return {"kind": self.kind, "path": self.path, "line": self.line, "code": code, **self.detail}


QUOTE_MAX_CHARS = 200  # a code quote's length in a finding's evidence (a longer one ends in "…")
QUOTE_MAX_LINES = 40  # a call over more lines is quoted by its first line only


@dataclass
class ScriptEvidence:
    facts: list[CodeFact] = field(default_factory=list)
    python_files: int = 0
    shell_files: int = 0
    parse_errors: list[str] = field(default_factory=list)
    frameworks: set[str] = field(default_factory=set)
    config_files: int = 0  # JSON / YAML files read for settings (DeepSpeed, Accelerate, Hydra, detectron2)
    paths: list[str] = field(default_factory=list)  # every file given, read or not
    # One Python file's: what it hands the functions and classes it imports from the job's other files
    # (`RemoteReads.exports`), for their remote reads to follow (`_imported_calls`)
    exports: dict = field(default_factory=dict)
    # the names of its module-level functions and classes whose calls elsewhere its reads asked for: only what is
    # handed to those changes its facts (`_imported_calls`)
    asked: frozenset = frozenset()
    # the (module, level, name) it imports from the job's other files (`RemoteReads.takes`), and what its own
    # module-level names hold for those that import them (`RemoteReads.provides`: a remote filesystem, a session)
    takes: tuple = ()
    provides: dict = field(default_factory=dict)
    # One Python file's: the flags (`--workers`, `-j`) of the options its facts read, so that a number its launch
    # gives to any other (`--lr 0.1`) does not make it read again (`_file_evidence`)
    option_flags: frozenset = frozenset()
    # One shell script's: the commands that may run another of the job's scripts (`_runs_script`), each with the
    # allocation it runs in there (`_run_allocation`; None where not known)
    runs: tuple = ()
    # What a person reading the job's evidence should know of how its files were read (a script whose commands were
    # not read: `_unread_shell`), a sentence each
    notes: list[str] = field(default_factory=list)

    def of(self, *kinds: str) -> list[CodeFact]:
        return [fact for fact in self.facts if fact.kind in kinds]

    @property
    def has_code(self) -> bool:
        return self.python_files > 0 or self.shell_files > 0


def extract_script_evidence(scripts: list[tuple[str, str]], command: str = "") -> ScriptEvidence:
    """The facts of a job's scripts. `command` is the job's submitted command line: with its launch scripts' launch
    lines, it gives a Python script's options values (`python train.py --data-root s3://...`) that its remote reads
    follow in place of the argparse defaults (`_given_options`)."""
    evidence = ScriptEvidence()
    launches = _launches(scripts, command)
    python = [path for path, text in scripts if _is_python(path, text)]  # `train.py`, or `#!/usr/bin/python3`
    given = {path: _given_options(path, launches) for path in python}
    modules = _importable(python)
    absolute = frozenset(modules[None])  # one set (hashed once) that every file's cache key holds
    relative = {folder: frozenset(names) for folder, names in modules.items() if folder is not None}
    wanted = {path: (absolute, relative[_folder(path)]) for path in python}
    # a shell script's srun lines run in the allocation the job's sbatch command line gives, with what the command
    # that runs it exports, and its #SBATCH lines are read only where it may be the batch script sbatch was given
    # (Python files need not know it: they are read once for every allocation)
    shells = [path for path, text in scripts if _is_shell(path, text)]
    allocated = {path: _submitted_allocation(command, path) if command else ((), True) for path in shells}
    parts = {}
    for path, text in scripts:
        submitted, batch = allocated.get(path, ((), True))
        parts[path] = _file_evidence(path, text, given.get(path, ()), wanted.get(path, ()), (), submitted, batch)
    _settle_run_scripts(scripts, parts, allocated)
    # A Python file's reads follow what the job's other files hand its functions and classes (`train.py` builds
    # `data.py`'s Dataset with the data root): read again with that, as long as it changes, a few rounds at most (a
    # value handed on through a longer chain of files is not known).
    incoming: dict[str, tuple] = {}
    for _ in range(_IMPORT_ROUNDS):
        handed = _imported_calls(parts, modules)
        for path, held in _imported_names(parts, modules).items():  # and what the names it imports hold
            handed[path] = handed.get(path, ()) + held
        if handed == incoming:
            break
        for path, text in scripts:
            if handed.get(path, ()) != incoming.get(path, ()):
                parts[path] = _file_evidence(path, text, given[path], wanted[path], handed.get(path, ()))
        incoming = handed
    for path, _ in scripts:
        evidence.paths.append(path)
        part = parts[path]
        evidence.config_files += part.config_files
        # Copies: a caller may change a fact's details, and the cached ones serve the next job.
        evidence.facts.extend(replace(fact, detail=dict(fact.detail)) for fact in part.facts)
        evidence.python_files += part.python_files
        evidence.shell_files += part.shell_files
        evidence.parse_errors.extend(part.parse_errors)
        evidence.notes.extend(part.notes)
        evidence.frameworks |= part.frameworks
    settle_launch_configs(evidence.facts)  # a launch line's Accelerate config, in another of the job's files
    return evidence


_IMPORT_ROUNDS = 3


def _settle_run_scripts(scripts: list[tuple[str, str]], parts: dict[str, ScriptEvidence], allocated: dict) -> None:
    """A shell script that another of the job's scripts runs (sacct's batch_script.sh running `bash inner.sh`) is no
    batch script either (`_submitted_allocation`): sbatch read none of its `#SBATCH` lines, and it runs in the
    allocation of the line that runs it (the batch script's `#SBATCH` lines, what it exported before, the line's
    own `SLURM_NTASKS=4`: `ScriptEvidence.runs`). Read again so, a few rounds at most (a script run by a script run
    by another). One the job's command runs keeps the command's allocation."""
    texts = dict(scripts)
    free = [path for path, (_, batch) in allocated.items() if batch]  # not run by the job's command
    for _ in range(_IMPORT_ROUNDS):
        changed = False
        for path in free:
            ran = [
                allocation
                for other in allocated
                if other != path
                for argv, allocation in parts[other].runs
                if _runs_script(list(argv), path)
            ]
            if ran and (ran[0], False) != allocated[path]:
                allocated[path] = (ran[0], False)
                parts[path] = _file_evidence(path, texts[path], (), (), (), ran[0], False)
                changed = True
        if not changed:
            return


def _folder(path: str) -> tuple[str, ...]:
    return tuple(path.replace("\\", "/").removeprefix("./").split("/")[:-1])


def _importable(python: list[str]) -> dict:
    """The job's Python files by the (module, level) an import may name them by: under None, absolute imports
    (`data.py` as ("data", 0), `src/pkg/data.py` as ("data", 0), ("pkg.data", 0) and ("src.pkg.data", 0)); under
    each file's folder, relative ones from there (("data", 1) for `from .data import ...` next to it or below, ("data",
    2) from a subpackage). A name several files answer to (`data.py` and `tools/data.py`) names each."""
    found: dict = {None: {}}
    named = []
    for path in python:
        if not path.lower().endswith(".py"):
            continue  # `#!/usr/bin/python3` without the suffix: run, never imported
        parts = path.replace("\\", "/").removeprefix("./").removesuffix(".py").split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(part.isidentifier() for part in parts):
            named.append((path, parts))
            for start in range(len(parts)):
                found[None].setdefault((".".join(parts[start:]), 0), []).append(path)
    for folder in {_folder(path) for path in python}:
        relative = found.setdefault(folder, {})
        for level in (1, 2):
            base = list(folder[: len(folder) - level + 1])
            if level - 1 > len(folder):
                continue
            for path, parts in named:
                if parts[: len(base)] == base and len(parts) > len(base):
                    relative.setdefault((".".join(parts[len(base) :]), level), []).append(path)
    return found


def _imported_calls(parts: dict[str, ScriptEvidence], modules: dict) -> dict[str, tuple]:
    """For each of the job's Python files, what the others hand its module-level functions and classes, as
    `RemoteReads` takes it (`incoming`): a sorted tuple of (name, calls), calls None where the name is used in a way
    not followed. An import that names several files (`from data import ...` with `data.py` and `tools/data.py`) is
    not followed into any: each of them takes the name as used any way. A file none of whose functions or classes its
    reads asked about (`ScriptEvidence.asked`) is handed nothing: it reads the same, and is not read again."""
    handed: dict[str, dict[str, list | None]] = {}
    for importer, part in parts.items():
        for (module, level, name), calls in part.exports.items():
            names = modules[None] if level == 0 else modules[_folder(importer)]
            candidates = [path for path in names.get((module, level), []) if path != importer]
            for path in candidates:
                into = handed.setdefault(path, {})
                if calls is None or len(candidates) > 1 or name == "*":
                    into[name] = None
                elif into.get(name, []) is not None:
                    into[name] = [*into.get(name, []), *calls]
    return {
        path: tuple(sorted((name, tuple(calls) if calls is not None else None) for name, calls in names.items()))
        for path, names in handed.items()
        if parts[path].asked and ("*" in names or parts[path].asked & names.keys())
    }


def _imported_names(parts: dict[str, ScriptEvidence], modules: dict) -> dict[str, tuple]:
    """For each of the job's Python files, what the names it imports from another of them hold there (`from common
    import fs`, common.py's `fs = s3fs.S3FileSystem()`; `import common`, all common.py provides), as `RemoteReads`
    takes it in `incoming`: a tuple of ((module, level, name), (kind, held)). An import that names several of the
    job's files names none."""
    taken: dict[str, tuple] = {}
    for importer, part in parts.items():
        held = []
        for module, level, name in part.takes:
            names = modules[None] if level == 0 else modules[_folder(importer)]
            candidates = [path for path in names.get((module, level), []) if path != importer]
            provided = parts[candidates[0]].provides if len(candidates) == 1 else {}
            for each in provided if name == "*" else [name] if name in provided else []:
                held.append(((module, level, each), provided[each]))  # `import common`: every name it provides
        if held:
            taken[importer] = tuple(held)
    return taken


# A file's facts depend on its path and text alone (a Python script's on the options its launch lines give it too,
# `_given_options`, numbers only for the options its facts read: `_file_evidence`, and on what the job's other files
# hand its functions and classes:
# `_imported_calls`, `_importable`), so they are worked out once per process for the files seen last: a sweep
# runs one script in many jobs, and re-triaging the fleet after a rule change reads every script again (the `ast`
# walk is a third of a job's triage). Bounded by files, each a few kilobytes of facts.
FILES_CACHED = 2048
_cached_files: OrderedDict[tuple, ScriptEvidence] = OrderedDict()
_cache_lock = threading.Lock()


def _file_evidence(
    path: str,
    text: str,
    given: tuple = (),
    modules: tuple = (),
    incoming: tuple = (),
    submitted: tuple | None = (),
    batch: bool = True,
) -> ScriptEvidence:
    """A file's facts, read once per process for each set of launch options that matters to them. A launch's numbers
    (`--lr 0.1`) matter only to the options the file's facts read (`--workers 8`: `ScriptEvidence.option_flags`), so
    the file is read first without them, then again with those it reads, if any (a sweep's jobs that differ only in
    `--lr` share one reading, as those that differ in `--workers` do not)."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    kept = _numbers_for(given, frozenset())
    evidence = _cached_read(path, text, digest, kept, modules, incoming, submitted, batch)
    for _ in range(_NUMBER_ROUNDS):  # a value may send a read down another branch, reading other options
        wanted = _numbers_for(given, evidence.option_flags)
        if wanted == kept:
            break
        kept = wanted
        evidence = _cached_read(path, text, digest, kept, modules, incoming, submitted, batch)
    return evidence


_NUMBER_ROUNDS = 3


def _numbers_for(given: tuple, flags: frozenset) -> tuple:
    """`given` (`_given_options`) without the numbers it gives options other than `flags` (kept: those given to a
    prefix of one, `--work 8` of `--workers`, or glued to a short one's name, `-j8`; `_argparse_option`)."""
    return tuple(
        tuple(pair for pair in pairs if pair[1] is None or not _number(pair[1]) or _names_one_of(pair[0], flags))
        for pairs in given
    )


def _names_one_of(flag: str, flags: frozenset) -> bool:
    if flag[1:2] not in ("-", "") and any(f"-{char}" in flags for char in flag[1:]):
        return True  # `-j8`, or a group of short options that may end in one (`-vj 8`: `_argparse_options`)
    return flag in flags or any(name.startswith(flag) for name in flags if len(flag) > 2)


def _cached_read(
    path: str,
    text: str,
    digest: bytes,
    given: tuple,
    modules: tuple,
    incoming: tuple,
    submitted: tuple | None = (),
    batch: bool = True,
) -> ScriptEvidence:
    key = (path, digest, given, modules, incoming, submitted, batch)
    with _cache_lock:
        found = _cached_files.get(key)
        if found is not None:
            _cached_files.move_to_end(key)
            return found
    evidence = _read_file(path, text, given, modules, incoming, submitted, batch)
    with _cache_lock:
        _cached_files[key] = evidence
        while len(_cached_files) > FILES_CACHED:
            _cached_files.popitem(last=False)
    return evidence


def _read_file(
    path: str,
    text: str,
    given: tuple = (),
    modules: tuple = (),
    incoming: tuple = (),
    submitted: tuple | None = (),
    batch: bool = True,
) -> ScriptEvidence:
    """The facts of one script: Python by its syntax tree, shell by its tokens, anything else none. `given`: the
    options each launch of a Python script hands it (`_given_options`); `modules`: sets of the (module, level) pairs
    its imports may name the job's files by (`_importable`); `incoming`: what those hand its functions and classes
    (`_imported_calls`); `submitted`: a shell script's allocation from the job's sbatch command line, and `batch`:
    whether it may be the job's batch script, whose `#SBATCH` lines sbatch read (`_submitted_allocation`)."""
    evidence = ScriptEvidence()
    lower = path.lower()
    if _is_python(path, text):
        evidence.python_files += 1
        if batch:  # a batch script sbatch may have been given: its #SBATCH lines are the job's (`python3 run.sh`)
            _leading_directive_facts(path, text, evidence)
        try:
            tree = ast.parse(text, filename=path)
            _PythonFacts(path, text, evidence, given, modules, incoming).run(tree)
        except (SyntaxError, ValueError) as exc:
            evidence.parse_errors.append(f"{path}: {exc}")
        except (RecursionError, MemoryError):
            # CPython's parser (and a walk of its tree) gives up on deeply nested code this
            # way, MemoryError included (`x = ------…1`): an uploaded script, read no further.
            evidence.parse_errors.append(f"{path}: nested too deeply to be read")
    elif _is_shell(path, text):
        evidence.shell_files += 1
        _shell_facts(path, text, evidence, submitted, batch)
    elif shell := _unread_shell(path, text):
        evidence.notes.append(
            f"{path} is a {shell} script: triage reads the commands of sh-family shell scripts (sh, bash, zsh, ksh) "
            "and Python, so none of its commands were read"
        )
        if batch:
            _leading_directive_facts(path, text, evidence)
    elif lower.endswith(CONFIG_SUFFIXES):
        _config_facts(path, text, evidence)
    return evidence


def _is_shell(path: str, text: str) -> bool:
    """Whether a script is read as a shell script: one that is no Python script (`_is_python`) by a shell's suffix, or
    by its first line's interpreter, a shell (`#!/bin/bash`, `#!/usr/bin/env -S bash -eu`)."""
    if _is_python(path, text) or _unread_shell(path, text):
        return False
    return path.lower().endswith(_SHELL_SUFFIXES) or _shebang_program(text) in _SHELL_PROGRAMS


# Shells whose syntax is not sh's (csh(1), tcsh(1): `setenv NAME value`, `set name = value`, `if (...) then`,
# `foreach`; fish(1): `set -x NAME value`, `end`): no reading of their commands as sh would be right, a tcsh script's
# `setenv SLURM_NTASKS 1` no export to its srun, so their scripts are not read, and the job's evidence says so
_UNREAD_SHELLS = ("csh", "tcsh", "fish")


def _unread_shell(path: str, text: str) -> str | None:
    """The shell of a script whose commands are not read (`_UNREAD_SHELLS`), by its first line's program, else, with
    no first line naming one, by its suffix (`run.csh`); None for any other."""
    program = _shebang_program(text)
    if program is None:
        program = path.lower().rpartition(".")[2] if "." in path.rsplit("/", 1)[-1] else None
    return program if program in _UNREAD_SHELLS else None


def _is_python(path: str, text: str) -> bool:
    """Whether a script is read as Python: by its `.py` suffix, or by its first line's interpreter whatever its name
    (`#!/usr/bin/python3`, `#!/bin/python3`, `#!/usr/bin/env -S python3 -u`): sbatch runs a batch script with the
    interpreter its first line names, and sacct keeps a job's as `batch_script.sh`, a Python one too."""
    return path.lower().endswith(".py") or (_shebang_program(text) or "").startswith("python")


_SHELL_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")


def _shebang_program(text: str) -> str | None:
    """The name of the program a script's first line runs it with (`#!/usr/bin/bash`: bash; `#!/bin/python3`:
    python3), or of the one env finds (`#!/usr/bin/env bash`, `#!/usr/bin/env -S bash -eu`); None without one. The
    kernel hands the interpreter the rest of the line as one argument (execve(2), "Interpreter scripts"), so env gets
    `-S bash -eu` and splits it (`_env_command`), where `#!/usr/bin/env bash -e` asks env for a program named "bash
    -e"."""
    if not text.startswith("#!"):
        return None
    interpreter, _, argument = text[2:].split("\n", 1)[0].strip().partition(" ")
    words = [interpreter] + ([argument.strip(" \t")] if argument.strip(" \t") else [])
    if _is_env(interpreter):
        words = found[2] if (found := _env_command(words)) is not None else []
    return words[0].rsplit("/", 1)[-1] if words and words[0] else None


def _launches(scripts: list[tuple[str, str]], command: str) -> list[list[str]]:
    """The words of each command that runs Python or a launcher (`torchrun train.py --data-root s3://...`), in the
    job's shell scripts and its submitted command line. A shell script's `$DATA` / `${DATA}` is the value a plain
    assignment before it gives (`_ShellVariables`)."""
    commands = []
    for path, text in scripts:
        if _is_shell(path, text):
            variables = _ShellVariables()
            shells = _ChildShells(text)
            lines = _logical_lines(text)
            for position, (number, line) in enumerate(lines, 1):
                variables.ahead = None  # (not copied for a here-document body's shell)
                variables = shells.at(number, variables, lambda parent, _: parent.child())
                variables.ahead = (lines, position)  # a loop this line opens may end on a later one
                # env's environment, for its `-S` string's `${NAME}` (made only for a line that may run env)
                exported = variables.environment() if "env" in line else None
                try:
                    read = _script_line_commands(variables, line, shells.expanding())
                except ValueError:
                    continue
                markers = (_CHILD_SHELL_BEGINS, _CHILD_SHELL_ENDS)
                commands.extend(_command_through_env_s(argv, exported) for argv in read if argv not in markers)
    if command.strip() and not command.strip().startswith("#"):
        with contextlib.suppress(ValueError):  # an unbalanced quote: no launch read from it
            # the command sbatch wraps or salloc runs in place of its own (`salloc -n 2 srun python train.py ...`)
            ran = [argv for argv, _, _ in _allocated_commands(_marked_commands(command))]
            commands.extend(_command_through_env_s(argv) for argv in ran)
    # a Python script without the suffix, run by its `#!/usr/bin/python3` (`./train --workers 0`, `srun ./train ...`)
    direct = {
        path.replace("\\", "/").rsplit("/", 1)[-1]
        for path, text in scripts
        if _is_python(path, text) and not path.lower().endswith(".py")
    }
    return [
        argv
        for argv in commands
        if _command_kind(argv) in ("launch", "python") or any(_names_a_script(word, direct) for word in argv)
    ]


def _names_a_script(word: str, names: set[str]) -> bool:
    """Whether a word runs one of the job's scripts by its path (`./train`, `/home/u/train`), by one of `names`."""
    return "/" in word and not word.startswith("-") and word.rsplit("/", 1)[-1] in names


_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)
# `$NAME`, `${NAME}`, and `${NAME:-word}` / `${NAME-word}` (the name's value where it is set and not empty, `word`
# where not; a plain `word`: one holding another expansion, `${N:-${M}}`, is not read): the name in group 1 or 3, the
# default in group 2
_SHELL_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(:?-[^{}$`\\'\"]*)?\}|([A-Za-z_][A-Za-z0-9_]*))")
_PLAIN_VALUE = re.compile(r"[\w@%+=:,./~-]+")
_ENVIRONMENT_WORD = re.compile(r"[A-Z_][A-Z0-9_]*=.*")  # `NCCL_DEBUG=INFO` before a command: its environment


def _without_assignments(argv: list[str]) -> list[str]:
    """A command's words without the `VAR=value` environment words it is given (`NCCL_DEBUG=INFO torchrun ...`): those
    before its program (a wrapper's own, `env X=1 srun ...`, `sudo X=1 srun ...`, are read by its reader), not its
    arguments (`env -S 'SLURM_NTASKS=4 srun' ...`: env's string)."""
    index = 0
    while index < len(argv) and _ENVIRONMENT_WORD.fullmatch(argv[index]):
        index += 1
    return argv[index:]


_DECLARATIONS = ("export", "declare", "readonly", "local")  # set the variables their words assign, as a plain line
_OPENS = {"if", "for", "while", "until", "case", "select", "function", "{", "("}
_CLOSES = {"fi", "done", "esac", "}", ")"}
# bash's reserved words that may begin a command and are followed by one (bash(1), Reserved Words; SHELL GRAMMAR):
# `then srun ...`, `do torchrun ...`, `! srun ...`, `if srun ...` (a condition is a command too)
_BEFORE_A_COMMAND = {"then", "else", "elif", "do", "if", "while", "until", "{", "(", "!"}


class _BranchCommand(list):
    """A command's words (`_ShellVariables.commands`) where it runs in an `if`, a loop, a `case` item, `{ ...; }` or a
    function's body: it may run or not, once or many times, so what it sets is not known after it. `arms`: the arm of
    each compound command it is in, outermost first (`then ...`, `else ...`, a loop's `do ...`, a `case` item), an id
    each: what it sets is known to a command whose arms begin with them, later in the same arm (`_arm_environment`).
    `looped`: the names the loops it is in set (`_loop_sets`), each with where in `arms` the innermost such loop's arm
    is: a value set before that loop, or in an earlier pass of it, is not the one it runs with."""

    def __init__(self, words: list[str], arms: tuple[int, ...] = (), looped: dict[str, int] | None = None):
        super().__init__(words)
        self.arms = arms
        self.looped = looped or {}


_ARM_IDS = itertools.count(1)  # each arm of a compound command a reader enters, an id of its own
# the reserved words after which a compound command's next arm begins (`then`, `else`, a loop's `do`), and the mark
# `_reserved_words_off` gives for a `case` item's pattern, where the item's begins
_ARM_WORDS = {"then", "else", "elif", "do"}
_CASE_ITEM = "a)"


def _function_header(argv: list[str]) -> bool:
    """Whether a command begins a function's definition: `function setup`, `setup()`, `setup ()`."""
    return argv[0] == "function" or argv[0].endswith("()") or argv[1:2] == ["()"]


def _reserved_words_off(
    argv: list[str], in_case: bool, body_next: bool = False, alternative: bool = False
) -> tuple[list[str], list[str]]:
    """The words of the command a command line runs after the reserved words that begin it (`then srun -n 4 ...`:
    `srun -n 4 ...`; `time -p srun ...`, `! srun ...`, a subshell's `(srun ...`: `srun ...`), [] for one that runs
    none (`fi`, `done < list`, `esac`, `}`, `)`, a loop's header `for i in 1 2`, a function's `setup() {`); and the
    compound commands those words open (`if`, `while`, `case`, `{`, a subshell's `(`, a function's header with its
    body's `{`: "function", and with a body's `(`: "function" and "()"), in order, with the words that begin an arm
    of the innermost (`then`, `else`, `elif`, `do`, a `case` item's pattern: `_CASE_ITEM`). `in_case`: a `case` is
    the innermost compound command, where a word ending in `)` at the start is an item's pattern (`a) srun ...`,
    `a ) ...`, after `case "$M" in` on the same line too). `alternative`: the command is followed by a `|` that
    continues such a pattern (`a|b)`: `a`, `_pattern_alternatives`), so its last word is one of the pattern's.
    `body_next`: the command before was a function's header without its body's `{`, which this one's opens (no level
    of its own)."""
    if argv[0] in _CLOSES:
        return [], []
    index, opened = 0, []
    if _function_header(argv):  # `function NAME [()]`, `NAME()`, `NAME ()`, then maybe its body's `{` or `(`
        index = 1 + (argv[0] == "function") + (argv[1:2] == ["()"] or argv[2:3] == ["()"])
        opened.append("function")
        body_next = True
    while index < len(argv):
        word = argv[index]
        if body_next and word.startswith("(") and word[1:2] not in ("", "("):  # `f() (srun ...)`
            argv = [*argv[:index], "(", word[1:], *argv[index + 1 :]]
            continue
        if body_next and word in ("{", "("):  # the body of the function just defined: its level is the header's
            if word == "(":  # `f() ( srun ... )`: a subshell, whose `)` ends the function too (`_close`)
                opened.append("()")
            index, body_next = index + 1, False
            continue
        body_next = False
        if word in ("for", "select"):
            return [], [*opened, word]  # `for NAME in WORDS`: its body's commands are the `do ...` after it
        if word == "case":  # `case WORD in`, maybe an item's pattern after it
            index, in_case = index + 3, True
            opened.append(word)
            continue
        if in_case and word == "(" and _pattern_begins(argv[index + 1 :], alternative):
            index += 1  # a pattern's `(` of its own (`( a | b )`, `( a )`)
            continue
        if in_case and alternative and index == len(argv) - 1:
            index += 1  # `a` of `a|b)`: the pattern goes on after the `|`
        elif in_case and (word.endswith(")") or argv[index + 1 : index + 2] == [")"]) and word not in _OPENS:
            index += 1 + (not word.endswith(")"))  # one pattern an item (`a)`, `(a)`, `b )` of `a | b )`)
            opened.append(_CASE_ITEM)
        elif word == "time" and argv[index + 1 : index + 2] == ["-p"]:  # bash's own `time`'s one option
            index += 2  # (`time -v srun ...` is GNU time's, left to the wrappers' reader, `_after_wrapper`)
        elif word in _BEFORE_A_COMMAND:
            index += 1
            if word in _OPENS or word in _ARM_WORDS:
                opened.append(word)
        elif word.startswith("(") and word[1:2] not in ("", "("):  # `(srun ...)`: a subshell, not `((` arithmetic
            argv = [*argv[:index], "(", word[1:], *argv[index + 1 :]]
            continue
        else:
            break
        in_case = False
    return argv[index:], opened


def _pattern_begins(words: list[str], alternative: bool = False) -> bool:
    """Whether a command's words begin with a `case` item's pattern: `a)`, `a )`; with `alternative`, its one word
    (`a` of `a|b)`)."""
    if alternative and len(words) == 1:
        return True
    return bool(words) and (words[0].endswith(")") or words[1:2] == [")"])


def _pattern_alternatives(commands: list[list[str]]) -> set[int]:
    """The indexes of the commands that are alternatives of a `case` item's pattern (`a|b)`: `a`), where a command
    ends at each `|` (`split_shell`): each one followed by a `|`, with one word after its reserved words (`case "$M"
    in a`, `(a`), and the commands after it such ones up to one that begins with the pattern's `)` (`b)`, `b )`)."""
    found: set[int] = set()
    run: list[int] = []
    for index, argv in enumerate(commands):
        if run and _pattern_begins(argv):
            found.update(run)
        if isinstance(argv, _Piped) and len(argv) >= 4 and argv[-4] == "case" and argv[-2] == "in":
            run = [index]  # `case "$M" in a|b)`
        elif isinstance(argv, _Piped) and (len(argv) == 1 or (len(argv) == 2 and argv[0] == "(")):
            run.append(index)  # `a`, `(a`, `( a` of `( a | b )`
        else:
            run = []
    return found


def _assignments(argv: list[str]) -> tuple[list[tuple[str, str]], bool]:
    """The variables one simple command sets, (name, value) in order, and whether it is nothing but assignments:
    `DATA=s3://b/x`, `export CUDA_VISIBLE_DEVICES=0,1 NCCL_IB_DISABLE=1` (`declare`, `readonly`, `local` alike; a
    word that assigns nothing, `export OUT` or `declare -x`, sets no value and makes it more than assignments), or
    the leading ones of a command, which set them for it (`NCCL_P2P_DISABLE=1 torchrun ...`; a word after the program
    is its argument), `env`'s among them (`env SLURM_NTASKS=4 srun ...`: env(1) runs the command after its
    NAME=VALUE words with them set, after its own options, `_env_command`: `env -i` starts from an empty
    environment, so those set before it are dropped; `env -u NAME` unsets NAME, which is then not known, `_UNKNOWN`),
    and sudo's (`sudo -u alice SLURM_NTASKS=4 srun ...`: its VAR=value words among its options, `_sudo_command`), and
    those of the env or sudo its command is (`sudo env SLURM_NTASKS=4 srun ...`, read as env alone).
    The one reading of a shell script's assignments: for its environment (`_shell_facts`) and for the values its
    launch lines take (`_ShellVariables`)."""
    declared = bool(argv) and argv[0] in _DECLARATIONS
    words = argv[1:] if declared else argv
    pairs = []
    under_env = False
    for index, word in enumerate(words):
        if match := _ASSIGNMENT.fullmatch(word):
            pairs.append((match.group(1), match.group(2)))
        elif not declared and _is_env(word) and not under_env:  # `env`, `/usr/bin/env`
            settings, unset, command, emptied = _env_command(words[index:]) or ([], [], [], False)
            if emptied:
                pairs = []  # `env -i`: those the words before it set do not reach its command
            pairs = [pair for pair in pairs if pair[0] not in unset] + [(name, _UNKNOWN) for name in unset]
            pairs += [(match.group(1), match.group(2)) for w in settings if (match := _ASSIGNMENT.fullmatch(w))]
            if command and (_is_env(command[0]) or _is_sudo(command[0])):  # `env X=1 sudo -E Y=2 srun ...`
                inner = _assignments(command)[0]
                pairs = inner if _environment_reset(command) else pairs + inner
            under_env = True
            break
        elif not declared and _is_sudo(word):  # the variables it sets for its command, and those its command sets
            settings, command, preserved = _sudo_command(words[index:]) or ([], [], True)
            if not preserved:
                pairs = []  # those the words before it set do not reach its command (`_sudo_command`)
            pairs += [(match.group(1), match.group(2)) for w in settings if (match := _ASSIGNMENT.fullmatch(w))]
            if command and (_is_env(command[0]) or _is_sudo(command[0])):  # sudo took the VAR=value words before it
                inner = _assignments(command)[0]
                pairs = inner if _environment_reset(command) else pairs + inner  # `sudo env -i ...` keeps none
            under_env = True
            break
        elif not declared:
            break
    return pairs, bool(words) and not under_env and len(pairs) == len(words)


def _subshell_closed(words: list[str]) -> tuple[list[str], int]:
    """A command's words in a subshell without the `)`s that end it there (`srun python train.py )`, `train.py)`,
    `(cd x && srun ...) > log`: the words after the `)` are the subshell's redirections), and how many subshells they
    end: where the words' `)` outnumber their `(` (`$(nproc)`, `a=(1 2)` are whole)."""
    balance = 0
    for index, word in enumerate(words):
        if ")" not in word:
            balance += word.count("(")
            continue
        for at, char in enumerate(word):
            if char == "(":
                balance += 1
            elif char == ")" and balance:
                balance -= 1
            elif char == ")":
                rest = word[at:]
                return [*words[:index], *([word[:at]] if at else [])], len(rest) - len(rest.lstrip(")"))
    return words, 0


class _ExportedOnly(Mapping):
    """A child shell's view of the variables of the shell that starts it (`_ShellVariables.child`): the exported ones'
    values, None for the others. Read, never written: the child copies it where it first sets something (`_own`), so
    a `-c` string or a subshell that sets nothing costs no copy of a script's thousands of variables."""

    __slots__ = ("known", "exported")

    def __init__(self, known: Mapping[str, str | None], exported: set[str]):
        self.known, self.exported = known, exported

    def __getitem__(self, name: str) -> str | None:
        value = self.known[name]
        return value if name in self.exported else None

    def get(self, name: str, default=None):
        return self[name] if name in self.known else default

    def __contains__(self, name) -> bool:
        return name in self.known

    def __iter__(self):
        return iter(self.known)

    def __len__(self) -> int:
        return len(self.known)

    def copy(self) -> dict[str, str | None]:
        known = dict(self.known)
        known.update(dict.fromkeys(known.keys() - self.exported))
        return known


def _runs_here(operators: tuple[str, str], assigned: bool, end: str = ";") -> bool:
    """Whether a command of a line, between `operators` (`_commands`'), runs for sure and in the shell itself, so that
    what it sets holds for the commands after it: not after `||`, nor after `&&` but where the command before set
    plain values alone (`A=1 && N=4`; `cd /work && N=4` sets N only where cd succeeded: `_chained` holds it for the
    rest of that chain), nor in a pipeline or a background job (`N=4 | ...`, `N=4 &`, `N=4 && cmd &`: a subshell of
    their own; `end`, the operator that ends its and-or list, `_list_ends`)."""
    before, after = operators
    if after in ("|", "|&", "&") or before in ("||", "|", "|&") or end == "&":
        return False
    return before != "&&" or assigned


# POSIX's special built-ins: the assignments before one stay in the shell after it (`N=8 :` in dash, Debian's `sh`;
# bash keeps them so in its POSIX mode alone); and the commands whose words assign the shell's own variables
_SPECIAL_BUILTINS = {":", ".", "break", "continue", "eval", "exec", "exit", "export", "readonly", "return", "set"}
_SPECIAL_BUILTINS |= {"shift", "times", "trap", "unset"}
_ASSIGNING = {*_DECLARATIONS, "typeset", "let", *_SPECIAL_BUILTINS}


def _shell_assignments(words: list[str]) -> bool:
    """Whether the assignments a command's words make are the shell's own, kept after it: a command of nothing but
    assignments, a declaration's (`export N=4`, `local N=4`), a special built-in's (`N=8 :`); not those a command is
    given for itself (`N=8 make data`, `env N=8 make data`: bash(1), "the variable assignments ... do not affect the
    current shell environment"), nor a program's arguments (`make N=8`)."""
    for word in words:
        if not _ASSIGNMENT.fullmatch(word):
            return word in _ASSIGNING
    return True


def _list_ends(operators: list[tuple[str, str]]) -> list[str]:
    """The operator that ends each command's and-or list (bash(1): "a sequence of one or more pipelines separated by
    the && and || operators"), its commands' `operators` given (`_commands`'): `&` where it all runs in the
    background, in a subshell (`N=4 && cmd &`)."""
    ends, end = [], ";"
    for _, after in reversed(operators):
        if after not in ("&&", "||", "|", "|&"):
            end = after
        ends.append(end)
    return ends[::-1]


def _chained(operators: tuple[str, str]) -> bool:
    """Whether what an assignment-only command between `operators` sets holds for the commands after it in its `&&`
    chain, where it may not run for sure (`cd /work && N=4 && torchrun ...$N`): bash runs a command after `&&` only
    where the last one it ran succeeded, so those after it in the chain (joined by `&&`, or in a pipeline there) run
    only where it ran; not where it ran after `||` (`a || N=4 && cmd`: cmd runs where a succeeded, N=4 not run), nor
    in a pipeline (a subshell of its own)."""
    before, after = operators
    return after == "&&" and before not in ("||", "|", "|&")


_LOOPS = {"for", "while", "until", "select"}  # the compound commands that may run their body again, or never


def _loop_sets(
    commands: list[list[str]], loops: int, opener: bool = True, values: dict[str, set[str | None]] | None = None
) -> tuple[set[str] | None, int]:
    """The names a loop may set, from the command that opens it (`commands[0]`, where `opener`; `loops` loops open
    there) to its `done`: what its header and body assign (`N=2`, `export N=2`, a `case` item's `a) N=2`, `read N`,
    `unset N`, `for N in ...`), for a value the name had before the loop not to be taken inside it, where an earlier
    pass may have set it again (`N=4; for i in 1 2; do torchrun ...$N; N=2; done`: 4, then 2); and how many of the
    loops are still open after `commands` (0: its `done` is among them). None for every name (`source`, `eval`).
    `values`, where given, gets the values each name is given (None for one `read`, `unset` or `for` sets)."""
    names: set[str] = set()
    values = {} if values is None else values
    for position, argv in enumerate(commands):
        if argv in (_CHILD_SHELL_BEGINS, _CHILD_SHELL_ENDS) or not argv:
            continue
        if argv[0] == "done":
            loops -= 1
            if loops <= 0:
                return names, 0
            continue
        words, opens = _reserved_words_off(argv, False)
        if position or not opener:
            loops += sum(word in _LOOPS for word in opens)
        if words and words[0].endswith(")") and words[0] not in _OPENS:  # a `case` item's pattern: `a) N=2`
            words = words[1:]
        if (words[:1] or argv[:1])[0] in ("source", ".", "eval"):
            return None, loops
        found: list[tuple[str, str | None]] = []
        if words and _shell_assignments(words):
            found += [(m.group(1), m.group(2)) for word in words if (m := _ASSIGNMENT.fullmatch(word))]
        if words[:1] and words[0] in ("read", "unset", "getopts"):
            found += [(word, None) for word in words[1:] if word.isidentifier()]
        elif not words and opens[-1:] in (["for"], ["select"]) and opens[-1] in argv:  # `for N in ...`
            header = argv[argv.index(opens[-1]) + 1 :]
            found += [(header[0], None)] if header[:1] and header[0].isidentifier() else []
        for name, value in found:
            names.add(name)
            values.setdefault(name, set()).add(value)
    return names, loops


class _TopCompound:
    """A compound command at a shell's top (`if`, a loop, `case`, `{ ...; }`), from its first word to its last: the
    variables as they were where it began, for a pipeline's or a background job's (a subshell: nothing it sets is left,
    bash without lastpipe, its last part too) and for an `if`'s arms, each of which runs where the others did not
    (`N=4`, `if a; then N=2; else torchrun ...$N; fi`: 4)."""

    __slots__ = ("depth", "word", "state", "sure", "piped", "conditions", "changed", "exported", "arms", "has_else")

    def __init__(self, depth: int, word: str, state: tuple, sure: bool, piped: bool):
        self.depth, self.word, self.state = depth, word, state  # state: (known, exported, exporting, deferred)
        self.sure = sure  # it runs for sure where it begins: not after `&&`, `||`, nor in a pipeline
        self.piped = piped  # a pipeline's part, or a background job: a subshell
        self.conditions: set[str] = set()  # the names an `if`'s conditions set: not known in the arms after
        self.changed: set[str] = set()  # the names an `if`'s arms before the one read now set
        self.exported: set[str] = set()  # the names they exported
        self.arms: list[dict[str, str]] = []  # the plain values each arm set for sure, in it (`arm_values`)
        self.has_else = False


class _ShellVariables:
    """A shell script's variables as its lines set them, in order: `DATA=s3://b/x` (or `export DATA=...`), a line of
    its own outside any `if`, loop, `case` or function, with a plain value (no `$(...)`, backticks or a variable not
    known), makes `$DATA` and `"${DATA}"` in the lines after it that value; any other setting of it (in a branch, a
    loop, a `case` item or `{ ...; }`, whatever word begins the command: `then DATA=...`, `do DATA=$d`, with `read`,
    with a computed value: `${SLURM_GPUS_ON_NODE:-4}`), and anything `source` or `eval` may set, leaves it unknown (the
    `$` kept); one a function's body sets is never known after it (any later line may call it). A line's commands
    after one that sets a variable do not take the value the line began with (bash expands each command as it runs
    it): they take the one it set, where it set a plain value for sure, as on a line of its own (`N=4; srun -n $N`,
    `N=4 && srun ...`; not after `||`, nor in a pipeline or a background job: `_runs_here`). A subshell (`( ... )`)
    runs its commands once, in order: what it sets is known in it, as at the top, and ends with its `)`. The
    launches' words (`_launches`) and the launch counts (`_shell_facts`) take them. Which of them are exported
    (`export DATA`, `declare -x`, any set after `set -a`) is kept too: a child shell has those alone (`child`)."""

    def __init__(self, arms: tuple[int, ...] = ()):
        self.known: dict[str, str | None] = {}
        self.exported: set[str] = set()
        self.exporting = False  # `set -a` (allexport): each variable set is exported
        self.opened: list[str] = []  # the first word of each compound command the lines are in (`if`, `case`, `{`)
        self.arms: list[int] = []  # the arm of each of them the lines are in now (`_BranchCommand.arms`)
        self.base = arms  # the arms of the command that started this shell, where a branch's (`child`)
        # what the shell had where each subshell (`( ...`) the lines are in began: what it sets ends with its `)`
        self.subshells: list[tuple] = []
        self.body_next = False  # a function's header without its body's `{`, which the next command opens
        self.functions: list[int] = []  # the depth each function whose body the lines are in began at
        # the variables a function's body sets: a call of it, on any line after, may set them (never known again)
        self.deferred: set[str] = set()
        # `known`, `exported` and `deferred` are shared with a child shell or a subshell's saved state: copied before
        # this shell sets anything (`_own`), not each time a child or a subshell begins
        self.shared = False
        # the plain values the branches set, known to the commands later in the same arm (`_arm_set`'s, per name:
        # the arms it was set in, and the value), and those a line's command is expanded with again (`_set_before`)
        self.arm_values: dict[str, tuple] = {}
        self.extra: Mapping[str, str | None] = {}
        # the values an `&&` chain set for the compound command it runs (`cd /w && N=4 && if ...; then ...$N`), one
        # entry each such compound command the lines are in: (its depth, the values, the names set again in it in a
        # way its arms do not keep apart, those set again in it at all, whether a pipeline runs it: `a | { ...; }`),
        # known inside it (`_carried_values`) and in the rest of the chain after it (`fi && torchrun ...$N`)
        self.carried: list[tuple[int, dict[str, str], set[str], set[str], bool]] = []
        self.resumed: dict[str, str] | None = None  # the chain's values after the compound command just closed
        # what a `{ ...; }` group the chain runs set for sure, for the chain after its `}` where no pipeline or
        # background job runs it (a subshell: `{ N=2; } | cat && cmd` leaves N as the chain had it)
        self.grouped: dict[str, str] = {}
        # each subshell a quoted here-document body's lines are in: the depth it began at, and the body's own values
        # there (`bash <<'EOF'`, `N=2`, `( N=4 )`: N is 2 again after its `)`)
        self.body_subshells: list[tuple[int, dict[str, str | None]]] = []
        # a line that opens a here-document (`cd /w && N=4 && bash <<EOF`): the values at its last command that are not
        # `known` (an arm's, a chain's), which the body's words take (`_here_document_expanded`, `child`)
        self.body_values: dict[str, str] = {}
        # the `-c` string (`_wrapped_command_string`) of each command of the line read last, by its index in what
        # `split_read` gave, with the child shell that runs it as it is at that command (`_child_at`)
        self.strings: dict[int, tuple[tuple[list[str], str], _ShellVariables]] = {}
        # likewise the string of each command that runs one in a job it submits or an allocation it makes (`sbatch
        # --wrap '...'`, `salloc -N 1 bash -c '...'`: `_submitted_string`), with the shell that runs it (`_job_shell`)
        self.submitted: dict[int, tuple[tuple[list[str], str], _ShellVariables]] = {}
        # the script's logical lines and where the line read next is among them, for a loop that line opens and a
        # later one closes (`_loop_begins`); None where the lines read are one text (the job's command, a `-c` string)
        self.ahead: tuple[list[tuple[int, str]], int] | None = None
        # each loop the lines are in: its depth, where its arm is among the arms, and the names it sets (`_loop_sets`;
        # None for any), for the commands in it (`_BranchCommand.looped`)
        self.looping: list[tuple[int, int, frozenset[str] | None]] = []
        # those of the loops the command that started this shell is in (`do bash -c 'srun ...'`), `_child_at`
        self.looped_base: dict[str, int] = {}
        # each compound command the lines are in at this shell's top (outside any other but a subshell), a
        # `_TopCompound`: what it leaves depends on whether it ran for sure and in this shell (`_top_closed`)
        self.tops: list[_TopCompound] = []

    def _loop_begins(self, commands: list[list[str]], loops: int, chain: dict[str, str], bodies: list[tuple]) -> None:
        """Enters the loops a command opens (`commands[0]`, the rest of its line after it): a value that a name the
        loop sets (`_loop_sets`, to its `done`, on the script's later lines too: `ahead`) had before it is not known
        inside it, as after it: a pass after the first has the value the one before set last."""
        values: dict[str, set[str | None]] = {}
        names, left = _loop_sets(commands, loops, values=values)
        if names is not None and left and self.ahead is not None:  # (`names` grows: a set of its own)
            lines, position = self.ahead
            for _, line in lines[position:]:
                try:
                    more = split_shell(line)
                except ValueError:
                    continue
                found, left = _loop_sets(more, left, opener=False, values=values)
                if found is None:
                    names = None
                    break
                names |= found
                if not left:
                    break
        position = len(self.base) + len(self.arms) - 1  # the loop's arm: its `do`'s
        self.looping.append((self.depth, position, None if names is None else frozenset(names)))
        if names is None:  # `source` in it: any name
            names = {*self.known, *chain, *self.arm_values, *self._carried_values()}
        else:  # one it sets again to the plain value it has here alone keeps it (`N=4; for ...; do ...$N; N=4; done`)
            names = {name for name in names if not self._unchanged_by(name, values[name])}
        if not names:
            return
        self._own()
        for name in names:
            if name in self.known:
                self.known[name] = None
            self.arm_values.pop(name, None)
            chain.pop(name, None)
            self._set_again(name, False, bodies)

    def _unchanged_by(self, name: str, values: set[str | None]) -> bool:
        """Whether setting `name` to each of `values` leaves it as it is known here, outside any function's body: each
        the plain value it has (`N=4` where N is 4), which no later call of a function may change (`deferred`)."""
        value = self.known.get(name)
        return (
            value is not None
            and values == {value}
            and not self.functions
            and name not in self.deferred
            and bool(_PLAIN_VALUE.fullmatch(value))
        )

    def _changed_since(self, top: _TopCompound) -> set[str]:
        """The names whose values are no longer those they had where `top` began (not known since)."""
        before = top.state[0]
        if self.known is before:
            return set()
        return {name for name, value in before.items() if value is not None and self.known.get(name) != value}

    def _sure_in_arm(self) -> dict[str, str]:
        """The plain values set for sure in the arm read now, in it and not in a compound command inside it."""
        arms = (*self.base, *self.arms)
        return {name: value for name, (at, value) in self.arm_values.items() if at == arms}

    def _if_arm_ends(self, word: str) -> None:
        """An arm of the `if` at the top (`tops[-1]`) ends where `word` begins the next: a condition's at `then` (what
        it set holds in every arm after it), a `then` arm's at `elif` or `else`, whose values the next arm does not
        have (it runs where this one did not): the ones from before the `if` again, but for one it exported."""
        top = self.tops[-1]
        changed = self._changed_since(top)
        if word == "then":
            top.conditions |= changed
            return
        if word not in ("elif", "else"):
            return
        top.arms.append(self._sure_in_arm())
        top.has_else = top.has_else or word == "else"
        before, exported = top.state[0], top.state[1]
        restored = {
            name for name in changed - top.conditions - self.deferred if name in exported or name not in self.exported
        }
        top.changed |= changed
        if restored:
            self._own()
            self.known.update((name, before.get(name)) for name in restored)

    def _top_closed(self, top: _TopCompound) -> set[str]:
        """What a compound command at the top (`tops`) leaves where its last word closes it: nothing where a pipeline or
        a background job runs it (a subshell: the variables as they were where it began); a `{ ...; }` group that runs
        for sure, the plain values it set for sure (`N=4; { N=2; }; torchrun ...$N`: 2); an `if` with an `else`, the
        one value every arm set for sure, where it runs for sure. The names it gives values to."""
        if top.piped:
            self.known, self.exported, self.exporting, self.deferred = top.state
            self.shared = True
            return set()
        given: dict[str, str] = {}
        if top.word == "{" and top.sure:
            given = self._sure_in_arm()
        elif top.word == "if":
            top.arms.append(self._sure_in_arm())
            changed = top.changed - self.deferred  # those an arm before the last set: restored there, not known now
            if changed:
                self._own()
                self.known.update(dict.fromkeys(changed))
            if top.sure and top.has_else:
                first, *others = top.arms
                given = {name: value for name, value in first.items() if all(arm.get(name) == value for arm in others)}
        given = {name: value for name, value in given.items() if name not in self.deferred}
        if given:
            self._own()
            self.known.update(given)
        return set(given)

    def _own(self) -> None:
        """Copies the variables this shell shares (`shared`) before it changes them."""
        if self.shared:
            self.known = self.known.copy()
            self.exported = set(self.exported)
            self.deferred = set(self.deferred)
            self.shared = False

    def child(self, arms: tuple[int, ...] = ()) -> _ShellVariables:
        """The variables of a child shell this one starts (`bash <<'EOF'`): its exported ones; the others not known,
        where the environment the script began with may have given the child one of that name. `arms`: those of the
        command that starts it, where it runs in a branch (`then bash -c '...'`): its commands run in that arm."""
        child = _ShellVariables(arms)
        known = ChainMap(self.body_values, self.known) if self.body_values else self.known
        child.known = _ExportedOnly(known, self.exported)  # copied where either shell sets something (`_own`)
        child.exported, child.deferred = self.exported, self.deferred
        child.shared = self.shared = True
        return child

    @property
    def depth(self) -> int:
        return len(self.opened)

    @property
    def branched(self) -> int:
        """How many of the compound commands the lines are in may run their commands or not, or many times: all but
        the subshells, which run theirs once, in order."""
        return len(self.opened) - len(self.subshells)

    def environment(self) -> dict[str, str]:
        """The exported variables whose values are known: the environment of the commands the shell runs now (env
        expands its `-S` string's `${NAME}` from it, `_command_through_env_s`)."""
        return {name: value for name, value in self.known.items() if value is not None and name in self.exported}

    def read(self, line: str, expanding: _ShellVariables | None = None) -> list[list[str]]:
        """`commands`, [] for a line with an unbalanced quote."""
        try:
            return self.commands(line, expanding)
        except ValueError:
            return []

    def commands(
        self, line: str, expanding: _ShellVariables | None = None, split: Callable[..., list[list[str]]] | None = None
    ) -> list[list[str]]:
        """The line's commands' words, with the known variables' values in place (not inside single quotes), after the
        reserved words that begin them (`then srun ...`: `_reserved_words_off`), a `_BranchCommand` each where it runs
        in a compound command or a function's body; notes what it sets. A subshell's commands (`( ... )`) are between
        `_CHILD_SHELL_BEGINS` and `_CHILD_SHELL_ENDS`: what they set ends with it. `expanding`: the shell that expands
        the line first, where it is in the body of an unquoted here-document that this shell reads
        (`_ChildShells.expanding`). `split`: how the line is split (`split_shell`; the job's command, read as a script's
        line, `_split_marking_shells`). ValueError for an unbalanced quote."""
        split = split or split_shell
        if expanding is not None:
            line = expanding._here_document_expanded(line)
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and "\n" not in stripped):
            return []
        expanded = line
        if "$" in line and any(value is not None for value in self.known.values()):
            expanded = self._expand(line)
        operators: list[tuple[str, str]] = []
        commands = split(expanded, operators)  # not stripped: a backslash and a blank at its end are a word
        changed: set[str] = set()
        if len(commands) > 1 and expanded is not line and (changed := self._set_before_last(commands)):
            # bash expands each command as it runs it: `N=4; srun -n $N` does not take the N the line began with
            before = self.known
            self.known = {name: None if name in changed else value for name, value in before.items()}
            commands, self.known = split(self._expand(line)), before
        return self.split_read(commands, (line, changed, split), operators)

    def split_read(
        self,
        commands: list[list[str]],
        source: tuple[str, set[str], Callable[..., list[list[str]]]] | None = None,
        operators: list[tuple[str, str]] | None = None,
    ) -> list[list[str]]:
        """`commands`' part for commands split already (`split_shell`'s, of one line or of the job's command, where
        `_CHILD_SHELL_BEGINS` and `_CHILD_SHELL_ENDS` are passed on as they are). `source`: the line they were split
        from, the names its commands before its last set (`_set_before_last`) and how it was split, for a command in a
        branch, or after a plain value set earlier on the line or in its `&&` chain, to be expanded again with the
        values set before it (`_set_before`). `operators`: those before and after each command (`_commands`'), for which
        of its assignments are made for sure (`_runs_here`) or for the rest of their chain (`_chained`); without them,
        those of a line of one command alone. A here-document body's commands (between the marks the job's command
        has, `_split_marking_shells`) are a child shell's: not expanded, and what they set ends with the body."""
        read: list[list[str]] = []
        alternatives = _pattern_alternatives(commands) if len(commands) > 1 else ()
        if operators is not None and len(operators) != len(commands):
            operators = None
        ends = _list_ends(operators) if operators is not None else []
        line_set: set[str] = set()  # `N=4; torchrun ...$N`: the plain values set for sure earlier on the line
        chain: dict[str, str] = {}  # `cd /w && N=4 && torchrun ...$N`: those set earlier in the `&&` chain (`_chained`)
        assigned = False  # the command before set plain values alone, for sure: `A=1 && N=4` sets N for sure
        # what the shell had where each here-document body it is in began, and the values the body's words take
        bodies: list[tuple] = []
        self.strings, self.submitted = {}, {}
        for index, argv in enumerate(commands):
            if argv in (_CHILD_SHELL_BEGINS, _CHILD_SHELL_ENDS):
                read.append(argv)
                if argv == _CHILD_SHELL_BEGINS:
                    # an unquoted body's words are this shell's to expand, as they are here (an assignment in the
                    # body comes after); a quoted body's are the child's, which has what this one exported
                    values = self._values_at(chain, bodies)
                    values = values if isinstance(argv, _ExpandedBody) else _ExportedOnly(values, self.exported)
                    state = (self.known, self.exported, self.exporting, self.deferred, self.arm_values)
                    bodies.append((*state, None if isinstance(argv, _ExpandedBody) else {}, values, self.depth))
                    # a quoted body's branches are its shell's, whose arms start with none of this one's values
                    self.shared = True
                    self.arm_values = dict(self.arm_values) if isinstance(argv, _ExpandedBody) else {}
                elif bodies:
                    self.known, self.exported, self.exporting, self.deferred, self.arm_values = bodies.pop()[:5]
                    self.shared = True
                    while self.body_subshells and self.body_subshells[-1][0] >= self.depth:  # (one left open)
                        self.body_subshells.pop()
                chain, assigned = {}, False
                continue
            operator = operators[index] if operators is not None else (";", ";")
            ended = len(read)
            if operator[0] not in ("&&", "|", "|&"):  # a command that does not run only after those before it
                chain = {}
            # `if ...`, `for ...`, `then if ...`, `main() {`; not the `{` of a function whose header came before it
            in_case = self.opened[-1:] == ["case"]
            words, opens = _reserved_words_off(argv, in_case, self.body_next, index in alternatives)
            self.body_next = opens[-1:] == ["function"] and not any(word in ("{", "(") for word in argv[1:])
            # `a && N=4 && if ...`: in it too; in a quoted here-document body, whose chains are its shell's, too
            carry = "function" not in opens and (not bodies or bodies[-1][5] is not None)
            # a `{ ...; }` group is carried with no values too: what it sets for sure goes on in the chain after its
            # `}` (`cd /w && { N=2; } && torchrun ...$N`, `grouped`)
            grouping, carry = carry, carry and bool(chain)
            for word in opens:  # the command's own words are in what it opens (`{ N=2; }`, `if N=2`)
                if word in _ARM_WORDS or word == _CASE_ITEM:
                    if self.tops and self.tops[-1].depth == self.depth - 1 and self.tops[-1].word == "if":
                        self._if_arm_ends(word)
                    if self.arms:  # `then`, `else`, `do`, `a)`: the compound command's next arm
                        self.arms[-1] = next(_ARM_IDS)
                    continue
                if word == "function":
                    self.functions.append(self.depth)
                elif word not in ("(", "()") and self.branched == 0 and not bodies:
                    state = (self.known, self.exported, self.exporting, self.deferred)
                    piped = operator[0] in ("|", "|&") or (bool(ends) and ends[index] == "&")
                    sure = operator[0] not in ("&&", "||", "|", "|&")
                    self.tops.append(_TopCompound(self.depth, word, state, sure, piped))
                    self.shared = True  # `state` kept as it is: copied where the compound command sets something
                if word in ("(", "()"):  # kept as they are; copied where the subshell sets something (`_own`)
                    self.subshells.append((self.known, self.exported, self.exporting, self.deferred, self.depth))
                    if bodies and bodies[-1][5] is not None:
                        self.body_subshells.append((self.depth, dict(bodies[-1][5])))
                    self.shared = True
                    read.append(_CHILD_SHELL_BEGINS)
                self.opened.append(word)
                self.arms.append(next(_ARM_IDS))
                if carry or (grouping and word == "{"):
                    self.carried.append((self.depth, dict(chain), set(), set(), operator[0] in ("|", "|&")))
                    carry = grouping = False
            if loops := sum(word in _LOOPS for word in opens):  # `for ...`, `do while ...`: it may run again
                self._loop_begins(commands[index:], loops, chain, bodies)
            if words and source is not None and any("$" in word for word in words):
                # a here-document body's: with the values its words take (`_values_at`); elsewhere those a branch's
                # arm, the line or its chain set before it
                values = self._values_at(chain, bodies) if bodies else self._set_before(source[1], line_set, chain)
                if values is not None:
                    words = self._expanded_again(words, argv, index, commands, source, values)
            closing = 0
            if words and self.subshells and self.depth == self.subshells[-1][-1] + 1:
                words, closing = _subshell_closed(words)  # `srun ... )`, `(srun ...) > log`
            if words:
                if self.branched or self.base:
                    read.append(_BranchCommand(words, (*self.base, *self.arms), self._looped()))
                else:
                    read.append(words)
                if (found := _wrapped_command_string(words)) is not None:  # `bash -c '...'`: its shell as of here
                    self.strings[len(read) - 1] = (found, self._child_at(read[-1], chain, bodies))
                elif (found := _submitted_string(words)) is not None:  # `sbatch --wrap '...'`: the job's shell
                    self.submitted[len(read) - 1] = (found, self._job_shell(read[-1], chain, bodies))
            pairs, only = _assignments(words) if words else ([], False)
            if pairs and not _shell_assignments(words):
                pairs = []  # `N=8 make data`: make's alone
            if any(word not in _ARM_WORDS and word not in (_CASE_ITEM, "function") for word in opens):
                # `a && ( N=5; ...`, `a || { N=5; ...`: the operator is the compound command's, its first command's
                # words run for sure wherever it runs
                operator, assigned = (";", operator[1]), False
            sure = _runs_here(operator, assigned, ends[index]) if operators is not None else len(commands) == 1
            # a quoted here-document body's own plain value, outside its compound commands: the child shell's, known
            # to the body's later commands (`bash <<'EOF'`, `N=4`, `torchrun ...$N`), as a script's body lines are
            # (in its subshells too: `( N=4; torchrun ...$N )`, as a script's)
            own_body = (
                sure
                and bodies
                and bodies[-1][5] is not None
                and self.depth
                == bodies[-1][7] + len([depth for depth, _ in self.body_subshells if depth >= bodies[-1][7]])
            )
            # in a quoted body's compound commands, a plain value set for sure is known later in its arm, as a
            # script's (`bash <<'EOF'`, `if a; then N=2; torchrun ...$N; fi`, `{ N=2; } && ...`)
            in_body_arm = sure and bodies and bodies[-1][5] is not None
            sure = sure and not bodies
            plain = sure and self.branched == 0 and only  # at the top, on a line of its own or after `;` or `&&`
            assigned = sure and only and all(_PLAIN_VALUE.fullmatch(value) for _, value in pairs)
            self._exports(words or argv, [name for name, _ in pairs] if only else [])
            if pairs:
                self._own()
            in_arm, in_chain = set(), set()  # `then N=2`: known later in that arm (`_set_before`), not after it
            for name, value in pairs:
                known = plain and name not in self.deferred and _PLAIN_VALUE.fullmatch(value)
                if not known and self._unchanged_by(name, {value}):
                    known, value = True, self.known[name]  # `N=4` again where it is 4: 4 whatever runs
                self.known[name] = value if known else None
                if known:
                    line_set.add(name)
                if (
                    only
                    and (not bodies or bodies[-1][5] is not None)  # a quoted body's chain is its shell's
                    and _chained(operator)
                    and name not in self.deferred
                    and _PLAIN_VALUE.fullmatch(value)
                ):
                    chain[name] = value
                    in_chain.add(name)
                else:
                    chain.pop(name, None)
                if (
                    (sure or in_body_arm)
                    and only
                    and self.branched
                    and name not in self.deferred
                    and _PLAIN_VALUE.fullmatch(value)
                ):
                    self.arm_values[name] = ((*self.base, *self.arms), value)
                    in_arm.add(name)
                else:
                    self.arm_values.pop(name, None)
                self._set_again(name, name in in_arm or name in in_chain, bodies)
                if own_body and only and name not in self.deferred and _PLAIN_VALUE.fullmatch(value):
                    bodies[-1][5][name] = value
            if self.branched and (not words or _shell_assignments(words)):
                # in a branch, a loop, a `case` item, a function: `then N=2`, `do N=$i`, `a) N=2;;`
                for word in argv:
                    if (match := _ASSIGNMENT.fullmatch(word)) and not word.startswith("-"):
                        self._own()
                        if not self._unchanged_by(match.group(1), {match.group(2)}):
                            self.known[match.group(1)] = None
                        if match.group(1) not in in_chain:
                            chain.pop(match.group(1), None)
                        if match.group(1) not in in_arm:
                            self.arm_values.pop(match.group(1), None)
                        self._set_again(match.group(1), match.group(1) in in_arm, bodies)
                        if self.functions:  # set where the function is called, any line after this
                            self.deferred.add(match.group(1))
            first = words[:1] or argv[:1]
            if first[0] in ("source", ".", "eval"):
                self.known, self.arm_values, chain = dict.fromkeys(self.known), {}, {}
                for _, values, *_ in self.carried:
                    values.clear()
                for body in bodies:
                    body[5].clear() if body[5] is not None else None
            elif first[0] in ("read", "unset", "getopts") or argv[0] in ("for", "select"):
                self._own()
                self.known.update((word, None) for word in (words or argv)[1:] if word.isidentifier())
                for word in (words or argv)[1:]:
                    self.arm_values.pop(word, None)
                    chain.pop(word, None)
                    self._set_again(word, False, bodies)
            if argv[0] in _CLOSES and self.opened:  # `fi`, `)`; and a subshell's `)` after it: `( if ...; fi )`
                top = self.tops.pop() if self.tops and self.tops[-1].depth == self.depth - 1 else None
                if top is not None:
                    top.piped = top.piped or operator[1] in ("|", "|&", "&") or (bool(ends) and ends[index] == "&")
                    line_set.update(self._top_closed(top))
                closing = 1 + self._close()
                while self.tops and self.tops[-1].depth >= self.depth:  # (one a subshell's `)` ended)
                    self.tops.pop()
                read += [_CHILD_SHELL_ENDS] * (closing - 1)
                if self.subshells and self.depth == self.subshells[-1][-1] + 1:
                    closing = _subshell_closed(argv[1:])[1]
                else:
                    closing = 0
            for _ in range(closing):
                if self._close():
                    read.append(_CHILD_SHELL_ENDS)
            while self.body_subshells and self.body_subshells[-1][0] >= self.depth:  # a body's subshell closed
                bodies[-1][5].clear()
                bodies[-1][5].update(self.body_subshells.pop()[1])
            if _CHILD_SHELL_ENDS in read[ended:]:  # `a && (N=2) && cmd`: what the chain set in it ends with it
                chain = {}
            if self.resumed is not None:  # `a && N=4 && if ...; fi && cmd`, `(N=2) && cmd`: the chain goes on
                chain, self.resumed = self.resumed, None
                if self.grouped and operator[1] not in ("|", "|&", "&"):  # `{ N=2; } && cmd`: the group's too
                    chain.update(self.grouped)
            self.grouped = {}
            while self.functions and self.depth <= self.functions[-1]:
                self.functions.pop()
        self.body_values = {}
        if source is not None and "<<" in source[0] and not bodies:
            values = self._values_at(chain, bodies)
            self.body_values = dict(values.maps[0]) if isinstance(values, ChainMap) else {}
        return read

    def _set_again(self, name: str, kept: bool, bodies: list[tuple]) -> None:
        """Notes a variable set again in the compound commands an `&&` chain's values are carried into (`carried`):
        where `kept`, in a way their arms keep apart (`then N=8`: `arm_values`, or later in the chain), else not known
        in them from here; and in a quoted here-document body, whose words are the child's (not known in it)."""
        for _, _, dropped, touched, _ in self.carried:
            touched.add(name)
            if not kept:
                dropped.add(name)
        if bodies and bodies[-1][5] is not None:
            bodies[-1][5][name] = None

    def _carried_values(self) -> dict[str, str]:
        """The values the `&&` chains that run the compound commands the lines are in set (`carried`), those set again
        in them left out."""
        values: dict[str, str] = {}
        for _, carried, dropped, *_ in self.carried:
            values.update((name, value) for name, value in carried.items() if name not in dropped)
        return values

    def _values_at(self, chain: dict[str, str], bodies: list[tuple]) -> Mapping[str, str | None]:
        """The variables' values at a command of the line being read: `known`, with those a branch set before it in
        its arm, those of an `&&` chain it is in or one that runs the compound command it is in; in a here-document
        body, those its words take (`split_read`), with a quoted one's chains' (its shell's: `cd /w && N=4 && torchrun
        ...$N` in `bash <<'EOF'`)."""
        if bodies:
            body = bodies[-1]
            if body[5] is None:  # an unquoted body's words: this shell's to expand, as they are where it opens
                return body[6]
            own = self._arm_values_here() if self.arm_values else {}
            extra = {**self._carried_values(), **own, **chain} if self.carried or own else chain
            return ChainMap(extra, body[5], body[6]) if extra else ChainMap(body[5], body[6])
        extra = self._carried_values() if self.carried else {}
        extra.update(self._arm_values_here() if self.arm_values else {})
        extra.update(chain)
        return ChainMap(extra, self.known) if extra else self.known

    def _child_at(self, argv: list[str], chain: dict[str, str], bodies: list[tuple]) -> _ShellVariables:
        """The child shell a command of the line starts (`bash -c '...'`), as this shell is at that command
        (`_values_at`): the exported variables, and those the command is given (`N=8 bash -c '...'`, `env N=8 bash
        -c`: in its environment)."""
        child = _ShellVariables(argv.arms if isinstance(argv, _BranchCommand) else ())
        # in a loop, the names it sets are the string's loop's too (`do bash -c 'srun ...'; export SLURM_NTASKS=2`)
        child.looped_base = argv.looped if isinstance(argv, _BranchCommand) else {}
        child.known = _ExportedOnly(self._values_at(chain, bodies), self.exported)
        child.exported, child.deferred = self.exported, self.deferred
        child.shared = self.shared = True
        pairs, _ = _assignments(argv)
        if pairs and not _shell_assignments(argv):
            child._own()
            child.known.update((name, value if _PLAIN_VALUE.fullmatch(value) else None) for name, value in pairs)
            child.exported.update(name for name, _ in pairs)
        return child

    def _job_shell(self, argv: list[str], chain: dict[str, str], bodies: list[tuple]) -> _ShellVariables:
        """The shell that runs the string of a command that submits a job or makes an allocation (`_submitted_string`):
        a child shell as `bash -c` starts (`_child_at`), as salloc's command is one; a batch job's has the variables
        sbatch passes on (`_sbatch_exports`)."""
        child = self._child_at(argv, chain, bodies)
        # SBATCH_EXPORT, where sbatch has it in its environment, is `--export`'s value where no option gives one; one
        # whose value is not known as NONE: none of the environment's known values taken, but SLURM_*'s
        environment = None
        if "SBATCH_EXPORT" in child.exported:
            environment = child.known.get("SBATCH_EXPORT")
            environment = "NONE" if environment is None else environment
        if (exports := _sbatch_exports(argv, environment)) is None:
            return child
        everything, names, values = exports
        if not everything:  # `--export=NONE`, `--export=NAME,...`: SLURM_* and those named alone
            passed = {name for name in child.exported if name.startswith("SLURM_") or name in names}
            child.known, child.exported = _ExportedOnly(child.known, passed), passed
        child._own()
        for name, value in values.items():  # `--export=N=4`; with ALL, the environment's own N wins (sbatch(1))
            if not (everything and name in child.exported):
                child.known[name] = value if _PLAIN_VALUE.fullmatch(value) else None
                child.exported.add(name)
        return child

    def _expanded_again(
        self,
        words: list[str],
        argv: list[str],
        index: int,
        commands: list[list[str]],
        source: tuple[str, set[str], Callable[..., list[list[str]]]],
        values: Mapping[str, str | None],
    ) -> list[str]:
        """A command's words (`words`, the end of `commands[index]`, `argv`, with a `$`) with `values` in place: its
        line (`source`) expanded again with them, over `known`."""
        line, _, split = source
        self.extra = values
        try:
            again = split(self._expand(line))
        except ValueError:
            return words
        finally:
            self.extra = {}
        if len(again) != len(commands) or len(again[index]) != len(argv):
            return words
        offset = len(argv) - len(words)
        tail = again[index][offset:]
        if argv[offset] != words[0] and argv[offset].endswith(words[0]):  # `(srun ...`: the `(` set apart from srun
            tail[0] = tail[0][len(argv[offset]) - len(words[0]) :]
        return tail

    def _arm_values_here(self) -> dict[str, str]:
        """The plain values the branches set before the command read now, in the arm it runs in (`arm_values`), in a
        branch inside that arm too."""
        arms = (*self.base, *self.arms)
        return {name: value for name, (at, value) in self.arm_values.items() if arms[: len(at)] == at}

    def _set_before(self, changed: set[str], line_set: set[str], chain: dict[str, str]) -> dict[str, str | None] | None:
        """The values a command's words are expanded with again (`_expanded_again`): the plain values a branch set
        before it in the arm it runs in (`then NGPUS=8; torchrun --nproc_per_node=$NGPUS`), those of the variables
        set plainly earlier on its line (`line_set`: `NGPUS=4; torchrun --nproc_per_node=$NGPUS`, as they are now,
        where a command between set them again; `changed`, those its line's commands before its last set,
        `_set_before_last`), and those set earlier in its `&&` chain (`chain`: `cd /work && NGPUS=4 && torchrun ...`)
        or one that runs the compound command it is in; None where there are none: it runs in none of those arms
        (`else`, the next `case` item, after the `fi`) and follows no such assignment on its line or in its chain."""
        own = self._arm_values_here() if self.arm_values else {}
        carried = self._carried_values() if self.carried else {}
        # `changed`: as they are now, known where they are again (`N=4; { N=2; } | cat; ...`: 4 after the pipeline)
        values = {name: self.known.get(name) for name in changed | line_set}
        if not (own or line_set or chain or carried or any(value is not None for value in values.values())):
            return None
        return {**values, **carried, **own, **chain}

    def _looped(self) -> dict[str, int] | None:
        """`_BranchCommand.looped` for a command read now: the names its loops set, an inner loop's over an outer's."""
        if not self.looping:
            return self.looped_base or None
        looped: dict[str, int] = dict(self.looped_base)
        for _, position, names in self.looping:
            looped.update(dict.fromkeys(names, position) if names is not None else {})
        return looped

    def _close(self) -> bool:
        """Leaves the innermost compound command; True where it is a subshell, whose settings end with it."""
        if not self.opened:
            return False
        arms = (*self.base, *self.arms)
        self.arms.pop()
        closed = self.opened.pop()
        while self.looping and self.looping[-1][0] > self.depth:  # a loop's `done`
            self.looping.pop()
        subshell = closed in ("(", "()") and bool(self.subshells)
        if self.carried and self.carried[-1][0] > self.depth:  # the compound command an `&&` chain runs
            _, values, _, touched, piped = self.carried.pop()
            # the chain's values as before it, but those it set again; a subshell's end with it (`(N=2) && cmd`)
            self.resumed = {name: value for name, value in values.items() if subshell or name not in touched}
            if closed == "{" and not piped:  # a group runs its commands in this shell: what it set for sure holds
                self.grouped = {name: value for name, (at, value) in self.arm_values.items() if at == arms}
        if not subshell:
            return False
        if closed == "()":  # a function's body in a subshell, `f() ( ... )`: the function ends with it
            self.arms.pop()
            self.opened.pop()
        self.known, self.exported, self.exporting, self.deferred, _ = self.subshells.pop()
        self.shared = True  # what it had may still be a child's, or an outer subshell's
        return True

    def _set_before_last(self, commands: list[list[str]]) -> set[str]:
        """The known variables that a line's commands before its last may set (their `NAME=value` words, `read`'s,
        `unset`'s and `for`'s names; every one for `source` or `eval`); not a command's own (`N=8 make data`)."""
        names: set[str] = set()
        for argv in commands[:-1]:
            argv = _reserved_words_off(argv, False)[0] or argv  # `then source env.sh`; `for NAME in ...` as it is
            if argv[0] in ("source", ".", "eval"):
                return set(self.known)
            if _shell_assignments(argv) or argv[0].endswith(")"):  # (a `case` item's pattern, `a) N=8`, kept)
                # not one set again to the plain value it has (`N=4` where N is 4: the same whatever ran)
                found = [m for word in argv if (m := _ASSIGNMENT.fullmatch(word))]
                names.update(m.group(1) for m in found if not self._unchanged_by(m.group(1), {m.group(2)}))
            if argv[0] in ("read", "unset", "for", "select", "getopts", *_DECLARATIONS):
                names.update(word for word in argv[1:] if word.isidentifier())
        return {name for name in names if self.known.get(name) is not None}

    def _expand(self, line: str) -> str:
        out, index, single, double = [], 0, False, False
        # the unquoted here-document bodies the line holds (the job's command): their quotes are text
        texts = _unquoted_bodies(line) if "<<" in line and "\n" in line else ()
        while (stop := _EXPANSION_STOP.search(line, index)) is not None:  # the characters between them are kept
            out.append(line[index : stop.start()])
            index = stop.start()
            char = line[index]
            if char in "'\"" and any(start <= index < end for start, end in texts):
                out.append(char)  # (`'$N'` in a `bash <<EOF` body: bash expands it, the child reads the quotes)
                index += 1
                continue
            if char == "\\" and not single:
                out.append(line[index : index + 2])
                index += 2
                continue
            if line.startswith("$'", index) and not single and not double:  # ANSI-C quoting: no expansion in it
                _, end = _ansi_c(line, index + 2)
                out.append(line[index:end])
                index = end
                continue
            if char == "'" and not double:
                single = not single
            elif char == '"' and not single:
                double = not double
            elif char == "$" and not single and (match := _SHELL_REFERENCE.match(line, index)):
                value = self._value(match)
                if value is not None:
                    out.append(value)
                    index = match.end()
                    continue
            out.append(char)
            index += 1
        out.append(line[index:])
        return "".join(out)

    def _value(self, reference: re.Match) -> str | None:
        """The known value a `_SHELL_REFERENCE` stands for; None where not known. `${NAME:-word}` is NAME's value
        where the script set it (a known value is never empty), except for Slurm's own variables (`SLURM_*`), which
        Slurm sets when the job runs: the `:-` is there for where it does (`${SLURM_GPUS_ON_NODE:-4}`)."""
        name = reference.group(1) or reference.group(3)
        if reference.group(2) is not None and name.startswith("SLURM_"):
            return None
        if name in self.extra:
            return self.extra[name]
        return self.known.get(name)

    def _exports(self, argv: list[str], assigned: list[str]) -> None:
        """Notes which variables one command exports: `export NAME[=value]`, `declare -x`, `export -n` (no longer),
        `unset`, and under `set -a` (`set -o allexport`, to `set +a`) those it assigns."""
        if argv[0] in ("export", "declare", "typeset", "unset") or (self.exporting and assigned):
            self._own()
        if argv[0] == "export" or (argv[0] in ("declare", "typeset") and any(_DECLARE_X.fullmatch(w) for w in argv)):
            names = {word.partition("=")[0] for word in argv[1:] if not word.startswith(("-", "+"))}
            if "-n" in argv[1:]:
                self.exported -= names
            else:
                self.exported |= names
        elif argv[0] == "unset":
            self.exported -= set(argv[1:])
        elif argv[0] == "set":
            for index, word in enumerate(argv[1:], 1):
                named = argv[index + 1 : index + 2] == ["allexport"] and word in ("-o", "+o")
                if (word[:1] in "-+" and word[1:2] != "-" and "a" in word[1:]) or named:
                    self.exporting = word[0] == "-"
        if self.exporting:
            self.exported.update(assigned)

    def _here_document_expanded(self, line: str) -> str:
        """A line of an unquoted here-document's body as this shell hands it to the one that reads it: `$NAME` and
        `${NAME}` expanded with this shell's values, quotes or not (they are the body's text); a backslash before `$`,
        a backquote or a backslash is taken off, the character left to the reader (bash(1), Here Documents: "\\ must
        be used to quote the characters \\, $, and `"). A variable not known here stays written out, escaped, for the
        reader not to take for its own. The values at the command that opened the body (`body_values`) come first."""
        out, index = [], 0
        self.extra = self.body_values
        while index < len(line):
            char = line[index]
            if char == "\\" and line[index + 1 : index + 2] in ("$", "`", "\\"):
                out.append(line[index + 1])
                index += 2
                continue
            if char == "$" and (match := _SHELL_REFERENCE.match(line, index)):
                value = self._value(match)
                out.append(value if value is not None else "\\" + match.group(0))
                index = match.end()
                continue
            out.append(char)
            index += 1
        self.extra = {}
        return "".join(out)


@functools.lru_cache(maxsize=64)
def _unquoted_bodies(text: str) -> tuple[tuple[int, int], ...]:
    """Where in `text` (the job's command, read whole) the bodies of its unquoted here-documents that a shell reads
    (`bash <<EOF`, `_here_documents_read`) are, as (start, end) offsets: bash(1), Here Documents, "If word is
    unquoted, all lines of the here-document are subjected to parameter expansion, command substitution, and
    arithmetic expansion", with no quote removal, so a `'` or `"` there is text, `'$N'` expanded."""
    _, bodies = _here_documents_read(text)
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return tuple((starts[first - 1], starts[end - 1]) for first, end, quoted in bodies if not quoted)


_DECLARE_X = re.compile(r"-\w*x\w*")
_EXPANSION_STOP = re.compile(r"[\\'\"$]")  # the characters `_ShellVariables._expand` reads: quotes, escapes, `$`


def _script_arguments(argv: list[str], path: str) -> list[str] | None:
    """The words a launch hands the Python script at `path` (those after its name: `train.py`, `./src/train.py`, or
    `-m pkg.train` for pkg/train.py; one without the suffix, read by its `#!/usr/bin/python3`, by its path, `./train`,
    or after python and its options, `python -u train`), or None if it does not run that script."""
    path = path.replace("\\", "/").removeprefix("./")
    suffixed = path.lower().endswith(".py")
    for index, word in enumerate(argv):
        named = word.removeprefix("./")
        if not suffixed:
            # run by its path (`./train`) or by python (`python -u train`), not another option's value (`--mode train`)
            before = next((w for w in reversed(argv[:index]) if not w.startswith("-")), "")
            run = _names_a_script(word, {named.rsplit("/", 1)[-1]}) or before.rsplit("/", 1)[-1].startswith("python")
            if run and (path == named or path.endswith("/" + named) or named.endswith("/" + path)):
                return argv[index + 1 :]
            continue
        if index and argv[index - 1] == "-m" and not named.endswith(".py"):
            module = named.replace(".", "/")
            if path in (f"{module}.py", f"{module}/__main__.py") or path.endswith(
                (f"/{module}.py", f"/{module}/__main__.py")
            ):
                return argv[index + 1 :]
        elif named.endswith(".py") and (path == named or path.endswith("/" + named) or named.endswith("/" + path)):
            return argv[index + 1 :]
    return None


def _given_options(path: str, launches: list[list[str]]) -> tuple[tuple[tuple[str, str | None], ...], ...]:
    """The options each launch of the script at `path` gives it, as (flag, value) pairs in order (`--data-root
    s3://b/x` and `--data-root=s3://b/x` alike; a flag followed by another flag or nothing has the value None); one
    tuple a launch, none when no launch names the script (its argparse defaults hold). Numbers count (`--workers 8`:
    a DataLoader's `num_workers=args.workers` is the launch's 8, not the default's 0), so a sweep's jobs that differ in
    one (`--lr 0.1`, `--lr 0.01`) read the script once each. A word of its own, not after a flag, is ("", "") (a
    positional argument's, say), or ("", word) for a shell expansion (`"$@"`, `$EXTRA_ARGS`): words the reader cannot
    see, which `_PythonFacts._options` reads as options passed through, unless one fills a positional argument."""
    given = []
    for argv in launches:
        words = _script_arguments(argv, path)
        if words is None:
            continue
        pairs = []
        for index, word in enumerate(words):
            if not word.startswith("-") or word == "-" or _number(word):
                if not (index and _takes_next(words[index - 1])):  # a word of its own: ("", "") or ("", "$@")
                    pairs.append(("", word if _EXPANSION.fullmatch(word) else ""))
                continue
            flag, eq, value = word.partition("=")
            if not eq:
                following = words[index + 1] if index + 1 < len(words) else None
                value = following if following is not None and (_number(following) or following[:1] != "-") else None
            pairs.append((flag, value))
        given.append(tuple(pairs))
    return tuple(given)


def _takes_next(word: str) -> bool:
    """Whether a launch word is a flag that may take the word after it as its value (`--workers`, not `--workers=8`
    or a number)."""
    return word.startswith("-") and word != "-" and not _number(word) and "=" not in word


def _argparse_option(flag: str, word: str | None, strings: set[str], abbrev: bool) -> tuple:
    """(option string, value) of one launch's (flag, value) pair (`_given_options`) as argparse reads it against a
    script's option strings: a short option's glued value (`-j8`: `-j`, '8'), a unique prefix of a long option where
    the parser allows abbreviations (`--work 8` for `--workers`); the options an ambiguous one could be (a frozenset:
    argparse refuses it, so none of theirs is known); else the pair as given."""
    if flag in strings or not flag.startswith("-") or len(flag) < 3:
        return flag, word
    if flag[1] == "-":
        matches = {s for s in strings if s.startswith(flag)} if abbrev else set()
    else:  # `-j8`: `-j` with 8, or a prefix of a single-dash long option (`-wor` of `-workers`)
        matches = {s for s in strings if s.startswith(flag)} | ({flag[:2]} & strings)
    if len(matches) == 1:
        (option,) = matches
        return option, flag[2:] if option == flag[:2] else word
    return (frozenset(matches), word) if matches else (flag, word)


_MANY_WORDS = 1 << 20  # a positional argument with nargs="*", "+" or "...": any number of words

# argparse's actions that take no value: a single-dash one may have more short options grouped after it (`-vj8`).
_NULLARY_ACTIONS = {
    "store_true",
    "store_false",
    "store_const",
    "count",
    "append_const",
    "help",
    "version",
    "BooleanOptionalAction",
}


def _argparse_options(flag: str, word: str | None, strings: set[str], nullary: set[str], abbrev: bool) -> list:
    """The (option string, value) pairs of one launch's (flag, value) pair as argparse reads it (`_argparse_option`),
    grouped short options too: `-vj8` where -v takes no value (`nullary`) is -v, then `-j8` read the same way (-j
    with 8), `-qvp` is -q, -v and -p; the last of a group takes `word`, the launch's next word, as it would alone."""
    pairs = []
    while True:
        option, value = _argparse_option(flag, word, strings, abbrev)
        grouped = isinstance(option, str) and len(flag) > 2 and flag[1] != "-" and option == flag[:2]
        if not (grouped and option in nullary):
            pairs.append((option, value))
            return pairs
        pairs.append((option, None))
        flag = "-" + flag[2:]


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


# --- Python ---------------------------------------------------------------------------------------


# Names read as the parsed command-line options wherever they are used (absl's `FLAGS` too); any other name holds
# them where the file binds it to `parser.parse_args()` alone (`_parsed_namespaces`: `opts`, and `cfg`, which more
# often holds a config, only so), and `self.args` where its class binds it to one (`_PythonFacts.holds_options`).
_NAMESPACES = ("args", "opt", "FLAGS")
_PARSERS = ("parse_args", "parse_known_args")


def _parsed_namespaces(assigned: list[ast.Assign], stored: list[ast.Name]) -> set[str]:
    """The names a file binds to the options its parser parsed, and to nothing else: `hparams = parser.parse_args()`,
    `opts, _ = parser.parse_known_args()`, `opts = parser.parse_known_args()[0]` (a user's `parse_args()` too).
    `assigned`: its assignments; `stored`: every name it binds or deletes."""
    parsed: set[int] = set()  # ids of the Name nodes bound to a parse
    for node in assigned:
        if len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        known = isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and value.slice.value == 0
        call = value.value if known else value
        last = dotted(call.func).rsplit(".", 1)[-1] if isinstance(call, ast.Call) else ""
        if isinstance(target, ast.Tuple) and target.elts and last == "parse_known_args" and not known:
            target = target.elts[0]
        elif last != "parse_args" and not (known and last == "parse_known_args"):
            continue
        if isinstance(target, ast.Name):
            parsed.add(id(target))
    only: dict[str, bool] = {}  # name -> every binding of it is a parse
    for node in stored:
        only[node.id] = only.get(node.id, True) and id(node) in parsed
    return {name for name, parses in only.items() if parses}


def _has_modulo(test: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test))


def _is_step_loop(loop: ast.AST) -> bool:
    """The innermost loop that runs backward passes: a training-step loop (not the epoch loop around it)."""
    if not _contains_backward(loop):
        return False
    nested = (n for n in ast.walk(loop) if n is not loop and isinstance(n, ast.For | ast.While | ast.AsyncFor))
    return not any(_contains_backward(n) for n in nested)


def _contains_backward(loop: ast.AST) -> bool:
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
            return True
        if isinstance(node, ast.Call) and dotted(node.func).endswith(("train_on_batch", "optimizer_step")):
            return True
    return False


# The keywords that set a trainer's precision (as `_precision_setting` reads them).
_PRECISION_KWARGS = {
    "TrainingArguments": ("bf16", "fp16"),
    "Seq2SeqTrainingArguments": ("bf16", "fp16"),
    "SFTConfig": ("bf16", "fp16"),
    "Trainer": ("precision",),
    "Accelerator": ("mixed_precision",),
}


def _whole_call(lines: list[str], node: ast.Call) -> str | None:
    """A call written over several lines as one line, as a quote shows it: what precedes it on its first line
    (`args = `), then its lines without their comments or indentation, joined (`TrainingArguments(output_dir="out",
    bf16=True)`). None for a call over more than QUOTE_MAX_LINES lines or one that does not tokenize."""
    first, last = node.lineno, node.end_lineno or node.lineno
    if last - first >= QUOTE_MAX_LINES or last > len(lines):
        return None
    segment = [line.encode() for line in lines[first - 1 : last]]  # ast's columns count UTF-8 bytes
    segment[-1] = segment[-1][: node.end_col_offset]
    head, segment[0] = segment[0][: node.col_offset], segment[0][node.col_offset :]
    segment = [piece.decode(errors="replace") for piece in segment]
    cuts: dict[int, int] = {}  # line in the segment -> the column its comment starts at
    source = iter(line + "\n" for line in segment)
    try:
        for token in tokenize.generate_tokens(lambda: next(source, "")):
            if token.type == tokenize.COMMENT:
                cuts[token.start[0] - 1] = token.start[1]
    except (tokenize.TokenError, SyntaxError):
        return None
    text = head.decode(errors="replace").strip()
    for index, piece in enumerate(segment):
        piece = piece[: cuts.get(index, len(piece))].strip()
        if not piece:
            continue
        if piece[0] in ")]}" and text.endswith(","):
            text = text[:-1]  # the trailing comma before a closing bracket on its own line
        glue = "" if not text or text[-1] in "([{" or piece[0] in ")]}" else " "
        text += glue + piece
    return text


def _line_of(facts: _PythonFacts, node: ast.AST) -> str:
    """The stripped source line of a node, cut to 120 characters, to quote in a sentence."""
    line = getattr(node, "lineno", 0)
    text = facts.lines[line - 1].strip() if 0 < line <= len(facts.lines) else ""
    return text if len(text) <= 120 else text[:119] + "…"


# Names a test reads that say, in a GPU job's training run, it holds (on the GPU) or not (on the CPU, a debug run).
_GPU_NAMES = {"cuda", "use_cuda", "gpu", "use_gpu", "has_cuda", "on_gpu", "is_cuda", "cuda_available"}
_CPU_NAMES = {"cpu", "use_cpu", "no_cuda", "no_gpu", "cpu_only"}
_DEBUG_NAMES = {"debug", "smoke_test", "dry_run", "fast_dev_run", "quick_test", "overfit_batches"}


class _PythonFacts(ast.NodeVisitor):
    def __init__(
        self,
        path: str,
        text: str,
        evidence: ScriptEvidence,
        given: tuple = (),
        modules: tuple = (),
        incoming: tuple = (),
    ):
        self.path = path
        self.modules = modules  # the (module, level) pairs its imports may name the job's other files by
        self.incoming = dict(incoming)  # what those hand its module-level functions and classes
        self.lines = text.splitlines()
        self.parses = "parse_args" in text or "parse_known_args" in text  # options held by a name of its own?
        self.ev = evidence
        self.given = given  # the options each launch of the script hands it (`_given_options`)
        # (dest, names, default as written, default as argparse gives it, action, type: int, float or None)
        self.arguments: list[tuple[str, list[str], ast.AST | None, object, object, type | None]] = []
        self.switches: set[str] = set()  # dests of switches the command line can turn (`--amp`, store_true)
        self.allow_abbrev = True  # argparse's default: a unique prefix of a long option is that option (`--work`)
        self.positional_words = 0  # how many launch words its positional arguments take (`_MANY_WORDS`: any number)
        # argparse dest -> the value the job runs with, as every fact reads it: the one its launch lines give
        # (`--data-root s3://...`, `--workers 8`, `--pin-mem`), else the default; None where launches differ or it is
        # not known (`$DATA_ROOT`)
        self.options: dict[str, object] = {}
        self.read: set[str] = set()  # the dests of the options read (`ScriptEvidence.option_flags`)
        # names that hold the parsed options: `args`, `opt`, `FLAGS`, and any other bound to
        # `parser.parse_args()` alone (`hparams`, `opts, _ = parser.parse_known_args()`; `_parsed_namespaces`)
        self.namespaces: set[str] = set(_NAMESPACES)
        self.constants: dict[str, object] = {}  # module-level NAME = literal
        self.loops: list[tuple[ast.AST, bool]] = []  # (loop node, is a training-step loop)
        self.guards: list[bool] = []  # enclosing ifs: does the test sample (use %)
        self.torch_imported_at: int | None = None
        self.step_iterables: set[str] = set()  # names iterated by training-step loops (the train loader)
        self.assigned_to: dict[int, str] = {}  # id(call node) -> name it is assigned to
        self.scopes: list[tuple[str, str, list[str]]] = []  # ("class" | "function", qualified name, class bases)
        self.remote: RemoteReads | None = None

    def add(self, kind: str, node: ast.AST, **detail) -> None:
        self._add(kind, node, detail)

    def _add(self, kind: str, node: ast.AST, detail: dict) -> None:
        line = getattr(node, "lineno", 0)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        if isinstance(node, ast.Call) and (node.end_lineno or line) > line:
            text = _whole_call(self.lines, node) or text
        self.ev.facts.append(CodeFact(kind, self.path, line, text, detail))

    def run(self, tree: ast.Module) -> None:
        # First pass: argparse defaults and module constants, so later calls can resolve `args.x`.
        assigned, stored = [], []  # for `_parsed_namespaces`, gathered in this walk (a walk of its own costs)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                self._argument(node)
            elif isinstance(node, ast.Call) and dotted(node.func).endswith("ArgumentParser"):
                self._parser(node)
            elif not self.parses:
                continue
            elif isinstance(node, ast.Assign):
                assigned.append(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                stored.append(node)
        self._options()
        self.namespaces |= _parsed_namespaces(assigned, stored)
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.constants[target.id] = node.value.value
                        self._remote_literal(node.value, role=target.id)
        self.remote = RemoteReads(tree, self.resolve_given, self.incoming)
        self.visit(tree)
        # Where each remote read runs (per sample or once) is known only after the whole file was read.
        self.remote.settle()
        self.ev.exports = self.remote.exports(self.modules)
        self.ev.takes = self.remote.takes(self.modules)
        self.ev.provides = self.remote.provides()
        self.ev.asked = frozenset(self.remote.asked)
        self.ev.facts[:] = [f for f in self.ev.facts if not (f.kind == "remote_read" and f.detail.get("drop"))]
        self._mmengine_config(tree)
        self.ev.option_flags = frozenset(
            name for dest, names, *_ in self.arguments if dest in self.read for name in names
        )
        # Which loaders feed a training-step loop (known only after the whole file was read).
        for fact in self.ev.facts:
            if fact.kind == "dataloader" and fact.path == self.path:
                fact.detail["feeds_training"] = fact.detail.get("assigned_to") in self.step_iterables

    def _mmengine_config(self, tree: ast.Module) -> None:
        """An mmengine config written in Python (MMDetection 3 and its kin: module-level `_base_ = [...]`,
        `optim_wrapper = dict(type=...)`) is a config file like a YAML one: its `type='OptimWrapper'` is fp32
        (`AmpOptimWrapper` and `ApexOptimWrapper` at opt_level O1-O3 are read as mixed precision by `visit_Assign`;
        `ApexOptimWrapper` at O0 is fp32), and one that sets no wrapper type takes it
        from its `_base_` files, each a config reference that settles precision only if the job brought it."""
        assigned = {
            target.id: node
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name) and target.id in ("_base_", "optim_wrapper")
        }
        if not assigned:
            return
        wrapper = assigned.get("optim_wrapper")
        kind = None
        if wrapper is not None and isinstance(wrapper.value, ast.Call) and dotted(wrapper.value.func) == "dict":
            kind = next((self.resolve(kw.value) for kw in wrapper.value.keywords if kw.arg == "type"), None)
        bases = self.resolve(assigned["_base_"].value) if "_base_" in assigned else None
        bases = [bases] if isinstance(bases, str) else list(bases) if isinstance(bases, list | tuple) else []
        bases = [base for base in bases if isinstance(base, str) and base.endswith(".py")]
        # Its wrapper type and `_base_` files, for the rules to tell which config's type the job runs with (a
        # child's own type wins over its bases').
        detail = {"tool": "mmengine", "wrapper": kind if isinstance(kind, str) else None, "bases": bases}
        self.ev.facts.append(CodeFact("config_file", self.path, 1, "", detail))
        self.ev.config_files += 1
        if kind == "OptimWrapper":  # quoted whole: its `dict(` often opens a call over many lines
            shown = "optim_wrapper = dict(type='OptimWrapper', ...)"
            self.ev.facts.append(
                CodeFact(
                    "full_precision",
                    self.path,
                    wrapper.lineno,
                    shown,
                    {"setting": "optim_wrapper.type", "switch": "type='OptimWrapper'"},
                )
            )
        elif kind == "ApexOptimWrapper" and _apex_level(wrapper.value, self.resolve) == "O0":
            shown = "optim_wrapper = dict(type='ApexOptimWrapper', opt_level='O0', ...)"
            switch = "type='ApexOptimWrapper', opt_level='O0'"
            detail = {"setting": "optim_wrapper.type", "switch": switch}
            self.ev.facts.append(CodeFact("full_precision", self.path, wrapper.lineno, shown, detail))
        elif kind is None:
            for base in bases:
                self.add("config_reference", assigned["_base_"], name=base, flag="_base_")

    def _argument(self, node: ast.Call) -> None:
        """One `add_argument`: its dest, and its default as argparse gives it: a literal `default=`, else False for
        `store_true`, True for `store_false`, None (unknown) for the rest (`BooleanOptionalAction` too). A switch
        the command line can turn (store_true off by default, store_false on, BooleanOptionalAction) is noted."""
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dest = next(
            (kw.value.value for kw in node.keywords if kw.arg == "dest" and isinstance(kw.value, ast.Constant)), None
        )
        long = next((n for n in names if n.startswith("--")), names[0] if names else None)
        if dest is None and long:
            dest = long.lstrip("-").replace("-", "_")
        if not dest:
            return
        action_node = next((kw.value for kw in node.keywords if kw.arg == "action"), None)
        action = self.resolve(action_node)
        if action is None and action_node is not None and dotted(action_node).endswith("BooleanOptionalAction"):
            action = "BooleanOptionalAction"
        written = next((kw.value for kw in node.keywords if kw.arg == "default"), None)
        if isinstance(written, ast.Constant):
            default: object = written.value
        elif written is None and action in ("store_true", "store_false"):
            default = action == "store_false"
        else:
            default = None  # a default argparse leaves None, or one not written as a literal: not known
        if action == "BooleanOptionalAction" or (
            action in ("store_true", "store_false") and default is not (action == "store_true")
        ):
            self.switches.add(dest)
        if not any(name.startswith("-") for name in names):  # a positional argument: how many words it takes
            nargs = self.resolve(next((kw.value for kw in node.keywords if kw.arg == "nargs"), None))
            self.positional_words += nargs if isinstance(nargs, int) else 1 if nargs in (None, "?") else _MANY_WORDS
        kind = dotted(next((kw.value for kw in node.keywords if kw.arg == "type"), None))
        if not kind and type(default) in (int, float):  # no type=: a number default's kind (`default=0`)
            kind = type(default).__name__
        self.arguments.append((dest, names, written, default, action, {"int": int, "float": float}.get(kind)))

    def _options(self) -> None:
        """Each option's value as the job runs the script (`self.options`): the one each launch of it gives (`--workers
        8`, `--workers=8`, `-j 8`, a store_true's flag being there), else its default; unknown where its launches
        differ. And the remote path its default names when that is the one in effect (a launch line's own
        `--data-root s3://...` is the shell script's fact)."""
        strings = {"-h", "--help"}  # the option strings argparse knows, for `_argparse_option`
        nullary = {"-h", "--help"}  # and those that take no value, after which more short ones may be grouped
        for _, names, _, _, action, _ in self.arguments:
            strings.update(name for name in names if name.startswith("-"))
            if action == "BooleanOptionalAction":
                strings.update(f"--no-{name[2:]}" for name in names if name.startswith("--"))
            if action in _NULLARY_ACTIONS:
                nullary.update(name for name in names if name.startswith("-"))
        given = [self._launch_options(pairs, strings, nullary) for pairs in self.given]
        dests: dict[str, int] = {}
        for dest, *_ in self.arguments:
            dests[dest] = dests.get(dest, 0) + 1
        for dest, names, default, value, action, number in self.arguments:
            values = []
            if self.given and not any(name.startswith("-") for name in names):
                values.append(None)  # a positional argument: which launch word it is, is not read here
            # a switch turned one way stays so whatever words are passed through after it (no other option sets it)
            one_way = {"store_true": True, "store_false": False}.get(action) if dests[dest] == 1 else None
            for pairs in given or [()]:
                held = value
                for flag, word in pairs:
                    if flag is None:  # options passed through unseen (`"$@"`): any may set it, argparse's last wins
                        if one_way is None or held is not one_way:
                            held = None
                        continue
                    if isinstance(flag, frozenset):  # an ambiguous abbreviation: argparse refuses the launch
                        if flag & set(names):
                            held = None
                        continue
                    negated = action == "BooleanOptionalAction" and flag in {f"--no-{n[2:]}" for n in names}
                    if flag not in names and not negated:
                        continue
                    if action in ("store_true", "store_false"):
                        held = action == "store_true"
                    elif action == "BooleanOptionalAction":
                        held = not negated
                    elif action is None and word is not None and not set(word) & set("$`"):
                        held = word
                        if number is not None:  # `type=int` (or an int default): 8, not '8'
                            with contextlib.suppress(ValueError):
                                held = number(word)
                    else:  # a count, an append, a value from a shell variable: not known
                        held = None
                values.append(held)
            same = all(each == values[0] and type(each) is type(values[0]) for each in values)
            self.options.setdefault(dest, values[0] if same else None)
            if isinstance(default, ast.Constant) and isinstance(value, str) and same and values[0] == value:
                self._remote_literal(default, role=dest)

    def _launch_options(self, pairs: tuple, strings: set[str], nullary: set[str]) -> list[tuple]:
        """One launch's (flag, value) pairs (`_given_options`) as argparse reads them against the script's options
        (`_argparse_options`), with (None, None) where it passes options through that the reader cannot see: a shell
        expansion of many words (`"$@"`, `$*`, `"${@:2}"`), or of one (`$EXTRA_ARGS`, `${ARGS}`) that is no option's
        value (after a switch, `--pin $EXTRA`, it is none) and fills no positional argument left."""
        options: list[tuple] = []
        filled = 0

        def alone(word: str) -> None:  # a word of its own: a positional argument's, or words passed through
            nonlocal filled
            if _MANY.fullmatch(word):
                options.append((None, None))
            elif filled < self.positional_words:
                filled += 1
            elif _EXPANSION.fullmatch(word):
                options.append((None, None))

        for flag, word in pairs:
            if flag == "":
                alone(word)
                continue
            read = _argparse_options(flag, word, strings, nullary, self.allow_abbrev)
            options.extend(read)
            option, value = read[-1]
            if option in nullary and value is not None and value == word:
                alone(value)  # `--pin $EXTRA`: a switch takes no value, the word is one of its own
            elif word is not None and value == word and _MANY.fullmatch(word):
                options.append((None, None))  # `--data "$@"`: the first word its value, the rest passed through
        return options

    def _parser(self, node: ast.Call) -> None:
        """`argparse.ArgumentParser(allow_abbrev=False)`: the launch's long options are read whole only."""
        for keyword in node.keywords:
            if keyword.arg == "allow_abbrev" and isinstance(keyword.value, ast.Constant) and not keyword.value.value:
                self.allow_abbrev = False

    def holds_options(self, node: ast.AST) -> bool:
        """Whether `node` holds the parsed command-line options, for every fact that reads an option: a name of
        `namespaces` (`args`, `opts`, `hparams = parser.parse_args()`), or `self.args` in a method of a class that
        binds it to one of those (`self.args = args`, `self.hparams = hparams`; `RemoteReads.holder`)."""
        if isinstance(node, ast.Name):
            return node.id in self.namespaces
        if isinstance(node, ast.Attribute) and self.remote is not None and dotted(node.value) == "self":
            return self.remote.holder(node) in self.namespaces
        return False

    def resolve(self, node: ast.AST | None, options: dict | None = None) -> object:
        """A literal value, `args.x` (any holder of the parsed options: `hparams.x`, `self.args.x`;
        `holds_options`) as the job's launch lines give it, else its default (`self.options`, or `options`), NAME
        through module constants; else None."""
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Attribute) and self.holds_options(node.value):
            self.read.add(node.attr)
            return (self.options if options is None else options).get(node.attr)
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        if isinstance(node, ast.IfExp) and options is None:  # the remote reads read these their own way (`Remote
            holds = self.condition(node.test)  # Reads`: a remote branch is the one, as the job's data is remote)
            self.read.update(  # both branches' options: another value of the test's takes the other
                each.attr
                for each in ast.walk(node)
                if isinstance(each, ast.Attribute) and self.holds_options(each.value)
            )
            if holds is not None:
                return self.resolve(node.body if holds else node.orelse)
            body, orelse = self.resolve(node.body), self.resolve(node.orelse)
            return body if body == orelse and type(body) is type(orelse) else None
        return None

    def condition(self, test: ast.AST) -> bool | None:
        """Whether a conditional expression's test holds as the job runs: through the options' defaults and module
        constants where it reads them (`args.device == "cuda"`, `not args.no_cuda`, `args.debug` of a store_true),
        else as a GPU job's training run has it: on the GPU (`torch.cuda.is_available()`, `use_cuda`, `device ==
        "cuda"`; `args.cpu`, `device == "cpu"` not), not a debug run (`debug`, `smoke_test`, `dry_run`); else None."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            holds = self.condition(test.operand)
            return None if holds is None else not holds
        if isinstance(test, ast.BoolOp):
            each = [self.condition(value) for value in test.values]
            decisive = isinstance(test.op, ast.Or)  # a True settles `or`, a False settles `and`
            return decisive if decisive in each else (not decisive if None not in each else None)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.NotEq):
            left, right = self.resolve(test.left), self.resolve(test.comparators[0])
            if left is None or right is None:  # `device == "cuda"` with the device not known: a GPU job's
                known = str(left if right is None else right).lower().split(":")[0]
                equal = {"cuda": True, "gpu": True, "cpu": False}.get(known) if {left, right} != {None} else None
            else:
                equal = left == right
            return None if equal is None else equal == isinstance(test.ops[0], ast.Eq)
        value = self.resolve(test)
        if value is not None:
            return bool(value)
        name = dotted(test.func if isinstance(test, ast.Call) else test).rsplit(".", 1)[-1].lower()
        if (name == "is_available" and "cuda" in dotted(getattr(test, "func", test))) or name in _GPU_NAMES:
            return True
        if name in _CPU_NAMES or name in _DEBUG_NAMES:
            return False
        return None

    def setting(self, node: ast.AST | None) -> object:
        """A precision setting's value, as `resolve`, but None (the command line's) where it reads a switch the
        command line turns (`enabled=args.amp` of a store_true `--amp`): its default is only what the job runs with
        when no one passes it, and whether anyone did is the launch line's to say (the rules read it there). Where the
        script's launch lines turn it on (`--use-amp`, a switch of any name: the rules know only --bf16, --fp16, --amp
        and --half on a launch line), it is on."""
        if node is not None and any(
            isinstance(each, ast.Attribute) and each.attr in self.switches and self.holds_options(each.value)
            for each in ast.walk(node)
        ):  # `enabled=args.amp`, `bf16=True if args.bf16 else False`
            value = self.resolve(node) if self.given else None
            return value or None  # off, or not known: the launch line's to settle, as before
        return self.resolve(node)

    def resolve_given(self, node: ast.AST | None) -> object:
        """As `resolve`, with `args.x` the value the job's launch lines give the option (else its default): what its
        remote reads read."""
        return self.resolve(node, self.options)

    def _remote_literal(self, node: ast.Constant, role: str) -> None:
        value = node.value
        if isinstance(value, str) and value.startswith(REMOTE_SCHEMES):
            purpose = "write" if _WRITE_ROLE.search(role) else ("read" if _DATA_ROLE.search(role) else "unknown")
            self.add("remote_path", node, url=value, role=role, purpose=purpose)

    # --- structure ---
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            self._import(node.module, node)

    def _import(self, module: str, node: ast.AST) -> None:
        top = module.split(".")[0]
        if top in DL_FRAMEWORKS:
            self.ev.frameworks.add(top)
            self.add("framework_import", node, module=module)
            if top == "torch" and self.torch_imported_at is None:
                self.torch_imported_at = node.lineno

    def _loop(self, node: ast.AST) -> None:
        self.loops.append((node, _is_step_loop(node)))
        if self.loops[-1][1] and isinstance(node, ast.For | ast.AsyncFor):
            iterated = node.iter.target if isinstance(node.iter, ast.NamedExpr) else node.iter  # `in (loader := ...)`
            if isinstance(iterated, ast.Name):
                self.step_iterables.add(iterated.id)
        self.generic_visit(node)
        self.loops.pop()

    visit_For = _loop
    visit_While = _loop
    visit_AsyncFor = _loop

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        if self.remote is not None:  # `with files[index] as handle:` opens one of fsspec.open_files' files
            function = next((scope[1] for scope in reversed(self.scopes) if scope[0] == "function"), None)
            for item in node.items:
                detail = self.remote.entered(item, (function, self.in_step_loop))
                if detail is not None:
                    self._add("remote_read", item.context_expr, detail)
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self.guards.append(_has_modulo(node.test))
        for child in node.body:
            self.visit(child)
        self.guards.pop()
        self.guards.append(False)
        for child in node.orelse:
            self.visit(child)
        self.guards.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scopes.append(("class", node.name, [dotted(base) for base in node.bases]))
        self.generic_visit(node)
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        # A function body is its own scope: loops around a call site are not seen here.
        loops, guards = self.loops, self.guards
        self.loops, self.guards = [], []
        owner = self.scopes[-1] if self.scopes and self.scopes[-1][0] == "class" else None
        name = f"{owner[1]}.{node.name}" if owner else node.name
        if self.remote is not None:
            self.remote.enter(name)
            if owner:
                self.remote.hook(name, node.name, owner[2])
        self.scopes.append(("function", name, []))
        self.generic_visit(node)
        self.scopes.pop()
        self.loops, self.guards = loops, guards

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        # A lambda handed as a `.map` callback or a `collate_fn` (or bound to a name, `fetch = lambda k: ...`) is a
        # function of its own, for where its reads run (any other lambda's body is read as part of the function it
        # is written in). Loops around it still count: one made in the step loop is made, and used, every step.
        name = self.remote.lambda_name(node) if self.remote is not None else None
        if name is None:
            self.generic_visit(node)
            return
        self.remote.enter(name)
        self.scopes.append(("function", name, []))
        self.generic_visit(node)
        self.scopes.pop()

    @property
    def in_loop(self) -> bool:
        return bool(self.loops)

    @property
    def in_step_loop(self) -> bool:
        return any(is_step for _, is_step in self.loops)

    @property
    def sampled(self) -> bool:
        return any(self.guards)

    def visit_Assign(self, node: ast.Assign) -> None:
        if isinstance(node.value, ast.Call) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.assigned_to[id(node.value)] = node.targets[0].id
        for target in node.targets:  # detectron2: cfg.SOLVER.AMP.ENABLED = True
            if dotted(target).upper().endswith("SOLVER.AMP.ENABLED"):
                value = self.setting(node.value)
                if value is True:
                    self.add("mixed_precision", node, call=dotted(target), dtype=None)
                elif value is None:
                    self.add(
                        "precision_elsewhere", node, source="flags", why=f"`{_line_of(self, node)}` follows a flag"
                    )
        if isinstance(node.value, ast.Call) and dotted(node.value.func) == "dict":  # mmengine's optim_wrapper
            kind = next((self.resolve(kw.value) for kw in node.value.keywords if kw.arg == "type"), None)
            if kind == "AmpOptimWrapper":
                self.add("mixed_precision", node, call="AmpOptimWrapper", dtype=None)
            elif kind == "ApexOptimWrapper" and _apex_level(node.value, self.resolve) in ("O1", "O2", "O3"):
                # NVIDIA Apex's AMP (fp16 only): O1 and O2 are mixed, O3 pure fp16; O0 is fp32 (`_mmengine_config`)
                self.add("mixed_precision", node, call="ApexOptimWrapper", dtype="fp16")
        for target in node.targets:
            if (
                isinstance(target, ast.Subscript)
                and dotted(target.value) == "os.environ"
                and isinstance(target.slice, ast.Constant)
                and target.slice.value == "CUDA_VISIBLE_DEVICES"
            ):
                self._visible_devices(node, self.resolve(node.value))
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr | ast.AnnAssign) -> None:
        """`(loader := DataLoader(...))` and `loader: DataLoader = DataLoader(...)` bind the call's name as `loader =
        DataLoader(...)` does (which loader feeds the training loop is told by it)."""
        if isinstance(node.value, ast.Call) and isinstance(node.target, ast.Name):
            self.assigned_to[id(node.value)] = node.target.id
        self.generic_visit(node)

    visit_AnnAssign = visit_NamedExpr

    def _visible_devices(self, node: ast.AST, value: object) -> None:
        after_torch = self.torch_imported_at is not None and node.lineno > self.torch_imported_at
        devices = [d for d in str(value).split(",") if d.strip()] if value is not None else []
        self.add("cuda_visible_devices", node, value=value, devices=len(devices), after_framework_import=after_torch)

    # --- calls ---
    def visit_Call(self, node: ast.Call) -> None:
        name = dotted(node.func)
        last = name.rsplit(".", 1)[-1] if name else (node.func.attr if isinstance(node.func, ast.Attribute) else "")
        kwargs = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        loop = {"in_loop": self.in_loop, "in_step_loop": self.in_step_loop, "sampled": self.sampled}

        if last == "DataLoader":
            pin = self.resolve(kwargs.get("pin_memory"))
            workers = self.resolve(kwargs.get("num_workers")) if "num_workers" in kwargs else 0
            self.add(
                "dataloader",
                node,
                assigned_to=self.assigned_to.get(id(node)),
                pin_memory=pin if "pin_memory" in kwargs else False,
                pin_memory_given="pin_memory" in kwargs,
                num_workers=workers,
                prefetch_factor=self.resolve(kwargs.get("prefetch_factor")),
                persistent_workers=self.resolve(kwargs.get("persistent_workers")),
                batch_size=self.resolve(kwargs.get("batch_size")),
            )
        elif last == "TrainingArguments":
            self.add(
                "training_arguments",
                node,
                pin_memory=self.resolve(kwargs.get("dataloader_pin_memory"))
                if "dataloader_pin_memory" in kwargs
                else True,
                num_workers=self.resolve(kwargs.get("dataloader_num_workers")) or 0,
                batch_size=self.resolve(kwargs.get("per_device_train_batch_size")),
            )
        elif last in ("to", "cuda") and isinstance(node.func, ast.Attribute) and self.in_loop:
            non_blocking = self.resolve(kwargs.get("non_blocking")) is True
            target = node.args[0] if node.args else None
            device_like = last == "cuda" or (
                target is not None and ("device" in ast.unparse(target) or "cuda" in ast.unparse(target))
            )
            if device_like:
                self.add("device_copy", node, non_blocking=non_blocking, **loop)
        elif last in SAVE_CALLS and (
            name.startswith(("torch.", "tf.", "accelerator.", "trainer.", "dcp.")) or last != "save"
        ):
            if not name.startswith(("np.", "numpy.", "joblib.", "plt.", "pickle.")):
                self.add("save_call", node, call=name or last, **loop)
        elif last in UPLOAD_METHODS or name in ("wandb.save", "mlflow.log_artifacts", "mlflow.log_artifact"):
            # wandb.save links the files into the run's directory and returns; W&B's own process uploads them.
            background = {"background": True} if name == "wandb.save" else {}
            self.add("upload_call", node, call=name or last, **loop, **background)
        elif name in ("subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.Popen", "os.system"):
            argv = self._argv(node)
            if argv:
                self._command_facts(argv, node, loop)
        elif (
            last in SYNC_METHODS
            and isinstance(node.func, ast.Attribute)
            and not node.args
            and self.in_step_loop
            and not (last == "numpy" and dotted(getattr(node.func.value, "func", None)).rsplit(".", 1)[-1] == "cpu")
        ):  # `x.cpu().numpy()` waits once, at `.cpu()`: `.numpy()` of a tensor on the CPU waits for nothing
            self.add("host_sync", node, call=last, sampled=self.sampled)
        elif name in ("torch.cuda.synchronize", "cuda.synchronize") and self.in_step_loop:
            self.add("host_sync", node, call="torch.cuda.synchronize", sampled=self.sampled)
        elif last in ("autocast", "GradScaler") or name in ("torch.amp.autocast", "torch.cuda.amp.autocast"):
            enabled = self.setting(kwargs.get("enabled")) if "enabled" in kwargs else True
            if enabled is None:  # autocast(enabled=args.amp): the flag decides
                self.add("precision_elsewhere", node, source="flags", why=f"`{_line_of(self, node)}` follows a flag")
            elif enabled:
                dtype = next((dotted(a) for a in [*node.args, *kwargs.values()] if "16" in dotted(a)), "")
                self.add("mixed_precision", node, call=name or last, dtype=dtype.rsplit(".", 1)[-1] or None)
        elif last in ("half", "bfloat16") and isinstance(node.func, ast.Attribute) and not node.args:
            self.add("mixed_precision", node, call=last, dtype="float16" if last == "half" else "bfloat16")
        elif last == "DataParallel":
            self.add("data_parallel", node)
        elif last in ("DistributedDataParallel", "DDP", "FullyShardedDataParallel", "FSDP"):
            self.add("ddp", node)
        elif name.endswith("init_process_group"):
            self.add("init_process_group", node, backend=self.resolve(node.args[0]) if node.args else None)
        elif last in ("all_reduce", "all_gather", "broadcast") and self.in_loop:
            self.add("manual_collective", node, call=name, **loop)
        elif last == "from_pretrained":
            source = self.resolve(node.args[0]) if node.args else None
            local = self.resolve(kwargs.get("local_files_only")) is True
            if not local and isinstance(source, str) and not source.startswith(("/", ".", "~")):
                self.add("hub_download", node, call=name, source=source)
        elif (last in HUB_CALLS or name == "torch.hub.load") and not (self.remote and self.remote.streams(node)):
            # A dataset streamed (load_dataset(..., streaming=True)) downloads nothing up front: a remote_read.
            self.add("hub_download", node, call=name, source=self.resolve(node.args[0]) if node.args else None)
        elif name == "torch.device" or last == "set_device":
            value = self.resolve(node.args[0]) if node.args else None
            if isinstance(value, str) and re.fullmatch(r"cuda:\d+", value):
                self.add("fixed_device", node, device=value)
        elif (
            name in ("os.environ.__setitem__", "os.putenv", "os.environ.setdefault")
            and node.args
            and self.resolve(node.args[0]) == "CUDA_VISIBLE_DEVICES"
        ):
            self._visible_devices(node, self.resolve(node.args[1]) if len(node.args) > 1 else None)
        # only the settings these read (resolving every call's, `lr=args.lr` too, would tie the file's reading to
        # every option's value: `ScriptEvidence.option_flags`)
        settings = {key: self.setting(kwargs[key]) for key in _PRECISION_KWARGS.get(last, ()) if key in kwargs}
        precision = _precision_setting(last, settings)
        if precision:
            self.add("mixed_precision", node, call=name or last, dtype=precision)
        elif last == "Accelerator" and _accelerate_off(self.resolve(kwargs.get("mixed_precision"))):
            self.add(
                "full_precision", node, setting="Accelerator(mixed_precision)", accelerate=True,
                switch="mixed_precision='no'",
            )  # fmt: skip
        elif switch := _full_precision_switch(last, settings):
            self.add("full_precision", node, setting=last, switch=switch)
        elif handoff := self._precision_handoff(name, last, node, kwargs):
            self.add("precision_elsewhere", node, **handoff)
        if last in ("open", "read_parquet", "read_csv", "load", "read_table", "ParquetFile") and node.args:
            value = self.resolve_given(node.args[0])
            if isinstance(value, str) and value.startswith(REMOTE_SCHEMES):
                self.add("remote_path", node, url=value, role=name, purpose="read")
        if self.remote is not None:
            self._remote_read(node, name, last)
        self.generic_visit(node)

    def _remote_read(self, node: ast.Call, name: str, last: str) -> None:
        """A read through an object-store or HTTP client (`remote_read`), and the calls that tell, after the walk,
        which functions run per sample (what a function calls, what it hands to `.map` or `collate_fn`)."""
        function = next((scope[1] for scope in reversed(self.scopes) if scope[0] == "function"), None)
        owner = next((scope[1] for scope in reversed(self.scopes) if scope[0] == "class"), None)
        if isinstance(node.func, ast.Name):
            self.remote.called(function, node.func.id)
        elif isinstance(node.func, ast.Attribute) and dotted(node.func.value) == "self" and owner:
            self.remote.called(function, f"{owner}.{node.func.attr}")
        self.remote.callback(node, last, owner)
        detail = self.remote.read(node, name, last, (function, self.in_step_loop))
        if detail is not None:
            self._add("remote_read", node, detail)

    def _precision_handoff(self, name: str, last: str, node: ast.Call, kwargs: dict) -> dict | None:
        """Where a call takes the job's precision from when its code does not say: source 'flags' for the
        command line (HfArgumentParser, `bf16=args.bf16`), 'config' for a config file (DeepSpeed's JSON,
        Accelerate's config, Hydra/OmegaConf, detectron2's and mmengine's configs; `needs` names the kind
        of config file that settles it: deepspeed, accelerate, yaml or any), and why, in words."""
        quoted = f"`{_line_of(self, node)}`"
        if last in _PRECISION_KWARGS:
            names = _PRECISION_KWARGS[last]
            given = [kwargs[key] for key in names if key in kwargs and self.setting(kwargs[key]) is None]
            if given:  # bf16=args.bf16 without a default, precision=cfg.trainer.precision
                # args.bf16, self.hparams.bf16, FLAGS.bf16, `True if args.bf16 else False`
                if any(
                    isinstance(each, ast.Attribute) and self.holds_options(each.value) for each in ast.walk(given[0])
                ):
                    return {"source": "flags", "why": f"{quoted} sets it from a command-line flag"}
                return {"source": "config", "needs": "any", "why": f"{quoted} sets it from a variable"}
            if any(kw.arg is None for kw in node.keywords) and last != "Trainer":  # TrainingArguments(**cfg)
                return {"source": "config", "needs": "any", "why": f"{quoted} takes its settings from a mapping"}
            if last == "Accelerator" and "mixed_precision" not in kwargs:
                why = f"{quoted} takes mixed_precision from `accelerate launch` or Accelerate's config file"
                return {"source": "config", "needs": "accelerate", "why": why}
            return None
        if last == "HfArgumentParser":
            return {"source": "flags", "why": f"{quoted} reads --bf16/--fp16 from the command line"}
        if name in ("deepspeed.initialize", "deepspeed.init_inference"):
            return {
                "source": "config",
                "needs": "deepspeed",
                "why": f"{quoted} takes fp16/bf16 from a DeepSpeed config",
            }
        if name in ("hydra.main", "OmegaConf.load", "hydra.compose", "compose", "initialize_config_dir"):
            return {"source": "config", "needs": "yaml", "why": f"{quoted} reads a Hydra/OmegaConf config"}
        if last == "merge_from_file":  # detectron2's cfg.merge_from_file(args.config_file)
            return {"source": "config", "needs": "yaml", "why": f"{quoted} reads a detectron2 config"}
        if name.endswith("Config.fromfile"):  # mmengine
            return {"source": "config", "needs": "any", "why": f"{quoted} reads an mmengine config"}
        return None

    def _argv(self, node: ast.Call) -> list[str]:
        if not node.args:
            return []
        first = node.args[0]
        if isinstance(first, ast.List | ast.Tuple):
            return [str(v) if (v := self.resolve(e)) is not None else "?" for e in first.elts]
        value = self.resolve(first)
        if isinstance(value, str):
            try:
                return shlex.split(value)
            except ValueError:
                return value.split()
        return []

    def _command_facts(self, argv: list[str], node: ast.AST, loop: dict) -> None:
        kind = _command_kind(argv)
        if not kind and _copy_to_named_remote(argv, node):
            kind = "upload"
        if kind == "upload":
            self.add("upload_call", node, call=" ".join(argv[:3]), **loop)
        elif kind == "download":
            self.add("hub_download", node, call=" ".join(argv[:2]), source=argv[-1])


_REMOTE_NAME = re.compile(r"remote|upload|dest|target|bucket|s3|gcs|uri|url", re.IGNORECASE)


def _copy_to_named_remote(argv: list[str], node: ast.AST) -> bool:
    """`subprocess.run(["aws", "s3", "cp", "--recursive", local, remote])`: an object-store copy whose paths are
    variables (unresolved, '?'), the last one named for a remote place (remote, upload_to, dest, bucket, s3_uri):
    an upload. Its direction is read from the names written in the call, when nothing else tells it."""
    words = [w for w in argv if not w.startswith("-")]
    copying = (words[:3] in (["aws", "s3", "cp"], ["aws", "s3", "sync"], ["aws", "s3", "mv"])) or (
        words[:1] in (["gsutil"], ["azcopy"]) and any(w in words for w in ("cp", "copy", "rsync"))
    )
    if not copying or words[-1] != "?" or not isinstance(node, ast.Call) or not node.args:
        return False
    listed = node.args[0]
    if not isinstance(listed, ast.List | ast.Tuple) or not listed.elts:
        return False
    last = listed.elts[-1]
    name = dotted(last) or (ast.unparse(last) if isinstance(last, ast.JoinedStr) else "")
    return bool(_REMOTE_NAME.search(name))


# --- Shell ----------------------------------------------------------------------------------------


def _precision_setting(call: str, kwargs: dict) -> str | None:
    """The reduced precision a trainer is set to: HF `TrainingArguments(bf16=True)` / `fp16=True`, Lightning
    `Trainer(precision="16-mixed")` / `"bf16-mixed"` / 16, Accelerate `Accelerator(mixed_precision="bf16")`."""
    if call in ("TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig"):
        return next((flag for flag in ("bf16", "fp16") if kwargs.get(flag) is True), None)
    if call == "Trainer" and "precision" in kwargs:
        value = str(kwargs["precision"])
        return ("bf16" if value.startswith("bf16") else "fp16") if value.split("-")[0] in ("16", "bf16") else None
    if call == "Accelerator":
        value = kwargs.get("mixed_precision")
        return value if value in ("fp16", "bf16", "fp8") else None
    return None


def _full_precision_switch(call: str, kwargs: dict) -> str | None:
    """The setting that keeps a trainer in fp32, as code: `bf16=False` in HF TrainingArguments (no flag set to
    True), Lightning's `precision='32'`. None when nothing says so."""
    if call in ("TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig"):
        return next((f"{flag}=False" for flag in ("bf16", "fp16") if kwargs.get(flag) is False), None)
    if call == "Trainer" and str(kwargs.get("precision")) in _LIGHTNING_FULL:
        return f"precision={kwargs['precision']!r}"
    return None


_PRECISION_FLAGS = ("--fp16", "--bf16", "--half", "--amp")


def _shell_precision(argv: list[str]) -> str | None:
    """A launch's mixed-precision flag: `--bf16`, `--fp16 True`, `--mixed_precision bf16` (accelerate launch)."""
    for index, word in enumerate(argv):
        flag, _, value = word.partition("=")
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if flag in _PRECISION_FLAGS:
            value = value or ("" if following.startswith("-") else following)
            if value.lower() not in ("false", "0", "no"):
                return flag.lstrip("-")
        elif flag in ("--mixed_precision", "--mixed-precision", "--precision"):
            value = value or following
            if value.split("-")[0] in ("fp16", "bf16", "16", "fp8"):
                return value
    return None


# --- Configs --------------------------------------------------------------------------------------

CONFIG_SUFFIXES = (".json", ".yaml", ".yml")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CONFIG_NODES = 20_000  # a config's keys and items looked at, at most (YAML aliases can multiply a walk)
# Keys whose mapping holds `enabled:` (DeepSpeed's "bf16": {"enabled": true}, detectron2's AMP: {ENABLED: true}).
_ENABLED_SECTIONS = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "amp": None}
# Keys that switch reduced precision on or off (HF TrainingArguments in LLaMA-Factory / axolotl YAML, flags).
_SWITCHES = {"bf16": "bf16", "fp16": "fp16", "amp": None, "use_amp": None, "use_fp16": "fp16", "use_bf16": "bf16"}
_LIGHTNING_REDUCED = {"16", "bf16", "16-mixed", "bf16-mixed", "16-true", "bf16-true", "transformer-engine"}
_LIGHTNING_FULL = {"32", "64", "32-true", "64-true"}
_DEEPSPEED_KEYS = {"train_batch_size", "train_micro_batch_size_per_gpu", "zero_optimization"}


def precision_value(key: str, value: object) -> tuple[str, str | None] | None:
    """What one setting says of precision: ('mixed', dtype), ('full', None), ('auto', None) or None when it is
    no precision setting. `key` is the setting's last name (`trainer.precision` -> `precision`)."""
    name = key.lower().replace("-", "_")
    if isinstance(value, dict) and name in _ENABLED_SECTIONS:
        enabled = next((v for k, v in value.items() if str(k).lower() == "enabled"), None)
        return _switch(enabled, _ENABLED_SECTIONS[name])
    if name in _SWITCHES:
        return _switch(value, _SWITCHES[name])
    if name == "mixed_precision":  # Accelerate: no | fp16 | bf16 | fp8 (YAML reads a bare `no` as false)
        if value is False or str(value).lower() in ("no", "false", "0"):
            return "full", None
        if str(value).lower() in ("fp16", "bf16", "fp8"):
            return "mixed", str(value).lower()
        return _switch(value, None)
    if name == "precision" and not isinstance(value, bool) and isinstance(value, int | str):
        text = str(value).lower()
        if text in _LIGHTNING_REDUCED:
            return "mixed", "bf16" if text.startswith("bf16") else ("fp16" if text.startswith("16") else text)
        if text in _LIGHTNING_FULL:
            return "full", None
    return None


def _apex_level(call: ast.Call, resolve) -> str | None:
    """The opt_level of mmengine's `dict(type='ApexOptimWrapper', opt_level=...)`: its default, O1, when not given;
    None when it cannot be resolved."""
    value = next((resolve(kw.value) for kw in call.keywords if kw.arg == "opt_level"), "O1")
    return value.upper() if isinstance(value, str) else None


def _accelerate_off(value: object) -> bool:
    """Accelerate's mixed_precision set to `no` (YAML reads a bare `no` as false)."""
    return value is False or (isinstance(value, str) and value.lower() in ("no", "false"))


def _switch(value: object, dtype: str | None) -> tuple[str, str | None] | None:
    if value is True or (isinstance(value, str) and value.lower() == "true"):
        return "mixed", dtype
    if value is False or (isinstance(value, str) and value.lower() == "false"):
        return "full", None
    if isinstance(value, str) and value.lower() == "auto":  # DeepSpeed under HF Trainer, axolotl
        return "auto", None
    return None


def _config_facts(path: str, text: str, evidence: ScriptEvidence) -> None:
    """A JSON or YAML config's precision settings, each a fact at the line of its key: DeepSpeed's
    `"bf16": {"enabled": true}`, Accelerate's `mixed_precision: bf16`, Lightning / Hydra / NeMo's
    `precision: bf16-mixed`, detectron2's `AMP: {ENABLED: true}`, `bf16: true` (HF arguments in YAML).
    A DeepSpeed or Accelerate config that sets none means their default, fp32."""
    try:
        if path.lower().endswith(".json"):
            documents = [json.loads(text)]
        else:
            documents = [doc for _, doc in zip(range(8), yaml.load_all(text, Loader=_YAML_LOADER), strict=False)]
    except (ValueError, yaml.YAMLError) as exc:
        evidence.parse_errors.append(f"{path}: {str(exc).splitlines()[0][:200] if str(exc) else 'not readable'}")
        return
    except (RecursionError, MemoryError):
        evidence.parse_errors.append(f"{path}: nested too deeply to be read")
        return
    lines = text.splitlines()
    for document in documents:
        if not isinstance(document, dict):
            continue
        evidence.config_files += 1
        keys = {str(k).lower() for k in document}
        tool = "other"
        if keys & _DEEPSPEED_KEYS:
            tool = "deepspeed"
        elif {"compute_environment", "distributed_type"} <= keys:
            tool = "accelerate"
        evidence.facts.append(CodeFact("config_file", path, 1, "", {"tool": tool}))
        if tool == "deepspeed":
            _zero_fact(path, document, lines, evidence)
        # Accelerate handing DeepSpeed its own file: precision is that file's (accelerate refuses its own
        # mixed_precision then), so the file is a config reference, settled only if the job brought it.
        section = next((v for k, v in document.items() if str(k).lower() == "deepspeed_config"), None)
        handed = section.get("deepspeed_config_file") if tool == "accelerate" and isinstance(section, dict) else None
        handed = handed.strip() if isinstance(handed, str) else None
        if tool == "accelerate" and isinstance(section, dict) and not handed:
            _accelerate_zero_fact(path, section, lines, evidence)
        if tool == "accelerate":
            _launch_config_fact(path, document, lines, evidence)
        if handed:
            line = _key_line(lines, ("deepspeed_config", "deepspeed_config_file"))
            shown = f"deepspeed_config_file: {handed}"
            evidence.facts.append(
                CodeFact("config_reference", path, line, shown, {"name": handed, "flag": "deepspeed_config_file"})
            )
        found = 0
        for trail, verdict, dtype, value in _precision_settings(document):
            if handed and trail == ("mixed_precision",):
                continue
            found += 1
            line = _key_line(lines, trail)
            shown = f"{'.'.join(trail)}: {json.dumps(value) if not isinstance(value, str) else value}"
            setting = ".".join(trail)
            if verdict == "mixed":
                evidence.facts.append(CodeFact("mixed_precision", path, line, shown, {"call": setting, "dtype": dtype}))
            elif verdict == "full":
                marked = {"accelerate": True} if tool == "accelerate" else {}
                detail = {"setting": setting, "switch": shown, **marked}
                evidence.facts.append(CodeFact("full_precision", path, line, shown, detail))
            else:
                # DeepSpeed's "auto": the HF Trainer fills it from its --bf16/--fp16, Accelerate from its own
                # mixed_precision (`_precision` in the rules tells which the job runs under).
                why = f"`{shown}` in {path} leaves it to the trainer's --bf16/--fp16"
                evidence.facts.append(
                    CodeFact("precision_elsewhere", path, line, shown, {"source": "flags", "why": why, "auto": True})
                )
        if not found and not handed and tool in ("deepspeed", "accelerate"):
            said = "no fp16/bf16 section" if tool == "deepspeed" else "no mixed_precision"
            marked = {"accelerate": True} if tool == "accelerate" else {}
            evidence.facts.append(
                CodeFact("full_precision", path, 1, f"{said} (the {tool} default: fp32)", {"setting": tool, **marked})
            )


def _zero_fact(path: str, document: dict, lines: list[str], evidence: ScriptEvidence) -> None:
    """A DeepSpeed config's ZeRO settings: its stage (a number) and where it offloads the optimizer state and the
    parameters (`offload_optimizer: {device: cpu}`, `nvme`; none or `device: none` is no offload)."""
    zero = next((v for k, v in document.items() if str(k).lower() == "zero_optimization"), None)
    if not isinstance(zero, dict):
        return
    stage = zero.get("stage")
    detail: dict = {"stage": stage if isinstance(stage, int) and not isinstance(stage, bool) else None}
    for key, name in (("offload_optimizer", "optimizer"), ("offload_param", "param")):
        section = zero.get(key)
        device = section.get("device") if isinstance(section, dict) else None
        if isinstance(device, str) and device.lower() in ("cpu", "nvme"):
            detail[f"offload_{name}"] = device.lower()
    line = _key_line(lines, ("zero_optimization", "stage"))
    shown = "zero_optimization: " + ", ".join(f"{k}={v}" for k, v in detail.items() if v is not None)
    evidence.facts.append(CodeFact("zero_config", path, line, shown, detail))


def _accelerate_zero_fact(path: str, section: dict, lines: list[str], evidence: ScriptEvidence) -> None:
    """An Accelerate config's DeepSpeed settings (`deepspeed_config:` with `zero_stage: 3`,
    `offload_optimizer_device: cpu`, `offload_param_device: nvme`; `none` is no offload), as the zero_config
    fact a DeepSpeed config gives. Not when it hands DeepSpeed its own file: that file's are the job's."""
    stage = section.get("zero_stage")
    if not isinstance(stage, int) or isinstance(stage, bool):
        return
    detail: dict = {"stage": stage}
    shown = [f"zero_stage={stage}"]
    for key, name in (("offload_optimizer_device", "optimizer"), ("offload_param_device", "param")):
        device = section.get(key)
        if isinstance(device, str) and device.lower() in ("cpu", "nvme"):
            detail[f"offload_{name}"] = device.lower()
            shown.append(f"{key}={device.lower()}")
    line = _key_line(lines, ("deepspeed_config", "zero_stage"))
    evidence.facts.append(CodeFact("zero_config", path, line, "deepspeed_config: " + ", ".join(shown), detail))


def _launch_config_fact(path: str, document: dict, lines: list[str], evidence: ScriptEvidence) -> None:
    """An Accelerate config's launch settings, which `accelerate launch` takes where its line gives none
    (`settle_launch_configs`): `distributed_type` (`NO`, which YAML may read as false: one process; MULTI_GPU,
    DEEPSPEED ...), `num_processes` (over all machines), `num_machines` (which a launch under srun shares them over,
    `_task_processes`) and `compute_environment`, a `launch_config` fact at the line of num_processes (else
    distributed_type)."""
    keys = {str(key).lower(): value for key, value in document.items()}
    kind = keys.get("distributed_type")
    detail: dict = {
        "distributed_type": "NO" if kind is False else str(kind),  # `distributed_type: NO` unquoted is YAML's false
        "compute_environment": str(keys.get("compute_environment")),
    }
    for key in ("num_processes", "num_machines"):
        count = keys.get(key)
        if isinstance(count, int) and not isinstance(count, bool):
            detail[key] = count
    line = _key_line(lines, ("num_processes",) if "num_processes" in detail else ("distributed_type",))
    shown = f"distributed_type: {detail['distributed_type']}" + (
        f", num_processes: {detail['num_processes']}" if "num_processes" in detail else ""
    )
    evidence.facts.append(CodeFact("launch_config", path, line, shown, detail))


def _precision_settings(document: object):
    """(keys leading to it, verdict, dtype, value) of every precision setting in a parsed config."""
    seen: set[int] = set()
    budget = [_CONFIG_NODES]
    stack: list[tuple[object, tuple[str, ...]]] = [(document, ())]
    while stack and budget[0] > 0:
        node, trail = stack.pop()
        if id(node) in seen:  # a YAML alias: the same mapping again
            continue
        seen.add(id(node))
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        children = []
        for key, value in items:
            budget[0] -= 1
            if budget[0] <= 0:
                break
            step = trail + (str(key),)
            if isinstance(key, str) and (verdict := precision_value(key, value)):
                shown = value
                if isinstance(value, dict):  # {"enabled": true}
                    enabled_key = next(k for k in value if str(k).lower() == "enabled")
                    step, shown = step + (str(enabled_key),), value[enabled_key]
                yield step, verdict[0], verdict[1], shown
            elif isinstance(value, dict | list):
                children.append((value, step))
        stack.extend(reversed(children))


def _key_line(lines: list[str], trail: tuple[str, ...]) -> int:
    """The 1-based line of the last key of `trail`, found after the lines of the keys before it (1 if not found)."""
    start, found = 0, 0
    for key in trail:
        if key.isdigit():
            continue  # a list's item
        pattern = re.compile(rf"""(?:^|[\s{{,\-])["']?{re.escape(key)}["']?\s*:""")
        for index in range(start, len(lines)):
            if pattern.search(lines[index]):
                start, found = index + 1, index + 1
                break
    return found or 1


_CONFIG_FLAGS = {
    "--deepspeed": "deepspeed",  # HF Trainer's --deepspeed ds_config.json
    "--deepspeed_config": "deepspeed",
    "--deepspeed-config": "deepspeed",
    "--deepspeed_config_file": "deepspeed",  # accelerate launch --use_deepspeed --deepspeed_config_file ds.json
    "--deepspeed-config-file": "deepspeed",
    "--config_file": "any",  # accelerate launch --config_file, detectron2 (older) --config-file
    "--config-file": "any",
    "--config": "any",
    "--cfg": "any",
    "--config-name": "yaml",  # Hydra: a name, its .yaml understood
    "--config_name": "yaml",
}


def _launch_settings(argv: list[str]) -> list[tuple[str, dict]]:
    """What a launch line says of precision beyond its flags: config files it names (`--deepspeed ds.json`,
    Accelerate's `--deepspeed_config_file ds.json`, `--config_file accelerate.yaml`, `--config-file configs/x.yaml`,
    Hydra's `--config-name`) and Hydra overrides (`trainer.precision=bf16-mixed`, `+amp=true`). (kind, detail) pairs."""
    found = []
    if off := _accelerate_precision_off(argv):
        found.append(("full_precision", {"setting": off[0], "accelerate": True, "switch": f"{off[0]} {off[1]}"}))
    for index, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if flag in _CONFIG_FLAGS:
            value = value if eq else (argv[index + 1] if index + 1 < len(argv) else "")
            hydra = _CONFIG_FLAGS[flag] == "yaml"
            if value and not value.startswith("-") and (hydra or value.lower().endswith(CONFIG_SUFFIXES)):
                name = value if not hydra or value.lower().endswith(CONFIG_SUFFIXES) else value + ".yaml"
                found.append(("config_reference", {"name": name, "flag": flag}))
        elif eq and not word.startswith("-") and re.fullmatch(r"[+~]{0,2}[A-Za-z_][\w.]*", flag):
            key = flag.lstrip("+~").rsplit(".", 1)[-1]
            try:
                parsed = yaml.safe_load(value) if value else None
            except yaml.YAMLError:
                parsed = value
            verdict = precision_value(key, parsed if isinstance(parsed, bool | int | str) else value)
            if verdict and verdict[0] == "mixed":
                found.append(("mixed_precision", {"call": flag.lstrip("+~"), "dtype": verdict[1]}))
            elif verdict and verdict[0] == "full":
                found.append(("full_precision", {"setting": flag.lstrip("+~"), "switch": word}))
    if zero := _accelerate_zero_flags(argv):
        found.append(("zero_config", zero))
    return found


def _accelerate_precision_off(argv: list[str]) -> tuple[str, str] | None:
    """(the option as written, its value) where `accelerate launch`'s own `--mixed_precision` (before the script it
    runs, the last one given) turns mixed precision off (`no`); None otherwise. The script's own option of that name,
    after it (`accelerate launch train.py --mixed_precision no`), is the script's."""
    program, words = _launcher_words(argv)
    if program != "accelerate" or (options := _launcher_options(program, words)) is None:
        return None
    value = options.get("--mixed_precision")
    if value is None or not _accelerate_off(value):
        return None
    spelled = [w.partition("=")[0] for w in words if w.partition("=")[0] in ("--mixed_precision", "--mixed-precision")]
    return spelled[-1], value


def _launcher_options(program: str, words: list[str]) -> dict[str, str] | None:
    """A launcher's own options, {option: value}, up to the script or program it runs (`train.py`, `-m module`,
    `python ...`; what follows is that program's own arguments), read as the launcher reads them. torchrun,
    deepspeed and `accelerate launch` parse theirs with argparse (`_LAUNCHER_PARSERS`): each option under its
    first spelling (`--nproc-per-node 8` as `--nproc_per_node`, `-i` as `--include`, `--num_accelerators` as
    `--num_gpus`), a switch with '', an option's value after `=`, glued to a short option (`-ilocalhost:0`) or the
    word after it, and the last value of an option given twice (`--nproc_per_node 1 --nproc_per_node 8`: 8); a
    unique prefix of an option string is that option (`--nproc_per 8`), and where the parser refuses a word (a
    prefix of two option strings) or its releases differ on it (`_launcher_option`) the launch is not known: None.
    A word the parser does not know takes the word after it as its value unless that one is an option. Another
    launcher's options (mpirun, not argparse) are read as written, and one given twice with two values is ''."""
    parser = _LAUNCHER_PARSERS.get(program)
    given: dict[str, str] = {}
    index = 1 if program == "accelerate" and words[:1] == ["launch"] else 0  # its command, then its options
    while index < len(words):
        word = words[index]
        index += 1
        if _runs_program(word) or word == "--":
            break
        flag, eq, value = word.partition("=")
        following = words[index] if index < len(words) else ""
        if parser is None:
            value = value if eq else following
            given[flag] = value if given.get(flag, value) == value else ""
            continue
        if not flag.startswith("-") or flag == "-" or _number(flag):
            if _EXPANSION.match(word):
                continue  # words the line does not show (`_unseen_launcher_words` says whether they matter)
            break  # the script it runs (argparse's first positional): the rest is the script's
        option, glued = _launcher_option(program, flag)
        if option is None:
            return None
        if option in parser[1]:
            given[option] = ""
        elif eq or glued is not None:
            given[option] = value if eq else glued
        elif option in parser[0]:  # takes the word after it, which may not be an option ("expected one argument")
            if following.startswith("-") and not _number(following):
                return None
            given[option], index = following, index + 1
        else:  # an option the parser does not know: the word after it is its value unless an option or the program
            takes = bool(following) and not following.startswith("-") and not _runs_program(following)
            given[option], index = following if takes else "", index + takes
    return given


def _launcher_option(program: str, flag: str) -> tuple[str | None, str | None]:
    """(option, glued value) of one of an argparse launcher's option words (the part before any `=`): the option's
    first spelling (`--nproc-per-node`, `--nproc_per`, `--nproc-per-n` all `--nproc_per_node`; `-ilocalhost:0` is
    `--include` with 'localhost:0'), as Python 3.11's argparse reads it (`_argparse_option`). (None, None) where
    argparse refuses it: a prefix of two option strings, even two spellings of one option (`--nproc` of
    `--nproc-per-node` and `--nproc_per_node`), and, for `accelerate launch`, any prefix (refused since Accelerate
    0.29, `allow_abbrev=False`, taken by older releases). A word the parser does not know is itself."""
    strings, _, abbrev = _LAUNCHER_PARSERS[program]
    if program == "accelerate" and flag.startswith("--") and (spelled := "--" + flag[2:].replace("-", "_")) in strings:
        flag = spelled  # `--num-processes`: Accelerate takes either spelling (0.29 and later)
    option, glued = _argparse_option(flag, None, set(strings), True)
    if isinstance(option, frozenset) or (option != flag and not abbrev and glued is None):
        return None, None
    return strings.get(option, option), glued


def _parser_options(valued: str, switches: str, abbrev: bool = True) -> tuple[dict[str, str], frozenset, bool]:
    """An argparse launcher's options, from its parser's `add_argument` calls: each action's option strings
    joined by `|` (its first spelling names it), those that take a value and those that take none; and whether the
    parser takes a unique prefix of an option string for it (`allow_abbrev`). ({option string: its first
    spelling}, the switches by first spelling, allow_abbrev)."""
    strings: dict[str, str] = {}
    named = []
    for kind, spec in ((0, valued), (1, switches)):
        for action in spec.split():
            spellings = action.split("|")
            strings |= dict.fromkeys(spellings, spellings[0])
            if kind:
                named.append(spellings[0])
    return strings, frozenset(named), abbrev


# The options of each launcher that parses its command line with argparse, as its parser (at its latest release;
# older ones have fewer) defines them: torchrun's in torch/distributed/run.py (get_args_parser), and
# torch.distributed.launch's --use-env; deepspeed's in deepspeed/launcher/runner.py (parse_args); accelerate launch's
# in accelerate/commands/launch.py (launch_command_parser, allow_abbrev=False since 0.29, where every option also
# takes its hyphen spelling). All of them are needed, not only those read: a prefix that two of them share is refused.
_LAUNCHER_PARSERS = {
    "torchrun": _parser_options(
        "--nnodes --nproc_per_node|--nproc-per-node --rdzv_backend|--rdzv-backend --rdzv_endpoint|--rdzv-endpoint "
        "--rdzv_id|--rdzv-id --rdzv_conf|--rdzv-conf --max_restarts|--max-restarts "
        "--monitor_interval|--monitor-interval --start_method|--start-method --event_log_handler|--event-log-handler "
        "--role --log_dir|--log-dir --redirects|-r --tee|-t --local_ranks_filter|--local-ranks-filter "
        "--node_rank|--node-rank --master_addr|--master-addr --master_port|--master-port --local_addr|--local-addr "
        "--logs_specs|--logs-specs --numa_binding|--numa-binding --signals_to_handle|--signals-to-handle",
        "--help|-h --standalone --module|-m --no_python|--no-python --run_path|--run-path --use_env|--use-env",
    ),
    "deepspeed": _parser_options(
        "--hostfile|-H --include|-i --exclude|-e --num_nodes --min_elastic_nodes --max_elastic_nodes "
        "--num_gpus|--num_accelerators --master_port --master_addr --node_rank --launcher --launcher_args "
        "--enable_each_rank_log --autotuning --comment --account --bind_core_list --ssh_port",
        "--help|-h --module --no_python --no_local_rank --no_ssh --no_ssh_check --force_multi --save_pid "
        "--elastic_training --bind_cores_to_rank",
    ),
    "accelerate": _parser_options(
        "--config_file --mixed_precision --num_processes --num_machines --num_cpu_threads_per_process "
        "--dynamo_backend --dynamo_mode --gpu_ids --machine_rank --main_process_ip --main_process_port --tee|-t "
        "--log_dir --role --rdzv_backend --rdzv_conf --max_restarts --monitor_interval --vm --env "
        "--main_training_function --deepspeed_config_file --zero_stage --offload_optimizer_device "
        "--offload_param_device --offload_optimizer_nvme_path --offload_param_nvme_path --gradient_accumulation_steps "
        "--gradient_clipping --zero3_init_flag --zero3_save_16bit_model --deepspeed_hostfile "
        "--deepspeed_exclusion_filter --deepspeed_inclusion_filter --deepspeed_multinode_launcher "
        "--deepspeed_moe_layer_cls_names --fsdp_offload_params --fsdp_min_num_params --fsdp_sharding_strategy "
        "--fsdp_auto_wrap_policy --fsdp_transformer_layer_cls_to_wrap --fsdp_backward_prefetch_policy "
        "--fsdp_backward_prefetch --fsdp_state_dict_type --fsdp_forward_prefetch --fsdp_use_orig_params "
        "--fsdp_cpu_ram_efficient_loading --fsdp_sync_module_states --fsdp_activation_checkpointing "
        "--megatron_lm_tp_degree --megatron_lm_pp_degree --megatron_lm_num_micro_batches "
        "--megatron_lm_sequence_parallelism --megatron_lm_recompute_activations "
        "--megatron_lm_use_distributed_optimizer --megatron_lm_gradient_clipping --fp8_backend --fp8_margin "
        "--fp8_interval --fp8_format --fp8_amax_history_len --fp8_amax_compute_algo --fp8_override_linear_precision "
        "--fp8_opt_level --aws_access_key_id --aws_secret_access_key --mpirun_hostfile --mpirun_ccl",
        "--help|-h --quiet|-q --cpu --multi_gpu --tpu --ipex --enable_cpu_affinity --dynamo_use_fullgraph "
        "--dynamo_use_dynamic --use_deepspeed --use_fsdp --use_megatron_lm --use_xpu --same_network --module|-m "
        "--no_python --tpu_cluster --no_tpu_cluster --tpu_use_sudo --downcast_bf16 --fp8_use_autocast_during_eval "
        "--debug --use_mps_device --fp16",
        abbrev=False,
    ),
}


def _runs_program(word: str) -> bool:
    """Whether a launcher's word is the script or program it runs (`train.py`, `-m module`, `python ...`), which ends
    the launcher's own options."""
    return word.endswith(".py") or word == "-m" or word.rsplit("/", 1)[-1].startswith("python")


def _accelerate_zero_flags(argv: list[str]) -> dict | None:
    """`accelerate launch --use_deepspeed --zero_stage 3 --offload_optimizer_device cpu` as a zero_config fact's
    detail (as an Accelerate config's `deepspeed_config:` gives it); None for other launches, and for one that hands
    DeepSpeed its own file (`--deepspeed_config_file`: that file's settings are the job's)."""
    program, argv = _program(argv)  # `srun accelerate launch ...`, `python -m accelerate.commands.launch ...` too
    if program != "accelerate":
        return None
    if (options := _launcher_options(program, argv)) is None:
        return None
    flags = {flag[2:]: value for flag, value in options.items()}  # each under its first spelling (`--zero_stage`)
    stage = flags.get("zero_stage", "")
    if "deepspeed_config_file" in flags or not stage.isdigit():
        return None
    detail: dict = {"stage": int(stage)}
    for key, name in (("offload_optimizer_device", "optimizer"), ("offload_param_device", "param")):
        if flags.get(key, "").lower() in ("cpu", "nvme"):
            detail[f"offload_{name}"] = flags[key].lower()
    return detail


# Programs that run the command after them, by their file's name, so by their path too (`/usr/bin/time srun ...`,
# `/usr/bin/nohup ...`, `/usr/bin/env ...`, `/opt/slurm/bin/srun ...`); `exec` is the shell's builtin, by its name only.
_WRAPPERS = ("sudo", "nohup", "time", "env", "srun", "stdbuf")
# A wrapper's own options before the command it runs, as getopt reads them, where some take a value (the rest of the
# word, else the next word): GNU time(1), "time [options] command [arguments...]": `-f FORMAT` (`--format=FORMAT`),
# `-o FILE` (`--output=FILE`) and the switches -a -p -q -v -V, `--` ending them (bash's own `time -p` too);
# coreutils stdbuf(1): `-i MODE`, `-o MODE`, `-e MODE` (`--input=`, `--output=`, `--error=`; `-oL` glued); sudo's
# are read by `_sudo_command`, env's by `_env_command`. nohup takes none; srun's are its own.
_WRAPPER_VALUED = {
    "time": ("-f", "-o", "--format", "--output"),
    "stdbuf": ("-i", "-o", "-e", "--input", "--output", "--error"),
}
# sudo(8)'s options, as its getopt_long reads them (sudo 1.9, src/parse_args.c: short options
# "+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv" and sudo_long_opts): those that take a value (the rest of the word,
# else the next word; a long one `--user=alice` or `--user alice`), and those after which sudo runs no command: it
# edits (-e: its words are files), lists or checks (-l), validates (-v), prints its version (-V), removes its timestamp
# (-K) or its help (-h; `-h HOST`, `--host=HOST` run a command only where the policy supports remote hosts, and
# sudo(8) says "The sudoers plugin does not currently support running remote commands"). `--preserve-env` takes a
# value only after '=' (optional_argument). -s and -i run the command through a shell's -c: it still runs; but -i
# (`--login`) with -s (`--shell`) or with -E / `--preserve-env` (no list) is a usage error, nothing run (parse_args.c:
# "you may not specify both the -i and -s options", "... both the -i and -E options").
_SUDO_VALUED = frozenset("aCcDgpRrTtUu")
_SUDO_NO_COMMAND = frozenset("elvVKh")
_SUDO_LONG = {  # name: "value" (required), "" (none), or the letter of a mode that runs no command
    **dict.fromkeys(("auth-type", "close-from", "login-class", "chdir", "group", "prompt", "chroot"), "value"),
    **dict.fromkeys(("role", "type", "command-timeout", "other-user", "user"), "value"),
    **dict.fromkeys(("askpass", "background", "bell", "preserve-env", "set-home", "login", "reset-timestamp"), ""),
    **dict.fromkeys(("non-interactive", "no-update", "preserve-groups", "stdin", "shell"), ""),
    **{"edit": "e", "list": "l", "validate": "v", "version": "V", "remove-timestamp": "K", "help": "h", "host": "h"},
}


def _sudo_command(words: list[str]) -> tuple[list[str], list[str], bool] | None:
    """The `VAR=value` words and the command of a sudo line (`words[0]` is sudo): after sudo's own options, as its
    getopt reads them (`_SUDO_VALUED`, `_SUDO_LONG`; `--` ends them), among which a word with a '=' not starting with
    '/' or '=' sets a variable for the command (sudo(8): "Environment variables to be set for the command may also be
    passed on the command line in the form of VAR=value"; parse_args's is_envar); and whether the command keeps the
    caller's Slurm variables. sudoers' `env_reset`, on by default, runs it "with a new, minimal environment" (TERM,
    PATH, HOME, SHELL, LOGNAME, USER and SUDO_* variables, sudoers(5)) unless `-E` / `--preserve-env` asks to keep
    the caller's, or `--preserve-env=LIST` names some of them (kept here where the list names a `SLURM_` one). `-i`
    (`--login`) runs the command through the target user's login shell with the environment initialized whatever
    env_reset says ("As a special case, if sudo's -i option (initial login) is specified, sudoers will initialize the
    environment regardless of the value of env_reset", sudoers(5), Command environment): only the `VAR=value` words
    and a `--preserve-env=LIST`'s variables reach it, and sudo refuses it with -E or `--preserve-env` (all of it).
    None where sudo runs no command (`-l`, `-e`, `-h`, ...; an option it does not know, a usage error: `-i` with `-s`
    or `-E`); the command [] where none is given (a shell)."""
    settings: list[str] = []
    preserved = False
    login = shell = preserve_all = False  # -i, -s and -E (`--preserve-env` without a list): not all together
    index = 1
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            break
        if word.startswith("--"):
            name, eq, _ = word[2:].partition("=")
            found = [key for key in _SUDO_LONG if key == name] or [key for key in _SUDO_LONG if key.startswith(name)]
            if len(found) != 1 or _SUDO_LONG[found[0]] not in ("", "value"):
                return None  # ambiguous, not known, or a mode that runs no command
            index += 1 if _SUDO_LONG[found[0]] == "value" and not eq else 0
            login, shell = login or found[0] == "login", shell or found[0] == "shell"
            if found[0] == "preserve-env":
                listed = word.partition("=")[2].split(",")
                preserved = preserved or not eq or any(name.startswith("SLURM_") for name in listed)
                preserve_all = preserve_all or not eq
        elif word.startswith("-") and word != "-":
            for at, letter in enumerate(word[1:], 1):
                if letter in _SUDO_NO_COMMAND or not (letter in _SUDO_VALUED or letter in "ABbEHiknNPSs"):
                    return None
                preserved = preserved or letter == "E"
                preserve_all = preserve_all or letter == "E"
                login, shell = login or letter == "i", shell or letter == "s"
                if letter in _SUDO_VALUED:  # the rest of the word, else the next word, is its value
                    index += 1 if at == len(word) - 1 else 0
                    break
        elif "=" in word and not word.startswith(("/", "=")):
            settings.append(word)
        else:
            index -= 1
            break
    if login and (shell or preserve_all):
        return None  # a usage error
    return settings, words[index:], preserved


def _environment_reset(argv: list[str]) -> bool:
    """Whether a command runs its program under a sudo that hands it none of the script's environment
    (`_sudo_command`), or under `env -i` (`_env_command`): no variable the script exported (`export SLURM_NTASKS=8`,
    `PET_NPROC_PER_NODE`) nor any the allocation set (SLURM_NTASKS, SLURM_JOB_NUM_NODES, SLURM_JOB_ID: `sudo srun`
    is no step of the job's allocation) reaches it; only the `VAR=value` words sudo, or an `env` after it, give it."""
    words = _without_assignments(argv)
    while words and _wrapper(words[0]) and not _is_srun(words[0]):
        if _is_sudo(words[0]) and (found := _sudo_command(words)) is not None and not found[2]:
            return True
        if _is_env(words[0]) and (emptied := _env_command(words)) is not None and emptied[3]:
            return True
        words = _after_wrapper(words)
    return False


# GNU coreutils env(1) (9.1, src/env.c: short options "+C:iS:u:v0", long_options): `-u NAME` (`--unset=NAME`) and
# `-C DIR` (`--chdir=DIR`) take a value (the rest of the word, else the next word); `-i` (`--ignore-environment`, and a
# lone `-` after the options) empties the environment, `-0` (`--null`) and `-v` (`--debug`) are switches, the signal
# options take a value only after '=', and `--help`, `--version`, `--list-signal-handling` run no command; a long
# option may be given by a unique prefix (getopt_long). `-S STRING` (`--split-string=STRING`) takes a value too, which
# env splits into words (`_env_s_words`) read as its arguments again, before the words after it.
_ENV_LONG = {
    "ignore-environment": "i",
    "null": "0",
    "unset": "u",
    "chdir": "C",
    "debug": "v",
    "split-string": "S",
    **dict.fromkeys(("block-signal", "default-signal", "ignore-signal"), ""),
    **dict.fromkeys(("list-signal-handling", "help", "version"), None),
}
# The escapes env's `-S` string takes after a backslash (src/env.c, build_argv): the character itself, or a control
# character; `\_` and `\c` are read apart, any other is env's usage error ("invalid sequence '\q' in -S").
_ENV_SPLIT_ESCAPES = {**{char: char for char in "\"#$'\\"}, "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ENV_SPLIT_BLANKS = " \t\n\v\f\r"


def _env_s_words(text: str, environment: dict[str, str] | None = None) -> list[str] | None:
    """The words env's `-S STRING` makes of its string, as coreutils splits it (src/env.c, build_argv; env(1),
    "-S/--split-string usage in scripts"): blanks separate words outside quotes; single and double quotes group (an
    empty pair is an empty word); a backslash passes a backslash, a quote, `#` or `$` on as it is and stands for a tab,
    a newline, ... after `t`, `n`, `f`, `r`, `v`; a backslash and `_` separate words outside double quotes and are a
    space inside them; a backslash and `c`, and a `#` that begins a word, end the string; in single quotes a backslash
    is itself but before a backslash or a single quote. `${NAME}` outside single quotes is NAME's value in the
    environment env starts in, read before its `-i` or `-u` change it, and a part of the word it is in, not split
    (env(1): "-S ... supports ${VARNAME} expansion"; `$NAME` it refuses): the value `environment` gives it where the
    script shows it (`_command_through_env_s`), else kept as written, an expansion the launch reading does not know
    (`_EXPANSION`). None where env refuses the string (a `$`
    that is no `${NAME}`, another escape, a backslash at its end, a quote left open, a backslash and `c` in double
    quotes): it runs no command."""
    words: list[str] = []
    single = double = False
    separated = True  # the next character begins a word
    index = 0

    def add(chars: str) -> None:
        nonlocal separated
        if separated:
            words.append("")
            separated = False
        words[-1] += chars

    while index < len(text):
        char = text[index]
        if (char == "'" and not double) or (char == '"' and not single):
            if char == "'":
                single = not single
            else:
                double = not double
            add("")  # a quote begins a word, an empty one if nothing follows
            index += 1
            continue
        if char in _ENV_SPLIT_BLANKS and not (single or double):
            separated = True
            index += 1
            continue
        if char == "#" and separated and not (single or double):
            break
        if char == "\\" and not (single and text[index + 1 : index + 2] not in ("\\", "'")):
            escape = text[index + 1 : index + 2]
            index += 2
            if escape == "_" and not double:
                separated = True
            elif escape == "_":
                add(" ")
            elif escape == "c" and not double:
                return words
            elif escape in _ENV_SPLIT_ESCAPES:
                add(_ENV_SPLIT_ESCAPES[escape])
            else:
                return None  # `\c` in double quotes, an escape env does not know, a backslash at the end
            continue
        if char == "$" and not single:
            found = re.match(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", text[index:])
            if not found:
                return None  # "only ${VARNAME} expansion is supported"
            add((environment or {}).get(found.group()[2:-1], found.group()))
            index += len(found.group())
            continue
        add(char)
        index += 1
    return None if single or double else words


def _env_command(
    words: list[str], environment: dict[str, str] | None = None
) -> tuple[list[str], list[str], list[str], bool] | None:
    """The `NAME=VALUE` words of an env line (`words[0]` is env), the names its `-u` unsets, its command, and whether
    `-i` empties the environment first (env(1): "-i, --ignore-environment  start with an empty environment"; "-u,
    --unset=NAME  remove variable from the environment"; then "Set each NAME to VALUE in the environment and run
    COMMAND"): `env -i SLURM_NTASKS=4 srun ...` runs srun with SLURM_NTASKS=4 alone; `env -S "srun -n 4 python
    train.py"` runs the words its string splits into (`_env_s_words`: `-S` in a shebang, `#!/usr/bin/env -S
    python3 -u`, passes several). None where env runs no command (`--help`, `--version`, an option it does not know,
    a `-S` string it refuses). `environment`: the variables known in the environment env starts in, for its `-S`
    string's `${NAME}`."""
    settings: list[str] = []
    unset: list[str] = []
    emptied = False
    rest = list(words[1:])
    while rest:
        word = rest.pop(0)
        if word == "--":
            break
        if word == "-":
            emptied = True
            continue
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            found = [key for key in _ENV_LONG if key == name] or [key for key in _ENV_LONG if key.startswith(name)]
            if len(found) != 1 or _ENV_LONG[found[0]] is None:
                return None
            letter = _ENV_LONG[found[0]]
            if letter in ("u", "C", "S") and not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            emptied = emptied or letter == "i"
            if letter == "u":
                unset.append(value)
            if letter == "S":  # its words are env's arguments, read from the first (getopt starts again)
                if (split := _env_s_words(value, environment)) is None:
                    return None
                rest = split + rest
            continue
        if word.startswith("-"):
            for at, letter in enumerate(word[1:], 1):
                if letter not in "iuCSv0":
                    return None
                emptied = emptied or letter == "i"
                if letter in "uCS":  # the rest of the word, else the next word, is its value
                    value = word[at + 1 :]
                    if not value:
                        if not rest:
                            return None
                        value = rest.pop(0)
                    if letter == "u":
                        unset.append(value)
                    if letter == "S":
                        if (split := _env_s_words(value, environment)) is None:
                            return None
                        rest = split + rest
                    break
            continue
        rest.insert(0, word)
        break
    if rest[:1] == ["-"]:  # `env -i -- - ...` is no more than that; a lone `-` after the options empties it too
        emptied, rest = True, rest[1:]
    while rest and "=" in rest[0]:
        settings.append(rest.pop(0))
    return settings, unset, rest, emptied


def _command_through_env_s(argv: list[str], environment: dict[str, str] | None = None) -> list[str]:
    """A command's words with the `-S` string of the env it runs in as the words env runs (`env -S "python train.py
    --workers 0"`: `env python train.py --workers 0`; env's other options left out), so that a launch's script and
    its options are seen; the words as they are where no env with a string runs the command. `environment`: the
    variables the script exported with a value it shows (`_ShellVariables.environment`), which with those the
    command's own `NAME=value` words set make the environment env starts in, the values of the string's `${NAME}`
    (`_env_s_words`); a sudo before env starts it in its own (`_sudo_command`: only its `VAR=value` words known)."""
    words = _without_assignments(argv)
    head = argv[: len(argv) - len(words)]
    known = _assigned_over(dict(environment or {}), head)
    while words and _wrapper(words[0]):
        if _is_srun(words[0]):  # its own options, then the program each task runs (`_srun_program`)
            start = next((i for i, w in enumerate(words[1:], 1) if _srun_program(w)), None)
            if start is None:
                return argv
            head, words = head + words[:start], words[start:]
            continue
        if _is_env(words[0]):
            found = _env_command(words, known)
            if found is None or found[2] == words[len(words) - len(found[2]) :]:
                return argv  # no command, or none from a string: the words are the command's own
            return [*head, words[0], *found[0], *found[2]]
        if _is_sudo(words[0]):
            known = _assigned_over({}, found[0]) if (found := _sudo_command(words)) is not None else {}
        after = _after_wrapper(words)
        head, words = head + words[: len(words) - len(after)], after
    return argv


def _assigned_over(environment: dict[str, str], words: list[str]) -> dict[str, str]:
    """`environment` with the `NAME=value` words of `words` set over it: a plain value known, any other not (`$N`)."""
    for word in words:
        if match := _ASSIGNMENT.fullmatch(word):
            name, value = match.groups()
            if _PLAIN_VALUE.fullmatch(value):
                environment[name] = value
            else:
                environment.pop(name, None)
    return environment


def _is_sudo(word: str) -> bool:
    return word.rsplit("/", 1)[-1] == "sudo"


def _wrapper(word: str) -> bool:
    """Whether a command's first word runs the program after it (`_WRAPPERS`, by name or path; the `exec` builtin)."""
    return word == "exec" or word.rsplit("/", 1)[-1] in _WRAPPERS


def _is_env(word: str) -> bool:
    return word.rsplit("/", 1)[-1] == "env"


def _is_srun(word: str) -> bool:
    """`srun`, by its name or its path (`/usr/bin/srun`, `/opt/slurm/bin/srun`)."""
    return word.rsplit("/", 1)[-1] == "srun"


def _after_wrapper(words: list[str]) -> list[str]:
    """The words of the command a wrapper other than srun (`words[0]`) runs: after the wrapper and its own options,
    where it has any read here (`_WRAPPER_VALUED`: `/usr/bin/time -v -o t.log srun ...`: `srun ...`)."""
    if _is_sudo(words[0]):
        return found[1] if (found := _sudo_command(words)) is not None else []
    if _is_env(words[0]):
        return found[2] if (found := _env_command(words)) is not None else []
    valued = _WRAPPER_VALUED.get(words[0].rsplit("/", 1)[-1])
    rest = words[1:]
    if valued is None:
        return _without_assignments(rest)  # bash's `time X=1 srun ...` times a command given X=1
    index = 0
    while index < len(rest) and rest[index].startswith("-") and rest[index] != "-":
        word = rest[index]
        index += 1
        if word == "--":
            break
        if word.startswith("--"):
            index += 1 if word in valued else 0  # `--output FILE`; `--output=FILE` is one word
            continue
        for at, letter in enumerate(word[1:], 1):  # `-vo FILE`, `-oL`: the first that takes a value takes the rest
            if f"-{letter}" in valued:
                index += 1 if at == len(word) - 1 else 0
                break
    return _without_assignments(rest[index:])


def _program(argv: list[str]) -> tuple[str, list[str]]:
    """The program one shell command runs, by its file's name, and its words: after `VAR=value` words and wrappers
    (`NCCL_DEBUG=INFO torchrun ...`, `nohup`, `env`, `srun ...`, `/opt/conda/bin/torchrun`: torchrun), a launcher's
    module run by `python -m` as its command (`python -m torch.distributed.launch`: torchrun; `python -m
    accelerate.commands.launch ...`: accelerate, `launch ...`); '' for none."""
    words = _without_assignments(argv)
    while words and _wrapper(words[0]):
        if _is_srun(words[0]):  # its options, some with a value (`-c 12`), then the program (`_srun_program`)
            start = next((i for i, w in enumerate(words[1:], 1) if _srun_program(w)), None)
            words = words[start:] if start is not None else [w for w in words[1:] if not w.startswith("-")]
        else:
            words = _after_wrapper(words)
    if not words:
        return "", []
    program, rest = words[0].rsplit("/", 1)[-1], words[1:]
    if program.startswith("python"):  # `python -u -m torch.distributed.run ...` is torchrun's `...`
        index = 0
        while index < len(rest) and rest[index].startswith("-") and rest[index] != "-m":
            index += 2 if rest[index] in ("-W", "-X") else 1  # the interpreter's own options
        if rest[index : index + 1] == ["-m"] and index + 1 < len(rest) and rest[index + 1] in _LAUNCHER_MODULES:
            launcher, words_before = _LAUNCHER_MODULES[rest[index + 1]]
            return launcher, words_before + rest[index + 2 :]
    return program, rest


# How many processes each launcher starts, by its options before the script it runs, and by its documented defaults
# where it is given none (each read in the launcher's own argument parser and its documentation):
# - torchrun (and `python -m torch.distributed.run` / `.launch`): `--nproc-per-node` / `--nproc_per_node`, a count
#   per node, defaults to "1" and `--nnodes` to "1:1" (torch/distributed/run.py; "torchrun (Elastic Launch)" on
#   docs.pytorch.org), so a bare `torchrun train.py` starts one process. Each option may come from the environment
#   instead (`PET_NPROC_PER_NODE`, `PET_NNODES`: their `action=env`), so a launch that sets one there is not known;
#   `--nnodes 1:4` (elastic) neither.
# - deepspeed: `--num_gpus` (`--num_accelerators`) defaults to -1, every GPU of a node, and `--num_nodes` to -1, every
#   host of its hostfile (`--hostfile`, by default /job/hostfile; without one, this node alone); `--include host:0,1`
#   runs on the slots it names (deepspeed/launcher/runner.py, DeepSpeed's "Resource Configuration").
# - accelerate launch: `--num_processes` is the total over all machines; without it, the count is its config file's
#   (`--config_file`, or the default one in the user's cache: read where the job brought it, `settle_launch_configs`;
#   its `distributed_type: NO` runs one process) or, with none, every GPU: not known. Older releases turn `--multi_gpu
#   --num_processes 1` into every GPU (accelerate/commands/launch.py), so that is not known either. `--cpu` trains on
#   the CPU (`on_cpu`).
# - mpirun, horovodrun: `-np` in all; without it, every slot of the allocation or hostfile: not known.
_PROCESS_FLAGS = {
    "mpirun": ("-np", "-n", "--np", "--n", "-c"),
    "horovodrun": ("-np", "--num-proc"),
    "torchrun": ("--nproc_per_node",),  # each argparse launcher's option by its first spelling (`_launcher_options`)
    "deepspeed": ("--num_gpus",),
    "accelerate": ("--num_processes",),
}
# The options that take no value of each launcher that is no argparse one (`_LAUNCHER_PARSERS` has the others'), so
# that a `$ARGS` after one is words of the launcher's own that the line does not show (any other option takes the word
# after it: `--master_port $PORT`).
_LAUNCHER_SWITCHES = {
    "mpirun": {"--allow-run-as-root", "--oversubscribe", "--report-bindings", "--tag-output", "-q", "--quiet", "-v"},
    "horovodrun": {"--verbose", "--gloo", "--mpi", "--check-build", "--disable-cache"},
}
# A shell expansion the reader does not know: `$@`, `$1`, `${ARGS}`, `$EXTRA`, `$(...)`, backquotes.
_EXPANSION = re.compile(r"\$(?:[0-9@*#?]|\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*|\(.*\))|`.*`")


# A shell expansion into any number of words: `$@`, `$*`, `${@:2}`, `${ARGS[@]}`, a command's output.
_MANY = re.compile(r"\$(?:[@*]|\{[@*][^}]*\}|\{[^}]*\[[@*]\]\}|\(.*\))|`.*`")


def _launcher_words(argv: list[str]) -> tuple[str, list[str]]:
    """The launcher a launch runs (`_program`) and its own words, up to the script or program it runs."""
    program, words = _program(argv)
    end = next((index for index, word in enumerate(words) if _runs_program(word)), len(words))
    return program, words[:end]


def _unseen_launcher_words(program: str, words: list[str]) -> bool:
    """Whether a launcher's own words hold a shell expansion that may be options of its own the line does not show
    (`torchrun $DIST_ARGS train.py`, `deepspeed --no_local_rank "$@" ...`), not an option's value (`--master_port
    $PORT`)."""
    parser = _LAUNCHER_PARSERS.get(program)
    switches = parser[1] if parser else _LAUNCHER_SWITCHES.get(program, set())
    for index, word in enumerate(words):
        if not _EXPANSION.match(word):
            continue
        before = words[index - 1] if index else ""
        if parser and before.startswith("-") and "=" not in before:
            before = _launcher_option(program, before)[0] or before  # `--stand $ARGS`: --standalone's
        if not (before.startswith("-") and "=" not in before and before not in switches):
            return True
    return False


def _launch_processes(
    argv: list[str],
    environment: frozenset = frozenset(),
    allocation: dict | None = None,
    config: dict | None = None,
    tasks: int | None = None,
) -> int | None:
    """How many training processes a distributed launch starts, by its options as numbers or its launcher's documented
    default (see above: `mpirun -np 1`, `torchrun --nproc_per_node=4 --nnodes=2`: 8, `torchrun train.py`: 1,
    `deepspeed --num_gpus 1`: 1); None where not known (`$GPUS`, `auto`, `--nnodes 1:4`, a default of every GPU or a
    config file's, options the line does not show: `torchrun $ARGS train.py`). Read up to the script or program it
    runs (whose own `-n` is not the launcher's). `environment`: the variables the job's script sets before it (and
    the launch line's own `VAR=value` words are read too), for torchrun's `PET_*`. A python under srun is srun's
    tasks, one process each (`_srun_tasks`; `allocation`: the batch script's `#SBATCH` task options). `config`: the
    settings of the Accelerate config file `accelerate launch` reads (a `launch_config` fact's; `_accelerate_count`).
    `tasks`: the tasks srun started, where the scheduler counted them (a Slurm step's, `apply_step_tasks`), over what
    srun's options and the allocation give."""
    program, words = _launcher_words(argv)
    if program.startswith("python"):
        return _srun_tasks(argv, allocation or {}) if tasks is None else tasks
    if program not in _PROCESS_FLAGS or _unseen_launcher_words(program, words):
        return None
    if (given := _launcher_options(program, words)) is None:
        return None  # a word its parser refuses (a prefix of two options): it starts nothing, or not known
    count = next((given[flag] for flag in _PROCESS_FLAGS[program] if flag in given), None)
    if program == "torchrun":
        assigned = {word.partition("=")[0] for word in argv if _ASSIGNMENT.fullmatch(word)} | set(environment)
        if assigned & {"PET_NPROC_PER_NODE", "PET_NNODES"}:
            return None
        low, _, high = given.get("--nnodes", "1").partition(":")
        nodes = low if not high or high == low else ""
        count = "1" if count is None else count
    elif program == "deepspeed":
        include = given.get("--include")
        if include is not None:  # `--include localhost:0,1`: one host's slots
            host, colon, slots = include.partition(":")
            count = str(len(slots.split(","))) if colon and "@" not in include and slots else None
        if any(flag in given for flag in ("--hostfile", "--exclude", "--launcher")):
            return None  # the hosts a hostfile or another launcher gives, slots left out: not known here
        nodes = given.get("--num_nodes", "1")
    elif program == "accelerate":
        count, nodes = _accelerate_count(given, config), "1"  # the total over all machines
    else:
        nodes = "1"
    if count is None or not count.isdigit() or not nodes.isdigit():
        return None
    if _srun_words(argv) is None:
        return int(count) * int(nodes)
    tasks = _srun_tasks(argv, allocation or {}) if tasks is None else tasks
    if tasks == 1:
        return int(count) * int(nodes)
    if tasks is None or (each := _task_processes(program, count, nodes, given, config)) is None:
        return None  # the allocation's task count, or a launcher's count a task not known
    return tasks * each


def _task_processes(program: str, count: str, nodes: str, given: dict[str, str], config: dict | None) -> int | None:
    """How many processes a launcher that srun runs in each of several tasks starts in its task, on its node: torchrun
    its `--nproc_per_node` (its `--nnodes` counts those same agents), deepspeed its `--num_gpus` (no hostfile: its
    node's GPUs; with `--num_nodes` over 1, not known), `accelerate launch` its share of `--num_processes`, which
    counts over its `--num_machines`, else over the `num_machines` of the config the job brought (`config`, a
    `launch_config` fact's: a config of 8 processes on 2 machines under `srun -N 2` starts 4 in each task), else one
    where the job brought no config (with a config that gives none, not known). None for another launcher."""
    if program == "torchrun":
        return int(count)
    if program == "deepspeed":
        return int(count) if nodes == "1" else None
    if program == "accelerate":
        machines = given.get("--num_machines", "1" if config is None else str(config.get("num_machines", "")))
        if not machines.isdigit() or int(machines) < 1 or int(count) % int(machines):
            return None
        return int(count) // int(machines)
    return None


# `accelerate launch`'s kinds of launch (its config's `distributed_type`, or a switch on its line) that start
# `num_processes` processes on GPUs; with none of them on the line, a config's `NO` runs its script once (its simple
# launcher), whatever the count (accelerate/commands/launch.py, launch_command).
_ACCELERATE_GPU_LAUNCHES = {"MULTI_GPU", "DEEPSPEED", "FSDP", "MEGATRON_LM"}
_ACCELERATE_SWITCHES = ("--multi_gpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm", "--tpu")


def _accelerate_count(given: dict[str, str], config: dict | None) -> str | None:
    """How many processes `accelerate launch` starts, by its options (`_launcher_options`) and the settings of the
    config file it reads (`config`, a `launch_config` fact's; None where the job did not bring it): `--num_processes`,
    else the config's `num_processes`, where the line's switch (`--multi_gpu`, `--use_deepspeed` ...) or, with none,
    the config's `distributed_type` launches on GPUs; one where the config's type is NO and the line has no such
    switch. None where not known: `--cpu` (no GPU process: `on_cpu`), no count, no config of a local machine, a type
    of launch not on GPUs (XLA, MULTI_CPU ...), and `--multi_gpu --num_processes 1`, every GPU in older releases."""
    if "--cpu" in given:
        return None
    count = given.get("--num_processes")
    switched = next((flag for flag in _ACCELERATE_SWITCHES if flag in given), None)
    multi_gpu = switched == "--multi_gpu"
    if config is not None:
        if config.get("compute_environment") != "LOCAL_MACHINE":
            return None  # Amazon SageMaker's
        kind = config.get("distributed_type", "").upper()
        if switched is None:
            if kind == "NO":
                return "1"
            if kind not in _ACCELERATE_GPU_LAUNCHES:
                return None
            multi_gpu = kind == "MULTI_GPU"
        if count is None and "num_processes" in config:
            count = str(config["num_processes"])
    return None if multi_gpu and count == "1" else count


def settle_launch_configs(facts: list[CodeFact]) -> None:
    """`accelerate launch` takes the settings its line does not give from its config file: `--config_file`'s, else
    the user's default one ($HF_HOME/accelerate/default_config.yaml, in ~/.cache/huggingface). Where the job brought
    that file (its `launch_config` fact), each such launch of the job's (`shell_launch`, `command_launch`) gets the
    processes it gives (`_accelerate_count`; none where not known) and `launch_config`, the file's path. To be run
    once the job's facts are all read, its submitted command's too: a script's launch line may name a config of
    another file."""
    configs = {f.path: f.detail for f in facts if f.kind == "launch_config"}
    if not configs:
        return
    for fact in facts:
        if fact.kind not in ("shell_launch", "command_launch") or fact.detail.get("launcher") != "accelerate":
            continue
        if fact.detail.get("on_cpu"):
            continue  # `--cpu`: no GPU process, and the default config is not read
        argv = _fact_command(fact)[0]
        program, words = _launcher_words(argv or [])
        options = _launcher_options(program, words) if program == "accelerate" else None
        if options is None or (path := _accelerate_config_path(options.get("--config_file"), configs)) is None:
            continue
        fact.detail.pop("processes", None)
        tasks = fact.detail.get("srun_tasks")  # under srun, its tasks as its allocation gave them (or its step)
        if (processes := _launch_processes(argv, config=configs[path], tasks=tasks)) is not None:
            fact.detail["processes"] = processes
        fact.detail["launch_config"] = path


def _accelerate_config_path(named: str | None, configs: dict[str, dict]) -> str | None:
    """The job's file `accelerate launch` reads its settings from: the one `--config_file` names (by its path, or by
    its name where one file of the job's has it), else the default one in the user's cache
    (`.cache/huggingface/accelerate/default_config.yaml`); None where the job did not bring it."""
    if named is None:
        found = [path for path in configs if ("/" + path).endswith("/accelerate/default_config.yaml")]
    else:
        wanted = named.removeprefix("./")
        found = [path for path in configs if ("/" + wanted).endswith("/" + path.removeprefix("./"))]
        if not found:
            found = [path for path in configs if path.rsplit("/", 1)[-1] == wanted.rsplit("/", 1)[-1]]
    return found[0] if len(found) == 1 else None


def _srun_words(argv: list[str]) -> list[str] | None:
    """srun's own words (`srun -n 8 -c 12 torchrun ...`: `-n 8 -c 12`) when the launch runs under srun; None
    otherwise."""
    words = _without_assignments(argv)
    while words and _wrapper(words[0]):
        if _is_srun(words[0]):
            start = next((i for i, w in enumerate(words[1:], 1) if _srun_program(w)), len(words))
            return words[1:start]
        words = _after_wrapper(words)
    return None


def _task_options(words: list[str]) -> dict[str, str] | None:
    """The task options srun's own words (or an `#SBATCH` line's) give, by name (`ntasks`, `ntasks_per_node`,
    `nodes`), each as written (`-n 8`, `-n8`, `--ntasks=8`, `-N 2-4`), and `_GPUS_PER_NODE_GIVEN` where
    `--gpus-per-node` itself is given (`--gres=gpu:8` gives the same `gpus_per_node`), `_GPU_BIND_GIVEN` where
    `--gpu-bind` itself is (`--tres-bind=gres/gpu:...` gives the same `gpu_bind`); None where words the line does
    not show may give more (`srun $SRUN_ARGS ...`; `-c $CPUS` is an option's value)."""
    given: dict[str, str] = {}
    for index, word in enumerate(words):
        before = words[index - 1] if index else ""
        if _EXPANSION.match(word) and not (
            before.startswith("-") and "=" not in before and before not in _SRUN_SWITCHES
        ):
            return None  # options the line does not show (`srun $SRUN_ARGS ...`), not an option's value (`-c $CPUS`)
        flag, eq, value = word.partition("=")
        if word[:2] in ("-n", "-N", "-G") and len(word) > 2 and not word.startswith("--"):
            flag, value = word[:2], word[2:]  # `-n8`
        elif not eq:
            value = words[index + 1] if index + 1 < len(words) else ""
        if flag == "--tres-bind":  # `--gpu-bind=X` is `--tres-bind=gres/gpu:X` (srun(1)); other TRES bind no GPU
            gpus = [part.removeprefix("gres/gpu:") for part in value.split("+") if part.startswith("gres/gpu:")]
            if not gpus:
                continue
            value = gpus[-1]
        elif flag == "--gpu-bind":  # the option itself, which makes an allocation set SLURM_GPU_BIND
            given[_GPU_BIND_GIVEN] = "given"
        elif flag in ("-G", "--gpus", "--gpus-per-node"):
            if flag == "--gpus-per-node":  # the option itself, which makes an allocation set SLURM_GPUS_PER_NODE
                given[_GPUS_PER_NODE_GIVEN] = "given"
            value = _gpus_asked(value.split(","), alone=False)
        elif flag == "--gres":  # its GPUs, as --gpus-per-node (`--gres=nvme:1` asks none)
            if (gpus := _gres_gpus(value)) is None:
                continue
            value = gpus
        if flag in _SRUN_VALUED:
            given[_SRUN_VALUED[flag]] = value
    return given


def _gres_gpus(value: str) -> str | None:
    """The GPUs a `--gres` value asks for on each node, as `_gpus_asked` counts them (`gpu:a100:4,nvme:1`: 4);
    None where it asks for none (`nvme:1`)."""
    gpus = [part[4:] for part in value.split(",") if part == "gpu" or part.startswith("gpu:")]
    return _gpus_asked(gpus, alone=True) if gpus else None


# srun's input environment variables (srun(1), INPUT ENVIRONMENT VARIABLES), each the task option it names, which srun's
# command line overrides: `export SLURM_NTASKS=8` before a bare srun gives it eight tasks. SLURM_NPROCS (deprecated) is
# read first, so SLURM_NTASKS wins over it. An allocation's own (sbatch's SLURM_NTASKS ...) are its task options.
_SRUN_ENVIRONMENT = {
    "SLURM_NPROCS": "ntasks",
    "SLURM_NTASKS": "ntasks",
    "SLURM_NTASKS_PER_NODE": "ntasks_per_node",
    # srun's -N: SLURM_JOB_NUM_NODES alone (src/srun/opt.c, env_vars, Slurm 20.02 on: `{ "SLURM_JOB_NUM_NODES", 'N'
    # }`). SLURM_NNODES, which the allocation sets too and srun read until then, is no input of its: `export
    # SLURM_NNODES=2` gives srun no node count
    "SLURM_JOB_NUM_NODES": "nodes",
    "SLURM_GPUS_PER_TASK": "gpus_per_task",
    "SLURM_GPU_BIND": "gpu_bind",
    "SLURM_NTASKS_PER_GPU": "ntasks_per_gpu",  # scrun(1): "See SLURM_NTASKS_PER_GPU from srun(1)"
    # the GPUs --ntasks-per-gpu counts its tasks from (`_gpu_tasks`): srun(1), INPUT ENVIRONMENT VARIABLES (Slurm's
    # doc/man/man1/srun.1, 20.11), SLURM_GPUS "Same as -G, --gpus", SLURM_GPUS_PER_NODE "Same as --gpus-per-node",
    # SLURM_GRES "Same as --gres. Also see SLURM_STEP_GRES", SLURM_STEP_GRES "Same as --gres (only applies to job
    # steps, not to job allocations)"; each gres's GPUs as --gres's (`_gres_gpus`). srun's source settles which one a
    # step takes: SLURM_GRES sets its --gres option (src/srun/libsrun/opt.c's env_vars, `arg_set_gres`) and the step
    # takes SLURM_STEP_GRES only where that option is unset (launch.c: `if (opt_local->gres) add_tres =
    # opt_local->gres; else add_tres = getenv("SLURM_STEP_GRES")`), so SLURM_STEP_GRES is read first and only where
    # SLURM_GRES is not set (`_environment_options`)
    "SLURM_STEP_GRES": "gpus_per_node",
    "SLURM_GRES": "gpus_per_node",
    "SLURM_GPUS": "gpus",
    "SLURM_GPUS_PER_NODE": "gpus_per_node",
}

# An allocation (`_task_options` of sbatch's or salloc's words) sets srun's input variable for each option it is given
# in the batch script's environment (`_srun_environment`), except: SLURM_GRES and SLURM_STEP_GRES for none (sbatch(1),
# OUTPUT ENVIRONMENT VARIABLES, lists neither; `--gres` sets none), and SLURM_GPUS_PER_NODE only where the option
# `--gpus-per-node` is given, not for a `--gres=gpu:8` that asks the same GPUs a node (sbatch(1) of Slurm 20.11,
# doc/man/man1/sbatch.1: "SLURM_GPUS_PER_NODE Requested GPU count per allocated node. Only set if the
# --gpus-per-node option is specified"): a plain `SLURM_GPUS_PER_NODE=4`, not exported, is there the shell's own.
# Likewise SLURM_GPU_BIND only for `--gpu-bind` itself (sbatch(1): "SLURM_GPU_BIND Requested binding of tasks to GPU.
# Only set if the --gpu-bind option is specified"), not for the `--tres-bind=gres/gpu:X` read as the same binding,
# which sets SLURM_TRES_BIND (src/common/env.c, set_env_from_opts). And SLURM_JOB_NUM_NODES in every allocation, `-N`
# given or not (src/common/env.c: env_array_for_batch_job sets it from the allocation's node count for every batch
# job, env_array_for_job for salloc's; sbatch(1) documents it with no "Only set if"): `_IN_ALLOCATION`, which every
# allocation holds (`_allocator`, a batch script's own in `_shell_facts`).
_GPUS_PER_NODE_GIVEN = "gpus_per_node_given"  # `_task_options`' note that `--gpus-per-node` itself was given
_GPU_BIND_GIVEN = "gpu_bind_given"  # and that `--gpu-bind` itself was
_IN_ALLOCATION = "in_allocation"  # the note that the options are an allocation's, which sets its node count
_ALLOCATION_SETS = {"SLURM_GRES": None, "SLURM_STEP_GRES": None, "SLURM_GPUS_PER_NODE": _GPUS_PER_NODE_GIVEN}
_ALLOCATION_SETS |= {"SLURM_GPU_BIND": _GPU_BIND_GIVEN, "SLURM_JOB_NUM_NODES": _IN_ALLOCATION}
_UNKNOWN = "?"  # an option's value the script does not show (`export SLURM_NTASKS=$N`, `unset SLURM_NTASKS`)


_TASKS_FROM_LAYOUT = "tasks_from_layout"  # `_job_tasks`' note that the job's task count is its tasks a node's


def _job_tasks(options: dict) -> dict:
    """An allocation's options (`_IN_ALLOCATION`) with the task count Slurm works out where it is given
    `--ntasks-per-node` and no `--ntasks`: its node count (one where none is given) times the tasks a node, unless the
    node count is a range (src/sbatch/opt.c, _opt_verify: `if ((opt.ntasks_per_node > 0) && (!opt.ntasks_set) &&
    ((opt.max_nodes == 0) || (opt.min_nodes == opt.max_nodes)))`, `ntasks = opt.min_nodes * opt.ntasks_per_node`;
    salloc alike). The job's environment then holds it as SLURM_NTASKS (src/common/env.c, env_array_for_batch_job;
    salloc's), which srun reads as `-n` over its own `--ntasks-per-node` or `-N`: `#SBATCH -N 2 --ntasks-per-node=8`
    then `srun --ntasks-per-node=1` starts 16 tasks ("can't honor --ntasks-per-node set to 1 which doesn't match the
    requested tasks 16 with the number of requested nodes 2"), and a plain `SLURM_NTASKS=2` there changes it
    (`_srun_environment`). The count is `_UNKNOWN` where a number is not shown (`-N $N`), and noted
    `_TASKS_FROM_LAYOUT`, so that the lines quoted for it are those of the two options (`_allocation_taken`)."""
    if _IN_ALLOCATION not in options or "ntasks" in options or "ntasks_per_node" not in options:
        return options
    low, _, high = options.get("nodes", "1").partition("-")
    if high and high != low:
        return options  # `-N 2-4`: no task count
    per_node = options["ntasks_per_node"]
    count = str(int(low) * int(per_node)) if low.isdigit() and per_node.isdigit() else _UNKNOWN
    return {**options, "ntasks": count, _TASKS_FROM_LAYOUT: "given"}


def _sets_own(name: str, options: dict) -> bool:
    """Whether an allocation of these options (`_allocator`'s) puts its own value of srun's input variable `name` in
    its environment, over one exported before it: for an option it is given, and its node count always
    (`_ALLOCATION_SETS`)."""
    return _SRUN_ENVIRONMENT[name] in options or _ALLOCATION_SETS.get(name) == _IN_ALLOCATION


def _environment_options(variables: dict) -> dict:
    """The task options srun takes from these environment variables (`_SRUN_ENVIRONMENT`), by name (their values, or
    what is kept of each: the line that set it). A GPU count's value is read as its option's (`SLURM_GPUS=volta:3,
    kepler:1`: 4, `_gpus_asked`; `SLURM_GRES=gpu:a100:4,nvme:1`: 4 a node, `_gres_gpus`, and none for a gres of no
    GPU)."""
    options = {}
    for name, option in _SRUN_ENVIRONMENT.items():
        if name not in variables or (name == "SLURM_STEP_GRES" and "SLURM_GRES" in variables):
            continue  # SLURM_GRES is srun's --gres, which SLURM_STEP_GRES gives only where it is unset
        value = variables[name]
        if isinstance(value, str) and value != _UNKNOWN and name in ("SLURM_GRES", "SLURM_STEP_GRES"):
            if (value := _gres_gpus(value)) is None:
                continue  # `SLURM_GRES=nvme:1`: no GPUs
        elif option in ("gpus", "gpus_per_node") and isinstance(value, str) and value != _UNKNOWN:
            value = _gpus_asked(value.split(","), alone=False)
        options[option] = value
    if "SLURM_GPUS_PER_NODE" in variables:  # in the environment, as where sbatch sets it (`_ALLOCATION_SETS`)
        options[_GPUS_PER_NODE_GIVEN] = "given"  # no number: no layout (`_layout_fact`)
    if "SLURM_GPU_BIND" in variables:
        options[_GPU_BIND_GIVEN] = "given"
    return options


def _srun_options(argv: list[str]) -> dict[str, str] | None:
    """The task options a launch under srun gives srun itself (`_task_options`): its own words, over the environment
    its line sets for it (`SLURM_NTASKS=8 srun python train.py`); None where it runs under no srun or srun's words
    hide options."""
    srun = _srun_words(argv)
    given = _task_options(srun) if srun is not None else None
    if given is None:
        return None
    pairs, _ = _assignments(argv)  # `SLURM_NTASKS=8 srun ...`, `env SLURM_NTASKS=8 srun ...`
    assigned = {name: value if _PLAIN_VALUE.fullmatch(value) else _UNKNOWN for name, value in pairs}
    return {**_environment_options(assigned), **given}


def _srun_tasks(argv: list[str], allocation: dict[str, str]) -> int | None:
    """How many tasks srun starts, each running its program once: a python (PyTorch Lightning's SLURMEnvironment,
    torch.distributed reading SLURM_PROCID / SLURM_LOCALID, Horovod through `srun --mpi=pmix`) is a process a task,
    a launcher (`srun -n 8 torchrun ...`) starts its own count in each. srun takes each task option its words do
    not give from the allocation it runs in (SLURM_NTASKS, SLURM_NTASKS_PER_NODE, SLURM_JOB_NUM_NODES), which the
    batch script's `#SBATCH` lines give (`allocation`, `_task_options`): `--ntasks` (which the allocation works out
    from `--ntasks-per-node`, `_job_tasks`, and which wins over srun's own `-N` or `--ntasks-per-node`), or
    `--ntasks-per-node` on `--nodes` (one node where none is given, sbatch's and srun's default for such a request),
    `--ntasks-per-gpu` on the GPUs asked for (`_gpu_tasks`), or one task a node (`-N 2`). None where no python runs
    under srun, where the options are not numbers or not all shown, and where none is given (Slurm's default, one
    task, as a plain python)."""
    if (given := _srun_options(argv)) is None:
        return None
    given = {**allocation, **given}
    if "ntasks" in given:
        return int(given["ntasks"]) if given["ntasks"].isdigit() else None
    if (counted := _gpu_tasks(given)) is not None:
        return counted[1]  # `--ntasks-per-gpu` on the GPUs asked for
    nodes = given.get("nodes", "1" if "ntasks_per_node" in given else "")
    per_node = given.get("ntasks_per_node", "1" if "nodes" in given else "")
    return int(per_node) * int(nodes) if per_node.isdigit() and nodes.isdigit() else None


def _allocation_taken(argv: list[str], allocation: dict[str, str]) -> list[str]:
    """The allocation's task options (`allocation`: the batch script's `#SBATCH` lines, a `salloc` line's) that a
    python under srun takes for its count (`_srun_tasks`), those srun's own words do not give: `--ntasks`, or
    `--ntasks-per-gpu` and the GPUs asked for (`_gpu_tasks`), or `--ntasks-per-node` and `--nodes`; and the one that
    binds its tasks to GPUs (`_gpu_binding`), where srun's words give none."""
    given = _srun_options(argv) or {}
    taken = []
    if "ntasks" not in given:
        if "ntasks" in allocation:
            taken = ["ntasks"]  # with, where it is their count (`_job_tasks`), the tasks a node and the nodes
            taken += [key for key in ("ntasks_per_node", "nodes") if _TASKS_FROM_LAYOUT in allocation]
        elif (counted := _gpu_tasks({**allocation, **given})) is not None:
            taken = [key for key in counted[0] if key in allocation and key not in given]
        else:
            taken = [key for key in ("ntasks_per_node", "nodes") if key in allocation and key not in given]
    if "gpu_bind" not in given and _srun_gpu_binding(argv, allocation) is not None:
        binding = next((key for key in ("gpu_bind", "gpus_per_task", "ntasks_per_gpu") if key in allocation), "")
        taken += [binding] if binding in allocation and binding not in given else []
    return taken


def _allocator(argv: list[str]) -> tuple[str, dict[str, str] | None, list[str]] | None:
    """`sbatch [options] script.sh [arguments]` or `salloc [options] [command ...]`: ("sbatch" / "salloc", the task
    options its own words give (`_task_options`; None where they hold options the line does not show), with
    `_IN_ALLOCATION`, the command salloc runs in the allocation ([] for none: the allocation a person's shell, then
    its srun lines, run in; sbatch's script). None for any other command."""
    words = _without_assignments(argv)
    name = words[0].rsplit("/", 1)[-1] if words else ""
    if name not in ("sbatch", "salloc"):
        return None
    if name == "sbatch" and _wrapped(words) is not None:  # `sbatch -n 8 --wrap="srun ..."`: options, no script
        at = next(i for i, w in enumerate(words) if w.startswith("--wrap"))
        options, runs = _task_options(words[1:at] + words[at + (1 if "=" in words[at] else 2) :]), []
    else:
        end = next((i for i, w in enumerate(words[1:], 1) if _is_srun(w) or _srun_program(w)), len(words))
        if name == "sbatch":
            end = next((i for i, w in enumerate(words[1:], 1) if w.endswith((".slurm", ".sbatch")) or i == end), end)
        options, runs = _task_options(words[1:end]), words[end:] if name == "salloc" else []
    return name, None if options is None else {**options, _IN_ALLOCATION: "given"}, runs


def _submitted_string(argv: list[str]) -> tuple[list[str], str] | None:
    """The string a command that submits a job or makes an allocation runs, as `_wrapped_command_string` gives a
    `-c` string: `sbatch --wrap '...'`'s, the batch script ([] for its wrapper: sbatch runs it in a shell of the job,
    read as the job's command is, `_allocated_commands`), and the `-c` string of the command salloc runs (`salloc -N 1
    bash -c '...'`, `salloc -N 1 srun -n 1 bash -c '...'`, with the wrapper it runs under); None for any other."""
    if not argv or ("=" not in argv[0] and not argv[0].endswith(("sbatch", "salloc"))):
        return None  # (most commands: no look past leading assignments)
    words = _without_assignments(argv)
    if not words or words[0].rsplit("/", 1)[-1] not in ("sbatch", "salloc"):
        return None
    if (wrapped := _wrapped(words)) is not None:
        return ([], wrapped) if words[0].endswith("sbatch") else None
    allocating = _allocator(words)
    if allocating is None or allocating[0] != "salloc" or not allocating[2]:
        return None
    return _wrapped_command_string(allocating[2])


def _sbatch_exports(argv: list[str], environment: str | None = None) -> tuple[bool, set[str], dict[str, str]] | None:
    """What sbatch's `--export` passes on to the batch job of the submitting shell's environment: whether all of it,
    the names it gives of it, and the values it sets (`--export=N=4`); None for no `--export`, all of it (sbatch(1):
    "--export=ALL Default mode if --export is not specified"; "--export=NONE Only SLURM_* variables from the user
    environment will be defined"; "--export=[ALL,]<environment_variables> Exports all SLURM_* environment variables
    along with explicitly defined variables ... If "ALL" is specified, then all user environment variables will be
    loaded and will take precedence over any explicitly given environment variables"). The last `--export` of its
    options, wherever they give it (`sbatch --wrap '...' --export=NONE`: with `--wrap` every word is an option or
    its value, sbatch runs no script), else `environment`, the SBATCH_EXPORT sbatch runs with (sbatch(1): "Same as
    --export", the option winning; None for none). An empty value (`--export=`, `SBATCH_EXPORT=`) is a list that
    names no variable: sbatch takes a value neither ALL nor NONE as such a list (src/sbatch/sbatch.c, its
    `_env_merge_filter`), so SLURM_* alone are passed, as with NONE. Not sbatch's: None."""
    words = _without_assignments(argv)
    if not words or words[0].rsplit("/", 1)[-1] != "sbatch":
        return None
    given, wrapping, value_next = None, _wrapped(words) is not None, False
    for index, word in enumerate(words[1:], 1):
        if value_next:  # `--wrap`'s string, `--export`'s value
            value_next = False
        elif word.startswith("--export="):
            given = word.partition("=")[2]
        elif word == "--export" and index + 1 < len(words):
            given, value_next = words[index + 1], True
        elif word == "--wrap":
            value_next = True
        elif not wrapping and not word.startswith("-"):
            break  # (a script's name: its arguments are its own)
    if given is None:
        given = environment
    if given is None:
        return None
    everything, names, values = False, set(), {}
    for entry in given.split(","):
        name, eq, value = entry.partition("=")
        if eq:
            values[name] = value
        elif name == "ALL":
            everything = True
        elif name != "NONE":
            names.add(name)
    return everything, names, values


def _wrapped(words: list[str]) -> str | None:
    """The command `sbatch --wrap="..."` (or `--wrap "..."`) runs as its batch script; None for none."""
    for index, word in enumerate(words):
        if word.startswith("--wrap="):
            return word.partition("=")[2]
        if word == "--wrap" and index + 1 < len(words):
            return words[index + 1]
    return None


def _arm_set(argv: list[str], set_here: dict[str, str], arm_values: dict[str, tuple]) -> dict[str, str]:
    """What srun's input variables one command sets (`_srun_environment`) make of the environment of the commands
    after it: where it runs in a branch (`_BranchCommand`: `then export SLURM_NTASKS=2`), not known (it may not run,
    or not last), its values noted in `arm_values` for the commands later in its arm (`_arm_environment`); elsewhere
    its values, over any a branch noted."""
    if isinstance(argv, _BranchCommand):
        arm_values.update((name, (argv.arms, value)) for name, value in set_here.items())
        return dict.fromkeys(set_here, _UNKNOWN)
    for name in set_here:
        arm_values.pop(name, None)
    return set_here


def _arm_environment(argv: list[str], environment: dict[str, str], arm_values: dict[str, tuple]) -> dict[str, str]:
    """srun's input variables as a command sees them: the environment, with the values a branch set last where the
    command runs later in that arm (`if x; then export SLURM_NTASKS=2; srun ...`, in a branch inside it too), not in
    another (`else srun ...`, the next `case` item, after the `fi`). In a loop, one the loop sets is not known but
    where this pass set it before the command (`export SLURM_NTASKS=4; for ...; do srun ...; export SLURM_NTASKS=2;
    done`: 4, then 2; `_BranchCommand.looped`)."""
    if not isinstance(argv, _BranchCommand) or not (arm_values or argv.looped):
        return environment
    looped = argv.looped
    if looped:
        environment = {**environment, **{name: _UNKNOWN for name in looped if name in _SRUN_ENVIRONMENT}}
    own = {
        name: value
        for name, (arms, value) in arm_values.items()
        if argv.arms[: len(arms)] == arms and len(arms) > looped.get(name, -1)
    }
    return {**environment, **own} if own else environment


def _allocated_commands(
    commands: list[list[str]],
    allocation: dict[str, str] | None = None,
    environment: dict[str, str] | None = None,
    assigned: frozenset = frozenset(),
    submitting: bool = True,
) -> list[tuple[list[str], dict[str, str], frozenset]]:
    """Each simple command of the job's submitted command line (`_marked_commands`) with the task options srun takes
    there and the names of the variables set before it (torchrun's `PET_*`: `_launch_processes`): the options of the
    allocation it runs in (`_allocator`): salloc's command (`salloc -n 8 srun python train.py`) in salloc's, the
    commands of `sbatch --wrap="..."` in sbatch's, any other in none ({}: a bare srun's count not known); over them,
    srun's input variables an earlier command sets (`export SLURM_NTASKS=4 && srun python train.py`, `sbatch --wrap
    "export SLURM_NTASKS=4; srun ..."`), read as a script's lines are (`_assignments`, `_srun_environment`). An
    allocation sets its own options' variables over those exported before it (as salloc in a script,
    `_shell_facts`). The wrapped string is a script of its own (sbatch(1), --wrap: "Sbatch will wrap the specified
    command string in a simple "sh" shell script"), read as the command is, with its own child shells (a `bash
    <<EOF` body, a `bash -c` string: `_child_shell_commands`); what it sets stays in the batch job, and what salloc's
    command sets in salloc's. `allocation`, `environment`, `assigned`: those the commands start with (a wrapped
    string's, a salloc command's); `submitting`: whether they are the job's command, not an allocation's (whose
    sbatch or salloc asks for another)."""
    out: list[tuple[list[str], dict[str, str], frozenset]] = []
    allocation = allocation or {}
    environment = dict(environment or {})  # srun's input variables set so far (`_SRUN_ENVIRONMENT`)
    names = set(assigned)
    arm_values: dict[str, tuple] = {}  # srun's input variables a branch set, known in its arm (`_arm_set`)
    numbered, shells = _child_shell_commands(commands)  # what a `bash <<EOF` body sets ends with it

    def read(argv: list[str]) -> None:
        pairs, only = _assignments(argv)
        if only or argv[0] in _DECLARATIONS or argv[0] == "unset":
            environment.update(_arm_set(argv, _srun_environment(argv, pairs, environment, allocation), arm_values))
        if only or argv[0] in _DECLARATIONS:
            names.update(key for key, _ in pairs)
        if _environment_reset(argv):  # `sudo srun ...`: none of it reaches the command
            out.append((argv, {}, frozenset()))
        else:
            seen = _arm_environment(argv, environment, arm_values)
            out.append((argv, {**allocation, **_environment_options(seen)}, frozenset(names)))

    for number, argv in numbered:
        environment, names, arm_values = shells.at(number, (environment, names, arm_values))
        allocating = _allocator(argv) if submitting else None
        runs = None
        if allocating is not None:
            runs = getattr(argv, "runs", None)  # read with the variables of the shell that runs it
            if runs is None and allocating[0] == "salloc" and allocating[2]:
                runs = _command_strings_read([allocating[2]], _COMMAND_STRING_DEPTH)  # `salloc -n 8 srun ...`
            elif runs is None and allocating[0] == "sbatch" and (wrapped := _wrapped(argv)) is not None:
                try:
                    runs = _marked_commands(wrapped)
                except ValueError:
                    continue
        if runs is None:
            read(argv)
            continue
        options = _job_tasks(allocating[1] or {})
        # the allocation's own variables over the environment it was made in; what its commands set stays theirs
        inner = {name: value for name, value in environment.items() if not _sets_own(name, options)}
        out += _allocated_commands(runs, options, inner, frozenset(names), submitting=False)
    return out


def _submitted_allocation(command: str, path: str) -> tuple[tuple[tuple[str, str], ...] | None, bool]:
    """The task options the job's submitted `sbatch` (or `salloc`) command line gives (`sbatch -n 8 --gpus-per-task=1
    train.sh`), which its scripts' srun lines run in, over the scripts' `#SBATCH` lines (sbatch's command line wins
    over them); () for none; None where the line does not show them all (`sbatch $ARGS train.sh`: the allocation is
    not known). The script at `path`, where a command of the line runs it (`sbatch --wrap "export SLURM_NTASKS=4;
    bash run.sh"`, `salloc -n 8 ./run.sh`, `export SLURM_NTASKS=4 && bash run.sh`), takes them with srun's input
    variables exported before that command, or set on it (`SLURM_NTASKS=4 bash run.sh`), over them: its environment
    (`_allocated_commands`). And whether the script may be the job's batch script, whose `#SBATCH` lines sbatch
    read: not one such a command runs (below)."""
    try:
        commands = split_command(command)
    except ValueError:
        return (), True
    submitted: tuple[tuple[str, str], ...] | None = ()
    for argv in commands:
        if (allocating := _allocator(argv)) is not None:
            submitted = None if allocating[1] is None else tuple(sorted(allocating[1].items()))
            break
    # sbatch(1) (Slurm's doc/man/man1/sbatch.1, 20.11; slurm.schedmd.com/sbatch.html): "The batch script may
    # contain options preceded with "#SBATCH" before any executable commands in the script"; of --wrap: "Sbatch will
    # wrap the specified command string in a simple "sh" shell script, and submit that script to the slurm
    # controller. When --wrap is used, a script name and arguments may not be specified on the command line;
    # instead the sbatch-generated wrapper script is used."
    # A script that a command of the line runs (the wrapped command's `bash run.sh`, salloc's command, `./run.sh`)
    # is no batch script sbatch was given: its #SBATCH lines are a comment to the shell that runs it. The script
    # `sbatch run.sh` names is not run by a command here, and sacct's copy of it (batch_script.sh) is named by no
    # command: both keep their #SBATCH lines.
    for argv, allocation, _ in _allocated_commands(_marked_commands(command)):
        if _runs_script(argv, path):
            return (None if submitted is None else _run_allocation(argv, allocation)), False
    return submitted, True


def _run_allocation(argv: list[str], allocation: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The allocation a script that a command runs takes: the one the command runs in, with srun's input variables
    the command's own leading words set over it (`SLURM_NTASKS=4 bash run.sh`)."""
    pairs, _ = _assignments(argv)
    own = {name: value if _PLAIN_VALUE.fullmatch(value) else _UNKNOWN for name, value in pairs}
    return tuple(sorted({**allocation, **_environment_options(own)}.items()))


_SHELLS = ("bash", "sh", "dash", "zsh", "source", ".")  # run the script their first word names


def _runs_script(argv: list[str], path: str) -> bool:
    """Whether a command runs the job's script at `path`, named by its file's name: as the program (`./run.sh`,
    `srun /home/u/run.sh`) or a shell's script (`bash run.sh`, `sh -e run.sh`, `source run.sh`)."""
    program, words = _program(argv)
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if program in _SHELLS:
        script = next((word for word in words if not word.startswith("-")), "")
        return script.rsplit("/", 1)[-1] == name
    return program == name


_SRUN_VALUED = {"-n": "ntasks", "--ntasks": "ntasks", "-N": "nodes", "--nodes": "nodes"}
_SRUN_VALUED |= {"--ntasks-per-node": "ntasks_per_node", "--gpus-per-task": "gpus_per_task", "--gpu-bind": "gpu_bind"}
_SRUN_VALUED |= {"--ntasks-per-gpu": "ntasks_per_gpu", "--tres-bind": "gpu_bind"}  # --tres-bind's gres/gpu part
# the GPUs asked for (`_gpus_asked`): the job's (`--gpus`), each node's (`--gpus-per-node`, `--gres=gpu:N`)
_SRUN_VALUED |= {"-G": "gpus", "--gpus": "gpus", "--gpus-per-node": "gpus_per_node", "--gres": "gpus_per_node"}
_GPU_TYPE = re.compile(r"[A-Za-z][\w.-]*")  # `volta`, `a100`, `h100.80gb`


def _gpus_asked(entries: list[str], alone: bool) -> str:
    """The GPUs a request's comma-separated entries ask for, summed, as a number (`--gpus=volta:3,kepler:1`: 4), or
    _UNKNOWN where one is not shown as one (`$G`, a `2k` count). Each is `[type:]count` (sbatch(1), srun(1): `-G,
    --gpus=[type:]<number>`, `--gpus-per-node=[type:]<number>`); a `--gres` entry, `gpu[[:type]:count]` here without
    its `gpu`, may leave out its count (`alone`): "The count is the number of those resources with a default value of
    1" (`--gres=gpu`, `--gres=gpu:a100`: one)."""
    total = 0
    for entry in entries:
        if alone and (not entry or _GPU_TYPE.fullmatch(entry)):
            total += 1
            continue
        kind, colon, count = entry.rpartition(":")
        if not count.isdigit() or (colon and not _GPU_TYPE.fullmatch(kind)):
            return _UNKNOWN
        total += int(count)
    return str(total)


# Slurm's srun(1) and sbatch(1) (https://slurm.schedmd.com/srun.html, /sbatch.html, release 26.05), of
# --ntasks-per-gpu: "Request that there are ntasks tasks invoked for every GPU. This option can work in two ways: 1)
# either specify --ntasks in addition, in which case a type-less GPU specification will be automatically determined
# to satisfy --ntasks-per-gpu, or 2) specify the GPUs wanted (e.g. via --gpus or --gres) without specifying --ntasks,
# and the total task count will be automatically determined." It "is not compatible with a node range" nor "with
# --gpus-per-task, --gpus-per-socket, or --ntasks-per-node". --gres is "requested per node", --gpus-per-node "on each
# node", --gpus "the total number of GPUs required for the job".
def _gpu_tasks(options: dict[str, str]) -> tuple[list[str], int | None] | None:
    """The second way: where srun's options over its allocation's (`_task_options`) give `--ntasks-per-gpu=N` and the
    GPUs wanted but no `--ntasks`, the options the task count comes from and the count: N for every GPU, the job's
    (`--gpus`), else each node's (`--gpus-per-node`, `--gres=gpu:G`) on its `--nodes` (one where none is given, as
    for `--ntasks-per-node`); the count None where one is not a number (`-N 1-2`, `$G`). None where the count is
    not so worked out (no `--ntasks-per-gpu` or GPUs asked for; `--ntasks`, `--ntasks-per-node` or
    `--gpus-per-task` given)."""
    if "ntasks_per_gpu" not in options or any(key in options for key in ("ntasks", "ntasks_per_node", "gpus_per_task")):
        return None
    if "gpus" in options:
        keys = ["ntasks_per_gpu", "gpus"]
    elif "gpus_per_node" in options:
        keys = ["ntasks_per_gpu", "gpus_per_node", *(["nodes"] if "nodes" in options else [])]
    else:
        return None
    values = [options[key] for key in keys]
    if not all(value.isdigit() for value in values) or int(options["ntasks_per_gpu"]) < 1:
        return keys, None
    count = 1
    for value in values:
        count *= int(value)
    return keys, count


# `--gpu-bind` values that bind each task to GPUs of its own (srun(1)): Slurm sets each task's CUDA_VISIBLE_DEVICES to
# them, so a task sees only its GPUs, numbered from cuda:0. `none` turns binding off (--gpus-per-task's included).
_GPU_BINDS = ("closest", "single", "per_task", "map_gpu", "mask_gpu")


def _gpu_binding(options: dict[str, str]) -> str | None:
    """The option that binds each srun task to GPUs of its own, as given (`--gpus-per-task=1`, `--gpu-bind=single:1`,
    `--ntasks-per-gpu=2`), from srun's task options over its allocation's (`_task_options`): `--gpus-per-task`
    implicitly sets `--gpu-bind=per_task:<n>` and `--ntasks-per-gpu` `--gpu-bind=single:<ntasks>` (below), either
    overridden by an explicit `--gpu-bind` (or `--tres-bind=gres/gpu:...`); `--gpu-bind=none` binds none. None where
    none binds, or the value is not known (`$BIND`)."""
    if "gpu_bind" in options:
        kinds = [part.partition(":")[0] for part in options["gpu_bind"].split(",") if part not in ("verbose", "quiet")]
        return f"--gpu-bind={options['gpu_bind']}" if kinds and kinds[0] in _GPU_BINDS else None
    count = options.get("gpus_per_task", "").rpartition(":")[2]  # `a100:1`
    if count.isdigit() and int(count) > 0:
        return f"--gpus-per-task={options['gpus_per_task']}"
    # Slurm's srun(1) and sbatch(1) (https://slurm.schedmd.com/srun.html, /sbatch.html, release 26.05), of
    # --ntasks-per-gpu: "This option will implicitly set --tres-bind=gres/gpu:single:<ntasks>, but that can be
    # overridden with an explicit --tres-bind=gres/gpu specification", and of --gpu-bind: "Equivalent to
    # --tres-bind=gres/gpu:[verbose,]<type>". (It may not be given with --gpus-per-task.)
    count = options.get("ntasks_per_gpu", "")
    return f"--ntasks-per-gpu={count}" if count.isdigit() and int(count) > 0 else None


def bound_gpus(binding: str, tasks: int) -> int | None:
    """How many GPUs `tasks` srun tasks so bound (`_gpu_binding`) hold: N each for `--gpus-per-task=N` (`a100:N`) and
    `--gpu-bind=per_task:N`, one for each K tasks for `single:K` and `--ntasks-per-gpu=K`; None where the binding does
    not say (`closest`, `map_gpu`, `mask_gpu`, several GPU types)."""
    flag, _, value = binding.partition("=")
    if flag == "--gpus-per-task":
        count = value.rpartition(":")[2]
        return tasks * int(count) if "," not in value and count.isdigit() else None
    if flag == "--ntasks-per-gpu":
        value = f"single:{value}"
    kind = next((part for part in value.split(",") if part not in ("verbose", "quiet")), "")
    name, _, count = kind.partition(":")
    if not count.isdigit() or int(count) < 1:
        return None
    if name == "per_task":
        return tasks * int(count)
    return -(-tasks // int(count)) if name == "single" else None


def _srun_gpu_binding(argv: list[str], allocation: dict[str, str]) -> str | None:
    """`_gpu_binding` of a launch under srun, its own options over the allocation's; None where it runs under no srun
    or srun's words hide options (`srun $SRUN_ARGS ...`: `--gpu-bind=none` may be among them)."""
    given = _srun_options(argv)
    return None if given is None else _gpu_binding({**allocation, **given})


def _srun_tasks_per_gpu(argv: list[str], allocation: dict[str, str]) -> int | None:
    """The tasks a python under srun starts for every GPU, where `--ntasks-per-gpu=N` gives them (srun's, its
    allocation's, `SLURM_NTASKS_PER_GPU`: "Request that there are ntasks tasks invoked for every GPU", srun(1)), each
    a training process loading its own batches (the loader rules count N a GPU); None where it is not given as a
    number, or a launcher runs in each task (its own count a task)."""
    if _program(argv)[0] in LAUNCHERS or (given := _srun_options(argv)) is None:
        return None
    count = {**allocation, **given}.get("ntasks_per_gpu", "")
    return int(count) if count.isdigit() and int(count) > 0 else None


# srun's options that take no value (its man page), so that a `$ARGS` after one is options the line does not show
_SRUN_SWITCHES = {"--exclusive", "--overlap", "-u", "--unbuffered", "-l", "--label", "-K", "--kill-on-bad-exit"}
_SRUN_SWITCHES |= {"-v", "--verbose", "-Q", "--quiet", "-X", "--disable-status", "--pty", "-E", "--preserve-env"}


def apply_step_tasks(facts: list[CodeFact], steps: tuple[tuple[str, str, int], ...]) -> None:
    """Give the job's launches under srun (`shell_launch`, `command_launch`) the task count of the step they ran in,
    as the scheduler counted it (`steps`: (id, program, tasks), Slurm's sacct steps, named by the program srun ran),
    over what the scripts say or leave unknown (`#SBATCH --ntasks=2` overridden on sbatch's command line, `srun -n
    $N`, a bare srun): each program's launches, in order, are its steps, in order, when there are as many; else all
    take the count its steps share; else (a count per step, steps and lines not matched one to one) none. A python
    is a process a task; a launcher (`srun torchrun --nproc_per_node 4 ...`) starts its own count in each task
    (`_launch_processes`; none where that is not known). The launch records the step (`step`) and quotes no `#SBATCH`
    line for a count the step changed."""
    configs = {f.path: f.detail for f in facts if f.kind == "launch_config"}
    launches = {}
    for fact in facts:
        if fact.kind in ("shell_launch", "command_launch") and (command := _fact_command(fact))[0] is not None:
            argv, srun = command[0], _srun_words(command[0])
            at = next((index for index, word in enumerate(argv) if _is_srun(word)), None)
            if srun is not None and (ran := argv[at + 1 + len(srun) :] if at is not None else []):
                launches[id(fact)] = (fact, command, ran[0].rsplit("/", 1)[-1])
    for program in {name for _, _, name in launches.values()}:
        lines = [(fact, command) for fact, command, name in launches.values() if name == program]
        ran = [(ident, tasks) for ident, name, tasks in steps if name.rsplit("/", 1)[-1] == program]
        if len(ran) == len(lines):
            pairs = list(zip(lines, ran, strict=True))
        elif ran and len({tasks for _, tasks in ran}) == 1:
            pairs = [(line, ran[0]) for line in lines]  # one count, e.g. a loop's srun run again and again
        else:
            continue
        for (fact, (argv, assigned)), (ident, tasks) in pairs:
            processes = tasks
            if not str(fact.detail.get("launcher", "")).startswith("python"):
                environment = set(assigned) | {
                    f.detail["name"] for f in facts if f.kind == "env" and f.path == fact.path and f.line < fact.line
                }
                config = configs.get(fact.detail.get("launch_config", ""))
                processes = _launch_processes(argv, frozenset(environment), config=config, tasks=tasks)
                if processes is None:
                    continue
            if fact.detail.get("processes") != processes:
                fact.detail.pop("sbatch_lines", None)
            if fact.detail.get("launcher") in LAUNCHERS:
                fact.detail["srun_tasks"] = tasks  # the step's, each task running the launcher once
            fact.detail["processes"] = processes
            fact.detail["step"] = ident


def _fact_command(fact: CodeFact) -> tuple[list[str] | None, frozenset]:
    """The whole command of a launch fact (its `argv` keeps the first 12 words), from its quoted line (the command
    salloc or `sbatch --wrap` runs there too), else its `argv`; and the variables its line sets before it (`export
    PET_NPROC_PER_NODE=4 && torchrun ...`: `_allocated_commands`)."""
    wanted = fact.detail.get("argv")
    try:
        commands = _allocated_commands(split_shell(fact.text))
    except ValueError:
        commands = []
    found = next(((words, assigned) for words, _, assigned in commands if words[:12] == wanted), None)
    return found or (list(wanted) if wanted else None, frozenset())


def _launch_on_cpu(argv: list[str]) -> bool:
    """`accelerate launch --cpu ...`: training forced on the CPU, no GPU process at all."""
    program, words = _launcher_words(argv)
    return program == "accelerate" and "--cpu" in (_launcher_options(program, words) or {})


def _command_kind(argv: list[str]) -> str:
    """What one shell command does, from its words: install, download, upload, sleep, launch, interactive, ''."""
    program, rest = _program(argv)
    if not program:
        return ""
    if program in ("pip", "pip3", "uv", "conda", "mamba", "micromamba", "apt-get", "apt", "yum", "dnf") and (
        "install" in rest
    ):
        return "install"
    if program.startswith("python") and rest[:3] == ["-m", "pip", "install"]:
        return "install"
    if program in ("wget", "curl") or (program == "huggingface-cli" and "download" in rest):
        return "download"
    if program == "git" and rest[:1] == ["clone"]:
        return "download"
    if program == "aws" and rest[:1] == ["s3"] and len(rest) >= 2 and rest[1] in ("cp", "sync", "mv"):
        paths = [w for w in rest[2:] if not w.startswith("-")]
        if len(paths) >= 2:
            if paths[-1].startswith(REMOTE_SCHEMES) and not paths[0].startswith(REMOTE_SCHEMES):
                return "upload"
            if paths[0].startswith(REMOTE_SCHEMES):
                return "download"
    if program in ("gsutil", "azcopy", "rclone") and any(w in rest for w in ("cp", "copy", "sync", "rsync")):
        paths = [w for w in rest if "://" in w or ":" in w]
        return "upload" if paths and ("://" in paths[-1] or ":" in paths[-1]) else "download"
    if program == "sleep":
        return "sleep"
    if program in INTERACTIVE_PROGRAMS:
        return "interactive"
    if program in LAUNCHERS:
        return "launch"
    if program.startswith("python"):
        return "python"
    return ""


def _without_here_documents(text: str) -> str:
    """`text` with the body of each here-document (`cat <<EOF > next.sh`, `<<-EOF`, `<<'EOF'`, `sbatch <<EOF`) and
    its delimiter line blanked, an empty line left for each so that the lines after keep their numbers: a body is the
    standard input of the command that opened it, data, not commands of the script (bash(1), Here Documents: "the
    shell ... reads input from the current source until a line containing only word (with no trailing blanks) is
    seen. All of the lines read up to that point are then used as the standard input ... for a command"; a `srun`
    line that `cat` writes to another script is no launch of this job). The body of one that a shell reads as its
    commands (`bash <<EOF`, `sh -s <<'EOF'`: a shell given no script file and no -c string reads them from its
    standard input, `_reads_standard_input`) is kept, read as lines of the script where it stands (with `<<-`, its
    leading tabs removed); one fed to any other program, a shell under srun, sudo or ssh among them, or through a
    pipe (`cat <<EOF | bash`), stays data. With `<<-` leading tabs are stripped from the body's lines and the
    delimiter line; in an unquoted here-document a backslash-newline is removed first (`x\\` then `EOF` is the line
    "xEOF"), in a quoted one (`<<'EOF'`, `<<"EOF"`, `<<\\EOF`) not. With no delimiter line the body runs to the end
    (bash warns "here-document ... delimited by end-of-file"). An arithmetic `$((1 << 3))`, a here-string `<<<`, and
    a quoted or commented `<<` open none. The body begins after the line the command ends on (a quoted string, or a
    backslash-newline, carries the command over)."""
    return _here_documents_read(text)[0]


def _here_documents_read(text: str) -> tuple[str, list[tuple[int, int, bool]]]:
    """`_without_here_documents`'s text, and the lines of each body a shell reads as its commands (`bash <<EOF`), as
    (first line, the line after its last, whether its delimiter is quoted), numbered from 1: that shell is a child of
    the script's (`_ChildShells`)."""
    if "<<" not in text:
        return text, []
    lines = text.split("\n")
    out: list[str] = []
    shells: list[tuple[int, int, bool]] = []
    at, quote = 0, ""  # the next line; the quote open at the end of the lines read (a string may span lines)
    while at < len(lines):
        opened: list[tuple[str, bool, bool, bool]] = []
        while True:  # the lines of one command: the body begins after them
            line = lines[at]
            at += 1
            more, quote, continued = _here_document_operators(line, quote)
            opened += more
            out.append(line)
            if not continued or at == len(lines):
                break
        for delimiter, strip, quoted, read in opened:
            body: list[str] = []
            closing = 0
            while at < len(lines):
                start, line = at, lines[at]
                at += 1
                while not quoted and _continues(line) and at < len(lines):
                    line, at = line[:-1] + lines[at], at + 1  # the backslash-newline removed, as bash does
                if (line.lstrip("\t") if strip else line) == delimiter:
                    closing = at - start
                    break
                kept = lines[start:at] if quoted else [line, *[""] * (at - start - 1)]
                body.extend(part.lstrip("\t") if strip else part for part in kept)
            if read and body:
                inner, nested = _here_documents_read("\n".join(body))
                shells += [(len(out) + 1, len(out) + 1 + len(body), quoted)]
                shells += [(len(out) + first, len(out) + end, inner_quoted) for first, end, inner_quoted in nested]
                out.extend(inner.split("\n"))
            else:
                out.extend([""] * len(body))
            out.extend([""] * closing)
    return "\n".join(out), shells


class _ChildShells:
    """The state a script's reader keeps of its environment, kept apart for each here-document body a child shell reads
    as its commands (`bash <<EOF`, `_here_documents_read`): the body starts with what the script set before it (its
    exports, which the child inherits: `child` makes the child's state of the script's where a reader tells its
    exports apart, `_ShellVariables.child`), and what the body sets, exports included, ends with it: the script's
    lines after it have what they had before it (bash(1): a child's environment does not pass back to its parent). An
    unquoted body's words are expanded by the script's own shell, before the child reads them (`expanding`). `bodies`:
    the bodies' lines where they are not the text's (`_marked_commands`: the job's command)."""

    def __init__(self, text: str = "", bodies: list[tuple[int, int, bool]] | None = None):
        self.bodies = sorted(bodies if bodies is not None else _here_documents_read("\n".join(text.splitlines()))[1])
        self.entered: list[tuple[int, object, bool]] = []  # (the line after the body, the state before it, quoted)

    def at(self, number: int, state, child=None):
        """The state for the line `number`, the script's lines read in order: the one before a body ended by now, and
        a copy of `state` kept for each body the line begins (the body's own: `child(state, quoted)`, else `state`)."""
        while self.entered and number >= self.entered[-1][0]:
            state = self.entered.pop()[1]
        while self.bodies and self.bodies[0][0] <= number:
            first, end, quoted = self.bodies.pop(0)
            if number < end:
                self.entered.append((end, copy.deepcopy(state), quoted))
                state = child(state, quoted) if child is not None else state
        return state

    def expanding(self):
        """The state of the shell that expands the words of the body the lines read now are in: an unquoted body's
        are the feeding shell's, as it was at the body's command (bash(1), Here Documents: "all lines of the
        here-document are subjected to parameter expansion"; a quoted delimiter leaves them to the child); None in a
        quoted body, or outside any."""
        return self.entered[-1][1] if self.entered and not self.entered[-1][2] else None


def _continues(line: str) -> bool:
    """Whether a line ends in a backslash that escapes its newline (an odd number of them)."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _here_document_operators(line: str, quote: str) -> tuple[list[tuple[str, bool, bool, bool]], str, bool]:
    """The here-documents one line opens, in order, each (delimiter, `<<-`, quoted, read as commands:
    `_reads_standard_input` of its command's words), with the quote open at the line's start (`quote`, as `_scan`
    names them) and the one open at its end, and whether its command goes on to the next line (an open quote, a
    backslash-newline)."""
    found: list[list] = []  # [delimiter, strip, quoted, operator's start, its word's end, command start]
    spans: list[tuple[int, int]] = []
    commands: list[tuple[int, int]] = []  # (start, end) of each command on the line
    start = 0
    index, before = 0, " "
    while index < len(line):
        char = line[index]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            index, before = index + 2, "x"
            continue
        elif quote:
            quote = "" if char == quote[-1] else quote  # `"` ends a double quote, `'` an ANSI-C one
        elif line.startswith("$'", index):
            quote, index = "$'", index + 2
            continue
        elif char in "'\"":
            quote = char
        elif char == "#" and before in " \t;&|()<>":
            break  # a comment, to the end of the line
        elif (
            line.startswith("$((", index)
            or line.startswith("$[", index)
            or (line.startswith("((", index) and before in " \t;&|(")
        ):
            index, before = _arithmetic_end(line, index), "x"  # `$((1 << 3))`, `(( x <<= 2 ))`: a shift
            continue
        elif line.startswith("<<<", index):
            index, before = index + 3, "<"  # a here-string: its word is the input
            continue
        elif line.startswith("<<", index):
            strip = line.startswith("<<-", index)
            word, quoted, end = _here_document_word(line, index + 2 + strip)
            if word is not None:
                found.append([word, strip, quoted, start])
                spans.append((index, end))
            index, before = end, "x"
            continue
        elif (
            char in ";|&()"
            and not (char == "&" and (before in "<>" or line.startswith(">", index + 1)))
            and not (char == "|" and before == ">")
        ):
            commands.append((start, index))  # `;`, `&&`, `||`, `|`, `&`, a subshell's parenthesis end a command
            start = index + 1
        before = char
        index += 1
    commands.append((start, len(line)))
    out = []
    for delimiter, strip, quoted, begins in found:
        end = next(stop for first, stop in commands if first == begins)
        text = "".join(line[i] for i in range(begins, end) if not any(a <= i < b for a, b in spans))
        try:
            words = shlex.split(text)
        except ValueError:
            words = []
        out.append((delimiter, strip, quoted, _reads_standard_input(words)))
    return out, quote, bool(quote) or _continues(line)


def _arithmetic_end(line: str, index: int) -> int:
    """The index after the arithmetic expansion or command at `index` (`$((...))`, `((...))`, `$[...]`)."""
    if line.startswith("$[", index):
        end = line.find("]", index)
        return len(line) if end < 0 else end + 1
    depth = 0
    for at in range(index, len(line)):
        depth += {"(": 1, ")": -1}.get(line[at], 0)
        if depth == 0 and line[at] == ")":
            return at + 1
    return len(line)


def _here_document_word(line: str, index: int) -> tuple[str | None, bool, int]:
    """The delimiter of a here-document whose word begins at `index` (after `<<` or `<<-` and any blanks), with its
    quotes removed, whether any part of it was quoted (then its body is not expanded, nor a backslash-newline in it
    removed), and the index after it; None for no word (a syntax error)."""
    while index < len(line) and line[index] in " \t":
        index += 1
    word, quoted = [], False
    while index < len(line) and line[index] not in " \t;&|<>()":
        char = line[index]
        if char == "\\" and index + 1 < len(line):
            word.append(line[index + 1])
            quoted, index = True, index + 2
        elif char in "'\"":
            end = line.find(char, index + 1)
            end = len(line) if end < 0 else end
            word.append(line[index + 1 : end])
            quoted, index = True, end + 1
        else:
            word.append(char)
            index += 1
    return ("".join(word) or None) if word else None, quoted, index


# a redirection word after shlex (`2>&1`, `>/dev/null`, `>`, `<in`): left out of a command's words, with its target
# where that is the next word
_REDIRECTION = re.compile(r"(?:\d+|\{\w+\})?(?:&>>?|<>|>>|>\||>&|<&|<|>)(.*)", re.DOTALL)


def _reads_standard_input(words: list[str]) -> bool:
    """Whether a command (its words, here-documents left out) is a shell that reads its commands from its standard
    input: `bash`, `sh -ex`, `bash -s -- a b` (bash(1): "If the -s option is present, or if no arguments remain after
    option processing, then commands are read from the standard input"), not `bash run.sh` (its script file),
    `bash -c '...'`, nor a shell a wrapper runs (`srun bash`, `sudo bash`, `ssh host bash`: left unread)."""
    kept, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif match := _REDIRECTION.fullmatch(word):
            skip = not match.group(1)
        else:
            kept.append(word)
    while kept and _ASSIGNMENT.fullmatch(kept[0]):
        kept = kept[1:]
    if not kept or kept[0].rsplit("/", 1)[-1] not in _SHELL_PROGRAMS:
        return False
    index, standard_input = 1, False
    while index < len(kept):
        word = kept[index]
        if word in ("--", "-"):
            index += 1
            break
        if word in _SHELL_VALUED:
            index += 2
            continue
        if not word.startswith(("-", "+")) or word == "+":
            break
        if not word.startswith("--"):
            if "c" in word[1:]:
                return False
            standard_input = standard_input or "s" in word[1:]
        index += 1
    return standard_input or index >= len(kept)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, logical line) with backslash continuations joined as bash joins them: a line
    that ends in an unquoted, unescaped '\\' goes on with the next, the backslash-newline pair removed and nothing put
    in its place (bash(1), QUOTING: "A \\<newline> pair is treated as a line continuation (that is, it is removed
    from the input stream and effectively ignored)"; `--nproc_per_node=\\` then `1` is `--nproc_per_node=1`). A
    '\\' followed by a blank escapes the blank and continues nothing (`srun -n 8 \\ ` then `python train.py` are
    two commands), nor does an escaped one (`\\\\`), nor one inside single quotes (`'...\\`, `$'...\\`), where a
    backslash is itself. A line whose '\\' is in a
    comment (`# ...`, an `#SBATCH` directive, `srun -n 4 # note \\`, a `  # note \\` line inside a continued
    command) continues on no other: the shell ends a comment at its newline, its last '\\' included (POSIX shell,
    Token Recognition: a '#' and "all subsequent characters up to, but excluding, the next <newline>" are discarded;
    bash runs `echo one \\`, `  # c \\`, `echo two` as two commands), and sbatch reads its directives a line at a
    time, to each '\\n' (src/sbatch/opt.c, _next_line), joining none: `#SBATCH -n 4 \\` then `#SBATCH -n 8` are two
    directives, and after `# note \\` the next line is run. A here-document's body is left out, an empty line in place
    of each of its lines, unless a shell reads it as its commands (`_without_here_documents`)."""
    out, joined, first, continuing = [], "", 0, False
    text = _without_here_documents("\n".join(text.splitlines()))  # a here-document's body is no command
    for number, line in enumerate(text.split("\n"), start=1):
        if not continuing:
            first = number
        if line.endswith("\\"):
            spans, quote, escaped = _scan(joined + line[:-1])
            if not spans and not escaped and quote not in ("'", "$'"):
                joined, continuing = joined + line[:-1], True  # the '\\' and the newline removed
                continue
        out.append((first, joined + line))
        joined, continuing = "", False
    if continuing:
        out.append((first, joined))
    return out


def _comments(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each comment the shell reads in `text`: from a '#' that begins a word (after a blank, a
    newline or an operator, or at the start), not quoted or escaped, up to its line's newline (POSIX shell, Token
    Recognition; bash alike: `echo a#b c # d` prints "a#b c"). `a#b`, `--tag=exp#3`, `http://host/#frag`, `"a # b"`,
    `$'a # b'` and `a\\ #b` are words, `$#` and `${#arr[@]}` parameters; after `;`, `&&`, `|`, `(` or `>` a word
    begins."""
    return _scan(text)[0]


def _scan(text: str) -> tuple[list[tuple[int, int]], str, bool]:
    """The comments the shell reads in `text` (`_comments`), and the quote open at its end ('', "'", '"', or "$'" for
    bash's ANSI-C quoting, in which a backslash escapes the next character and a "'" ends it) and whether its last
    character is escaped by a backslash."""
    spans: list[tuple[int, int]] = []
    quote, escaped, before, index = "", False, " ", 0
    while index < len(text):
        char = text[index]
        if escaped:
            escaped, char = False, "x"  # an escaped character is part of a word
        elif quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            escaped = True
        elif quote:
            quote = "" if char == quote[-1] else quote  # `"` ends a double quote, `'` an ANSI-C one
        elif char == "$" and text.startswith("'", index + 1):
            quote, index = "$'", index + 1
        elif char in "'\"":
            quote = char
        elif char == "#" and before in " \t\n;&|()<>":
            end = text.find("\n", index)
            end = len(text) if end < 0 else end
            spans.append((index, end))
            index = end  # the newline, if any, is read next: a word begins after it
            continue
        before = char
        index += 1
    return spans, quote, escaped


def _comment_begins(text: str) -> bool:
    """Whether the shell reads a comment in `text` (`_comments`)."""
    return bool(_comments(text))


# bash(1), QUOTING: "Words of the form $'string' are treated specially. The word expands to string, with backslash-
# escaped characters replaced as specified by the ANSI C standard": these, `\\nnn` (octal), `\\xHH`, `\\uHHHH`,
# `\\UHHHHHHHH` and `\\cx` (a control character); any other backslash is kept with its character.
_ANSI_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ANSI_C_ESCAPES |= {"v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_C_NUMBERS = {"x": (16, 2), "u": (16, 4), "U": (16, 8)}  # the base and the most digits each takes


def _ansi_c(text: str, start: int) -> tuple[str | None, int]:
    """The string of the ANSI-C quoted word whose body begins at `start` (after `$'`), and the index after its
    closing quote; None where it has none (an unbalanced quote). A NUL ends the string, as bash's C strings end."""
    out, index = [], start
    while index < len(text):
        char = text[index]
        if char == "'":
            return "".join(out).partition("\0")[0], index + 1
        if char != "\\" or index + 1 == len(text):
            out.append(char)
            index += 1
            continue
        escape = text[index + 1]
        if escape in _ANSI_C_ESCAPES:
            out.append(_ANSI_C_ESCAPES[escape])
            index += 2
        elif escape in "01234567":
            digits = re.match(r"[0-7]{1,3}", text[index + 1 :]).group()
            out.append(chr(int(digits, 8) & 0xFF))
            index += 1 + len(digits)
        elif escape in _ANSI_C_NUMBERS and (
            found := re.match(rf"[0-9A-Fa-f]{{1,{_ANSI_C_NUMBERS[escape][1]}}}", text[index + 2 :])
        ):
            out.append(chr(min(int(found.group(), 16), 0x10FFFF)))
            index += 2 + len(found.group())
        elif escape == "c" and index + 2 < len(text):
            out.append(chr(ord(text[index + 2]) & 0x1F))
            index += 3
        else:
            out.append("\\" + escape)  # not an escape bash knows: the backslash stays
            index += 2
    return None, len(text)


def _shell_text(line: str) -> str:
    """`line` as shlex (POSIX mode) reads bash's words from it: its comments left out (`_comments`), a backslash-newline
    pair removed outside single quotes (`_logical_lines`), an unquoted newline a `;` (bash(1), SHELL GRAMMAR: a list's
    commands are separated by ";", "&" or a newline: a multi-line job command, an imported job's, is a command a
    line), ANSI-C quoting (`$'it\\'s'`, `$'\\t'`) turned into the single-quoted string it
    stands for, and `$"..."` into `"..."` (bash's locale translation, which no catalog here changes)."""
    out: list[str] = []
    quote, before, index = "", " ", 0
    while index < len(line):
        char = line[index]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif line.startswith("\\\n", index):
            index += 2
            continue
        elif char == "\\":
            out.append(line[index : index + 2])
            before, index = "x", index + 2
            continue
        elif quote:
            quote = "" if char == '"' else quote
        elif line.startswith("$'", index):
            string, end = _ansi_c(line, index + 2)
            if string is None:  # no closing quote: shlex says so
                out.append(line[index + 1 :])
                break
            index = end
            out.append("'" + string.replace("'", "'\\''") + "'")
            before = "x"
            continue
        elif line.startswith('$"', index):
            index += 1  # the `$` goes; the double quote is read next
            continue
        elif char in "'\"":
            quote = char
        elif char == "#" and before in " \t\n;&|()<>":
            end = line.find("\n", index)
            index = len(line) if end < 0 else end
            continue
        elif char == "\n":
            out.append(" ; ")  # set apart: shlex would join `&&;` into one operator
            before, index = "\n", index + 1
            continue
        out.append(char)
        before = char
        index += 1
    return "".join(out)


class _Piped(list):
    """A simple command's words where a `|` follows it (`_commands`): maybe an alternative of a `case` item's pattern
    (`a|b)`, `_pattern_alternatives`)."""


def _commands(tokens: list[str], operators: list[tuple[str, str]] | None = None) -> list[list[str]]:
    """Split a token list at ; && || | & into simple commands (one a `|` follows a `_Piped`); $(...) contents are left
    as words. `operators`, where given: the operator before and the one after each command appended to it (";" at
    the start and end; a newline is a ";", and `a &&` then a newline is `a && b`)."""
    commands, current, before = [], [], ";"
    for token in tokens:
        if token in (";", "&&", "||", "|", "&", "|&", ";;", ";&", ";;&"):  # `;;` and the like end a `case` item
            if current:
                commands.append(_Piped(current) if token in ("|", "|&") else current)
                if operators is not None:
                    operators.append((before, token))
                before = token
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
        if operators is not None:
            operators.append((before, ";"))
    return commands


def split_shell(line: str, operators: list[tuple[str, str]] | None = None) -> list[list[str]]:
    """The words of each simple command of `line` as bash reads them (`_shell_text`: its comments left out, a newline
    ending a command, ANSI-C quoting decoded). shlex's own comment reading is not used: it starts a comment at any
    '#', inside a word too, so `python train.py --tag=exp#3 --workers 8` lost `#3 --workers 8` and `$#` ended its
    line. ValueError for an unbalanced quote. `operators`: `_commands`'."""
    return _split_words(_without_here_documents(line), operators)


def _split_words(text: str, operators: list[tuple[str, str]] | None = None) -> list[list[str]]:
    lexer = shlex.shlex(_shell_text(text), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    return _commands(list(lexer), operators)


# Where the commands of a here-document body that a child shell reads begin and end, in the job's command read as
# one list of commands (`_marked_commands`): a command of one word each, of characters no command line holds
_CHILD_SHELL_BEGINS, _CHILD_SHELL_ENDS = ["\x00<<"], ["\x00EOF"]
_EXPANDED_BODY_BEGINS = "\x00<<\x00"  # `_split_marking_shells`' word for where an `_ExpandedBody` begins


class _ExpandedBody(list):
    """`_CHILD_SHELL_BEGINS` (equal to it) where the body's delimiter is not quoted (`bash <<EOF`): the shell that
    reads the command expands the body's words before the child reads them (`_ChildShells.expanding`)."""


def _split_marking_shells(text: str, operators: list[tuple[str, str]] | None = None) -> list[list[str]]:
    """`split_shell`'s commands of `text`, with `_CHILD_SHELL_BEGINS` before and `_CHILD_SHELL_ENDS` after those of
    each here-document body a child shell reads as its commands (`bash <<EOF`, `_here_documents_read`), an
    `_ExpandedBody` where its delimiter is not quoted. `operators`: `_commands`'."""
    read, bodies = _here_documents_read(text)
    if not bodies:
        return _split_words(read, operators)
    lines = read.split("\n")
    marks: dict[int, list[str]] = {}
    for first, end, quoted in bodies:  # numbered from 1; `end` the line after the body's last
        marks.setdefault(end - 1, []).insert(0, _CHILD_SHELL_ENDS[0])
        marks.setdefault(first - 1, []).append(_CHILD_SHELL_BEGINS[0] if quoted else _EXPANDED_BODY_BEGINS)
    marked = []
    for index, line in enumerate(lines):
        marked += marks.get(index, [])  # lines of their own: commands of their own
        marked.append(line)
    marked += marks.get(len(lines), [])  # a body delimited by the end of the text
    commands = _split_words("\n".join(marked), operators)
    return [_ExpandedBody(_CHILD_SHELL_BEGINS) if argv == [_EXPANDED_BODY_BEGINS] else argv for argv in commands]


# bash(1): "-c  If the -c option is present, then commands are read from the first non-option argument
# command_string"; its options that take the next word (`-o pipefail`, `-O extglob`, `--rcfile FILE`) are set apart
_SHELL_PROGRAMS = ("bash", "sh", "dash", "zsh", "ksh", "mksh", "ash")
_SHELL_VALUED = {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}
_COMMAND_STRING_DEPTH = 3  # `bash -c "sh -c '...'"`: a few shells deep at most


def _command_string(argv: list[str]) -> str | None:
    """The commands a shell runs from its `-c` string where it is the command's program (`bash -c 'cd /work &&
    torchrun ...'`, `/bin/sh -ec '...'`, `bash -lc`); None for any other command, a shell running a script file
    (`bash run.sh`), and one under a wrapper (`srun bash -c '...'` runs it in each task: read as the srun it is)."""
    if not argv or argv[0].rsplit("/", 1)[-1] not in _SHELL_PROGRAMS:
        return None
    reads_string, index = False, 1
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 1
            break
        if word in _SHELL_VALUED:
            index += 2
            continue
        if not word.startswith(("-", "+")) or word in ("-", "+"):
            break
        reads_string = reads_string or (not word.startswith("--") and "c" in word[1:])
        index += 1
    return argv[index] if reads_string and index < len(argv) else None


def _wrapped_command_string(argv: list[str]) -> tuple[list[str], str] | None:
    """The `-c` string a shell runs (`_command_string`), with the words of the wrappers it runs under (`srun -n 2 bash
    -c '...'`: `srun -n 2`, which runs it in each task; `nohup`, `env X=1`, `time`; an env whose `-S` string runs the
    shell, `env -S 'bash -c "..."'`: `env` and the string's `NAME=value` words): [] for a shell that is the command's
    program, and the variables it is given where it is given any (`SLURM_NTASKS=2 bash -c 'srun ...'`: the string's
    srun runs with them, and its child shell has them, `_child_at`). None for none, and under an env whose string env
    refuses (`_env_command`)."""
    words = _without_assignments(argv)
    if (string := _command_string(words)) is not None:
        return argv[: len(argv) - len(words)], string
    if not words or not _wrapper(words[0]):
        return None
    wrapper = argv[: len(argv) - len(words)]
    while words and _wrapper(words[0]):
        if _is_srun(words[0]):  # its program: a launcher, python, a script, or a shell (`srun sh -c '...'`)
            shell = (
                i for i, w in enumerate(words[1:], 1) if _srun_program(w) or w.rsplit("/", 1)[-1] in _SHELL_PROGRAMS
            )
            start = next(shell, len(words))
            wrapper, words = wrapper + words[:start], words[start:]
            continue
        rest = _after_wrapper(words)
        if rest and words[len(words) - len(rest) :] == rest:
            wrapper, words = wrapper + words[: len(words) - len(rest)], rest
        elif rest and _is_env(words[0]) and (found := _env_command(words)) is not None:  # its `-S` string's words
            wrapper, words = [*wrapper, words[0], *found[0]], rest
        else:
            words = []
    if not words or (string := _command_string(words)) is None:
        return None
    return wrapper, string


_IN_THE_SHELL = ("cd", "set", "unset", "source", ".", "shift", *_DECLARATIONS)  # what a child shell itself does


def _under_wrapper(read: list[list[str]], wrapper: list[str]) -> list[list[str]]:
    """The commands a wrapped shell's `-c` string runs (`_wrapped_command_string`), each that runs a program under the
    wrapper's words (`srun -n 2 torchrun ...`: srun runs the shell, so its commands, in each task), the shell's own
    settings as they are (`export X=1`, `cd /work`). A wrapper of variables alone (`SLURM_NTASKS=2 bash -c '...'`,
    `env SLURM_NTASKS=2 bash -c`) gives the shell its environment, which the string may change (`export
    SLURM_NTASKS=4; srun ...`: 4 tasks): an `export` of them first, not words of each command."""
    out: list[list[str]] = []
    given = [word for word in wrapper if not _is_env(word)]
    if wrapper and all(_ASSIGNMENT.fullmatch(word) for word in given) and sum(map(_is_env, wrapper)) <= 1:
        out, wrapper = [["export", *given]] if given else [], []
    for argv in read:
        if argv in (_CHILD_SHELL_BEGINS, _CHILD_SHELL_ENDS) or not wrapper:
            out.append(argv)
            continue
        if argv[0] not in _IN_THE_SHELL and not _assignments(argv)[1]:
            wrapped = [*wrapper, *argv]
            argv = _BranchCommand(wrapped, argv.arms, argv.looped) if isinstance(argv, _BranchCommand) else wrapped
        out.append(argv)
    return out


def split_command(command: str) -> list[list[str]]:
    """The simple commands of the job's submitted command line (`split_shell`), a shell's `-c` string read as the
    commands it runs in its place: a Kubernetes container's `["/bin/bash", "-c", "pip install ...\ntorchrun ..."]`
    (joined with shlex by the connector) is the install and the launch, a line a command. ValueError for an
    unbalanced quote on the command line; a `-c` string that is not read (an unbalanced quote) is left as the
    shell's command."""
    return [argv for argv in _marked_commands(command) if argv not in (_CHILD_SHELL_BEGINS, _CHILD_SHELL_ENDS)]


def _marked_commands(command: str) -> list[list[str]]:
    """`split_command`'s commands, with where those a child shell reads from a here-document begin and end
    (`_split_marking_shells`), for what they set to end with that shell (`_child_shell_commands`): read as a script's
    line is (`_script_line_commands`), a `-c` string's child shell with the command's variables where it runs."""
    return _script_line_commands(_ShellVariables(), command, split=_split_marking_shells)


def _shell_commands(text: str, arms: tuple[int, ...] = ()) -> list[list[str]]:
    """`_split_marking_shells`' commands of a command line read as a script's line is (`_ShellVariables.commands`):
    after the reserved words that begin them (`if true; then srun ...`), a `_BranchCommand` each in a compound command,
    a subshell's between `_CHILD_SHELL_BEGINS` and `_CHILD_SHELL_ENDS`, the plain variables it sets in place in its
    later commands (`NGPUS=4; torchrun --nproc_per_node=$NGPUS`, on its next line too). `arms`: those of the command
    whose `-c` string the text is, where it runs in a branch (`_ShellVariables.child`)."""
    return _ShellVariables(arms).commands(text, split=_split_marking_shells)


def _child_shell_commands(commands: list[list[str]]) -> tuple[list[tuple[int, list[str]]], _ChildShells]:
    """The commands of `_marked_commands` numbered as a script's lines are, a number a stretch between marks, and the
    child shells their bodies' numbers make (`_ChildShells`), as a script's: `bash <<EOF`'s exports end with it."""
    numbered, bodies, begun, number = [], [], [], 1
    for argv in commands:
        if argv in (_CHILD_SHELL_BEGINS, _CHILD_SHELL_ENDS):
            number += 1
            if argv == _CHILD_SHELL_BEGINS:
                begun.append(number)
            elif begun:
                bodies.append((begun.pop(), number, True))
        else:
            numbered.append((number, argv))
    bodies += [(first, number + 1, True) for first in begun]
    return numbered, _ChildShells(bodies=bodies)


def _command_strings_read(commands: list[list[str]], depth: int) -> list[list[str]]:
    """`commands` with each shell's `-c` string read as the commands it runs, between `_CHILD_SHELL_BEGINS` and
    `_CHILD_SHELL_ENDS`: the shell is a child of the one running the command (bash(1): "-c ... commands are read from
    the first non-option argument"), so what the string exports or sets ends with it (`bash -c 'export
    SLURM_NTASKS=2'` gives a later srun nothing), while it starts with what was exported before it."""
    out = []
    for argv in commands:
        found = _wrapped_command_string(argv) if depth else None
        try:
            if found is None:
                out.append(argv)
            else:
                arms = argv.arms if isinstance(argv, _BranchCommand) else ()  # `then bash -c '...'`: in that arm
                read = _command_strings_read(_shell_commands(found[1], arms), depth - 1)
                out.extend([_CHILD_SHELL_BEGINS, *_under_wrapper(read, found[0]), _CHILD_SHELL_ENDS])
        except ValueError:
            out.append(argv)
    return out


def _script_line_commands(
    variables: _ShellVariables,
    line: str,
    expanding: _ShellVariables | None = None,
    depth: int = _COMMAND_STRING_DEPTH,
    split: Callable[..., list[list[str]]] | None = None,
) -> list[list[str]]:
    """The commands of one line of a shell script (`_ShellVariables.commands`: the known variables' values in place,
    what it sets noted), each shell's `-c` string (`bash -c '...'`, `sh -ec "..."`) read as the commands that shell
    runs, between `_CHILD_SHELL_BEGINS` and `_CHILD_SHELL_ENDS`: a child shell, whose variables are the ones the
    script exported where that shell starts, not at the line's end (`export N=4; bash -c '...$N'; export N=8`: 4,
    `_ShellVariables.strings`), and whose own settings end with it. A string with an unbalanced quote is left as the
    shell's command. ValueError for such a line. `split`: how the line is split (the job's command,
    `_split_marking_shells`), its strings' too."""
    out = []
    commands = variables.commands(line, expanding, split)
    strings, submitted = variables.strings, variables.submitted
    for index, argv in enumerate(commands):
        if depth and index in submitted:  # `sbatch --wrap '...'`: the command, with what its string runs
            out.append(_submitted_command(argv, *submitted[index], depth, split))
            continue
        if not depth or index not in strings:
            out.append(argv)
            continue
        found, child = strings[index]
        try:
            read = _script_line_commands(child, found[1], None, depth - 1, split)
        except ValueError:
            out.append(argv)
            continue
        out += [_CHILD_SHELL_BEGINS, *_under_wrapper(read, found[0]), _CHILD_SHELL_ENDS]
    return out


class _SubmittingCommand(list):
    """The words of a command that submits a job or makes an allocation with a string to run (`_submitted_string`),
    with the commands that string runs (`runs`), read with the variables of the shell that runs it (`_job_shell`), for
    `_allocated_commands`; and the arms of the compound commands it is in, as a `_BranchCommand`'s."""

    def __init__(self, words: list[str], runs: list[list[str]]):
        super().__init__(words)
        self.arms = getattr(words, "arms", ())
        self.runs = runs


def _submitted_command(
    argv: list[str],
    found: tuple[list[str], str],
    shell: _ShellVariables,
    depth: int,
    split: Callable[..., list[list[str]]] | None,
) -> list[str]:
    """`argv`, a command that runs `found`'s string in a job or an allocation, as a `_SubmittingCommand`: sbatch's
    batch script its commands alone, salloc's command's `-c` string a child shell's, under its wrapper (as
    `_command_strings_read` gives it); `argv` as it is where the string has an unbalanced quote."""
    try:
        read = _script_line_commands(shell, found[1], None, depth - 1, split)
    except ValueError:
        return argv
    if _without_assignments(argv)[0].endswith("sbatch"):
        return _SubmittingCommand(argv, read)
    return _SubmittingCommand(argv, [_CHILD_SHELL_BEGINS, *_under_wrapper(read, found[0]), _CHILD_SHELL_ENDS])


_LAYOUT_OPTIONS = {
    "--ntasks-per-node": "ntasks_per_node",
    "--cpus-per-task": "cpus_per_task",
    "-c": "cpus_per_task",
    "--gpus-per-task": "gpus_per_task",
}


def _slurm_layout(argv: list[str]) -> dict:
    """The task layout a Slurm request gives (`#SBATCH --ntasks-per-node=8`, `srun --ntasks-per-node 8 -c 12`):
    tasks per node, CPUs per task, GPUs per task, each when given as a number."""
    found: dict = {}
    for index, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if flag in _LAYOUT_OPTIONS:
            value = value if eq else (argv[index + 1] if index + 1 < len(argv) else "")
            if value.isdigit() and int(value) > 0:
                found[_LAYOUT_OPTIONS[flag]] = int(value)
    return found


def _srun_program(word: str) -> bool:
    name = word.rsplit("/", 1)[-1]
    return name in LAUNCHERS or name.startswith(("python", "bash")) or name.endswith((".sh", ".py")) or name == "env"


def _layout_fact(path: str, number: int, shown: str, words: list[str], tasks: dict[str, str]) -> CodeFact | None:
    """The `slurm_layout` fact of an allocation's line (`#SBATCH ...`, `salloc ...`): its layout (`_slurm_layout`),
    its task options as numbers and its `--gpu-bind` as given; None where it gives none."""
    layout = _slurm_layout(words)
    layout |= {key: int(value) for key, value in tasks.items() if value.isdigit() and int(value) > 0}
    if "gpu_bind" in tasks:
        layout["gpu_bind"] = tasks["gpu_bind"]
    return CodeFact("slurm_layout", path, number, shown, layout) if layout else None


# The variables a script's environment fact records: those the rules read, and torchrun's options from the environment
# (`PET_*`), which a launch's count read again later depends on (`apply_step_tasks`)
_ENV_FACTS = {"CUDA_VISIBLE_DEVICES", "NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME", "NCCL_P2P_DISABLE"}
_ENV_FACTS |= {"PET_NPROC_PER_NODE", "PET_NNODES"}


def _shell_facts(
    path: str, text: str, evidence: ScriptEvidence, submitted: tuple | None = (), batch: bool = True
) -> None:
    """`submitted`: the task options of the job's sbatch command line (`_submitted_allocation`), over the script's
    `#SBATCH` lines; None where not known. `batch`: False where the script is not the job's batch script (a command
    of the job's line runs it, `sbatch --wrap "bash run.sh"`): sbatch read none of its `#SBATCH` lines, which give
    neither the allocation nor the job's layout."""
    launched = False
    assigned: set[str] = set()  # the variables the script's lines set so far (torchrun's `PET_*`: `_launch_processes`)
    # the batch script's #SBATCH task options, which a bare srun takes, in the allocation sbatch made for it
    allocation: dict[str, str] = {_IN_ALLOCATION: "given"} if batch else {}
    allocated_at: dict[str, int] = {}  # the line that gave each
    commanded = False  # sbatch reads no #SBATCH line after the script's first command
    given = dict(submitted or ())  # sbatch's command line: no line of the script gives them
    environment: dict[str, str] = {}  # srun's input variables the script exports (`export SLURM_NTASKS=8`)
    environment_at: dict[str, int] = {}  # the line that set each
    ran: list[tuple] = []  # the commands that may run another script, with their allocation (`ScriptEvidence.runs`)
    variables = _ShellVariables()  # the values of its plain variables (`NGPUS=4`, then `srun -n $NGPUS`)
    shells = _ChildShells(text)  # what a `bash <<EOF` body sets ends with it
    scopes: list[tuple] = []  # the state before each `bash -c '...'` string or subshell read now
    arm_values: dict[str, tuple] = {}  # srun's input variables a branch set, known in its arm (`_arm_set`)
    assigned_shared = False  # `assigned` is a scope's in `scopes` too: copied before a child shell sets a name
    logical = _logical_lines(text)
    for position, (number, line) in enumerate(logical, 1):
        variables.ahead = None  # (not copied for a here-document body's shell)
        state = (environment, environment_at, assigned, arm_values, variables)
        state = shells.at(number, state, lambda parent, _: (*parent[:4], parent[4].child()))
        environment, environment_at, assigned, arm_values, variables = state
        variables.ahead = (logical, position)  # a loop this line opens may end on a later one
        stripped = line.strip()
        # sbatch(1): "The batch script may contain options preceded with "#SBATCH" before any executable commands in
        # the script. sbatch will stop processing further #SBATCH directives once the first non-comment
        # non-whitespace line has been reached in the script." (slurm.schedmd.com/sbatch.html, 20.11 and later). One
        # after the first command, or in a script that is no batch script, is a comment to the shell that runs it:
        # neither the allocation (its task count, its binding) nor the job's layout. The shebang, blank lines and
        # other comments before them are no command.
        # A directive is a line that begins with "#SBATCH", in its first column: sbatch compares the line as written
        # (src/sbatch/opt.c, _opt_batch_script: `xstrncmp(line, "#SBATCH", 7)`, no whitespace skipped; sbatch(1) of
        # 15.08: options up to "the first line which does NOT begin with "#SBATCH""), so an indented `  #SBATCH -n 8`
        # is a comment to sbatch as to the shell; and, its first non-blank character being '#', it is no command
        # either: the directives after it are still read.
        directive = line.startswith("#SBATCH")
        if directive and (commanded or not batch):
            continue
        if directive:
            tasks, fact = _directive(path, number, line)
            allocation |= tasks
            allocated_at |= dict.fromkeys(tasks, number)
            if fact:
                evidence.facts.append(fact)
            continue
        if not stripped or stripped.startswith("#"):
            continue
        commanded = True
        try:
            expanding = shells.expanding()  # an unquoted `bash <<EOF` body's words, as the script expands them
            commands = _script_line_commands(variables, line, expanding[4] if expanding else None)
        except ValueError:
            evidence.parse_errors.append(f"{path}:{number}: unbalanced quotes")
            continue
        for argv in commands:
            if not argv:
                continue
            if argv == _CHILD_SHELL_BEGINS:  # a `-c` string's child shell, a subshell: what it sets ends with it
                # kept as they are, `assigned` (a name each the script set so far) copied where the child sets one
                scopes.append((environment, environment_at, assigned, arm_values))
                environment, environment_at, arm_values = dict(environment), dict(environment_at), dict(arm_values)
                assigned_shared = True
                continue
            if argv == _CHILD_SHELL_ENDS:
                if scopes:
                    environment, environment_at, assigned, arm_values = scopes.pop()
                    assigned_shared = bool(scopes)
                continue
            pairs, only = _assignments(argv)
            if only or argv[0] in _DECLARATIONS or argv[0] == "unset":
                base = {} if submitted is None else _job_tasks({**allocation, **given})
                if set_here := _srun_environment(argv, pairs, environment, base):
                    set_here = _arm_set(argv, set_here, arm_values)  # `then export SLURM_NTASKS=2`: in its arm
                    environment |= set_here
                    environment_at |= dict.fromkeys(set_here, number)
                    options = {key: value for key, value in _environment_options(set_here).items() if value != _UNKNOWN}
                    if fact := _layout_fact(path, number, stripped, [], options):
                        evidence.facts.append(fact)
            if (only or argv[0] in _DECLARATIONS) and pairs:
                if assigned_shared:
                    assigned, assigned_shared = set(assigned), False
                assigned.update(key for key, _ in pairs)
            for key, value in pairs:
                if key in _ENV_FACTS:
                    evidence.facts.append(CodeFact("env", path, number, stripped, {"name": key, "value": value}))
            if only or argv[0] in _DECLARATIONS:
                continue  # runs no program
            # the allocation srun takes its tasks from: the batch job's (sbatch's command line over #SBATCH lines)
            current = {} if submitted is None else _job_tasks({**allocation, **given})
            exported = _environment_options(_arm_environment(argv, environment, arm_values))
            current |= exported  # the script's exports over the allocation's own
            if "ntasks" in exported:
                current.pop(_TASKS_FROM_LAYOUT, None)  # the count is the export's, not the layout's
            lines = {key: line for key, line in allocated_at.items() if key not in given}
            lines |= _environment_options(environment_at)
            salloc_runs = False  # salloc runs the command in its own allocation, known where the script's is not
            if (allocating := _allocator(argv)) is not None:
                name, options, runs = allocating
                if name == "salloc":  # a new allocation: for the command it runs, else for the lines after it
                    options = options or {}
                    if fact := _layout_fact(path, number, stripped, argv[: len(argv) - len(runs)], options):
                        evidence.facts.append(fact)
                    options = _job_tasks(options)  # the task count salloc works out, which its SLURM_NTASKS holds
                    # salloc sets its own options' variables in the allocation's environment, over the script's
                    kept = {name for name in _SRUN_ENVIRONMENT if not _sets_own(name, options)}
                    if not runs:
                        allocation, allocated_at, given, submitted = options, dict.fromkeys(options, number), {}, ()
                        environment = {name: value for name, value in environment.items() if name in kept}
                        environment_at = {name: at for name, at in environment_at.items() if name in kept}
                        continue
                    current = {**_environment_options({k: v for k, v in environment.items() if k in kept}), **options}
                    lines, argv, salloc_runs = dict.fromkeys(options, number), runs, True
            seen = frozenset(assigned)  # the names set before it (torchrun's `PET_*`: `_launch_processes`)
            if reset := _environment_reset(argv):  # `sudo srun ...`: none of the script's environment reaches it
                current, lines, seen = {}, {}, frozenset()
            if _program(argv)[0] in _SHELLS or not _command_kind(argv):  # `bash inner.sh`, `./inner.sh`
                known = submitted is not None or salloc_runs or reset
                ran.append((tuple(argv), _run_allocation(argv, current) if known else None))
            kind = _command_kind(argv)
            detail = {"argv": argv[:12]}
            if _is_srun(argv[0]):  # its own options, before the program it runs (whose `-c` is not srun's)
                program = next((i for i, w in enumerate(argv[1:], 1) if _srun_program(w)), len(argv))
                if layout := _slurm_layout(argv[1:program]):
                    evidence.facts.append(CodeFact("slurm_layout", path, number, stripped, layout))
            if kind == "install":
                evidence.facts.append(CodeFact("shell_install", path, number, stripped, detail))
            elif kind == "download":
                evidence.facts.append(CodeFact("shell_download", path, number, stripped, detail))
            elif kind == "upload":
                evidence.facts.append(CodeFact("shell_upload", path, number, stripped, detail))
            elif kind == "sleep":
                evidence.facts.append(
                    CodeFact("shell_sleep", path, number, stripped, {**detail, "after_launch": launched})
                )
            elif kind == "interactive":
                evidence.facts.append(CodeFact("shell_interactive", path, number, stripped, detail))
            elif kind in ("launch", "python"):
                launched = True
                launcher = _program(argv)[0]  # torchrun of `NCCL_DEBUG=INFO /opt/conda/bin/torchrun ...`
                launch = {**detail, "launcher": launcher}
                if launcher in LAUNCHERS and (tasks := _srun_tasks(argv, current)) is not None:
                    launch["srun_tasks"] = tasks  # each runs the launcher once (its count read again: settle_...)
                if (processes := _launch_processes(argv, seen, current)) is not None:
                    launch["processes"] = processes  # `mpirun -np 1`: one process, no distributed launch
                    taken = _allocation_taken(argv, current) if launcher.startswith("python") else []
                    if quoted := sorted({lines[key] for key in taken if key in lines}):
                        launch["sbatch_lines"] = quoted
                if binding := _srun_gpu_binding(argv, current):
                    launch["gpu_binding"] = binding  # each task sees only its own GPUs, from cuda:0
                if per_gpu := _srun_tasks_per_gpu(argv, current):
                    launch["tasks_per_gpu"] = per_gpu  # `--ntasks-per-gpu=2`: two training processes a GPU
                if _launch_on_cpu(argv):
                    launch["on_cpu"] = True  # `accelerate launch --cpu`: no GPU process, no distributed launch
                evidence.facts.append(CodeFact("shell_launch", path, number, stripped, launch))
                if precision := _shell_precision(argv):
                    evidence.facts.append(
                        CodeFact("mixed_precision", path, number, stripped, {"call": argv[0], "dtype": precision})
                    )
                for kind, found in _launch_settings(argv):
                    evidence.facts.append(CodeFact(kind, path, number, stripped, found))
            evidence.facts.extend(_remote_path_facts(argv, path, number, stripped))
    evidence.runs = tuple(ran)


def _directive(path: str, number: int, line: str) -> tuple[dict[str, str], CodeFact | None]:
    """The task options an `#SBATCH` line gives (`_task_options`) and its `slurm_layout` fact (`_layout_fact`)."""
    words = _directive_words(line[len("#SBATCH") :])
    tasks = _task_options(words) or {}
    return tasks, _layout_fact(path, number, line.strip(), words, tasks)


def _leading_directive_facts(path: str, text: str, evidence: ScriptEvidence) -> None:
    """The `slurm_layout` facts of the `#SBATCH` lines of a batch script not read as a shell script (a Python one, a
    tcsh one: `_unread_shell`): sbatch reads them in a script of any
    language, up to its first line that is neither blank nor a comment (`_shell_facts` quotes sbatch(1)), in one
    it can run, whose first line names its interpreter ("sbatch: error: This does not look like a batch script. The
    first line must start with #! followed by the path to an interpreter.")."""
    if not text.startswith("#!"):
        return
    for number, line in enumerate(text.split("\n")[1:], 2):
        if line.startswith("#SBATCH"):
            if fact := _directive(path, number, line)[1]:
                evidence.facts.append(fact)
        elif line.strip() and not line.strip().startswith("#"):
            return


def _directive_words(text: str) -> list[str]:
    """The words of an `#SBATCH` line after the magic word, as sbatch reads them (src/sbatch/opt.c, _get_argument):
    split at whitespace, quotes grouping and a backslash escaping a character, up to an unquoted, unescaped '#', which
    ends them ("found an un-escaped #, rest of line is a comment"): `#SBATCH --ntasks=8  # was -n 4` is `--ntasks=8`."""
    words: list[str] = []
    word: str | None = None
    quote = ""
    escaped = False
    for char in text:
        if escaped:
            word, escaped = (word or "") + char, False
        elif char == "\\":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
            else:
                word = (word or "") + char
        elif char in "\"'":
            quote = char
        elif char == "#":
            break
        elif char.isspace():
            if word is not None:
                words.append(word)
            word = None
        else:
            word = (word or "") + char
    if word is not None:
        words.append(word)
    return words


def _srun_environment(
    argv: list[str], pairs: list[tuple[str, str]], environment: dict[str, str], allocation: dict[str, str]
) -> dict[str, str]:
    """srun's input variables (`_SRUN_ENVIRONMENT`) one line of a script sets for the srun lines after it: those it
    exports (`export SLURM_NTASKS=8`, `declare -x`), or assigns where they are in the environment already (exported
    before, or the allocation's own: sbatch exports SLURM_NTASKS where it was given `--ntasks`); a value the line
    does not show (`$N`) or one it unsets is not known (`_UNKNOWN`). {} where it sets none."""
    if argv[0] == "unset":
        return {word: _UNKNOWN for word in argv[1:] if word in _SRUN_ENVIRONMENT}
    exported = argv[0] == "export" or (argv[0] == "declare" and any(re.fullmatch(r"-\w*x\w*", w) for w in argv[1:]))
    from_allocation = {
        name for name, option in _SRUN_ENVIRONMENT.items() if _ALLOCATION_SETS.get(name, option) in allocation
    }
    return {
        name: value if _PLAIN_VALUE.fullmatch(value) else _UNKNOWN
        for name, value in pairs
        if name in _SRUN_ENVIRONMENT and (exported or name in environment or name in from_allocation)
    }


def _remote_path_facts(argv: list[str], path: str, number: int, shown: str) -> list[CodeFact]:
    """A command's remote URIs given to an option (`--data s3://bucket/set`), each a `remote_path` fact at the
    line: read for a data option, written for an output or checkpoint one."""
    facts = []
    argv = _command_through_env_s(argv)  # `env -S "python train.py --data s3://..."`
    for index, word in enumerate(argv[:-1]):
        if word.startswith("--") and argv[index + 1].startswith(REMOTE_SCHEMES):
            role = word.lstrip("-")
            purpose = "write" if _WRITE_ROLE.search(role) else ("read" if _DATA_ROLE.search(role) else "unknown")
            detail = {"url": argv[index + 1], "role": role, "purpose": purpose}
            facts.append(CodeFact("remote_path", path, number, shown, detail))
    return facts


JOB_COMMAND = "job command"  # the path of facts read from the job's submitted command line


def command_code_facts(command: str) -> list[CodeFact]:
    """Precision facts of the job's submitted command line (`torchrun train.py --bf16`, `accelerate launch
    --mixed_precision bf16 ...`, `--deepspeed ds.json`, `trainer.precision=bf16-mixed`), at line 1 of
    JOB_COMMAND; its launches as `command_launch` facts, so that rules know which flags the job was run with; and
    its remote URIs (`--data s3://...`) as `remote_path` facts, as a shell script's launch line gives them."""
    try:
        commands = _marked_commands(command)
    except ValueError:
        return []
    facts, shown = [], command.strip()[:500]
    # `salloc -n 8 srun python train.py`, `sbatch --wrap`, `export SLURM_NTASKS=8 && srun python train.py`
    for argv, allocation, assigned in _allocated_commands(commands):
        facts.extend(_remote_path_facts(argv, JOB_COMMAND, 1, shown))
        if _command_kind(argv) not in ("launch", "python"):
            continue
        launch = {"argv": argv[:12], "launcher": _program(argv)[0]}
        if launch["launcher"] in LAUNCHERS and (tasks := _srun_tasks(argv, allocation)) is not None:
            launch["srun_tasks"] = tasks
        if (processes := _launch_processes(argv, assigned, allocation=allocation)) is not None:
            launch["processes"] = processes
        if binding := _srun_gpu_binding(argv, allocation):
            launch["gpu_binding"] = binding
        if per_gpu := _srun_tasks_per_gpu(argv, allocation):
            launch["tasks_per_gpu"] = per_gpu
        if _launch_on_cpu(argv):
            launch["on_cpu"] = True
        facts.append(CodeFact("command_launch", JOB_COMMAND, 1, shown, launch))
        if precision := _shell_precision(argv):
            facts.append(CodeFact("mixed_precision", JOB_COMMAND, 1, shown, {"call": argv[0], "dtype": precision}))
        facts.extend(CodeFact(kind, JOB_COMMAND, 1, shown, found) for kind, found in _launch_settings(argv))
    return facts


def command_facts(command: str) -> list[str]:
    """Kinds of the simple commands in a job's submitted command line (e.g. ['interactive'])."""
    try:
        return [kind for argv in split_command(command) if (kind := _command_kind(argv))]
    except ValueError:
        return []
