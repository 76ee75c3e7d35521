"""Every button of the app (outside the Django admin) drawn in the project's style, in both colour schemes,
measured in headless Chromium. Buttons no page rule reached were the browser's own: 13 px type, 21 px tall,
a grey bevel, white in the dark scheme (an ingest run's Mark failed, a delivery's Retry, a token's Revoke,
the chat webhook's Send a test message) beside the styled 14 px ones.
"""

from __future__ import annotations

import pytest

from fleet.models import IngestRun, Team
from tests.test_access_matrix import ROWS  # noqa: F401  (page_rows reads it)
from tests.test_accessibility import html_pages, page_rows
from tests.test_browser import browser, color_scheme  # noqa: F401  (the shared Chromium fixture)
from tests.test_non_text_contrast_browser import SCHEMES
from triage.digests.models import TeamWebhook

# Each shown button that looks as the browser draws one (its type, its bevel or its fill the same as a
# button's in a shadow root, where no rule of the page reaches), and each plain one (no class, in no bar
# with buttons of its own) not drawn as the filter bars' buttons are: 14 px type, the fields' border and fill.
DEFAULT_LOOK = """
const host = document.createElement('div');
document.body.appendChild(host);
const bare = host.attachShadow({mode: 'open'}).appendChild(document.createElement('button'));
bare.textContent = 'x';
const ua = getComputedStyle(bare);
const probe = document.createElement('span');
probe.style.cssText = 'border: 1px solid var(--field-line); background: var(--field)';
document.querySelector('main').appendChild(probe);
const field = getComputedStyle(probe);
const want = {fontSize: '14px', borderTopColor: field.borderTopColor, borderTopStyle: 'solid',
              backgroundColor: field.backgroundColor};
const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
const found = [...document.querySelectorAll('button')].filter(b => b !== bare && shown(b)).map(button => {
  const style = getComputedStyle(button);
  const what = button.outerHTML.replace(/\\s+/g, ' ').slice(0, 120);
  const looks = ['fontSize', 'borderTopStyle', 'backgroundColor'].filter(p => style[p] === ua[p]);
  if (looks.length) return `the browser's ${looks.join(', ')}: ${what}`;
  const plain = !button.classList.length && !button.closest('.topbar, .filters, .timeline-window');
  const off = Object.keys(want).filter(p => plain && style[p] !== want[p]);
  if (off.length) return off.map(p => `${p} ${style[p]} not ${want[p]}`).join(', ') + ': ' + what;
  return null;
}).filter(Boolean);
host.remove();
probe.remove();
return found;
"""


@pytest.mark.django_db(transaction=True)
def test_every_button_is_drawn_in_the_projects_style(browser, live_server, world, django_user_model):  # noqa: F811
    users = {**world["users"], "anonymous": None, "nina": django_user_model.objects.get(username="nina-rater")}
    operator = users["operator"]
    webhook = TeamWebhook(team=Team.objects.get(slug=world["params"]["team_a"]))  # its Send a test message
    webhook.set_url("https://hooks.example.com/x")
    webhook.save()
    pending = IngestRun.objects.create(
        source=IngestRun.Source.UPLOAD, archive_name="late.zip", created_by=operator, status=IngestRun.Status.PENDING
    )
    pages = [(name, template.format(**world["params"]), role) for name, template, role in page_rows()]
    pages += [
        ("a pending run", f"/ingest-runs/{pending.pk}/", "operator"),  # its Mark failed
        ("labeling:label", "/studies/{study_other}/label/{item_other}/".format(**world["params"]), "nina"),
    ]
    problems, buttons = [], 0
    for name, path, role in html_pages(browser, live_server.url, pages, users):
        if "/admin/" in path:
            continue
        browser.execute_script("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        buttons += browser.execute_script("return document.querySelectorAll('main button').length")
        for each in SCHEMES:
            color_scheme(browser, each)
            problems += [f"{name} {path} as {role}, {each}: {p}" for p in browser.execute_script(DEFAULT_LOOK)]
        color_scheme(browser, "light")
    assert buttons > 40, "the pages should have shown their buttons"
    assert not problems, "buttons not in the project's style:\n" + "\n".join(problems)
