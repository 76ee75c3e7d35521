"""The admin's Delete selected jobs: a light confirmation page (counts, not Django's tree of every related
object of every job, which took minutes for a select-all over tens of thousands of jobs), then the
deletion by a task (fleet.delete_jobs) and its page."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from fleet.connectors.models import ConnectorDeletion
from fleet.models import Job
from tests.test_background_deletions import queued, staff_operator  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def confirmation(client, data) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.post("/admin/fleet/job/", data)
    assert response.status_code == 200
    return " ".join(response.content.decode().split()), len(queries)


def test_the_confirmation_counts_what_goes_in_as_many_queries_for_3_jobs_as_for_40(client, staff_operator):  # noqa: F811
    from tests.factories import JobFactory

    few = [job.pk for job in JobFactory.create_batch(3, series_file="series/a.parquet")]
    many = [job.pk for job in JobFactory.create_batch(40)]
    client.force_login(staff_operator)

    said, queries_for_few = confirmation(client, {"action": "delete_selected", "_selected_action": few})
    assert "3 jobs, 3 with metric series, 0 findings" in said
    assert "Yes, delete them" in said
    said, queries_for_many = confirmation(client, {"action": "delete_selected", "_selected_action": many})
    assert "40 jobs, 0 with metric series, 0 findings" in said
    everything = {"action": "delete_selected", "_selected_action": few[:1], "select_across": "1"}
    said, queries_for_all = confirmation(client, everything)
    assert "43 jobs, 3 with metric series" in said
    assert queries_for_few == queries_for_many == queries_for_all
    assert Job.objects.count() == 43


def test_confirming_starts_the_deletion_of_every_job_the_filter_selects(client, staff_operator, queued):  # noqa: F811
    from tests.factories import JobFactory, TeamFactory

    vision = TeamFactory(slug="vision")
    JobFactory.create_batch(4, team=vision)
    others = JobFactory.create_batch(2)
    client.force_login(staff_operator)
    url = f"/admin/fleet/job/?team__id__exact={vision.pk}"
    chosen = {"action": "delete_selected", "_selected_action": [Job.objects.filter(team=vision).first().pk],
              "select_across": "1"}  # fmt: skip
    said = " ".join(client.post(url, chosen).content.decode().split())
    assert "4 jobs, 0 with metric series, 0 findings" in said

    response = client.post(url, {**chosen, "post": "yes"}, follow=True)
    deletion = ConnectorDeletion.objects.get()
    assert response.redirect_chain[-1][0] == reverse("fleet:deletion", args=[deletion.pk])
    assert (deletion.kind, deletion.jobs_total) == ("jobs", 4)
    assert sorted(deletion.job_ids) == sorted(Job.objects.filter(team=vision).values_list("pk", flat=True))
    assert queued == [("fleet.delete_jobs", (deletion.pk,))]
    assert Job.objects.count() == 6  # nothing deleted in the request
    assert all(job.pk not in deletion.job_ids for job in others)


def test_the_confirmation_says_which_jobs_a_labeling_study_keeps(client, staff_operator):  # noqa: F811
    from tests.factories import JobFactory
    from triage.labeling.models import Study, StudyJob

    jobs = JobFactory.create_batch(3)
    study = Study.objects.create(name="idle tails", created_by=staff_operator, seed=1)
    StudyJob.objects.create(study=study, job=jobs[0], position=0)
    client.force_login(staff_operator)
    said, _ = confirmation(client, {"action": "delete_selected", "_selected_action": [job.pk for job in jobs]})
    assert "1 of them is in a labeling study or gold set and stays" in said
    assert "A worker deletes the 2 jobs in batches" in said


def test_a_staff_user_who_is_not_an_operator_is_told_the_jobs_are_being_deleted(client, queued):  # noqa: F811
    from django.contrib.auth.models import Permission

    from tests.factories import JobFactory, UserFactory

    clerk = UserFactory(username="clerk", is_staff=True)
    clerk.user_permissions.add(*Permission.objects.filter(codename__in=["view_job", "delete_job"]))
    chosen = [job.pk for job in JobFactory.create_batch(2)]
    client.force_login(clerk)
    selected = {"action": "delete_selected", "_selected_action": chosen}
    assert "2 jobs, 0 with metric series" in confirmation(client, selected)[0]
    response = client.post("/admin/fleet/job/", {**selected, "post": "yes"}, follow=True)
    assert response.redirect_chain[-1][0] == "/admin/fleet/job/"  # the deletion's page is for operators
    assert "The 2 jobs are being deleted by a worker." in response.content.decode()
    assert ConnectorDeletion.objects.get().jobs_total == 2 and len(queued) == 1
