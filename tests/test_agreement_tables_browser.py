"""The agreement page's tables on a phone: at 390 px its per-category table (three columns a pair) and its
all-raters table scrolled sideways in their boxes, a pair's agreement and ticks off to the right.
Now each category is a card of its figures, each beside its column's name (table.stacks); at 1280 px each
is a table, as before. Screenshots (light and dark) are saved under screenshots/ for a person to look at."""

from __future__ import annotations

import pytest

from tests.test_agreement_prevalence import rare_study  # noqa: F401  (20 jobs, a rare category)
from tests.test_browser import SHOTS, browser, color_scheme  # noqa: F401  (the browser fixture)
from tests.test_stacked_tables_browser import assert_cards, layouts_and_column

OPTIONS = 17  # 15 categories, none, other


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_per_category_table_is_a_card_per_category(browser, live_server, rare_study):  # noqa: F811
    from tests.test_accessibility import open_as

    study, raters = rare_study
    open_as(browser, live_server.url, raters[0])
    url = f"{live_server.url}/studies/{study.pk}/agreement/"
    wide, phone = layouts_and_column(browser, url, "agreement-per-category", "#per-category", "Agreement")
    assert_cards(wide, phone, rows=OPTIONS, columns=4)
    # Host-GPU transfer's 95.0 % overall, 0.0 % positive and 97.4 % negative agreement, in view in its card.
    assert ["Agreement (all; positive / negative) 95.0 % 0.0 % / 97.4 %", True] in phone["cells"], phone["cells"]
    assert all(shown for _text, shown in phone["cells"]), phone["cells"]
    for scheme in ("dark", "light"):  # for a person to look at: the cards and the note under them
        color_scheme(browser, scheme)
        for width, height in ((1280, 800), (390, 844)):
            metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 700}
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            browser.get(url)
            browser.execute_script("document.querySelector('.rare-note').closest('tr').scrollIntoView()")
            browser.save_screenshot(str(SHOTS / f"agreement-per-category-{scheme}-{width}.png"))
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    color_scheme(browser, None)


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_all_raters_table_is_a_card_per_category(browser, live_server, rare_study):  # noqa: F811
    from tests.test_accessibility import open_as

    study, raters = rare_study
    open_as(browser, live_server.url, raters[0])
    url = f"{live_server.url}/studies/{study.pk}/agreement/"
    wide, phone = layouts_and_column(browser, url, "agreement-group", "#group", "Unanimous")
    assert_cards(wide, phone, rows=OPTIONS + 1, columns=4)  # pooled, then each option
    assert phone["cells"][0] == ["Unanimous 90.0 %", True], phone["cells"]  # 18 of 20 jobs: identical sets
    assert all(shown for _text, shown in phone["cells"]), phone["cells"]


@pytest.mark.django_db(transaction=True)
def test_on_a_320_px_phone_the_agreement_cards_hold_their_figures_and_notes(browser, live_server, rare_study):  # noqa: F811
    """At 320 px every card of the per-category and all-raters tables was 9 px wider than its box, which then
    scrolled sideways: a figure's note under it ("(too few positive labels for an interval)") kept a width of
    9em, more than the card's value column, and ran past the card's edge with "100.0 % / 100.0 %" beside it
    cut off. Each card's text now lies inside it, and the boxes do not scroll."""
    from tests.test_accessibility import open_as
    from tests.test_browser import window_width

    study, raters = rare_study
    open_as(browser, live_server.url, raters[0])
    with window_width(browser, 320, mobile=True, height=640):
        browser.get(f"{live_server.url}/studies/{study.pk}/agreement/")
        overflow = browser.execute_script("""
            const tables = document.querySelectorAll('table.stacks#per-category, table.stacks#group'), out = [];
            if (tables.length !== 2) return ['tables', tables.length];
            for (const table of tables) {
              const box = table.closest('.table-scroll');
              if (box.scrollWidth > box.clientWidth) out.push(['box scrolls', box.scrollWidth, box.clientWidth]);
              for (const card of table.tBodies[0].rows) {
                const edge = card.getBoundingClientRect().right;
                for (const e of card.querySelectorAll('td *')) {
                  const past = e.getBoundingClientRect().right - edge;
                  if (past > 0.5) out.push([e.textContent.trim(), Math.round(past)]);
                }
              }
            }
            return out;""")
    assert overflow == [], overflow[:6]
