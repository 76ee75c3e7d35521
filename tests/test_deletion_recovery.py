"""Deletions whose task was lost: beat's sweep `fleet.resume_deletions` queues them again.

A deletion (a team, an ingest run, jobs chosen in the admin, a connector with its jobs) whose task was
lost — the broker flushed, a worker that died after acknowledging it, Redis restarted without
persistence — showed *Waiting for a worker* or *Deleting* until someone asked for the same deletion
again. Now beat's sweep, every DELETION_REQUEUE_MINUTES, takes the lease of each unfinished deletion
whose lease has run out (its task renews it before each batch, so a running one holds it) and that is
older than that, and queues its task again; the task goes on from the last batch that committed. One
whose lease holds is never queued, nor is a finished one; the sweep takes the lease as it queues, so the
next sweep does not queue it a second time while the first copy waits for a worker.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from datetime import timedelta

import pytest
from celery.result import AsyncResult
from django.conf import settings as django_settings
from django.utils import timezone

from fleet import lifecycle, tasking
from fleet.connectors import sync
from fleet.connectors.models import Connector, ConnectorDeletion
from fleet.models import AuditEvent, Job, Team
from tests.conftest import WorkerDied, worker_dies_in_the_second_batch
from tests.factories import JobFactory, TeamFactory
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db

SWEEP = timedelta(minutes=5)


@contextmanager
def lost_on_the_way(monkeypatch):
    """Queuing that loses the task (the broker flushed before a worker took it): nothing runs."""
    with monkeypatch.context() as patch:
        patch.setattr(tasking, "publish", lambda task, args=(), **kw: AsyncResult("x"))
        yield


def ran_out(deletion: ConnectorDeletion, minutes_ago: int = 15) -> None:
    """Started `minutes_ago`, and its lease ran out (no task renews it)."""
    then = timezone.now() - timedelta(minutes=minutes_ago)
    ConnectorDeletion.objects.filter(pk=deletion.pk).update(
        created_at=then, locked_until=timezone.now() - timedelta(seconds=1)
    )


@pytest.fixture
def queued(monkeypatch):
    """A task queue with no worker yet: what was queued (task, arguments, keyword arguments), nothing run."""
    calls = []

    def publish(task, args=(), *, kwargs=None, **kw):
        calls.append((task.name, tuple(args), kwargs or {}))
        return AsyncResult("x")

    monkeypatch.setattr(tasking, "publish", publish)
    return calls


def test_the_sweep_finishes_a_teams_deletion_whose_task_was_lost_deleting_each_job_once(operator, monkeypatch, caplog):
    team = TeamFactory(slug="vision")
    JobFactory.create_batch(3, team=team)
    others = [job.pk for job in JobFactory.create_batch(2)]
    with lost_on_the_way(monkeypatch):
        deletion, refused = lifecycle.delete_team(team, operator)
    assert refused == "" and deletion.status == "pending"

    assert sync.resume_deletions(SWEEP) == {}  # its lease holds: its task may yet come
    ran_out(deletion)
    with caplog.at_level(logging.WARNING, logger="fleet.connectors.sync"):
        assert sync.resume_deletions(SWEEP) == {"queued": 1}  # in-process (no Redis) the task runs at once

    deletion.refresh_from_db()
    assert (deletion.status, deletion.jobs_deleted, deletion.jobs_total) == ("succeeded", 3, 3)
    assert not Team.objects.filter(pk=team.pk).exists()
    assert sorted(Job.objects.values_list("pk", flat=True)) == sorted(others)
    assert AuditEvent.objects.get(action="team.delete").details["jobs_deleted"] == 3
    assert f"Deletion {deletion.pk} of team Vision had lost its task (pending, 0 jobs deleted): queued again" in (
        caplog.text
    )
    assert sync.resume_deletions(SWEEP) == {}  # finished: never again


def test_a_deletion_whose_worker_died_mid_way_is_finished_from_the_last_batch_counting_each_job_once(
    operator, monkeypatch, settings
):
    settings.JOB_DELETE_BATCH = 2
    team = TeamFactory(slug="vision")
    JobFactory.create_batch(5, team=team)
    with lost_on_the_way(monkeypatch):
        deletion, _ = lifecycle.delete_team(team, operator)
    with worker_dies_in_the_second_batch(), pytest.raises(WorkerDied):
        lifecycle.run_deletion(deletion.pk)
    deletion.refresh_from_db()
    assert (deletion.status, deletion.jobs_deleted) == ("running", 2)  # and its message was acknowledged: lost

    ran_out(deletion)
    assert sync.resume_deletions(SWEEP) == {"queued": 1}
    deletion.refresh_from_db()
    assert (deletion.status, deletion.jobs_deleted, deletion.jobs_total) == ("succeeded", 5, 5)
    assert not Team.objects.filter(pk=team.pk).exists() and not Job.objects.exists()


def test_a_deletion_whose_lease_holds_is_never_queued_and_one_queued_is_not_queued_again(operator, queued):
    from fleet.connectors.tasks import delete_jobs_task

    running_team, lost_team = TeamFactory(slug="running"), TeamFactory(slug="lost")
    JobFactory.create_batch(2, team=running_team)
    JobFactory.create_batch(2, team=lost_team)
    running, _ = lifecycle.delete_team(running_team, operator)
    lost, _ = lifecycle.delete_team(lost_team, operator)
    an_hour_ago = timezone.now() - timedelta(hours=1)
    ConnectorDeletion.objects.filter(pk=running.pk).update(  # a worker deletes it and renewed its lease
        status="running", created_at=an_hour_ago, locked_until=timezone.now() + timedelta(minutes=5)
    )
    ran_out(lost)
    asked = queued[1]
    queued.clear()

    assert sync.resume_deletions(SWEEP) == {"queued": 1}
    assert sync.resume_deletions(SWEEP) == {}  # the copy queued waits for a worker: its lease holds
    assert [(name, args) for name, args, _ in queued] == [("fleet.delete_jobs", (lost.pk,))]
    lost.refresh_from_db()
    assert lost.status == "pending" and lost.locked_until > timezone.now()

    ran_out(lost)  # no worker took that copy in time either
    assert sync.resume_deletions(SWEEP) == {"queued": 1}
    assert [(name, args) for name, args, _ in queued] == [("fleet.delete_jobs", (lost.pk,))] * 2
    assert ConnectorDeletion.objects.get(pk=running.pk).status == "running"

    # The older copies come after all (the page's, the first sweep's): they do nothing; the last one deletes.
    for _, args, kwargs in (asked, queued[0]):
        assert delete_jobs_task.apply(args=args, kwargs=kwargs).get() == {
            "deletion_id": lost.pk, "status": "pending", "jobs_deleted": 0}  # fmt: skip
    assert lost_team.jobs.count() == 2
    assert delete_jobs_task.apply(args=queued[1][1], kwargs=queued[1][2]).get()["jobs_deleted"] == 2
    assert not Team.objects.filter(pk=lost_team.pk).exists()


def test_a_deletion_whose_task_comes_as_the_sweep_looks_is_left_to_that_task(operator, queued, monkeypatch):
    """The sweep read the deletion's lease as run out; its task (only slow) renews it before the sweep takes
    it: the sweep's conditional UPDATE finds it held and queues nothing."""
    team = TeamFactory(slug="vision")
    JobFactory.create_batch(2, team=team)
    deletion, _ = lifecycle.delete_team(team, operator)
    ran_out(deletion)
    queued.clear()
    take_lease = sync.take_lease

    def the_task_comes_first(rows, token, **kwargs):
        row = ConnectorDeletion.objects.get(pk=deletion.pk)
        assert sync.hold_lease(rows, row.lease_token, seconds=600, holder_field="lease_token")  # as run_deletion
        return take_lease(rows, token, **kwargs)

    monkeypatch.setattr(sync, "take_lease", the_task_comes_first)
    assert sync.resume_deletions(SWEEP) == {"busy": 1}
    assert queued == []


