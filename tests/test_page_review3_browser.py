"""Pages as their users see them in Chromium, after a review at 320, 390 and 1280 px, light and dark:

- The overview's numbers of the causes chart, on a phone: a card for each of the 15 causes, each figure beside
  its column's long name, some 2,500 px of scrolling. A compact table now: the names of the columns once, each
  cause's figures under them, every figure still there.
- The mailed text as it is (`?part=text&raw=1`, text/plain) names no icon, so the browser asked for
  /favicon.ico, which the server answered 404 (as it did for /healthz and every other answer that is not a
  page). It is the site's icon now.
- A connector without authentication but with a secret reference said "No authentication; the secret is read
  from file:…", as if it were sent. The page says what each pull sends.
- A labeling study's description holding a long unbroken word (a 200-character URL) ran out of its page, which
  then scrolled sideways; so did a long unbroken study's or connector's name in its pages' headings.
- The rules page's "the jobs behind the errors": its two lists, one under the other on a phone, were spaced by
  their own margins added (28 px), where a grid's parts are 16 px apart.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet import ingest
from fleet.connectors.models import Connector
from tests.test_accessibility import open_as
from tests.test_browser import browser, color_scheme, window_width  # noqa: F401  (the shared Chromium fixture)
from tests.test_labeling import BATCH, CKPT, jobs, raters, run_study, study, triage_with  # noqa: F401

PERIOD = "?from=2026-10-19&to=2026-11-23"

# The opened numbers of the overview's charts whose rows hold more than one figure: per table, its height, its
# rows, and each figure with the heading of its column it lies under (the heading's span holds the figure's
# middle, across the page), as a person reads a table.
NUMBERS = """
document.querySelectorAll('details.figure-data').forEach(d => { d.open = true; });
return [...document.querySelectorAll('details.figure-data table.stacks')].map(table => {
  const box = e => e.getBoundingClientRect();
  const headings = [...table.tHead.rows[0].cells].slice(1).map(th => [th.textContent.trim(), box(th)]);
  const under = [];
  for (const row of table.tBodies[0].rows) {
    [...row.cells].slice(1).forEach((cell, i) => {
      const value = cell.querySelector('span:not(.cell-label)'), middle = (box(value).left + box(value).right) / 2;
      const heading = headings.find(([, h]) => h.width && h.left <= middle && middle <= h.right);
      under.push([value.textContent, heading ? heading[0] : null, headings[i][0]]);
    });
  }
  const scroller = table.closest('.table-scroll');
  return {caption: table.caption.textContent, height: box(table).height, rows: table.tBodies[0].rows.length,
          under, sideways: scroller.scrollWidth - scroller.clientWidth, text: scroller.innerText};
});
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_charts_numbers_are_a_compact_table_of_every_figure(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """At 390 px the overview's causes chart's numbers were 15 cards of 170 px (2,550 px), each repeating the
    columns' long names. Now a row is at most 56 px (its name, its figures under the columns' names given once),
    each figure under its column's name, nothing scrolling sideways, every figure as at 1280 px: on the overview,
    a team's page and a cause's page (their weekly charts)."""
    from fleet.models import Job
    from triage.models import Finding

    ingest.execute_run(ingest.create_run(demo_archive).pk)
    team = Job.objects.values_list("team__slug", flat=True).first()
    cause = Finding.objects.values_list("category", flat=True).first()
    open_as(browser, live_server.url, operator)
    for path in (f"/overview/{PERIOD}", f"/teams/{team}/{PERIOD}", f"/categories/{cause}/{PERIOD}"):
        with window_width(browser, 1280):
            browser.get(f"{live_server.url}{path}")
            wide = {table["caption"]: table for table in browser.execute_script(NUMBERS)}
        assert wide, path
        if path.startswith("/overview/"):
            assert any(table["rows"] >= 12 for table in wide.values()), wide  # the causes: many rows
        for width in (320, 390):
            with window_width(browser, width, mobile=True):
                browser.get(f"{live_server.url}{path}")
                phone = {table["caption"]: table for table in browser.execute_script(NUMBERS)}
            assert phone.keys() == wide.keys()
            for caption, table in phone.items():
                where = (path, width, caption)
                assert table["sideways"] <= 0, (*where, table["sideways"])
                assert [value for value, *_ in table["under"]] == [value for value, *_ in wide[caption]["under"]]
                misplaced = [(value, seen, column) for value, seen, column in table["under"] if seen != column]
                assert misplaced == [], (*where, misplaced[:4])
                assert table["height"] <= 56 * table["rows"] + 120, (*where, table["height"], table["rows"])


# -- the site's icon for an answer that is not a page -------------------------------------------------------

ICON = """
const done = arguments[arguments.length - 1];
fetch('/favicon.ico').then(r => r.blob().then(b => done({status: r.status, type: b.type, url: r.url})));
"""


@pytest.mark.django_db(transaction=True)
def test_the_raw_text_preview_has_an_icon_for_the_browser(browser, live_server, operator):  # noqa: F811
    """A text/plain answer names no icon, so the browser asks for /favicon.ico: it was a 404 in the server's
    log on every look at the mail's text (and at /healthz). It is the site's icon now."""
    from tests.test_page_review2 import this_week

    open_as(browser, live_server.url, operator)
    browser.get(f"{live_server.url}/digests/preview/operator/{this_week()}/?part=text&raw=1")
    assert "View in the browser" in browser.page_source  # the mail's text, as text/plain
    asked = browser.execute_async_script(ICON)
    assert asked["status"] == 200 and asked["type"] == "image/svg+xml", asked
    assert "favicon" in asked["url"] and asked["url"].endswith(".svg"), asked


def test_the_icon_is_the_sites_for_anyone(client):
    """Asked before logging in too (the login page's browser tab, a probe's): a redirect to the icon."""
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"].startswith("/static/favicon") and response["Location"].endswith(".svg")
    assert client.post("/favicon.ico").status_code == 405


# -- what a connector sends ----------------------------------------------------------------------------------


def connector_page(client, **fields) -> str:
    connector = Connector.objects.create(
        name=f"c{Connector.objects.count()}", kind=Connector.Kind.PROMETHEUS, url="http://prom:9090", **fields
    )
    page = client.get(reverse("connectors:detail", args=[connector.pk])).content.decode()
    return page.split("<dt>Auth</dt>", 1)[1].split("</dd>", 1)[0]


def test_a_connector_without_authentication_says_its_secret_is_not_sent(operator_client):
    """It read "No authentication; the secret is read from file:…", as if the pulls sent it."""
    auth = connector_page(operator_client, auth=Connector.Auth.NONE, secret_ref="file:/run/secrets/prom-token")
    assert auth.startswith("<dd>No authentication: requests carry no credentials; "), auth
    assert "the secret from <code>file:/run/secrets/prom-token</code> is not sent" in auth, auth
    assert "(choose an auth kind to send it)" in auth and "read from" not in auth, auth
    auth = connector_page(operator_client, auth=Connector.Auth.NONE, secret_encrypted="x")
    assert "the stored secret (encrypted, not shown) is not sent" in auth, auth
    auth = connector_page(operator_client, auth=Connector.Auth.NONE)
    assert auth == "<dd>No authentication: requests carry no credentials", auth


def test_a_connectors_page_says_what_each_auth_kind_sends(operator_client):
    """Each kind says what a request carries and where the secret comes from; the header kind names its header
    (its label's "e.g. X-SLURM-USER-TOKEN" was no help once a header is set)."""
    bearer = connector_page(operator_client, auth=Connector.Auth.BEARER, secret_ref="env:FLEET_SECRET_PROM")
    assert bearer == (
        "<dd>Bearer token: each request sends <code>Authorization: Bearer</code> and the secret, "
        "read from <code>env:FLEET_SECRET_PROM</code> on every pull"
    ), bearer
    header = connector_page(operator_client, auth=Connector.Auth.HEADER, secret_header="X-SLURM-USER-TOKEN")
    assert "sends the secret in <code>X-SLURM-USER-TOKEN</code>; " in header and "no secret is set" in header, header
    default = connector_page(operator_client, auth=Connector.Auth.HEADER, secret_encrypted="x")
    assert "the secret in <code>X-API-Key</code>, stored encrypted (not shown)" in default, default
    basic = connector_page(operator_client, auth=Connector.Auth.BASIC, username="svc-fleet", secret_encrypted="x")
    assert "sends the user name <code>svc-fleet</code> and the secret as its password, stored encrypted" in basic


@pytest.mark.django_db(transaction=True)
def test_a_connectors_long_name_and_secret_path_wrap_on_its_pages(browser, live_server, operator):  # noqa: F811
    """A 100-character name (a slug, one word) in the heading of a connector's page and of its form, and a long
    secret file's path on the form, made both pages 1,333 px wide at 320 px (and wider than 1280 px)."""
    connector = Connector.objects.create(
        name="prometheus-" + "a" * 89,
        kind=Connector.Kind.PROMETHEUS,
        url="http://prom:9090",
        secret_ref="file:/run/secrets/" + "t" * 100,
    )
    open_as(browser, live_server.url, operator)
    wide = []
    for width in (320, 390, 1280):
        with window_width(browser, width, mobile=width < 700):
            for page in ("", "edit/"):
                browser.get(f"{live_server.url}/connectors/{connector.pk}/{page}")
                assert connector.name in browser.find_element("css selector", "main h1").text.replace("\n", "")
                shown = browser.execute_script("return document.documentElement.scrollWidth")
                wide += [(width, page, shown)] if shown > width else []
    assert wide == [], wide


# -- a study's long description -----------------------------------------------------------------------------

LONG_URL = "https://wiki.example.org/gpu-fleet/labeling/protocol?" + "&".join(f"rule{i}=on" for i in range(20))

PAST_THE_EDGE = """
const p = document.querySelector('main h1 + p'), card = p.parentElement.getBoundingClientRect();
return {page: document.documentElement.scrollWidth, right: p.getBoundingClientRect().right, edge: card.right,
        text: p.innerText};
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [320, 390, 1280])
def test_a_studys_long_unbroken_description_wraps_in_its_page(browser, live_server, study, raters, width):  # noqa: F811
    """A 200-character URL in the description ran out of the page, at 1280 px too (1,855 px wide)."""
    assert len(LONG_URL) > 200 and " " not in LONG_URL
    study.description = f"The protocol: {LONG_URL} (read it first)."
    study.save()
    open_as(browser, live_server.url, raters[0])
    with window_width(browser, width, mobile=width < 700):
        browser.get(f"{live_server.url}/studies/{study.pk}/")
        seen = browser.execute_script(PAST_THE_EDGE)
    assert seen["page"] <= width, seen
    assert seen["right"] <= seen["edge"] + 0.5, seen
    assert LONG_URL in seen["text"].replace("\n", ""), seen["text"]


@pytest.mark.django_db(transaction=True)
def test_a_studys_long_unbroken_name_wraps_on_each_of_its_pages(browser, live_server, study, raters):  # noqa: F811
    """The same with the study's name, in the crumbs and headings of its pages: a 120-character name without a
    space made the study's page 1,715 px wide at 320 px, its agreement, gold and rules pages 1,574 px, its
    labeling and adjudication pages 1,006 px (and as much at 1280 px)."""
    study.name = "pilot-" + "x" * 120
    study.save()
    run_study(study, raters)
    item = study.items.get(position=1)
    open_as(browser, live_server.url, raters[0])
    wide = []
    for width in (320, 1280):
        with window_width(browser, width, mobile=width < 700):
            for page in ("", "agreement/", "gold/", "rules/", f"label/{item.pk}/", f"adjudicate/{item.pk}/"):
                browser.get(f"{live_server.url}/studies/{study.pk}/{page}")
                assert study.name in browser.find_element("css selector", "main").text.replace("\n", "")
                shown = browser.execute_script("return document.documentElement.scrollWidth")
                wide += [(width, page, shown)] if shown > width else []
    assert wide == [], wide


# -- the rules page's jobs behind the errors ------------------------------------------------------------------

HALVES = """
const [first, second] = document.querySelectorAll('#jobs .grid > div');
const box = e => e.getBoundingClientRect();
const last = [...first.querySelectorAll('li')].pop(), heading = second.querySelector('h3');
return {stacked: Math.abs(box(first).left - box(second).left) < 1, gap: box(heading).top - box(last).bottom,
        level: box(first.querySelector('h3')).top - box(heading).top};
"""


@pytest.mark.django_db(transaction=True)
def test_the_rules_pages_jobs_behind_the_errors_are_16_px_apart_stacked(browser, live_server, study, raters):  # noqa: F811
    """On a phone the false negatives' heading was 28 px under the false positives' last job (the list's and the
    heading's margins added); the grid's parts are 16 px apart, as its columns are side by side."""
    from triage.labeling import services
    from triage.models import RuleSet

    run_study(study, raters)
    services.adjudicate(study.items.get(position=3), [CKPT], "saves", raters[0])
    services.freeze_gold(study, raters[0])
    rule_set = RuleSet.current()
    for position, found in ((1, [BATCH]), (2, [CKPT]), (3, [BATCH]), (4, [])):
        triage_with(rule_set, study.items.get(position=position).job, found)
    open_as(browser, live_server.url, raters[0])
    for width in (320, 390, 1280):
        with window_width(browser, width, mobile=width < 700):
            browser.get(f"{live_server.url}/studies/{study.pk}/rules/?gold=1&rule_set=1&category={CKPT}")
            seen = browser.execute_script(HALVES)
        if width < 700:
            assert seen["stacked"] and abs(seen["gap"] - 16) < 1, (width, seen)
        else:
            assert not seen["stacked"] and seen["level"] == 0, (width, seen)  # side by side, level
