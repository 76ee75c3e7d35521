"""The recoverable GPU-hours of a team's causes, added up, are one figure wherever it is shown. The demo's genai
team in week 2026-W47: its page listed causes whose hours, each to a tenth, add up to 111.2, and its weekly
digest said "Causes account for 111.3" (the exact hours' total, rounded once). Both now give the total the one
way (`queries.causes_account_for`: the exact hours added, then rounded), and say so where the rounded causes
listed beside it add up to a tenth more or less."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from tests.factories import JobFactory
from tests.reading import as_read
from tests.test_jobs_page import _found
from triage.digests import services
from triage.digests.models import DigestKind
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

WEEK = "2026-W47"
WEEK_QUERY = {"from": "2026-11-16", "to": "2026-11-22"}
MONDAY = datetime(2026, 11, 16, 9, tzinfo=UTC)
CAUSES = (Category.MODEL_CHECKPOINTING, Category.IMPROPER_BATCH_SIZE, Category.LENGTHY_LIBRARY_INSTALL)
# 1.04 h each: every cause reads 1.0, and their exact 3.12 h read 3.1.
SAID = (
    "Causes account for 3.1 of the 15.0 unused GPU-hours (each cause is rounded to a tenth on its own: "
    "as listed they add up to 3.0)."
)


@pytest.fixture
def week_of_causes(team_a):
    for day, category in enumerate(CAUSES):
        job = JobFactory(team=team_a, start_time=MONDAY + timedelta(days=day), gpu_hours=8, unused_gpu_hours=5)
        _found(job, (category, 1.04))


def test_the_team_page_and_its_digest_give_one_total_of_the_causes(client, member_a, team_a, week_of_causes):
    client.force_login(member_a)
    page = as_read(client.get(reverse("dashboard:team-detail", args=[team_a.slug]), WEEK_QUERY).content.decode())
    causes = page.split('id="team-causes"')[1].split("</section>")[0]
    assert causes.count("<span>1.0</span>") == 3  # each cause, as listed
    assert SAID in causes

    # The digest of the same team and week, in both its parts.
    _, text, html = services.render_triplet("team-digest", services.build_context(DigestKind.TEAM, WEEK, team_a))
    assert SAID in " ".join(text.split()) and SAID in as_read(html)


def test_where_the_causes_listed_add_up_to_their_total_nothing_more_is_said(client, member_a, team_a):
    for day, (category, hours) in enumerate(zip(CAUSES, (1.0, 2.0, 0.5), strict=True)):
        job = JobFactory(team=team_a, start_time=MONDAY + timedelta(days=day), gpu_hours=8, unused_gpu_hours=5)
        _found(job, (category, hours))
    client.force_login(member_a)
    page = as_read(client.get(reverse("dashboard:team-detail", args=[team_a.slug]), WEEK_QUERY).content.decode())
    assert "Causes account for 3.5 of the 15.0 unused GPU-hours." in page
    assert "rounded to a tenth on its own" not in page
    context = services.build_context(DigestKind.TEAM, WEEK, team_a)
    assert context["unattributed"].startswith("Causes account for 3.5 of the 15.0 unused GPU-hours. The other")


def test_the_causes_page_and_the_operator_digest_give_one_total_of_the_fleets_causes(client, operator, week_of_causes):
    """The Causes page lists the fleet's causes, as the operator digest does; it gave no total, and the digest
    one its causes as listed do not add up to."""
    client.force_login(operator)
    page = as_read(client.get(reverse("dashboard:category-list"), WEEK_QUERY).content.decode())
    assert SAID in page
    _, text, html = services.render_triplet("operator-digest", services.build_context(DigestKind.OPERATOR, WEEK))
    assert SAID in " ".join(text.split()) and SAID in as_read(html)


def test_the_digests_other_hours_are_the_unused_hours_less_the_causes_as_shown(team_a):
    """The demo's rl team in 2026-W45: "Causes account for 16.8 of the 23.6 unused GPU-hours. The other 6.9 have
    no cause named", and 16.8 + 6.9 is 24.7 (the other hours were the exact rest, rounded on its own). "The other"
    is what the sentence's two figures leave, so it is their difference as shown, and the parts it is then
    split into add up to it."""
    job = JobFactory(team=team_a, start_time=MONDAY, gpu_hours=30, unused_gpu_hours=23.64)
    _found(job, (Category.MODEL_CHECKPOINTING, 16.76))  # 16.8 of 23.6; exactly 6.88 (6.9) other
    _, text, html = services.render_triplet("team-digest", services.build_context(DigestKind.TEAM, WEEK, team_a))
    said = (
        "Causes account for 16.8 of the 23.6 unused GPU-hours. The other 6.8 have no cause named: 6.8 other idle time"
    )
    assert said in " ".join(text.split()) and said in as_read(html)

    # Split among several reasons (3.46 and 3.42 read 3.5 and 3.4), the parts add up to the 6.8 too.
    from triage.digests import findings

    note = services.unattributed_note(
        23.64,
        [findings.CategoryWaste(Category.MODEL_CHECKPOINTING, 16.76, 1)],
        {findings.UNCLASSIFIED: 3.46, findings.HEALTHY: 3.42},
        50,
    )
    assert note.startswith("Causes account for 16.8 of the 23.6 unused GPU-hours. The other 6.8 have no cause named: ")
    shown = [float(part.split(" ", 1)[0]) for part in note.split("named: ")[1].split("; ")]
    assert len(shown) == 2 and sum(shown) == pytest.approx(6.8)


def test_a_week_whose_causes_read_as_its_unused_hours_names_no_other_hours():
    """11.54 unused GPU-hours, 11.46 of them by cause: both read 11.5, and the exact 0.08 left read "The other 0.1"
    after "Causes account for 11.5 of the 11.5 unused GPU-hours"."""
    from triage.digests import findings

    assert services.unattributed_note(11.54, [findings.CategoryWaste(Category.API_MISUSE, 11.46, 1)], {}, 50) == ""
