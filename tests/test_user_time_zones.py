"""A person's own time zone: pages show times in it and name it; machine formats, period boundaries
and mails stay in UTC."""

import csv
import io
from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from fleet.models import UserProfile
from tests.factories import JobFactory
from tests.test_browser import browser  # noqa: F401 (a fixture: headless Chromium)

pytestmark = pytest.mark.django_db

WINTER_START = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # 10:30 in Berlin (CET, +1 h)


@pytest.fixture
def job(team_a):
    return JobFactory(team=team_a, name="winter-run", start_time=WINTER_START)


def berlin(user):
    UserProfile.objects.update_or_create(user=user, defaults={"time_zone": "Europe/Berlin"})
    return user


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_user_in_berlin_sees_a_jobs_times_in_berlin_and_the_zone_named(member_a, job):
    page = logged_in(berlin(member_a)).get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "2026-12-01 10:30:00 Europe/Berlin" in page, "the start time, an hour on from UTC in winter"
    assert "09:30:00" not in page and "10:30:00 UTC" not in page


def test_without_a_choice_a_user_sees_utc(member_a, job):
    page = logged_in(member_a).get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "2026-12-01 09:30:00 UTC" in page


def test_the_zone_ends_with_the_request(member_a, job, client):
    """The zone is per thread: what the next request (another person, or none) sees must not be it."""
    logged_in(berlin(member_a)).get(reverse("dashboard:job-detail", args=[job.pk]))
    assert timezone.get_current_timezone_name() == "UTC"
    login_page = client.get(reverse("login"))
    assert login_page.status_code == 200 and "Europe/Berlin" not in login_page.content.decode()


def test_a_user_picks_a_zone_from_the_page_their_name_leads_to(member_a):
    client = logged_in(member_a)
    overview = client.get(reverse("dashboard:overview")).content.decode()
    assert f'href="{reverse("password_change")}"' in overview
    page = client.get(reverse("password_change")).content.decode()
    assert f'action="{reverse("account-time-zone")}"' in page and 'name="time_zone"' in page

    response = client.post(reverse("account-time-zone"), {"time_zone": "europe/berlin"})
    assert response.status_code == 302 and response["Location"] == reverse("password_change")
    assert UserProfile.objects.get(user=member_a).time_zone == "Europe/Berlin", "spelled as IANA does"
    assert "Europe/Berlin" in client.get(response["Location"]).content.decode()


@pytest.mark.parametrize("name", ["Mars/Base", "../../etc/passwd", "", "x" * 300])
def test_a_zone_that_does_not_exist_is_a_form_error(member_a, name):
    berlin(member_a)
    response = logged_in(member_a).post(reverse("account-time-zone"), {"time_zone": name})
    assert response.status_code == 200
    page = response.content.decode()
    assert 'class="error"' in page and "time zone" in page.lower()
    if name == "Mars/Base":
        assert "Mars/Base" in page and "Europe/Berlin" in page, "says what it refuses and what would do"
    assert UserProfile.objects.get(user=member_a).time_zone == "Europe/Berlin", "nothing changed"


def test_the_time_zone_form_needs_a_login_and_csrf(member_a):
    anonymous = Client().post(reverse("account-time-zone"), {"time_zone": "Europe/Berlin"})
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(member_a)
    assert strict.post(reverse("account-time-zone"), {"time_zone": "Europe/Berlin"}).status_code == 403
    assert not UserProfile.objects.filter(user=member_a).exists()


def test_exports_stay_in_utc(member_a, job):
    client = logged_in(berlin(member_a))
    rows = list(
        csv.DictReader(
            io.StringIO(
                b"".join(client.get(reverse("dashboard:job-list"), {"format": "csv"}).streaming_content).decode()
            )
        )
    )
    assert [row["start_time"] for row in rows] == ["2026-12-01T09:30:00+00:00"]
    api = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert api["start_time"] in ("2026-12-01T09:30:00Z", "2026-12-01T09:30:00+00:00")


def test_period_boundaries_stay_utc_and_say_so(member_a, job):
    """A period is whole UTC days: west of UTC its first midnight is the evening before, which the
    page must not show as the period's first day."""
    UserProfile.objects.create(user=member_a, time_zone="America/New_York")
    page = (
        logged_in(member_a)
        .get(reverse("dashboard:overview"), {"from": "2026-12-01", "to": "2026-12-07"})
        .content.decode()
    )
    assert "2026-12-01 to 2026-12-07 (UTC)" in page


def test_a_study_period_typed_in_utc_is_utc_whoever_types_it(operator):
    from triage.labeling.forms import StudyForm

    with timezone.override("Europe/Berlin"):
        form = StudyForm(data={"period_start": "2026-11-01 00:00"})
        form.is_valid()
    assert form.cleaned_data["period_start"] == datetime(2026, 11, 1, tzinfo=UTC)


def test_a_mail_says_utc_and_is_in_utc_even_sent_from_a_page_in_berlin():
    """A mail goes to many people; one sent by hand (no worker) or previewed is rendered while the
    page's reader's zone is active."""
    from triage.digests.services import render_triplet

    idle_since = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    context = {
        "alert": {"team": "Team A", "threshold": 5, "external_id": "1", "cluster": "c1"},
        "idle_since": idle_since,
        "idle_for": "2 h",
    }
    with timezone.override("Europe/Berlin"):
        _, text, html = render_triplet("idle-alert", context)
    assert "since 2026-12-01 09:30 UTC" in text and "2026-12-01 09:30 UTC" in html


