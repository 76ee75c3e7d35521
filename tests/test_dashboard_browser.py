"""The operator's Monday in a real headless Chromium: overview, a filtered jobs list, one job's evidence.

Screenshots of each page are saved under screenshots/ for a person to look at.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from fleet import ingest
from fleet.models import Job
from tests.conftest import REPO
from tests.test_browser import STALE, browser, color_scheme, window_width  # noqa: F401  (the browser fixture)
from triage.models import Finding

SHOTS = REPO / "screenshots"


def log_in(driver, base: str, user, next_path: str) -> None:
    """Log `user` in through the login form and land on `next_path`."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    user.set_password("correct horse battery staple")
    user.save()
    driver.get(f"{base}/login/?next={next_path}")
    driver.find_element(By.ID, "id_username").send_keys(user.username)
    driver.find_element(By.ID, "id_password").send_keys("correct horse battery staple")
    button = driver.find_element(By.CSS_SELECTOR, "button[type=submit].primary")
    button.click()
    # Wait for the answer's page to replace the form: a page opened at once after the click could stop the
    # login's POST on a loaded machine, and the next page then opened on the login form.
    WebDriverWait(driver, 30).until(lambda _: _replaced(button))


def _replaced(element) -> bool:
    """Whether a new page has replaced the one `element` was on. Chromium says so in one of two ways: the
    element is stale, or (caught as the page goes) its node "does not belong to the document"."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False


def console_errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.mark.django_db(transaction=True)
def test_operator_filters_jobs_opens_one_and_sees_its_timeline_and_findings(browser, live_server, operator,  # noqa: F811
                                                                             demo_archive):  # fmt: skip
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait

    ingest.execute_run(ingest.create_run(demo_archive).pk)  # triage runs in-process on the signal
    finding = Finding.objects.filter(result__is_current=True, evidence__windows__0__isnull=False).first()
    assert finding is not None, "the demo fleet should have a time-located finding"
    job = finding.job
    base = live_server.url
    SHOTS.mkdir(exist_ok=True)

    log_in(browser, base, operator, "/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "[data-figure] .main-svg"))
    browser.save_screenshot(str(SHOTS / "overview.png"))
    assert "Fleet overview" in browser.find_element(By.TAG_NAME, "h1").text
    assert console_errors(browser) == []

    # Filter the jobs list by the finding's cause, with the keyboard-usable form.
    browser.get(f"{base}/jobs/")
    Select(browser.find_element(By.NAME, "category")).select_by_value(finding.category)
    browser.find_element(By.CSS_SELECTOR, ".jobs-filter button[type=submit]").click()
    wait.until(lambda b: f"category={finding.category}" in b.current_url)
    listed = browser.find_elements(By.CSS_SELECTOR, "table.data tbody tr")
    expected = Job.objects.filter(findings__category=finding.category, findings__result__is_current=True).distinct()
    assert len(listed) == min(expected.count(), 50)
    browser.save_screenshot(str(SHOTS / "jobs-filtered.png"))

    # Open the job: findings with evidence, and the timeline with the finding's windows shaded.
    browser.find_element(By.LINK_TEXT, f"{job.cluster.name}/{job.external_id}").click()
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
    shapes = browser.execute_script("return document.getElementById('timeline').layout.shapes.length")
    traces = browser.execute_script("return document.getElementById('timeline').data.length")
    assert shapes >= len(finding.evidence["windows"][:100]) > 0
    assert traces >= job.gpu_count
    assert finding.get_category_display() in browser.find_element(By.ID, "findings").text
    browser.set_window_size(1400, browser.execute_script("return document.body.scrollHeight"))
    browser.save_screenshot(str(SHOTS / "job-detail.png"))
    assert console_errors(browser) == []

    # A click on a log event's marker in the timeline opens its line (Plotly's click event, as a
    # click on the marker sends it: the marker's own point, with the URL the server gave it).
    in_run = job.log_events.filter(timestamp__range=(job.start_time, job.end_time))
    event = in_run.order_by("artifact_id", "line_no").first()  # the first marker
    browser.execute_script(
        "const el = document.getElementById('timeline');"
        "const trace = el.data.findIndex(t => t.name === 'Log events');"
        "const url = el.data[trace].customdata[0];"
        "el.emit('plotly_click', {points: [{curveNumber: trace, pointNumber: 0, customdata: url}]});"
    )
    marked = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "pre.file-lines .hit"))
    assert marked.get_attribute("id") == f"L{event.line_no}"
    browser.back()
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")

    # Where the page holds unsaved work (the labeling page says data-open-in="tab"), the line opens
    # in a new tab and the page stays.
    page_url, tabs = browser.current_url, len(browser.window_handles)
    browser.execute_script(
        "const el = document.getElementById('timeline'); el.dataset.openIn = 'tab';"
        "const trace = el.data.findIndex(t => t.name === 'Log events');"
        "const url = el.data[trace].customdata[0];"
        "el.emit('plotly_click', {points: [{curveNumber: trace, pointNumber: 0, customdata: url}]});"
    )
    wait.until(lambda b: len(b.window_handles) == tabs + 1)
    assert browser.current_url == page_url
    browser.switch_to.window(browser.window_handles[-1])
    marked = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "pre.file-lines .hit"))
    assert marked.get_attribute("id") == f"L{event.line_no}"
    browser.close()
    browser.switch_to.window(browser.window_handles[0])

    # A log event's "where" opens the log at its line, marked and scrolled into view.
    event = job.log_events.order_by("-line_no").first()
    browser.set_window_size(1400, 900)
    browser.find_element(By.LINK_TEXT, f"{event.artifact.path}:{event.line_no}").click()
    marked = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "pre.file-lines .hit"))
    assert marked.get_attribute("id") == f"L{event.line_no}"
    assert event.text[:40] in marked.text
    top, bottom = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom]", marked
    )
    assert top >= 0 and bottom <= browser.execute_script("return window.innerHeight")
    browser.save_screenshot(str(SHOTS / "job-file.png"))
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_the_rules_page_follows_a_running_retriage_until_it_is_done(browser, live_server, operator):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from tests.test_browser import body_text
    from triage.models import RetriageRun, RuleSet

    # A re-triage a worker is busy with (in the embedded mode it would be over before the page loads).
    run = RetriageRun.objects.create(
        rule_set=RuleSet.current(), status=RetriageRun.Status.RUNNING, jobs_total=4000, jobs_done=1000
    )
    log_in(browser, live_server.url, operator, "/triage/rules/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    wait.until(lambda b: "1,000 of 4,000 jobs · Running" in body_text(b))

    RetriageRun.objects.filter(pk=run.pk).update(jobs_done=2500)
    # Without reloading the page, and with the separator the page's other counts have.
    wait.until(lambda b: "2,500 of 4,000 jobs · Running" in body_text(b))
    RetriageRun.objects.filter(pk=run.pk).update(jobs_done=4000, status=RetriageRun.Status.DONE)
    wait.until(lambda b: "4,000 of 4,000 jobs · Done" in body_text(b))
    assert browser.find_element(By.ID, "retriage-bar").get_attribute("value") == "100"
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "rules-retriage.png"))
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_job_of_many_gpus_shows_their_mean_and_range(browser, live_server, operator):  # noqa: F811
    from datetime import timedelta

    from django.core.files.base import ContentFile
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet.series import to_parquet_bytes
    from tests.factories import JobFactory
    from tests.test_timeline import START, series

    job = JobFactory(start_time=START, end_time=START + timedelta(hours=2), gpu_count=128)
    import numpy as np

    frame = series(128, 7200, 30, util=lambda n: 60 + 30 * np.sin(np.arange(n) / 20))
    frame.loc[(frame["gpu"] == 5) & (frame["timestamp"] >= START + timedelta(hours=1)), "gpu_util"] = 0.0
    job.series_file.save("s.parquet", ContentFile(to_parquet_bytes(frame)))
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
    names = browser.execute_script("return document.getElementById('timeline').data.map(t => t.name)")
    assert "mean of 128 GPUs" in names and "lowest to highest of 128 GPUs" in names
    assert len(names) <= 8  # three for each of the two panels, not 256 lines
    assert "mean of 128 GPUs" in browser.find_element(By.ID, "timeline").text  # the legend says what is drawn
    SHOTS.mkdir(exist_ok=True)
    browser.set_window_size(1400, browser.execute_script("return document.body.scrollHeight"))
    browser.save_screenshot(str(SHOTS / "job-many-gpus.png"))
    assert console_errors(browser) == []


TOOLBAR_AND_LEGEND = """
const box = selector => document.querySelector('#timeline ' + selector).getBoundingClientRect();
const [bar, legend] = [box('.modebar'), box('.legend')];
const apart = bar.right <= legend.left || legend.right <= bar.left
  || bar.bottom <= legend.top || legend.bottom <= bar.top;
