"""Ingest runs that stay true to what is stored: the kept-jobs line of a run imported again, and (SQLite) a run
whose process was killed.

Real commits (transaction=True): a page reads what an import has committed, as in the server.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connections
from django.test import Client

from fleet import ingest
from fleet.models import IngestRun, Job
from tests.conftest import EXAMPLE_ARCHIVE, a_worker_imports
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("upload_dirs")]


def _words(response) -> str:
    return " ".join(response.content.decode().split())


def test_the_kept_jobs_line_never_counts_a_batch_this_attempt_stored(operator, monkeypatch, settings):
    """A run imported again says what an earlier attempt stored: "The 2 jobs an earlier attempt stored are kept".
    Read just after a batch of this attempt's new jobs committed, it said 4 (then 2 again): the run's counts were
    written after the batch's commit, so its jobs were taken for an earlier attempt's until they were. The counts
    now commit with the batch, and the page reads both at one moment."""
    settings.INGEST_STORE_BATCH = 2
    ingest.execute_run(ingest.create_run(EXAMPLE_ARCHIVE).pk)
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    # An earlier attempt of `run` stored the first 2 jobs and stopped; the other 3 are not stored.
    first_two = list(Job.objects.order_by("external_id").values_list("pk", flat=True)[:2])
    Job.objects.exclude(pk__in=first_two).delete()
    Job.objects.filter(pk__in=first_two).update(ingest_run=run)
    IngestRun.objects.filter(pk=run.pk).update(attempts=1)

    client = Client()
    client.force_login(operator)
    store = ingest.store_jobs
    seen: list[tuple[int, str]] = []

    def read() -> None:
        current = IngestRun.objects.get(pk=run.pk)
        page = _words(client.get(f"/ingest-runs/{run.pk}/"))
        line = page.split('<p id="run-earlier">')[1].split("</p>")[0] if 'id="run-earlier"' in page else ""
        seen.append((ingest.stored_by_earlier_attempts(current), line))
        connections.close_all()

    def then_read(*args, **kwargs):
        results = store(*args, **kwargs)  # the batch is committed
        # Read as another request does, over a connection of its own (on PostgreSQL, the import's holds its lock).
        reader = threading.Thread(target=read)
        reader.start()
        reader.join(30)
        return results

    monkeypatch.setattr(ingest, "store_jobs", then_read)
    done = ingest.execute_run(run.pk)
    assert (done.status, done.attempts, done.jobs_created, done.jobs_unchanged) == (IngestRun.Status.SUCCEEDED, 2, 3, 2)
    kept = "The 2 jobs an earlier attempt stored are kept: this attempt counts them as unchanged."
    assert seen == [(2, kept)] * 3, seen


# -- a run whose process was killed (SIGKILL) -------------------------------------------------------------------
# A web process without a task queue taking an upload's run (`fleet.ingest.start_run`: the run taken, then imported
# in a thread), held before it stores its first batch until it is killed. It touches `gate` once it is there.
IMPORT_IN_A_PROCESS = """
import sys, time, django
django.setup()
from pathlib import Path
from fleet import ingest
run_id, gate = int(sys.argv[1]), Path(sys.argv[2])

def held(*args, **kwargs):
    gate.touch()
    time.sleep(600)

