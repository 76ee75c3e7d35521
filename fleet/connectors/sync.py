"""The pull service: one run of one connector. Tasks, the command and the UI all call `sync_connector`.

Guarantees (issue 6, point 7):
- singleton: a lease on the connector row taken with a conditional UPDATE (works on SQLite and
  PostgreSQL alike), so two workers never pull the same source at once; a worker that dies leaves
  a lease that simply expires;
- no gaps: the watermark is saved only after every job of a batch is stored, and only while the
  lease is still ours; a crash or an error part-way leaves it at the last stored batch, so the
  next run starts there and the upsert turns what it sees again into "unchanged";
- no duplicates: jobs go through `fleet.ingest.store_job`, the idempotent upsert on
  (cluster, external_id) that archive imports use too;
- transient failures (after the HTTP client's retries) end the run as failed with the watermark
  where it was; bad data is recorded on the run and skipped, not retried.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import ProtectedError, Q
from django.utils import timezone
from django.utils.text import slugify

from fleet import audit, ingest, lifecycle
from fleet.canonical import RecordError
from fleet.connectors.base import (
    BadData,
    BaseConnector,
    ConfigError,
    ConnectorError,
    SomeBadData,
    parse_time_watermark,
)
from fleet.connectors.http import HttpClient
from fleet.connectors.models import Connector, ConnectorDeletion
from fleet.connectors.registry import connector_class
from fleet.models import Cluster, IngestRun, Job, Team
from fleet.quoting import library_error
from fleet.signals import jobs_ingested

logger = logging.getLogger(__name__)
MAX_RUN_ERRORS = 1000


@dataclass
class SyncResult:
    connector: str
    status: str  # succeeded | partial | failed | locked | dry-run | not-due (a scheduled turn, see sync_connector)
    run_id: int | None = None
    jobs_seen: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    watermark: str = ""
    errors: list[dict] = field(default_factory=list)
    message: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def http_options(*, interactive: bool = False) -> dict:
    """HTTP policy from settings (tests shorten the backoff). `interactive`: for a person waiting on
    the answer (Check connection), one try and no backoff: the default five retries with doubling
    backoff kept them half a minute to learn that a port refused the connection."""
    return {
        "timeout_s": min(settings.CONNECTOR_HTTP_TIMEOUT, CHECK_TIMEOUT_S)
        if interactive
        else settings.CONNECTOR_HTTP_TIMEOUT,
        "retries": 0 if interactive else settings.CONNECTOR_HTTP_RETRIES,
        "backoff_s": settings.CONNECTOR_HTTP_BACKOFF,
        "backoff_max_s": settings.CONNECTOR_HTTP_BACKOFF_MAX,
        "retry_after_max_s": settings.CONNECTOR_RETRY_AFTER_MAX,
    }


CHECK_TIMEOUT_S = 10.0  # the longest a connection check waits for each answer


def build(connector: Connector, *, interactive: bool = False) -> BaseConnector:
    """The connector object for a configured row, with its metrics source when it has one."""
    options = http_options(interactive=interactive)
    metrics = None
    if connector.metrics_from_id and connector.metrics_from_id != connector.pk:
        source = connector.metrics_from
        metrics_settings = source.to_settings(**options)
        metrics = connector_class(source.kind)(metrics_settings, HttpClient(metrics_settings))
    conn_settings = connector.to_settings(**options)
    return connector_class(connector.kind)(conn_settings, HttpClient(conn_settings), metrics=metrics)


# -- the lease ------------------------------------------------------------------------------------
def take_lease(rows, token: str, *, seconds: float, now: datetime | None = None, holder_field: str = "lock_token"):
    """Take the lease of the row `rows` selects (its `locked_until` and token) for `seconds` if it is free
    or expired: a conditional UPDATE. A connector's (its pulls and deletion) and a deletion's of another kind."""
    now = now or timezone.now()
    taken = rows.filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now)).update(
        locked_until=now + timedelta(seconds=seconds), **{holder_field: token}
    )
    return taken == 1


def hold_lease(rows, token: str, *, seconds: float, holder_field: str = "lock_token") -> bool:
    """Renew a lease held with `token`, or take it again if it ran out and is free."""
    until = timezone.now() + timedelta(seconds=seconds)
    if rows.filter(**{holder_field: token}).update(locked_until=until):
        return True
    return take_lease(rows, token, seconds=seconds, holder_field=holder_field)


def acquire(connector_id: int, token: str, *, now: datetime | None = None, seconds: float | None = None) -> bool:
    """Take the connector's lease for CONNECTOR_LOCK_SECONDS (or `seconds`) if it is free or expired."""
    seconds = settings.CONNECTOR_LOCK_SECONDS if seconds is None else seconds
    return take_lease(Connector.objects.filter(pk=connector_id), token, now=now, seconds=seconds)


def release(connector_id: int, token: str) -> None:
    Connector.objects.filter(pk=connector_id, lock_token=token).update(locked_until=None, lock_token="")


def jobs_of(connector: Connector):
    """The jobs a pull of this connector stored last (a job stored again by an archive counts there)."""
    return Job.objects.filter(ingest_run__connector=connector)


