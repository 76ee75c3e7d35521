"""A week's work from the keyboard alone, in a real headless Chromium: only Tab, Shift+Tab, Enter, Space,
arrows and typed text reach the page (a file input takes its path as typed text, as a file chooser's
name box does). Where the focus lands after each action is checked as a keyboard or screen-reader
user meets it: on what the page says became of the action, in view and visibly marked, never dropped
to <body> (whence the next Tab starts again at the menu, and a screen reader says nothing).
"""

from __future__ import annotations

from datetime import datetime

import pytest
from django.utils import timezone

from fleet import ingest
from fleet.models import IngestRun, MachineToken
from tests.test_browser import STALE, browser  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import console_errors
from triage.models import Finding

PASSWORD = "correct horse battery staple"

# The focused element as a keyboard user meets it: what it is, its text, whether the page marks it
# (an outline or a shadow), whether it is in the window, and the text of what aria-describedby names.
FOCUSED = r"""
const e = document.activeElement, cs = getComputedStyle(e), r = e.getBoundingClientRect();
const named = (e.getAttribute('aria-describedby') || '').split(' ').filter(Boolean)
  .map(id => document.getElementById(id) ? document.getElementById(id).textContent.trim() : 'MISSING #' + id);
return {tag: e.tagName.toLowerCase(), id: e.id, text: (e.getAttribute('aria-label') || e.textContent).trim(),
        role: e.getAttribute('role'), invalid: e.getAttribute('aria-invalid'), described: named,
        marked: (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0) || cs.boxShadow !== 'none',
        in_view: r.bottom > 0 && r.top < innerHeight};
"""


def focused(driver) -> dict:
    return driver.execute_script(FOCUSED)


def press(driver, *keys) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def tab_to(driver, wanted, limit: int = 200) -> dict:
    """Press Tab until the focused element is `wanted` (a test on `focused`); fails past `limit` stops."""
    from selenium.webdriver.common.keys import Keys

    for _ in range(limit):
        press(driver, Keys.TAB)
        now = focused(driver)
        if wanted(now):
            return now
    raise AssertionError(f"Tab never reached it; the focus ended on {focused(driver)}")


def wait_until(driver, condition, seconds: int = 20):
    from selenium.webdriver.support.wait import WebDriverWait

    return WebDriverWait(driver, seconds, ignored_exceptions=STALE).until(condition)


def keyboard_login(driver, base: str, user, next_path: str) -> None:
    """Log in by typing: the login page puts the cursor in its username field."""
    from selenium.webdriver.common.keys import Keys

    user.set_password(PASSWORD)
    user.save()
    driver.get(f"{base}/login/?next={next_path}")
    # Headless Chromium's page has no window focus of its own: without it, :focus (and so the
    # outline a real window shows) never applies to an element focused by the page's script.
    driver.execute_cdp_cmd("Emulation.setFocusEmulationEnabled", {"enabled": True})
    assert focused(driver)["id"] == "id_username"
    press(driver, user.username, Keys.TAB, PASSWORD, Keys.ENTER)
    wait_until(driver, lambda b: "/login/" not in b.current_url)


