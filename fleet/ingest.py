"""Storing canonical records: the one place archive imports (and later connectors) write jobs.

The upsert is keyed on (cluster, external_id) and guarded by a fingerprint of everything a
job brought with it, so importing the same archive twice leaves the jobs, artifacts and log
events exactly as they were, and a changed job is updated in place, never duplicated.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from functools import cache, reduce
from operator import or_
from pathlib import Path
from typing import NamedTuple

from celery.result import EagerResult
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, default_storage
from django.db import DatabaseError, connection, transaction
from django.db.models import Count, Q, prefetch_related_objects
from django.utils import timezone
from django.utils.text import slugify

from fleet import series as series_lib
from fleet.archive.parser import ArchiveError, ArchiveStream, ParsedArchive, ParsedJob
from fleet.archive.reader import ReaderLimits
from fleet.canonical import ArtifactRecord, JobRecord, RecordError
from fleet.gpu_models import gpu_model_name
from fleet.lifecycle import delete_unreferenced
from fleet.logevents import LogEventRecord, extract_log_events
from fleet.models import FINISHED_STATUSES, Artifact, Cluster, IngestRun, Job, LogEvent, Team, price_for
from fleet.money import cost_of
from fleet.rows import insert_new, insert_rows
from fleet.signals import jobs_ingested

logger = logging.getLogger(__name__)

# How often the phase text is written back for the progress page while the archive is read.
PROGRESS_SECONDS = 1.0
# Jobs are stored settings.INGEST_STORE_BATCH to a transaction (the counts on the progress page
# move once per batch): each job is still whole or absent, and a batch lost to a killed worker is
# simply stored again. A batch also ends once its artifacts hold STORE_BATCH_BYTES, so a run of
# jobs with large logs stays small.
STORE_BATCH_BYTES = 64 * 2**20


def reader_limits() -> ReaderLimits:
    """The configured bounds on what an archive may expand to (settings ARCHIVE_MAX_*)."""
    return ReaderLimits(
        max_members=settings.ARCHIVE_MAX_MEMBERS,
        max_member_bytes=settings.ARCHIVE_MAX_MEMBER_BYTES,
        max_total_bytes=settings.ARCHIVE_MAX_TOTAL_BYTES,
        max_ratio=settings.ARCHIVE_MAX_RATIO,
    )


# The longest archive name a run keeps (IngestRun.archive_name's column; display only): longer is cut, where
# PostgreSQL would refuse the row.
ARCHIVE_NAME_CHARS = IngestRun._meta.get_field("archive_name").max_length


def create_run(archive_path: str | Path, *, name: str = "", source: str = IngestRun.Source.CLI, user=None) -> IngestRun:
    path = Path(archive_path)
    name = (name or path.name)[:ARCHIVE_NAME_CHARS]
    return IngestRun.objects.create(archive_path=str(path), archive_name=name, source=source, created_by=user)


def start_upload(uploaded, *, source: str, user=None, api_key=None) -> IngestRun:
    """Keep an uploaded archive under a generated name, record its run and queue the ingest.

    What the page, the API and (through `create_run`) the command share. The name the user gave
    is kept for display only.
    """
    from fleet.uploads import keep_upload

    path = keep_upload(uploaded)
    name = (Path(str(uploaded.name or "")).name or "upload")[:ARCHIVE_NAME_CHARS]
    with transaction.atomic():
        run = IngestRun.objects.create(
            archive_path=str(path),
            archive_name=name,
            source=source,
            created_by=user if user is not None and user.is_authenticated else None,
            api_key=api_key,
        )
        enqueue_run(run, background=True)
    run.refresh_from_db()  # failed, saying why, if the queue could not be reached; running without one
    return run


def enqueue_run(run: IngestRun, *, background: bool = False) -> None:
    """Queue the run's ingest once the transaction that created it has committed.

    A queue that cannot be reached fails the run at once, saying so on its page (and the upload
    page, the API and the command show it), instead of a server error that left the run pending
    for ever with its archive kept in UPLOAD_DIR. `background`: without a queue, import in a thread
    of this process, not in the caller (`start_run`: an upload's, which answers at once).
    """
    transaction.on_commit(lambda: start_run(run.pk) if background else queue_run(run.pk))


def _publish(run_id: int, *, not_done: str, then: str):
    """Put the run's ingest task on the queue and note when; QueueUnreachable (its text saying what was
    not done and what to do) without Redis. Returns the task's result: an EagerResult when it ran in
    this process (no REDIS_URL, the embedded mode), the import done."""
    from fleet.tasking import publish
    from fleet.tasks import ingest_archive_task

    result = publish(ingest_archive_task, (run_id,), not_done=not_done, then=then)
    IngestRun.objects.filter(pk=run_id, status=IngestRun.Status.PENDING).update(queued_at=timezone.now())
    return result


def queue_run(run_id: int) -> bool:
    """Hand the run to the workers; False (the run failed, its upload discarded) if Redis is unreachable."""
    from fleet.tasking import QueueUnreachable

    try:
        _publish(run_id, not_done="the archive was not imported", then="send the archive again")
    except QueueUnreachable as unreachable:
        fail_run(run_id, str(unreachable))
        run = IngestRun.objects.filter(pk=run_id).first()
        if run is not None:
            _discard_upload(run)
        return False
    return True


# -- an upload's import in the background, without a task queue -------------------------------
# Without REDIS_URL (the embedded mode) a task runs where it is queued, so an upload's import ran inside
# the upload request: the browser sat on "Uploaded; starting the import…" until it was over and never saw
# the run's progress, and the API's push answered once the run had ended. `start_run` imports it in a
# thread of the serving process instead, the same task as a worker runs (its failure handling included),
# with a database connection of its own that it closes at the end. The request answers once the thread
# has begun the run, so the run's page opens on a run that is running, polled as a worker's is.
# The thread is not a daemon, so a server stopped normally (Ctrl-C, a restart) does not drop it mid-batch:
# the interpreter, ending, refuses it the threads the importer starts, and the run fails within seconds,
# saying the process was stopped (`fleet.tasks.failure_reason`). One killed outright leaves the run
# *running*, as a killed worker does: its page offers to import it again once no process holds it (see
# `worker_stopped`; on SQLite, once the process the run keeps is gone, `owner_gone`).
# `manage.py ingest_archive` imports in the terminal, with its progress bar, as before.

# How long an upload waits for its thread to begin the run at most (it takes milliseconds; a SQLite
# database held by another writer makes it wait for its lock).
BACKGROUND_START_SECONDS = 10

# Threads of this process importing an upload (`start_run`), each with its run, until its import is over.
_background_imports: dict[threading.Thread, int] = {}
# Runs a request of this process has claimed to import in the background (Import now: `requeue_run`), from
# the claim until their thread is in `_background_imports`: a run is claimed once, so two presses at once
# (two tabs) never import it twice side by side, and the second is told this process imports it. Across
# processes the database decides (`take_pending`).
_claimed_here: set[int] = set()
# Runs this process is importing (`execute_run`: a worker's task, `manage.py ingest_archive`, a background thread's),
# whichever its thread, from `claim_run` until the attempt ends: the run's owner is the process, so of two deliveries
# of a run's task to one process (a worker's thread pool) the second is told apart here.
_importing: set[int] = set()
# The three above are this process's one record of the runs it holds, read together (`_held_here`) under this lock.
_background_lock = threading.Lock()


def _held_here(run_id: int) -> bool:
    """Under `_background_lock`: whether this process holds the run, claimed by a request (`claim_here`), given to a
    thread (`start_run`) or being imported (`claim_run`), whichever way its import came."""
    return run_id in _claimed_here or run_id in _background_imports.values() or run_id in _importing


def importing_here(run_id: int) -> bool:
    """Whether this process is importing the run (or about to begin it), whichever way the import came (an upload's
    thread, Import now, a task or the command): its page offers nothing to import it again, never says no process
    holds it (on PostgreSQL the importing thread's own connection would take the run's lock, which it holds, as
    free), and Import now / Mark failed leave it alone."""
    with _background_lock:
        return _held_here(run_id)


def claim_here(run_id: int) -> bool:
    """Claim the run for an import in this process; False when a thread or request of this process already
    imports it (or is about to). Checked and claimed under one lock: of two requests at once, one claims it."""
    with _background_lock:
        if _held_here(run_id):
            return False
        _claimed_here.add(run_id)
        return True


def release_claim(run_id: int) -> None:
    with _background_lock:
        _claimed_here.discard(run_id)


IMPORTING_HERE = "This process is importing the run; nothing was changed."
# Without a task queue, a run another process has taken (`take_pending`): another web process (gunicorn's workers).
IMPORTING_ELSEWHERE = "Another process has begun importing the run; nothing was changed."
# The phase of a run taken for a thread (`take_pending`) until the thread begins it (`_execute_claimed`).
TAKEN_PHASE = "starting the import"


def take_pending(run_id: int) -> bool:
    """Take a pending run for an import in a thread of this process (no task queue): pending to running in one
    conditional UPDATE, whose row count says whether this process took it, atomic in SQLite too. Of two web
    processes that found the run pending at once (Import now pressed in both; an upload's, not yet begun, and
    Import now in another), one takes it and the other leaves it alone: `claim_here` excludes only the
    requests of one process. Started now, and owned by this process (`this_process`), so that a process killed
    before its thread began the run leaves a run no process holds, as a killed worker does (`worker_stopped`): on
    PostgreSQL its lock is free, on SQLite its owner is gone (`owner_gone`)."""
    now = timezone.now()
    return _update_run_if(
        run_id,
        {"status": IngestRun.Status.PENDING},
        status=IngestRun.Status.RUNNING,
        started_at=now,
        queued_at=now,
        phase=TAKEN_PHASE,
        owner=this_process(),
    )


def _update_run_if(run_id: int, expected: dict, **changes) -> bool:
    """Change the run only while its record is still as `expected` (its status, and owner where that matters), in
    one conditional UPDATE whose row count says whether it changed: a compare-and-set, atomic in SQLite too, so of
    two processes that read the run alike and both try, one changes it and the other is told it was taken since."""
    return IngestRun.objects.filter(pk=run_id, **expected).update(**changes) == 1


def start_run(run_id: int) -> bool:
    """An upload's import (and Import now's, without a task queue): queued to the workers (`queue_run`), or
    without a task queue begun in a thread of this process, the run taken first (`take_pending`), returning
    once the thread has begun it (or it is over). False when it failed to queue, or another process had
    taken the run. A caller holding the run's claim (`claim_here`) lets it go on return: the thread holds
    the run by then (`_background_imports`), or the import is over.

    Inside a transaction (a test's) the run is not committed, and a thread's connection could not see it:
    the import then runs here, as every task does without a queue."""
    from fleet.tasking import tasks_run_here

    if not tasks_run_here() or connection.in_atomic_block:
        return queue_run(run_id)
    if not take_pending(run_id):
        return False
    # Not a daemon, whatever the request's thread is (runserver's are): an ending process waits for it.
    thread = threading.Thread(target=_import_in_background, args=(run_id,), name=f"ingest-run-{run_id}", daemon=False)
    with _background_lock:
        _background_imports[thread] = run_id
    try:
        thread.start()
    except RuntimeError:  # no thread to be had (a process at its limit): imported here, as before
        logger.warning("Could not start a thread for ingest run %s; importing it in the request", run_id)
        with _background_lock:
            _background_imports.pop(thread, None)
        return queue_run(run_id)
    deadline = time.monotonic() + BACKGROUND_START_SECONDS
    while thread.is_alive() and time.monotonic() < deadline:
        if IngestRun.objects.filter(pk=run_id).exclude(status=IngestRun.Status.RUNNING, phase=TAKEN_PHASE).exists():
            break
        thread.join(0.02)
    return True


def _import_in_background(run_id: int) -> None:
    """A background import's thread: the ingest task, as it runs without a queue; a failure the task did
    not record (it marks its run failed, saying why) fails the run here, never leaving it running."""
    from django.db import connections

    from fleet.tasks import failure_reason

    try:
        queue_run(run_id)
    except Exception as exc:  # the task has marked its run failed; said in the log, as a worker says it
        logger.exception("Ingest run %s failed in the background", run_id)
        try:
            fail_run(run_id, failure_reason(exc))  # a no-op once the task has: a finished run stays as it is
        except DatabaseError:
            logger.exception("Ingest run %s could not be marked failed", run_id)
    finally:
        connections.close_all()  # this thread's own: a kept connection would stay open for ever
        with _background_lock:
            _background_imports.pop(threading.current_thread(), None)


def wait_for_background_imports(seconds: float) -> bool:
    """Wait at most `seconds` for this process's background imports to end; whether they all have."""
    deadline = time.monotonic() + seconds
    while True:
        with _background_lock:
            running = list(_background_imports)
        if not running:
            return True
        for thread in running:
            thread.join(max(0.0, deadline - time.monotonic()))
        if time.monotonic() >= deadline:
            with _background_lock:
                return not any(thread.is_alive() for thread in _background_imports)


# -- runs whose task was lost -----------------------------------------------------------------
# A run stays *pending* for ever when its task is lost before a worker starts it (a Redis restarted
# without persistence, a flushed queue, a worker that lost it). Beat's sweep (`recover_pending_runs`)
# and the run page's Queue again / Mark failed (`requeue_run`, `mark_failed`) end that. Each holds
# the run's exclusive lock (`exclusive_run`) while it decides, so it never acts on a run a worker is
# importing, and a worker that comes to the run meanwhile finds it busy and looks again later.
# A run stays *running* for ever when its worker dies and the task's redelivery never comes (the
# queue was flushed meanwhile): the sweep sees that no worker holds it (on PostgreSQL its lock is free, on
# SQLite the process that took it is gone, `owner_gone`) and, once the redelivery is overdue, makes it
# pending and queues it again (`stalled_cutoff`).


@dataclass
class Recovery:
    outcome: str  # queued | failed | busy | finished | unreachable
    message: str
    # Queued, and run at once in this process (no REDIS_URL, the embedded mode): the import is over.
    ran_here: bool = False
    # Begun in a thread of this process (no REDIS_URL; Import now, `start_run`): the import goes on.
    started_here: bool = False


def archive_gone(run: IngestRun) -> bool:
    return not run.archive_path or not Path(run.archive_path).exists()


def lost_archive_message(run: IngestRun, waited: str) -> str:
    return (
        f"{waited}, and its archive is no longer there ({run.archive_name}), so it was not imported: "
        "send the archive again."
    )


def requeue_run(
    run_id: int, *, waited: str = "", stalled_before: datetime | None = None, background: bool = False
) -> Recovery:
    """Queue a pending run's ingest again, or fail it, saying why, when its archive is gone.

    `background` (the run page's Import now): without a task queue, begin the import in a thread of this
    process as an upload's (`start_run`), the run claimed once (`claim_here`; in the database, `take_pending`,
    across web processes), where it ran in the request until it was over; a second press meanwhile is told
    the run is being imported.

    `stalled_before`: the run is *running*, started before then, and no worker holds it (its worker
    died and its task never came back): it is made pending again and queued, or failed when its
    archive is gone. Where run locks tell (PostgreSQL, `run_locks_tell`), its lock is free; elsewhere
    (SQLite) the process that took it is certainly gone (`owner_gone`), and otherwise it is left alone.

    Idempotent: a run a worker holds, or that finished, is left alone; a second copy of a task that
    was not lost after all finds the run busy or finished and does nothing (`execute_run`)."""
    from fleet.tasking import tasks_run_here

    if background and tasks_run_here():
        if not claim_here(run_id):  # a thread or request of this process imports it (SQLite has no lock to say so)
            return Recovery("busy", IMPORTING_HERE)
        try:
            return _requeue_run(run_id, waited, stalled_before, background=True)
        finally:
            release_claim(run_id)  # handed to its thread by then, or nothing was begun
    if importing_here(run_id):  # its thread has yet to begin it (SQLite has no lock to say so)
        return Recovery("busy", IMPORTING_HERE)
    return _requeue_run(run_id, waited, stalled_before)


def _requeue_run(run_id: int, waited: str, stalled_before: datetime | None, *, background: bool = False) -> Recovery:
    from fleet.tasking import QueueUnreachable

    stalled = stalled_before is not None
    expected = IngestRun.Status.RUNNING if stalled else IngestRun.Status.PENDING
    with exclusive_run(run_id) as ours:
        run = IngestRun.objects.filter(pk=run_id).first()
        if (refused := _left_alone(run, ours, expected)) is not None:
            return refused
        if stalled and (not holder_gone(run) or run.started_at is None or run.started_at >= stalled_before):
            # A worker took the run since it was listed (and died at once), or nothing can tell.
            return Recovery("busy", "A worker has started the run; nothing was changed.")
        if archive_gone(run):
            if stalled:
                message = (
                    f"{waited or STALLED}; its archive is no longer there ({run.archive_name}), so the import "
                    "cannot be finished: the jobs stored so far are complete; send the archive again (stored "
                    "jobs are skipped)."
                )
            else:
                message = lost_archive_message(run, waited or "The run was still pending")
            if not fail_run(run_id, message, owner=run.owner if stalled else None):
                return Recovery("busy", _taken_since(stalled))
            return Recovery("failed", message)
        if stalled:
            # Pending again while it waits for a worker: if this task is lost too, the pending sweep sees it. Only
            # while its dead owner still has it: on SQLite (no lock) another process may have taken it since.
            again = _update_run_if(
                run_id,
                {"status": IngestRun.Status.RUNNING, "owner": run.owner},
                status=IngestRun.Status.PENDING,
                started_at=None,
                phase="queued again: its worker had stopped",
                owner="",
            )
            if not again:
                return Recovery("busy", _taken_since(stalled))
    if background:  # no task queue: begun in a thread, as an upload's import (`requeue_run` lets the claim go)
        if not start_run(run_id):  # another web process took the run since it was found pending
            return Recovery("busy", IMPORTING_ELSEWHERE)
        return started_here(run_id)
    try:
        result = _publish(
            run_id, not_done="the run was not queued again (it stays pending with its archive)", then="queue it again"
        )
    except QueueUnreachable as unreachable:
        return Recovery("unreachable", str(unreachable))
    if isinstance(result, EagerResult):  # no task queue: the import ran here, and is over
        return imported_here(run_id)
    return Recovery("queued", "The run was queued again; a worker imports it next.")


def started_here(run_id: int) -> Recovery:
    """What came of Import now without a task queue: the import begun in a thread of this process (its page
    follows it), or already over (a quick failure; or run in the request inside a test's transaction)."""
    run = IngestRun.objects.filter(pk=run_id).first()
    if run is None or run.is_finished:
        return imported_here(run_id)
    where = "in this process (there is no task queue: REDIS_URL is not set)"
    if run.status == IngestRun.Status.RUNNING and run.phase != TAKEN_PHASE:
        return Recovery("queued", f"The import has begun {where}; this page follows it.", started_here=True)
    return Recovery("queued", f"The import is about to begin {where}; this page follows it.", started_here=True)


def imported_here(run_id: int) -> Recovery:
    """What came of a run imported again in this process (no REDIS_URL: tasks run where they are queued),
    said as it is: nothing was queued, and no worker is to come."""
    run = IngestRun.objects.filter(pk=run_id).first()
    done = "The run was imported again here, in the web process (there is no task queue: REDIS_URL is not set)"
    if run is None:
        return Recovery("queued", f"{done}; it has since been deleted.", ran_here=True)
    if run.status == IngestRun.Status.FAILED:
        why = run.errors[0]["message"] if run.errors else "see its errors"
        return Recovery("queued", f"{done}, and failed: {why}"[:700], ran_here=True)
    if run.is_finished:
        return Recovery("queued", f"{done}: {run.get_status_display().lower()}, {run.jobs_display}.", ran_here=True)
    return Recovery("queued", f"{done}; it is {run.get_status_display().lower()}.", ran_here=True)


def mark_failed(run_id: int, message: str, *, stopped: bool = False) -> Recovery:
    """Fail a pending run by hand, discarding its upload; refused while a worker holds it.

    `stopped`: the run is *running* and no worker holds it (its worker died; see `worker_stopped`): where run
    locks tell, or (SQLite) its owner is gone; the jobs it stored stay."""
    expected = IngestRun.Status.RUNNING if stopped else IngestRun.Status.PENDING
    if importing_here(run_id):
        return Recovery("busy", IMPORTING_HERE)
    with exclusive_run(run_id) as ours:
        run = IngestRun.objects.filter(pk=run_id).first()
        if (refused := _left_alone(run, ours, expected)) is not None:
            return refused
        if stopped and not holder_gone(run):
            return Recovery("busy", "Nothing shows whether a worker is importing the run; nothing was changed.")
        if not fail_run(run_id, message, owner=run.owner if stopped else None):
            return Recovery("busy", _taken_since(stopped))
        run.refresh_from_db()
        _discard_upload(run)
    return Recovery("failed", message)


def _left_alone(run: IngestRun | None, ours: bool, expected: str) -> Recovery | None:
    """Why a recovery must leave the run alone (finished, or a worker holds it or has moved it on
    from `expected`), or None when it may act."""
    if run is None or run.is_finished:
        return Recovery("finished", "The run has already finished.")
    if not ours or run.status != expected:
        from fleet.tasking import tasks_run_here

        return Recovery(
            "busy", IMPORTING_ELSEWHERE if tasks_run_here() else "A worker has started the run; nothing was changed."
        )
    return None


STALLED = (
    "The worker importing this run stopped (killed, out of memory, or its machine went away) and its task "
    "never came back (the queue was flushed or restarted without persistence)"
)


def run_locks_tell() -> bool:
    """Whether a run's lock shows a worker importing it: PostgreSQL's advisory lock goes with the
    holder's connection. SQLite's embedded mode has no such lock (`exclusive_run`): there the process
    a run keeps (`owner_gone`) tells instead, where it can."""
    return connection.vendor == "postgresql"


def worker_stopped(run: IngestRun) -> bool:
    """Whether `run` is an archive run left *running* that no worker holds (its worker died, or lost
    its database and waits to retry): what the run page offers Queue again / Mark failed for at once,
    instead of waiting for the sweep. Where run locks tell (PostgreSQL) the lock is taken and let
    go at once (a worker coming to the run at that instant finds it busy and looks again later); elsewhere
    (SQLite) the process that took the run is gone (`owner_gone`).
    A connector's pull is left to `fleet.connectors.sync.fail_stopped_pulls`, within a minute."""
    if run.status != IngestRun.Status.RUNNING or run.source == IngestRun.Source.CONNECTOR:
        return False
    if not run_locks_tell():
        return owner_gone(run.owner)
    with exclusive_run(run.pk) as ours:
        return ours


def tell_no_process_holds(runs) -> None:
    """Answer `IngestRun.no_process_holds` for every run of a list (the runs list, the API's) at once, each answer
    the one the run would give alone: where run locks tell (PostgreSQL), asked alone, each running run took and let
    go its lock, two queries a run; here one query says which of them another session's lock holds. SQLite's
    answers (the process each run keeps, `owner_gone`) take no query."""
    asking = [run for run in runs if run.status == IngestRun.Status.RUNNING and "no_process_holds" not in vars(run)]
    if not asking:
        return
    held = _locked_elsewhere([run.pk for run in asking]) if run_locks_tell() else set()
    for run in asking:
        stopped = run.source != IngestRun.Source.CONNECTOR and not importing_here(run.pk)
        if stopped:
            stopped = run.pk not in held if run_locks_tell() else owner_gone(run.owner)
        vars(run)["no_process_holds"] = stopped  # the cached property's own place: read as if it had been asked


def _locked_elsewhere(run_ids: list[int]) -> set[int]:
    """Of these runs, those whose lock (`exclusive_run`) another session of this database holds, in one query: what
    `pg_try_advisory_lock` would refuse (a lock this session holds is taken again, as there), without taking any,
    so a worker coming to a run meanwhile never finds it busy because a list was read. A lock on two int4 keys is
    listed with the first as classid, the second as objid and objsubid 2; pg_locks lists every database's."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND classid = %s::bigint::oid AND objid::bigint = ANY(%s) AND pid <> pg_backend_pid()",
            [RUN_LOCK_NAMESPACE, run_ids],
        )
        return {run_id for (run_id,) in cursor.fetchall()}


def holder_gone(run: IngestRun) -> bool:
    """Inside `exclusive_run`, holding the run's lock: whether no process imports it. On PostgreSQL holding the lock
    says so; on SQLite (no lock) the process that took it is gone (`owner_gone`)."""
    return run_locks_tell() or owner_gone(run.owner)


def _taken_since(stopped: bool) -> str:
    if stopped:
        return "A worker has started the run; nothing was changed."
    return IMPORTING_ELSEWHERE


# -- who imports a run, where run locks do not tell (SQLite) ----------------------------------------------
# PostgreSQL shows a run no process imports by its advisory lock, which goes with the holder's connection. SQLite
# has none: a run whose process was killed (SIGKILL, out of memory) read *running* for ever. A run keeps the process
# that took it (`IngestRun.owner`): its host, the host's boot, its PID namespace, its PID and when it started (PIDs
# are used again). It is gone only when that is certain: recorded on this host, in this boot and PID namespace, and
# no live process has that PID and start. A run recorded elsewhere (another container, a system without /proc) or
# by an older version (no owner) is taken for held, as before.


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


@cache
def _where() -> tuple[str, str, str]:
    """This host, its boot and this process's PID namespace ("" each where the system does not say)."""
    import socket

    namespace = ""
    with suppress(OSError):
        namespace = os.readlink("/proc/self/ns/pid")
    host = "".join(socket.gethostname().split())[:200] or "-"
    return host, _read("/proc/sys/kernel/random/boot_id"), namespace


def _started(pid: int) -> str | None:
    """When the live process `pid` started (clock ticks after boot, /proc/PID/stat's 22nd field); None when no
    such process lives (a zombie, killed and not yet reaped, is dead)."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return None
    after_name = stat.rpartition(")")[2].split()  # the name, in parentheses, may hold spaces
    if len(after_name) < 20 or after_name[0] in ("Z", "X", "x"):
        return None
    return after_name[19]


def this_process() -> str:
    """This process as a run's owner: "host boot namespace pid start" (per call: a forked worker is another)."""
    pid = os.getpid()
    return " ".join([*_where(), str(pid), _started(pid) or ""])[: IngestRun._meta.get_field("owner").max_length]


def owner_gone(owner: str) -> bool:
    """Whether the process `owner` names (`this_process`) is certainly gone; False when it lives, or when this
    process cannot tell (another host, boot or PID namespace; a system without /proc; no owner recorded)."""
    parts = owner.split(" ")
    if len(parts) != 5:
        return False
    host, boot, namespace, pid, started = parts
    if not (boot and namespace and started and pid.isdigit()) or (host, boot, namespace) != _where():
        return False
    return _started(int(pid)) != started


def stalled_sweep_at(run: IngestRun) -> datetime | None:
    """When beat's sweep (every INGEST_REQUEUE_MINUTES) may take up this running run if no worker holds
    it: the visibility timeout and INGEST_REQUEUE_MINUTES after it started (`stalled_cutoff`)."""
    if run.started_at is None:
        return None
    wait = timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT, minutes=settings.INGEST_REQUEUE_MINUTES)
    return run.started_at + wait


