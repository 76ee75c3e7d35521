"""The long lists (jobs, the audit log, digest deliveries) page the way a run's errors do: First and
Last beside Previous and Next, and which rows of how many a page shows, each link keeping the filters."""

from __future__ import annotations

import pytest

from fleet import audit
from fleet.models import AuditEvent
from tests.factories import JobFactory, TeamFactory
from triage.digests.models import Delivery, DigestKind

pytestmark = pytest.mark.django_db


def make_jobs(count: int) -> None:
    team = TeamFactory(slug="vision")
    JobFactory.create_batch(count, team=team)
    JobFactory.create_batch(3, team=TeamFactory(slug="speech"))  # filtered out


def make_audit_entries(count: int) -> None:
    for n in range(count):
        audit.record(None, "series.prune", f"prune {n}", {"blobs": n})
    audit.record(None, "storage.clean", "storage", {})  # filtered out
    assert AuditEvent.objects.count() == count + 1


def make_deliveries(count: int) -> None:
    team = TeamFactory(slug="vision")
    Delivery.objects.bulk_create(
        Delivery(recipient=f"r{n}@example.org", kind=DigestKind.TEAM, team=team, iso_week="2026-W45", status="failed")
        for n in range(count)
    )
    Delivery.objects.create(recipient="x@example.org", kind=DigestKind.TEAM, team=team, iso_week="2026-W45")


@pytest.mark.parametrize(
    ("url", "filters", "per_page", "make", "noun"),
    [
        ("/jobs/", "team=vision", ("triage.dashboard.views.JOBS_PER_PAGE", 50), make_jobs, "jobs"),
        ("/audit/", "action=series.prune", ("fleet.views.AUDIT_PER_PAGE", 50), make_audit_entries, "entries"),
        ("/digests/deliveries/", "status=failed", ("triage.digests.views.DELIVERIES_PER_PAGE", 50), make_deliveries,
         "deliveries"),
    ],
)  # fmt: skip
def test_a_long_list_pages_with_first_and_last_and_says_which_rows_it_shows(
    client, operator, monkeypatch, url, filters, per_page, make, noun
):
    """The shared pages bar had only Previous and Next: the last of 40 pages of jobs was 39 clicks away,
    and no page said which rows of how many it showed."""
    monkeypatch.setattr(*per_page)
    make(120)
    client.force_login(operator)

    first = client.get(f"{url}?{filters}").content.decode()
    assert "Page 1 of 3" in first and f"Showing 1–50 of 120 {noun}" in first
    assert f'<a href="?{filters}&amp;page=3">Last &raquo;</a>' in first and "&laquo; First" not in first

    middle = client.get(f"{url}?{filters}&page=2").content.decode()
    assert f"Showing 51–100 of 120 {noun}" in middle
    assert f'<a href="?{filters}&amp;page=1">&laquo; First</a>' in middle
    assert f'<a href="?{filters}&amp;page=1" rel="prev">&larr; Previous</a>' in middle
    assert f'<a href="?{filters}&amp;page=3" rel="next">Next &rarr;</a>' in middle
    assert f'<a href="?{filters}&amp;page=3">Last &raquo;</a>' in middle

    last = client.get(f"{url}?{filters}&page=3").content.decode()
    assert f"Showing 101–120 of 120 {noun}" in last and "Last &raquo;" not in last and "Next &rarr;" not in last
