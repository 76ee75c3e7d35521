"""Pages as each persona sees them: login first, then only the jobs they may see."""

import pytest
from django.urls import reverse

from fleet.models import IngestRun
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(team_a, team_b):
    return {
        "a": JobFactory(team=team_a, name="team-a-resnet"),
        "b": JobFactory(team=team_b, name="team-b-llama"),
    }


@pytest.mark.parametrize("name", ["dashboard:job-list", "fleet:ingest-run-list", "dashboard:home"])
def test_pages_send_anonymous_visitors_to_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_the_home_page_keeps_the_filter_it_was_opened_with(client, member_a):
    """A bookmarked or shared /?cluster=...&from=...&to=... opens the overview on that filter, not the
    overview's default week."""
    client.force_login(member_a)
    response = client.get("/?cluster=c1&from=2026-10-19&to=2026-11-23")
    assert response.status_code == 302
    assert response["Location"] == "/overview/?cluster=c1&from=2026-10-19&to=2026-11-23"
    page = client.get(response["Location"]).content.decode()
    assert '<input type="date" name="from" value="2026-10-19">' in page


def test_the_home_page_s_redirect_stays_on_the_site_whatever_its_query(client, member_a):
    """Only the query goes along, re-encoded: nothing in it makes the redirect another site's address
    or adds a header."""
    client.force_login(member_a)
    for query in ("next=https://evil.example/", "//evil.example/", "a=%0d%0aSet-Cookie:%20x=1", "@evil.example"):
        location = client.get(f"/?{query}")["Location"]
        assert location.startswith("/overview/?"), location
        assert "\r" not in location and "\n" not in location and "//" not in location.split("?")[0]
    assert client.get("/")["Location"] == "/overview/"


def test_job_detail_sends_anonymous_visitors_to_login(client, jobs):
    response = client.get(reverse("dashboard:job-detail", args=[jobs["a"].pk]))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_login_page_logs_in_and_lands_on_jobs(client, member_a):
    page = client.get(reverse("login"))
    assert b"csrfmiddlewaretoken" in page.content
    response = client.post(
        reverse("login"), {"username": "alice-member", "password": "correct horse battery staple"}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("dashboard:overview")


def test_team_member_sees_only_their_teams_jobs(client, member_a, jobs):
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-list")).content.decode()
    assert "team-a-resnet" in page
    assert "team-b-llama" not in page
    assert client.get(reverse("dashboard:job-detail", args=[jobs["a"].pk])).status_code == 200
    assert client.get(reverse("dashboard:job-detail", args=[jobs["b"].pk])).status_code == 404


@pytest.mark.parametrize("persona", ["operator", "researcher"])
def test_operators_and_researchers_see_the_whole_fleet(client, request, persona, jobs):
    client.force_login(request.getfixturevalue(persona))
    page = client.get(reverse("dashboard:job-list")).content.decode()
    assert "team-a-resnet" in page and "team-b-llama" in page


def test_outsider_sees_no_jobs(client, outsider, jobs):
    client.force_login(outsider)
    page = client.get(reverse("dashboard:job-list")).content.decode()
    assert "team-a-resnet" not in page and "You are in no team yet" in page
    assert client.get(reverse("dashboard:job-detail", args=[jobs["a"].pk])).status_code == 404


def test_job_list_filters_by_team_and_search(client, operator, jobs):
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-list"), {"team": "team-b"}).content.decode()
    assert "team-b-llama" in page and "team-a-resnet" not in page
    page = client.get(reverse("dashboard:job-list"), {"q": "resnet"}).content.decode()
    assert "team-a-resnet" in page and "team-b-llama" not in page


def test_ingest_runs_are_for_operators_only(client, operator, member_a):
    run = IngestRun.objects.create(
        archive_name="week-47.zip",
        errors=[{"file": "jobs.csv", "row": 4, "field": "gpu_count", "job_id": "9", "message": "not an integer: 'x'"}],
    )
    client.force_login(member_a)
    assert client.get(reverse("fleet:ingest-run-list")).status_code == 404
    assert client.get(reverse("fleet:ingest-run-detail", args=[run.pk])).status_code == 404
    client.force_login(operator)
    page = client.get(reverse("fleet:ingest-run-detail", args=[run.pk])).content.decode()
    assert "week-47.zip" in page and "gpu_count" in page and "not an integer" in page


def test_untrusted_job_fields_are_escaped(client, operator, team_a):
    JobFactory(team=team_a, name="<script>alert(1)</script>", command="<img src=x onerror=alert(2)>")
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-list")).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_healthz_answers_without_login(client):
    response = client.get(reverse("fleet:healthz"))
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_healthz_answers_a_probe_by_address_over_http_behind_the_production_settings(client, settings):
    # compose's healthcheck asks http://127.0.0.1:8000/healthz inside the container, a kubelet the
    # pod's IP: with the site's own name in ALLOWED_HOSTS that was a 400 (DisallowedHost), and with
    # HTTPS=1 a redirect to https:// on a port that speaks none, so the web container was "unhealthy".
    settings.ALLOWED_HOSTS = ["fleet.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/healthz", HTTP_HOST="127.0.0.1:8000")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert client.get("/login/", HTTP_HOST="127.0.0.1:8000").status_code == 400  # every other page: as before
    assert client.get("/login/", HTTP_HOST="fleet.example.org").status_code == 301  # to https://


def test_healthz_is_a_503_in_json_when_the_database_cannot_be_reached(client, monkeypatch):
    from django.db import OperationalError, connection

    def refused(*args, **kwargs):
        raise OperationalError('connection to server at "db" (10.0.0.5), port 5432 failed: Connection refused')

    monkeypatch.setattr(connection, "cursor", refused)
    response = client.get("/healthz")
    assert response.status_code == 503  # was a 500 "Server Error" page
    assert response.json() == {"status": "unavailable", "database": "unreachable"}  # where it is: in the log only


def test_a_job_page_leads_to_its_team_s_week_and_its_user_s_jobs(client, member_a, team_a):
    """Someone who came from a digest to one job saw its team and user as plain text: the way on to the
    team's page (for the week the job ran, which holds it) or the user's other jobs was the menu."""
    from datetime import UTC, datetime

    job = JobFactory(team=team_a, user="lena.c", name="llama", start_time=datetime(2026, 11, 19, 10, tzinfo=UTC))
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    team_url = reverse("dashboard:team-detail", args=[team_a.slug]) + "?from=2026-11-16&amp;to=2026-11-22"
    user_url = reverse("dashboard:job-list") + f"?team={team_a.slug}&amp;user=lena.c"
    assert f'<a href="{team_url}">{team_a.name}</a>' in page and "(week of 2026-11-16)" in page
    assert f'<a href="{user_url}">lena.c</a>' in page
    team_page = client.get(team_url.replace("&amp;", "&"))
    assert team_page.status_code == 200 and team_page.context["totals"].jobs == 1
    jobs_page = client.get(user_url.replace("&amp;", "&"))
    assert [row.pk for row in jobs_page.context["page"]] == [job.pk]
