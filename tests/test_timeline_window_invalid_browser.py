"""The job page's timeline window form (From / to above the chart), in a real headless Chromium: a time it
refuses marks its boxes to the eye as the filter forms mark theirs, not to a screen reader alone."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from tests.test_browser import STALE, browser  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import console_errors, log_in
from tests.test_filter_errors_shown_back import _BOXES

# Each box of the timeline window form as shown: its border's colour, worst contrast and width, and
# whether a mark is drawn in it (the same measure as the filter forms').
TIMELINE_BOXES = _BOXES.replace("form.filters", "#timeline-window")


def _job_with_a_series():
    import pandas as pd
    from django.core.files.base import ContentFile

    from fleet.series import to_parquet_bytes
    from tests.factories import JobFactory

    begin = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    stamps = pd.date_range(begin, begin + timedelta(hours=1), freq="1min").as_unit("ms")
    frame = pd.DataFrame({"timestamp": stamps, "host": "n1", "gpu": pd.array([0] * len(stamps), dtype="Int16"),
                          "gpu_util": pd.array([50.0] * len(stamps), dtype="float32")})  # fmt: skip
    job = JobFactory(start_time=begin, end_time=begin + timedelta(hours=1), gpu_count=1)
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(frame)))
    return job


@pytest.mark.django_db(transaction=True)
def test_a_refused_timeline_window_marks_its_boxes_to_the_eye_and_the_mark_goes_when_corrected(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """A time the timeline's form could not read ('2026-11-02 7 o'clock') said so under the form and set
    aria-invalid on From and to, for a screen reader; to the eye the boxes looked as before. They are
    drawn as a refused filter box is (a47572c): a 2 px border in the error colour, 3:1 against the page
    and the box's fill, and a '!' in it, light and dark; a good time takes the mark away."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    from tests.test_browser import color_scheme, window_width
    from tests.test_non_text_contrast_browser import CONTRAST

    job = _job_with_a_series()
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    shots = os.environ.get("SCREENSHOTS")
    retype = [Keys.END, *[Keys.BACKSPACE] * 30]
    for width, height in ((1280, 800), (390, 844)):
        with window_width(browser, width, mobile=width < 500, height=height):
            browser.get(f"{live_server.url}/jobs/{job.pk}/")  # the chart drawn at this width
            wait.until(lambda b: b.find_element(By.ID, "timeline").get_attribute("data-ready") == "1")
            start = browser.find_element(By.CSS_SELECTOR, "#timeline-window [name=start]")
            for scheme in ("light", "dark"):
                color_scheme(browser, scheme)
                boxes = browser.execute_script(CONTRAST + TIMELINE_BOXES)
                assert [(b["name"], b["invalid"], b["width"], b["mark"]) for b in boxes] == [
                    ("start", False, 1, False), ("end", False, 1, False)]  # fmt: skip
                good_colour = boxes[0]["colour"]

                start.send_keys(*retype, "2026-11-02 7 o'clock", Keys.ENTER)
                wait.until(lambda b: b.find_element(By.ID, "timeline-window-error").is_displayed())
                boxes = browser.execute_script(CONTRAST + TIMELINE_BOXES)
                for box in boxes:
                    assert box["invalid"], (scheme, width, box)
                    assert box["width"] >= 2 and box["colour"] != good_colour, (scheme, width, box)
                    assert box["contrast"] >= 3, (scheme, width, box)
                    assert box["mark"] and box["fits"], (scheme, width, box)  # not by colour alone
                if shots:
                    browser.execute_script(
                        "document.getElementById('timeline-window').closest('section').scrollIntoView()"
                    )
                    browser.save_screenshot(f"{shots}/timeline-invalid-{width}-{scheme}.png")

                start.send_keys(*retype, "2026-11-02 10:10:00", Keys.ENTER)
                wait.until(lambda b: not b.find_element(By.ID, "timeline-window-error").is_displayed())
                boxes = browser.execute_script(CONTRAST + TIMELINE_BOXES)
                assert [(b["name"], b["invalid"], b["width"], b["mark"]) for b in boxes] == [
                    ("start", False, 1, False), ("end", False, 1, False)]  # fmt: skip
                assert {b["colour"] for b in boxes} == {good_colour}
    color_scheme(browser, None)
    assert console_errors(browser) == []
