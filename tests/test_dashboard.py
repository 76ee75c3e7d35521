"""Overview and team pages: the figures an operator reads on Monday, scoped per persona."""

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils.html import escape

from tests.factories import JobFactory, TeamFactory
from tests.reading import as_read, table_rows

pytestmark = pytest.mark.django_db

WEEK_START = datetime(2026, 11, 16, tzinfo=UTC)


@pytest.fixture
def fleet(team_a, team_b):
    """Team A wastes 60 % of 10 GPU-hours this week; team B wastes 10 % of 20; last week A used 5."""
    this_week = [
        JobFactory(
            team=team_a,
            start_time=WEEK_START + timedelta(days=1),
            gpu_hours=10,
            coverage=1.0,
            unused_gpu_hours=6,
            mean_gpu_util=40,
            cost="20.00",
            name="a-low",
        ),
        JobFactory(
            team=team_b,
            start_time=WEEK_START + timedelta(days=2),
            gpu_hours=20,
            coverage=1.0,
            unused_gpu_hours=2,
            mean_gpu_util=90,
            cost="40.00",
            name="b-busy",
        ),
    ]
    last_week = JobFactory(
        team=team_a,
        start_time=WEEK_START - timedelta(days=3),
        gpu_hours=5,
        coverage=1.0,
        unused_gpu_hours=1,
        mean_gpu_util=80,
        cost="10.00",
    )
    return this_week, last_week


@pytest.fixture
def data_before(team_a):
    """A job of two weeks before the fleet's week: the data begin before the week its cards compare with, so
    theirs is a whole comparison (judged better or worse), not one with a week partly covered."""
    return JobFactory(team=team_a, start_time=WEEK_START - timedelta(days=14), gpu_hours=1, mean_gpu_util=90)


def overview(client, **params):
    response = client.get(reverse("dashboard:overview"), {"from": "2026-11-16", "to": "2026-11-22", **params})
    assert response.status_code == 200
    return response


def card(response, label):
    return next(c for c in response.context["cards"] if c["label"] == label)


def test_operator_overview_sums_the_period_and_compares_with_the_previous(client, operator, fleet, data_before):
    client.force_login(operator)
    response = overview(client)
    assert card(response, "GPU-hours")["value"] == "30.0"
    assert card(response, "Unused GPU-hours")["value"] == "8.0"
    assert card(response, "Waste share")["value"] == "27 %"
    assert card(response, "Cost")["value"] == "60"
    assert card(response, "Wasted cost")["value"] == "16"  # 20 x 6/10 + 40 x 2/20
    assert card(response, "Low-utilization jobs")["value"] == "1"
    assert card(response, "GPU-hours")["change_text"] == "+500 %"  # (30 - 5) / 5
    assert card(response, "GPU-hours")["direction"] == 1
    # More GPU time or spend is neither good nor bad (red for a cheaper period before); more waste is.
    assert card(response, "GPU-hours")["trend"] == card(response, "Cost")["trend"] == "neutral"
    assert card(response, "Unused GPU-hours")["trend"] == "worse"
    teams = json.loads(
        response.content.decode().split('id="teams-figure" type="application/json">')[1].split("</script>")[0]
    )
    assert teams["data"][0]["y"] == ["Team B", "Team A"] and teams["data"][0]["x"] == [2.0, 6.0]


def test_a_period_without_jobs_shows_its_falls_in_waste_without_calling_them_better(client, operator, fleet):
    """The week after the fleet's shows 0 everywhere. Its waste figures read "▼ -100 %" in green, as if
    the fleet had stopped wasting, and its empty waste share read "no previous data" though the
    period before had one."""
    client.force_login(operator)
    response = overview(client, **{"from": "2026-11-23", "to": "2026-11-29"})
    for label in ("Unused GPU-hours", "Wasted cost", "Low-utilization jobs"):
        assert card(response, label)["change_text"] == "-100 %" and card(response, label)["trend"] == "neutral"
    assert card(response, "Waste share")["value"] == "–"
    page = response.content.decode()
    assert "no data in this period" in page and "no previous data" not in page
    assert 'class="change better"' not in page and page.count('class="change muted"') >= 3


@pytest.mark.parametrize(
    ("current", "previous", "share", "expected"),
    [
        (999, 1000, False, ("unchanged", 0)),  # -0.1 % read "-0 %", styled as a change
        (400.2, 400.0, False, ("unchanged", 0)),  # and "+0 %"
        (1, 0, False, ("up from 0", 1)),  # read "no previous data" though the period before had jobs
        (0, 0, False, ("unchanged", 0)),
        (5, None, False, ("", None)),
        (0.27, 0.25, True, ("+2 pts", 1)),  # a share moves by points, as the digests say it
        (0.251, 0.25, True, ("unchanged", 0)),
        (30, 5, False, ("+500 %", 1)),
    ],
)
def test_changes_against_the_period_before_are_worded_as_they_round(current, previous, share, expected):
    from triage.dashboard.queries import compare

    assert compare(current, previous, share=share) == expected


def test_member_overview_counts_only_their_team(client, member_a, fleet):
    client.force_login(member_a)
    response = overview(client)
    assert card(response, "GPU-hours")["value"] == "10.0"
    assert "Team B" not in response.content.decode()


def figure(response, name: str) -> dict | None:
    page = response.content.decode()
    marker = f'id="{name}" type="application/json">'
    return json.loads(page.split(marker)[1].split("</script>")[0]) if marker in page else None


def test_a_member_s_overview_says_whose_it_is_and_ranks_the_team_s_users(client, member_a, operator, fleet, team_a):
    """A member's overview was titled "Fleet overview" and ranked teams, a chart of one bar: their
    own. It names their team, ranks its users, and leads to the team's page."""
    JobFactory(team=team_a, user="bob", start_time=WEEK_START + timedelta(days=3), gpu_hours=4, unused_gpu_hours=3)
    client.force_login(member_a)
    response = overview(client)
    page = response.content.decode()
    assert re.search(r"<h1>\s*Overview: Team A\s*</h1>", page)
    users = figure(response, "users-figure")
    assert (users["data"][0]["y"], users["data"][0]["x"]) == (["bob", "someone"], [3.0, 6.0])  # the largest on top
    assert figure(response, "teams-figure") is None
    assert f'href="{reverse("dashboard:team-detail", args=[team_a.slug])}?' in page
    categories = figure(response, "categories-figure")["data"]
    assert categories[0]["name"] == "Team A (share of recoverable GPU-hours)"
    # The legend draws each trace's first colour: a colour per bar made a square matching no bar.
    assert all(isinstance(trace["marker"]["color"], str) for trace in categories)

    client.force_login(operator)
    response = overview(client)
    assert "<h1>Fleet overview</h1>" in response.content.decode() and figure(response, "users-figure") is None
    assert figure(response, "teams-figure")["data"][0]["y"] == ["Team B", "Team A"]


def test_outsider_sees_an_empty_overview_not_an_error(client, outsider, fleet):
    client.force_login(outsider)
    response = overview(client)
    assert card(response, "GPU-hours")["value"] == "0.0"
    assert b"You are in no team yet" in response.content  # not "Pick a longer period": no period has any
    assert b"<h1>Overview</h1>" in response.content  # not the fleet's: they see none of it


@pytest.mark.parametrize(
    "params",
    [
        {"from": "yesterday"},
        {"from": "2026-12-01", "to": "2026-11-01"},
        {"period": "1000y", "from": "", "to": ""},
        # Dates a date picker lets through, whose period before (or weeks around) has no dates.
        {"from": "0001-01-01", "to": "0001-01-05"},
        {"from": "0001-01-01"},
        {"from": "9999-12-25", "to": "9999-12-31"},
        # Each date allowed, but the period before so long a one would start before year 1.
        {"from": "2026-01-01", "to": "5139-12-31"},
    ],
)
@pytest.mark.parametrize("page", ["overview", "team-list", "category-list"])
def test_bad_period_input_falls_back_with_a_message(client, operator, fleet, params, page):
    client.force_login(operator)
    response = client.get(reverse(f"dashboard:{page}"), params)
    assert response.status_code == 200
    assert response.context["period_problem"]
    assert escape(response.context["period_problem"]) in response.content.decode()  # shown on the page


def test_presets_end_at_the_newest_data_not_today(client, operator, fleet):
    client.force_login(operator)
    response = client.get(reverse("dashboard:overview"), {"period": "7d"})
    assert response.context["period"].last_day.isoformat() == "2026-11-18"
    assert card(response, "GPU-hours")["value"] == "35.0"  # 2026-11-12 to 11-18 holds all three jobs


def test_overview_query_count_does_not_grow_with_jobs(client, operator, fleet, django_assert_max_num_queries):
    client.force_login(operator)
    from triage.models import RuleSet

    for i in range(30):
        JobFactory(team=TeamFactory(slug=f"extra-{i}"), start_time=WEEK_START + timedelta(hours=i))
    RuleSet.current()  # a fleet that triages has its first rule set
    # one the rules' low-utilization threshold, one the reader's time zone, one the low jobs the rules did not judge,
    # one the GPU time by GPU model and by queue (queries.by_values)
    with django_assert_max_num_queries(19):
        overview(client)


def test_team_page_query_count_does_not_grow_with_its_jobs(client, member_a, team_a, django_assert_max_num_queries):
    from triage.taxonomy import Category

    client.force_login(member_a)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    for i in range(30):
        job = JobFactory(team=team_a, start_time=WEEK_START + timedelta(hours=i), unused_gpu_hours=i, coverage=1.0)
        _finding(job, list(Category)[i % 15], 1.0)
    # as many for one job: none per job or cause (one: the time zone; one: the low jobs the rules did not judge)
    with django_assert_max_num_queries(23):
        page = client.get(reverse("dashboard:team-detail", args=["team-a"]), week)
    assert page.status_code == 200 and len(page.context["worst_jobs"]) == 15 and len(page.context["causes"]) == 15


def test_team_table_sorts_and_team_pages_are_scoped(client, member_a, operator, fleet, team_b):
    client.force_login(operator)
    rows = client.get(
        reverse("dashboard:team-list"), {"from": "2026-11-16", "to": "2026-11-22", "sort": "gpu_hours"}
    ).context["rows"]
    assert [r["team__slug"] for r in rows] == ["team-b", "team-a"]
    assert rows[1]["waste_share"] == pytest.approx(0.6)
    # By waste share: A wastes 60 %, B 10 %; a team without covered GPU time (no share) comes last.
    JobFactory(team=TeamFactory(slug="team-c"), start_time=WEEK_START, gpu_hours=3, coverage=0.0, unused_gpu_hours=None)
    week = {"from": "2026-11-16", "to": "2026-11-22", "sort": "waste_share"}
    rows = client.get(reverse("dashboard:team-list"), week).context["rows"]
    assert [(r["team__slug"], r["waste_share"]) for r in rows] == [
        ("team-a", pytest.approx(0.6)),
        ("team-b", pytest.approx(0.1)),
        ("team-c", None),
    ]
    csv = b"".join(client.get(reverse("dashboard:team-list"), {**week, "format": "csv"}).streaming_content).decode()
    assert [line.split(",")[0] for line in csv.splitlines()[1:4]] == ["team-a", "team-b", "team-c"]
    client.force_login(member_a)
    assert client.get(reverse("dashboard:team-detail", args=["team-a"])).status_code == 200
    assert client.get(reverse("dashboard:team-detail", args=["team-b"])).status_code == 404
    page = client.get(reverse("dashboard:team-list"), {"from": "2026-11-16", "to": "2026-11-22"})
    assert [r["team__slug"] for r in page.context["rows"]] == ["team-a"]


def test_team_page_lists_the_worst_jobs_first(client, operator, fleet):
    client.force_login(operator)
    page = client.get(reverse("dashboard:team-detail", args=["team-a"]), {"from": "2026-11-10", "to": "2026-11-22"})
    assert [j.name for j in page.context["worst_jobs"]][0] == "a-low"


