"""On a phone a command-line option in a job's finding (`--ntasks-per-gpu=2` in a quoted #SBATCH line, in the
fix's words and code) broke right after its leading dashes: "--" at a line's end, "ntasks-per-gpu=2" on the next,
which reads as two words and is no option anyone types. Its dashes stay with the word; it still breaks where
its own words join ("--ntasks-" / "per-gpu=2") and the page never scrolls sideways."""

from datetime import UTC, datetime

import pytest

from tests.factories import JobFactory
from tests.test_browser import browser, color_scheme, window_width  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import log_in
from tests.test_launch_reading import _four_gpus_loading
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

# Each row a code element (or a paragraph of the finding) is drawn in, as its text: a Range over each character,
# the characters of one row those whose rectangles share its top.
_ROWS = """
const rows = [];
for (const element of arguments[0].querySelectorAll(arguments[1])) {
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  const drawn = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      const range = document.createRange();
      range.setStart(node, i); range.setEnd(node, i + 1);
      const rect = [...range.getClientRects()].find(r => r.width > 0);
      if (rect) { drawn.push([Math.round(rect.top), node.data[i]]); }
      else if (drawn.length) { drawn.push([drawn[drawn.length - 1][0], node.data[i]]); }
    }
  }
  const lines = [];
  let top = null;
  for (const [t, c] of drawn) {
    if (top === null || Math.abs(t - top) > 3) { lines.push(""); top = t; }
    lines[lines.length - 1] += c;
  }
  rows.push(lines);
}
return rows;
"""


def _job_with_tasks_per_gpu(team):
    """A job of 4 GPUs whose loader finding quotes '#SBATCH --gres=gpu:4 --ntasks-per-gpu=2' and tells it
    --ntasks-per-gpu=2 in its fix, stored as triage stores a job's result."""
    from tests.test_launch_reading import case, run, series
    from triage.models import RuleSet
    from triage.services import _store

    script = "#!/bin/bash\n#SBATCH --gres=gpu:4 --ntasks-per-gpu=2\n#SBATCH -c 4\nsrun python train.py\n"
    assert _four_gpus_loading(script).numbers["tasks_per_gpu"] == 2
    frame = series(120, lambda t, g: 30, gpus=4, mem=lambda t, g: 0.6, cpu=lambda t: 25.0)
    evidence, result = run(120, frame, scripts=[case("no_workers_train.py"), ("run.sh", script)], gpu_count=4,
                           cpu_count=32)  # fmt: skip
    # A start of its own, not the factory's next (an hour after the one before: in a long run, after today,
    # and so on no page of the past).
    start = datetime(2026, 11, 2, 9, tzinfo=UTC)
    job = JobFactory(team=team, name="tasks-per-gpu", gpu_count=4, cpu_count=32, node_count=1, start_time=start)
    _store(job, RuleSet.current(), evidence, result)
    return job


def test_on_a_phone_an_options_dashes_stay_with_its_word(browser, live_server, operator, team_a):  # noqa: F811
    import os

    from selenium.webdriver.common.by import By

    job = _job_with_tasks_per_gpu(team_a)
    path = f"/jobs/{job.pk}/"
    log_in(browser, live_server.url, operator, path)
    shots = os.environ.get("SCREENSHOTS")
    finding = f"#finding-{Category.DATA_PREPROCESSING.value}"
    split, broken = 0, []
    for width, height in ((390, 844), (1280, 800)):
        for scheme in ("light", "dark"):
            color_scheme(browser, scheme)
            with window_width(browser, width, mobile=width < 500, height=height):
                browser.get(live_server.url + path)
                section = browser.find_element(By.CSS_SELECTOR, finding)
                for details in section.find_elements(By.TAG_NAME, "details"):
                    browser.execute_script("arguments[0].open = true", details)
                page = browser.execute_script(
                    "const e = document.documentElement; return [e.scrollWidth, e.clientWidth]")  # fmt: skip
                assert page[0] <= page[1], (width, page)
                rows = browser.execute_script(_ROWS, section, "code, pre.code .line, p")
                quoted = [line for lines in rows for line in lines if "ntasks" in line]
                assert any("--ntasks-per-gpu=2" in "".join(lines) for lines in rows), rows
                assert quoted, rows
                for lines in rows:
                    split += len(lines) > 1
                    for before, after in zip(lines, lines[1:], strict=False):
                        # no row ends in a run of dashes whose word the next row begins
                        if (before.rstrip().endswith("-") and before.rstrip().rstrip("-")[-1:] in ("", " ")
                                and after[:1].isalnum()):  # fmt: skip
                            broken.append((width, scheme, before, after))
                if shots:
                    browser.execute_script("arguments[0].scrollIntoView()", section)
                    browser.save_screenshot(f"{shots}/option-words-{width}-{scheme}.png")
    color_scheme(browser, None)
    assert not broken, broken
    assert split, "some code or paragraph of the finding wraps on a phone"
