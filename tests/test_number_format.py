"""Numbers read the same on every page that shows them: a job's GPU-hours on its own page as in the jobs
list beside it (to a tenth with a thousands separator, "1,234.6", where the job page wrote "1234.57"),
its utilization in whole percent ("46 %", where the job page wrote "46.3 %"), and the charts' "The
numbers" tables as the cards and tables around them ("1,234.5", "53 %", weeks as ISO dates)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from tests.factories import JobFactory
from tests.reading import as_read, table_rows
from triage.labeling import services as labeling
from triage.models import Finding, JobTriage, RuleSet
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

WEEK_START = datetime(2026, 11, 16, tzinfo=UTC)


@pytest.fixture
def job(team_a):
    """A job with figures whose two decimals and one differ: 1234.567 GPU-hours is 1,234.6 in the list."""
    job = JobFactory(
        team=team_a,
        name="wide-job",
        start_time=WEEK_START + timedelta(days=1),
        gpu_hours=1234.567,
        unused_gpu_hours=663.333,
        idle_gpu_hours=3.14159,
        mean_gpu_util=46.3,
        peak_gpu_mem_util=64.6,
    )
    result = JobTriage.objects.create(
        job=job, rule_set=RuleSet.current(), status="classified", is_current=True, mean_util=46.3
    )
    Finding.objects.create(
        result=result, job=job, rule_set=result.rule_set, category=Category.MODEL_CHECKPOINTING, confidence=0.9,
        summary="s", gpu_hours=7.3333, evidence={}, guidance={"recoverable_gpu_hours": 7.33, "change": "c"},
    )  # fmt: skip
    return job


def dd(page: str, term: str) -> str:
    """The text of the <dd> after the <dt> `term` on a page."""
    return re.search(rf"<dt>{re.escape(term)}</dt><dd>(.*?)</dd>", page, re.DOTALL).group(1)


def test_a_jobs_page_writes_its_gpu_hours_and_percentages_as_the_jobs_list_does(client, operator, job):
    client.force_login(operator)
    listed = client.get(reverse("dashboard:job-list")).content.decode()
    assert "GPU-hours</span><span>1,234.6</span></td>" in listed and "GPU-hours</span><span>663.3</span></td>" in listed
    assert ">46\u00a0%</span>" in listed

    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert dd(page, "GPU-hours") == "1,234.6"
    assert dd(page, "Unused GPU-hours") == "663.3"
    assert dd(page, "Idle GPU-hours (&lt; 5\u00a0%)") == "3.1"
    assert dd(page, "Mean GPU utilization").startswith("46\u00a0%")  # "46" and "%" on one line
    assert dd(page, "Peak GPU memory") == "65\u00a0%"
    assert "1 cause found</span>" in page and "at a mean GPU utilization of 46\xa0% ·" in page  # on one line
    assert "1234.57" not in page and "663.33" not in page and "46.3 %" not in page
    # The finding's hours, and what its fix would recover, as the causes pages and digests write them.
    assert "<strong>7.3\u00a0GPU-hours</strong>" in page and "Recoverable for this job: 7.3\u00a0GPU-hours" in page
    assert "7.33 GPU-hours" not in page


def test_a_jobs_idle_gpu_hours_say_the_configured_idle_threshold(client, operator, job, settings):
    """The job page's 'Idle GPU-hours (< 5 %)' wrote 5 whatever IDLE_UTIL_THRESHOLD counted the hours by;
    it says the threshold the hours were counted below, as the settings page does."""
    settings.IDLE_UTIL_THRESHOLD = 2.5
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert dd(page, "Idle GPU-hours (&lt; 2.5\u00a0%)") == "3.1"
    settings.IDLE_UTIL_THRESHOLD = 10.0
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert dd(page, "Idle GPU-hours (&lt; 10\u00a0%)") == "3.1"


def test_a_healthy_jobs_unused_hours_and_its_triage_page_read_as_the_list(client, operator, team_a):
    job = JobFactory(team=team_a, gpu_hours=20.0, unused_gpu_hours=1234.27, mean_gpu_util=82.6)
    JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="healthy", is_current=True)
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "its 1,234.3\u00a0unused GPU-hours still count" in page
    triage_page = client.get(reverse("triage:job", args=[job.pk])).content.decode()
    assert "mean GPU util 83\u00a0%" in triage_page and "82.6 %" not in triage_page


def test_a_shared_gpus_hours_in_the_jobs_facts_read_as_the_list(client, operator, team_a):
    job = JobFactory(team=team_a, gpu_hours=2.85714, gpu_count=2, gpu_unit="mig", gpu_share=1 / 7, gpu_model="H100")
    client.force_login(operator)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    facts = re.search(r'<dd id="job-gpus">(.*?)</dd>', page, re.DOTALL).group(1)
    assert "count 2.9\u00a0GPU-hours" in facts, facts


def test_the_labeling_page_writes_a_jobs_figures_as_its_job_page_does(client, researcher, team_a):
    from tests.test_labeling import make_researcher

    for index in range(4):
        JobFactory(team=team_a, gpu_hours=1234.567, unused_gpu_hours=663.333, mean_gpu_util=20.3 + index)
    study = labeling.create_study(
        name="Pilot", lead=researcher, raters=[researcher, make_researcher("ravi")], sample_size=4, seed=1
    )
    client.force_login(researcher)
    item = study.items.first()
    page = client.get(reverse("labeling:label", args=[study.pk, item.pk])).content.decode()
    assert dd(page, "GPU-hours") == "1,234.6" and dd(page, "Unused GPU-hours") == "663.3"
    assert dd(page, "Mean GPU util").startswith(f"{item.job.mean_gpu_util:.0f}\u00a0%")


CELL_LABEL = re.compile(r'<span class="cell-label">.*?</span>')


def numbers_tables(page: str) -> dict[str, list[list[str]]]:
    """Each 'The numbers' table on a page by its caption: its header row, then each row's cells as read."""
    tables = {}
    for table in re.findall(r'<details class="figure-data">.*?</details>', page, re.DOTALL):
        caption = re.search(r"<caption[^>]*>(.*?)</caption>", table).group(1)
        rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.DOTALL)
        # (without the column's name a phone's card gives beside each figure, and the span holding the figure)
        cells = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", CELL_LABEL.sub("", row)) for row in rows]
        tables[caption] = [[re.sub(r"^<span>(.*)</span>$", r"\1", cell) for cell in row] for row in cells]
    return tables


