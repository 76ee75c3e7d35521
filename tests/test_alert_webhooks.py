"""Idle alerts posted to a team's chat webhook, received by a real HTTP server on loopback: the Slack
text names the job, cluster, GPUs, idle time, cost per hour and link; the generic JSON is the alert's
facts; one post per idle stretch; a 500 is retried, a 404 or a refused connection is failed with a
readable reason and retried from the deliveries page; the operators' form keeps the URL write-only,
and the URL's secret path appears on no page, in no audit entry and in no log line."""

from __future__ import annotations

import json
import logging
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse

from fleet.models import AuditEvent, Cluster, GpuModelPrice, Job
from tests.conftest import free_port
from tests.connector_servers import FakePlatform
from tests.test_browser import browser  # noqa: F401 (a fixture: headless Chromium)
from tests.test_digests import BASE_URL, retries_in_process  # noqa: F401 (retries_in_process: a fixture)
from tests.test_idle_alerts import MINUTE, START, archive, busy_then_idle, ingest, priced  # noqa: F401 (priced: a fixture)
from triage.digests import webhooks
from triage.digests.models import AlertSettings, Delivery, DigestKind, TeamWebhook

pytestmark = pytest.mark.django_db

# A Slack webhook's path is its secret; every test looks for its last part where it must not be.
SECRET = "s3cr3tT0kenXYZ42"
HOOK_PATH = f"/services/T0001/B0002/{SECRET}"
RUNNING = {"id": "101", "state": "RUNNING", "minutes": 120, "util": busy_then_idle}


@pytest.fixture(autouse=True)
def any_sample_age(settings):
    """The jobs ran on 2026-11-20 (a fixed date): no limit on the age of their last sample."""
    settings.IDLE_ALERT_MAX_AGE_MINUTES = 0
    settings.DIGEST_RETRY_BACKOFF = 0
    settings.ALERT_WEBHOOK_ALLOW_HTTP = False  # http only to loopback, as in production
    # The chat server of these tests is on loopback, which webhooks may not reach unless allowed.
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.ALERT_WEBHOOK_TIMEOUT = 2
    settings.PUBLIC_BASE_URL = BASE_URL


@pytest.fixture
def hook():
    """The chat service: answers 200 "ok" to a POST on HOOK_PATH, as Slack does."""
    with FakePlatform() as server:
        server.route(HOOK_PATH, lambda path, query: (200, b"ok", {}))
        yield server


def posts(server) -> list[dict]:
    return [query["_json"] for path, fault, query in server.requests if path == HOOK_PATH and not fault]


def set_webhook(client, team, url: str, fmt: str = "slack", enabled: bool = True):
    data = {"url": url, "format": fmt} | ({"enabled": "on"} if enabled else {})
    return client.post(reverse("digests:alert-webhook", args=[team.slug]), data)


def assert_no_secret(client, team, caplog=None):
    """The secret is on no page an operator opens, in no audit entry and (when given) no log line."""
    pages = [
        reverse("digests:alert-settings"),
        reverse("digests:alert-webhook", args=[team.slug]),
        reverse("digests:deliveries"),
        reverse("digests:deliveries") + "?kind=idle_alert_webhook",
        reverse("fleet:audit-log"),
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200
        assert SECRET not in response.content.decode(), page
        assert "T0001/B0002" not in response.content.decode(), page
    for event in AuditEvent.objects.all():
        assert SECRET not in f"{event.target_repr} {event.details}"
    if caplog is not None:
        assert SECRET not in caplog.text


@pytest.mark.usefixtures("priced")
def test_a_slack_webhook_gets_the_alert_once_per_stretch(
    tmp_path, hook, team_a, operator, client, caplog, django_capture_on_commit_callbacks
):
    caplog.set_level(logging.DEBUG)
    client.force_login(operator)
    response = set_webhook(client, team_a, hook.url + HOOK_PATH)
    assert response.status_code == 302
    ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)

    (body,) = posts(hook)
    text = body["text"]
    job = Job.objects.get(external_id="101")
    job_url = f"{BASE_URL}{reverse('dashboard:job-detail', args=[job.pk])}"
    assert text.startswith(f":zzz: *Idle now:* <{job_url}|train-101> on c1 has left 2 GPUs (A100) idle for 1 h 30 min")
    assert "(since 2026-11-20 10:30 UTC)" in text
    assert "*Cost:* 5.00 USD per hour wasted while it idles (7.50 USD so far)" in text
    assert "*Team:* Team A  *User:* ana  *Job:* c1/101" in text
    delivery = Delivery.objects.get(kind=DigestKind.IDLE_ALERT_WEBHOOK)
    assert (delivery.status, delivery.response_status, delivery.attempts) == (Delivery.Status.SENT, 200, 1)
    assert (delivery.team, delivery.job, delivery.idle_since) == (team_a, job, START + 30 * MINUTE)

    # Ten more idle minutes: the same stretch, no second post; the same pull again: nothing either.
    ingest(archive(tmp_path, "b.zip", [{**RUNNING, "minutes": 130}]), django_capture_on_commit_callbacks)
    ingest(archive(tmp_path, "c.zip", [{**RUNNING, "minutes": 130}]), django_capture_on_commit_callbacks)
    assert len(posts(hook)) == 1
    assert Delivery.objects.filter(kind=DigestKind.IDLE_ALERT_WEBHOOK).count() == 1

    page = client.get(reverse("digests:deliveries"), {"kind": DigestKind.IDLE_ALERT_WEBHOOK}).content.decode()
    host = hook.url.removeprefix("http://")
    assert f"Chat webhook at {host}" in page and "(HTTP 200)" in page and "c1/101" in page
    assert_no_secret(client, team_a, caplog)


