"""The list pages' filter menus in a real headless Chromium: a sighted person can read what each menu
filters, on a laptop and on a phone.

Screenshots are saved under screenshots/ for a person to look at.
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from tests.test_browser import browser, window_width  # noqa: F401  (the browser fixture)

SHOTS = REPO / "screenshots"

# Each menu of a filter bar (and the jobs list's User and State boxes) with the words of its <label> outside
# the menu (the first text that is not an option), and where those words and the menu are on the screen. The
# order's menu, whose options say what it chooses ("Newest first"), needs no caption: left out.
MENUS = """
const width = document.documentElement.clientWidth;
return [...document.querySelectorAll('form.filters :is(select, input[name=user], input[name=state])')]
  .filter(menu => menu.name !== 'sort')
  .map(menu => {
    const label = menu.labels[0];
    let words = null;
    if (label) {
      const walk = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
      while (walk.nextNode()) {
        if (!menu.contains(walk.currentNode) && walk.currentNode.data.trim()) { words = walk.currentNode; break; }
      }
    }
    const box = menu.getBoundingClientRect();
    if (!words) return {name: menu.name, caption: null};
    const range = document.createRange();
    range.selectNodeContents(words);
    const text = range.getBoundingClientRect(), holder = words.parentElement.getBoundingClientRect();
    return {
      name: menu.name,
      caption: words.data.trim(),
      // shown: not a screen-reader-only text (1 px, clipped)
      shown: holder.width > 1 && holder.height > 1 && words.parentElement.checkVisibility(),
      // beside its menu, on the same line and before it, and neither past the window's right edge
      beside: text.bottom > box.top && box.bottom > text.top && text.right <= box.left + 1,
      inWindow: text.right <= width + 1 && box.right <= width + 1,
    };
  });
"""


@pytest.mark.django_db(transaction=True)
def test_each_filter_menu_shows_what_it_filters(browser, live_server, world):  # noqa: F811
    """The jobs list's menus read "Any answer", "Any status"; the ingest runs' "Any source", "Anyone";
    the audit log's and the personal tokens' "Anyone": their names were for screen readers only, so a
    sighted person had to guess what a menu filtered, and once a value was chosen ("Command line (1)",
    "Wrong: not the cause") the menu said nothing of what it was. Each menu now has its name in words
    beside it, the name a screen reader says, on a laptop and on a phone, and the bar still fits a
    phone's window. On a phone the jobs list's "Utilization from any source" menu had no name on screen, and
    its User and State boxes only their placeholders, gone once typed in: each has its name beside it too,
    words of the name a screen reader says (which may say more: "User (whole name)")."""
    from selenium.webdriver.common.by import By

    from tests.test_accessibility import narrow_window_problems, open_as, violations

    operator = world["users"]["operator"]
    open_as(browser, live_server.url, operator)
    SHOTS.mkdir(exist_ok=True)
    expected = {
        "/jobs/": {"cluster", "team", "category", "answer", "status", "util_source", "user", "state", "queue"}
        | {"gpu_model"},
        "/ingest-runs/": {"status", "source", "by", "connector"},
        "/audit/": {"action", "user"},
        "/tokens/": {"owner"},
    }
    problems = []
    for width in (1280, 390):
        with window_width(browser, width, mobile=width == 390):
            for path, names in expected.items():
                browser.get(f"{live_server.url}{path}")
                menus = browser.execute_script(MENUS)
                assert {menu["name"] for menu in menus} == names, (path, menus)
                for menu in menus:
                    where = f"{path} at {width} px, the {menu['name']} menu"
                    if not menu["caption"]:
                        problems.append(f"{where} has no words beside it")
                        continue
                    if not (menu["shown"] and menu["beside"] and menu["inWindow"]):
                        problems.append(f"{where}: its caption {menu}")
                    element = browser.find_element(By.CSS_SELECTOR, f"form.filters [name={menu['name']}]")
                    if menu["caption"].lower() not in element.accessible_name.lower():
                        problems.append(f"{where} is '{element.accessible_name}' to a screen reader")
                if path == "/jobs/":
                    browser.save_screenshot(str(SHOTS / f"jobs-filter-{width}.png"))
                    problems += [f"{path} at {width} px: {line}" for line in violations(browser)]
                scroll = browser.execute_script("return document.documentElement.scrollWidth")
                if scroll > width:
                    problems.append(f"{path} at {width} px is {scroll} px wide")
    browser.get(f"{live_server.url}/jobs/")
    problems += narrow_window_problems(browser)
    assert problems == []