return [bar.width > 0, !apart];
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("gpus", [4, 8])
def test_the_timeline_toolbar_does_not_cover_its_legend_in_a_window_800_px_wide(browser, live_server, operator,  # noqa: F811
                                                                                 gpus):  # fmt: skip
    """Plotly's toolbar, shown while the pointer is on the chart, sat on the last entries of the
    legend across the top (four GPUs, a window 800 px wide); with many GPUs the legend is a column."""
    from datetime import timedelta

    from django.core.files.base import ContentFile

    from fleet.series import to_parquet_bytes
    from tests.factories import JobFactory
    from tests.test_timeline import START, series

    job = JobFactory(start_time=START, end_time=START + timedelta(hours=2), gpu_count=gpus)
    frame = series(gpus, 7200, 30)
    frame["host"] = "alpha-n055"  # a real host's name: legend entries as long as the demo fleet's
    job.series_file.save("s.parquet", ContentFile(to_parquet_bytes(frame)))
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    with window_width(browser, 800):
        open_timeline_pointed_at(browser, f"{live_server.url}/jobs/{job.pk}/")
        shown, overlap = browser.execute_script(TOOLBAR_AND_LEGEND)
        browser.save_screenshot(str(SHOTS / f"job-timeline-800-{gpus}-gpus.png"))
    assert shown, "the toolbar should show while the pointer is on the chart"
    assert not overlap, "the toolbar covers the legend"


@pytest.mark.django_db(transaction=True)
def test_a_job_without_samples_says_so_where_its_timeline_would_be(browser, live_server, operator):  # noqa: F811
    """The server said "No metric samples were supplied for this job." and the page cleared the
    message at once: the Timeline card showed only the help on zooming a chart that was not there."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from tests.factories import JobFactory

    job = JobFactory()
    assert not job.series_file
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
    status = browser.find_element(By.ID, "timeline-status").text
    assert status == "No metric samples were supplied for this job."
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_charts_keep_their_height_when_the_window_is_resized(browser, live_server, operator, demo_archive):  # noqa: F811
    """Plotly's responsive mode sizes a plot to its box on a resize; a box without the figure's
    height shrank to the CSS minimum and the plot spilled over the numbers under it."""
    from selenium.webdriver.support.wait import WebDriverWait

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    log_in(browser, live_server.url, operator, "/")
    heights = (
        "return [...document.querySelectorAll('[data-figure]')].map(chart => "
        "[chart.dataset.figure, chart.getBoundingClientRect().height, "
        "Number(chart.querySelector('.main-svg').getAttribute('height'))])"
    )
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    drawn_all = "return [...document.querySelectorAll('[data-figure]')].every(c => c.querySelector('.main-svg'))"
    wait.until(lambda b: b.execute_script(drawn_all))
    widths = (
        "return [...document.querySelectorAll('[data-figure]')].map(chart => "
        "[chart.getBoundingClientRect().width, Number(chart.querySelector('.main-svg').getAttribute('width'))])"
    )
    before = [plot for _, plot in browser.execute_script(widths)]
    browser.set_window_size(1100, 1600)
    wait.until(lambda b: b.execute_script("return window.innerWidth") <= 1100)
    browser.execute_script("window.dispatchEvent(new Event('resize'))")

    # Plotly resizes on a debounced handler: every plot drawn again at its box's new width (the grid's columns
    # change at this width) is the resize done, and any box it would shrink shrunk.
    def resized(driver) -> bool:
        now = driver.execute_script(widths)
        return len(now) == len(before) and all(
            plot != was and abs(box - plot) < 1 for (box, plot), was in zip(now, before, strict=True)
        )

    wait.until(resized)
    drawn = browser.execute_script(heights)
    assert len(drawn) >= 3  # the weekly trend, teams and the histogram; causes when the week has findings
    for name, box, plot in drawn:
        assert box == plot, f"{name}: its box is {box}px high, its plot {plot}px"


# For each chart with a legend: its name, the legend's bottom and the plot area's top (page pixels),
# the plot area's share of the chart's width, and how many of its y-axis names overlap the next one.
LEGEND_AND_PLOT = """
return [...document.querySelectorAll('[data-figure]')].filter(c => c.querySelector('.legend')).map(chart => {
  const plot = chart.querySelector('.cartesianlayer .bg, .bglayer .bg').getBoundingClientRect();
  const names = [...chart.querySelectorAll('.ytick text')].map(t => t.getBoundingClientRect())
    .sort((a, b) => a.top - b.top);
  const overlapping = names.slice(1).filter((box, i) => box.top < names[i].bottom - 1).length;
  return [chart.dataset.figure, chart.querySelector('.legend').getBoundingClientRect().bottom, plot.top,
          plot.width / chart.getBoundingClientRect().width, overlapping];
});
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_wide_window_charts_keep_legends_names_and_bars_apart(browser, live_server, operator,  # noqa: F811
                                                                         demo_archive):  # fmt: skip
    """360 px wide: the weekly charts' two legend entries wrap to two rows, and pinned above the
    plot at a fixed height the second row covered the bars; the causes chart kept a 230 px margin
    for its names, which left its bars a sixth of the chart, and wrapped names must not run together."""
    from selenium.webdriver.support.wait import WebDriverWait

    ingest.execute_run(ingest.create_run(demo_archive).pk)  # triage runs in-process on the signal
    log_in(browser, live_server.url, operator, "/")
    with window_width(browser, 360):
        browser.get(f"{live_server.url}/overview/?period=90d")
        wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
        wait.until(lambda b: len(b.execute_script(LEGEND_AND_PLOT)) >= 2)
        charts = {name: rest for name, *rest in browser.execute_script(LEGEND_AND_PLOT)}
    assert "categories-figure" in charts, f"the overview should draw the causes chart: {sorted(charts)}"
    for name, (legend_bottom, plot_top, plot_share, overlapping) in charts.items():
        reach = legend_bottom - plot_top
        assert reach <= 1, f"{name}: its legend reaches {reach:.0f}px into the plot"
        assert overlapping == 0, f"{name}: {overlapping} of its names overlap the one above"
        assert plot_share >= 0.35, f"{name}: its bars have {plot_share:.0%} of its width"


