"""Weekly digests sent through a real SMTP server on loopback (aiosmtpd): what arrives, that its
figures are the dashboard's for the same week, that its links work, that unsubscribing works, and
that a digest goes out exactly once per recipient and week, even when the server fails at first."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from aiosmtpd.controller import Controller
from django.conf import settings as django_settings
from django.urls import reverse

from fleet.models import IngestRun, Job
from tests.conftest import free_port
from tests.factories import JobFactory, OwnerFactory, UserFactory
from tests.reading import as_read
from tests.test_browser import SHOTS, browser, window_width  # noqa: F401  (browser: the shared Chromium fixture)
from triage.dashboard import queries
from triage.digests import findings, services, weeks
from triage.digests.models import Delivery, DigestKind, Subscription
from triage.digests.tasks import send_digest_task, send_weekly_task
from triage.guidance import headline_change
from triage.models import Feedback, Finding, JobTriage, RuleSet, TriageStatus
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

WEEK = "2026-W47"  # Monday 16 November 2026
WEEK_START = datetime(2026, 11, 16, tzinfo=UTC)
BASE_URL = "https://triage.example.org"


# --- A real SMTP server on loopback ------------------------------------------------------------


class Inbox:
    """An aiosmtpd handler that keeps what it accepts; it can refuse the first `fail_first` messages."""

    def __init__(self, fail_first: int = 0, reply: str = "451 4.3.0 Try again later"):
        self.fail_first = fail_first
        self.reply = reply
        self.attempts = 0
        self.envelopes = []

    async def handle_DATA(self, server, session, envelope):
        self.attempts += 1
        if self.fail_first:
            self.fail_first -= 1
            return self.reply
        self.envelopes.append(envelope)
        return "250 2.0.0 Message accepted for delivery"

    @property
    def messages(self):
        return [message_from_bytes(e.content, policy=policy.default) for e in self.envelopes]

    def to(self, address: str):
        return [m for m in self.messages if address in m["To"]]


@pytest.fixture
def smtp(settings):
    """Start an SMTP server for this test and point Django's SMTP backend at it."""
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = controller.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 10
    settings.PUBLIC_BASE_URL = BASE_URL
    settings.DIGEST_RETRY_BACKOFF = 0  # eager retries run at once anyway; keep the countdown honest
    yield inbox
    controller.stop()


@pytest.fixture
def retries_in_process():
    """Let Celery's eager mode run a retry the way a worker would (at once, as a new attempt) instead
    of raising `Retry` to the caller, which is what CELERY_TASK_EAGER_PROPAGATES makes it do."""
    from config.celery import app

    previous = app.conf.task_eager_propagates
    app.conf.task_eager_propagates = False
    yield
    app.conf.task_eager_propagates = previous


# --- One week of a small fleet, triaged --------------------------------------------------------


def triaged(job, rule_set, *findings, status=TriageStatus.CLASSIFIED, current=True):
    result = JobTriage.objects.create(job=job, rule_set=rule_set, status=status, is_current=current)
    for category, hours, guidance in findings:
        Finding.objects.create(
            result=result,
            job=job,
            rule_set=rule_set,
            category=category,
            confidence=0.9,
            summary=f"{category.label} found in {job.name}",
            gpu_hours=hours,
            guidance=guidance,
        )
    return result


@pytest.fixture
def fleet(team_a, team_b, member_a, operator):
    old_rules = RuleSet.objects.create(version=1)
    rules = RuleSet.objects.create(version=2)
    day = timedelta(days=1)
    resnet = JobFactory(
        team=team_a,
        name="train-resnet",
        start_time=WEEK_START + day,
        gpu_hours=10,
        unused_gpu_hours=6,
        mean_gpu_util=40,
        cost="20.00",
    )
    bert = JobFactory(
        team=team_a,
        name="eval-bert",
        start_time=WEEK_START + 2 * day,
        gpu_hours=4,
        unused_gpu_hours=3,
        mean_gpu_util=25,
        cost="8.00",
    )
    healthy = JobFactory(
        team=team_a,
        name="healthy",
        start_time=WEEK_START + 3 * day,
        gpu_hours=8,
        unused_gpu_hours=1,
        mean_gpu_util=88,
        cost="16.00",
    )
    mystery = JobFactory(
        team=team_a,
        name="mystery",
        start_time=WEEK_START + 4 * day,
        gpu_hours=2,
        unused_gpu_hours=1.5,
        mean_gpu_util=20,
        cost="4.00",
    )
    last_week = JobFactory(
        team=team_a,
        name="old-run",
        start_time=WEEK_START - 3 * day,
        gpu_hours=12,
        unused_gpu_hours=9,
        mean_gpu_util=25,
        cost="24.00",
    )
    # The data begin two weeks before the week (a fleet's data did not start in the week before it): the
    # digests compare with a whole week and judge each change (`week_before_partly_in_data`).
    JobFactory(team=team_a, name="older", start_time=WEEK_START - 14 * day, gpu_hours=1, mean_gpu_util=90)
    JobFactory(
        team=team_b,
        name="b-busy",
        start_time=WEEK_START + day,
        gpu_hours=20,
        unused_gpu_hours=2,
        mean_gpu_util=90,
        cost="40.00",
    )
    checkpoint_fix = {"fix": "Save checkpoints asynchronously. Training then goes on while the file is written."}
    triaged(
        resnet,
        rules,
        (Category.MODEL_CHECKPOINTING, 4.0, checkpoint_fix),
        (Category.HOST_GPU_TRANSFER, 1.5, {"change": {"text": "Use pinned memory and non_blocking copies"}}),
    )
    # An older rule set's verdict on the same job must not count.
    triaged(resnet, old_rules, (Category.NON_DL_JOB, 100.0, {}), current=False)
    triaged(bert, rules, (Category.IMPROPER_BATCH_SIZE, 2.5, {}))
    triaged(healthy, rules, status=TriageStatus.HEALTHY)
    triaged(mystery, rules, status=TriageStatus.UNCLASSIFIED)
    triaged(
        last_week,
        rules,
        (Category.MODEL_CHECKPOINTING, 6.0, checkpoint_fix),
        (Category.LENGTHY_LIBRARY_INSTALL, 2.0, {}),
    )
    failed_run = IngestRun.objects.create(
        archive_name="week-47.zip", status=IngestRun.Status.FAILED, errors=[{"message": "manifest.json is missing"}]
    )
    IngestRun.objects.filter(pk=failed_run.pk).update(created_at=WEEK_START + day)
    return {"resnet": resnet, "bert": bert, "mystery": mystery, "failed_run": failed_run}


def parts(message) -> tuple[str, str]:
    text = message.get_body(preferencelist=("plain",)).get_content()
    html = message.get_body(preferencelist=("html",)).get_content()
    return text, html


def links(html: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', html)


def path_of(url: str) -> str:
    parts_ = urlsplit(url)
    return parts_.path + (f"?{parts_.query}" if parts_.query else "")


# --- What arrives --------------------------------------------------------------------------------


def test_it_sends_team_and_operator_digests_with_both_parts(smtp, fleet, member_a, operator):
    result = send_weekly_task.delay(WEEK).get()
    assert result == {"week": WEEK, "groups": 3}  # team A, team B, operators
    to_alice = smtp.to(member_a.email)
    to_olivia = smtp.to(operator.email)
    assert len(to_alice) == 1 and len(to_olivia) == 1
    # Team B has no members with an address, so nobody else got anything.
    assert len(smtp.messages) == 2
    message = to_alice[0]
    assert message.get_content_type() == "multipart/alternative"
    text, html = parts(message)
    assert "Team A - week 2026-W47, 2026-11-16 to 2026-11-22 (UTC)" in text and "<html" in html and "Team A" in html
    assert message["Subject"].startswith("Team A, 2026-W47: ")
    assert message["From"] == django_settings.DIGEST_FROM_EMAIL or message["From"]
    assert "<script" not in html.lower()
    assert message["Message-ID"].startswith("<digest.team.2026-W47.")
    operator_text, operator_html = parts(to_olivia[0])
    assert "The fleet - week 2026-W47, 2026-11-16 to 2026-11-22 (UTC)" in operator_text
    assert "Teams by unused GPU-hours" in operator_html


def test_a_digest_says_what_recoverable_gpu_hours_are_where_it_first_names_them(smtp, fleet, member_a, operator):
    """The digests counted a cause's "recoverable GPU-hours" and the dashboard the same figure as
    "Attributed GPU-hours", and no email said what they were. Both now say "recoverable", and each part
    of a digest says what they are where it first names them, in the dashboard's words."""
    send_weekly_task.delay(WEEK).get()
    for to in (member_a, operator):
        text, html = parts(smtp.to(to.email)[0])
        first = text.lower().index("recoverable gpu-hours")
        assert text[first:].startswith(
            "recoverable GPU-hours)\r\n  Recoverable GPU-hours: the unused GPU-hours the rules lay at a cause, "
            "which fixing it would win back"
        ), text[first - 40 : first + 160]
        first = html.lower().index("recoverable gpu-hours")
        assert html[first:].startswith(
            "Recoverable GPU-hours by cause: the unused GPU-hours the rules lay at each cause, which fixing it "
            "would win back"
        ), html[first - 40 : first + 160]
        assert "attributed" not in (text + html).lower()


def test_figures_equal_the_dashboards_for_the_same_week(smtp, fleet, team_a, member_a, client):
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    html = as_read(html)  # the figures, as read (a no-break space keeps each with its unit)
    period = weeks.parse_week(WEEK)
    team_jobs = Job.objects.filter(team=team_a)
    expected = queries.totals(queries.in_period(team_jobs, period), django_settings.LOW_UTIL_THRESHOLD)
    before = queries.totals(queries.in_period(team_jobs, period.previous), django_settings.LOW_UTIL_THRESHOLD)

    # The dashboard's team page for the same week shows exactly these totals.
    client.force_login(member_a)
    page = client.get(reverse("dashboard:team-detail", args=["team-a"]), {"from": "2026-11-16", "to": "2026-11-22"})
    assert page.status_code == 200
    assert page.context["totals"] == expected
    context = services.build_context(DigestKind.TEAM, WEEK, team_a)
    assert context["totals"] == expected and context["previous_totals"] == before

    assert expected.gpu_hours == 24 and expected.unused_gpu_hours == 11.5 and expected.cost == 48
    for figure in (
        services.fmt_hours(expected.gpu_hours),  # 24.0
        services.fmt_hours(expected.unused_gpu_hours),  # 11.5
        services.fmt_share(expected.waste_share),  # 48 %
        services.fmt_money(expected.cost),
        services.fmt_money(expected.wasted_cost),
        services.fmt_hours(before.unused_gpu_hours),  # the week before: 9.0
    ):
        assert figure in text and figure in html
    # Waste by category: current triage only (the old NON_DL verdict of 100 h is not there).
    assert "Model checkpointing" in text and "4.0" in text
    assert Category.NON_DL_JOB.label not in text and "100.0" not in text
    # Top jobs by recoverable GPU-hours, with causes and the one-line fix, biggest first.
    assert text.index("train-resnet") < text.index("eval-bert")
    fix = "Save checkpoints asynchronously. Training then goes on while the file is written."
    assert f"Model checkpointing: {fix}" in text and fix in html  # resnet's biggest cause's change first
    assert "Found: Improper batch size found in eval-bert" in text  # no change named: what was found
    assert "Inefficient host-GPU data transfer" in html
    # What improved: the week before had 6 h of checkpointing and 2 h of library installs.
    assert "Lengthy library installation: gone this week" in text
    assert "Model checkpointing: 6.0 → 4.0 recoverable GPU-hours (50 % → 17 % of GPU-hours)." in text
    assert "1 low-utilization job (1.5 unused GPU-hours) had no cause" in text


class _TableCells(HTMLParser):
    """Each header cell of an email with the role of the table it is in (the innermost), and the
    figures' table's headers."""

    def __init__(self):
        super().__init__()
        self.tables: list[str | None] = []  # the open tables' roles, innermost last
        self.headers: list[tuple[str | None, str | None]] = []  # (table's role, scope)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.tables.append(attrs.get("role"))
        elif tag == "th":
            self.headers.append((self.tables[-1] if self.tables else None, attrs.get("scope")))

    def handle_endtag(self, tag):
        if tag == "table" and self.tables:
            self.tables.pop()


def test_a_digests_figures_are_a_data_table_with_headers_and_its_layout_tables_have_none(
    smtp, fleet, member_a, operator
):
    """The week's figures sat in a table marked role="presentation" (layout, whose cells a screen reader
    reads as plain text) that had <th> headers: a reader was told neither, or both, depending on the
    mail app. The figures are a data table whose column and row headers say what each figure is; the
    tables that only lay the email out have no header cells."""
    send_weekly_task.delay(WEEK).get()
    for message in (smtp.to(member_a.email)[0], smtp.to(operator.email)[0]):
        _, html = parts(message)
        cells = _TableCells()
        cells.feed(html)
        assert [role for role, _ in cells.headers if role == "presentation"] == []
        figures = html.split("This week")[0].rsplit("<table", 1)[1]
        assert "role=" not in figures.split(">", 1)[0], "the figures' table is not a layout table"
        scopes = [scope for _, scope in cells.headers]
        assert scopes[:4] == ["col"] * 4 and scopes.count("row") >= 5, scopes


def test_the_pages_a_digest_links_to_write_its_figures_as_it_does(fleet, team_a, member_a, client):
    """The digest said 11.5 unused GPU-hours and its "Open the team's week on the dashboard" landed
    on a card reading 12 (and 269.5 GPU-hours read 270); the overview's top causes read 2 for the
    digest's 1.5 GPU-hours, and 0 for a cause of a fifth of an hour that still cost money."""
    context = services.build_context(DigestKind.TEAM, WEEK, team_a)
    totals = context["totals"]
    client.force_login(member_a)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    page = client.get(reverse("dashboard:team-detail", args=[team_a.slug]), week)
    cards = {card["label"]: card["value"] for card in page.context["cards"]}
    assert cards["GPU-hours"] == services.fmt_hours(totals.gpu_hours) == "24.0"
    assert cards["Unused GPU-hours"] == services.fmt_hours(totals.unused_gpu_hours) == "11.5"
    assert cards["Cost"] == services.fmt_money(totals.cost) and cards["Wasted cost"] == services.fmt_money(
        totals.wasted_cost
    )
    overview = client.get(reverse("dashboard:overview"), week).content.decode()
    top_causes = overview.split("<h2>Top causes</h2>")[1].split("</table>")[0]
    transfer = top_causes.split(Category.HOST_GPU_TRANSFER.label)[1].split("</tr>")[0]
    hours = f'<span class="cell-label">Recoverable GPU-hours</span><span>{services.fmt_hours(1.5)}</span>'
    assert hours in transfer  # as the digest's waste by cause


def test_operator_digest_matches_the_overview_and_reports_ingestion(smtp, fleet, operator, client):
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(operator.email)[0])
    client.force_login(operator)
    page = client.get(reverse("dashboard:overview"), {"from": "2026-11-16", "to": "2026-11-22"})
    fleet_totals = page.context["totals"]
    assert services.build_context(DigestKind.OPERATOR, WEEK)["totals"] == fleet_totals
    assert services.fmt_hours(fleet_totals.gpu_hours) in text  # 44.0 GPU-hours across both teams
    rows = queries.by_team(queries.in_period(Job.objects.all(), weeks.parse_week(WEEK)), 50.0)
    assert [r["team__slug"] for r in rows] == ["team-a", "team-b"]
    assert text.index("Team A") < text.index("Team B")
    # Unclassified share: 1.5 of 13.5 unused GPU-hours.
    assert "1.5 unused GPU-hours, 11 % of all unused GPU-hours" in text
    assert f"Run {fleet['failed_run'].pk} (week-47.zip, failed): manifest.json is missing" in text
    assert reverse("fleet:ingest-run-detail", args=[fleet["failed_run"].pk]) in html
    assert "CONNECTORS" in text and "No connectors are configured." in text


