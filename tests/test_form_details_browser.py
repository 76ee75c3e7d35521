"""Details a person saw in a screenshot audit, measured in headless Chromium at 390 px (a phone) and
1280 px (a laptop), each page also checked with axe: a checkbox's long label on the digest settings
(and the machine tokens' and a connector's deletion), the agreement page's quote for a paper, and the
fields of the Settings page's prices and rates. Screenshots are saved under screenshots/ for a person to
look at."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.test_accessibility import narrow_window_problems, open_as, violations
from tests.test_browser import SHOTS, browser, color_scheme, window_width  # noqa: F401  (the browser fixture)
from tests.test_labeling_browser import submitted_study  # noqa: F401  (a study whose raters have submitted)

# Where the box of each checkbox's label is and where each line of the label's words starts.
CHECK_LINES = """
return [...document.querySelectorAll('form.card label')].map(label => {
  const box = label.querySelector('input[type=checkbox]').getBoundingClientRect();
  const range = document.createRange();
  const words = [...label.childNodes].filter(node => node.nodeType === Node.TEXT_NODE && node.data.trim());
  range.setStart(words[0], 0); range.setEnd(words[words.length - 1], words[words.length - 1].length);
  const lines = [...range.getClientRects()].filter(r => r.width > 1);
  return {text: label.textContent.trim().slice(0, 30), boxRight: box.right, boxLeft: box.left,
          starts: lines.map(r => Math.round(r.left)), tops: new Set(lines.map(r => Math.round(r.top))).size};
});
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_a_long_checkbox_label_wraps_beside_its_box(browser, live_server, member_a):  # noqa: F811
    """390 px wide, the idle alerts' label ("and its idle alerts: an email when a running job of Team A
    has left all its GPUs idle for a while") took three lines, the second and third starting under its
    checkbox, left of the first line's words. Its words now wrap beside the box (a hanging indent), as
    the box stays under the digest it belongs to."""
    open_as(browser, live_server.url, member_a)
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/digests/settings/")
        labels = browser.execute_script(CHECK_LINES)
        browser.save_screenshot(str(SHOTS / "digest-settings-phone.png"))
        phone_violations = violations(browser)
    digest, alerts = labels
    assert alerts["tops"] >= 2, f"the idle alerts' label is long enough to wrap at 390 px: {alerts}"
    assert all(start >= alerts["boxRight"] for start in alerts["starts"]), f"a line starts under the box: {alerts}"
    assert alerts["boxLeft"] > digest["boxLeft"] + 10, f"the alerts' box is indented under its digest: {labels}"
    assert phone_violations == [] and narrow_window_problems(browser) == [], phone_violations
    browser.get(f"{live_server.url}/digests/settings/")  # 1280 px: each label on one line beside its box
    wide = browser.execute_script(CHECK_LINES)
    assert [label["tops"] for label in wide] == [1, 1], wide
    assert violations(browser) == []


