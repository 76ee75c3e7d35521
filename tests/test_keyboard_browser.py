"""A week's work from the keyboard alone, in a real headless Chromium: only Tab, Shift+Tab, Enter, Space,
arrows and typed text reach the page (a file input takes its path as typed text, as a file chooser's
name box does). Where the focus lands after each action is checked as a keyboard or screen-reader
user meets it: on what the page says became of the action, in view and visibly marked, never dropped
to <body> (whence the next Tab starts again at the menu, and a screen reader says nothing).
"""

from __future__ import annotations

import pytest

from fleet import ingest
from fleet.models import MachineToken
from tests.test_browser import STALE, browser  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import console_errors

PASSWORD = "correct horse battery staple"

# The focused element as a keyboard user meets it: what it is, its text, whether the page marks it
# (an outline or a shadow), whether it is in the window, and the text of what aria-describedby names.
FOCUSED = r"""
const e = document.activeElement, cs = getComputedStyle(e), r = e.getBoundingClientRect();
const named = (e.getAttribute('aria-describedby') || '').split(' ').filter(Boolean)
  .map(id => document.getElementById(id) ? document.getElementById(id).textContent.trim() : 'MISSING #' + id);
return {tag: e.tagName.toLowerCase(), id: e.id, text: (e.getAttribute('aria-label') || e.textContent).trim(),
        role: e.getAttribute('role'), invalid: e.getAttribute('aria-invalid'), described: named,
        marked: (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0) || cs.boxShadow !== 'none',
        in_view: r.bottom > 0 && r.top < innerHeight};
"""


def focused(driver) -> dict:
    return driver.execute_script(FOCUSED)


def press(driver, *keys) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def tab_to(driver, wanted, limit: int = 200) -> dict:
    """Press Tab until the focused element is `wanted` (a test on `focused`); fails past `limit` stops."""
    from selenium.webdriver.common.keys import Keys

    for _ in range(limit):
        press(driver, Keys.TAB)
        now = focused(driver)
        if wanted(now):
            return now
    raise AssertionError(f"Tab never reached it; the focus ended on {focused(driver)}")


def wait_until(driver, condition, seconds: int = 20):
    from selenium.webdriver.support.wait import WebDriverWait

    return WebDriverWait(driver, seconds, ignored_exceptions=STALE).until(condition)


def keyboard_login(driver, base: str, user, next_path: str) -> None:
    """Log in by typing: the login page puts the cursor in its username field."""
    from selenium.webdriver.common.keys import Keys

    user.set_password(PASSWORD)
    user.save()
    driver.get(f"{base}/login/?next={next_path}")
    # Headless Chromium's page has no window focus of its own: without it, :focus (and so the
    # outline a real window shows) never applies to an element focused by the page's script.
    driver.execute_cdp_cmd("Emulation.setFocusEmulationEnabled", {"enabled": True})
    assert focused(driver)["id"] == "id_username"
    press(driver, user.username, Keys.TAB, PASSWORD, Keys.ENTER)
    wait_until(driver, lambda b: "/login/" not in b.current_url)


@pytest.mark.django_db(transaction=True)
def test_a_failed_login_and_a_connector_form_sent_with_a_mistake_put_the_focus_on_what_went_wrong(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """A form sent back with an error opened with the focus on <body>; the connector form's field
    named an error message (aria-describedby="id_options_error") that had no such id."""
    from selenium.webdriver.common.keys import Keys

    base = live_server.url
    operator.set_password(PASSWORD)
    operator.save()
    browser.get(f"{base}/login/")
    browser.execute_cdp_cmd("Emulation.setFocusEmulationEnabled", {"enabled": True})
    press(browser, operator.username, Keys.TAB, "not the password", Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["tag"] == "p")
    said = focused(browser)
    assert said["text"] == "Your username and password didn't match. Please try again."
    assert said["role"] == "alert" and said["marked"] and said["in_view"]
    press(browser, Keys.TAB)
    assert focused(browser)["id"] == "id_username"  # and on to the form from there

    keyboard_login(browser, base, operator, "/connectors/new/")
    tab_to(browser, lambda f: f["id"] == "id_name")
    press(browser, "kb-connector")
    tab_to(browser, lambda f: f["id"] == "id_kind")
    press(browser, Keys.DOWN)  # its first kind
    tab_to(browser, lambda f: f["id"] == "id_url")
    press(browser, "http://127.0.0.1:9/")
    tab_to(browser, lambda f: f["id"] == "id_cluster")
    press(browser, "alpha")
    tab_to(browser, lambda f: f["id"] == "id_options")
    press(browser, "{not json")
    tab_to(browser, lambda f: f["text"] == "Save")
    press(browser, Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["id"] == "id_options")
    field = focused(browser)
    assert field["invalid"] == "true" and field["marked"] and field["in_view"]
    assert field["described"] == ["Kind-specific options (docs/connectors.md).", "Enter a valid JSON."]
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_token_made_and_revoked_and_a_log_searched_from_the_keyboard_land_on_what_the_page_says(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """After creating or revoking a token, or searching a log, the page opened with the focus on
    <body>: the message (or the count of lines found) was above the focus's next stop, the menu,
    and unread. Each Revoke button was named 'Revoke' only."""
    from selenium.webdriver.common.keys import Keys

    from fleet.models import Artifact

    keyboard_login(browser, live_server.url, operator, "/tokens/")
    tab_to(browser, lambda f: f["id"] == "token-name")
    press(browser, "backup-host", Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["role"] == "status")
    said = focused(browser)
    assert said["text"] == "Token “backup-host” created. Copy it now: it is not shown again."
    assert said["marked"] and said["in_view"]
    token = MachineToken.objects.get(name="backup-host")
    revoke = tab_to(browser, lambda f: f["text"].startswith("Revoke"))
    assert revoke["text"] == f"Revoke the token backup-host ({token.prefix}…)"
    press(browser, Keys.ENTER)
    wait_until(
        browser, lambda b: focused(b)["text"].startswith("Token “backup-host”") and "revoked" in focused(b)["text"]
    )
    assert focused(browser)["in_view"]
    token.refresh_from_db()
    assert token.revoked

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    log = Artifact.objects.filter(kind="log").order_by("pk").first()
    browser.get(f"{live_server.url}/jobs/{log.job_id}/files/{log.pk}/")
    tab_to(browser, lambda f: f["id"] == "file-q")
    press(browser, "epoch", Keys.ENTER)
    wait_until(browser, lambda b: focused(b)["role"] == "status")
    found = focused(browser)
    assert "hold “epoch”" in found["text"] or found["text"] == "No line holds “epoch”."
    assert found["marked"] and found["in_view"]
    assert console_errors(browser) == []
