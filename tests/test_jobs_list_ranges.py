"""A range typed the wrong way round on the jobs list is a form error that says so, as the overview's and a
team's periods say "The start date is after the end date", not a silent "No job matches"."""

import pytest
from django.urls import reverse

from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(team_a):
    return [JobFactory(team=team_a, mean_gpu_util=util) for util in (10, 50, 90)]


@pytest.mark.parametrize(
    ("params", "message", "marked"),
    [
        (
            {"start_from": "2026-11-22", "start_to": "2026-11-01"},
            "Started from: The start date is after the end date",
            "id_start_from_error",
        ),
        (
            {"util_min": "80", "util_max": "20"},
            "Mean utilization at least: The lowest utilization is above the highest",
            "id_util_min_error",
        ),
    ],
)
def test_a_reversed_range_is_a_form_error_not_an_empty_list(operator_client, jobs, params, message, marked):
    response = operator_client.get(reverse("dashboard:job-list"), params)
    assert response.status_code == 200
    page = response.content.decode()
    assert message in page and f'aria-describedby="{marked}"' in page, "said beside the box it is about"
    assert "No job matches" not in page
    assert len(response.context["page"].object_list) == len(jobs), "all jobs instead, as for any bad filter"
    for name, value in params.items():
        assert f'name="{name}" value="{value}"' in page, "the values typed come back to be corrected"


@pytest.mark.parametrize(
    "params", [{"start_from": "2026-11-01", "start_to": "2026-11-01"}, {"util_min": "50", "util_max": "50"}]
)
def test_a_range_of_one_value_is_no_error(operator_client, jobs, params):
    response = operator_client.get(reverse("dashboard:job-list"), params)
    assert not response.context["filter"].errors