def test_every_link_in_the_email_opens(smtp, fleet, member_a, client):
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    urls = set(links(html))
    assert urls and all(url.startswith(BASE_URL + "/") for url in urls)
    job_url = BASE_URL + reverse("dashboard:job-detail", args=[fleet["resnet"].pk]) + "#findings"
    assert job_url in urls and job_url in text and f"/jobs/{fleet['resnet'].pk}/" in job_url
    client.force_login(member_a)
    for url in urls:
        response = client.get(path_of(url))
        assert response.status_code == 200, url


def test_a_job_s_link_in_the_digest_lands_on_its_findings(smtp, fleet, member_a, client):
    """The fixes that pay most linked to the top of the job's page, above its facts and summary: the
    reader who came for the cause and its fix scrolled to find them."""
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    job_url = BASE_URL + reverse("dashboard:job-detail", args=[fleet["resnet"].pk])
    fixes_html = html.split("Fixes that pay most")[1].split("</table>")[0]
    assert f'href="{job_url}#findings"' in fixes_html
    assert f"     {job_url}#findings\r\n" in text.split("FIXES THAT PAY MOST")[1]
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[fleet["resnet"].pk])).content.decode()
    assert page.count('id="findings"') == 1 and "Why the GPUs idled" in page.split('id="findings"')[1]