@dataclass
class DeletionPlan:
    """What deleting a connector does, shown before it is done: the jobs its pulls stored last (all
    kept, unless the operator asks to delete them too), those of them a labeling study or gold set
    keeps whatever is asked, and the clusters deleting the jobs would leave with none. Such a cluster
    goes with them, unless it has GPU prices (settings someone entered): then it stays, named."""

    runs: int
    jobs: int
    kept: int  # in a labeling study or a gold set: never deleted here
    clusters: list[str]  # left with no job once its jobs are deleted: deleted too
    priced: list[str]  # left with no job but priced: they stay
    kept_ids: set[int] = field(default_factory=set, repr=False)

    @property
    def deletable(self) -> int:
        return self.jobs - self.kept


def deletion_plan(connector: Connector) -> DeletionPlan:
    jobs = jobs_of(connector)
    kept = lifecycle.kept_job_ids(jobs)
    deletable = jobs.exclude(pk__in=kept).values("pk")
    emptied, priced = [], []
    for cluster in Cluster.objects.filter(jobs__in=deletable).distinct().order_by("name"):
        if cluster.jobs.exclude(pk__in=deletable).exists():
            continue
        (priced if cluster.prices.exists() else emptied).append(cluster.name)
    return DeletionPlan(connector.runs.count(), jobs.count(), len(kept), emptied, priced, kept)


# A delete's lease: long enough for the longest web request (gunicorn's --timeout 120) and for one batch
# of a deletion's task (which renews it after each), short enough that a process killed in the middle
# holds the connector's pulls off for minutes, not for CONNECTOR_LOCK_SECONDS (two hours).
DELETE_LEASE_SECONDS = 10 * 60


def delete_connector(connector: Connector, user) -> str:
    """Delete a connector, audited, keeping the jobs it imported (`start_deletion` deletes them too, in
    the background). Its pulls' ingest runs stay (IngestRun.connector is SET_NULL), and so do the jobs
    they stored (they hang off their run and cluster). "" when deleted, else why not: a pull of it is
    running (its lease is held while the row goes, so none can start), it is being deleted already, or
    other connectors take their series from it (metrics_from is PROTECT)."""
    token = f"{uuid.uuid4().hex}{DELETING}"  # Pull now meanwhile says it is being deleted, not pulled
    if not acquire(connector.pk, token, seconds=DELETE_LEASE_SECONDS):
        held = Connector.objects.filter(pk=connector.pk).first()
        if held is None or being_deleted(held):
            return f"{connector.name} is already being deleted."
        return f"A pull of {connector.name} is running; delete it once the pull has ended."
    deleted = False
    try:
        plan = deletion_plan(connector)
        details = {"kind": connector.kind, "url": connector.url, "cluster": connector.cluster,
                   "runs": plan.runs, "jobs": plan.jobs, "jobs_deleted": 0, "clusters_deleted": []}  # fmt: skip
        with transaction.atomic():
            # The row stays locked to the end (PostgreSQL; SQLite locks the whole database): should the
            # lease run out first, a pull taking it waits, then finds the connector gone.
            Connector.objects.select_for_update().filter(pk=connector.pk).first()
            audit.record(user, "connector.delete", connector, details)
            connector.delete()
        deleted = True
    except ProtectedError:  # a connector began to take its series from it since the page was shown
        served = ", ".join(connector.served.order_by("name").values_list("name", flat=True))
        return f"{connector.name} serves the series of {served}; point them elsewhere first."
    finally:
        if not deleted:  # refused or failed (the database): its pulls may go on at once
            release(connector.pk, token)
    return ""


# -- deleting a connector with its jobs, in the background ----------------------------------------
# Tens of thousands of jobs with their files outlast a web request: gunicorn's --timeout killed the
# process and the deletion rolled back, however long it had run. So the page starts a deletion (a
# ConnectorDeletion row, the connector's lease taken as a delete's) and a task does it, a batch of
# JOB_DELETE_BATCH jobs to a transaction, each batch's files deleted once it has committed; the
# connector itself, with the clusters left empty, goes in a last transaction, audited. Without
# REDIS_URL the task runs in the request, as every task does (fleet.tasking).


class DeletionWaits(Exception):
    """A pull holds the connector's lease: the deletion waited for a worker longer than its lease, and
    the scheduler's pull took the connector meanwhile. The task looks again later."""


def start_deletion(connector: Connector, user) -> tuple[ConnectorDeletion | None, str]:
    """Delete the connector with the jobs it imported (`with_jobs`), by the task `fleet.delete_connector`.
    Returns the deletion (finished already when the task ran in this process) and "", or None and why
    not: a pull of it is running, it is being deleted already, or the task queue cannot be reached."""
    from fleet.connectors.tasks import delete_connector_task
    from fleet.tasking import QueueUnreachable, publish

    token = f"{uuid.uuid4().hex}{DELETING}"  # Pull now meanwhile says it is being deleted, not pulled
    if not acquire(connector.pk, token, seconds=DELETE_LEASE_SECONDS):
        held = Connector.objects.filter(pk=connector.pk).first()
        if held is None or being_deleted(held):
            return None, f"{connector.name} is already being deleted."
        return None, f"A pull of {connector.name} is running; delete it once the pull has ended."
    # The lease was free, so no deletion of it is running: one still unfinished lost its task (or waits
    # for a worker longer than its lease). This one replaces it; should the old task come, it does nothing.
    for stale in connector.deletions.exclude(status__in=FINISHED_DELETIONS):
        fail_deletion(stale.pk, lost_task_reason(stale), counted=False)
    plan = deletion_plan(connector)
    deletion = ConnectorDeletion.objects.create(
        connector=connector,
        name=connector.name,
        requested_by=user if user is not None and user.is_authenticated else None,
        lease_token=token,
        jobs_total=plan.deletable,
        kept=plan.kept,
        clusters=plan.clusters,
        priced=plan.priced,
    )
    try:
        publish(
            delete_connector_task, (deletion.pk,), kwargs={"lease": token}, not_done=f"{connector.name} was not deleted"
        )
    except QueueUnreachable as unreachable:
        fail_deletion(deletion.pk, str(unreachable), counted=False)
        return None, str(unreachable)
    except Exception as exc:  # run in this process (no REDIS_URL), and failed
        logger.exception("Deleting connector %s failed", connector.name)
        fail_deletion(deletion.pk, stopped_reason(exc))
    deletion.refresh_from_db()
    return deletion, ""