@pytest.mark.usefixtures("priced")
def test_a_generic_json_webhook_gets_the_alerts_facts(
    tmp_path, hook, team_a, operator, client, django_capture_on_commit_callbacks
):
    client.force_login(operator)
    set_webhook(client, team_a, hook.url + HOOK_PATH, fmt="json")
    ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)
    (body,) = posts(hook)
    job = Job.objects.get(external_id="101")
    assert body == Delivery.objects.get(kind=DigestKind.IDLE_ALERT_WEBHOOK).details
    assert body["job_id"] == job.pk and body["cluster"] == "c1" and body["gpus"] == "2 GPUs (A100)"
    assert (body["idle_minutes"], body["cost_per_hour"], body["currency"]) == (90, "5.00", "USD")
    assert body["job_url"] == f"{BASE_URL}{reverse('dashboard:job-detail', args=[job.pk])}"
    # The figures a script computes with, beside the words: amounts as decimal strings in major units
    # of the ISO 4217 `currency` (as the API's), hours and GPUs as JSON numbers.
    assert (body["cost_per_hour_decimal"], body["cost_so_far_decimal"]) == ("5.00", "7.50")
    assert (body["idle_hours"], body["idle_gpu_hours"]) == (1.5, 3.0)
    assert (body["gpu_count"], body["gpu_model"], body["gpu_share"]) == (2, "A100", 1.0)
    # The team as people read it, and its slug, which a script routes by (the URL's /teams/<slug>/).
    assert (body["team"], body["team_slug"]) == ("Team A", team_a.slug)
    # README's example names the fields a post has, no more, no fewer, each a value of the same type.
    example = readme_example()
    assert set(example) == set(body)
    assert {key: type(example[key]) for key in body if body[key] is not None} == {
        key: type(value) for key, value in body.items() if value is not None
    }


@pytest.mark.usefixtures("priced")
def test_a_generic_json_webhook_gives_amounts_a_script_can_read_past_a_thousand(
    tmp_path, hook, team_a, operator, client, django_capture_on_commit_callbacks
):
    """ "2,000.50" is words: float() refuses it, and a locale that writes 2.000,50 reads it otherwise.
    Its `_decimal` twin is the amount itself, and the text stays for the consumers that show it."""
    GpuModelPrice.objects.update(price_per_gpu_hour=Decimal("1000.25"))
    client.force_login(operator)
    set_webhook(client, team_a, hook.url + HOOK_PATH, fmt="json")
    ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)
    (body,) = posts(hook)
    assert (body["cost_per_hour"], body["cost_so_far"], body["currency"]) == ("2,000.50", "3,000.75", "USD")
    assert (body["cost_per_hour_decimal"], body["cost_so_far_decimal"]) == ("2000.50", "3000.75")
    # What the alert prices so far is its idle GPU-hours at the hour's price, to the cent.
    assert Decimal(body["cost_so_far_decimal"]) == Decimal(body["cost_per_hour_decimal"]) * Decimal(
        repr(body["idle_hours"])
    )
    assert isinstance(body["idle_gpu_hours"], float) and isinstance(body["gpu_count"], int)


def test_a_generic_json_webhook_of_an_unpriced_job_has_no_amounts(
    tmp_path, hook, team_a, operator, client, django_capture_on_commit_callbacks
):
    Cluster.objects.create(name="c1")  # no GPU-hour price
    client.force_login(operator)
    set_webhook(client, team_a, hook.url + HOOK_PATH, fmt="json")
    ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)
    (body,) = posts(hook)
    assert (body["cost_per_hour"], body["cost_per_hour_decimal"], body["cost_so_far_decimal"]) == (None, None, None)
    assert body["currency"] == "" and (body["idle_hours"], body["idle_gpu_hours"]) == (1.5, 3.0)


def test_an_alert_kept_before_the_figures_were_added_is_posted_with_them(hook, team_a):
    """A delivery queued (or failed, then retried) by the previous version kept its facts without the
    figures: its post carries them, read from the amounts it kept, so a script sees one shape."""
    from tests.factories import JobFactory

    job = JobFactory(team=team_a, name="train-7", state="RUNNING")
    webhook = TeamWebhook(team=team_a, format=TeamWebhook.Format.JSON)
    webhook.set_url(hook.url + HOOK_PATH)
    webhook.save()
    kept = {"name": "train-7", "idle_minutes": 90, "cost_per_hour": "2,000.50", "cost_so_far": "3,000.75",
            "currency": "EUR", "gpus": "2 GPUs (A100)", "cause": None}  # fmt: skip
    delivery = Delivery.objects.create(
        webhook=webhook, kind=DigestKind.IDLE_ALERT_WEBHOOK, team=team_a,
        iso_week="2026-W47", job=job, idle_since=START, details=kept,
    )  # fmt: skip
    assert webhooks.send_delivery(delivery.pk).status == "sent"
    (body,) = posts(hook)
    assert (body["cost_per_hour"], body["cost_per_hour_decimal"], body["cost_so_far_decimal"]) == (
        "2,000.50", "2000.50", "3000.75",
    )  # fmt: skip
    assert (body["currency"], body["idle_hours"]) == ("EUR", 1.5)


def test_an_alert_kept_before_the_gpu_figures_takes_them_from_its_job(hook, team_a):
    """An alert kept before `gpu_count`, `gpu_share`, `idle_gpu_hours` and `team_slug` were posted sent only the
    figures its words give. While its job is there, the missing ones are the job's, computed as a new alert's are:
    the GPUs, each at its share of a GPU, times the stretch's idle hours (its idle_since to its last sample). Without
    the job they are left out, as README says; the team's slug is the delivery's team's."""
    from tests.factories import JobFactory

    job = JobFactory(team=team_a, name="train-7", state="RUNNING", gpu_count=4, gpu_share=0.5, gpu_model="A100")
    webhook = TeamWebhook(team=team_a, format=TeamWebhook.Format.JSON)
    webhook.set_url(hook.url + HOOK_PATH)
    webhook.save()
    kept = {"name": "train-7", "team": "Team A", "idle_since": "2026-11-20T10:30:00+00:00",
            "last_sample": "2026-11-20T12:00:30+00:00", "idle_minutes": 90, "cost_per_hour": "2.00",
            "cost_so_far": "3.00", "currency": "EUR", "gpus": "4 MIG slices (A100)", "cause": None}  # fmt: skip
    common = {"webhook": webhook, "kind": DigestKind.IDLE_ALERT_WEBHOOK, "team": team_a, "iso_week": "2026-W47"}
    delivery = Delivery.objects.create(job=job, idle_since=START, details=kept, **common)
    assert webhooks.send_delivery(delivery.pk).status == "sent"
    (body,) = posts(hook)
    assert (body["gpu_count"], body["gpu_model"], body["gpu_share"]) == (4, "A100", 0.5)
    assert body["idle_gpu_hours"] == 3.017  # 2 GPUs' worth for 90.5 minutes, to 3 places as a new alert's
    assert (body["team"], body["team_slug"]) == ("Team A", team_a.slug)  # the team's name as it was kept

    # Its job deleted since: the figures only the job gives are left out, not made up.
    gone = Delivery.objects.create(job=None, idle_since=START + MINUTE, details=kept, **common)
    assert webhooks.send_delivery(gone.pk).status == "sent"
    body = posts(hook)[-1]
    assert not {"gpu_count", "gpu_model", "gpu_share", "idle_gpu_hours"} & set(body), body
    assert (body["team_slug"], body["idle_hours"], body["cost_so_far_decimal"]) == (team_a.slug, 1.5, "3.00")


