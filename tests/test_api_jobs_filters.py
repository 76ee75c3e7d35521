"""`GET /api/v1/jobs/`'s filters a script narrows the list with: a queue or GPU model (exact, as the
jobs page's `?queue=` and `?gpu_model=`), and a range that ends before it starts is a 400 saying so,
as the teams report's, not an empty list a script would file as a quiet month."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.factories import JobFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/jobs/"


def ids(answer) -> set[int]:
    assert answer.status_code == 200, answer.content
    return {row["id"] for row in answer.json()["results"]}


def test_the_list_narrows_to_a_queue_and_a_gpu_model(client, operator, team_a):
    client.force_login(operator)
    gpu_a100 = JobFactory(team=team_a, queue="gpu", gpu_model="A100")
    gpu_h100 = JobFactory(team=team_a, queue="gpu", gpu_model="H100")
    debug_a100 = JobFactory(team=team_a, queue="debug", gpu_model="A100")
    assert ids(client.get(URL, {"queue": "gpu"})) == {gpu_a100.pk, gpu_h100.pk}
    assert ids(client.get(URL, {"gpu_model": "A100"})) == {gpu_a100.pk, debug_a100.pk}
    assert ids(client.get(URL, {"queue": "gpu", "gpu_model": "A100"})) == {gpu_a100.pk}
    # Exact, as `cluster`: not a part of a name, not another case.
    assert ids(client.get(URL, {"queue": "gp"})) == set()
    assert ids(client.get(URL, {"gpu_model": "a100"})) == set()
    # An empty value is no filter, as on the pages.
    assert ids(client.get(URL, {"queue": ""})) == {gpu_a100.pk, gpu_h100.pk, debug_a100.pk}


def test_the_schema_documents_the_queue_and_gpu_model_filters(client, operator):
    client.force_login(operator)
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    names = {p["name"] for p in schema["paths"]["/api/v1/jobs/"]["get"]["parameters"]}
    assert {"queue", "gpu_model"} <= names


def test_a_start_range_that_ends_before_it_begins_is_a_400_saying_so(client, operator, team_a):
    client.force_login(operator)
    JobFactory(team=team_a, start_time=datetime(2026, 11, 10, tzinfo=UTC))
    answer = client.get(URL, {"started_after": "2026-11-22", "started_before": "2026-11-01"})
    assert answer.status_code == 400
    message = answer.json()["started_before"][0]
    assert "started_before" in message and "started_after" in message and "before" in message
    # The same instant for both is no range either: nothing starts at or after it and before it.
    same = client.get(URL, {"started_after": "2026-11-10T00:00:00Z", "started_before": "2026-11-10T00:00:00Z"})
    assert same.status_code == 400
    # In order, it lists the job; one end alone is no range to check.
    assert len(ids(client.get(URL, {"started_after": "2026-11-01", "started_before": "2026-11-22"}))) == 1
    assert len(ids(client.get(URL, {"started_before": "2026-11-01"}))) == 0
