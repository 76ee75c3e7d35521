"""The access-control matrix of docs/access-control.md, requested row by row as every role.

The table is the source of truth: each row is a URL name, a method and a path whose `{placeholders}`
are filled from the `world` fixture (tests/conftest.py); each role column is the outcome that role must get.
A URL name in the URLconf without a row fails `test_every_url_name_has_a_row`; a denied POST must
leave the database and the outbox exactly as they were.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.apps import apps
from django.core import mail
from django.test import Client
from django.urls import resolve

from tests.conftest import REPO
from tests.routes import routes

MATRIX = REPO / "docs" / "access-control.md"
ROLES = ["anonymous", "member", "outsider", "researcher", "operator", "token"]
NOT_REQUESTED = "ok*"
ALLOWED_CODES = {200, 201, 202, 204, 302}


@dataclass(frozen=True)
class Row:
    name: str
    method: str
    path: str
    expected: dict[str, str]
    notes: str

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"


def read_matrix() -> list[Row]:
    """The rows of the table under '## The matrix'."""
    text = MATRIX.read_text(encoding="utf-8")
    table = text.split("## The matrix", 1)[1]
    rows = []
    for line in table.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in ("URL name", "") or set(cells[0]) <= {"-"}:
            continue
        name, method, path, *outcomes, notes = cells
        assert len(outcomes) == len(ROLES), f"row {line!r} needs one cell per role {ROLES}"
        rows.append(Row(name, method, path, dict(zip(ROLES, outcomes, strict=True)), notes))
    return rows


ROWS = read_matrix()


def url_names() -> set[str]:
    """Every named URL of the project, namespaced (`fleet:job-list`), the admin's as one `admin`."""
    return {"admin" if route.name.startswith("admin:") else route.name for route in routes() if route.name}


def test_every_url_name_has_a_row():
    missing = url_names() - {row.name for row in ROWS}
    assert not missing, f"URL names without a row in docs/access-control.md: {sorted(missing)}"


def test_every_row_names_a_url_that_exists():
    assert not ({row.name for row in ROWS} - url_names()), "rows for URL names that no longer exist"


def client_for(role: str, world) -> Client:
    if role == "token":
        return Client(HTTP_AUTHORIZATION=f"Api-Key {world['key']}")
    client = Client()
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


# Fields that change on every request by design (a token's last use) or on login.
VOLATILE = {"last_used_at", "last_login"}
SKIPPED_APPS = {"sessions", "axes", "admin"}


def snapshot() -> dict:
    """Every row of every model (minus sessions and login bookkeeping): what a denied POST must not change."""
    state = {}
    for model in apps.get_models():
        if model._meta.app_label in SKIPPED_APPS or model._meta.proxy:
            continue
        fields = [f.attname for f in model._meta.concrete_fields if f.attname not in VOLATILE]
        state[model._meta.label] = list(model.objects.order_by("pk").values_list(*fields))
    return state


def outcome_matches(expected: str, response) -> bool:
    if expected == "login":
        return response.status_code == 302 and "/login/" in response["Location"]
    if response.status_code == 302 and "/login/" in response.get("Location", ""):
        return False  # a redirect to the login page is never the allowed 302
    return response.status_code == int(expected)


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_row(row: Row, world):
    path = row.path.format(**world["params"])
    assert not re.search(r"[{}]", path), f"unfilled placeholder in {row.path}"
    if row.name != "admin":
        match = resolve(path.split("?")[0])
        assert match.view_name == row.name, f"{path} resolves to {match.view_name}, not {row.name}"
    failures = []
    unchanged = None  # the database as the last refused POST left it (the next one's "before"), if it did
    for role in ROLES:
        expected = row.expected[role]
        if expected == NOT_REQUESTED:
            continue
        client = client_for(role, world)
        denied = expected == "login" or int(expected) not in ALLOWED_CODES
        watch = row.method == "POST" and denied
        before, sent = (unchanged or snapshot(), len(mail.outbox)) if watch else (None, None)
        response = getattr(client, row.method.lower())(path)
        if not outcome_matches(expected, response):
            failures.append(f"{role}: expected {expected}, got {response.status_code} {response.get('Location', '')}")
        unchanged = None
        if watch:
            after = snapshot()
            if after != before:
                failures.append(f"{role}: a refused POST changed the database")
            else:
                unchanged = after  # signing the next role in changes no row the snapshot holds
            if len(mail.outbox) != sent:
                failures.append(f"{role}: a refused POST sent email")
    assert not failures, f"{row.name} {row.id}:\n" + "\n".join(failures)


@pytest.mark.parametrize(
    ("role", "leak"),
    [("member", "team-b-secret"), ("outsider", "team-a-job"), ("outsider", "team-b-secret")],
)
def test_lists_and_figures_do_not_leak_other_teams(world, role, leak):
    """Object-level scoping on the list pages too: what one may not open is not listed either."""
    client = client_for(role, world)
    for path in ("/jobs/", "/api/v1/jobs/", "/overview/", "/teams/"):
        assert leak not in client.get(path).content.decode(), f"{path} shows {leak} to {role}"


def test_a_member_is_offered_only_the_clusters_their_teams_ran_jobs_on(world, team_b):
    """The cluster menus (jobs list, overview, teams, causes) listed every cluster to every member,
    and a cluster's name says what the fleet runs and where. A member's are their teams' clusters;
    one they have no job on is answered as one that does not exist, on the pages and in the API."""
    from tests.factories import ClusterFactory, JobFactory

    JobFactory(cluster=ClusterFactory(name="secret-dgx-h100"), team=team_b)
    ClusterFactory(name="empty-cluster")  # no jobs yet: only the fleet's viewers see it
    member, researcher = client_for("member", world), client_for("researcher", world)
    for path in ("/jobs/", "/overview/", "/teams/", "/categories/"):
        page = member.get(path).content.decode()
        assert 'value="c1"' in page, path
        assert "secret-dgx-h100" not in page and "empty-cluster" not in page, f"{path} names another team's cluster"
        whole = researcher.get(path).content.decode()
        assert 'value="secret-dgx-h100"' in whole and 'value="empty-cluster"' in whole, path

    # Asking for it by name tells nothing either: the same answer as a cluster that does not exist.
    for name in ("secret-dgx-h100", "no-such-cluster"):
        overview = member.get(f"/overview/?cluster={name}").content.decode()
        assert f"There is no cluster named &#x27;{name}&#x27;; showing all clusters." in overview
        jobs = member.get(f"/jobs/?cluster={name}").content.decode()
        assert "Select a valid choice" in jobs and "team-a-job" in jobs
        report = member.get(f"/api/v1/teams/?cluster={name}")
        assert report.status_code == 400
        assert report.json()["cluster"] == [f"There is no cluster named '{name}' (the clusters: c1)."]
    assert researcher.get("/api/v1/teams/?cluster=secret-dgx-h100").status_code == 200
