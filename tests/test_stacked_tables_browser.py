"""Tables a phone user needs whole rows of (the Teams table, a team's worst jobs, the ingest runs): at 390 px
each row is a card of its fields, each beside its column's name (table.stacks, as the overview's Top causes),
where the table scrolled sideways in its box with the figures a reader came for (a team's cost, a job's unused
GPU-hours, a run's rejected rows and errors) off to the right. At 1280 px each is a table, as before.
Screenshots are saved under screenshots/ for a person to look at."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from tests.test_browser import browser  # noqa: F401  (the browser fixture)

WEEK = "from=2026-11-09&to=2026-11-15"

# At 390 px: whether the page itself scrolls sideways, and the text of the cells in a column the
# caller names, with whether each lies wholly inside the window.
PAGE_AND_COLUMN = """
const [table, column] = arguments;
const headers = [...document.querySelectorAll(table + ' thead th')].map(th => th.textContent.trim());
const index = headers.findIndex(text => text.startsWith(column));
const cells = [...document.querySelectorAll(table + ' tbody tr')].map(tr => tr.children[index]);
return {
  pageScrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
  cells: cells.map(td => { const r = td.getBoundingClientRect();
    return [td.innerText.replace(/\\s+/g, ' ').trim(), r.width > 0 && r.left >= 0 && r.right <= window.innerWidth]; }),
};
"""


def layouts_and_column(browser, url, shot, table, column):  # noqa: F811
    """`table_layouts` of the page, the phone's with `PAGE_AND_COLUMN` for `column`."""
    from tests.test_accessibility import table_layouts

    def measure(driver):
        return driver.execute_script(PAGE_AND_COLUMN, table, column)

    return table_layouts(browser, url, shot, table=table, measure=measure)


