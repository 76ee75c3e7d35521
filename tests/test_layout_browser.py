"""Pages laid out as the rest of the product, measured in headless Chromium at 1280 px (a laptop):
the idle alerts form, the chat webhooks table, the ingest runs filter, a study's page, the deliveries."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from tests.test_browser import browser, window_width  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import console_errors, log_in

BOX = "const r = arguments[0].getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];"
# Where an element's words are drawn (its box may be taller: a flex row stretches it).
TEXT_BOX = (
    "const r = document.createRange(); r.selectNodeContents(arguments[0]); const b = r.getBoundingClientRect();"
    " return [b.left, b.top, b.right, b.bottom];"
)
STYLE = "const s = getComputedStyle(arguments[0]); return [s.fontSize, s.fontFamily];"


def box(driver, selector: str) -> list[float]:
    from selenium.webdriver.common.by import By

    return driver.execute_script(BOX, driver.find_element(By.CSS_SELECTOR, selector))


def style(driver, selector: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return driver.execute_script(STYLE, driver.find_element(By.CSS_SELECTOR, selector))


# Where a word in an element breaks across lines: the word's start before each break ([] when on one line).
BREAKS = """
const [element, word] = arguments, chars = [];
const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) { for (let i = 0; i < walker.currentNode.length; i++) chars.push([walker.currentNode, i]); }
const at = chars.map(([node, i]) => node.data[i]).join('').indexOf(word), breaks = [];
let top = null;
for (let k = 0; at >= 0 && k < word.length; k++) {
  const [node, i] = chars[at + k], range = document.createRange();
  range.setStart(node, i); range.setEnd(node, i + 1);
  const here = Math.round(range.getBoundingClientRect().top);
  if (top !== null && here !== top) breaks.push(word.slice(0, k));
  top = here;
}
return at < 0 ? null : breaks;
"""


def lines(driver, selector: str) -> int:
    """How many lines the element's text takes (its inline boxes' distinct tops)."""
    from selenium.webdriver.common.by import By

    script = ("const range = document.createRange(); range.selectNodeContents(arguments[0]);"
              "return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;")  # fmt: skip
    return driver.execute_script(script, driver.find_element(By.CSS_SELECTOR, selector))


@pytest.mark.django_db(transaction=True)
def test_forms_tables_and_a_studys_card_line_up_at_1280_px(browser, live_server, operator, team_a):  # noqa: F811
    """Found in an audit at 1280 px: the idle alerts form had its help beside the controls and a small
    minutes box; the webhooks table's team names were a size smaller than its other cells; the ingest
    runs filter's Clear stood above the middle of its controls; a study's progress read '0 of / 8 jobs
    labelled' beside its bar, its Start labeling button stood 8 px in from the card's text and its seed
    was in smaller type; the deliveries broke a job's name at each hyphen ('gpt2-medium-owt-' / 'ablation')."""
    from tests.factories import JobFactory
    from triage.digests.models import Delivery, DigestKind, TeamWebhook
    from triage.labeling.models import Assignment, Study, StudyJob, StudyRater

    job = JobFactory(team=team_a, name="gpt2-medium-owt-ablation", start_time=datetime(2026, 11, 17, tzinfo=UTC))
    hook = TeamWebhook(team=team_a, host="chat.example.org")
    hook.set_url("https://chat.example.org/hooks/abc")
    hook.save()
    since = job.start_time + timedelta(minutes=30)
    refused = (
        "Not posted: chat.example.org resolves to 10.0.0.7, a private network address; webhooks may not post"
        " to internal addresses unless ALERT_WEBHOOK_ALLOWED_NETWORKS allows them."
    )
    Delivery.objects.create(
        webhook=hook,
        kind=DigestKind.IDLE_ALERT_WEBHOOK,
        team=team_a,
        iso_week="2026-W47",
        job=job,
        idle_since=since,
        status=Delivery.Status.FAILED,
        attempts=1,
        response_status=500,
        last_error=refused,
    )
    far = "maximilian.hoffmann-schreiber@machine-learning-research.example.org"
    Delivery.objects.create(
        recipient=far,
        kind=DigestKind.IDLE_ALERT,
        team=team_a,
        iso_week="2026-W47",
        job=job,
        idle_since=since,
        status=Delivery.Status.FAILED,
        attempts=3,
        last_error=f"SMTPRecipientsRefused: {{'{far}': (550, b'5.1.1 Mailbox unavailable')}}",
    )
    Delivery.objects.create(recipient="alice@example.org", kind=DigestKind.IDLE_ALERT, team=team_a, iso_week="2026-W47",
                            job=job, idle_since=since, status=Delivery.Status.SENT, attempts=1,
                            claimed_at=since, sent_at=since)  # fmt: skip
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=operator)
    for position in range(8):
        item = StudyJob.objects.create(study=study, job=JobFactory(team=team_a), position=position)
        Assignment.objects.create(item=item, rater=operator)
    base = live_server.url
    log_in(browser, base, operator, "/digests/alerts/")
    with window_width(browser, 1280):
        browser.get(f"{base}/digests/alerts/")
        checkbox, help_text = box(browser, "#id_enabled"), box(browser, "#id_enabled_helptext")
        assert help_text[1] >= checkbox[3], "the help goes under its control, not beside it"
        minutes = box(browser, "#id_idle_minutes")
        assert minutes[2] - minutes[0] >= 96, "the minutes box holds 10080 and more"
        assert box(browser, "#id_idle_minutes_helptext")[1] >= minutes[3]
        assert style(browser, "#team-webhooks tbody th") == style(browser, "#team-webhooks tbody td")

        browser.get(f"{base}/ingest-runs/?status=failed")
        select, clear = box(browser, "form.filters select"), box(browser, "form.filters > a")
        middle = (select[1] + select[3]) / 2
        assert abs((clear[1] + clear[3]) / 2 - middle) <= 2, (select, clear)

        browser.get(f"{base}/studies/{study.pk}/")
        assert lines(browser, "#my-progress-text") == 1
        assert box(browser, "#start-labeling")[0] == box(browser, "#my-progress")[0]
        seed = browser.find_element("xpath", "//dt[.='Seed']/following-sibling::dd[1]")
        jobs = browser.find_element("xpath", "//dt[.='Jobs']/following-sibling::dd[1]")
        assert browser.execute_script(STYLE, seed) == browser.execute_script(STYLE, jobs)

        browser.get(f"{base}/digests/deliveries/")
        assert lines(browser, "table.deliveries td.what a") == 1
        # A setting's name in an error breaks after an underscore, never mid-word ('ALERT_WEBHOOK_ALLO' /
        # 'WED_NETWORKS'); it still reads whole.
        cell = browser.find_element("xpath", "//td[contains(., 'ALERT_WEBHOOK_ALLOWED_NETWORKS')]")
        assert "ALERT_WEBHOOK_ALLOWED_NETWORKS allows them" in cell.text.replace("\n", " ")
        before_breaks = browser.execute_script(BREAKS, cell, "ALERT_WEBHOOK_ALLOWED_NETWORKS")
        assert all(part.endswith("_") for part in before_breaks), before_breaks
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_deliverys_error_keeps_its_exceptions_name_whole(browser, live_server, operator, team_a):  # noqa: F811
    """Between a phone and a wide laptop (720 to 1080 px) the deliveries' Last error column was narrower
    than 'SMTPRecipientsRefused:' and broke it mid-name ('SMTPRecipientsRefus' / 'ed:'): the name stays
    whole, its line breaking after the colon, on a laptop, a tablet and a phone."""
    from tests.factories import JobFactory
    from triage.digests.models import Delivery, DigestKind

    job = JobFactory(team=team_a, name="gpt2-medium-owt-ablation", start_time=datetime(2026, 11, 17, tzinfo=UTC))
    far = "maximilian.hoffmann-schreiber@machine-learning-research.example.org"
    errors = {
        far: f"SMTPRecipientsRefused: {{'{far}': (550, b'5.1.1 Mailbox unavailable')}}",
        "bob@example.org": "SMTPServerDisconnected: Connection unexpectedly closed",
    }
    for hours, (recipient, error) in enumerate(errors.items()):
        Delivery.objects.create(recipient=recipient, kind=DigestKind.IDLE_ALERT, team=team_a, iso_week="2026-W47",
                                job=job, idle_since=job.start_time + timedelta(hours=hours),
                                status=Delivery.Status.FAILED, attempts=3, last_error=error)  # fmt: skip
    log_in(browser, live_server.url, operator, "/digests/deliveries/")
    for width in (1280, 1024, 800, 390):
        with window_width(browser, width):
            browser.get(f"{live_server.url}/digests/deliveries/")
            for error in errors.values():
                name = error.split(" ")[0]
                cell = browser.find_element("xpath", f"//td[contains(@class, 'error-text')][contains(., '{name}')]")
                assert browser.execute_script(BREAKS, cell, name) == [], (width, name)
                # Copied, the error is the same text.
                assert cell.text.replace("\n", " ").endswith(error), (width, cell.text)
            assert browser.execute_script("return document.documentElement.scrollWidth") <= width
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_the_digests_week_label_is_level_with_its_box(browser, live_server, member_a):  # noqa: F811
    """The digests page's 'ISO week' stood at the top of its row, 5 px above the week box and the
    links beside it, on a laptop and on a phone: it is level with the box it names."""
    log_in(browser, live_server.url, member_a, "/digests/")
    for width in (1280, 390):
        with window_width(browser, width):
            browser.get(f"{live_server.url}/digests/")
            label = browser.execute_script(TEXT_BOX, browser.find_element("css selector", "label[for=week]"))
            field = box(browser, "#week")
            assert abs((label[1] + label[3]) / 2 - (field[1] + field[3]) / 2) <= 2, (width, label, field)
            previous = box(browser, "form.filters > a")
            assert abs((label[1] + label[3]) / 2 - (previous[1] + previous[3]) / 2) <= 2, (width, label, previous)
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_digests_preview_links_stay_on_one_line(browser, live_server, operator, team_a):  # noqa: F811
    """At 390 px the digests table's Preview column wrapped "HTML ·" over "text": the two links of a
    digest stay on one line, on a phone as on a laptop."""
    log_in(browser, live_server.url, operator, "/digests/")
    for width in (1280, 390):
        with window_width(browser, width):
            browser.get(f"{live_server.url}/digests/")
            rows = browser.find_elements("css selector", "table.data tbody tr")
            assert len(rows) >= 2, width  # the operator digest and team A's
            for row in rows:
                html_link, text_link = row.find_elements("css selector", "td:last-child a")
                assert (html_link.text, text_link.text) == ("HTML", "text")
                html_box = browser.execute_script(BOX, html_link)
                text_box = browser.execute_script(BOX, text_link)
                assert abs(html_box[1] - text_box[1]) <= 1 and text_box[0] > html_box[2], (width, html_box, text_box)
    assert console_errors(browser) == []