@pytest.mark.django_db(transaction=True)
def test_the_timeline_zooms_to_a_findings_window_and_a_typed_window_from_the_keyboard(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """Dragging across the chart needs a mouse (WCAG 2.1.1): each finding's time window has a button
    that shows it on the timeline, and a window can be typed above the chart."""
    from datetime import datetime, timedelta

    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    finding = Finding.objects.filter(result__is_current=True, evidence__windows__0__isnull=False).first()
    assert finding is not None, "the demo fleet should have a time-located finding"
    window = finding.evidence["windows"][0]
    log_in(browser, live_server.url, operator, f"/jobs/{finding.job_id}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")

    def shown() -> tuple[datetime, datetime]:
        first, last = browser.execute_script("return document.getElementById('timeline').layout.xaxis.range")
        return datetime.fromisoformat(first), datetime.fromisoformat(last)

    # The finding's first window, from the keyboard: focus its button and press Enter.
    button = browser.find_element(By.CSS_SELECTOR, f"#finding-{finding.category} [data-zoom-start]")
    browser.execute_script("arguments[0].closest('details').open = true; arguments[0].focus();", button)
    button.send_keys(Keys.ENTER)
    wait.until(lambda b: "Showing" in b.find_element(By.ID, "timeline-status").text)
    start, end = datetime.fromisoformat(window["start"]), datetime.fromisoformat(window["end"])
    margin = max((end - start) / 10, timedelta(seconds=30))
    assert shown() == (start - margin, end + margin)
    # The form above the chart follows the zoom, and takes a window typed in (Enter submits it).
    field = browser.find_element(By.CSS_SELECTOR, "#timeline-window [name=start]")
    assert field.get_attribute("value") == (start - margin).strftime("%Y-%m-%d %H:%M:%S")  # the reader's zone: UTC
    typed_start = finding.job.start_time.replace(microsecond=0) + timedelta(minutes=5)
    browser.execute_script(
        "const form = document.getElementById('timeline-window');"
        "form.start.value = arguments[0]; form.end.value = arguments[1];",
        typed_start.strftime("%Y-%m-%d %H:%M:%S"),
        (typed_start + timedelta(minutes=10)).strftime("%Y-%m-%d %H:%M:%S"),
    )
    browser.find_element(By.CSS_SELECTOR, "#timeline-window [name=end]").send_keys(Keys.ENTER)
    wait.until(lambda b: shown() == (typed_start, typed_start + timedelta(minutes=10)))
    # "Whole job" goes back to the job's run.
    browser.find_element(By.ID, "timeline-whole").send_keys(Keys.ENTER)
    wait.until(lambda b: b.find_element(By.ID, "timeline-status").text == "")
    assert shown() == (finding.job.start_time, finding.job.end_time)
    assert console_errors(browser) == []


STICKY_COLUMN = r"""
const box = document.querySelector('.table-scroll');
const cell = row => box.querySelector(`tbody tr:first-child > :nth-child(${row})`);
const before = [cell(1).getBoundingClientRect().left, cell(2).getBoundingClientRect().left];
box.scrollLeft = 300;
const after = [cell(1).getBoundingClientRect().left, cell(2).getBoundingClientRect().left];
const front = document.elementFromPoint(after[0] + 5, cell(1).getBoundingClientRect().top + 5);
return [box.scrollWidth > box.clientWidth, before, after, cell(1).contains(front)];
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [800])
def test_in_a_narrow_window_the_jobs_table_keeps_its_job_column_while_it_scrolls(browser, live_server, operator,  # noqa: F811
                                                                                 width):  # fmt: skip
    """800 px wide the jobs table scrolls sideways in its box; scrolled to its costs, the rows no longer
    said which job they were. The first column now stays put, above the columns passing under it. On a
    phone (360 px) each job is a card instead (tests/test_jobs_list_phone_browser.py)."""
    from tests.factories import JobFactory

    for index in range(3):
        JobFactory(name=f"a-job-with-a-long-name-{index}", external_id=f"job-{index}")
    log_in(browser, live_server.url, operator, "/jobs/?period=90d")
    with window_width(browser, width):
        browser.get(f"{live_server.url}/jobs/")
        scrolls, before, after, first_on_top = browser.execute_script(STICKY_COLUMN)
        browser.save_screenshot(str(SHOTS / "job-list-phone-scrolled.png"))
    assert scrolls, f"at {width} px the jobs table should be wider than its box"
    assert after[1] < before[1] - 100, "the other columns move as the box scrolls"
    assert abs(after[0] - before[0]) <= 1, f"the job column moved from {before[0]} to {after[0]} px"
    assert first_on_top, "the columns passing under the job column are drawn over it"


BEFORE_AFTER = """
return [...document.querySelectorAll(arguments[0])].map(pair => ({
  columns: getComputedStyle(pair).gridTemplateColumns.split(' ').filter(track => track !== '0px').length,
  cut: [...pair.querySelectorAll('pre')].some(code => code.scrollWidth > code.clientWidth),
}));
"""


@pytest.mark.django_db(transaction=True)
def test_a_fixs_code_before_and_after_sits_side_by_side_only_where_both_fit(browser, live_server, operator):  # noqa: F811
    """A cause's page put its fix's code before and after side by side in a half-width card, so a
    line like `loader = DataLoader(ds, batch_size=bs, num_workers=w, pin_memory=True)` was cut off
    in a box of 250 px; a job's page kept them side by side on a phone, 113 px each. They sit side
    by side only where each gets 380 px, and one above the other otherwise."""
    from tests.factories import JobFactory
    from tests.test_accessibility import open_as
    from triage.guidance import guidance_for
    from triage.models import JobTriage, RuleSet
    from triage.taxonomy import Category

    job = JobFactory(name="pageable-copies", mean_gpu_util=30)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    guidance = guidance_for(
        Category.HOST_GPU_TRANSFER, "default", {}, gpu_hours=2.0, price_per_gpu_hour=None, currency="", job={}
    )
    Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=Category.HOST_GPU_TRANSFER,
                           confidence=0.9, summary="copies", gpu_hours=2.0, evidence={}, guidance=guidance)  # fmt: skip
    open_as(browser, live_server.url, operator)  # a session, with no login page to wait out
    browser.get(f"{live_server.url}/categories/{Category.HOST_GPU_TRANSFER.value}/")  # a card half the page wide
    [cause] = browser.execute_script(BEFORE_AFTER, "main .cols")
    assert cause == {"columns": 1, "cut": False}, cause
    browser.get(f"{live_server.url}/jobs/{job.pk}/")  # a card the page's width: room for both
    browser.execute_script("document.querySelectorAll('#findings details').forEach(d => d.open = true)")
    [wide] = browser.execute_script(BEFORE_AFTER, "#findings .cols")
    assert wide == {"columns": 2, "cut": False}, wide
    with window_width(browser, 360):
        browser.get(f"{live_server.url}/jobs/{job.pk}/")
        [phone] = browser.execute_script(BEFORE_AFTER, "#findings .cols")
    assert phone == {"columns": 1, "cut": False}, phone  # its long lines wrap (they scrolled sideways on a phone)


FITS = """
const box = document.querySelector('main .table-scroll');
const cost = box.querySelector('tbody tr td:last-child').getBoundingClientRect();
return {sideways: box.scrollWidth - box.clientWidth, costShown: cost.right <= box.getBoundingClientRect().right};
"""

# The jobs table's ids, each with the number of lines it takes.
JOB_ID_LINES = """
return Object.fromEntries([...document.querySelectorAll('main table.data tbody td:first-child a')].map(a =>
  [a.textContent, new Set([...a.getClientRects()].map(r => Math.round(r.top))).size]));
"""


@pytest.mark.django_db(transaction=True)
def test_at_1280_px_the_jobs_table_shows_every_column_costs_included(browser, live_server, operator):  # noqa: F811
    """1280 px wide (a common laptop) the jobs table was 33 px wider than its box: a cause like
    "Inefficient host-GPU data transfer" stayed on one line, and the cost column sat behind the
    sideways scroll. A long cause now takes two lines in the table, and a name cut short keeps
    its whole in its title. An MLflow run's id (32 hex digits, one word) made the table 127 px too
    wide, the cost out of view again, and its job's page scroll sideways on a phone: it wraps.
    A short id (alpha/4813845) broke at its slash too, every row of the demo's table two lines at
    1280 px: it keeps to one line, and a long cluster's name still breaks on a phone."""
    from tests.factories import ClusterFactory, JobFactory, TeamFactory
    from tests.test_accessibility import narrow_window_problems, open_as
    from triage.models import JobTriage, RuleSet
    from triage.taxonomy import Category

    team = TeamFactory(name="platform-research")
    # Wide digits in the start time and a long cluster name: the factory's own (a start n hours
    # after the last, "cluster12345") vary with the tests run before, and in a full run made the
    # table 5 px too wide. The job's id wraps after its cluster's name. Slurm's ids, and the MLflow
    # connector's (a run's id, fleet/connectors/mlflow.py).
    cluster = ClusterFactory(name="eu-west-h100-training")
    name = "graph-transformer-products-ablation-lr3e-05-bs512-run25"
    ids = ("4813400", "4813401", "0f3c9a7e2b5d4c1e8f6a9b2c3d4e5f60")
    for index in range(3):
        job = JobFactory(name=f"{name}-{index}", team=team, cluster=cluster, user="gabriel.costa",
                         external_id=ids[index], start_time=datetime(2026, 8, 28, 20, 58, tzinfo=UTC),
                         gpu_count=16, gpu_hours=119.3, unused_gpu_hours=85.5, mean_gpu_util=28.0,
                         cost="1298.13", currency="USD")  # fmt: skip
        result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
        for category in (Category.HOST_GPU_TRANSFER, Category.DATA_PREPROCESSING):
            Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=category,
                                   confidence=0.9, summary="s", gpu_hours=10.0, evidence={}, guidance={})  # fmt: skip
    JobFactory(name="dlrm-criteo-ablation", team=team, cluster=ClusterFactory(name="alpha"), external_id="4813845",
               start_time=datetime(2026, 8, 28, 19, 58, tzinfo=UTC))  # fmt: skip
    open_as(browser, live_server.url, operator)
    SHOTS.mkdir(exist_ok=True)
    with window_width(browser, 1280):
        # Its team's jobs only: these rows are the point, not what an earlier test left in the database.
        browser.get(f"{live_server.url}/jobs/?team={team.slug}")
        fits = browser.execute_script(FITS)
        wide_lines = browser.execute_script(JOB_ID_LINES)
        browser.save_screenshot(str(SHOTS / "job-list-1280.png"))
    assert fits == {"sideways": 0, "costShown": True}, fits
    assert wide_lines["alpha/4813845"] == 1, wide_lines
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/jobs/?team={team.slug}")
        phone_lines = browser.execute_script(JOB_ID_LINES)
    assert phone_lines["eu-west-h100-training/4813400"] > 1, phone_lines  # the column a phone keeps in view, narrow
    titles = browser.execute_script("return [...document.querySelectorAll('main td.clip')].map(td => td.title)")
    assert sorted(titles) == ["dlrm-criteo-ablation"] + [f"{name}-{index}" for index in range(3)]
    browser.get(f"{live_server.url}/jobs/{job.pk}/")  # the MLflow run's: its id heads the page
    assert narrow_window_problems(browser) == []


# The timeline's legend, toolbar (zero-sized when hidden) and plot areas, as [left, top, right, bottom].
TIMELINE_BOXES = """
const rect = element => { const r = element.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
const chart = document.getElementById('timeline');
const bar = chart.querySelector('.modebar');
return {chart: rect(chart), legend: rect(chart.querySelector('.legend')), bar: bar ? rect(bar) : [0, 0, 0, 0],
        plots: [...chart.querySelectorAll('.nsewdrag')].map(rect)};
"""