ingest.store_jobs = held
ingest.start_run(run_id)
ingest.wait_for_background_imports(600)
"""


def _import_in_a_process(run, tmp_path, upload_dirs):
    import os
    import subprocess
    import sys

    from tests.test_services import _worker_database_url

    env = {**os.environ, "DATABASE_URL": _worker_database_url(), "DJANGO_SETTINGS_MODULE": "config.settings",
           "DEBUG": "1", "SECRET_KEY": "web-process", "UPLOAD_DIR": str(upload_dirs),
           "STORAGE_DIR": str(tmp_path / "storage"), "ARCHIVE_WORK_DIR": str(tmp_path / "work")}  # fmt: skip
    env.pop("REDIS_URL", None)  # the embedded mode: no task queue
    gate = tmp_path / "storing"
    process = subprocess.Popen(
        [sys.executable, "-c", IMPORT_IN_A_PROCESS, str(run.pk), str(gate)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, gate


def test_a_run_whose_process_was_sigkilled_is_offered_import_now_and_finishes(operator, upload_dirs, tmp_path):
    """Without a task queue a web process imports an upload in a thread. SIGKILLed during the import, it left the
    run *running* for ever on SQLite: its page offered nothing (PostgreSQL saw the run's lock free and offered
    Import now and Mark failed). The run now keeps the process that took it: once that process is gone its page
    says no process is importing it and offers Import now, which finishes it, and the runs list says it stopped;
    while it lives, nothing."""
    import os
    import signal

    from tests.test_connector_deletion import require_file_database
    from tests.test_ingest_recovery import pending_run

    require_file_database()
    run = pending_run(upload_dirs, minutes_ago=1)
    process, gate = _import_in_a_process(run, tmp_path, upload_dirs)
    client = Client()
    client.force_login(operator)
    page_url = f"/ingest-runs/{run.pk}/"
    try:
        wait_for("the process to begin storing jobs", gate.exists, 60)
        alive = _words(client.get(page_url))
        assert 'id="run-status" role="status">Running' in alive
        assert "is importing this run" not in alive and ">Import now</button>" not in alive
        assert ">Mark failed</button>" not in alive
        assert f'/ingest-runs/{run.pk}/#run-stopped"' not in _words(client.get("/ingest-runs/"))
        process.send_signal(signal.SIGKILL)  # no clean stop: the run's thread ends with its process
    finally:
        process.kill()
        process.wait(timeout=30)  # reaped, as a web server's master reaps its workers
    assert process.returncode == -signal.SIGKILL
    taken = IngestRun.objects.get(pk=run.pk)
    assert taken.status == IngestRun.Status.RUNNING and str(process.pid) in taken.owner.split()
    assert ingest.owner_gone(taken.owner) or os.environ.get("DATABASE_URL", "").startswith("postgres")

    page = wait_for(
        "the page to see that no process holds the run",
        lambda: _words(client.get(page_url)),
        15,
        until=lambda words: "No process is importing this run" in words,
    )
    assert "nothing takes it up by itself" in page
    assert ">Import now</button>" in page and ">Mark failed</button>" in page
    listed = _words(client.get("/ingest-runs/"))  # the runs list says so beside its status, linking to the page
    assert f'<a class="in-text" href="/ingest-runs/{run.pk}/#run-stopped"' in listed

    response = _words(client.post(f"/ingest-runs/{run.pk}/requeue/", follow=True))
    assert "The import has begun in this process" in response or "The run was imported again here" in response
    from tests.conftest import wait_for_imports

    assert wait_for_imports()
    run.refresh_from_db()
    assert (run.status, run.attempts, run.jobs_created) == (IngestRun.Status.SUCCEEDED, 2, 5), run.errors
    assert Job.objects.count() == 5
    assert "No process is importing this run" not in _words(client.get(page_url))


def _dead_owner() -> str:
    """A process of this host that took a run and is gone (ran, ended and was reaped)."""
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host, boot, namespace, _, _ = ingest.this_process().split(" ")
    return " ".join([host, boot, namespace, child.stdout.strip(), "12345"])


def test_whose_process_is_gone_is_told_only_when_it_is_certain(upload_dirs):
    """A run's owner is gone only when recorded here (this host, boot, PID namespace) and no live process has its
    PID and start; a run an older version left (no owner), or recorded on another host, is taken for held."""
    import os

    me = ingest.this_process()
    assert me.split(" ")[3] == str(os.getpid()) and not ingest.owner_gone(me)
    if not all(me.split(" ")):
        pytest.skip("this system does not say its boot, PID namespace or process start (no /proc)")
    assert ingest.owner_gone(_dead_owner())
    host, boot, namespace, pid, started = _dead_owner().split(" ")
    assert not ingest.owner_gone(" ".join(["another-host", boot, namespace, pid, started]))
    assert not ingest.owner_gone(" ".join([host, boot, "pid:[1]", pid, started]))  # another container's PIDs
    assert not ingest.owner_gone("")
    same_pid_later = " ".join([*me.split(" ")[:4], "1"])  # this PID, another process's start: used again
    assert ingest.owner_gone(same_pid_later)


@pytest.mark.sqlite_only("run locks tell on PostgreSQL (tests/test_ingest_recovery.py)")
def test_on_sqlite_the_sweep_and_mark_failed_take_up_a_run_whose_process_is_gone(upload_dirs, settings, operator):
    """Beat's sweep made a running run no worker holds pending and queued it again on PostgreSQL only; on SQLite
    (with a task queue) a killed worker's run waited for ever. A run whose owner is gone is taken up there too,
    one whose owner lives (or is unknown) is left alone; Mark failed on its page fails it, keeping its jobs."""
    from tests.test_ingest_recovery import SWEEP, running_run, stalled_since

    dead = running_run(upload_dirs, started_ago=stalled_since(settings))
    alive = running_run(upload_dirs, started_ago=stalled_since(settings), name="week-50.zip")
    unknown = running_run(upload_dirs, started_ago=stalled_since(settings), name="week-51.zip")
    IngestRun.objects.filter(pk=dead.pk).update(owner=_dead_owner())
    IngestRun.objects.filter(pk=alive.pk).update(owner=ingest.this_process())
    assert ingest.recover_pending_runs(SWEEP) == {"stalled_queued": 1}  # queued, and run here (no task queue)
    dead.refresh_from_db()
    assert (dead.status, dead.attempts, dead.owner) == (IngestRun.Status.SUCCEEDED, 2, ingest.this_process())
    for left in (alive, unknown):
        assert IngestRun.objects.get(pk=left.pk).status == IngestRun.Status.RUNNING

    stopped = running_run(upload_dirs, started_ago=stalled_since(settings), name="week-52.zip")
    IngestRun.objects.filter(pk=stopped.pk).update(owner=_dead_owner())
    client = Client()
    client.force_login(operator)
    response = _words(client.post(f"/ingest-runs/{stopped.pk}/fail/", follow=True))
    assert "The run is marked failed; its upload is discarded." in response
    stopped.refresh_from_db()
    assert stopped.status == IngestRun.Status.FAILED and "with no worker holding it" in stopped.errors[0]["message"]
    for action in ("requeue", "fail"):  # a live owner's run is left alone
        client.post(f"/ingest-runs/{alive.pk}/{action}/")
    assert IngestRun.objects.get(pk=alive.pk).status == IngestRun.Status.RUNNING


# -- what a run counts: GPU samples ---------------------------------------------------------------------------
def test_the_run_pages_and_the_api_say_gpu_samples_where_they_count_them(operator):
    """A run counts GPU samples (one per GPU and time; an archive's host rows and double scrapes are not counted,
    as make_demo_fleet says), but its pages said "Samples" and "samples/s", which read as the archive's metric
    rows. The list, the run's page, its polled figures and the API's description say GPU samples; the API's field
    and the polled figures keep their names."""
    from rest_framework.test import APIClient

    run = IngestRun.objects.create(
        archive_name="week-49.zip", status=IngestRun.Status.RUNNING, jobs_total=10, jobs_done=4, samples=12_345
    )
    IngestRun.objects.filter(pk=run.pk).update(started_at=run.created_at)
    client = Client()
    client.force_login(operator)
    with a_worker_imports(run.pk):  # it goes on, and has a rate (on PostgreSQL one no lock holds reads stopped)
        page = _words(client.get(f"/ingest-runs/{run.pk}/"))
        polled = client.get(f"/ingest-runs/{run.pk}/status.json").json()
    assert '<dt>GPU samples</dt><dd id="run-samples">12,345</dd>' in page
    assert " GPU samples/s</span></dd>" in page and "Samples" not in page  # _words: no-break spaces too
    assert polled["samples"] == 12_345 and polled["display"]["samples"] == "12,345"
    assert polled["display"]["rate"].endswith(" GPU\u00a0samples/s")
    listing = _words(client.get("/ingest-runs/"))
    assert '<th scope="col" role="columnheader" class="num">GPU samples</th>' in listing
    assert '<span class="cell-label">GPU samples</span><span>12,345</span>' in listing and "Samples" not in listing

    api = APIClient()
    api.force_authenticate(operator)
    schema = api.get("/api/v1/schema/", {"format": "json"}).json()
    samples = schema["components"]["schemas"]["IngestRun"]["properties"]["samples"]
    assert samples["description"].startswith("GPU samples stored")