def readme_example() -> dict:
    """The generic JSON alert README's *Chat webhooks* shows a script's writer."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"<!-- generic-json-alert -->\n```json\n(.*?)\n```", readme, re.S)
    return json.loads(example)


@pytest.mark.usefixtures("priced")
def test_a_webhook_turned_off_gets_nothing_and_emails_go_as_before(
    tmp_path, hook, team_a, member_a, operator, client, mailoutbox, django_capture_on_commit_callbacks
):
    client.force_login(operator)
    set_webhook(client, team_a, hook.url + HOOK_PATH, enabled=False)
    ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)
    assert posts(hook) == []
    assert not Delivery.objects.filter(kind=DigestKind.IDLE_ALERT_WEBHOOK).exists()
    assert [m.to for m in mailoutbox if m.subject.startswith("Idle now")] == [[member_a.email]]


@pytest.mark.usefixtures("retries_in_process", "priced")
def test_a_500_is_retried_and_the_alert_posted(
    tmp_path, hook, team_a, operator, client, settings, django_capture_on_commit_callbacks
):
    settings.DIGEST_MAX_RETRIES = 2
    client.force_login(operator)
    set_webhook(client, team_a, hook.url + HOOK_PATH)
    hook.fault(HOOK_PATH, "500")
    ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)
    assert hook.count(HOOK_PATH, "500") == 1 and len(posts(hook)) == 1
    delivery = Delivery.objects.get(kind=DigestKind.IDLE_ALERT_WEBHOOK)
    assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.Status.SENT, 2, 200)
    assert delivery.last_error == ""


@pytest.mark.usefixtures("priced")
def test_a_404_fails_with_a_reason_and_a_retry_from_the_deliveries_page_posts_it(
    tmp_path, team_a, operator, client, settings, caplog, django_capture_on_commit_callbacks
):
    settings.DIGEST_MAX_RETRIES = 3  # a 404 is not retried however many retries are allowed
    caplog.set_level(logging.DEBUG)
    answers = [(404, f"Cannot POST {HOOK_PATH}".encode(), {})]  # an error page that quotes the path

    with FakePlatform() as server:
        server.route(HOOK_PATH, lambda path, query: answers.pop(0) if answers else (200, b"ok", {}))
        client.force_login(operator)
        set_webhook(client, team_a, server.url + HOOK_PATH)
        ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)
        delivery = Delivery.objects.get(kind=DigestKind.IDLE_ALERT_WEBHOOK)
        host = server.url.removeprefix("http://")
        assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.Status.FAILED, 1, 404)
        assert delivery.last_error == (
            f'{host} has no webhook at this URL (HTTP 404, "Cannot POST …"): it was removed or the URL is '
            "mistyped. Enter the webhook's URL again."
        )
        page = client.get(reverse("digests:deliveries"), {"status": "failed"}).content.decode()
        assert "has no webhook at this URL (HTTP 404" in page
        assert reverse("digests:delivery-retry", args=[delivery.pk]) in page
        assert_no_secret(client, team_a, caplog)

        response = client.post(reverse("digests:delivery-retry", args=[delivery.pk]), follow=True)
        assert f"Sending the idle alert to chat webhook at {host} again." in response.content.decode()
        assert server.count(HOOK_PATH) == 2
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.Status.SENT, 2, 200)
    assert delivery.last_error == ""


@pytest.mark.usefixtures("retries_in_process", "priced")
def test_a_refused_connection_fails_with_a_reason_after_its_retries(
    tmp_path, team_a, operator, client, settings, caplog, django_capture_on_commit_callbacks
):
    settings.DIGEST_MAX_RETRIES = 1
    caplog.set_level(logging.DEBUG)
    port = free_port()
    client.force_login(operator)
    set_webhook(client, team_a, f"http://127.0.0.1:{port}{HOOK_PATH}")
    ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)
    delivery = Delivery.objects.get(kind=DigestKind.IDLE_ALERT_WEBHOOK)
    assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.Status.FAILED, 2, None)
    assert delivery.last_error == (
        f"127.0.0.1:{port} refused the connection: check the port in the URL and that the service is running."
    )
    assert_no_secret(client, team_a, caplog)


def test_the_form_keeps_the_url_write_only_and_refuses_what_cannot_be_a_webhook(team_a, operator, client, settings):
    client.force_login(operator)
    url = reverse("digests:alert-webhook", args=[team_a.slug])
    page = client.get(url).content.decode()
    assert "No webhook is set: Team A" in page and 'type="password"' in page

    response = set_webhook(client, team_a, "")
    assert response.status_code == 200
    assert "Webhook URL: enter the URL the chat service gave for the webhook." in response.content.decode()
    response = set_webhook(client, team_a, f"http://chat.example.org{HOOK_PATH}")
    body = response.content.decode()
    assert "Webhook URL: use https: the URL&#x27;s path is the webhook&#x27;s secret" in body
    assert SECRET not in body  # not even the URL just typed comes back
    assert (
        "Webhook URL: enter an http(s) URL" in set_webhook(client, team_a, "ftp://chat.example.org/x").content.decode()
    )
    assert not TeamWebhook.objects.exists()

    assert set_webhook(client, team_a, f"https://chat.example.org{HOOK_PATH}").status_code == 302
    webhook = TeamWebhook.objects.get(team=team_a)
    assert (webhook.host, webhook.url(), webhook.format) == (
        "chat.example.org",
        f"https://chat.example.org{HOOK_PATH}",
        "slack",
    )
    assert SECRET not in webhook.url_encrypted
    page = client.get(url).content.decode()
    assert "A webhook URL at <strong>chat.example.org</strong> is stored" in page and SECRET not in page

    # A blank URL keeps the stored one: the format changes alone.
    assert set_webhook(client, team_a, "", fmt="json").status_code == 302
    webhook.refresh_from_db()
    assert (webhook.format, webhook.url()) == ("json", f"https://chat.example.org{HOOK_PATH}")
    # ALERT_WEBHOOK_ALLOW_HTTP lets http reach any host.
    settings.ALERT_WEBHOOK_ALLOW_HTTP = True
    assert set_webhook(client, team_a, "http://relay.internal:8080/hook").status_code == 302
    webhook.refresh_from_db()
    assert webhook.host == "relay.internal:8080"
    actions = list(AuditEvent.objects.order_by("pk").values_list("action", flat=True))
    assert actions == ["alert_webhook.create", "alert_webhook.change", "alert_webhook.change"]
    assert_no_secret(client, team_a)

    client.post(url, {"remove": "1"})
    assert not TeamWebhook.objects.exists()
    assert AuditEvent.objects.order_by("pk").last().action == "alert_webhook.delete"


def test_send_a_test_message_says_how_the_webhook_answered(hook, team_a, operator, client, caplog):
    caplog.set_level(logging.DEBUG)
    client.force_login(operator)
    test_url = reverse("digests:alert-webhook-test", args=[team_a.slug])
    response = client.post(test_url, follow=True)
    assert "No webhook URL is stored for Team A: save one first." in response.content.decode()

    set_webhook(client, team_a, hook.url + HOOK_PATH, enabled=False)  # a test goes out while posting is off
    host = hook.url.removeprefix("http://")
    page = client.post(test_url, follow=True).content.decode()
    assert f"Test message posted: {host} answered HTTP 200." in page
    assert posts(hook) == [{"text": "Test message from Fleet Triage: the idle alerts of Team A will be posted here."}]

    hook.routes.clear()  # the webhook was removed on the chat's side: 404
    page = client.post(test_url, follow=True).content.decode()
    assert f"The test message was not posted: {host} has no webhook at this URL (HTTP 404" in page
    assert "Traceback" not in page

    TeamWebhook.objects.filter(team=team_a).update(url_encrypted="", host=f"127.0.0.1:{free_port()}")
    webhook = TeamWebhook.objects.get(team=team_a)
    webhook.set_url(f"http://{webhook.host}{HOOK_PATH}")
    webhook.save()
    page = client.post(test_url, follow=True).content.decode()
    assert f"The test message was not posted: {webhook.host} refused the connection" in page
    tests = AuditEvent.objects.filter(action="alert_webhook.test").order_by("pk")
    assert [event.details["status"] for event in tests] == [200, 404, None]
    assert_no_secret(client, team_a, caplog)


def test_the_webhook_pages_are_the_operators(hook, team_a, member_a, client):
    client.force_login(member_a)
    assert client.get(reverse("digests:alert-webhook", args=[team_a.slug])).status_code == 404
    assert client.post(reverse("digests:alert-webhook-test", args=[team_a.slug])).status_code == 404
    assert hook.requests == []


def test_the_alert_settings_page_lists_each_teams_webhook_by_host(hook, team_a, team_b, operator, client):
    client.force_login(operator)
    set_webhook(client, team_a, hook.url + HOOK_PATH, fmt="json")
    page = client.get(reverse("digests:alert-settings")).content.decode()
    host = hook.url.removeprefix("http://")
    assert f'{host} <span class="muted">(generic JSON)</span>' in page
    assert reverse("digests:alert-webhook", args=[team_b.slug]) in page and "none: email only" in page


def test_the_slack_text_escapes_what_a_job_name_could_inject():
    alert = {
        "name": "<!channel> & <https://evil.example|click>", "external_id": "9", "cluster": "c1",
        "gpus": "1 GPU", "idle_minutes": 75, "team": "T", "user": "u", "job_url": "https://ft.example/jobs/9/",
        "cost_per_hour": None, "cause": None,
    }  # fmt: skip
    text = webhooks.slack_text(alert)
    assert "<!channel>" not in text and "<https://evil" not in text
    assert "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;" in text
    assert "idle for 1 h 15 min" in text and "*Cost:* no GPU-hour price is set for this cluster" in text


@pytest.mark.usefixtures("priced")
def test_alerts_switched_off_post_nothing(tmp_path, hook, team_a, operator, client, django_capture_on_commit_callbacks):
    client.force_login(operator)
    set_webhook(client, team_a, hook.url + HOOK_PATH)
    AlertSettings.objects.update_or_create(pk=1, defaults={"enabled": False})
    ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)
    assert posts(hook) == []


@pytest.mark.django_db(transaction=True)
def test_the_webhook_pages_with_a_stored_webhook_and_a_failed_post_meet_wcag(browser, live_server, team_a, operator):  # noqa: F811
    """The pages as operators see them once a webhook is set and a post failed (the access matrix's
    check opens the webhook page with none): axe-core's WCAG 2.1 AA, and 320 px wide."""
    from tests.factories import JobFactory
    from tests.test_accessibility import narrow_window_problems, open_as, violations

    webhook = TeamWebhook(team=team_a, format=TeamWebhook.Format.JSON)
    webhook.set_url(f"https://chat.example.org{HOOK_PATH}")
    webhook.save()
    job = JobFactory(team=team_a, name="train-101", state="RUNNING")
    Delivery.objects.create(
        webhook=webhook, kind=DigestKind.IDLE_ALERT_WEBHOOK, team=team_a,
        iso_week="2026-W47", job=job, idle_since=START, status=Delivery.Status.FAILED, attempts=1, response_status=404,
        last_error="chat.example.org has no webhook at this URL (HTTP 404, \"no_service\"): it was removed or the URL "
        "is mistyped. Enter the webhook's URL again.",
    )  # fmt: skip
    open_as(browser, live_server.url, operator)
    failures = []
    for path in (
        reverse("digests:alert-webhook", args=[team_a.slug]),
        reverse("digests:alert-settings"),
        reverse("digests:deliveries") + "?kind=idle_alert_webhook",
    ):
        browser.get(live_server.url + path)
        assert SECRET not in browser.page_source
        found = violations(browser) + narrow_window_problems(browser)
        failures += [f"{path}: {line}" for line in found]
    assert not failures, "\n".join(failures)


