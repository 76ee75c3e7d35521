"""What a page says when there is nothing to show yet: what to do next, not a dead end.

A newcomer who installed the service and logged in as its operator found, on the overview, "No jobs
started in this period. Pick a longer period, or import an archive." (no period has any, and no link
to where one imports), the same on the teams page without the hint, and on the jobs list a command
to run on the server.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from tests.factories import JobFactory

PAGES = ["dashboard:overview", "dashboard:team-list", "dashboard:job-list"]


def page(client, user, name: str, **query) -> str:
    client.force_login(user)
    response = client.get(reverse(name), query)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("name", PAGES)
def test_an_operator_of_a_new_install_is_shown_where_to_bring_in_the_fleet(client, operator, name):
    text = page(client, operator, name)
    assert 'id="nothing-yet"' in text and "No jobs have been imported yet" in text
    assert f'href="{reverse("fleet:ingest-upload")}">Upload an archive</a>' in text
    assert f'href="{reverse("connectors:create")}">Add a connector</a>' in text
    assert "Pick a longer period" not in text
    if name == "dashboard:overview":  # what to do comes first, not six cards of zeros above it
        assert 'class="kpi' not in text and text.count('id="nothing-yet"') == 1


@pytest.mark.django_db
@pytest.mark.parametrize("name", PAGES)
def test_who_cannot_import_is_told_who_does_and_gets_no_link_they_cannot_follow(client, researcher, name):
    text = page(client, researcher, name)
    assert "No jobs have been imported yet. An operator imports" in text
    assert reverse("fleet:ingest-upload") not in text and reverse("connectors:create") not in text


@pytest.mark.django_db
@pytest.mark.parametrize("name", PAGES)
def test_a_member_is_told_whether_they_are_in_no_team_or_their_teams_jobs_are_not_in_yet(
    client, outsider, member_a, team_b, name
):
    JobFactory(team=team_b)  # another team's job: the fleet is not empty, only what they may see
    assert "You are in no team yet" in page(client, outsider, name)
    assert "None of your team's jobs have been imported yet" in page(client, member_a, name)


@pytest.mark.django_db
def test_a_period_or_filter_without_jobs_still_says_so(client, operator):
    JobFactory(start_time=datetime(2026, 11, 10, 9, tzinfo=UTC))
    for name in ("dashboard:overview", "dashboard:team-list"):
        text = page(client, operator, name, **{"from": "2025-01-01", "to": "2025-01-07"})
        assert "No jobs started in this period" in text and 'id="nothing-yet"' not in text
    text = page(client, operator, "dashboard:job-list", q="no-such-job")
    # As the ingest runs' list does: say it is the filters, and offer the way back to every job.
    assert '<p class="empty">No job matches these filters. <a href="?">Show every job</a></p>' in text
    assert 'id="nothing-yet"' not in text


@pytest.mark.django_db
def test_no_connectors_yet_says_what_one_is_for_and_links_to_adding_one(client, operator):
    """The sentence was the one row of an empty nine-column table that scrolls sideways: on a phone it
    ran off to the right ('No connectors yet. See docs/connectors.md for eac'), naming a file of the
    repository no browser opens. Now it is a paragraph of its own, with the links."""
    from fleet.connectors.models import Connector

    text = page(client, operator, "connectors:list")
    assert 'id="no-connectors"' in text and "<table" not in text and "docs/connectors.md" not in text
    assert f'<a href="{reverse("connectors:create")}">Add a connector</a> to pull jobs' in text
    assert f'<a href="{reverse("fleet:ingest-upload")}">Upload</a>' in text
    Connector.objects.create(name="prom", kind="prometheus", url="https://prometheus.example.org")
    text = page(client, operator, "connectors:list")
    assert 'id="no-connectors"' not in text and "<table" in text and ">prom</a>" in text


@pytest.mark.django_db
def test_send_digests_for_a_week_after_the_newest_job_names_the_newest_week(operator):
    """`send_digests --to me@…` on the demo fleet (whose newest job is of 2026-W47) sent digests of
    the last complete week, each 'no jobs started', with nothing saying which week had jobs."""
    from io import StringIO

    from django.core.management import call_command

    JobFactory(start_time=datetime(2026, 11, 20, 9, tzinfo=UTC))  # 2026-W47
    out, err = StringIO(), StringIO()
    call_command("send_digests", "--week", "2026-W49", "--operators", "--dry-run", stdout=out, stderr=err)
    assert (
        "No job started in 2026-W49 (2026-11-30 to 2026-12-06) or since: its digests say 'no jobs started'. "
        "The newest job started in 2026-W47 (2026-11-16 to 2026-11-22); for that week's digests: --week 2026-W47"
    ) in err.getvalue()
    assert "=== operator digest 2026-W49" in out.getvalue()  # still the week asked for

    for week in ("2026-W47", "2026-W46"):  # the newest job's week, or one before it: nothing to say
        err = StringIO()
        call_command("send_digests", "--week", week, "--operators", "--dry-run", stdout=StringIO(), stderr=err)
        assert err.getvalue() == ""


@pytest.mark.django_db
def test_the_pages_that_count_recoverable_gpu_hours_say_what_they_are(client, operator):
    """'Attributed GPU-hours' headed the causes page's column, a team's causes and the overview's chart,
    and no page (nor README) said what they were: unused GPU-hours, or all GPU-hours? Each says it, in
    the digests' word for them, 'Recoverable GPU-hours'."""
    from triage.models import Finding, JobTriage, RuleSet
    from triage.taxonomy import Category

    job = JobFactory(start_time=datetime(2026, 11, 10, 9, tzinfo=UTC), mean_gpu_util=20.0)
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=Category.MODEL_CHECKPOINTING,
                           confidence=0.9, summary="s", gpu_hours=1.0, evidence={}, guidance={})  # fmt: skip
    period = {"from": "2026-11-10", "to": "2026-11-10"}
    client.force_login(operator)
    for url in (reverse("dashboard:overview"), reverse("dashboard:category-list"),
                reverse("dashboard:team-detail", args=[job.team.slug])):  # fmt: skip
        text = client.get(url, period).content.decode()
        assert "Recoverable GPU-hours: the unused GPU-hours the rules lay at a cause" in text, url
        assert "attributed gpu-hours" not in text.lower(), url


