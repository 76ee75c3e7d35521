"""Deleting a team, an ingest run, or jobs chosen in the admin's list, as a connector with its jobs is
deleted: the request only starts the deletion and the operator lands on its page; a task deletes the
jobs a batch to a transaction, with their files, findings, log events and answers, then the team or
run itself, audited; run again (a redelivery) it neither deletes nor counts anything twice.

Before, each ran in the web request: on a large fleet gunicorn's --timeout killed it half way and the
whole deletion rolled back."""

from __future__ import annotations

import io

import pytest
from celery.result import AsyncResult
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.urls import reverse

from fleet.connectors.models import ConnectorDeletion
from fleet.connectors.tasks import delete_jobs_task
from fleet.models import Artifact, AuditEvent, IngestRun, Job, LogEvent, Team
from tests.conftest import EXAMPLE_ARCHIVE, WorkerDied, worker_dies_in_the_second_batch
from tests.test_browser import browser  # noqa: F401  (the shared Chromium fixture)
from tests.test_connector_deletion_worker import finished_deletion

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_operator(db):
    """An operator who may use the admin (the admin needs is_staff on top of the role)."""
    from django.contrib.auth.models import Group

    from fleet.access import OPERATORS_GROUP
    from tests.factories import UserFactory

    user = UserFactory(username="sam-staff", is_staff=True, is_superuser=True)
    user.groups.add(Group.objects.get_or_create(name=OPERATORS_GROUP)[0])
    return user


@pytest.fixture
def imported(db, django_capture_on_commit_callbacks, settings, tmp_path):
    """The example archive imported and triaged, each job with an owner's answer on one cause."""
    from triage.models import Feedback, Finding
    from triage.services import triage_jobs

    settings.UPLOAD_DIR = tmp_path / "uploads"
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ingest_archive", str(EXAMPLE_ARCHIVE), stdout=io.StringIO(), stderr=io.StringIO())
    triage_jobs(list(Job.objects.values_list("pk", flat=True)))
    assert Finding.objects.exists()
    from tests.factories import UserFactory

    author = UserFactory(username="answering-owner")
    for job in Job.objects.all():
        Feedback.objects.create(job=job, category="model_checkpointing", user=author, verdict="wrong")
    return IngestRun.objects.get()


@pytest.fixture
def queued(monkeypatch):
    """A task queue with no worker yet: what was queued, nothing run."""
    import config.urls  # noqa: F401  (views bind tasking.publish when imported: not to this stand-in)
    from fleet import tasking

    calls = []
    monkeypatch.setattr(
        tasking, "publish", lambda task, args=(), **kw: calls.append((task.name, tuple(args))) or AsyncResult("x")
    )
    return calls


def left_of(job_ids: list[int]) -> dict[str, int]:
    """What of these jobs is still stored: rows, and files in storage."""
    from triage.models import Feedback, Finding, JobTriage

    names = set(Job.objects.filter(pk__in=job_ids).exclude(series_file="").values_list("series_file", flat=True))
    names |= set(Artifact.objects.filter(job__in=job_ids).values_list("file", flat=True))
    return {
        "jobs": Job.objects.filter(pk__in=job_ids).count(),
        "artifacts": Artifact.objects.filter(job__in=job_ids).count(),
        "log events": LogEvent.objects.filter(job__in=job_ids).count(),
        "triage results": JobTriage.objects.filter(job__in=job_ids).count(),
        "findings": Finding.objects.filter(job__in=job_ids).count(),
        "answers": Feedback.objects.filter(job__in=job_ids).count(),
        "files": len(names),
    }


def blobs_of(job_ids: list[int]) -> set[str]:
    names = set(Job.objects.filter(pk__in=job_ids).exclude(series_file="").values_list("series_file", flat=True))
    return names | set(Artifact.objects.filter(job__in=job_ids).values_list("file", flat=True))


NOTHING = {"jobs": 0, "artifacts": 0, "log events": 0, "triage results": 0, "findings": 0, "answers": 0, "files": 0}


