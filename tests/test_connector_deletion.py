"""Deleting a connector, as an operator expects from deleting a data source (Grafana, Datadog): the page
says first what goes and what stays; the data it brought in stays unless asked for, and then it goes
with the cluster it leaves empty; while the delete runs nothing claims a pull is running."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from fleet.connectors import sync
from fleet.connectors.models import Connector
from fleet.models import AuditEvent, Cluster, GpuModelPrice, IngestRun, Job
from tests.connector_servers import FakePlatform
from tests.test_browser import browser  # noqa: F401  (the shared Chromium fixture)
from tests.test_connectors_sync import GenericApi

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_try(settings):
    settings.CONNECTOR_HTTP_RETRIES = 0


def pulled(name: str, cluster: str, count: int) -> Connector:
    """A generic connector that pulled `count` jobs into `cluster` from a loopback server."""
    with FakePlatform() as server:
        GenericApi(count).install(server)
        connector = Connector.objects.create(name=name, kind="generic", url=server.url, cluster=cluster)
        assert sync.sync_connector(connector.pk).created == count
    return connector


def confirm_page(client, connector) -> str:
    return " ".join(client.get(reverse("connectors:delete", args=[connector.pk])).content.decode().split())


def test_deleting_a_connector_with_its_jobs_takes_the_cluster_they_leave_empty_and_nothing_else(client, operator):
    """Deleting a connector kept its cluster and jobs with no way to remove them: the cluster stayed in
    every cluster menu with jobs nobody pulls any more. The page now offers to delete them too, saying
    which cluster goes with them; another connector's jobs and cluster, and the runs, stay."""
    api = pulled("api", "c1", 3)
    other = pulled("other", "c2", 2)
    run = api.runs.get()
    client.force_login(operator)

    page = confirm_page(client, api)
    assert "keeps the 3 jobs its pulls stored</strong>, with their series, logs, findings and labels, and the " \
           "clusters they are on, unless you tick the box below." in page  # fmt: skip
    assert '<input type="checkbox" name="with_jobs" value="1" aria-describedby="with-jobs-help"> Also delete ' \
           "the 3 jobs it imported and the cluster c1</label>" in page  # fmt: skip
    # c2 as a word: the page's CSRF tokens are random letters and digits, which may hold "c2"
    assert "c1 would be left with no job." in page and not re.search(r"\bc2\b", page)
    assert 'name="with_jobs" value="1" checked' not in page  # keeping the data is the default

    response = client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"}, follow=True)
    said = " ".join(response.content.decode().split())
    assert "Connector api deleted, with the 3 jobs it imported and the cluster c1. " \
           "Its pulls&#x27; ingest runs stay." in said  # fmt: skip
    assert not Connector.objects.filter(pk=api.pk).exists()
    assert not Job.objects.filter(cluster__name="c1").exists() and not Cluster.objects.filter(name="c1").exists()
    assert IngestRun.objects.filter(pk=run.pk, connector=None).exists()
    assert Job.objects.filter(cluster__name="c2", ingest_run__connector=other).count() == 2
    event = AuditEvent.objects.get(action="connector.delete")
    assert (event.details["jobs"], event.details["jobs_deleted"], event.details["clusters_deleted"]) == (3, 3, ["c1"])


def test_deleting_a_connector_without_the_box_keeps_its_jobs_and_its_cluster(client, operator):
    api = pulled("api", "c1", 2)
    client.force_login(operator)
    said = client.post(reverse("connectors:delete", args=[api.pk]), follow=True).content.decode()
    assert "Connector api deleted. The jobs it imported and its pulls&#x27; ingest runs stay." in said
    assert Job.objects.filter(cluster__name="c1").count() == 2
    event = AuditEvent.objects.get(action="connector.delete")
    assert (event.details["jobs_deleted"], event.details["clusters_deleted"]) == (0, [])