def stalled_cutoff(older_than: timedelta) -> datetime:
    """A running run no worker holds, started before this, lost its worker and its task: the broker
    hands a dead worker's task out again CELERY_VISIBILITY_TIMEOUT after it was delivered, so until
    then the redelivery may still come, and `older_than` more leaves it time to."""
    return timezone.now() - timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT) - older_than


def recover_pending_runs(older_than: timedelta, limit: int = 100) -> dict[str, int]:
    """Beat's sweep: each archive run pending for `older_than` since it was last queued is queued
    again, or failed, saying why, when its archive is gone. A connector's pull is never pending.

    An archive run still *running* with no worker holding its lock (on SQLite: whose process is gone,
    `owner_gone`), started more than the visibility timeout and `older_than` ago (its worker died and the
    redelivery never came), is made pending and queued again, or failed when its archive is gone
    (`stalled_*` in the tally). A run a live worker imports holds its lock and is never touched (`stalled_busy`)."""
    cutoff = timezone.now() - older_than
    stale = (
        IngestRun.objects.filter(status=IngestRun.Status.PENDING)
        .exclude(source=IngestRun.Source.CONNECTOR)
        .filter(Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True, created_at__lt=cutoff))
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    minutes = round(older_than.total_seconds() / 60)
    waited = (
        f"The run was still pending {minutes} min after it was queued (its task was lost: a worker lost it, "
        "or the queue was flushed or restarted without persistence)"
    )
    tally: Counter = Counter()
    for run_id in stale:
        recovery = requeue_run(run_id, waited=waited)
        tally[recovery.outcome] += 1
        if recovery.outcome in ("queued", "failed"):
            logger.warning("Ingest run %s was pending for over %s min: %s", run_id, minutes, recovery.outcome)
    before = stalled_cutoff(older_than)
    running = (
        IngestRun.objects.filter(status=IngestRun.Status.RUNNING, started_at__lt=before)
        .exclude(source=IngestRun.Source.CONNECTOR)
        .order_by("started_at", "pk")
        .values_list("pk", "owner")[:limit]
    )
    # Where run locks do not tell (SQLite), only the runs whose process is certainly gone (`owner_gone`).
    stopped = [run_id for run_id, owner in running if run_locks_tell() or owner_gone(owner)]
    for run_id in stopped:
        recovery = requeue_run(run_id, waited=STALLED, stalled_before=before)
        tally[f"stalled_{recovery.outcome}"] += 1
        if recovery.outcome in ("queued", "failed"):
            logger.warning("Ingest run %s was running with no worker holding it: %s", run_id, recovery.outcome)
    return dict(tally)