def test_finished_deletions_and_young_ones_are_left_alone(operator, queued):
    teams = [TeamFactory(slug=slug) for slug in ("done", "broken", "young")]
    done, broken, young = (lifecycle.delete_team(team, operator)[0] for team in teams)
    for deletion in (done, broken):
        ran_out(deletion)
    ConnectorDeletion.objects.filter(pk=done.pk).update(status="succeeded")
    ConnectorDeletion.objects.filter(pk=broken.pk).update(status="failed")
    ConnectorDeletion.objects.filter(pk=young.pk).update(  # its lease ran out, but it was asked for a minute ago
        created_at=timezone.now() - timedelta(minutes=1), locked_until=None
    )
    queued.clear()
    assert sync.resume_deletions(SWEEP) == {}
    assert queued == []  # nothing queued
    assert [d.status for d in ConnectorDeletion.objects.order_by("pk")] == ["succeeded", "failed", "pending"]


def test_each_sweep_queues_at_most_its_limit_oldest_first(operator, queued):
    older, newer = TeamFactory(slug="older"), TeamFactory(slug="newer")
    first, second = lifecycle.delete_team(older, operator)[0], lifecycle.delete_team(newer, operator)[0]
    ran_out(first, minutes_ago=30)
    ran_out(second, minutes_ago=20)
    queued.clear()
    assert sync.resume_deletions(SWEEP, limit=1) == {"queued": 1}
    assert sync.resume_deletions(SWEEP, limit=1) == {"queued": 1}
    assert [args for _, args, _ in queued] == [(first.pk,), (second.pk,)]