def overlap(one: list[float], other: list[float]) -> bool:
    """Whether two [left, top, right, bottom] boxes share more than an edge (a box of no size shares nothing)."""
    if one[2] <= one[0] or one[3] <= one[1] or other[2] <= other[0] or other[3] <= other[1]:
        return False
    return min(one[2], other[2]) - max(one[0], other[0]) > 1 and min(one[3], other[3]) - max(one[1], other[1]) > 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("gpus", [4, 8])
def test_on_a_phone_the_timelines_legend_and_toolbar_keep_off_its_plot(browser, live_server, operator, gpus):  # noqa: F811
    """390 px wide (a phone) the legend's entries wrapped to a row each and, pinned at a fixed height
    over the plot, its rows down to "Log events" covered the top of the utilization panel; the toolbar
    stood down the right edge beside the plot's last pixels; and with 7 to 32 GPUs the legend's column
    at the right left the plot a third of the width."""
    from selenium.webdriver.common.by import By

    job = job_with_gpus(gpus)
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    with window_width(browser, 390):
        open_timeline_pointed_at(browser, f"{live_server.url}/jobs/{job.pk}/")
        boxes = browser.execute_script(TIMELINE_BOXES)
        assert "Log events" in browser.find_element(By.CSS_SELECTOR, "#timeline .legend").text
        browser.save_screenshot(str(SHOTS / f"job-timeline-phone-{gpus}-gpus.png"))
    for plot in boxes["plots"]:
        assert not overlap(boxes["legend"], plot), f"the legend {boxes['legend']} covers the plot {plot}"
        assert not overlap(boxes["bar"], plot), f"the toolbar {boxes['bar']} covers the plot {plot}"
    assert not overlap(boxes["bar"], boxes["legend"]), "the toolbar covers the legend"
    plot_share = (boxes["plots"][0][2] - boxes["plots"][0][0]) / (boxes["chart"][2] - boxes["chart"][0])
    assert plot_share >= 0.6, f"the plot has {plot_share:.0%} of the chart's width"


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_teams_causes_keep_their_numbers_and_change_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide the team's causes table scrolled sideways, and "The change to make", squeezed into its last
    column, made each row hundreds of pixels tall, with the GPU-hours and the change off to the right; then the
    change read as a line under its cause, but the table still scrolled by about 33 px, its cost cut at the box's
    edge. On a phone each cause is a card of its fields, each beside its column's name (table.stacks, as the
    overview's top causes and the causes page); at 1280 px a table with the change in a column of its own."""
    from tests.factories import JobFactory, TeamFactory
    from tests.test_accessibility import open_as, table_layouts
    from triage.models import JobTriage, RuleSet
    from triage.taxonomy import Category

    team = TeamFactory(name="platform-research")
    causes = (Category.HOST_GPU_TRANSFER, Category.DATA_EXCHANGE, Category.IMPROPER_BATCH_SIZE)
    for index, category in enumerate(causes):
        start = datetime(2026, 11, 10, index, tzinfo=UTC)  # in the page's period, whatever else a run has stored
        job = JobFactory(team=team, start_time=start, mean_gpu_util=20.0, gpu_hours=120.0, unused_gpu_hours=96.0,
                         cost="312.00")  # fmt: skip
        result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
        Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=category,
                               confidence=0.9, summary="s", gpu_hours=90 - index, cost="234.00", evidence={},
                               guidance={})  # fmt: skip
    # Dates, not "the last 90 days": those end at the newest job stored, which jobs of other tests
    # (the factory's start times run on through a session) can put months after these.
    period = "from=2026-11-10&to=2026-11-10"
    open_as(browser, live_server.url, operator)
    wide, phone = table_layouts(
        browser, f"{live_server.url}/teams/{team.slug}/?{period}", "team-causes", table="#team-causes table.data"
    )
    columns = ["Cause", "Jobs", "Recoverable GPU-hours", "Cost (USD)", "The change to make"]
    for layout in (wide, phone):
        assert not layout["scrolls"] and layout["cellsOut"] == [], layout
        assert [column for _label, column in layout["labels"]] == columns * len(causes), layout
    assert wide["headersShown"] and {label for label, _column in wide["labels"]} == {None}, wide
    assert not phone["headersShown"], phone
    assert [label for label, _column in phone["labels"]] == columns * len(causes), phone
    assert phone["violations"] == [] and phone["reflow"] == [], phone


def open_timeline_pointed_at(browser, url: str) -> None:  # noqa: F811
    """Open a job page, wait for its timeline, and rest the pointer on the chart: Plotly shows its
    toolbar only while the pointer is there."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    browser.get(url)
    WebDriverWait(browser, 20, ignored_exceptions=STALE).until(
        lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1"
    )
    chart = browser.find_element(By.CSS_SELECTOR, "#timeline .nsewdrag")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", chart)
    ActionChains(browser).move_to_element(chart).perform()


def job_with_gpus(gpus: int, host_name: str = "alpha-n055"):
    """A two-hour job whose series has `gpus` GPUs on a host named like the demo fleet's and the host's CPU,
    and a log event."""
    from datetime import timedelta

    import numpy as np
    import pandas as pd
    from django.core.files.base import ContentFile

    from fleet.models import Artifact, LogEvent
    from fleet.series import to_parquet_bytes
    from tests.factories import JobFactory
    from tests.test_timeline import START, series

    job = JobFactory(start_time=START, end_time=START + timedelta(hours=2), gpu_count=gpus)
    frame = series(gpus, 7200, 30)
    frame["host"] = host_name  # a real host's name: legend entries as long as the demo fleet's
    host = frame[frame["gpu"] == 0].assign(gpu=pd.NA, gpu_util=np.nan, cpu_util=np.float32(35))
    frame = pd.concat([frame, host], ignore_index=True)  # the host's CPU: a third panel, as most jobs have
    job.series_file.save("s.parquet", ContentFile(to_parquet_bytes(frame)))
    log = Artifact.objects.create(job=job, kind="log", path="stdout.log", file="artifacts/x", size=1, sha256="x")
    LogEvent.objects.create(job=job, artifact=log, line_no=1, kind="epoch", text="epoch 1",
                            timestamp=START + timedelta(minutes=30))  # fmt: skip
    return job


def job_with_idle_windows(first, second):
    """`job_with_gpus(1)` triaged with two causes, each with one five-minute idle window (at 10 and 50
    minutes), so the timeline shades both and its legend has an entry for each."""
    from datetime import timedelta

    from tests.test_timeline import START
    from triage.models import JobTriage, RuleSet

    job = job_with_gpus(1)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    for category, minutes in ((first, 10), (second, 50)):
        window = {"start": (START + timedelta(minutes=minutes)).isoformat(),
                  "end": (START + timedelta(minutes=minutes + 5)).isoformat(), "minutes": 5}  # fmt: skip
        Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=category, confidence=0.9,
                               summary="s", gpu_hours=1.0, evidence={"windows": [window]}, guidance={},
                               time_located=True)  # fmt: skip
    return job


# The timeline's legend, toolbar (zero-sized when hidden) and plot areas as TIMELINE_BOXES has them, but
# from the chart's top left corner (the page above it wraps differently at each width), and its size.
TIMELINE_LAYOUT = """
const chart = document.getElementById('timeline').getBoundingClientRect();
const rect = element => { const r = element.getBoundingClientRect();
  return [r.left - chart.left, r.top - chart.top, r.right - chart.left, r.bottom - chart.top].map(Math.round); };
const el = document.getElementById('timeline'), bar = el.querySelector('.modebar');
return {size: [Math.round(chart.width), Math.round(chart.height)], legend: rect(el.querySelector('.legend')),
        bar: bar ? rect(bar) : [0, 0, 0, 0], plots: [...el.querySelectorAll('.nsewdrag')].map(rect)};
