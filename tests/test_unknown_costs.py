"""An unknown cost is unknown, not 0: the teams CSV and `GET /api/v1/teams/` leave it empty (null), as the
pages show "–", for a team none of whose jobs of the period has a price, and for a team whose jobs are
priced only in a currency with no exchange rate to the reporting one (its cost is not in any figure)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from tests.factories import JobFactory, TeamFactory
from tests.reading import as_read, table_rows
from tests.test_dashboard import WEEK_START, _finding, fleet  # noqa: F401  (the fixture, by name)

pytestmark = pytest.mark.django_db

WEEK = {"from": "2026-11-16", "to": "2026-11-22"}
COSTS = ("cost", "wasted_cost", "cost_decimal", "wasted_cost_decimal")


def report_rows(client) -> dict[str, dict]:
    response = client.get("/api/v1/teams/", WEEK)
    assert response.status_code == 200
    return {row["team"]: row for row in response.json()["teams"]}


def csv_rows(client) -> dict[str, dict]:
    download = client.get(reverse("dashboard:team-list"), WEEK | {"format": "csv"})
    return {row["team"]: row for row in csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode()))}


def test_a_team_with_no_price_set_has_a_null_cost_in_the_api_and_an_empty_one_in_the_csv(
    client,
    operator,
    fleet,  # noqa: F811
    team_a,
):
    """The report and the CSV said 0 (0.0, "0.00") for a team none of whose jobs of the period has a GPU-hour
    price, where the teams page says "–": a script summing or charting them read the team's GPU time as free.
    Unknown is now null in the JSON and an empty cell in the CSV, by the rule the pages use; a partly priced
    team keeps its priced figure and a team priced at 0 its 0."""
    from fleet.models import Cluster, Job

    (_, busy), _ = fleet
    Job.objects.filter(pk=busy.pk).update(cost=None, currency="")  # team B: none priced
    gamma = Cluster.objects.create(name="gamma")  # team A: one job priced, one not
    JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START + timedelta(days=3), gpu_hours=8.0, cost=None)
    free = TeamFactory(slug="team-c", name="Team C")  # priced at 0: a figure, 0
    JobFactory(team=free, start_time=WEEK_START + timedelta(days=1), gpu_hours=4, unused_gpu_hours=1, cost="0.00")
    client.force_login(operator)

    api = report_rows(client)
    assert {key: api["team-b"][key] for key in COSTS} == dict.fromkeys(COSTS)
    assert (api["team-b"]["unpriced_jobs"], api["team-b"]["jobs"]) == (1, 1)  # and why
    assert [api["team-a"][key] for key in COSTS] == [20.0, 12.0, "20.00", "12.00"]
    assert [api["team-c"][key] for key in COSTS] == [0.0, 0.0, "0.00", "0.00"]

    rows = csv_rows(client)
    assert (rows["team-b"]["cost"], rows["team-b"]["wasted_cost"], rows["team-b"]["unpriced_jobs"]) == ("", "", "1")
    assert (rows["team-a"]["cost"], rows["team-a"]["wasted_cost"]) == ("20.0", "12.0")
    assert (rows["team-c"]["cost"], rows["team-c"]["wasted_cost"]) == ("0.0", "0.0")


def test_the_schema_says_a_team_s_cost_may_be_null(client, operator):
    client.force_login(operator)
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    row = schema["components"]["schemas"]["TeamReportRow"]["properties"]
    for key in COSTS:
        assert row[key].get("nullable") is True, (key, row[key])
        assert "null when" in row[key]["description"], (key, row[key]["description"])


def test_a_team_priced_only_in_a_currency_without_a_rate_has_no_cost_figure_anywhere(
    client,
    operator,
    fleet,  # noqa: F811
):
    """A team whose jobs of the period are all priced in EUR, with no EUR rate to USD, read "0" on the teams
    page and 0.0 in the CSV and the report (its EUR left out of every figure): GPU time that cost 20 EUR read as
    free. Its cost is unknown in USD: "–" on the teams and causes pages, null in the report, an empty cell in the
    CSV, sorted after the priced teams; `cost_left_out` still says the 20 EUR. With a rate, it is converted."""
    from fleet.models import ExchangeRate, Job
    from triage.taxonomy import Category

    (low, busy), _ = fleet
    Job.objects.filter(pk=low.pk).update(currency="EUR")  # team A's only job this week
    finding = _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    finding.cost, finding.currency = Decimal("6.00"), "EUR"
    finding.save()
    client.force_login(operator)

    html = as_read(client.get(reverse("dashboard:team-list"), WEEK | {"sort": "cost"}).content.decode())
    rows = table_rows(html, "Teams")
    assert [row[0] for row in rows] == ["Team B", "Team A"]  # the unknown cost last
    no_rate = "– (no exchange rate set in this period)"
    assert rows[1][4:6] == [no_rate, no_rate], rows
    causes = as_read(client.get(reverse("dashboard:category-list"), WEEK).content.decode())
    costs = {row[1]: row[4] for row in table_rows(causes, "The 15 causes of idle GPUs")}
    assert costs[Category.MODEL_CHECKPOINTING.label] == no_rate

    api = report_rows(client)
    assert {key: api["team-a"][key] for key in COSTS} == dict.fromkeys(COSTS)
    assert api["team-a"]["cost_left_out"] == "20.00 EUR"
    assert [api["team-b"][key] for key in COSTS] == [40.0, 4.0, "40.00", "4.00"]
    csv_a = csv_rows(client)["team-a"]
    assert (csv_a["cost"], csv_a["wasted_cost"], csv_a["cost_left_out"], csv_a["cost_left_out_EUR"]) == (
        "", "", "20.00 EUR", "20.00"
    )  # fmt: skip

    ExchangeRate.objects.create(currency="EUR", rate="1.5")
    assert [report_rows(client)["team-a"][key] for key in COSTS] == [30.0, 18.0, "30.00", "18.00"]
    assert csv_rows(client)["team-a"]["cost"] == "30.0"


def test_a_period_priced_only_in_currencies_without_a_rate_shows_no_cost_figure_not_0(
    client,
    operator,
    fleet,  # noqa: F811
):
    """Every job of the week priced in EUR or GBP, neither with a rate to USD: the Cost cards read "0 USD"."""
    from fleet.models import Job

    (low, busy), _ = fleet
    Job.objects.filter(pk=low.pk).update(currency="EUR")
    Job.objects.filter(pk=busy.pk).update(currency="GBP")
    client.force_login(operator)
    html = as_read(client.get(reverse("dashboard:overview"), WEEK).content.decode())
    for label in ("Cost", "Wasted cost"):
        section = html.split(f"<h2>{label}</h2>")[1].split("</section>")[0]
        assert '<p class="value">–</p>' in section, (label, section)
        assert '<p class="change muted">no exchange rate set in this period</p>' in section, (label, section)
    assert "Costs in EUR and GBP (20 EUR and 40 GBP in this period) are left out" in html