# The date boxes' places, and how far a box scrolls sideways inside itself (0: it does not).
DATES = "return [...document.querySelectorAll('input[name^=start_]')].map(e => e.getBoundingClientRect().toJSON());"
SCROLLS_BY = "const e = document.querySelector(arguments[0]); return e.scrollWidth - e.clientWidth;"


@pytest.mark.django_db(transaction=True)
def test_on_a_320_px_phone_the_digest_preview_fits_its_box_and_the_started_dates_are_a_pair(
    browser,  # noqa: F811
    live_server,
    operator,
    team_a,
):
    """At 320 px the digest preview's mail (a week of four-digit figures: "1,718 USD" beside "1,755 USD")
    scrolled sideways inside its box, the Change column out of view: the page does not get the mail's head,
    whose style block narrows the mailed digest below 361 px (864aa55). And the jobs filter's second
    "Started" date box wrapped onto a line of its own, under the first's "–". The mail fits its box, and the
    two boxes lie on one line, inside the screen; at 390 and 1280 px they are on one line, as before."""
    from tests.factories import JobFactory
    from tests.test_digests import WEEK, WEEK_START

    day = timedelta(days=1)
    for start, hours, unused, cost in ((WEEK_START + day, 695.8, 321.0, "1718.00"),
                                       (WEEK_START - 3 * day, 711.4, 256.8, "1755.00")):  # fmt: skip
        JobFactory(team=team_a, start_time=start, gpu_hours=hours, unused_gpu_hours=unused, mean_gpu_util=30, cost=cost)
    log_in(browser, live_server.url, operator, "/jobs/")
    seen = {}
    for width in (320, 390, 1280):
        with window_width(browser, width, mobile=width < 1000, height=640):
            browser.get(f"{live_server.url}/digests/preview/team/{team_a.slug}/{WEEK}/")
            assert "1,718" in browser.find_element("css selector", ".digest-preview").text
            seen[f"{width}: mail scrolls by"] = browser.execute_script(SCROLLS_BY, ".digest-preview")
            browser.get(f"{live_server.url}/jobs/")
            start_from, start_to = browser.execute_script(DATES)
            seen[f"{width}: dates on one line, in view"] = (
                abs(start_from["top"] - start_to["top"]) <= 1 and start_to["left"] > start_from["right"]
                and start_from["left"] >= 0 and start_to["right"] <= width
            )  # fmt: skip
            seen[f"{width}: page scrolls by"] = browser.execute_script(SCROLLS_BY, "html")
    assert seen == {
        f"{width}: {what}": value
        for width in (320, 390, 1280)
        for what, value in (("mail scrolls by", 0), ("dates on one line, in view", True), ("page scrolls by", 0))
    }
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_the_settings_pages_cards_start_under_the_bar_and_their_buttons_clear_the_help(browser, live_server, operator):  # noqa: F811
    """Your settings: the first card sat 60 px further down than any other page's first card, with 60 px
    between the cards, and each Save button touched the help text above it. The first card starts where
    a page's heading does, the cards are as far apart as elsewhere, and a button clears its help text."""
    log_in(browser, live_server.url, operator, "/password/")
    for width in (1280, 390):
        with window_width(browser, width):
            browser.get(f"{live_server.url}/password/")
            main = box(browser, "main")
            cards = [browser.execute_script(BOX, card) for card in browser.find_elements("css selector", "main .card")]
            assert len(cards) >= 2, cards  # the time zone and password, then the person's own API tokens
            assert cards[0][1] - main[1] <= 24, (width, main, cards[0])
            for above, below in itertools.pairwise(cards):
                assert 0 <= below[1] - above[3] <= 24, (width, cards)
            for form in browser.find_elements("css selector", "main .card form"):
                help_text = form.find_elements("css selector", "small.muted, .helptext, ul")[-1]
                button = form.find_element("css selector", "button[type=submit]")
                gap = browser.execute_script(BOX, button)[1] - browser.execute_script(BOX, help_text)[3]
                assert gap >= 8, (width, button.text, gap)
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_the_study_forms_sampling_select_looks_like_its_other_fields(browser, live_server, operator):  # noqa: F811
    """New labeling study: the Sampling select was Chromium's grey while the inputs around it were white;
    it has their background and border."""
    look = "const s = getComputedStyle(arguments[0]); return [s.backgroundColor, s.borderTopColor, s.borderTopWidth];"
    log_in(browser, live_server.url, operator, "/studies/new/")
    for width in (1280, 390):
        with window_width(browser, width):
            browser.get(f"{live_server.url}/studies/new/")
            select = browser.find_element("css selector", ".study-form select")
            name = browser.find_element("css selector", ".study-form input[type=text]")
            assert browser.execute_script(look, select) == browser.execute_script(look, name), width
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_each_thresholds_unit_stays_on_one_line(browser, live_server, operator):  # noqa: F811
    """At 390 px the rules page's `gap_relative_util` unit "x median" wrapped onto two lines, making its
    row taller than its name and value: a blank band above its description. Each unit is one line, so
    each row is as tall as its name and field."""
    log_in(browser, live_server.url, operator, "/triage/rules/")
    for width in (1280, 390):
        with window_width(browser, width):
            browser.get(f"{live_server.url}/triage/rules/")
            units = browser.find_elements("css selector", "table.with-changes tbody td.unit")
            assert len(units) > 10, width
            wrapped = [unit.text for unit in units if browser.execute_script(
                "const r = document.createRange(); r.selectNodeContents(arguments[0]);"
                "return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size;", unit) > 1]  # fmt: skip
            assert wrapped == [], width
    assert console_errors(browser) == []
