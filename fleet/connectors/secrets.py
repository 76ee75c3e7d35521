"""Connector secrets: encrypted at rest (Fernet) or referenced from the environment / a file.

The key is `CONNECTOR_SECRET_KEY` (a Fernet key, `Fernet.generate_key()`) when set, otherwise
derived from `SECRET_KEY` — then rotating SECRET_KEY makes stored secrets unreadable, and the
operator re-enters them (the UI says so). Decrypted values only ever go into request headers.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

from fleet.connectors.base import ConfigError


def _fernet() -> Fernet:
    key = getattr(settings, "CONNECTOR_SECRET_KEY", "")
    if key:
        return Fernet(key.encode() if isinstance(key, str) else key)
    digest = hashlib.sha256(b"fleet-triage connector secrets\0" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode() if value else ""


def decrypt(token: str) -> str:
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise ConfigError(
            "the stored secret cannot be decrypted (SECRET_KEY or CONNECTOR_SECRET_KEY changed?); enter it again"
        ) from None


# The most of a secret file that is read: a Slurm JWT or a service-account token is 1-4 KiB.
SECRET_FILE_MAX_BYTES = 64 * 1024

# The service's own secrets: never read for a connector, whatever CONNECTOR_SECRET_ENV allows.
SERVICE_SECRETS = frozenset({"SECRET_KEY", "CONNECTOR_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "EMAIL_HOST_PASSWORD"})


def allowed_references() -> str:
    """What a reference may name on this server, in words (the form's error, the check's)."""
    names = getattr(settings, "CONNECTOR_SECRET_ENV", [])
    folders = getattr(settings, "CONNECTOR_SECRET_DIRS", [])
    env = f"env: the variables {', '.join(names)}" if names else "no variable"
    files = f"file: files under {', '.join(folders)}" if folders else "no file"
    return f"{env} (CONNECTOR_SECRET_ENV) and {files} (CONNECTOR_SECRET_DIRS)"


def reference_problem(reference: str) -> str | None:
    """Why this server refuses a reference, or None. Operators are not the server's administrators:
    `env:SECRET_KEY` or `file:/etc/...` on a connector pointed at a server of their own would send
    the server's settings there with the next check. A reference may name only the variables
    CONNECTOR_SECRET_ENV allows (a name, or a prefix ending in *) and files under the folders
    CONNECTOR_SECRET_DIRS names (links followed first, so neither `..` nor a link leads out)."""
    kind, _, name = reference.partition(":")
    if kind == "env" and name:
        allowed = getattr(settings, "CONNECTOR_SECRET_ENV", [])
        matches = any(name.startswith(entry[:-1]) if entry.endswith("*") else name == entry for entry in allowed)
        if name in SERVICE_SECRETS or not matches:
            return f"the environment variable {name} may not be read by connectors"
        return None
    if kind == "file" and name.startswith("/"):
        path = Path(name).resolve()
        folders = [Path(folder).resolve() for folder in getattr(settings, "CONNECTOR_SECRET_DIRS", [])]
        if not any(path.is_relative_to(folder) for folder in folders):
            return f"the file {name} is not in a folder connectors may read"
        return None
    return f"secret reference {reference!r} must be env:NAME or file:/path"


def resolve_reference(reference: str) -> str:
    """The secret named by `env:NAME` (an environment variable) or `file:/path` (read on every pull,
    so a token a cron job refreshes — e.g. `scontrol token` — is picked up). Checked again here, not
    only by the form: a reference stored before the limits, or one the settings no longer allow."""
    problem = reference_problem(reference)
    if problem:
        raise ConfigError(f"{problem}; allowed are {allowed_references()}")
    kind, _, name = reference.partition(":")
    if kind == "env":
        value = os.environ.get(name)
        if value is None:
            raise ConfigError(f"environment variable {name} is not set")
        return value.strip()
    path = Path(name).resolve()
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a named pipe would hold the pull (or the page) for ever
            raise ConfigError(f"the secret file {name} is not a regular file (a folder, a pipe or a device)")
        with path.open("rb") as file:
            content = file.read(SECRET_FILE_MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read the secret file {name}: {exc.strerror}") from None
    if len(content) > SECRET_FILE_MAX_BYTES:
        # A token is a few kilobytes; more is the wrong file (a log, an archive, a device), which would
        # be held in memory and sent as a header on every request of every pull.
        raise ConfigError(
            f"the secret file {name} holds more than {SECRET_FILE_MAX_BYTES // 1024} KiB, far more than a token: "
            "check that the reference names the token's file"
        )
    try:
        return content.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigError(f"the secret file {name} is not UTF-8 text") from None
