"""Editing a machine token's permissions in a real headless Chromium: from the keyboard alone (Tab to
the token's Edit, Space on a box, Enter on Save, the focus then on what became of it), and as laid out
at 1280x800 and on a 390x844 phone, where the tokens table is a card per token with its Edit and Revoke
in view; axe finds nothing on either page. Screenshots are saved under screenshots/ to look at."""

from __future__ import annotations

import pytest

from fleet.models import AuditEvent, MachineToken
from tests.test_browser import SHOTS, browser  # noqa: F401  (the browser fixture)
from tests.test_keyboard_browser import focused, keyboard_login, press, wait_until

# Whether each of the page's links and buttons named by `arguments[0]` (a CSS selector) lies wholly in
# the window, and whether the page scrolls sideways.
IN_VIEW = """
const within = el => { const r = el.getBoundingClientRect();
  return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth; };
return {
  controls: [...document.querySelectorAll(arguments[0])].map(el => [el.textContent.trim(), within(el)]),
  pageScrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
};
"""


def at_size(driver, width: int, height: int):
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 700},
    )


@pytest.mark.django_db(transaction=True)
def test_from_the_keyboard_an_operator_lets_a_token_read_jobs(browser, live_server, operator):  # noqa: F811
    from selenium.webdriver.common.keys import Keys

    token, _ = MachineToken.objects.create_key(name="nightly export", created_by=operator)
    keyboard_login(browser, live_server.url, operator, "/tokens/")
    for _ in range(200):
        press(browser, Keys.TAB)
        if focused(browser)["text"].startswith("Edit"):
            break
    edit = focused(browser)
    assert edit["text"] == f"Edit what the token nightly export ({token.prefix}…) may do"
    assert edit["marked"] and edit["in_view"]
    press(browser, Keys.ENTER)
    wait_until(browser, lambda b: b.current_url.endswith(f"/tokens/{token.prefix}/edit/"))

    def focused_name():
        return browser.execute_script("return document.activeElement.name || ''")

    for _ in range(60):
        press(browser, Keys.TAB)
        if focused_name() == "reads_jobs":
            break
    assert focused_name() == "reads_jobs" and focused(browser)["marked"]
    press(browser, Keys.SPACE)
    for _ in range(10):
        press(browser, Keys.TAB)
        if focused(browser)["text"] == "Save":
            break
    assert focused(browser)["tag"] == "button"
    press(browser, Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["role"] == "status")
    said = focused(browser)
    assert said["text"] == (
        f"Token “nightly export” ({token.prefix}…) now may read jobs. "
        "Its key is unchanged: the machine that uses it needs no new secret."
    )
    assert said["in_view"]
    token.refresh_from_db()
    assert token.reads_jobs and token.pushes_archives
    assert AuditEvent.objects.get(action="token.change").details["changed"] == {"reads_jobs": [False, True]}


@pytest.mark.django_db(transaction=True)
def test_the_edit_page_and_the_tokens_cards_at_1280_and_on_a_phone(browser, live_server, operator):  # noqa: F811
    from tests.test_accessibility import narrow_window_problems, open_as, violations

    token, _ = MachineToken.objects.create_key(name="nightly export", created_by=operator)
    MachineToken.objects.create_key(name="prometheus", reads_metrics=True, pushes_archives=False)
    gone, _ = MachineToken.objects.create_key(name="old exporter")
    MachineToken.objects.filter(pk=gone.pk).update(revoked=True)
    open_as(browser, live_server.url, operator)
    SHOTS.mkdir(exist_ok=True)
    failures = []
    try:
        for width, height in ((1280, 800), (390, 844)):
            at_size(browser, width, height)
            browser.get(f"{live_server.url}/tokens/")
            listing = browser.execute_script(
                IN_VIEW, "#machine-token-table .token-actions a, #machine-token-table button"
            )
            browser.execute_script("document.querySelector('#machine-token-table').scrollIntoView()")
            browser.save_screenshot(str(SHOTS / f"token-list-edit-{width}.png"))
            # Two usable tokens, each with its Edit and Revoke in view; the revoked one has neither.
            assert sorted(words for words, _ in listing["controls"]) == ["Edit", "Edit", "Revoke", "Revoke"], listing
            assert all(inside for _, inside in listing["controls"]) and not listing["pageScrolls"], (width, listing)

            browser.get(f"{live_server.url}/tokens/{token.prefix}/edit/")
            page = browser.execute_script(IN_VIEW, "main button, main form a, main input[type=checkbox]")
            browser.save_screenshot(str(SHOTS / f"token-edit-{width}.png"))
            ticked = browser.execute_script(
                "return [...document.querySelectorAll('main input[type=checkbox]')].map(box => [box.name, box.checked])"
            )
            assert ticked == [
                ["pushes_archives", True],
                ["reads_metrics", False],
                ["reads_reports", False],
                ["reads_jobs", False],
            ]
            assert all(inside for _, inside in page["controls"]) and not page["pageScrolls"], (width, page)
            failures += [f"{width} px: {line}" for line in violations(browser)]
            if width == 390:
                failures += narrow_window_problems(browser)
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert failures == []