@pytest.fixture
def big_week(team_a):
    """One job of 2,345.7 GPU-hours in the week of 2026-11-16, 1,100.0 of them unused, with a finding."""
    job = JobFactory(
        team=team_a,
        start_time=WEEK_START + timedelta(days=1),
        gpu_hours=2345.67,
        coverage=1.0,
        unused_gpu_hours=1100.04,
        mean_gpu_util=46.3,
    )
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    Finding.objects.create(
        result=result, job=job, rule_set=result.rule_set, category=Category.MODEL_CHECKPOINTING, confidence=0.9,
        summary="s", gpu_hours=1034.56, evidence={}, guidance={},
    )  # fmt: skip
    return job


WEEK = {"from": "2026-11-16", "to": "2026-11-22"}


def test_the_overviews_numbers_tables_write_figures_as_its_cards_and_tables(client, operator, big_week):
    """The tables under the charts printed the charts' raw values: 1245.6 where the cards write 1,245.6,
    the causes' shares as 16.43 and 100.0 where the page writes whole percent (46 %), and weeks as
    'Nov 16' with no year where the page's dates are ISO (2026-11-16)."""
    client.force_login(operator)
    page = as_read(client.get(reverse("dashboard:overview"), WEEK).content.decode())  # figures as read
    tables = numbers_tables(page)

    trend = tables["Weekly used and unused GPU-hours"]
    assert trend[0] == ["Week of (UTC)", "Used GPU-hours", "Unused GPU-hours"]
    assert ["2026-11-16", "1,245.6", "1,100.0"] in trend
    teams = tables["Teams by unused GPU-hours"]
    assert teams[1:] == [["Team A", "1,100.0"]]
    causes = next(rows for caption, rows in tables.items() if caption.startswith("Share of recoverable GPU-hours"))
    assert ["Model checkpointing", "100 %", "16 %"] in causes  # the paper's 16.43 %
    assert ["Remote data reading", "0 %", "3 %"] in causes  # 2.55 %
    histogram = tables["Jobs by mean GPU utilization"]
    assert ["40–50", "1"] in histogram and ["0–10", "0"] in histogram


