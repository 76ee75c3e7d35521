"""Editing what a machine token may do, on the tokens page (`/tokens/<prefix>/edit/`): an operator
ticks or unticks its boxes and the same key does that from its next request, so a machine needs no
new secret; the key is never shown again, the change is in the audit log, a revoked token stays as
it is. And a token that may not push archives is refused the ingest runs, as it is a push."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from fleet.models import AuditEvent, IngestRun, MachineToken
from tests.conftest import EXAMPLE_ARCHIVE
from tests.reading import table_rows

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("upload_dirs")]

ALL_OFF = {"pushes_archives": False, "reads_metrics": False, "reads_reports": False, "reads_jobs": False}


@pytest.fixture
def exporter(operator):
    return MachineToken.objects.create_key(name="exporter-01", created_by=operator)


def api_get(key: str, path: str):
    return APIClient().get(path, HTTP_AUTHORIZATION=f"Api-Key {key}")


def push(key: str):
    with open(EXAMPLE_ARCHIVE, "rb") as handle:
        return APIClient().post(
            "/api/v1/archives/", {"file": handle}, format="multipart", HTTP_AUTHORIZATION=f"Api-Key {key}"
        )


def boxes(page: str) -> dict[str, bool]:
    """The edit form's checkboxes: name -> ticked."""
    return {
        match.group(1): " checked" in match.group(0)
        for match in re.finditer(r'<input type="checkbox" name="(\w+)"[^>]*>', page)
    }


def test_an_operator_changes_what_a_token_may_do_and_the_same_key_does_it_next(client, operator, exporter):
    machine, key = exporter
    assert api_get(key, "/api/v1/jobs/").status_code == 403  # made to push only
    client.force_login(operator)
    listing = client.get("/tokens/").content.decode()
    assert f'href="/tokens/{machine.prefix}/edit/"' in listing
    page = client.get(f"/tokens/{machine.prefix}/edit/")
    assert page.status_code == 200
    html = page.content.decode()
    assert boxes(html) == {"pushes_archives": True, "reads_metrics": False, "reads_reports": False, "reads_jobs": False}
    assert key not in html and key.split(".")[1] not in html  # the secret is never shown again
    assert re.search(r"<h1>[^<]*exporter-01", html)

    saved = client.post(f"/tokens/{machine.prefix}/edit/", {"reads_jobs": "on"}, follow=True)
    assert saved.redirect_chain == [("/tokens/", 302)]
    said = [str(m) for m in saved.context["messages"]]
    assert said == [
        f"Token “exporter-01” ({machine.prefix}…) now may read jobs, and may no longer push archives. "
        "Its key is unchanged: the machine that uses it needs no new secret."
    ]
    assert key not in saved.content.decode()
    machine.refresh_from_db()
    assert (machine.pushes_archives, machine.reads_jobs) == (False, True)
    rows = {row[0]: row for row in table_rows(saved.content.decode(), "Machine tokens")}
    assert rows["exporter-01"][6:11] == ["no", "no", "no", "yes", "active"]

    # The same key, at once: it reads jobs, and pushes nothing.
    assert api_get(key, "/api/v1/jobs/").status_code == 200
    refused = push(key)
    assert refused.status_code == 403 and refused.json()["detail"].startswith("This token may not push archives")
    assert IngestRun.objects.count() == 0

    event = AuditEvent.objects.get(action="token.change")
    assert event.actor == operator and event.target_repr == str(machine)
    assert event.details == {
        "prefix": machine.prefix,
        "changed": {"pushes_archives": [True, False], "reads_jobs": [False, True]},
    }


def test_saving_the_same_boxes_changes_nothing_and_records_nothing(client, operator, exporter):
    machine, _ = exporter
    client.force_login(operator)
    saved = client.post(f"/tokens/{machine.prefix}/edit/", {"pushes_archives": "on"}, follow=True)
    assert [str(m) for m in saved.context["messages"]] == [f"Token “exporter-01” ({machine.prefix}…): nothing changed."]
    assert not AuditEvent.objects.filter(action="token.change").exists()


def test_a_revoked_token_cannot_be_edited(client, operator, exporter):
    machine, key = exporter
    MachineToken.objects.filter(pk=machine.pk).update(revoked=True)
    client.force_login(operator)
    listing = client.get("/tokens/").content.decode()
    assert f"/tokens/{machine.prefix}/edit/" not in listing  # no Edit on its row
    for response in (
        client.get(f"/tokens/{machine.prefix}/edit/", follow=True),
        client.post(f"/tokens/{machine.prefix}/edit/", {"reads_jobs": "on", "reads_reports": "on"}, follow=True),
    ):
        assert response.redirect_chain == [("/tokens/", 302)]
        assert [str(m) for m in response.context["messages"]] == [
            f"Token “exporter-01” ({machine.prefix}…) is revoked: what it may do can no longer be changed. "
            "Make a new token instead."
        ]
    machine.refresh_from_db()
    assert (machine.pushes_archives, machine.reads_jobs, machine.reads_reports) == (True, False, False)
    assert not AuditEvent.objects.filter(action="token.change").exists()