"""


def assert_same_layout(shown: dict, drawn: dict, what: str) -> None:
    for part in shown:
        for at, expected in zip(shown[part], drawn[part], strict=True):
            assert at == pytest.approx(expected, abs=2), f"{what}: its {part} is {shown[part]}, drawn so {drawn[part]}"


def same_layout(shown: dict, drawn: dict) -> bool:
    try:
        assert_same_layout(shown, drawn, "")
    except (AssertionError, ValueError, KeyError):
        return False
    return True


def layout_after_resize(driver, script: str, settled) -> object:
    """What `script` reads once the page has laid itself out again after a resize: read until `settled`
    holds of it, or 15 s have passed (then the caller's assertion says what was drawn). The layout follows
    on a debounced handler, as Plotly's own resizing does; on a loaded machine a fixed second was not
    always enough (CI, 2026-12-07: the legend still where the 900 px layout had it)."""
    deadline = time.monotonic() + 15
    time.sleep(0.5)
    while True:
        shown = driver.execute_script(script)
        if settled(shown) or time.monotonic() > deadline:
            return shown
        time.sleep(0.25)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("gpus", [4, 8])
def test_the_timeline_takes_the_layout_of_its_width_when_the_window_crosses_the_phones(browser, live_server, operator,  # noqa: F811
                                                                                        gpus):  # fmt: skip
    """The phone layout was chosen once, when the timeline loaded: a phone turned sideways (or a window
    narrowed past 560 px) kept the layout it was drawn with, legend, toolbar and height, until the next
    zoom. Resized across the breakpoint, the chart is laid out as one loaded at its new width. (With the
    demo's beta-n022, the legend wraps so that changing it in the same relayout as the chart's height
    left it drawn where the old height put it, 19 px into the plot on a phone.)"""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    job = job_with_gpus(gpus, host_name="beta-n022")
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)

    def drawn_at(width: int) -> dict:
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})  # fmt: skip
        browser.get(f"{live_server.url}/jobs/{job.pk}/")
        wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
        return browser.execute_script(TIMELINE_LAYOUT)

    def resized_to(width: int, like: dict) -> dict:
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})  # fmt: skip
        return layout_after_resize(browser, TIMELINE_LAYOUT, lambda shown: same_layout(shown, like))

    with window_width(browser, 390):
        phone = drawn_at(390)
        desktop = drawn_at(900)
        narrowed = resized_to(390, like=phone)
        drawn_at(390)
        turned = resized_to(900, like=desktop)
        browser.save_screenshot(str(SHOTS / f"job-timeline-phone-turned-{gpus}-gpus.png"))
    assert phone["bar"][2] == phone["bar"][0] and desktop["bar"][2] > desktop["bar"][0]  # hidden on a phone only
    assert_same_layout(turned, desktop, "turned from 390 px to 900 px")
    assert_same_layout(narrowed, phone, "narrowed from 900 px to 390 px")


# Each legend entry's box (its line sample and name, [left, top, right, bottom]) in the timeline.
LEGEND_ENTRIES = """
return [...document.querySelectorAll('#timeline .legend .traces')].map(entry => {
  const r = entry.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];
});
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_32_gpu_timelines_legend_lies_in_columns(browser, live_server, operator):  # noqa: F811
    """390 px wide a 32-GPU job (the most drawn a line each) gave each GPU's legend entry a row of its
    own: 33 rows, about 640 px of legend above the chart. Plotly wrapped the legend at the plot's width,
    which two entries overran; now they lie in columns, two at 390 px, each as wide as the longest name."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    job = job_with_gpus(32)
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    with window_width(browser, 390):
        browser.get(f"{live_server.url}/jobs/{job.pk}/")
        wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
        wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
        entries = browser.execute_script(LEGEND_ENTRIES)
        boxes = browser.execute_script(TIMELINE_BOXES)
        browser.execute_script("document.getElementById('timeline').scrollIntoView()")
        browser.save_screenshot(str(SHOTS / "job-timeline-phone-32-gpus.png"))
    assert len(entries) == 33  # a line each for the 32 GPUs, and the log events
    rows = len({round(entry[1]) for entry in entries})
    assert rows <= 17, f"the legend's 33 entries take {rows} rows"
    for index, entry in enumerate(entries):
        assert boxes["chart"][0] <= entry[0] and entry[2] <= boxes["chart"][2], f"entry {entry} leaves the chart"
        for other in entries[index + 1 :]:
            assert not overlap(entry, other), f"legend entries {entry} and {other} overlap"
    for plot in boxes["plots"]:
        assert not overlap(boxes["legend"], plot), f"the legend {boxes['legend']} covers the plot {plot}"
    assert boxes["plots"][0][1] - boxes["legend"][3] <= 40, "the chart grew by more rows than its legend took"


# The timeline's plot panels and each finding's shaded window, as [left, top, right, bottom].
TIMELINE_SHADING = """
const rect = element => { const r = element.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
const chart = document.getElementById('timeline');
return {legend: rect(chart.querySelector('.legend')), plots: [...chart.querySelectorAll('.nsewdrag')].map(rect),
        // A cause's legend entry is a shape of its own that covers nothing (triage.dashboard.timeline).
        shading: [...chart.querySelectorAll('.shapelayer path')].map(rect).filter(r => r[2] > r[0] && r[3] > r[1])};
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("gpus", [4, 8])
def test_a_findings_shaded_window_covers_the_timelines_panels_only(browser, live_server, operator, gpus):  # noqa: F811
    """A finding's window was shaded from the foot of the chart area to its top (paper 0 to 1): over the
    time axis's labels under the last panel and the gaps between panels, which it does not cover."""
    from datetime import timedelta

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from tests.test_timeline import START
    from triage.models import JobTriage, RuleSet
    from triage.taxonomy import Category

    job = job_with_gpus(gpus)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    window = {"start": (START + timedelta(minutes=20)).isoformat(), "end": (START + timedelta(minutes=50)).isoformat()}
    Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=Category.HOST_GPU_TRANSFER,
                           confidence=0.9, summary="s", gpu_hours=1, evidence={"windows": [window]},
                           guidance={})  # fmt: skip
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
    drawn = browser.execute_script(TIMELINE_SHADING)
    assert drawn["shading"], "the finding's window should be shaded"
    for shade in drawn["shading"]:
        assert not overlap(shade, drawn["legend"]), f"the shading {shade} reaches the legend {drawn['legend']}"
        panel = [plot for plot in drawn["plots"] if overlap(shade, plot)]
        assert len(panel) == 1, f"the shading {shade} spans {len(panel)} of the panels {drawn['plots']}"
        top, bottom = panel[0][1], panel[0][3]
        assert top - 1 <= shade[1] and shade[3] <= bottom + 1, f"the shading {shade} leaves its panel {panel[0]}"
    assert len(drawn["shading"]) == len(drawn["plots"])  # each panel shaded


