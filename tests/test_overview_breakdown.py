"""The overview's GPU time by GPU model and by queue: each row's figures as the overview's totals count them (the
rows add up to them), each row's link opens the jobs list of exactly the jobs it counted, and a member sees their
teams' jobs only."""

import html
import re
from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import ClusterFactory, JobFactory

pytestmark = pytest.mark.django_db

WEEK = {"from": "2026-11-16", "to": "2026-11-22"}
IN_WEEK = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)


@pytest.fixture
def fleet_jobs(team_a, team_b):
    alpha = ClusterFactory(name="alpha")
    beta = ClusterFactory(name="beta")
    specs = [  # name, team, cluster, model, queue, start, gpu_hours, unused, util
        ("a-h100-1", team_a, alpha, "H100-80GB", "h100", IN_WEEK, 10.0, 6.0, 20.0),
        ("a-h100-2", team_a, alpha, "H100-80GB", "h100", datetime(2026, 11, 16, 0, 30, tzinfo=UTC), 4.0, 1.0, 70.0),
        ("a-a100-1", team_a, alpha, "A100-80GB", "a100", IN_WEEK, 8.0, 2.0, 45.0),
        ("a-a100-int", team_a, alpha, "A100-80GB", "interactive", IN_WEEK, 2.0, 1.5, 10.0),
        ("a-no-queue", team_a, alpha, "T4", "", IN_WEEK, 1.0, 0.5, 30.0),
        ("b-h100", team_b, alpha, "H100-80GB", "h100", IN_WEEK, 20.0, 15.0, 5.0),
        ("a-beta-h100", team_a, beta, "H100-80GB", "h100", IN_WEEK, 3.0, 1.0, 60.0),
        ("a-h100-after", team_a, alpha, "H100-80GB", "h100", datetime(2026, 11, 23, 1, 0, tzinfo=UTC), 5.0, 5.0, 0.0),
    ]
    return [
        JobFactory(
            name=name,
            team=team,
            cluster=cluster,
            gpu_model=model,
            queue=queue,
            start_time=start,
            gpu_hours=hours,
            unused_gpu_hours=unused,
            mean_gpu_util=util,
        )  # fmt: skip
        for name, team, cluster, model, queue, start, hours, unused, util in specs
    ]


def breakdown(response, key: str) -> dict:
    [table] = [table for table in response.context["breakdowns"] if table["key"] == key]
    return table


def listed(client, href: str) -> set[str]:
    response = client.get(html.unescape(href))
    assert response.status_code == 200
    return {job.name for job in response.context["page"].object_list}


@pytest.mark.parametrize("key", ["gpu_model", "queue"])
def test_the_rows_add_up_to_the_overviews_totals(operator_client, fleet_jobs, key):
    response = operator_client.get(reverse("dashboard:overview"), WEEK)
    totals, rows = response.context["totals"], breakdown(response, key)["rows"]
    assert sum(row["jobs"] for row in rows) == totals.jobs == 7
    assert sum(row["hours"] for row in rows) == pytest.approx(totals.gpu_hours)
    assert sum(row["unused"] for row in rows) == pytest.approx(totals.unused_gpu_hours)
    assert sum(row["low_util_jobs"] for row in rows) == totals.low_util_jobs
    assert sum(row["spend"] for row in rows) == pytest.approx(totals.cost)


def test_h100_reads_first_with_its_unused_hours_and_share(operator_client, fleet_jobs):
    response = operator_client.get(reverse("dashboard:overview"), WEEK)
    first = breakdown(response, "gpu_model")["rows"][0]
    assert first["name"] == "H100-80GB"
    assert (first["jobs"], first["hours"], first["unused"]) == (4, 37.0, 23.0)
    assert first["waste_share"] == pytest.approx(23 / 37)
    page = response.content.decode()
    assert "By GPU model" in page and "By queue" in page
    row = re.search(r">H100-80GB</a>.*?</tr>", page).group(0)
    figures = [
        html.unescape(cell).replace("\xa0", " ")
        for cell in re.findall(r'<td role="cell" class="num"><span>([^<]*)</span>', row)
    ]
    assert figures[:3] == ["37.0", "23.0", "62 %"]  # GPU-hours, unused, share unused
    assert "4 jobs, 2 low-utilization" in row  # at or below 50 %


@pytest.mark.parametrize("key", ["gpu_model", "queue"])
@pytest.mark.parametrize("query", [WEEK, WEEK | {"cluster": "alpha"}])
def test_each_rows_link_lists_exactly_the_jobs_it_counted(operator_client, fleet_jobs, key, query):
    response = operator_client.get(reverse("dashboard:overview"), query)
    page = response.content.decode()
    in_period = [job for job in fleet_jobs if job.start_time < datetime(2026, 11, 23, tzinfo=UTC)]
    if "cluster" in query:
        in_period = [job for job in in_period if job.cluster.name == query["cluster"]]
    for row in breakdown(response, key)["rows"]:
        counted = {job.name for job in in_period if getattr(job, key) == row["value"]}
        assert row["jobs"] == len(counted)
        if not row["value"]:  # no queue recorded: the list has no filter for that, so no link
            assert row["href"] is None
            continue
        assert html.escape(row["href"]) in page
        assert listed(operator_client, row["href"]) == counted, row["value"]


def test_the_empty_queue_is_a_row_of_its_own_not_dropped(operator_client, fleet_jobs):
    response = operator_client.get(reverse("dashboard:overview"), WEEK)
    names = [row["name"] for row in breakdown(response, "queue")["rows"]]
    assert "No queue recorded" in names
    assert "No queue recorded" in response.content.decode()


def test_a_member_sees_their_teams_jobs_only(member_a, fleet_jobs):
    client = Client()
    client.force_login(member_a)
    response = client.get(reverse("dashboard:overview"), WEEK)
    h100 = next(row for row in breakdown(response, "gpu_model")["rows"] if row["value"] == "H100-80GB")
    assert h100["jobs"] == 3  # not team B's
    assert listed(client, h100["href"]) == {"a-h100-1", "a-h100-2", "a-beta-h100"}


def test_with_no_price_set_the_cost_is_a_dash_not_0(operator_client, fleet_jobs):
    page = operator_client.get(reverse("dashboard:overview"), WEEK).content.decode()
    section = page[page.index('id="breakdown"') :]
    assert "no price set in this period" in section
