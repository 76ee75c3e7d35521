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
