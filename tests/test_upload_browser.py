"""The operator's upload in a real headless Chromium: choose an archive, watch it upload and import, read the run.

Screenshots of the upload page and of the finished runs are saved under screenshots/ for a person to look at.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
import requests
from django.utils import timezone

from fleet.models import IngestRun, Job
from tests.conftest import EXAMPLE_ARCHIVE, REPO, a_worker_imports, write_zip
from tests.test_browser import STALE, browser  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import console_errors
from tests.test_ingest import JOBS, good_members
from tests.test_upload import UPLOAD, leftovers

SHOTS = REPO / "screenshots"
PASSWORD = "correct horse battery staple"
RUN_URL = re.compile(r"/ingest-runs/(\d+)/$")
JOBS_LINE = re.compile(
    r"(?P<done>\d+) of (?P<total>\d+) processed: (?P<created>\d+) created, (?P<updated>\d+) updated, "
    r"(?P<unchanged>\d+) unchanged, (?P<rejected>\d+) rejected"
)

# The upload is over (and the page gone to the run) faster than a poll can look, so the page notes each
# change of the progress box itself, in sessionStorage, which outlives the navigation to the run page.
WATCH_UPLOAD_PROGRESS = """
sessionStorage.setItem("upload-seen", "[]");
var box = document.getElementById("upload-progress");
new MutationObserver(function () {
  var seen = JSON.parse(sessionStorage.getItem("upload-seen"));
  seen.push({
    shown: !box.hidden,
    value: document.getElementById("upload-bar").value,
    percent: document.getElementById("upload-percent").textContent,
    label: document.getElementById("upload-label").textContent,
  });
  sessionStorage.setItem("upload-seen", JSON.stringify(seen));
}).observe(box, {attributes: true, childList: true, characterData: true, subtree: true});
"""


@pytest.fixture
def operator_browser(browser, live_server, operator):  # noqa: F811
    """The browser, logged in through the login form as the operator."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    operator.set_password(PASSWORD)
    operator.save()
    browser.get(f"{live_server.url}/login/")
    browser.find_element(By.ID, "id_username").send_keys(operator.username)
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "button[type=submit].primary").click()
    WebDriverWait(browser, 10, ignored_exceptions=STALE).until(lambda b: "/login/" not in b.current_url)
    SHOTS.mkdir(exist_ok=True)
    return browser


def upload(driver, base: str, archive, screenshot: str | None = None) -> tuple[int, list[dict]]:
    """Choose `archive` on the upload page and submit it as a user does; the run's id once the page shows
    the run, and what the upload progress box showed on the way."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    driver.get(f"{base}{UPLOAD}")
    assert driver.find_element(By.TAG_NAME, "h1").text == "Upload an archive"
    assert not driver.find_element(By.ID, "upload-progress").is_displayed()  # nothing to show before a file
    driver.execute_script(WATCH_UPLOAD_PROGRESS)
    driver.find_element(By.ID, "archive-file").send_keys(str(archive.resolve()))
    if screenshot:
        driver.save_screenshot(str(SHOTS / screenshot))
    driver.find_element(By.ID, "upload-button").click()
    match = WebDriverWait(driver, 30, ignored_exceptions=STALE).until(lambda b: RUN_URL.search(b.current_url))
    return int(match.group(1)), json.loads(driver.execute_script("return sessionStorage.getItem('upload-seen')"))


def finished_run_page(driver, expected_status: str) -> dict[str, int]:
    """Wait until the run page shows the finished run (it polls and reloads while the run goes on);
    the job counts it shows."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    wait = WebDriverWait(driver, 30, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_element(By.ID, "run-status").text == expected_status)
    # Finished: the page stopped polling and its progress bar is gone.
    assert driver.find_element(By.ID, "run-progress").get_attribute("data-status-url") is None
    assert driver.execute_script("return document.getElementById('run-bar') === null")
    match = JOBS_LINE.fullmatch(driver.find_element(By.ID, "run-jobs").text)
    assert match, driver.find_element(By.ID, "run-jobs").text
    return {key: int(value) for key, value in match.groupdict().items()}


def assert_upload_progress_moved(seen: list[dict], archive) -> None:
    assert seen, "the upload progress box never changed"
    assert seen[0]["shown"] and seen[0]["label"] == f"Uploading {archive.name}…"
    values = [entry["value"] for entry in seen]
    assert values == sorted(values) and values[-1] == 100, seen  # it only goes forward, to the end
    assert seen[-1]["percent"] == "100 %" and seen[-1]["label"] == "Uploaded; starting the import…"


