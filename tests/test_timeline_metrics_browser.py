"""The job page's timeline in a real headless Chromium: a host-GPU transfer finding's PCIe panel is drawn,
and "More metrics" draws the series' others, on a phone as on a desktop."""

from __future__ import annotations

import os

import pytest

from tests.test_browser import STALE, browser  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import log_in

# Plotly's panels' titles, top to bottom: g.g-ytitle, g.g-y2title ...
AXIS_TITLES = """return [...document.querySelectorAll('#timeline g[class^="g-y"]')]
  .filter(g => /^g-y\\d*title$/.test(g.getAttribute('class'))).map(g => g.textContent);"""


@pytest.mark.django_db(transaction=True)
def test_a_host_gpu_transfer_finding_draws_pcie_and_more_metrics_draws_the_network(
    browser,  # noqa: F811
    live_server,
    operator,
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from tests.factories import TeamFactory
    from tests.test_browser import color_scheme, window_width
    from tests.test_timeline_metrics import _host_gpu_transfer_job

    job = _host_gpu_transfer_job(TeamFactory())
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    shots = os.environ.get("SCREENSHOTS")
    for width, height in ((1280, 900), (390, 844), (320, 700)):
        with window_width(browser, width, mobile=width < 500, height=height):
            browser.get(f"{live_server.url}/jobs/{job.pk}/")
            wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
            titles = browser.execute_script(AXIS_TITLES)
            assert titles == ["GPU util (%)", "GPU memory (%)", "CPU (%)", "PCIe rx (GB/s)", "PCIe tx (MB/s)"], width
            more = browser.find_element(By.ID, "timeline-metrics")
            assert more.is_displayed()
            more.find_element(By.TAG_NAME, "summary").click()
            boxes = {b.get_attribute("value"): b for b in more.find_elements(By.CSS_SELECTOR, "input[type=checkbox]")}
            assert boxes["pcie_rx_bytes_per_s"].is_selected() and not boxes["net_rx_bytes_per_s"].is_selected()
            assert "Inefficient host-GPU data transfer" in more.text
            boxes["net_rx_bytes_per_s"].click()
            wait.until(lambda b: "Network rx (MB/s)" in b.execute_script(AXIS_TITLES))
            # The chart stays inside the page's width (nothing to scroll sideways on a phone).
            overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, (width, overflow)
            if shots:
                for scheme in ("light", "dark"):
                    color_scheme(browser, scheme)
                    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
                    browser.execute_script("document.getElementById('timeline-metrics').scrollIntoView()")
                    browser.save_screenshot(os.path.join(shots, f"timeline-metrics-{width}-{scheme}.png"))