@pytest.mark.django_db
def test_the_deliveries_page_says_whether_nothing_went_out_or_nothing_matches(client, operator):
    """The deliveries page said "No deliveries match." both on a new install, where nothing has gone out
    (there was nothing to match), and under filters, with no way back to every delivery but to unpick
    each one."""
    from triage.digests.models import Delivery, DigestKind

    url = reverse("digests:deliveries")
    client.force_login(operator)
    text = client.get(url).content.decode()
    assert "No digest or idle alert has gone out yet" in text and "No deliveries match" not in text
    Delivery.objects.create(
        recipient="ana@example.org", kind=DigestKind.OPERATOR, iso_week="2026-W47", status=Delivery.Status.SENT
    )
    for query in ({"status": "failed"}, {"week": "2026-W01"}, {"kind": DigestKind.IDLE_ALERT}):
        text = client.get(url, query).content.decode()
        assert "No delivery matches these filters." in text, query
        assert f'<a href="{url}">Show every delivery</a>' in text, query


@pytest.mark.django_db
def test_an_operator_without_tokens_is_told_what_one_is_for(client, operator):
    """The tokens page said only "No machine tokens yet.": it says what a token is for and how to make one."""
    text = page(client, operator, "fleet:token-list")
    empty = text.split('<p class="empty" id="no-tokens">')[1].split("</p>")[0]
    assert empty.startswith("No machine tokens yet.")
    assert f"<code>{reverse('archive-list')}</code>" in empty and "without a person's login" in empty
    assert "Name the machine above and create one" in empty


