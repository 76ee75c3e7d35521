"""The top menu marks the section of the page on show, and only that one."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from config.navigation import section_of

pytestmark = pytest.mark.django_db

CURRENT = re.compile(r'<a aria-current="page" href="[^"]*">([^<]+)</a>')


def marked(client: Client, url: str) -> list[str]:
    response = client.get(url)
    assert response.status_code == 200, url
    return CURRENT.findall(response.content.decode())


@pytest.mark.parametrize(
    ("url", "section"),
    [
        ("/overview/", "Overview"),
        ("/teams/", "Teams"),
        ("/categories/", "Causes"),
        ("/categories/model_checkpointing/", "Causes"),
        ("/jobs/", "Jobs"),
        ("/ingest-runs/", "Ingest runs"),
        ("/ingest-runs/upload/", "Upload"),
        ("/tokens/", "Ingest runs"),
        ("/audit/", "Audit log"),
        ("/studies/", "Studies"),
        ("/digests/", "Digests"),
        ("/connectors/", "Connectors"),
        ("/triage/rules/", "Rules"),
        ("/settings/", "Settings"),
    ],
)
def test_each_page_marks_its_own_section(operator, url, section):
    client = Client()
    client.force_login(operator)
    assert marked(client, url) == [section]


def test_a_team_and_a_job_page_mark_their_lists(world):
    from fleet.models import Job

    client = Client()
    client.force_login(world["users"]["operator"])
    job = Job.objects.get(pk=world["params"]["job_a"])
    assert marked(client, f"/jobs/{job.pk}/") == ["Jobs"]
    assert marked(client, f"/teams/{job.team.slug}/") == ["Teams"]


def test_pages_outside_the_menu_mark_nothing():
    assert section_of("admin", "index") == ""
    assert section_of("fleet", "healthz") == ""


@pytest.mark.parametrize("role", ["operator", "researcher", "member"])
@pytest.mark.parametrize("url", ["/overview/", "/jobs/", "/teams/", "/digests/"])
def test_a_page_reads_its_viewers_groups_once(world, role, url):
    """The menu, the scoping and the view each ask who the viewer is; the database is asked once."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(world["users"][role])
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    group_reads = [q["sql"] for q in queries.captured_queries if "auth_user_groups" in q["sql"]]
    assert len(group_reads) == 1, group_reads
