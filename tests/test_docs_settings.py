"""README's Configuration section against what the service reads from its environment: every
variable its table lists is read, every variable the service reads is named there (a setting
nobody can find is as good as missing), `.env.example` — which README says documents every
setting — has each one, and the table's default is the value the service runs with when the
variable is unset."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

# Imports the settings (and what web and worker processes import at start) with os.environ
# recording every name the project's own code asks it for, then prints those names and the
# settings' values of the names README's table lists.
RECORDER = r"""
import json, os, sys
repo, names = sys.argv[1], json.loads(sys.argv[2])
read = set()
original = os._Environ.__getitem__
STDLIB = ("/os.py", "_collections_abc.py", "<frozen os>", "<frozen _collections_abc>")

def recording(self, key):
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.endswith(STDLIB):
        frame = frame.f_back
    caller = frame.f_code.co_filename if frame is not None else ""
    if caller.startswith(repo + os.sep) and os.sep + ".venv" + os.sep not in caller:
        read.add(key)
    return original(self, key)

os._Environ.__getitem__ = recording
import django
django.setup()
import config.celery, config.wsgi  # noqa: E401,F401
from django.conf import settings

def plain(value):
    return value if isinstance(value, (bool, int, float, str, list, tuple, type(None))) else repr(value)

values = {name: plain(getattr(settings, name)) for name in names if hasattr(settings, name)}
print(json.dumps({"read": sorted(read), "values": values}))
"""

# Single sign-on on (its variables are read only then) and HTTPS on (the HSTS and redirect ones).
REQUIRED = {
    "SECRET_KEY": "0123456789abcdef" * 4,
    "HTTPS": "1",
    "OIDC_ISSUER": "https://sso.example.org/realms/gpu",
    "OIDC_AUTHORIZATION_ENDPOINT": "https://sso.example.org/auth",
    "OIDC_TOKEN_ENDPOINT": "https://sso.example.org/token",
    "OIDC_USERINFO_ENDPOINT": "https://sso.example.org/userinfo",
    "OIDC_JWKS_URI": "https://sso.example.org/certs",
    "OIDC_CLIENT_ID": "fleet-triage",
    "OIDC_CLIENT_SECRET": "client-secret",
    "OIDC_OPERATOR_GROUPS": "platform-admins",
}
# Read by the service, named for the process rather than set by an operator.
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE"}


def configuration_section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Configuration\n")
    return text[start : text.index("\n## ", start + 1)]


def table_rows() -> list[tuple[list[str], str]]:
    """(the variables a row names, its default cell)."""
    rows = []
    for line in configuration_section().splitlines():
        cells = line.split("|")
        if line.startswith("| `") and len(cells) > 3:
            rows.append((re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[1]), cells[2].strip()))
    return rows


def documented() -> set[str]:
    return {name for names, _ in table_rows() for name in names}


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    """What the service read at start-up and its settings, in a clean environment."""
    data_dir = tmp_path_factory.mktemp("settings")
    base = {"PATH": os.environ["PATH"], "HOME": str(data_dir), "PYTHONPATH": str(REPO), "DATA_DIR": str(data_dir)}
    base["DJANGO_SETTINGS_MODULE"] = "config.settings"
    names = json.dumps(sorted(documented()))
    runs = []
    for extra in (REQUIRED, {"SECRET_KEY": REQUIRED["SECRET_KEY"]}):
        out = subprocess.run(
            [sys.executable, "-c", RECORDER, str(REPO), names],
            env={**base, **extra},
            cwd=data_dir,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {"read": set(runs[0]["read"]) | set(runs[1]["read"]), "values": runs[0]["values"]}


def test_the_table_lists_the_settings():
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "OIDC_ISSUER", "DIGEST_TOP_TEAMS"} <= documented()


def test_every_variable_the_table_lists_is_read(started):
    unread = documented() - started["read"]
    assert not unread, f"README's Configuration table lists variables the service never reads: {sorted(unread)}"


def test_every_variable_the_service_reads_is_in_the_configuration_section(started):
    section = configuration_section()
    missing = sorted(name for name in started["read"] - NOT_SETTINGS if not re.search(rf"`{name}[`=]", section))
    assert not missing, f"read from the environment but not named in README's Configuration section: {missing}"


def test_env_example_has_every_variable_of_the_table():
    example = (REPO / ".env.example").read_text(encoding="utf-8")
    listed = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))
    assert not documented() - listed, f".env.example lacks {sorted(documented() - listed)}"
    assert not listed - documented(), (
        f".env.example sets variables README's table lacks: {sorted(listed - documented())}"
    )


def same(literal: str, value) -> bool:
    if isinstance(value, bool):
        return literal in {"0", "1"} and value == (literal == "1")
    if isinstance(value, (int, float)):
        return re.fullmatch(r"-?\d+(\.\d+)?", literal) is not None and float(literal) == float(value)
    if isinstance(value, (list, tuple)):
        return [item for item in literal.split(",") if item] == list(value)
    return literal == value


def test_the_documented_defaults_are_the_defaults(started):
    values, wrong = started["values"], []
    for names, cell in table_rows():
        # "`10` / `10`", "`25` (`587` with ...)", "`480` (8 hours)"; not "`DATA_DIR/storage`" or "unset: ..."
        match = re.fullmatch(r"`([^`]*)`(?: / `([^`]*)`)?(?: \(.*\))?", cell)
        if match is None:
            continue
        literals = [literal for literal in match.groups() if literal is not None]
        if len(literals) != len(names):
            literals = literals[:1] * len(names)
        for name, literal in zip(names, literals, strict=True):
            if name in REQUIRED or name == "DATA_DIR" or name not in values:
                continue  # set for the run, or no Django setting of that name
            if literal in values or re.match(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\b", literal):
                continue  # another setting's value (`DEBUG`, `DATA_DIR/storage`)
            if not same(literal, values[name]):
                wrong.append(f"{name}: README says {literal!r}, the service has {values[name]!r}")
    assert not wrong, "\n".join(wrong)


def test_the_values_env_example_sets_start_the_service(tmp_path):
    """`cp .env.example .env` and a SECRET_KEY of one's own: the settings it sets are all accepted."""
    example = (REPO / ".env.example").read_text(encoding="utf-8")
    values = dict(re.findall(r"^([A-Z][A-Z0-9_]+)=(.*)$", example, re.MULTILINE))
    folders = {
        name: str(tmp_path / name.lower()) for name in ("DATA_DIR", "STORAGE_DIR", "UPLOAD_DIR", "ARCHIVE_WORK_DIR")
    }
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO), **values, **folders}
    env["SECRET_KEY"] = REQUIRED["SECRET_KEY"]
    out = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
