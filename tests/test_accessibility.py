"""Every page against WCAG 2.1 A and AA, checked by axe-core in a real headless Chromium.

The pages are the access matrix's (docs/access-control.md): each GET row that answers a page (not
JSON, CSV, Parquet, a raw file, the API or the Django admin) is opened as the first of operator,
researcher and member that may see it, with the `world` fixture's objects, plus what only a demo
fleet has (triaged jobs with findings, their files, a cause with detections) and a rater's
labeling form. Each is checked again 320 CSS pixels wide (WCAG 1.4.10, Reflow: a phone, or a
page zoomed to 400 %): nothing may make the page scroll sideways, and a table that scrolls in its
own box must be reachable from the keyboard. A new page gets a matrix row, and with it this
check. axe-core comes from selenium-axe-python (requirements-dev.txt); its version is pinned in
constraints.txt, so a new axe rule arrives with a deliberate upgrade, not in the middle of a change.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.test import Client

from fleet import ingest
from fleet.models import Job
from tests.factories import JobFactory
from tests.test_access_matrix import ROWS
from tests.test_browser import SHOTS, browser, window_width  # noqa: F401  (browser: the shared Chromium fixture)
from tests.test_jobs_page import triaged
from triage.dashboard import queries
from triage.labeling import services as labeling
from triage.labeling.models import Study
from triage.models import Finding
from triage.taxonomy import Category

# WCAG 2.0 and 2.1, levels A and AA, and axe's best practices (landmarks, headings, empty headers).
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
VIEWERS = ("operator", "researcher", "member")
NOT_PAGES = (".json", ".csv", ".parquet", "/raw", ".ico")  # .ico: the site's icon, a redirect to an image


def is_page(row) -> bool:
    """Whether a matrix row's GET answers a page of ours (not data, the API, the admin or an action)."""
    return (
        row.method == "GET"
        and row.name not in ("admin", "logout", "fleet:healthz")
        and not row.path.startswith("/api/")
        and not row.path.split("?")[0].endswith(NOT_PAGES)
        and "format=csv" not in row.path
        and any(outcome in ("200", "302") for outcome in row.expected.values())  # not a GET-refusing action
    )


def page_rows() -> list[tuple[str, str, str]]:
    """(URL name, path template, role that may open it) for every row of the matrix that is a page."""
    pages = []
    for row in filter(is_page, ROWS):
        if row.name in ("login", "digests:unsubscribe"):
            pages.append((row.name, row.path, "anonymous"))
            continue
        role = next((role for role in VIEWERS if row.expected[role] == "200"), None)
        if role is not None:
            pages.append((row.name, row.path, role))
    return pages


def test_every_page_of_the_matrix_is_checked():
    """Pages no role gets a 200 for (a redirect, a rater-only form) are checked below by hand."""
    checked = {name for name, _, _ in page_rows()} | {"dashboard:home", "labeling:label-next", "labeling:label"}
    checked.add("account-time-zone")  # a redirect to the settings page (password_change), checked as a page
    missing = {row.name for row in ROWS if is_page(row)} - checked
    assert not missing, f"pages without an accessibility check: {sorted(missing)}"


# axe-core asked for its violations only. Given every result type, it worked out a CSS selector for
# each node of each passing rule and sent them all back through WebDriver (some 1 s a page here);
# `resultTypes` spares the passes that work (the same rules run, every violation's nodes are listed).
AXE_RUN = """
const [options, done] = arguments;
axe.run(document, options).then(result => done(result.violations), error => done({error: String(error)}));
"""


