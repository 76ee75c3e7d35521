"""Every `manage.py` command README.md and docs/*.md tell a user to run exists, and takes the options
they show it with: a renamed command or option (`--dryrun`, `--team` dropped) fails here instead of
in an operator's terminal at 3 a.m. Options named in prose beside a command (`--clean` deletes the
orphans) are held to that command; a concrete example line (no `[…]`, `<…>` or `a | b` syntax) is
parsed whole, its values and positional arguments too."""

from __future__ import annotations

import re
import shlex
from functools import cache

import pytest
from django.core.management import CommandError, get_commands, load_command_class

from tests.docs_text import snippets

INVOCATION = re.compile(r"manage\.py(?:\s+([a-z_]+))?(.*)")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# Where a shell line stops being the command: another command, a comment, a redirection.
SHELL_END = re.compile(r"\s(?:\|\||&&|;|#|>|2>)\s?")
SYNTAX = re.compile(r"[\[\]<>…]|\.\.\.|\s\|\s")


@cache
def parser_of(name: str):
    return load_command_class(get_commands()[name], name).create_parser("manage.py", name)


def accepts(name: str, option: str) -> bool:
    return option in parser_of(name)._option_string_actions


def project_commands() -> set[str]:
    return {name for name, app in get_commands().items() if not app.startswith("django.")}


def invocations():
    """(where, command or None, options, argv or None): argv when the snippet is a whole example to
    copy (a fenced line, or a span from `python manage.py` on) without placeholders' syntax."""
    ours = project_commands()
    found = []
    # The command of the paragraph's last code spans when they were that command and its options:
    # "`python manage.py triage --all` (or `--job CLUSTER/ID`, `--rule-set VERSION`)".
    current: dict[tuple[str, int], str | None] = {}
    for snippet in snippets():
        text = snippet.text
        key = (snippet.where.split(":")[0], snippet.paragraph)
        match = INVOCATION.search(text)
        first = text.split()[0] if text.split() else ""
        if match is None and first in ours and OPTION.search(text):
            match = re.match(r"([a-z_]+)(.*)", text)  # `ingest_archive --async`
        if match is not None:
            name, rest = match.group(1), SHELL_END.split(match.group(2))[0]
            whole = snippet.fenced or re.match(r"(\S*python\S*|docker compose exec \S+ python) manage", text)
            argv = shlex.split(rest) if whole and name and not SYNTAX.search(rest) else None
            found.append((snippet.where, name, OPTION.findall(rest), argv))
            current[key] = name
        elif not snippet.fenced and text.startswith("--") and key in current:
            found.append((snippet.where, current[key], OPTION.findall(text.split()[0]), None))
        else:
            current.pop(key, None)
    return found


def test_the_docs_name_commands():
    """The extraction itself: the docs' commands are found (a change of Markdown style that hid them
    all would make every check below pass)."""
    named = {name for _, name, _, _ in invocations()}
    assert {"ingest_archive", "triage", "send_digests", "sync_source", "prune_series", "check_storage"} <= named


@pytest.mark.parametrize(("where", "name", "options", "argv"), invocations(), ids=lambda v: str(v)[:60])
def test_documented_command_and_options_exist(where, name, options, argv):
    if name is None:  # "a `manage.py` command ... (`--traceback` adds the traceback)": every command's
        name = "check"
    assert name in get_commands(), f"{where}: there is no `manage.py {name}`"
    unknown = [option for option in options if not accepts(name, option)]
    assert not unknown, f"{where}: `manage.py {name}` does not take {unknown}"
    if argv is not None:
        try:
            parser_of(name).parse_args(argv)
        except CommandError as error:
            pytest.fail(f"{where}: `manage.py {name} {shlex.join(argv)}` is refused: {error}")
