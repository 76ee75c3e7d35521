"""A list's bad filter value comes back as typed, marked invalid and tied to its message (as a bound Django
form shows it), so the user sees what they typed and can correct it."""

import re

import pytest
from django.urls import reverse

from tests.test_browser import browser, window_width  # noqa: F401  (the browser fixture)

pytestmark = pytest.mark.django_db


def _input(page: str, name: str) -> str:
    return re.search(rf'<input[^>]*name="{name}"[^>]*>', page).group(0)


def _described_message(page: str, tag: str) -> str:
    """The text of the element that a field's aria-describedby names."""
    described = re.search(r'aria-describedby="([^"]+)"', tag).group(1)
    return re.search(rf'id="{described}"[^>]*>(.*?)</p>', page).group(1)


def test_a_bad_number_or_date_on_the_jobs_list_comes_back_as_typed_and_marked_invalid(client, operator):
    """`<input type="number" value="abc">` and `<input type="date" value="2026-02-30">` showed empty boxes in
    a browser (it drops a value its type cannot hold) under "Mean utilization at least: Enter a number.": the
    user could not see or correct what they had typed."""
    client.force_login(operator)
    typed = {"util_min": "abc<b>", "start_from": "2026-02-30", "util_max": "80"}
    page = client.get(reverse("dashboard:job-list"), typed).content.decode()
    util_min, start_from, util_max = (_input(page, name) for name in typed)
    assert 'type="text"' in util_min and 'value="abc&lt;b&gt;"' in util_min, util_min
    assert 'aria-invalid="true"' in util_min
    assert _described_message(page, util_min) == "Mean utilization at least: Enter a number."
    assert 'type="text"' in start_from and 'value="2026-02-30"' in start_from, start_from
    assert 'aria-invalid="true"' in start_from
    assert _described_message(page, start_from) == "Started from: Enter a valid date."
    # A good value keeps its box and is not marked.
    assert 'type="number"' in util_max and 'value="80"' in util_max and "aria-invalid" not in util_max


def test_a_bad_menu_choice_names_a_message_that_is_on_the_page(client, operator):
    """Django marks a menu with a bad choice aria-describedby="id_sort_error": no element had that id, so a
    screen reader read nothing with it; the jobs list and the audit log's messages carry it."""
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-list"), {"sort": "best"}).content.decode()
    menu = re.search(r'<select[^>]*name="sort"[^>]*>', page).group(0)
    assert 'aria-invalid="true"' in menu
    assert _described_message(page, menu).startswith("Order: Select a valid choice.")
    page = client.get(reverse("fleet:audit-log"), {"action": "nope"}).content.decode()
    menu = re.search(r'<select[^>]*name="action"[^>]*>', page).group(0)
    assert 'aria-invalid="true"' in menu
    assert _described_message(page, menu).startswith("Action: ")


def test_in_a_browser_the_bad_values_stand_in_their_boxes(browser, live_server, operator):  # noqa: F811
    """What the user sees: the boxes hold "abc" and 2026-02-30 (a number or date box showed them empty)."""
    import os

    from tests.test_dashboard_browser import log_in

    log_in(browser, live_server.url, operator, "/jobs/?util_min=abc&start_from=2026-02-30")
    for width, height in ((1280, 800), (390, 844)):
        with window_width(browser, width, mobile=width < 500, height=height):
            browser.get(f"{live_server.url}/jobs/?util_min=abc&start_from=2026-02-30")
            shown = browser.execute_script(
                "return ['util_min', 'start_from'].map(n => document.querySelector(`[name=${n}]`).value)"
            )
            assert shown == ["abc", "2026-02-30"], (width, shown)
            if shots := os.environ.get("SCREENSHOTS"):
                browser.save_screenshot(f"{shots}/filter-errors-{width}.png")


# Each filter box's border (its colour's worst contrast against the colour around the box and against its own
# fill, and its width) and whether a mark is drawn in it (a background image), as shown.
_BOXES = """
return [...document.querySelectorAll('form.filters :is(input, select):not([type=hidden])')].map(box => {
  const style = getComputedStyle(box);
  const around = behind(box.parentElement), fill = over(rgba(style.backgroundColor), around);
  const line = over(rgba(style.borderLeftColor), fill);
  return {name: box.name, invalid: box.getAttribute('aria-invalid') === 'true', colour: style.borderLeftColor,
          contrast: Math.min(ratio(line, around), ratio(line, fill)), width: parseFloat(style.borderLeftWidth),
          mark: style.backgroundImage !== 'none', fits: box.scrollWidth <= box.clientWidth};
});
"""


def test_a_bad_filter_box_is_marked_to_the_eye_in_both_schemes(browser, live_server, operator):  # noqa: F811
    """A box whose value was refused carried aria-invalid for a screen reader, but looked as every other box:
    the user read "Mean utilization at least: Enter a number." under the form and had to find the box
    (shown as "Util") by themselves. It is drawn with a thicker border in the error colour (3:1 against the
    page and its own fill, light and dark) and a mark inside it, so not by colour alone; a good box is
    drawn as before."""
    import os

    from tests.test_browser import color_scheme
    from tests.test_dashboard_browser import log_in
    from tests.test_non_text_contrast_browser import CONTRAST

    pages = {"/jobs/?util_min=abc&start_from=2026-02-30&util_max=80&sort=best":
             {"util_min", "start_from", "sort"}, "/audit/?action=nope": {"action"}}  # fmt: skip
    log_in(browser, live_server.url, operator, "/jobs/")
    for path, bad in pages.items():
        for scheme in ("light", "dark"):
            color_scheme(browser, scheme)
            browser.get(live_server.url + path)
            boxes = browser.execute_script(CONTRAST + _BOXES)
            assert {b["name"] for b in boxes if b["invalid"]} == bad, boxes
            good = [b for b in boxes if not b["invalid"]]
            for box in boxes:
                if box["invalid"]:
                    assert box["contrast"] >= 3, (path, scheme, box)
                    assert box["width"] >= 2 * max(g["width"] for g in good), (path, scheme, box)  # not colour alone
                    assert box["colour"] not in {g["colour"] for g in good}, (path, scheme, box)
                    assert box["mark"] and box["fits"], (path, scheme, box)
                else:
                    assert box["width"] == 1 and not box["mark"], (path, scheme, box)
            if shots := os.environ.get("SCREENSHOTS"):
                browser.save_screenshot(f"{shots}/filter-invalid-{path.split('/')[1]}-{scheme}.png")
    color_scheme(browser, None)