def test_a_job_someone_rates_blind_is_posted_without_its_cause(hook, team_a, operator, researcher):
    """A channel is read by all its members, a blind rater among them: no rule's finding is posted for
    a job in a blind study until every rater of it has submitted."""
    from django.utils import timezone

    from tests.factories import JobFactory
    from triage.labeling.models import Assignment, Study, StudyJob, StudyRater

    job = JobFactory(team=team_a, name="train-7", state="RUNNING")
    webhook = TeamWebhook(team=team_a, format=TeamWebhook.Format.JSON)
    webhook.set_url(hook.url + HOOK_PATH)
    webhook.save()
    cause = {"category": "idle_tail", "label": "Unreleased job", "summary": "idle after training ended"}

    def post_alert(since) -> dict:
        delivery = Delivery.objects.create(
            webhook=webhook, kind=DigestKind.IDLE_ALERT_WEBHOOK, team=team_a,
            iso_week="2026-W47", job=job, idle_since=since, details={"name": "train-7", "cause": cause},
        )  # fmt: skip
        assert webhooks.send_delivery(delivery.pk).status == "sent"
        return posts(hook)[-1]

    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    rater = StudyRater.objects.create(study=study, user=researcher)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=job, position=1), rater=researcher)
    assert post_alert(START)["cause"] is None
    rater.submitted_at = timezone.now()
    rater.save()
    assert post_alert(START + MINUTE)["cause"] == cause


