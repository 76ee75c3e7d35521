"""PostgreSQL restarted in the middle of an ingest, with a real worker on a PRIVATE PostgreSQL cluster.

The shared PostgreSQL (DATABASE_URL) is never restarted: this test `initdb`s a cluster of its own in a
temporary folder, on a free loopback port, migrates a database in it, and starts a real `celery worker`
whose DATABASE_URL points at it (its broker is a private redis-server, as in test_redis_restart.py).
While the worker is part-way through a big import — held by row locks in the middle of committing a
batch of jobs, with earlier batches stored — PostgreSQL is stopped (a fast shutdown, as in a restart:
every connection is cut; the batch rolls back after its blobs were written, unless the shutdown lets
it commit first), left down for a moment and started again.
The task must retry by itself and finish the run, the operator must be able to see that it was
interrupted, and the database must equal a clean import of the same archive: nothing lost, nothing
stored twice, no blob that no row names.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path

import dj_database_url
import psycopg
import pytest
from celery import Celery
from django.db import connections
from django.db.utils import load_backend

from fleet import ingest
from fleet.models import IngestRun, Job
from tests.conftest import REPO, blocked_query, free_port, hold_lock, worker_output, write_busy_archive
from tests.test_ingest_worker_kill import blobs_on_disk, referenced_blobs, snapshot
from tests.test_redis_restart import imported_as_the_worker_did
from tests.test_services import celery_worker
from tests.waiting import wait_for

pytestmark = pytest.mark.services

JOBS = 240
ALIAS = "private_postgres"  # how this test process reads the private cluster (`.using(ALIAS)`)
# Down until the attempt the stop cut and the first retry (after 1 s) have both found no server (it backs off again).
LOSSES_WHILE_DOWN = 2


def big_archive(path: Path) -> Path:
    return write_busy_archive(path, jobs=JOBS, cluster="pg-restart", prefix="p")


def missing(what: str):
    if os.environ.get("CI"):
        pytest.fail(f"{what} (the PostgreSQL restart test starts a private cluster; CI must provide it)")
    pytest.skip(what)


def _version(bin_dir: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in bin_dir.parent.name.split(".") if part.isdigit())


def postgres_bin_dir() -> Path:
    """The folder holding initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    candidates = [Path(found).resolve().parent for found in [shutil.which("pg_ctl")] if found]
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version, reverse=True)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    missing("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")