@pytest.mark.django_db(transaction=True)
def test_a_failed_login_and_a_connector_form_sent_with_a_mistake_put_the_focus_on_what_went_wrong(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """A form sent back with an error opened with the focus on <body>; the connector form's field
    named an error message (aria-describedby="id_options_error") that had no such id."""
    from selenium.webdriver.common.keys import Keys

    base = live_server.url
    operator.set_password(PASSWORD)
    operator.save()
    browser.get(f"{base}/login/")
    browser.execute_cdp_cmd("Emulation.setFocusEmulationEnabled", {"enabled": True})
    press(browser, operator.username, Keys.TAB, "not the password", Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["tag"] == "p")
    said = focused(browser)
    assert said["text"] == "Your username and password didn't match. Please try again."
    assert said["role"] == "alert" and said["marked"] and said["in_view"]
    press(browser, Keys.TAB)
    assert focused(browser)["id"] == "id_username"  # and on to the form from there

    keyboard_login(browser, base, operator, "/connectors/new/")
    tab_to(browser, lambda f: f["id"] == "id_name")
    press(browser, "kb-connector")
    tab_to(browser, lambda f: f["id"] == "id_kind")
    press(browser, Keys.DOWN)  # its first kind
    tab_to(browser, lambda f: f["id"] == "id_url")
    press(browser, "http://127.0.0.1:9/")
    tab_to(browser, lambda f: f["id"] == "id_cluster")
    press(browser, "alpha")
    tab_to(browser, lambda f: f["id"] == "id_options")
    press(browser, "{not json")
    tab_to(browser, lambda f: f["text"] == "Save")
    press(browser, Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["id"] == "id_options")
    field = focused(browser)
    assert field["invalid"] == "true" and field["marked"] and field["in_view"]
    assert field["described"] == [
        "Kind-specific options (docs/connectors.md).",
        "Options: not valid JSON at line 1, column 2: Expecting property name enclosed in double quotes.",
    ]
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_from_the_keyboard_a_findings_window_shows_on_the_timeline_and_an_answer_lands_on_what_it_changed(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """Show on the timeline scrolled the chart into view but left the focus on the button, far above
    it: the next Tab scrolled back to the findings. An answer sent came back with the focus on <body>
    and its 'Saved your answer' unread. Plotly's toolbar held Tab stops that do nothing here (Box and
    Lasso Select) or send the job's series to Plotly Cloud ('Share chart...')."""
    from selenium.webdriver.common.keys import Keys

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    finding = Finding.objects.filter(result__is_current=True, evidence__windows__0__isnull=False).first()
    assert finding is not None, "the demo fleet should have a time-located finding"
    windows = finding.evidence["windows"]
    keyboard_login(browser, live_server.url, operator, f"/jobs/{finding.job_id}/")
    wait_until(browser, lambda b: b.find_element("id", "timeline").get_attribute("data-ready") == "1")

    summary = f"{len(windows)} time window{'s' if len(windows) != 1 else ''}"
    tab_to(browser, lambda f: f["tag"] == "summary" and f["text"] == summary)
    press(browser, Keys.ENTER)  # unfolds the windows
    button = tab_to(browser, lambda f: f["text"].endswith("on the timeline"))
    start, end = (datetime.fromisoformat(windows[0][at]).strftime("%Y-%m-%d %H:%M:%S") for at in ("start", "end"))
    assert button["text"] == f"Show {start} to {end} on the timeline"  # as the page writes times (UTC here)
    press(browser, Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["id"] == "timeline")
    chart = focused(browser)
    assert chart["text"] == "GPU utilization and memory over time" and chart["role"] == "figure"
    assert chart["marked"] and chart["in_view"]
    assert browser.find_element("id", "timeline-status").text.startswith("Showing ")  # aria-live says so
    press(browser, Keys.TAB)
    toolbar = []
    while focused(browser)["tag"] == "button":
        toolbar.append(focused(browser)["text"])
        press(browser, Keys.TAB)
    assert toolbar and toolbar[0] == "Zoom in"
    assert not {"Share chart...", "Box Select", "Lasso Select"} & set(toolbar), toolbar
    assert "Download plot as a PNG" in toolbar

    # The finding's answer: its radio buttons, one Tab stop, moved through with the arrows.
    browser.get(f"{live_server.url}/jobs/{finding.job_id}/")
    tab_to(browser, lambda f: browser.execute_script("return document.activeElement.type") == "radio")
    press(browser, Keys.DOWN)  # right → wrong
    # The reason is a box of its own lines (abcee3d), where Enter starts a new line: Tab on to Send.
    press(browser, Keys.TAB, "the saves are short", Keys.TAB, Keys.ENTER)
    wait_until(browser, lambda b: b.current_url.endswith(f"#answer-{finding.category}"))
    wait_until(browser, lambda b: focused(b)["role"] == "status")
    said = focused(browser)
    assert said["text"].startswith(f"Saved your answer on {finding.get_category_display()}: Wrong")
    assert said["marked"] and said["in_view"]
    press(browser, Keys.TAB)  # on into the answer's form
    assert browser.execute_script("return document.activeElement.type") == "radio"
    assert browser.execute_script("return document.activeElement.value") == "wrong"
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_token_made_and_revoked_and_a_log_searched_from_the_keyboard_land_on_what_the_page_says(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """After creating or revoking a token, or searching a log, the page opened with the focus on
    <body>: the message (or the count of lines found) was above the focus's next stop, the menu,
    and unread. Each Revoke button was named 'Revoke' only."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.expected_conditions import alert_is_present

    from fleet.models import Artifact

    keyboard_login(browser, live_server.url, operator, "/tokens/")
    tab_to(browser, lambda f: f["id"] == "token-name")
    press(browser, "backup-host", Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["role"] == "status")
    said = focused(browser)
    assert said["text"] == "Token “backup-host” created. Copy it now: it is not shown again."
    assert said["marked"] and said["in_view"]
    token = MachineToken.objects.get(name="backup-host")
    revoke = tab_to(browser, lambda f: f["text"].startswith("Revoke"))
    assert revoke["text"] == f"Revoke the token backup-host ({token.prefix}…)"
    press(browser, Keys.ENTER)
    wait_until(browser, alert_is_present()).accept()  # revoking asks first (static/js/confirm.js)
    wait_until(
        browser, lambda b: focused(b)["text"].startswith("Token “backup-host”") and "revoked" in focused(b)["text"]
    )
    assert focused(browser)["in_view"]
    token.refresh_from_db()
    assert token.revoked

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    log = Artifact.objects.filter(kind="log").order_by("pk").first()
    browser.get(f"{live_server.url}/jobs/{log.job_id}/files/{log.pk}/")
    tab_to(browser, lambda f: f["id"] == "file-q")
    press(browser, "epoch", Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["role"] == "status")
    found = focused(browser)
    assert "hold “epoch”" in found["text"] or found["text"] == "No line holds “epoch”."
    assert found["marked"] and found["in_view"]
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_followed_ingest_run_that_finishes_comes_back_with_the_focus_on_how_it_ended(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """The run page reloads itself when the run ends; it came back with the focus on <body>, and the
    status it loaded with (role=status) is not announced: a screen reader said nothing of the end."""
    run = IngestRun.objects.create(
        archive_name="week-47.zip",
        source=IngestRun.Source.UPLOAD,
        created_by=operator,
        status=IngestRun.Status.RUNNING,
        started_at=timezone.now(),
        phase="reading archive",
    )
    keyboard_login(browser, live_server.url, operator, f"/ingest-runs/{run.pk}/")
    phase = browser.find_element("id", "run-phase")
    assert phase.get_attribute("aria-live") == "polite"  # "storing jobs" and so on are said as they come
    IngestRun.objects.filter(pk=run.pk).update(
        status=IngestRun.Status.SUCCEEDED, jobs_total=3, jobs_done=3, jobs_created=3, phase="",
        finished_at=timezone.now(),
    )  # fmt: skip
    wait_until(browser, lambda b: focused(b)["tag"] == "h1")
    heading = focused(browser)
    assert heading["text"] == f"Ingest run #{run.pk} Succeeded" and heading["marked"]
    # Opened afresh, the page leaves the focus where the browser puts it.
    browser.get(f"{live_server.url}/ingest-runs/{run.pk}/")
    assert focused(browser)["tag"] == "body"
    assert console_errors(browser) == []


# The upload is over, and the page gone to the run, faster than a poll can look: the page notes where
# the focus is at each change of its progress box, in sessionStorage, which outlives the navigation.
WATCH_FOCUS = """
sessionStorage.setItem("upload-focus", "[]");
new MutationObserver(function () {
  var seen = JSON.parse(sessionStorage.getItem("upload-focus"));
  seen.push(document.activeElement.id || document.activeElement.tagName.toLowerCase());
  sessionStorage.setItem("upload-focus", JSON.stringify(seen));
}).observe(document.getElementById("upload-progress"), {attributes: true, childList: true, subtree: true});
"""


@pytest.mark.django_db(transaction=True)
def test_an_upload_sent_from_the_keyboard_keeps_the_focus_on_its_progress(browser, live_server, operator,  # noqa: F811
                                                                          upload_dirs):  # fmt: skip
    """Enter on 'Upload and import' disabled the button under the focus, which fell to <body>: a
    Tab then started at the menu, and the progress the page went on to show was nowhere near it."""
    from selenium.webdriver.common.keys import Keys

    from tests.conftest import EXAMPLE_ARCHIVE

    keyboard_login(browser, live_server.url, operator, "/ingest-runs/upload/")
    browser.execute_script(WATCH_FOCUS)
    tab_to(browser, lambda f: f["id"] == "archive-file")
    browser.switch_to.active_element.send_keys(str(EXAMPLE_ARCHIVE.resolve()))  # the chooser's name, typed
    tab_to(browser, lambda f: f["id"] == "upload-button")
    press(browser, Keys.ENTER)
    wait_until(browser, lambda b: "/ingest-runs/upload/" not in b.current_url and "/ingest-runs/" in b.current_url)
    seen = browser.execute_script("return JSON.parse(sessionStorage.getItem('upload-focus'))")
    assert seen and set(seen) == {"upload-label"}, seen  # "Uploading example-archive.zip…", role=status
    assert console_errors(browser) == []


# What the page's live regions hold (role=status or alert, or aria-live other than off): what a screen
# reader says when it changes. Text that changes anywhere else is not read out.
LIVE_TEXTS = """
return Array.from(document.querySelectorAll('[role=status], [role=alert], [aria-live]'))
  .filter(e => e.getAttribute('aria-live') !== 'off').map(e => e.textContent.trim());
"""


@pytest.mark.django_db(transaction=True)
def test_a_retriage_followed_on_the_rules_page_says_how_it_ended(browser, live_server, operator):  # noqa: F811
    """The rules page follows a background re-triage ('10 of 4,000 jobs · Running'); the line was in no
    live region, so 'Done' or 'Failed' was never read out, and a failure's error showed only on reload."""
    from triage.models import RetriageRun, RuleSet

    rule_set = RuleSet.current()
    run = RetriageRun.objects.create(
        rule_set=rule_set, status=RetriageRun.Status.RUNNING, jobs_total=4000, jobs_done=10
    )
    keyboard_login(browser, live_server.url, operator, "/triage/rules/")
    wait_until(browser, lambda b: b.find_element("id", "retriage-text").text == "10 of 4,000 jobs · Running")
    assert not any("Running" in text for text in browser.execute_script(LIVE_TEXTS))  # not said every 2 s
    RetriageRun.objects.filter(pk=run.pk).update(
        jobs_done=2500, status=RetriageRun.Status.FAILED, error="The worker was lost at job 2501."
    )  # fmt: skip
    wait_until(browser, lambda b: any("Failed" in text for text in b.execute_script(LIVE_TEXTS)))
    said = [text for text in browser.execute_script(LIVE_TEXTS) if "Failed" in text]
    assert said == [
        f"Re-triage with v{rule_set.version}: Failed, 2,500 of 4,000 jobs. The worker was lost at job 2501."
    ]  # the counts with the page's thousands separator
    assert browser.find_element("id", "retriage-error").text == "The worker was lost at job 2501."  # seen too
    assert console_errors(browser) == []


def date_field_stops(driver, name: str) -> list[dict]:
    """Tab onto the field `name` and on through its stops (a date's day, month, year, and its calendar
    button), while the focus stays in it: where the focus is at each, as `focused` sees it."""
    from selenium.webdriver.common.keys import Keys

    in_field = f"return document.activeElement.name === {name!r}"
    if not driver.execute_script(in_field):
        tab_to(driver, lambda f: driver.execute_script(in_field))
    stops = []
    while driver.execute_script(in_field):
        stops.append(focused(driver))
        press(driver, Keys.TAB)
    return stops


@pytest.mark.django_db(transaction=True)
def test_each_stop_of_a_date_field_is_marked_its_calendar_button_too(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """Tab goes through a date field's parts and then its calendar button (Chromium's picker indicator),
    which is a stop of the field's own: there the field was no longer :focus-visible, so its outline
    went and only the browser's thin ring on the icon said where the keyboard was."""
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    keyboard_login(browser, live_server.url, operator, "/jobs/")
    # Each field by its name, with the page to open first (None: the next field on the same page). The
    # job timeline's From and to are text fields (the reader's zone, 24-hour), not date fields.
    fields = {"start_from": "/jobs/", "start_to": None, "from": "/", "to": None}
    for name, page in fields.items():
        if page:
            browser.get(live_server.url + page)
        stops = date_field_stops(browser, name)
        assert len(stops) >= 4, (name, stops)  # three or more parts, then the calendar button
        assert all(stop["marked"] for stop in stops), (name, [stop["marked"] for stop in stops])
    assert console_errors(browser) == []


def typed_time(moment) -> list:
    """The keys that type `moment` into a timeline window field (the reader's zone, here UTC): the
    field's text deleted from its end, then the time as the field writes it, 2026-11-19 18:26:09."""
    from selenium.webdriver.common.keys import Keys

    return [Keys.END, *[Keys.BACKSPACE] * 30, moment.strftime("%Y-%m-%d %H:%M:%S")]


@pytest.mark.django_db(transaction=True)
def test_a_timeline_window_that_ends_before_it_starts_marks_its_fields_and_keeps_the_focus_there(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """A window typed with its end before its start only changed the chart's status line: the fields
    were not marked invalid nor named the message, and from Show the focus stayed on the button."""
    from datetime import UTC, timedelta

    from selenium.webdriver.common.keys import Keys

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    job = Finding.objects.filter(result__is_current=True).first().job
    start = job.start_time.astimezone(UTC).replace(microsecond=0) + timedelta(hours=1)
    keyboard_login(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait_until(browser, lambda b: b.find_element("id", "timeline").get_attribute("data-ready") == "1")
    name = "return document.activeElement.name"
    tab_to(browser, lambda f: browser.execute_script(name) == "start")
    press(browser, *typed_time(start))
    tab_to(browser, lambda f: browser.execute_script(name) == "end")
    press(browser, *typed_time(start - timedelta(minutes=30)), Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["invalid"] == "true")
    field = focused(browser)
    assert browser.execute_script(name) == "end"  # the focus stays where the window was typed
    assert field["described"] == ["Choose a window whose end is after its start."] and field["marked"]
    assert "Choose a window whose end is after its start." in browser.execute_script(LIVE_TEXTS)  # said
    assert browser.execute_script("return document.querySelector('[name=start]').getAttribute('aria-invalid')")

    tab_to(browser, lambda f: f["text"] == "Show")
    press(browser, Keys.ENTER)  # sent again from the button: the focus goes back to the field to change
    wait_until(browser, lambda b: b.execute_script(name) == "end")
    press(browser, *typed_time(start + timedelta(minutes=30)), Keys.ENTER)
    wait_until(browser, lambda b: b.find_element("id", "timeline-status").text.startswith("Showing "))
    assert focused(browser)["invalid"] is None and focused(browser)["described"] == []
    assert not browser.find_element("id", "timeline-window-error").is_displayed()
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_the_numbers_toggles_and_a_findings_answer_buttons_say_what_they_are_for(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """The overview's four 'The numbers' toggles had one name, and each finding's answer button read
    'Send' alone: a screen reader's list of buttons, or Tab landing on one, said nothing of which."""
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    keyboard_login(browser, live_server.url, operator, "/")
    toggles = []

    def collect(now: dict) -> bool:
        if now["tag"] == "summary" and now["text"].startswith("The numbers"):
            toggles.append(now["text"])
            assert browser.execute_script("return document.activeElement.textContent.trim()") == "The numbers"
        return len(toggles) == 4

    tab_to(browser, collect)
    assert len(set(toggles)) == 4, toggles
    assert all(name.startswith("The numbers: ") for name in toggles), toggles
    assert "The numbers: Teams by unused GPU-hours" in toggles

    findings = Finding.objects.filter(result__is_current=True)
    job_id = findings.values_list("job_id", flat=True).first()
    causes = [f.get_category_display() for f in findings.filter(job_id=job_id)]
    browser.get(f"{live_server.url}/jobs/{job_id}/")
    button = tab_to(browser, lambda f: f["tag"] == "button" and f["text"].startswith("Send"))
    assert button["text"] in {f"Send your answer on {cause}" for cause in causes}
    assert browser.execute_script("return document.activeElement.textContent.trim()") == "Send"  # as seen
    assert console_errors(browser) == []