def test_each_cause_of_the_waste_links_to_the_week_s_jobs_with_it(smtp, fleet, member_a, client):
    """Only the three causes that grew most had a link ("Its jobs"); the waste by cause named the
    others with no way to their jobs but rebuilding the jobs list's filters by hand."""
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    section = html.split("Where the waste comes from")[1].split("Recoverable GPU-hours by cause")[0]
    found = dict(re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', section))
    expected = {
        Category.MODEL_CHECKPOINTING: [fleet["resnet"]],
        Category.IMPROPER_BATCH_SIZE: [fleet["bert"]],
        Category.HOST_GPU_TRANSFER: [fleet["resnet"]],
    }
    assert sorted(found.values()) == sorted(category.label for category in expected)
    client.force_login(member_a)
    for url, label in found.items():
        assert url.startswith(BASE_URL + reverse("dashboard:job-list"))
        page = client.get(path_of(url).replace("&amp;", "&"))
        category = next(category for category in expected if category.label == label)
        assert [job.pk for job in page.context["page"]] == [job.pk for job in expected[category]], label


def test_a_causes_jobs_link_lists_them_by_what_that_cause_cost_them(smtp, fleet, team_a, member_a, client):
    """ "Its jobs" and a cause's link opened the jobs list newest first, so the digest's costliest job
    (Fixes that pay most: 85.5 GPU-hours, then 12.4) came second after a cheaper job started later. Then
    by unused GPU-hours: a job that lost most to other causes (big-idle: 20 unused GPU-hours, 0.5 of them
    to checkpointing) came first beside the cause's recoverable GPU-hours. They list the jobs by what that
    cause cost them, as the team page's and the cause page's links do (f28091c)."""
    rules = RuleSet.objects.get(version=2)
    later = JobFactory(team=team_a, name="later-cheaper", start_time=WEEK_START + timedelta(days=5), gpu_hours=3,
                       unused_gpu_hours=1.2, mean_gpu_util=30)  # fmt: skip
    triaged(later, rules, (Category.MODEL_CHECKPOINTING, 1.2, {}))
    big_idle = JobFactory(team=team_a, name="big-idle", start_time=WEEK_START + timedelta(days=3), gpu_hours=24,
                          unused_gpu_hours=20, mean_gpu_util=15)  # fmt: skip
    triaged(big_idle, rules, (Category.MODEL_CHECKPOINTING, 0.5, {}), (Category.API_MISUSE, 19.0, {}))
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    fixes = section(text, "FIXES THAT PAY MOST")
    assert fixes.index("train-resnet") < fixes.index("later-cheaper")
    section_html = html.split("Where the waste comes from")[1].split("Recoverable GPU-hours by cause")[0]
    url = next(url for url, label in re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', section_html)
               if label == Category.MODEL_CHECKPOINTING.label)  # fmt: skip
    assert url.endswith("&amp;sort=recoverable")
    client.force_login(member_a)
    listed = client.get(path_of(url).replace("&amp;", "&")).context["page"]
    assert [job.name for job in listed] == ["train-resnet", "later-cheaper", "big-idle"]
    # The team page the digest's button opens links its causes to the jobs in the same order.
    page = client.get(reverse("dashboard:team-detail", args=[team_a.slug]), {"from": "2026-11-16", "to": "2026-11-22"})
    assert "category=model_checkpointing&amp;sort=recoverable" in page.content.decode()


# --- Unsubscribing -------------------------------------------------------------------------------


def test_one_click_unsubscribe_header_works_without_login_and_stops_the_next_send(smtp, fleet, member_a, client):
    send_weekly_task.delay(WEEK).get()
    message = smtp.to(member_a.email)[0]
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    url = re.fullmatch(r"<(https://[^>]+)>", message["List-Unsubscribe"].strip())[1]
    # RFC 8058: the mail client POSTs this body, with no session and no CSRF token.
    response = client.post(path_of(url), "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200 and b"Unsubscribed" in response.content
    assert Subscription.objects.get(user=member_a, kind=DigestKind.TEAM).active is False

    send_weekly_task.delay(weeks.shift(WEEK, 1)).get()
    assert len(smtp.to(member_a.email)) == 1  # nothing new for alice; the operator still gets theirs
    assert not Delivery.objects.filter(recipient=member_a.email, iso_week=weeks.shift(WEEK, 1)).exists()


def test_unsubscribe_link_asks_then_unsubscribes_and_a_forged_one_fails(smtp, fleet, member_a, client):
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    url = next(u for u in links(html) if "/digests/unsubscribe/" in u)
    assert url in text
    page = client.get(path_of(url))  # a link scanner's GET changes nothing
    assert page.status_code == 200 and b"<form" in page.content
    # Whoever holds the link (a forwarded digest) is not told the recipient's address, only a hint of it.
    assert member_a.email == "alice-member@example.org"
    assert "alice-member@example.org" not in page.content.decode() and "alice-member" not in page.content.decode()
    assert "to a…@example.org?" in page.content.decode()
    assert not Subscription.objects.filter(user=member_a).exists()
    assert client.post(path_of(url)).status_code == 200
    assert Subscription.objects.get(user=member_a, kind=DigestKind.TEAM).active is False
    forged = path_of(url).replace("/unsubscribe/", "/unsubscribe/x")
    assert client.post(forged).status_code == 400


# --- Exactly once --------------------------------------------------------------------------------


def test_sending_twice_for_one_week_delivers_once(smtp, fleet, member_a, operator):
    send_weekly_task.delay(WEEK).get()
    second = send_digest_task.delay(DigestKind.TEAM, WEEK, member_a.team_memberships.get().team_id).get()
    send_weekly_task.delay(WEEK).get()
    assert second["sent"] == 0 and second["skipped"] == 1
    assert len(smtp.to(member_a.email)) == 1 and len(smtp.to(operator.email)) == 1
    delivery = Delivery.objects.get(recipient=member_a.email, iso_week=WEEK)
    assert delivery.status == Delivery.Status.SENT and delivery.attempts == 1 and delivery.sent_at
    assert delivery.message_id == smtp.to(member_a.email)[0]["Message-ID"]


def test_a_subject_is_plain_text_not_html(smtp, fleet, member_a, team_a):
    """The subject template escaped as HTML does: a team 'R&D' read 'R&amp;D' in the mail client."""
    team_a.name = "O'Brien's R&D <ML>"
    team_a.save()
    send_weekly_task.delay(WEEK).get()
    [message] = smtp.to(member_a.email)
    assert message["Subject"].strip().startswith(f"O'Brien's R&D ‹ML›, {WEEK}: ")  # no markup in a header, ever


def test_a_server_that_fails_the_first_attempt_still_delivers_exactly_once(
    smtp, fleet, member_a, operator, retries_in_process
):
    smtp.fail_first = 1  # 451 for the first message offered
    send_weekly_task.delay(WEEK).get()
    assert smtp.attempts == 3  # the refused one, its retry, and the operator digest
    assert len(smtp.to(member_a.email)) == 1 and len(smtp.to(operator.email)) == 1
    delivery = Delivery.objects.get(recipient=member_a.email, iso_week=WEEK)
    assert delivery.status == Delivery.Status.SENT and delivery.attempts == 2 and delivery.last_error == ""


def test_a_mail_server_that_is_not_there_is_named_with_the_settings_to_check(
    smtp, settings, fleet, member_a, retries_in_process
):
    # Before, the delivery's error (deliveries page, send_digests) was only
    # "ConnectionRefusedError: [Errno 111] Connection refused": which server, which setting?
    settings.DIGEST_MAX_RETRIES = 0
    settings.EMAIL_PORT = free_port()  # nothing listens there
    send_digest_task.delay(DigestKind.TEAM, WEEK, member_a.team_memberships.get().team_id).get()
    delivery = Delivery.objects.get(recipient=member_a.email, iso_week=WEEK)
    assert delivery.status == Delivery.Status.FAILED
    assert delivery.last_error.startswith(
        f"The mail server 127.0.0.1:{settings.EMAIL_PORT} refused the connection: check EMAIL_HOST and EMAIL_PORT "
        "(ConnectionRefusedError: "
    )


def test_a_server_that_keeps_failing_leaves_a_failed_delivery_operators_see(
    smtp, settings, fleet, member_a, operator, client, retries_in_process
):
    settings.DIGEST_MAX_RETRIES = 2
    smtp.fail_first = 100
    send_digest_task.delay(DigestKind.TEAM, WEEK, member_a.team_memberships.get().team_id).get()
    assert smtp.envelopes == [] and smtp.attempts == 3  # first try + 2 retries
    delivery = Delivery.objects.get(recipient=member_a.email, iso_week=WEEK)
    assert delivery.status == Delivery.Status.FAILED and delivery.attempts == 3
    assert "451" in delivery.last_error

    client.force_login(member_a)
    assert client.get(reverse("digests:deliveries")).status_code == 404
    client.force_login(operator)
    page = client.get(reverse("digests:deliveries"), {"status": "failed"})
    assert page.status_code == 200 and member_a.email.encode() in page.content and b"451" in page.content

    # Once the server is back, the operator's Retry sends it (once).
    smtp.fail_first = 0
    client.post(reverse("digests:delivery-retry", args=[delivery.pk]))
    delivery.refresh_from_db()
    assert delivery.status == Delivery.Status.SENT and len(smtp.to(member_a.email)) == 1


def test_a_refused_address_fails_at_once_and_the_others_still_get_theirs(smtp, fleet, team_a, member_a):
    colleague = OwnerFactory(user=UserFactory(username="carl"), team=team_a).user
    smtp.fail_first, smtp.reply = 1, "550 5.1.1 No such mailbox"
    result = send_digest_task.delay(DigestKind.TEAM, WEEK, team_a.pk).get()
    assert result["sent"] == 1 and result["failed"] == 1 and result["retry"] == ""
    assert smtp.attempts == 2  # a permanent refusal is not retried
    assert len(smtp.to(colleague.email)) == 1
    assert Delivery.objects.get(recipient=member_a.email).status == Delivery.Status.FAILED


def test_no_email_goes_to_a_user_without_an_address(smtp, fleet, team_a):
    OwnerFactory(user=UserFactory(username="no-address", email=""), team=team_a)
    send_weekly_task.delay(WEEK).get()
    assert all(m["To"] for m in smtp.messages)
    assert not Delivery.objects.filter(recipient="").exists()
    assert Delivery.objects.filter(kind=DigestKind.TEAM, team=team_a).count() == 1


# --- Pages -----------------------------------------------------------------------------------------


def test_preview_shows_members_their_teams_and_operators_everything(fleet, member_a, operator, outsider, client):
    team_a_url = reverse("digests:preview-team", args=["team-a", WEEK])
    team_b_url = reverse("digests:preview-team", args=["team-b", WEEK])
    operator_url = reverse("digests:preview-operator", args=[WEEK])
    assert client.get(team_a_url).status_code == 302  # login first
    client.force_login(member_a)
    page = client.get(team_a_url)
    assert page.status_code == 200 and b"train-resnet" in page.content and b"Subject:" in page.content
    text = client.get(team_a_url, {"part": "text", "raw": "1"})
    assert text["Content-Type"].startswith("text/plain") and b"FIXES THAT PAY MOST" in text.content
    assert client.get(team_a_url, {"part": "html"}).content.startswith(b"<!doctype html>")
    assert client.get(team_b_url).status_code == 404
    assert client.get(operator_url).status_code == 404
    assert client.get(reverse("digests:preview-team", args=["team-a", "2026-W60"])).status_code == 404
    client.force_login(outsider)
    assert client.get(team_a_url).status_code == 404
    client.force_login(operator)
    for url in (team_a_url, team_b_url, operator_url, reverse("digests:index")):
        assert client.get(url).status_code == 200
    # Any week, also one without jobs.
    assert client.get(reverse("digests:preview-team", args=["team-a", "2020-W01"])).status_code == 200


class _Pre(HTMLParser):
    """The text of a page's <pre id=...> as a browser shows it, and the page's links."""

    def __init__(self, pre_id: str):
        super().__init__(convert_charrefs=True)
        self.pre_id, self.inside, self.text, self.links = pre_id, False, "", {}
        self.link: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "pre" and attrs.get("id") == self.pre_id:
            self.inside = True
        elif tag == "a":
            self.link = attrs.get("href")
            self.links[self.link] = ""

    def handle_endtag(self, tag):
        if tag == "pre":
            self.inside = False
        elif tag == "a":
            self.link = None

    def handle_data(self, data):
        if self.inside:
            self.text += data
        if self.link is not None:
            self.links[self.link] += data


def test_the_plain_text_part_opens_as_a_page_a_phone_can_read_with_the_raw_text_a_link_away(fleet, member_a, client):
    """The preview's "Plain-text part" answered text/plain, which has no viewport: a phone laid the
    mail out 980 px wide and shrank it to an unreadable size. It is now a page of the site (its
    viewport, its menu) with the mail's text, as mailed and escaped, in a block that wraps its long
    lines; the text/plain answer is a link away for whoever needs the bytes as mailed."""
    fleet["resnet"].name = "train-<b>resnet</b>"
    fleet["resnet"].save()
    url = reverse("digests:preview-team", args=["team-a", WEEK])
    client.force_login(member_a)
    raw = client.get(url, {"part": "text", "raw": "1"})
    assert raw["Content-Type"] == "text/plain; charset=utf-8" and "train-<b>resnet</b>" in raw.content.decode()
    page = client.get(url, {"part": "text"})
    html = page.content.decode()
    assert page["Content-Type"].startswith("text/html") and '<meta name="viewport"' in html
    pre = _Pre("mail-text")
    pre.feed(html)
    assert pre.text.strip() == raw.content.decode().strip()  # the mail's text, every line of it
    assert "train-&lt;b&gt;resnet&lt;/b&gt;" in html  # shown as text, not markup
    assert pre.links[f"{url}?part=text&raw=1"] == "The text as mailed (text/plain)"
    assert pre.links[url] == "The digest as HTML"
    # The HTML preview's link still opens the text part.
    preview = _Pre("")
    preview.feed(client.get(url).content.decode())
    assert preview.links[f"{url}?part=text"] == "Plain-text part"


# The text part's page: how wide the page and the text's block are, against the window, and the text's size.
MAIL_TEXT = """
const pre = document.querySelector('#mail-text');
return {page: document.documentElement.scrollWidth, window: window.innerWidth,
        preScrolls: pre.scrollWidth > pre.clientWidth, right: pre.getBoundingClientRect().right,
        fontSize: parseFloat(getComputedStyle(pre).fontSize)};
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_plain_text_part_reads_at_the_screens_width(fleet, member_a, browser, live_server):  # noqa: F811
    """390 px wide the text part was 980 px of text shrunk to fit (text/plain, no viewport); now each of
    its long lines (a fix, a link) wraps inside the screen in type a phone can read, and the page passes
    axe's checks at 390 and 1280 px."""
    from tests.test_accessibility import narrow_window_problems, open_as, violations

    open_as(browser, live_server.url, member_a)
    url = f"{live_server.url}{reverse('digests:preview-team', args=['team-a', WEEK])}?part=text"
    with window_width(browser, 390, mobile=True):
        browser.get(url)
        phone = browser.execute_script(MAIL_TEXT)
        browser.save_screenshot(str(SHOTS / "digest-text-part-phone.png"))
        phone_violations = violations(browser)
    reflow = narrow_window_problems(browser)
    assert phone["window"] == 390 and phone["page"] == 390, phone
    assert not phone["preScrolls"] and phone["right"] <= 390 and phone["fontSize"] >= 12, phone
    assert phone_violations == [] and reflow == [], (phone_violations, reflow)
    browser.get(url)
    assert violations(browser) == []


def test_settings_page_turns_digests_off_and_on(smtp, fleet, member_a, operator, team_b, client):
    client.force_login(member_a)
    page = client.get(reverse("digests:settings"))
    assert [c.label for c in page.context["choices"]] == ["Team digest: Team A"]
    client.post(reverse("digests:settings"), {})  # every box unticked
    assert Subscription.objects.get(user=member_a).active is False
    # An operator (no team of their own) opts into team B's digest.
    client.force_login(operator)
    keys = {c.label: c.key for c in client.get(reverse("digests:settings")).context["choices"]}
    client.post(
        reverse("digests:settings"), {"on": [keys["Operator digest: the whole fleet"], keys["Team digest: Team B"]]}
    )
    send_weekly_task.delay(WEEK).get()
    assert smtp.to(member_a.email) == []
    subjects = sorted(m["Subject"].split(",")[0] for m in smtp.to(operator.email))
    assert subjects == ["Fleet", "Team B"]


# --- Command and schedule ----------------------------------------------------------------------------


def test_send_digests_command(smtp, fleet, member_a, capsys):
    from django.core.management import call_command

    call_command("send_digests", "--week", WEEK, "--team", "team-a", "--dry-run")
    out = capsys.readouterr().out
    assert f"team digest team-a {WEEK} → {member_a.email}" in out and "FIXES THAT PAY MOST" in out
    assert smtp.messages == [] and not Delivery.objects.exists()

    call_command("send_digests", "--week", WEEK, "--team", "team-a", "--to", "lead@example.org")
    assert [m["To"] for m in smtp.messages] == ["lead@example.org"]
    assert smtp.messages[0]["List-Unsubscribe"] is None  # a copy for someone who is not a subscriber
    call_command("send_digests", "--week", WEEK)
    call_command("send_digests", "--week", WEEK)
    assert len(smtp.to(member_a.email)) == 1
    out = capsys.readouterr().out
    assert "0 sent, 1 already sent" in out


def test_send_digests_command_help_and_bad_week():
    from django.core.management import CommandError, call_command, load_command_class

    parser = load_command_class("triage.digests", "send_digests").create_parser("manage.py", "send_digests")
    help_text = parser.format_help()
    assert "--week" in help_text and "--dry-run" in help_text and "--to ADDRESS" in help_text
    with pytest.raises(CommandError, match="not an ISO week"):
        call_command("send_digests", "--week", "2026-48")


def test_weekly_beat_entry_fires_at_the_configured_hour_in_its_time_zone():
    import pickle

    from triage.digests.schedules import ZonedCrontab

    entry = django_settings.CELERY_BEAT_SCHEDULE["digests.send_weekly"]
    assert entry["task"] == "digests.send_weekly" == send_weekly_task.name
    schedule = ZonedCrontab(minute=0, hour=7, day_of_week="mon", zone="Europe/Berlin")
    assert pickle.loads(pickle.dumps(schedule)) == schedule  # noqa: S301 (beat's shelve pickles entries)
    last_run = datetime(2026, 11, 16, 6, 0, tzinfo=UTC)
    # Monday 23 November 2026, 07:00 in Berlin is 06:00 UTC (CET, UTC+1).
    schedule.nowfun = lambda: datetime(2026, 11, 23, 5, 30, tzinfo=UTC)
    due, wait = schedule.is_due(last_run)
    assert not due and wait == pytest.approx(30 * 60)
    schedule.nowfun = lambda: datetime(2026, 11, 23, 6, 0, 1, tzinfo=UTC)
    assert schedule.is_due(last_run)[0]


def test_the_fix_line_is_the_change_triage_guidance_names():
    from decimal import Decimal

    from triage.digests.findings import fix_line
    from triage.guidance import guidance_for

    guidance = guidance_for(
        Category.DATA_PREPROCESSING,
        "",
        {"cpu_count": 8, "gpu_count": 2, "num_workers": 1},
        gpu_hours=3.0,
        price_per_gpu_hour=Decimal("2.50"),
        currency="USD",
        job={"cpu_count": 8, "gpu_count": 2},
    )
    line = fix_line(guidance)
    # On one line, cut at a word with "…" where it is long (this one is: it asks for more CPUs too).
    assert line and "\n" not in line and " ".join(guidance["change"].split()).startswith(line.removesuffix("…"))
    assert fix_line({}) == "" and fix_line({"change": {"text": "Pin memory"}}) == "Pin memory"


def test_iso_weeks():
    period = weeks.parse_week("2026-W48")
    assert period.start == datetime(2026, 11, 23, tzinfo=UTC) and period.end == datetime(2026, 11, 30, tzinfo=UTC)
    assert weeks.last_complete_week(datetime(2026, 11, 23, 6, tzinfo=UTC)) == "2026-W47"
    assert weeks.shift("2026-W53", 1) == "2027-W01"
    assert weeks.week_of(datetime(2027, 1, 1, tzinfo=UTC)) == "2026-W53"
    for bad in ("2026-W54", "2025-W53", "2026W48", "", "0001-W01", "9999-W52", "1968-W52", "5140-W01"):
        with pytest.raises(ValueError, match="week"):
            weeks.parse_week(bad)
    assert weeks.shift("1970-W02", -1) == "1970-W01"


@pytest.mark.parametrize("week", ["9999-W52", "0001-W01", "0001-W02"])
def test_weeks_at_the_ends_of_the_calendar_are_refused_not_a_server_error(client, operator, team_a, week):
    """Year 9999's last week has no week after it, year 1's first none before (OverflowError), and
    year 1 was written '1-W01', which no week parses: every digest page answered 500."""
    client.force_login(operator)
    urls = [
        reverse("digests:index") + f"?week={week}",
        reverse("digests:preview-team", args=[team_a.slug, week]),
        reverse("digests:preview-operator", args=[week]),
    ]
    assert all(client.get(url).status_code < 500 for url in urls)


@pytest.mark.parametrize("team_id", ["x", [1], True, 2**70])
def test_a_signed_token_of_the_wrong_shape_is_refused_not_a_server_error(client, member_a, team_id):
    """Only SECRET_KEY can sign a token, but a token of another shape (one day's format, a bug) must
    not answer 500: the team id is checked like the user id."""
    from django.core import signing

    from triage.digests.services import UNSUBSCRIBE_SALT

    token = signing.dumps([member_a.pk, "team", team_id], salt=UNSUBSCRIBE_SALT)
    assert client.post(reverse("digests:unsubscribe", args=[token])).status_code == 400


def test_costs_are_labelled_in_the_currency_they_are_priced_in_and_mixed_ones_said_so(
    smtp, fleet, member_a, team_a, client, operator
):
    """Every money figure was labelled with DEFAULT_CURRENCY: a team priced in EUR read "30 USD", and
    amounts in EUR and USD were added into one "USD" total without a word (and then, with a note,
    added all the same)."""
    from fleet.models import ExchangeRate, GpuModelPrice, Job

    GpuModelPrice.objects.update(currency="EUR")
    Job.objects.exclude(cost=None).update(currency="EUR")
    send_weekly_task.delay(WEEK).get()
    [message] = smtp.to(member_a.email)
    assert message["Subject"].endswith("EUR)") and "USD" not in message.get_body(("plain",)).get_content()
    some = Job.objects.exclude(cost=None).filter(team=team_a).first()
    Job.objects.filter(pk=some.pk).update(currency="USD")
    client.force_login(operator)
    page = client.get(reverse("digests:preview-team", args=[team_a.slug, WEEK]), {"part": "text"})
    assert (
        "Costs in EUR (" in page.content.decode() and "no exchange rate to USD is set for it" in page.content.decode()
    )
    # With a rate, the EUR costs are converted into the reporting currency and the digest says at which.
    ExchangeRate.objects.create(currency="EUR", rate="2")
    week = weeks.parse_week(WEEK)
    mixed = Job.objects.filter(team=team_a, start_time__gte=week.start, start_time__lt=week.end).exclude(cost=None)
    expected = sum(float(job.cost) * (1 if job.currency == "USD" else 2) for job in mixed)
    context = services.build_context(DigestKind.TEAM, WEEK, team_a)
    assert context["currency"] == "USD" and context["totals"].cost == pytest.approx(expected)
    page = client.get(reverse("digests:preview-team", args=[team_a.slug, WEEK]), {"part": "text"})
    assert "Costs in EUR are converted to USD at 1 EUR = 2 USD." in page.content.decode()  # no Settings for a team
    operator_page = client.get(reverse("digests:preview-operator", args=[WEEK]), {"part": "text"}).content.decode()
    assert "Costs in EUR are converted to USD at 1 EUR = 2 USD (Settings)." in operator_page


# --- Weeks with less work --------------------------------------------------------------------------


def test_a_week_without_jobs_claims_no_improvement(smtp, fleet, team_a, member_a, operator):
    """Team A ran jobs in 2026-W47 and none in W48. Its W48 digest said "11.5 fewer unused GPU-hours",
    "Model checkpointing: gone this week" and coloured every fall green: less waste because there
    was no work. It now says there is nothing to compare, and the operators' digest no longer says
    every low-utilization job had a named cause when there was none."""
    next_week = weeks.shift(WEEK, 1)
    send_weekly_task.delay(next_week).get()
    text, html = parts(smtp.to(member_a.email)[0])
    for part in (text, html):
        assert "No jobs started this week, so there is nothing to compare with the week before." in part
        assert "gone this week" not in part and "fewer unused GPU-hours" not in part
    context = services.build_context(DigestKind.TEAM, next_week, team_a)
    assert context["previous_totals"].unused_gpu_hours == 11.5 and context["totals"].jobs == 0
    trends = {kpi.label: kpi.trend for kpi in context["kpis"]}
    assert trends["Unused GPU-hours"] == trends["Wasted cost"] == "neutral"  # a fall, not a gain
    operator_text, _ = parts(smtp.to(operator.email)[0])
    assert "UNCLASSIFIED\r\n  No jobs started this week." in operator_text
    assert "Every low-utilization job this week has a named cause." not in operator_text


def test_a_week_without_jobs_says_so_instead_of_reporting_zeros(smtp, fleet, team_a, member_a, operator):
    """The week after a team's last jobs, its digest was titled "Team A, 2026-W48: 0.0 GPU-hours",
    opened on "0 jobs, 0 at or below 50 % GPU utilization", and said "No causes of idle GPUs were
    found in this week's jobs" and "No job this week had recoverable GPU-hours", of jobs there were not."""
    next_week = weeks.shift(WEEK, 1)
    send_weekly_task.delay(next_week).get()
    message = smtp.to(member_a.email)[0]
    assert message["Subject"] == "Team A, 2026-W48: no jobs started (24.0 GPU-hours the week before)"
    text, html = parts(message)
    assert "0.0 GPU-hours" not in message["Subject"] and "0 jobs, 0 at or below" not in text
    for part in (text, html):
        assert "No jobs of the team started this week." in part
        assert "found in this week's jobs" not in part and "No job this week had recoverable" not in part
    operator_message = smtp.to(operator.email)[0]
    # The fleet had jobs the week before: the feed stopped (tests/test_digest_feed_stopped.py).
    assert operator_message["Subject"] == "Fleet, 2026-W48: no new jobs since 2026-11-20 (10 days), check ingestion"
    operator_text, operator_html = parts(operator_message)
    assert "found in this week's jobs" not in operator_text and "found in this week's jobs" not in operator_html


def test_the_operator_digest_says_a_week_without_jobs_or_ingest_runs_in_words(smtp, fleet, operator):
    """The week after the fleet's last jobs the operator digest opened on "0 jobs, 0 at or below 50 % GPU
    utilization" (the team digest says "No jobs of the team started this week.") and its ingestion read
    "0 ingest runs: 0 succeeded, 0 partly rejected, 0 failed." (the HTML adding "No failed ingest runs."):
    zeros to add up to nothing. Both parts say it in words, and the text part's week of runs says "this
    week", as the HTML's does."""
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(operator.email)[0])
    assert "  1 ingest run this week: 0 succeeded, 0 partly rejected, 1 failed." in text.splitlines()
    smtp.envelopes.clear()
    send_weekly_task.delay(weeks.shift(WEEK, 1)).get()
    text, html = parts(smtp.to(operator.email)[0])
    # The fleet had jobs the week before: said as a feed that stopped (tests/test_digest_feed_stopped.py).
    assert text.splitlines()[1] == "No new jobs since 2026-11-20 (10 days) — check ingestion."
    assert "(UTC) · <strong>No new jobs since 2026-11-20 (10 days) — check ingestion.</strong></p>" in html
    for part in (text, html):
        assert "0 jobs" not in part and "0 ingest runs" not in part and "No failed ingest runs" not in part
        assert "No ingest runs this week." in part


def test_a_section_with_nothing_in_it_says_only_why(smtp, fleet, member_a, operator):
    """In a week without jobs the text parts' waste by cause still said what recoverable GPU-hours are,
    above 'No jobs started this week.', of no figure; and the operator digest's unclassified jobs read
    'No job this week was at or below 50 % GPU utilization', of a week in which no job ran at all."""
    send_weekly_task.delay(weeks.shift(WEEK, 1)).get()
    for address in (member_a.email, operator.email):
        text = parts(smtp.to(address)[0])[0]
        assert "WHERE THE WASTE COMES FROM\r\n  No jobs started this week.\r\n" in text, address
        assert "Recoverable GPU-hours:" not in text, address
    text, html = parts(smtp.to(operator.email)[0])
    assert "UNCLASSIFIED\r\n  No jobs started this week.\r\n" in text
    assert as_read(html).split(">Unclassified</h2>")[1].split("</p>")[0].endswith(">No jobs started this week.")
    assert "was at or below" not in text and "was at or below" not in html


def _totals(jobs: int, hours: float, unused: float) -> queries.Totals:
    return queries.Totals(jobs, hours, hours, unused, 0.0, 0.0, 0.0, 0)


def test_fewer_unused_gpu_hours_count_as_better_only_when_the_waste_share_did_not_rise():
    before = _totals(10, 100.0, 30.0)  # 30 % waste
    busy_and_better = services._improvements(_totals(10, 100.0, 20.0), before, [], [])
    assert busy_and_better[1] == "10.0 fewer unused GPU-hours than the week before (30.0 → 20.0)."
    # Half the work and a larger share of it wasted: fewer unused hours, but nothing got better.
    assert services._improvements(_totals(5, 50.0, 20.0), before, [], []) == []


def test_the_digest_page_opens_on_the_newest_week_with_jobs_the_user_may_see(fleet, member_a, outsider, client):
    """It opened on the last complete week, which for an archive imported late (the demo fleet's)
    held no jobs: every preview was empty. Now it opens where the user's newest job started."""
    client.force_login(member_a)
    page = client.get(reverse("digests:index"))
    assert page.context["week"] == WEEK  # team A's newest job started in 2026-W47
    assert client.get(reverse("digests:index"), {"week": "2026-W40"}).context["week"] == "2026-W40"
    # A fleet that is up to date opens on the week the digests report: the last complete one.
    monday_after = WEEK_START + timedelta(weeks=1, hours=7)
    assert services.preview_week(member_a, now=monday_after) == WEEK
    assert services.preview_week(member_a, now=monday_after - timedelta(weeks=1)) == weeks.shift(WEEK, -1)
    client.force_login(outsider)  # no team, no jobs: the last complete week
    assert client.get(reverse("digests:index")).context["week"] == services.default_week()


def test_the_digest_pages_say_which_days_a_week_is(member_a, team_a, client):
    """ "Digests for 2026-W47" left a reader who does not count ISO weeks to work out which days those
    were; the digest pages give the week's days, as the digest's own heading does, in ISO dates as the
    dashboard's period ("2026-11-16 to 2026-11-22 (UTC)"), not "16–22 Nov 2026"."""
    client.force_login(member_a)
    page = client.get(reverse("digests:index"), {"week": WEEK}).content.decode()
    assert 'Digests for 2026-W47 <span class="muted">(2026-11-16 to 2026-11-22, UTC)</span>' in page
    page = client.get(reverse("digests:preview-team", args=[team_a.slug, "2027-W01"])).content.decode()
    assert "2027-W01 (2027-01-04 to 2027-01-10, UTC)</span></h1>" in page
    page = client.get(reverse("digests:preview-team", args=[team_a.slug, "2026-W53"])).content.decode()
    assert "2026-W53 (2026-12-28 to 2027-01-03, UTC)</span></h1>" in page


def test_both_digests_read_on_a_phone_without_scrolling_sideways(smtp, fleet, member_a, operator, browser, tmp_path):  # noqa: F811
    """Opened 320 px wide (a small phone's mail app), neither email is wider than the screen. The
    operator's needed 374 px: each team's waste share and its total held on one line, and 24 px
    of grey margin beside a card that fills the screen anyway."""
    send_weekly_task.delay(WEEK).get()
    widths = {}
    with window_width(browser, 320, mobile=True):
        for address in (member_a.email, operator.email):
            page = tmp_path / f"{address}.html"
            page.write_text(parts(smtp.to(address)[0])[1], encoding="utf-8")
            browser.get(page.as_uri())
            widths[address] = browser.execute_script("return document.documentElement.scrollWidth")
    assert widths == {member_a.email: 320, operator.email: 320}


def test_a_weeks_four_digit_figures_read_on_a_320_px_phone_without_scrolling_sideways(browser, tmp_path):  # noqa: F811
    """The demo's week 2026-W47 (make demo) has figures wider than the small fleet's: "1,718 USD" beside
    "1,755 USD", "▲ +10 pts", "321.0 GPU-h". Opened 320 px wide, its operator digest was 351 px and a
    team's 327 px, the week's figures and the teams' table a column past the screen. Each fits, every
    figure still on one line."""
    from tests.factories import TeamFactory

    team = TeamFactory(slug="platform", name="platform")
    day = timedelta(days=1)
    for start, hours, unused, cost in ((WEEK_START + day, 695.8, 321.0, "1718.00"),
                                       (WEEK_START - 3 * day, 711.4, 256.8, "1755.00"),
                                       (WEEK_START - 10 * day, 40.0, 4.0, "98.00")):  # fmt: skip
        JobFactory(team=team, start_time=start, gpu_hours=hours, unused_gpu_hours=unused, mean_gpu_util=30, cost=cost)
    mails = {
        "operator": services.render_triplet("operator-digest", services.build_context(DigestKind.OPERATOR, WEEK)),
        "team": services.render_triplet("team-digest", services.build_context(DigestKind.TEAM, WEEK, team)),
    }
    seen = {}
    with window_width(browser, 320, mobile=True):
        for name, (_, text, html) in mails.items():
            assert "1,718" in text and "1,755" in text, text  # the four-digit figures are in it
            page = tmp_path / f"{name}.html"
            page.write_text(html, encoding="utf-8")
            browser.get(page.as_uri())
            seen[name] = browser.execute_script("return document.documentElement.scrollWidth")
            # Every figure held on one line (a no-break space, white-space: nowrap) is still on one.
            seen[f"{name}, figures broken"] = browser.execute_script(
                "return [...document.querySelectorAll('[style*=nowrap]')]"
                ".filter(e => e.getClientRects().length > 1 || e.scrollWidth > e.clientWidth + 1)"
                ".map(e => e.textContent)"
            )
    assert seen == {"operator": 320, "operator, figures broken": [], "team": 320, "team, figures broken": []}


FIRST_SCREEN = 844  # a phone's window, 390 x 844 CSS pixels


def test_on_a_phones_first_screen_the_team_digest_names_its_top_cause_and_the_fix_to_make_first(
    smtp,
    fleet,
    member_a,
    browser,  # noqa: F811
    tmp_path,
):
    """A team reading its digest on a phone saw the week's figures and, a scroll below, the waste by
    cause; the change to make first came three screens down, under "Fixes that pay most". The first
    screen now says it too: the top cause (linked to its jobs) and the job to fix first, its change,
    linked to its findings."""
    send_weekly_task.delay(WEEK).get()
    html = parts(smtp.to(member_a.email)[0])[1]
    page = tmp_path / "digest.html"
    page.write_text(html, encoding="utf-8")
    resnet = BASE_URL + reverse("dashboard:job-detail", args=[fleet["resnet"].pk]) + "#findings"
    bottom_of_text = """
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          if (node.textContent.includes(arguments[0])) {
            const range = document.createRange(); range.selectNodeContents(node);
            return range.getBoundingClientRect().bottom;
          }
        }
        return null;"""
    # The first link there whose address has this in it.
    bottom_of_link = (
        "return [...document.links].find(link => link.href.includes(arguments[0])).getBoundingClientRect().bottom"
    )
    with window_width(browser, 390, mobile=True):
        browser.get(page.as_uri())
        seen = {
            "unused GPU-hours": browser.execute_script(bottom_of_text, "Unused GPU-hours"),
            "the top cause, linked": browser.execute_script(bottom_of_link, "category=model_checkpointing"),
            "the fix to make first": browser.execute_script(bottom_of_text, "Save checkpoints asynchronously"),
            "its job, linked": browser.execute_script(bottom_of_link, resnet),
        }
        SHOTS.mkdir(exist_ok=True)
        browser.save_screenshot(str(SHOTS / "digest-team-phone.png"))
    assert {what: bottom <= FIRST_SCREEN for what, bottom in seen.items()} == dict.fromkeys(seen, True), seen


def test_the_text_part_names_the_top_cause_and_the_fix_to_make_first_above_the_figures(smtp, fleet, member_a):
    """The plain-text part (a watch, a terminal, a mail client that shows only the first lines) said the
    change to make first some thirty lines down. It says it under the week's first line now, with the
    job's link."""
    send_weekly_task.delay(WEEK).get()
    text = parts(smtp.to(member_a.email)[0])[0]
    resnet = BASE_URL + reverse("dashboard:job-detail", args=[fleet["resnet"].pk]) + "#findings"
    lead = text.split("GPU-hours  ")[0].splitlines()
    assert "Top cause: Model checkpointing, 4.0 of the 11.5 unused GPU-hours, in 1 job." in lead, lead
    fix = next(line for line in lead if line.startswith("Fix first: "))
    assert fix == (
        f"Fix first: train-resnet ({fleet['resnet'].cluster.name}/{fleet['resnet'].external_id}), "
        "5.5 GPU-hours to win back: Save checkpoints asynchronously. Training then goes on while the file is written."
    )
    assert lead[lead.index(fix) + 1].strip() == resnet


def test_the_digests_carry_the_answers_job_owners_gave(smtp, fleet, team_a, team_b, member_a, operator):
    """A team sees what it said of a listed job's causes instead of the bare finding again, and its
    fix is that of a cause nobody set aside; the operators see the week's answers per cause, the
    most disputed first."""
    resnet = fleet["resnet"]
    given = [
        Feedback.objects.create(job=resnet, category=Category.MODEL_CHECKPOINTING, user=member_a, verdict="expected"),
        Feedback.objects.create(job=resnet, category=Category.HOST_GPU_TRANSFER, user=operator, verdict="wrong"),
        Feedback.objects.create(job=resnet, category=Category.HOST_GPU_TRANSFER, user=member_a, verdict="right"),
        Feedback.objects.create(
            job=fleet["bert"], category=Category.IMPROPER_BATCH_SIZE, user=member_a, verdict="right"
        ),
        # Given the week before: not this week's answers.
        Feedback.objects.create(
            job=fleet["bert"], category=Category.IMPROPER_BATCH_SIZE, user=operator, verdict="wrong"
        ),
    ]
    for answer in given[:4]:
        Feedback.objects.filter(pk=answer.pk).update(updated_at=WEEK_START + timedelta(days=5))
    Feedback.objects.filter(pk=given[4].pk).update(updated_at=WEEK_START - timedelta(days=1))
    send_weekly_task.delay(WEEK).get()

    text, html = parts(smtp.to(member_a.email)[0])
    fixes = text.split("FIXES THAT PAY MOST")[1]
    # Checkpointing (4 of resnet's 5.5 GPU-hours) was answered intended: resnet ranks by its
    # host-GPU transfer alone, under bert, and that is the fix it is given.
    assert fixes.index("eval-bert") < fixes.index("train-resnet")
    resnet_entry = fixes.split("train-resnet")[1].split("\n  2.")[0].split("http")[0]
    assert "1.5 recoverable GPU-hours" in resnet_entry
    assert "Causes: Model checkpointing, Inefficient host-GPU data transfer" in resnet_entry
    assert "alice-member answered on Model checkpointing: Intended: it is meant to run this way" in resnet_entry
    assert "olivia-operator answered on Inefficient host-GPU data transfer: Wrong: not the cause" in resnet_entry
    assert "Fix: Use pinned memory and non_blocking copies" in resnet_entry
    assert "Save checkpoints asynchronously" not in resnet_entry
    assert "Left out" not in text
    assert "alice-member answered on Model checkpointing: Intended" in html

    operator_text, operator_html = parts(smtp.to(operator.email)[0])
    section = operator_text.split("WHAT JOB OWNERS ANSWERED")[1].split("INGESTION")[0]
    lines = [line.strip() for line in section.strip().splitlines()[1:]]
    assert [line.split(":")[0] for line in lines] == [
        "Inefficient host-GPU data transfer",  # the disputed one first
        "Improper batch size",
        "Model checkpointing",
    ]
    assert lines[1].startswith("Improper batch size: 1 right, 0 wrong, 0 intended")  # last week's answer left out
    assert lines[0].endswith("/categories/host_gpu_transfer/")
    assert "What job owners answered" in operator_html


def test_a_job_whose_people_set_aside_every_cause_is_left_out_of_the_fixes(smtp, fleet, member_a, operator):
    """A team that answered each cause of a job wrong or intended is not told again to make those
    changes: the job leaves the fixes that pay most, a line says what was left out, and its waste
    still counts in the week's causes."""
    resnet = fleet["resnet"]
    Feedback.objects.create(job=resnet, category=Category.MODEL_CHECKPOINTING, user=member_a, verdict="expected")
    Feedback.objects.create(job=resnet, category=Category.HOST_GPU_TRANSFER, user=operator, verdict="wrong")
    send_weekly_task.delay(WEEK).get()

    text, html = parts(smtp.to(member_a.email)[0])
    html = as_read(html)  # the figures, as read (a no-break space keeps each with its unit)
    fixes = text.split("FIXES THAT PAY MOST")[1]
    assert "train-resnet" not in fixes.split("Left out")[0]
    assert fixes.strip().startswith("1. eval-bert")
    assert "Left out: 1 job (5.5 GPU-hours) whose every cause was answered wrong or intended:" in fixes
    assert "Left out: 1 job (5.5 GPU-hours)" in html
    assert "train-resnet</a>" not in html.split("Fixes that pay most")[1].split("Left out")[0]
    assert "Model checkpointing" in text.split("FIXES THAT PAY MOST")[0]  # the waste by cause keeps it

    # Someone answering right takes the cause back: the job and its fix return.
    Feedback.objects.create(job=resnet, category=Category.MODEL_CHECKPOINTING, user=operator, verdict="right")
    ranked, left_out = findings.top_jobs(Job.objects.filter(pk=resnet.pk), 10)
    assert [(entry.job_id, entry.recoverable_gpu_hours) for entry in ranked] == [(resnet.pk, 4.0)]
    assert ranked[0].fix.startswith("Save checkpoints asynchronously")
    assert ranked[0].set_aside == [Category.HOST_GPU_TRANSFER]
    assert left_out == findings.SetAside(0, 0.0)


def test_the_jobs_left_out_of_the_fixes_are_named_with_a_link(smtp, fleet, team_a, member_a):
    """ "Left out: 1 job (9.0 GPU-hours) whose every cause was answered wrong or intended" did not say
    which job: a reader could not check it, nor take an answer back. A handful are named, each linked
    to its findings (the most GPU-hours first); the rest are counted."""
    resnet = fleet["resnet"]
    Feedback.objects.create(job=resnet, category=Category.MODEL_CHECKPOINTING, user=member_a, verdict="expected")
    Feedback.objects.create(job=resnet, category=Category.HOST_GPU_TRANSFER, user=member_a, verdict="wrong")
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    url = BASE_URL + reverse("dashboard:job-detail", args=[resnet.pk]) + "#findings"
    named = f"     train-resnet ({resnet.cluster.name}/{resnet.external_id}, someone): {url}\r\n"
    assert f"intended:\r\n{named}\r\n" in text
    left_out = html.split("Left out:")[1].split("</p>")[0]
    assert f'<a href="{url}"' in left_out and "train-resnet</a>" in left_out and "more" not in left_out

    rules = RuleSet.objects.get(version=2)
    for hours in range(1, 7):  # six more, of 1 to 6 GPU-hours set aside
        job = JobFactory(team=team_a, name=f"sweep-{hours}", start_time=WEEK_START + timedelta(days=5))
        triaged(job, rules, (Category.IMPROPER_BATCH_SIZE, float(hours), {}))
        Feedback.objects.create(job=job, category=Category.IMPROPER_BATCH_SIZE, user=member_a, verdict="wrong")
    context = services.team_context(team_a, weeks.parse_week(WEEK))
    assert [item["job"].name for item in context["set_aside_jobs"]] == [
        "sweep-6", "train-resnet", "sweep-5", "sweep-4", "sweep-3"
    ]  # fmt: skip
    assert context["set_aside_unnamed"] == 2
    _, text, html = services.render_triplet("team-digest", context)
    assert "Left out: 7 jobs (26.5 GPU-hours)" in text and "     and 2 more\n" in text
    assert html.split("Left out:")[1].split("</p>")[0].count("<a href=") == 5 and " and 2 more." in html


def test_a_week_without_answers_has_no_answers_section(smtp, fleet, operator):
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(operator.email)[0])
    assert "WHAT JOB OWNERS ANSWERED" not in text and "What job owners answered" not in html


