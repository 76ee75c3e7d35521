"""The site's own error pages (DEBUG off, as served): a page that is not there, or not the reader's to see, is
a Fleet Triage page (its top bar, the phone's width, the dark scheme, a way on), not Django's bare "Not Found"
in black on white at a desktop's width on a phone."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


def without_csrf_token(page: str) -> str:
    """The page less its logout form's token, which differs on every answer."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", page)


def test_a_missing_page_is_the_sites_page_with_its_bar_and_a_way_on(client, member_a):
    client.force_login(member_a)
    response = client.get("/no-such-page/")
    page = response.content.decode()
    assert response.status_code == 404
    assert "<title>Page not found · Fleet Triage</title>" in page
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page  # a phone's width
    assert "css/app.css" in page  # the site's colours, the dark scheme's too
    assert 'class="topbar"' in page and 'href="/overview/"' in page and 'href="/jobs/"' in page
    assert "<h1>Page not found</h1>" in page


def test_another_teams_job_answers_the_same_page_and_says_why_it_may_be_hidden(client, member_a, team_b):
    """A link to a job of a team the reader is not in (a digest forwarded, a colleague's link) is a 404, as a
    missing one is, so the page does not tell the two apart: it says both."""
    client.force_login(member_a)
    job = JobFactory(team=team_b)
    hidden, missing = client.get(f"/jobs/{job.pk}/"), client.get(f"/jobs/{job.pk + 1000}/")
    assert hidden.status_code == missing.status_code == 404
    page = hidden.content.decode()
    assert without_csrf_token(page) == without_csrf_token(missing.content.decode())
    assert "a team's jobs show only to its members" in page


def test_a_reader_who_is_not_logged_in_is_offered_the_login(db):
    page = Client().get("/no-such-page/").content.decode()
    assert 'href="/login/?next=/no-such-page/"' in page
    assert 'class="topbar"' in page and "Log out" not in page


def test_a_server_error_is_the_sites_page_too(client, settings):
    """500.html is rendered with no context (Django's server_error): it must not need a request or the
    database, and still look like the site."""
    from django.template import loader

    page = loader.get_template("500.html").render()
    assert "<title>Server error · Fleet Triage</title>" in page
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert "css/app.css" in page and "Server error" in page


def test_a_form_refused_for_its_csrf_token_says_so_in_the_sites_page(member_a):
    """A form posted from a page left open while its login changed (another tab logged out and in again), or
    with cookies blocked: Django's bare "Forbidden (403) CSRF verification failed" became the site's page,
    saying what to do."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(member_a)
    response = browser.post("/logout/")
    page = response.content.decode()
    assert response.status_code == 403
    assert "<title>Form expired · Fleet Triage</title>" in page and 'class="topbar"' in page
    assert "Go back, reload the page and send the form again" in page
