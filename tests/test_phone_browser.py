"""The pages a newcomer walks through on a phone (390 CSS pixels wide), in a real headless Chromium:
what they need to read must be on the screen, not off to the right of a box that scrolls.

Screenshots are saved under screenshots/ for a person to look at.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.conftest import REPO
from tests.test_browser import browser, window_width  # noqa: F401  (the browser fixture)
from triage.models import Finding

SHOTS = REPO / "screenshots"

# Each log event's row and the place its line shows: the Line column's cell when it is shown, else the
# line under the event; and whether the text of that line lies inside the box the table scrolls in.
LOG_EVENTS = """
const box = document.querySelector('#log-events .table-scroll');
const inside = box.getBoundingClientRect();
const shown = el => el.getClientRects().length > 0;
const rows = [...box.querySelectorAll('tbody tr:not(.change-line)')];
const lines = [...box.querySelectorAll('tbody code')].filter(shown);
const extent = el => { const r = document.createRange(); r.selectNodeContents(el); return r.getBoundingClientRect(); };
return {
  rows: rows.length,
  heights: rows.map(row => row.getBoundingClientRect().height),
  lines: lines.map(el => el.textContent),
  linesInView: lines.map(el => extent(el).left >= inside.left - 1 && extent(el).right <= inside.right + 1),
  times: [...box.querySelectorAll('tbody tr')].filter(shown).map(row => row.innerText)
    .filter(text => text.includes('2026-11-10 09:1')).length,
  scrolls: box.scrollWidth > box.clientWidth,
};
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_jobs_log_events_show_their_lines_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, a job's log events table put each event's line in its last column, off to the right
    of the box (the page showed 'install stdout.log:4 2026-11-0' and nothing of the line), and the
    line, squeezed into that column, made every row about 150 px tall: 94 events were 14,000 px of
    mostly empty rows. On a phone each line (with its time) reads under its kind and place."""
    from fleet.models import Artifact, LogEvent
    from tests.factories import JobFactory
    from tests.test_accessibility import narrow_window_problems, open_as, violations

    job = JobFactory(start_time=datetime(2026, 11, 10, 9, tzinfo=UTC))
    log = Artifact.objects.create(job=job, kind="log", path="stdout.log", file="artifacts/x", size=1, sha256="x")
    texts = [
        "[rank0]:2026-11-10 09:14:27,399 WARNING data: slow read: s3://recsys-datasets/movielens-20m/"
        "train-00156-of-01024.tar took 305.7s (34.7 MB/s)",
        "[2026-11-10T09:15:58Z] Requirement already satisfied: torch in /opt/conda/envs/recsys-env/lib/python3.11/"
        "site-packages",
        "Epoch 1/9",
    ]
    for number, (kind, text) in enumerate(zip(("remote_read", "install", "epoch"), texts, strict=True), start=4):
        LogEvent.objects.create(job=job, artifact=log, kind=kind, line_no=number, text=text,
                                timestamp=datetime(2026, 11, 10, 9, 10 + number, tzinfo=UTC))  # fmt: skip
    SHOTS.mkdir(exist_ok=True)
    open_as(browser, live_server.url, operator)
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/jobs/{job.pk}/#log-events")
        phone = browser.execute_script(LOG_EVENTS)
        browser.save_screenshot(str(SHOTS / "job-log-events-phone.png"))
        phone_violations = violations(browser)
    assert phone["rows"] == len(texts)
    assert sorted(phone["lines"]) == sorted(texts), "each event's line shows once"
    assert all(phone["linesInView"]), f"a log line sits off to the right of the screen: {phone}"
    assert phone["times"] == len(texts), f"each event's time shows: {phone}"
    assert not phone["scrolls"], f"the kind and place fit beside each other: {phone}"
    assert max(phone["heights"]) <= 50, f"an event's own row is {max(phone['heights'])} px tall"

    browser.get(f"{live_server.url}/jobs/{job.pk}/#log-events")  # wide: the line in a column of its own
    wide = browser.execute_script(LOG_EVENTS)
    assert sorted(wide["lines"]) == sorted(texts) and all(wide["linesInView"]), wide
    # The line under each event is one more row of the same table: axe's WCAG checks pass at both
    # widths, and 320 px wide nothing makes the page scroll sideways.
    assert phone_violations == [] and violations(browser) == [], phone_violations
    assert narrow_window_problems(browser) == []


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_findings_folded_sections_are_targets_a_finger_can_tell_apart(browser, live_server, operator):  # noqa: F811
    """A finding's "1 time window", "5 log lines", "Code" and "How to fix it" were 20 px tall and
    stacked without a gap: axe's target-size (WCAG 2.2 2.5.8) failed each at 390 px. Each is now at
    least 24 px tall."""
    from fleet.models import Artifact
    from tests.factories import JobFactory
    from tests.test_accessibility import open_as, violations
    from triage.models import JobTriage, RuleSet
    from triage.taxonomy import Category

    job = JobFactory(start_time=datetime(2026, 11, 10, 9, tzinfo=UTC), mean_gpu_util=20.0)
    Artifact.objects.create(job=job, kind="log", path="stdout.log", file="artifacts/x", size=1, sha256="x")
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    evidence = {
        "windows": [{"start": "2026-11-10T09:10:00Z", "end": "2026-11-10T09:20:00Z", "minutes": 10}],
        "log_lines": [{"path": "stdout.log", "line": 4, "text": "slow read: s3://bucket/shard-1.tar took 305.7s"}],
        "code": [{"path": "train.py", "line": 29, "code": 'parser.add_argument("--data", default="s3://bucket")'}],
    }
    Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=Category.REMOTE_DATA_READING,
                           confidence=0.9, summary="s", gpu_hours=1.0, evidence=evidence, guidance={})  # fmt: skip
    open_as(browser, live_server.url, operator)
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/jobs/{job.pk}/")
        heights = browser.execute_script(
            "return [...document.querySelectorAll('#findings summary')].map(s => s.getBoundingClientRect().height)"
        )
        too_small = violations(browser, ["target-size"])
    assert len(heights) == 4, heights
    assert min(heights) >= 24, f"summaries {heights} px tall"
    assert too_small == [], too_small


# The connector form's kinds table: each shown option name, whether it lies inside the box the table
# scrolls in and on one line (not broken inside the name), and the table's height.
KINDS = """
const box = document.querySelector('table.kinds').closest('.table-scroll');
const inside = box.getBoundingClientRect();
const names = [...box.querySelectorAll('tbody small code')].filter(el => el.getClientRects().length);
return {
  names: names.length,
  inView: names.every(el => {
    const r = el.getBoundingClientRect();
    return r.left >= inside.left - 1 && r.right <= inside.right + 1;
  }),
  broken: names.filter(el => el.getClientRects().length > 1).map(el => el.textContent),
  height: box.getBoundingClientRect().height,
};
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_connector_forms_options_by_kind_read_whole(browser, live_server, operator):  # noqa: F811
    """390 px wide, the connector form's 'Options and auth by kind' squeezed three columns into the
    screen: every option's name broke mid-word ('settle_minu / tes') in a column 80 px wide, and the
    table ran 4,000 px. On a phone each kind's options are a line of their own under its name and auth."""
    from fleet.connectors.registry import kinds
    from tests.test_accessibility import open_as, violations

    every_option = sum(len(cls.options_schema) for cls in kinds().values())
    open_as(browser, live_server.url, operator)
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/connectors/new/")
        phone = browser.execute_script(KINDS)
        phone_violations = violations(browser)
    assert phone["names"] == every_option > 0, phone
    assert phone["inView"] and phone["broken"] == [], phone
    assert phone["height"] < 2000, f"the table is {phone['height']} px tall"
    assert phone_violations == [], phone_violations
    browser.get(f"{live_server.url}/connectors/new/")  # wide: the options in a column of their own
    wide = browser.execute_script(KINDS)
    assert wide["names"] == phone["names"] and wide["inView"], wide


