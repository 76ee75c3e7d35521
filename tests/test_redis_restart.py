"""Redis restarted in the middle of an ingest, and of a triage, with a real worker on a PRIVATE redis-server.

The shared Redis (REDIS_URL, port 6379) is never touched: these tests start their own redis-server on
a free loopback port, configured as docs/operations.md tells operators to run Redis (append-only
file, fsync every second, `noeviction`), and a real `celery worker` whose REDIS_URL points at it.
Redis is stopped with SHUTDOWN NOSAVE (nothing but the append-only file survives) and started again:
- while the worker is part-way through a big import and a second import waits in the queue. The
  worker is held at known points of the import (gates the test opens), so that it certainly is still
  importing when Redis goes and when it comes back, and stores more jobs while Redis is down. The
  running import must finish, the queued one must survive the restart and run, and the database must
  equal a clean import of both archives: nothing lost, nothing stored twice;
- while the worker is part-way through triaging the jobs an import queued (in tasks of
  RETRIAGE_BATCH jobs), with more triage tasks waiting. Every job must end with exactly one current
  result, and the results and findings must equal a clean in-process triage of the same jobs;
- while an import finishes, which is when it queues the triage of its jobs (the worker is held part-way
  through the import until Redis is down): every job must still be triaged once Redis is back.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid
import zipfile
from pathlib import Path

import pytest
import redis
from celery import Celery
from django.core.files.storage import default_storage
from redis.backoff import NoBackoff
from redis.retry import Retry

from fleet import ingest
from fleet.models import IngestRun, Job, Team
from fleet.signals import jobs_ingested
from tests.conftest import (
    EXAMPLE_ARCHIVE,
    blocked_query,
    free_port,
    hold_lock,
    require_postgresql,
    worker_output,
    write_busy_archive,
)
from tests.test_ingest_worker_kill import (
    SMALL_BATCHES,
    blobs_on_disk,
    referenced_blobs,
    run_progress,
    snapshot,
    wait_until_finished,
)
from tests.test_services import _worker_database_url, celery_worker
from tests.waiting import wait_for
from triage import services
from triage.demo.generator import generate_demo_fleet
from triage.models import Finding, JobTriage, RuleSet

pytestmark = pytest.mark.services

# The settings docs/operations.md gives for a production Redis (and docker-compose.yml uses).
OPERATOR_REDIS_CONFIG = ["--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction"]


VISIBILITY_S = 20  # an unacknowledged task comes back after this (the default is the time limit + 15 min)

# The ingest tests' gates: from each job index on, the jobs are in the gate's team. Before the import
# starts, the test inserts each gate's team in a transaction it leaves open (`hold_team`): the worker's
# creation of that team waits on the unique slug until the test rolls it back, which holds the worker at
# that job, with every job before it stored (INGEST_STORE_BATCH = 10 divides each index; `held_at`).
GATED_JOBS = 120
GATES = {40: "gate-down", 80: "gate-back"}  # held when Redis goes down / when it comes back


def gated_archive(path: Path, jobs: int = GATED_JOBS, gates: dict[int, str] = GATES, cluster: str = "restart",
                  prefix: str = "r") -> Path:  # fmt: skip
    """A busy archive of `jobs` jobs whose jobs from each gate (job index: team slug) on are in its team."""
    write_busy_archive(path, jobs=jobs, cluster=cluster, prefix=prefix)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header, *rows = members["jobs.csv"].decode().splitlines()
    for index, row in enumerate(rows):
        fields = row.split(",")
        fields[2] = next((team for at, team in sorted(gates.items(), reverse=True) if index >= at), fields[2])
        rows[index] = ",".join(fields)
    members["jobs.csv"] = ("\n".join([header, *rows]) + "\n").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return path


def hold_team(database: str, slug: str):
    """A team created by a transaction left open: whoever creates it too waits until it is closed (rolled back)."""
    return hold_lock(database, "INSERT INTO fleet_team (slug, name) VALUES (%s, %s) RETURNING id", slug, slug)[0]


def gated_import(run: IngestRun) -> dict:
    """Where the import stands: the run's progress, and whether its worker waits to create a gate's team."""
    return {**run_progress(run), "waits_at_a_gate": 'INSERT INTO "fleet_team"' in blocked_query()}


def held_at(jobs_done: int):
    """Whether a `gated_import` is the worker held at a gate, having stored the run's jobs before it (no more)."""
    return lambda now: (
        now["waits_at_a_gate"] and now["status"] == IngestRun.Status.RUNNING and now["jobs_done"] == jobs_done
    )