def fail_run(run_id: int, message: str, *, owner: str | None = None) -> bool:
    """Fail an unfinished run as a whole (its queue unreachable, its archive gone, marked failed by hand, its task
    stopped or its worker dead), `message` saying why; its error's consequence says what of it was kept. `owner`:
    only while that process still has it (a dead one's run, which another process may have taken since). Whether
    it was failed."""
    unfinished = IngestRun.objects.filter(pk=run_id).exclude(status__in=FINISHED_STATUSES)
    if owner is not None:
        unfinished = unfinished.filter(owner=owner)
    return bool(
        unfinished.update(
            status=IngestRun.Status.FAILED,
            finished_at=timezone.now(),
            phase="",
            errors=[run_failure(run_id, RecordError(file="", message=message))],
        )
    )


def run_failure(run_id: int, error: RecordError) -> dict:
    """`error`, which failed the run as a whole, as the run keeps it, with what was kept: each job is stored whole
    or not at all, so those the run stored (created or updated, in any of its attempts) before it failed stay."""
    stored = jobs_stored(run_id)
    return {**replace(error, effect="stopped" if stored else "failed").as_dict(), "stored": stored}


def jobs_stored(run_id: int) -> int:
    """The jobs a run has stored (created or updated, in any of its attempts) and that no later run has since."""
    return Job.objects.filter(ingest_run_id=run_id).count()


