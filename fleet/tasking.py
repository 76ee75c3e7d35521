"""The base class for tasks that are safe to run twice.

Such tasks acknowledge their message only after they finish (`acks_late`), and a task whose
worker process dies is handed back to the queue (`reject_on_worker_lost`) instead of being lost.
That alone lets a task that always kills its worker (a poison message) loop forever, so each
delivery is counted in Redis and the task gives up after CELERY_MAX_DELIVERIES.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import kombu.exceptions
import redis
from celery.contrib.django.task import DjangoTask
from django.conf import settings

logger = logging.getLogger(__name__)

# Queuing a task raises these when Redis cannot be reached (stopped, restarting, a wrong REDIS_URL):
# kombu's wrapper of the connection errors after its publish retries, and redis-py's own.
QUEUE_UNREACHABLE = (kombu.exceptions.OperationalError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def queue_unreachable_message() -> str:
    """Where the queue is that could not be reached, as an operator would look for it (no password)."""
    url = urlsplit(settings.REDIS_URL or "")
    try:
        where = f"{url.hostname or 'localhost'}:{url.port or 6379}"
    except ValueError:  # a port that is no number: settings let it through, redis-py refuses it
        where = url.netloc.rpartition("@")[2]
    return f"The task queue (Redis at {where}, REDIS_URL) could not be reached"


class QueueUnreachable(Exception):
    """A task could not be queued: Redis is unreachable. Its text is the sentence for the page."""


def publish(task, args=(), *, not_done: str, then: str = "try again", **options):
    """Queue `task` from a page, a command or a button; raises QueueUnreachable, saying what was not
    done and what to do, instead of a server error when Redis cannot be reached. Nobody waits for the
    result: asking for one subscribed to the result store first, which with Redis down retried for 20 s."""
    try:
        return task.apply_async(tuple(args), ignore_result=True, **options)
    except QUEUE_UNREACHABLE as exc:
        logger.warning("Could not queue %s%r", task.name, tuple(args), exc_info=True)
        raise QueueUnreachable(
            f"{queue_unreachable_message()}, so {not_done}: check that Redis is running, then {then}."
        ) from exc


def tasks_run_here() -> bool:
    """Whether a task queued now runs at once in this process instead of on a worker: no REDIS_URL, the
    embedded mode (settings: CELERY_TASK_ALWAYS_EAGER). Pages say then what was done, not "queued"."""
    from celery import current_app

    return bool(current_app.conf.task_always_eager)


def count_delivery(task_id: str, retries: int) -> int:
    """Record one more delivery of this task attempt and return how many there have been."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    # A retry is a new attempt with the same id, so it gets its own counter.
    key = f"fleet-triage:deliveries:{task_id}:{retries}"
    with client.pipeline() as pipe:
        pipe.incr(key)
        pipe.expire(key, settings.CELERY_VISIBILITY_TIMEOUT * (settings.CELERY_MAX_DELIVERIES + 1))
        deliveries, _ = pipe.execute()
    return int(deliveries)


class IdempotentTask(DjangoTask):
    abstract = True
    acks_late = True
    reject_on_worker_lost = True

    def __call__(self, *args, **kwargs):
        if not self.request.is_eager and self.request.id and settings.REDIS_URL:
            deliveries = count_delivery(self.request.id, self.request.retries or 0)
            if deliveries > settings.CELERY_MAX_DELIVERIES:
                reason = (
                    f"gave up after {deliveries - 1} deliveries: the worker running this task died each time "
                    "(out of memory or killed?)"
                )
                logger.error("Task %s[%s] %s", self.name, self.request.id, reason)
                self.give_up(reason, *args, **kwargs)
                return None
        return super().__call__(*args, **kwargs)

    def give_up(self, reason: str, *args, **kwargs) -> None:
        """Called instead of running when the delivery bound is hit; record the failure where users see it."""