def violations(driver, rules: list[str] | None = None) -> list[str]:
    """axe-core's WCAG violations on the page the driver shows (of `rules` only, when given), one
    line per rule and element."""
    from selenium_axe_python.axe import _DEFAULT_SCRIPT

    if not driver.execute_script("return typeof axe !== 'undefined'"):  # once a page: it is 500 KB of script
        driver.execute_script(Path(_DEFAULT_SCRIPT).read_text(encoding="utf8"))
    only = {"type": "rule", "values": rules} if rules else {"type": "tag", "values": AXE_TAGS}
    found = driver.execute_async_script(AXE_RUN, {"runOnly": only, "resultTypes": ["violations"]})
    assert not isinstance(found, dict), f"axe-core failed: {found}"
    return [
        f"{rule['impact']} {rule['id']} ({rule['help']}): {node['target']} {node['html'][:160]}"
        for rule in found
        for node in rule["nodes"]
    ]


def open_as(driver, base: str, user) -> None:
    """Give the browser `user`'s session (as a login would), or none for None."""
    driver.delete_all_cookies()
    if user is None:
        return
    client = Client()
    client.force_login(user)
    driver.get(f"{base}/healthz")  # a page of the site, so the cookie is the site's
    driver.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value, "path": "/"})


def html_pages(driver, base: str, pages, users: dict):
    """Open each of `pages` ((name, path, role) rows) as its role's user from `users`, signing in again only
    when the role changes, and yield the rows whose answer is a page: a JSON poll (the re-triage progress)
    is none."""
    current = object()
    for name, path, role in pages:
        if role != current:
            open_as(driver, base, users[role])
            current = role
        driver.get(base + path)
        if driver.execute_script("return document.contentType") == "text/html":
            yield name, path, role


# Every chart drawn and the timeline loaded (or told why it is empty); asked of the page in one
# script, as the fixture's implicit wait would hold each search for an absent element 5 s.
DRAWN = """
return [...document.querySelectorAll('[data-figure]')].every(chart => chart.querySelector('.main-svg'))
    && [...document.querySelectorAll('#timeline')].every(timeline => timeline.dataset.ready === '1');
"""


# Elements that stick out past the right edge of the window (and so make the page scroll sideways)
# while their parent does not, other than those inside a box that scrolls them itself or clips them
# within the window (a phone's card table's header row, kept for a screen reader in a 1 px box). A chart
# is judged by its <svg>'s box: the shapes inside include invisible hit areas past its edge.
STICKING_OUT = """
const width = document.documentElement.clientWidth;
const past = (el) => el.getBoundingClientRect().right > width + 1 && !el.ownerSVGElement;
const scrolledInside = (el) => {
  for (let box = el.parentElement; box; box = box.parentElement) {
    const overflow = getComputedStyle(box).overflowX;
    if ((overflow === 'auto' || overflow === 'scroll') && box.scrollWidth > box.clientWidth) return true;
    if ((overflow === 'hidden' || overflow === 'clip') && !past(box)) return true;
  }
  return false;
};
const out = [...document.body.querySelectorAll('*')]
  .filter((el) => past(el) && !past(el.parentElement) && !scrolledInside(el))
  .map((el) => el.outerHTML.slice(0, 100) + ' ends at ' + Math.round(el.getBoundingClientRect().right) + ' px');
return document.documentElement.scrollWidth > width + 1 ? out.concat(['the page scrolls sideways']) : out;
"""

# ARIA references to ids the page lacks, including those a script set (the HTML as served is checked
# by test_every_aria_reference_on_the_pages_names_an_element_there).
DANGLING = """
const names = ['aria-describedby', 'aria-labelledby', 'aria-controls', 'aria-owns'];
return [...document.querySelectorAll(names.map(name => `[${name}]`).join(','))].flatMap(el => names.flatMap(
  name => (el.getAttribute(name) || '').split(/\\s+/).filter(id => id && !document.getElementById(id))
    .map(id => `${name}="${id}" names no element: ${el.outerHTML.slice(0, 120)}`)));
"""

# WCAG 1.4.10 (Reflow): content fits a window 320 CSS pixels wide (a phone, or 1280 pixels at 400 %
# zoom) without scrolling sideways; a data table may scroll in its own box.
REFLOW_WIDTH = 320