def as_postgres_user() -> list[str]:
    """PostgreSQL refuses to run as root: as root, run its binaries as the `postgres` OS user."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        missing("running as root without a `postgres` OS user to run a private PostgreSQL")
    runuser = shutil.which("runuser")
    if not runuser:
        missing("running as root without `runuser` to start PostgreSQL as the `postgres` user")
    return [runuser, "-u", "postgres", "--"]


class PrivatePostgres:
    """A throw-away cluster: trust auth, loopback only, no fsync (its data need not survive a crash)."""

    def __init__(self):
        self.bin = postgres_bin_dir()
        self.as_owner = as_postgres_user()
        # Not under pytest's tmp_path: the `postgres` user cannot enter root's pytest folders.
        self.folder = Path(tempfile.mkdtemp(prefix="fleet-pg-"))
        if self.as_owner:
            shutil.chown(self.folder, user="postgres")
        self.data = self.folder / "data"
        self.port = free_port()

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _pg(self, *args: str) -> None:
        try:
            subprocess.run(
                [*self.as_owner, *args], check=True, capture_output=True, text=True, timeout=60, cwd=self.folder
            )
        except subprocess.CalledProcessError as exc:
            log = self.folder / "postgres.log"
            tail = log.read_text()[-3000:] if log.exists() else ""
            pytest.fail(f"{' '.join(args[:1])} failed: {exc.stdout}{exc.stderr}\n{tail}")

    def init(self) -> None:
        self._pg(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust")
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.folder}'",
            "fsync": "off",
            "full_page_writes": "off",
            "synchronous_commit": "off",
        }
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    def start(self) -> None:
        # -w: return once the server accepts connections.
        self._pg(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "postgres.log"), "-w", "start")

    def stop(self) -> None:
        """A fast shutdown: every connection is cut and its transaction rolled back, as in a restart or failover."""
        self._pg(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def create_database(self, name: str) -> str:
        with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres") as conn:
            conn.autocommit = True
            conn.execute(f'CREATE DATABASE "{name}"')
        url = self.url(name)
        env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": os.environ.get("SECRET_KEY", "migrate-test-key")}
        migrate = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert migrate.returncode == 0, migrate.stdout + migrate.stderr
        return url

    def destroy(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(
                [*self.as_owner, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def private_postgres():
    server = PrivatePostgres()
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.destroy()


@contextmanager
def database_alias(alias: str, url: str):
    """Let this process use another database through the ORM, as `.using(alias)`, for a while.

    The connection is registered without a DATABASES entry: Django's test case allows such
    dynamically created connections, and leaves them alone when it tears down."""
    settings_dict = connections.configure_settings({"default": dj_database_url.parse(url)})["default"]
    connections[alias] = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, alias)
    try:
        yield alias
    finally:
        connections[alias].close()
        del connections[alias]


@pytest.mark.django_db
def test_postgres_restarted_mid_ingest_is_retried_and_duplicates_nothing(
    private_postgres, private_redis, storage_dir, tmp_path
):
    archive = big_archive(tmp_path / "big.zip")
    worker_storage = tmp_path / "worker-storage"
    worker_storage.mkdir()
    url = private_postgres.create_database("fleet")
    queue = f"test-pg-restart-{uuid.uuid4().hex[:8]}"
    # The worker's whole configuration comes from the environment, as in production; short backoff.
    env = {
        "DATABASE_URL": url,
        "REDIS_URL": private_redis.url,
        "INGEST_DB_RETRY_BACKOFF": "1",
        "INGEST_DB_RETRY_BACKOFF_MAX": "4",
    }
    # Not the current app: shared tasks in later tests must keep using the project's app and broker.
    sender = Celery("sender", broker=private_redis.url, backend=private_redis.url, set_as_current=False)

    with database_alias(ALIAS, url):
        run = IngestRun.objects.using(ALIAS).create(archive_path=str(archive), archive_name=archive.name)
        with celery_worker(queue, worker_storage, env=env) as worker:
            result = sender.send_task("fleet.ingest_archive", args=[run.pk], queue=queue)

            # Storing takes about a second here; rather than race it, hold the worker still at the worst
            # moment, in the middle of committing a batch of jobs, with earlier batches stored:
            # 1. once a first batch is stored, lock the run's row (NO KEY: jobs may still refer to it): the
            #    worker stops at its next progress write, inside the next batch's transaction (a batch's
            #    counters commit with its jobs, 5252397, so jobs_done above 0 is a batch stored);
            progress = IngestRun.objects.using(ALIAS).filter(pk=run.pk).values_list("jobs_done", flat=True)
            wait_for("the worker to store a first batch of jobs", progress.get, 120, until=lambda done: done > 0)
            run_lock, (jobs_done,) = hold_lock(
                url, "SELECT jobs_done FROM fleet_ingestrun WHERE id = %s FOR NO KEY UPDATE", run.pk
            )
            assert jobs_done <= JOBS - 50, "the import went too fast to be caught part-way"
            wait_for(
                "the worker to wait for the run's row",
                lambda: blocked_query(ALIAS),
                30,
                until=lambda blocked: "fleet_ingestrun" in blocked,
            )
            # 2. lock the teams' rows and let the run's go: the next batch cannot commit (the foreign keys
            #    to its teams are checked at commit), so the restart cuts that transaction.
            team_lock, _ = hold_lock(url, "SELECT id FROM fleet_team FOR UPDATE")
            run_lock.commit()
            wait_for("the worker to wait to commit a batch", lambda: blocked_query(ALIAS), 30, until="COMMIT".__eq__)
            stored = Job.objects.using(ALIAS).count()
            assert 0 < stored < JOBS

            connections[ALIAS].close()  # the restart kills every connection; a fresh one is opened after
            private_postgres.stop()
            run_lock.close()
            team_lock.close()
            wait_for(
                f"the worker to have lost its database {LOSSES_WHILE_DOWN} times (its log: lost its database)",
                lambda: worker_output(worker_storage, queue).count(f"Ingest run {run.pk} lost its database"),
                60,
                until=lambda losses: losses >= LOSSES_WHILE_DOWN,
            )
            private_postgres.start()

            # No manual step: the task retries by itself and returns once the run is finished.
            assert result.get(timeout=180) == {"run_id": run.pk, "status": IngestRun.Status.SUCCEEDED}
            assert worker.poll() is None, "the worker must survive the PostgreSQL restart"
        sender.close()

        run = IngestRun.objects.using(ALIAS).get(pk=run.pk)
        assert run.status == IngestRun.Status.SUCCEEDED, run.errors
        assert run.finished_at is not None and run.jobs_done == JOBS
        # The retry skipped what was committed before the restart (the cut batch too, when the shutdown
        # let it commit before cutting its connection) and stored the rest.
        assert run.jobs_unchanged >= stored and run.jobs_created == JOBS - run.jobs_unchanged > 0
        # What the operator sees on the run's page: a second attempt, and a note saying why.
        assert run.attempts == 2
        notes = [error["message"] for error in run.errors]
        assert len(notes) == 1 and "database connection was lost" in notes[0], notes
        assert "retried automatically" in notes[0]
        jobs = Job.objects.using(ALIAS)
        assert jobs.count() == jobs.values("external_id").distinct().count() == JOBS
        after_restart = snapshot(ALIAS)
        # The batch cut by the restart had written its blobs; the retry stored them under the same names.
        assert blobs_on_disk(worker_storage) == referenced_blobs(ALIAS)

    # The same archive imported once, cleanly, into the (empty) test database and storage.
    with imported_as_the_worker_did():  # the worker's import queued triage on the private Redis, untaken
        clean = ingest.execute_run(ingest.create_run(archive).pk)
    assert clean.status == IngestRun.Status.SUCCEEDED and clean.attempts == 1 and clean.errors == []
    assert snapshot() == after_restart
    assert blobs_on_disk(storage_dir) == blobs_on_disk(worker_storage)
