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


# Each rater's name on a study's page (its Raters and Skipped jobs tables): the name and the lines it is on;
# and whether the page, or the Raters table in its box, scrolls sideways (Skipped jobs, of five columns, may).
RATER_NAMES = """
const lines = cell => { const range = document.createRange(); range.selectNodeContents(cell);
  return new Set([...range.getClientRects()].filter(r => r.width).map(r => Math.round(r.top))).size; };
const names = [...document.querySelectorAll('table')].flatMap(table => {
  const column = [...table.querySelectorAll('thead th')].findIndex(th => th.textContent.trim() === 'Rater');
  return column < 0 ? [] : [...table.querySelectorAll('tbody tr')].map(row => row.cells[column])
    .map(cell => cell.querySelector(':scope > span:not(.cell-label)') || cell)  // on a phone's card, beside its label
    .map(name => [name.textContent.trim(), lines(name)]);
});
const raters = [...document.querySelectorAll('.table-scroll')]
  .filter(box => box.querySelector('caption').textContent === 'Raters');
const scrolls = [document.documentElement, ...raters]
  .filter(box => box.scrollWidth > box.clientWidth + 1).map(box => box.className || box.tagName);
return {names, scrolls};
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [320, 390])
def test_on_a_phone_a_studys_raters_names_stay_whole(browser, live_server, three_rater_study, width):  # noqa: F811
    """The demo's raters are demo-rater-1 and demo-rater-2: on a phone their names broke at a hyphen, "demo-"
    on one line and "rater-1" on the next (and at 320 px the Raters table scrolled sideways in its box)."""
    study = three_rater_study
    open_as(browser, live_server.url, study.created_by)  # its lead
    with window_width(browser, width, mobile=True):
        browser.get(f"{live_server.url}/studies/{study.pk}/")
        seen = browser.execute_script(RATER_NAMES)
    assert sorted(name for name, _ in seen["names"]) == ["demo-rater-1", "demo-rater-1", "demo-rater-2", "researcher"]
    assert [name for name, lines in seen["names"] if lines != 1] == [], seen
    assert seen["scrolls"] == [], seen
    assert len(seen["names"]) == 4, seen


def test_a_jobs_reference_is_whole_when_short_and_breaks_after_its_slash_when_long():
    """The jobs list's job column (money_format.job_ref): cluster/id of up to 16 characters on one line, longer
    ones with a break after the slash and the id as job_id writes it; both escaped."""
    from types import SimpleNamespace

    from triage.templatetags.money_format import job_ref

    def job(cluster: str, external_id) -> SimpleNamespace:
        return SimpleNamespace(cluster=SimpleNamespace(name=cluster), external_id=external_id)

    assert job_ref(job("alpha", "4813845")) == '<span class="job-ref">alpha/4813845</span>'
    assert job_ref(job("alpha", 4813845)) == '<span class="job-ref">alpha/4813845</span>'
    assert job_ref(job("alpha", "4813845123")) == '<span class="job-ref">alpha/4813845123</span>'  # 16
    assert job_ref(job("alpha", "48138451234")) == "alpha/<wbr>48138451234"  # 17
    long_id = "0123456789abcdef0123456789abcdef"
    assert job_ref(job("mlflow", long_id)) == f'mlflow/<wbr><span class="long-id">{long_id}</span>'
    assert job_ref(job("a<b", "1&2")) == '<span class="job-ref">a&lt;b/1&amp;2</span>'
    assert (
        job_ref(job("cluster<script>", "x" * 20))
        == 'cluster&lt;script&gt;/<wbr><span class="long-id">' + "x" * 20 + "</span>"
    )


# Each menu of the jobs filters with its name beside it: the name, and whether name and menu share a line.
MENU_NAMES = """
return [...document.querySelectorAll('.jobs-filter label.filter-menu')].map(label => {
  const name = label.querySelector('span').getBoundingClientRect();
  const control = label.querySelector('select, input').getBoundingClientRect();
  const middle = (name.top + name.bottom) / 2;
  const beside = middle > control.top && middle < control.bottom && name.right <= control.left;
  return [label.querySelector('span').textContent, beside];
});
"""


@pytest.mark.django_db(transaction=True)
def test_at_320_px_each_jobs_filter_menu_has_its_name_beside_it(browser, live_server, operator):  # noqa: F811
    """At 320 px "Utilization figure" sat over its menu, where Cluster, Team, Cause and the rest sit beside theirs:
    its menu narrows to the line instead, as the other menus' would."""
    from tests.factories import JobFactory

    JobFactory()
    open_as(browser, live_server.url, operator)
    with window_width(browser, 320, mobile=True):
        browser.get(f"{live_server.url}/jobs/")
        menus = browser.execute_script(MENU_NAMES)
        scrolls = browser.execute_script("return document.documentElement.scrollWidth > innerWidth")
    assert "Utilization figure" in [name for name, _ in menus], menus
    assert [name for name, beside in menus if not beside] == [], menus
    assert not scrolls