def _finding(job, category, hours, status="classified"):
    from triage.models import Finding, JobTriage, RuleSet

    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status=status, is_current=True)
    return Finding.objects.create(
        result=result,
        job=job,
        rule_set=result.rule_set,
        category=category,
        confidence=0.9,
        summary="s",
        gpu_hours=hours,
        evidence={},
        guidance={},
    )


def test_the_overview_s_top_causes_say_when_there_are_none(client, operator, fleet):
    """A period whose jobs had no finding showed the Top causes card as a heading over nothing, as if
    the table had failed to load; it says so now, as a team's page does."""
    from triage.taxonomy import Category

    client.force_login(operator)
    html = overview(client).content.decode()
    assert "<h2>Top causes</h2>" in html
    assert '<p class="muted" id="no-causes">No causes of idle GPUs were found in this period\'s jobs.</p>' in html
    (low, _), _ = fleet
    _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    assert 'id="no-causes"' not in overview(client).content.decode()


def test_the_overview_s_top_causes_say_when_they_show_only_the_first_eight(client, operator, fleet):
    """Top causes lists eight causes; a week with more (the demo's last week had 13) dropped the rest without a
    word, beside a chart that draws them all: a cause found in a team's jobs was nowhere in the table. Under
    the table it says how many of how many it shows, and links the causes page for the same period."""
    from triage.models import Finding, JobTriage, RuleSet
    from triage.taxonomy import Category

    (low, _), _ = fleet
    result = JobTriage.objects.create(job=low, rule_set=RuleSet.current(), status="classified", is_current=True)
    for hours, category in enumerate(list(Category)[:9], start=1):
        Finding.objects.create(result=result, job=low, rule_set=result.rule_set, category=category, confidence=0.9,
                               summary="s", gpu_hours=hours / 10, evidence={}, guidance={})  # fmt: skip
    client.force_login(operator)
    card = overview(client).content.decode().split("<h2>Top causes</h2>")[1].split("</section>")[0]
    assert card.count('<tr role="row"><td role="cell">') == 8
    more = card.split('<p id="more-causes">')[1].split("</p>")[0]
    assert "The 8 causes with the most recoverable GPU-hours, of the 9 found" in more
    assert 'href="/categories/?from=2026-11-16&amp;to=2026-11-22">every cause</a>' in more

    Finding.objects.filter(category=list(Category)[0]).delete()  # eight: all of them shown, nothing to say
    assert 'id="more-causes"' not in overview(client).content.decode()


def test_the_overview_s_top_causes_head_their_hours_recoverable_and_say_what_that_means(client, operator, fleet):
    """The Top causes column headed "GPU-hours" held the unused hours the rules lay at a cause's door,
    which a reader took for the jobs' GPU-hours; the teams and causes pages head it "Recoverable
    GPU-hours" (the digests' word for them: "Attributed GPU-hours" there was the same figure) and say
    under the table what that is, and what its cost is."""
    from triage.taxonomy import Category

    (low, _), _ = fleet
    _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    client.force_login(operator)
    card = overview(client).content.decode().split("<h2>Top causes</h2>")[1].split("</section>")[0]
    headers = re.findall(r'<th scope="col"[^>]*>([^<]*)', card)
    assert headers[:3] == ["Cause", "Jobs", "Recoverable GPU-hours"] and "GPU-hours" not in headers
    note = card.split('<p class="muted recoverable-note">')[1].split("</p>")[0]
    assert note.startswith("Recoverable GPU-hours: the unused GPU-hours the rules lay at a cause's door, which fixing")
    assert "attributed" not in card.lower()


def test_the_overview_calls_a_cause_a_cause(client, operator, fleet):
    """The overview's Top causes table headed its first column "Category" and its chart read "recoverable
    GPU-hours by category", where the menu (Causes), the chart's own table of numbers, the teams' pages,
    the jobs list (Cause) and the digests ("by cause") all say cause: one thing, one word."""
    from triage.taxonomy import Category

    (low, _), _ = fleet
    _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    client.force_login(operator)
    page = overview(client).content.decode()
    card = page.split("<h2>Top causes</h2>")[1].split("</section>")[0]
    assert re.findall(r'<th scope="col"[^>]*>([^<]*)', card)[0] == "Cause"
    assert re.findall(r'<span class="cell-label">([^<]*)', card)[0] == "Cause"  # its name on a phone's card
    chart = page.split('data-figure="categories-figure"')[0].rsplit("<h2>", 1)[1].split("</h2>")[0]
    assert chart == "Why GPUs idled: recoverable GPU-hours by cause, beside the paper"


def test_the_overview_says_what_recoverable_gpu_hours_are_once(client, operator, fleet):
    """The paragraph saying what recoverable GPU-hours are stood twice on the overview, under the causes
    chart and again under the Top causes table beside it; it stays with the table (whose Cost column it
    explains too) and the chart's card points the reader to it."""
    from triage.taxonomy import Category

    (low, _), _ = fleet
    _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    client.force_login(operator)
    html = overview(client).content.decode()
    assert html.count("the unused GPU-hours the rules lay at a cause's door") == 1
    chart_card = html.split("<h2>Why GPUs idled")[1].split("</section>")[0]
    assert "recoverable-note" not in chart_card
    assert 'href="#top-causes"' in chart_card and 'id="top-causes"' in html


def test_overview_shows_causes_priced_at_todays_prices_and_the_unclassified_share(client, operator, fleet, settings):
    from fleet.models import GpuModelPrice
    from triage.models import Finding, JobTriage, RuleSet
    from triage.taxonomy import Category

    (low, busy), _ = fleet
    finding = _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    JobTriage.objects.create(job=busy, rule_set=RuleSet.current(), status="unclassified", is_current=True)
    busy.mean_gpu_util = 45
    busy.save()
    # The other jobs stay in USD: the totals are in the reporting currency, EUR here, so the USD
    # jobs (no rate) are left out of them and the EUR cause is added as it is.
    settings.DEFAULT_CURRENCY = "EUR"
    GpuModelPrice.objects.create(cluster=low.cluster, gpu_model="", price_per_gpu_hour="5.00", currency="EUR")
    client.force_login(operator)
    response = overview(client)
    row = response.context["categories"][0]
    assert (row["label"], row["jobs"], row["hours"]) == ("Model checkpointing", 1, 3.0)
    assert row["spend"] == pytest.approx(15.0)  # 3 of the job's 10 GPU-hours at the new 5.00 per GPU-hour
    finding.refresh_from_db()
    assert (str(finding.cost), finding.currency) == ("15.00", "EUR")
    assert (response.context["unclassified"], response.context["triaged_low"]) == (1, 2)
    assert Finding.objects.count() == 1
    # Each of the top causes opens its page for the same period.
    cause_url = (
        f"{reverse('dashboard:category-detail', args=['model_checkpointing'])}?from=2026-11-16&amp;to=2026-11-22"
    )
    assert f'<a href="{cause_url}">Model checkpointing</a>' in response.content.decode()


def test_causes_pages_list_all_15_with_guidance_and_the_jobs_behind_one(client, member_a, fleet):
    from triage.taxonomy import Category

    (low, _), _ = fleet
    _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    client.force_login(member_a)
    page = client.get(reverse("dashboard:category-list"), {"from": "2026-11-16", "to": "2026-11-22"})
    rows = page.context["categories"]
    assert len(rows) == 15 and all(row["guide"].get("what") for row in rows)
    assert next(r for r in rows if r["category"] == Category.MODEL_CHECKPOINTING)["hours"] == 3.0
    detail = client.get(
        reverse("dashboard:category-detail", args=["model_checkpointing"]), {"from": "2026-11-16", "to": "2026-11-22"}
    )
    assert [f.job.name for f in detail.context["findings"]] == ["a-low"]
    assert b"Before" in detail.content and b"After" in detail.content
    assert client.get(reverse("dashboard:category-detail", args=["not_a_cause"])).status_code == 404


def test_a_causes_jobs_head_their_hours_as_the_causes_page_does(client, member_a, fleet):
    """A cause's page headed its jobs' hours "GPU-hours lost" beside a chart and a causes table that call the
    same figure (a finding's share of the job's unused GPU-hours, which add up to the cause's total)
    "Recoverable GPU-hours": one figure, one name, and a job's row reads the hours the causes page sums."""
    from triage.taxonomy import Category

    (low, _), _ = fleet
    _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    client.force_login(member_a)
    page = client.get(
        reverse("dashboard:category-detail", args=["model_checkpointing"]), {"from": "2026-11-16", "to": "2026-11-22"}
    ).content.decode()
    table = page.split('<caption class="visually-hidden">Jobs: Model checkpointing</caption>')[1].split("</table>")[0]
    headers = re.findall(r'<th scope="col"[^>]*>(?:<abbr[^>]*>)?([^<]*)', table)
    assert headers[5] == "Recoverable GPU-hours", headers
    assert as_read(table).count(">3.0<") == 1


def test_causes_of_another_team_stay_hidden(client, member_a, fleet, team_b):
    from triage.taxonomy import Category

    (_, busy), _ = fleet
    _finding(busy, Category.API_MISUSE, 2.0)
    client.force_login(member_a)
    detail = client.get(
        reverse("dashboard:category-detail", args=["api_misuse"]), {"from": "2026-11-16", "to": "2026-11-22"}
    )
    assert list(detail.context["findings"]) == []


def test_a_cause_page_with_one_job_leads_to_it_without_saying_all_1_job(client, operator, fleet):
    """The demo's API misuse in its last week: "All 1 job with this cause in the jobs list". One job is "This
    job"; two or more are still "All n jobs"."""
    from triage.taxonomy import Category

    (low, busy), _ = fleet
    _finding(low, Category.API_MISUSE, 1.0)
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    html = client.get(reverse("dashboard:category-detail", args=["api_misuse"]), week).content.decode()
    link = html.split('<p id="cause-jobs">')[1].split("</p>")[0]
    assert ">This job with this cause in the jobs list &rarr;</a>" in link and "All 1" not in link
    _finding(busy, Category.API_MISUSE, 1.0)
    html = client.get(reverse("dashboard:category-detail", args=["api_misuse"]), week).content.decode()
    assert ">All 2 jobs with this cause in the jobs list &rarr;</a>" in html


def test_a_cause_page_counts_all_its_jobs_and_leads_to_them_in_the_jobs_list(client, operator, fleet, monkeypatch):
    """A cause's page listed its 100 costliest findings under "Jobs 100+", with no way to the
    others: an operator of a large fleet could not learn how many jobs had the cause, nor list
    them. Now the heading counts them all, the page links to them in the jobs list (the same
    jobs: period, cluster and cause), and each job's team links to the team's page."""
    from triage.dashboard import views
    from triage.taxonomy import Category

    monkeypatch.setattr(views, "CAUSE_JOBS_SHOWN", 2)
    (low, busy), _ = fleet
    third = JobFactory(team=low.team, start_time=WEEK_START + timedelta(days=4), name="a-third")
    for job, hours in ((low, 3.0), (busy, 2.0), (third, 1.0)):
        _finding(job, Category.MODEL_CHECKPOINTING, hours)
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    page = client.get(reverse("dashboard:category-detail", args=["model_checkpointing"]), week)
    html = page.content.decode()
    assert [f.job.name for f in page.context["findings"]] == ["a-low", "b-busy"]
    assert '<h2>Jobs <span class="muted">3</span></h2>' in html
    jobs_list = reverse("dashboard:job-list") + (
        "?category=model_checkpointing&amp;start_from=2026-11-16&amp;start_to=2026-11-22&amp;sort=recoverable"
    )
    shown = "The 2 that lost the most GPU-hours."
    assert f'{shown} <a href="{jobs_list}">All 3 jobs with this cause in the jobs list' in html
    listed = client.get(reverse("dashboard:job-list"), {**week, "category": "model_checkpointing"})
    assert listed.context["page"].paginator.count == 3
    team_link = reverse("dashboard:team-detail", args=[low.team.slug]) + "?from=2026-11-16&amp;to=2026-11-22"
    assert f'<a href="{team_link}">{low.team.name}</a>' in html


