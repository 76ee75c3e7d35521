"""Small faults of layout seen in headless Chromium, each checked at the widths it showed at: a phone's
320 and 390 px and a desktop's 1280 px. Screenshots of these pages, light and dark, were looked at too."""

from __future__ import annotations

import pytest

from fleet import ingest
from fleet.models import Job
from tests.test_accessibility import open_as
from tests.test_browser import STALE, browser, window_width  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import emulate_width
from triage.models import Finding

# Each weekly chart's date labels that come within 2 px of one of its y-axes' labels (either side's),
# with both boxes: [chart, date, date's box, y label, its box]; a box is [left, top, right, bottom].
DATES_ON_Y_LABELS = """
const box = t => { const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
const clear = (a, b) => Math.max(a[0] - b[2], b[0] - a[2], a[1] - b[3], b[1] - a[3]) >= 2;
return [...document.querySelectorAll('[data-figure]')].flatMap(chart => {
  const dates = [...chart.querySelectorAll('.xtick text')].filter(t => /^\\d{4}-\\d{2}-\\d{2}$/.test(t.textContent));
  const names = [...chart.querySelectorAll('.ytick text, .y2tick text')];
  return dates.flatMap(date => names.filter(name => !clear(box(date), box(name)))
    .map(name => [chart.dataset.figure, date.textContent, box(date), name.textContent, box(name)]));
});
"""


@pytest.mark.django_db(transaction=True)
def test_the_weekly_charts_dates_keep_clear_of_the_y_axes_labels(browser, live_server, operator, demo_archive):  # noqa: F811
    """In a narrow plot a week's date sat under the y-axis's "0", their boxes overlapping: at 1280 px the
    overview's trend card labels every other week of five from the first, whose date began under the
    left axis's "0"; at 320 px a cause's last week's date ran under its Jobs axis's "0" on the right."""
    from selenium.webdriver.support.wait import WebDriverWait

    ingest.execute_run(ingest.create_run(demo_archive).pk)  # triage runs in-process on the signal
    category = Finding.objects.values_list("category", flat=True).first()
    team = Job.objects.values_list("team__slug", flat=True).first()
    open_as(browser, live_server.url, operator)
    wait = WebDriverWait(browser, 20, ignored_exceptions=STALE)
    drawn_all = "return [...document.querySelectorAll('[data-figure]')].every(c => c.querySelector('.main-svg'))"
    wrong = []
    with window_width(browser, 1280):
        for width in (320, 390, 1280):
            emulate_width(browser, width)
            for period in ("?from=2026-10-19&to=2026-11-16", "?from=2026-10-19&to=2026-11-23"):  # 5 and 6 weeks
                for path in ("/overview/", f"/teams/{team}/", f"/categories/{category}/"):
                    browser.get(f"{live_server.url}{path}{period}")
                    wait.until(lambda b: b.execute_script(drawn_all))
                    touching = browser.execute_script(DATES_ON_Y_LABELS)
                    wrong += [(width, path, period, *labels) for labels in touching]
    assert wrong == [], "\n".join(map(str, wrong))


# Each card of a page's grid of cards: its heading, and the room between its content's foot and its own
# (less its padding): a card as high as its content has none.
EMPTY_FOOT_OF_CARDS = """
return [...document.querySelectorAll(arguments[0])].map(card => {
  const last = [...card.children].filter(child => child.checkVisibility()).pop();
  const foot = card.getBoundingClientRect().bottom - parseFloat(getComputedStyle(card).paddingBottom)
    - parseFloat(getComputedStyle(card).borderBottomWidth);
  const end = last.getBoundingClientRect().bottom + parseFloat(getComputedStyle(last).marginBottom || 0);
  return [card.querySelector('h2, summary').textContent.trim(), Math.round(foot - end)];
});
"""


@pytest.mark.django_db(transaction=True)
def test_at_1280_px_a_causes_cards_are_as_high_as_their_content(browser, live_server, operator, demo_archive):  # noqa: F811
    """At 1280 px a cause's guide (what it is and how to fix it) and its Detections per week stand side by
    side; the detections card stretched to the guide's height, a chart over a tall empty card. Folded, the
    guide is the shorter, and kept its own height too."""
    from selenium.webdriver.common.by import By

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    category = Finding.objects.values_list("category", flat=True).first()
    open_as(browser, live_server.url, operator)
    with window_width(browser, 1280):
        browser.get(f"{live_server.url}/categories/{category}/?from=2026-10-19&to=2026-11-23")
        opened = browser.execute_script(EMPTY_FOOT_OF_CARDS, ".cause-layout > .card")
        browser.find_element(By.CSS_SELECTOR, "#cause-guide > summary").click()
        folded = browser.execute_script(EMPTY_FOOT_OF_CARDS, ".cause-layout > .card")
    assert len(opened) >= 3, opened  # the guide, the jobs, the detections (and what owners said)
    for card, room in opened + folded:
        assert abs(room) <= 2, (card, room, opened, folded)