def test_runs_that_got_better_are_listed_with_the_causes_no_longer_found(
    smtp, fleet, team_a, team_b, member_a, operator
):
    rules = RuleSet.objects.get(version=2)
    cluster = fleet["resnet"].cluster

    def run(team, name, days, util, user="dana"):
        start = WEEK_START + timedelta(days=days)
        return JobFactory(team=team, cluster=cluster, name=name, user=user, start_time=start,
                          end_time=start + timedelta(hours=3), mean_gpu_util=util, state="COMPLETED")  # fmt: skip

    before = run(team_a, "nightly-llm", -10, 30)
    triaged(before, rules, (Category.DATA_PREPROCESSING, 2.0, {}), (Category.MODEL_CHECKPOINTING, 1.0, {}))
    fixed = run(team_a, "nightly-llm", 2, 75)
    triaged(fixed, rules, (Category.MODEL_CHECKPOINTING, 0.5, {}), status=TriageStatus.CLASSIFIED)
    run(team_a, "nightly-llm", 4, 80)  # its run before (the fixed one) was already above the line
    run(team_a, "still-slow", -3, 20), run(team_a, "still-slow", 3, 45)  # better, but still low
    run(team_a, "nightly-llm", 1, 20, user="erik")  # another user's job of that name, not a run before
    run(team_b, "b-sweep", -2, 10), run(team_b, "b-sweep", 1, 60)
    send_weekly_task.delay(WEEK).get()

    text, html = parts(smtp.to(member_a.email)[0])
    section = text.split("RUNS THAT GOT BETTER")[1].split("\n\n")[0]
    entries = [line.strip() for line in section.splitlines()[1:] if line.strip().startswith("+")]
    assert entries == [
        f"+ nightly-llm (dana, {cluster.name}): 30 % → 75 % since its run of 2026-11-06; "
        "no longer found: Data preprocessing on CPU"  # model checkpointing is still found
    ]
    # One arrow in the text part, the one its other changes ("6.0 → 4.0 recoverable GPU-hours") are written
    # with, where this line alone wrote "->".
    assert "->" not in text
    assert f"/jobs/{fixed.pk}/#runs" in section
    assert "nightly-llm</a>" in html and "b-sweep" not in html

    operator_text, _ = parts(smtp.to(operator.email)[0])
    assert "->" not in operator_text
    fleet_section = operator_text.split("RUNS THAT GOT BETTER")[1].split("\n\n")[0]
    assert [line.strip().split(" (")[0] for line in fleet_section.splitlines() if line.strip().startswith("+")] == [
        "+ b-sweep",  # 10 -> 60: the biggest rise first
        "+ nightly-llm",
    ]
    # A reader who rates the fixed run (or its run before) blind gets neither: their causes are findings.
    for blind in (fixed.pk, before.pk):
        context = services.operator_context(weeks.parse_week(WEEK), hidden=frozenset({blind}))
        assert [item["job"].name for item in context["improved_runs"]] == ["b-sweep"]