@pytest.mark.django_db
def test_a_teams_period_without_jobs_draws_no_empty_chart(client, operator):
    """A team's page for a period without its jobs drew the weekly GPU-hours chart as an empty frame, its axis
    running from -1 to 4 GPU-hours, beside "No jobs in this period." under Users; the overview draws no chart
    then. The chart's card says there are no jobs, as the others do; a period with jobs keeps its chart."""
    job = JobFactory(start_time=datetime(2026, 11, 10, 9, tzinfo=UTC))
    client.force_login(operator)
    url = reverse("dashboard:team-detail", args=[job.team.slug])
    empty = client.get(url, {"from": "2025-01-01", "to": "2025-01-07"}).content.decode()
    trend = empty.split('id="team-trend"')[1].split("</section>")[0]
    assert "data-figure" not in trend and "No jobs in this period." in trend
    full = client.get(url, {"from": "2026-11-10", "to": "2026-11-10"}).content.decode()
    assert 'data-figure="trend-figure"' in full.split('id="team-trend"')[1].split("</section>")[0]


@pytest.mark.django_db
def test_a_cause_without_detections_in_the_period_draws_no_empty_chart(client, operator):
    """A cause's page for a period without it drew "Detections per week" as an empty frame, its axes running
    from -1 to 4; the card says there were none, as the jobs card under it does. A period with one keeps it."""
    from tests.test_jobs_page import triaged
    from triage.taxonomy import Category

    triaged(JobFactory(start_time=datetime(2026, 11, 10, 9, tzinfo=UTC)), "classified", Category.API_MISUSE)
    client.force_login(operator)
    url = reverse("dashboard:category-detail", args=[Category.API_MISUSE.value])
    empty = client.get(url, {"from": "2025-01-01", "to": "2025-01-07"}).content.decode()
    trend = empty.split('id="cause-trend"')[1].split("</section>")[0]
    assert "data-figure" not in trend and "No detections in this period." in trend
    found = client.get(url, {"from": "2026-11-10", "to": "2026-11-10"}).content.decode()
    assert 'data-figure="trend-figure"' in found.split('id="cause-trend"')[1].split("</section>")[0]


@pytest.mark.django_db
def test_a_job_without_samples_is_not_told_how_to_zoom_a_chart_it_does_not_have(client, operator, storage_dir):
    """A job with no metric samples showed, under "No metric samples were supplied for this job.", how to
    drag across the chart to zoom, double-click to zoom out and read its shaded bands: a chart that is
    not there. That help goes with a chart; a job with samples keeps it, with its downloads."""
    from django.core.files.base import ContentFile

    from fleet.series import to_parquet_bytes
    from tests.conftest import tiny_series

    bare = JobFactory(start_time=datetime(2026, 11, 10, 9, tzinfo=UTC))
    sampled = JobFactory(start_time=datetime(2026, 11, 10, 9, tzinfo=UTC))
    sampled.series_file.save("series.parquet", ContentFile(to_parquet_bytes(tiny_series())))
    client.force_login(operator)

    def timeline_card(job):
        page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
        return page.split("<h2>Timeline</h2>")[1].split("</section>")[0]

    assert "Drag across the chart" not in timeline_card(bare)
    help_text = timeline_card(sampled).split('id="timeline-help"')[1].split("</p>")[0]
    assert "Drag across the chart to zoom" in help_text and "Download the series" in help_text


@pytest.mark.django_db
def test_a_cause_without_owners_answers_says_so_in_a_sentence_and_where_they_answer(client, operator):
    """A cause's 'What job owners said' read "no answers yet on this cause's findings in jobs of the period,
    given on each job's page (...)": a sentence in small letters, greyed whole, that began with the tally's
    word. It is a sentence that says where owners answer."""
    from tests.test_jobs_page import triaged
    from triage.taxonomy import Category

    triaged(JobFactory(start_time=datetime(2026, 11, 10, 9, tzinfo=UTC)), "classified", Category.API_MISUSE)
    client.force_login(operator)
    url = reverse("dashboard:category-detail", args=[Category.API_MISUSE.value])
    said = client.get(url, {"from": "2026-11-10", "to": "2026-11-10"}).content.decode()
    said = said.split("<h2>What job owners said</h2>")[1].split("</section>")[0]
    assert '<p class="muted" id="no-answers">No answers yet on this cause\'s findings in the period\'s jobs.' in said
    assert "no answers yet" not in said