def narrow_window_problems(driver) -> list[str]:
    """Set the window 320 px wide and list what makes the page scroll sideways, and scrolling boxes the
    keyboard cannot reach (axe's scrollable-region-focusable); the window is set back afterwards."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.wait import WebDriverWait

    with window_width(driver, REFLOW_WIDTH):
        # A scroll box becomes a Tab stop when its ResizeObserver says it scrolls (static/js/tables.js),
        # which is told at the next frames after the resize, not at once: axe read one box before it.
        driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0)));"
        )
        # Charts redraw for the new width a moment after the resize (Plotly waits for it to settle).
        with suppress(TimeoutException):
            WebDriverWait(driver, 5, poll_frequency=0.2).until(lambda page: not page.execute_script(STICKING_OUT))
        found = driver.execute_script(STICKING_OUT) + violations(driver, ["scrollable-region-focusable"])
    return [f"at {REFLOW_WIDTH} px: {line}" for line in found]


def settled(driver) -> None:
    """Wait until the page's charts and timeline have drawn (axe reads what is on screen)."""
    from selenium.webdriver.support.wait import WebDriverWait

    WebDriverWait(driver, 20).until(lambda page: page.execute_script(DRAWN))


@pytest.mark.django_db(transaction=True)
def test_every_page_meets_wcag_21_aa(browser, live_server, world, demo_archive, django_user_model):  # noqa: F811
    run = ingest.execute_run(ingest.create_run(demo_archive).pk)  # triage runs in-process on the signal
    finding = Finding.objects.filter(result__is_current=True).select_related("job").first()
    assert finding is not None, "the demo fleet should have a finding"
    job = finding.job
    log = job.artifacts.first()
    # An earlier run of the same job, so its page shows the other runs and what changed since.
    earlier = JobFactory(
        cluster=job.cluster,
        team=job.team,
        user=job.user,
        name=job.name or "demo-job",
        start_time=job.start_time - timedelta(days=1),
        end_time=job.start_time - timedelta(hours=20),
    )
    triaged(earlier, "classified", Category.API_MISUSE)
    Job.objects.filter(pk=job.pk).update(name=earlier.name)
    assert queries.job_runs(Job.objects.all(), Job.objects.get(pk=job.pk)).earlier_total == 1
    users = {**world["users"], "anonymous": None}
    pages = [(name, template.format(**world["params"]), role) for name, template, role in page_rows()]
    pages += [
        ("dashboard:home", "/", "operator"),
        ("demo job with findings", f"/jobs/{job.pk}/", "operator"),
        ("demo job's file", f"/jobs/{job.pk}/files/{log.pk}/", "operator"),
        ("demo cause", f"/categories/{finding.category}/", "operator"),
        ("demo ingest run", f"/ingest-runs/{run.pk}/", "operator"),
        ("overview, 90 days", "/?period=90d", "operator"),
        ("jobs, filtered", f"/jobs/?category={finding.category}&sort=util", "operator"),
    ]
    # A rater's labeling form: the other study's jobs are still to label by nina.
    users["nina"] = django_user_model.objects.get(username="nina-rater")
    pages.append(("labeling:label", "/studies/{study_other}/label/{item_other}/".format(**world["params"]), "nina"))
    # And a job nina skipped: its form opens on the reason, and the study page lists the skip.
    study_other = world["params"]["study_other"]
    mine = labeling.assignments_of(Study.objects.get(pk=study_other), users["nina"])
    skipped = mine.exclude(item_id=world["params"]["item_other"]).first()
    labeling.skip_job(skipped, "other", "the log is in a language I cannot read")
    pages.append(("labeling:label, skipped", f"/studies/{study_other}/label/{skipped.item_id}/", "nina"))
    pages.append(("labeling:study with a skip", f"/studies/{study_other}/", "nina"))

    failures = []
    for name, path, role in html_pages(browser, live_server.url, pages, users):
        settled(browser)
        # Folded content (a chart's numbers, a finding's code and fix) is checked unfolded.
        browser.execute_script("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        found = violations(browser) + browser.execute_script(DANGLING)
        found += [
            f"a progress bar without a name: {bar.get_attribute('outerHTML')[:120]}"
            for bar in browser.execute_script("return [...document.querySelectorAll('progress')]")
            if bar.is_displayed() and not bar.accessible_name.strip()  # a hidden one has no name to give
        ]
        found += narrow_window_problems(browser)
        if found:
            failures.append(f"{name} {path} as {role}:\n  " + "\n  ".join(found))
    assert not failures, "accessibility violations:\n" + "\n".join(failures)


@pytest.mark.django_db(transaction=True)
def test_the_first_tab_offers_to_skip_the_menu(browser, live_server, operator):  # noqa: F811
    """Fourteen menu links stand before every page's content; the first Tab stop skips them."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    open_as(browser, live_server.url, operator)
    browser.get(f"{live_server.url}/jobs/")
    ActionChains(browser).send_keys(Keys.TAB).perform()
    focused = browser.switch_to.active_element
    assert focused.text == "Skip to content" and focused.is_displayed()
    focused.send_keys(Keys.ENTER)
    assert browser.execute_script("return document.activeElement.id") == "content"
    ActionChains(browser).send_keys(Keys.TAB).perform()  # on into the page, not back to the menu
    assert browser.execute_script("return document.activeElement.closest('main') !== null")


def test_the_rules_page_counting_jobs_from_an_older_release_meets_wcag_21_aa(browser, live_server, operator):  # noqa: F811
    """The card that says how many jobs older rules triaged (after an upgrade) is checked too: the
    matrix's crawl sees the page with every job at the deployed revision, where it is absent."""
    from triage.models import JobTriage, RuleSet

    for job in JobFactory.create_batch(2):
        JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="healthy", rules_revision=0)
    open_as(browser, live_server.url, operator)
    browser.get(f"{live_server.url}/triage/rules/")
    card = browser.find_element("id", "rules-catchup")
    assert card.text.startswith("Findings from an older release\n2 jobs still carry findings from an older release")
    assert violations(browser) == []