def assert_cards(wide, phone, rows, columns):
    """At 1280 px a table whose every cell is in view; at 390 px a card per row, each field beside its
    column's name, nothing out of view, no sideways scroll, no axe violation."""
    for layout in (wide, phone):
        assert not layout["scrolls"] and layout["cellsOut"] == [], layout
    assert wide["headersShown"] and {label for label, _column in wide["labels"]} == {None}, wide
    assert not phone["headersShown"], phone
    assert len(phone["labels"]) == rows * columns, phone
    assert [label for label, _column in phone["labels"]] == [column for _label, column in phone["labels"]], phone
    assert not phone["pageScrolls"], phone
    assert phone["violations"] == [] and phone["reflow"] == [], phone


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_teams_table_is_a_card_per_team_with_its_cost_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, the Teams table scrolled sideways in its box, each team's cost and wasted cost (its 5th and
    6th columns) off to the right; now each team is a card, and the sorts its headings offer are links above."""
    from tests.factories import ClusterFactory, JobFactory, TeamFactory
    from tests.test_accessibility import open_as

    cluster = ClusterFactory()
    cluster.prices.create(gpu_model="", price_per_gpu_hour=Decimal("2.50"), currency="USD")
    for number, name in enumerate(("computer-vision-research", "nlp")):
        JobFactory(
            team=TeamFactory(name=name, slug=name),
            cluster=cluster,
            start_time=datetime(2026, 11, 10, 9 + number, tzinfo=UTC),
            gpu_hours=1234.5,
            unused_gpu_hours=800.0,
            cost=Decimal("12345.60"),
        )
    open_as(browser, live_server.url, operator)
    wide, phone = layouts_and_column(browser, f"{live_server.url}/teams/?{WEEK}", "teams-cards", "table.data", "Cost")
    assert_cards(wide, phone, rows=2, columns=8)
    assert phone["cells"] == [["Cost (USD) 12,346", True], ["Cost (USD) 12,346", True]], phone
    sorts = browser.find_element("id", "teams-sort").get_attribute("textContent")  # shown only on a phone
    assert sorts.startswith("Sort by: Team · GPU-hours · Unused GPU-hours · Waste share"), sorts


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_teams_worst_jobs_are_cards_with_their_unused_gpu_hours_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, a team's 'Jobs that left the most GPU time unused' scrolled sideways in its box: the
    unused GPU-hours the section is about, and the causes, were off to the right. Now each job is a card.
    An MLflow run's id (32 hex digits, one word) made its card 149 px wider than the phone: it wraps. The
    cluster is named here: the factory's ("cluster12345") varies with the tests run before."""
    from tests.factories import ClusterFactory, JobFactory, TeamFactory
    from tests.test_accessibility import open_as
    from tests.test_jobs_page import triaged
    from triage.taxonomy import Category

    team = TeamFactory(name="genai", slug="genai")
    cluster = ClusterFactory(name="eu-west-h100-training")
    for number in range(3):
        job = JobFactory(
            team=team,
            cluster=cluster,
            external_id=f"0f3c9a7e2b5d4c1e8f6a9b2c3d4e5f6{number}",  # an MLflow run's id
            name=f"llama-7b-finetune-long-running-experiment-{number}",
            start_time=datetime(2026, 11, 10, 9 + number, tzinfo=UTC),
            gpu_count=8,
            gpu_hours=400.0,
            unused_gpu_hours=300.0 - number,
            mean_gpu_util=12.0,
        )
        triaged(job, "classified", Category.HOST_GPU_TRANSFER, Category.DATA_EXCHANGE)
    open_as(browser, live_server.url, operator)
    wide, phone = layouts_and_column(
        browser, f"{live_server.url}/teams/genai/?{WEEK}", "team-worst-jobs", "table.worst-jobs", "Unused"
    )
    assert_cards(wide, phone, rows=3, columns=8)
    assert [text for text, _in_view in phone["cells"]] == [f"Unused GPU-hours {h}" for h in ("300.0", "299.0", "298.0")]
    assert all(in_view for _text, in_view in phone["cells"]), phone


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_ingest_runs_are_cards_with_their_errors_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, the ingest runs table (then 14 columns) scrolled sideways in its box: a run's rejected rows and
    errors, what an operator opens the page to check, were off to the right. Now each run is a card.
    At 1280 px, run numbers of six digits (a fleet's connectors, pulling every 15 minutes, make tens of
    thousands of runs a year) pushed the Errors column out of view; it fit only while the runs were #1 and #2."""
    from fleet.models import IngestRun
    from tests.test_accessibility import open_as

    for number, name in enumerate(("cluster-alpha-week-46-export-with-a-long-name.tar.gz", "beta.zip"), 123456):
        IngestRun.objects.create(
            pk=number,
            source=IngestRun.Source.UPLOAD,
            archive_name=name,
            created_by=operator,
            status=IngestRun.Status.PARTIAL,
            started_at=datetime(2026, 11, 10, 9, tzinfo=UTC),
            finished_at=datetime(2026, 11, 10, 9, 2, tzinfo=UTC),
            jobs_total=1200,
            jobs_created=1190,
            jobs_rejected=10,
            errors=[{"file": "jobs.csv", "row": 2, "field": "gpu_count", "job_id": "1", "message": "not a number"}],
        )
    open_as(browser, live_server.url, operator)
    url = f"{live_server.url}/ingest-runs/"
    wide, phone = layouts_and_column(browser, url, "ingest-runs-cards", "table.data", "Errors")
    assert_cards(wide, phone, rows=2, columns=13)
    assert phone["cells"] == [["Errors 1", True], ["Errors 1", True]], phone


@pytest.mark.django_db(transaction=True)
def test_the_runs_of_a_million_job_archive_fit_at_1280_and_read_as_cards_on_a_phone(browser, live_server, operator):  # noqa: F811
    """An archive of ~1.2 million jobs: seven-digit counts in five columns, ten-digit samples, a six-digit run
    number (CI's sequences are not reset) and a token's name as who pushed it. The 14 columns scrolled in
    their box at 1280 px, Samples and Errors out of view; who started a run now reads in its Source cell
    ('Upload by operator', as on the run's page), one column fewer. On a phone every figure is in view."""
    from fleet.models import IngestRun, MachineToken
    from tests.test_accessibility import open_as

    token, _secret = MachineToken.objects.create_key(name="nightly-export-cluster-alpha", created_by=operator)
    for number, who in enumerate(({"created_by": operator}, {"api_key": token}), 987654):
        IngestRun.objects.create(
            pk=number,
            source=IngestRun.Source.UPLOAD if "created_by" in who else IngestRun.Source.API,
            archive_name="cluster-alpha-2026-full-year-export.tar.gz",
            status=IngestRun.Status.PARTIAL,
            started_at=datetime(2026, 11, 10, 9, tzinfo=UTC),
            finished_at=datetime(2026, 11, 10, 13, 2, 5, tzinfo=UTC),
            jobs_total=1234567,
            jobs_created=1034567,
            jobs_updated=198765,
            jobs_unchanged=1000,
            jobs_rejected=1235,
            samples=1234567890,
            errors=[{"file": "jobs.csv", "row": row, "field": "gpu_count", "message": "x"} for row in range(2, 1237)],
            **who,
        )
    open_as(browser, live_server.url, operator)
    url = f"{live_server.url}/ingest-runs/"
    wide, phone = layouts_and_column(browser, url, "ingest-runs-million-jobs", "table.data", "Source")
    assert_cards(wide, phone, rows=2, columns=13)
    assert wide["headersOut"] == [], wide
    assert phone["cells"] == [
        ["Source API by token nightly-export-cluster-alpha", True],
        ["Source Upload by olivia-operator", True],
    ], phone