def stored_by_earlier_attempts(run: IngestRun) -> int:
    """The jobs earlier attempts of an unfinished run stored (`jobs_stored`): kept, and counted unchanged by the
    attempt going on. That attempt's own are those it has counted created or updated: its counts commit with each
    batch of jobs (`_store_jobs`), and both are read here in one statement, so a batch committed since `run` was
    read is never taken for an earlier attempt's."""
    if run.is_finished or not run.attempts or run.source == IngestRun.Source.CONNECTOR:
        return 0
    if run.status == IngestRun.Status.RUNNING and run.attempts == 1:  # the first attempt stored them all
        return 0
    now = (
        IngestRun.objects.filter(pk=run.pk)
        .annotate(stored=Count("jobs"))
        .values_list("status", "stored", "jobs_created", "jobs_updated")
        .first()
    )
    if now is None:
        return 0
    status, stored, created, updated = now
    if status in FINISHED_STATUSES:  # since `run` was read: its Jobs row counts them all now
        return 0
    if status == IngestRun.Status.RUNNING:
        stored -= created + updated
    return max(stored, 0)


def earlier_attempt_kept(stored: int) -> str:
    """What Mark failed and a run's page say of the jobs an earlier attempt stored: "the 12 jobs an earlier attempt
    stored are kept"."""
    jobs = "1 job an earlier attempt stored is" if stored == 1 else f"{stored:,} jobs an earlier attempt stored are"
    return f"the {jobs} kept"


def error_order(error: dict) -> tuple:
    """Where an error stands in a run's report: by file, then row as a number (a file's errors
    without a row first), then field. Notes on the whole run (no file) come before every file."""
    row = error.get("row")
    try:
        number = int(row) if row is not None else None
    except (TypeError, ValueError):
        number = None
    return (error.get("file") or "", number is not None, number or 0, error.get("field") or "")


def in_row_order(errors: list[dict]) -> list[dict]:
    """A run's errors ({file, row, field, job_id, message}) as its page, CSV and API list them; the
    parser finds them job by job (a job's second row before another job's first), not in row order."""
    return sorted(errors, key=error_order)


def error_kinds(errors: list[dict]) -> list[tuple[tuple[str, str], int]]:
    """How many errors each (file, field) has, most first: the shape of a broken export at a glance."""
    kinds = Counter((error.get("file") or "", error.get("field") or "") for error in errors)
    return kinds.most_common()


def error_consequence(error: dict) -> str:
    """What the importer did about an error, in words (its page, CSV and API say it beside the message)."""
    effect = error.get("effect") or ""
    if effect == "rejected":
        return f"job {error['job_id']} not stored" if error.get("job_id") else "row not stored"
    if effect == "note":
        return "nothing rejected"
    if effect == "listing":  # a native file's listing of a job another listing of it stands for
        return f"this listing not stored: job {error.get('job_id')} is stored from another"
    if effect == "refused":
        return "archive refused: nothing stored"
    if effect == "failed":
        return "run failed: nothing stored"
    if effect == "stopped":
        stored = error.get("stored") or 0
        kept = "the 1 job it stored is kept" if stored == 1 else f"the {stored:,} jobs it stored are kept"
        return f"run stopped: {kept}, the rest not imported"
    return ""


# The errors that failed or refused a run as a whole (`run_failure`, an ArchiveError): what the run kept says it all.
WHOLE_RUN_EFFECTS = ("failed", "stopped", "refused")


def errors_summary(errors: list[dict], jobs_rejected: int) -> str:
    """What a run's errors cost, summed up as their consequences say it one by one (the line above them on its
    page): "2 jobs rejected (not stored); 5 errors rejected nothing.", with the listings native files had twice
    ("1 duplicate listing not stored (its job is stored from another listing)") and the errors that do not say
    what they did (a connector's pull, an older run) counted too; for a run that failed as a whole, what of it was
    kept in place of its rejected jobs, which its errors no longer list ("Run stopped: the 12 jobs it stored are
    kept, the rest not imported."). Empty when no error says what it did and no job was rejected."""
    effects = Counter(error.get("effect") or "" for error in errors)
    if not jobs_rejected and not set(effects) - {""}:
        return ""
    whole = next((error for error in errors if error.get("effect") in WHOLE_RUN_EFFECTS), None)
    if whole is not None:
        said = error_consequence(whole)
        parts = [said[:1].upper() + said[1:]]
    else:
        parts = [f"{_counted(jobs_rejected, 'job')} rejected (not stored)"]
    if listings := effects["listing"]:
        its = "its job is" if listings == 1 else "their jobs are"
        parts.append(f"{_counted(listings, 'duplicate listing')} not stored ({its} stored from another listing)")
    if whole is None or effects["note"]:  # as the line always said it, "0 errors rejected nothing" too
        parts.append(f"{_counted(effects['note'], 'error')} rejected nothing")
    if effects[""]:
        parts.append(f"{_counted(effects[''], 'error')} without a recorded consequence")
    return "; ".join(parts) + "."


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def add_note(run_id: int, message: str) -> None:
    """Add a note for the operator to a run's errors, after the run has written its own (a rerun resets them)."""
    with transaction.atomic():
        run = IngestRun.objects.select_for_update().filter(pk=run_id).first()
        if run is not None:
            run.errors = in_row_order([*run.errors, RecordError(file="", message=message, effect="note").as_dict()])
            run.save(update_fields=["errors"])