def test_operator_sets_prices_and_jobs_are_repriced(client, operator, member_a, fleet):
    (low, _), _ = fleet
    url = reverse("dashboard:settings")
    client.force_login(member_a)
    assert client.get(url).status_code == 404
    client.force_login(operator)
    form = {
        "form-TOTAL_FORMS": "1", "form-INITIAL_FORMS": "0", "form-MIN_NUM_FORMS": "0", "form-MAX_NUM_FORMS": "1000",
        "form-0-cluster": str(low.cluster.pk), "form-0-gpu_model": "", "form-0-price_per_gpu_hour": "3.50",
        "form-0-currency": "EUR",
    }  # fmt: skip
    response = client.post(url, form, follow=True)
    assert b"Prices saved" in response.content
    low.refresh_from_db()
    assert (str(low.cost), low.currency) == ("35.00", "EUR")
    from fleet.models import AuditEvent

    assert list(AuditEvent.objects.values_list("action", "actor_name")) == [("price.create", operator.username)]
    form["form-0-price_per_gpu_hour"] = "cheap"
    bad = client.post(url, form)
    assert bad.status_code == 200 and b"Enter a number" in bad.content
    # A price below zero or a currency that is not a code made every job of the cluster cost less than nothing.
    form["form-0-price_per_gpu_hour"], form["form-0-currency"] = "-4", "<b>"
    bad = client.post(url, form).content.decode()
    assert "greater than or equal to 0" in bad and "A three-letter currency code" in bad
    low.refresh_from_db()
    assert (str(low.cost), low.currency) == ("35.00", "EUR")


@pytest.mark.parametrize("prefix", ["form", "rates"])
def test_a_forged_row_count_is_refused_without_building_thousands_of_rows(client, operator, fleet, prefix):
    """A POST saying it holds a billion rows built and rendered Django's cap of 2,000 (13 s a
    request). A table takes its saved rows, its blank ones and a few more saved meanwhile."""
    client.force_login(operator)
    form = {f"{prefix}-TOTAL_FORMS": "1000000000", f"{prefix}-INITIAL_FORMS": "0"}
    response = client.post(reverse("dashboard:settings"), form)
    assert response.status_code == 200
    formset = response.context["formset" if prefix == "form" else "rates"]
    assert len(formset.forms) <= formset.extra + 20
    assert f"Please submit at most {len(formset.forms)} forms." in response.content.decode()


def test_operator_sets_exchange_rates_in_settings(client, operator, member_a, fleet):
    """The rates the totals convert at are set on the settings page, by operators only, each change
    audited; the reporting currency itself and a rate that is not a positive number are refused."""
    from fleet.models import AuditEvent, ExchangeRate, GpuModelPrice

    (low, _), _ = fleet
    GpuModelPrice.objects.create(cluster=low.cluster, gpu_model="", price_per_gpu_hour="2", currency="EUR")
    url = reverse("dashboard:settings")
    client.force_login(operator)
    page = client.get(url).content.decode()
    assert 'id="rates-missing">Prices in EUR have no rate to USD: totals that mix' in page
    assert 'aria-label="Value in the reporting currency, rate 1"' in page
    form = {
        "rates-TOTAL_FORMS": "1", "rates-INITIAL_FORMS": "0", "rates-MIN_NUM_FORMS": "0", "rates-MAX_NUM_FORMS": "1000",
        "rates-0-currency": "EUR", "rates-0-rate": "1.08",
    }  # fmt: skip
    client.force_login(member_a)
    assert client.post(url, form).status_code == 404 and not ExchangeRate.objects.exists()
    client.force_login(operator)
    response = client.post(url, form, follow=True)
    assert b"Exchange rates saved" in response.content and "rates-missing" not in response.content.decode()
    assert [str(rate) for rate in ExchangeRate.objects.all()] == ["1 EUR = 1.08 USD"]
    event = AuditEvent.objects.get(action="exchange_rate.create")
    assert (event.actor_name, event.details) == (operator.username, {"currency": "EUR", "rate": "1.08"})
    assert GpuModelPrice.objects.get(cluster=low.cluster).price_per_gpu_hour == 2  # the prices' form was not touched
    for currency, rate, message in [
        ("USD", "2", "USD is the reporting currency: its rate is 1."),
        ("GBP", "0", "Ensure this value is greater than or equal to"),
        ("GBP", "-1", "Ensure this value is greater than or equal to"),
        ("GBP", "a lot", "Enter a number."),
        ("<b>", "1", "A three-letter currency code"),
        ("EUR", "2", "Exchange rate with this Currency already exists."),
    ]:
        bad = client.post(url, form | {"rates-0-currency": currency, "rates-0-rate": rate})
        assert bad.status_code == 200 and message in bad.content.decode(), (currency, rate)
    assert ExchangeRate.objects.count() == 1 and "<b>" not in client.get(url).content.decode()
    rate = ExchangeRate.objects.get()
    change = form | {"rates-INITIAL_FORMS": "1", "rates-0-id": str(rate.pk), "rates-0-rate": "1.1"}
    client.post(url, change)
    assert str(ExchangeRate.objects.get().rate) == "1.100000"
    client.post(url, change | {"rates-0-DELETE": "on"})  # asks first (tests/test_rate_deletion.py)
    assert ExchangeRate.objects.exists()
    client.post(url, change | {"rates-0-DELETE": "on", "confirm_delete": str(rate.pk)})
    assert not ExchangeRate.objects.exists()
    rate_events = AuditEvent.objects.filter(action__startswith="exchange_rate").order_by("pk")
    actions = list(rate_events.values_list("action", flat=True))
    assert actions == ["exchange_rate.create", "exchange_rate.change", "exchange_rate.delete"]


@pytest.mark.parametrize(("jobs", "step"), [([0, 0], 1), ([0, 3, 4], 1), ([2, 9], 2), ([0, 40], 8)])
def test_the_cause_trend_counts_jobs_in_whole_numbers(jobs, step):
    from datetime import date, timedelta

    from triage.dashboard.figures import category_trend

    rows = [{"week": date(2026, 11, 2) + timedelta(weeks=i), "hours": 1.0, "jobs": n} for i, n in enumerate(jobs)]
    axis = category_trend(rows, "#123456")["layout"]["yaxis2"]
    assert (axis["tickmode"], axis["tick0"], axis["dtick"]) == ("linear", 0, step)  # ticks 0, step, 2 × step…


def test_a_cause_trend_leaves_out_the_weeks_before_the_first_job_its_viewer_can_see(client, operator, fleet, team_b):
    """ "Detections per week" showed 0.0 GPU-hours and 0 jobs for each of its twelve weeks before the
    fleet's first job, in the chart and in its numbers, which no one could tell from a week of jobs
    without the cause. The weeks before the first job the viewer may see are left out; a week of
    jobs without the cause still counts zero."""
    from tests.factories import OwnerFactory, UserFactory
    from triage.taxonomy import Category

    member_b = OwnerFactory(user=UserFactory(username="bob-member"), team=team_b).user
    (low, busy), _ = fleet  # and a job of team A's in the week before (of Nov 9)
    _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    _finding(busy, Category.MODEL_CHECKPOINTING, 2.0)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    url = reverse("dashboard:category-detail", args=["model_checkpointing"])

    def trend(user) -> tuple[list, list, list]:
        client.force_login(user)
        page = client.get(url, week)
        hours, jobs = page.context["trend_figure"]["data"]
        assert hours["x"] == jobs["x"]
        numbers = page.content.decode().split('<details class="figure-data">')[1].split("</details>")[0]
        weeks = page.context["trend_figure"]["numbers"]["dates"]  # each week's Monday, 2026-11-16, in the table
        assert len(weeks) == len(hours["x"])
        assert [row[0] for row in table_rows(numbers, "Recoverable GPU-hours and jobs detected per week")] == weeks
        assert numbers.count('<th scope="row"') == numbers.count('class="when"') == len(hours["x"])
        return hours["x"], hours["y"], jobs["y"]

    assert trend(operator) == (["2026-11-09", "2026-11-16"], [0.0, 5.0], [0, 2])
    assert trend(member_b) == (["2026-11-16"], [2.0], [1])  # team B's first job is of Nov 18


def test_one_job_dated_in_the_future_does_not_take_the_presets_away_from_the_fleet(client, operator, team_a):
    """Presets end at the newest job, but never after today: a job dated 5000-06-01 (times go to 5138)
    made every preset show that one job's week. Its own dates, picked on the page, are accepted."""
    now = datetime.now(tz=UTC).replace(microsecond=0)
    JobFactory(team=team_a, start_time=now - timedelta(days=2), end_time=now - timedelta(days=2, hours=-1))
    future = datetime(5000, 6, 1, tzinfo=UTC)
    JobFactory(team=team_a, start_time=future, end_time=future + timedelta(hours=1))
    client.force_login(operator)
    page = client.get(reverse("dashboard:overview"))
    assert page.context["period"].end.date() == now.date() + timedelta(days=1)
    later = client.get(reverse("dashboard:overview"), {"from": "5000-05-26", "to": "5000-06-01"})
    assert "Dates must lie between" not in later.content.decode()
    assert later.context["period"].start.date().isoformat() == "5000-05-26"


def test_a_finding_as_costly_as_the_largest_job_is_stored_and_shown(client, operator, team_a):
    """Finding.cost held 14 digits where Job.cost holds 20: at a high price a large finding's cost did not
    fit (SQLite stored it and every page reading it answered 500; PostgreSQL refused the triage)."""
    from decimal import Decimal

    from fleet.models import Cluster, GpuModelPrice

    cluster = Cluster.objects.create(name="big")
    GpuModelPrice.objects.create(cluster=cluster, price_per_gpu_hour=Decimal("900000"), currency="KRW")
    job = JobFactory(cluster=cluster, team=team_a, gpu_hours=2e6, mean_gpu_util=10.0)
    job.refresh_from_db()
    finding = _finding(job, "model_checkpointing", 1.2e6)
    finding.cost = Decimal("1080000000000.00")
    finding.save()
    client.force_login(operator)
    for url in (f"/jobs/{job.pk}/", "/categories/model_checkpointing/", f"/api/v1/jobs/{job.pk}/"):
        assert client.get(url).status_code == 200, url


def test_the_overview_labels_costs_with_their_currency_and_says_when_they_mix(client, operator, fleet):
    from fleet.models import Job

    client.force_login(operator)
    assert "cost-note" not in overview(client).content.decode()
    Job.objects.exclude(cost=None).update(currency="EUR")
    page = overview(client)
    assert page.context["currency"] == "EUR" and "cost-note" not in page.content.decode()
    assert page.context["totals"].cost == 60.0  # one currency: added as it is
    text = client.get(reverse("dashboard:team-list"), {"from": "2026-11-16", "to": "2026-11-22"}).content.decode()
    assert "Cost (EUR)" in text and "cost-note" not in text


