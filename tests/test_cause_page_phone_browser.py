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