@pytest.mark.django_db(transaction=True)
def test_the_personal_tokens_heading_stands_apart_from_the_machine_tokens_above_it(browser, live_server, operator):  # noqa: F811
    """The heading 'Personal tokens' touched the machine tokens' last row (0 px between them), as if it were
    a row of that table; the cards above it are 16 px apart. Light and dark, 1280 and 390 px."""
    from fleet.models import MachineToken
    from tests.test_accessibility import open_as
    from tests.test_browser import color_scheme, window_width

    MachineToken.objects.create_key(name="nightly export", created_by=operator)
    open_as(browser, live_server.url, operator)
    gaps = {}
    for width in (1280, 390):
        for scheme in ("light", "dark"):
            with window_width(browser, width, mobile=width == 390):
                color_scheme(browser, scheme)
                browser.get(f"{live_server.url}/tokens/")
                gaps[width, scheme] = browser.execute_script(
                    "return document.getElementById('personal-tokens').getBoundingClientRect().top"
                    " - document.getElementById('machine-token-table').getBoundingClientRect().bottom"
                )
    color_scheme(browser, None)
    assert all(gap >= 16 for gap in gaps.values()), gaps


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_connectors_are_cards_with_their_health_and_last_error_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, the connectors (nine columns) scrolled sideways in their box under a sticky name column:
    a connector's health, its last error and its Pull now, what an operator opens the list to check, were
    off to the right. Now each connector is a card."""
    from datetime import UTC, datetime

    from fleet.connectors.models import Connector
    from tests.test_accessibility import open_as

    prom = Connector.objects.create(name="prom-eu-west-h100-training", kind="prometheus", url="https://prom:9090")
    Connector.objects.create(
        name="slurm-eu-west-h100-training-cluster",
        kind="slurm",
        url="http://slurmrestd.eu-west.example.org:6820",
        cluster="eu-west-h100",
        metrics_from=prom,
        last_run_at=datetime(2026, 12, 7, 7, 48, tzinfo=UTC),
        last_success_at=datetime(2026, 12, 6, 5, 51, tzinfo=UTC),
        last_error="ConnectionError: HTTPConnectionPool(host=slurmrestd.eu-west.example.org, port=6820): Max"
        " retries exceeded with url: /slurm/v0.0.40/jobs?update_time=1764892800",
        last_error_at=datetime(2026, 12, 7, 7, 48, tzinfo=UTC),
        consecutive_failures=104,
    )
    open_as(browser, live_server.url, operator)
    url = f"{live_server.url}/connectors/"
    wide, phone = layouts_and_column(browser, url, "connectors-cards", "table.connectors", "Health")
    assert_cards(wide, phone, rows=2, columns=8)  # the ninth, the actions, are buttons
    assert phone["cells"] == [["Health never run", True], ["Health failing 104 failed pulls in a row", True]], phone
    assert all(in_view for _words, in_view in phone["buttons"]) and len(phone["buttons"]) == 3, phone


@pytest.mark.django_db(transaction=True)
def test_revoking_a_token_asks_first_and_cancelling_keeps_it(browser, live_server, operator):  # noqa: F811
    """Revoke, beside Edit, revoked a machine token at one click and for good: a cluster's nightly export
    failed from then on, and only a new token, set up on the cluster, mended it. It now asks, naming the
    token and what revoking does; Cancel leaves the token active."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.expected_conditions import alert_is_present
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet.models import MachineToken
    from tests.test_accessibility import open_as
    from tests.test_browser import STALE

    token, _key = MachineToken.objects.create_key(name="nightly export", created_by=operator)
    open_as(browser, live_server.url, operator)
    browser.get(f"{live_server.url}/tokens/")
    revoke = f"//button[@aria-label='Revoke the token nightly export ({token.prefix}…)']"
    browser.find_element(By.XPATH, revoke).click()
    asked = WebDriverWait(browser, 5).until(alert_is_present())
    assert asked.text == (
        f"Revoke the token nightly export ({token.prefix}…)? Whatever uses it is refused from then on,"
        " and a revoked token cannot be made active again."
    )
    asked.dismiss()
    token.refresh_from_db()
    assert not token.revoked and browser.find_elements(By.XPATH, revoke)
    browser.find_element(By.XPATH, revoke).click()
    WebDriverWait(browser, 5).until(alert_is_present()).accept()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "is revoked" in b.page_source)
    token.refresh_from_db()
    assert token.revoked


