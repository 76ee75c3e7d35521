"""What an operator sees when the service cannot start, or cannot reach its database: one sentence
naming the setting, not a Python traceback.

Settings refuse a bad value with a message naming the variable (config/env.py); printed under fifty
lines of import machinery, that message was easy to miss on `manage.py migrate`, in gunicorn's log
or in `celery worker`'s. `settings_or_exit` imports the settings before anything else does and, on
such a message, prints it alone and exits. Every process — manage.py, gunicorn (config.wsgi) and
celery (-A config) — imports the `config` package first, whose `__init__` loads the Celery app,
which calls it.

`static_files_or_exit` is for the processes that serve pages (gunicorn and runserver, through
config.wsgi) only: with STATIC_ROOT set, every page links the hashed names of collectstatic's
manifest, and without it each page was a 500. Management commands never run it, so `collectstatic`
itself and `migrate`, which run before the files are collected, still work.
"""

from __future__ import annotations

import importlib
import sys

from django.core.exceptions import ImproperlyConfigured

# gunicorn's "App failed to load": its master stops, instead of starting a new worker every second
# that fails the same way. Any other caller only needs a code that is not 0.
EXIT_CODE = 4


def settings_or_exit(module: str) -> None:
    """Import the settings module; a value it refuses stops the process with the message alone."""
    try:
        importlib.import_module(module)
    except ImproperlyConfigured as exc:
        print(f"Fleet Triage cannot start: {exc}", file=sys.stderr, flush=True)
        sys.exit(EXIT_CODE)


def database_place(database: dict) -> str:
    """Where the configured database is, as an operator would look for it (never its password)."""
    if database["ENGINE"].endswith("sqlite3"):
        return f"the SQLite file {database['NAME']}"
    host = database.get("HOST") or "localhost"
    port = f":{database['PORT']}" if database.get("PORT") else ""
    return f"PostgreSQL at {host}{port}, database {database['NAME']!r}"


def database_failure(exc: Exception, database: dict) -> str:
    """The sentence for a database error no command handled: where the database is, what the driver said."""
    said = " ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    return (
        f"Fleet Triage could not use its database, {database_place(database)} (DATABASE_URL): {said} "
        "(run the command again with --traceback for the details)"
    )


def static_files_problem() -> str:
    """Why pages cannot be served with the configured static files ("" when they can): with the hashed
    storage on (STATIC_ROOT set), collectstatic must have written its manifest there, naming every file
    the app has; a page linking a file that is not in it fails."""
    import json

    from django.apps import apps
    from django.conf import settings
    from django.contrib.staticfiles import finders
    from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage

    if not isinstance(staticfiles_storage, ManifestFilesMixin):
        return ""
    command = "run `python manage.py collectstatic --noinput` with the same settings, then start again"
    try:
        manifest = staticfiles_storage.read_manifest()
        paths = json.loads(manifest).get("paths", {}) if manifest else None
    except (OSError, ValueError, AttributeError):
        paths = None
    where = f"STATIC_ROOT is {settings.STATIC_ROOT}"
    if paths is None:
        return (
            f"{where}, whose content-hashed static files every page links, but collectstatic has not been run "
            f"into it (it has no {staticfiles_storage.manifest_name}), so every page would fail: {command}."
        )
    ignore = apps.get_app_config("staticfiles").ignore_patterns
    missing = sorted({path for finder in finders.get_finders() for path, _ in finder.list(ignore)} - set(paths))
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        return (
            f"{where}, but its collected static files are older than this release's ({missing[0]}{more} not "
            f"collected), so pages that link them would fail: {command}."
        )
    return ""


def static_files_or_exit() -> None:
    """Stop a process that serves pages, with one sentence, when its static files were not collected."""
    problem = static_files_problem()
    if problem:
        print(f"Fleet Triage cannot start: {problem}", file=sys.stderr, flush=True)
        sys.exit(EXIT_CODE)