def lost_task_reason(stale: ConnectorDeletion) -> str:
    """Why an unfinished deletion whose lease ran out ends, when a new one of the same is asked for."""
    return (
        f"Its task stopped or never came (lost, or no worker was free) after {stale.jobs_deleted:,} jobs were "
        "deleted, and the deletion was asked for again: the new one deletes the rest"
    )


def _hold_for_deletion(connector_id: int, token: str) -> bool:
    """Renew the deletion's lease on the connector, or take it again if it ran out and is free."""
    return hold_lease(Connector.objects.filter(pk=connector_id), token, seconds=DELETE_LEASE_SECONDS)


def run_deletion(deletion_id: int, lease: str | None = None) -> ConnectorDeletion | None:
    """Do a deletion `start_deletion` recorded. Idempotent: each batch of jobs is deleted whole with its
    count, so a redelivery after a worker died goes on from the last batch that committed; a finished
    deletion is left alone. None when its row is gone. `lease`: the lease token this copy of the task was
    queued with (by the page, or by `resume_deletions`); when a sweep has queued it again since, with a
    new token, this copy does nothing."""
    deletion = ConnectorDeletion.objects.filter(pk=deletion_id).first()
    if deletion is None or deletion.is_finished:
        return deletion
    if lease is not None and lease != deletion.lease_token:
        logger.info("Deletion %s was queued again since this copy of its task: it does nothing", deletion.pk)
        return deletion
    if deletion.kind != ConnectorDeletion.Kind.CONNECTOR:  # a team's, an ingest run's, chosen jobs'
        return lifecycle.run_deletion(deletion.pk)
    connector = Connector.objects.filter(pk=deletion.connector_id).first() if deletion.connector_id else None
    if connector is None:  # deleted meanwhile by other means (the admin): what was not deleted here stays
        fail_deletion(deletion.pk, f"The connector {deletion.name} was deleted meanwhile by other means.")
        return ConnectorDeletion.objects.get(pk=deletion.pk)
    if not _hold_for_deletion(connector.pk, deletion.lease_token):
        raise DeletionWaits(connector.name)
    ConnectorDeletion.objects.filter(pk=deletion.pk, status=ConnectorDeletion.Status.PENDING).update(
        status=ConnectorDeletion.Status.RUNNING, started_at=timezone.now()
    )
    # Counted again: a pull may have stored more of its jobs since the page, or a study taken some.
    plan = deletion_plan(connector)
    deletion.refresh_from_db()
    ConnectorDeletion.objects.filter(pk=deletion.pk).update(
        jobs_total=deletion.jobs_deleted + plan.deletable,
        kept=plan.kept,
        clusters=sorted(set(deletion.clusters) | set(plan.clusters)),
        priced=sorted(set(deletion.priced) | set(plan.priced)),
    )

    def hold() -> None:
        if not _hold_for_deletion(connector.pk, deletion.lease_token):
            raise DeletionWaits(connector.name)

    try:
        lifecycle.delete_in_batches(deletion.pk, jobs_of(connector), plan.kept_ids, before_batch=hold)
    except lifecycle.DeletionEnded:  # ended meanwhile (asked for again once its lease ran out): the new one goes on
        return ConnectorDeletion.objects.get(pk=deletion.pk)
    return _finish_deletion(deletion.pk, connector)


def _finish_deletion(deletion_id: int, connector: Connector) -> ConnectorDeletion:
    """The last step: the clusters left with no job and no prices, and the connector, audited."""
    deletion = ConnectorDeletion.objects.select_related("requested_by").get(pk=deletion_id)
    try:
        with transaction.atomic():
            Connector.objects.select_for_update().filter(pk=connector.pk).first()
            emptied = Cluster.objects.filter(name__in=deletion.clusters, jobs__isnull=True, prices__isnull=True)
            clusters_deleted = sorted(set(emptied.values_list("name", flat=True)))
            Cluster.objects.filter(name__in=clusters_deleted).delete()
            details = {"kind": connector.kind, "url": connector.url, "cluster": connector.cluster,
                       "runs": connector.runs.count(), "jobs": deletion.jobs_deleted + jobs_of(connector).count(),
                       "jobs_deleted": deletion.jobs_deleted, "clusters_deleted": clusters_deleted}  # fmt: skip
            audit.record(deletion.requested_by, "connector.delete", connector, details)
            connector.delete()
            ConnectorDeletion.objects.filter(pk=deletion_id).update(
                status=ConnectorDeletion.Status.SUCCEEDED,
                finished_at=timezone.now(),
                clusters_deleted=clusters_deleted,
                jobs_total=deletion.jobs_deleted,
            )
    except ProtectedError:  # a connector began to take its series from it meanwhile
        served = ", ".join(connector.served.order_by("name").values_list("name", flat=True))
        fail_deletion(
            deletion_id, f"{connector.name} serves the series of {served}: point them elsewhere, then delete it again."
        )
    return ConnectorDeletion.objects.get(pk=deletion_id)


