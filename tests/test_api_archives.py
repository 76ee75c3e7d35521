"""Pushing archives through the JSON API with per-machine tokens, and reading the run back."""

from __future__ import annotations

import json
import re

import pytest
from rest_framework.test import APIClient

from fleet.models import AuditEvent, IngestRun, Job, MachineToken
from tests.conftest import EXAMPLE_ARCHIVE, wait_for_imports
from tests.reading import table_rows

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("upload_dirs")]  # uploads in a folder of their own


@pytest.fixture
def token(operator):
    return MachineToken.objects.create_key(name="exporter-01", created_by=operator)


def push(client: APIClient, key: str | None = None, archive=EXAMPLE_ARCHIVE):
    headers = {"HTTP_AUTHORIZATION": f"Api-Key {key}"} if key else {}
    with open(archive, "rb") as handle:
        return client.post("/api/v1/archives/", {"file": handle}, format="multipart", **headers)


def test_a_script_pushes_an_archive_with_a_token_and_reads_its_run(token, django_capture_on_commit_callbacks):
    machine, key = token
    client = APIClient()
    with django_capture_on_commit_callbacks(execute=True):
        response = push(client, key)
    assert response.status_code == 202, response.content
    run_id = response.json()["id"]
    run = IngestRun.objects.get(pk=run_id)
    assert (run.source, run.api_key, run.created_by) == ("api", machine, None)
    status = client.get(f"/api/v1/ingest-runs/{run_id}/", HTTP_AUTHORIZATION=f"Api-Key {key}")
    assert status.status_code == 200
    body = status.json()
    assert body["status"] == "succeeded" and body["finished"] and body["jobs_created"] == 5
    assert body["uploaded_by"] == "token exporter-01" and body["errors"] == []
    assert Job.objects.count() == 5
    machine.refresh_from_db()
    assert machine.last_used_at is not None