def emulate_width(driver, width: int) -> None:
    """Lay the page out `width` CSS pixels wide, as a phone turned sideways or a window resized does
    (inside a `window_width` block, which clears it at the end)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})  # fmt: skip


# Each chart's size, and its legend's and axis names' boxes ([left, top, right, bottom], flattened) from the
# chart's top left corner (the page above it wraps differently at each width).
CHARTS_LAYOUT = """
return Object.fromEntries([...document.querySelectorAll('[data-figure]')].map(chart => {
  const box = chart.getBoundingClientRect();
  const rect = element => { const r = element.getBoundingClientRect();
    return [r.left - box.left, r.top - box.top, r.right - box.left, r.bottom - box.top].map(Math.round); };
  return [chart.dataset.figure, {size: [Math.round(box.width), Math.round(box.height)],
    legend: [...chart.querySelectorAll('.legend')].flatMap(rect),
    names: [...chart.querySelectorAll('.xtick text, .ytick text')].flatMap(rect)}];
}));
"""


@pytest.mark.django_db(transaction=True)
def test_the_overviews_charts_take_the_layout_of_their_width_when_the_window_crosses_the_phones(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """charts.js chose the phone layout (wrapped names, a taller chart, a smaller legend) once, when the
    page loaded: a phone turned sideways, or a window widened past 560 px, kept the names wrapped and the
    chart tall. Resized across the breakpoint, each chart is laid out as one loaded at its new width."""
    from selenium.webdriver.support.wait import WebDriverWait

    ingest.execute_run(ingest.create_run(demo_archive).pk)  # triage runs in-process on the signal
    log_in(browser, live_server.url, operator, "/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    drawn_all = "return [...document.querySelectorAll('[data-figure]')].every(c => c.querySelector('.main-svg'))"

    def drawn_at(width: int) -> dict:
        emulate_width(browser, width)
        browser.get(f"{live_server.url}/overview/?period=90d")
        wait.until(lambda b: b.execute_script(drawn_all))
        return browser.execute_script(CHARTS_LAYOUT)

    def resized_to(width: int, like: dict) -> dict:
        emulate_width(browser, width)

        def settled(shown: dict) -> bool:
            return sorted(shown) == sorted(like) and all(same_layout(shown[name], like[name]) for name in like)

        return layout_after_resize(browser, CHARTS_LAYOUT, settled)

    with window_width(browser, 390):
        phone = drawn_at(390)
        desktop = drawn_at(1000)
        narrowed = resized_to(390, like=phone)
        drawn_at(390)
        turned = resized_to(1000, like=desktop)
    assert "categories-figure" in phone, f"the overview should draw the causes chart: {sorted(phone)}"
    assert phone["categories-figure"]["size"][1] > desktop["categories-figure"]["size"][1]  # wrapped names
    assert sorted(turned) == sorted(desktop) == sorted(narrowed) == sorted(phone)
    for name in phone:
        assert_same_layout(turned[name], desktop[name], f"{name} turned from 390 px to 1000 px")
        assert_same_layout(narrowed[name], phone[name], f"{name} narrowed from 1000 px to 390 px")


# The time axis's labels under the timeline: each label's text and the angle it is drawn at (0 when flat).
TIME_LABELS = r"""
return [...document.querySelectorAll('#timeline .xtick text')].map(label => {
  const turned = /rotate\((-?[\d.]+)/.exec(label.getAttribute('transform') || '');
  return [label.textContent, turned ? Number(turned[1]) : 0];
});
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("gpus", [4, 32])
def test_the_timelines_time_labels_are_drawn_as_a_fresh_load_draws_them_after_the_window_crosses_the_phones(
    browser,  # noqa: F811
    live_server,
    operator,
    gpus,
):
    """Laid out again for a phone by a resize, the timeline's time axis might have kept its labels slanted
    ("15:30 Nov 21, 2026" turned) where a load at 390 px draws them flat. It does not: Plotly.js (4.1.1) picks
    the labels' angle anew at each relayout, so the relayout sets none (a fixed angle would stop Plotly
    turning labels that do overlap). This keeps it so, either way across the breakpoint."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    job = job_with_gpus(gpus)
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)

    def drawn_at(width: int) -> list:
        emulate_width(browser, width)
        browser.get(f"{live_server.url}/jobs/{job.pk}/")
        wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
        return browser.execute_script(TIME_LABELS)

    def resized_to(width: int, like: list) -> list:
        emulate_width(browser, width)
        return layout_after_resize(browser, TIME_LABELS, lambda shown: shown == like)

    with window_width(browser, 900):
        phone = drawn_at(390)
        desktop = drawn_at(900)
        narrowed = resized_to(390, like=phone)
        drawn_at(390)
        turned = resized_to(900, like=desktop)
    assert phone, "the timeline should label its time axis"
    assert narrowed == phone, f"narrowed from 900 px to 390 px: {narrowed}, loaded at 390 px: {phone}"
    assert turned == desktop, f"turned from 390 px to 900 px: {turned}, loaded at 900 px: {desktop}"


# Each legend entry's box, [left, top, right, bottom], with its name.
NAMED_LEGEND_ENTRIES = """
return [...document.querySelectorAll('#timeline .legend .traces')].map(entry => {
  const r = entry.getBoundingClientRect(); return [entry.textContent, [r.left, r.top, r.right, r.bottom]];
});
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_each_causes_shaded_windows_have_a_legend_entry_clear_of_the_others(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """The findings' windows were shaded with nothing saying what the bands were; each cause has a
    legend entry now, and at 390 px the phone's legend makes room for their names too (its columns
    were as wide as the traces' names only, and "Model checkpointing: idle windows" ran under the next)."""
    from triage.taxonomy import Category

    # The causes' entries share a row: GPU 0 and Log events take the first.
    job = job_with_idle_windows(Category.MODEL_CHECKPOINTING, Category.REMOTE_DATA_READING)
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    with window_width(browser, 390):
        open_timeline_pointed_at(browser, f"{live_server.url}/jobs/{job.pk}/")
        entries = dict(browser.execute_script(NAMED_LEGEND_ENTRIES))
        boxes = browser.execute_script(TIMELINE_BOXES)
        browser.save_screenshot(str(SHOTS / "job-timeline-phone-causes.png"))
    causes = ["Model checkpointing: idle windows", "Remote data reading: idle windows"]
    assert all(name in entries for name in causes), entries
    names = list(entries)
    for i, name in enumerate(names):
        for other in names[i + 1 :]:
            assert not overlap(entries[name], entries[other]), f"{name!r} runs into {other!r}"
        assert entries[name][2] <= boxes["chart"][2] + 1, f"{name!r} runs past the chart's right edge"
    for plot in boxes["plots"]:
        assert not overlap(boxes["legend"], plot), f"the legend {boxes['legend']} covers the plot {plot}"


@pytest.mark.django_db(transaction=True)
def test_an_admin_operators_top_bar_is_one_row_at_1280_px_and_their_name_leads_to_their_password(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """A 'Password' link of its own beside the name wrapped an admin operator's menu to two rows at
    1280 px ("Admin" alone on the second); the name itself now leads to the password page."""
    from selenium.webdriver.common.by import By

    operator.is_staff = True
    operator.save()
    with window_width(browser, 1280):
        log_in(browser, live_server.url, operator, "/jobs/")
        links = browser.find_elements(By.CSS_SELECTOR, ".topbar nav a")
        # The menu is a <details> held open at this width (a phone folds it, app.css): WebDriver's .text
        # takes a closed one's content for hidden, so what shows is asked of the browser itself.
        assert [link.get_attribute("textContent") for link in links][-1] == "Admin"
        shown = "return [...document.querySelectorAll('.topbar nav a, .topbar .who')].every(e => e.checkVisibility())"
        assert browser.execute_script(shown)
        assert len({link.location["y"] for link in links}) == 1, "the menu wrapped to more than one row"
        who = browser.find_element(By.CSS_SELECTOR, ".topbar .who")
        assert who.get_attribute("textContent") == "olivia-operator"
        assert who.get_attribute("href").endswith("/password/")


@pytest.mark.django_db(transaction=True)
def test_the_timeline_window_fields_read_and_take_times_in_the_readers_zone_on_a_24_hour_clock(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """The From and To fields showed '11/16/2026, 12:28:32 AM' in UTC (Chromium's en-US datetime-local)
    while the page's other times were '2026-11-15 21:28:32 America/Argentina/Buenos_Aires'. They now read
    as those do, in the reader's zone, which they name; a window typed in it zooms the chart (in UTC) to
    the same moments."""
    from datetime import timedelta

    import pandas as pd
    from django.core.files.base import ContentFile
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet.models import UserProfile
    from fleet.series import to_parquet_bytes
    from tests.factories import JobFactory

    zone = "America/Argentina/Buenos_Aires"  # UTC-3 all year
    UserProfile.objects.update_or_create(user=operator, defaults={"time_zone": zone})
    begin = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    stamps = pd.date_range(begin, begin + timedelta(hours=1), freq="1min").as_unit("ms")
    frame = pd.DataFrame({"timestamp": stamps, "host": "n1", "gpu": pd.array([0] * len(stamps), dtype="Int16"),
                          "gpu_util": pd.array([50.0] * len(stamps), dtype="float32")})  # fmt: skip
    job = JobFactory(start_time=begin, end_time=begin + timedelta(hours=1), gpu_count=1)
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(frame)))

    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
    start = browser.find_element(By.CSS_SELECTOR, "#timeline-window [name=start]")
    end = browser.find_element(By.CSS_SELECTOR, "#timeline-window [name=end]")
    assert (start.get_attribute("value"), end.get_attribute("value")) == ("2026-11-02 07:00:00", "2026-11-02 08:00:00")
    assert zone in browser.find_element(By.ID, "timeline-window").text
    assert zone in browser.execute_script("return arguments[0].labels[0].textContent", start)

    start.clear()
    start.send_keys("2026-11-02 07:10:00")
    end.clear()
    end.send_keys("2026-11-02 07:20", Keys.ENTER)  # seconds may be left out

    def shown() -> list[datetime]:
        first, last = browser.execute_script("return document.getElementById('timeline').layout.xaxis.range")
        return [datetime.fromisoformat(first), datetime.fromisoformat(last)]

    # The chart is on the same clock as the fields (its axis is named for the zone).
    wait.until(lambda b: shown() == [datetime(2026, 11, 2, 7, 10), datetime(2026, 11, 2, 7, 20)])
    status = browser.find_element(By.ID, "timeline-status").text
    assert status == f"Showing 2026-11-02 07:10:00 to 2026-11-02 07:20:00 ({zone})."
    assert end.get_attribute("value") == "2026-11-02 07:20:00"
    start.clear()
    start.send_keys("2026-11-02 7 o'clock", Keys.ENTER)
    wait.until(lambda b: b.find_element(By.ID, "timeline-window-error").is_displayed())
    assert browser.find_element(By.ID, "timeline-window-error").text == (
        "Write each time as year-month-day hour:minute:second, such as 2026-11-02 07:10:00."
    )
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_the_timeline_chart_is_on_the_readers_clock_as_its_fields_and_breaks_where_the_clocks_go_back(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """A reader in Buenos Aires saw 21:30 on the axis ("Time (UTC)") and 18:30 in the From / to fields.
    The axis, its hover label and the fields now agree, on the reader's clock, which the axis names; a drag
    on the chart still fills the fields and fetches its window by UTC. A Berlin job across the night the
    clocks go back draws the repeated hour as a line of its own, not one back across the chart."""
    from datetime import timedelta
    from urllib.parse import parse_qs, urlsplit

    import pandas as pd
    from django.core.files.base import ContentFile
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet.models import UserProfile
    from fleet.series import to_parquet_bytes
    from tests.factories import JobFactory

    zone = "Europe/Berlin"
    UserProfile.objects.update_or_create(user=operator, defaults={"time_zone": zone})
    begin = datetime(2026, 10, 25, 0, 0, tzinfo=UTC)  # 02:00 CEST; at 01:00 UTC, 03:00 CEST is 02:00 CET
    stamps = pd.date_range(begin, begin + timedelta(hours=3), freq="1min", inclusive="left").as_unit("ms")
    frame = pd.concat(
        [
            pd.DataFrame(
                {
                    "timestamp": stamps,
                    "host": "n1",
                    "gpu": pd.array([gpu] * len(stamps), dtype="Int16"),
                    "gpu_util": pd.array([40.0 + 20 * gpu] * len(stamps), dtype="float32"),
                }
            )  # fmt: skip
            for gpu in (0, 1)
        ],
        ignore_index=True,
    )
    job = JobFactory(start_time=begin, end_time=begin + timedelta(hours=3), gpu_count=2)
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(frame)))

    browser.set_window_size(1280, 800)
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
    chart = browser.find_element(By.ID, "timeline")
    assert chart.find_element(By.CSS_SELECTOR, ".g-xtitle").text == f"Time ({zone})"
    start = browser.find_element(By.CSS_SELECTOR, "#timeline-window [name=start]")
    end = browser.find_element(By.CSS_SELECTOR, "#timeline-window [name=end]")
    assert (start.get_attribute("value"), end.get_attribute("value")) == ("2026-10-25 02:00:00", "2026-10-25 04:00:00")
    ticks = [tick.text for tick in chart.find_elements(By.CSS_SELECTOR, ".xtick text")]
    assert ticks and ticks[0].startswith("02:00"), ticks
    # Its tick labels write the date as the app does, under the first tick's time ("Oct 25, 2026" before).
    assert "2026-10-25" in ticks[0] and not any("Oct" in tick for tick in ticks), ticks
    # The line: 02:00-02:59 CEST, then 02:00-03:59 CET, two runs each forwards in time.
    trace = browser.execute_script("return document.getElementById('timeline').data[0]")
    runs, run = [], []
    for x, y in zip(trace["x"], trace["y"], strict=True):
        if y is None:
            runs, run = runs + [run], []
        else:
            run.append(x)
    runs = [r for r in runs + [run] if r]
    assert len(runs) == 2 and all(a < b for r in runs for a, b in zip(r, r[1:], strict=False))
    # The repeated hour is marked: a band over 02:00-03:00 with a label saying the clocks went back.
    labels = [a.text for a in chart.find_elements(By.CSS_SELECTOR, ".annotation-text")]
    assert labels == ["02:00–03:00 twice: clocks went back (CEST, then CET)"]
    # The hover label on the axis names the sample's time on the reader's clock as the fields write times
    # (24-hour, to the second; not Plotly's "Oct 25, 2026, 03:30"): 03:30 CET is 02:30 UTC.
    browser.execute_script("Plotly.Fx.hover(arguments[0], {xval: arguments[1]})", chart, trace["x"][-30])
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#timeline .hoverlayer .axistext"))
    assert chart.find_element(By.CSS_SELECTOR, ".hoverlayer .axistext").text == "2026-10-25 03:30:00"
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", chart)
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "timeline-berlin-fold.png"))

    # A drag across 03:10-03:40 CET: the fields say so, the window is fetched in UTC (02:10-02:40).
    browser.execute_script(
        "Plotly.relayout(arguments[0], {'xaxis.range[0]': '2026-10-25 03:10', 'xaxis.range[1]': '2026-10-25 03:40'})",
        chart,
    )
    wait.until(lambda b: start.get_attribute("value") == "2026-10-25 03:10:00")
    assert end.get_attribute("value") == "2026-10-25 03:40:00"
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('start='))"
    )
    query = parse_qs(urlsplit(fetched[-1]).query)
    assert (query["start"], query["end"]) == (["2026-10-25T02:10:00.000Z"], ["2026-10-25T02:40:00.000Z"])
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
    status = browser.find_element(By.ID, "timeline-status").text
    assert status == f"Showing 2026-10-25 03:10:00 to 2026-10-25 03:40:00 ({zone})."
    # Past the repeated hour, no band and no label.
    assert chart.find_elements(By.CSS_SELECTOR, ".annotation-text") == []
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_the_timeline_labels_the_hour_the_clocks_skip(browser, live_server, operator):  # noqa: F811
    """Berlin, 2026-03-29: 02:00 CET is 03:00 CEST. The axis's 02:00-03:00 has no line; a label says why."""
    from datetime import timedelta

    import pandas as pd
    from django.core.files.base import ContentFile
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet.models import UserProfile
    from fleet.series import to_parquet_bytes
    from tests.factories import JobFactory

    UserProfile.objects.update_or_create(user=operator, defaults={"time_zone": "Europe/Berlin"})
    begin = datetime(2026, 3, 29, 0, 0, tzinfo=UTC)  # 01:00 CET
    stamps = pd.date_range(begin, begin + timedelta(hours=2), freq="1min", inclusive="left").as_unit("ms")
    frame = pd.DataFrame(
        {"timestamp": stamps, "host": "n1", "gpu": pd.array([0] * len(stamps), dtype="Int16"), "gpu_util": 55.0}
    )
    job = JobFactory(start_time=begin, end_time=begin + timedelta(hours=2), gpu_count=1)
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(frame)))

    browser.set_window_size(1280, 800)
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
    chart = browser.find_element(By.ID, "timeline")
    labels = [a.text for a in chart.find_elements(By.CSS_SELECTOR, ".annotation-text")]
    assert labels == ["02:00–03:00 skipped: clocks went forward (CET, then CEST)"]
    # 03:00 CEST, the first minute after the change, hovered as the fields write it.
    trace = browser.execute_script("return document.getElementById('timeline').data[0]")
    after = next(x for x, y in zip(trace["x"], trace["y"], strict=True) if y is not None and x >= 1774753200000)
    browser.execute_script("Plotly.Fx.hover(arguments[0], {xval: arguments[1]})", chart, after)
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#timeline .hoverlayer .axistext"))
    assert chart.find_element(By.CSS_SELECTOR, ".hoverlayer .axistext").text == "2026-03-29 03:00:00"
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", chart)
    SHOTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(SHOTS / "timeline-berlin-spring-forward.png"))
    assert console_errors(browser) == []


