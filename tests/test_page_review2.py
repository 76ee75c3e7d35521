"""Pages as their users see them, after a second review in Chromium at 320, 390 and 1280 px, light and dark:
menus whose empty choice read Django's "---------", a connector without authentication said to have "Auth:
None", a team's users and the charts' numbers scrolling sideways on a small phone, and the mailed digest's
preview asking the server for a /favicon.ico it does not have (an error in the browser's console)."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone

from fleet import ingest
from fleet.connectors.models import Connector
from fleet.models import Cluster, Job, Team
from tests.test_browser import body_text, browser, window_width  # noqa: F401  (the shared Chromium fixture)
from tests.test_dashboard_browser import console_errors, log_in


def menu(page: str, field_id: str) -> list[str]:
    """The choices of the <select> with id `field_id`, as the menu shows them."""
    select = re.search(rf'<select[^>]*\bid="{field_id}"[^>]*>(.*?)</select>', page, re.DOTALL)
    assert select, f"no menu {field_id}"
    return [unescape(text).strip() for text in re.findall(r"<option[^>]*>(.*?)</option>", select.group(1), re.DOTALL)]


# -- 1. a menu's empty choice in words ------------------------------------------------------------------


def test_the_connector_forms_menus_say_what_their_empty_choice_means(operator_client):
    """A new connector's Kind menu opened on "---------", and so did Metrics from: Django's placeholder, which
    says neither "pick one" nor "none". The Auth kind menu's first choice read "None", which it is not: it is
    no authentication."""
    Connector.objects.create(name="prom", kind=Connector.Kind.PROMETHEUS, url="http://prometheus:9090")
    page = operator_client.get(reverse("connectors:create")).content.decode()
    assert "---------" not in page
    assert menu(page, "id_kind")[0] == "Choose a kind"
    assert menu(page, "id_kind")[1:] == [label for _, label in Connector.Kind.choices]  # every kind, as before
    assert menu(page, "id_metrics_from") == ["None", "prom"]
    assert menu(page, "id_auth")[0] == "No authentication"
    assert "Bearer token" in menu(page, "id_auth")


def test_a_connector_posted_without_a_kind_still_asks_for_one(operator_client):
    response = operator_client.post(reverse("connectors:create"), {"name": "x", "url": "http://x:1", "auth": "none"})
    page = response.content.decode()
    assert response.status_code == 200 and not Connector.objects.exists()
    assert menu(page, "id_kind")[0] == "Choose a kind"
    assert "This field is required." in page


def test_the_settings_price_rows_cluster_menu_says_to_choose_one(operator_client):
    """Settings → GPU-hour prices: a new row's Cluster menu opened on "---------"."""
    Cluster.objects.create(name="alpha")
    page = operator_client.get(reverse("dashboard:settings")).content.decode()
    assert "---------" not in page
    assert menu(page, "id_form-0-cluster") == ["Choose a cluster", "alpha"]


# -- 2. a connector without authentication --------------------------------------------------------------


def test_a_connector_without_authentication_says_so(operator_client):
    """The connector's page read "Auth: None" (the model's label for the choice), as if unset."""
    open_one = Connector.objects.create(name="prom", kind=Connector.Kind.PROMETHEUS, url="http://prometheus:9090")
    guarded = Connector.objects.create(
        name="slurm", kind=Connector.Kind.SLURM, url="http://slurmrestd:6820", cluster="c1", auth=Connector.Auth.BEARER
    )
    page = operator_client.get(reverse("connectors:detail", args=[open_one.pk])).content.decode()
    assert "<dt>Auth</dt><dd>No authentication: requests carry no credentials</dd>" in page
    page = operator_client.get(reverse("connectors:detail", args=[guarded.pk])).content.decode()
    assert "<dt>Auth</dt><dd>Bearer token: " in page and "no secret is set" in page


# -- 3. a team's users and the charts' numbers on a small phone ---------------------------------------------

SCROLLERS = """
return [...document.querySelectorAll(arguments[0])].map(box => ({
  caption: (box.querySelector('caption') || {}).textContent,
  over: box.scrollWidth - box.clientWidth,
  text: box.innerText,
}));
"""


