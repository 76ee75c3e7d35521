"""What tells a control or a mark from the page around it, in both colour schemes, measured in headless
Chromium (WCAG 1.4.11, non-text contrast: 3:1; axe-core checks text only).

- Every text field, menu and text area on every page of the access matrix (and the demo fleet's job,
  file and labeling pages): its border against what is behind it and against its own fill. The login
  page's fields had the tables' --line grey, 1.2:1 on the white card, and the jobs filter's 1.5:1 in
  the dark scheme. The buttons of the filter bars and of a timeline's window too (Filter, Show, Whole
  job): drawn as the fields beside them, their borders had stayed that --line grey. And each button's
  words on its fill, 4.5:1 (the findings' Send was white on white in the dark scheme, which axe-core
  let pass).
- A cause's tag (its dimension's colour beside its name, on the jobs list, the causes, a team's page)
  and the labeling form's groups of options (edged in their dimension's colour): drawn for a white
  page, the colours stood 2.5:1 on the dark scheme's cards.
"""

from __future__ import annotations

import pytest

from fleet import ingest
from tests.test_access_matrix import ROWS  # noqa: F401  (page_rows reads it)
from tests.test_accessibility import html_pages, open_as, page_rows
from tests.test_browser import browser, color_scheme  # noqa: F401  (the shared Chromium fixture)
from triage.models import Finding

SCHEMES = ("light", "dark")

# The WCAG contrast of two colours, and the colour an element is seen on: the backgrounds of it and its
# ancestors laid over one another (over white at the bottom), up to the first opaque one.
CONTRAST = """
// "rgb(r, g, b)", "rgba(r, g, b, a)", and "color(srgb r g b / a)" (0-1: what a color-mix() computes to).
const rgba = (text) => {
  const v = (text.match(/[\\d.]+/g) || []).map(Number);
  if (v.length < 3) return [0, 0, 0, 0];
  const scale = text.startsWith('color(srgb') ? 255 : 1;
  return [v[0] * scale, v[1] * scale, v[2] * scale, v.length > 3 ? v[3] : 1];
};
const over = (top, below) => [0, 1, 2].map(i => top[i] * top[3] + below[i] * (1 - top[3])).concat([1]);
const lum = (c) => c.slice(0, 3)
  .map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
  .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const behind = (el) => {
  const layers = [];
  for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
    const colour = rgba(getComputedStyle(node).backgroundColor);
    if (colour[3] > 0) layers.push(colour);
    if (colour[3] >= 1) break;
  }
  return layers.reverse().reduce((below, top) => over(top, below), [255, 255, 255, 1]);
};
const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
const describe = (el) => el.outerHTML.replace(/\\s+/g, ' ').slice(0, 140);
"""

# Each shown field's worst border contrast: against the colour around it and against its own fill; and that
# of the buttons beside the fields of a filter bar or a timeline's window, drawn as those fields are.
FIELDS = (
    CONTRAST
    + """
const fields = [...document.querySelectorAll(
  'input:not([type=checkbox]):not([type=radio]):not([type=hidden]):not([type=range]):not([type=submit])'
  + ':not([type=button]):not([type=reset]):not([type=image]):not([type=file]):not([type=color]), select, textarea'
  + ', .filters button, .timeline-window button')];
return fields.filter(shown).map(field => {
  const style = getComputedStyle(field);
  const around = behind(field.parentElement);
  const fill = over(rgba(style.backgroundColor), around);
  const sides = ['Top', 'Right', 'Bottom', 'Left'].filter(side => parseFloat(style[`border${side}Width`]) > 0
    && style[`border${side}Style`] !== 'none');
  if (!sides.length) return {field: describe(field), worst: ratio(fill, around), border: 'none'};
  const worst = Math.min(...sides.map(side => {
    const line = over(rgba(style[`border${side}Color`]), fill);
    return Math.min(ratio(line, around), ratio(line, fill));
  }));
  return {field: describe(field), worst, border: style.borderLeftColor};
});
"""
)

