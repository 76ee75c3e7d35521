"""Pages in a real headless Chromium: what a person sees after logging in.

Screenshots land in screenshots/ (ignored by git) for a human to look at.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException

from tests.conftest import REPO
from tests.factories import JobFactory

# Pages re-render while a wait polls them; a stale or missing element just means "look again".
STALE = (StaleElementReferenceException, NoSuchElementException)


def body_text(driver) -> str:
    """The page's text for a wait to test; "" while the page is being replaced. Chrome then says
    the body "does not belong to the document", as a plain WebDriverException that `STALE`
    cannot name, so a wait on the text of a page that is loading must read it through this."""
    from selenium.webdriver.common.by import By

    try:
        return driver.find_element(By.TAG_NAME, "body").text
    except STALE:
        return ""
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return ""
        raise


@contextmanager
def window_width(driver, width: int, *, mobile: bool = False, height: int = 900):
    """The page laid out `width` CSS pixels wide (a phone; `mobile` also honours the page's viewport
    tag, as a phone's browser or mail app does), `height` high, until the block ends."""
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        yield driver
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def color_scheme(driver, name: str | None) -> None:
    """Pages shown as a browser set to the `name` colour scheme ("light" or "dark") shows them, the open
    one too (it follows the setting as it changes); None gives the browser's own setting back."""
    features = [{"name": "prefers-color-scheme", "value": name}] if name else []
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": features})


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = REPO / "screenshots"


@pytest.fixture
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        if os.environ.get("CI"):
            pytest.fail("chromium and chromedriver must be installed in CI (.ci/run installs them)")
        pytest.skip("Debian's chromium and chromium-driver are not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,900",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # console errors, for the page tests
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


@pytest.mark.django_db(transaction=True)
def test_member_logs_in_and_sees_their_teams_jobs(browser, live_server, member_a, team_a, team_b):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    JobFactory(team=team_a, name="resnet50-imagenet", mean_gpu_util=23.0)
    JobFactory(team=team_b, name="other-team-secret")
    browser.get(f"{live_server.url}/jobs/")
    assert "/login/" in browser.current_url
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "login.png"))
    browser.find_element(By.ID, "id_username").send_keys("alice-member")
    browser.find_element(By.ID, "id_password").send_keys("correct horse battery staple")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit].primary").click()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "/login/" not in b.current_url)
    body = (
        WebDriverWait(browser, 10, ignored_exceptions=STALE)
        .until(lambda b: b.find_element(By.CSS_SELECTOR, "table.data"))
        .text
    )
    body = browser.find_element(By.TAG_NAME, "body").text
    browser.save_screenshot(str(SHOTS / "job-list.png"))
    assert "resnet50-imagenet" in body
    assert "other-team-secret" not in body
    assert "23 %" in body
    # The stylesheet loaded: the top bar is dark, not the browser default.
    bar = browser.find_element(By.CSS_SELECTOR, ".topbar").value_of_css_property("background-color")
    assert bar == "rgba(29, 35, 48, 1)"


@pytest.mark.django_db(transaction=True)
def test_logging_in_from_a_link_to_a_jobs_findings_lands_on_its_findings(browser, live_server, member_a, team_a):
    """A digest links to /jobs/<id>/#findings; the browser never sends the fragment, so the login page's
    `next` must carry it on, or the job page opens at its top after logging in."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    job = JobFactory(team=team_a, name="resnet50-imagenet", mean_gpu_util=23.0)
    browser.get(f"{live_server.url}/jobs/{job.pk}/#findings")
    assert "/login/" in browser.current_url
    browser.find_element(By.ID, "id_username").send_keys("alice-member")
    browser.find_element(By.ID, "id_password").send_keys("correct horse battery staple")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit].primary").click()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "/login/" not in b.current_url)
    assert browser.current_url == f"{live_server.url}/jobs/{job.pk}/#findings"
    # The fragment stays the browser's: a failed login keeps it once, not twice, in `next`.
    browser.delete_all_cookies()
    browser.get("about:blank")  # the same address again would only scroll, not load
    browser.get(f"{live_server.url}/jobs/{job.pk}/#findings")
    browser.find_element(By.ID, "id_username").send_keys("alice-member")
    browser.find_element(By.ID, "id_password").send_keys("wrong")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit].primary").click()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "match" in body_text(b))
    assert browser.find_element(By.NAME, "next").get_attribute("value") == f"/jobs/{job.pk}/#findings"