def test_jobs_being_labeled_and_a_priced_cluster_stay_and_the_page_says_so_before(client, operator):
    """A job in a labeling study cannot be deleted (its labels are someone's work; the study PROTECTs it),
    and a cluster's GPU prices were entered by someone: deleting the jobs must neither fail on the first
    nor silently take the second. Both are named on the page before, and stay."""
    from triage.labeling.models import Study, StudyJob

    api = pulled("api", "c1", 3)
    priced = pulled("priced", "c2", 2)
    GpuModelPrice.objects.create(cluster=Cluster.objects.get(name="c2"), price_per_gpu_hour=2)
    study = Study.objects.create(name="idle tails", created_by=operator, seed=1)
    labeled = Job.objects.filter(cluster__name="c1").order_by("pk").first()
    StudyJob.objects.create(study=study, job=labeled, position=0)
    client.force_login(operator)

    page = confirm_page(client, api)
    assert "Also delete the 2 jobs it imported</label>" in page and "would be left with no job" not in page
    assert "1 of its jobs stays whatever you choose: a labeling study or gold set holds them." in page
    said = client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"}, follow=True).content.decode()
    assert "Connector api deleted, with the 2 jobs it imported. Its pulls&#x27; ingest runs stay. " \
           "1 of its jobs stays: a labeling study or gold set holds them." in " ".join(said.split())  # fmt: skip
    assert list(Job.objects.filter(cluster__name="c1")) == [labeled] and Cluster.objects.filter(name="c1").exists()

    page = confirm_page(client, priced)
    assert "Also delete the 2 jobs it imported</label>" in page
    assert "The cluster c2 stays, with its GPU prices." in page
    client.post(reverse("connectors:delete", args=[priced.pk]), {"with_jobs": "1"})
    assert not Job.objects.filter(cluster__name="c2").exists()
    assert GpuModelPrice.objects.filter(cluster__name="c2").exists()


def test_a_connector_with_no_jobs_offers_no_box(client, operator):
    connector = Connector.objects.create(name="g", kind="generic", url="http://127.0.0.1:9", cluster="c1")
    client.force_login(operator)
    page = confirm_page(client, connector)
    assert "keeps the 0 jobs its pulls stored</strong>" in page and 'name="with_jobs"' not in page


def test_while_a_connector_is_being_deleted_pull_now_and_a_second_delete_say_so(client, operator, monkeypatch):
    """Pull now during a delete said 'A pull of api is already running', and so did a second Delete: the
    delete holds the pull lease, but no pull runs. They now say it is being deleted; a queued pull that
    meets the delete says so too."""
    from fleet import audit
    from fleet.connectors import views as connector_views

    api = pulled("api", "c1", 2)
    queued, seen = [], {}
    monkeypatch.setattr(connector_views, "publish", lambda *args, **kwargs: queued.append(args))
    record = audit.record

    def in_the_middle(user, action, target, details=None):  # the delete holds the lease here
        if action == "connector.delete":
            seen["pull now"] = client.post(reverse("connectors:sync", args=[api.pk]), follow=True).content.decode()
            seen["delete"] = client.post(reverse("connectors:delete", args=[api.pk]), follow=True).content.decode()
            seen["task"] = sync.sync_connector(api.pk)
        return record(user, action, target, details)

    monkeypatch.setattr(audit, "record", in_the_middle)
    client.force_login(operator)
    client.post(reverse("connectors:delete", args=[api.pk]))
    assert "api is being deleted; no pull was queued." in seen["pull now"] and queued == []
    assert "already running" not in seen["pull now"] + seen["delete"]
    assert "api is already being deleted." in seen["delete"]
    assert (seen["task"].status, seen["task"].message) == ("locked", "it is being deleted")
    assert not Connector.objects.filter(pk=api.pk).exists()


