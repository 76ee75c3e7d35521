"""On SQLite the run's record decides who imports it: a worker imports a run only when it is pending, when the
process that took it is certainly gone, or when that is this very process (`fleet.ingest.claim_run`).

SQLite has no advisory lock, and `exclusive_run` said "ours" to every worker there, on the assumption that SQLite
only ran tasks in-process one at a time. With a real worker over Redis (REDIS_URL set, no DATABASE_URL) a task
redelivered while its first worker still imported (the visibility timeout, a broker restart) imported the run a
second time side by side. The "other worker" here is a real live process (a child `sleep`), recorded as a run's
owner the way `this_process` records one, or a second real Python process racing for the same run.

Real commits (transaction=True): another process reads what this one has committed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest
from django.db import OperationalError

from fleet import ingest
from fleet.models import IngestRun, Job
from tests.conftest import require_service
from tests.test_ingest_recovery import pending_run, running_run
from tests.test_ingest_runs_robust import _dead_owner

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.sqlite_only("on PostgreSQL the run's advisory lock decides (tests/test_ingest_exclusive.py)"),
]


@pytest.fixture(autouse=True)
def owners_tell():
    if not all(ingest.this_process().split(" ")):
        pytest.skip("this system does not say its boot, PID namespace or process start (no /proc)")


@pytest.fixture
def live_owner():
    """Another process of this host, alive, recorded as a run's owner is: the worker importing the run."""
    child = subprocess.Popen(["sleep", "600"])
    try:
        started = None
        deadline = time.monotonic() + 5
        while started is None and time.monotonic() < deadline:  # /proc has it a moment after the fork
            started = ingest._started(child.pid)
        host, boot, namespace, _, _ = ingest.this_process().split(" ")
        yield child, " ".join([host, boot, namespace, str(child.pid), started])
    finally:
        child.kill()
        child.wait()


def test_a_run_a_live_process_imports_is_refused_to_a_second_worker(upload_dirs, live_owner):
    """A redelivered task found the run running and imported it again beside the first worker; now it is told the
    run is busy (the task looks again later, as on PostgreSQL) and the run, its attempts and its jobs are untouched."""
    _, owner = live_owner
    run = running_run(upload_dirs, started_ago=ingest.timedelta(hours=3))  # past the visibility timeout
    IngestRun.objects.filter(pk=run.pk).update(owner=owner)
    with pytest.raises(ingest.RunBusy, match="another process"):
        ingest.execute_run(run.pk)
    run.refresh_from_db()
    left = (run.status, run.owner, run.attempts, run.phase)
    assert left == (IngestRun.Status.RUNNING, owner, 1, "stored 2 of 4 jobs")
    assert not Job.objects.exists()
    assert not ingest.worker_stopped(run)  # its page offers nothing either: the owner lives


def test_once_the_owner_is_gone_the_run_is_taken_over_and_imported(upload_dirs, live_owner):
    child, owner = live_owner
    run = running_run(upload_dirs, started_ago=ingest.timedelta(minutes=1))
    IngestRun.objects.filter(pk=run.pk).update(owner=owner)
    with pytest.raises(ingest.RunBusy):
        ingest.execute_run(run.pk)
    child.kill()  # the first worker is killed (OOM, kill -9): the redelivery takes the run
    child.wait()
    done = ingest.execute_run(run.pk)
    assert (done.status, done.attempts, done.owner) == (IngestRun.Status.SUCCEEDED, 2, ingest.this_process())
    assert Job.objects.count() == done.jobs_created == 5