def execute_run(run_id: int, on_progress=None) -> IngestRun | None:
    """Import the run's archive, job by job in bounded memory.

    Safe to call again for the same run (a redelivered task): jobs are upserted, so a run cut
    short by a killed worker is simply done again, and a finished run is left as it is.
    `on_progress(run)` is called as jobs are stored (the command's progress bar). The run returned
    has `imported_now` True only when this call imported it (not when it found it finished).
    """
    run = IngestRun.objects.filter(pk=run_id).first()
    if run is None:
        logger.warning("Ingest run %s vanished before it could run", run_id)
        return None
    if run.is_finished:
        logger.info("Ingest run %s already finished (%s); nothing to do", run_id, run.status)
        return run
    with exclusive_run(run_id) as ours:
        if not ours:
            raise RunBusy(f"ingest run {run_id} is being imported by another worker")
        run.refresh_from_db()
        if run.is_finished:  # finished by the worker that held it a moment ago
            return run
        if not claim_run(run):
            run.refresh_from_db()
            if run.is_finished:  # finished by the process that took it a moment ago
                return run
            raise RunBusy(f"ingest run {run_id} is being imported by another process ({run.owner or 'not recorded'})")
        try:
            return _execute_claimed(run, on_progress)
        except BaseException:
            let_go(run_id)
            raise
        finally:
            with _background_lock:
                _importing.discard(run_id)


def claim_run(run: IngestRun) -> bool:
    """Take the unfinished `run`, as just read, for an attempt in this process (`execute_run`); False when another
    process imports it. Where run locks tell (PostgreSQL) the caller holds the run's lock, which decides. Elsewhere
    (SQLite, with a task queue too: a task redelivered while its first worker still imports) the run's record does:
    it may be taken when pending, when the process that took it is certainly gone (`holder_gone`: `owner_gone`), or
    when that is this process (its thread begun by `take_pending`, or a retry that came back to it) and no other
    thread of it imports the run. Taken in one conditional UPDATE on the status and owner read (a compare-and-set,
    atomic in SQLite too): of two workers that found the run free at once, one takes it, the other finds it taken."""
    me = this_process()
    if run.status != IngestRun.Status.PENDING and run.owner != me and not holder_gone(run):
        return False
    with _background_lock:
        if run.pk in _importing:
            return False
        _importing.add(run.pk)
    taken = _update_run_if(
        run.pk, {"status": run.status, "owner": run.owner}, status=IngestRun.Status.RUNNING, owner=me
    )
    if not taken:
        with _background_lock:
            _importing.discard(run.pk)
    return taken


def let_go(run_id: int) -> None:
    """An attempt of this process that stopped by an exception lets its run go, where the run's record is its claim
    (SQLite, `claim_run`): made pending again, no process its owner, so the task's retry (the database was locked or
    unreachable) takes it in whichever worker process it comes to, where that process would otherwise wait for this
    one, alive but no longer importing it, to end. A failure the task records fails the run next, as before. Where
    run locks tell (PostgreSQL) the lock went with the attempt, and the run stays running meanwhile, as before."""
    if run_locks_tell():
        return
    with suppress(DatabaseError):  # the database still gone: the run keeps this process (taken up once it ends)
        _update_run_if(
            run_id,
            {"status": IngestRun.Status.RUNNING, "owner": this_process()},
            status=IngestRun.Status.PENDING,
            owner="",
            queued_at=timezone.now(),
            phase=LET_GO_PHASE,
        )


LET_GO_PHASE = "waiting to be imported again"


class RunBusy(Exception):
    """Another worker is importing this run (a redelivered task found the first one still alive)."""


# First key of the PostgreSQL advisory locks on ingest runs (the second is the run id): "FT" + 1.
RUN_LOCK_NAMESPACE = 0x46540001


@contextmanager
def exclusive_run(run_id: int):
    """Yield whether this process may import the run: at most one worker imports a run at a time.

    With at-least-once delivery a task can be handed out again while its first worker is still
    busy (a run longer than the visibility timeout, a broker restart). On PostgreSQL a session
    advisory lock keyed on the run decides; the server drops it the moment the holder's connection
    dies, so a killed worker never leaves a run locked. SQLite has no such lock, and yields True here:
    there the run's record decides who imports it (`claim_run`: the process it keeps, `IngestRun.owner`),
    with a real worker over Redis as in the embedded mode, and the recoveries (`_requeue_run`, `mark_failed`)
    act only on a run whose process is gone, by a compare-and-set on its owner.
    """
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [RUN_LOCK_NAMESPACE, run_id])
        ours = bool(cursor.fetchone()[0])
    try:
        yield ours
    finally:
        if ours:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [RUN_LOCK_NAMESPACE, run_id])
            except DatabaseError:
                logger.warning("Could not release the lock on ingest run %s; it went with the connection", run_id)


def _execute_claimed(run: IngestRun, on_progress=None) -> IngestRun:
    run.imported_now = True
    run.status = IngestRun.Status.RUNNING
    run.owner = this_process()  # where run locks do not tell, how a page sees that its process is gone
    run.started_at = timezone.now()
    run.storing_started_at = None  # set again once the archive is read (a rerun estimates afresh)
    run.attempts += 1
    run.phase = "reading archive"
    run.jobs_done = run.jobs_created = run.jobs_updated = run.jobs_unchanged = run.jobs_rejected = 0
    run.samples = 0
    run.errors = []
    run.save()

    last_phase_save = [0.0]

    def phase(text: str) -> None:
        run.phase = text[:100]
        now = time.monotonic()
        if now - last_phase_save[0] >= PROGRESS_SECONDS:
            last_phase_save[0] = now
            run.save(update_fields=["phase"])
        if on_progress is not None:
            on_progress(run)

    try:
        with ArchiveStream(
            run.archive_path,
            artifact_max_bytes=settings.ARTIFACT_MAX_BYTES,
            limits=reader_limits(),
            progress=phase,
            work_dir=settings.ARCHIVE_WORK_DIR,
            name=run.archive_name,  # an upload is stored as <hex>.upload; its errors name the user's file
        ) as stream:
            run.errors = in_row_order([e.as_dict() for e in stream.errors])
            run.jobs_rejected = len(stream.rejected)
            run.jobs_total = len(stream.jobs) + len(stream.rejected)
            run.phase = "storing jobs"
            run.storing_started_at = timezone.now()  # the time left is estimated from the rate from here
            run.save(update_fields=["errors", "jobs_rejected", "jobs_total", "phase", "storing_started_at"])
            _store_jobs(run, stream, accepted=len(stream.jobs), on_progress=on_progress, errors=stream.errors)
    except ArchiveError as exc:
        run.errors = [replace(exc.error, effect="refused").as_dict()]
        _finish(run, IngestRun.Status.FAILED)
        return run
    except FileNotFoundError:
        missing = RecordError(file=run.archive_name, message="the archive file does not exist")
        run.errors = [run_failure(run.pk, missing)]
        _finish(run, IngestRun.Status.FAILED)
        return run
    return run


@dataclass
class DryRunReport:
    """What importing an archive would do, worked out without writing anything."""

    jobs_total: int = 0
    jobs_created: int = 0
    jobs_updated: int = 0
    jobs_unchanged: int = 0
    jobs_rejected: int = 0
    samples: int = 0
    errors: list[RecordError] | None = None
    failed: str = ""  # why the whole archive would be refused (a hostile or unreadable archive)
    jobs_done: int = 0  # progress, as on a run: jobs checked so far, and what is being read
    phase: str = ""


def dry_run(archive_path: str | Path, on_progress=None) -> DryRunReport:
    """Read and validate an archive as an import would, and say what it would store; write nothing.

    No ingest run, job, blob or log event is created: the archive is parsed and each job's
    fingerprint compared with the stored job's, exactly as `store_jobs` decides (`outcome`).
    `on_progress(report)` is called as it goes (the command's progress bar, as for an import).
    """
    report = DryRunReport(errors=[])
    path = Path(archive_path)

    def progress(phase: str | None = None) -> None:
        if phase is not None:
            report.phase = phase
        if on_progress is not None:
            on_progress(report)

    try:
        with ArchiveStream(
            path,
            artifact_max_bytes=settings.ARTIFACT_MAX_BYTES,
            limits=reader_limits(),
            progress=progress,
            work_dir=settings.ARCHIVE_WORK_DIR,
        ) as stream:
            report.jobs_rejected = len(stream.rejected)
            report.jobs_total = len(stream.jobs) + len(stream.rejected)
            progress("checking jobs")
            batch: list[ParsedJob] = []
            for parsed_job in stream:
                batch.append(parsed_job)
                if len(batch) >= settings.INGEST_STORE_BATCH:
                    _dry_run_batch(batch, report)
                    progress()
            _dry_run_batch(batch, report)
            progress()
            report.errors = sorted(stream.errors, key=lambda error: error_order(error.as_dict()))
    except ArchiveError as exc:
        report.errors = [exc.error]
        report.failed = exc.error.message
    except FileNotFoundError:
        report.errors = [RecordError(file=path.name, message="the archive file does not exist")]
        report.failed = "the archive file does not exist"
    return report