class _References(HTMLParser):
    """The ids a page's elements have, and the ids its ARIA attributes and labels name."""

    ATTRIBUTES = ("aria-describedby", "aria-labelledby", "aria-controls", "aria-owns", "for")

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.named: list[tuple[str, str, str]] = []  # (element, attribute, id)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for attribute in self.ATTRIBUTES:
            if tag == "output" and attribute == "for":
                continue  # names the inputs it is computed from, not a label's control
            for ident in (attrs.get(attribute) or "").split():
                element = f"<{tag} " + " ".join(f"{key}={value!r}" for key, value in attrs.items() if value)[:120]
                self.named.append((element + ">", attribute, ident))


def dangling_references(html: str) -> list[str]:
    """Each aria-describedby, aria-labelledby, aria-controls, aria-owns and label `for` of the page
    that names an id no element of the page has."""
    page = _References()
    page.feed(html)
    return [f"{attribute}={ident!r} on {element}" for element, attribute, ident in page.named if ident not in page.ids]


def test_every_aria_reference_on_the_pages_names_an_element_there(world):
    """The rules page's thresholds and the settings page's exchange rates named a help text in
    aria-describedby ("id_idle_util_helptext", "id_rates-0-rate_helptext") that the page did not have:
    a screen reader said nothing with the field. axe passes a reference while any one of its ids
    exists, so every page of the matrix is read here, as the first role that may see it, and the
    two forms sent back with a mistake (their error messages are named too)."""
    from triage.models import RuleSet

    RuleSet.current()
    users = {**world["users"], "anonymous": None}
    clients: dict[str, Client] = {}
    failures = []

    def client_for(role):
        if role not in clients:
            clients[role] = Client()
            if users[role] is not None:
                clients[role].force_login(users[role])
        return clients[role]

    def check(label, response):
        if response.status_code == 200 and response["Content-Type"].startswith("text/html"):
            found = dangling_references(response.content.decode())
            if found:
                failures.append(f"{label}:\n  " + "\n  ".join(found))
        return response

    checked = 0
    for name, template, role in page_rows():
        path = template.format(**world["params"])
        response = check(f"{name} {path} as {role}", client_for(role).get(path))
        checked += response.status_code == 200
    assert checked > 40, f"only {checked} pages answered"
    operator = client_for("operator")
    rules = check("rules sent back", operator.post("/triage/rules/", {"idle_util": "-1", "note": ""}))
    assert b'id="id_idle_util_error"' in rules.content
    rate = {"rates-TOTAL_FORMS": "1", "rates-INITIAL_FORMS": "0", "rates-0-currency": "EUR", "rates-0-rate": "-3"}
    settings_page = check("settings sent back", operator.post("/settings/", rate))
    assert b'id="id_rates-0-rate_error"' in settings_page.content
    assert not failures, "references to ids the page lacks:\n" + "\n".join(failures)