def test_the_run_reports_errors_by_file_row_and_field(token, tmp_path, django_capture_on_commit_callbacks):
    import zipfile

    _, key = token
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(EXAMPLE_ARCHIVE) as source, zipfile.ZipFile(bad, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name.endswith("jobs.csv"):
                data = data.replace(b"ex-1004,", b"ex-1004 bad,", 1)
            target.writestr(name, data)
    with django_capture_on_commit_callbacks(execute=True):
        run_id = push(APIClient(), key, bad).json()["id"]
    body = APIClient().get(f"/api/v1/ingest-runs/{run_id}/", HTTP_AUTHORIZATION=f"Api-Key {key}").json()
    assert body["status"] == "partial" and body["jobs_rejected"] == 1
    error = body["errors"][0]
    assert (error["file"], error["field"]) == ("jobs.csv", "job_id") and error["row"]


# A NUL byte in the key would reach the token lookup, where PostgreSQL refuses it (a 500, not a 403).
@pytest.mark.parametrize(
    "header", [None, "Api-Key nope.nope", "Bearer abc", "Api-Key ", "Api-Key no\x00pe.nope", "Api-Key \x00"]
)
def test_pushes_without_a_valid_token_are_refused(header, operator):
    client = APIClient()
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    with open(EXAMPLE_ARCHIVE, "rb") as handle:
        response = client.post("/api/v1/archives/", {"file": handle}, format="multipart", **extra)
    assert response.status_code in (401, 403)
    assert IngestRun.objects.count() == 0
    run = IngestRun.objects.create(archive_name="theirs.zip", created_by=operator)
    assert client.get(f"/api/v1/ingest-runs/{run.pk}/", **extra).status_code in (401, 403)


def test_a_revoked_token_is_refused(token):
    machine, key = token
    machine.revoked = True
    machine.save()
    response = push(APIClient(), key)
    assert response.status_code == 401 and "revoked" in response.json()["detail"]
    assert IngestRun.objects.count() == 0


def test_people_need_to_be_operators(researcher, operator, django_capture_on_commit_callbacks):
    client = APIClient()
    client.force_authenticate(researcher)
    assert push(client).status_code == 403
    client.force_authenticate(operator)
    with django_capture_on_commit_callbacks(execute=True):
        response = push(client)
    assert response.status_code == 202
    assert IngestRun.objects.get().created_by == operator


def test_a_token_sees_only_the_runs_it_pushed(token, operator, django_capture_on_commit_callbacks):
    _, key = token
    other = IngestRun.objects.create(archive_name="someone-else.zip")
    client = APIClient()
    assert client.get(f"/api/v1/ingest-runs/{other.pk}/", HTTP_AUTHORIZATION=f"Api-Key {key}").status_code == 404
    assert client.get(f"/api/v1/ingest-runs/{other.pk}/").status_code in (401, 403)
    client.force_authenticate(operator)
    assert client.get(f"/api/v1/ingest-runs/{other.pk}/").status_code == 200


def test_the_tokens_page_counts_each_token_s_pushes_and_leads_to_them(client, token, operator):
    """The runs list filters by the token that pushed them (?by=token:<prefix>), but the tokens page,
    where an operator decides whether to revoke one, said neither whether a token had pushed
    anything nor led to its runs (a connector's page leads to its pulls)."""
    machine, _ = token
    never, _ = MachineToken.objects.create_key(name="never-pushed", created_by=operator)
    for name in ("week-46.zip", "week-47.zip"):
        IngestRun.objects.create(archive_name=name, source="api", api_key=machine)
    IngestRun.objects.create(archive_name="by-hand.zip", source="upload", created_by=operator)
    client.force_login(operator)
    html = client.get("/tokens/").content.decode()
    runs = f"/ingest-runs/?by=token:{machine.prefix}"
    assert f'<span><a href="{runs}" class="in-text">2</a></span></td>' in html
    pushed = {row[0]: row[5] for row in table_rows(html, "Machine tokens")}
    assert pushed == {"exporter-01": "2", "never-pushed": "0"}
    assert f"?by=token:{never.prefix}" not in html  # the token that never pushed: no link to an empty list
    listed = client.get(runs)
    assert sorted(run.archive_name for run in listed.context["page"]) == ["week-46.zip", "week-47.zip"]


def test_an_upload_without_a_file_is_a_400_that_names_the_field(token):
    _, key = token
    response = APIClient().post("/api/v1/archives/", {}, format="multipart", HTTP_AUTHORIZATION=f"Api-Key {key}")
    assert response.status_code == 400
    assert "file" in response.json()


def test_an_api_upload_over_the_limit_is_413(token, settings):
    _, key = token
    settings.UPLOAD_MAX_BYTES = 1024
    response = push(APIClient(), key)
    assert response.status_code == 413
    assert "larger than the upload limit" in response.json()["detail"]
    assert IngestRun.objects.count() == 0


def test_an_api_upload_over_the_limit_is_a_json_413_under_a_url_prefix(token, settings):
    """Served under a prefix (a proxy's SCRIPT_NAME, or FORCE_SCRIPT_NAME) the request's path is
    /triage/api/v1/archives/: the refusal was the pages' plain text then, not the API's JSON."""
    _, key = token
    settings.UPLOAD_MAX_BYTES = 1024
    settings.FORCE_SCRIPT_NAME = "/triage"
    response = push(APIClient(), key)
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json", response.content[:200]
    assert "larger than the upload limit" in response.json()["detail"]
    assert IngestRun.objects.count() == 0


def test_the_openapi_schema_describes_the_endpoints(operator):
    client = APIClient()
    client.force_authenticate(operator)
    response = client.get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = json.loads(response.content)
    upload = schema["paths"]["/api/v1/archives/"]["post"]
    body = upload["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert body["properties"]["file"]["format"] == "binary" and body["required"] == ["file"]
    assert set(upload["responses"]) >= {"202", "400", "403", "413"}
    assert {"MachineToken": []} in upload["security"]
    assert "MachineToken" in schema["components"]["securitySchemes"]
    run = schema["paths"]["/api/v1/ingest-runs/{id}/"]["get"]
    run_schema = schema["components"]["schemas"]["IngestRun"]["properties"]
    assert {"status", "jobs_done", "jobs_total", "errors"} <= set(run_schema)
    assert run["responses"]["200"]


def test_the_api_root_lists_its_resources_and_the_schema(operator):
    client = APIClient()
    client.force_authenticate(operator)
    root = client.get("/api/v1/").json()
    assert {"archives", "ingest-runs", "jobs", "schema"} <= set(root)
    assert root["schema"].endswith("/api/v1/schema/")
    assert client.get(root["schema"], {"format": "json"}).status_code == 200


def test_a_pushed_file_that_is_not_an_archive_is_named_as_pushed(token, tmp_path, django_capture_on_commit_callbacks):
    _, key = token
    fake = tmp_path / "fake.zip"
    fake.write_text("a text file renamed fake.zip\n")
    with django_capture_on_commit_callbacks(execute=True):
        run_id = push(APIClient(), key, fake).json()["id"]
    body = APIClient().get(f"/api/v1/ingest-runs/{run_id}/", HTTP_AUTHORIZATION=f"Api-Key {key}").json()
    assert body["status"] == "failed" and ".upload" not in json.dumps(body)
    assert [(e["file"], e["message"]) for e in body["errors"]] == [
        ("fake.zip", "fake.zip is not a zip archive (its content is not a zip file)")
    ]


@pytest.mark.django_db(transaction=True)  # the queue is reached as the upload commits, as in the server
def test_an_archive_that_fails_its_import_in_the_request_is_a_202_not_a_503(token, tmp_path):
    """Without REDIS_URL the import runs in the serving process (make demo, the contract test's server):
    it ran in the request, so a file that is no archive had failed by the time the view answered, which
    took that for a queue that cannot be reached: 503, Retry-After: 60, 'send the archive again later',
    for a file that would fail every time. In a thread of its own now, it may still fail before the answer."""
    _, key = token
    fake = tmp_path / "notes.zip"
    fake.write_text("not an archive\n")
    response = push(APIClient(), key, fake)
    assert response.status_code == 202 and "Retry-After" not in response
    body = response.json()
    assert body["status"] in ("running", "failed") and "detail" not in body
    assert response["Location"] == body["url"]
    assert wait_for_imports()
    run = IngestRun.objects.get(pk=body["id"])
    assert run.status == IngestRun.Status.FAILED
    assert [e["message"] for e in run.errors] == ["notes.zip is not a zip archive (its content is not a zip file)"]


def test_an_empty_file_is_refused_naming_the_field_and_the_schema_says_so(token, client, tmp_path):
    """An empty file pushed is a 400 on `file`, nothing stored; the schema's `file` took any binary,
    so a client built from it (or the contract test) was told an empty one would do."""
    _, key = token
    empty = tmp_path / "week-47.zip"
    empty.write_bytes(b"")
    response = push(APIClient(), key, archive=empty)
    assert response.status_code == 400
    assert response.json() == {"file": ["The submitted file is empty."]}
    assert not IngestRun.objects.exists()
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    body = schema["paths"]["/api/v1/archives/"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    documented = body["properties"]["file"]
    assert documented["minLength"] == 1 and "empty file is a 400" in documented["description"]


def test_a_token_made_only_to_read_reports_pushes_nothing(upload_dirs):
    """Least privilege: a token made for a billing script (or for Prometheus) is refused a push,
    saying what it may not do and where an operator allows it, and nothing is stored."""
    billing, key = MachineToken.objects.create_key(name="billing", reads_reports=True, pushes_archives=False)
    response = push(APIClient(), key)
    assert response.status_code == 403
    detail = response.json()["detail"]
    assert detail.startswith("This token may not push archives") and "tokens page" in detail
    assert key not in detail and billing.prefix not in detail
    assert (IngestRun.objects.count(), Job.objects.count()) == (0, 0)
    assert [p for p in upload_dirs.rglob("*") if p.is_file()] == []
    billing.pushes_archives = True
    billing.save(update_fields=["pushes_archives"])
    assert push(APIClient(), key).status_code == 202
    assert IngestRun.objects.get().api_key == billing


def test_the_tokens_page_makes_pushing_tokens_by_default_and_lists_what_each_may_do(client, operator):
    client.force_login(operator)
    page = client.get("/tokens/").content.decode()
    # Pushing is what a token is first made for: the box is ticked, an operator unticks it.
    assert re.search(r'<input type="checkbox" name="pushes_archives" checked>', page)
    cron_page = client.post("/tokens/", {"name": "cron", "pushes_archives": "on"}).content.decode()
    scraper_page = client.post("/tokens/", {"name": "prometheus", "reads_metrics": "on"}).content.decode()  # unticked
    # The new key's push command only for a token that may push.
    assert 'id="push-example"' in cron_page and 'id="push-example"' not in scraper_page
    cron, prometheus = MachineToken.objects.get(name="cron"), MachineToken.objects.get(name="prometheus")
    assert cron.pushes_archives and not prometheus.pushes_archives and prometheus.reads_metrics
    created = AuditEvent.objects.filter(action="token.create").order_by("pk")
    assert [e.details["pushes_archives"] for e in created] == [True, False]
    rows = {row[0]: row for row in table_rows(client.get("/tokens/").content.decode(), "Machine tokens")}
    # Pushes archives, Reads /metrics, Reads team costs, Reads jobs, State
    assert rows["prometheus"][6:11] == ["no", "yes", "no", "no", "active"]
    assert rows["cron"][6:11] == ["yes", "no", "no", "no", "active"]


def test_a_token_s_revoke_address_holds_its_prefix_not_its_key_s_hash(client, token, operator):
    """Addresses end up in access logs and browser history: the revoke form's names the token by its
    prefix (shown on the page anyway), never by the library's id, which is the prefix and the key's hash."""
    machine, _ = token
    client.force_login(operator)
    html = client.get("/tokens/").content.decode()
    actions = re.findall(r'<form method="post" action="([^"]*/revoke/)"', html)
    assert actions == [f"/tokens/{machine.prefix}/revoke/"]
    assert client.post(f"/tokens/{machine.pk}/revoke/").status_code == 404  # the old address: no such token
    machine.refresh_from_db()
    assert not machine.revoked
    assert client.post(actions[0]).status_code == 302
    machine.refresh_from_db()
    assert machine.revoked
    assert AuditEvent.objects.get(action="token.revoke").details == {"prefix": machine.prefix}


@pytest.mark.django_db(transaction=True)
def test_tokens_made_before_the_permission_keep_pushing():
    """Every token pushed before `pushes_archives` existed; the migration leaves them able to."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = ("fleet", "0029_personaltoken"), ("fleet", "0030_machinetoken_pushes_archives")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    try:
        old = executor.loader.project_state([before]).apps.get_model("fleet", "MachineToken")
        old.objects.create(id="abcd1234.hash", prefix="abcd1234", hashed_key="hash", name="nightly export")
        executor = MigrationExecutor(connection)
        executor.migrate([after])
        assert MachineToken.objects.get(prefix="abcd1234").pushes_archives
    finally:
        # Back to the latest: left at 0030, the tests after this one lacked every later migration's columns.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
