"""The real services: PostgreSQL in CI, and tasks run by a real `celery worker` over the real Redis."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from contextlib import contextmanager

import pytest
import redis
from django.db import connection

from fleet import ingest
from fleet.models import IngestRun, Job
from tests.conftest import EXAMPLE_ARCHIVE, REPO, require_service
from tests.waiting import wait_for

pytestmark = pytest.mark.services


def test_database_is_postgresql_when_ci_says_so(db):
    if not os.environ.get("CI"):
        pytest.skip("outside CI any database will do")
    assert connection.vendor == "postgresql", "CI must run the suite on PostgreSQL (set DATABASE_URL)"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        assert int(cursor.fetchone()[0]) >= 130000


def test_redis_answers_when_configured():
    url = require_service("REDIS_URL")
    assert redis.Redis.from_url(url).ping()


def _worker_database_url() -> str:
    """The test database as a URL a separate process can open."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@contextmanager
def celery_worker(queue: str, storage_dir, *, pool: str = "solo", include: str = "", env: dict | None = None):
    env = {
        **os.environ,
        "DATABASE_URL": _worker_database_url(),
        "STORAGE_DIR": str(storage_dir),
        "SECRET_KEY": os.environ.get("SECRET_KEY", "worker-test-key"),
        **(env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--queues",
        queue,
        "--pool",
        pool,
        "--concurrency",
        "1",
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--hostname",
        f"test-{queue}@%h",
    ]
    if include:
        command += ["--include", include]
    log = open(storage_dir.parent / f"worker-{queue}-{uuid.uuid4().hex[:6]}.log", "w+")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.seek(0)
        print(log.read()[-5000:])  # shown by pytest when the test fails
        log.close()


@pytest.mark.django_db(transaction=True)
def test_ingest_task_runs_on_a_real_worker_over_redis(storage_dir):
    require_service("REDIS_URL")
    from config.celery import app
    from fleet.tasks import ingest_archive_task

    app.conf.task_always_eager = False
    queue = f"test-ingest-{uuid.uuid4().hex[:8]}"
    storage_dir.mkdir(parents=True, exist_ok=True)
    with celery_worker(queue, storage_dir) as worker:
        run = ingest.create_run(EXAMPLE_ARCHIVE)
        result = ingest_archive_task.apply_async(args=[run.pk], queue=queue)
        outcome = result.get(timeout=120)
        assert worker.poll() is None
    run.refresh_from_db()
    assert outcome == {"run_id": run.pk, "status": "succeeded"}
    assert run.status == IngestRun.Status.SUCCEEDED and run.attempts == 1
    assert Job.objects.count() == run.jobs_created > 0
    # The worker wrote the series through the same storage this process reads.
    job = Job.objects.exclude(series_file="").first()
    assert job.series_file.storage.exists(job.series_file.name)


@pytest.mark.django_db(transaction=True)
def test_a_task_that_always_kills_its_worker_is_redelivered_then_given_up(storage_dir, settings):
    url = require_service("REDIS_URL")
    from config.celery import app
    from tests.worker_tasks import CRASH_RUNS_KEY, GAVE_UP_KEY

    client = redis.Redis.from_url(url)
    client.delete(CRASH_RUNS_KEY, GAVE_UP_KEY)
    app.conf.task_always_eager = False
    queue = f"test-crash-{uuid.uuid4().hex[:8]}"
    storage_dir.mkdir(parents=True, exist_ok=True)
    with celery_worker(queue, storage_dir, pool="prefork", include="tests.worker_tasks"):
        app.send_task("tests.crash_worker", queue=queue)
        wait_for(
            "the task to be given up (runs, verdict)",
            lambda: (client.get(CRASH_RUNS_KEY), client.get(GAVE_UP_KEY)),
            120,
            until=lambda now: now[1],
            every=0.5,
        )
    # Each delivery up to the bound ran (and killed its process); the next one gave up instead.
    assert int(client.get(CRASH_RUNS_KEY)) == settings.CELERY_MAX_DELIVERIES
    assert b"gave up after" in client.get(GAVE_UP_KEY)