# Each shown cause tag's coloured edge (its left border) against the colour it is on.
TAGS = (
    CONTRAST
    + """
return [...document.querySelectorAll('main .tag, main fieldset.dimension')].filter(shown).map(tag => {
  const style = getComputedStyle(tag);
  const around = behind(tag);
  const edge = over(rgba(style.borderLeftColor), around);
  return {tag: describe(tag), worst: ratio(edge, around), border: style.borderLeftColor};
});
"""
)


# Each shown button's words against its fill (axe-core let the findings' white Send on white pass in the dark
# scheme; the form's buttons were styled for a white page).
BUTTONS = (
    CONTRAST
    + """
return [...document.querySelectorAll('main button')].filter(shown).filter(b => b.textContent.trim()).map(button => {
  const style = getComputedStyle(button);
  const fill = behind(button);
  return {field: describe(button), worst: ratio(over(rgba(style.color), fill), fill), border: style.color};
});
"""
)


def measured(driver, script: str, label: str, minimum: float = 3.0) -> list[str]:
    """Each scheme's shortfalls on the page the driver shows (the page follows the setting as it changes)."""
    problems = []
    for name in SCHEMES:
        color_scheme(driver, name)
        for found in driver.execute_script(script):
            if found["worst"] < minimum:
                what = found.get("field") or found.get("tag")
                problems.append(f"{label}, {name}: {found['worst']:.2f}:1 ({found['border']}) {what}")
    color_scheme(driver, "light")
    return problems


@pytest.mark.django_db(transaction=True)
def test_form_fields_stand_out_in_both_schemes(browser, live_server, world, demo_archive, django_user_model):  # noqa: F811
    ingest.execute_run(ingest.create_run(demo_archive).pk)  # triage runs in-process on the signal
    job = Finding.objects.filter(result__is_current=True).select_related("job").first().job
    log = job.artifacts.first()
    users = {**world["users"], "anonymous": None, "nina": django_user_model.objects.get(username="nina-rater")}
    pages = [(name, template.format(**world["params"]), role) for name, template, role in page_rows()]
    pages += [
        ("demo job", f"/jobs/{job.pk}/", "operator"),  # its timeline's window fields
        ("demo job's file", f"/jobs/{job.pk}/files/{log.pk}/", "operator"),  # the search in a file
        ("labeling:label", "/studies/{study_other}/label/{item_other}/".format(**world["params"]), "nina"),
    ]
    problems, fields = [], 0
    for name, path, role in html_pages(browser, live_server.url, pages, users):
        # Folded fields (a skipped job's reason, a connector's advanced options) are measured unfolded.
        browser.execute_script("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        fields += len(browser.execute_script(FIELDS))
        problems += measured(browser, FIELDS, f"{name} {path} as {role}")
        problems += measured(browser, BUTTONS, f"{name} {path} as {role}, a button's words", minimum=4.5)
    assert fields > 50, "the pages should have shown their forms"
    assert not problems, "fields under 3:1 (WCAG 1.4.11), buttons' words under 4.5:1:\n" + "\n".join(problems)


@pytest.mark.django_db(transaction=True)
def test_cause_tags_stand_out_in_both_schemes(browser, live_server, world, demo_archive, django_user_model):  # noqa: F811
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    finding = Finding.objects.filter(result__is_current=True).select_related("job__team").first()
    period = "from=2026-01-01&to=2027-12-31"  # the demo fleet's weeks, wherever the factories' dates have run
    operator, nina = world["users"]["operator"], django_user_model.objects.get(username="nina-rater")
    pages = [
        ("jobs", f"/jobs/?{period}&sort=unused", operator),
        ("causes", f"/categories/?{period}", operator),
        ("a cause", f"/categories/{finding.category}/?{period}", operator),
        ("a team", f"/teams/{finding.job.team.slug}/?{period}", operator),
        # The labeling form's options, grouped by dimension, each group edged in its colour.
        ("labeling", "/studies/{study_other}/label/{item_other}/".format(**world["params"]), nina),
    ]
    problems, tags = [], 0
    for name, path, user in pages:
        open_as(browser, live_server.url, user)
        browser.get(live_server.url + path)
        tags += len(browser.execute_script(TAGS))
        problems += measured(browser, TAGS, f"{name} {path}")
    assert tags > 10, "the pages should have shown the causes' tags"
    assert not problems, "cause tags under 3:1 (WCAG 1.4.11):\n" + "\n".join(problems)
