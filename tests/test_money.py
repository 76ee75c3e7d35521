"""Money is computed and rounded one way (`fleet.money.cost_of`: exact decimal arithmetic, to the cent,
half a cent up), so the same GPU-hours at the same price are the same amount wherever they are shown:
an imported job and the same job re-priced, a finding's cost and what its fix would recover, on the job
page, in the API and beside the digest's hours."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.template.defaultfilters import floatformat
from django.urls import reverse

from fleet.models import Cluster, GpuModelPrice, Job
from fleet.money import cost_of
from tests.conftest import write_zip
from tests.factories import ClusterFactory, JobFactory
from tests.reading import table_rows
from tests.test_ingest import run_command
from triage import services
from triage.digests import services as digests
from triage.digests import weeks
from triage.models import Finding
from triage.rules import TriageResult
from triage.rules.registry import Finding as RuleFinding
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("gpu_hours", "price", "cost"),
    [
        (0.125, "1.00", "0.13"),  # half a cent: up, where quantize's default (half to even) made 0.12
        (0.145, "1.00", "0.15"),  # and where it made 0.14
        (1.005, "1.00", "1.01"),  # the float is 1.00499999999999989…: its decimal (repr) is what is priced
        (0.1 + 0.2, "10.00", "3.00"),  # 0.30000000000000004 h: not a cent more
        (1 / 3, "1.00", "0.33"),
        (0.0, "2.50", "0.00"),
        (10**9, "999999.9999", "999999999900000.00"),  # the largest hours at the largest price: exact
    ],
)
def test_one_rule_prices_gpu_hours_to_the_cent_half_a_cent_up(gpu_hours, price, cost):
    assert cost_of(gpu_hours, Decimal(price)) == Decimal(cost)
    assert str(cost_of(gpu_hours, Decimal(price))) == cost
    assert cost_of(gpu_hours, None) is None


def archive(cluster: str) -> dict[str, str]:
    manifest = {"format": "fleet-archive", "version": 1, "cluster": cluster, "created_at": "2026-11-20T00:00:00Z"}
    jobs = (
        "job_id,user,team,gpu_count,start_time,end_time\n"
        "half,ann,vision,2,2026-11-02T10:00:00Z,2026-11-02T10:03:45Z\n"  # 2 x 225 s = 0.125 GPU-hours
        "float,ann,vision,1,2026-11-02T10:00:00Z,2026-11-02T11:00:18Z\n"  # 3618 s = 1.005 GPU-hours
        "third,bob,nlp,1,2026-11-02T10:00:00Z,2026-11-02T10:20:00Z\n"  # 1/3 GPU-hour
    )
    return {"manifest.json": json.dumps(manifest), "jobs.csv": jobs}


def costs(cluster: str) -> dict[str, str]:
    return {job.external_id: f"{job.cost} {job.currency}" for job in Job.objects.filter(cluster__name=cluster)}


def test_an_imported_job_and_the_same_job_re_priced_carry_the_same_amount(tmp_path):
    """An import priced a job with Decimal's quantize (half a cent to even: 0.125 GPU-hours at 1.00 was
    0.12) and a price change re-priced it in one SQL UPDATE (binary floating point, half away from zero:
    0.13), so a job's cost moved by a cent when an operator saved its price unchanged, and a job imported
    after a price change cost a cent less than the same job imported before it."""
    before, after = Cluster.objects.create(name="before"), Cluster.objects.create(name="after")
    price = GpuModelPrice.objects.create(cluster=before, gpu_model="", price_per_gpu_hour="2.00", currency="EUR")
    GpuModelPrice.objects.create(cluster=after, gpu_model="", price_per_gpu_hour="1.00", currency="EUR")
    assert run_command(write_zip(tmp_path / "before.zip", archive("before")))[0] == 0
    assert run_command(write_zip(tmp_path / "after.zip", archive("after")))[0] == 0
    assert costs("before") == {"half": "0.25 EUR", "float": "2.01 EUR", "third": "0.67 EUR"}
    imported = {"half": "0.13 EUR", "float": "1.01 EUR", "third": "0.33 EUR"}
    assert costs("after") == imported

    price.price_per_gpu_hour = Decimal("1.00")
    price.save()  # re-prices the cluster's jobs
    assert costs("before") == imported
    price.save()  # saved unchanged: nothing moves
    assert costs("before") == imported
    GpuModelPrice.objects.get(cluster=after).save()
    assert costs("after") == imported


def test_deleting_the_price_a_job_was_imported_at_leaves_it_unpriced_and_restoring_it_gives_the_amount_back(tmp_path):
    cluster = Cluster.objects.create(name="c1")
    price = GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="1.00", currency="USD")
    assert run_command(write_zip(tmp_path / "a.zip", archive("c1")))[0] == 0
    imported = costs("c1")
    price.delete()
    assert set(costs("c1").values()) == {"None "}
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="1.00", currency="USD")
    assert costs("c1") == imported


WEEK = "2026-W47"


class Seen:
    """The evidence a triage stores of a job, as little as the job page reads."""

    def summary(self) -> dict:
        return {"notes": []}


def triaged(monkeypatch, job: Job, hours: dict[Category, float]) -> None:
    """Triage `job` as if the rules had found these causes with these GPU-hours."""
    findings = [
        RuleFinding(category=category, sub_cause="", confidence=0.9, summary=f"{category.label} seen.", gpu_hours=h)
        for category, h in hours.items()
    ]
    result = TriageResult("classified", "", findings, 20.0, 1.0, job.unused_gpu_hours)
    monkeypatch.setattr(services, "evaluate_job", lambda job, rule_set: (Seen(), result))
    services.triage_job(job)


def shown(client, job: Job) -> dict:
    """What the job page, the API and the team's digest say of each cause's hours and money."""
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    api = client.get(f"/api/v1/jobs/{job.pk}/").json()["findings"]
    _, text, _ = digests.render_triplet("team-digest", digests.team_context(job.team, weeks.parse_week(WEEK)))
    return {
        # GPU-hours to the tenth on the page, as the jobs list and the digest write them; money to the cent.
        "page": re.findall(r"<strong>([\d.]+)\u00a0GPU-hours</strong> \(([\d.]+)\u00a0(\w+)\)", page),
        "page_recoverable": re.findall(
            r"Recoverable for this job: ([\d.]+)\u00a0GPU-hours \(([\d.]+)\u00a0(\w+)\)", page
        ),
        "api": [(floatformat(f["gpu_hours"], 2), f["cost"], f["currency"]) for f in api],
        "api_recoverable": [
            (floatformat(g["recoverable_gpu_hours"], 2), g["recoverable_cost"], g["currency"])
            for g in (f["guidance"] for f in api)
        ],
        "digest": re.findall(r"\): ([\d.]+) recoverable GPU-hours", text),
    }


def test_the_job_page_writes_a_finding_s_hours_and_what_its_fix_recovers_as_one_figure(
    client, member_a, team_a, monkeypatch
):
    """51.8464 GPU-hours showed as "51.8 GPU-hours (103.69 USD)" over "Recoverable for this job: 51.9
    GPU-hours (103.69 USD)": the guidance keeps the hours to 2 places (51.85), and the page rounded that
    again, to the tenth. One amount, one figure: both are the finding's hours, rounded once."""
    cluster = ClusterFactory(name="once")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="2.00", currency="USD")
    start = datetime(2026, 11, 17, 9, tzinfo=UTC)
    job = JobFactory(
        cluster=cluster, team=team_a, gpu_count=24, start_time=start, end_time=start + timedelta(hours=4),
        gpu_hours=96.0, unused_gpu_hours=66.0, mean_gpu_util=33.0, cost=Decimal("192.00"), currency="USD",
    )  # fmt: skip
    triaged(monkeypatch, job, {Category.DATA_EXCHANGE: 51.8464, Category.HOST_GPU_TRANSFER: 12.3531})
    client.force_login(member_a)
    seen = shown(client, job)
    assert seen["page"] == [("51.8", "103.69", "USD"), ("12.4", "24.71", "USD")]
    assert seen["page_recoverable"] == seen["page"]