def test_an_http_url_stored_before_http_was_refused_is_not_posted_to(team_a, settings):
    """The scheme is checked again before each post: a URL saved while ALERT_WEBHOOK_ALLOW_HTTP was on
    is refused once it is off, in words, without a request (its path would travel in the clear)."""
    from tests.factories import JobFactory

    webhook = TeamWebhook(team=team_a)
    webhook.set_url(f"http://chat.example.org{HOOK_PATH}")
    webhook.save()
    delivery = Delivery.objects.create(
        webhook=webhook, kind=DigestKind.IDLE_ALERT_WEBHOOK, team=team_a,
        iso_week="2026-W47", job=JobFactory(team=team_a), idle_since=START, details={"name": "x"},
    )  # fmt: skip
    result = webhooks.send_delivery(delivery.pk, final_attempt=False)
    delivery.refresh_from_db()
    assert (result.status, delivery.status, delivery.response_status) == ("failed", Delivery.Status.FAILED, None)
    assert delivery.last_error.startswith("The webhook URL cannot be used: use https: the URL's path is the webhook's")
    assert SECRET not in delivery.last_error


# --- Internal addresses (SSRF): refused unless ALERT_WEBHOOK_ALLOWED_NETWORKS allows them ----------


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),  # IPv4-mapped: the same machine
        ("10.1.2.3", "a private network address"),
        ("172.16.0.1", "a private network address"),
        ("192.168.1.1", "a private network address"),
        ("fc00::1", "a private network address"),
        ("fd12:3456::1", "a private network address"),
        ("169.254.169.254", "a link-local address (169.254.169.254 is the cloud's metadata service)"),
        ("fe80::1", "a link-local address (169.254.169.254 is the cloud's metadata service)"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("0.0.0.0", "the unspecified address"),  # noqa: S104 (an address to refuse, not one bound)
        ("::", "the unspecified address"),
        ("240.0.0.1", "a reserved address"),
        ("100.64.0.1", "not an address of the public internet"),  # carrier-grade NAT
    ],
)
def test_an_internal_address_is_refused_by_default(address, words, settings):
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = []
    assert webhooks.address_problem(address) == f"{address} is {words}"


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808"])
def test_a_public_address_is_allowed(address, settings):
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = []
    assert webhooks.address_problem(address) is None


def test_allowed_networks_let_an_internal_chat_server_through(settings):
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = ["10.20.0.0/16", "fd00::5"]
    assert webhooks.address_problem("10.20.3.4") is None
    assert webhooks.address_problem("fd00::5") is None
    assert webhooks.address_problem("10.21.0.1") == "10.21.0.1 is a private network address"
    assert webhooks.address_problem("169.254.169.254").startswith("169.254.169.254 is a link-local address")


def resolving(monkeypatch, answers: dict[str, list[str]]):
    """Host names resolved as `answers` say (each call takes the next list, the last one repeats)."""
    calls = []

    def resolve(host, port):
        calls.append(host)
        said = answers[host]
        return said.pop(0) if len(said) > 1 else said[0]

    monkeypatch.setattr(webhooks, "resolve", lambda host, port: list(resolve(host, port)))
    return calls