def test_only_runs_that_ended_successfully_count_as_runs_that_got_better(smtp, fleet, team_a, member_a):
    """alpha/4813130 FAILED after an hour at 67 % and the digest listed it as a fix that worked, while
    the COMPLETED run after it at 83 % was left out: its run before, the failed one, was above the
    line. A failed, cancelled or timed-out run is no evidence of a fix, nor a run to compare with."""
    rules = RuleSet.objects.get(version=2)
    cluster = fleet["resnet"].cluster

    def run(name, days, util, state, hours=3):
        start = WEEK_START + timedelta(days=days)
        return JobFactory(team=team_a, cluster=cluster, name=name, user="dana", start_time=start,
                          end_time=start + timedelta(hours=hours), mean_gpu_util=util, state=state)  # fmt: skip

    slow = run("alpha", -5, 30, "COMPLETED")
    triaged(slow, rules, (Category.DATA_PREPROCESSING, 2.0, {}))
    run("alpha", 1, 67, "FAILED", hours=1)
    completed = run("alpha", 2, 83, "COMPLETED")
    run("beta", -4, 20, "COMPLETED"), run("beta", 1, 70, "TIMEOUT")  # ran out of time
    run("gamma", -4, 25, "COMPLETED"), run("gamma", 3, 90, "cancelled")  # any spelling of a state
    run("delta", -4, 15, "Succeeded"), run("delta", 2, 60, "Failed"), run("delta", 3, 65, "Succeeded")  # Kubernetes
    run("epsilon", -2, 10, "FAILED"), run("epsilon", 2, 80, "COMPLETED")  # no run before that ran properly
    run("zeta", -2, 10, ""), run("zeta", 2, 80, "")  # an archive that leaves the optional state out
    run("eta", -2, 10, "COMPLETED"), run("eta", 1, 60, "RUNNING")  # not ended yet
    send_weekly_task.delay(WEEK).get()

    text, html = parts(smtp.to(member_a.email)[0])
    html = as_read(html)  # the figures, as read (a no-break space keeps each with its unit)
    better = section(text, "RUNS THAT GOT BETTER")
    assert better.splitlines()[:2] == [
        "",
        "  Jobs that ran again this week and averaged above 50 % GPU utilization, where their previous run "
        "averaged 50 % or less. Only runs that finished successfully count.",
    ]  # the heading alone on its line: it read "(ended successfully above 50 % mean GPU utilization; the
    # last run before that ended successfully was not)"
    assert [line.strip() for line in better.splitlines() if line.strip().startswith("+")] == [  # biggest rise first
        f"+ zeta (dana, {cluster.name}): 10 % → 80 % since its run of 2026-11-14",
        f"+ alpha (dana, {cluster.name}): 30 % → 83 % since its run of 2026-11-11; "
        "no longer found: Data preprocessing on CPU",
        f"+ delta (dana, {cluster.name}): 15 % → 65 % since its run of 2026-11-12",
    ]
    assert f"/jobs/{completed.pk}/#runs" in better
    assert "Jobs that ran again this week and averaged above 50 % GPU utilization" in html
    listed = html.split("Runs that got better")[1].split("</ul>")[0]
    assert "alpha</a>" in listed and "67 %" not in listed and "beta" not in listed


