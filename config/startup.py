"""What an operator sees when the service cannot start, or cannot reach its database: one sentence
naming the setting, not a Python traceback.

Settings refuse a bad value with a message naming the variable (config/env.py); printed under fifty
lines of import machinery, that message was easy to miss on `manage.py migrate`, in gunicorn's log
or in `celery worker`'s. `settings_or_exit` imports the settings before anything else does and, on
such a message, prints it alone and exits. Every process — manage.py, gunicorn (config.wsgi) and
celery (-A config) — imports the `config` package first, whose `__init__` loads the Celery app,
which calls it.
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