# Each cause's legend entry for its shaded windows: its swatch's colour as seen over the card (the fill at
# its own and its ancestors' opacity) and that colour's contrast with the card.
IDLE_WINDOW_SWATCHES = """
const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
const lum = ([r, g, b]) => [r, g, b]
  .map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
  .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const chart = document.getElementById('timeline');
const card = rgb(getComputedStyle(chart.closest('.card')).backgroundColor);
return [...chart.querySelectorAll('.legend .traces')].filter(e => e.textContent.endsWith('idle windows')).map(entry => {
  const path = entry.querySelector('.legendpoints path');
  const style = getComputedStyle(path), fill = rgb(style.fill);
  let alpha = parseFloat(style.fillOpacity) * (fill.length > 3 ? fill[3] : 1);
  for (let node = path; node && node !== chart; node = node.parentNode) {
    alpha *= parseFloat(getComputedStyle(node).opacity);
  }
  const seen = [0, 1, 2].map(i => fill[i] * alpha + card[i] * (1 - alpha));
  return [entry.textContent, ratio(seen, card)];
});
"""
# The bands over the data: each one's opacity as drawn, and whether it shows.
IDLE_WINDOW_BANDS = """
return document.getElementById('timeline')._fullLayout.shapes
  .filter(s => (s.name || '').endsWith('idle windows') && !s.showlegend).map(s => [s.opacity, s.visible]);
"""


