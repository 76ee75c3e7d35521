"""`GET /api/v1/jobs/` for scripts: a machine token made to read jobs follows its pushes to the jobs
they stored, their findings and their series, as the README tells a script to."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from rest_framework.test import APIClient

from fleet.models import AuditEvent, IngestRun, MachineToken
from fleet.series import to_parquet_bytes
from tests.conftest import EXAMPLE_ARCHIVE, tiny_series
from tests.factories import JobFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("upload_dirs")]


def as_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def with_series(job):
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(tiny_series())))
    return job


def test_a_script_follows_its_push_to_the_jobs_it_stored_and_their_series(django_capture_on_commit_callbacks):
    _, key = MachineToken.objects.create_key(name="exporter", reads_jobs=True)
    script = as_token(key)
    with open(EXAMPLE_ARCHIVE, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        pushed = script.post("/api/v1/archives/", {"file": handle}, format="multipart")
    assert pushed.status_code == 202
    run = pushed.json()
    # The answer says where to follow the run, in the body and in Location.
    assert pushed["Location"] == run["url"] == f"http://testserver/api/v1/ingest-runs/{run['id']}/"
    assert script.get(pushed["Location"]).json()["status"] == "succeeded"

    jobs = script.get("/api/v1/jobs/", {"ingest_run": run["id"]})
    assert jobs.status_code == 200 and jobs.json()["count"] == 5
    first = jobs.json()["results"][0]
    job = script.get(f"/api/v1/jobs/{first['id']}/")
    assert job.status_code == 200 and isinstance(job.json()["findings"], list)

    csv = script.get(f"/api/v1/jobs/{first['id']}/series/csv/")
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")
    assert b"".join(csv.streaming_content).startswith(b'"job_id","timestamp",')
    parquet = script.get(f"/api/v1/jobs/{first['id']}/series/parquet/")
    assert parquet.status_code == 200 and parquet["Content-Type"] == "application/vnd.apache.parquet"
    assert "gpu_util" in pd.read_parquet(io.BytesIO(b"".join(parquet.streaming_content))).columns


def test_a_token_reads_jobs_only_when_made_to(team_a):
    job = with_series(JobFactory(team=team_a))
    _, push_key = MachineToken.objects.create_key(name="cron")
    _, report_key = MachineToken.objects.create_key(name="billing", reads_reports=True)
    for key in (push_key, report_key):
        for path in ("/api/v1/jobs/", f"/api/v1/jobs/{job.pk}/", f"/api/v1/jobs/{job.pk}/series/csv/"):
            assert as_token(key).get(path).status_code == 403, (key, path)
    reader, read_key = MachineToken.objects.create_key(name="reader", reads_jobs=True)
    assert as_token(read_key).get(f"/api/v1/jobs/{job.pk}/series/csv/").status_code == 200
    reader.revoked = True
    reader.save()
    assert as_token(read_key).get("/api/v1/jobs/").status_code in (401, 403)


def test_a_token_reads_every_teams_jobs_and_a_person_still_their_teams_only(client, member_a, team_a, team_b):
    ours, theirs = with_series(JobFactory(team=team_a)), with_series(JobFactory(team=team_b))
    _, key = MachineToken.objects.create_key(name="reader", reads_jobs=True)
    listed = as_token(key).get("/api/v1/jobs/").json()["results"]
    assert {j["id"] for j in listed} == {ours.pk, theirs.pk}
    client.force_login(member_a)
    assert [j["id"] for j in client.get("/api/v1/jobs/").json()["results"]] == [ours.pk]
    assert client.get(f"/api/v1/jobs/{ours.pk}/series/csv/").status_code == 200
    assert client.get(f"/api/v1/jobs/{theirs.pk}/series/csv/").status_code == 404
    assert client.get(reverse("dashboard:job-series", args=[theirs.pk, "csv"])).status_code == 404
    bare = JobFactory(team=team_a)  # no series supplied (or pruned)
    missing = client.get(f"/api/v1/jobs/{bare.pk}/series/parquet/")
    assert missing.status_code == 404 and "no stored series" in missing.json()["detail"]


def test_an_operator_makes_a_token_that_reads_jobs_on_the_tokens_page(client, operator):
    client.force_login(operator)
    page = client.post(reverse("fleet:token-list"), {"name": "follower", "reads_jobs": "on"}).content.decode()
    token = MachineToken.objects.get(name="follower")
    assert token.reads_jobs and not token.reads_reports and not token.reads_metrics
    assert 'id="jobs-example"' in page and "/api/v1/jobs/?ingest_run=" in page
    assert AuditEvent.objects.get(action="token.create").details["reads_jobs"] is True
    listing = client.get(reverse("fleet:token-list")).content.decode()
    assert '<th scope="col" role="columnheader">Reads jobs</th>' in listing
    client.post(reverse("fleet:token-list"), {"name": "cron", "pushes_archives": "on"})
    assert not MachineToken.objects.get(name="cron").reads_jobs
    assert IngestRun.objects.count() == 0


def test_a_sync_script_fetches_only_the_jobs_stored_or_triaged_since_its_last_run(team_a):
    """`changed_after`: jobs an import stored or updated since then, and jobs triaged again since
    then (a new rule set changes the findings, not the job's row)."""
    from datetime import timedelta

    from django.utils import timezone

    from fleet.models import Job
    from triage.models import JobTriage, RuleSet

    old, retriaged = JobFactory(team=team_a, name="old"), JobFactory(team=team_a, name="retriaged")
    long_ago = timezone.now() - timedelta(days=3)
    Job.objects.filter(pk__in=[old.pk, retriaged.pk]).update(updated_at=long_ago)
    last_run = timezone.now() - timedelta(hours=1)
    JobTriage.objects.create(job=retriaged, rule_set=RuleSet.current(), status="healthy", is_current=True)
    JobFactory(team=team_a, name="new")
    _, key = MachineToken.objects.create_key(name="sync", reads_jobs=True)
    script = as_token(key)
    since = script.get("/api/v1/jobs/", {"changed_after": last_run.isoformat()}).json()["results"]
    assert {job["name"] for job in since} == {"new", "retriaged"}
    assert all(job["updated_at"].endswith("Z") for job in since)
    assert {j["name"] for j in script.get("/api/v1/jobs/").json()["results"]} == {"old", "retriaged", "new"}
    refused = script.get("/api/v1/jobs/", {"changed_after": "yesterday"})
    assert refused.status_code == 400 and "changed_after" in refused.json()


def test_a_sync_script_fetches_the_jobs_a_price_change_re_priced(team_a):
    """A price saved on the settings page changes the costs of the cluster's jobs (and their findings'),
    which a script syncing by `changed_after` must fetch again: re-pricing marks the jobs it changed."""
    from datetime import timedelta
    from decimal import Decimal

    from django.utils import timezone

    from fleet.models import GpuModelPrice, Job

    priced = JobFactory(team=team_a, name="a100", gpu_model="A100")
    other_model = JobFactory(team=team_a, name="h100", gpu_model="H100", cluster=priced.cluster)
    long_ago = timezone.now() - timedelta(days=3)
    Job.objects.filter(pk__in=[priced.pk, other_model.pk]).update(updated_at=long_ago)
    last_run = timezone.now() - timedelta(seconds=1)
    GpuModelPrice.objects.create(cluster_id=priced.cluster_id, gpu_model="A100", price_per_gpu_hour=Decimal("2.5"))
    priced.refresh_from_db()
    assert priced.cost is not None and priced.currency
    _, key = MachineToken.objects.create_key(name="sync", reads_jobs=True)
    since = as_token(key).get("/api/v1/jobs/", {"changed_after": last_run.isoformat()}).json()["results"]
    assert [job["name"] for job in since] == ["a100"]  # the H100 job's cost did not change
    assert since[0]["cost"] == str(priced.cost)
