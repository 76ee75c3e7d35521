"""/metrics: the service's health and the fleet's recent waste in Prometheus' text format, for an
operator or a machine token made to read it, and scraped by a real Prometheus (Debian's package)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
import requests
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from fleet.models import AuditEvent, IngestRun, MachineToken
from tests.factories import JobFactory
from tests.test_connectors_prometheus import _binaries, running_prometheus
from tests.waiting import wait_for
from triage import monitoring
from triage.models import Feedback, Finding, JobTriage, RuleSet
from triage.taxonomy import Category

NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


def samples(text: str) -> dict[tuple, float]:
    """{(metric name, ((label, value), ...)): value} of an exposition."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.fixture
def recent(team_a, team_b):
    """In the seven days before NOW: team A wastes 6 of 10 GPU-hours in a job with a checkpointing
    finding; team B wastes 2 of 20 in an untriaged job. Older jobs are outside the window."""
    low = JobFactory(
        team=team_a, start_time=NOW - timedelta(days=2), gpu_hours=10, coverage=1.0, unused_gpu_hours=6,
        mean_gpu_util=40, cost="20.00",
    )  # fmt: skip
    JobFactory(
        team=team_b, start_time=NOW - timedelta(days=1), gpu_hours=20, coverage=1.0, unused_gpu_hours=2,
        mean_gpu_util=90, cost="40.00",
    )  # fmt: skip
    JobFactory(team=team_a, start_time=NOW - timedelta(days=9), gpu_hours=100, unused_gpu_hours=90, mean_gpu_util=10)
    result = JobTriage.objects.create(job=low, rule_set=RuleSet.current(), status="classified", is_current=True)
    Finding.objects.create(
        result=result, job=low, rule_set=result.rule_set, category=Category.MODEL_CHECKPOINTING, confidence=0.9,
        summary="s", gpu_hours=3.0, evidence={}, guidance={},
    )  # fmt: skip
    IngestRun.objects.create(status=IngestRun.Status.FAILED, finished_at=NOW - timedelta(hours=1))
    return low


def test_the_figures_are_the_last_seven_days_of_the_fleet_and_the_services_health(recent):
    got = samples(monitoring.exposition(NOW).decode())
    assert got[("fleet_triage_jobs", ())] == 3
    assert got[("fleet_triage_jobs_without_triage", ())] == 2  # the workers have not triaged these
    assert got[("fleet_triage_team_gpu_hours", (("team", "team-a"),))] == 10  # the 9-day-old job is outside
    assert got[("fleet_triage_team_unused_gpu_hours", (("team", "team-b"),))] == 2
    assert got[("fleet_triage_team_low_utilization_jobs", (("team", "team-a"),))] == 1
    assert got[("fleet_triage_team_wasted_cost", (("currency", "USD"), ("team", "team-a")))] == 12  # 20 × 6/10
    assert got[("fleet_triage_cause_gpu_hours", (("category", "model_checkpointing"),))] == 3
    assert got[("fleet_triage_cause_jobs", (("category", "api_misuse"),))] == 0  # every cause, found or not
    assert got[("fleet_triage_low_utilization_jobs_triaged", ())] == 1
    assert got[("fleet_triage_low_utilization_jobs_unclassified", ())] == 0
    assert got[("fleet_triage_ingest_runs", (("status", "failed"),))] == 1
    assert got[("fleet_triage_ingest_runs", (("status", "succeeded"),))] == 0
    finished = got[("fleet_triage_ingest_last_finished_timestamp_seconds", (("status", "failed"),))]
    assert finished == (NOW - timedelta(hours=1)).timestamp()


def test_a_team_with_no_cost_figure_has_no_wasted_cost_sample_not_0(recent, team_b):
    """`team_wasted_cost` said 0 for a team whose week had no cost figure (the pages' "–": no GPU-hour
    price, or priced only in a currency without an exchange rate), which a dashboard charted as free
    waste. Such a team has no sample, as Prometheus says "unknown"; its other figures stay."""
    from fleet.models import Job

    Job.objects.filter(team=team_b).update(cost=None, currency="")
    got = samples(monitoring.exposition(NOW).decode())
    wasted = {dict(labels)["team"]: value for (name, labels), value in got.items() if name.endswith("team_wasted_cost")}
    assert wasted == {"team-a": 12}
    assert got[("fleet_triage_team_unused_gpu_hours", (("team", "team-b"),))] == 2
    Job.objects.filter(team=team_b).update(cost="40.00", currency="GBP")  # no GBP rate to USD
    got = samples(monitoring.exposition(NOW).decode())
    assert {dict(labels)["team"] for (name, labels) in got if name.endswith("team_wasted_cost")} == {"team-a"}