def test_costs_in_several_currencies_are_converted_at_the_operators_rates_or_left_out(
    client, operator, member_a, fleet
):
    """Jobs priced in EUR and USD were added into one figure as if both were the same money (with
    a note asking for one currency). Now a total is in the reporting currency (DEFAULT_CURRENCY,
    USD): other currencies are converted at the rates set in Settings, and one without a rate is
    left out and the page says how much."""
    from fleet.models import ExchangeRate, Job

    (low, busy), _ = fleet  # this week: team A's 20.00 (6 of 10 GPU-hours unused), team B's 40.00 (2 of 20)
    Job.objects.filter(pk=low.pk).update(currency="EUR")
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}

    page = overview(client)
    totals, html = page.context["totals"], as_read(page.content.decode())
    assert page.context["currency"] == "USD"
    assert (totals.cost, totals.wasted_cost) == (40.0, 4.0)  # team B's alone: EUR has no rate
    note = (
        "Costs in EUR (20 EUR in this period) are left out of the cost figures: no exchange rate to USD is set for it"
    )
    settings_link = f'(<a href="{reverse("dashboard:settings")}">Settings</a>).'
    assert f'<p class="warning-text" id="cost-note">{note} {settings_link}</p>' in html
    teams = {row["team__slug"]: row for row in client.get(reverse("dashboard:team-list"), week).context["rows"]}
    assert (teams["team-a"]["spend"], teams["team-b"]["spend"]) == (0.0, 40.0)
    csv = b"".join(client.get(reverse("dashboard:team-list"), {**week, "format": "csv"}).streaming_content).decode()
    # Said, not lost: in words, and as a number in its currency's column
    # Team A's cost is unknown in USD (its EUR in no figure): empty cells, not 0.0
    assert "team-a,2026-11-16,2026-11-22,1,10.0,6.0,0.6,,,USD,1,20.00 EUR,0,0.0,0,20.00\r\n" in csv
    assert "team-b,2026-11-16,2026-11-22,1,20.0,2.0,0.1,40.0,4.0,USD,0,,0,0.0,0,0.00\r\n" in csv

    ExchangeRate.objects.create(currency="EUR", rate="1.5")
    page = overview(client)
    totals, html = page.context["totals"], as_read(page.content.decode())
    assert (totals.cost, totals.wasted_cost) == (70.0, 22.0)  # 40 + 1.5 × 20; 4 + 1.5 × 20 × 6/10
    note = "Costs in EUR are converted to USD at 1 EUR = 1.5 USD"
    assert f'<p class="muted" id="cost-note">{note} {settings_link}</p>' in html
    assert '70<span class="unit"> USD</span>' in html
    for name in ("dashboard:team-list", "dashboard:category-list"):
        response = client.get(reverse(name), week)
        assert note in as_read(response.content.decode()) and response.context["currency"] == "USD", name
    teams = {row["team__slug"]: row for row in client.get(reverse("dashboard:team-list"), week).context["rows"]}
    assert (teams["team-a"]["spend"], teams["team-a"]["wasted_cost"]) == (30.0, 18.0)
    csv = b"".join(client.get(reverse("dashboard:team-list"), {**week, "format": "csv"}).streaming_content).decode()
    assert "team-a,2026-11-16,2026-11-22,1,10.0,6.0,0.6,30.0,18.0,USD,1,,0,0.0,0\r\n" in csv  # converted: none left out
    # A team's page compares its figures with the period before, so it adds both in one money: team
    # A's USD job of the week before makes its page USD, this week's EUR converted.
    team_page = client.get(reverse("dashboard:team-detail", args=["team-a"]), week)
    assert team_page.context["currency"] == "USD" and team_page.context["totals"].cost == 30.0
    # A team member reads the note without the way to a page they may not open.
    client.force_login(member_a)
    text = as_read(overview(client).content.decode())  # team A's, with its USD job of the week before
    assert f'id="cost-note">{note}.</p>' in text and reverse("dashboard:settings") not in text
    # A team whose jobs of both periods are all in EUR sees them in EUR, as priced, not converted.
    Job.objects.filter(team__slug="team-a").update(currency="EUR")
    team_page = client.get(reverse("dashboard:team-detail", args=["team-a"]), week)
    assert team_page.context["currency"] == "EUR" and team_page.context["totals"].cost == 20.0
    assert "cost-note" not in as_read(team_page.content.decode())


def test_the_overview_names_what_its_own_period_leaves_out_not_the_period_before(client, operator, fleet):
    """The overview picks its currency over its period and the one before (so that the change
    compares like with like), and its note named what both periods left out: a week's note said
    45 EUR when the week's own EUR jobs cost 20."""
    from fleet.models import Job

    (low, _), last_week = fleet
    Job.objects.filter(pk__in=[low.pk, last_week.pk]).update(currency="EUR")  # 20 EUR now, 25 EUR before
    Job.objects.filter(pk=last_week.pk).update(cost="25.00")
    client.force_login(operator)
    html = overview(client).content.decode()
    assert "Costs in EUR (20 EUR in this period) are left out of the cost figures" in html


def test_costs_say_which_jobs_have_no_price_and_an_empty_period_claims_none_missing(client, operator, fleet, team_a):
    """A new cluster's jobs (an upload from a cluster nobody priced yet) have no cost: the totals
    left them out without a word, beside priced jobs, while a period without any job said "No
    GPU-hour prices are set for these jobs' clusters" though every cluster had one. Now the pages
    say how many jobs of which cluster and how many GPU-hours the costs leave out, Settings lists
    them by cluster and GPU model, and an empty period has no note."""
    from fleet.models import Cluster

    gamma = Cluster.objects.create(name="gamma")
    JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START + timedelta(days=3), gpu_hours=8.0, cost=None)
    client.force_login(operator)
    settings_link = f'(<a href="{reverse("dashboard:settings")}">Settings</a>).'

    page = overview(client)
    note = (
        "1 job on cluster gamma in this period (8.0 GPU-hours) has no GPU-hour price, so the cost figures leave it out"
    )
    assert f'<p class="warning-text" id="cost-note">{note} {settings_link}</p>' in as_read(page.content.decode())
    assert page.context["totals"].cost == 60.0  # the priced jobs' alone, as the note says
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    for name in ("dashboard:team-list", "dashboard:category-list"):
        text = as_read(client.get(reverse(name), week).content.decode())
        assert "1 job on cluster gamma (8.0 GPU-hours) has no GPU-hour price" in text, name

    settings_page = as_read(client.get(reverse("dashboard:settings")).content.decode())
    assert 'id="prices-missing"' in settings_page
    assert "<li>gamma / A100-80GB: 1 job, 8.0 GPU-hours</li>" in settings_page

    empty = overview(client, **{"from": "2026-01-05", "to": "2026-01-11"})
    assert empty.context["totals"].jobs == 0 and "cost-note" not in as_read(empty.content.decode())


def test_jobs_without_a_utilization_figure_are_counted_and_listed_not_lost(client, operator, team_a, team_b):
    """A cluster whose one job had no GPU samples showed "0 of 1 jobs at or below 50 %" over an empty
    histogram, with no word of the job: it has no mean utilization, so the histogram, the
    low-utilization count and the waste all leave it out. The overview and the team's page now say
    how many of the period's jobs have no utilization figure, and link to them in the jobs list."""
    from fleet.models import Cluster

    gamma = Cluster.objects.create(name="gamma")
    silent = {"mean_gpu_util": None, "unused_gpu_hours": None, "idle_gpu_hours": None, "coverage": 0.0}
    blank = JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START + timedelta(days=1), name="blank", **silent)
    client.force_login(operator)

    html = as_read(overview(client, cluster="gamma").content.decode())
    query = "start_from=2026-11-16&amp;start_to=2026-11-22&amp;cluster=gamma&amp;no_util=true"
    assert (
        '<p class="warning-text" id="no-util">No job of this period has a utilization figure: no GPU samples were'
        " supplied for its one job, so the histogram and the low-utilization count leave it out"
        f' (<a href="{reverse("dashboard:job-list")}?{query}">list it</a>).</p>'
    ) in html
    assert "0 of 1 jobs" not in html and 'data-figure="histogram-figure"' not in html  # no chart of nothing

    # Beside measured jobs, the count is of the measured ones and the note says how many are missing.
    JobFactory(cluster=gamma, team=team_b, start_time=WEEK_START + timedelta(days=2), mean_gpu_util=30.0)
    html = as_read(overview(client, cluster="gamma").content.decode())
    assert "1 of 1 jobs</a> with a utilization figure at or below 50 % mean utilization." in html
    assert "1 of the period's 2 jobs has no utilization figure: no GPU samples were supplied for it" in html

    week = {"from": "2026-11-16", "to": "2026-11-22"}
    team_page = as_read(client.get(reverse("dashboard:team-detail", args=["team-a"]), week).content.decode())
    query = "team=team-a&amp;start_from=2026-11-16&amp;start_to=2026-11-22&amp;no_util=true"
    assert (
        "No job of this period has a utilization figure: no GPU samples were supplied for its one job, so the"
        " low-utilization jobs, the unused GPU-hours and the worst jobs leave it out"
        f' (<a href="{reverse("dashboard:job-list")}?{query}">list it</a>)'
    ) in team_page

    listed = client.get(reverse("dashboard:job-list"), {"start_from": "2026-11-16", "no_util": "true"})
    assert [job.pk for job in listed.context["page"].object_list] == [blank.pk]
    page = as_read(listed.content.decode())
    assert '<input type="hidden" name="no_util" value="true">' in page  # kept when the filters change
    assert 'id="no-util-filter">The jobs without a utilization figure' in page

    # A period whose jobs all have a figure says nothing of it.
    JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START - timedelta(days=3), mean_gpu_util=80.0)
    html = as_read(overview(client, cluster="gamma", **{"from": "2026-11-09", "to": "2026-11-15"}).content.decode())
    assert "1 jobs</a> at or below 50 % mean utilization." in html and 'id="no-util"' not in html


def as_cells(table: str) -> str:
    """A table of a chart's numbers with each figure as the cell's own text: without the name of its column a
    phone's card gives beside it, the span holding it, and the roles a table of cards writes out."""
    return re.sub(r'<span class="cell-label">.*?</span>|</?span>| role="[a-z]+"', "", table)


def test_the_weekly_trend_adds_up_to_the_gpu_hours_card_with_jobs_without_samples(client, operator, team_a):
    """A cluster whose jobs had no GPU samples drew 0 used and 0 unused GPU-hours a week under a
    GPU-hours card of 8.0: the trend stacked only the sampled time. It now stacks the GPU-hours
    without samples too, in the chart and its numbers, on the overview and the team's page."""
    from fleet.models import Cluster

    gamma = Cluster.objects.create(name="gamma")
    silent = {"mean_gpu_util": None, "unused_gpu_hours": None, "idle_gpu_hours": None, "coverage": 0.0}
    JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START + timedelta(days=1), gpu_hours=8, **silent)
    client.force_login(operator)

    def numbers(html: str) -> list[list[str]]:
        table = as_cells(html.split('data-figure="trend-figure"')[1].split("</details>")[0])
        heads = re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', table)
        return [heads] + [re.findall(r">([^<]+)</t[hd]>", row) for row in table.split("<tbody>")[1].split("</tr>")[:-1]]

    response = overview(client, cluster="gamma")
    assert card(response, "GPU-hours")["value"] == "8.0"
    html = response.content.decode()
    assert numbers(html) == [
        ["Week of (UTC)", "Used GPU-hours", "Unused GPU-hours", "GPU-hours without samples"],
        ["2026-11-16", "0.0", "0.0", "8.0"],
    ]
    assert 'id="unsampled-note">GPU-hours without samples: GPU time that no GPU samples cover' in html
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    team_page = client.get(reverse("dashboard:team-detail", args=["team-a"]), week)
    assert numbers(team_page.content.decode())[1] == ["2026-11-16", "0.0", "0.0", "8.0"]

    # A job sampled for half its time: its other half is without samples, and the bars still add up.
    JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START + timedelta(days=2), gpu_hours=10,
               coverage=0.5, mean_gpu_util=40, unused_gpu_hours=3)  # fmt: skip
    response = overview(client, cluster="gamma")
    assert card(response, "GPU-hours")["value"] == "18.0"
    assert numbers(response.content.decode())[1] == ["2026-11-16", "2.0", "3.0", "13.0"]


