"""`GET /api/v1/teams/`: the chargeback report (each team's GPU-hours, waste and cost over a period)
as JSON, for people (the teams they may see) and for machine tokens made to read it."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shlex
import subprocess
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from fleet.models import AuditEvent, Cluster, MachineToken
from tests.factories import ClusterFactory, JobFactory
from tests.test_dashboard import WEEK_START, fleet  # noqa: F401  (the fixture, used by name)

pytestmark = pytest.mark.django_db

URL = "/api/v1/teams/"
WEEK = {"from": "2026-11-16", "to": "2026-11-22"}


def figures(report: dict) -> list[tuple]:
    return [
        (t["team"], t["name"], t["jobs"], t["gpu_hours"], t["unused_gpu_hours"], t["waste_share"], t["cost"],
         t["wasted_cost"], t["low_util_jobs"], t["cost_left_out"])
        for t in report["teams"]
    ]  # fmt: skip


def test_the_report_holds_the_teams_csv_figures_for_the_period(client, operator, fleet):  # noqa: F811
    client.force_login(operator)
    report = client.get(URL, WEEK).json()
    assert {k: v for k, v in report.items() if k != "teams"} == {
        "period_start": "2026-11-16",
        "period_end": "2026-11-22",
        "cluster": None,
        "currency": "USD",
    }
    # Team A wasted 6 of its 10 GPU-hours (12 of its 20 USD), team B 2 of 20: most unused first.
    assert figures(report) == [
        ("team-a", "Team A", 1, 10.0, 6.0, 0.6, 20.0, 12.0, 1, ""),
        ("team-b", "Team B", 1, 20.0, 2.0, 0.1, 40.0, 4.0, 0, ""),
    ]
    download = client.get(reverse("dashboard:team-list"), WEEK | {"format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert [(r["team"], float(r["cost"]), float(r["wasted_cost"])) for r in rows] == [
        (t["team"], t["cost"], t["wasted_cost"]) for t in report["teams"]
    ]
    # The week before held only team A's other job; another cluster's jobs are not this cluster's.
    before = client.get(URL, {"from": "2026-11-09", "to": "2026-11-15"}).json()
    assert figures(before) == [("team-a", "Team A", 1, 5.0, 1.0, 0.2, 10.0, 2.0, 0, "")]
    other = ClusterFactory(name="beta")
    JobFactory(cluster=other, team=fleet[0][1].team, start_time=WEEK_START + timedelta(days=1), gpu_hours=3)
    only_beta = client.get(URL, WEEK | {"cluster": "beta"}).json()
    assert only_beta["cluster"] == "beta" and [t["gpu_hours"] for t in only_beta["teams"]] == [3.0]


def test_a_member_reads_their_own_team_only(client, member_a, fleet):  # noqa: F811
    client.force_login(member_a)
    assert [t["team"] for t in client.get(URL, WEEK).json()["teams"]] == ["team-a"]


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"from": "16/11/2026"}, {"from": ["Dates must look like 2026-11-23"]}),
        # Shaped as a date but none in the calendar: "must look like 2026-11-23" was no help.
        ({"from": "2026-11-16", "to": "2026-11-31"}, {"to": ["There is no day 2026-11-31: November 2026 has 30 days"]}),
        ({"from": "2026-02-30"}, {"from": ["There is no day 2026-02-30: February 2026 has 28 days"]}),
        ({"from": "2026-13-01"}, {"from": ["There is no month 13: months run from 01 to 12"]}),
        ({"from": "0000-01-01"}, {"from": ["There is no year 0000: years start at 0001"]}),
        ({"from": "2026-11-22", "to": "2026-11-16"}, {"from": ["The start date is after the end date"]}),
        ({"to": "0001-01-01"}, {"to": ["Dates must lie between 1969-01-01 and 5139-12-31"]}),
        ({"period": "1y"}, {"period": ["Unknown period '1y' (the periods: 7d, 30d, 90d)"]}),
    ],
)
def test_a_period_that_is_no_period_is_a_400_that_names_the_parameter(client, operator, params, problem):
    client.force_login(operator)
    response = client.get(URL, params)
    assert (response.status_code, response.json()) == (400, problem)


def test_machines_read_it_only_with_a_token_made_for_it(client, fleet):  # noqa: F811
    _, push_key = MachineToken.objects.create_key(name="cron")
    _, metrics_key = MachineToken.objects.create_key(name="prometheus", reads_metrics=True)
    billing, report_key = MachineToken.objects.create_key(name="billing", reads_reports=True, pushes_archives=False)
    assert client.get(URL, WEEK).status_code == 401  # nobody
    assert client.get(URL, WEEK, HTTP_AUTHORIZATION="Api-Key not-a-key").status_code == 401
    for key in (push_key, metrics_key):
        assert client.get(URL, WEEK, HTTP_AUTHORIZATION=f"Api-Key {key}").status_code == 403, key
    read = client.get(URL, WEEK, HTTP_AUTHORIZATION=f"Api-Key {report_key}")
    assert read.status_code == 200 and [t["team"] for t in read.json()["teams"]] == ["team-a", "team-b"]
    billing.refresh_from_db()
    assert billing.last_used_at is not None
    # A token made only to read the report reads jobs no more than a push token reads reports (it is a
    # token, not a person), and pushes nothing: that is `pushes_archives`, unticked here
    # (tests/test_api_archives.py pushes with one).
    assert client.get("/api/v1/jobs/", HTTP_AUTHORIZATION=f"Api-Key {report_key}").status_code == 403
    pushed = client.post("/api/v1/archives/", {}, HTTP_AUTHORIZATION=f"Api-Key {report_key}")
    assert pushed.status_code == 403 and pushed.json()["detail"].startswith("This token may not push archives")
    MachineToken.objects.filter(pk=billing.pk).update(revoked=True)
    assert client.get(URL, WEEK, HTTP_AUTHORIZATION=f"Api-Key {report_key}").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_the_tokens_page_example_reads_the_report_over_http(client, live_server, operator, fleet):  # noqa: F811
    """An operator makes a token for a billing script; the curl command the page shows, run against
    the live server, answers the report."""
    client.force_login(operator)
    page = client.post(reverse("fleet:token-list"), {"name": "billing", "reads_reports": "on"}).content.decode()
    token = MachineToken.objects.get(name="billing")
    assert token.reads_reports and not token.reads_metrics and not token.pushes_archives
    assert AuditEvent.objects.get(action="token.create").details == {
        "prefix": token.prefix,
        "pushes_archives": False,
        "reads_metrics": False,
        "reads_reports": True,
        "reads_jobs": False,
    }
    command = html.unescape(re.search(r'<pre class="code" tabindex="0" id="report-example">(.*?)</pre>', page).group(1))
    first, last = re.search(r"\?from=(\S+)&to=(\S+)\"", command).groups()  # last month's first and last day
    month_end = datetime.now(UTC).date().replace(day=1) - timedelta(days=1)
    assert (first, last) == (month_end.replace(day=1).isoformat(), month_end.isoformat())
    command = command.replace("http://testserver", live_server.url).replace(
        f"from={first}&to={last}", "from=2026-11-16&to=2026-11-22"
    )
    answer = subprocess.run([*shlex.split(command), "--silent", "--fail-with-body"], capture_output=True, check=True)
    assert [t["team"] for t in json.loads(answer.stdout)["teams"]] == ["team-a", "team-b"]
    push_only = client.post(reverse("fleet:token-list"), {"name": "cron", "pushes_archives": "on"}).content.decode()
    assert 'id="report-example"' not in push_only and not MachineToken.objects.get(name="cron").reads_reports


def test_a_cluster_that_does_not_exist_is_a_400_naming_it_not_an_empty_report(client, operator, fleet):  # noqa: F811
    client.force_login(operator)
    clusters = sorted(Cluster.objects.values_list("name", flat=True))
    response = client.get(URL, {"cluster": "nope"})
    assert response.status_code == 400
    [message] = response.json()["cluster"]
    assert message == f"There is no cluster named 'nope' (the clusters: {', '.join(clusters)})."
    assert client.get(URL, WEEK | {"cluster": clusters[0]}).status_code == 200
    # The pages say the same words, and show every cluster instead.
    page = client.get(reverse("dashboard:team-list"), {"cluster": "nope"}).content.decode()
    assert "There is no cluster named &#x27;nope&#x27;; showing all clusters." in page


def test_the_report_counts_each_teams_unpriced_jobs_which_its_cost_leaves_out(client, operator, fleet, team_a):  # noqa: F811
    """The pages said which jobs had no GPU-hour price (a cluster imported before anyone priced it)
    and how many GPU-hours the costs left out, but the teams CSV and this report had only
    `cost_left_out` (for currencies without a rate): a chargeback script billed team A 20 USD for
    18 GPU-hours with nothing to say 8 of them were never priced. Each team now says how many of its
    jobs and GPU-hours have no price, in both; the other figures are as they were."""
    gamma = ClusterFactory(name="gamma")
    JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START + timedelta(days=3), gpu_hours=8.0, cost=None)
    client.force_login(operator)

    report = client.get(URL, WEEK).json()
    unpriced = {t["team"]: (t["unpriced_jobs"], t["unpriced_gpu_hours"]) for t in report["teams"]}
    assert unpriced == {"team-a": (1, 8.0), "team-b": (0, 0.0)}
    team_a_row = next(t for t in report["teams"] if t["team"] == "team-a")
    assert (team_a_row["jobs"], team_a_row["gpu_hours"], team_a_row["cost"], team_a_row["cost_left_out"]) == (
        2, 18.0, 20.0, ""
    )  # fmt: skip

    download = client.get(reverse("dashboard:team-list"), WEEK | {"format": "csv"})
    reader = csv.reader(io.StringIO(b"".join(download.streaming_content).decode()))
    header, *rows = list(reader)
    # The columns scripts read by position stay where they were; the new ones come last.
    assert header[:12] == [
        "team", "period_start", "period_end", "jobs", "gpu_hours", "unused_gpu_hours", "waste_share",
        "cost", "wasted_cost", "currency", "low_util_jobs", "cost_left_out",
    ]  # fmt: skip
    assert header[12:14] == ["unpriced_jobs", "unpriced_gpu_hours"]
    assert {row[0]: (int(row[12]), float(row[13])) for row in rows} == unpriced

    # The schema documents both, as every client's reference.
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    row_schema = schema["components"]["schemas"]["TeamReportRow"]
    assert {"unpriced_jobs", "unpriced_gpu_hours"} <= set(row_schema["required"])
    assert row_schema["properties"]["unpriced_jobs"]["type"] == "integer"
    assert "no GPU-hour price" in row_schema["properties"]["unpriced_jobs"]["description"]


def test_dates_win_over_a_period_and_the_schema_says_so(client, operator, fleet):  # noqa: F811
    """`?period=30d&from=2026-11-16` reported from the 16th to the newest data's day, the period not
    read (nor checked): the schema said only 'Instead of dates'."""
    client.force_login(operator)
    both = client.get(URL, {"period": "1y", "from": "2026-11-16", "to": "2026-11-22"}).json()
    assert (both["period_start"], both["period_end"]) == ("2026-11-16", "2026-11-22")
    parameters = client.get("/api/v1/schema/", {"format": "json"}).json()["paths"][URL]["get"]["parameters"]
    described = {parameter["name"]: parameter.get("description", "") for parameter in parameters}
    assert "Not read when `from` or `to` is given" in described["period"]
    assert "default 6 days before `to`" in described["from"]


def test_the_dates_the_report_takes_are_the_ones_the_schema_says(client, operator, fleet):  # noqa: F811
    """`from` and `to` were documented as any date, and a script's `to=0050-12-08` met a 400: the
    schema now says which days the report takes and how far apart, as the 400s do."""
    client.force_login(operator)
    parameters = client.get("/api/v1/schema/", {"format": "json"}).json()["paths"][URL]["get"]["parameters"]
    described = {parameter["name"]: parameter.get("description", "") for parameter in parameters}
    for name, outside in (("from", "1968-12-31"), ("to", "5140-01-01")):
        refused = client.get(URL, {name: outside})
        assert refused.status_code == 400 and "between 1969-01-01 and 5139-12-31" in refused.json()[name][0]
        assert "from 1969-01-01 to 5139-12-31" in described[name], described[name]
    too_long = client.get(URL, {"from": "1970-01-01", "to": "2070-01-01"})
    assert too_long.status_code == 400 and "100 years" in too_long.json()["to"][0]
    assert "less than 100 years after `from`" in described["to"]


def test_every_amount_of_money_is_a_decimal_string_and_the_report_s_numbers_are_deprecated(client, operator, fleet):  # noqa: F811
    """A job's `cost` was a decimal string ("20.00") and the teams report's a JSON number (20.0): a
    script adding a team's jobs up against its report compared a string with a float. Every amount is
    now a decimal string in the currency beside it; the report's numbers stay for the scripts that
    read them, marked deprecated, beside `cost_decimal` and `wasted_cost_decimal`."""
    client.force_login(operator)
    report = client.get(URL, WEEK).json()
    row = report["teams"][0]
    assert (row["team"], row["cost"], row["cost_decimal"], row["wasted_cost"], row["wasted_cost_decimal"]) == (
        "team-a", 20.0, "20.00", 12.0, "12.00"
    )  # fmt: skip
    jobs = client.get("/api/v1/jobs/", {"team": "team-a", "started_after": "2026-11-16T00:00:00Z"}).json()
    assert [job["cost"] for job in jobs["results"]] == ["20.00"]  # the same form as the report's

    schemas = client.get("/api/v1/schema/", {"format": "json"}).json()["components"]["schemas"]
    amounts = {
        (name, key): prop
        for name, schema in schemas.items()
        for key, prop in schema.get("properties", {}).items()
        if key in ("cost", "wasted_cost", "recoverable_cost") or key.endswith("cost_decimal")
    }
    assert {name for name, _ in amounts} == {"Job", "JobDetail", "Finding", "Guidance", "TeamReportRow", "TeamCause"}
    for (name, key), prop in amounts.items():
        if prop.get("deprecated"):
            assert (name, key) in {("TeamReportRow", "cost"), ("TeamReportRow", "wasted_cost")}
            assert prop["description"].startswith(f"Deprecated: `{key}_decimal`")
        else:
            assert (prop["type"], prop["format"]) == ("string", "decimal"), (name, key)
            assert "2 places" in prop["description"] and "currency" in prop["description"], (name, key)


def test_a_team_s_cost_is_the_sum_of_its_jobs_costs_after_a_price_change(client, operator, team_a):
    """Setting a price re-prices the cluster's jobs in one UPDATE, which on SQLite stored GPU-hours x price
    unrounded (0.333333…) in the 2-place cost column: each job was served rounded ("0.33") but the
    report summed the unrounded values, so a billing script adding a team's jobs up found 0.99 where
    the report said 1.00. Stored to the cent, a team's cost is the sum of its jobs' costs."""
    from fleet.models import GpuModelPrice, Job

    cluster = ClusterFactory(name="gamma")
    for _ in range(3):
        JobFactory(cluster=cluster, team=team_a, start_time=WEEK_START + timedelta(days=1), gpu_hours=1 / 3, cost=None)
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="1.00", currency="USD")
    assert sorted(Job.objects.values_list("cost", flat=True)) == [Decimal("0.33")] * 3
    client.force_login(operator)
    [row] = client.get(URL, WEEK).json()["teams"]
    jobs = client.get("/api/v1/jobs/", {"team": "team-a"}).json()["results"]
    assert [job["cost"] for job in jobs] == ["0.33"] * 3
    assert (row["cost_decimal"], row["cost"]) == ("0.99", 0.99)


def test_what_a_cost_leaves_out_comes_by_currency_as_amounts_too(client, operator, fleet):  # noqa: F811
    """`cost_left_out` said it in words ("20.00 EUR; 5.00 GBP"), which a billing script had to parse to
    bill it; `costs_left_out` gives each currency's amount as every amount in the API is, a decimal string."""
    from fleet.models import Job

    (low, busy), _ = fleet
    Job.objects.filter(pk=low.pk).update(currency="EUR")  # no rate to USD: left out of team A's cost
    JobFactory(team=low.team, start_time=WEEK_START + timedelta(days=2), cost="5.25", currency="GBP")
    client.force_login(operator)
    rows = {row["team"]: row for row in client.get(URL, WEEK).json()["teams"]}
    assert rows["team-a"]["cost_left_out"] == "20.00 EUR; 5.25 GBP"
    assert rows["team-a"]["costs_left_out"] == [
        {"currency": "EUR", "amount": "20.00"},
        {"currency": "GBP", "amount": "5.25"},
    ]
    assert rows["team-b"]["costs_left_out"] == [] and rows["team-b"]["cost_left_out"] == ""
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()["components"]["schemas"]
    assert "costs_left_out" in schema["TeamReportRow"]["required"]
    assert schema["Amount"]["properties"]["amount"]["format"] == "decimal"
