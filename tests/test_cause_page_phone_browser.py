"""On a phone, a cause's page puts its jobs (what an operator came for from a digest or the dashboard) within
reach: the long fix guide is folded under its heading, one tap opens it; a wider window shows it open."""

from datetime import UTC, datetime

import pytest

from tests.factories import JobFactory
from tests.test_browser import browser, color_scheme, window_width  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import log_in
from tests.test_jobs_page import _found
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db


def test_on_a_phone_a_causes_jobs_come_before_its_folded_fix_guide(browser, live_server, operator, team_a):  # noqa: F811
    import os

    from selenium.webdriver.common.by import By

    _found(JobFactory(team=team_a, name="ckpt-run", start_time=datetime(2026, 11, 2, 9, tzinfo=UTC)),
           (Category.MODEL_CHECKPOINTING, 5.0))  # fmt: skip
    path = f"/categories/{Category.MODEL_CHECKPOINTING.value}/?from=2026-11-01&to=2026-11-30"
    log_in(browser, live_server.url, operator, path)
    shots = os.environ.get("SCREENSHOTS")
    for width, height in ((390, 844), (1280, 800)):
        for scheme in ("light", "dark"):
            color_scheme(browser, scheme)
            with window_width(browser, width, mobile=width < 500, height=height):
                browser.get(live_server.url + path)
                guide = browser.find_element(By.ID, "cause-guide")
                jobs = browser.find_element(By.ID, "cause-jobs")
                if width < 500:
                    assert guide.get_attribute("open") is None, "folded on a phone"
                    # The jobs' link is within the first two screens, not below the whole guide.
                    assert jobs.location["y"] < 2 * height, jobs.location
                    assert guide.find_element(By.TAG_NAME, "summary").text == "What it is and how to fix it"
                else:
                    assert guide.get_attribute("open") is not None, "open on a wide window"
                    assert guide.find_element(By.CSS_SELECTOR, "pre.code").is_displayed()
                if shots:
                    browser.save_screenshot(f"{shots}/cause-{width}-{scheme}.png")
    color_scheme(browser, None)
    with window_width(browser, 390, mobile=True, height=844):
        browser.get(live_server.url + path)
        guide = browser.find_element(By.ID, "cause-guide")
        guide.find_element(By.TAG_NAME, "summary").click()  # one tap opens it
        assert guide.find_element(By.CSS_SELECTOR, "pre.code").is_displayed()


# The rows a code line is drawn in: the left edge of its first non-blank character, and of each row its
# wrapped remainder continues on (a Range's rectangles, one per row it spans). A line's text may be in several
# nodes (an option's head is a span of its own: guidance_format's option_heads).
_CODE_ROWS = """
const rows = [];
for (const pre of arguments[0].querySelectorAll("pre.code")) {
  for (const line of pre.querySelectorAll(".line")) {
    if (!line.textContent.trim()) { continue; }
    const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
    let text = walker.nextNode();
    while (text.data.search(/\\S/) < 0) { text = walker.nextNode(); }
    const range = document.createRange();
    const first = text.data.search(/\\S/);
    range.setStart(text, first); range.setEnd(text, first + 1);
    const start = range.getBoundingClientRect();
    range.setEnd(line, line.childNodes.length);
    const lefts = {};
    for (const r of range.getClientRects()) {
      const row = Math.round(r.top);
      if (r.width && r.top > start.top + 1) { lefts[row] = Math.min(lefts[row] ?? 1e9, r.left); }
    }
    rows.push({line: line.textContent, indent: start.left, continued: Object.values(lefts)});
  }
}
return rows;
"""


