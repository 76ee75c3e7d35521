"""Settings fail loudly on bad values, at start-up, naming the variable."""

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int
from tests.conftest import REPO


def test_env_helpers_parse_good_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", " 42 ")
    monkeypatch.setenv("X_FLOAT", "12.5")
    assert env_bool("X_BOOL", False) is True
    assert env_int("X_INT", 0) == 42
    assert env_float("X_FLOAT", 0.0, minimum=0, maximum=100) == 12.5
    assert env_int("X_UNSET", 7) == 7


@pytest.mark.parametrize(
    ("reader", "value", "args"),
    [(env_bool, "maybe", (False,)), (env_int, "12k", (0,)), (env_float, "150", (0.0,))],
)
def test_env_helpers_name_the_variable_on_bad_values(monkeypatch, reader, value, args):
    monkeypatch.setenv("X_BAD", value)
    kwargs = {"minimum": 0, "maximum": 100} if reader is env_float else {}
    with pytest.raises(ImproperlyConfigured, match="X_BAD"):
        reader("X_BAD", *args, **kwargs)


def _import_settings(**env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    return subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_secret_key_is_required_when_debug_is_off():
    result = _import_settings(DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_a_bad_database_url_stops_start_up(tmp_path):
    result = _import_settings(DEBUG="1", DATA_DIR=str(tmp_path), DATABASE_URL="mysqlx://nowhere")
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr


def test_demo_mode_generates_and_keeps_a_secret_key(tmp_path):
    assert _import_settings(DEBUG="1", DATA_DIR=str(tmp_path)).returncode == 0
    key = (tmp_path / "secret_key").read_text()
    assert len(key) >= 50
    assert _import_settings(DEBUG="1", DATA_DIR=str(tmp_path)).returncode == 0
    assert (tmp_path / "secret_key").read_text() == key


EMBEDDED_PRAGMAS = """
import os
import django
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
django.setup()
from django.db import connection
with connection.cursor() as cursor:
    print(cursor.execute("PRAGMA journal_mode").fetchone()[0], cursor.execute("PRAGMA synchronous").fetchone()[0])
"""


def test_the_embedded_database_commits_without_waiting_for_the_disk(tmp_path):
    # WAL with synchronous=NORMAL (1): readers never block the writer and a commit does not wait for
    # an fsync; FULL (2), SQLite's default, made every per-job triage commit wait for the disk.
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL"}}
    result = subprocess.run(
        [sys.executable, "-c", EMBEDDED_PRAGMAS],
        cwd=REPO,
        env={**clean, "DEBUG": "1", "DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["wal", "1"]