def _dry_run_batch(batch: list[ParsedJob], report: DryRunReport) -> None:
    """Decide each job of the batch as `store_jobs` would, with one query for the stored jobs."""
    if not batch:
        return
    wanted = {(job.record.cluster, job.record.external_id) for job in batch}
    stored = {
        (cluster, external_id): Job(fingerprint=fp, team_id=team_id)
        for cluster, external_id, fp, team_id in Job.objects.filter(
            cluster__name__in={cluster for cluster, _ in wanted},
            external_id__in={external_id for _, external_id in wanted},
        ).values_list("cluster__name", "external_id", "fingerprint", "team_id")
    }
    teams = dict(Team.objects.filter(slug__in={_team_slug(job.record.team) for job in batch}).values_list("slug", "pk"))
    for parsed_job, (series, fp) in zip(batch, _threads().map(fingerprinted, batch), strict=True):
        record = parsed_job.record
        decided = outcome(stored.get((record.cluster, record.external_id)), fp, teams.get(_team_slug(record.team)))
        count_outcome(report, decided)
        report.jobs_done += 1
        if series is not None:
            report.samples += summary_of(series, record.start_time, record.end_time, record.gpu_count).sample_count
    batch.clear()


def store_parsed(run: IngestRun, parsed: ParsedArchive) -> IngestRun:
    """Store an archive parsed in memory (`parse_archive`); the importer itself streams (`execute_run`)."""
    run.errors = in_row_order([e.as_dict() for e in parsed.errors])
    run.jobs_rejected = len(parsed.rejected)
    run.jobs_total = len(parsed.jobs) + len(parsed.rejected)
    run.phase = "storing jobs"
    run.save(update_fields=["errors", "jobs_rejected", "jobs_total", "phase"])
    jobs = (
        ParsedJob(record, series_lib.as_slice(parsed.series.get(job_id)), parsed.artifacts.get(job_id, []))
        for job_id, record in sorted(parsed.jobs.items())
    )
    return _store_jobs(run, jobs, accepted=len(parsed.jobs))


def _store_jobs(run: IngestRun, jobs, *, accepted: int, on_progress=None, errors=None) -> IngestRun:
    """Store jobs as they come, INGEST_STORE_BATCH to a transaction; `errors` (the stream's list) may grow
    with notes while iterating."""
    teams: dict[str, Team] = {}
    clusters: dict[str, Cluster] = {}
    changed: list[int] = []
    batch: list[JobToStore] = []
    batch_bytes = 0  # of the batch's artifacts

    def count(results: list[tuple[str, Job]]) -> None:
        # In the transaction that stores the jobs: the run's counts commit with them. Written after the commit,
        # a page read in between took the batch for an earlier attempt's (`stored_by_earlier_attempts`).
        for decided, job in results:
            count_outcome(run, decided)
            if decided != "unchanged":
                changed.append(job.pk)
            run.samples += job.sample_count
        run.jobs_done += len(results)
        run.save(update_fields=["jobs_done", "jobs_created", "jobs_updated", "jobs_unchanged", "samples"])

    def flush() -> None:
        store_jobs(run, batch, counted=count)
        batch.clear()
        if on_progress is not None:
            on_progress(run)

    for parsed_job in jobs:
        record = parsed_job.record
        cluster = clusters.get(record.cluster) or clusters.setdefault(
            record.cluster, Cluster.objects.get_or_create(name=record.cluster)[0]
        )
        team = teams.get(record.team) or teams.setdefault(record.team, _team_for(record.team))
        batch.append(JobToStore(cluster, team, record, parsed_job.series, parsed_job.artifacts))
        batch_bytes += sum(len(artifact.content) for artifact in parsed_job.artifacts)
        if len(batch) >= settings.INGEST_STORE_BATCH or batch_bytes >= STORE_BATCH_BYTES:
            flush()
            batch_bytes = 0
    if batch:
        flush()

    if errors is not None:
        run.errors = in_row_order([e.as_dict() for e in errors])
    if run.jobs_rejected and not accepted:
        status = IngestRun.Status.FAILED
    elif run.jobs_rejected:
        status = IngestRun.Status.PARTIAL
    else:
        status = IngestRun.Status.SUCCEEDED
    _finish(run, status)
    if changed:
        transaction.on_commit(lambda: jobs_ingested.send(sender=IngestRun, job_ids=changed, run_id=run.pk))
    return run


def _finish(run: IngestRun, status: str) -> None:
    run.status = status
    run.phase = ""
    run.finished_at = timezone.now()
    run.save()
    _discard_upload(run)


def _discard_upload(run: IngestRun) -> None:
    """An uploaded archive is only kept until its run has finished (a redelivered task still needs it)."""
    if not run.archive_path:
        return
    path = Path(run.archive_path)
    upload_dir = Path(settings.UPLOAD_DIR).resolve()
    if path.resolve().parent == upload_dir:
        path.unlink(missing_ok=True)


def _team_slug(name: str) -> str:
    return slugify(name)[:100] or "unnamed"


def _team_for(name: str) -> Team:
    team, _ = Team.objects.get_or_create(slug=_team_slug(name), defaults={"name": name[:200]})
    return team


def fingerprint(record: JobRecord, series_digest: bytes | None, artifacts: list[ArtifactRecord]) -> str:
    """A hash of everything the job brought, so an unchanged re-import can be recognised.

    The series counts by its content (`series.content_digest`), not by its blob's bytes: a job is
    judged unchanged before its blob is encoded, and an upgrade that encodes blobs differently
    does not make it look changed.
    """
    digest = hashlib.sha256()
    # Shallow: `asdict` would deep-copy `raw`, only to drop it (the same JSON either way).
    values = {f.name: getattr(record, f.name) for f in fields(record) if f.name != "raw"}
    if values["summary_gpu_util"] is None:  # as before the field existed: unchanged jobs stay unchanged
        del values["summary_gpu_util"]
    if values["gpu_share"] == 1.0 and not values["gpu_unit"]:  # whole GPUs, as before these fields existed
        del values["gpu_share"], values["gpu_unit"]
    digest.update(json.dumps(values, sort_keys=True, default=str).encode())
    digest.update(series_digest or b"")
    for artifact in sorted(artifacts, key=lambda a: (a.kind, a.path)):
        digest.update(f"{artifact.kind}\0{artifact.path}\0".encode())
        digest.update(hashlib.sha256(artifact.content).digest())
    return digest.hexdigest()


def fingerprinted(job) -> tuple[series_lib.SeriesSlice | None, str]:
    """A job's (a `ParsedJob` or `JobToStore`) series as a slice (None when it has none) and its
    fingerprint: what storing compares."""
    series = series_lib.as_slice(job.series)
    return series, fingerprint(job.record, series.content_digest() if series is not None else None, job.artifacts)


def outcome(existing: Job | None, fp: str, team_id: int | None) -> str:
    """What storing a job does: "created", "updated", or "unchanged" (same fingerprint and team)."""
    if existing is None:
        return "created"
    if existing.fingerprint == fp and existing.team_id == team_id:
        return "unchanged"
    return "updated"


def count_outcome(tally: IngestRun | DryRunReport, decided: str) -> None:
    """Add one to the tally's jobs_created, jobs_updated or jobs_unchanged."""
    field = f"jobs_{decided}"
    setattr(tally, field, getattr(tally, field) + 1)


@dataclass
class JobToStore:
    cluster: Cluster
    team: Team
    record: JobRecord
    series: object  # the normalised series: a frame, a `SeriesSlice` or None
    artifacts: list[ArtifactRecord]
    # Of the artifacts stored before, those whose path this matches are kept when `artifacts` does not bring
    # them again (a connector's `keeps_artifacts`); the others are replaced.
    keep: re.Pattern | None = None


def store_job(
    run, cluster, team, record: JobRecord, frame, artifacts: list[ArtifactRecord], *, keep: re.Pattern | None = None
) -> tuple[str, Job]:
    """Upsert one job (what connectors call); see `store_jobs`."""
    return store_jobs(run, [JobToStore(cluster, team, record, frame, artifacts, keep)])[0]


