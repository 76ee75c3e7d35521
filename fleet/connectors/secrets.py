"""Connector secrets: encrypted at rest (Fernet) or referenced from the environment / a file.

The key is `CONNECTOR_SECRET_KEY` (a Fernet key, `Fernet.generate_key()`) when set, otherwise
derived from `SECRET_KEY` — then rotating SECRET_KEY makes stored secrets unreadable, and the
operator re-enters them (the UI says so). Decrypted values only ever go into request headers.
"""

from __future__ import annotations

import base64
import hashlib
import os
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


def resolve_reference(reference: str) -> str:
    """The secret named by `env:NAME` (an environment variable) or `file:/path` (read on every pull,
    so a token a cron job refreshes — e.g. `scontrol token` — is picked up)."""
    kind, _, name = reference.partition(":")
    if kind == "env" and name:
        value = os.environ.get(name)
        if value is None:
            raise ConfigError(f"environment variable {name} is not set")
        return value.strip()
    if kind == "file" and name:
        try:
            return Path(name).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"cannot read the secret file {name}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"the secret file {name} is not UTF-8 text") from None
    raise ConfigError(f"secret reference {reference!r} must be env:NAME or file:/path")