def test_the_edit_needs_the_session_s_csrf_token_and_an_operator(operator, member_a, exporter):
    machine, _ = exporter
    checked = Client(enforce_csrf_checks=True)
    checked.force_login(operator)
    assert checked.post(f"/tokens/{machine.prefix}/edit/", {"reads_jobs": "on"}).status_code == 403
    member = Client()
    member.force_login(member_a)
    assert member.post(f"/tokens/{machine.prefix}/edit/", {"reads_jobs": "on"}).status_code == 404
    machine.refresh_from_db()
    assert not machine.reads_jobs
    # Named by its prefix, as its revoke address: the library's id holds the key's hash.
    operator_client = Client()
    operator_client.force_login(operator)
    assert operator_client.get(f"/tokens/{machine.pk}/edit/").status_code == 404


def test_a_refusal_tells_the_script_s_author_the_token_can_be_edited(exporter):
    _, key = exporter
    detail = api_get(key, "/api/v1/jobs/").json()["detail"]
    assert detail == (
        "This token may not read jobs; an operator can allow it on the tokens page: Edit on the token's row, "
        "then tick its box (`reads_jobs`). The key stays the same: the machine needs no new secret."
    )
    assert "new token" not in detail


def test_a_token_that_may_not_push_is_refused_the_ingest_runs_as_it_is_a_push(exporter):
    """Its runs are those it pushed: a token that may not push has none to follow, and an empty list
    read as 'no push has landed yet'. The list and a run's page are each the push's 403, naming it;
    a token that pushes still reads its own runs (another's is a 404)."""
    machine, key = exporter
    run = IngestRun.objects.create(source=IngestRun.Source.API, archive_name="push.zip", api_key=machine)
    other = IngestRun.objects.create(source=IngestRun.Source.UPLOAD, archive_name="week.zip")
    assert [r["id"] for r in api_get(key, "/api/v1/ingest-runs/").json()["results"]] == [run.pk]
    assert api_get(key, f"/api/v1/ingest-runs/{run.pk}/").status_code == 200
    assert api_get(key, f"/api/v1/ingest-runs/{other.pk}/").status_code == 404

    MachineToken.objects.filter(pk=machine.pk).update(pushes_archives=False, reads_reports=True)
    for path in ("/api/v1/ingest-runs/", f"/api/v1/ingest-runs/{run.pk}/", f"/api/v1/ingest-runs/{other.pk}/"):
        response = api_get(key, path)
        assert response.status_code == 403, path
        assert "WWW-Authenticate" not in response
        assert response.json()["detail"] == (
            "This token may not read ingest runs (a token reads the runs it pushed, so only one that may push "
            "archives); an operator can allow it on the tokens page: Edit on the token's row, then tick its box "
            "(`pushes_archives`). The key stays the same: the machine needs no new secret."
        ), path


def test_the_schema_says_which_tokens_are_refused_the_ingest_runs(client):
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    for path in ("/api/v1/ingest-runs/", "/api/v1/ingest-runs/{id}/"):
        operation = schema["paths"][path]["get"]
        refused = operation["responses"]["403"]
        assert "pushes_archives" in refused["description"], path
        assert refused["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
        assert "pushes_archives" in operation["description"], path
    listed = schema["paths"]["/api/v1/ingest-runs/"]["get"]["responses"]["200"]["content"]["application/json"]
    assert listed["schema"]["$ref"].startswith("#/components/schemas/Paginated")


def test_a_token_without_a_name_is_not_made_and_the_page_says_what_to_give(client, operator):
    client.force_login(operator)
    response = client.post("/tokens/", {"name": "   ", "reads_jobs": "on"}, follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        "Give the token a name, e.g. the machine that will use it."
    ]
    assert not MachineToken.objects.exists() and not AuditEvent.objects.filter(action="token.create").exists()


def test_a_token_revoked_while_its_edit_form_was_open_keeps_what_it_may_do(client, operator, exporter, monkeypatch):
    """Another operator revokes the token between the edit page reading it and saving: the save is refused."""
    from django.shortcuts import get_object_or_404

    machine, _ = exporter

    def read_then_revoked_elsewhere(queryset, **lookup):
        token = get_object_or_404(queryset, **lookup)
        MachineToken.objects.filter(pk=token.pk).update(revoked=True)
        return token

    monkeypatch.setattr("fleet.views.get_object_or_404", read_then_revoked_elsewhere)
    client.force_login(operator)
    response = client.post(f"/tokens/{machine.prefix}/edit/", {"reads_jobs": "on"}, follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        f"Token “exporter-01” ({machine.prefix}…) is revoked: what it may do can no longer be changed. "
        "Make a new token instead."
    ]
    machine.refresh_from_db()
    assert (machine.revoked, machine.pushes_archives, machine.reads_jobs) == (True, True, False)
    assert not AuditEvent.objects.filter(action="token.change").exists()