def test_a_fully_sampled_trend_keeps_two_series_and_no_note(client, operator, fleet):
    client.force_login(operator)
    response = overview(client)
    names = [trace["name"] for trace in response.context["trend_figure"]["data"]]
    assert names == ["Used GPU-hours", "Unused GPU-hours"]
    assert "unsampled-note" not in response.content.decode()


def test_a_team_page_prices_its_waste_and_says_why_and_what_to_change(client, member_a, operator, fleet):
    """A team's page showed GPU-hours and jobs but neither what its waste cost nor why its GPUs
    idled: the product's promise to a team. The teams table had no wasted cost either."""
    from triage.guidance import headline_change
    from triage.taxonomy import Category

    (low, _), _ = fleet
    _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    client.force_login(member_a)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    page = client.get(reverse("dashboard:team-detail", args=["team-a"]), week)
    totals = page.context["totals"]
    assert (totals.cost, totals.wasted_cost) == (20.0, 12.0)  # 20 for 10 GPU-hours, 6 of them unused
    html = as_read(page.content.decode())
    assert "Wasted cost" in html and '>12<span class="unit"> USD</span>' in html
    [row] = page.context["causes"]
    assert (row["category"], row["jobs"], row["hours"]) == (Category.MODEL_CHECKPOINTING, 1, 3.0)
    assert row["change"] == headline_change(Category.MODEL_CHECKPOINTING) != ""
    assert "The change to make" in html and escape(row["change"].split("`")[0][:30]) in html
    # The cause links to the team's jobs with it in the same period.
    link = re.search(r'<a href="(/jobs/\?[^"]*category=model_checkpointing&amp;sort=recoverable)"', html)[1]
    link = link.replace("&amp;", "&")
    listed = client.get(link).context["page"].object_list
    assert [job.name for job in listed] == ["a-low"]
    worst = page.context["worst_jobs"]
    assert worst[0].name == "a-low" and worst[0].categories == [Category.MODEL_CHECKPOINTING]
    # Each user links to their jobs in the team and period.
    user_link = re.search(rf'<a href="(/jobs/\?[^"]*user={low.user})"', html)[1].replace("&amp;", "&")
    assert [job.name for job in client.get(user_link).context["page"].object_list] == ["a-low"]

    client.force_login(operator)
    teams = reverse("dashboard:team-list")
    rows = client.get(teams, week | {"sort": "wasted_cost"}).context["rows"]
    assert [(r["team__slug"], r["wasted_cost"]) for r in rows] == [("team-a", 12.0), ("team-b", 4.0)]
    assert "Wasted cost (USD)" in as_read(client.get(teams, week).content.decode())


def test_the_weekly_trend_sums_each_week_and_keeps_a_week_without_jobs(team_a, team_b):
    """The trend is one UNION ALL of per-week aggregates (ten times faster on SQLite than a filtered
    sum per week and column); a week without jobs has no row in it and must still be a zero bar."""
    from triage.dashboard import queries
    from triage.dashboard.periods import Period

    def job(team, week, hours, unused):
        JobFactory(team=team, start_time=WEEK_START + timedelta(weeks=week, hours=5), gpu_hours=hours,
                   coverage=1.0, unused_gpu_hours=unused)  # fmt: skip

    job(team_a, -2, 10, 4)
    job(team_a, -2, 5, 1)
    job(team_a, 0, 8, 2)  # nothing the week before: a gap
    job(team_b, -1, 100, 50)
    job(team_a, 1, 7, 7)  # after the period's week: not in its trend
    period = Period(WEEK_START, WEEK_START + timedelta(weeks=1), "custom")
    from fleet.models import Job

    trend = queries.weekly_trend(Job.objects.filter(team=team_a), period)
    assert [(row["week"], row["hours"], row["unused"], row["covered"]) for row in trend] == [
        (WEEK_START - timedelta(weeks=2), 15.0, 5.0, 15.0),  # earlier empty weeks are left off
        (WEEK_START - timedelta(weeks=1), 0.0, 0.0, 0.0),
        (WEEK_START, 8.0, 2.0, 8.0),
    ]
    everyone = queries.weekly_trend(Job.objects.all(), period)
    assert [row["hours"] for row in everyone] == [15.0, 100.0, 8.0]
    assert queries.weekly_trend(Job.objects.none(), period) == []


def test_the_teams_table_exports_each_teams_cost_and_waste_as_csv(client, member_a, operator, fleet):
    import csv
    import io

    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    page = client.get(reverse("dashboard:team-list"), week).content.decode()
    link = re.search(r'href="(\?[^"]*format=csv)" id="teams-csv"', page)[1].replace("&amp;", "&")
    response = client.get(reverse("dashboard:team-list") + link)
    assert response["Content-Disposition"] == 'attachment; filename="teams-2026-11-16-2026-11-22.csv"'
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["team"], r["jobs"], r["gpu_hours"], r["cost"], r["wasted_cost"], r["currency"]) for r in rows] == [
        ("team-a", "1", "10.0", "20.0", "12.0", "USD"),  # 6 of its 10 GPU-hours unused
        ("team-b", "1", "20.0", "40.0", "4.0", "USD"),
    ]
    assert rows[0]["waste_share"] == "0.6" and rows[0]["period_start"] == "2026-11-16"
    client.force_login(member_a)  # a member exports their own teams only
    mine = b"".join(client.get(reverse("dashboard:team-list"), week | {"format": "csv"}).streaming_content).decode()
    assert "team-a" in mine and "team-b" not in mine


def test_the_teams_csv_gives_what_a_cost_leaves_out_as_numbers_by_currency(client, operator, fleet):
    """The teams CSV's `cost_left_out` said in words what a team's cost leaves out for want of an exchange rate
    ("20.00 EUR; 5.25 GBP"): a spreadsheet cannot add that up, nor a script read it without parsing. Each currency
    left out now has a column of its own at the end, `cost_left_out_<currency>`, its amount as a plain number (0.00
    for a team with none in it); the words stay in `cost_left_out`, and a period with nothing left out has no such
    column."""
    import csv
    import io

    from fleet.models import Job

    (low, busy), _ = fleet
    Job.objects.filter(pk=low.pk).update(currency="EUR")  # no rate to USD: left out of team A's cost
    JobFactory(team=low.team, start_time=WEEK_START + timedelta(days=2), cost="5.25", currency="GBP", name="a-gbp")
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22", "format": "csv"}

    def export() -> tuple[list[str], dict[str, dict]]:
        text = b"".join(client.get(reverse("dashboard:team-list"), week).streaming_content).decode()
        reader = csv.DictReader(io.StringIO(text))
        return reader.fieldnames, {row["team"]: row for row in reader}

    header, rows = export()
    assert header[-2:] == ["cost_left_out_EUR", "cost_left_out_GBP"]  # after every older column
    assert header[:-2][-4:] == ["cost_left_out", "unpriced_jobs", "unpriced_gpu_hours", "slurm_step_accounting_jobs"]
    assert (rows["team-a"]["cost_left_out_EUR"], rows["team-a"]["cost_left_out_GBP"]) == ("20.00", "5.25")
    assert (rows["team-b"]["cost_left_out_EUR"], rows["team-b"]["cost_left_out_GBP"]) == ("0.00", "0.00")
    assert sum(float(row["cost_left_out_EUR"]) for row in rows.values()) == 20.0  # a column adds up
    assert rows["team-a"]["cost_left_out"] == "20.00 EUR; 5.25 GBP"  # the words, as before

    Job.objects.filter(currency__in=["EUR", "GBP"]).update(currency="USD")
    header, rows = export()
    assert not [name for name in header if name.startswith("cost_left_out_")]
    assert rows["team-a"]["cost_left_out"] == ""


def test_each_chart_has_its_numbers_as_a_table_under_it(client, operator, fleet, team_a):
    """What a screen reader reads for a chart (and anyone who wants the figures): the same numbers,
    largest team first as the chart shows them, a name from an import escaped once."""
    team_a.name = "<b>A & co</b>"
    team_a.save()
    client.force_login(operator)
    page = overview(client).content.decode()
    tables = re.findall(r'<details class="figure-data">.*?</details>', page, re.DOTALL)
    assert len(tables) == 3  # weekly trend, teams, utilization histogram (no findings: no causes chart)
    teams = next(t for t in tables if "Teams by unused GPU-hours" in t)
    rows = re.findall(r'<tr><th scope="row">(.*?)</th><td class="num">(.*?)</td></tr>', teams)
    assert rows == [("&lt;b&gt;A &amp; co&lt;/b&gt;", "6.0"), ("Team B", "2.0")]
    week = as_cells(next(t for t in tables if "Weekly used and unused GPU-hours" in t))
    assert re.search(
        r'<th scope="row" class="when">2026-11-16</th><td class="num">22.0</td><td class="num">8.0</td>', week
    )
    histogram = next(t for t in tables if "Jobs by mean GPU utilization" in t)
    assert re.search(r'<th scope="row">40–50</th><td class="num">1</td>', histogram)
    assert re.search(r'<th scope="row">90–100</th><td class="num">1</td>', histogram)


def test_a_team_page_does_not_urge_a_change_its_people_set_aside(client, member_a, operator, fleet, team_a):
    """The digest stopped repeating a change a team turned down, but its dashboard page still gave
    that change for every cause. A cause answered wrong or intended (and right by nobody) on every
    job that has it now says so instead; one set aside on some of its jobs keeps the change and says
    on how many. Its jobs and GPU-hours still count."""
    from triage.guidance import headline_change
    from triage.models import Feedback
    from triage.taxonomy import Category

    (low, _), _ = fleet
    other = JobFactory(team=team_a, start_time=WEEK_START + timedelta(days=3), gpu_hours=4, name="a-other")
    found = _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    _finding(other, Category.MODEL_CHECKPOINTING, 1.0)
    found.pk = None  # a second cause of the same triage
    found.category, found.gpu_hours = Category.DATA_EXCHANGE, 2.0
    found.save()
    Feedback.objects.create(job=low, category=Category.DATA_EXCHANGE, user=member_a, verdict="expected")
    Feedback.objects.create(job=low, category=Category.MODEL_CHECKPOINTING, user=operator, verdict="wrong")
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    client.force_login(member_a)

    def causes():
        page = client.get(reverse("dashboard:team-detail", args=["team-a"]), week)
        rows = {row["category"]: row for row in page.context["causes"]}
        cells = {
            row["category"]: re.search(
                rf'category={row["category"].value}&amp;sort=recoverable".*?'
                r'<span class="cell-label">The change to make</span><span>(.*?)</span></td></tr>',
                page.content.decode(),
                re.S,
            )[1]
            for row in page.context["causes"]
        }
        return rows, cells

    rows, cells = causes()
    assert (rows[Category.DATA_EXCHANGE]["jobs"], rows[Category.DATA_EXCHANGE]["hours"]) == (1, 2.0)  # still counted
    assert cells[Category.DATA_EXCHANGE] == "Set aside: answered wrong or intended on its job, right on none."
    assert headline_change(Category.MODEL_CHECKPOINTING).split("`")[0][:30] in cells[Category.MODEL_CHECKPOINTING]
    assert cells[Category.MODEL_CHECKPOINTING].endswith("(set aside on 1 of 2 jobs)")

    # Someone answering right takes the cause back; the change is given again, with no note.
    Feedback.objects.create(job=low, category=Category.DATA_EXCHANGE, user=operator, verdict="right")
    _, cells = causes()
    assert "Set aside" not in cells[Category.DATA_EXCHANGE]
    assert headline_change(Category.DATA_EXCHANGE).split("`")[0][:30] in cells[Category.DATA_EXCHANGE]