def test_the_answers_on_each_cause_are_counted_leaving_out_jobs_the_reader_rates_blind(recent, member_a, operator):
    other = JobFactory(team=recent.team, start_time=NOW - timedelta(days=30))
    for job, user, verdict in ((recent, member_a, "wrong"), (recent, operator, "right"), (other, member_a, "wrong")):
        Feedback.objects.create(job=job, category=Category.MODEL_CHECKPOINTING, user=user, verdict=verdict)
    got = samples(monitoring.exposition(NOW).decode())

    def answers(verdict, category="model_checkpointing"):
        return got[("fleet_triage_cause_answers", (("category", category), ("verdict", verdict)))]

    assert (answers("right"), answers("wrong"), answers("expected")) == (1, 2, 0)  # all answers, old jobs too
    assert answers("wrong", "api_misuse") == 0  # every cause and answer, given or not
    got = samples(monitoring.exposition(NOW, hidden=frozenset({recent.pk})).decode())
    assert (answers("right"), answers("wrong")) == (0, 1)


def test_metrics_are_for_operators_and_tokens_made_to_read_them(client, operator, member_a, recent):
    url = reverse("metrics")
    pusher, push_key = MachineToken.objects.create_key(name="cron")
    _, metrics_key = MachineToken.objects.create_key(name="prometheus", reads_metrics=True)
    assert client.get(url).status_code == 403  # anonymous: a refusal a scraper can read, not a login page
    assert client.get(url, HTTP_AUTHORIZATION=f"Api-Key {push_key}").status_code == 403
    assert client.get(url, HTTP_AUTHORIZATION="Api-Key not-a-key").status_code == 403
    scraped = client.get(url, HTTP_AUTHORIZATION=f"Api-Key {metrics_key}")
    assert scraped.status_code == 200 and scraped["Content-Type"].startswith("text/plain; version=")
    assert "fleet_triage_team_gpu_hours" in scraped.content.decode()
    MachineToken.objects.filter(name="prometheus").update(revoked=True)
    assert client.get(url, HTTP_AUTHORIZATION=f"Api-Key {metrics_key}").status_code == 403
    client.force_login(member_a)
    assert client.get(url).status_code == 403
    client.force_login(operator)
    assert client.get(url).status_code == 200
    assert client.post(url).status_code == 405


def test_an_operator_makes_a_token_for_prometheus_on_the_tokens_page(client, operator):
    client.force_login(operator)
    page = client.post(reverse("fleet:token-list"), {"name": "prometheus", "reads_metrics": "on"}).content.decode()
    token = MachineToken.objects.get(name="prometheus")
    assert token.reads_metrics and 'id="scrape-config"' in page and "authorization: {type: Api-Key" in page
    assert AuditEvent.objects.get(action="token.create").details == {
        "prefix": token.prefix,
        "pushes_archives": False,  # its box unticked: a Prometheus server pushes nothing
        "reads_metrics": True,
        "reads_reports": False,
        "reads_jobs": False,
    }
    page = client.post(reverse("fleet:token-list"), {"name": "cron", "pushes_archives": "on"}).content.decode()
    assert not MachineToken.objects.get(name="cron").reads_metrics and 'id="scrape-config"' not in page


@pytest.mark.django_db(transaction=True)
def test_a_real_prometheus_scrapes_the_metrics_with_a_token(live_server, tmp_path, team_a):
    """Debian's Prometheus scrapes the live server every second as the tokens page tells it to:
    with the metrics token the target is up and its figures are queryable; with a token that only
    pushes archives the target is down (refused), and nothing of it is stored."""
    prometheus, _ = _binaries()
    JobFactory(team=team_a, start_time=timezone.now() - timedelta(hours=2), gpu_hours=8, unused_gpu_hours=5)
    _, metrics_key = MachineToken.objects.create_key(name="prometheus", reads_metrics=True)
    _, push_key = MachineToken.objects.create_key(name="cron")
    target = urlsplit(live_server.url).netloc
    jobs = "\n".join(
        f"""  - job_name: {name}
    scrape_interval: 1s
    static_configs: [{{targets: ["{target}"]}}]
    authorization: {{type: Api-Key, credentials: "{key}"}}"""
        for name, key in (("fleet-triage", metrics_key), ("pusher", push_key))
    )
    config = f"scrape_configs:\n{jobs}\n"
    with running_prometheus(prometheus, tmp_path, config, f"--storage.tsdb.path={tmp_path / 'tsdb'}") as url:

        def query(expression: str) -> dict[str, float]:
            answer = requests.get(f"{url}/api/v1/query", params={"query": expression}, timeout=5)
            return {r["metric"].get("job", ""): float(r["value"][1]) for r in answer.json()["data"]["result"]}

        def prometheus_log() -> str:
            return (tmp_path / "prometheus.log").read_text()[-3000:]

        up = wait_for(
            "both targets scraped",
            lambda: query("up"),
            60,
            until=lambda up: len(up) >= 2,
            every=0.5,
            detail=prometheus_log,
        )
        assert up == {"fleet-triage": 1.0, "pusher": 0.0}, prometheus_log()
        assert query('fleet_triage_team_unused_gpu_hours{team="team-a"}') == {"fleet-triage": 5.0}
        assert query("fleet_triage_jobs") == {"fleet-triage": 1.0}