def test_the_causes_numbers_table_says_percent_once_in_each_cell_not_also_in_its_caption(client, operator, big_week):
    """The causes chart's numbers table was captioned '... share of issues (%)' though each of its cells
    now carries its own sign ('16 %'): the caption says what the figures are, the cells their unit."""
    client.force_login(operator)
    tables = numbers_tables(client.get(reverse("dashboard:overview"), WEEK).content.decode())
    caption, causes = next(item for item in tables.items() if item[0].startswith("Share of recoverable GPU-hours"))
    assert not caption.endswith("(%)"), caption
    assert caption.startswith("Share of recoverable GPU-hours by cause, beside the ICSE"), caption
    assert all(cell.endswith("\u00a0%") for row in causes[1:] for cell in row[1:]), causes


def test_a_team_and_a_cause_page_write_their_numbers_tables_the_same_way(client, operator, big_week):
    client.force_login(operator)
    team_page = client.get(reverse("dashboard:team-detail", args=["team-a"]), WEEK).content.decode()
    assert ["2026-11-16", "1,245.6", "1,100.0"] in numbers_tables(team_page)["Weekly used and unused GPU-hours"]
    cause = client.get(reverse("dashboard:category-detail", args=["model_checkpointing"]), WEEK).content.decode()
    trend = numbers_tables(cause)["Recoverable GPU-hours and jobs detected per week"]
    assert trend[0] == ["Week of (UTC)", "Recoverable GPU-hours", "Jobs detected"]
    assert trend[-1] == ["2026-11-16", "1,034.6", "1"]


def test_a_teams_name_heads_its_share_column_escaped_once(client, member_a, team_a, big_week):
    """A member's causes chart names their team in its legend, escaped for Plotly; the table under it
    printed that escaped name escaped again: 'R&amp;amp;D' where the page says 'R&amp;D'."""
    team_a.name = "R&D <lab>"
    team_a.save()
    client.force_login(member_a)
    page = client.get(reverse("dashboard:overview"), WEEK).content.decode()
    causes = next(rows for caption, rows in numbers_tables(page).items() if caption.startswith("Share of recoverable"))
    assert causes[0][1] == "R&amp;D &lt;lab&gt; (share of recoverable GPU-hours)"


