"""Idle alerts: a job still running whose GPUs have all idled past the operators' threshold at the end
of its series gets one email, through a real SMTP server on loopback, to its team digest's recipients;
pulling it again sends none, a busy, finished or unsampled job none, an unsubscribed or opted-out
recipient none; a job that worked and idled again alerts again; a failed alert is retried from the
deliveries page."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from fleet.models import Cluster, GpuModelPrice, Job
from tests.conftest import write_zip
from tests.factories import OwnerFactory, UserFactory
from tests.test_digests import BASE_URL, smtp  # noqa: F401 (smtp: the loopback SMTP server fixture)
from tests.test_ingest import run_command
from triage.digests import alerts, services
from triage.digests.models import AlertSettings, Delivery, DigestKind, Subscription, TeamWebhook
from triage.models import Finding

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def archive(tmp_path, name: str, jobs: list[dict], start: datetime = START) -> object:
    """An archive of `jobs`, all started at `start`: {id, state, minutes, util(minute) -> % for both GPUs,
    [skip(minute)]}."""
    manifest = {"format": "fleet-archive", "version": 1, "cluster": "c1", "created_at": "2026-11-20T12:00:00Z"}
    rows = ["job_id,user,team,gpu_count,gpu_model,start_time,end_time,state,name"]
    samples = ["job_id,timestamp,host,gpu,gpu_util"]
    for job in jobs:
        end = start + job["minutes"] * MINUTE
        rows.append(f"{job['id']},ana,team-a,2,A100,{_stamp(start)},{_stamp(end)},{job['state']},train-{job['id']}")
        for minute in range(job["minutes"] + 1) if job["util"] else ():
            if job.get("skip", lambda m: False)(minute):
                continue
            for gpu in (0, 1):
                samples.append(f"{job['id']},{_stamp(start + minute * MINUTE)},node1,{gpu},{job['util'](minute)}")
    members = {"manifest.json": json.dumps(manifest), "jobs.csv": "\n".join(rows) + "\n"}
    if len(samples) > 1:
        members["metrics.csv"] = "\n".join(samples) + "\n"
    return write_zip(tmp_path / name, members)


def busy_then_idle(minute: int) -> float:
    return 85.0 if minute < 30 else 1.0  # idle from 10:30


@pytest.fixture(autouse=True)
def any_sample_age(settings, request):
    """These tests' jobs ran on 2026-11-20 (a fixed date, so the texts they assert do not depend on the
    day the tests run): they lift the limit on the age of a job's last sample, which the tests of that
    limit keep (`keeps_sample_age`)."""
    if "keeps_sample_age" not in request.keywords:
        settings.IDLE_ALERT_MAX_AGE_MINUTES = 0


@pytest.fixture
def inbox(request):
    """The test's loopback SMTP server (`tests.test_digests.smtp`) and what it received."""
    return request.getfixturevalue("smtp")


@pytest.fixture
def priced(db):
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour=Decimal("2.50"), currency="USD")
    return cluster


def ingest(path, capture):
    with capture(execute=True):
        code, _out, err = run_command(path)
    assert code == 0, err


def alert_mails(inbox, address: str) -> list:
    return [m for m in inbox.to(address) if m["Subject"].startswith("Idle now")]