def stopped_reason(exc: BaseException) -> str:
    return f"The deletion stopped: {type(exc).__name__}: {library_error(exc)}"[:500]


def fail_deletion(deletion_id: int, reason: str, *, counted: bool = True) -> None:
    """End a deletion as failed, saying why and what stays, and free the connector for its pulls."""
    deletion = ConnectorDeletion.objects.filter(pk=deletion_id).first()
    if deletion is None or deletion.is_finished:
        return
    message = reason.rstrip(".") + "."
    if counted and deletion.kind == ConnectorDeletion.Kind.JOBS:
        message += (
            f" {deletion.jobs_deleted:,} of the {deletion.jobs_total:,} jobs were deleted before it stopped; "
            "the rest stay: choose them again to finish."
        )
    elif counted:
        message += (
            f" {deletion.jobs_deleted:,} of its {deletion.jobs_total:,} jobs were deleted before it stopped; "
            f"the {deletion.get_kind_display()} and the rest of its jobs stay: delete it again to finish."
        )
    ConnectorDeletion.objects.filter(pk=deletion_id).update(
        status=ConnectorDeletion.Status.FAILED, finished_at=timezone.now(), message=message[:2000]
    )
    if deletion.connector_id and deletion.lease_token:
        release(deletion.connector_id, deletion.lease_token)


FINISHED_DELETIONS = (ConnectorDeletion.Status.SUCCEEDED, ConnectorDeletion.Status.FAILED)


def deletion_under_way(connector: Connector) -> ConnectorDeletion | None:
    """The deletion of this connector that has not finished yet, if one was started."""
    return connector.deletions.exclude(status__in=FINISHED_DELETIONS).first()


# -- deletions whose task was lost ----------------------------------------------------------------
# A deletion's task renews its lease before each batch: a team's, an ingest run's or chosen jobs' on the
# deletion's own row, a connector's on the connector (as a delete). An unfinished deletion whose lease
# has run out has no task deleting it: the task was lost (the broker flushed, a worker that died after
# acknowledging it, Redis restarted without persistence) or is still waiting for a worker. Beat's sweep
# (`fleet.resume_deletions`) takes that lease again with a new token, a conditional UPDATE, so two
# sweeps, or a sweep and a request asking for the same deletion, never both get it; then it queues the
# task again with that token. The task goes on from the last batch that committed; an older copy of it
# (the message was only slow) finds the token replaced and does nothing, or, already running, stops
# at its next batch. A deletion whose lease holds is being deleted, or its copy waits: left alone.


def _claim_lease(deletion: ConnectorDeletion, now: datetime) -> str | None:
    """Take the run-out lease of an unfinished deletion with a new token; the token, or None if it holds."""
    unfinished = ConnectorDeletion.objects.filter(pk=deletion.pk).exclude(status__in=FINISHED_DELETIONS)
    if deletion.kind != ConnectorDeletion.Kind.CONNECTOR or deletion.connector_id is None:
        token = uuid.uuid4().hex  # a connector gone meanwhile: its task ends the deletion, saying so
        taken = take_lease(unfinished, token, seconds=DELETE_LEASE_SECONDS, now=now, holder_field="lease_token")
        return token if taken else None
    token = f"{uuid.uuid4().hex}{DELETING}"  # Pull now meanwhile says it is being deleted, not pulled
    with transaction.atomic():  # the connector's lease and the deletion's token change together
        connector = Connector.objects.filter(pk=deletion.connector_id)
        if not take_lease(connector, token, seconds=DELETE_LEASE_SECONDS, now=now):
            return None
        if not unfinished.filter(lease_token=deletion.lease_token).update(lease_token=token):
            transaction.set_rollback(True)  # it finished, or was asked for again, since it was read
            return None
    return token


def _let_lease_run_out(deletion: ConnectorDeletion, token: str, now: datetime) -> None:
    """The task could not be queued: the lease the sweep took runs out again, so the next sweep tries."""
    rows = ConnectorDeletion.objects.filter(pk=deletion.pk, lease_token=token)
    if deletion.kind == ConnectorDeletion.Kind.CONNECTOR and deletion.connector_id is not None:
        rows = Connector.objects.filter(pk=deletion.connector_id, lock_token=token)
    rows.update(locked_until=now)


