"""/digests/?week=… that is not an ISO week says so and which week it shows instead, as the
dashboard's pages do for an unknown period ("Unknown period …; showing the last 7 days")."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from triage.digests import services

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("week", ["garbage", "99999-W01", "😀", "2026-W54", "2026-W00"])
def test_a_week_that_is_not_one_is_named_with_the_week_shown(client, member_a, week):
    client.force_login(member_a)
    shown = services.preview_week(member_a)
    response = client.get(reverse("digests:index"), {"week": week})
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert f"Not an ISO week (e.g. {shown}); showing {shown}." in page
    assert page.count("Not an ISO week") == 1


def test_a_real_week_says_nothing_of_the_kind(client, member_a):
    client.force_login(member_a)
    page = client.get(reverse("digests:index"), {"week": "2026-W30"}).content.decode()
    assert "Not an ISO week" not in page and "2026-W30" in page