def test_a_finding_s_cost_and_what_its_fix_recovers_are_one_amount_on_the_job_page_in_the_api_and_the_digest(
    client, member_a, team_a, monkeypatch
):
    """A finding's cost was its hours times the job's cost over the job's hours (a price off by the
    cent's rounding), rounded half to even (2.125 GPU-hours at 1.00: 2.12), while its fix's
    `recoverable_cost` rounded the hours to 4 places first, and a price change set both to the job's
    cost times a float share; the job page showed "2.13 GPU-hours (2.12 USD)" above "Recoverable for this
    job: 2.12 GPU-hours". They are one amount: the finding's hours at the job's price, by `cost_of`."""
    cluster = ClusterFactory(name="money")
    price = GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="1.00", currency="USD")
    start = datetime(2026, 11, 17, 9, tzinfo=UTC)
    job = JobFactory(
        cluster=cluster, team=team_a, gpu_count=1, start_time=start, end_time=start + timedelta(hours=4, seconds=36),
        gpu_hours=4.01, unused_gpu_hours=3.0, mean_gpu_util=20.0, cost=Decimal("4.01"), currency="USD",
    )  # fmt: skip
    triaged(monkeypatch, job, {Category.DATA_PREPROCESSING: 2.125, Category.UNRELEASED_JOB: 0.505})
    client.force_login(member_a)
    expected = [("2.13", "2.13", "USD"), ("0.51", "0.51", "USD")]  # half a cent (and hour) up, each
    on_page = [("2.1", "2.13", "USD"), ("0.5", "0.51", "USD")]  # the same hours, to the tenth
    seen = shown(client, job)
    assert seen == {
        "page": on_page,
        "page_recoverable": on_page,
        "api": expected,
        "api_recoverable": expected,
        "digest": ["2.6"],  # 2.125 + 0.505 = 2.63, to the tenth the digest writes hours in
    }

    price.price_per_gpu_hour = Decimal("3.00")
    price.save()  # re-prices the job and its findings
    job.refresh_from_db()
    assert job.cost == Decimal("12.03")
    repriced = [("2.13", "6.38", "USD"), ("0.51", "1.52", "USD")]  # 6.375 and 1.515: half a cent up
    seen = shown(client, job)
    assert (seen["api"], seen["api_recoverable"]) == (repriced,) * 2
    assert seen["page"] == seen["page_recoverable"] == [("2.1", "6.38", "USD"), ("0.5", "1.52", "USD")]
    # Triaged again at the new price, the findings are what the re-price made them.
    triaged(monkeypatch, job, {Category.DATA_PREPROCESSING: 2.125, Category.UNRELEASED_JOB: 0.505})
    assert sorted(Finding.objects.filter(job=job).values_list("cost", flat=True)) == [
        Decimal("1.52"),
        Decimal("6.38"),
    ]
    assert shown(client, job)["api"] == repriced


