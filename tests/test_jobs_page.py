"""The jobs list: filters an operator combines, sorting, CSV export of the filtered set."""

import csv
import io

import pytest
from django.urls import reverse

from tests.factories import JobFactory
from triage.models import Finding, JobTriage, RuleSet
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db


def triaged(job, status, *categories):
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status=status, is_current=True)
    for category in categories:
        Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=category, confidence=0.9,
                               summary="s", gpu_hours=1.0, evidence={}, guidance={})  # fmt: skip


@pytest.fixture
def jobs(team_a, team_b):
    ckpt = JobFactory(team=team_a, name="ckpt-job", mean_gpu_util=30, state="COMPLETED", unused_gpu_hours=5)
    triaged(ckpt, "classified", Category.MODEL_CHECKPOINTING)
    mystery = JobFactory(team=team_a, name="mystery-job", mean_gpu_util=20, state="FAILED", unused_gpu_hours=9)
    triaged(mystery, "unclassified")
    busy = JobFactory(team=team_b, name="=cmd|' /C calc'!A0", mean_gpu_util=90, unused_gpu_hours=0.5)
    triaged(busy, "healthy")
    return {"ckpt": ckpt, "mystery": mystery, "busy": busy}


def names(client, **params):
    response = client.get(reverse("dashboard:job-list"), params)
    assert response.status_code == 200
    return [job.name for job in response.context["page"].object_list]


def test_filters_combine(client, operator, jobs):
    client.force_login(operator)
    assert names(client, category="model_checkpointing") == ["ckpt-job"]
    assert names(client, status="unclassified") == ["mystery-job"]
    assert set(names(client, util_max="50")) == {"ckpt-job", "mystery-job"}
    assert names(client, util_min="25", util_max="50") == ["ckpt-job"]
    assert names(client, state="failed") == ["mystery-job"]
    assert names(client, team="team-b") == ["=cmd|' /C calc'!A0"]
    assert names(client, sort="unused")[:2] == ["mystery-job", "ckpt-job"]
    JobFactory(team=jobs["ckpt"].team, name="lost-triage-job", mean_gpu_util=10)  # its triage task was lost
    assert names(client, status="not_triaged") == ["lost-triage-job"]
    page = client.get(reverse("dashboard:job-list"), {"status": "not_triaged"}).content.decode()
    assert "not triaged yet" in page and 'value="not_triaged"' in page


def test_bad_filter_values_show_a_message_not_an_error(client, operator, jobs):
    client.force_login(operator)
    response = client.get(reverse("dashboard:job-list"), {"util_min": "lots", "start_from": "yesterday"})
    assert response.status_code == 200
    assert b"Showing all jobs instead" in response.content


def test_member_cannot_filter_their_way_into_another_team(client, member_a, jobs):
    client.force_login(member_a)
    assert set(names(client)) == {"ckpt-job", "mystery-job"}
    response = client.get(reverse("dashboard:job-list"), {"q": "calc"})
    assert list(response.context["page"].object_list) == []


def test_csv_export_has_the_filtered_jobs_with_causes_and_no_live_formulas(client, operator, jobs):
    client.force_login(operator)
    response = client.get(reverse("dashboard:job-list"), {"format": "csv", "util_min": "0"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert response["Content-Type"].startswith("text/csv")
    by_name = {row["name"]: row for row in rows}
    assert set(by_name) == {"ckpt-job", "mystery-job", "'=cmd|' /C calc'!A0"}
    assert by_name["ckpt-job"]["categories"] == "model_checkpointing"
    assert by_name["mystery-job"]["status"] == "unclassified"
    filtered = client.get(reverse("dashboard:job-list"), {"format": "csv", "category": "model_checkpointing"})
    assert len(list(csv.DictReader(io.StringIO(b"".join(filtered.streaming_content).decode())))) == 1


def test_job_list_query_count_does_not_grow_with_the_page(client, operator, jobs, django_assert_max_num_queries):
    client.force_login(operator)
    for i in range(40):
        triaged(JobFactory(name=f"extra-{i}"), "classified", Category.API_MISUSE)
    with django_assert_max_num_queries(13):  # 12, and one for the jobs the viewer rates in a blind study
        client.get(reverse("dashboard:job-list"))


def test_a_job_page_with_thousands_of_log_events_counts_them_and_lists_one_kind_on_request(client, member_a, team_a):
    """A log of a progress bar per line held 100,000 events; the page listed its first 500 and said
    nothing of the rest, so the OOM on the last line could not be found there."""
    from fleet.models import Artifact, LogEvent

    job = JobFactory(team=team_a)
    log = Artifact.objects.create(job=job, kind="log", path="stdout.log", file="artifacts/x", size=1, sha256="x")
    rows = [LogEvent(job=job, artifact=log, kind="download", line_no=n, text=f"{n}%|###") for n in range(1, 1201)]
    rows.append(LogEvent(job=job, artifact=log, kind="oom", line_no=1201, text="CUDA out of memory <b>"))
    LogEvent.objects.bulk_create(rows)
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk]))
    text = page.content.decode()
    assert "all 1,201" in text and "download 1,200" in text and "oom 1" in text
    assert "The first 500 of 1,201 events, in log order." in text
    assert "CUDA out of memory" not in text  # past the first 500
    one_kind = client.get(reverse("dashboard:job-detail", args=[job.pk]), {"events": "oom"}).content.decode()
    assert "CUDA out of memory &lt;b&gt;" in one_kind and "The first 500" not in one_kind
    assert "%|###" not in one_kind and '<a href="?#log-events">all 1,201</a>' in one_kind
    for unknown in ("nope", "<script>", "oom' OR 1=1"):  # not a kind the job has: every event, as without it
        response = client.get(reverse("dashboard:job-detail", args=[job.pk]), {"events": unknown})
        assert response.status_code == 200 and "The first 500 of 1,201 events" in response.content.decode()
