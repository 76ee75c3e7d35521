"""Machine tokens: made, changed and revoked by an operator on the tokens page (/tokens/).

A machine token is a machine's, not a person's (fleet.tokens.MachineTokenAuthentication): it does
what its boxes say — push archives, read /metrics, the teams' report, the jobs — and nothing else.
Its key is shown once, on the page that made it: djangorestframework-api-key keeps a prefix and a
hash only, so what it may do can change while its key stays the same. Making, changing and revoking
one is in the audit log (`token.create`, `token.change`, `token.revoke`), as a personal token's is
(fleet.personal_tokens); the views in fleet.views only read the form and say what happened.
"""

from __future__ import annotations

from collections.abc import Mapping

from fleet import audit
from fleet.models import MachineToken
from fleet.quoting import joined

# What a machine token may do, each a box on the tokens page and a column of its list, in this order.
PERMISSIONS = ("pushes_archives", "reads_metrics", "reads_reports", "reads_jobs")

# How a permission reads in the message after an edit: "now may read jobs, and may no longer push archives".
PERMISSION_WORDS = {
    "pushes_archives": "push archives",
    "reads_metrics": "read /metrics",
    "reads_reports": "read the teams' costs",
    "reads_jobs": "read jobs",
}

NAME_LENGTH = 50  # the model's


class NoName(ValueError):
    """A token asked for without a name; the message says what to give."""


class TokenRevoked(Exception):
    """The token is revoked (or was, since its form was opened): what it may do is left as it is."""


def asked_permissions(data: Mapping[str, str]) -> dict[str, bool]:
    """Each permission as the form's boxes ask it: ticked ("on") or not (an unticked box is not sent)."""
    return {flag: data.get(flag) == "on" for flag in PERMISSIONS}


def default_permissions() -> dict[str, bool]:
    """The new token form's boxes as the model's defaults: pushing ticked, the reads not."""
    return {flag: MachineToken._meta.get_field(flag).default for flag in PERMISSIONS}


def create(actor, name: str, may: dict[str, bool]) -> tuple[MachineToken, str]:
    """A new token that may do what `may` says, and its key (to show once), in the audit log; NoName
    when `name` is blank. The name is cut to the model's 50 characters."""
    name = name.strip()[:NAME_LENGTH]
    if not name:
        raise NoName("Give the token a name, e.g. the machine that will use it.")
    token, key = MachineToken.objects.create_key(name=name, created_by=actor, **may)
    audit.record(actor, "token.create", token, {"prefix": token.prefix} | may)
    return token, key


def change(actor, token: MachineToken, may: dict[str, bool]) -> dict[str, list[bool]]:
    """Give the token the permissions `may` says, its key unchanged; what changed, by permission, as
    [old, new] (empty for nothing), in the audit log as `token.change`. TokenRevoked for a revoked
    token, also one revoked since it was read (another operator, while the form was open): the
    update only touches it while it is not."""
    if token.revoked:
        raise TokenRevoked
    changed = {flag: [getattr(token, flag), value] for flag, value in may.items() if getattr(token, flag) != value}
    if not changed:
        return changed
    if not MachineToken.objects.filter(pk=token.pk, revoked=False).update(**may):
        raise TokenRevoked
    audit.record(actor, "token.change", token, {"prefix": token.prefix, "changed": changed})
    return changed


def change_words(changed: dict[str, list[bool]]) -> str:
    """What a change did, in words: "now may read jobs, and may no longer push archives"."""
    allowed = [PERMISSION_WORDS[flag] for flag, (_, new) in changed.items() if new]
    taken = [PERMISSION_WORDS[flag] for flag, (_, new) in changed.items() if not new]
    said = [f"now may {joined(allowed)}"] if allowed else []
    said += [f"may no longer {joined(taken)}"] if taken else []
    return ", and ".join(said)


def revoke(actor, token: MachineToken) -> bool:
    """Revoke for good, in the audit log; False when it already was."""
    if token.revoked:
        return False
    token.revoked = True
    token.save(update_fields=["revoked"])
    audit.record(actor, "token.revoke", token, {"prefix": token.prefix})
    return True