def test_a_deletion_the_sweep_cannot_queue_stays_for_the_next_sweep(operator, monkeypatch):
    team = TeamFactory(slug="vision")
    JobFactory.create_batch(2, team=team)
    with lost_on_the_way(monkeypatch):
        deletion, _ = lifecycle.delete_team(team, operator)
    ran_out(deletion)

    def unreachable(task, args=(), *, not_done, **kw):
        raise tasking.QueueUnreachable(f"The task queue could not be reached, so {not_done}")

    with monkeypatch.context() as patch:
        patch.setattr(tasking, "publish", unreachable)
        assert sync.resume_deletions(SWEEP) == {"unreachable": 1}
        assert sync.resume_deletions(SWEEP) == {"unreachable": 1}  # its lease is left run out: tried again
    deletion.refresh_from_db()
    assert (deletion.status, deletion.message) == ("pending", "")  # not failed: Redis may be back next time
    assert sync.resume_deletions(SWEEP) == {"queued": 1}
    assert ConnectorDeletion.objects.get(pk=deletion.pk).jobs_deleted == 2


def test_a_connectors_deletion_whose_task_was_lost_is_finished_once_no_pull_holds_it(operator, monkeypatch, settings):
    from tests.test_connector_deletion import pulled

    settings.CONNECTOR_HTTP_RETRIES = 0
    api = pulled("api", "c1", 3)
    with lost_on_the_way(monkeypatch):
        deletion, _ = sync.start_deletion(api, operator)
    ConnectorDeletion.objects.filter(pk=deletion.pk).update(created_at=timezone.now() - timedelta(minutes=15))
    assert sync.resume_deletions(SWEEP) == {}  # the deletion's lease on its connector holds

    Connector.objects.filter(pk=api.pk).update(locked_until=timezone.now() - timedelta(seconds=1))  # ran out
    assert sync.acquire(api.pk, "a scheduled pull")  # and a pull took the connector meanwhile
    assert sync.resume_deletions(SWEEP) == {}
    sync.release(api.pk, "a scheduled pull")

    assert sync.resume_deletions(SWEEP) == {"queued": 1}
    deletion.refresh_from_db()
    assert (deletion.status, deletion.jobs_deleted) == ("succeeded", 3)
    assert not Connector.objects.filter(pk=api.pk).exists() and not Job.objects.exists()
    assert sync.resume_deletions(SWEEP) == {}