# The quote's left edge against the text of its card.
QUOTE = """
const card = document.querySelector('#for-a-paper'), quote = document.querySelector('#methods-sentence');
const intro = card.querySelector('p.muted').getBoundingClientRect();
const box = quote.getBoundingClientRect();
return {indent: box.left - intro.left, right: intro.right - box.right};
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_quote_for_a_paper_keeps_the_cards_width(browser, live_server, submitted_study):  # noqa: F811
    """The agreement page's "For a paper" sentence kept a browser quote's 40 px indent on each side on a
    phone: in a 330 px card the sentence had 250 px, some 30 characters a line. Narrow, it is indented
    as a quote by a little, its full width otherwise; at 1280 px it is the quote it was."""
    study, lead, _ = submitted_study
    open_as(browser, live_server.url, lead)
    url = f"{live_server.url}/studies/{study.pk}/agreement/"
    with window_width(browser, 390, mobile=True):
        browser.get(url)
        phone = browser.execute_script(QUOTE)
        browser.find_element("css selector", "#for-a-paper").screenshot(str(SHOTS / "agreement-quote-phone.png"))
        phone_violations = violations(browser)
    assert 0 < phone["indent"] <= 16 and phone["right"] <= 1, phone
    assert phone_violations == [], phone_violations
    browser.get(url)
    wide = browser.execute_script(QUOTE)
    assert wide["indent"] >= 30, wide
    assert violations(browser) == []


# Each field of the two tables (prices, rates) whose look differs from that of the same kind of field in
# the project's other forms (.stacked-form: a field's border, its rounding, padding, type and background).
FIELDS = """
const form = document.createElement('form'); form.className = 'stacked-form';
form.innerHTML = '<div class="field"><input type="text"><select><option>x</option></select></div>';
document.querySelector('main').append(form);
const look = el => { const s = getComputedStyle(el);
  return [s.borderTopColor, s.borderTopWidth, s.borderTopStyle, s.borderTopLeftRadius, s.fontSize, s.fontFamily,
          s.paddingLeft, s.paddingTop, s.backgroundColor, s.color].join(' | '); };
const want = {INPUT: look(form.querySelector('input')), SELECT: look(form.querySelector('select'))};
form.remove();
return [...document.querySelectorAll('table.prices input:not([type=checkbox]):not([type=hidden]), table.prices select')]
  .filter(el => look(el) !== want[el.tagName]).map(el => [el.name, look(el), want[el.tagName]]);
"""


@pytest.mark.django_db(transaction=True)
def test_the_settings_pages_prices_and_rates_are_fields_like_the_others(browser, live_server, operator):  # noqa: F811
    """The prices' and rates' boxes were the browser's own: a thin dark bevel, no padding, smaller type
    than the page's, where every other form has bordered, padded fields in the page's type. They now
    look the same, at 1280 px and in the phone's cards."""
    from fleet.models import ExchangeRate
    from tests.factories import ClusterFactory

    ClusterFactory(name="alpha").prices.create(gpu_model="H100", price_per_gpu_hour=Decimal("4.00"), currency="USD")
    ExchangeRate.objects.create(currency="EUR", rate="1.08")
    open_as(browser, live_server.url, operator)
    browser.get(f"{live_server.url}/settings/")
    assert browser.execute_script(FIELDS) == []
    browser.find_element("css selector", "#prices").screenshot(str(SHOTS / "settings-prices.png"))
    assert violations(browser) == []
    with window_width(browser, 390, mobile=True):
        browser.get(f"{live_server.url}/settings/")
        phone = browser.execute_script(FIELDS)
        browser.save_screenshot(str(SHOTS / "settings-prices-phone.png"))
        phone_violations = violations(browser)
    assert phone == [] and phone_violations == [], (phone, phone_violations)
    assert narrow_window_problems(browser) == []


# Each checkbox label's box and where each line of its words starts (words in <code> included), for the
# labels under `arguments[0]` that hold a checkbox.
LABEL_LINES = """
return [...document.querySelectorAll(arguments[0])].filter(label => label.querySelector('input[type=checkbox]'))
  .map(label => {
    const box = label.querySelector('input[type=checkbox]').getBoundingClientRect();
    const range = document.createRange();
    range.setStartAfter(label.querySelector('input[type=checkbox]'));
    range.setEnd(label, label.childNodes.length);
    const lines = [...range.getClientRects()].filter(r => r.width > 1);
    return {text: label.textContent.trim().slice(0, 40), boxRight: box.right,
            starts: lines.map(r => Math.round(r.left)), tops: new Set(lines.map(r => Math.round(r.top))).size};
  });
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_token_and_connector_boxes_keep_their_words_beside_them(browser, live_server, operator):  # noqa: F811
    """The machine tokens' four permission boxes and a connector's "Also delete the jobs it imported and
    the cluster ..." wrapped their second and third lines under the box, at 390 px, where the digest
    settings' labels keep theirs beside it (label.check)."""
    from tests.test_connector_deletion import pulled

    connector = pulled("west", "gpu-cluster-west-a100-nvlink", 3)
    open_as(browser, live_server.url, operator)
    pages = [
        ("tokens", "/tokens/", "form label", 4),
        ("connector-delete", f"/connectors/{connector.pk}/delete/", "#delete-connector label", 1),
    ]
    problems = []
    with window_width(browser, 390, mobile=True):
        for name, path, selector, count in pages:
            browser.get(live_server.url + path)
            labels = browser.execute_script(LABEL_LINES, selector)
            browser.save_screenshot(str(SHOTS / f"{name}-checkboxes-phone.png"))
            assert len(labels) == count, labels
            for label in labels:
                assert label["tops"] >= 2, f"{name}: the label is long enough to wrap at 390 px: {label}"
                if any(start < label["boxRight"] for start in label["starts"]):
                    problems.append(f"{name}: a line starts under the box: {label}")
            problems += [f"{name}: {line}" for line in violations(browser)]
    assert not problems, "\n".join(problems)


