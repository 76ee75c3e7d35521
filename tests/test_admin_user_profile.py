"""The admin's page of users' own settings (fleet.UserProfile: the time zone pages show times in)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from fleet.access import OPERATORS_GROUP
from fleet.models import UserProfile
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_operator(db):
    user = UserFactory(username="sam-staff", is_staff=True, is_superuser=True)
    user.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
    return user


def test_an_operator_sees_a_users_time_zone_in_the_admin_and_changes_it(client, staff_operator):
    ana = UserFactory(username="ana")
    profile = UserProfile.objects.create(user=ana, time_zone="Europe/Berlin")
    client.force_login(staff_operator)

    listed = client.get("/admin/fleet/userprofile/?q=ana").content.decode()
    assert "ana" in listed and "Europe/Berlin" in listed

    page = client.get(f"/admin/fleet/userprofile/{profile.pk}/change/")
    assert page.status_code == 200 and 'value="Europe/Berlin"' in page.content.decode()
    saved = client.post(f"/admin/fleet/userprofile/{profile.pk}/change/", {"user": ana.pk, "time_zone": "Asia/Tokyo"})
    assert saved.status_code == 302
    profile.refresh_from_db()
    assert profile.time_zone == "Asia/Tokyo"


def test_a_time_zone_that_does_not_exist_is_refused_in_the_admin(client, staff_operator):
    ana = UserFactory(username="ana")
    profile = UserProfile.objects.create(user=ana, time_zone="UTC")
    client.force_login(staff_operator)
    refused = client.post(f"/admin/fleet/userprofile/{profile.pk}/change/", {"user": ana.pk, "time_zone": "Mars/Base"})
    assert refused.status_code == 200 and "errornote" in refused.content.decode()
    profile.refresh_from_db()
    assert profile.time_zone == "UTC"


def test_the_user_profile_admin_is_for_staff_only(client):
    member = UserFactory(username="member")
    client.force_login(member)
    assert client.get("/admin/fleet/userprofile/").status_code == 302  # to the admin's login
