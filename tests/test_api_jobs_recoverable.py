"""`GET /api/v1/jobs/` gives each job's recoverable GPU-hours and sorts by them (`?sort=recoverable`), as the jobs
list sorts and its CSV's `recoverable_gpu_hours` column counts them: the API had neither."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from fleet.models import MachineToken
from tests.factories import JobFactory
from tests.test_jobs_page import _found
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

MONDAY = datetime(2026, 11, 2, 9, tzinfo=UTC)
CKPT, BATCH = Category.MODEL_CHECKPOINTING, Category.IMPROPER_BATCH_SIZE


def api(user=None, key: str = "") -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    if key:
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def listed(client, **params) -> list[dict]:
    response = client.get("/api/v1/jobs/", params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def csv_rows(client, **params) -> list[dict]:
    response = client.get(reverse("dashboard:job-list"), {"format": "csv", **params})
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


@pytest.fixture
def jobs(team_a, team_b):
    made = {
        "two-causes": JobFactory(team=team_a, name="two-causes", start_time=MONDAY),
        "tie-1": JobFactory(team=team_a, name="tie-1", start_time=MONDAY),
        "tie-2": JobFactory(team=team_a, name="tie-2", start_time=MONDAY),
        "nothing-found": JobFactory(team=team_a, name="nothing-found", start_time=MONDAY),
        "ckpt-only": JobFactory(team=team_a, name="ckpt-only", start_time=MONDAY),
        "other-team": JobFactory(team=team_b, name="other-team", start_time=MONDAY),
    }
    _found(made["two-causes"], (CKPT, 1.25), (BATCH, 10.0))
    _found(made["tie-1"], (BATCH, 5.0))
    _found(made["tie-2"], (BATCH, 5.0))
    _found(made["ckpt-only"], (CKPT, 3.0))
    _found(made["other-team"], (CKPT, 99.0))
    return made


def test_each_job_has_the_csvs_recoverable_gpu_hours(client, operator, jobs):
    client.force_login(operator)
    for params in ({}, {"category": CKPT.value}):
        from_api = {job["name"]: job["recoverable_gpu_hours"] for job in listed(api(operator), **params)}
        from_csv = {row["name"]: row["recoverable_gpu_hours"] for row in csv_rows(client, **params)}
        assert {name: "" if hours is None else str(hours) for name, hours in from_api.items()} == from_csv, params
    assert {job["name"]: job["recoverable_gpu_hours"] for job in listed(api(operator))}["two-causes"] == 11.25
    of_ckpt = {job["name"]: job["recoverable_gpu_hours"] for job in listed(api(operator), category=CKPT.value)}
    assert of_ckpt == {"two-causes": 1.25, "ckpt-only": 3.0, "other-team": 99.0}  # the cause's alone, as its page
    detail = api(operator).get(f"/api/v1/jobs/{jobs['two-causes'].pk}/").json()
    assert detail["recoverable_gpu_hours"] == 11.25
    assert api(operator).get(f"/api/v1/jobs/{jobs['nothing-found'].pk}/").json()["recoverable_gpu_hours"] is None


def test_sorted_by_recoverable_gpu_hours_the_api_lists_the_jobs_as_the_list_and_its_csv(client, operator, jobs):
    """Most first, ties by id, jobs with none last: the list's order (and its CSV's, the same query)."""
    client.force_login(operator)
    for params in ({"sort": "recoverable"}, {"sort": "recoverable", "category": BATCH.value}):
        order = [job["name"] for job in listed(api(operator), **params)]
        assert order == [row["name"] for row in csv_rows(client, **params)], params
    order = [job["name"] for job in listed(api(operator), sort="recoverable")]
    assert order[:5] == ["other-team", "two-causes", "tie-1", "tie-2", "ckpt-only"]
    assert order[-1] == "nothing-found"
    assert [job["name"] for job in listed(api(operator), sort="start")] == [
        job["name"] for job in listed(api(operator))
    ]
    wrong = api(operator).get("/api/v1/jobs/", {"sort": "most"})
    assert wrong.status_code == 400 and "sort" in wrong.json()


def test_a_member_sorts_only_their_teams_jobs_and_a_token_every_teams(member_a, jobs):
    order = [job["name"] for job in listed(api(member_a), sort="recoverable")]
    assert order == ["two-causes", "tie-1", "tie-2", "ckpt-only", "nothing-found"]  # never team B's
    assert api(member_a).get(f"/api/v1/jobs/{jobs['other-team'].pk}/").status_code == 404
    _, key = MachineToken.objects.create_key(name="exporter", reads_jobs=True)
    assert [job["name"] for job in listed(api(key=key), sort="recoverable")][0] == "other-team"


def test_a_job_its_viewer_rates_blind_has_no_figure_and_no_place_by_it(operator, researcher, team_a, jobs):
    from triage.labeling.models import Assignment, Study, StudyJob, StudyRater

    blind = JobFactory(team=team_a, name="rated-blind", start_time=MONDAY)
    _found(blind, (CKPT, 500.0))
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=blind, position=1), rater=researcher)
    for params in ({}, {"sort": "recoverable"}):
        by_name = {job["name"]: job for job in listed(api(researcher), **params)}
        assert by_name["rated-blind"]["recoverable_gpu_hours"] is None, params
    order = [job["name"] for job in listed(api(researcher), sort="recoverable")]
    assert order.index("rated-blind") > order.index("ckpt-only")  # among those with none, not first
    assert {job["name"]: job for job in listed(api(operator))}["rated-blind"]["recoverable_gpu_hours"] == 500.0


def test_the_schema_documents_the_figure_and_the_order(client):
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    job = schema["components"]["schemas"]["Job"]["properties"]["recoverable_gpu_hours"]
    assert job["type"] == "number" and job["nullable"] is True and "sort=recoverable" in job["description"]
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/jobs/"]["get"]["parameters"]}
    assert "recoverable" in parameters["sort"]["schema"]["enum"] and "start" in parameters["sort"]["schema"]["enum"]
    assert "recoverable GPU-hours" in parameters["sort"]["description"]


def test_pages_sorted_by_recoverable_gpu_hours_follow_on(operator, jobs, monkeypatch):
    """Walked by its `next` links, two jobs a page, the list sorted by recoverable GPU-hours is the whole order once."""
    from config.api_params import PageNumbers

    monkeypatch.setattr(PageNumbers, "page_size", 2)
    client, walked = api(operator), []
    url = "/api/v1/jobs/?sort=recoverable"
    while url:
        page = client.get(url).json()
        walked += [job["name"] for job in page["results"]]
        url = page["next"]
        assert url is None or ("sort=recoverable" in url and "after=" not in url)
    assert walked == ["other-team", "two-causes", "tie-1", "tie-2", "ckpt-only", "nothing-found"]


def test_a_job_and_its_one_findings_guidance_give_the_same_recoverable_gpu_hours(operator, team_a):
    """The rules store a finding's GPU-hours to 4 places (2.1255); the job's `recoverable_gpu_hours` gave them to 3
    (Python's round of the float: 2.125) and the finding's guidance to 2 (2.13): three figures of one quantity in
    one answer. Both are now the one documented figure, to 3 places, half up on the decimal (2.126), also for a
    finding stored with the 2 places revision 10's guidance wrote."""
    from triage.models import Finding, JobTriage, RuleSet

    job = JobFactory(team=team_a, name="one-cause", start_time=MONDAY)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=CKPT, confidence=0.9,
                           summary="s", gpu_hours=2.1255, evidence={},
                           guidance={"change": "Save asynchronously.", "recoverable_gpu_hours": 2.13})  # fmt: skip
    detail = api(operator).get(f"/api/v1/jobs/{job.pk}/").json()
    listed_hours = {row["name"]: row["recoverable_gpu_hours"] for row in listed(api(operator))}["one-cause"]
    assert detail["findings"][0]["gpu_hours"] == 2.1255  # as stored
    assert detail["recoverable_gpu_hours"] == listed_hours == 2.126
    assert detail["findings"][0]["guidance"]["recoverable_gpu_hours"] == 2.126


def test_the_schema_gives_both_recoverable_gpu_hours_the_same_precision(client):
    schemas = client.get("/api/v1/schema/", {"format": "json"}).json()["components"]["schemas"]
    for described in (
        schemas["Job"]["properties"]["recoverable_gpu_hours"]["description"],
        schemas["Guidance"]["properties"]["recoverable_gpu_hours"]["description"],
    ):
        assert "to 3 places, half up" in described, described
