"""Settings fail loudly on bad values, at start-up, naming the variable."""

import os
import re
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


def _run(args: list[str], **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DATABASE_URL"}}
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env={**clean, **env}, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("DIGEST_TIMEZONE", "Europe/Berln", "DIGEST_TIMEZONE='Europe/Berln' is not an IANA time zone."),
        ("DATABASE_URL", "mysql2://fleet:pw@db/fleet", "DATABASE_URL must be a postgres:// (PostgreSQL) or sqlite:///"),
        (
            "ALERT_WEBHOOK_ALLOWED_NETWORKS",
            "10.20.0.0/16, 10.0.0.0/33",
            "ALERT_WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/33' is not a network (e.g. 10.20.0.0/16, fd00::/8)",
        ),
        ("PERSONAL_TOKENS_PER_USER", "0", "PERSONAL_TOKENS_PER_USER=0 is below the minimum of 1."),
        ("URL_PREFIX", "https://ops.example.com/triage", "URL_PREFIX='https://ops.example.com/triage' must be a path"),
        # A key cut short in a copy: it failed only when a connector's secret was first stored or read.
        ("CONNECTOR_SECRET_KEY", "not-a-fernet-key", "CONNECTOR_SECRET_KEY is not a Fernet key"),
    ],
)
@pytest.mark.parametrize("entry", [["manage.py", "migrate"], ["-c", "import config.wsgi"]], ids=["manage", "gunicorn"])
def test_a_bad_setting_stops_every_process_with_one_sentence(tmp_path, entry, variable, value, message):
    # manage.py, gunicorn's config.wsgi and `celery -A config` all import the config package first;
    # before, each printed ~50 lines of import machinery above the message (MySQL: "Error loading
    # MySQLdb module"). Exit code 4 makes gunicorn's master stop instead of respawning workers.
    result = _run(entry, DEBUG="1", DATA_DIR=str(tmp_path), **{variable: value})
    assert result.returncode == 4
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"Fleet Triage cannot start: {message}")
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_unreachable_database_is_one_sentence_naming_where_it_is(tmp_path):
    url = "postgres://fleet:sekrit@127.0.0.1:1/fleet_ops"  # nothing listens on port 1
    result = _run(["manage.py", "migrate"], DEBUG="1", DATA_DIR=str(tmp_path), DATABASE_URL=url)
    assert result.returncode == 4
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(
        "Fleet Triage could not use its database, PostgreSQL at 127.0.0.1:1, database 'fleet_ops' (DATABASE_URL): "
    )
    assert "Connection refused" in result.stderr and "--traceback" in result.stderr
    assert "sekrit" not in result.stderr
    again = _run(["manage.py", "migrate", "--traceback"], DEBUG="1", DATA_DIR=str(tmp_path), DATABASE_URL=url)
    assert "Traceback" in again.stderr  # still there for whoever debugs it


def test_the_placeholder_secret_key_of_env_example_is_refused():
    # `cp .env.example .env` and forgetting to change it ran the service with SECRET_KEY=change-me.
    example = (REPO / ".env.example").read_text()
    assert "\nSECRET_KEY=change-me\n" in example
    result = _run(["manage.py", "check"], DEBUG="0", SECRET_KEY="change-me")
    assert result.returncode == 4
    assert result.stderr.strip() == (
        "Fleet Triage cannot start: SECRET_KEY is still 'change-me' from .env.example: set it to a secret "
        "of your own (generate one with `openssl rand -hex 32`)."
    )
    assert _run(["-c", "import config.settings"], DEBUG="1", SECRET_KEY="change-me").returncode == 0  # the demo


PRODUCTION_STATIC = """
import django
django.setup()
from django.core.management import call_command
from django.test import Client
call_command("collectstatic", "--noinput", verbosity=0)
client = Client()
page = client.get("/login/")
assert page.status_code == 200, page.status_code
import re
css = re.search(r'href="(/static/css/app[^"]*)"', page.content.decode()).group(1)
served = client.get(css, HTTP_ACCEPT_ENCODING="gzip")
print(css, served.status_code, served.headers.get("Cache-Control"), served.headers.get("Content-Encoding"), sep="|")
"""