# A page's table (the first of the selector given it) as laid out (the deliveries, studies and causes
# tables; the overview's top causes): whether its box
# scrolls sideways, whether its column headers and each cell with something in it lie inside the box
# (and the window), each Retry button, and the label shown in each such cell (on a phone, its
# column's name) beside that column's header.
TABLE_LAYOUT = """
const table = document.querySelector(arguments[0] || 'table.data'), box = table.closest('.table-scroll');
const inside = box.getBoundingClientRect(), shown = el => el.checkVisibility();
const within = el => { const r = el.getBoundingClientRect();
  return r.width > 0 && r.left >= inside.left - 1 && r.right <= inside.right + 1 && r.right <= window.innerWidth; };
const words = el => el.textContent.replace(/\\s+/g, ' ').trim();
const headers = [...table.querySelectorAll('thead th')].map(words);
const cells = [...table.querySelectorAll('tbody td')].filter(td => shown(td) && words(td));
return {
  scrolls: box.scrollWidth > box.clientWidth + 1,
  headersShown: table.querySelector('thead').getBoundingClientRect().height > 2,
  headersOut: [...table.querySelectorAll('thead th')].filter(th => !within(th)).map(words),
  cellsOut: cells.filter(td => !within(td)).map(td => headers[td.cellIndex]),
  buttons: [...table.querySelectorAll('tbody button')].filter(shown).map(button => [words(button), within(button)]),
  labels: cells.filter(td => !td.querySelector('button')).map(td => {
    const label = [...td.querySelectorAll('.cell-label')].find(shown);
    return [label ? words(label) : null, headers[td.cellIndex]]; }),
};
"""


def table_layouts(driver, url: str, shot: str, measure=None, table: str = "table.data") -> tuple[dict, dict]:
    """The page's `table` (its first table.data unless told) as laid out (`TABLE_LAYOUT`) at 1280 px and on a
    390-px phone, each screenshot as screenshots/<shot>-<width>.png, with what `measure(driver)` adds to each;
    the phone's also with its axe `violations` and `reflow` (`narrow_window_problems`, last: it resizes the
    window)."""
    layouts = {}
    SHOTS.mkdir(exist_ok=True)
    for width in (1280, 390):
        with window_width(driver, width, mobile=width == 390):
            driver.get(url)
            layouts[width] = driver.execute_script(TABLE_LAYOUT, table) | (measure(driver) if measure else {})
            driver.save_screenshot(str(SHOTS / f"{shot}-{width}.png"))
            if width == 390:
                layouts[width]["violations"] = violations(driver)
                layouts[width]["reflow"] = narrow_window_problems(driver)
    return layouts[1280], layouts[390]