def test_amounts_stored_before_the_one_rule_are_brought_to_it_by_the_migration(team_a):
    """Migration triage 0004: a job imported before the upgrade kept its half-to-even cent (0.12 for 0.125
    GPU-hours at 1.00) where the same job imported after it costs 0.13, and a finding kept its cost from
    the job's rounded cost over its hours, beside a fix's recoverable_cost from hours rounded to 4 places."""
    import importlib

    from django.apps import apps

    from triage.models import JobTriage, RuleSet

    migration = importlib.import_module("triage.migrations.0004_price_by_one_rule")
    cluster, unpriced = ClusterFactory(name="old"), ClusterFactory(name="unpriced")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="1.00", currency="EUR")
    job = JobFactory(cluster=cluster, team=team_a, gpu_hours=4.125, cost=Decimal("4.12"), currency="EUR")
    other = JobFactory(cluster=unpriced, team=team_a, gpu_hours=2.0, cost=None, currency="")
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    finding = Finding.objects.create(
        result=result, job=job, rule_set=result.rule_set, category=Category.UNRELEASED_JOB, confidence=0.9,
        summary="s", gpu_hours=2.125, cost=Decimal("2.12"), currency="EUR", evidence={},
        guidance={"change": "Exit.", "recoverable_gpu_hours": 2.12, "recoverable_cost": "2.12", "currency": "EUR"},
    )  # fmt: skip
    migration.forwards(apps, None)
    job.refresh_from_db()
    other.refresh_from_db()
    finding.refresh_from_db()
    assert (job.cost, job.currency) == (Decimal("4.13"), "EUR") and (other.cost, other.currency) == (None, "")
    assert (finding.cost, finding.currency) == (Decimal("2.13"), "EUR")
    assert finding.guidance == {
        "change": "Exit.",
        "recoverable_gpu_hours": 2.13,
        "recoverable_cost": "2.13",
        "currency": "EUR",
    }


