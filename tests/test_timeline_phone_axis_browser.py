"""The job page's timeline on a phone, in a real headless Chromium: its time labels under the chart are read
whole, level, inside the chart and clear of the axis's title. At 320 px four times (a date under the
first, 70 px wide) still tilted, the date against "Time (UTC)"; at 390 px Plotly tilted labels seconds apart
(an 8-GPU job's first 4 minutes: "10:07:00" / "2026-11-02" slanted) to fit more ticks than the narrow plot
has room for, and the tilted date ran into "Time (UTC)" under it. Jobs of minutes to days, and one of the
demo's 8-GPU jobs whole; 1280 px is left as Plotly lays it out.
At 320 and 390 px the chart also kept some 47 px empty under "Time (UTC)" (its bottom margin, fixed for labels
that tilted): there the margin fits the labels as they lie, the title a few pixels above the chart's foot."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from tests.test_browser import SHOTS, STALE, browser  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import log_in

# Each x tick label shown: its box against the chart's own svg (the first, which Plotly sizes to the chart)
# and the axis's title under it, and whether Plotly tilted it.
TICKS = """
const box = document.querySelector('#timeline svg.main-svg').getBoundingClientRect();
const title = document.querySelector('#timeline .xtitle').getBoundingClientRect();
return [...document.querySelectorAll('#timeline .xtick text')].map(t => [t, t.getBoundingClientRect()])
  .filter(([t, r]) => t.textContent.trim() && r.width > 0).map(([t, r]) => ({
    text: t.textContent, left: r.left - box.left, right: box.right - r.right,
    top: r.top - box.top, bottom: box.bottom - r.bottom, aboveTitle: title.top - r.bottom,
    tilted: (t.getAttribute('transform') || '').includes('rotate')}));
"""
# The empty space between the axis's title and the foot of the chart's drawing.
UNDER_TITLE = """
const box = document.querySelector('#timeline svg.main-svg').getBoundingClientRect();
return box.bottom - document.querySelector('#timeline .xtitle').getBoundingClientRect().bottom;
"""
UNDER_TITLE_PX = 2, 12  # on a phone: the title whole, no band of empty space under it


def _job(hours: float, gpus: int = 8):
    import pandas as pd
    from django.core.files.base import ContentFile

    from fleet.series import to_parquet_bytes
    from tests.factories import JobFactory

    begin = datetime(2026, 11, 2, 10, 7, tzinfo=UTC)
    end = begin + timedelta(hours=hours)
    stamps = pd.date_range(begin, end, periods=120).as_unit("ms")

    def device(gpu: int):
        return pd.DataFrame({"timestamp": stamps, "host": f"n{gpu // 4}",
                             "gpu": pd.array([gpu % 4] * len(stamps), dtype="Int16"),
                             "gpu_util": pd.array([20.0 + 8 * gpu] * len(stamps), dtype="float32")})  # fmt: skip

    frame = pd.concat(device(gpu) for gpu in range(gpus))
    job = JobFactory(start_time=begin, end_time=end, gpu_count=gpus)
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(frame)))
    return job


@pytest.mark.django_db(transaction=True)
def test_the_timelines_time_labels_lie_inside_the_chart_on_a_phone(browser, live_server, operator, demo_archive):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet import ingest
    from fleet.models import Job
    from tests.test_browser import color_scheme, window_width

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    demo = {f"demo {job.external_id}": job for job in Job.objects.filter(gpu_count__gte=8).order_by("start_time")[:1]}
    outside = []
    jobs = {
        **demo,
        "40 minutes": _job(40 / 60),
        "7 hours": _job(7),
        "3 days": _job(72),
        "4 minutes": _job(4 / 60),
        "90 seconds": _job(1.5 / 60),
        "10 days": _job(240),
        "30 hours": _job(30),
    }
    first = next(iter(jobs.values()))
    log_in(browser, live_server.url, operator, f"/jobs/{first.pk}/")
    wait = WebDriverWait(browser, 30, ignored_exceptions=STALE)
    shots = os.environ.get("SCREENSHOTS")
    for width, height in ((320, 640), (390, 844), (1280, 800)):
        with window_width(browser, width, mobile=width < 500, height=height):
            for span, job in jobs.items():
                browser.get(f"{live_server.url}/jobs/{job.pk}/")
                wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
                if shots:
                    for scheme in ("light", "dark"):
                        color_scheme(browser, scheme)
                        browser.execute_script("document.getElementById('timeline').scrollIntoView({block: 'end'})")
                        SHOTS.mkdir(exist_ok=True)
                        name = f"{shots}timeline-axis-{span.replace(' ', '')}-{width}-{scheme}.png"
                        browser.save_screenshot(str(SHOTS / name))
                    color_scheme(browser, None)
                labels = browser.execute_script(TICKS)
                assert len(labels) >= 2, (width, span, labels)  # still a time every so often
                under = browser.execute_script(UNDER_TITLE)
                if width < 500 and not UNDER_TITLE_PX[0] <= under <= UNDER_TITLE_PX[1]:
                    outside.append((width, span, {"text": "Time (UTC)", "tilted": False, "under": under}))
                for label in labels:
                    inside = min(label["left"], label["right"], label["top"], label["bottom"]) >= 0
                    clear = label["aboveTitle"] >= 0  # not into the axis's title under it
                    if not (inside and clear) or (width < 500 and label["tilted"]):
                        outside.append((width, span, label))
    assert not outside, [(width, span, label["text"], label["tilted"], label) for width, span, label in outside]

    # A window narrowed to a phone's width with the chart drawn wide (or a phone turned upright) has it too.
    browser.get(f"{live_server.url}/jobs/{jobs['4 minutes'].pk}/")
    wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
    with window_width(browser, 390, mobile=True, height=844):

        def level_and_inside(driver):
            labels = driver.execute_script(TICKS)
            fits = [min(x["left"], x["right"], x["top"], x["bottom"], x["aboveTitle"]) >= 0 for x in labels]
            return len(labels) >= 2 and all(fits) and not any(x["tilted"] for x in labels)

        wait.until(level_and_inside)
