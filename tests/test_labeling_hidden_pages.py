"""A rater who has not submitted opens a page of everyone's labels (a colleague's link, a bookmark):
a 403 that says why and how to go on, not "Page not found". Anyone outside the study still gets 404."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from fleet.access import RESEARCHERS_GROUP
from tests.conftest import user_in_group
from tests.factories import ClusterFactory, JobFactory
from triage.labeling import services
from triage.taxonomy import Category

pytestmark = pytest.mark.django_db

BATCH = Category.IMPROPER_BATCH_SIZE.value


def make_researcher(username):
    return user_in_group(username, RESEARCHERS_GROUP)


@pytest.fixture
def study(researcher, team_a):
    cluster = ClusterFactory(name="c1")
    for i in range(4):
        JobFactory(cluster=cluster, team=team_a, mean_gpu_util=20.0 + i)
    raters = [researcher, make_researcher("ravi-rater")]
    return services.create_study(name="Pilot", lead=raters[0], raters=raters, sample_size=4, seed=11)


def label_one(study, user):
    assignment = services.assignments_of(study, user).order_by("item__position").first()
    services.save_answer(assignment, {BATCH: "seen in the timeline"})


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("labeling:agreement", "The agreement opens"),
        ("labeling:gold", "The gold sets open"),
        ("labeling:rules", "The rules against gold open"),
    ],
)
def test_a_rater_who_has_not_submitted_is_told_why_and_where_to_go_on(client, study, name, said):
    rater = study.rater_links.get(user__username="ravi-rater").user
    label_one(study, rater)
    client.force_login(rater)
    response = client.get(reverse(name, args=[study.pk]))
    assert response.status_code == 403
    page = html.unescape(response.content.decode())
    assert f"{said} once you submit your labels (1 of 4 done)" in page
    assert reverse("labeling:label-next", args=[study.pk]) in page  # continue labeling
    assert "ravi-rater" in page and "seen in the timeline" not in page  # nobody's labels


def test_the_lead_who_rates_sees_the_adjudication_page_refused_the_same_way(client, study, researcher):
    client.force_login(researcher)
    item = study.items.first()
    response = client.get(reverse("labeling:adjudicate", args=[study.pk, item.pk]))
    assert response.status_code == 403
    assert "once you submit your labels (0 of 4 done)" in html.unescape(response.content.decode())


def test_a_rater_with_every_job_done_is_sent_to_submit(client, study):
    rater = study.rater_links.get(user__username="ravi-rater").user
    for assignment in services.assignments_of(study, rater):
        services.save_answer(assignment, {BATCH: ""})
    client.force_login(rater)
    page = html.unescape(client.get(reverse("labeling:agreement", args=[study.pk])).content.decode())
    assert "(4 of 4 done)" in page and "Submit your labels" in page
    assert reverse("labeling:study", args=[study.pk]) in page


def test_the_export_says_why_in_plain_text(client, study):
    rater = study.rater_links.get(user__username="ravi-rater").user
    label_one(study, rater)
    client.force_login(rater)
    response = client.get(reverse("labeling:export", args=[study.pk, "labels", "csv"]))
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/plain")
    assert "once you submit your labels (1 of 4 done)" in response.content.decode()
    assert "seen in the timeline" not in response.content.decode()


def test_people_outside_the_study_still_find_nothing(client, study, member_a):
    for user in (member_a, make_researcher("nina-nosy")):
        client.force_login(user)
        for url in (
            reverse("labeling:agreement", args=[study.pk]),
            reverse("labeling:gold", args=[study.pk]),
            reverse("labeling:rules", args=[study.pk]),
            reverse("labeling:export", args=[study.pk, "labels", "csv"]),
        ):
            response = client.get(url)
            assert response.status_code == 404, url
            assert "submit your labels" not in response.content.decode()