def test_a_findings_time_windows_are_written_in_the_readers_zone_as_the_pages_other_times(client, member_a, team_a):
    """A finding's windows printed the evidence's raw '2026-11-17T09:15:00Z' under 'From (UTC)' on a
    page whose other times are '2026-11-17 10:08:00 Europe/Berlin' in the reader's zone."""
    from fleet.models import UserProfile

    UserProfile.objects.update_or_create(user=member_a, defaults={"time_zone": "Europe/Berlin"})
    job = JobFactory(team=team_a, start_time=datetime(2026, 11, 17, 9, 8, tzinfo=UTC))
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    window = {"start": "2026-11-17T09:15:00Z", "end": "2026-11-17T09:20:30Z", "minutes": 5.5}
    overnight = {"start": "2026-11-17T22:55:00Z", "end": "2026-11-17T23:05:00Z", "minutes": 10.0}  # to the 18th
    Finding.objects.create(
        result=result, job=job, rule_set=result.rule_set, category=Category.MODEL_CHECKPOINTING, confidence=0.9,
        summary="s", gpu_hours=1.0, evidence={"windows": [window, overnight]}, guidance={},
    )  # fmt: skip
    client.force_login(member_a)
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert "<dt>Started</dt><dd>2026-11-17 10:08:00 Europe/Berlin</dd>" in page
    windows = page.split("<caption")[1].split("</table>")[0]
    assert '<th scope="col">From (Europe/<wbr>Berlin)</th>' in windows
    cells = [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", windows)]
    assert cells[:3] == ["2026-11-17 10:15:00", "10:20:30", "5.5"]  # its end on the same day: the clock
    assert cells[4:7] == ["2026-11-17 23:55:00", "2026-11-18 00:05:00", "10.0"]
    assert 'aria-label="Show 2026-11-17 10:15:00 to 2026-11-17 10:20:30 on the timeline"' in windows
    # The timeline's buttons keep the exact instants (timeline.js reads them).
    assert 'data-zoom-start="2026-11-17T09:15:00Z" data-zoom-end="2026-11-17T09:20:30Z"' in windows


def test_a_jobs_cost_reads_with_a_thousands_separator_in_the_list_and_on_its_page(client, operator, team_a):
    """Money to the cent where one job's is shown, grouped as the cards group whole units (2,609):
    the list and the job page wrote 1234.50, a finding and its fix 1034.56."""
    from decimal import Decimal

    job = JobFactory(team=team_a, name="dear-job", gpu_hours=617.25, cost=Decimal("1234.50"), currency="USD")
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    guidance = {"recoverable_gpu_hours": 517.28, "recoverable_cost": "1034.56", "currency": "USD", "change": "c"}
    Finding.objects.create(
        result=result, job=job, rule_set=result.rule_set, category=Category.MODEL_CHECKPOINTING, confidence=0.9,
        summary="s", gpu_hours=517.28, cost=Decimal("1034.56"), currency="USD", evidence={}, guidance=guidance,
    )  # fmt: skip
    client.force_login(operator)
    listed = client.get(reverse("dashboard:job-list")).content.decode()
    assert "Cost</span><span>1,234.50\u00a0USD</span></td>" in listed
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert dd(page, "Cost") == "1,234.50\u00a0USD"
    assert "<strong>517.3\u00a0GPU-hours</strong> (1,034.56\u00a0USD)" in page
    assert "Recoverable for this job: 517.3\u00a0GPU-hours (1,034.56\u00a0USD)" in page


def test_the_studys_shares_read_in_whole_percent_on_the_causes_pages_as_under_the_chart(client, operator, big_week):
    """The causes list printed the ICSE '24 study's shares as stored, 25.64 % beside 1.7 %, and a cause's
    page 16.43 %, while the overview's numbers under the chart write them whole, 26 % and 16 %."""
    client.force_login(operator)
    causes = client.get(reverse("dashboard:category-list"), WEEK).content.decode()
    row = causes.split("Improper batch size")[1].split("</tr>")[0]
    assert "Share in the ICSE '24 study</span><span>26\u00a0%</span>" in row and "25.64" not in causes
    cause = client.get(reverse("dashboard:category-detail", args=["model_checkpointing"]), WEEK).content.decode()
    assert '<p class="muted">16\u00a0% of the low-utilization issues in the ICSE \'24 study.</p>' in cause


NBSP = "\u00a0"


def test_figures_and_their_units_stay_together_on_the_pages_but_not_in_plain_text(client, operator, job):
    """On a phone "at a mean GPU utilization of 28 %" broke between "28" and "%". A job's findings write a
    no-break space between a figure and its unit (%, GPU-hours, a currency), in the product's own words and
    in the rules' stored summaries as shown; what is read as plain text (the API's summary, a share as the
    rules and the digests' text part write it) keeps an ordinary space."""
    from fleet.numbers import keep_units, share_text

    finding = job.findings.get()
    finding.summary = "GPUs idle 29 % of the covered time; 7.3 GPU-hours at 2.50 USD"
    finding.save()
    client.force_login(operator)
    # Every figure and its unit are joined by a filter, which writes the character (never "&nbsp;").
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    assert f"at a mean GPU utilization of 46{NBSP}% ·" in page
    assert f"<strong>7.3{NBSP}GPU-hours</strong>" in page and f"Recoverable for this job: 7.3{NBSP}GPU-hours" in page
    assert f"<p>GPUs idle 29{NBSP}% of the covered time; 7.3{NBSP}GPU-hours at 2.50{NBSP}USD</p>" in page
    api = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert "GPUs idle 29 % of the covered time" in str(api)  # JSON: as stored, an ordinary space
    assert share_text(0.29) == "29 %" and keep_units("idle 29 % for 3 s") == f"idle 29{NBSP}% for 3{NBSP}s"


def test_every_page_keeps_a_figure_with_its_unit_and_a_digests_text_part_keeps_plain_spaces(
    client, operator, big_week, member_a
):
    """The job and labeling pages kept a figure with its unit (a no-break space), but elsewhere a phone could
    still end a line at "51" and start the next with "%": the teams table, the overview's and a team's cards,
    the settings page, the ingest runs' durations, the rules page, and the HTML part of the digests. Each now
    writes the no-break space (the `unit`, `share` and `keep_units` filters write the character); a digest's
    text part keeps ordinary spaces, as mail clients wrap a text part themselves."""
    from decimal import Decimal

    from fleet.models import IngestRun
    from fleet.numbers import keep_units
    from triage.digests import services as digests

    big_week.cluster.prices.create(gpu_model="", price_per_gpu_hour=Decimal("2.50"), currency="USD")
    big_week.cost, big_week.currency = Decimal("5864.18"), "USD"
    big_week.save()
    IngestRun.objects.create(
        archive_name="week.zip",
        status=IngestRun.Status.SUCCEEDED,
        started_at=datetime(2026, 11, 16, 9, tzinfo=UTC),
        finished_at=datetime(2026, 11, 16, 9, 2, 5, tzinfo=UTC),
    )
    client.force_login(operator)

    teams = client.get(reverse("dashboard:team-list"), WEEK).content.decode()
    assert f"<span>47{NBSP}%</span>" in teams  # the waste share, 1,100.0 of 2,345.7 GPU-hours
    assert ["Team A", "2,345.7", "1,100.0", "47 %", "5,864", "2,750", "1", "1"] in table_rows(teams, "Teams")

    overview = client.get(reverse("dashboard:overview"), WEEK).content.decode()
    assert f'<p class="value">47{NBSP}%</p>' in overview  # the Waste share card
    assert f'<p class="value">5,864<span class="unit">{NBSP}USD</span></p>' in overview  # the Cost card
    team_page = client.get(reverse("dashboard:team-detail", args=["team-a"]), WEEK).content.decode()
    assert f'<p class="value">47{NBSP}%</p>' in team_page

    settings_page = client.get(reverse("dashboard:settings")).content.decode()
    assert f"mean GPU utilization at or below 50{NBSP}%" in settings_page
    runs = client.get("/ingest-runs/").content.decode()
    assert f"<span>2{NBSP}min 05{NBSP}s</span>" in runs or f"<span>2{NBSP}min 5{NBSP}s</span>" in runs, runs
    rules = client.get(reverse("triage:rule-set")).content.decode()
    assert f"10{NBSP}min" in rules  # a threshold's help, "(paper: 10 min)"

    client.force_login(member_a)
    context = digests.build_context("team", "2026-W47", big_week.team)
    _, text, html = digests.render_triplet("team-digest", context)
    assert f"47{NBSP}%" in html and "47 %" in as_read(html)
    assert NBSP not in text and "47 %" in text
    # "121.7 recoverable GPU-hours" in a digest's prose: the figure stays with its words too.
    assert (
        keep_units("121.7 recoverable GPU-hours (2 % of GPU-hours)")
        == f"121.7{NBSP}recoverable GPU-hours (2{NBSP}% of GPU-hours)"
    )


def test_a_cards_change_in_percent_has_a_thousands_separator(client, operator, team_a):
    """A week with 12.25 times the GPU-hours of the week before read "▲ +1125 % vs previous period" on the
    overview's card, where every other figure of the page has its thousands separator."""
    JobFactory(team=team_a, start_time=WEEK_START - timedelta(days=6), gpu_hours=8.0, unused_gpu_hours=1.0)
    JobFactory(team=team_a, start_time=WEEK_START + timedelta(days=1), gpu_hours=98.0, unused_gpu_hours=1.0)
    client.force_login(operator)
    page = client.get(reverse("dashboard:overview"), {"from": "2026-11-16", "to": "2026-11-22"}).content.decode()
    assert "▲ +1,125\u00a0% vs previous period" in page