# A table with a muted last column (the rules page's thresholds): each row's height, and whether each muted
# cell (wherever it shows) lies inside the box the table scrolls in.
CAUSES = """
const box = document.querySelector('table.data').closest('.table-scroll');
const inside = box.getBoundingClientRect();
const rows = [...box.querySelectorAll('tbody tr:not(.change-line)')];
const what = [...box.querySelectorAll('tbody td.muted')].filter(el => el.getClientRects().length);
const extent = el => { const r = document.createRange(); r.selectNodeContents(el); return r.getBoundingClientRect(); };
return {
  heights: rows.map(row => Math.round(row.getBoundingClientRect().height)),
  what: what.length,
  whatInView: what.every(el => extent(el).left >= inside.left - 1 && extent(el).right <= inside.right + 1),
};
"""


@pytest.mark.django_db(transaction=True)
def test_the_causes_page_reads_whole_at_1280_px_and_on_a_phone(browser, live_server, operator):  # noqa: F811
    """390 px wide, the causes table scrolled sideways in its box: its figures, what job owners said and
    what a cause is were off to the right of the cause (what it is once squeezed into the last column,
    then a line under the cause held in view as the rest scrolled). On a phone each cause is a card of
    its fields, each beside its column's name (the deliveries', prices' and studies' table.stacks), a
    long name such as "Recoverable GPU-hours" wrapping beside its figure, not over it; at 1280 px it is
    a table with its headers, as before."""
    from tests.test_accessibility import open_as, table_layouts

    open_as(browser, live_server.url, operator)
    wide, phone = table_layouts(
        browser,
        f"{live_server.url}/categories/",
        "causes",
        lambda driver: {"overlaps": driver.execute_script(LABELS_OVER_VALUES)},
    )
    for layout in (wide, phone):
        assert not layout["scrolls"] and layout["cellsOut"] == [], layout
        assert sum(1 for _label, column in layout["labels"] if column == "What it is") == 15, layout
    assert wide["headersShown"] and {label for label, _column in wide["labels"]} == {None}, wide
    assert not phone["headersShown"], phone
    assert [label for label, _column in phone["labels"]] == [column for _label, column in phone["labels"]], phone
    assert phone["overlaps"] == [], f"a label runs over its value: {phone['overlaps']}"
    assert phone["violations"] == [] and phone["reflow"] == [], phone


