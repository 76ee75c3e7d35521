"""Issue #3 in a real headless Chromium, without a task queue (the embedded mode of `make demo`): an operator
uploads an archive and watches its import go on and finish on the run's page, and a long import says about
how long it has left.

The live server runs in this process, so the test can hold the import (in its thread) part-way, as a big
archive would be part-way when the page is looked at. Screenshots under screenshots/ for a person to look at.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from fleet import ingest
from fleet.models import IngestRun
from tests.conftest import EXAMPLE_ARCHIVE, wait_for_imports
from tests.test_browser import STALE, browser, color_scheme, window_width  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import console_errors
from tests.test_upload_background import storing_held
from tests.test_upload_browser import SHOTS, finished_run_page, operator_browser, upload  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_operator_watches_the_uploaded_archive_import_and_finish(operator_browser, live_server, monkeypatch):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    driver = operator_browser
    with storing_held(monkeypatch) as (reached, release, _):
        run_id, _seen = upload(driver, live_server.url, EXAMPLE_ARCHIVE)
        # The upload answered at once: the run's page shows the import going on, not a finished run.
        wait = WebDriverWait(driver, 20, ignored_exceptions=STALE)
        wait.until(lambda b: b.find_element(By.ID, "run-phase").text == "storing jobs")
        assert driver.find_element(By.ID, "run-status").text == "Running"
        assert driver.find_element(By.ID, "run-count").text == "0 of 5 jobs"
        assert driver.find_element(By.ID, "run-left").text == "–"  # five jobs: nothing to estimate from
        assert "Not imported" not in driver.find_element(By.TAG_NAME, "main").text
        assert reached.is_set()
        release.set()
        counts = finished_run_page(driver, "Succeeded")  # the page reloaded itself once the run was over
    assert wait_for_imports()
    assert (counts["done"], counts["total"], counts["created"]) == (5, 5, 5)
    assert IngestRun.objects.get(pk=run_id).status == IngestRun.Status.SUCCEEDED
    assert driver.find_elements(By.ID, "run-left") == []  # over: its duration, no time left
    assert console_errors(driver) == []


def test_a_long_imports_page_says_about_how_long_is_left_as_it_goes(
    operator_browser,  # noqa: F811
    live_server,
    operator,
    monkeypatch,
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    # The run goes on: a worker holds it (on PostgreSQL one whose lock no worker holds reads stopped, no time left).
    monkeypatch.setattr(ingest, "worker_stopped", lambda run: False)
    driver = operator_browser
    now = timezone.now()
    run = IngestRun.objects.create(
        archive_name="week-47.zip",
        source=IngestRun.Source.UPLOAD,
        created_by=operator,
        status=IngestRun.Status.RUNNING,
        started_at=now - timedelta(seconds=20),
        phase="reading logs, scripts and traces: 1,892 of 9,782 files",
    )
    driver.get(f"{live_server.url}/ingest-runs/{run.pk}/")
    assert driver.find_element(By.ID, "run-left").text == "–"  # still reading the archive: no estimate
    # Storing for 5 min, 10,000 of 40,000 jobs stored: 30,000 to go at 33 jobs/s, 15 min.
    IngestRun.objects.filter(pk=run.pk).update(
        phase="storing jobs",
        storing_started_at=now - timedelta(minutes=5),
        started_at=now - timedelta(minutes=5, seconds=40),
        jobs_total=40_000,
        jobs_done=10_000,
        jobs_created=10_000,
    )
    wait = WebDriverWait(driver, 10, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_element(By.ID, "run-left").text == "about 15 min")
    assert driver.find_element(By.ID, "run-count").text == "10,000 of 40,000 jobs"
    assert re.fullmatch(r"5 min 4\d s", driver.find_element(By.ID, "run-duration").text)
    assert driver.find_element(By.XPATH, "//dd[@id='run-duration']/preceding-sibling::dt[1]").text == "Elapsed"
    for width, height in ((1280, 800), (390, 844)):
        for scheme in ("light", "dark"):
            with window_width(driver, width, mobile=width == 390, height=height):
                color_scheme(driver, scheme)
                driver.get(f"{live_server.url}/ingest-runs/{run.pk}/")
                wait.until(lambda b: b.find_element(By.ID, "run-left").text == "about 15 min")
                driver.save_screenshot(str(SHOTS / f"ingest-run-time-left-{width}-{scheme}.png"))
    color_scheme(driver, None)
    assert console_errors(driver) == []
