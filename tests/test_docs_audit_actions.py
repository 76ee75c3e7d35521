"""docs/operations.md's audit table against the code: every action the code records with
`fleet.audit.record` has its row (an operator filtering the log by `sso.access-synced` should find what
it means), and every action the table names is one the code records.

The actions are read out of the code: each call's action, a text, or a name given one (`action =
"alert_webhook.create" if … else …`, or a parameter its callers pass one: `action="rule_set.save"`),
or an f-string of such parts. The admin's `f"{self.audit_name}.create"` is each audited model admin's
name with what the admin lets an operator do there (an admin that cannot add records no `.create`)."""

from __future__ import annotations

import ast
import itertools
import re
from functools import cache

from tests.conftest import REPO

SOURCES = ("config", "fleet", "triage")
ACTION = re.compile(r"^[a-z_]+\.[a-z_-]+$")
# Which admin permission lets an operator do what an action's last part says.
ADMIN_PERMISSION = {
    "create": "has_add_permission",
    "change": "has_change_permission",
    "delete": "has_delete_permission",
}


def _modules() -> dict[str, ast.Module]:
    paths = [p for top in SOURCES for p in sorted((REPO / top).rglob("*.py")) if "migrations" not in p.parts]
    return {p.relative_to(REPO).as_posix(): ast.parse(p.read_text(encoding="utf-8")) for p in paths}


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _is_record(call: ast.Call, where: str) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr == "record" and isinstance(func.value, ast.Name) and func.value.id == "audit"
    return isinstance(func, ast.Name) and func.id == "record" and where == "fleet/audit.py"


def _argument(call: ast.Call, index: int, name: str) -> ast.expr | None:
    if len(call.args) > index and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _admin_actions(parts: list[set[str] | None]) -> set[str]:
    """The actions of an f-string whose first part is `self.audit_name` (None in `parts`)."""
    from django.contrib import admin
    from django.contrib.auth.models import User
    from django.test import RequestFactory

    from fleet.admin import AuditedAdmin

    request = RequestFactory().get("/admin/")
    request.user = User(username="root", is_superuser=True, is_active=True)
    found = set()
    for model_admin in admin.site._registry.values():
        if not isinstance(model_admin, AuditedAdmin):
            continue
        for rest in itertools.product(*parts[1:]):
            action = model_admin.audit_name + "".join(rest)
            if getattr(model_admin, ADMIN_PERMISSION[action.rsplit(".", 1)[1]])(request):
                found.add(action)
    return found


class Actions:
    def __init__(self):
        self.modules = _modules()
        self.parents = {where: _parents(tree) for where, tree in self.modules.items()}
        self.unresolved: list[str] = []

    def _function(self, node: ast.AST, where: str) -> ast.FunctionDef | None:
        while node is not None and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node = self.parents[where].get(node)
        return node

    def values(self, node: ast.expr, where: str) -> set[str] | None:
        """The texts `node` may be (None for the admin's `self.audit_name`); unresolved places noted."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.IfExp):
            return (self.values(node.body, where) or set()) | (self.values(node.orelse, where) or set())
        if isinstance(node, ast.FormattedValue):
            return self.values(node.value, where)
        if isinstance(node, ast.Attribute) and node.attr == "audit_name":
            return None
        if isinstance(node, ast.JoinedStr):
            parts = [self.values(value, where) for value in node.values]
            if parts and parts[0] is None:
                return _admin_actions(parts)
            return {"".join(p) for p in itertools.product(*[part or set() for part in parts])}
        if isinstance(node, ast.Name):
            return self._name(node, where)
        self.unresolved.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        return set()

    def _name(self, node: ast.Name, where: str) -> set[str]:
        function = self._function(node, where)
        assigned = [
            n.value
            for n in ast.walk(function or self.modules[where])
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets)
        ]
        if assigned:
            return set().union(*(self.values(value, where) or set() for value in assigned))
        parameters = [a.arg for a in function.args.posonlyargs + function.args.args] if function else []
        keyword_only = [a.arg for a in function.args.kwonlyargs] if function else []
        if node.id not in parameters + keyword_only:
            self.unresolved.append(f"{where}:{node.lineno}: {node.id}")
            return set()
        index = parameters.index(node.id) if node.id in parameters else 10**6
        found: set[str] = set()
        for other, tree in self.modules.items():  # what its callers pass
            for call in ast.walk(tree):
                func = getattr(call, "func", None)
                if isinstance(call, ast.Call) and getattr(func, "id", getattr(func, "attr", None)) == function.name:
                    value = _argument(call, index, node.id)
                    if value is not None:
                        found |= self.values(value, other) or set()
        return found

    def recorded(self) -> dict[str, set[str]]:
        """Each action the code records, with where."""
        found: dict[str, set[str]] = {}
        for where, tree in self.modules.items():
            for call in ast.walk(tree):
                if isinstance(call, ast.Call) and _is_record(call, where):
                    action = _argument(call, 1, "action")
                    for name in self.values(action, where) or set():
                        found.setdefault(name, set()).add(f"{where}:{call.lineno}")
        return found


@cache
def recorded_actions() -> dict[str, set[str]]:
    actions = Actions()
    found = actions.recorded()
    assert not actions.unresolved, f"an audited action this test cannot read: {actions.unresolved}"
    return found


def documented_actions() -> set[str]:
    """The actions in the first column of docs/operations.md's audit table."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("## The audit log", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {span for row in rows for span in re.findall(r"`([^`]+)`", row.split("|")[1]) if ACTION.match(span)}


def test_the_reading_finds_the_actions_of_each_kind_of_call():
    found = recorded_actions()
    assert {"token.revoke", "rule_set.restore", "alert_webhook.change", "exchange_rate.delete"} <= set(found)
    assert {"team.create", "job.change", "feedback.delete"} <= set(found)  # the admin's
    assert "feedback.create" not in found  # its admin cannot add an answer


def test_every_recorded_action_has_its_row_in_the_docs_audit_table():
    missing = {
        action: sorted(where) for action, where in recorded_actions().items() if action not in documented_actions()
    }
    assert not missing, f"recorded but not in docs/operations.md's audit table: {missing}"


def test_every_action_in_the_docs_audit_table_is_recorded():
    assert documented_actions() - set(recorded_actions()) == set()