# Each shown cell label whose words reach past where its value's words start (a long label drawn over its figure).
LABELS_OVER_VALUES = """
const box = el => { const r = document.createRange(); r.selectNodeContents(el); return r.getBoundingClientRect(); };
return [...document.querySelectorAll('table.data tbody .cell-label')].filter(el => el.checkVisibility())
  .filter(el => box(el).right > box(el.nextElementSibling).left + 1).map(el => el.textContent);
"""


# Each timeline legend entry's name and the box its text is drawn in, [left, top, right, bottom] (the
# entry's own box is as wide as the legend's columns, whatever its name).
LEGEND_TEXTS = """
return [...document.querySelectorAll('#timeline .legend .traces .legendtext')].map(text => {
  const r = text.getBoundingClientRect(); return [text.textContent, [r.left, r.top, r.right, r.bottom]];
});
"""


@pytest.mark.django_db(transaction=True)
def test_320_px_wide_a_long_causes_legend_entry_wraps_inside_the_chart(browser, live_server, operator):  # noqa: F811
    """At 320 px (WCAG's reflow width) the timeline's legend entry "Inefficient host-GPU data transfer:
    idle windows" ran past the chart's right edge and was cut ("...: idle wind"): each entry was one
    line as wide as its name. A name wider than the legend breaks between words, inside the chart."""
    from tests.test_dashboard_browser import (
        TIMELINE_BOXES,
        job_with_idle_windows,
        log_in,
        open_timeline_pointed_at,
        overlap,
    )
    from triage.taxonomy import Category

    job = job_with_idle_windows(Category.HOST_GPU_TRANSFER, Category.MODEL_CHECKPOINTING)
    log_in(browser, live_server.url, operator, f"/jobs/{job.pk}/")
    with window_width(browser, 320):
        open_timeline_pointed_at(browser, f"{live_server.url}/jobs/{job.pk}/")
        entries = browser.execute_script(LEGEND_TEXTS)
        boxes = browser.execute_script(TIMELINE_BOXES)
        browser.save_screenshot(str(SHOTS / "job-timeline-320-causes.png"))
    names = ["".join(name.split()) for name, _ in entries]  # a wrapped name's lines join without a space
    for cause in ("Inefficient host-GPU data transfer: idle windows", "Model checkpointing: idle windows"):
        assert "".join(cause.split()) in names, names
    for index, (name, box) in enumerate(entries):
        assert box[2] <= boxes["chart"][2] + 1, f"{name!r} runs past the chart's right edge: {box}, {boxes['chart']}"
        for other, other_box in entries[index + 1 :]:
            assert not overlap(box, other_box), f"{name!r} runs into {other!r}"
    for plot in boxes["plots"]:
        assert not overlap(boxes["legend"], plot), f"the legend {boxes['legend']} covers the plot {plot}"
    # Wide again (a phone turned sideways, a window widened): the name is one line again, as drawn there.
    from selenium.webdriver.support.wait import WebDriverWait

    whole = "Inefficient host-GPU data transfer: idle windows"
    WebDriverWait(browser, 10).until(lambda b: whole in [name for name, _ in b.execute_script(LEGEND_TEXTS)])


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_rules_page_says_what_each_threshold_controls_in_view(browser, live_server, operator):  # noqa: F811
    """390 px wide, what each threshold controls sat in the thresholds table's last column, off to the
    right, and held each row open up to 200 px tall beside its name and a value box cut by the screen's
    edge. It reads under each, and the value box is as wide as a value needs."""
    from tests.test_accessibility import open_as
    from triage.models import RuleSet

    RuleSet.current()
    open_as(browser, live_server.url, operator)
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/triage/rules/")
        phone = browser.execute_script(CAUSES)  # the first table: the thresholds
        inputs_in_view = browser.execute_script(
            "const box = document.querySelector('table.data').closest('.table-scroll').getBoundingClientRect();"
            "return [...document.querySelectorAll('table.data td > input[type=number]')]"
            "  .map(input => input.getBoundingClientRect().right <= box.right + 1);"
        )
    assert len(phone["heights"]) > 20 and phone["what"] == len(phone["heights"]), phone
    assert phone["whatInView"], phone
    assert max(phone["heights"]) <= 80, f"threshold rows {phone['heights']} px tall"
    assert len(inputs_in_view) > 20 and all(inputs_in_view), "a threshold's value box runs off the screen"


