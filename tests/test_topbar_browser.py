"""The top bar on a laptop's or a small desktop's window (901 to 1,200 CSS pixels wide), in a real
headless Chromium: one row, nothing past the window's edge, every link of the menu in reach.

Screenshots are saved under screenshots/ for a person to look at.
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from tests.test_browser import browser, window_width  # noqa: F401  (the browser fixture)
from tests.test_phone_browser import TOP_BAR

SHOTS = REPO / "screenshots"

# What of the top bar sticks out past the window's right edge, and whether the page scrolls sideways.
OVERFLOW = """
const bar = document.querySelector('.topbar'), width = document.documentElement.clientWidth;
return {
  past: [...bar.querySelectorAll('*')]
    .filter(el => el.checkVisibility() && el.getBoundingClientRect().right > width + 1)
    .map(el => el.outerHTML.slice(0, 80)),
  pageScrolls: document.documentElement.scrollWidth > width + 1,
  barScrolls: bar.scrollWidth > bar.clientWidth + 1,
};
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1000, 1200])
def test_an_operators_top_bar_is_one_row_between_a_tablet_and_a_wide_window(browser, live_server, operator, width):  # noqa: F811
    """901 to about 1,200 px wide, an admin operator's 13 links and their name wrapped the bar to two rows
    (67 px, the second row "Connectors Rules Settings Admin" under the first). There the links fold under
    "Menu" as on a tablet, which opens with all 13 in the window; the bar is one row and nothing in it
    runs past the window's edge."""
    from selenium.webdriver.common.by import By

    from tests.test_accessibility import open_as

    operator.is_staff = True
    operator.save()
    SHOTS.mkdir(exist_ok=True)
    open_as(browser, live_server.url, operator)
    with window_width(browser, width):
        browser.get(f"{live_server.url}/jobs/")
        bar = browser.execute_script(TOP_BAR)
        overflow = browser.execute_script(OVERFLOW)
        browser.save_screenshot(str(SHOTS / f"topbar-operator-{width}.png"))
        assert bar["rows"] == 1 and bar["height"] <= 50, bar
        assert overflow == {"past": [], "pageScrolls": False, "barScrolls": False}, overflow
        if bar["summary"] is not None:  # folded: "Menu" opens every link, each in the window
            assert bar["summary"] == "Menu · Jobs", bar
            browser.find_element(By.CSS_SELECTOR, ".topbar .menu > summary").click()
            bar = browser.execute_script(TOP_BAR)
            browser.save_screenshot(str(SHOTS / f"topbar-operator-{width}-open.png"))
        assert len(bar["links"]) == 13 and bar["inWindow"] and bar["currentMarked"] == ["underline"], bar
        assert browser.execute_script(OVERFLOW)["past"] == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1201, 1280, 1440])
def test_wider_than_1200_px_an_operators_links_and_name_show_in_one_row(browser, live_server, operator, width):  # noqa: F811
    """Past 1,200 px the operator's 13 links, their (long) name and Log out show in the bar, in one row."""
    from tests.test_accessibility import open_as

    operator.is_staff = True
    operator.save()
    open_as(browser, live_server.url, operator)
    with window_width(browser, width):
        browser.get(f"{live_server.url}/jobs/")
        bar = browser.execute_script(TOP_BAR)
        overflow = browser.execute_script(OVERFLOW)
        who = browser.execute_script("return document.querySelector('.topbar .who').checkVisibility()")
        # A name cut short with '…' is there in full on hover.
        hover = browser.execute_script("return document.querySelector('.topbar .who').title")
        browser.save_screenshot(str(SHOTS / f"topbar-operator-{width}.png"))
    assert bar["summary"] is None and len(bar["links"]) == 13 and bar["rows"] == 1, bar
    assert hover.startswith(f"{operator.get_username()}: ")
    assert who and overflow == {"past": [], "pageScrolls": False, "barScrolls": False}, overflow


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [901, 1000])
def test_a_members_few_links_stay_in_the_bar_from_901_px(browser, live_server, member_a, width):  # noqa: F811
    """A team member's five links fit beside their name at 901 px: their bar does not fold as an
    operator's does."""
    from tests.test_accessibility import open_as

    open_as(browser, live_server.url, member_a)
    with window_width(browser, width):
        browser.get(f"{live_server.url}/jobs/")
        bar = browser.execute_script(TOP_BAR)
        overflow = browser.execute_script(OVERFLOW)
    assert bar["summary"] is None and bar["links"] == ["Overview", "Teams", "Causes", "Jobs", "Digests"], bar
    assert bar["rows"] == 1 and overflow["past"] == [] and not overflow["pageScrolls"], (bar, overflow)


@pytest.mark.django_db(transaction=True)
def test_without_details_content_an_operators_menu_folds_up_to_1200_px_too(browser, live_server, operator):  # noqa: F811
    """menu.js holds the menu open for a browser without `::details-content` (Firefox ESR 140): from
    1,201 px for a menu of eight links or more, as app.css folds it, not from 901 px, where the bar
    wrapped to two rows."""
    from tests.test_accessibility import open_as

    script = """
    const supports = CSS.supports.bind(CSS);
    CSS.supports = (...args) => (String(args[0]).includes('details-content') ? false : supports(...args));
    """
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})
    open_as(browser, live_server.url, operator)
    with window_width(browser, 1000):
        browser.get(f"{live_server.url}/jobs/")
        folded = browser.execute_script(TOP_BAR)
    with window_width(browser, 1280):
        browser.get(f"{live_server.url}/jobs/")
        wide = browser.execute_script(TOP_BAR)
    assert not folded["open"] and folded["summary"] == "Menu · Jobs" and folded["rows"] == 1, folded
    assert wide["open"] and wide["summary"] is None and len(wide["links"]) == 12 and wide["rows"] == 1, wide
