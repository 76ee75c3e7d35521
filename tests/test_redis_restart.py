"""Redis restarted in the middle of an ingest, with a real worker on a PRIVATE redis-server.

The shared Redis (REDIS_URL, port 6379) is never touched: this test starts its own redis-server on
a free loopback port, configured as docs/operations.md tells operators to run Redis (append-only
file, fsync every second, `noeviction`), and a real `celery worker` whose REDIS_URL points at it.
While the worker is part-way through a big import and a second import waits in the queue, Redis
is stopped with SHUTDOWN NOSAVE (nothing but the append-only file survives) and started again.
The running import must finish, the queued one must survive the restart and run, and the database
must equal a clean import of both archives: nothing lost, nothing stored twice.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import redis
from celery import Celery
from django.core.files.storage import default_storage
from redis.backoff import NoBackoff
from redis.retry import Retry

from fleet import ingest
from fleet.models import IngestRun, Job, Team
from tests.conftest import EXAMPLE_ARCHIVE, write_busy_archive
from tests.test_ingest_worker_kill import blobs_on_disk, referenced_blobs, snapshot, wait_for
from tests.test_services import celery_worker

pytestmark = pytest.mark.services

# The settings docs/operations.md gives for a production Redis (and docker-compose.yml uses).
OPERATOR_REDIS_CONFIG = ["--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction"]


JOBS = 900  # several seconds of storing on one worker


def big_archive(path: Path) -> Path:
    return write_busy_archive(path, jobs=JOBS, cluster="restart", prefix="r")


def redis_server_binary() -> str:
    binary = shutil.which("redis-server")
    if not binary:
        if os.environ.get("CI"):
            pytest.fail("redis-server must be installed in CI (the Redis restart test starts a private one)")
        pytest.skip("redis-server is not installed")
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
        wait_for(lambda: self._answers(client), 20, "the private redis-server to answer")

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


@pytest.mark.django_db(transaction=True)
def test_redis_restarted_mid_ingest_loses_and_duplicates_nothing(private_redis, storage_dir, tmp_path):
    archive = big_archive(tmp_path / "big.zip")
    storage_dir.mkdir(parents=True, exist_ok=True)
    queue = f"test-redis-restart-{uuid.uuid4().hex[:8]}"
    # The worker's whole Celery configuration comes from REDIS_URL, as in production.
    env = {"REDIS_URL": private_redis.url, "CELERY_VISIBILITY_TIMEOUT": "20"}
    # Not the current app: shared tasks in later tests must keep using the project's app and broker.
    sender = Celery("sender", broker=private_redis.url, set_as_current=False)

    running = ingest.create_run(archive)
    queued = ingest.create_run(EXAMPLE_ARCHIVE)
    with celery_worker(queue, storage_dir, env=env) as worker:
        sender.send_task("fleet.ingest_archive", args=[running.pk], queue=queue)
        sender.send_task("fleet.ingest_archive", args=[queued.pk], queue=queue)  # waits: one solo worker

        def part_way():
            current = IngestRun.objects.get(pk=running.pk)
            return current.jobs_total and 20 <= current.jobs_done < current.jobs_total // 2

        wait_for(part_way, 120, "the worker to be part-way through the big import")
        assert redis.Redis.from_url(private_redis.url).llen(queue) == 1  # the second task is queued
        private_redis.shutdown_nosave()
        down = IngestRun.objects.get(pk=running.pk)
        assert down.status == IngestRun.Status.RUNNING
        time.sleep(2)  # Redis is down for a while; the import carries on (it needs only the database)
        private_redis.start()
        assert redis.Redis.from_url(private_redis.url).llen(queue) in (0, 1)  # restored from the AOF

        wait_for(lambda: IngestRun.objects.get(pk=running.pk).is_finished, 180, "the big import to finish")
        wait_for(lambda: IngestRun.objects.get(pk=queued.pk).is_finished, 180, "the queued import to run")
        time.sleep(1)
        assert worker.poll() is None, "the worker must survive the Redis restart"
    sender.close()

    running.refresh_from_db()
    queued.refresh_from_db()
    assert running.status == IngestRun.Status.SUCCEEDED, running.errors
    assert queued.status == IngestRun.Status.SUCCEEDED, queued.errors
    assert running.attempts == 1  # not imported twice (a redelivery of a finished run does nothing)
    assert queued.attempts == 1
    assert Job.objects.filter(cluster__name="restart").count() == JOBS
    after_restart = snapshot()
    assert blobs_on_disk(storage_dir) == referenced_blobs()

    # The same two archives imported cleanly into an empty database and storage.
    Job.objects.all().delete()
    Team.objects.all().delete()
    for name in blobs_on_disk(storage_dir):
        default_storage.delete(name)
    for path in (archive, EXAMPLE_ARCHIVE):
        assert ingest.execute_run(ingest.create_run(path).pk).status == IngestRun.Status.SUCCEEDED
    assert snapshot() == after_restart
    assert blobs_on_disk(storage_dir) == referenced_blobs()