# --- What got worse ----------------------------------------------------------------------------------


def section(text: str, heading: str) -> str:
    """A text part's section: from its heading to the next blank line."""
    return text.split(heading)[1].split("\n\n")[0]


def test_what_got_worse_comes_first_with_the_change_to_make_and_the_jobs(smtp, fleet, member_a, operator, client):
    """Team A's week brought two causes it did not have the week before (bert's improper batch size,
    resnet's host-GPU transfer); the digest said only what improved (less checkpointing). It now says
    what got worse first, each cause with its hours, the change to make and a link to its jobs."""
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    assert text.index("WHAT GOT WORSE SINCE LAST WEEK") < text.index("WHAT IMPROVED SINCE LAST WEEK")
    assert html.index("What got worse since last week") < html.index("What improved since last week")
    worse = section(text, "WHAT GOT WORSE SINCE LAST WEEK")
    lines = [line.strip() for line in worse.splitlines() if line.startswith("  - ")]
    assert lines == [
        "- Improper batch size: new this week, 2.5 recoverable GPU-hours in 1 job (10 % of GPU-hours).",
        "- Inefficient host-GPU data transfer: new this week, 1.5 recoverable GPU-hours in 1 job (6 % of GPU-hours).",
    ]  # not checkpointing (6.0 -> 4.0: it improved), nor the waste share (75 % -> 48 %)
    assert f"Change: {headline_change(Category.IMPROPER_BATCH_SIZE)}" in worse
    assert "Model checkpointing: 6.0 → 4.0" in section(text, "WHAT IMPROVED SINCE LAST WEEK")
    url = re.search(r"Its jobs: (\S+category=improper_batch_size\S*)", worse)[1]
    assert f'href="{url.replace("&", "&amp;")}"' in html
    client.force_login(member_a)
    listed = client.get(path_of(url)).content.decode()
    assert "eval-bert" in listed and "train-resnet" not in listed
    # The operators' digest says the same of the fleet.
    operator_text, _ = parts(smtp.to(operator.email)[0])
    fleet_worse = section(operator_text, "WHAT GOT WORSE SINCE LAST WEEK")
    assert "Improper batch size: new this week" in fleet_worse and "team=" not in fleet_worse


def test_what_got_worse_names_a_few_causes_and_counts_on_a_week_before():
    def rows(**hours):
        return [findings.CategoryWaste(Category(name), value, 1) for name, value in hours.items()]

    before = rows(model_checkpointing=2.0, api_misuse=1.02)
    now = rows(model_checkpointing=9.0, api_misuse=1.04, remote_data_reading=3.0, unreleased_job=2.0, non_dl_job=1.0)
    lines, left_out = services._regressions(
        _totals(10, 100.0, 30.0), _totals(10, 100.0, 30.0), now, before, lambda category: "", {}
    )
    assert [line.text for line in lines] == [
        "Model checkpointing: 2.0 → 9.0 recoverable GPU-hours in 1 job (2 % → 9 % of GPU-hours).",
        "Remote data reading: new this week, 3.0 recoverable GPU-hours in 1 job (3 % of GPU-hours).",
        "Unreleased job: new this week, 2.0 recoverable GPU-hours in 1 job (2 % of GPU-hours).",
    ]  # not API misuse: 1.02 -> 1.04 reads 1.0 -> 1.0, no change a reader could see
    assert left_out == ["Non-DL job"]
    # Nothing before it: everything would be "new", so nothing is said.
    assert services._regressions(_totals(10, 100.0, 30.0), _totals(0, 0.0, 0.0), now, before, str, {}) == ([], [])


# --- Fewer jobs are not less waste -------------------------------------------------------------------