# The top bar's height, the tops of what shows in it (the rows it takes), and its folded menu.
TOP_BAR = """
const bar = document.querySelector('.topbar'), shown = el => el.checkVisibility();
const summary = bar.querySelector('.menu > summary'), links = [...bar.querySelectorAll('nav a')];
return {
  height: bar.getBoundingClientRect().height,
  rows: [...bar.querySelectorAll('.brand, .menu > summary, nav a, .logout > *')].filter(shown)
    .map(el => el.getBoundingClientRect()).sort((a, b) => a.top - b.top)
    .reduce((rows, r) => (rows.length && r.top < rows[rows.length - 1] ? rows : [...rows, r.bottom]), []).length,
  summary: shown(summary) ? summary.textContent.replace(/\\s+/g, ' ').trim() : null,
  open: bar.querySelector('.menu').open,
  links: links.filter(shown).map(a => a.textContent),
  current: links.filter(a => a.getAttribute('aria-current') === 'page').map(a => a.textContent),
  currentMarked: links.filter(a => a.getAttribute('aria-current') === 'page' && shown(a))
    .map(a => getComputedStyle(a).textDecorationLine),
  inWindow: links.filter(shown).every(a => { const r = a.getBoundingClientRect();
    return r.left >= 0 && r.right <= innerWidth && r.height >= 24; }),
};
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_operators_menu_folds_under_one_menu_button_that_the_keyboard_opens(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """375 px wide, an admin operator's 13 menu links wrapped to four rows (124 px) above every page. The
    bar is now one row, the name and "Menu · Jobs" (the page's section), and the menu opens from the
    keyboard, without script, over the page: each link in the window and a finger's height, the page's
    own marked; wider than a tablet the links show in the bar as before."""
    from selenium.webdriver.common.keys import Keys

    from tests.test_accessibility import open_as, violations
    from tests.test_keyboard_browser import focused, press, tab_to

    operator.is_staff = True
    operator.save()
    SHOTS.mkdir(exist_ok=True)
    open_as(browser, live_server.url, operator)
    with window_width(browser, 375, mobile=True):
        browser.get(f"{live_server.url}/jobs/")
        browser.execute_cdp_cmd("Emulation.setFocusEmulationEnabled", {"enabled": True})
        folded = browser.execute_script(TOP_BAR)
        browser.save_screenshot(str(SHOTS / "menu-phone-folded.png"))
        assert folded["rows"] == 1 and folded["height"] <= 2 * 32 + 20, folded  # at most ~2 rows; it is 1
        assert folded["summary"] == "Menu · Jobs" and folded["links"] == [] and not folded["open"], folded
        assert folded["current"] == ["Jobs"], folded
        summary = tab_to(browser, lambda f: f["tag"] == "summary")
        assert summary["marked"] and summary["in_view"], summary
        press(browser, Keys.ENTER)
        opened = browser.execute_script(TOP_BAR)
        browser.save_screenshot(str(SHOTS / "menu-phone-open.png"))
        assert opened["open"] and len(opened["links"]) == 13 and opened["links"][-1] == "Admin", opened
        assert opened["inWindow"] and opened["currentMarked"] == ["underline"], opened
        press(browser, Keys.TAB)
        assert focused(browser)["text"] == "Overview"  # on into the menu, in its order
        assert violations(browser) == []
        press(browser, Keys.SHIFT, Keys.TAB)
        press(browser, Keys.ENTER)
        assert browser.execute_script(TOP_BAR)["links"] == []  # folded again
    with window_width(browser, 1280):
        browser.get(f"{live_server.url}/jobs/")
        wide = browser.execute_script(TOP_BAR)
    assert wide["summary"] is None and len(wide["links"]) == 13 and wide["rows"] == 1, wide


def png_pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and rows of RGBA (or RGB) bytes of a Chromium screenshot (8 bits, not interlaced)."""
    import struct
    import zlib

    width, height, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    data, at = b"", 8
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at : at + 8])
        if kind == b"IDAT":
            data += png[at + 8 : at + 8 + length]
        at += 12 + length
    raw, size = zlib.decompress(data), 4 if colour == 6 else 3
    stride, rows, previous = width * size, [], bytearray(width * size)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - size] if x >= size else 0
            up, corner = previous[x], previous[x - size] if x >= size else 0
            if kind == 1:
                line[x] = (line[x] + left) & 255
            elif kind == 2:
                line[x] = (line[x] + up) & 255
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif kind == 4:
                guess = left + up - corner
                nearest = min((abs(guess - left), 0, left), (abs(guess - up), 1, up), (abs(guess - corner), 2, corner))
                line[x] = (line[x] + nearest[2]) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, [bytes(row[i] for i in range(0, len(row), size)) for row in rows]  # the red channel