def test_a_cluster_chosen_on_one_page_stays_chosen_on_the_pages_it_links_to(client, operator, fleet, team_a):
    """Opening a team (or a cause, or going back) from a page narrowed to a cluster shows that
    cluster's jobs, the ones the page counted, not the whole fleet's."""
    beta = JobFactory(team=team_a, start_time=WEEK_START + timedelta(days=3), gpu_hours=4, name="on-beta")
    beta.cluster.name = "beta"
    beta.cluster.save()
    client.force_login(operator)
    listed = client.get(reverse("dashboard:team-list"), {"from": "2026-11-16", "to": "2026-11-22", "cluster": "beta"})
    page = listed.content.decode()
    link = re.search(rf'href="({reverse("dashboard:team-detail", args=[team_a.slug])}\?[^"]*)"', page).group(1)
    assert "cluster=beta" in link
    team_page = client.get(link.replace("&amp;", "&"))
    assert team_page.context["cluster"] == "beta"
    assert team_page.context["totals"].gpu_hours == 4  # not the 14 of all clusters
    back = re.search(rf'href="({reverse("dashboard:team-list")}\?[^"]*)"', team_page.content.decode()).group(1)
    assert "cluster=beta" in back
    on_overview = overview(client, cluster="beta").content.decode()
    assert f"{reverse('dashboard:team-list')}?from=2026-11-16&amp;to=2026-11-22&amp;cluster=beta" in on_overview


def test_an_unknown_cluster_is_named_and_every_cluster_shown(client, operator, fleet):
    """A mistyped or deleted cluster in a bookmark showed an empty fleet, blaming missing prices."""
    client.force_login(operator)
    response = overview(client, cluster="zzz")
    assert "There is no cluster named &#x27;zzz&#x27;; showing all clusters." in response.content.decode()
    assert response.context["cluster"] == ""
    assert card(response, "GPU-hours")["value"] == "30.0"  # both teams' jobs of the week


def test_the_period_note_says_how_old_the_newest_data_is(client, operator, team_a):
    """The presets end at the newest job: when that is weeks old (an import or a connector stopped),
    the page says so rather than passing last month off as the last 7 days."""
    now = datetime.now(tz=UTC)
    # Midnight 13 days back: 13 days ago by the calendar and by the clock at any hour of today (now - 13 d 1 h
    # was 14 calendar days back in the first hour after midnight UTC, and the test failed then).
    newest = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=13)
    JobFactory(team=team_a, start_time=newest)
    client.force_login(operator)
    page = client.get(reverse("dashboard:overview")).content.decode()
    started = newest.date().isoformat()
    assert f"The newest job started on {started}, 13 days ago: the presets end there." in page
    JobFactory(team=team_a, start_time=now - timedelta(hours=1))
    assert "The newest job started" not in client.get(reverse("dashboard:overview")).content.decode()


def _linked(page: str, text: str) -> str:
    """The href of the link whose text is `text` on the page, unescaped."""
    return re.search(rf'<a href="([^"]*)">{re.escape(text)}</a>', page).group(1).replace("&amp;", "&")


def test_the_overview_counts_open_the_jobs_they_count(client, operator, fleet):
    from triage.models import JobTriage, RuleSet

    (low, busy), _ = fleet
    client.force_login(operator)
    page = overview(client).content.decode()
    low_jobs = client.get(_linked(page, "1 of 2 jobs"))  # at or below 50 % this week: team A's a-low
    assert [job.name for job in low_jobs.context["page"].object_list] == ["a-low"]
    assert "Every one of the" not in page and "unclassified" not in page  # nothing triaged yet: nothing to say

    JobTriage.objects.create(job=low, rule_set=RuleSet.current(), status="unclassified", is_current=True)
    page = overview(client).content.decode()
    assert "1 of 1 triaged low-utilization jobs is unclassified (100 %): no rule explains it yet" in page
    unexplained = client.get(_linked(page, "list it"))
    assert [job.name for job in unexplained.context["page"].object_list] == ["a-low"]

    JobTriage.objects.filter(job=low).update(status="classified")
    page = overview(client).content.decode()
    assert "The one triaged low-utilization job has a cause: none is unclassified." in page


def test_a_team_page_leads_from_its_worst_jobs_to_all_of_them(client, operator, team_a):
    for i in range(17):
        JobFactory(team=team_a, start_time=WEEK_START + timedelta(hours=i), unused_gpu_hours=i, name=f"j{i}")
    client.force_login(operator)
    url = reverse("dashboard:team-detail", args=[team_a.slug])
    page = client.get(url, {"from": "2026-11-16", "to": "2026-11-22"}).content.decode()
    every = client.get(_linked(page, "All 17 jobs of the period &rarr;"))
    assert every.context["page"].paginator.count == 17
    assert every.context["page"].object_list[0].name == "j16"  # most unused first, as the table above


def test_fewer_unused_hours_while_the_waste_share_rose_are_not_called_better(client, operator, team_a):
    """Fewer jobs ran: unused GPU-hours fell (10 to 6) while the waste share rose (10 % to 60 %). The
    cards called the fall better in green, as the digest did; neither is an improvement."""
    before = WEEK_START - timedelta(days=7)  # the first day of the week before: it is whole in the data
    JobFactory(team=team_a, start_time=before, gpu_hours=100, coverage=1.0, unused_gpu_hours=10, cost="100.00")
    JobFactory(team=team_a, start_time=WEEK_START, gpu_hours=10, coverage=1.0, unused_gpu_hours=6, cost="10.00")
    client.force_login(operator)
    response = overview(client)
    assert card(response, "Unused GPU-hours")["direction"] == -1
    assert card(response, "Unused GPU-hours")["trend"] == card(response, "Wasted cost")["trend"] == "neutral"
    assert card(response, "Waste share")["trend"] == "worse"


def test_a_price_set_after_triage_reaches_the_fixs_recoverable_cost_too(client, operator, fleet):
    """The demo triages its jobs on import and prices them after: each finding's cost followed the
    new price, but its fix still said it would recover no money (the API's guidance null, USD nowhere)."""
    from fleet.models import GpuModelPrice
    from triage.guidance import guidance_for
    from triage.taxonomy import Category

    (low, _), _ = fleet
    finding = _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    finding.guidance = guidance_for(
        finding.category_enum, "", {}, gpu_hours=3.0, price_per_gpu_hour=None, currency="", job={}
    )
    finding.save()
    GpuModelPrice.objects.create(cluster=low.cluster, gpu_model="", price_per_gpu_hour="5.00", currency="EUR")
    finding.refresh_from_db()
    assert (str(finding.cost), finding.currency) == ("15.00", "EUR")
    assert (finding.guidance["recoverable_cost"], finding.guidance["currency"]) == ("15.00", "EUR")
    client.force_login(operator)
    page = as_read(client.get(reverse("dashboard:job-detail", args=[low.pk])).content.decode())
    assert "Recoverable for this job: 3.0 GPU-hours (15.00 EUR)." in page


def test_the_pages_count_low_utilization_by_the_rules_threshold(client, operator, fleet):
    """The rules looked at jobs at or below the rule set's threshold, the pages counted those at or
    below a setting of their own: a threshold changed on the Rules page split the two."""
    from triage.models import RuleSet

    client.force_login(operator)
    assert card(overview(client), "Low-utilization jobs")["value"] == "1"  # a-low, at 40 %, of 50 %
    RuleSet.objects.create(version=RuleSet.current().version + 1, thresholds={"low_util_threshold": 30.0})
    response = overview(client)
    assert card(response, "Low-utilization jobs")["value"] == "0"  # 40 % is above 30 %
    assert "0 of 2 jobs</a> at or below 30 % mean utilization" in as_read(response.content.decode())
    settings_page = as_read(client.get(reverse("dashboard:settings")).content.decode())
    assert "mean GPU utilization at or below 30 % (<code>low_util_threshold</code> of rule set v2" in settings_page


def test_the_teams_table_marks_the_column_it_is_sorted_by(client, operator, fleet):
    """The order is marked on its heading; a sort the table does not know falls back to unused
    GPU-hours, and that heading is the one marked (it marked none)."""
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    for sort, heading in [("jobs", "Jobs"), ("team", "Team"), ("nonsense", "Unused GPU-hours")]:
        page = client.get(reverse("dashboard:team-list"), {**week, "sort": sort}).content.decode()
        marked = re.findall(r'<th[^>]*aria-sort="\w+"[^>]*><a [^>]*>([^<]+)</a>', page)
        assert marked == [heading], (sort, marked)


def test_a_phones_sort_links_are_the_teams_tables_sorts(client, operator, fleet):
    """On a phone the column headings are hidden and the same sorts are links above the cards: each
    heading's sort, in the headings' order, under the heading's name (less its currency)."""
    client.force_login(operator)
    page = client.get(reverse("dashboard:team-list"), {"sort": "jobs"}).content.decode()
    headings = re.findall(r'<th [^>]*><a href="[^"]*sort=(\w+)">([^<(]+)', page)
    phone = re.search(r'id="teams-sort">(.*?)</p>', page).group(1)
    links = re.findall(r'sort=(\w+)">([^<]+)</a>|<strong aria-current="true">([^<]+)</strong>', phone)
    named = [(key or "jobs", name or current) for key, name, current in links]
    assert named == [(key, name.strip()) for key, name in headings]
    assert len(named) == 8 and ("jobs", "Jobs") in named


def test_the_settings_page_tells_the_two_idle_thresholds_apart(client, operator, fleet):
    """A job's Idle GPU-hours are counted at import by IDLE_UTIL_THRESHOLD; the rules' findings by
    the rule set's idle_util. The page named only the setting, so an operator who changed idle_util
    on the Rules page read the old figure as the one the rules use."""
    from triage.models import RuleSet

    client.force_login(operator)
    page = as_read(client.get(reverse("dashboard:settings")).content.decode())
    assert "judge idle stretches by <code>idle_util</code> of rule set v1 (5 %)." in page
    RuleSet.objects.create(version=RuleSet.current().version + 1, thresholds={"idle_util": 10.0})
    page = as_read(client.get(reverse("dashboard:settings")).content.decode())
    assert "<code>idle_util</code> of rule set v2 (10 %), which differs" in page


def test_a_team_page_compares_its_figures_with_the_previous_period(client, member_a, fleet, data_before):
    """The overview's cards said how each figure moved; a team's page gave bare numbers, so a team
    could not see whether its waste grew."""
    client.force_login(member_a)
    page = client.get(reverse("dashboard:team-detail", args=["team-a"]), {"from": "2026-11-16", "to": "2026-11-22"})
    assert (card(page, "GPU-hours")["value"], card(page, "GPU-hours")["change_text"]) == ("10.0", "+100 %")  # 5 before
    assert (card(page, "Waste share")["value"], card(page, "Waste share")["trend"]) == ("60 %", "worse")  # 20 % before
    assert card(page, "Jobs")["direction"] == 0  # one job in each week
    html = as_read(page.content.decode())
    assert "▲ +100 % vs previous period" in html and "unchanged vs previous period" in html