def test_a_running_idle_job_alerts_its_team_once_with_what_it_wastes(
    tmp_path,
    storage_dir,
    inbox,
    priced,
    team_a,
    member_a,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    running = {"id": "101", "state": "RUNNING", "minutes": 120, "util": busy_then_idle}
    ingest(archive(tmp_path, "a.zip", [running]), django_capture_on_commit_callbacks)

    mails = alert_mails(inbox, member_a.email)
    assert len(mails) == 1
    mail = mails[0]
    job = Job.objects.get(external_id="101")
    assert mail["Subject"] == "Idle now: train-101 on c1 has left 2 GPUs (A100) idle for 1 h 30 min (5.00 USD/h)"
    text = mail.get_body(("plain",)).get_content()
    assert "User:     ana" in text and "Cluster:  c1" in text and "GPUs:     2 GPUs (A100)" in text
    assert "since 2026-11-20 10:30 UTC" in text and "below 5 % utilization" in text
    # 2 GPUs at 2.50 an hour each, idle 1.5 hours.
    assert "5.00 USD per hour wasted while it idles (7.50 USD so far)" in text
    job_url = f"{BASE_URL}{reverse('dashboard:job-detail', args=[job.pk])}"
    assert job_url in text and f'href="{job_url}"' in mail.get_body(("html",)).get_content()
    # Triage ran before the check: its finding is the cause named.
    finding = Finding.objects.filter(job=job, result__is_current=True).order_by("-gpu_hours").first()
    assert finding is not None
    assert f"Cause:    {finding.category_enum.label}: " in text
    assert str(mail["List-Unsubscribe"]).strip().startswith(f"<{BASE_URL}/digests/unsubscribe/")
    delivery = Delivery.objects.get(kind=DigestKind.IDLE_ALERT)
    assert (delivery.job, delivery.status, delivery.idle_since) == (job, Delivery.Status.SENT, START + 30 * MINUTE)
    assert delivery.iso_week == "2026-W47" and delivery.team == team_a

    # The next pull brings ten more idle minutes: the job changed, is checked again, but it is the same stretch.
    running["minutes"] = 130
    ingest(archive(tmp_path, "b.zip", [running]), django_capture_on_commit_callbacks)
    assert Job.objects.get(external_id="101").end_time == START + 130 * MINUTE
    assert len(alert_mails(inbox, member_a.email)) == 1
    assert Delivery.objects.filter(kind=DigestKind.IDLE_ALERT).count() == 1
    # The same pull again changes nothing and sends nothing.
    ingest(archive(tmp_path, "c.zip", [running]), django_capture_on_commit_callbacks)
    assert len(alert_mails(inbox, member_a.email)) == 1


def test_an_alerts_costs_are_written_as_the_job_page_writes_them(
    tmp_path,
    storage_dir,
    inbox,
    team_a,
    member_a,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    """A dear GPU: the alert's cost per hour and cost so far have the thousands separator the job page's
    cost has (fleet.money.cents), in the subject, the text and the HTML alike."""
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour=Decimal("1234.56"), currency="USD")
    running = {"id": "101", "state": "RUNNING", "minutes": 120, "util": busy_then_idle}
    ingest(archive(tmp_path, "a.zip", [running]), django_capture_on_commit_callbacks)

    (mail,) = alert_mails(inbox, member_a.email)
    # 2 GPUs at 1,234.56 an hour each, idle 1.5 hours.
    assert mail["Subject"].endswith("(2,469.12 USD/h)")
    text = mail.get_body(("plain",)).get_content()
    assert "2,469.12 USD per hour wasted while it idles (3,703.68 USD so far)" in text
    html = mail.get_body(("html",)).get_content()
    # Each amount on one line with its currency in the HTML part; the text part keeps plain spaces.
    assert "<strong>2,469.12\u00a0USD per hour</strong> wasted while it idles (3,703.68\u00a0USD so far)" in html


def test_a_job_that_works_again_and_idles_again_alerts_again(
    tmp_path,
    storage_dir,
    inbox,
    priced,
    member_a,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    first = {"id": "7", "state": "RUNNING", "minutes": 120, "util": busy_then_idle}
    ingest(archive(tmp_path, "a.zip", [first]), django_capture_on_commit_callbacks)

    def again(minute: int) -> float:
        return 85.0 if minute < 30 or 120 <= minute < 150 else 1.0  # worked 12:00-12:30, idle since

    worked = {"id": "7", "state": "RUNNING", "minutes": 140, "util": again}
    ingest(archive(tmp_path, "b.zip", [worked]), django_capture_on_commit_callbacks)  # busy at the end
    assert len(alert_mails(inbox, member_a.email)) == 1
    idle_again = {"id": "7", "state": "RUNNING", "minutes": 220, "util": again}
    ingest(archive(tmp_path, "c.zip", [idle_again]), django_capture_on_commit_callbacks)
    mails = alert_mails(inbox, member_a.email)
    assert len(mails) == 2 and "idle for 1 h 10 min" in mails[1]["Subject"]
    starts = sorted(Delivery.objects.filter(kind=DigestKind.IDLE_ALERT).values_list("idle_since", flat=True))
    assert starts == [START + 30 * MINUTE, START + 150 * MINUTE]


def test_busy_short_finished_and_unsampled_jobs_send_nothing(
    tmp_path,
    storage_dir,
    inbox,
    priced,
    member_a,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    jobs = [
        {"id": "busy", "state": "RUNNING", "minutes": 120, "util": lambda m: 85.0 if m % 10 else 1.0},
        {"id": "short", "state": "RUNNING", "minutes": 80, "util": busy_then_idle},  # idle 50 min < 60
        {"id": "done", "state": "COMPLETED", "minutes": 120, "util": busy_then_idle},
        {"id": "failed", "state": "FAILED", "minutes": 120, "util": busy_then_idle},
        # Idle 10:30-11:00 and 11:45-12:00, with no samples between: missing data is no idle time.
        {"id": "hole", "state": "RUNNING", "minutes": 120, "util": busy_then_idle, "skip": lambda m: 60 < m < 105},
    ]
    ingest(archive(tmp_path, "a.zip", jobs), django_capture_on_commit_callbacks)
    assert Job.objects.count() == 5
    assert inbox.envelopes == [] and not Delivery.objects.filter(kind=DigestKind.IDLE_ALERT).exists()

    unsampled = archive(tmp_path, "b.zip", [{"id": "nodata", "state": "RUNNING", "minutes": 120, "util": None}])
    ingest(unsampled, django_capture_on_commit_callbacks)
    assert Job.objects.get(external_id="nodata").sample_count == 0
    assert inbox.envelopes == []


def test_the_threshold_and_switch_are_the_operators(
    tmp_path,
    storage_dir,
    inbox,
    priced,
    member_a,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    AlertSettings.objects.update_or_create(pk=1, defaults={"idle_minutes": 45})
    short = {"id": "short", "state": "RUNNING", "minutes": 80, "util": busy_then_idle}  # idle 50 min
    AlertSettings.objects.filter(pk=1).update(enabled=False)
    ingest(archive(tmp_path, "a.zip", [short]), django_capture_on_commit_callbacks)
    assert inbox.envelopes == []
    AlertSettings.objects.filter(pk=1).update(enabled=True)
    short["minutes"] = 81
    ingest(archive(tmp_path, "b.zip", [short]), django_capture_on_commit_callbacks)
    assert len(alert_mails(inbox, member_a.email)) == 1


def test_unsubscribed_and_opted_out_recipients_get_no_alert(
    tmp_path,
    storage_dir,
    inbox,
    priced,
    team_a,
    member_a,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    unsubscribed = OwnerFactory(user=UserFactory(username="uma"), team=team_a).user
    opted_out = OwnerFactory(user=UserFactory(username="otto"), team=team_a).user
    services.set_subscription(unsubscribed, DigestKind.TEAM, team_a, active=False)
    services.set_alerts(opted_out, team_a, alerts=False)
    ingest(
        archive(tmp_path, "a.zip", [{"id": "1", "state": "RUNNING", "minutes": 120, "util": busy_then_idle}]),
        django_capture_on_commit_callbacks,
    )
    assert len(alert_mails(inbox, member_a.email)) == 1
    assert inbox.to(unsubscribed.email) == [] and inbox.to(opted_out.email) == []
    # Opting out of alerts kept the weekly digest.
    assert Subscription.objects.get(user=opted_out).active is True
    assert services.team_recipients(team_a) == [member_a, opted_out]


def test_the_alert_unsubscribe_link_stops_the_alerts_not_the_digest(
    tmp_path,
    storage_dir,
    inbox,
    priced,
    team_a,
    member_a,
    client,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    ingest(
        archive(tmp_path, "a.zip", [{"id": "1", "state": "RUNNING", "minutes": 120, "util": busy_then_idle}]),
        django_capture_on_commit_callbacks,
    )
    (mail,) = alert_mails(inbox, member_a.email)
    link = re.search(r"<(.+)>", mail["List-Unsubscribe"]).group(1).removeprefix(BASE_URL)
    page = client.get(link)
    assert "the idle-job alerts of Team A" in page.content.decode()
    client.post(link, {"List-Unsubscribe": "One-Click"})
    subscription = Subscription.objects.get(user=member_a, team=team_a)
    assert (subscription.active, subscription.alerts) == (True, False)
    assert alerts.alert_recipients(Job.objects.get()) == []


def test_the_settings_page_turns_a_teams_alerts_off_and_on(client, team_a, member_a):
    client.force_login(member_a)
    page = client.get(reverse("digests:settings")).content.decode()
    key = f"alerts:{team_a.pk}"
    assert f'name="alerts" value="{key}" checked' in page
    client.post(reverse("digests:settings"), {"on": [f"team:{team_a.pk}"]})
    subscription = Subscription.objects.get(user=member_a, team=team_a)
    assert (subscription.active, subscription.alerts) == (True, False)
    client.post(reverse("digests:settings"), {"on": [f"team:{team_a.pk}"], "alerts": [key]})
    assert Subscription.objects.get(user=member_a, team=team_a).alerts is True


def test_a_refused_alert_fails_shows_on_the_deliveries_page_and_a_retry_sends_it(
    tmp_path,
    storage_dir,
    inbox,
    settings,
    priced,
    member_a,
    operator,
    client,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    settings.DIGEST_MAX_RETRIES = 0
    inbox.fail_first, inbox.reply = 1, "550 5.1.1 Mailbox unavailable"
    ingest(
        archive(tmp_path, "a.zip", [{"id": "1", "state": "RUNNING", "minutes": 120, "util": busy_then_idle}]),
        django_capture_on_commit_callbacks,
    )
    delivery = Delivery.objects.get(kind=DigestKind.IDLE_ALERT)
    assert delivery.status == Delivery.Status.FAILED and "550" in delivery.last_error
    client.force_login(operator)
    page = client.get(reverse("digests:deliveries"), {"kind": DigestKind.IDLE_ALERT}).content.decode()
    assert "Idle alert: " in page and "c1/1" in page and "Mailbox unavailable" in page
    assert reverse("digests:delivery-retry", args=[delivery.pk]) in page
    client.post(reverse("digests:delivery-retry", args=[delivery.pk]))
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.SENT and delivery.attempts == 2
    assert len(alert_mails(inbox, member_a.email)) == 1


def test_only_operators_see_and_change_the_alert_settings(client, member_a, operator):
    url = reverse("digests:alert-settings")
    client.force_login(member_a)
    assert client.get(url).status_code == 404
    assert client.post(url, {"enabled": "on", "idle_minutes": "5"}).status_code == 404
    client.force_login(operator)
    assert client.get(url).status_code == 200
    assert f'href="{url}"' in client.get(reverse("dashboard:settings")).content.decode()  # found from Settings
    response = client.post(url, {"idle_minutes": "2"})
    assert response.status_code == 200 and "Idle for at least: at least 5 minutes." in response.content.decode()
    response = client.post(url, {"idle_minutes": "lots", "enabled": "on"})
    assert "Idle for at least: give a whole number of minutes" in response.content.decode()
    client.post(url, {"idle_minutes": "30"})  # the box left unticked: off
    current = AlertSettings.current()
    assert (current.enabled, current.idle_minutes) == (False, 30)


def test_a_blind_rater_gets_the_alert_without_the_cause(priced, team_a, member_a, monkeypatch):
    from tests.factories import JobFactory

    job = JobFactory(team=team_a, cluster=priced, name="train", state="RUNNING")
    stretch = alerts.IdleStretch(since=START, until=START + 90 * MINUTE, seconds=90 * 60.0)
    details = alerts.facts(job, stretch, 5.0) | {"cause": {"label": "Unreleased job", "summary": "y"}}
    delivery = Delivery.objects.create(
        recipient=member_a.email, user=member_a, kind=DigestKind.IDLE_ALERT, team=team_a, iso_week="2026-W47",
        job=job, idle_since=START, details=details,
    )  # fmt: skip
    monkeypatch.setattr("triage.labeling.services.blinded_job_ids", lambda user: {job.pk})
    assert alerts.context_for(delivery)["alert"]["cause"] is None
    assert "Unreleased job" not in alerts.make_message(delivery).body
    monkeypatch.setattr("triage.labeling.services.blinded_job_ids", lambda user: set())
    assert "Cause:    Unreleased job: y" in alerts.make_message(delivery).body


class RunningJobApi:
    """The generic REST API serving one running job whose GPUs idle from 10:30; each `advance` makes it
    change (ten more idle minutes) and come again on the next page, as a running job does on a pull."""

    def __init__(self, minutes: int):
        self.minutes = minutes
        self.pages: list[dict] = [self.job()]

    def job(self) -> dict:
        end = START + self.minutes * MINUTE
        return {
            "job_id": "r-1", "user": "ana", "team": "team-a", "gpu_count": 2, "name": "train-live",
            "start_time": START.isoformat(), "end_time": end.isoformat(), "state": "RUNNING",
        }  # fmt: skip

    def advance(self, minutes: int) -> None:
        self.minutes += minutes
        self.pages.append(self.job())

    def install(self, server) -> None:
        server.route("/jobs/", self.job_part)
        server.route("/jobs", self.jobs_page)

    def jobs_page(self, path, query):
        cursor = int(query.get("cursor") or 0)
        page = self.pages[cursor:]
        return 200, {"jobs": page, "next_cursor": str(cursor + len(page)), "has_more": False}, {}

    def job_part(self, path, query):
        if path.endswith("/series"):
            samples = [
                {"timestamp": _stamp(START + m * MINUTE), "host": "n1", "gpu": g, "gpu_util": busy_then_idle(m)}
                for m in range(self.minutes + 1)
                for g in (0, 1)
            ]
            return 200, {"samples": samples}, {}
        return 200, {"artifacts": []}, {}


def test_connector_pulls_of_a_running_idle_job_alert_once(
    inbox, storage_dir, priced, member_a, settings, django_capture_on_commit_callbacks
):
    from fleet.connectors import sync
    from fleet.connectors.models import Connector
    from tests.connector_servers import FakePlatform

    settings.CONNECTOR_HTTP_TIMEOUT = 2
    api = RunningJobApi(minutes=120)
    with FakePlatform() as server:
        api.install(server)
        connector = Connector.objects.create(name="live", kind="generic", url=server.url, cluster="c1")
        with django_capture_on_commit_callbacks(execute=True):
            assert sync.sync_connector(connector.pk).status == "succeeded"
        assert len(alert_mails(inbox, member_a.email)) == 1
        api.advance(10)  # the next pull: the job changed, still idle, the same stretch
        with django_capture_on_commit_callbacks(execute=True):
            result = sync.sync_connector(connector.pk)
        assert result.status == "succeeded" and result.updated == 1
        with django_capture_on_commit_callbacks(execute=True):
            assert sync.sync_connector(connector.pk).status == "succeeded"  # nothing new at all
    assert Job.objects.get(external_id="r-1").end_time == START + 130 * MINUTE
    assert len(alert_mails(inbox, member_a.email)) == 1
    assert "idle for 1 h 30 min" in alert_mails(inbox, member_a.email)[0]["Subject"]


@pytest.mark.keeps_sample_age
def test_only_a_job_whose_samples_are_recent_is_idle_now(
    tmp_path,
    priced,
    team_a,
    member_a,
    inbox,
    settings,
    django_capture_on_commit_callbacks,  # noqa: F811
):
    """An archive holds last week's jobs, some of them still running when it was written: their idle
    GPUs are not idle *now*, so they alert no one (the wall clock's age of the last sample, at most
    IDLE_ALERT_MAX_AGE_MINUTES, 6 hours by default); a job sampled minutes ago alerts."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    fresh = {"id": "fresh", "state": "RUNNING", "minutes": 130, "util": busy_then_idle}
    old = {**fresh, "id": "old"}
    # The fresh job's last sample (minute 130) 10 minutes ago, the old one's a week ago.
    ingest(archive(tmp_path, "fresh.zip", [fresh], start=now - 140 * MINUTE), django_capture_on_commit_callbacks)
    ingest(archive(tmp_path, "old.zip", [old], start=now - timedelta(days=7)), django_capture_on_commit_callbacks)
    assert settings.IDLE_ALERT_MAX_AGE_MINUTES == 360
    subjects = [m["Subject"] for m in alert_mails(inbox, member_a.email)]
    assert len(subjects) == 1 and "train-fresh" in subjects[0], subjects
    assert not Delivery.objects.filter(kind=DigestKind.IDLE_ALERT, job__external_id="old").exists()


@pytest.mark.keeps_sample_age
def test_the_alert_settings_page_says_how_recent_a_jobs_samples_must_be(client, operator, settings):
    client.force_login(operator)
    page = client.get(reverse("digests:alert-settings")).content.decode()
    assert "Only a job whose last sample is at most 6 hours old is idle now" in page
    settings.IDLE_ALERT_MAX_AGE_MINUTES = 0
    assert "is idle now" not in client.get(reverse("digests:alert-settings")).content.decode()


class _JobLinks(HTMLParser):
    """The text and title of each link to `href` on a page, and the text that follows each up to the
    end of its table cell (where a page puts the job's cluster/ID beside its name)."""

    def __init__(self, href: str):
        super().__init__()
        self.href, self.links, self._in_link, self._after = href, [], False, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and attrs.get("href") == self.href:
            self._in_link = True
            self.links.append({"text": "", "title": attrs.get("title"), "after": ""})

    def handle_endtag(self, tag):
        if tag == "a" and self._in_link:
            self._in_link, self._after = False, self.links[-1]
        elif tag == "td":
            self._after = None

    def handle_data(self, data):
        if self._in_link:
            self.links[-1]["text"] += data
        elif self._after is not None:
            self._after["after"] += data


def test_the_alert_pages_name_a_job_by_its_name_with_its_cluster_and_id_beside_it(team_a, operator, client):
    """The idle alerts, webhook and deliveries pages named an alert's job 'c1/4711', an ID the team never
    chose; they name it as its owners do (its name, escaped), with its cluster/ID beside it and as the
    link's title, and a job without a name by its cluster/ID alone."""
    from tests.factories import ClusterFactory, JobFactory

    cluster = ClusterFactory(name="c1")
    named = JobFactory(cluster=cluster, team=team_a, external_id="4711", name="bert <b>large</b> & co")
    unnamed = JobFactory(cluster=cluster, team=team_a, external_id="4712", name="")
    webhook = TeamWebhook(team=team_a)
    webhook.set_url("https://chat.example.org/services/T1/B2/x")
    webhook.save()
    for job in (named, unnamed):
        common = {"team": team_a, "iso_week": "2026-W47", "job": job, "idle_since": START}
        Delivery.objects.create(recipient="ana@example.org", kind=DigestKind.IDLE_ALERT, **common)
        Delivery.objects.create(webhook=webhook, kind=DigestKind.IDLE_ALERT_WEBHOOK, **common)
    client.force_login(operator)
    pages = {
        "alerts": client.get(reverse("digests:alert-settings")).content.decode(),
        "webhook": client.get(reverse("digests:alert-webhook", args=[team_a.slug])).content.decode(),
        "deliveries": client.get(reverse("digests:deliveries")).content.decode(),
    }
    for page_name, page in pages.items():
        assert "<b>large</b>" not in page, page_name  # escaped
        for job, text, beside in ((named, "bert <b>large</b> & co", "c1/4711"), (unnamed, "c1/4712", None)):
            parser = _JobLinks(reverse("dashboard:job-detail", args=[job.pk]))
            parser.feed(page)
            assert parser.links, (page_name, job.external_id)
            for link in parser.links:
                assert link["text"] == text and link["title"] == f"c1/{job.external_id}", (page_name, link)
                if beside:
                    assert link["after"].split()[:1] == [beside], (page_name, link)
                else:
                    assert "c1/4712" not in link["after"], (page_name, link)  # not said twice
