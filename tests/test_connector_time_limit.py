"""A pull stopped by the task's soft time limit (CELERY_TASK_TIME_LIMIT less a minute; a first pull that
reaches back many days can take longer), against a loopback server playing the platform. Celery raises
SoftTimeLimitExceeded in the middle of whatever the pull is doing; here it is raised as the third job is
stored. The run and the connector said 'the pull stopped: SoftTimeLimitExceeded: SoftTimeLimitExceeded()'."""

from __future__ import annotations

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from fleet import ingest
from fleet.connectors import sync
from fleet.models import Job
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import GenericApi, make_connector

pytestmark = pytest.mark.django_db


def test_a_pull_stopped_by_the_time_limit_says_so_keeps_what_it_stored_and_the_next_goes_on(monkeypatch, settings):
    settings.CONNECTOR_HTTP_RETRIES = 0
    store_job, stored = ingest.store_job, []

    def limit_reached_at_the_third(*args, **kwargs):
        if len(stored) == 2:
            raise SoftTimeLimitExceeded()
        stored.append(1)
        return store_job(*args, **kwargs)

    with FakePlatform() as server:
        GenericApi(5).install(server)
        connector = make_connector("generic", server.url, name="api", options={"page_size": 2, "series": False})
        monkeypatch.setattr(ingest, "store_job", limit_reached_at_the_third)
        with pytest.raises(SoftTimeLimitExceeded):  # on to the task, which Celery then ends
            sync.sync_connector(connector.pk)
        said = (
            f"the pull stopped at the task time limit (CELERY_TASK_TIME_LIMIT={settings.CELERY_TASK_TIME_LIMIT} s); "
            "the jobs it stored are kept and the next pull goes on from the watermark (2). A first pull that "
            "reaches far back (initial_days) may take several: pull again, or raise the limit."
        )
        connector.refresh_from_db()
        run = connector.runs.get()
        assert run.status == "failed" and run.errors[-1]["message"] == said and connector.last_error == said
        assert connector.watermark == "2" and Job.objects.count() == 2

        monkeypatch.setattr(ingest, "store_job", store_job)
        assert sync.sync_connector(connector.pk).created == 3
    assert Job.objects.count() == 5