def test_the_weekly_trends_heading_and_label_name_the_gpu_hours_without_samples_when_it_draws_them(
    client, operator, team_a
):
    """Since the trend stacks the GPU-hours without samples, its heading and its chart's screen-reader
    label still said "used and unused" over three series; they name the third when it is drawn."""
    from fleet.models import Cluster

    gamma = Cluster.objects.create(name="gamma")
    JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START + timedelta(days=1), gpu_hours=8, mean_gpu_util=80,
               unused_gpu_hours=1.6, coverage=1.0)  # fmt: skip
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22", "cluster": "gamma"}
    team_url = reverse("dashboard:team-detail", args=["team-a"])

    def named(html: str) -> tuple[str, str, str]:
        card = html.split('data-figure="trend-figure"')[0].rsplit('<section class="card"', 1)[1]
        chart = html.split('data-figure="trend-figure"')[1].split(">", 1)[0]
        table = html.split('data-figure="trend-figure"')[1].split("</caption>")[0]
        return (re.search(r"<h2>([^<]*)</h2>", card)[1], re.search(r'aria-label="([^"]*)"', chart)[1],
                table.rsplit(">", 1)[1])  # fmt: skip

    sampled = ("Weekly GPU-hours, used and unused", "Weekly used and unused GPU-hours",
               "Weekly used and unused GPU-hours")  # fmt: skip
    assert named(client.get(reverse("dashboard:overview"), week).content.decode()) == sampled
    assert named(client.get(team_url, week).content.decode()) == sampled

    JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START + timedelta(days=2), gpu_hours=4, mean_gpu_util=None,
               unused_gpu_hours=None, idle_gpu_hours=None, coverage=0.0)  # fmt: skip
    three = "Weekly GPU-hours: used, unused and without samples"
    assert named(client.get(reverse("dashboard:overview"), week).content.decode()) == (three, three, three)
    assert named(client.get(team_url, week).content.decode()) == (three, three, three)


def test_a_cause_pages_fixes_name_their_sub_causes_in_words(client, operator):
    """The fixes were headed by their sub-cause's key ("unbucketed_allreduce_over_sockets: …"), one
    unbreakable word that made the page scroll sideways at 320 px; they are headed in words."""
    client.force_login(operator)
    page = client.get(reverse("dashboard:category-detail", args=["data_exchange"])).content.decode()
    assert "<h3>Unbucketed allreduce over sockets: " in page
    assert "unbucketed_allreduce_over_sockets" not in page


def test_the_overview_says_which_low_utilization_jobs_the_triaged_figure_leaves_out(client, operator, team_a):
    """The card said 19 low-utilization jobs while the note said 'Every one of the 18 triaged
    low-utilization jobs has a cause': the one between was a job the operator rates in a blind study.
    The page says what the others are (not triaged yet, too little data, a failed triage, rated blind),
    each counted and linked, so the two numbers add up; a rater reads nothing of their jobs' results."""
    from triage.labeling.models import Assignment, Study, StudyJob, StudyRater
    from triage.models import JobTriage, RuleSet

    day = WEEK_START + timedelta(days=1)
    rules = RuleSet.current()
    explained, queued, thin, failed, rated = (
        JobFactory(team=team_a, start_time=day, mean_gpu_util=20, name=name)
        for name in ("explained", "queued", "thin", "failed", "rated")
    )
    JobTriage.objects.create(job=explained, rule_set=rules, status="classified", is_current=True)
    JobTriage.objects.create(job=thin, rule_set=rules, status="insufficient_data", is_current=True)
    JobTriage.objects.create(job=failed, rule_set=rules, status="error", is_current=True)
    JobTriage.objects.create(job=rated, rule_set=rules, status="insufficient_data", is_current=True)
    study = Study.objects.create(name="pilot", created_by=operator, seed=1, show_findings=False)
    StudyRater.objects.create(study=study, user=operator)
    Assignment.objects.create(item=StudyJob.objects.create(study=study, job=rated, position=1), rater=operator)
    client.force_login(operator)
    response = overview(client)
    page = response.content.decode()
    assert card(response, "Low-utilization jobs")["value"] == "5"
    assert "The one triaged low-utilization job has a cause: none is unclassified." in page
    text = re.sub(r"<[^>]+>", "", page.split('id="low-not-judged"')[1].split("</p>")[0].split(">", 1)[1])
    assert " ".join(text.split()) == (
        "The 5 low-utilization jobs also include 1 not triaged yet, 1 with too little data for the rules to judge, "
        "1 whose triage failed and 1 you rate in a blind study (its causes stay hidden from you until you submit "
        "your labels)."
    )
    for text, name in (("1 not triaged yet", "queued"), ("1 with too little data for the rules to judge", "thin"),
                       ("1 whose triage failed", "failed")):  # fmt: skip
        listed = client.get(_linked(page, text))
        assert [job.name for job in listed.context["page"].object_list] == [name]
    assert _linked(page, "1 you rate in a blind study") == reverse("labeling:study-list")

    week = {"from": "2026-11-16", "to": "2026-11-22"}
    team_page = client.get(reverse("dashboard:team-detail", args=[team_a.slug]), week).content.decode()
    assert "The 5 low-utilization jobs also include 1 not triaged yet" in re.sub(r"<[^>]+>", "", team_page)

    JobTriage.objects.create(job=queued, rule_set=rules, status="classified", is_current=True)
    JobTriage.objects.filter(job__in=[thin, failed]).update(status="classified")
    StudyRater.objects.filter(study=study).update(submitted_at=day)
    page = overview(client).content.decode()
    assert "Every one of the 4 triaged low-utilization jobs has a cause" in page
    assert "also include" in page and ">1 with too little data" in page  # `rated`, no longer blind, was thin
    assert "blind study" not in page


def test_a_waste_share_reads_the_same_on_a_card_and_in_the_teams_table(client, operator, team_a):
    """One team's week: the overview's Waste share card and the team's cell in the Teams table are the
    same figure, so they are written the same way ("60 %", the app's style), not "60%" on the card and
    "60 %" in the table."""
    JobFactory(team=team_a, start_time=WEEK_START + timedelta(days=1), gpu_hours=10, coverage=1.0, unused_gpu_hours=6)
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    on_card = card(overview(client), "Waste share")["value"]
    teams_page = client.get(reverse("dashboard:team-list"), week).content.decode()
    cells = [row[3] for row in table_rows(teams_page, "Teams")]  # Team, GPU-hours, Unused, Waste share
    assert on_card == "60 %"
    assert cells == [on_card]


def test_table_headings_write_out_unused_gpu_hours_beside_gpu_hours(client, operator, fleet):
    """Beside a "GPU-hours" column a heading does not abbreviate to "Unused GPU-h" or "Low-util jobs"."""
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    team = fleet[0][0].team
    pages = [
        client.get(reverse("dashboard:team-list"), week),
        client.get(reverse("dashboard:job-list"), week),
        client.get(reverse("dashboard:team-detail", args=[team.slug]), week),
    ]
    for page in pages:
        headings = re.findall(r"<th[^>]*>(?:<a [^>]*>)?([^<]+)", page.content.decode())
        assert "GPU-hours" in headings, headings
        assert "Unused GPU-h" not in headings and "Low-util jobs" not in headings, headings
    assert "Unused GPU-hours" in re.findall(r"<th[^>]*>(?:<a [^>]*>)?([^<]+)", pages[0].content.decode())


def test_gpu_hours_read_the_same_on_a_card_and_in_every_table(client, operator, team_a):
    """One team's one job in a week: the GPU-hours and Unused GPU-hours cards, the Teams table, the team
    page's users table and the jobs list show the same figures, so they are written the same way, to a
    tenth with a thousands separator ("1,234.5", "695.8"), not "1234" in a table beside "1,234.5" on a card."""
    JobFactory(
        team=team_a, start_time=WEEK_START + timedelta(days=1), gpu_hours=1234.5, coverage=1.0, unused_gpu_hours=695.8
    )
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    page = overview(client)
    on_cards = [card(page, "GPU-hours")["value"], card(page, "Unused GPU-hours")["value"]]
    assert on_cards == ["1,234.5", "695.8"]
    teams_page = client.get(reverse("dashboard:team-list"), week).content.decode()
    assert table_rows(teams_page, "Teams")[0][1:3] == on_cards
    team_page = client.get(reverse("dashboard:team-detail", args=["team-a"]), week).content.decode()
    assert [row[2:4] for row in table_rows(team_page, "Users of Team A")] == [on_cards]
    jobs_page = client.get(reverse("dashboard:job-list"), {"start_from": "2026-11-16"}).content.decode()
    assert f"GPU-hours</span><span>{on_cards[0]}</span></td>" in jobs_page  # a card's field on a phone
    assert f"GPU-hours</span><span>{on_cards[1]}</span></td>" in jobs_page


# A training script whose Dataset reads each sample from the data root the job's command line gives it.
READS_ITS_DATA_FLAG = """import argparse

import fsspec
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--data", default="/local_ssd/data")
args = parser.parse_args()


class Samples(Dataset):
    def __getitem__(self, index):
        with fsspec.open(f"{args.data}/{index}.bin", "rb") as handle:
            return handle.read()


loader = DataLoader(Samples(), batch_size=32)
"""


def test_a_remote_uri_in_the_jobs_command_is_quoted_as_a_code_line_of_the_finding(client, operator):
    """A remote-reading job launched from a shell script shows the launch line with its URI among the
    finding's code lines (`run.sh:22 python train.py --data s3://...`); launched by its submitted command
    instead, the URI was read (the summary named it) but no line showed where it came from. The command's
    line is quoted as the scripts' are, placed as "the job's command" (it has no file or line of its own)."""
    from tests.test_triage_edge_cases import run, series
    from triage.models import Finding, JobTriage, RuleSet
    from triage.taxonomy import Category

    command = "python train.py --data s3://vision-datasets/food101 --epochs 1"
    frame = series(120, lambda t, g: 30, mem=lambda t, g: 0.6)
    _, result = run(120, frame, scripts=[("train.py", READS_ITS_DATA_FLAG)], cpu_count=16, command=command)
    (finding,) = [f for f in result.findings if f.category == Category.REMOTE_DATA_READING]
    assert [(c.path, c.line, c.text) for c in finding.code][0] == ("job command", 1, command)

    job = JobFactory(command=command)
    triage = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    Finding.objects.create(result=triage, job=job, rule_set=triage.rule_set, category=finding.category,
                           confidence=finding.confidence, summary=finding.summary, gpu_hours=1.0,
                           evidence=finding.evidence(), guidance={})  # fmt: skip
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    code = page.split("<summary>Code</summary>")[1].split("</details>")[0]
    # the options' dashes kept on the line of their words on a phone (guidance_format's option_heads)
    shown = escape(command).replace("--data", '<span class="opt">--data</span>')
    shown = shown.replace("--epochs", '<span class="opt">--epochs</span>')
    assert f'<span class="muted">the job\'s command</span> <code>{shown}</code>' in code


def test_a_cause_pages_fixes_keep_identifiers_as_code(client, operator):
    """The API misuse page headed a fix "Cuda visible devices: …", the environment variable's name
    turned into words a user could not search for or paste; names that are identifiers are shown as
    code, as the guidance's own text shows them, and product names as they are spelled."""
    client.force_login(operator)
    page = client.get(reverse("dashboard:category-detail", args=["api_misuse"])).content.decode()
    assert "<h3><code>CUDA_VISIBLE_DEVICES</code>: Set <code>CUDA_VISIBLE_DEVICES</code> before" in page
    data = client.get(reverse("dashboard:category-detail", args=["data_exchange"])).content.decode()
    assert "<h3><code>DataParallel</code>: " in data
    assert "<h3>NCCL over sockets: " in data


def test_the_weekly_charts_name_each_week_by_its_mondays_iso_date_as_the_app_writes_dates():
    """The weekly charts labelled their weeks "Oct 19", without a year, where the rest of the app (the
    charts' own numbers tables, the period's dates, the timeline's axis) writes 2026-10-19."""
    from datetime import date

    from triage.dashboard.figures import category_trend, weekly_trend

    rows = [
        {"week": date(2026, 10, 19), "covered": 4.0, "unused": 1.0, "hours": 4.0, "jobs": 1},
        {"week": date(2026, 10, 26), "covered": 2.0, "unused": 1.0, "hours": 2.0, "jobs": 2},
    ]
    for figure in (weekly_trend(rows), category_trend(rows, "#123456")):
        assert [trace["x"] for trace in figure["data"]] == [["2026-10-19", "2026-10-26"]] * len(figure["data"])
        assert figure["numbers"]["dates"] == ["2026-10-19", "2026-10-26"]  # as its numbers table says them