def resume_deletions(older_than: timedelta, limit: int = 100) -> dict[str, int]:
    """Beat's sweep: queue again the task of each unfinished deletion asked for more than `older_than`
    ago whose lease has run out (no task is deleting it), oldest first, at most `limit`. Returns how
    many were queued (in-process, without REDIS_URL: done), were taken meanwhile (`busy`), could not be
    queued (`unreachable`: their lease runs out again, the next sweep tries) or failed in-process."""
    from collections import Counter

    from fleet import tasking
    from fleet.connectors.tasks import delete_connector_task, delete_jobs_task

    now = timezone.now()
    connector = Q(kind=ConnectorDeletion.Kind.CONNECTOR, connector__isnull=False)
    own_lease_ran_out = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    connector_lease_ran_out = Q(connector__locked_until__isnull=True) | Q(connector__locked_until__lt=now)
    stale = (
        ConnectorDeletion.objects.exclude(status__in=FINISHED_DELETIONS)
        .filter(created_at__lt=now - older_than)
        .filter((connector & connector_lease_ran_out) | (~connector & own_lease_ran_out))
        .order_by("created_at", "pk")[:limit]
    )
    tally: Counter = Counter()
    for deletion in stale:
        token = _claim_lease(deletion, now)
        if token is None:
            tally["busy"] += 1
            continue
        task = delete_connector_task if deletion.kind == ConnectorDeletion.Kind.CONNECTOR else delete_jobs_task
        what = deletion.target_display
        try:
            tasking.publish(task, (deletion.pk,), kwargs={"lease": token}, not_done=f"{what} was not deleted")
        except tasking.QueueUnreachable as unreachable:
            _let_lease_run_out(deletion, token, now)
            logger.warning("Deletion %s of %s lost its task and could not be queued again: %s", deletion.pk,
                           what, unreachable)  # fmt: skip
            tally["unreachable"] += 1
            continue
        except Exception as exc:  # run in this process (no REDIS_URL), and failed
            logger.exception("Deleting %s failed", what)
            fail_deletion(deletion.pk, stopped_reason(exc))
            tally["failed"] += 1
            continue
        logger.warning("Deletion %s of %s had lost its task (%s, %s jobs deleted): queued again", deletion.pk,
                       what, deletion.status, deletion.jobs_deleted)  # fmt: skip
        tally["queued"] += 1
    return dict(tally)


# -- the pull -------------------------------------------------------------------------------------
def sync_connector(
    connector_id: int, since: str | None = None, dry_run: bool = False, *, scheduled: bool = False
) -> SyncResult | None:
    """Pull one connector from its watermark (or `since`) up to now. None when the row is gone.

    `scheduled`: a turn beat's scheduler queued, done only if the connector is still due once its lease
    is taken. Ticks queued while no worker ran (a restart, an outage) each queued a pull of every due
    connector, and the copies pulled it again one after the other, one ingest run each; a connector
    pulled (or disabled) since its turn was queued is now left alone. Pull now always pulls."""
    connector = Connector.objects.select_related("metrics_from").filter(pk=connector_id).first()
    if connector is None:
        logger.warning("Connector %s vanished before it could be pulled", connector_id)
        return None
    if scheduled and not connector.is_due():
        return _not_due(connector)
    if connector.metrics_only and not dry_run:
        return probe_metrics_source(connector)
    token = uuid.uuid4().hex
    if not dry_run and not acquire(connector.pk, token):
        now = Connector.objects.filter(pk=connector.pk).first()
        deleting = now is None or being_deleted(now)
        holder = "it is being deleted" if deleting else "another pull of it is running"
        return SyncResult(connector=connector.name, status="locked", message=holder)
    if not dry_run:
        # Read again under the lease: a pull that held it a moment ago moved the watermark (starting from
        # the one read before would store its jobs again as unchanged), and may have been this turn's.
        connector.refresh_from_db(fields=["enabled", "interval_minutes", "last_run_at", "watermark"])
        if scheduled and not connector.is_due():
            release(connector.pk, token)
            return _not_due(connector)
    pull = _Pull(connector, token, since=since, dry_run=dry_run)
    try:
        return pull.execute()
    finally:
        if not dry_run:
            try:
                release(connector.pk, pull.token)  # the lease's token names the pull's run once it has one
            except DatabaseError:  # the database is gone: the pull's own error says more; beat frees it later
                logger.warning("The lease of connector %s could not be released", connector.name, exc_info=True)


def _not_due(connector: Connector) -> SyncResult:
    why = "disabled" if not connector.enabled else f"pulled at {connector.last_run_at:%Y-%m-%d %H:%M:%S} UTC"
    logger.info("Scheduled pull of %s skipped: %s since its turn was queued", connector.name, why)
    return SyncResult(connector=connector.name, status="not-due", message=f"{why} since its turn was queued")


def probe_metrics_source(connector: Connector) -> SyncResult:
    """A metrics source's turn on the schedule (or Pull now): check that it answers, for its health,
    and store nothing. It lists no jobs, so a pull made an empty ingest run every interval; its series
    are read by the pulls of the connectors it serves."""
    started = timezone.now()
    try:
        source = build(connector)
        try:
            source.check()
        finally:
            source.http.close()
    except ConnectorError as exc:
        logger.warning("Metrics source %s did not answer: %s: %s", connector.name, type(exc).__name__, exc)
        failure = str(exc)
        Connector.objects.filter(pk=connector.pk).update(
            last_run_at=started,
            last_error=failure[:5000],
            last_error_at=timezone.now(),
            consecutive_failures=_plus_one(),
        )
        return SyncResult(connector=connector.name, status="failed", message=failure)
    Connector.objects.filter(pk=connector.pk).update(
        last_run_at=started, last_success_at=timezone.now(), consecutive_failures=0, last_error=""
    )
    return SyncResult(connector=connector.name, status="succeeded", message="answers; metrics source, nothing stored")