# Resolves once a box's scrollLeft has stayed put over two animation frames (a smooth scroll ended and
# the scroll handlers' styles are drawn).
SCROLL_SETTLED = """
const box = arguments[0];
return new Promise(resolve => {
  let last = -1;
  const tick = () => {
    if (box.scrollLeft === last) { resolve(); return; }
    last = box.scrollLeft;
    requestAnimationFrame(() => requestAnimationFrame(tick));
  };
  tick();
});
"""


def right_edge_brightness(driver, box) -> float:
    """The mean brightness (red, 0-255) of the pixel column 3 px inside the right edge of `box`, as shown."""
    png = driver.get_screenshot_as_png()
    width, height, reds = png_pixels(png)
    rect = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.right, r.top, r.bottom, devicePixelRatio];", box
    )
    x = int((rect[0] - 3) * rect[3])
    top, bottom = max(0, int(rect[1] * rect[3])), min(height, int(rect[2] * rect[3]))
    assert bottom - top > 40 and 0 <= x < width, rect
    return sum(reds[y][x] for y in range(top, bottom)) / (bottom - top)


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_table_that_goes_on_past_its_box_shows_a_shadow_there_and_the_keyboard_scrolls_it(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """375 px wide, the settings page's prices were cut after "PRIC" at the box's edge, which looked like
    the table's end: a phone shows no scrollbar until touched. The box's right edge now has a shadow
    while the table goes on past it, gone at the table's end and on a table that fits; the box is a
    named Tab stop that arrow keys scroll. (The prices, and since 711f4b8 the jobs, stack on a phone; the audit log's
    table scrolls.)"""
    from selenium.webdriver.common.keys import Keys

    from fleet.audit import record
    from tests.test_accessibility import open_as
    from tests.test_keyboard_browser import focused, press, tab_to, wait_until

    for hour in range(3):
        record(operator, "prices.changed", "A100 price", {"price_per_gpu_hour": f"{hour + 2}.50", "currency": "USD"})
    open_as(browser, live_server.url, operator)
    SHOTS.mkdir(exist_ok=True)
    box_of = "return document.querySelector('.table-scroll')"
    with window_width(browser, 375, mobile=True):
        browser.get(f"{live_server.url}/audit/")
        browser.execute_cdp_cmd("Emulation.setFocusEmulationEnabled", {"enabled": True})
        box = browser.execute_script(box_of)
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
        browser.save_screenshot(str(SHOTS / "audit-table-phone.png"))
        shadowed = right_edge_brightness(browser, box)
        region = tab_to(browser, lambda f: f["role"] == "region")
        assert region["text"] == "Audit log (scrolls sideways)" and region["marked"], region
        press(browser, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
        wait_until(browser, lambda b: b.execute_script("return arguments[0].scrollLeft", box) > 0)  # smoothly
        # The arrows scroll smoothly, and the shadow follows each scroll event a frame later: measured in
        # mid-glide it stood left of the edge (CI under load). Measure once the box has come to rest.
        browser.execute_script(SCROLL_SETTLED, box)
        browser.execute_script("arguments[0].blur()", box)  # its focus ring is not the shadow
        middle = right_edge_brightness(browser, box)  # scrolled part of the way: still more to the right
        browser.execute_script("arguments[0].scrollLeft = arguments[0].scrollWidth", box)
        browser.execute_script("return new Promise(resolve => requestAnimationFrame(resolve))")
        at_end = right_edge_brightness(browser, box)
        browser.save_screenshot(str(SHOTS / "audit-table-phone-end.png"))
    assert at_end > 235, f"at the table's end its edge is {at_end:.0f} of 255: a shadow still shows"
    assert shadowed < at_end - 15 and middle < at_end - 15, (shadowed, middle, at_end)
    browser.get(f"{live_server.url}/audit/")  # wide: the table fits, no shadow and no Tab stop
    box = browser.execute_script(box_of)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
    assert right_edge_brightness(browser, box) > 235
    assert box.get_attribute("tabindex") is None and box.get_attribute("data-more-right") is None
    assert focused(browser)["tag"] == "body"


# A settings page's table (`arguments[0]`, the prices' or the exchange rates'): whether its box scrolls sideways,
# each shown field's visible label and whether it lies inside the box, the label's column (its header's text).
PRICES = """
const table = document.querySelector(arguments[0]), box = table.closest('.table-scroll');
const inside = box.getBoundingClientRect(), shown = el => el.checkVisibility();
const headers = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
const fields = [...table.querySelectorAll('tbody td > :is(input, select):not([type=hidden])')].filter(shown);
return {
  scrolls: box.scrollWidth > box.clientWidth + 1,
  fields: fields.length,
  inView: fields.every(el => { const r = el.getBoundingClientRect();
    return r.left >= inside.left - 1 && r.right <= inside.right + 1; }),
  labels: fields.map(el => { const label = el.labels && [...el.labels].find(shown);
    return label ? label.textContent.trim() : null; }),
  columns: fields.map(el => headers[el.closest('td').cellIndex]),
  headersShown: table.querySelector('thead').getBoundingClientRect().height > 2,
};
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_price_table_stacks_each_price_as_labelled_fields(browser, live_server, operator):  # noqa: F811
    """375 px wide, the settings page's price table scrolled sideways: a price's currency and its
    Delete box were off to the right of its cluster. On a phone each price is a card of fields, each
    with its column's name beside it, all in view; it is still a table (its rows, cells and column
    headers) to a screen reader, and a row of headers over the columns on a wider window. The exchange
    rates' table, below it, did the same at 320 px (its Delete boxes cut off at the box's edge): its
    rates are cards too."""
    from selenium.webdriver.common.by import By

    from fleet.models import ExchangeRate, GpuModelPrice
    from tests.factories import ClusterFactory
    from tests.test_accessibility import narrow_window_problems, open_as, violations

    ExchangeRate.objects.create(currency="EUR", rate="1.08")
    cluster = ClusterFactory(name="alpha")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="A100-SXM4-80GB", price_per_gpu_hour="2.5000")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="1.2500", currency="EUR")
    SHOTS.mkdir(exist_ok=True)
    open_as(browser, live_server.url, operator)
    with window_width(browser, 375, mobile=True):
        browser.get(f"{live_server.url}/settings/")
        phone = browser.execute_script(PRICES, "table.prices")
        table = browser.find_element(By.CSS_SELECTOR, "table.prices")
        browser.execute_script("arguments[0].scrollIntoView()", table)
        browser.save_screenshot(str(SHOTS / "settings-prices-phone.png"))
        roles = {
            "table": table.aria_role,
            "row": table.find_element(By.CSS_SELECTOR, "tbody tr").aria_role,
            "cell": table.find_element(By.CSS_SELECTOR, "tbody td").aria_role,
            "columnheader": table.find_element(By.CSS_SELECTOR, "thead th").aria_role,
        }
        phone_violations = violations(browser)
    with window_width(browser, 320, mobile=True):
        browser.get(f"{live_server.url}/settings/")
        rates = browser.execute_script(PRICES, "#exchange-rates table")
        browser.execute_script("document.getElementById('exchange-rates').scrollIntoView()")
        browser.save_screenshot(str(SHOTS / "settings-rates-phone.png"))
    # 2 saved prices of 5 fields and 2 blank rows of 4 (a blank row has no Delete box).
    assert phone["fields"] == 18 and not phone["scrolls"] and phone["inView"], phone
    assert phone["labels"] == phone["columns"], f"a field's visible label is not its column's: {phone}"
    assert not phone["headersShown"], phone
    assert roles == {role: role for role in roles}, roles
    assert phone_violations == [], phone_violations
    # 1 saved rate of 3 fields and 1 blank row of 2 (no Delete box).
    assert rates["fields"] == 5 and not rates["scrolls"] and rates["inView"], rates
    assert rates["labels"] == rates["columns"] and not rates["headersShown"], rates
    assert narrow_window_problems(browser) == []
    browser.get(f"{live_server.url}/settings/")  # wide: the headers name the columns, no label beside a field
    for table in ("table.prices", "#exchange-rates table"):
        wide = browser.execute_script(PRICES, table)
        assert wide["headersShown"] and not wide["scrolls"] and set(wide["labels"]) == {None}, wide


@pytest.mark.django_db(transaction=True)
def test_a_browser_without_details_content_still_shows_the_menu_as_a_bar_on_a_wide_window(
    browser,  # noqa: F811
    live_server,
    operator,
):
    """The wide bar is the folded menu held open by `::details-content` (Chromium 131+, Safari 18.4+,
    Firefox 143+). Firefox ESR 140 and older Safari lack it and showed "Menu" on every width, the links
    one click away on a desktop: there menu.js holds the menu open while the window is wide and hides
    "Menu", and folds it again on a phone. Chromium stands in for such a browser by answering no when
    asked for the selector (`CSS.supports`, what menu.js asks) before the page's scripts run."""
    from tests.test_accessibility import open_as

    script = """
    const supports = CSS.supports.bind(CSS);
    CSS.supports = (...args) => (String(args[0]).includes('details-content') ? false : supports(...args));
    """
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})
    open_as(browser, live_server.url, operator)
    with window_width(browser, 1280):
        browser.get(f"{live_server.url}/jobs/")
        assert browser.execute_script("return CSS.supports('selector(::details-content)')") is False
        wide = browser.execute_script(TOP_BAR)
        assert wide["open"] and wide["summary"] is None and wide["rows"] == 1, wide
        assert "Jobs" in wide["links"] and wide["currentMarked"] == ["underline"], wide
    with window_width(browser, 375, mobile=True):
        browser.get(f"{live_server.url}/jobs/")
        phone = browser.execute_script(TOP_BAR)
        assert not phone["open"] and phone["summary"] == "Menu · Jobs" and phone["links"] == [], phone