def redis_server_binary() -> str:
    binary = shutil.which("redis-server")
    if not binary:
        if os.environ.get("CI"):
            pytest.fail("redis-server must be installed in CI (the Redis restart test starts a private one)")
        pytest.skip("redis-server is not installed")
    return binary


class PrivateRedis:
    def __init__(self, folder: Path):
        self.binary = redis_server_binary()
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        folder.mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder)]
        command += ["--save", "", "--protected-mode", "yes", "--logfile", str(self.folder / "redis.log")]
        self.process = subprocess.Popen(command + OPERATOR_REDIS_CONFIG)
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        wait_for("the private redis-server to answer", lambda: self._answers(client), 20)

    @staticmethod
    def _answers(client) -> bool:
        try:
            return client.ping()
        except redis.ConnectionError:
            return False

    def shutdown_nosave(self) -> None:
        # No retries: redis-py would reconnect to the stopped server for seconds while the import ran on.
        client = redis.Redis(port=self.port, retry=Retry(NoBackoff(), 0))
        with contextlib.suppress(redis.ConnectionError):  # the server closes the connection as it goes
            client.shutdown(nosave=True)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)


@contextlib.contextmanager
def worker_over(private_redis: PrivateRedis, storage_dir: Path, queue: str, visibility_s: int = VISIBILITY_S,
                **settings: str):  # fmt: skip
    """A real worker whose whole Celery configuration comes from REDIS_URL (the private server), as in
    production, and a Celery app to send it tasks. `settings`: more environment variables for it."""
    storage_dir.mkdir(parents=True, exist_ok=True)
    env = {"REDIS_URL": private_redis.url, "CELERY_VISIBILITY_TIMEOUT": str(visibility_s), **SMALL_BATCHES, **settings}
    # Not the current app: shared tasks in later tests must keep using the project's app and broker.
    sender = Celery("sender", broker=private_redis.url, set_as_current=False)
    try:
        with celery_worker(queue, storage_dir, env=env) as worker:
            yield worker, sender
            # Alive, and back on Redis: it answers a ping sent over the restarted server.
            wait_for(
                "the worker to answer a ping (or to die)", lambda: worker.poll() is not None or answers(sender), 30
            )
            assert worker.poll() is None, "the worker must survive the Redis restart"
    finally:
        sender.close()


def answers(sender: Celery) -> bool:
    """Whether a worker answers a ping sent through the sender's broker (the private Redis: only the test's)."""
    return bool(sender.control.ping(timeout=0.5, limit=1))


def consumer_log(storage_dir: Path, queue: str) -> list[str]:
    """The lines the worker `worker_over` started for `queue` has logged so far about its broker connection."""
    return [line for line in worker_output(storage_dir, queue).splitlines() if "consumer:" in line]


@contextlib.contextmanager
def imported_as_the_worker_did():
    """Imports in this process that only queue the triage of their jobs, as the worker's did: its import
    queued triage on the private Redis's default queue, which no worker there takes. Here tasks run in
    process, so each job would be triaged at once (some 70 % of the import's time), and no triage result
    is compared: only the jobs, teams, artifacts and events the import stored (`snapshot`)."""
    receivers = jobs_ingested.receivers
    jobs_ingested.receivers = []
    try:
        yield
    finally:
        jobs_ingested.receivers = receivers