def test_a_period_with_no_price_set_shows_no_cost_figure_not_0(client, operator, fleet, team_a):
    """With no GPU-hour price for any job of the period, the Cost cards read "0 USD" (and the note
    "so their costs are 0"): a reader took the period as free. They read "–", and the note counts the
    jobs and GPU-hours that have no price, as the weekly digests do."""
    from fleet.models import Job

    Job.objects.update(cost=None, currency="")
    client.force_login(operator)
    for page in (
        overview(client),
        client.get(reverse("dashboard:team-detail", args=[team_a.slug]), {"from": "2026-11-16", "to": "2026-11-22"}),
    ):
        html = as_read(page.content.decode())
        for label in ("Cost", "Wasted cost"):
            section = html.split(f"<h2>{label}</h2>")[1].split("</section>")[0]
            assert re.search(r'<p class="value">–</p>', section), (label, section)
            assert '<p class="change muted">no price set in this period</p>' in section, (label, section)
        note = html.split('id="cost-note">')[1].split("</p>")[0]
        assert re.match(
            r"No GPU-hour price is set for \d+ jobs? on clusters? .+ in this period \([\d.,]+ GPU-hours\),"
            r" so there is no cost figure",
            note,
        ), note


# A cost cell with no figure for want of a price, as the Cost card words it (templates/dashboard/_no_price.html).
NO_PRICE_CELL = (
    '<span title="no price set in this period">–'
    '<span class="visually-hidden"> (no price set in this period)</span></span>'
)


def test_a_team_with_no_price_set_shows_no_cost_not_0_and_sorts_last_by_cost(client, operator, fleet, team_a, team_b):
    """The teams table read "0" for the cost and wasted cost of a team none of whose jobs of the period is
    priced, as if its GPU time were free. Those cells read "–" (no price set in this period), as the cards
    do; a partly priced team keeps its priced figure (the page's note says what the costs leave out), and
    sorted by cost an unpriced team comes after every priced one, even one priced at 0. The CSV and the API
    leave those costs empty (null), as the page does (tests/test_unknown_costs.py)."""
    from fleet.models import Cluster, Job

    (_, busy), _ = fleet
    Job.objects.filter(pk=busy.pk).update(cost=None, currency="")  # team B: none priced
    gamma = Cluster.objects.create(name="gamma")
    JobFactory(cluster=gamma, team=team_a, start_time=WEEK_START + timedelta(days=3), gpu_hours=8.0, cost=None)
    free = TeamFactory(slug="team-c", name="Team C")  # priced at 0: a figure, 0
    JobFactory(team=free, start_time=WEEK_START + timedelta(days=1), gpu_hours=4, unused_gpu_hours=1, cost="0.00")
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}

    html = as_read(client.get(reverse("dashboard:team-list"), {**week, "sort": "cost"}).content.decode())
    rows = table_rows(html, "Teams")
    assert [row[0] for row in rows] == ["Team A", "Team C", "Team B"]  # unpriced last, after a cost of 0
    no_price = "– (no price set in this period)"
    assert [row[4:6] for row in rows] == [["20", "12"], ["0", "0"], [no_price, no_price]]
    team_b_row = html.split(">Team B</a>")[1].split("</tr>")[0]
    cell = NO_PRICE_CELL
    assert team_b_row.count(f"</span>{cell}</td>") == 2, team_b_row
    note = html.split('id="cost-note">')[1].split("</p>")[0]
    assert "have no GPU-hour price, so the cost figures leave them out" in note, note
    by_wasted = table_rows(
        client.get(reverse("dashboard:team-list"), {**week, "sort": "wasted_cost"}).content.decode(), "Teams"
    )
    assert [row[0] for row in by_wasted] == ["Team A", "Team C", "Team B"]

    csv = b"".join(client.get(reverse("dashboard:team-list"), {**week, "format": "csv"}).streaming_content).decode()
    assert "\r\nteam-b,2026-11-16,2026-11-22,1,20.0,2.0,0.1,,,USD,0,,1,20.0,0\r\n" in csv
    api = {team["team"]: team for team in client.get("/api/v1/teams/", week).json()["teams"]}
    assert (api["team-b"]["cost"], api["team-b"]["unpriced_jobs"], api["team-b"]["jobs"]) == (None, 1, 1)


def test_a_cause_found_only_in_unpriced_jobs_shows_no_cost_not_0(client, operator, fleet):
    """The causes page read "0" for the cost of a cause found only in jobs with no GPU-hour price. It reads
    "–" (no price set in this period), from the same query; a cause with priced findings keeps its figure,
    and a cause with no findings its 0."""
    from decimal import Decimal

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from triage.taxonomy import Category

    (low, busy), _ = fleet
    priced = _finding(low, Category.MODEL_CHECKPOINTING, 3.0)
    priced.cost, priced.currency = Decimal("6.00"), "USD"
    priced.save()
    _finding(busy, Category.INTERACTIVE_JOB, 2.0)  # no cost: its job's cluster has no price
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    html = as_read(client.get(reverse("dashboard:category-list"), week).content.decode())
    costs = {row[1]: row[4] for row in table_rows(html, "The 15 causes of idle GPUs")}
    assert costs[Category.MODEL_CHECKPOINTING.label] == "6"
    assert costs[Category.INTERACTIVE_JOB.label] == "– (no price set in this period)"
    assert costs[Category.IMPROPER_BATCH_SIZE.label] == "0"  # no findings: nothing to cost
    row = html.split(f">{Category.INTERACTIVE_JOB.label}</a>")[1].split("</tr>")[0]
    cell = NO_PRICE_CELL
    assert f"</span>{cell}</td>" in row, row
    # The overview's top causes and a team's causes say it as the causes page does.
    for url, caption in (
        (reverse("dashboard:overview"), "Top causes"),
        (reverse("dashboard:team-detail", args=["team-b"]), "Why Team B's GPUs idled"),
    ):
        page = as_read(client.get(url, week).content.decode())
        costs = {row[0]: row[3] for row in table_rows(page, caption)}
        assert costs[Category.INTERACTIVE_JOB.label] == "– (no price set in this period)", (url, costs)
    # From the one query of the causes: no query per cause, however many are unpriced.
    with CaptureQueriesContext(connection) as before:
        client.get(reverse("dashboard:category-list"), week)
    for i, category in enumerate(list(Category)[:10]):
        job = JobFactory(start_time=WEEK_START + timedelta(hours=i), gpu_hours=2, cost=None)
        _finding(job, category, 1.0)
    with CaptureQueriesContext(connection) as after:
        client.get(reverse("dashboard:category-list"), week)
    assert len(after) == len(before), [q["sql"][:120] for q in after]


def text_of(response) -> str:
    """The page's text as read: no tags, one space for each run of white space."""
    return " ".join(re.sub(r"<[^>]+>", "", as_read(response.content.decode())).split())


def test_a_previous_period_the_data_only_partly_covers_says_where_its_jobs_start(client, operator, team_a):
    """The demo's fleet starts on a Monday; its overview for the last 30 days read "▲ +784 % vs previous
    period" (and a team "+800 %" jobs), red, as if the waste had grown eightfold: the previous 30 days
    held four days of jobs, the rest before anything was imported. For 90 days, "▲ up from 0" everywhere.
    A card now says where the jobs begin: a previous period with none says there is nothing to compare
    with; one the jobs start inside is compared, and says from which day it has jobs."""
    JobFactory(team=team_a, start_time=WEEK_START - timedelta(days=2), gpu_hours=5, unused_gpu_hours=1)
    JobFactory(team=team_a, start_time=WEEK_START + timedelta(days=1), gpu_hours=40, unused_gpu_hours=20)
    client.force_login(operator)
    response = overview(client)  # the previous week: 2026-11-09 to 15, jobs from the 14th
    page = text_of(response)
    # Two days of seven: no percentage, no arrow, only where the jobs start (as a custom range says it).
    assert "no change shown: the previous period has jobs from 2026-11-14 on (2 of 7 days)" in page
    assert "▲" not in page.split("Low-utilization")[0] and "+700 %" not in page
    assert card(response, "GPU-hours")["direction"] is None
    # Two days of a week are no week: no change is judged against it, in green or red.
    assert not {card["trend"] for card in response.context["cards"]} & {"better", "worse"}
    assert 'class="change worse"' not in response.content.decode()
    assert 'class="change better"' not in response.content.decode()
    response = overview(client, **{"from": "2026-11-14", "to": "2026-11-22"})  # the period before has no job
    assert card(response, "GPU-hours")["direction"] is None
    page = text_of(response)
    assert "up from 0" not in page and "no jobs before 2026-11-14 to compare with" in page
    team = client.get(reverse("dashboard:team-detail", args=["team-a"]), {"from": "2026-11-14", "to": "2026-11-22"})
    assert "no jobs before 2026-11-14 to compare with" in text_of(team)
    # Half the previous week or more covered: compared, with where its jobs start.
    JobFactory(team=team_a, start_time=WEEK_START - timedelta(days=4), gpu_hours=5, unused_gpu_hours=1)
    page = text_of(overview(client))
    assert "▲ +300 % vs previous period, partly covered (jobs from 2026-11-12)" in page
    assert "no change shown" not in page
    # Jobs from the previous period's first day on: the plain comparison.
    JobFactory(team=team_a, start_time=WEEK_START - timedelta(days=7), gpu_hours=5, unused_gpu_hours=1)
    page = text_of(overview(client))
    assert "▲ +167 % vs previous period" in page and "partly covered" not in page
    assert card(overview(client), "Unused GPU-hours")["trend"] == "worse"


def test_a_team_opened_from_the_sorted_teams_table_leads_back_to_it_in_that_order(client, operator, fleet):
    """An operator sorts the teams by wasted cost, opens the first, and goes back: '← Teams' showed them
    by unused GPU-hours again. The order chosen goes to the team's page and back; one that is no order
    of the table is not carried."""
    client.force_login(operator)
    week = {"from": "2026-11-16", "to": "2026-11-22"}
    teams = client.get(reverse("dashboard:team-list"), {**week, "sort": "wasted_cost"}).content.decode()
    team_url = reverse("dashboard:team-detail", args=["team-a"])
    link = re.search(rf'href="({team_url}\?[^"]*)"', teams).group(1).replace("&amp;", "&")
    page = client.get(link).content.decode()
    back = f"{reverse('dashboard:team-list')}?from=2026-11-16&amp;to=2026-11-22&amp;sort=wasted_cost"
    assert f'<a href="{back}">&larr; Teams</a>' in page
    page = client.get(team_url, {**week, "sort": "nonsense"}).content.decode()
    assert f'<a href="{reverse("dashboard:team-list")}?from=2026-11-16&amp;to=2026-11-22">&larr; Teams</a>' in page


def test_a_period_button_on_a_team_page_keeps_the_teams_table_order_it_was_opened_with(client, operator, fleet):
    """Opened from the teams table sorted by wasted cost, the team page's 'Last 30 days' dropped the
    order: '← Teams' then showed the teams by unused GPU-hours. The buttons and the form carry it."""
    client.force_login(operator)
    team_url = reverse("dashboard:team-detail", args=["team-a"])
    page = client.get(team_url, {"from": "2026-11-16", "to": "2026-11-22", "sort": "wasted_cost"}).content.decode()
    assert 'href="?period=30d&amp;sort=wasted_cost"' in page
    assert '<input type="hidden" name="sort" value="wasted_cost">' in page
    page = client.get(team_url, {"period": "30d", "sort": "wasted_cost"}).content.decode()
    assert f'<a href="{reverse("dashboard:team-list")}?period=30d&amp;sort=wasted_cost">&larr; Teams</a>' in page
    page = client.get(team_url, {"period": "30d"}).content.decode()
    assert "sort=" not in re.search(r'<span class="presets">.*?</span>', page, re.S).group(0)