class _Pull:
    def __init__(self, connector: Connector, token: str, *, since: str | None, dry_run: bool):
        self.connector = connector
        self.token = token
        self.since = since
        self.dry_run = dry_run
        self.result = SyncResult(connector=connector.name, status="running", watermark=connector.watermark)
        self.errors: list[RecordError] = []
        self.changed: list[int] = []
        self.seen: set[tuple[str, str]] = set()
        self.teams: dict[str, Team] = {}
        self.clusters: dict[str, Cluster] = {}
        self.ingest_run: IngestRun | None = None

    def execute(self) -> SyncResult:
        started = timezone.now()
        if self.dry_run:
            return self._run(started)
        self.ingest_run = ingest.create_run(
            f"connector:{self.connector.name}",
            name=f"{self.connector.name} pull",
            source=IngestRun.Source.CONNECTOR,
        )
        self.result.run_id = self.ingest_run.pk
        # The lease says which run it is for, and (on PostgreSQL) the run's lock is held while it is
        # running: `fail_stopped_pulls` tells a pull whose worker died from one that is going on.
        tagged = lease_token(self.token, self.ingest_run.pk)
        if Connector.objects.filter(pk=self.connector.pk, lock_token=self.token).update(lock_token=tagged):
            self.token = tagged
        with ingest.exclusive_run(self.ingest_run.pk):
            self.ingest_run.connector = self.connector
            self.ingest_run.status = IngestRun.Status.RUNNING
            self.ingest_run.started_at = started
            self.ingest_run.attempts = 1
            self.ingest_run.phase = "pulling"
            self.ingest_run.save()
            return self._run(started)

    def _run(self, started: datetime) -> SyncResult:
        try:
            source = build(self.connector)
            try:
                self._pull(source, started)
            finally:
                source.http.close()
                if source.metrics is not None:
                    source.metrics.http.close()
        except ConnectorError as exc:
            # The pages show the sentence alone (it names the host and what to check); the kind of
            # failure (TransientError, HttpStatusError, BadData, ConfigError) is for whoever reads the log.
            logger.warning("Pull of connector %s failed: %s: %s", self.connector.name, type(exc).__name__, exc)
            return self._finish(started, failure=str(exc))
        except Exception as exc:
            # Anything else (the soft time limit, the database, a bug) ends the run as failed too, saying
            # so, instead of leaving it running; the error goes on to the task's log.
            if not self.dry_run:
                self._finish_anyway(started, self._stopped(exc))
            raise
        return self._finish(started)

    def _finish_anyway(self, started: datetime, failure: str) -> None:
        """End the run failed, on a new database connection if its own was cut (PostgreSQL restarted
        or failed over, a pooler or the network): the run stayed *running*, and the connector's lease
        held, until beat's next tick, which then said that the worker had stopped. Logged when the
        database cannot be reached at all; beat's tick ends the run once it can."""
        kept = len(self.errors)
        for attempt in (1, 2):
            try:
                self._finish(started, failure=failure)
                return
            except DatabaseError:
                del self.errors[kept:]
                if attempt == 2 or connection.in_atomic_block:  # a caller's transaction: not ours to end
                    logger.warning("Pull run %s could not be marked failed", self.ingest_run.pk, exc_info=True)
                    return
                connection.close()  # the next query opens a new one

    def _stopped(self, exc: Exception) -> str:
        """Why a pull stopped on an error that is not the platform's: the task's time limit in words
        (it read "SoftTimeLimitExceeded: SoftTimeLimitExceeded()"), else the error as it is."""
        from celery.exceptions import SoftTimeLimitExceeded

        if isinstance(exc, SoftTimeLimitExceeded):
            limit = settings.CELERY_TASK_TIME_LIMIT
            where = f" ({self.result.watermark})" if self.result.watermark else ""
            return (
                f"the pull stopped at the task time limit (CELERY_TASK_TIME_LIMIT={limit} s); the jobs it stored "
                f"are kept and the next pull goes on from the watermark{where}. A first pull that reaches far back "
                "(initial_days) may take several: pull again, or raise the limit."
            )
        return f"the pull stopped: {type(exc).__name__}: {library_error(exc)}"[:500]

    def _pull(self, source: BaseConnector, now: datetime) -> None:
        watermark = self.since if self.since is not None else self.connector.watermark
        time_based = source.watermark_time("2000-01-01T00:00:00+00:00") is not None
        if self.since and time_based and parse_time_watermark(self.since) is None:
            raise ConfigError(f"since {self.since!r} is not an ISO 8601 time")
        for batch in source.list_jobs(watermark, now):
            self.errors.extend(batch.errors)
            for record in batch.jobs:
                self._job(source, record)
            self._advance(batch.watermark)

    def _job(self, source: BaseConnector, record) -> None:
        cluster_name = record.cluster or self.connector.cluster or self.connector.name
        key = (cluster_name, record.external_id)
        if key in self.seen:  # a page or window served twice within this pull
            return
        self.seen.add(key)
        self.result.jobs_seen += 1
        try:
            record = source.describe(record)
        except BadData as exc:  # recorded; the job is stored as it was listed
            self.errors.append(RecordError(self.connector.name, f"details: {exc}", job_id=record.external_id))
        error = record.storage_error(self.connector.name)
        if error is not None:  # the database cannot keep it: reported, its series and files not fetched
            self.errors.append(error)
            return
        frame = artifacts = None
        try:
            frame = source.fetch_series(record)
        except BadData as exc:  # recorded, stored without series, not retried
            self.errors.append(RecordError(self.connector.name, f"series: {exc}", job_id=record.external_id))
        try:
            artifacts = source.fetch_artifacts(record)
        except SomeBadData as exc:  # the good ones are stored, each bad one reported
            artifacts = exc.records
            for problem in exc.problems:
                self.errors.append(RecordError(self.connector.name, f"artifacts: {problem}", job_id=record.external_id))
        except BadData as exc:
            self.errors.append(RecordError(self.connector.name, f"artifacts: {exc}", job_id=record.external_id))
        if self.dry_run:
            return
        cluster = self.clusters.get(cluster_name) or self.clusters.setdefault(
            cluster_name, Cluster.objects.get_or_create(name=slugify(cluster_name)[:100] or "default")[0]
        )
        team = self.teams.get(record.team) or self.teams.setdefault(record.team, _team_for(record.team))
        outcome, job = ingest.store_job(
            self.ingest_run, cluster, team, record, frame, artifacts or [], keep=source.keeps_artifacts
        )
        setattr(self.result, outcome, getattr(self.result, outcome) + 1)
        if outcome != "unchanged":
            self.changed.append(job.pk)
        self.ingest_run.samples += job.sample_count

    def _advance(self, watermark: str) -> None:
        if self.dry_run or watermark == self.result.watermark:
            return
        current = parse_time_watermark(self.connector.watermark)
        new = parse_time_watermark(watermark)
        if current is not None and new is not None and new < current:
            return  # a backfill with --since never moves the watermark back
        # Only while the lease is ours: a worker whose lease expired must not overwrite a newer one.
        saved = Connector.objects.filter(pk=self.connector.pk, lock_token=self.token).update(watermark=watermark)
        if not saved:
            raise ConfigError("the connector's lease expired during the pull; another worker took over")
        self.result.watermark = self.connector.watermark = watermark
        self.ingest_run.phase = f"stored up to {watermark[:60]}"
        self.ingest_run.jobs_done = self.ingest_run.jobs_total = (
            self.result.created + self.result.updated + self.result.unchanged
        )
        self.ingest_run.jobs_created, self.ingest_run.jobs_updated = self.result.created, self.result.updated
        self.ingest_run.jobs_unchanged = self.result.unchanged
        self.ingest_run.save(
            update_fields=[
                "phase",
                "jobs_done",
                "jobs_total",
                "jobs_created",
                "jobs_updated",
                "jobs_unchanged",
                "samples",
            ]
        )

    def _finish(self, started: datetime, failure: str = "") -> SyncResult:
        if failure:
            self.errors.append(RecordError(self.connector.name, failure))
        self.result.errors = [e.as_dict() for e in self.errors[:MAX_RUN_ERRORS]]
        if self.dry_run:
            self.result.status = "failed" if failure else "dry-run"
            self.result.message = failure
            return self.result
        rejected = len({e.job_id for e in self.errors if e.job_id})
        if failure:
            status = IngestRun.Status.FAILED
        else:
            status = IngestRun.Status.PARTIAL if self.errors else IngestRun.Status.SUCCEEDED
        run = self.ingest_run
        run.status = status
        run.phase = ""
        run.finished_at = timezone.now()
        run.errors = self.result.errors
        run.jobs_rejected = rejected
        run.jobs_done = run.jobs_total = self.result.created + self.result.updated + self.result.unchanged
        run.jobs_created, run.jobs_updated, run.jobs_unchanged = (
            self.result.created,
            self.result.updated,
            self.result.unchanged,
        )
        run.save()
        fields = {"last_run_at": started, "last_run": run}
        if failure:
            fields.update(last_error=failure[:5000], last_error_at=timezone.now())
            Connector.objects.filter(pk=self.connector.pk).update(**fields)
            Connector.objects.filter(pk=self.connector.pk).update(consecutive_failures=_plus_one())
        else:
            fields.update(last_success_at=run.finished_at, consecutive_failures=0, last_error="")
            Connector.objects.filter(pk=self.connector.pk).update(**fields)
        if self.changed:
            changed, run_id = list(self.changed), run.pk
            transaction.on_commit(lambda: jobs_ingested.send(sender=IngestRun, job_ids=changed, run_id=run_id))
        self.result.status = str(status)
        self.result.message = failure
        return self.result


