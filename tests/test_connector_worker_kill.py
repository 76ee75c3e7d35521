"""A worker killed in the middle of a connector's pull (OOM, kill -9, a restart that did not wait), for
real: a `celery worker` over Redis pulling from a loopback server playing the platform, on PostgreSQL,
SIGKILLed while the platform holds its second page. Beat's scheduler then fails the pull's run, saying
so, frees the connector's lease at once (its worker's run lock went with the connection), and the next
pull goes on from the watermark the first left: the first page's jobs are not stored twice."""

from __future__ import annotations

import threading
import uuid

import pytest

from fleet.connectors import sync
from fleet.connectors.models import Connector
from fleet.connectors.tasks import schedule_connectors_task, sync_connector_task
from fleet.models import IngestRun, Job
from tests.conftest import require_postgresql, require_service
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import GenericApi
from tests.test_ingest_exclusive import RUN_LOCKS_NEED_POSTGRESQL, wait_until_released
from tests.test_services import celery_worker
from tests.waiting import wait_for

pytestmark = pytest.mark.services


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_pull_leaves_a_failed_run_a_free_lease_and_no_gap(storage_dir):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    require_service("REDIS_URL")
    from config.celery import app

    api, hold = GenericApi(5), threading.Event()
    jobs_page = api.jobs_page

    def second_page_hangs(path, query):
        if int(query.get("cursor") or 0) >= 2:
            hold.wait(60)  # the worker is killed while it waits for this answer
        return jobs_page(path, query)

    app.conf.task_always_eager = False
    queue = f"test-pull-kill-{uuid.uuid4().hex[:8]}"
    storage_dir.mkdir(parents=True, exist_ok=True)
    with FakePlatform() as server:
        server.route("/jobs/", api.job_part)
        server.route("/jobs", second_page_hangs)
        connector = Connector.objects.create(
            name="api", kind="generic", url=server.url, cluster="c1", options={"page_size": 2, "series": False}
        )
        try:
            with celery_worker(queue, storage_dir, env={"CONNECTOR_HTTP_TIMEOUT": "120"}) as worker:
                sync_connector_task.apply_async(args=[connector.pk], queue=queue)
                pulls = IngestRun.objects.filter(connector=connector).values("pk", "status", "jobs_done")

                def first_page_stored(pull):
                    return pull and (pull["status"], pull["jobs_done"]) == (IngestRun.Status.RUNNING, 2)

                pull = wait_for("the first page stored", pulls.first, until=first_page_stored)
                run = IngestRun.objects.get(pk=pull["pk"])
                assert Connector.objects.get(pk=connector.pk).watermark == "2"
                worker.kill()  # SIGKILL: no warm shutdown, nothing finishes the run
                worker.wait(30)
        finally:
            hold.set()
        wait_until_released(run.pk)

        app.conf.task_always_eager = True  # beat's tick, here, in this process
        assert sync.pull_running(Connector.objects.get(pk=connector.pk))[0]  # the dead pull's lease, still held
        schedule_connectors_task.apply()
        run.refresh_from_db()
        connector.refresh_from_db()
        assert run.status == IngestRun.Status.FAILED and run.errors[-1]["message"] == sync.STOPPED_PULL
        assert connector.last_error == sync.STOPPED_PULL and connector.locked_until is None
        assert not sync.pull_running(connector)[0]

        # The next pull (Pull now) goes on from the watermark: the three jobs left, none stored twice.
        result = sync.sync_connector(connector.pk)
        assert (result.status, result.created, result.unchanged) == ("succeeded", 3, 0)
    assert Job.objects.count() == 5
