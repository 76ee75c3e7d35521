"""The admin's search: a term over ADMIN_SEARCH_MAX_LENGTH characters is not run. SQLite fails a LIKE
pattern over 50,000 bytes ("LIKE or GLOB pattern too complex"), which made a long ?q= a server error on
every list with a search box, Django's users and groups included. The site (config.admin_site) sends the
list back unfiltered with a warning naming the limit, on every database alike; the autocomplete of a
select box answers no choices."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.urls import reverse

from fleet.access import OPERATORS_GROUP
from tests.factories import JobFactory, UserFactory

pytestmark = pytest.mark.django_db

HOSTILE = "x" * 100_000

# Every registered admin with a search box (new ones are covered as they are registered).
SEARCHABLE = sorted(
    (model._meta.app_label, model._meta.model_name)
    for model, model_admin in admin.site._registry.items()
    if model_admin.search_fields
)


@pytest.fixture
def staff_operator(db):
    user = UserFactory(username="sam-staff", is_staff=True, is_superuser=True)
    user.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
    return user


def messages_on(page) -> list[str]:
    """The texts of the admin's message list (ul.messagelist), as read."""
    found = re.search(r'<ul class="messagelist">(.*?)</ul>', page.content.decode(), re.S)
    if not found:
        return []
    return [
        " ".join(unescape(re.sub(r"<[^>]+>", "", item)).split()) for item in re.findall(r"<li.*?</li>", found[1], re.S)
    ]


def search_box_value(page) -> str:
    box = re.search(r'<input[^>]*id="searchbar"[^>]*>', page.content.decode())
    assert box, "the list has its search box"
    value = re.search(r'value="([^"]*)"', box[0])
    return unescape(value[1]) if value else ""


def test_the_users_and_groups_lists_are_among_those_checked():
    assert ("auth", "user") in SEARCHABLE and ("auth", "group") in SEARCHABLE
    assert ("fleet", "job") in SEARCHABLE


@pytest.mark.parametrize(("app_label", "model_name"), SEARCHABLE, ids=[f"{a}.{m}" for a, m in SEARCHABLE])
def test_a_100000_character_search_shows_the_list_unfiltered_with_a_warning(
    client, staff_operator, app_label, model_name
):
    client.force_login(staff_operator)
    url = reverse(f"admin:{app_label}_{model_name}_changelist")
    response = client.get(url, {"q": HOSTILE})
    assert response.status_code == 302 and response.headers["Location"] == url

    page = client.get(response.headers["Location"])
    assert page.status_code == 200
    assert messages_on(page) == [
        "A search takes at most 500 characters (this one had 100000); the list is shown unsearched."
    ]
    assert search_box_value(page) == ""


def test_the_other_parameters_of_the_list_are_kept(client, staff_operator):
    client.force_login(staff_operator)
    response = client.get("/admin/fleet/job/", {"q": HOSTILE, "o": "2", "state__exact": "FAILED"})
    assert response.status_code == 302
    assert response.headers["Location"] == "/admin/fleet/job/?o=2&state__exact=FAILED"


def test_the_jobs_list_shown_after_a_long_search_lists_the_jobs(client, staff_operator):
    job = JobFactory(external_id="job-kept-4711")
    client.force_login(staff_operator)
    page = client.get("/admin/fleet/job/", {"q": HOSTILE}, follow=True)
    assert page.status_code == 200
    rows = re.findall(r"<tr[^>]*>.*?</tr>", page.content.decode(), re.S)
    assert any(job.external_id in row for row in rows)


def test_a_search_of_500_characters_is_run(client, staff_operator):
    JobFactory(external_id="job-other")
    client.force_login(staff_operator)
    page = client.get("/admin/fleet/job/", {"q": "y" * 500})
    assert page.status_code == 200
    assert messages_on(page) == []
    assert search_box_value(page) == "y" * 500
    assert "0 results" in " ".join(re.sub(r"<[^>]+>", " ", page.content.decode()).split())


def test_a_long_search_posted_with_an_action_does_nothing_and_shows_the_warning(client, staff_operator):
    job = JobFactory()
    client.force_login(staff_operator)
    response = client.post(
        f"/admin/fleet/job/?q={'x' * 60_000}",
        {"action": "delete_selected", "_selected_action": [job.pk], "select_across": "1", "index": "0"},
    )
    assert response.status_code == 302 and response.headers["Location"] == "/admin/fleet/job/"
    page = client.get(response.headers["Location"])
    assert messages_on(page)[0].startswith("A search takes at most 500 characters")


def test_the_autocomplete_of_a_long_term_answers_no_choices(client, staff_operator):
    client.force_login(staff_operator)
    response = client.get(
        "/admin/autocomplete/",
        {"term": HOSTILE, "app_label": "fleet", "model_name": "owner", "field_name": "user"},
    )
    assert response.status_code == 200
    assert json.loads(response.content) == {"results": [], "pagination": {"more": False}}
    # A term within the limit still finds users.
    found = client.get(
        "/admin/autocomplete/",
        {"term": "sam-staff", "app_label": "fleet", "model_name": "owner", "field_name": "user"},
    )
    assert [choice["text"] for choice in json.loads(found.content)["results"]] == ["sam-staff"]