def test_a_total_of_half_a_unit_is_the_same_whole_amount_on_the_cards_the_teams_table_and_the_digest(
    client, operator, team_a
):
    """Totals are shown in whole units; the cards and digests wrote them with Python's `{:,.0f}` (half to
    even: 2.50 was "2") and the teams, causes and top-causes tables with `floatformat:0` (half up: "3"), so
    the teams page said 3 where the team's own page and its digest said 2. One rule (`whole`): "3"."""
    from triage.digests.models import DigestKind

    start = datetime(2026, 11, 17, tzinfo=UTC)
    for cost in ("0.25", "2.25"):  # 2.50 in all, and every unused hour wasted: 2.50 wasted too
        JobFactory(
            team=team_a, start_time=start, end_time=start + timedelta(hours=1), gpu_count=1, gpu_hours=1.0,
            coverage=1.0, unused_gpu_hours=1.0, cost=Decimal(cost), currency="USD",
        )  # fmt: skip
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    cards = {c["label"]: c["value"] for c in client.get(reverse("dashboard:overview"), week).context["cards"]}
    team_page = client.get(reverse("dashboard:team-detail", args=[team_a.slug]), week).context["cards"]
    team_cards = {c["label"]: c["value"] for c in team_page}
    teams = table_rows(client.get(reverse("dashboard:team-list"), week).content.decode(), "Teams")
    cells = next(row[1:] for row in teams if row[0] == "Team A")
    digest = {k.label: k.value_text for k in digests.build_context(DigestKind.TEAM, WEEK, team_a)["kpis"]}
    report = client.get("/api/v1/teams/", week).json()["teams"][0]
    assert (cards["Cost"], cards["Wasted cost"]) == ("3", "3")
    assert (team_cards["Cost"], team_cards["Wasted cost"]) == ("3", "3")
    assert cells[3:5] == ["3", "3"]  # cost, wasted cost
    assert (digest["Cost"], digest["Wasted cost"]) == ("3", "3")
    assert (report["cost_decimal"], report["wasted_cost_decimal"]) == ("2.50", "2.50")


def test_what_a_total_leaves_out_for_want_of_a_rate_is_said_in_whole_units_by_the_same_rule():
    """The note under a total that left a currency out wrote its amount with `{:,.0f}` (2.50 EUR: "2 EUR"),
    where the cards and tables write 2.50 as 3."""
    from triage.dashboard import queries

    start = datetime(2026, 11, 17, tzinfo=UTC)
    JobFactory(start_time=start, cost=Decimal("4.00"), currency="USD")
    for cost in ("0.25", "2.25"):
        JobFactory(start_time=start, cost=Decimal(cost), currency="EUR")
    note = queries.pricing(Job.objects.all()).note
    assert note.startswith("Costs in EUR (3 EUR) are left out of the cost figures"), note


def test_the_api_schema_says_a_finding_s_cost_and_its_fix_s_recoverable_cost_are_one_amount(client, operator):
    client.force_login(operator)
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()["components"]["schemas"]
    cost = schema["Finding"]["properties"]["cost"]["description"]
    recoverable = schema["Guidance"]["properties"]["recoverable_cost"]["description"]
    assert "`recoverable_cost`, the same amount" in cost and "half a cent up" in cost
    assert "the finding's `cost`, the same amount" in recoverable
    hours = schema["Guidance"]["properties"]["recoverable_gpu_hours"]["description"]
    assert "recoverable GPU-hours (`gpu_hours`)" in hours and "attributed" not in hours  # the pages' and digests' word