def test_the_charts_say_their_times_are_utc():
    """The weekly charts' weeks are UTC's, whatever the reader's zone; the job timeline is drawn in UTC for a
    reader in UTC (in another zone it is drawn on their clock and says so: tests/test_timeline_time_zone.py)."""
    from datetime import date

    from triage.dashboard import figures

    trend = figures.weekly_trend([{"week": date(2026, 11, 30), "covered": 4.0, "unused": 1.0, "hours": 4.0}])
    assert "UTC" in trend["layout"]["xaxis"]["title"]["text"]

    from datetime import timedelta

    from tests.test_timeline import START, series
    from triage.dashboard.timeline import build_timeline

    timeline = build_timeline(series(1, 600, 30), start=START, end=START + timedelta(minutes=10))
    assert timeline["layout"]["xaxis"]["title"]["text"] == "Time (UTC)"


# Each table box on the page: whether it scrolls sideways, and its headers' words.
TABLE_BOXES = """
return [...document.querySelectorAll('.table-scroll')].map(box => ({
  scrolls: box.scrollWidth > box.clientWidth + 1,
  headers: [...box.querySelectorAll('thead th')].map(th => th.textContent.replace(/\\s+/g, ' ').trim()),
}));
"""


@pytest.mark.django_db(transaction=True)
def test_a_long_zone_name_in_a_header_does_not_push_the_last_columns_out_of_a_1280_px_window(
    browser,  # noqa: F811
    live_server,
    operator,
    job,
):
    """An operator in America/Argentina/Buenos_Aires saw 'Start (America/Argentina/Buenos_Aires)' as one
    unbreakable word over the jobs table, and 'Started (…)' over the ingest runs': at 1280 px the runs'
    Samples and Errors (and, with the demo fleet's job names, the jobs' Cost) were cut off at the right
    of tables that fit for UTC. The name may break after each '/', and reads the same."""
    from fleet.models import IngestRun
    from tests.test_accessibility import open_as
    from tests.test_browser import window_width

    UserProfile.objects.create(user=operator, time_zone="America/Argentina/Buenos_Aires")
    JobFactory(team=job.team, name="convnext-tiny-places-ablation-lr0.0003", user="fatima.l", gpu_count=24, cost=211.22)
    IngestRun.objects.create(source=IngestRun.Source.UPLOAD, archive_name="week.zip", status=IngestRun.Status.SUCCEEDED)
    open_as(browser, live_server.url, operator)
    found = {}
    with window_width(browser, 1280):
        for name, url in (("jobs", reverse("dashboard:job-list")), ("runs", reverse("fleet:ingest-run-list"))):
            browser.get(live_server.url + url)
            found[name] = browser.execute_script(TABLE_BOXES)
    assert [box["scrolls"] for box in found["jobs"] + found["runs"]] == [False, False], found
    assert "Start (America/Argentina/Buenos_Aires)" in found["jobs"][0]["headers"], found
    assert "Started (America/Argentina/Buenos_Aires)" in found["runs"][0]["headers"], found


@pytest.mark.parametrize("chosen", [True, False], ids=["berlin", "no choice"])
def test_a_page_finds_the_readers_zone_in_the_query_that_loads_them(member_a, chosen, django_assert_num_queries):
    """A page asked the database for the reader's zone in a query of its own, on every page (and the settings
    page twice): the zone now comes with the user. The settings page is the session, the user with their
    zone, and their groups (the top bar's links); a page not found the same three, as it has the site's top bar
    (3a6f64c)."""
    client = logged_in(berlin(member_a) if chosen else member_a)
    with django_assert_num_queries(3):
        page = client.get(reverse("password_change")).content.decode()
    zone = "Europe/Berlin" if chosen else "UTC"
    assert f"Times on pages are shown in {zone}." in page and f'value="{zone}"' in page
    with django_assert_num_queries(3):
        missing = client.get("/no-such-page/")
    assert missing.status_code == 404


def test_a_password_login_finds_the_zone_with_the_user_and_a_login_made_before_still_works(member_a, job):
    """A login through the form (fleet.auth's backend) gets the zone in its user's query; a session made
    before, which names Django's own backend, is moved to that backend by migration 0028 and stays logged in."""
    from importlib import import_module

    from django.apps import apps
    from django.contrib.auth import BACKEND_SESSION_KEY
    from django.contrib.sessions.models import Session

    berlin(member_a)
    member_a.set_password("correct horse battery staple")
    member_a.save()
    client = Client()
    assert client.login(username=member_a.username, password="correct horse battery staple")
    assert client.session[BACKEND_SESSION_KEY] == "fleet.auth.ModelBackend"
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "2026-12-01 10:30:00 Europe/Berlin" in page

    session = client.session
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session.save()
    import_module("fleet.migrations.0028_sessions_on_fleet_auth_backend").move_sessions(apps, None)
    assert Session.objects.get(pk=session.session_key).get_decoded()[BACKEND_SESSION_KEY] == "fleet.auth.ModelBackend"
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "2026-12-01 10:30:00 Europe/Berlin" in page


def test_the_settings_page_does_not_jump_past_the_time_zone_to_the_old_password(member_a):
    """Django's password form puts the cursor in Old password: on the settings page, below the time zone
    form, a keyboard or screen reader user opening it to change their zone landed past it."""
    client = logged_in(member_a)
    page = client.get(reverse("password_change")).content.decode()
    assert 'name="old_password"' in page and "autofocus" not in page
    # Nor when the page comes back with the time zone form's error.
    page = client.post(reverse("account-time-zone"), {"time_zone": "Mars/Olympus"}).content.decode()
    assert "is not a time zone name we know" in page and "autofocus" not in page