def shown_tables(driver, selector: str) -> list[dict]:
    driver.execute_script("document.querySelectorAll('details.figure-data').forEach(d => { d.open = true; })")
    return driver.execute_script(SCROLLERS, selector)


@pytest.mark.django_db(transaction=True)
def test_on_a_small_phone_a_teams_users_and_the_charts_numbers_fit_their_boxes(
    browser,  # noqa: F811
    live_server,
    operator,
    demo_archive,
):
    """At 320 px the team page's Users table scrolled 9 px sideways in its box, and the tables under the charts
    ("The numbers") 56 px: the unused GPU-hours and the GPU-hours without samples were off to the right. Each now
    fits at 320 and 390 px, every name and figure still in it."""
    ingest.execute_run(ingest.create_run(demo_archive).pk)
    team = max(Team.objects.all(), key=lambda t: Job.objects.filter(team=t).values("user").distinct().count())
    log_in(browser, live_server.url, operator, "/overview/")
    browser.get(f"{live_server.url}/teams/{team.slug}/")
    cells = f"[...document.querySelectorAll('table')].find(t => t.caption.textContent == 'Users of {team.name}')"
    users = browser.execute_script(  # each cell's value, without the name of its column a phone's card adds
        f"return [...{cells}.querySelectorAll('tbody td')].map(td => [...td.childNodes]"
        ".filter(n => !n.classList || !n.classList.contains('cell-label')).map(n => n.textContent).join(''))"
    )
    assert len(users) >= 8, users  # two users' names and figures at least, as the table shows them at 1280 px
    for path in (f"/teams/{team.slug}/", "/overview/"):
        for width in (320, 390):
            with window_width(browser, width, mobile=True):
                browser.get(live_server.url + path)
                boxes = shown_tables(browser, ".table-scroll")
                if path.startswith("/teams/"):
                    (listed,) = [box for box in boxes if box["caption"] == f"Users of {team.name}"]
                    assert all(cell in listed["text"] for cell in users), (users, listed["text"])
                    assert "Unused GPU-hours".upper() in listed["text"].upper()
                assert [box for box in boxes if "GPU-hours" in (box["caption"] or "")], boxes  # a chart's numbers
                for box in boxes:
                    assert box["over"] <= 0, f"{path} at {width} px: {box['caption']!r} scrolls {box['over']} px"
                assert browser.execute_script("return document.documentElement.scrollWidth") <= width


# A phone's numbers of the weekly chart: each figure under its column's name, the names given once (a card a
# row, each figure beside its name, was 2,550 px for the causes' 15): tests/test_page_review3_browser.py.


# -- 4. the mailed digest's preview: no error in the console ------------------------------------------------


def this_week() -> str:
    year, week, _ = timezone.now().isocalendar()
    return f"{year}-W{week:02d}"


@pytest.mark.django_db(transaction=True)
def test_the_mailed_html_preview_logs_no_error_in_the_browsers_console(browser, live_server, operator, team_a):  # noqa: F811
    """The digest's HTML part as mailed has no icon of its own, so the browser asked for /favicon.ico,
    which the server answers 404: an error in the console on every preview."""
    log_in(browser, live_server.url, operator, "/digests/")
    console_errors(browser)  # the log so far, read and so emptied
    for path in (f"/digests/preview/operator/{this_week()}/", f"/digests/preview/team/{team_a.slug}/{this_week()}/"):
        browser.get(f"{live_server.url}{path}?part=html")
        assert "Fleet Triage" in body_text(browser)
        assert console_errors(browser) == [], path


def test_the_preview_of_the_mailed_html_is_the_mail_with_the_sites_icon(operator_client, team_a):
    """The icon is the preview page's: the HTML part itself (as sent) has none, and is otherwise the same."""
    from triage.digests import services

    url = reverse("digests:preview-team", args=[team_a.slug, this_week()])
    preview = operator_client.get(url, {"part": "html"}).content.decode()
    assert re.search(r'<link rel="icon" href="[^"]*favicon\.svg"', preview)
    context = services.build_context("team", this_week(), team_a)
    _, _, mailed = services.render_triplet(services.TEMPLATE_NAMES["team"], context)
    assert 'rel="icon"' not in mailed