@pytest.mark.django_db(transaction=True)
def test_operator_uploads_the_example_archive_and_watches_it_finish(operator_browser, live_server, upload_dirs):
    from selenium.webdriver.common.by import By

    driver = operator_browser
    run_id, seen = upload(driver, live_server.url, EXAMPLE_ARCHIVE, screenshot="upload.png")
    assert_upload_progress_moved(seen, EXAMPLE_ARCHIVE)

    counts = finished_run_page(driver, "Succeeded")
    driver.save_screenshot(str(SHOTS / "ingest-run.png"))
    run = IngestRun.objects.get(pk=run_id)
    assert (run.status, run.source, run.archive_name) == ("succeeded", "upload", "example-archive.zip")
    assert counts["created"] > 0
    assert counts["created"] == run.jobs_created == Job.objects.count()
    assert counts["done"] == counts["total"] == run.jobs_total
    assert counts["rejected"] == counts["updated"] == counts["unchanged"] == 0
    assert driver.find_element(By.ID, "run-samples").text == f"{run.samples:,}"
    assert re.fullmatch(r"[\d,.]+ jobs/s · [\d,]+ GPU samples/s", driver.find_element(By.ID, "run-rate").text)
    assert f"Ingest run #{run_id}" in driver.find_element(By.TAG_NAME, "h1").text
    assert "example-archive.zip" in driver.find_element(By.ID, "run-progress").text
    assert "None." in driver.find_element(By.XPATH, "//section[h2[starts-with(., 'Errors')]]").text
    assert leftovers(upload_dirs) == []  # the kept upload is gone once its run finished
    assert console_errors(driver) == []  # neither script errors nor CSP refusals, on either page