@pytest.mark.django_db(transaction=True)
def test_revoking_ones_own_token_asks_first_and_cancelling_keeps_it(browser, live_server, member_a):  # noqa: F811
    """A person's own tokens (/account/tokens/) revoked at one click while machine tokens asked: it asks
    the same question now, at 1280 px and on a phone."""
    from datetime import timedelta

    from django.utils import timezone
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.expected_conditions import alert_is_present
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet.models import PersonalToken
    from tests.test_accessibility import open_as
    from tests.test_browser import SHOTS, STALE, color_scheme, window_width

    token, _key = PersonalToken.objects.create_key(
        owner=member_a, name="alice laptop", expiry_date=timezone.now() + timedelta(days=90)
    )
    open_as(browser, live_server.url, member_a)
    revoke = f"//button[@aria-label='Revoke your token alice laptop ({token.prefix}…)']"
    SHOTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (390, 844)):
        for scheme in ("light", "dark"):
            with window_width(browser, width, mobile=width == 390, height=height):
                color_scheme(browser, scheme)
                browser.get(f"{live_server.url}/account/tokens/")
                browser.save_screenshot(str(SHOTS / f"own-token-revoke-{width}-{scheme}.png"))
                browser.find_element(By.XPATH, revoke).click()
                asked = WebDriverWait(browser, 5).until(alert_is_present())
                assert asked.text == (
                    f"Revoke your token alice laptop ({token.prefix}…)? Whatever uses it is refused from then on,"
                    " and a revoked token cannot be made active again."
                )
                asked.dismiss()
                token.refresh_from_db()
                assert not token.revoked and browser.find_elements(By.XPATH, revoke)
    color_scheme(browser, None)
    browser.find_element(By.XPATH, revoke).click()
    WebDriverWait(browser, 5).until(alert_is_present()).accept()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: not b.find_elements(By.XPATH, revoke))
    token.refresh_from_db()
    assert token.revoked


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_machine_tokens_are_cards_with_what_each_may_do_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, the machine tokens (11 columns, a permission each) scrolled sideways in their box:
    whether a token may push archives, and its Revoke, were off to the right. Now each token is a card."""
    from fleet.models import MachineToken
    from tests.test_accessibility import open_as

    MachineToken.objects.create_key(name="nightly export", created_by=operator)
    MachineToken.objects.create_key(name="prometheus", reads_metrics=True, pushes_archives=False)
    open_as(browser, live_server.url, operator)
    url = f"{live_server.url}/tokens/"
    wide, phone = layouts_and_column(browser, url, "machine-tokens-cards", "#machine-token-table", "Pushes archives")
    assert_cards(wide, phone, rows=2, columns=11)  # the twelfth, Revoke, is a button
    assert phone["cells"] == [["Pushes archives no", True], ["Pushes archives yes", True]], phone
    assert all(in_view for _words, in_view in phone["buttons"]) and len(phone["buttons"]) == 2, phone


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_personal_tokens_are_cards_with_their_state_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, the operators' personal tokens (8 columns) and a person's own (7) scrolled sideways in
    their box: a token's state ('owner deactivated': why it is refused) and its Revoke were off to the right.
    Now each token is a card, on both pages."""
    from datetime import timedelta

    from django.utils import timezone

    from fleet.models import PersonalToken
    from tests.factories import UserFactory
    from tests.test_accessibility import open_as

    alice, bob = UserFactory(username="alice-member"), UserFactory(username="bob-left", is_active=False)
    soon = timezone.now() + timedelta(days=30)
    PersonalToken.objects.create_key(owner=alice, name="weekly notebook", expiry_date=soon)
    PersonalToken.objects.create_key(owner=bob, name="bob cron", expiry_date=soon)
    open_as(browser, live_server.url, operator)
    url = f"{live_server.url}/tokens/"
    wide, phone = layouts_and_column(browser, url, "personal-tokens-cards", "#personal-token-table", "State")
    assert_cards(wide, phone, rows=2, columns=7)  # the eighth, Revoke, is a button
    assert phone["cells"] == [["State active", True], ["State owner deactivated", True]], phone
    assert all(in_view for _words, in_view in phone["buttons"]) and len(phone["buttons"]) == 2, phone

    open_as(browser, live_server.url, alice)
    url = f"{live_server.url}/account/tokens/"
    wide, phone = layouts_and_column(browser, url, "own-tokens-cards", "#own-token-table", "State")
    assert_cards(wide, phone, rows=1, columns=6)
    assert phone["cells"] == [["State active", True]], phone


