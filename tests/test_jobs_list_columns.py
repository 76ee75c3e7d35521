"""The jobs list's State and Elapsed columns, and column headers that sort the list as the Teams table's do
(links with the list's `sort=` values, keeping its filters; the column it is sorted by marked)."""

import html
import re
from datetime import timedelta

import pytest
from django.urls import reverse

from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(team_a):
    short = JobFactory(team=team_a, name="short", state="FAILED", gpu_hours=1.0)
    short.end_time = short.start_time + timedelta(minutes=30)
    short.save()
    long = JobFactory(team=team_a, name="long", state="COMPLETED", gpu_hours=9.0)
    long.end_time = long.start_time + timedelta(hours=12, minutes=6)
    long.save()
    return short, long


def headers(page: str) -> dict[str, str]:
    """Each column header's text and the link it holds ("" for none)."""
    thead = re.search(r"<thead.*?</thead>", page, re.S).group(0)
    found = {}
    for cell in re.findall(r"<th[^>]*>(.*?)</th>", thead, re.S):
        link = re.search(r'href="([^"]*)"', cell)
        found[re.sub(r"<[^>]+>", "", cell).strip()] = html.unescape(link.group(1)) if link else ""
    return found


def test_each_job_shows_its_state_and_how_long_it_ran(operator_client, jobs):
    page = operator_client.get(reverse("dashboard:job-list")).content.decode()
    assert {"State", "Elapsed"} <= set(headers(page))
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*>long<(?:(?!</tr>).)*</tr>", page, re.S).group(0)
    assert "COMPLETED" in row and "12.1\xa0h" in row
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*>short<(?:(?!</tr>).)*</tr>", page, re.S).group(0)
    assert "FAILED" in row and "0.5\xa0h" in row


def test_the_headers_sort_by_the_lists_orders_and_keep_its_filters(operator_client, jobs):
    page = operator_client.get(
        reverse("dashboard:job-list"), {"team": "team-a", "sort": "unused", "page": "1"}
    ).content.decode()
    links = headers(page)
    assert links["GPU-hours"] == "?team=team-a&sort=gpu_hours"
    assert links["Mean util"] == "?team=team-a&sort=util"
    assert links["Cost"] == "?team=team-a&sort=cost"
    assert links["Unused GPU-hours"] == "?team=team-a&sort=unused"
    assert 'class="num" aria-sort="descending"><a href="?team=team-a&amp;sort=unused">' in page
    assert links["Job"] == "" and links["Name"] == "", "no order of their own"


def test_the_start_header_turns_the_order_around(operator_client, jobs):
    newest = operator_client.get(reverse("dashboard:job-list")).content.decode()
    assert headers(newest)["Start (UTC)"] == "?sort=oldest"
    assert 'aria-sort="descending"><a href="?sort=oldest">' in newest, "the list's order without a choice"
    oldest = operator_client.get(reverse("dashboard:job-list"), {"sort": "oldest"}).content.decode()
    assert headers(oldest)["Start (UTC)"] == "?sort=start"
    assert 'aria-sort="ascending"><a href="?sort=start">' in oldest
    names = [
        job.name
        for job in operator_client.get(headers(newest)["GPU-hours"].replace("?", reverse("dashboard:job-list") + "?"))
        .context["page"]
        .object_list
    ]
    assert names == ["long", "short"], "the header's link sorts"
