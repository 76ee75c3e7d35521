"""The jobs list's State, Queue and GPU model filters are menus of the values the viewer's jobs have, as
Cluster's is: a typed state (RUNNING) matched nothing and said nothing."""

import re

import pytest
from django.urls import reverse

from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(team_a, team_b):
    return [
        JobFactory(team=team_a, name="done", state="COMPLETED", queue="a100", gpu_model="A100-80GB"),
        JobFactory(team=team_a, name="broke", state="FAILED", queue="h100", gpu_model="H100-80GB"),
        JobFactory(team=team_b, name="others", state="TIMEOUT", queue="secret-queue", gpu_model="B200"),
        JobFactory(team=team_b, name="no-state", state="", queue="", gpu_model=""),
    ]


def options(page: str, name: str) -> list[str]:
    menu = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, re.S)
    assert menu, f"a {name} menu"
    return re.findall(r'<option value="([^"]*)"', menu.group(1))


def names(client, **params) -> set[str]:
    response = client.get(reverse("dashboard:job-list"), params)
    assert response.status_code == 200
    return {job.name for job in response.context["page"].object_list}


def test_the_menus_offer_the_values_the_fleets_jobs_have(operator_client, jobs):
    page = operator_client.get(reverse("dashboard:job-list")).content.decode()
    assert options(page, "state") == ["", "COMPLETED", "FAILED", "TIMEOUT"]
    assert options(page, "queue") == ["", "a100", "h100", "secret-queue"]
    assert options(page, "gpu_model") == ["", "A100-80GB", "B200", "H100-80GB"]
    assert ">Any state<" in page and ">Any queue<" in page and ">Any GPU model<" in page


def test_a_member_is_offered_only_their_teams_values(member_a, client, jobs):
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-list")).content.decode()
    assert options(page, "state") == ["", "COMPLETED", "FAILED"]
    assert "secret-queue" not in page and "B200" not in page
    response = client.get(reverse("dashboard:job-list"), {"queue": "secret-queue"})
    assert response.context["filter"].errors, "another team's queue is refused as one it does not have"


def test_each_menu_filters(operator_client, jobs):
    assert names(operator_client, state="FAILED") == {"broke"}
    assert names(operator_client, queue="a100") == {"done"}
    assert names(operator_client, gpu_model="B200") == {"others"}
    page = operator_client.get(reverse("dashboard:job-list"), {"queue": "h100"}).content.decode()
    assert '<option value="h100" selected>' in page


@pytest.mark.parametrize("state", ["COMPLETED", "completed"])
def test_old_links_with_a_typed_state_keep_working(operator_client, jobs, state):
    assert names(operator_client, state=state) == {"done"}


def test_a_state_no_job_has_is_a_form_error_that_names_those_there_are(operator_client, jobs):
    response = operator_client.get(reverse("dashboard:job-list"), {"state": "RUNNING"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "State: No job has the state RUNNING (the states: COMPLETED, FAILED, TIMEOUT)" in page
    assert "<script>" not in operator_client.get(reverse("dashboard:job-list"), {"state": "<script>"}).content.decode()