@pytest.mark.django_db(transaction=True)
def test_each_causes_idle_windows_legend_swatch_stands_out_from_the_card_in_both_schemes(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """The legend's swatch for a cause's shaded windows was drawn at the bands' own light tint: 1.2:1 on
    the dark card, barely there (and little more on white). It is the cause's colour now, 3:1 or more from
    the card in both schemes, while the bands over the data keep their tint; a click on the entry still
    hides them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from triage.taxonomy import Category

    job = job_with_idle_windows(Category.MODEL_CHECKPOINTING, Category.REMOTE_DATA_READING)
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    try:
        for scheme in ("light", "dark"):
            color_scheme(browser, scheme)
            with window_width(browser, 1280):
                open_timeline_pointed_at(browser, f"{live_server.url}/jobs/{job.pk}/")
                swatches = dict(browser.execute_script(IDLE_WINDOW_SWATCHES))
                bands = browser.execute_script(IDLE_WINDOW_BANDS)
                legend = browser.find_element(By.CSS_SELECTOR, "#timeline .legend")
                browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", legend)
                browser.save_screenshot(str(SHOTS / f"job-timeline-idle-windows-legend-{scheme}.png"))
                assert set(swatches) == {"Model checkpointing: idle windows", "Remote data reading: idle windows"}
                assert all(contrast >= 3 for contrast in swatches.values()), (scheme, swatches)
                # The bands are as light as before over the data: 12 % on white, 24 % on the dark card.
                assert len(bands) >= 4 and {opacity for opacity, _ in bands} == {0.12 if scheme == "light" else 0.24}
                entry = next(e for e in legend.find_elements(By.CSS_SELECTOR, ".traces") if e.text.startswith("Model"))
                entry.find_element(By.CSS_SELECTOR, ".legendtoggle").click()
                WebDriverWait(browser, 5).until(  # Plotly waits out a double click's delay first
                    lambda b: any(visible != True for _, visible in b.execute_script(IDLE_WINDOW_BANDS))  # noqa: E712
                )
                shown = [visible for _, visible in browser.execute_script(IDLE_WINDOW_BANDS)]
                assert shown.count("legendonly") == shown.count(True) == len(bands) // 2, (
                    shown
                )  # one cause's, all panels
    finally:
        color_scheme(browser, None)


# The weeks under each weekly chart: each label's text, whether it lies whole inside the chart's drawing,
# whether Plotly tilted it, and its left and right edges.
WEEK_LABELS = """
return [...document.querySelectorAll('[data-figure]')].flatMap(chart => {
  const svg = chart.querySelector('.main-svg').getBoundingClientRect();
  return [...chart.querySelectorAll('.xtick text')].filter(t => /^\\d{4}-\\d{2}-\\d{2}$/.test(t.textContent))
    .map(t => { const r = t.getBoundingClientRect();
      return [chart.dataset.figure, t.textContent, r.left >= svg.left - 1 && r.right <= svg.right + 1,
              (t.getAttribute('transform') || '').includes('rotate'), r.left, r.right]; });
});
"""


def weeks_misdrawn(labels: list, last_week: str) -> list:
    """What is wrong with the dates under each weekly chart (WEEK_LABELS): one cut at the chart's edge or
    tilted, two less than 4 px apart, fewer than two in a chart, or the last week's not among them."""
    from itertools import pairwise

    wrong = [("cut", label) for label in labels if not label[2]] + [("tilted", label) for label in labels if label[3]]
    for chart in {label[0] for label in labels}:
        shown = [label for label in labels if label[0] == chart]
        edges = sorted(label[4:] for label in shown)
        if len(edges) < 2 or last_week not in {label[1] for label in shown}:
            wrong.append(("too few, or not the last week", chart, [label[1] for label in shown]))
        wrong += [("touching", chart, a, b) for a, b in pairwise(edges) if b[0] - a[1] < 4]
    return wrong


@pytest.mark.django_db(transaction=True)
def test_the_weekly_charts_dates_show_whole_on_a_phone_and_a_desktop(browser, live_server, operator, demo_archive):  # noqa: F811
    """A week is labelled by its Monday's date, 2026-11-16 (it was "Nov 16"); none is cut at the chart's edge.
    At every width the dates lie level and apart, two at least, the last week's among them: as many as the
    chart's own plot has room for, not as many as the window's width allowed. At 1280 px the overview's
    trend, in a card some 357 px wide, had Plotly tilt its six dates (the window was no phone's), and on a
    phone a cause's five weeks were tilted at 320 px; a chart laid out wide keeps Plotly's ticks, every week.
    Resized, a chart is labelled for its new width, as a load at that width labels it (they were labelled
    again only as the window crossed a phone's width)."""
    from selenium.webdriver.support.wait import WebDriverWait

    ingest.execute_run(ingest.create_run(demo_archive).pk)  # triage runs in-process on the signal
    category = Finding.objects.values_list("category", flat=True).first()
    team = Job.objects.values_list("team__slug", flat=True).first()
    log_in(browser, live_server.url, operator, "/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    drawn_all = "return [...document.querySelectorAll('[data-figure]')].every(c => c.querySelector('.main-svg'))"
    period = "?from=2026-10-19&to=2026-11-23"
    weeks = ["2026-10-19", "2026-10-26", "2026-11-02", "2026-11-09", "2026-11-16", "2026-11-23"]

    def loaded(path: str, width: int) -> list:
        emulate_width(browser, width)
        browser.get(f"{live_server.url}{path}{period}")
        wait.until(lambda b: b.execute_script(drawn_all))
        return browser.execute_script(WEEK_LABELS)

    def dates(labels: list) -> list:
        return [label[:2] for label in labels]

    with window_width(browser, 1280):
        for width in (1280, 390, 320):
            for path in ("/overview/", f"/teams/{team}/", f"/categories/{category}/"):
                labels = loaded(path, width)
                assert labels, (width, path)
                assert weeks_misdrawn(labels, weeks[-1]) == [], (width, path, labels)
                if width == 1280 and path != "/overview/":  # laid out wide: Plotly's own ticks, every week
                    assert [label[1] for label in labels] == weeks, (width, path, labels)

        # Resized, each chart is labelled as a load at the new width labels it: from 540 px to 320 px the
        # window and the chart stay a phone's, and three dates give way to two; at 1280 px the overview's
        # trend, in its card, labels three where 700 px, a card wider than a phone's, labels all six.
        for path in ("/overview/", f"/categories/{category}/"):
            fresh = {width: dates(loaded(path, width)) for width in (700, 1280, 540, 320)}
            assert fresh[540] != fresh[320], (path, fresh)
            loaded(path, 700)
            for width in (1280, 540, 320, 700):
                emulate_width(browser, width)
                like = fresh[width]
                labels = layout_after_resize(browser, WEEK_LABELS, lambda shown, like=like: dates(shown) == like)
                assert dates(labels) == like, (path, width, labels)
                assert weeks_misdrawn(labels, weeks[-1]) == [], (path, width, labels)


def test_on_a_phone_the_day_the_jobs_start_stays_whole_on_the_cards(browser, live_server, operator):  # noqa: F811
    """A period whose previous one has no job says "no jobs before 2026-11-10 to compare with" on each card:
    390 px wide, the card broke the date at its hyphen, "2026-11-" on one line and "10" on the next."""
    from tests.factories import JobFactory, TeamFactory
    from tests.test_accessibility import open_as

    team = TeamFactory(name="genai")
    JobFactory(team=team, start_time=datetime(2026, 11, 10, 9, tzinfo=UTC), gpu_hours=120.0, unused_gpu_hours=96.0,
               mean_gpu_util=20.0, cost="312.00")  # fmt: skip
    open_as(browser, live_server.url, operator)
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/overview/?from=2026-11-10&to=2026-11-16")
        lines = browser.execute_script(
            """return [...document.querySelectorAll('.kpi .change')].map(change => {
                 const walker = document.createTreeWalker(change, NodeFilter.SHOW_TEXT);
                 for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                   const at = node.data.indexOf('2026-11-10');
                   if (at < 0) continue;
                   const range = document.createRange();
                   range.setStart(node, at); range.setEnd(node, at + 10);
                   return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
                 }
                 return change.textContent;
               });"""
        )
    assert lines and lines == [1] * len(lines), lines


def test_a_cluster_chosen_in_the_period_form_keeps_the_preset_period(browser, live_server, operator):  # noqa: F811
    """On "Last 30 days", an operator picks a cluster and presses Apply: the form sent the dates it showed, and
    the page came back as custom dates, no period button marked, and no longer ending at that cluster's newest
    job as its preset would. Dates left as shown are not sent: the preset stays, on the cluster chosen. Dates
    changed are the operator's own period, as before."""
    from urllib.parse import parse_qs, urlsplit

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait

    from tests.factories import ClusterFactory, JobFactory, TeamFactory
    from tests.test_accessibility import open_as

    team = TeamFactory(name="genai")
    alpha, beta = ClusterFactory(name="alpha"), ClusterFactory(name="beta")
    JobFactory(team=team, cluster=alpha, start_time=datetime(2026, 11, 20, 9, tzinfo=UTC))
    JobFactory(team=team, cluster=beta, start_time=datetime(2026, 11, 10, 9, tzinfo=UTC))
    open_as(browser, live_server.url, operator)

    def apply(**dates) -> dict:
        form = browser.find_element(By.CSS_SELECTOR, "form.period")
        Select(form.find_element(By.NAME, "cluster")).select_by_value("beta")
        for name, value in dates.items():  # typed as a person types a date: month, day, year
            field = form.find_element(By.NAME, name)
            field.send_keys(value)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        # The address read once the page it sent for has replaced this one (read at once, CI read the old one).
        # _replaced, not staleness_of: caught mid-navigation the form's node "does not belong to the document",
        # which staleness_of raised (failed so in CI).
        WebDriverWait(browser, 20).until(lambda _: _replaced(form))
        return {key: values[0] for key, values in parse_qs(urlsplit(browser.current_url).query).items()}

    browser.get(f"{live_server.url}/overview/?period=30d")
    assert apply() == {"period": "30d", "cluster": "beta"}
    active = browser.find_element(By.CSS_SELECTOR, ".presets a.active").text
    shown = browser.find_element(By.CSS_SELECTOR, ".period-note").text
    assert active == "Last 30 days" and shown.startswith("2026-10-12 to 2026-11-10 (UTC)"), shown  # beta's 30 days
    browser.get(f"{live_server.url}/overview/?period=30d")
    chosen = apply(**{"from": "11012026"})
    assert (chosen["from"], chosen["cluster"]) == ("2026-11-01", "beta")
    assert browser.find_elements(By.CSS_SELECTOR, ".presets a.active") == []