def _plus_one():
    from django.db.models import F

    return F("consecutive_failures") + 1


def _team_for(name: str) -> Team:
    slug = slugify(name)[:100] or "unnamed"
    team, _ = Team.objects.get_or_create(slug=slug, defaults={"name": name[:200]})
    return team


# -- pulls whose worker died ----------------------------------------------------------------------
# A pull's run is written *running* when it starts and finished by `_Pull._finish`; a worker killed in
# between (OOM, kill -9, the hard time limit) left it running for ever, on the connector's page and
# Ingest runs, while only the lease expired. Beat's scheduler fails such runs first.
STOPPED_PULL = (
    "The worker running this pull stopped before it finished (killed, out of memory, or its machine went away) "
    "or could not reach the database to record its end; "
    "the jobs it stored are kept, and the next pull starts where it left off (the connector's watermark)."
)


def lease_token(token: str, run_id: int) -> str:
    """The lease's token once its pull has a run: the run can then tell whether the lease is still its own."""
    return f"{token[:32]}:run-{run_id}"


# A delete's lease token ends so: while it holds the lease, the connector is being deleted, not pulled.
DELETING = ":delete"


def _lease_holder(connector: Connector | None, now: datetime) -> str | None:
    """Whom the connector's lease is held for: "run-N", "delete" while it is being deleted, "" when
    its token names neither (a pull that has no run yet, or of an older version), None when it is
    free or expired."""
    if connector is None or connector.locked_until is None or connector.locked_until <= now:
        return None
    if connector.lock_token.endswith(DELETING):
        return "delete"
    return connector.lock_token.rpartition(":")[2] if ":run-" in connector.lock_token else ""