def store_jobs(run, items: list[JobToStore], *, counted=None) -> list[tuple[str, Job]]:
    """Upsert jobs, each whole or not at all, in one transaction: ("created" | "updated" | "unchanged", job) each.
    `counted(results)` is called inside that transaction, once its rows are written (the importer counts them on
    the run there, so the counts commit with the jobs).

    A job is matched on (cluster, external_id); one whose fingerprint (and team) is unchanged is
    left alone. Rows are written in bulk, because one transaction and a few statements per batch
    cost far less than a handful of statements and a commit per job. Blobs are written under
    content-derived names before the rows that name them commit, so a rolled-back or repeated
    batch writes the same files again (`check_storage` cleans any a crash leaves unnamed). An
    unchanged job costs its fingerprint and nothing else: no blob is encoded or written for it.
    """
    keys = [(item.cluster.pk, item.record.external_id) for item in items]
    if len(set(keys)) != len(keys):  # the same job twice: store them one after the other
        return [result for item in items for result in store_jobs(run, [item], counted=counted)]
    known = {
        (cluster_id, external_id): Job(fingerprint=fp, team_id=team_id)
        for cluster_id, external_id, fp, team_id in Job.objects.filter(_with_keys(keys)).values_list(
            "cluster_id", "external_id", "fingerprint", "team_id"
        )
    }

    def prepare(item: JobToStore, key) -> Prepared:
        # Only a job that will be stored gets its blobs written: an unchanged job's are there
        # already (or were pruned, and stay so).
        series, fp = fingerprinted(item)
        if outcome(known.get(key), fp, item.team.pk) == "unchanged":
            return Prepared(series, fp, "", (), None, blobs_stored=False)
        return _store_blobs(item, series, fp)

    preparing = _threads().map(prepare, items, keys)
    # Meanwhile (the threads mostly run without the GIL) the logs of jobs not stored before are
    # scanned for events: they will be stored. Other jobs' logs are scanned only if they changed.
    log_events = {
        index: [_log_events(artifact, item.record.start_time) for artifact in item.artifacts]
        for index, (item, key) in enumerate(zip(items, keys, strict=True))
        if key not in known
    }
    prepared = list(preparing)

    # One query per batch for the clusters' prices, not one per job (`price_for` reads
    # `cluster.prices`); fetched afresh each batch, so a price changed during a long run applies.
    clusters = list({item.cluster.pk: item.cluster for item in items}.values())
    for cluster in clusters:
        getattr(cluster, "_prefetched_objects_cache", {}).pop("prices", None)
    prefetch_related_objects(clusters, "prices")
    results: list[tuple[str, Job]] = []
    with transaction.atomic():
        existing = {
            (job.cluster_id, job.external_id): job for job in Job.objects.select_for_update().filter(_with_keys(keys))
        }
        created: list[Job] = []
        updated: list[Job] = []
        stored: list[tuple[Job, list[ArtifactRecord], tuple[str, ...], list]] = []  # with names, events
        replaced: set[str] = set()
        keeping: dict[int, tuple[re.Pattern, list[ArtifactRecord]]] = {}  # updated jobs that keep some artifacts
        for index, (item, (series, fp, series_name, artifact_names, summary, blobs_stored), key) in enumerate(
            zip(items, prepared, keys, strict=True)
        ):
            job = existing.get(key)
            decided = outcome(job, fp, item.team.pk)
            if decided == "unchanged":
                results.append(("unchanged", job))
                continue
            if not blobs_stored:  # changed since it was looked up (by another import meanwhile)
                series_name, artifact_names, summary = _store_blobs(item, series, fp)[2:5]
            if decided == "created":
                job = Job(cluster=item.cluster, external_id=item.record.external_id)
                created.append(job)
                results.append(("created", job))
            else:
                if job.series_file.name:
                    replaced.add(job.series_file.name)
                updated.append(job)
                results.append(("updated", job))
                if item.keep is not None:
                    keeping[job.pk] = (item.keep, item.artifacts)
            _apply_record(job, item.record, item.team, fp, run)
            _apply_summary(job, summary, item.cluster, item.record.summary_gpu_util)
            job.series_file.name = series_name
            events = (
                log_events[index]
                if index in log_events
                else [_log_events(a, item.record.start_time) for a in item.artifacts]
            )
            stored.append((job, item.artifacts, artifact_names, events))
        insert_new(created)
        for job in updated:
            job.save()
        if updated:
            old_artifacts = Artifact.objects.filter(job__in=updated).exclude(pk__in=_kept_artifacts(keeping))
            replaced.update(old_artifacts.values_list("file", flat=True))
            old_artifacts.delete()  # cascades to their log events
        _store_artifacts(stored)
        replaced -= {job.series_file.name for job, *_ in stored}
        if replaced:
            # Only once the new rows are committed: a rolled-back update must still find its old blobs.
            transaction.on_commit(lambda: delete_unreferenced(replaced))
        if counted is not None:
            counted(results)
    return results


def _kept_artifacts(keeping: dict[int, tuple[re.Pattern, list[ArtifactRecord]]]) -> list[int]:
    """The artifacts updated jobs keep from before ({job id: (its `keep`, the artifacts it brings)}): those
    `keep` matches that are not brought again (with their log events)."""
    if not keeping:
        return []
    kept = []
    rows = Artifact.objects.filter(job_id__in=keeping).values_list("pk", "job_id", "kind", "path")
    brought = {
        job_id: {(record.kind, _fitted_path(record.path)) for record in records}
        for job_id, (_, records) in keeping.items()
    }
    for pk, job_id, kind, path in rows:
        if (kind, path) not in brought[job_id] and keeping[job_id][0].search(path):
            kept.append(pk)
    return kept


class Prepared(NamedTuple):
    """What storing a job compares and names (`fingerprinted`, then `_store_blobs`)."""

    series: series_lib.SeriesSlice | None
    fingerprint: str
    series_name: str  # the series blob's name once stored; "" without a series or blobs stored
    artifact_names: tuple[str, ...]  # the blob name of each of the job's artifacts, in order, once stored
    summary: series_lib.SeriesSummary | None  # the series' summary figures, once stored; None without a series
    blobs_stored: bool = True  # False for a job found unchanged, whose blobs are not written again


def _store_blobs(job, series: series_lib.SeriesSlice | None, fp: str) -> Prepared:
    """Encode a job's (a `JobToStore`) series, write its series and artifact blobs and work out its
    summary (on `_threads`, where Parquet compression, hashing and file writes release the GIL, and
    the summary is off the main thread's path)."""
    series_name = _store_blob("series", series.to_parquet_bytes(), ".parquet") if series is not None else ""
    names = tuple(_store_blob("artifacts", artifact.content) for artifact in job.artifacts)
    record = job.record
    summary = summary_of(series, record.start_time, record.end_time, record.gpu_count) if series is not None else None
    return Prepared(series, fp, series_name, names, summary)


def _with_keys(keys: list[tuple[int, str]]) -> Q:
    """A filter for the jobs with these (cluster id, external id) keys: an IN list per cluster."""
    by_cluster: dict[int, list[str]] = {}
    for cluster_id, external_id in keys:
        by_cluster.setdefault(cluster_id, []).append(external_id)
    filters = [Q(cluster_id=cluster_id, external_id__in=ids) for cluster_id, ids in by_cluster.items()]
    return reduce(or_, filters) if filters else Q(pk__in=[])


@cache
def _threads() -> ThreadPoolExecutor:
    """Threads for fingerprinting, encoding series and writing blobs: hashing, Parquet compression
    and file writes release the GIL, so two jobs are prepared at once while the main thread goes
    on. Never the database. (Writing blobs here gained nothing while they went through
    `Storage.save`, whose own code holds the GIL; with `_write_blob_file` the import is 7 % faster.)"""
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="ingest")


def _apply_record(job: Job, record: JobRecord, team: Team, fp: str, run) -> None:
    # Descriptive text is cut to its column, as PostgreSQL refuses longer values (native files and
    # connectors bring whatever the platform holds; the job schema bounds an archive's own rows).
    job.name = _fitted("name", record.name)
    job.user = _fitted("user", record.user)
    job.team = team
    job.queue = _fitted("queue", record.queue)
    job.state = _fitted("state", record.state)
    job.job_type = record.job_type or Job.JobType.BATCH
    job.submit_time = record.submit_time
    job.start_time = record.start_time
    job.end_time = record.end_time
    job.gpu_count = record.gpu_count
    job.gpu_share = record.gpu_share
    job.gpu_unit = _fitted("gpu_unit", record.gpu_unit)
    job.gpu_model = _fitted("gpu_model", gpu_model_name(record.gpu_model))
    job.node_count = record.node_count or 1
    job.cpu_count = record.cpu_count
    job.command = record.command
    job.labels = record.labels
    job.raw = record.raw
    job.fingerprint = fp
    job.ingest_run = run


def _fitted(field_name: str, text: str) -> str:
    return text[: _max_length(Job, field_name)]


@cache
def _max_length(model, field_name: str) -> int:
    return model._meta.get_field(field_name).max_length


def _fitted_path(path: str) -> str:
    """An artifact's path as its column keeps it: a longer one is cut and ends in a hash of the whole,
    so two paths alike in their first 500 characters stay two artifacts (a job's paths are unique)."""
    limit = _max_length(Artifact, "path")
    if len(path) <= limit:
        return path
    digest = hashlib.sha256(path.encode(errors="surrogatepass")).hexdigest()
    return f"{path[: limit - 17]}…{digest[:16]}"


def _shared(gpu_hours: float | None, share: float) -> float | None:
    return gpu_hours * share if gpu_hours is not None and share != 1.0 else gpu_hours


def summary_of(series: series_lib.SeriesSlice, start, end, gpu_count: int):
    """The job's summary figures from its series, with the configured idle threshold."""
    return series.summarize(start=start, end=end, gpu_count=gpu_count, idle_threshold=settings.IDLE_UTIL_THRESHOLD)


