"""The admin's pages of a job and of a job's file link where the file can be read, never to a 404."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile

from fleet.access import OPERATORS_GROUP
from fleet.series import to_parquet_bytes
from tests.conftest import store_artifact, tiny_series
from tests.factories import JobFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_the_admins_job_and_file_pages_link_files_that_open(client, storage_dir):
    """A job's page in the admin showed its series as a link to /series/<hash>.parquet, and a file's page
    its file as /artifacts/<hash>: the storage's names, which no URL serves (the files are private to
    logged-in pages), so an operator who clicked one met a 404. They link the job's series downloads and
    the file's own page instead, which open."""
    operator = UserFactory(username="sam-staff", is_staff=True, is_superuser=True)
    operator.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
    job = JobFactory(name="bert-0")
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(tiny_series())))
    artifact = store_artifact(job, "log", "logs/stdout.log", b"epoch 1 loss 0.5\n")
    client.force_login(operator)
    for page in (f"/admin/fleet/job/{job.pk}/change/", f"/admin/fleet/artifact/{artifact.pk}/change/"):
        html = client.get(page).content.decode()
        links = {
            href.replace("&amp;", "&")
            for href in re.findall(r'href="(/[^"#]*)"', html)
            if not href.startswith(("/admin/", "/static/"))
        }
        assert links, page
        broken = {href: client.get(href, follow=True).status_code for href in links}
        assert {href: code for href, code in broken.items() if code != 200} == {}, page
    job_page = client.get(f"/admin/fleet/job/{job.pk}/change/").content.decode()
    assert f'href="/jobs/{job.pk}/series.parquet"' in job_page
    file_page = client.get(f"/admin/fleet/artifact/{artifact.pk}/change/").content.decode()
    assert f'href="/jobs/{job.pk}/files/{artifact.pk}/"' in file_page


def test_a_jobs_file_is_not_added_by_hand_in_the_admin(client):
    """The file page no longer takes an upload (it links the stored file's page), so the admin offers no
    form to add a file without one: a job's files come with its import."""
    operator = UserFactory(username="sam-staff", is_staff=True, is_superuser=True)
    client.force_login(operator)
    assert client.get("/admin/fleet/artifact/add/").status_code == 403