def test_the_process_that_took_the_run_imports_it(upload_dirs):
    """The embedded mode: a web process takes the run (`take_pending`) and its thread imports it, the same process
    coming back to its own run; a normal import of a pending run goes on as ever."""
    taken = pending_run(upload_dirs, minutes_ago=1)
    assert ingest.take_pending(taken.pk)
    done = ingest.execute_run(taken.pk)
    assert (done.status, done.attempts, done.owner) == (IngestRun.Status.SUCCEEDED, 1, ingest.this_process())

    fresh = pending_run(upload_dirs, minutes_ago=1, name="week-50.zip")
    done = ingest.execute_run(fresh.pk)
    assert (done.status, done.attempts, done.jobs_unchanged) == (IngestRun.Status.SUCCEEDED, 1, 5)
    assert Job.objects.count() == 5


def test_a_run_this_process_imports_in_another_thread_is_busy(upload_dirs, monkeypatch):
    """Two deliveries of one run's task to one worker process (a thread pool) share its owner: the second still
    finds the run busy while the first imports it."""
    import threading

    from django.db import connections

    run = pending_run(upload_dirs, minutes_ago=1)
    second = []

    def in_another_thread():
        try:
            ingest.execute_run(run.pk)
            second.append("imported")
        except ingest.RunBusy as busy:
            second.append(str(busy))
        finally:
            connections.close_all()

    def deliver_again(run, on_progress=None):
        if threading.current_thread() is threading.main_thread():  # the first delivery, while it imports
            thread = threading.Thread(target=in_another_thread)
            thread.start()
            thread.join(30)
        return run

    monkeypatch.setattr(ingest, "_execute_claimed", deliver_again)
    ingest.execute_run(run.pk)
    assert len(second) == 1 and "another process" in second[0], second


def test_an_attempt_that_lost_the_database_lets_the_run_go_for_its_retry(upload_dirs, monkeypatch, tmp_path):
    """The task retries an import whose database was locked or unreachable, and the retry may come to another worker
    process: the run is let go (pending again, no owner), so that process takes it instead of waiting for this one,
    alive and no longer importing it."""
    run = pending_run(upload_dirs, minutes_ago=1)

    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(ingest, "_store_jobs", locked)
    with pytest.raises(OperationalError):
        ingest.execute_run(run.pk)
    run.refresh_from_db()
    assert (run.status, run.owner, run.phase) == (IngestRun.Status.PENDING, "", ingest.LET_GO_PHASE)
    monkeypatch.undo()
    outcomes, imports = _race([run.pk], tmp_path, upload_dirs, names=("worker-2",))
    assert outcomes == ["succeeded"] and imports == ["worker-2"]


# A worker process importing a run (`fleet.ingest.execute_run`, as the task does), held where it has found the run
# free (the owner it read is gone) until the other worker has too: the worst timing of two deliveries. Each import
# that begins writes the process's name to `imports`.
EXECUTE_IN_A_PROCESS = """
import sys, time, django
django.setup()
from pathlib import Path
from fleet import ingest
run_id, me, gate, together = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4] == "1"
owner_gone, execute = ingest.owner_gone, ingest._execute_claimed

def both_found_it_free(owner):
    gone = owner_gone(owner)
    (gate / me).touch()
    deadline = time.monotonic() + 20
    while together and len(list(gate.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    return gone

def counted(run, on_progress=None):
    with open(gate.parent / "imports", "a") as imports:
        imports.write(me + "\\n")
    return execute(run, on_progress)

ingest.owner_gone, ingest._execute_claimed = both_found_it_free, counted
try:
    print(ingest.execute_run(run_id).status)
except ingest.RunBusy:
    print("busy")
"""


def _race(run_ids, tmp_path, upload_dirs, *, names=("worker-1", "worker-2")) -> tuple[list[str], list[str]]:
    from tests.test_connector_deletion import require_file_database
    from tests.test_services import _worker_database_url

    require_file_database()
    gate = tmp_path / f"gate-{uuid.uuid4().hex[:6]}"
    gate.mkdir()
    env = {**os.environ, "DATABASE_URL": _worker_database_url(), "DJANGO_SETTINGS_MODULE": "config.settings",
           "DEBUG": "1", "SECRET_KEY": "worker", "UPLOAD_DIR": str(upload_dirs),
           "STORAGE_DIR": str(tmp_path / "storage"), "ARCHIVE_WORK_DIR": str(tmp_path / "work")}  # fmt: skip
    env.pop("REDIS_URL", None)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", EXECUTE_IN_A_PROCESS, str(run_id), name, str(gate), "1" if len(names) > 1 else "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for run_id, name in zip(run_ids * len(names), names, strict=True)
    ]
    outcomes = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        outcomes.append(out.strip().splitlines()[-1])
    imports = tmp_path / "imports"
    return outcomes, imports.read_text().split() if imports.exists() else []