def _apply_summary(
    job: Job, summary: series_lib.SeriesSummary | None, cluster: Cluster, summary_util: float | None = None
) -> None:
    """The job's summary figures: from its series; for a job with no GPU utilization sample, from the
    source's own average (`summary_util`, Slurm's step accounting) when it has one."""
    # A MIG slice or a shared GPU's replica is its share of a GPU: GPU-hours, cost and the unused and
    # idle GPU-hours (read per device from the series, as if each were a whole GPU) count that share.
    share = job.gpu_share if job.gpu_share is not None else 1.0
    job.gpu_hours = series_lib.gpu_hours(job.start_time, job.end_time, job.gpu_count) * share
    job.util_source = Job.UtilSource.SAMPLES
    if summary_util is not None and (summary is None or summary.mean_gpu_util is None):
        # An average of the whole run: the unused GPU-hours follow from it (time no step covered was
        # idle, see `steps_gpu_util`), the idle hours (time below the idle threshold) do not, and
        # coverage is the whole run's, from no samples.
        job.mean_gpu_util = summary_util
        job.unused_gpu_hours = job.gpu_hours * (1.0 - summary_util / 100.0)
        job.idle_gpu_hours = job.sampling_period_s = None
        job.peak_gpu_mem_util = summary.peak_gpu_mem_util if summary is not None else None
        job.coverage = 1.0
        job.sample_count = 0
        job.util_source = Job.UtilSource.SLURM_STEPS
    elif summary is not None:
        job.mean_gpu_util = summary.mean_gpu_util
        job.peak_gpu_mem_util = summary.peak_gpu_mem_util
        job.unused_gpu_hours = _shared(summary.unused_gpu_hours, share)
        job.idle_gpu_hours = _shared(summary.idle_gpu_hours, share)
        job.coverage = summary.coverage
        job.sample_count = summary.sample_count
        job.sampling_period_s = summary.sampling_period_s
    else:
        job.mean_gpu_util = job.peak_gpu_mem_util = job.unused_gpu_hours = job.idle_gpu_hours = None
        job.sampling_period_s = None
        job.coverage = 0.0
        job.sample_count = 0
    price = price_for(cluster, job.gpu_model)
    job.cost = cost_of(job.gpu_hours, price.price_per_gpu_hour if price else None)  # as a re-price does
    job.currency = price.currency if price else ""


def _store_blob(folder: str, content: bytes, suffix: str = "") -> str:
    """Store content under a name derived from its hash, never from a name the input chose."""
    digest = hashlib.sha256(content).hexdigest()
    name = f"{folder}/{digest[:2]}/{digest}{suffix}"
    # The stock folder storage only: a subclass (or an object store) may save differently.
    if default_storage.__class__ is FileSystemStorage:
        _write_blob_file(default_storage, name, content)
        return name
    if default_storage.exists(name) and default_storage.size(name) != len(content):
        default_storage.delete(name)  # a half-written blob (full disk, killed writer) never passes for whole
    if not default_storage.exists(name):
        try:
            saved = default_storage.save(name, ContentFile(content))
        except OSError:
            # FileSystemStorage leaves the partial file behind: remove it so a retry writes it whole.
            if default_storage.exists(name) and default_storage.size(name) != len(content):
                default_storage.delete(name)
            raise
        if saved != name:  # a concurrent writer stored the same content first
            default_storage.delete(saved)
    return name


def _write_blob_file(storage: FileSystemStorage, name: str, content: bytes) -> None:
    """What `storage.save` does for a content-addressed blob, at half the cost per file.

    A blob appears under its name whole or not at all. On Linux it is written to a file without a
    name (O_TMPFILE), which is given the blob's name once it is complete: a writer killed part-way
    (a SIGKILLed worker, a full disk) leaves nothing, because the kernel frees a file nobody named.
    Elsewhere it is written beside its name and renamed into place; a killed writer then leaves a
    temporary file, which `check_storage` reports as an orphan. A blob of the right size already
    there is the same content and is kept; anything else there (a half-written file from an older
    version) is written again. Skipped, because a fixed name makes them moot: Django's search for
    a free name and its file lock.
    """
    path = storage.path(name)
    try:
        if os.stat(path).st_size == len(content):
            return
        os.unlink(path)
    except FileNotFoundError:
        pass
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        _make_blob_folder(storage, directory)
    temporary = None
    try:
        descriptor = os.open(directory, os.O_WRONLY | UNNAMED_FILES, 0o666)
    except OSError:  # no unnamed files here (another system, a file system without them)
        temporary = f"{path}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(descriptor, "wb") as handle:
            handle.write(content)
            handle.flush()
            if storage.file_permissions_mode is not None:
                os.fchmod(handle.fileno(), storage.file_permissions_mode)
            _match_location_group(handle.fileno(), storage.location)
            if temporary is None:
                _name_unnamed(handle.fileno(), path)
        if temporary is not None:
            os.replace(temporary, path)
    except BaseException:
        if temporary is not None:
            with suppress(OSError):
                os.unlink(temporary)
        raise


# O_TMPFILE where the system has it and /proc can name its files; 0 makes the open fail (EISDIR).
UNNAMED_FILES = getattr(os, "O_TMPFILE", 0) if os.path.isdir("/proc/self/fd") else 0


def _name_unnamed(descriptor: int, path: str) -> None:
    """Give an O_TMPFILE file a name: linkat(2) following /proc/self/fd/N (plain link(2), which
    os.link uses without a directory descriptor, would link the /proc entry itself)."""
    fds = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)  # per call: "self" is fixed at open, and workers fork
    try:
        with suppress(FileExistsError):  # another writer stored the same blob meanwhile
            os.link(str(descriptor), path, src_dir_fd=fds, follow_symlinks=True)
    finally:
        os.close(fds)


def _make_blob_folder(storage: FileSystemStorage, directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    if storage.directory_permissions_mode is not None:  # as Django's save: on each level it creates
        for level in (os.path.dirname(directory), directory):
            os.chmod(level, storage.directory_permissions_mode)


def _match_location_group(descriptor: int, location: str) -> None:
    """Give the file the storage folder's group, as Django's save does (a shared group folder)."""
    group = os.stat(location).st_gid
    if os.fstat(descriptor).st_gid != group:
        with suppress(PermissionError):
            os.fchown(descriptor, -1, group)


def _log_events(artifact: ArtifactRecord, started: datetime | None = None) -> list[LogEventRecord] | None:
    """The events in an artifact that is a log (None for other artifacts); `started`, the job's
    start, dates glog lines (JAX, absl), which carry no year."""
    if artifact.kind != Artifact.Kind.LOG:
        return None
    return extract_log_events(artifact.content.decode("utf-8", errors="replace"), started)


def _store_artifacts(stored: list[tuple[Job, list[ArtifactRecord], tuple[str, ...], list]]) -> None:
    """The jobs' artifact rows, naming their stored blobs, and the events found in their logs (one
    list per artifact, None for an artifact that is not a log), in bulk (jobs already have ids)."""
    artifacts: list[Artifact] = []
    for job, records, names, _ in stored:
        for record, name in zip(records, names, strict=True):
            artifacts.append(
                Artifact(
                    job=job,
                    kind=record.kind,
                    path=_fitted_path(record.path),
                    file=name,
                    size=len(record.content),
                    sha256=name.rsplit("/", 1)[-1],  # blobs are named by their SHA-256
                    truncated=record.truncated,
                )
            )
    insert_new(artifacts)
    found = [events_of for *_, job_events in stored for events_of in job_events]
    _insert_events(zip(artifacts, found, strict=True))


def _insert_events(found) -> int:
    """Store [(artifact, its events or None)] as LogEvent rows; the number stored.

    Log events are most of an import's rows (ten a job in the demo fleet) and nothing refers to
    them: written as plain rows, they cost a tenth of what bulk_create spends per value.
    """
    timestamp_value = connection.ops.adapt_datetimefield_value
    rows = [
        (artifact.job_id, artifact.pk, event.kind, event.line_no, timestamp_value(event.timestamp), event.text[:500])
        for artifact, events_of in found
        if events_of
        for event in events_of
    ]
    insert_rows(LogEvent, ("job_id", "artifact_id", "kind", "line_no", "timestamp", "text"), rows)
    return len(rows)


def rescan_log_events(job: Job) -> int | None:
    """Find the events of a stored job's logs again, with the extractor as it is now, in place of the
    ones its import stored (the job page's Log events table is computed at import, so it keeps what an
    older extractor found until this runs). The number of events now stored; None if a log is missing
    from storage (nothing is changed then)."""
    logs = [artifact for artifact in job.artifacts.all() if artifact.kind == Artifact.Kind.LOG]
    found = []
    for artifact in logs:
        try:
            with default_storage.open(artifact.file.name, "rb") as handle:
                content = handle.read()
        except OSError:
            logger.warning("Log %s of job %s is missing from storage; its events are kept", artifact.path, job)
            return None
        found.append((artifact, extract_log_events(content.decode("utf-8", errors="replace"), job.start_time)))
    with transaction.atomic():
        LogEvent.objects.filter(artifact__in=logs).delete()
        return _insert_events(found)