def test_the_image_s_collected_static_files_are_the_ones_served_hashed_and_cacheable(tmp_path):
    """The Dockerfile's collectstatic wrote to /tmp/build/staticfiles, which nothing read: pages linked
    /static/css/app.css, served from the source folder with a one-minute cache. With STATIC_ROOT set
    (the image sets it), what collectstatic writes there is what is served: hashed names, compressed,
    cacheable for ever; WhiteNoise runs in the app as in production (DEBUG off)."""
    done = subprocess.run(
        [sys.executable, "-c", PRODUCTION_STATIC],
        cwd=REPO,
        env={
            **{k: v for k, v in os.environ.items() if k not in {"DEBUG", "REDIS_URL"}},
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECRET_KEY": "static-test-0123456789abcdef",
            "DATA_DIR": str(tmp_path / "data"),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "STATIC_ROOT": str(tmp_path / "static"),
            "ALLOWED_HOSTS": "testserver",
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    link, status, cache, encoding = done.stdout.strip().splitlines()[-1].split("|")
    assert re.fullmatch(r"/static/css/app\.[0-9a-f]{12}\.css", link)
    assert (tmp_path / "static" / link.removeprefix("/static/")).exists()
    assert status == "200" and "immutable" in cache and encoding == "gzip"


EMPTY_STATIC_ROOT = """
import django
django.setup()
from django.test import Client
client = Client()
print(client.get("/static/manage.py").status_code, client.get("/static/css/app.css").status_code)
"""


def test_an_empty_static_root_serves_static_files_not_the_working_folder(tmp_path):
    """STATIC_ROOT= (set, but empty: a .env line left blank) was the working folder: WhiteNoise served
    every file under it at /static/ (manage.py, config/settings.py, a .env beside them) and read the
    whole tree, .venv too, before the first request (some 20 s). Empty is unset: files come from static/."""
    done = _run(
        ["-c", EMPTY_STATIC_ROOT],
        DJANGO_SETTINGS_MODULE="config.settings",
        SECRET_KEY="static-test-0123456789abcdef",
        DATA_DIR=str(tmp_path / "data"),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        STATIC_ROOT="",
        ALLOWED_HOSTS="testserver",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["404", "200"]


def test_pages_do_not_start_before_collectstatic_but_the_commands_that_come_first_run(tmp_path):
    """With STATIC_ROOT set and collectstatic not run into it, gunicorn started and every page answered
    'Server Error (500)' (the manifest of hashed names was missing). The processes that serve pages
    (config.wsgi: gunicorn, runserver) now stop with one sentence saying to run collectstatic; migrate
    and collectstatic itself, which run before the files are collected, are unaffected. A manifest
    from an older release, missing a file the app has, is refused the same way."""
    import json

    static = tmp_path / "static"
    env = {
        "SECRET_KEY": "static-test-0123456789abcdef",
        "DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "STATIC_ROOT": str(static),
        "ALLOWED_HOSTS": "testserver",
    }
    serve = ["-c", "import config.wsgi"]  # what gunicorn config.wsgi and runserver load

    result = _run(serve, **env)
    assert result.returncode == 4, result.stderr
    assert result.stderr.strip() == (
        f"Fleet Triage cannot start: STATIC_ROOT is {static}, whose content-hashed static files every page links, "
        "but collectstatic has not been run into it (it has no staticfiles.json), so every page would fail: run "
        "`python manage.py collectstatic --noinput` with the same settings, then start again."
    )
    # The command as a whole (checks, signals, migrations applied) on one app's migrations: the whole
    # schema took three times as long (8 s of 27 on an idle machine) and met no static files more.
    assert _run(["manage.py", "migrate", "contenttypes", "--verbosity", "0"], **env).returncode == 0
    collected = _run(["manage.py", "collectstatic", "--noinput", "--verbosity", "0"], **env)
    assert collected.returncode == 0, collected.stderr
    result = _run(serve, **env)
    assert result.returncode == 0 and result.stderr == "", result.stderr

    manifest = json.loads((static / "staticfiles.json").read_text())
    del manifest["paths"]["js/tables.js"], manifest["paths"]["css/app.css"]
    (static / "staticfiles.json").write_text(json.dumps(manifest))
    result = _run(serve, **env)
    assert result.returncode == 4
    assert result.stderr.strip() == (
        f"Fleet Triage cannot start: STATIC_ROOT is {static}, but its collected static files are older than this "
        "release's (css/app.css and 1 more not collected), so pages that link them would fail: run "
        "`python manage.py collectstatic --noinput` with the same settings, then start again."
    )
    # Without STATIC_ROOT (or with DEBUG on) files are served from static/: nothing to collect.
    assert _run(serve, **{**env, "STATIC_ROOT": ""}).returncode == 0