def top_causes_layouts(browser, live_server, operator, name, *, job_hours, job_cost, finding_hours, finding_cost):  # noqa: F811
    """The overview's Top causes at 1280 px and on a phone (`table_layouts`), for four causes in the week of
    10 November, one job each of `job_hours` GPU-hours (two thirds unused) costing `job_cost`, the n-th
    cause's finding n times `finding_hours` and `finding_cost`."""
    from tests.factories import JobFactory
    from tests.test_accessibility import open_as, table_layouts
    from tests.test_jobs_page import triaged
    from triage.taxonomy import Category

    causes = (Category.HOST_GPU_TRANSFER, Category.DATA_EXCHANGE, Category.GPU_OVERSUBSCRIPTION, Category.API_MISUSE)
    for number, category in enumerate(causes):
        job = JobFactory(
            start_time=datetime(2026, 11, 10, 9 + number, tzinfo=UTC),
            gpu_hours=job_hours,
            unused_gpu_hours=job_hours * 2 / 3,
            cost=job_cost,
        )
        triaged(job, "classified", category)
        Finding.objects.filter(job=job).update(gpu_hours=finding_hours * (number + 1), cost=finding_cost * (number + 1))
    open_as(browser, live_server.url, operator)
    return table_layouts(
        browser,
        f"{live_server.url}/overview/?from=2026-11-09&to=2026-11-15",
        name,
        table="#top-causes table.data",
    )