def test_fewer_jobs_are_not_called_an_improvement(fleet, team_b, operator, client):
    """Vision's W46 ran 7 jobs instead of 12: GPU-hours −62 %, waste share +36 pts, yet "Unused
    GPU-hours ▼ −29 %" and "Wasted cost ▼ −51 %" were green and "What improved" listed a cause whose
    hours fell only because less ran. Team B here: three busy jobs the week before, two this week."""
    rules = RuleSet.objects.get(version=2)
    day = timedelta(days=1)
    week_before = [
        JobFactory(
            team=team_b,
            name=f"b-sweep-{n}",
            start_time=WEEK_START - (n + 2) * day,
            gpu_hours=40,
            unused_gpu_hours=10,
            mean_gpu_util=75,
            cost="80.00",
        )  # fmt: skip
        for n in range(3)
    ]  # 120 GPU-hours, 25 % unused
    # Its data begin before that week: a whole week to judge the changes against (`week_before_partly_in_data`).
    JobFactory(team=team_b, name="b-older", start_time=WEEK_START - 14 * day, gpu_hours=1, mean_gpu_util=90)
    triaged(week_before[0], rules, (Category.REMOTE_DATA_READING, 6.0, {}))
    triaged(week_before[1], rules, (Category.MODEL_CHECKPOINTING, 3.0, {}))
    slow = JobFactory(team=team_b, name="b-slow", start_time=WEEK_START + 2 * day,
                      gpu_hours=10, unused_gpu_hours=8, mean_gpu_util=20, cost="20.00")  # fmt: skip
    triaged(slow, rules, (Category.REMOTE_DATA_READING, 4.0, {}))  # with b-busy: 30 GPU-hours, 33 % unused

    client.force_login(operator)
    url = reverse("digests:preview-team", args=["team-b", WEEK])
    text = client.get(url, {"part": "text"}).content.decode()
    html = client.get(url, {"part": "html"}).content.decode()
    assert "Unused GPU-hours         10.0      (week before 30.0, -67 %)" in text
    for label in ("Unused GPU-hours", "Wasted cost"):  # fell, but neither green nor marked ▼
        row = html.split(f">{label}</th>")[1].split("</tr>")[0]  # the figure's row, after its row header
        assert "#176b3a" not in row and "▼" not in row and "-" in row
    improved = section(text, "WHAT IMPROVED SINCE LAST WEEK")
    assert "fewer unused GPU-hours" not in improved
    # Remote data reading: 6.0 -> 4.0 hours, but 5 % -> 13 % of the GPU-hours: not an improvement.
    assert "Remote data reading" not in improved
    assert "Model checkpointing: gone this week" in improved
    assert "Waste share rose from 25 % to 33 %." in section(text, "WHAT GOT WORSE SINCE LAST WEEK")
    note = "Fewer unused GPU-hours while the waste share rose: fewer jobs ran, the waste did not shrink."
    assert note in text and note in html
    # The other way round: twice the work at a lower share is more unused GPU-hours, not more waste.
    busier, before = _totals(20, 200.0, 40.0), _totals(10, 100.0, 30.0)
    assert services._regressions(busier, before, [], [], str, {}) == ([], [])
    assert {kpi.label: kpi.trend for kpi in services.kpis(busier, before)}["Unused GPU-hours"] == "neutral"


def test_a_fixs_gpu_hours_stand_right_of_its_job_in_a_table_cell_not_a_float(smtp, fleet, member_a):
    """Each of the fixes that pay most put its recoverable GPU-hours on the right with a float:right span,
    which Outlook on Windows (Word's HTML engine) ignores: there the figure ran on after the job's user,
    with no space before it. The job and its figure are the two cells of one row, the figure's
    align="right", as email lays out columns everywhere; no style of either digest floats."""
    send_weekly_task.delay(WEEK).get()
    html = parts(smtp.to(member_a.email)[0])[1]
    assert "float" not in html
    fixes = html.split("Fixes that pay most</h2>")[1]
    for name, hours in (("train-resnet", "5.5 GPU-h"), ("eval-bert", "2.5 GPU-h")):
        row = fixes.split(f">{name}</a>")[0].rsplit("<tr", 1)[1] + fixes.split(f">{name}</a>")[1].split("</tr>")[0]
        cells = re.findall(r"<td([^>]*)>(.*?)</td>", row, re.DOTALL)
        assert len(cells) == 2 and "#findings" in cells[0][1], (name, cells)  # the job's link and its place
        assert 'align="right"' in cells[1][0] and as_read(re.sub(r"<[^>]+>", "", cells[1][1])).strip() == hours


# --- Every cause's change, and the hours no cause holds --------------------------------------------


def test_a_job_with_several_causes_shows_the_change_for_each(smtp, fleet, member_a):
    """vision W46's convnext-tiny-places-run4 had data exchange and a lengthy library installation,
    but only the first cause's fix was shown. train-resnet here: checkpointing and host-GPU transfer."""
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    resnet = text.split("1. train-resnet")[1].split("2. eval-bert")[0]
    assert [line.strip() for line in resnet.splitlines()[2:5]] == [
        "Fixes:",
        "Model checkpointing: Save checkpoints asynchronously. Training then goes on while the file is written.",
        "Inefficient host-GPU data transfer: Use pinned memory and non_blocking copies",
    ]
    resnet_html = html.split("Fixes that pay most")[1].split("train-resnet</a>")[1].split("eval-bert</a>")[0]
    assert "Fixes:" in resnet_html and "Use pinned memory and non_blocking copies" in resnet_html
    # A job with one cause keeps its one line.
    assert "Found: Improper batch size found in eval-bert" in text


def test_the_hours_no_cause_holds_are_explained(smtp, fleet, member_a):
    """genai W47 said 137.6 unused GPU-hours at the top and 111.2 by cause below, the difference
    unexplained. Team A: 11.5 unused GPU-hours, 8.0 of them by cause; the healthy job's 1.0 is
    headroom, the mystery job's 1.5 unclassified, and 1.0 idle time of resnet and bert beyond their causes."""
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    html = as_read(html)  # the figures, as read (a no-break space keeps each with its unit)
    line = (  # it said "1.0 headroom of healthy jobs", the rules' term
        "Causes account for 8.0 of the 11.5 unused GPU-hours. The other 3.5 have no cause named: "
        "1.5 in low-utilization jobs no rule could explain (unclassified); "
        "1.0 in jobs above 50 % GPU utilization, which are not searched for causes; "
        "1.0 other idle time (more than a job's causes account for, or in jobs not checked yet)."
    )
    assert line in text and line.replace("'", "&#x27;") in html
    assert text.index(line) < text.index("FIXES THAT PAY MOST")
    # Causes that hold every unused hour need no such line.
    assert services.unattributed_note(8.0, [findings.CategoryWaste(Category.API_MISUSE, 8.0, 1)], {}, 50) == ""


def test_a_job_still_running_among_the_fixes_says_so_in_both_parts(smtp, fleet, member_a):
    """A job stored while it still ran stood in "Fixes that pay most" like a finished one, its hours
    read as the whole run's: both parts say it was still running and that the hours are so far."""
    Job.objects.filter(pk=fleet["bert"].pk).update(state="RUNNING")
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    fixes = section(text, "FIXES THAT PAY MOST")
    bert = fixes.split("eval-bert")[1].splitlines()[0]
    assert bert.endswith(": 2.5 recoverable GPU-hours (still running when last stored: its hours so far)")
    assert "still running" not in fixes.split("eval-bert")[0]  # train-resnet had ended
    bert_html = html.split("eval-bert</a>")[1].split("</td></tr>")[0]
    assert "Still running when last stored: its hours so far</span>" in bert_html
    assert "still running" not in html.split("eval-bert</a>")[0].lower()


def test_the_digest_says_its_totals_are_rounded_after_adding_up(smtp, fleet, member_a, operator):
    """genai W47: Inefficient host-GPU data transfer 97.8 GPU-hours in 2 jobs, listed at 85.5 and 12.4
    (85.48 + 12.35 = 97.83), which add up to 97.9. The total stays the exact sum rounded (as the
    dashboard shows it) and both digests say so, in both parts."""
    send_weekly_task.delay(WEEK).get()
    said = "Totals are added up before they are rounded to a tenth of an hour"
    for address in (member_a.email, operator.email):
        text, html = parts(smtp.to(address)[0])
        # The footer starts at a line holding only "-- "; a bare split on "--" also cut inside the
        # unsubscribe link whenever its signature happened to contain "--".
        body_text = re.split(r"^-- \r?$", text, flags=re.MULTILINE)[0]
        assert said in body_text and said in html.split("Figures cover jobs")[1]


def test_the_text_parts_sections_are_one_blank_line_apart_and_the_footer_is_a_signature(
    smtp, fleet, member_a, operator
):
    """The text parts left two blank lines after the waste by cause (and, in the team digest, after what
    improved), one elsewhere; and their footer began with "--", which no mail client takes for the
    signature delimiter "-- " (RFC 3676) that they grey or fold away, as the idle alerts' does."""
    send_weekly_task.delay(WEEK).get()
    send_weekly_task.delay(weeks.shift(WEEK, 1)).get()  # a week without jobs: sections say so in a line
    for message in smtp.messages:
        text = parts(message)[0]
        assert "\r\n\r\n\r\n" not in text, message["Subject"]
        assert text.count("\r\n-- \r\n") == 1 and "\r\n--\r\n" not in text, message["Subject"]


# --- When digests go out, and whether you get one -------------------------------------------------------


def test_the_digest_pages_say_when_digests_go_out_and_whether_you_get_one(
    fleet, team_a, team_b, member_a, operator, client, monkeypatch
):
    """/digests/ and /digests/settings/ said neither when digests are sent nor whether the reader
    gets one; a user without an address learnt it only on the settings page."""
    from celery import current_app

    from triage.digests.schedules import ZonedCrontab

    pages = (reverse("digests:index"), reverse("digests:settings"))

    def receipt(user) -> list[str]:
        client.force_login(user)
        said = []
        for url in pages:
            body = client.get(url).content.decode()
            said.append(re.search(r'<p id="digest-receipt"[^>]*>(.*?)</p>', body, re.S)[1])
            assert "Digests go out Mondays at 07:00 UTC, each about the ISO week before" in body
        return said

    assert receipt(member_a) == [f"You receive the Team A digest at {member_a.email}."] * 2
    # The operator digest by default, and team B's once they subscribe to it, as the senders pick them.
    services.set_subscription(operator, DigestKind.TEAM, team_b, True)
    assert receipt(operator)[0] == f"You receive the operator digest and the Team B digest at {operator.email}."
    assert operator in services.team_recipients(team_b) and operator in services.operator_recipients()
    services.set_subscription(member_a, DigestKind.TEAM, team_a, False)
    assert receipt(member_a)[0].startswith(f"You receive no digest at {member_a.email}: every digest")
    no_address = OwnerFactory(user=UserFactory(username="nadia-no-mail", email=""), team=team_a).user
    assert (
        receipt(no_address)
        == ["You will not receive digests: your account has no email address. Ask an administrator to add one."] * 2
    )
    assert no_address not in services.team_recipients(team_a)

    # The schedule is the one beat runs, not a sentence in a template.
    entry = current_app.conf.beat_schedule["digests.send_weekly"]
    later = {**entry, "schedule": ZonedCrontab(minute=30, hour=18, day_of_week="fri", zone="Europe/Berlin")}
    monkeypatch.setitem(current_app.conf.beat_schedule, "digests.send_weekly", later)
    client.force_login(member_a)
    assert "Digests go out Fridays at 18:30 Europe/Berlin" in client.get(pages[0]).content.decode()


def test_what_the_pages_say_a_user_receives_is_what_the_senders_send_them(fleet, team_a, team_b, member_a,
                                                                           operator, researcher):  # fmt: skip
    """The digest pages work out a user's digests from their choices; the senders pick recipients with
    their own queries. Every kind of user, subscribed or not, gets the same answer from both."""
    no_address = OwnerFactory(user=UserFactory(username="no-mail", email=""), team=team_a).user
    gone = OwnerFactory(user=UserFactory(username="gone", is_active=False), team=team_b).user
    quitter = OwnerFactory(user=UserFactory(username="quitter"), team=team_b).user
    services.set_subscription(quitter, DigestKind.TEAM, team_b, False)
    services.set_subscription(researcher, DigestKind.TEAM, team_a, True)
    services.set_subscription(operator, DigestKind.TEAM, team_b, True)
    services.set_subscription(operator, DigestKind.OPERATOR, None, False)
    sent = {
        (user.pk, DigestKind.TEAM, team.pk) for team in (team_a, team_b) for user in services.team_recipients(team)
    } | {(user.pk, DigestKind.OPERATOR, None) for user in services.operator_recipients()}
    for user in (member_a, operator, researcher, no_address, gone, quitter):
        said = {(user.pk, c.kind, c.team.pk if c.team else None) for c in services.received_by(user)}
        assert said == {row for row in sent if row[0] == user.pk}, user.username
    assert sent  # the matrix is not empty: members, a subscribed researcher and operator are sent digests


def test_an_errors_words_may_break_after_underscores_and_stay_escaped():
    from triage.digests.templatetags.digest_format import break_after_underscores

    assert break_after_underscores("unless ALERT_WEBHOOK_ALLOWED_NETWORKS allows <b>") == (
        "unless ALERT_<wbr>WEBHOOK_<wbr>ALLOWED_<wbr>NETWORKS allows &lt;b&gt;"
    )
    assert break_after_underscores("") == "" and break_after_underscores(None) == ""