@pytest.mark.django_db(transaction=True)
def test_redis_restarted_mid_ingest_loses_and_duplicates_nothing(private_redis, storage_dir, tmp_path):
    require_postgresql("holds the worker still with a transaction left open on another connection")
    archive = gated_archive(tmp_path / "big.zip")
    queue = f"test-redis-restart-{uuid.uuid4().hex[:8]}"
    database = _worker_database_url()

    running = ingest.create_run(archive)
    queued = ingest.create_run(EXAMPLE_ARCHIVE)

    # Storing takes about a second here; rather than race it, hold the worker at two known jobs of the import.
    (down_at, down_gate), (back_at, back_gate) = sorted(GATES.items())
    with worker_over(private_redis, storage_dir, queue) as (_, sender), contextlib.ExitStack() as gates:
        held_down = gates.enter_context(contextlib.closing(hold_team(database, down_gate)))
        held_back = gates.enter_context(contextlib.closing(hold_team(database, back_gate)))
        sender.send_task("fleet.ingest_archive", args=[running.pk], queue=queue)
        sender.send_task("fleet.ingest_archive", args=[queued.pk], queue=queue)  # waits: one solo worker
        wait_for(
            "the worker to be held part-way through the big import",
            lambda: gated_import(running),
            120,
            until=held_at(down_at),
        )
        assert private_redis.client().llen(queue) == 1  # the second task is queued
        private_redis.shutdown_nosave()
        now = gated_import(running)
        assert held_at(down_at)(now), f"the import must still be running when Redis goes: {now}"

        # Redis is down; the import carries on (it needs only the database) until the second gate.
        held_down.close()
        wait_for(
            "the import to carry on while Redis is down", lambda: gated_import(running), 60, until=held_at(back_at)
        )
        private_redis.start()
        now = gated_import(running)
        assert held_at(back_at)(now), f"the import must still be running when Redis comes back: {now}"
        assert private_redis.client().llen(queue) == 1  # restored from the AOF (the held worker takes nothing)
        held_back.close()

        wait_until_finished(running, "the big import to finish", 180)
        wait_until_finished(queued, "the queued import to run", 180)

    running.refresh_from_db()
    queued.refresh_from_db()
    assert running.status == IngestRun.Status.SUCCEEDED, running.errors
    assert queued.status == IngestRun.Status.SUCCEEDED, queued.errors
    assert running.attempts == 1  # not imported twice (a redelivery of a finished run does nothing)
    assert queued.attempts == 1
    assert Job.objects.filter(cluster__name="restart").count() == GATED_JOBS
    after_restart = snapshot()
    assert blobs_on_disk(storage_dir) == referenced_blobs()

    # The same two archives imported cleanly into an empty database and storage.
    Job.objects.all().delete()
    Team.objects.all().delete()
    for name in blobs_on_disk(storage_dir):
        default_storage.delete(name)
    with imported_as_the_worker_did():
        for path in (archive, EXAMPLE_ARCHIVE):
            assert ingest.execute_run(ingest.create_run(path).pk).status == IngestRun.Status.SUCCEEDED
    assert snapshot() == after_restart
    assert blobs_on_disk(storage_dir) == referenced_blobs()


def read_deliveries(broker) -> dict[str, int]:
    """The task delivery counters in Redis now, by key (`fleet.tasking.count_delivery`)."""
    counters = {key: broker.get(key) for key in broker.scan_iter("fleet-triage:deliveries:*")}
    return {key: int(value) for key, value in counters.items() if value is not None}


# Three triage tasks of the worker, one running and two queued: its RETRIAGE_BATCH setting (200 by default) is
# lowered so that a small fleet, quick to generate, import and triage, still spans several.
TRIAGE_BATCH = 15
TRIAGE_JOBS = 42  # 15 + 15 + 12
TRIAGE_QUEUE = "celery"  # where the import queues triage: the default queue (of the private server)
TRIAGE_VISIBILITY_S = 10  # longer than a triage task of TRIAGE_BATCH jobs takes here
END_JOBS = 40  # one triage task; the import is held at END_GATE when Redis goes
END_GATE = 20


def triage_snapshot() -> dict:
    """Every job's current result and its findings, by the job's natural key (no ids, no times)."""
    results = JobTriage.objects.filter(is_current=True).values_list(
        "job__external_id", "rule_set__version", "status", "reason", "mean_util", "coverage", "unused_gpu_hours",
        "evidence",
    )  # fmt: skip
    findings = Finding.objects.filter(result__is_current=True).values_list(
        "job__external_id", "category", "sub_cause", "confidence", "summary", "gpu_hours", "cost", "currency",
        "time_located", "evidence", "guidance",
    )  # fmt: skip
    return {"results": comparable(results), "findings": comparable(findings)}