# Each card table whose box scrolls sideways: its rows' text past the box's right edge, in px.
CARDS_PAST_THEIR_BOX = """
return [...document.querySelectorAll('.table-scroll > table.stacks')].flatMap(table => {
  const box = table.parentElement, edge = box.getBoundingClientRect().right;
  if (box.scrollWidth <= box.clientWidth) return [];
  return [...table.tBodies[0].querySelectorAll('td *')].map(e => [e, e.getBoundingClientRect().right - edge])
    .filter(([, past]) => past > 0.5)
    .map(([e, past]) => [location.pathname, e.textContent.trim().slice(0, 40), Math.round(past)]);
});
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_320_px_phone_cards_hold_long_names_and_code(browser, live_server, operator, demo_archive):  # noqa: F811
    """At 320 px (and a team's causes at 360 px) a card's value ran past it and its box scrolled sideways: the
    overview's and a team's cause "GPU oversubscription" (its last word wider than the card's 96 px value
    column) and a fix's code, torch.amp.GradScaler, 36 px past. Every card of the overview and each team's
    page holds its text; a word or a name of code too long for the card breaks inside it."""
    from fleet import ingest
    from fleet.models import Team
    from tests.test_browser import window_width
    from tests.test_dashboard_browser import log_in

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    log_in(browser, live_server.url, operator, "/overview/")
    past = []
    for width in (320, 360):
        with window_width(browser, width, mobile=True, height=640):
            for path in ["/overview/?from=2026-10-01&to=2026-12-31"] + [
                f"/teams/{slug}/?from=2026-10-01&to=2026-12-31" for slug in Team.objects.values_list("slug", flat=True)
            ]:
                browser.get(f"{live_server.url}{path}")
                past += [[width, *item] for item in browser.execute_script(CARDS_PAST_THEIR_BOX)]
    assert past == [], past[:8]


# At 390 px, each stacked field of `table` whose value is taller than its label: how far the label's top lies
# below the value's.
LABELS_BESIDE_TALL_VALUES = """
const rows = [];
for (const td of document.querySelectorAll(arguments[0] + ' tbody td')) {
  const label = td.querySelector(':scope > .cell-label'), value = label && label.nextElementSibling;
  if (!value) { continue; }
  const l = label.getBoundingClientRect(), v = value.getBoundingClientRect();
  if (v.height > l.height + 10) { rows.push([label.textContent, Math.round(l.top - v.top)]); }
}
return rows;
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_stacked_fields_name_is_level_with_the_first_line_of_its_value(browser, live_server, operator):  # noqa: F811
    """390 px wide, a team's causes stack as cards, and a field's name sat halfway down beside a value of many
    lines: 'The change to make' some 40 px below where its advice begins, 'Cause' beside the second line of a
    long cause. A name now stands level with the first line of its value (as the jobs table's stacked cards
    read), and a field beside one line, or a box, is unchanged."""
    from tests.factories import JobFactory, TeamFactory
    from tests.test_accessibility import open_as
    from tests.test_jobs_page import triaged
    from triage.taxonomy import Category

    team = TeamFactory(name="genai", slug="genai")
    job = JobFactory(team=team, start_time=datetime(2026, 11, 10, 9, tzinfo=UTC), gpu_count=4, gpu_hours=40.0,
                     unused_gpu_hours=30.0, mean_gpu_util=12.0)  # fmt: skip
    triaged(job, "classified", Category.GPU_OVERSUBSCRIPTION, Category.HOST_GPU_TRANSFER)
    open_as(browser, live_server.url, operator)
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
    )
    try:
        browser.get(f"{live_server.url}/teams/genai/?{WEEK}")
        tall = browser.execute_script(LABELS_BESIDE_TALL_VALUES, "#team-causes table.stacks")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert any(label == "The change to make" for label, _below in tall), tall
    assert all(below <= 4 for _label, below in tall), tall


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_causes_jobs_are_cards_with_their_recoverable_gpu_hours_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, a cause's page listed its jobs in a table that scrolled sideways in its box: past the job,
    its name and team, the recoverable GPU-hours the page ranks them by, and the finding itself, were off to
    the right (the finding cut to an ellipsis at any width). Now each job is a card, as a team's worst jobs
    are, its finding whole; at 1280 px a table, as before."""
    from tests.factories import ClusterFactory, JobFactory, TeamFactory
    from tests.test_accessibility import open_as
    from tests.test_jobs_page import triaged
    from triage.models import Finding
    from triage.taxonomy import Category

    team = TeamFactory(name="genai", slug="genai")
    cluster = ClusterFactory(name="alpha")
    for number in range(3):
        job = JobFactory(
            team=team,
            cluster=cluster,
            external_id=f"481311{number}",
            name=f"gpt2-medium-owt-ablation-{number}",
            start_time=datetime(2026, 11, 10, 9 + number, tzinfo=UTC),
            gpu_hours=120.0,
            unused_gpu_hours=90.0,
            mean_gpu_util=28.0,
        )
        triaged(job, "classified", Category.HOST_GPU_TRANSFER)
        Finding.objects.filter(job=job).update(
            gpu_hours=85.5 - number, summary="Host-to-GPU copies come from pageable memory and block the step."
        )
    open_as(browser, live_server.url, operator)
    wide, phone = layouts_and_column(
        browser,
        f"{live_server.url}/categories/host_gpu_transfer/?{WEEK}",
        "cause-jobs",
        "table.cause-jobs",
        "Recoverable",
    )
    assert_cards(wide, phone, rows=3, columns=7)
    assert [text for text, _in_view in phone["cells"]] == [
        f"Recoverable GPU-hours {h}" for h in ("85.5", "84.5", "83.5")
    ]
    assert all(in_view for _text, in_view in phone["cells"]), phone


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_jobs_other_runs_are_cards_with_their_unused_gpu_hours_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, a job's 'Other runs of this job' scrolled sideways in its box: each run's GPU-hours, mean
    utilization, unused GPU-hours and causes, what a reader compares runs by, were off to the right, and each
    row stood some 90 px tall for its causes squeezed into the last column. Now each run is a card, this run's
    among them; at 1280 px a table, as before."""
    from datetime import timedelta

    from tests.factories import ClusterFactory, JobFactory, TeamFactory
    from tests.test_accessibility import open_as
    from tests.test_jobs_page import triaged
    from triage.taxonomy import Category

    team, cluster = TeamFactory(name="genai", slug="genai"), ClusterFactory(name="beta")
    start = datetime(2026, 11, 10, 9, tzinfo=UTC)
    runs = []
    for number in range(3):
        job = JobFactory(
            team=team, cluster=cluster, user="lena.c", name="pythia-1b-dedup-ablation", external_id=f"92126{number}",
            start_time=start + timedelta(days=number), end_time=start + timedelta(days=number, hours=3),
            state="COMPLETED", gpu_count=4, gpu_hours=12.0, unused_gpu_hours=11.0 - number, mean_gpu_util=11.0,
        )  # fmt: skip
        triaged(job, "classified", Category.GPU_OVERSUBSCRIPTION, Category.LENGTHY_LIBRARY_INSTALL)
        runs.append(job)
    open_as(browser, live_server.url, operator)
    wide, phone = layouts_and_column(
        browser, f"{live_server.url}/jobs/{runs[1].pk}/", "job-other-runs", "table.job-runs", "Unused"
    )
    assert_cards(wide, phone, rows=3, columns=8)
    assert [text for text, _in_view in phone["cells"]] == [f"Unused GPU-hours {h}" for h in ("11.0", "10.0", "9.0")]
    assert all(in_view for _text, in_view in phone["cells"]), phone