def test_a_delete_that_fails_frees_the_connector_for_its_pulls(client, operator, monkeypatch):
    """A delete refused or failed part-way left the lease it took held until it expired (an hour), so the
    connector's pulls were skipped meanwhile (beat skips a held connector)."""
    from fleet import audit

    api = pulled("api", "c1", 1)

    def database_gone(*args, **kwargs):
        from django.db import OperationalError

        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(audit, "record", database_gone)
    with pytest.raises(Exception, match="server closed"):
        sync.delete_connector(api, operator)
    api.refresh_from_db()
    assert api.locked_until is None and sync.acquire(api.pk, "the next pull")


@pytest.mark.django_db(transaction=True)
def test_the_delete_page_with_its_box_meets_wcag_at_any_width(browser, live_server, operator):  # noqa: F811
    """The access matrix's world has a connector with no jobs, so test_accessibility never sees the box."""
    from tests.test_accessibility import narrow_window_problems, open_as, violations
    from triage.labeling.models import Study, StudyJob

    api = pulled("api", "c1", 3)
    StudyJob.objects.create(study=Study.objects.create(name="s", created_by=operator, seed=1),
                            job=Job.objects.first(), position=0)  # fmt: skip
    open_as(browser, live_server.url, operator)
    browser.get(live_server.url + reverse("connectors:delete", args=[api.pk]))
    box = browser.find_element("name", "with_jobs")
    assert box.accessible_name.startswith("Also delete the 2 jobs it imported")
    assert violations(browser) == [] and narrow_window_problems(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_deletion_keeps_the_batches_done_and_its_redelivery_finishes(operator, settings):
    """Deleting thousands of jobs in the web request outlasted gunicorn's --timeout, which killed the
    process and rolled the whole deletion back. A task now deletes them a batch to a transaction: a
    process killed for real in the middle of a batch (os._exit, against PostgreSQL or SQLite's file)
    keeps the batches that committed, holds the pulls off for minutes only, and the task's redelivery
    goes on from there to the end."""
    import os
    import subprocess
    import sys
    from datetime import timedelta

    from django.utils import timezone

    from fleet.connectors.models import ConnectorDeletion
    from tests.test_services import _worker_database_url

    require_file_database()
    settings.CELERY_TASK_ALWAYS_EAGER = True
    api = pulled("api", "c1", 5)
    token = f"held{sync.DELETING}"
    assert sync.acquire(api.pk, token, seconds=sync.DELETE_LEASE_SECONDS)
    deletion = ConnectorDeletion.objects.create(
        connector=api, name="api", requested_by=operator, lease_token=token, jobs_total=5, clusters=["c1"]
    )
    code = (
        "import os, django; django.setup()\n"
        "from fleet import lifecycle\n"
        "from fleet.connectors import sync\n"
        "delete_jobs, batches = lifecycle.delete_jobs, []\n"
        "def killed(jobs):\n"
        "    batches.append(delete_jobs(jobs))\n"
        "    if len(batches) == 2:\n"
        "        os._exit(9)  # in the middle of the second batch's transaction\n"
        "lifecycle.delete_jobs = killed\n"
        f"sync.run_deletion({deletion.pk})\n"
    )
    env = {**os.environ, "DATABASE_URL": _worker_database_url(), "DJANGO_SETTINGS_MODULE": "config.settings",
           "DEBUG": "1", "SECRET_KEY": "killed-worker", "JOB_DELETE_BATCH": "2"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr

    deletion.refresh_from_db()  # the first batch went, the second rolled back
    assert (deletion.status, deletion.jobs_deleted) == (ConnectorDeletion.Status.RUNNING, 2)
    assert Job.objects.filter(cluster__name="c1").count() == 3
    api.refresh_from_db()
    assert sync.being_deleted(api) and api.locked_until <= timezone.now() + timedelta(minutes=10)

    settings.JOB_DELETE_BATCH = 2
    from fleet.connectors.tasks import delete_connector_task

    assert delete_connector_task.delay(deletion.pk).get()["jobs_deleted"] == 5  # the redelivery
    deletion.refresh_from_db()
    assert deletion.status == ConnectorDeletion.Status.SUCCEEDED and deletion.clusters_deleted == ["c1"]
    assert not Connector.objects.filter(pk=api.pk).exists() and not Cluster.objects.filter(name="c1").exists()
    assert AuditEvent.objects.get(action="connector.delete").details["jobs_deleted"] == 5
    assert delete_connector_task.delay(deletion.pk).get()["jobs_deleted"] == 5  # once more: nothing happens


def require_file_database() -> None:
    """A second process sees the test's rows: PostgreSQL, or SQLite in a file (not in memory)."""
    from django.db import connection

    name = str(connection.settings_dict["NAME"])
    if connection.vendor == "sqlite" and (name in ("", ":memory:") or "mode=memory" in name):
        pytest.skip("the test database is in memory: another process cannot open it")


# -- the deletion of a connector's jobs runs as a task ------------------------------------------------


def blobs_of(jobs) -> set[str]:
    from fleet.models import Artifact

    names = {job.series_file.name for job in jobs if job.series_file}
    return names | set(Artifact.objects.filter(job__in=jobs).values_list("file", flat=True))


@pytest.mark.django_db(transaction=True)  # the files go once each batch commits
def test_without_a_task_queue_the_deletion_runs_in_the_request_in_batches_and_says_how_it_ended(
    client, operator, settings
):
    """Embedded mode (no REDIS_URL): the task runs in the request, as Pull now's does, so the page says the
    connector was deleted, not that a deletion was queued; the jobs go a batch at a time and their files
    with them, and the deletion's page keeps what went."""
    from django.core.files.storage import default_storage

    from fleet.connectors.models import ConnectorDeletion

    settings.JOB_DELETE_BATCH = 2
    api = pulled("api", "c1", 5)
    files = blobs_of(list(Job.objects.filter(cluster__name="c1")))
    assert len(files) == 10 and all(default_storage.exists(name) for name in files)
    client.force_login(operator)
    response = client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("connectors:list")
    said = " ".join(response.content.decode().split())
    assert "Connector api deleted, with the 5 jobs it imported and the cluster c1." in said
    assert "being deleted" not in said and "queued" not in said
    assert not any(default_storage.exists(name) for name in files)
    deletion = ConnectorDeletion.objects.get(name="api")
    assert (deletion.status, deletion.jobs_deleted, deletion.requested_by) == ("succeeded", 5, operator)
    page = " ".join(client.get(reverse("connectors:deletion", args=[deletion.pk])).content.decode().split())
    assert "Deleted</span>" in page and "Connector api deleted, with the 5 jobs it imported" in page
    assert "<progress" not in page


def test_with_a_task_queue_the_page_shows_the_deletion_under_way_then_finished(client, operator, monkeypatch):
    """With workers the request only starts the deletion: the operator lands on its page, which shows how
    many jobs are deleted so far (polled) until it says how it ended; the connector's pages link to it,
    and Pull now and a second Delete say it is being deleted."""
    from celery.result import AsyncResult

    from fleet import tasking
    from fleet.connectors.models import ConnectorDeletion
    from fleet.connectors.tasks import delete_connector_task

    queued = []
    monkeypatch.setattr(tasking, "publish", lambda task, args=(), **kw: queued.append((task, args)) or AsyncResult("x"))
    api = pulled("api", "c1", 3)
    client.force_login(operator)
    response = client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"}, follow=True)
    deletion = ConnectorDeletion.objects.get()
    assert queued == [(delete_connector_task, (deletion.pk,))]
    assert response.redirect_chain[-1][0] == reverse("connectors:deletion", args=[deletion.pk])
    page = " ".join(response.content.decode().split())
    assert "Connector api and the 3 jobs it imported are being deleted by a worker" in page
    assert "Waiting for a worker</span>" in page and "0 of 3 jobs deleted" in page
    assert 'data-status-url="/connectors/deletions/' in page
    status = client.get(reverse("connectors:deletion-status", args=[deletion.pk])).json()
    assert (status["finished"], status["jobs_deleted"], status["jobs_total"]) == (False, 0, 3)

    detail = client.get(reverse("connectors:detail", args=[api.pk])).content.decode()
    assert "api is being deleted with the jobs it imported" in detail
    listed = client.get(reverse("connectors:list")).content.decode()
    link = reverse("connectors:deletion", args=[deletion.pk])
    assert f'<a href="{link}">being deleted: 0 of 3 jobs deleted</a>' in listed
    said = client.post(reverse("connectors:sync", args=[api.pk]), follow=True).content.decode()
    assert "api is being deleted; no pull was queued." in said
    again = client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"}, follow=True)
    assert "api is already being deleted." in again.content.decode()
    assert ConnectorDeletion.objects.count() == 1 and Job.objects.filter(cluster__name="c1").count() == 3

    delete_connector_task.apply(args=[deletion.pk])  # what the worker does
    status = client.get(reverse("connectors:deletion-status", args=[deletion.pk])).json()
    assert (status["finished"], status["status_display"], status["jobs_deleted"]) == (True, "Deleted", 3)
    page = " ".join(client.get(reverse("connectors:deletion", args=[deletion.pk])).content.decode().split())
    assert "Connector api deleted, with the 3 jobs it imported and the cluster c1." in page
    assert not Connector.objects.filter(pk=api.pk).exists() and not Job.objects.filter(cluster__name="c1").exists()
    assert "being deleted" not in client.get(reverse("connectors:list")).content.decode()


def test_a_deletion_that_cannot_be_queued_says_so_and_frees_the_connector(client, operator, queue_down):
    from fleet.connectors.models import ConnectorDeletion

    api = pulled("api", "c1", 2)
    client.force_login(operator)
    said = client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"}, follow=True).content.decode()
    assert "The task queue (Redis at 127.0.0.1:1, REDIS_URL) could not be reached, so api was not deleted" in said
    api.refresh_from_db()
    assert not sync.being_deleted(api) and Job.objects.filter(cluster__name="c1").count() == 2
    assert ConnectorDeletion.objects.get().status == ConnectorDeletion.Status.FAILED


def test_a_failing_deletion_ends_failed_saying_how_far_it_got(client, operator, settings, monkeypatch):
    """A task that raises part-way (the database, the time limit) showed 'Deleting' for ever: it ends
    failed, saying how many jobs went and that the connector stays, and Pull now works again."""
    from fleet import lifecycle
    from fleet.connectors.models import ConnectorDeletion

    settings.JOB_DELETE_BATCH = 1
    api = pulled("api", "c1", 3)
    delete_jobs, calls = lifecycle.delete_jobs, []

    def second_batch_fails(jobs):
        calls.append(1)
        if len(calls) == 2:
            from django.db import OperationalError

            raise OperationalError("server closed the connection unexpectedly")
        return delete_jobs(jobs)

    monkeypatch.setattr(lifecycle, "delete_jobs", second_batch_fails)
    client.force_login(operator)
    response = client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"}, follow=True)
    deletion = ConnectorDeletion.objects.get()
    assert response.redirect_chain[-1][0] == reverse("connectors:deletion", args=[deletion.pk])
    page = " ".join(response.content.decode().split())
    assert "Connector api was not deleted: The deletion stopped: OperationalError: server closed" in page
    assert "1 of its 3 jobs were deleted before it stopped; the connector and the rest of its jobs stay" in page
    api.refresh_from_db()
    assert not sync.being_deleted(api) and Job.objects.filter(cluster__name="c1").count() == 2


@pytest.mark.django_db(transaction=True)
def test_the_deletion_page_follows_the_worker_and_says_when_it_is_done(browser, live_server, operator, monkeypatch):  # noqa: F811
    """The page of a deletion under way shows its progress (WCAG at any width), updates it as the worker
    deletes batches, and once done comes back saying so, the focus on its heading."""
    from celery.result import AsyncResult
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.wait import WebDriverWait

    from fleet import tasking
    from fleet.connectors.models import ConnectorDeletion
    from fleet.connectors.tasks import delete_connector_task
    from tests.test_accessibility import narrow_window_problems, open_as, violations

    monkeypatch.setattr(tasking, "publish", lambda task, args=(), **kw: AsyncResult("x"))  # a queue, no worker yet
    api = pulled("api", "c1", 3)
    deletion, refused = sync.start_deletion(api, operator)
    assert refused == "" and deletion.status == ConnectorDeletion.Status.PENDING
    open_as(browser, live_server.url, operator)
    browser.get(live_server.url + reverse("connectors:deletion", args=[deletion.pk]))
    assert browser.find_element("id", "deletion-count").text == "0 of 3 jobs deleted"
    assert violations(browser) == [] and narrow_window_problems(browser) == []

    from fleet import lifecycle

    lifecycle.delete_jobs(Job.objects.filter(pk__in=list(sync.jobs_of(api).values_list("pk", flat=True)[:2])))
    ConnectorDeletion.objects.filter(pk=deletion.pk).update(status="running", jobs_deleted=2)  # as a batch does
    # The page comes back (reloads) when the deletion ends: an element read as it does is stale, not wrong.
    # Chromium says so as a StaleElementReferenceException or, caught mid-swap, as an "unknown error" that
    # the node "does not belong to the document": both are read again.
    until = WebDriverWait(browser, 10, ignored_exceptions=(StaleElementReferenceException, WebDriverException)).until
    until(lambda b: b.find_element("id", "deletion-count").text == "2 of 3 jobs deleted")
    assert browser.find_element("id", "deletion-status").text == "Deleting"

    delete_connector_task.apply(args=[deletion.pk])  # the worker finishes
    until(lambda b: b.find_element("id", "deletion-status").text == "Deleted")
    assert browser.find_element("id", "deletion-said").text.startswith("Connector api deleted, with the 3 jobs")
    until(lambda b: b.switch_to.active_element.tag_name == "h1")  # once the reloaded page's script has run
    assert violations(browser) == []


def test_a_deletion_whose_task_was_lost_is_replaced_when_asked_for_again(client, operator, monkeypatch):
    """A deletion whose task was lost (Redis flushed) waited for ever, its connector's page saying it was
    being deleted. Its lease runs out after minutes; Delete again then starts a new deletion and ends the
    old one, saying so; the old task, should it come after all, does nothing."""
    from datetime import timedelta

    from celery.result import AsyncResult
    from django.utils import timezone

    from fleet import tasking
    from fleet.connectors.models import ConnectorDeletion
    from fleet.connectors.tasks import delete_connector_task

    monkeypatch.setattr(tasking, "publish", lambda task, args=(), **kw: AsyncResult("x"))  # lost on the way
    api = pulled("api", "c1", 2)
    lost, _ = sync.start_deletion(api, operator)
    client.force_login(operator)
    again = client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"}, follow=True)
    assert "api is already being deleted." in again.content.decode()  # its lease holds
    assert again.redirect_chain[-1][0] == reverse("connectors:deletion", args=[lost.pk])

    Connector.objects.filter(pk=api.pk).update(locked_until=timezone.now() - timedelta(seconds=1))  # ran out
    client.post(reverse("connectors:delete", args=[api.pk]), {"with_jobs": "1"})
    lost.refresh_from_db()
    assert lost.status == ConnectorDeletion.Status.FAILED
    assert lost.message == (
        "Its task stopped or never came (lost, or no worker was free) after 0 jobs were deleted, and the deletion "
        "was asked for again: the new one deletes the rest."
    )
    new = ConnectorDeletion.objects.exclude(pk=lost.pk).get()
    assert sync.deletion_under_way(api) == new
    assert delete_connector_task.apply(args=[lost.pk]).get()["status"] == "failed"  # the old task: nothing done
    assert Job.objects.filter(cluster__name="c1").count() == 2