@pytest.mark.django_db(transaction=True)
def test_a_partly_rejected_upload_shows_its_errors_and_their_csv(operator_browser, live_server, upload_dirs, tmp_path):
    from selenium.webdriver.common.by import By

    driver = operator_browser
    broken = write_zip(
        tmp_path / "broken-week.zip", {**good_members(), "jobs.csv": JOBS.replace("j3,cat,nlp,1,", "j3,cat,nlp,one,")}
    )
    run_id, seen = upload(driver, live_server.url, broken)
    assert_upload_progress_moved(seen, broken)

    counts = finished_run_page(driver, "Partly rejected")
    run = IngestRun.objects.get(pk=run_id)
    assert run.status == IngestRun.Status.PARTIAL
    assert (counts["created"], counts["rejected"]) == (2, 1) == (Job.objects.count(), run.jobs_rejected)

    errors = driver.find_element(By.XPATH, "//section[h2[starts-with(., 'Errors')]]")
    assert errors.find_element(By.CSS_SELECTOR, "h2 .muted").text == str(len(run.errors))
    header = [
        cell.get_attribute("textContent") for cell in errors.find_elements(By.CSS_SELECTOR, "table.data thead th")
    ]
    assert header == ["File", "Row", "Field", "Job", "Problem", "Consequence"]
    rows = [
        [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        for row in errors.find_elements(By.CSS_SELECTOR, "table.data tbody tr")
    ]
    gpu_count = next(row for row in rows if row[2] == "gpu_count")
    assert gpu_count[:4] == ["jobs.csv", "3", "gpu_count", "j3"] and gpu_count[4]
    driver.set_window_size(1400, max(900, driver.execute_script("return document.body.scrollHeight")))
    driver.save_screenshot(str(SHOTS / "ingest-run-errors.png"))

    # The download link works with the browser's session, and only with it.
    link = errors.find_element(By.LINK_TEXT, "download as CSV")
    assert link.value_of_css_property("color") == "rgba(47, 95, 208, 1)"  # looks like a link, not like the count
    href = link.get_attribute("href")
    assert href == f"{live_server.url}/ingest-runs/{run_id}/errors.csv"
    cookies = {cookie["name"]: cookie["value"] for cookie in driver.get_cookies()}
    response = requests.get(href, cookies=cookies, timeout=10, allow_redirects=False)
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/csv")
    assert f"ingest-run-{run_id}-errors.csv" in response.headers["Content-Disposition"]
    table = list(csv.reader(io.StringIO(response.text)))
    assert table[0] == ["file", "row", "field", "job_id", "message", "consequence"]
    assert [row[:4] for row in table[1:]] == [row[:4] for row in rows]
    assert requests.get(href, timeout=10, allow_redirects=False).status_code == 302  # to the login page
    assert console_errors(driver) == []


@pytest.mark.django_db(transaction=True)
def test_a_running_runs_page_follows_its_progress_until_it_finishes(operator_browser, live_server, operator):
    """What the operator sees of a long import: the page polls the run's status and, once it has
    finished, shows the finished run."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    driver = operator_browser
    run = IngestRun.objects.create(
        archive_name="week-47.zip",
        source=IngestRun.Source.UPLOAD,
        created_by=operator,
        status=IngestRun.Status.RUNNING,
        started_at=timezone.now(),
        phase="reading archive",
    )
    # A worker imports it (on PostgreSQL one no lock holds reads stopped: Elapsed "stopped", no rate).
    with a_worker_imports(run.pk):
        driver.get(f"{live_server.url}/ingest-runs/{run.pk}/")
        assert driver.find_element(By.ID, "run-status").text == "Running"
        # The archive is being read: how many jobs it holds is not known yet ("0 of 0 jobs", an empty bar, before).
        assert driver.find_element(By.ID, "run-count").text == "jobs not counted yet"
        assert driver.execute_script("return document.getElementById('run-bar').hasAttribute('value')") is False
        rendered_duration = driver.find_element(By.ID, "run-duration").text
        IngestRun.objects.filter(pk=run.pk).update(jobs_total=40, jobs_done=15, jobs_created=15, phase="storing jobs")
        wait = WebDriverWait(driver, 10, ignored_exceptions=STALE)
        wait.until(lambda b: b.find_element(By.ID, "run-count").text == "15 of 40 jobs")
        bar = driver.find_element(By.ID, "run-bar")
        assert (bar.get_attribute("value"), bar.get_attribute("max")) == ("15", "40")
        assert driver.find_element(By.ID, "run-phase").text == "storing jobs"
        assert driver.find_element(By.ID, "run-jobs").text.startswith("15 of 40 processed: 15 created")
        wait.until(lambda b: b.find_element(By.ID, "run-duration").text != rendered_duration)  # the clock runs too
        assert re.fullmatch(r"\d+\.\d s", driver.find_element(By.ID, "run-duration").text)
        driver.save_screenshot(str(SHOTS / "ingest-run-running.png"))

        IngestRun.objects.filter(pk=run.pk).update(
            status=IngestRun.Status.SUCCEEDED, jobs_done=40, jobs_created=40, phase="", finished_at=timezone.now()
        )
    counts = finished_run_page(driver, "Succeeded")  # the page reloaded itself
    assert (counts["done"], counts["total"], counts["created"]) == (40, 40, 40)
    assert console_errors(driver) == []  # the polling is allowed by the CSP (connect-src 'self')


def test_a_per_job_parquet_of_lists_rejects_that_job_and_names_the_column(
    operator_browser, live_server, upload_dirs, tmp_path
):
    """What the fuzzing found, as the operator meets it: one job's Parquet holds lists where GPU
    indexes belong; that job is rejected with the column named, the others land."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from selenium.webdriver.common.by import By

    buffer = io.BytesIO()
    pq.write_table(pa.table({"timestamp": [1793613600.0], "gpu": [[0, 1]], "gpu_util": [50.0]}), buffer)
    archive = write_zip(tmp_path / "nested.zip", {**good_members(), "metrics/j2.parquet": buffer.getvalue()})
    run_id, _ = upload(operator_browser, live_server.url, archive)
    counts = finished_run_page(operator_browser, "Partly rejected")
    assert (counts["created"], counts["rejected"]) == (2, 1)
    errors = operator_browser.find_element(By.XPATH, "//section[h2[starts-with(., 'Errors')]]")
    rows = [
        [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
        for row in errors.find_elements(By.CSS_SELECTOR, "table.data tbody tr")
    ]
    assert ["metrics/j2.parquet", "", "gpu", "j2", "column 'gpu' holds list<element: int64> values; expected one "
            "text, number or time a cell", "job j2 not stored"] in rows  # fmt: skip
    assert set(Job.objects.values_list("external_id", flat=True)) == {"j1", "j3"}
    operator_browser.set_window_size(
        1400, max(900, operator_browser.execute_script("return document.body.scrollHeight"))
    )
    operator_browser.save_screenshot(str(SHOTS / "ingest-run-parquet-error.png"))
    assert console_errors(operator_browser) == []


@pytest.mark.django_db(transaction=True)
def test_an_upload_the_server_refuses_with_a_page_says_why_in_words_not_its_html(operator_browser, live_server):
    """A session that ended while the page was open (the upload's request followed the redirect to the login
    page) and a refused CSRF check (a cookie cleared) answer with an HTML page, not the JSON the script
    reads: the error box showed that page's source, 1,500 characters of tags. Now it says what happened
    and what to do; nothing was imported."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    driver = operator_browser
    expected = {
        "csrftoken": "The server refused the upload (HTTP 403 Forbidden), so nothing was imported: reload this page"
        " and upload the archive again.",
        "sessionid": "You are no longer logged in (your session ended), so nothing was imported: log in again,"
        " then upload the archive again.",
    }
    for cookie, message in expected.items():
        driver.get(f"{live_server.url}{UPLOAD}")
        driver.find_element(By.ID, "archive-file").send_keys(str(EXAMPLE_ARCHIVE.resolve()))
        driver.delete_cookie(cookie)
        driver.find_element(By.ID, "upload-button").click()
        WebDriverWait(driver, 10, ignored_exceptions=STALE).until(
            lambda b: b.find_element(By.ID, "upload-error").is_displayed()
        )
        error = driver.find_element(By.ID, "upload-error")
        assert error.text == message
        assert driver.switch_to.active_element == error  # read out, and where Tab goes on from
        assert not driver.find_element(By.ID, "upload-button").get_property("disabled")
        if cookie == "sessionid":
            driver.save_screenshot(str(SHOTS / "upload-session-ended.png"))
            break
    assert IngestRun.objects.count() == 0