def test_on_a_phone_the_fix_guides_code_wraps_inside_the_page_keeping_its_indentation(browser, live_server, operator):  # noqa: F811
    """The guide's before/after code ran sideways past a 390 px phone's screen (its box scrolled, the
    comment at the end of a line out of sight). Its long lines wrap, each wrapped remainder set in deeper
    than the line's own indentation (so a Python line's remainder never reads as a line of an outer block),
    and the text copied is the code as written, line for line."""
    import os

    from selenium.webdriver.common.by import By

    from triage.guidance import category_guide

    log_in(browser, live_server.url, operator, "/categories/")
    wrapped = 0
    with window_width(browser, 390, mobile=True, height=844):
        for category in Category:
            browser.get(f"{live_server.url}/categories/{category.value}/")
            guide = browser.find_element(By.ID, "cause-guide")
            browser.execute_script("arguments[0].open = true", guide)
            page = browser.execute_script(
                "const e = document.documentElement; return [e.scrollWidth, e.clientWidth]")  # fmt: skip
            assert page[0] <= page[1], (category, page)
            blocks = guide.find_elements(By.CSS_SELECTOR, "pre.code")
            assert blocks, category
            for block in blocks:
                sizes = browser.execute_script("return [arguments[0].scrollWidth, arguments[0].clientWidth]", block)
                assert sizes[0] <= sizes[1], (category, block.text, sizes)
            # Copied, the code is the guide's code as written: its lines and their indentation.
            shown = [b.get_attribute("textContent") for b in blocks]
            written = [code for fix in category_guide(category)["fixes"].values() for code in fix[1:]]
            assert shown == written, category
            if os.environ.get("SCREENSHOTS") and category == Category.MODEL_CHECKPOINTING:
                browser.execute_script("arguments[0].scrollIntoView()", blocks[-1])
                browser.save_screenshot(f"{os.environ['SCREENSHOTS']}/cause-code-390.png")
            for row in browser.execute_script(_CODE_ROWS, guide):
                for left in row["continued"]:
                    wrapped += 1
                    assert left > row["indent"] + 4, (category, row)  # set in deeper than the line's own start
    assert wrapped, "some line is longer than a phone's screen"


def test_on_a_phone_the_jobs_come_before_the_chart_set_by_the_guide_when_wide(browser, live_server, operator, team_a):  # noqa: F811
    """A team member who opens a cause's page on a phone acts on its jobs and on the fix: the weekly chart
    took a screen between the folded guide and the jobs. On a phone the jobs come next after the guide,
    the chart after them; a wide window keeps the chart beside the guide, the jobs below both."""
    from selenium.webdriver.common.by import By

    _found(JobFactory(team=team_a, name="ckpt-run", start_time=datetime(2026, 11, 2, 9, tzinfo=UTC)),
           (Category.MODEL_CHECKPOINTING, 5.0))  # fmt: skip
    path = f"/categories/{Category.MODEL_CHECKPOINTING.value}/?from=2026-11-01&to=2026-11-30"
    log_in(browser, live_server.url, operator, path)

    def box(element_id):  # a card, or the card holding the element
        card = f"//*[@id='{element_id}']/ancestor-or-self::*[contains(@class, 'card')]"
        return browser.find_element(By.XPATH, card).rect

    with window_width(browser, 390, mobile=True, height=844):
        browser.get(live_server.url + path)
        guide, jobs, trend, answers = box("cause-guide"), box("cause-jobs"), box("cause-trend"), box("verdicts")
        assert guide["y"] < jobs["y"] < trend["y"] < answers["y"], (guide, jobs, trend, answers)
        assert jobs["y"] < 844, "the jobs start on the first screen"
    with window_width(browser, 1280, height=800):
        browser.get(live_server.url + path)
        guide, jobs, trend, answers = box("cause-guide"), box("cause-jobs"), box("cause-trend"), box("verdicts")
        assert trend["y"] == guide["y"] and trend["x"] > guide["x"] + guide["width"], (guide, trend)
        # Each card is as high as its own content since 910cee3, no longer stretched to the guide's height
        # (tests/test_page_polish_browser.py::test_at_1280_px_a_causes_cards_are_as_high_as_their_content).
        assert jobs["y"] > guide["y"] + guide["height"] and jobs["width"] > guide["width"] + trend["width"], jobs
        assert answers["y"] > jobs["y"] + jobs["height"]