def test_a_dead_workers_run_found_by_two_workers_at_once_is_imported_once(upload_dirs, tmp_path):
    """Two real processes find the same run whose worker was killed (both read its owner gone): one takes it over
    in a compare-and-set on its status and owner, the other is told it is busy. Both imported it side by side."""
    run = running_run(upload_dirs, started_ago=ingest.timedelta(minutes=1))
    IngestRun.objects.filter(pk=run.pk).update(owner=_dead_owner())
    outcomes, imports = _race([run.pk], tmp_path, upload_dirs)
    assert len(imports) == 1, outcomes  # imported once
    assert sorted(outcomes) == ["busy", "succeeded"], outcomes
    run.refresh_from_db()
    assert (run.status, run.attempts, run.jobs_created) == (IngestRun.Status.SUCCEEDED, 2, 5), run.errors
    assert Job.objects.count() == 5


def _owner(run: IngestRun) -> str:
    return IngestRun.objects.values_list("owner", flat=True).get(pk=run.pk)


@pytest.mark.services
def test_a_redelivered_task_on_a_real_worker_waits_for_the_live_owner(upload_dirs, storage_dir, live_owner):
    """A real worker over Redis on SQLite (REDIS_URL, no DATABASE_URL): the task finds the run a live process
    imports, imports nothing and looks again later; once that process is gone a look takes the run over."""
    require_service("REDIS_URL")
    from config.celery import app
    from fleet.tasks import ingest_archive_task
    from tests.test_ingest_exclusive import BUSY_LOOKS, busy_looks
    from tests.test_ingest_worker_kill import run_progress, wait_until_finished
    from tests.test_services import celery_worker
    from tests.waiting import wait_for

    child, owner = live_owner
    app.conf.task_always_eager = False
    storage_dir.mkdir(parents=True, exist_ok=True)
    queue = f"test-claim-{uuid.uuid4().hex[:8]}"
    run = running_run(upload_dirs, started_ago=ingest.timedelta(minutes=1))
    IngestRun.objects.filter(pk=run.pk).update(owner=owner)
    env = {"INGEST_BUSY_RETRY_SECONDS": "1", "UPLOAD_DIR": str(upload_dirs)}
    with celery_worker(queue, storage_dir, env=env):
        ingest_archive_task.apply_async(args=[run.pk], queue=queue)
        # Several looks at the run while its owner lives; a worker that took the run regardless ends the wait at
        # once (the run no longer as its owner left it), and fails the assertion below.
        left = (IngestRun.Status.RUNNING, 1, owner)
        now = wait_for(
            f"the worker to find the run busy {BUSY_LOOKS} times",
            lambda: {**run_progress(run), "owner": _owner(run), "looks": busy_looks(storage_dir, queue, run.pk)},
            60,
            until=lambda now: now["looks"] >= BUSY_LOOKS or (now["status"], now["attempts"], now["owner"]) != left,
        )
        assert (now["status"], now["attempts"], now["owner"]) == left, now
        assert not Job.objects.exists()
        child.kill()
        child.wait()
        wait_until_finished(run, "the run, its owner gone, to be imported", 60)
    run.refresh_from_db()
    assert run.status == IngestRun.Status.SUCCEEDED, run.errors
    assert run.attempts == 2 and Job.objects.count() == run.jobs_created == 5
