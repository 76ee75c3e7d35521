"""Beat's connector schedule after the workers were away: the ticks queued meanwhile must not each pull
every due connector again, against a loopback server playing the platform."""

from __future__ import annotations

import pytest
from django.conf import settings

from fleet.connectors import sync
from fleet.connectors import tasks as connector_tasks
from fleet.models import IngestRun, Job
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import GenericApi, make_connector

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_try(settings):
    settings.CONNECTOR_HTTP_RETRIES = 0


def test_ticks_queued_while_no_worker_ran_pull_a_due_connector_once(monkeypatch):
    """Three ticks waited in the queue (a worker restart, an outage): each found the connector due and
    queued a pull, and the three pulls ran one after the other, three ingest runs and three times the
    platform's API for one interval. The copies now find it pulled since their turn and do nothing; a
    Pull now still pulls, and a connector disabled since its turn was queued is not pulled."""
    queued = []
    monkeypatch.setattr(
        connector_tasks.sync_connector_task, "apply_async", lambda args, kwargs=None, **o: queued.append((args, kwargs))
    )
    api = GenericApi(2)
    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, name="api", options={"series": False})
        off = make_connector("generic", server.url, name="off")
        for _ in range(3):  # the backlog of ticks, run back to back before any pull
            assert connector_tasks.schedule_connectors_task() == [connector.pk, off.pk]
        assert len(queued) == 6
        off.enabled = False
        off.save()
        results = [connector_tasks.sync_connector_task(*args, **kwargs) for args, kwargs in queued]
        by_status = [(r["connector"], r["status"]) for r in results]
        assert by_status == [("api", "succeeded"), ("off", "not-due")] + [("api", "not-due"), ("off", "not-due")] * 2
        assert (
            results[2]["message"].startswith("pulled at ")
            and results[1]["message"] == "disabled since its turn was queued"
        )
        assert IngestRun.objects.count() == 1 and server.count("/jobs") == 1 and Job.objects.count() == 2

        # Pull now is no turn of the schedule: it pulls, though the connector is not due.
        assert connector_tasks.sync_connector_task(connector.pk)["status"] == "succeeded"
        assert IngestRun.objects.count() == 2


def test_a_pull_that_gets_the_lease_after_another_starts_from_the_watermark_that_one_left(monkeypatch):
    """A pull read its connector, then took the lease the moment another pull (Pull now, another worker)
    let it go: it started from the watermark it had read, so every job the other pull had stored was
    fetched and stored again, as unchanged."""
    api = GenericApi(4)
    real_acquire = sync.acquire

    def another_pull_first(connector_id, token, **kwargs):  # between reading the row and taking the lease
        monkeypatch.setattr(sync, "acquire", real_acquire)
        assert sync.sync_connector(connector_id).created == 4
        return real_acquire(connector_id, token, **kwargs)

    with FakePlatform() as server:
        api.install(server)
        connector = make_connector("generic", server.url, name="api", options={"series": False})
        monkeypatch.setattr(sync, "acquire", another_pull_first)
        result = sync.sync_connector(connector.pk)
    assert (result.status, result.jobs_seen, result.unchanged, result.watermark) == ("succeeded", 0, 0, "4")


def test_a_tick_waits_a_minute_at_most():
    assert settings.CELERY_BEAT_SCHEDULE["fleet.schedule_connectors"]["options"]["expires"] == 60.0