def test_the_form_refuses_an_internal_address_saying_why(team_a, operator, client, settings, monkeypatch):
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = []
    answers = {
        "localhost": [["127.0.0.1"]],
        "chat.corp.example": [["10.0.0.7"]],
        "hooks.example.com": [["93.184.216.34"]],
    }
    resolving(monkeypatch, answers)
    client.force_login(operator)
    allow = "webhooks may not post to internal addresses unless ALERT_WEBHOOK_ALLOWED_NETWORKS allows them"
    for url, said in [
        ("http://127.0.0.1:8080/hook", "127.0.0.1 is a loopback address"),
        ("http://localhost:8080/hook", "localhost resolves to 127.0.0.1, a loopback address"),
        ("https://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("https://[::1]/hook", "::1 is a loopback address"),
        ("https://chat.corp.example/hooks/abc", "chat.corp.example resolves to 10.0.0.7, a private network address"),
    ]:
        body = set_webhook(client, team_a, url).content.decode()
        assert f"Webhook URL: {said}" in body, url
        assert allow in body, url
    assert not TeamWebhook.objects.exists()

    assert set_webhook(client, team_a, "https://hooks.example.com/hooks/abc").status_code == 302
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = ["10.0.0.0/24"]
    assert set_webhook(client, team_a, "https://chat.corp.example/hooks/abc").status_code == 302
    assert TeamWebhook.objects.get(team=team_a).host == "chat.corp.example"


def queued_delivery(webhook) -> Delivery:
    from tests.factories import JobFactory

    return Delivery.objects.create(
        webhook=webhook, kind=DigestKind.IDLE_ALERT_WEBHOOK, team=webhook.team,
        iso_week="2026-W47", job=JobFactory(team=webhook.team), idle_since=START, details={"name": "x"},
    )  # fmt: skip


def test_a_post_to_an_address_no_longer_allowed_fails_at_once_without_a_request(
    hook, team_a, operator, client, settings
):
    """Saved while loopback was allowed; the setting changed since: the post is refused where it would
    connect, failed for good (not retried) with the reason, and the chat server never hears of it."""
    webhook = TeamWebhook(team=team_a)
    webhook.set_url(hook.url + HOOK_PATH)
    webhook.save()
    delivery = queued_delivery(webhook)
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = []
    result = webhooks.send_delivery(delivery.pk, final_attempt=False)
    delivery.refresh_from_db()
    assert (result.status, delivery.status, delivery.attempts) == ("failed", Delivery.Status.FAILED, 1)
    host = hook.url.removeprefix("http://")
    assert delivery.last_error == (
        f"{host} is 127.0.0.1, a loopback address; webhooks may not post to internal addresses "
        "unless ALERT_WEBHOOK_ALLOWED_NETWORKS allows them."
    )
    client.force_login(operator)
    page = client.get(reverse("digests:deliveries"), {"status": "failed"}).content.decode()
    assert f"{host} is 127.0.0.1, a loopback address; webhooks may not post" in page
    test_url = reverse("digests:alert-webhook-test", args=[team_a.slug])
    page = client.post(test_url, follow=True).content.decode()
    assert f"The test message was not posted: {host} is 127.0.0.1, a loopback address; webhooks may" in page
    assert hook.requests == []


def test_a_name_that_resolves_elsewhere_after_the_check_is_refused_where_it_connects(
    hook, team_a, operator, client, settings, monkeypatch
):
    """DNS rebinding: the name was public when the form checked it, and points at loopback when the
    post connects. The address connected to is the one checked: nothing reaches the loopback server."""
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = []
    settings.ALERT_WEBHOOK_ALLOW_HTTP = True
    port = hook.url.rsplit(":", 1)[1]
    calls = resolving(monkeypatch, {"chat.rebind.example": [["93.184.216.34"], ["127.0.0.1"]]})
    client.force_login(operator)
    assert set_webhook(client, team_a, f"http://chat.rebind.example:{port}{HOOK_PATH}").status_code == 302
    outcome = webhooks.send_test(TeamWebhook.objects.get(team=team_a))
    assert calls == ["chat.rebind.example", "chat.rebind.example"]
    assert not outcome.ok and not outcome.transient and outcome.status is None
    assert outcome.error.startswith(f"chat.rebind.example:{port} resolves to 127.0.0.1, a loopback address")
    assert hook.requests == []


def test_a_redirect_to_an_internal_address_is_not_followed(team_a, settings):
    with FakePlatform() as server:
        metadata = "http://169.254.169.254/latest/meta-data/"
        server.route(HOOK_PATH, lambda path, query: (302, b"", {"Location": metadata}))
        webhook = TeamWebhook(team=team_a)
        webhook.set_url(server.url + HOOK_PATH)
        webhook.save()
        outcome = webhooks.send_test(webhook)
        assert server.count(HOOK_PATH) == 1
    assert outcome.status == 302 and not outcome.transient
    assert "a redirect to 169.254.169.254: not followed" in outcome.error


def test_a_checked_address_is_posted_to_with_the_urls_host_for_tls_and_host(team_a, settings, monkeypatch, tmp_path):
    """The guard connects to the address it checked, yet the certificate is checked against the URL's host
    name (SNI) and the Host header is the URL's: an https webhook on an allowed address works as before."""
    from tests.test_connectors_kubernetes import TlsPlatform, make_ca

    ca = make_ca(tmp_path)  # its server certificate names kubernetes.default.svc (and 127.0.0.1)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca))
    calls = resolving(monkeypatch, {"kubernetes.default.svc": [["127.0.0.1"]]})
    with TlsPlatform(tmp_path) as server:
        server.route(HOOK_PATH, lambda path, query: (200, b"ok", {}))
        port = server.url.rsplit(":", 1)[1]
        webhook = TeamWebhook(team=team_a)
        webhook.set_url(f"https://kubernetes.default.svc:{port}{HOOK_PATH}")
        webhook.save()
        outcome = webhooks.send_test(webhook)
        assert outcome.ok and outcome.status == 200, outcome.error
        assert calls == ["kubernetes.default.svc"]
        ((path, _, query),) = server.requests
        assert query["_headers"]["Host"] == f"kubernetes.default.svc:{port}"
        settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = []
        outcome = webhooks.send_test(webhook)
        assert len(server.requests) == 1
    assert outcome.error.startswith(f"kubernetes.default.svc:{port} resolves to 127.0.0.1, a loopback")


def test_through_an_outbound_proxy_the_name_is_checked_before_the_post(team_a, settings, monkeypatch):
    """With HTTPS_PROXY set the proxy makes the connection, so the host's addresses are checked here first."""
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{free_port()}")
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = []
    resolving(monkeypatch, {"chat.corp.example": [["10.0.0.7"]]})
    outcome = webhooks.post("https://chat.corp.example/hooks/abc", {"text": "x"})
    assert outcome.error == (
        "chat.corp.example resolves to 10.0.0.7, a private network address; webhooks may not post to "
        "internal addresses unless ALERT_WEBHOOK_ALLOWED_NETWORKS allows them."
    )
    assert not outcome.transient


# --- A webhook delivery names its webhook, not an address ----------------------------------------


@pytest.mark.usefixtures("priced")
def test_a_webhook_delivery_refers_to_its_webhook_and_leaves_the_address_empty(
    tmp_path, hook, team_a, operator, admin_user, client, django_capture_on_commit_callbacks
):
    """`recipient` is an email address: "webhook:<pk>" in it made the admin call the row invalid. The
    webhook is the row's `webhook`; a webhook removed and set again gets the stretch's alert once more."""
    client.force_login(operator)
    set_webhook(client, team_a, hook.url + HOOK_PATH)
    ingest(archive(tmp_path, "a.zip", [RUNNING]), django_capture_on_commit_callbacks)
    first = Delivery.objects.get(kind=DigestKind.IDLE_ALERT_WEBHOOK)
    assert (first.recipient, first.webhook, first.status) == ("", TeamWebhook.objects.get(), Delivery.Status.SENT)
    first.full_clean()  # what the admin's form checks: no "Enter a valid email address."

    client.post(reverse("digests:alert-webhook", args=[team_a.slug]), {"remove": "1"})
    set_webhook(client, team_a, hook.url + HOOK_PATH)
    ingest(archive(tmp_path, "b.zip", [{**RUNNING, "minutes": 130}]), django_capture_on_commit_callbacks)
    assert len(posts(hook)) == 2
    rows = Delivery.objects.filter(kind=DigestKind.IDLE_ALERT_WEBHOOK).order_by("pk")
    assert [(row.recipient, row.webhook_id) for row in rows] == [("", None), ("", TeamWebhook.objects.get().pk)]
    page = client.get(reverse("digests:deliveries"), {"kind": DigestKind.IDLE_ALERT_WEBHOOK}).content.decode()
    host = hook.url.removeprefix("http://")
    assert f"Chat webhook at {host}" in page and "A removed chat webhook" in page

    client.force_login(admin_user)
    change = client.get(reverse("admin:digests_delivery_change", args=[first.pk])).content.decode()
    assert "errornote" not in change
    listing = client.get(reverse("admin:digests_delivery_changelist")).content.decode()
    assert f"chat webhook at {host}" in listing


def test_the_migration_moves_old_webhook_rows_to_their_webhook(team_a):
    from importlib import import_module

    from django.apps import apps

    from tests.factories import JobFactory

    migration = import_module("triage.digests.migrations.0004_delivery_webhook_not_an_address")
    webhook = TeamWebhook(team=team_a)
    webhook.set_url(f"https://chat.example.org{HOOK_PATH}")
    webhook.save()
    job = JobFactory(team=team_a)
    common = {"kind": DigestKind.IDLE_ALERT_WEBHOOK, "team": team_a, "iso_week": "2026-W47", "job": job}
    linked = Delivery.objects.create(recipient=f"webhook:{webhook.pk}", webhook=webhook, idle_since=START, **common)
    unlinked = Delivery.objects.create(recipient=f"webhook:{webhook.pk}", idle_since=START + MINUTE, **common)
    removed = Delivery.objects.create(recipient="webhook:999999", idle_since=START + 2 * MINUTE, **common)
    email = Delivery.objects.create(
        recipient="ana@example.org", kind=DigestKind.IDLE_ALERT, team=team_a, iso_week="2026-W47", job=job,
        idle_since=START,
    )  # fmt: skip
    migration.refer_to_webhooks(apps, None)
    found = {row.pk: (row.recipient, row.webhook_id) for row in Delivery.objects.all()}
    assert found == {
        linked.pk: ("", webhook.pk),
        unlinked.pk: ("", webhook.pk),
        removed.pk: ("", None),
        email.pk: ("ana@example.org", None),
    }


def test_the_webhook_page_says_before_the_form_that_internal_addresses_are_refused(team_a, operator, client):
    """An operator reads the page's introduction before typing a URL: it says that an internal address is
    refused, and which setting lets one through, not only the error after a refused save."""
    client.force_login(operator)
    page = client.get(reverse("digests:alert-webhook", args=[team_a.slug])).content.decode()
    said = page.find("A URL whose host is, or resolves to, an internal address")
    field = page.find('name="url"')
    assert 0 <= said < field, "the sentence is missing, or comes only after the URL field"
    assert "ALERT_WEBHOOK_ALLOWED_NETWORKS" in page[said:field]


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_deliveries_filter_keeps_its_label_and_a_date_is_unbroken(browser, live_server, team_a, operator):  # noqa: F811
    """At 375 px the deliveries page's "Digest" and "Week" labels ended one line and their controls began
    the next, and a week ("2026-W47") and an idle stretch's date broke at their hyphens."""
    from tests.factories import JobFactory
    from tests.test_accessibility import open_as

    webhook = TeamWebhook(team=team_a, format=TeamWebhook.Format.SLACK)
    webhook.set_url(f"https://chat.example.org{HOOK_PATH}")
    webhook.save()
    Delivery.objects.create(
        webhook=webhook, kind=DigestKind.IDLE_ALERT_WEBHOOK, team=team_a, iso_week="2026-W47",
        job=JobFactory(team=team_a, state="RUNNING"), idle_since=START, status=Delivery.Status.FAILED, attempts=1,
        last_error="Not posted: chat.example.org resolves to 10.0.0.7, a private network address; webhooks may not "
        "post to internal addresses unless ALERT_WEBHOOK_ALLOWED_NETWORKS allows them.",
    )  # fmt: skip
    open_as(browser, live_server.url, operator)
    browser.set_window_size(375, 900)
    try:
        browser.get(live_server.url + reverse("digests:deliveries"))
        apart = browser.execute_script(
            """return [...document.querySelectorAll('form.filters select, form.filters input')].filter(control => {
                 const label_ = document.querySelector(`label[for="${control.id}"]`);
                 const walk = document.createTreeWalker(label_, NodeFilter.SHOW_TEXT);
                 while (walk.nextNode() && !walk.currentNode.data.trim());
                 const words = document.createRange();  // the label's words, wherever the control is
                 words.selectNodeContents(walk.currentNode);
                 const label = words.getBoundingClientRect(), box = control.getBoundingClientRect();
                 return label.bottom <= box.top || box.bottom <= label.top;  // not side by side
               }).map(control => control.id)"""
        )
        assert apart == [], f"labels on another line than their control: {apart}"
        week, date = browser.execute_script(
            """const row = document.querySelector('table.data tbody tr');
               const lines = text => {  // how many lines the first text node holding `text` spreads it over
                 const walk = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
                 while (walk.nextNode()) {
                   const at = walk.currentNode.data.indexOf(text);
                   if (at < 0) continue;
                   const range = document.createRange();
                   range.setStart(walk.currentNode, at);
                   range.setEnd(walk.currentNode, at + text.length);
                   return new Set([...range.getClientRects()].map(rect => Math.round(rect.top))).size;
                 }
               };
               return [lines('2026-W47'), lines('2026-11-20 10:00')];"""
        )
        assert (week, date) == (1, 1), f"the week takes {week} lines, the idle stretch's date {date}"
    finally:
        browser.set_window_size(1400, 900)


@pytest.mark.django_db(transaction=True)
def test_the_deliveries_table_shows_every_column_and_retry_at_1280_px_and_on_a_phone(
    browser,  # noqa: F811
    live_server,
    team_a,
    operator,
):
    """At 1280 px, for an operator whose time zone has a long name (America/Argentina/Buenos_Aires, in
    two column headers), the deliveries table ran past its box: the last error was cut to a few words
    and the Retry button was out of sight to the right. It now fits the window, the error wraps; on a
    phone each delivery is a card of its fields, each beside its column's name, Retry in view."""
    from fleet.models import UserProfile
    from tests.factories import JobFactory
    from tests.test_accessibility import TABLE_LAYOUT, narrow_window_problems, open_as, violations
    from tests.test_browser import window_width

    UserProfile.objects.create(user=operator, time_zone="America/Argentina/Buenos_Aires")
    job = JobFactory(team=team_a, state="RUNNING", name="llama2-70b-sft-ablation-lr3e-5-warmup2000")
    webhook = TeamWebhook(team=team_a, format=TeamWebhook.Format.SLACK)
    webhook.set_url(f"https://chat.example.org{HOOK_PATH}")
    webhook.save()
    common = {"team": team_a, "iso_week": "2026-W47", "job": job, "idle_since": START}
    failed = {"status": Delivery.Status.FAILED, "attempts": 3, "claimed_at": START + MINUTE}
    address = "maximilian.hoffmann-schreiber@machine-learning-research.example.org"
    Delivery.objects.create(
        recipient=address, kind=DigestKind.IDLE_ALERT, **common, **failed,
        last_error=f"SMTPRecipientsRefused: {{'{address}': (550, b'5.1.1 Mailbox unavailable: no such user here')}}",
    )  # fmt: skip
    Delivery.objects.create(
        webhook=webhook, kind=DigestKind.IDLE_ALERT_WEBHOOK, response_status=500, **common, **failed,
        last_error="Not posted: chat.example.org resolves to 10.0.0.7, a private network address; webhooks may not "
        "post to internal addresses unless ALERT_WEBHOOK_ALLOWED_NETWORKS allows them.",
    )  # fmt: skip
    Delivery.objects.create(
        recipient="ana@example.org", kind=DigestKind.TEAM, team=team_a, iso_week="2026-W47",
        status=Delivery.Status.SENT, attempts=1, claimed_at=START, sent_at=START + MINUTE,
    )  # fmt: skip
    open_as(browser, live_server.url, operator)
    url = live_server.url + reverse("digests:deliveries")
    with window_width(browser, 1280):
        browser.get(url)
        wide = browser.execute_script(TABLE_LAYOUT)
    with window_width(browser, 390, mobile=True):
        browser.get(url)
        phone = browser.execute_script(TABLE_LAYOUT)
        phone_violations = violations(browser)
        reflow = narrow_window_problems(browser)
    for name, layout in (("1280 px", wide), ("390 px", phone)):
        assert not layout["scrolls"] and layout["cellsOut"] == [], (name, layout)
        assert layout["buttons"] == [["Retry", True], ["Retry", True]], (name, layout)
    assert wide["headersShown"] and wide["headersOut"] == [], wide
    assert {label for label, _column in wide["labels"]} == {None}, wide
    assert not phone["headersShown"], phone
    assert all(label == column for label, column in phone["labels"]), phone
    assert phone_violations == [] and reflow == [], (phone_violations, reflow)


def test_the_webhook_forms_switch_says_plainly_what_it_does(team_a, operator, client):
    """The switch read "Post this team's idle alerts here", above a lone box, with "Off: the URL is kept,
    nothing is posted." under it. It says what it does, the box beside its words, and what unticking it
    keeps: the URL and the team's emails."""
    import re

    client.force_login(operator)
    page = client.get(reverse("digests:alert-webhook", args=[team_a.slug])).content.decode()
    assert "Post this team&#x27;s idle alerts here" not in page
    switch = re.search(r'<label>\s*<input type="checkbox" name="enabled"[^>]*>\s*([^<]+?)\s*</label>', page)
    assert switch and switch.group(1) == "Post idle alerts to this webhook", page
    help_id = re.search(r'name="enabled"[^>]*aria-describedby="([^"]+)"', page).group(1)
    help_text = re.search(rf'id="{help_id}">([^<]+)<', page).group(1)
    assert help_text == (
        "Untick to stop posting for a while: the URL stays stored, and the team&#x27;s idle alerts still go by email."
    )
