"""Deleting a connector with its jobs on a real `celery worker` over Redis: the request only starts the
deletion, the operator's page shows it under way, and the worker deletes the jobs in batches, their
files after each batch commits, then the connector; the page's status then says it has finished."""

from __future__ import annotations

import uuid

import pytest
from django.core.files.storage import default_storage
from django.urls import reverse

from fleet import tasking
from fleet.connectors.models import Connector, ConnectorDeletion
from fleet.models import AuditEvent, Cluster, Job
from tests.conftest import require_service
from tests.test_connector_deletion import blobs_of, pulled, require_file_database
from tests.test_services import celery_worker
from tests.waiting import wait_for

pytestmark = pytest.mark.services


@pytest.fixture(autouse=True)
def _one_try(settings):
    settings.CONNECTOR_HTTP_RETRIES = 0


def finished_deletion(client, status_url: str) -> dict:
    """The deletion's status (its page's JSON, as the page polls it) once a worker has finished it: 60 s at most."""
    return wait_for(
        "the worker to finish the deletion",
        lambda: client.get(status_url).json(),
        60,
        until=lambda now: now["finished"],
        every=0.2,
    )


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_deletes_a_connectors_jobs_in_batches_while_its_page_shows_the_progress(
    client, operator, storage_dir, monkeypatch
):
    require_service("REDIS_URL")
    require_file_database()
    from config.celery import app

    app.conf.task_always_eager = False
    queue = f"test-deletion-{uuid.uuid4().hex[:8]}"
    publish = tasking.publish
    monkeypatch.setattr(tasking, "publish", lambda task, args=(), **kw: publish(task, args, queue=queue, **kw))
    storage_dir.mkdir(parents=True, exist_ok=True)
    api = pulled("api", "c1", 7)
    files = blobs_of(list(Job.objects.filter(cluster__name="c1")))
    assert len(files) == 14 and all(default_storage.exists(name) for name in files)
    client.force_login(operator)

    # No worker yet: the request returns at once, and the page says the deletion waits for one.
    response = client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"}, follow=True)
    deletion = ConnectorDeletion.objects.get()
    assert response.redirect_chain[-1][0] == reverse("connectors:deletion", args=[deletion.pk])
    page = " ".join(response.content.decode().split())
    assert "being deleted by a worker" in page and "0 of 7 jobs deleted" in page
    assert Job.objects.filter(cluster__name="c1").count() == 7

    status_url = reverse("connectors:deletion-status", args=[deletion.pk])
    with celery_worker(queue, storage_dir, env={"JOB_DELETE_BATCH": "2"}) as worker:
        status = finished_deletion(client, status_url)
        assert worker.poll() is None
    assert (status["status_display"], status["jobs_deleted"]) == ("Deleted", 7)
    assert not Connector.objects.filter(pk=api.pk).exists() and not Cluster.objects.filter(name="c1").exists()
    assert not Job.objects.filter(cluster__name="c1").exists()
    assert not any(default_storage.exists(name) for name in files)
    assert AuditEvent.objects.get(action="connector.delete").actor == operator
    page = " ".join(client.get(reverse("connectors:deletion", args=[deletion.pk])).content.decode().split())
    assert "Connector api deleted, with the 7 jobs it imported and the cluster c1." in page