def comparable(rows) -> list[tuple]:
    """The rows sorted, with their JSON fields as sorted JSON text so that rows compare and sort."""
    return sorted(
        tuple(json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v for v in row) for row in rows
    )


@pytest.mark.django_db(transaction=True)
def test_redis_restarted_mid_triage_loses_and_duplicates_nothing(private_redis, storage_dir, tmp_path):
    require_postgresql("holds the worker still with row locks taken from another connection, which SQLite has not")
    archive = tmp_path / "fleet.zip"
    generate_demo_fleet(archive, jobs=TRIAGE_JOBS, seed=11)  # every category, so there are findings to compare
    database = _worker_database_url()
    run = ingest.create_run(archive)
    triaged = JobTriage.objects.filter(is_current=True)
    broker = private_redis.client()

    # Triage takes seconds here; rather than race it, hold the worker still in the middle of a triage task.
    # Foreign keys are checked at COMMIT (Django makes them deferrable): a locked row they name holds the
    # worker at the commit of that job's result, after the results before it are committed.
    def held_at_commit(blocked: str) -> bool:
        return blocked == "COMMIT"

    # A delivery counter expires visibility timeout x (bound + 1) after its last count, 40 s with the default
    # bound of 3; the task held here can run longer than that on a loaded machine, and its redelivery then
    # counted 1 again (CI, 2026-12-07). A bound of 50 keeps every counter for the whole test (510 s); no task
    # here comes near it.
    worker = worker_over(
        private_redis,
        storage_dir,
        TRIAGE_QUEUE,
        TRIAGE_VISIBILITY_S,
        CELERY_MAX_DELIVERIES="50",
        RETRIAGE_BATCH=str(TRIAGE_BATCH),
    )
    with worker as (_, sender), contextlib.ExitStack() as locks:
        # 1. lock the rule set's row: every result names it, so the worker stops at its first result;
        rule_set = RuleSet.current()
        lock_sql = "SELECT id FROM {} WHERE id = %s FOR UPDATE"
        all_held = locks.enter_context(
            contextlib.closing(hold_lock(database, lock_sql.format("triage_ruleset"), rule_set.pk)[0])
        )
        # The import runs in the worker; its end queues the triage of its jobs there, as in production.
        sender.send_task("fleet.ingest_archive", args=[run.pk], queue=TRIAGE_QUEUE)
        wait_for("the worker to start triaging", blocked_query, 180, until=held_at_commit)
        assert IngestRun.objects.get(pk=run.pk).status == IngestRun.Status.SUCCEEDED  # so the commit is triage's
        assert not triaged.exists()
        assert broker.llen(TRIAGE_QUEUE) == 2  # the other two triage tasks wait
        # 2. lock a job half-way through the running task (its jobs in the order the worker takes them),
        #    and let the rule set go: the worker stores the results before that job, and waits for it.
        first_ids = sorted(Job.objects.values_list("pk", flat=True))[:TRIAGE_BATCH]
        first_task = list(Job.objects.filter(pk__in=first_ids))
        held = first_task[len(first_task) // 2]
        job_held = locks.enter_context(
            contextlib.closing(hold_lock(database, lock_sql.format("fleet_job"), held.pk)[0])
        )
        all_held.close()
        wait_for(
            "the held job",
            lambda: (triaged.count(), blocked_query()),
            60,
            until=lambda now: now == (len(first_task) // 2, "COMMIT"),
        )
        assert not triaged.filter(job=held).exists()

        # Each counter is read while it stands (before Redis goes without saving), and again at the end.
        deliveries = read_deliveries(broker)
        # Redis goes while the task runs; the task finishes while Redis is down (it needs only the database).
        private_redis.shutdown_nosave()
        job_held.close()
        wait_for("the running triage task to finish", triaged.count, 60, until=lambda count: count == len(first_task))
        # Then the worker stores the task's result and acknowledges it: Redis is down, so neither arrives. The worker
        # says it lost its connection, gives the task back (to no server: it stays in the append-only file's unacked
        # set) and tries to connect again. Redis comes back once that attempt has failed, not before: the
        # acknowledgement certainly never arrived.
        worker_saw = "the worker to find Redis gone after the task (consumer: Cannot connect to ...)"

        def reconnecting(log: list[str]) -> bool:
            return any("Cannot connect to" in line for line in log)

        wait_for(worker_saw, lambda: consumer_log(storage_dir, TRIAGE_QUEUE), 60, until=reconnecting)
        private_redis.start()
        broker = private_redis.client()
        assert broker.llen(TRIAGE_QUEUE) in (1, 2)  # the waiting tasks, from the append-only file (one may be taken)

        def where_triage_is():
            return {"triaged": triaged.count(), "queued": broker.llen(TRIAGE_QUEUE), "unacked": broker.hlen("unacked")}

        settled = {"triaged": TRIAGE_JOBS, "queued": 0, "unacked": 0}
        wait_for(
            "every job to be triaged and every triage task acknowledged", where_triage_is, 120, until=settled.__eq__
        )

    # The import and two triage tasks ran once. The task that was running ran twice: its acknowledgement
    # could not reach Redis, so it came back (after the visibility timeout) and triaged its jobs again.
    deliveries |= read_deliveries(broker)
    assert sorted(deliveries.values()) == [1, 1, 1, 2]
    # Every job has exactly one result, the current one: nothing lost, nothing stored twice.
    jobs = Job.objects.all()
    assert jobs.count() == TRIAGE_JOBS
    assert JobTriage.objects.count() == triaged.count() == triaged.values("job").distinct().count() == TRIAGE_JOBS
    assert not jobs.exclude(triage_results__is_current=True).exists()
    after_restart = triage_snapshot()
    assert after_restart["findings"]  # the fleet has planted causes: the comparison below is not vacuous

    # The same jobs triaged once, cleanly, in this process.
    JobTriage.objects.all().delete()
    services.triage_jobs(list(jobs.values_list("pk", flat=True)))
    assert triage_snapshot() == after_restart


@pytest.mark.django_db(transaction=True)
def test_redis_down_as_an_import_finishes_still_triages_its_jobs(private_redis, storage_dir, tmp_path):
    require_postgresql("holds the worker still with a transaction left open on another connection")
    archive = gated_archive(tmp_path / "busy.zip", END_JOBS, {END_GATE: "gate-end"}, "restart-end", "e")
    run = ingest.create_run(archive)
    triaged = JobTriage.objects.filter(is_current=True)
    # Rather than race the import, hold the worker part-way through it until Redis is down.
    with worker_over(private_redis, storage_dir, TRIAGE_QUEUE) as (_, sender), contextlib.ExitStack() as gates:
        gate = gates.enter_context(contextlib.closing(hold_team(_worker_database_url(), "gate-end")))
        sender.send_task("fleet.ingest_archive", args=[run.pk], queue=TRIAGE_QUEUE)
        wait_for(
            "the worker to be held part-way through the import", lambda: gated_import(run), 120, until=held_at(END_GATE)
        )
        private_redis.shutdown_nosave()
        now = gated_import(run)
        assert held_at(END_GATE)(now), f"the import must still be running when Redis goes: {now}"

        # Redis is down; the import carries on (it needs only the database) and finishes.
        gate.close()
        wait_until_finished(run, "the import to finish", 60)
        finished = IngestRun.objects.get(pk=run.pk)
        assert finished.status == IngestRun.Status.SUCCEEDED, finished.errors
        assert finished.jobs_done == END_JOBS
        assert private_redis.process.poll() is not None, "the import must finish while Redis is down"
        # Its end queues the triage of its jobs right after its commit, now, while Redis is down: the queuing
        # waits for Redis, retrying (QUEUE_RETRY_POLICY). Nothing shows that wait to poll for: let the first
        # attempt fail and a retry come due, then bring Redis back.
        time.sleep(services.QUEUE_RETRY_POLICY["interval_start"])
        assert not triaged.exists()
        private_redis.start()
        wait_for("every job to be triaged", triaged.count, 90, until=lambda count: count == END_JOBS)
    assert JobTriage.objects.count() == triaged.values("job").distinct().count() == Job.objects.count() == END_JOBS