def test_an_errors_exception_name_is_kept_whole_and_the_rest_escaped():
    from triage.digests.templatetags.digest_format import delivery_error

    assert delivery_error("SMTPRecipientsRefused: {'<a@b>': (550, b'no')}") == (
        '<span class="error-name">SMTPRecipientsRefused:</span> {&#x27;&lt;a@b&gt;&#x27;: (550, b&#x27;no&#x27;)}'
    )
    # Without a leading name, as break_after_underscores writes it; a name alone is kept whole too.
    assert delivery_error("Not posted: unless ALERT_WEBHOOK allows") == "Not posted: unless ALERT_<wbr>WEBHOOK allows"
    assert delivery_error("<b>TimeoutError:</b>") == "&lt;b&gt;TimeoutError:&lt;/b&gt;"
    assert delivery_error("TimeoutError:") == '<span class="error-name">TimeoutError:</span>'
    assert delivery_error("") == "" and delivery_error(None) == ""


def test_the_operator_digests_teams_give_the_gpu_hours_their_share_is_of_with_the_unit(smtp, fleet, operator):
    """Each team's row read "51 % of 269.5": a bare number, beside a column of GPU-h and one of USD. The
    share's whole is the team's GPU-hours, and says so, in both parts."""
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(operator.email)[0])
    teams_html = as_read(html.split("Teams by unused GPU-hours")[1].split("Where the waste comes from")[0])
    wholes = re.findall(r"of(?:</span>)?\s*(?:<span[^>]*>)?([\d.,]+)(\s*[^<\s]*)", teams_html)
    assert len(wholes) == 2 and all(unit.strip() == "GPU-h" for _, unit in wholes), wholes
    teams_text = text.split("TEAMS BY UNUSED GPU-HOURS")[1].split("\r\n\r\n")[0]
    rows = [line for line in teams_text.splitlines() if "GPU-h" in line]
    assert len(rows) == 2 and all(re.search(r"% of [\d.,]+ GPU-h,", row) for row in rows), rows


def test_the_operator_digests_teams_say_their_money_figure_is_wasted_cost(smtp, fleet, operator):
    """Each team's row ended on a bare "23 USD", under no header (the teams are a layout table): its
    spend, or its waste? It is what its unused GPU-hours cost, and says so in both parts."""
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(operator.email)[0])
    team_a = next(line for line in text.splitlines() if line.lstrip().startswith("Team A "))
    assert "(48 % of 24.0 GPU-h, 23 USD wasted)" in team_a, team_a
    row = html.split(">Team A</a>")[1].split(">Team B</a>")[0]
    cells = [as_read(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    assert cells[-1] == "23 USD wasted", cells


def test_the_week_befores_money_figures_name_their_currency_as_this_weeks_do(smtp, fleet, member_a, operator):
    """This week's "Cost 48 USD" sat beside a bare "24" for the week before: every money figure of a
    digest names its currency, in both parts and in both digests."""
    send_weekly_task.delay(WEEK).get()
    for message in (smtp.to(member_a.email)[0], smtp.to(operator.email)[0]):
        text, html = parts(message)
        for label in ("Cost", "Wasted cost"):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", html.split(f">{label}</th>")[1].split("</tr>")[0])
            this_week, week_before = (as_read(re.sub(r"<[^>]+>", "", cell)) for cell in cells[:2])
            assert this_week.endswith("USD") and week_before.endswith("USD"), (label, this_week, week_before)
            line = next(line for line in text.splitlines() if line.startswith(f"{label} "))
            assert re.search(r"\(week before [\d,]+ USD[,)]", line), line


def test_a_week_with_no_price_set_shows_no_cost_figure_not_0(smtp, fleet, member_a, operator):
    """With no GPU-hour price set for the week's jobs, the digests read "Cost 0 USD" (and "0 USD" in
    the subject): a reader took the week as free. Like the dashboard's cards, the money figures read
    "–" and the note says how many jobs and GPU-hours have no price."""
    Job.objects.update(cost=None, currency="")
    send_weekly_task.delay(WEEK).get()
    for message in (smtp.to(member_a.email)[0], smtp.to(operator.email)[0]):
        text, html = parts(message)
        assert "USD" not in message["Subject"] and " 0 " not in message["Subject"], message["Subject"]
        for label in ("Cost", "Wasted cost"):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", html.split(f">{label}</th>")[1].split("</tr>")[0])
            this_week, week_before = (as_read(re.sub(r"<[^>]+>", "", cell)) for cell in cells[:2])
            assert this_week == week_before == "–", (label, this_week, week_before)
            line = next(line for line in text.splitlines() if line.startswith(f"{label} "))
            assert line.split()[len(label.split())] == "–" and "(week before –)" in line, line
        note = next(line for line in text.splitlines() if line.startswith("No GPU-hour price is set"))
        assert re.fullmatch(
            r"No GPU-hour price is set for \d+ jobs? on clusters? .+ in this period \([\d.,]+ GPU-hours\),"
            r" so there is no cost figure( \(Settings\))?\.",
            note,
        ), note
    # The operator digest's teams: no "0 USD" of waste for a team whose jobs have no price.
    text, html = parts(smtp.to(operator.email)[0])
    team_line = next(line for line in text.splitlines() if line.lstrip().startswith("Team A "))
    assert team_line.rstrip().split("(")[1].split(")")[0].endswith("GPU-h, no price set"), team_line
    team_row = html.split(">Team A</a>")[1].split(">Team B</a>")[0]  # its row holds a table (the bar)
    cells = [as_read(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", team_row)]
    assert "no price set" in cells and not any(cell.endswith("USD") for cell in cells), cells


def test_a_team_s_first_week_says_there_were_no_jobs_the_week_before_to_compare_with(team_b, operator, client):
    """In a fleet's first week the team digest read 'GPU-hours 10.0 (week before 0.0, up from 0)' on
    every figure, the change the dashboard's cards stopped showing (d13aad6): a week before the data
    began is no figure to compare with. The changes are '–', and a note under the figures says why."""
    JobFactory(team=team_b, name="b-first", start_time=WEEK_START + timedelta(days=1),
               gpu_hours=10, unused_gpu_hours=4, mean_gpu_util=40, cost="20.00")  # fmt: skip
    client.force_login(operator)
    url = reverse("digests:preview-team", args=["team-b", WEEK])
    text = client.get(url, {"part": "text"}).content.decode()
    html = client.get(url, {"part": "html"}).content.decode()
    assert "up from 0" not in text and "up from 0" not in html
    assert "GPU-hours                10.0      (week before –)" in text
    assert "No jobs before 2026-11-17 to compare with." in text and "No jobs before 2026-11-17 to compare with." in html
    row = html.split(">GPU-hours</th>")[1].split("</tr>")[0]
    assert "▲" not in row and row.rstrip().endswith(">–</td>")
    # A team that ran jobs before, but none the week before, did run nothing then: that change stands.
    JobFactory(team=team_b, name="b-earlier", start_time=WEEK_START - timedelta(days=20), gpu_hours=5)
    text = client.get(url, {"part": "text"}).content.decode()
    assert "(week before 0.0, up from 0)" in text and "to compare with." not in text.split("WHERE THE WASTE")[0]


def test_a_week_before_the_data_only_partly_covers_is_compared_but_not_judged(team_b, operator, client):
    """Team B's data starts on Friday 2026-11-13, three days before the week: its digest coloured 'Waste
    share ▼ -80 pts' green and listed 'Waste share fell from 90 % to 10 %.' as an improvement, against a
    week of which it held three days. As the dashboard's cards (a period the data only partly covers),
    the changes are shown but judged neither better nor worse, and a note says why, in both parts."""
    JobFactory(team=team_b, name="b-late", start_time=WEEK_START - timedelta(days=3),
               gpu_hours=2, unused_gpu_hours=1.8, mean_gpu_util=10, cost="4.00")  # fmt: skip
    JobFactory(team=team_b, name="b-busy", start_time=WEEK_START + timedelta(days=1),
               gpu_hours=20, unused_gpu_hours=2, mean_gpu_util=90, cost="40.00")  # fmt: skip
    client.force_login(operator)
    url = reverse("digests:preview-team", args=["team-b", WEEK])
    text = client.get(url, {"part": "text"}).content.decode()
    html = client.get(url, {"part": "html"}).content.decode()
    note = "The week before is only partly in the data (jobs from 2026-11-13), so no change is judged better or worse."
    assert "Waste share              10 %      (week before 90 %, -80 pts)" in text
    for part in (text, html):
        assert note in part
        assert "Waste share fell" not in part and "▼" not in part and "▲" not in part
    assert "#176b3a" not in html.split("Where the waste comes from")[0]  # no figure coloured better


def test_a_first_week_shows_no_figure_for_the_week_before_not_0(smtp, fleet, team_b, operator):
    """Team B's first week (its jobs start on 2026-11-17), and with the old run gone the fleet's: the week
    before had no jobs because the data starts after it, yet both digests read 'week before 0.0' and
    '0 USD' on each figure, and 'Nothing measurably improved on the week before' of a week not in the
    data. As the dashboard's cards, the week before is no figure ('–') and a note says why, in both parts
    of the team digest and the operators' digest, as their readers receive them."""
    Job.objects.filter(name__in=["old-run", "older"]).delete()
    Subscription.objects.create(user=operator, kind=DigestKind.TEAM, team=team_b, active=True)
    send_weekly_task.delay(WEEK).get()
    received = {message["Subject"].split(",")[0]: parts(message) for message in smtp.to(operator.email)}
    assert set(received) == {"Team B", "Fleet"}
    for digest, (text, html) in received.items():
        figures = [line for line in text.splitlines() if "(week before " in line]
        assert [line.split("(week before ")[1] for line in figures] == ["–)"] * 5, (digest, figures)
        for label in ("GPU-hours", "Unused GPU-hours", "Waste share", "Cost", "Wasted cost"):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", html.split(f">{label}</th>")[1].split("</tr>")[0])
            assert [as_read(re.sub(r"<[^>]+>", "", cell)) for cell in cells[1:]] == ["–", "–"], (digest, label, cells)
        for part in (text, html):
            assert "No jobs before 2026-11-17 to compare with." in part, digest
            assert "Nothing measurably improved" not in part, digest
            assert part.count("No jobs started the week before, so there is nothing to compare with.") == 2, digest


def test_the_fixes_that_pay_most_say_their_figure_is_recoverable_gpu_hours(smtp, fleet, member_a):
    """In the HTML part each fix's "5.5 GPU-h" stood alone on the right: the text part says "5.5
    recoverable GPU-hours", the HTML one did not say what the hours were (used, unused, or what the fix
    wins back). A caption under the heading says so, before the first figure, as the causes' table has."""
    send_weekly_task.delay(WEEK).get()
    html = parts(smtp.to(member_a.email)[0])[1]
    fixes = html.split("Fixes that pay most</h2>")[1]
    caption = as_read(re.sub(r"<[^>]+>", "", fixes.split("<table")[0])).strip()
    assert caption.startswith("Recoverable GPU-hours on the right:"), caption
    assert "fixing" in caption and "win back" in caption


def test_a_fixs_settings_are_code_in_the_html_part_and_backticked_in_the_text_part(smtp, fleet, member_a):
    """The loader fix's settings ('use num_workers=7 ... request --cpus-per-task=8') read as words in the digest
    beside the code the other fixes show as code; the HTML part shows them as code, the text part in backticks, as
    the text part writes any fix's code."""
    from triage.guidance import guidance_for

    guide = guidance_for(Category.DATA_PREPROCESSING, "default", {"num_workers": 0}, gpu_hours=4.0,
                         price_per_gpu_hour=None, currency="", job={"gpu_count": 1, "cpu_count": 8})  # fmt: skip
    Finding.objects.filter(job=fleet["resnet"], category=Category.MODEL_CHECKPOINTING).update(guidance=guide)
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    assert "use <code>num_workers=7</code> (now 0)" in html
    assert "use `num_workers=7` (now 0)." in text


def test_a_findings_settings_are_code_where_the_digest_gives_its_summary(smtp, fleet, member_a):
    """A cause without a fix is given by its summary ('found: ...'), whose settings the rules write in backticks as
    its fix's: the HTML part shows them as code, the text part keeps the backticks."""
    summary = "Data loading and preprocessing on the CPU cannot keep the GPUs fed: `num_workers=0`."
    Finding.objects.filter(job=fleet["resnet"], category=Category.MODEL_CHECKPOINTING).update(
        guidance={}, summary=summary
    )
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(member_a.email)[0])
    assert "cannot keep the GPUs fed: <code>num_workers=0</code>." in html
    assert "`" not in re.sub(r"<code>[^<]*</code>", "", html.split("found:", 1)[-1].split("</span>", 1)[0])
    assert "cannot keep the GPUs fed: `num_workers=0`." in text