@pytest.mark.django_db(transaction=True)
def test_the_overviews_top_causes_read_whole_at_1280_px_and_on_a_phone(browser, live_server, operator):  # noqa: F811
    """390 px wide, the overview's Top causes scrolled sideways in its box by about 29 px: the cost of each
    cause, the last column, was cut at the box's edge (a long cause such as "Inefficient host-GPU data
    transfer" took three lines and the figures beside it still did not fit). On a phone each cause is a
    card of its fields, each beside its column's name, as on the causes page; at 1280 px a table. (The demo's
    figures: hundreds of GPU-hours and of dollars a cause in a week.)"""
    from decimal import Decimal

    wide, phone = top_causes_layouts(
        browser,
        live_server,
        operator,
        "overview-causes",
        job_hours=900.0,
        job_cost=Decimal("2400.00"),
        finding_hours=121.7,
        finding_cost=Decimal("212.35"),
    )
    for layout in (wide, phone):
        assert not layout["scrolls"] and layout["cellsOut"] == [], layout
        assert len(layout["labels"]) == 4 * 4, layout
    assert wide["headersShown"] and {label for label, _column in wide["labels"]} == {None}, wide
    assert not phone["headersShown"], phone
    assert [label for label, _column in phone["labels"]] == [column for _label, column in phone["labels"]], phone
    assert phone["violations"] == [] and phone["reflow"] == [], phone


@pytest.mark.django_db(transaction=True)
def test_a_big_fleets_top_causes_fit_the_overview_at_1280_px(browser, live_server, operator):  # noqa: F811
    """At 1280 px the overview's Top causes had a third of the width beside the causes chart: a fleet whose
    causes cost thousands a week ("12,345" beside "1,234.5" GPU-hours) had the table scroll sideways in its
    box, each cost cut at its edge. The chart gives it more room (3:2), and the figures fit."""
    from decimal import Decimal

    wide, phone = top_causes_layouts(
        browser,
        live_server,
        operator,
        "overview-causes-big",
        job_hours=9000.0,
        job_cost=Decimal("24000.00"),
        finding_hours=1234.5,
        finding_cost=Decimal("12345.67"),
    )
    for layout in (wide, phone):
        assert not layout["scrolls"] and layout["cellsOut"] == [], layout
    assert wide["headersShown"], wide
