"""Every API address README.md and docs/*.md show (`/api/v1/...`) is one the service answers, an
operation of the OpenAPI schema it serves at /api/v1/schema/, and every query parameter they give
it is one the schema lists for it; the other way round, every query parameter of the schema is
named where README tells a script how to read the API ("Importing your fleet")."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client, override_settings
from django.urls import Resolver404, resolve

from config.api import api_not_found
from tests.conftest import REPO
from tests.docs_text import DOCS, FENCE

ADDRESS = re.compile(r"/api/v1/[^\s`\"'<>)\]|,;*]*")
# Other services' APIs the connectors call (Prometheus, the Kubernetes API server), not ours.
FOREIGN = {"/api/v1/labels", "/api/v1/query_range", "/api/v1/series", "/api/v1/pods", "/api/v1/nodes"}
# Shown as what the API answers for an address it does not have.
NOT_OURS = {"/api/v1/nope/"}
# Pages of the API rather than operations of its schema.
NOT_OPERATIONS = {"/api/v1/", "/api/v1/schema/", "/api/v1/docs/"}


def documented_addresses() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in ADDRESS.finditer(line):
                found.append((f"{path.relative_to(REPO).as_posix()}:{number}", match.group().rstrip(".:")))
    return found


@pytest.fixture(scope="module")
def schema():
    with override_settings(ALLOWED_HOSTS=["testserver"]):
        response = Client().get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200, response.content
    return response.json()


def operation_of(schema: dict, path: str) -> tuple[str, dict] | None:
    """The schema's path template (`/api/v1/jobs/{id}/`) and operations that `path` is one of."""
    for template, operations in schema["paths"].items():
        if re.fullmatch(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)), path):
            return template, operations
    return None


def test_the_docs_show_api_addresses():
    shown = {address.split("?")[0] for _, address in documented_addresses()}
    assert {"/api/v1/archives/", "/api/v1/jobs/", "/api/v1/teams/", "/api/v1/ingest-runs/12/"} <= shown


@pytest.mark.parametrize(("where", "address"), documented_addresses(), ids=lambda v: v)
def test_a_documented_api_address_is_answered(where, address, schema):
    path, _, query = address.partition("?")
    if path in FOREIGN:
        return
    # Placeholders of the docs (`{job_a}`, `<id>`) stand for an id.
    path = re.sub(r"\{[^}]*\}|<[^>]*>", "1", path)
    try:
        match = resolve(path)
    except Resolver404:
        pytest.fail(f"{where}: {address} is no address of the service")
    if path in NOT_OURS:
        assert match.func is api_not_found, f"{where}: {address} is shown as an address the API does not have"
        return
    assert match.func is not api_not_found, f"{where}: {address} is no address of the API (its 404)"
    if path.rstrip("/") + "/" in NOT_OPERATIONS:
        return
    found = operation_of(schema, path if path.endswith("/") else path + "/")
    assert found is not None, f"{where}: {address} is not in the API's schema"
    template, operations = found
    for name in re.findall(r"(?:^|&)([^=&]+)=", query):
        takes = {p["name"] for p in operations.get("get", {}).get("parameters", []) if p["in"] == "query"}
        assert name in takes, f"{where}: GET {template} takes no {name!r} (it takes {sorted(takes)})"


def test_every_query_parameter_of_the_api_is_documented(schema):
    """Where README speaks of a list (from each mention of its address to the next mention of
    another address), it names each query parameter the list takes."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Importing your fleet\n") : readme.index("\n## The full stack")]
    mentions = []
    for match in ADDRESS.finditer(section):
        path = match.group().rstrip(".:").partition("?")[0]
        found = operation_of(schema, path if path.endswith("/") else path + "/")
        mentions.append((match.start(), found[0] if found else path))
    missing = []
    for template, operations in schema["paths"].items():
        about = "".join(
            section[start : next((later for later, other in mentions[i + 1 :] if other != template), len(section))]
            for i, (start, mentioned) in enumerate(mentions)
            if mentioned == template
        )
        for parameter in operations.get("get", {}).get("parameters", []):
            name = parameter["name"]
            if parameter["in"] == "query" and not re.search(rf"`{name}[`=]|[?&]{name}=", about):
                missing.append(f"GET {template} ?{name}")
    assert not missing, (
        f"query parameters README's 'Importing your fleet' does not name where it speaks of their list: {missing}"
    )


def example_answers() -> list[tuple[str, str, object]]:
    """(where, address, the JSON) of each `curl .../api/v1/...` line of a fenced block followed by
    its answer as `# {...}` comment lines (`…` standing for more of the same)."""
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            lines = block.group(1).splitlines()
            for i, line in enumerate(lines):
                address = ADDRESS.search(line)
                if not line.startswith("curl") or address is None or not lines[i + 1 :]:
                    continue
                answer = []
                for comment in lines[i + 1 :]:
                    if not comment.startswith("#"):
                        break
                    answer.append(comment[1:])
                body = " ".join(answer).strip()
                if body.startswith("{"):
                    body = re.sub(r",\s*…", "", body)
                    where = f"{path.relative_to(REPO).as_posix()}:{_line(text, block.start(1)) + i}"
                    found.append((where, address.group().rstrip(".:").split("?")[0], json.loads(body)))
    return found


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _properties(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_an_example_answer_has_the_fields_of_the_answer(schema):
    """README's example answers (the teams report's) show the fields a script gets, no more, no fewer."""
    examples = example_answers()
    assert any(address == "/api/v1/teams/" for _, address, _ in examples)
    for where, address, example in examples:
        _, operations = operation_of(schema, address)
        answer = operations["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        pending = [(address, example, _properties(schema, answer))]
        while pending:
            at, shown, node = pending.pop()
            fields = node.get("properties", {})
            assert set(shown) == set(fields), (
                f"{where}: the example answer of {at} shows {sorted(shown)}, the API answers {sorted(fields)}"
            )
            for name, value in shown.items():
                if isinstance(value, list) and value and isinstance(value[0], dict):
                    pending.append((f"{at} {name}[]", value[0], _properties(schema, fields[name]["items"])))