def test_a_connectors_deletion_queued_again_leaves_nothing_to_its_older_copy(operator, queued, settings):
    from fleet.connectors.tasks import delete_connector_task
    from tests.test_connector_deletion import pulled

    settings.CONNECTOR_HTTP_RETRIES = 0
    api = pulled("api", "c1", 3)
    deletion, _ = sync.start_deletion(api, operator)
    ConnectorDeletion.objects.filter(pk=deletion.pk).update(created_at=timezone.now() - timedelta(minutes=15))
    Connector.objects.filter(pk=api.pk).update(locked_until=timezone.now() - timedelta(seconds=1))
    assert sync.resume_deletions(SWEEP) == {"queued": 1}
    (_, args, asked), (_, _, again) = queued
    assert sync.being_deleted(Connector.objects.get(pk=api.pk))  # Pull now says it is being deleted

    assert delete_connector_task.apply(args=args, kwargs=asked).get() == {  # the page's copy, only slow
        "deletion_id": deletion.pk, "status": "pending", "jobs_deleted": 0}  # fmt: skip
    assert delete_connector_task.apply(args=args, kwargs=again).get() == {
        "deletion_id": deletion.pk, "status": "succeeded", "jobs_deleted": 3}  # fmt: skip
    assert not Connector.objects.filter(pk=api.pk).exists()


def test_beat_runs_the_sweep(operator, monkeypatch):
    from fleet.connectors.tasks import resume_deletions_task

    entry = django_settings.CELERY_BEAT_SCHEDULE["fleet.resume_deletions"]
    assert entry["task"] == resume_deletions_task.name == "fleet.resume_deletions"
    assert entry["schedule"] == django_settings.DELETION_REQUEUE_MINUTES * 60
    team = TeamFactory(slug="vision")
    JobFactory.create_batch(2, team=team)
    with lost_on_the_way(monkeypatch):
        deletion, _ = lifecycle.delete_team(team, operator)
    ran_out(deletion, minutes_ago=django_settings.DELETION_REQUEUE_MINUTES + 1)
    assert resume_deletions_task.apply().get() == {"queued": 1}
    assert ConnectorDeletion.objects.get(pk=deletion.pk).jobs_deleted == 2


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_finishes_a_deletion_whose_message_was_flushed_once_the_sweep_queues_it(
    operator, storage_dir, monkeypatch
):
    import uuid

    import redis

    from config.celery import app
    from tests.conftest import require_service
    from tests.test_connector_deletion import require_file_database
    from tests.test_services import celery_worker

    redis_url = require_service("REDIS_URL")
    require_file_database()
    app.conf.task_always_eager = False
    queue = f"test-resume-{uuid.uuid4().hex[:8]}"
    publish = tasking.publish
    monkeypatch.setattr(tasking, "publish", lambda task, args=(), **kw: publish(task, args, queue=queue, **kw))
    storage_dir.mkdir(parents=True, exist_ok=True)
    team = TeamFactory(slug="vision", name="Vision")
    JobFactory.create_batch(7, team=team)
    deletion, _ = lifecycle.delete_team(team, operator)
    broker = redis.Redis.from_url(redis_url)
    assert broker.llen(queue) == 1
    broker.delete(queue)  # the broker flushed before a worker took it
    ran_out(deletion)

    assert sync.resume_deletions(SWEEP) == {"queued": 1}
    assert broker.llen(queue) == 1 and ConnectorDeletion.objects.get(pk=deletion.pk).status == "pending"
    with celery_worker(queue, storage_dir, env={"JOB_DELETE_BATCH": "2"}) as worker:
        progress = ConnectorDeletion.objects.filter(pk=deletion.pk).values("status", "jobs_deleted", "jobs_total")
        finished = (ConnectorDeletion.Status.SUCCEEDED, ConnectorDeletion.Status.FAILED)  # its `is_finished`
        wait_for("the worker to finish the deletion", progress.get, 60, until=lambda now: now["status"] in finished)
        assert worker.poll() is None
    deletion.refresh_from_db()
    assert (deletion.status, deletion.jobs_deleted, deletion.jobs_total) == ("succeeded", 7, 7)
    assert not Team.objects.filter(pk=team.pk).exists() and not Job.objects.exists()
    assert sync.resume_deletions(SWEEP) == {}