@pytest.mark.django_db(transaction=True)
def test_at_1280_px_a_prices_delete_box_sits_on_its_rows_fields_centre_line(browser, live_server, operator):  # noqa: F811
    """At the top of its cell, each price's and rate's Delete box sat some 10 px above the middle of the
    fields beside it, a row's controls at two heights down the table."""
    from fleet.models import ExchangeRate
    from tests.factories import ClusterFactory

    ClusterFactory(name="alpha").prices.create(gpu_model="H100", price_per_gpu_hour=Decimal("4.00"), currency="USD")
    ExchangeRate.objects.create(currency="EUR", rate="1.08")
    open_as(browser, live_server.url, operator)
    browser.get(f"{live_server.url}/settings/")
    rows = browser.execute_script(
        """const mid = el => { const r = el.getBoundingClientRect(); return (r.top + r.bottom) / 2; };
           return [...document.querySelectorAll('table.prices tbody tr')]
             .filter(row => row.querySelector('input[type=checkbox]'))
             .map(row => ({box: mid(row.querySelector('input[type=checkbox]')),
                           field: mid(row.querySelector('input:not([type=checkbox]):not([type=hidden])'))}));"""
    )
    assert len(rows) == 2, rows  # the price and the rate
    assert all(abs(row["box"] - row["field"]) <= 2 for row in rows), rows


# The rules page's threshold boxes whose look differs from a field of the project's other forms, and
# the widths of the boxes down the column.
RULE_FIELDS = (
    FIELDS.replace(
        "table.prices input:not([type=checkbox]):not([type=hidden]), table.prices select",
        "table.with-changes td > input[type=number]",
    )
    .replace(
        "return [...document",
        "const boxes = [...document.querySelectorAll('table.with-changes td > input[type=number]')];\n"
        "const widths = [...new Set(boxes.map(b => Math.round(b.getBoundingClientRect().width)))];\n"
        "return {widths, differ: [...document",
    )
    .rstrip()
    .removesuffix(";")
    + "};"
)


@pytest.mark.django_db(transaction=True)
def test_the_rules_pages_threshold_boxes_are_fields_like_the_others_and_one_width(browser, live_server, operator):  # noqa: F811
    """The thresholds' boxes were the browser's own: an inset bevel (a white edge in the dark scheme), no
    padding, smaller type than the page's, and two widths down one column (a whole number's narrower).
    They look as every other form's fields, and line up, in both schemes."""
    open_as(browser, live_server.url, operator)
    for scheme in ("light", "dark"):
        color_scheme(browser, scheme)
        browser.get(f"{live_server.url}/triage/rules/")
        seen = browser.execute_script(RULE_FIELDS)
        assert seen["differ"] == [] and len(seen["widths"]) == 1, (scheme, seen)
    color_scheme(browser, None)
    assert violations(browser) == []
