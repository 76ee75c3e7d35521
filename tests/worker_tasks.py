"""Tasks that exist only for tests; a test worker loads them with `--include tests.worker_tasks`."""

import os

import redis
from celery import shared_task
from django.conf import settings

from fleet.tasking import IdempotentTask

CRASH_RUNS_KEY = "fleet-triage-test:crash-runs"
GAVE_UP_KEY = "fleet-triage-test:gave-up"


class CrashingTask(IdempotentTask):
    def give_up(self, reason: str, *args, **kwargs) -> None:
        redis.Redis.from_url(settings.REDIS_URL).set(GAVE_UP_KEY, reason)


@shared_task(name="tests.crash_worker", base=CrashingTask)
def crash_worker() -> None:
    """Kill the worker process, as an out-of-memory kill would."""
    redis.Redis.from_url(settings.REDIS_URL).incr(CRASH_RUNS_KEY)
    os._exit(1)