def being_deleted(connector: Connector, now: datetime | None = None) -> bool:
    """Whether a delete of the connector holds its lease right now (no pull can start meanwhile)."""
    return _lease_holder(connector, now or timezone.now()) == "delete"


def pull_running(connector: Connector, now: datetime | None = None) -> tuple[bool, IngestRun | None]:
    """Whether a pull of the connector holds its lease right now, and that pull's ingest run when its
    lease names one (a pull that has not written its run yet names none). A delete holding the lease
    is no pull (`being_deleted`)."""
    holder = _lease_holder(connector, now or timezone.now())
    if holder is None or holder == "delete":
        return False, None
    run_id = holder.removeprefix("run-")
    return True, IngestRun.objects.filter(pk=int(run_id)).first() if run_id.isdigit() else None


def fail_stopped_pulls(now: datetime | None = None) -> list[int]:
    """Fail the runs of pulls whose worker died, saying so; the ids of the runs failed.

    On PostgreSQL a pull holds its run's advisory lock (`ingest.exclusive_run`), which goes with its
    worker's connection: a running pull run whose lock is free has no worker, and its lease, if still
    held for it, is released so the next pull need not wait for it to expire. Elsewhere (SQLite) nothing
    shows a live worker but the lease: a run whose lease expired or went to another pull is stopped.
    A pull going on is never touched. The connector records the failure when no later pull has run."""
    now = now or timezone.now()
    failed = []
    running = IngestRun.objects.filter(source=IngestRun.Source.CONNECTOR, status=IngestRun.Status.RUNNING)
    for run_id in running.order_by("pk").values_list("pk", flat=True):
        with ingest.exclusive_run(run_id) as ours:
            if not ours:  # its worker holds it: the pull is going on
                continue
            run = IngestRun.objects.filter(pk=run_id, status=IngestRun.Status.RUNNING).first()
            if run is None:
                continue
            connector = Connector.objects.filter(pk=run.connector_id).first() if run.connector_id else None
            holder = _lease_holder(connector, now)
            if holder == "" or (holder == f"run-{run.pk}" and not ingest.run_locks_tell()):
                continue  # a pull that cannot be told from this run's, or (SQLite) its lease still runs
            with transaction.atomic():
                IngestRun.objects.filter(pk=run.pk, status=IngestRun.Status.RUNNING).update(
                    status=IngestRun.Status.FAILED,
                    finished_at=timezone.now(),
                    phase="",
                    errors=[RecordError(connector.name if connector else "", STOPPED_PULL).as_dict()],
                )
                if connector is not None:
                    if holder == f"run-{run.pk}":
                        release(connector.pk, connector.lock_token)
                    Connector.objects.filter(pk=connector.pk).filter(
                        Q(last_run_at__isnull=True) | Q(last_run_at__lte=run.started_at or run.created_at)
                    ).update(
                        last_run_at=run.started_at or run.created_at,
                        last_run=run,
                        last_error=STOPPED_PULL,
                        last_error_at=timezone.now(),
                        consecutive_failures=_plus_one(),
                    )
        logger.warning("Pull run %s of connector %s had no worker left; marked failed", run.pk, connector or "?")
        failed.append(run.pk)
    return failed


def due_connectors(now: datetime | None = None) -> list[int]:
    """Enabled connectors whose interval has passed and that no worker holds right now."""
    now = now or timezone.now()
    candidates = Connector.objects.filter(enabled=True).filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
    return [c.pk for c in candidates.only("pk", "enabled", "last_run_at", "interval_minutes") if c.is_due(now)]


def record_failure(connector_id: int, message: str) -> None:
    Connector.objects.filter(pk=connector_id).update(
        last_error=message[:5000], last_error_at=timezone.now(), last_run_at=timezone.now()
    )


def check_connection(connector: Connector) -> dict:
    """One cheap request to prove URL and credentials, tried once; {"ok": bool, ...} for the UI. A
    connector that takes its series from a metrics source has that source checked too: its pulls fail
    when the source does not answer, and the check said the connector answered. `warnings` (a list, when a
    connector's check gives one): what its pulls will lack although it answers (Kubernetes' nodes)."""
    try:
        source = build(connector, interactive=True)
    except ConnectorError as exc:
        return {"ok": False, "error": str(exc)}
    try:
        try:
            outcome = {"ok": True, **source.check()}
        except ConnectorError as exc:
            return {"ok": False, "error": str(exc)}
        if source.metrics is not None:
            name = connector.metrics_from.name
            try:
                source.metrics.check()
            except ConnectorError as exc:
                return {"ok": False, "error": f"it answers, but its metrics source {name} does not, so its pulls "
                        f"fail: {exc}"}  # fmt: skip
            outcome[f"metrics from {name}"] = "answers"
        return outcome
    finally:
        source.http.close()
        if source.metrics is not None:
            source.metrics.http.close()