def page_text(client, deletion) -> str:
    return " ".join(client.get(reverse("fleet:deletion", args=[deletion.pk])).content.decode().split())


def run_task_twice(deletion, django_capture_on_commit_callbacks) -> ConnectorDeletion:
    """What the worker does, then a redelivery of the same message: the second changes nothing."""
    with django_capture_on_commit_callbacks(execute=True):
        first = delete_jobs_task.apply(args=[deletion.pk]).get()
    events = list(AuditEvent.objects.values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        second = delete_jobs_task.apply(args=[deletion.pk]).get()
    assert first == second and first["status"] == "succeeded"
    assert list(AuditEvent.objects.values_list("pk", flat=True)) == events  # audited once
    deletion.refresh_from_db()
    return deletion


def test_deleting_a_team_with_its_jobs_queues_a_task_and_the_task_deletes_it_all_once(
    client, staff_operator, imported, queued, django_capture_on_commit_callbacks
):
    team = Team.objects.filter(jobs__findings__isnull=False).order_by("slug").first()
    ids = list(team.jobs.values_list("pk", flat=True))
    other_ids = list(Job.objects.exclude(team=team).values_list("pk", flat=True))
    files = blobs_of(ids) - blobs_of(other_ids)
    assert ids and other_ids and files
    before, others_before = left_of(ids), left_of(other_ids)
    assert all(before.values())
    client.force_login(staff_operator)

    selected = {"action": "delete_teams_with_jobs", "_selected_action": [team.pk]}
    confirm = " ".join(client.post("/admin/fleet/team/", selected).content.decode().split())
    assert f"{team}: {len(ids)} jobs" in confirm and "Yes, delete them with their jobs" in confirm
    assert Team.objects.filter(pk=team.pk).exists()
    response = client.post("/admin/fleet/team/", {**selected, "post": "yes"})
    deletion = ConnectorDeletion.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("fleet:deletion", args=[deletion.pk])
    assert queued == [("fleet.delete_jobs", (deletion.pk,))]
    assert left_of(ids) == before and Team.objects.filter(pk=team.pk).exists()  # nothing deleted in the request

    page = page_text(client, deletion)
    assert f"Deleting team {team} <span" in page and "Waiting for a worker</span>" in page
    assert f"0 of {len(ids)} jobs deleted" in page and 'data-status-url="/deletions/' in page
    status = client.get(reverse("fleet:deletion-status", args=[deletion.pk])).json()
    assert (status["finished"], status["jobs_deleted"], status["jobs_total"]) == (False, 0, len(ids))

    deletion = run_task_twice(deletion, django_capture_on_commit_callbacks)
    assert (deletion.status, deletion.jobs_deleted, deletion.jobs_total) == ("succeeded", len(ids), len(ids))
    assert not Team.objects.filter(pk=team.pk).exists()
    assert left_of(ids) == NOTHING and not any(default_storage.exists(name) for name in files)
    assert left_of(other_ids) == others_before  # the other teams' jobs and files stay
    assert all(default_storage.exists(name) for name in blobs_of(other_ids))
    event = AuditEvent.objects.get(action="team.delete")
    assert (event.actor, event.target_repr, event.details["jobs_deleted"]) == (staff_operator, str(team), len(ids))

    page = page_text(client, deletion)
    assert f"Team {team} deleted, with its {len(ids)} jobs, its memberships and its digests." in page
    assert "Deleted</span>" in page and "<progress" not in page


def test_deleting_an_ingest_run_with_its_jobs_queues_a_task_and_the_task_deletes_it_all_once(
    client, staff_operator, imported, queued, settings, django_capture_on_commit_callbacks
):
    settings.UPLOAD_DIR.mkdir(parents=True)
    waiting = settings.UPLOAD_DIR / "example.zip"
    waiting.write_bytes(EXAMPLE_ARCHIVE.read_bytes())
    IngestRun.objects.filter(pk=imported.pk).update(archive_path=str(waiting))
    ids = list(imported.jobs.values_list("pk", flat=True))
    files = blobs_of(ids)
    before = left_of(ids)
    client.force_login(staff_operator)

    selected = {"action": "delete_runs_with_jobs", "_selected_action": [imported.pk]}
    confirm = " ".join(client.post("/admin/fleet/ingestrun/", selected).content.decode().split())
    assert f"{imported}: {len(ids)} jobs" in confirm
    response = client.post("/admin/fleet/ingestrun/", {**selected, "post": "yes"})
    deletion = ConnectorDeletion.objects.get()
    assert response["Location"] == reverse("fleet:deletion", args=[deletion.pk])
    assert queued == [("fleet.delete_jobs", (deletion.pk,))]
    assert left_of(ids) == before and IngestRun.objects.filter(pk=imported.pk).exists() and waiting.exists()
    page = page_text(client, deletion)
    assert f"Deleting ingest run {imported.pk} (example-archive.zip)" in page and "Waiting for a worker" in page

    deletion = run_task_twice(deletion, django_capture_on_commit_callbacks)
    assert (deletion.status, deletion.jobs_deleted) == ("succeeded", len(ids))
    assert left_of(ids) == NOTHING and not any(default_storage.exists(name) for name in files)
    assert not IngestRun.objects.filter(pk=imported.pk).exists() and not waiting.exists()
    event = AuditEvent.objects.get(action="ingest_run.delete")
    assert (event.details["jobs_deleted"], event.details["archive_name"]) == (len(ids), "example-archive.zip")
    assert f"Ingest run {imported.pk} (example-archive.zip) deleted, with the {len(ids)} jobs" in page_text(
        client, deletion
    )


def test_delete_selected_jobs_in_the_admin_queues_a_task_and_the_task_deletes_them_once(
    client, staff_operator, imported, queued, django_capture_on_commit_callbacks
):
    chosen = list(Job.objects.order_by("pk").values_list("pk", flat=True)[:3])
    rest = list(Job.objects.exclude(pk__in=chosen).values_list("pk", flat=True))
    files = blobs_of(chosen) - blobs_of(rest)
    before, rest_before = left_of(chosen), left_of(rest)
    labels = [str(job) for job in Job.objects.filter(pk__in=chosen).order_by("pk")]
    client.force_login(staff_operator)

    selected = {"action": "delete_selected", "_selected_action": chosen}
    confirm = client.post("/admin/fleet/job/", selected).content.decode()
    assert "3 jobs, 3 with metric series" in " ".join(confirm.split())  # counts, not Django's object tree
    response = client.post("/admin/fleet/job/", {**selected, "post": "yes"}, follow=True)
    deletion = ConnectorDeletion.objects.get()
    assert response.redirect_chain[-1][0] == reverse("fleet:deletion", args=[deletion.pk])
    assert queued == [("fleet.delete_jobs", (deletion.pk,))]
    assert left_of(chosen) == before  # nothing deleted in the request
    said = " ".join(response.content.decode().split())
    assert "Successfully deleted" not in said and "Deleting 3 jobs <span" in said and "0 of 3 jobs deleted" in said

    deletion = run_task_twice(deletion, django_capture_on_commit_callbacks)
    assert (deletion.status, deletion.jobs_deleted) == ("succeeded", 3)
    assert left_of(chosen) == NOTHING and not any(default_storage.exists(name) for name in files)
    assert left_of(rest) == rest_before
    event = AuditEvent.objects.get(action="job.delete")  # as the admin's in-request deletion recorded it
    assert (event.target_repr, event.details["objects"], event.actor) == ("3 jobs", labels, staff_operator)
    assert "3 jobs deleted, of the 3 jobs chosen in the admin." in page_text(client, deletion)


def test_a_worker_that_dies_mid_deletion_leaves_whole_batches_and_its_redelivery_finishes_counting_each_once(
    operator, imported, queued, settings, django_capture_on_commit_callbacks
):
    """A worker killed in the middle of a batch: that batch's transaction rolls back with its count, the
    batches before stay deleted and counted; the redelivery goes on from there to the end."""
    from fleet import lifecycle

    settings.JOB_DELETE_BATCH = 1
    team = max(Team.objects.filter(jobs__isnull=False).distinct(), key=lambda t: t.jobs.count())
    total = team.jobs.count()
    assert total > 1, "the example needs a team with more than one batch of jobs"
    deletion, refused = lifecycle.delete_team(team, operator)
    assert refused == "" and queued

    with (
        worker_dies_in_the_second_batch(),
        pytest.raises(WorkerDied),
        django_capture_on_commit_callbacks(execute=True),
    ):
        lifecycle.run_deletion(deletion.pk)
    deletion.refresh_from_db()
    assert (deletion.status, deletion.jobs_deleted) == ("running", 1)
    assert team.jobs.count() == total - 1

    with django_capture_on_commit_callbacks(execute=True):
        assert delete_jobs_task.apply(args=[deletion.pk]).get()["jobs_deleted"] == total  # the redelivery
    deletion.refresh_from_db()
    assert (deletion.status, deletion.jobs_deleted, deletion.jobs_total) == ("succeeded", total, total)
    assert not Team.objects.filter(pk=team.pk).exists()
    assert AuditEvent.objects.get(action="team.delete").details["jobs_deleted"] == total


def test_a_failing_deletion_says_why_and_how_far_it_got(
    client, operator, imported, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """A task that raises part-way (the database, the time limit) ends failed on its page, saying how many
    jobs went and that the run and the rest stay; not swallowed, not 'Deleting' for ever."""
    from django.db import OperationalError

    from fleet import lifecycle

    settings.JOB_DELETE_BATCH = 1
    delete_jobs, calls = lifecycle.delete_jobs, []

    def second_batch_fails(jobs):
        calls.append(1)
        if len(calls) == 2:
            raise OperationalError("server closed the connection unexpectedly")
        return delete_jobs(jobs)

    monkeypatch.setattr(lifecycle, "delete_jobs", second_batch_fails)
    total = imported.jobs.count()
    with django_capture_on_commit_callbacks(execute=True):
        deletion, refused = lifecycle.delete_ingest_run(imported, operator)  # no queue: runs here, as embedded
    assert refused == "" and deletion.status == "failed"
    client.force_login(operator)
    page = page_text(client, deletion)
    assert "Failed</span>" in page
    assert "The deletion stopped: OperationalError: server closed the connection unexpectedly." in page
    assert f"1 of its {total} jobs were deleted before it stopped; the ingest run and the rest of its jobs " \
           "stay: delete it again to finish." in page  # fmt: skip
    assert IngestRun.objects.filter(pk=imported.pk).exists() and imported.jobs.count() == total - 1


def test_a_team_whose_jobs_a_labeling_study_holds_is_refused_before_anything_goes(client, staff_operator, imported):
    from triage.labeling.models import Study, StudyJob

    team = Team.objects.filter(jobs__isnull=False).order_by("slug").first()
    study = Study.objects.create(name="idle tails", created_by=staff_operator, seed=1)
    StudyJob.objects.create(study=study, job=team.jobs.first(), position=0)
    count = team.jobs.count()
    client.force_login(staff_operator)
    selected = {"action": "delete_teams_with_jobs", "_selected_action": [team.pk], "post": "yes"}
    said = client.post("/admin/fleet/team/", selected, follow=True).content.decode()
    assert f"1 of the jobs of team {team} is in a labeling study or gold set, so the team stays" in said
    assert team.jobs.count() == count and not ConnectorDeletion.objects.exists()


def test_a_deletions_page_is_for_operators_only(client, operator, member_a, imported, queued):
    from fleet import lifecycle

    team = Team.objects.filter(jobs__isnull=False).order_by("slug").first()
    deletion, _ = lifecycle.delete_team(team, operator)
    client.force_login(member_a)
    assert client.get(reverse("fleet:deletion", args=[deletion.pk])).status_code == 404
    assert client.get(reverse("fleet:deletion-status", args=[deletion.pk])).status_code == 404
    client.logout()
    assert client.get(reverse("fleet:deletion", args=[deletion.pk])).status_code == 302  # to the login
    client.force_login(operator)
    assert client.get(reverse("fleet:deletion", args=[deletion.pk])).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_teams_deletion_page_follows_the_worker_and_says_how_it_ended(browser, live_server, operator, queued):  # noqa: F811
    """The page of a team's deletion under way shows its progress (WCAG at any width), and once the worker
    is done comes back saying what went, the focus on its heading."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet import lifecycle
    from tests.factories import JobFactory, TeamFactory
    from tests.test_accessibility import narrow_window_problems, open_as, violations

    team = TeamFactory(slug="vision", name="Vision")
    JobFactory.create_batch(3, team=team)
    deletion, refused = lifecycle.delete_team(team, operator)
    assert refused == "" and deletion.status == "pending"
    open_as(browser, live_server.url, operator)
    browser.get(live_server.url + reverse("fleet:deletion", args=[deletion.pk]))
    assert browser.find_element("tag name", "h1").text.startswith("Deleting team Vision")
    assert browser.find_element("id", "deletion-count").text == "0 of 3 jobs deleted"
    assert violations(browser) == [] and narrow_window_problems(browser) == []

    delete_jobs_task.apply(args=[deletion.pk])  # the worker
    # The page reloads when done: stale (or, caught mid-swap, Chromium's node-not-in-document error), read again.
    until = WebDriverWait(browser, 10, ignored_exceptions=(StaleElementReferenceException, WebDriverException)).until
    until(lambda b: b.find_element("id", "deletion-status").text == "Deleted")
    said = browser.find_element("id", "deletion-said").text
    assert said == "Team Vision deleted, with its 3 jobs, its memberships and its digests."
    until(lambda b: b.switch_to.active_element.tag_name == "h1")
    assert violations(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_process_killed_mid_batch_keeps_the_batches_done_and_the_redelivery_finishes(operator, queued, settings):
    """As a connector's deletion is tested: a process killed for real in the middle of a batch (os._exit,
    against PostgreSQL or SQLite's file) keeps the batches that committed, counted once; the task's
    redelivery goes on from there, and a third delivery does nothing."""
    import os
    import subprocess
    import sys

    from fleet import lifecycle
    from tests.factories import JobFactory
    from tests.test_connector_deletion import require_file_database
    from tests.test_services import _worker_database_url

    require_file_database()
    run = IngestRun.objects.create(archive_name="big.zip", status=IngestRun.Status.SUCCEEDED)
    JobFactory.create_batch(5, ingest_run=run)
    deletion, refused = lifecycle.delete_ingest_run(run, operator)
    assert refused == "" and deletion.status == "pending" and deletion.jobs_total == 5
    code = (
        "import os, django; django.setup()\n"
        "from fleet import lifecycle\n"
        "delete_jobs, batches = lifecycle.delete_jobs, []\n"
        "def killed(jobs):\n"
        "    batches.append(delete_jobs(jobs))\n"
        "    if len(batches) == 2:\n"
        "        os._exit(9)  # in the middle of the second batch's transaction\n"
        "lifecycle.delete_jobs = killed\n"
        f"lifecycle.run_deletion({deletion.pk})\n"
    )
    env = {**os.environ, "DATABASE_URL": _worker_database_url(), "DJANGO_SETTINGS_MODULE": "config.settings",
           "DEBUG": "1", "SECRET_KEY": "killed-worker", "JOB_DELETE_BATCH": "2"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr

    deletion.refresh_from_db()  # the first batch went, the second rolled back with its count
    assert (deletion.status, deletion.jobs_deleted) == ("running", 2) and run.jobs.count() == 3

    settings.JOB_DELETE_BATCH = 2
    assert delete_jobs_task.delay(deletion.pk).get()["jobs_deleted"] == 5  # the redelivery
    deletion.refresh_from_db()
    assert (deletion.status, deletion.jobs_deleted, deletion.jobs_total) == ("succeeded", 5, 5)
    assert not IngestRun.objects.filter(pk=run.pk).exists() and not Job.objects.exists()
    assert AuditEvent.objects.get(action="ingest_run.delete").details["jobs_deleted"] == 5
    assert delete_jobs_task.delay(deletion.pk).get()["jobs_deleted"] == 5  # once more: nothing happens
    assert AuditEvent.objects.filter(action="ingest_run.delete").count() == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_deletes_a_team_chosen_in_the_admin_while_its_page_shows_the_progress(
    client, staff_operator, storage_dir, monkeypatch
):
    import uuid

    from config.celery import app
    from fleet import tasking
    from tests.conftest import require_service
    from tests.factories import JobFactory, TeamFactory
    from tests.test_connector_deletion import require_file_database
    from tests.test_services import celery_worker

    require_service("REDIS_URL")
    require_file_database()
    app.conf.task_always_eager = False
    queue = f"test-deletion-{uuid.uuid4().hex[:8]}"
    publish = tasking.publish
    monkeypatch.setattr(tasking, "publish", lambda task, args=(), **kw: publish(task, args, queue=queue, **kw))
    storage_dir.mkdir(parents=True, exist_ok=True)
    team = TeamFactory(slug="vision", name="Vision")
    JobFactory.create_batch(7, team=team)
    client.force_login(staff_operator)

    # No worker yet: the request returns at once, and the page says the deletion waits for one.
    selected = {"action": "delete_teams_with_jobs", "_selected_action": [team.pk], "post": "yes"}
    response = client.post("/admin/fleet/team/", selected, follow=True)
    deletion = ConnectorDeletion.objects.get()
    assert response.redirect_chain[-1][0] == reverse("fleet:deletion", args=[deletion.pk])
    assert "0 of 7 jobs deleted" in response.content.decode() and team.jobs.count() == 7

    status_url = reverse("fleet:deletion-status", args=[deletion.pk])
    with celery_worker(queue, storage_dir, env={"JOB_DELETE_BATCH": "2"}) as worker:
        status = finished_deletion(client, status_url)
        assert worker.poll() is None
    assert (status["status_display"], status["jobs_deleted"]) == ("Deleted", 7)
    assert not Team.objects.filter(pk=team.pk).exists() and not Job.objects.exists()
    assert AuditEvent.objects.get(action="team.delete").actor == staff_operator


def test_a_teams_deletion_asked_for_again_replaces_the_one_whose_task_was_lost(operator, queued):
    """A deletion whose task was lost (Redis flushed) would wait for ever: asking again ends it, saying so,
    and starts a new one; the old task, should it come after all, deletes and counts nothing."""
    from fleet import lifecycle
    from tests.factories import JobFactory, TeamFactory

    team = TeamFactory(slug="vision")
    JobFactory.create_batch(2, team=team)
    lost, _ = lifecycle.delete_team(team, operator)
    assert lifecycle.delete_team(team, operator) == (lost, "")  # its lease holds: it may yet run
    ConnectorDeletion.objects.filter(pk=lost.pk).update(locked_until=None)  # ran out (as before leases)
    new, _ = lifecycle.delete_team(team, operator)
    lost.refresh_from_db()
    assert (lost.status, new.status) == ("failed", "pending")
    assert lost.message.startswith("Its task stopped or never came (lost, or no worker was free) after 0 jobs")
    assert delete_jobs_task.apply(args=[lost.pk]).get() == {
        "deletion_id": lost.pk,
        "status": "failed",
        "jobs_deleted": 0,
    }
    assert team.jobs.count() == 2
    assert delete_jobs_task.apply(args=[new.pk]).get()["jobs_deleted"] == 2
    assert not Team.objects.filter(pk=team.pk).exists()


def test_a_deletion_ended_while_its_task_runs_stops_at_that_batch_and_counts_nothing(operator, queued, monkeypatch):
    from fleet import lifecycle
    from fleet.connectors.sync import fail_deletion
    from tests.factories import JobFactory, TeamFactory

    team = TeamFactory(slug="vision")
    JobFactory.create_batch(2, team=team)
    deletion, _ = lifecycle.delete_team(team, operator)
    kept_job_ids = lifecycle.kept_job_ids

    def asked_again_once_it_runs(jobs):  # run_deletion asks this just before its first batch
        fail_deletion(deletion.pk, "It was asked for again", counted=False)  # as lifecycle._start does
        return kept_job_ids(jobs)

    monkeypatch.setattr(lifecycle, "kept_job_ids", asked_again_once_it_runs)
    assert delete_jobs_task.apply(args=[deletion.pk]).get()["status"] == "failed"
    deletion.refresh_from_db()
    assert deletion.jobs_deleted == 0 and team.jobs.count() == 2 and Team.objects.filter(pk=team.pk).exists()


def test_a_teams_deletion_whose_task_never_ran_is_picked_up_once_its_lease_has_run_out(client, staff_operator, queued):
    """Leases as a connector's deletion has (sync.DELETE_LEASE_SECONDS, renewed by its task before each
    batch): while it holds, deleting the team again leads to the deletion under way and starts none;
    once it has run out (the task was lost: a worker died, the broker was flushed) the new one ends the
    lost one, saying so, and deletes the team; the lost task, should it come after all, does nothing."""
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import JobFactory, TeamFactory

    team = TeamFactory(slug="vision")
    JobFactory.create_batch(2, team=team)
    client.force_login(staff_operator)
    chosen = {"action": "delete_teams_with_jobs", "_selected_action": [team.pk], "post": "yes"}
    first = client.post("/admin/fleet/team/", chosen, follow=True)
    lost = ConnectorDeletion.objects.get()
    assert first.redirect_chain[-1][0] == reverse("fleet:deletion", args=[lost.pk])

    again = client.post("/admin/fleet/team/", chosen, follow=True)  # its lease holds: it may yet run
    assert again.redirect_chain[-1][0] == reverse("fleet:deletion", args=[lost.pk])
    assert ConnectorDeletion.objects.count() == 1 and len(queued) == 1

    ConnectorDeletion.objects.filter(pk=lost.pk).update(locked_until=timezone.now() - timedelta(seconds=1))
    client.post("/admin/fleet/team/", chosen)
    new = ConnectorDeletion.objects.exclude(pk=lost.pk).get()
    assert queued == [("fleet.delete_jobs", (lost.pk,)), ("fleet.delete_jobs", (new.pk,))]
    lost.refresh_from_db()
    assert (lost.status, lost.message) == ("failed", (
        "Its task stopped or never came (lost, or no worker was free) after 0 jobs were deleted, and the deletion "
        "was asked for again: the new one deletes the rest."))  # fmt: skip
    assert delete_jobs_task.apply(args=[lost.pk]).get()["status"] == "failed"  # the lost task: nothing done
    assert team.jobs.count() == 2
    assert delete_jobs_task.apply(args=[new.pk]).get() == {"deletion_id": new.pk, "status": "succeeded",
                                                           "jobs_deleted": 2}  # fmt: skip
    assert not Team.objects.filter(pk=team.pk).exists()


def test_chosen_jobs_whose_deletion_lost_its_task_are_deleted_when_chosen_again_once_its_lease_ran_out(
    client, staff_operator, queued
):
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import JobFactory

    chosen = [job.pk for job in JobFactory.create_batch(3)]
    client.force_login(staff_operator)
    selected = {"action": "delete_selected", "_selected_action": chosen, "post": "yes"}
    client.post("/admin/fleet/job/", selected)
    lost = ConnectorDeletion.objects.get()
    ConnectorDeletion.objects.filter(pk=lost.pk).update(locked_until=timezone.now() - timedelta(seconds=1))
    client.post("/admin/fleet/job/", {**selected, "_selected_action": chosen[:2]})
    new = ConnectorDeletion.objects.exclude(pk=lost.pk).get()
    lost.refresh_from_db()
    assert lost.status == "failed" and lost.message.startswith("Its task stopped or never came")
    assert delete_jobs_task.apply(args=[new.pk]).get()["jobs_deleted"] == 2
    assert list(Job.objects.values_list("pk", flat=True)) == chosen[2:]
