"""An ingest run's errors with hostile archive member names: each name is shortened to its first 100 characters
and its length (fleet.quoting.named), which has no place to break a line, so the errors table's File column
took its width and at 1280 px the Problem column sat off to the right inside the table's own scroller. Long
file and job cells now wrap anywhere and the message stays in view; on a phone each error is a card of its
fields. Screenshots are saved under screenshots/ for a person to look at."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write_zip
from tests.test_browser import SHOTS, browser  # noqa: F401  (the browser fixture)

LONG = 5000

# Each row of a table: its cells shown (an empty one is hidden on a phone's card) against the window's box, and
# whether the table scrolls in its box.
CELLS = """
const table = document.querySelector(arguments[0]);
const box = table.closest('.table-scroll');
const shown = td => getComputedStyle(td).display !== 'none';
return {
  scrolls: box.scrollWidth > box.clientWidth + 1,
  pageScrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
  rows: [...table.querySelectorAll('tbody tr')].map(tr => [...tr.children].filter(shown).map(td => {
    const r = td.getBoundingClientRect();
    return {text: td.innerText.slice(0, 40), inView: r.width > 0 && r.left >= 0 && r.right <= window.innerWidth};
  })),
};
"""


@pytest.mark.django_db(transaction=True)
def test_an_ingest_runs_errors_keep_their_message_in_view_with_a_5000_character_member_name(
    browser,  # noqa: F811
    live_server,
    operator,
    tmp_path,
    monkeypatch,
):
    from tests.test_accessibility import open_as, violations
    from tests.test_archive_hostile import HEADER, good, ingest_file, rows

    util = {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0"}, "values": [[1793613600, "50"]]}
    members = {
        **good(),
        f"native/kubernetes/{'k' * LONG}.json": "{",
        f"native/prometheus/{'p' * LONG}/gpu_util.json": json.dumps(
            {"status": "success", "data": {"resultType": "matrix", "result": [util]}}
        ),
        f"metrics/{'m' * LONG}.csv": HEADER + rows("m" * LONG, count=2),
        f"logs/{'l' * LONG}/stdout.log": "hello\n",
    }
    run = ingest_file(write_zip(tmp_path / "long.zip", members))
    assert len(run.errors) >= 4 and all("(5," in error["file"] for error in run.errors), run.errors

    monkeypatch.setattr("fleet.views.ERRORS_PER_PAGE", 2)  # more than a page: the errors by file and field too
    open_as(browser, live_server.url, operator)
    SHOTS.mkdir(exist_ok=True)
    for width, height in ((1280, 800), (390, 844)):
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width == 390}
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        try:
            browser.get(f"{live_server.url}/ingest-runs/{run.pk}/")
            layout = browser.execute_script(CELLS, "#error-table")
            browser.save_screenshot(str(SHOTS / f"ingest-run-long-names-{width}.png"))
            browser.execute_script("document.getElementById('error-table').scrollIntoView()")
            browser.save_screenshot(str(SHOTS / f"ingest-run-long-names-{width}-errors.png"))
            kinds = browser.execute_script(CELLS, "#error-kinds")
            problems = violations(browser)  # a phone's cards keep the table's roles for a screen reader
        finally:
            browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        assert not layout["pageScrolls"], (width, layout)
        assert not layout["scrolls"] and not kinds["scrolls"], (width, layout, kinds)
        for row in layout["rows"]:
            assert row[-2]["inView"], (width, row)  # the Problem: what the reader came for
            assert row[-2]["text"].startswith("Problem" if width == 390 else "job '"), row  # a phone's card
            assert row[-1]["text"].startswith("Consequence" if width == 390 else ("job ", "nothing")), row
            assert all(cell["inView"] for cell in row), (width, row)
        assert all(cell["inView"] for row in kinds["rows"] for cell in row), (width, kinds)
        assert problems == [], (width, problems)
