"""The operator's setup pages as Chromium draws them: connectors, their messages, ingest runs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.test_browser import browser, color_scheme, window_width  # noqa: F401  (the browser fixture)
from tests.test_dashboard_browser import console_errors, log_in
from tests.test_layout_browser import BOX, lines


def connectors():
    from fleet.connectors.models import Connector

    # Port 9 on this machine: nothing listens, so a check is refused at once.
    slurm = Connector.objects.create(name="demo-slurm", kind="slurm", url="http://127.0.0.1:9/", cluster="demo")
    prometheus = Connector.objects.create(name="demo-prometheus", kind="prometheus", url="http://127.0.0.1:9/")
    return slurm, prometheus


@pytest.mark.django_db(transaction=True)
def test_the_connector_lists_buttons_read_on_one_line_one_under_the_other(browser, live_server, operator):  # noqa: F811
    """At 1280 px the list's 'Check connection' broke over two lines inside its button, wider than
    and out of line with the 'Pull now' above it, and 'never run' broke in two: each button's words
    now stay on one line, the row's buttons one width down one left edge, and the health is the chip
    of the connector's own page (coloured as it is there), on one line."""
    connectors()
    log_in(browser, live_server.url, operator, "/connectors/")
    with window_width(browser, 1280):
        rows = browser.find_elements("css selector", "table.data tbody tr")
        assert len(rows) == 2
        for row in rows:
            buttons = row.find_elements("css selector", "td:last-child button")
            assert [b.text for b in buttons][-1] == "Check connection"
            for button in buttons:
                script = (
                    "const r = document.createRange(); r.selectNodeContents(arguments[0]);"
                    "return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size;"
                )
                assert browser.execute_script(script, button) == 1, button.text
            edges = {tuple(round(v) for v in browser.execute_script(BOX, b)[::2]) for b in buttons}
            assert len(edges) == 1, edges  # one left and right edge for both
        # The health is the chip the connector's own page shows, on one line.
        assert browser.find_element("css selector", "table.data tbody tr td:nth-child(3) .status").text == "never run"
        assert lines(browser, "table.data tbody tr td:nth-child(3) .status") == 1
    assert console_errors(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_status_chip_keeps_its_words_on_one_line(browser, live_server, operator):  # noqa: F811
    """A connector's health chip beside its name read 'never' over 'run' on a phone, and a run's
    'Partly rejected' was two pieces of chip in the ingest runs table at 1280 px: a chip is one line,
    and in a table cell that needs the room one box."""
    from fleet.models import IngestRun

    slurm, _ = connectors()
    IngestRun.objects.create(
        source=IngestRun.Source.UPLOAD,
        archive_name="broken.zip",
        created_by=operator,
        status=IngestRun.Status.PARTIAL,
        started_at=datetime(2026, 11, 10, 9, tzinfo=UTC),
        finished_at=datetime(2026, 11, 10, 9, 2, tzinfo=UTC),
        jobs_total=30,
        jobs_created=12,
        jobs_rejected=18,
    )
    log_in(browser, live_server.url, operator, f"/connectors/{slurm.pk}/")
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/connectors/{slurm.pk}/")
        assert browser.find_element("css selector", "#connector-health").text == "never run"
        assert lines(browser, "#connector-health") == 1
    with window_width(browser, 1280):
        browser.get(f"{live_server.url}/ingest-runs/")
        chip = browser.find_element("css selector", "table.data tbody .status")
        assert chip.text == "Partly rejected"
        # The table's fourteen columns need the room: its words may take two lines, but in one box.
        assert browser.execute_script("return arguments[0].getClientRects().length", chip) == 1
    assert console_errors(browser) == []


# The background and text colours an element's classes give it, read off a fresh element of those classes.
COLOURS_OF = """
const probe = document.createElement('span'); probe.className = arguments[0]; document.body.append(probe);
const style = getComputedStyle(probe), colours = [style.backgroundColor, style.color]; probe.remove();
return colours;
"""


@pytest.mark.django_db(transaction=True)
def test_a_failed_check_says_so_on_the_failed_colour(browser, live_server, operator):  # noqa: F811
    """'Check connection' refused: its message was red words on the blue of an information, the
    warning's own colour aside; an error message is drawn as the failed status chip is (its red words
    on its pale red, 5.5:1), in both schemes."""
    slurm, _ = connectors()
    log_in(browser, live_server.url, operator, f"/connectors/{slurm.pk}/")
    browser.find_element("css selector", "form[action$='/check/'] button").click()
    message = browser.find_element("css selector", "p.message.error")
    assert "refused the connection" in message.text
    for name in ("light", "dark"):
        color_scheme(browser, name)
        style = "const s = getComputedStyle(arguments[0]); return [s.backgroundColor, s.color];"
        drawn = browser.execute_script(style, message)
        assert drawn == browser.execute_script(COLOURS_OF, "status failed"), name
        assert drawn[0] != browser.execute_script(COLOURS_OF, "message")[0], name
    color_scheme(browser, "light")
    assert console_errors(browser) == []


# The colour of the scheme's field border (--field-line), as getComputedStyle writes colours.
FIELD_LINE = """
const probe = document.createElement('i'); document.body.append(probe);
probe.style.color = getComputedStyle(probe).getPropertyValue('--field-line').trim();
const colour = getComputedStyle(probe).color; probe.remove(); return colour;
"""


@pytest.mark.django_db(transaction=True)
def test_a_connectors_buttons_are_one_height_and_one_type(browser, live_server, operator):  # noqa: F811
    """On a connector's page 'Check connection' was the browser's own button (13 px type, 21 px tall, a
    grey bevel) beside the 32 px 'Pull now': the two are one height and type size, on one centre line,
    the second drawn as the filter bars' buttons are (the fields' 3:1 border), in both schemes."""
    slurm, _ = connectors()
    log_in(browser, live_server.url, operator, f"/connectors/{slurm.pk}/")
    browser.find_element("css selector", "#connector-actions button")  # the page has come
    measure = (
        "return [...document.querySelectorAll('#connector-actions button')].map(b => {"
        " const r = b.getBoundingClientRect(), s = getComputedStyle(b);"
        " return [b.textContent, Math.round(r.height), Math.round(r.top + r.height / 2), s.fontSize, s.borderTopColor,"
        " s.borderTopStyle]; });"
    )
    for name in ("light", "dark"):
        color_scheme(browser, name)
        (pull, *_), (check, *_) = buttons = browser.execute_script(measure)
        assert (pull, check) == ("Pull now", "Check connection")
        assert buttons[0][1:4] == buttons[1][1:4], (name, buttons)
        assert buttons[1][4:] == [browser.execute_script(FIELD_LINE), "solid"], name
    color_scheme(browser, "light")
    assert console_errors(browser) == []
