"""A pull whose database connection is cut in the middle (PostgreSQL restarted or failed over, a pooler
restarted, an idle timeout, the network), on the real PostgreSQL: the server ends the pull's session
(pg_terminate_backend, what a restart does to every connection) while a loopback platform answers the
pull's second page. The pull could not write its run's end on the dead connection, so the run stayed
*running* until beat's next tick (and the lease with it), which then said that the worker had stopped."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from fleet.connectors import sync
from fleet.connectors.models import Connector
from fleet.models import IngestRun, Job
from tests.conftest import require_postgresql
from tests.connector_servers import FakePlatform
from tests.test_connectors_sync import GenericApi
from tests.test_ingest_exclusive import RUN_LOCKS_NEED_POSTGRESQL
from tests.test_services import _worker_database_url

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_pull_whose_connection_is_cut_ends_its_run_failed_at_once_saying_why(settings):
    require_postgresql(RUN_LOCKS_NEED_POSTGRESQL)
    settings.CONNECTOR_HTTP_RETRIES = 0
    api = GenericApi(5)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pull_session = cursor.fetchone()[0]

    def second_page_cuts_the_connection(path, query):
        if int(query.get("cursor") or 0) == 2:
            with psycopg.connect(_worker_database_url(), autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", [pull_session])
        return api.jobs_page(path, query)

    with FakePlatform() as server:
        server.route("/jobs/", api.job_part)
        server.route("/jobs", second_page_cuts_the_connection)
        connector = Connector.objects.create(
            name="api", kind="generic", url=server.url, cluster="c1", options={"page_size": 2, "series": False}
        )
        with pytest.raises(Exception, match="terminat"):  # on to the task's log
            sync.sync_connector(connector.pk)
        connection.close_if_unusable_or_obsolete()  # as Celery's Django fix-up does after each task
        connector.refresh_from_db()
        run = connector.runs.get()
        assert run.status == IngestRun.Status.FAILED, "left running until beat's tick"
        assert run.errors[-1]["message"].startswith("the pull stopped: OperationalError: terminating connection")
        assert connector.last_error == run.errors[-1]["message"] and connector.locked_until is None
        assert connector.watermark == "2" and Job.objects.count() == 2
        assert sync.fail_stopped_pulls() == []  # nothing left for beat

        # The next pull goes on from the watermark.
        assert sync.sync_connector(connector.pk).created == 3
