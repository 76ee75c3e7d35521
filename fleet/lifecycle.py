"""Deleting fleet data without leaving files behind, and finding the files that were left anyway.

Series and artifacts are content-addressed blobs in the default storage (`series/ab/<sha256>...`,
`artifacts/ab/<sha256>`): two jobs with the same log share one file. So a blob is deleted only
when no Job.series_file and no Artifact.file names it any more, and only after the transaction
that removed the last reference has committed (a rollback must still find its files).

Every deletion of a Job or Artifact — through these functions, the admin, a cascade, an ingest
replacing a job's data — goes through the post_delete receivers below, so nothing depends on the
caller remembering to clean up. `manage.py check_storage [--clean]` finds what a crash between
commit and file deletion (or an older version) left behind.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from fleet.models import Artifact, IngestRun, Job, Team

logger = logging.getLogger(__name__)

BLOB_FOLDERS = ("series", "artifacts")


def referenced_names(names: set[str]) -> set[str]:
    """Which of these blob names a job or an artifact still refers to."""
    if not names:
        return set()
    used = set(Job.objects.filter(series_file__in=names).values_list("series_file", flat=True))
    return used | set(Artifact.objects.filter(file__in=names).values_list("file", flat=True))


def delete_unreferenced(names: set[str]) -> list[str]:
    """Delete the blobs among `names` nothing refers to; returns what was deleted."""
    names = {name for name in names if name}
    deleted = []
    for name in sorted(names - referenced_names(names)):
        try:
            default_storage.delete(name)
        except OSError as exc:  # reported by check_storage later; never fail the deletion of rows
            logger.warning("Could not delete blob %s: %s", name, exc)
            continue
        deleted.append(name)
    return deleted


def _after_commit(name: str) -> None:
    if name:
        transaction.on_commit(lambda: delete_unreferenced({name}))


@receiver(post_delete, sender=Job)
def _job_deleted(sender, instance: Job, **kwargs):
    _after_commit(instance.series_file.name if instance.series_file else "")


@receiver(post_delete, sender=Artifact)
def _artifact_deleted(sender, instance: Artifact, **kwargs):
    _after_commit(instance.file.name if instance.file else "")


def delete_jobs(jobs) -> int:
    """Delete jobs with their artifacts, log events, triage results and (after commit) their blobs.
    A job in a labeling study is protected: remove it from the study first."""
    with transaction.atomic():
        count, _ = Job.objects.filter(pk__in=list(jobs.values_list("pk", flat=True))).delete()
    return count


# -- deleting many jobs in the background -----------------------------------------------------------
# Deleting a team, an ingest run or jobs chosen in the admin took as long as its jobs and their files:
# on a large fleet gunicorn's --timeout killed the request and everything rolled back. Each now starts
# a deletion (a ConnectorDeletion row of its kind, the record a connector's deletion with its jobs keeps
# too) and the task `fleet.delete_jobs` deletes the jobs JOB_DELETE_BATCH to a transaction, counted in
# that same transaction, then the team or run itself in a last one, audited. Without REDIS_URL the task
# runs in the request, as every task does (fleet.tasking).


def _deletion_model():
    from fleet.connectors.models import ConnectorDeletion

    return ConnectorDeletion


class DeletionEnded(Exception):
    """The deletion was ended (failed, or asked for again) while this task deleted a batch."""


def kept_job_ids(jobs) -> set[int]:
    """Of these jobs, those a row elsewhere protects from deletion (a labeling study's sample, a gold
    set's item: `on_delete=PROTECT`); found through the model's relations, as fleet knows no triage."""
    from django.db import models

    kept: set[int] = set()
    for relation in Job._meta.get_fields(include_hidden=True):  # hidden: related_name="+" on StudyJob and GoldItem
        if relation.auto_created and not relation.concrete and getattr(relation, "on_delete", None) is models.PROTECT:
            rows = relation.related_model._base_manager.filter(**{f"{relation.field.name}__in": jobs})
            kept.update(rows.values_list(relation.field.attname, flat=True))
    return kept


def delete_in_batches(deletion_id: int, jobs, kept_ids: set[int], *, before_batch=None) -> None:
    """Delete `jobs` (a queryset, read again for each batch) but `kept_ids`, JOB_DELETE_BATCH to a
    transaction; each batch is counted on the deletion in its own transaction, so a worker killed in
    the middle loses that batch only and its redelivery neither counts a job twice nor misses one.
    Raises DeletionEnded when the deletion stopped running meanwhile (the batch is rolled back)."""
    from django.db.models import F, ProtectedError

    deletion_model = _deletion_model()
    while True:
        if before_batch is not None:
            before_batch()
        try:
            with transaction.atomic():
                # Locked (PostgreSQL), so two deletions over the same jobs never both count one.
                batch = jobs.exclude(pk__in=kept_ids).select_for_update(of=("self",)).order_by("pk")
                ids = list(batch.values_list("pk", flat=True)[: settings.JOB_DELETE_BATCH])
                if not ids:
                    return
                delete_jobs(Job.objects.filter(pk__in=ids))  # files once this commits
                counted = deletion_model.objects.filter(pk=deletion_id, status=deletion_model.Status.RUNNING).update(
                    jobs_deleted=F("jobs_deleted") + len(ids)
                )
                if not counted:
                    raise DeletionEnded(deletion_id)
        except ProtectedError:  # a job of the batch was added to a labeling study meanwhile: it stays
            kept_ids = kept_job_ids(jobs)
            deletion_model.objects.filter(pk=deletion_id).update(kept=len(kept_ids))


def _jobs_of(deletion):
    kinds = deletion.Kind
    if deletion.kind == kinds.TEAM:
        return Job.objects.filter(team_id=deletion.team_id) if deletion.team_id else Job.objects.none()
    if deletion.kind == kinds.INGEST_RUN:
        if deletion.ingest_run_id and deletion.with_jobs:
            return Job.objects.filter(ingest_run_id=deletion.ingest_run_id)
        return Job.objects.none()
    return Job.objects.filter(pk__in=deletion.job_ids)


def _start(deletion_model, *, kind, user, name: str, jobs, **fields):
    """Record a deletion of `kind` and queue its task, holding a lease on its row as a connector's
    deletion holds one on its connector (sync.take_lease, DELETE_LEASE_SECONDS, renewed by the task
    before each batch). An unfinished deletion of the same team or run whose lease holds is the one
    returned: it runs, or may yet. One whose lease ran out lost its task (a worker died, the broker was
    flushed): it ends, saying so, and this one deletes the rest; should its task come after all, it does
    nothing. So do unfinished deletions of chosen jobs whose lease ran out, of any of the same jobs.
    Returns the deletion (finished already when the task ran in this process) and "", or None and why not."""
    import uuid
    from datetime import timedelta

    from django.utils import timezone

    from fleet.connectors.sync import DELETE_LEASE_SECONDS, fail_deletion, lost_task_reason, stopped_reason
    from fleet.connectors.tasks import delete_jobs_task
    from fleet.tasking import QueueUnreachable, publish

    now = timezone.now()
    target = {key: value for key, value in fields.items() if key in ("team", "ingest_run")}
    unfinished = deletion_model.objects.filter(kind=kind, **target).exclude(status__in=FINISHED)
    if not target:  # chosen jobs: those deletions of any of the same jobs
        chosen = set(fields.get("job_ids", ()))
        unfinished = [deletion for deletion in unfinished if chosen.intersection(deletion.job_ids)]
    elif live := next((d for d in unfinished if d.locked_until is not None and d.locked_until >= now), None):
        return live, ""  # its lease holds: it is being deleted
    for stale in unfinished:
        if stale.locked_until is None or stale.locked_until < now:
            fail_deletion(stale.pk, lost_task_reason(stale), counted=False)
    kept = kept_job_ids(jobs)
    deletion = deletion_model.objects.create(
        kind=kind,
        name=name[:100],
        requested_by=user if user is not None and getattr(user, "is_authenticated", False) else None,
        jobs_total=jobs.exclude(pk__in=kept).count(),
        kept=len(kept),
        lease_token=uuid.uuid4().hex,
        locked_until=now + timedelta(seconds=DELETE_LEASE_SECONDS),
        **fields,
    )
    what = deletion.target_display
    try:
        publish(
            delete_jobs_task, (deletion.pk,), kwargs={"lease": deletion.lease_token}, not_done=f"{what} was not deleted"
        )
    except QueueUnreachable as unreachable:
        fail_deletion(deletion.pk, str(unreachable), counted=False)
        return None, str(unreachable)
    except Exception as exc:  # run in this process (no REDIS_URL), and failed
        logger.exception("Deleting %s failed", what)
        fail_deletion(deletion.pk, stopped_reason(exc))
    deletion.refresh_from_db()
    return deletion, ""


def delete_team(team: Team, user=None):
    """A team with all its jobs (their files, triage results, log events), memberships, digest
    subscriptions and deliveries, by the task `fleet.delete_jobs`. Returns (deletion, "") or (None, why
    not): a job of it is in a labeling study or gold set (the team must stay for it), or the task
    queue cannot be reached."""
    deletion_model = _deletion_model()
    jobs = Job.objects.filter(team=team)
    if kept := len(kept_job_ids(jobs)):
        return None, (
            f"{kept:,} of the jobs of team {team} {'is' if kept == 1 else 'are'} in a labeling study or gold set, "
            "so the team stays: remove them from it first."
        )
    return _start(deletion_model, kind=deletion_model.Kind.TEAM, user=user, name=str(team), jobs=jobs, team=team,
                  audit_details={"slug": team.slug})  # fmt: skip


def delete_ingest_run(run: IngestRun, user=None, *, with_jobs: bool = True):
    """An ingest run and, unless `with_jobs=False`, the jobs it last stored (a job a later run updated
    belongs to that run), plus its uploaded archive if it is still waiting in UPLOAD_DIR; by the task
    `fleet.delete_jobs`. Jobs a labeling study or gold set holds stay. Returns (deletion, "") or (None,
    why not): the run is still importing, or the task queue cannot be reached."""
    deletion_model = _deletion_model()
    if run.status in (IngestRun.Status.PENDING, IngestRun.Status.RUNNING):
        return None, f"Ingest run {run.pk} is still {run.get_status_display().lower()}: delete it once it has ended."
    jobs = Job.objects.filter(ingest_run=run) if with_jobs else Job.objects.none()
    details = {"archive_name": run.archive_name, "source": run.source, "with_jobs": with_jobs}
    return _start(deletion_model, kind=deletion_model.Kind.INGEST_RUN, user=user, jobs=jobs, ingest_run=run,
                  name=f"{run.pk} ({run.archive_name})", with_jobs=with_jobs, audit_details=details)  # fmt: skip


def delete_chosen_jobs(jobs, user=None):
    """Jobs chosen in the admin (its Delete selected jobs), by the task `fleet.delete_jobs`; audited as
    `job.delete` with their names, as the admin did. Jobs a labeling study or gold set holds stay."""
    deletion_model = _deletion_model()
    ids = sorted(jobs.values_list("pk", flat=True))
    chosen = Job.objects.filter(pk__in=ids)
    labels = [str(job) for job in chosen.select_related("cluster").order_by("pk")[:1000]]
    name = f"{len(ids):,} job{'' if len(ids) == 1 else 's'}"
    return _start(deletion_model, kind=deletion_model.Kind.JOBS, user=user, name=name, jobs=chosen, job_ids=ids,
                  audit_details={"objects": labels})  # fmt: skip


def run_deletion(deletion_id: int):
    """Do a deletion of a team, an ingest run or chosen jobs that `_start` recorded. Idempotent: each
    batch of jobs is deleted whole with its count, so a redelivery after a worker died goes on from the
    last batch that committed; a finished deletion is left alone. None when its row is gone."""
    from django.utils import timezone

    from fleet.connectors.sync import DELETE_LEASE_SECONDS, fail_deletion, hold_lease

    deletion_model = _deletion_model()
    deletion = deletion_model.objects.filter(pk=deletion_id).first()
    if deletion is None or deletion.is_finished:
        return deletion
    gone = (deletion.kind == deletion.Kind.TEAM and deletion.team_id is None) or (
        deletion.kind == deletion.Kind.INGEST_RUN and deletion.ingest_run_id is None
    )
    if gone:  # deleted meanwhile by other means (the admin): what was not deleted here stays
        fail_deletion(deletion.pk, f"The {deletion.target_display} was deleted meanwhile by other means.")
        return deletion_model.objects.get(pk=deletion.pk)
    rows = deletion_model.objects.filter(pk=deletion.pk)

    def hold() -> None:  # the lease, renewed before each batch: run out, it says the task was lost
        if not hold_lease(rows, deletion.lease_token, seconds=DELETE_LEASE_SECONDS, holder_field="lease_token"):
            raise DeletionEnded(deletion.pk)

    try:
        hold()
    except DeletionEnded:
        return deletion_model.objects.get(pk=deletion.pk)
    rows.filter(status=deletion_model.Status.PENDING).update(
        status=deletion_model.Status.RUNNING, started_at=timezone.now()
    )
    jobs = _jobs_of(deletion)
    kept_ids = kept_job_ids(jobs)  # counted again: a study may have taken some since the page
    deletion.refresh_from_db()
    deletion_model.objects.filter(pk=deletion.pk).update(
        jobs_total=deletion.jobs_deleted + jobs.exclude(pk__in=kept_ids).count(), kept=len(kept_ids)
    )
    try:
        delete_in_batches(deletion.pk, jobs, kept_ids, before_batch=hold)
    except DeletionEnded:
        return deletion_model.objects.get(pk=deletion.pk)
    return _finish(deletion.pk)


def _finish(deletion_id: int):
    """The last step, in one transaction with the audit entry: the team or the ingest run itself."""
    from django.db.models import ProtectedError
    from django.utils import timezone

    from fleet import audit
    from fleet.connectors.sync import fail_deletion

    deletion_model = _deletion_model()
    deletion = deletion_model.objects.select_related("requested_by").get(pk=deletion_id)
    details = {**deletion.audit_details, "jobs_deleted": deletion.jobs_deleted, "kept": deletion.kept}
    archive = ""
    try:
        with transaction.atomic():
            if deletion.kind == deletion.Kind.TEAM:
                team = Team.objects.select_for_update().get(pk=deletion.team_id)
                audit.record(deletion.requested_by, "team.delete", team, details)
                team.delete()
            elif deletion.kind == deletion.Kind.INGEST_RUN:
                run = IngestRun.objects.select_for_update().get(pk=deletion.ingest_run_id)
                audit.record(deletion.requested_by, "ingest_run.delete", run, details)
                archive = run.archive_path
                run.delete()
            else:
                audit.record(deletion.requested_by, "job.delete", deletion.name, details)
            done = deletion_model.objects.filter(pk=deletion_id, status=deletion_model.Status.RUNNING).update(
                status=deletion_model.Status.SUCCEEDED, finished_at=timezone.now(), jobs_total=deletion.jobs_deleted
            )
            if not done:
                raise DeletionEnded(deletion_id)
    except DeletionEnded:
        return deletion_model.objects.get(pk=deletion_id)
    except (Team.DoesNotExist, IngestRun.DoesNotExist):
        fail_deletion(deletion_id, f"The {deletion.target_display} was deleted meanwhile by other means.")
    except ProtectedError:  # a job was stored in the team meanwhile (a pull), or a study took one of its jobs
        said = f"Jobs of the {deletion.target_display} were stored or put in a labeling study meanwhile"
        fail_deletion(deletion_id, said)
    if archive and Path(archive).resolve().parent == Path(settings.UPLOAD_DIR).resolve():
        Path(archive).unlink(missing_ok=True)
    return deletion_model.objects.get(pk=deletion_id)


FINISHED = ("succeeded", "failed")


@dataclass
class StorageReport:
    stored: int = 0
    orphans: list[str] = field(default_factory=list)  # stored, referenced by nothing
    young_orphans: list[str] = field(default_factory=list)  # too recent to judge: an ingest may be storing them
    missing: list[str] = field(default_factory=list)  # referenced, not stored
    deleted: list[str] = field(default_factory=list)


def _walk(folder: str):
    try:
        directories, files = default_storage.listdir(folder)
    except FileNotFoundError:
        return
    for name in files:
        yield f"{folder}/{name}"
    for directory in directories:
        yield from _walk(f"{folder}/{directory}")


def check_storage(*, clean: bool = False, min_age_s: float = 3600.0) -> StorageReport:
    """Compare the blobs in storage with the rows that name them. Orphans younger than
    `min_age_s` are left alone: an ingest stores a blob before it commits the row naming it."""
    report = StorageReport()
    stored = {name for folder in BLOB_FOLDERS for name in _walk(folder)}
    report.stored = len(stored)
    referenced = set(Job.objects.exclude(series_file="").values_list("series_file", flat=True))
    referenced |= set(Artifact.objects.values_list("file", flat=True))
    report.missing = sorted(referenced - stored)
    now = time.time()
    for name in sorted(stored - referenced):
        try:
            age = now - default_storage.get_modified_time(name).timestamp()
        except (NotImplementedError, OSError):
            age = float("inf")
        (report.orphans if age >= min_age_s else report.young_orphans).append(name)
    if clean:
        report.deleted = delete_unreferenced(set(report.orphans))
    return report


@dataclass
class PruneReport:
    cutoff: object = None
    jobs: int = 0  # jobs whose series was (or, dry run, would be) removed
    blobs: list[str] = field(default_factory=list)  # blobs deleted (dry run: that would be deleted)
    bytes: int = 0


def prune_series(days: int, *, dry_run: bool = False, now=None, batch: int = 500) -> PruneReport:
    """Remove the raw series of jobs that ended more than `days` days ago; keep the jobs, their
    summary columns, artifacts and findings, and mark them `series_pruned_at`. Blobs are shared by
    content, so a blob is deleted only when no job (pruned or not) still names it, after commit."""
    from datetime import timedelta

    from django.utils import timezone

    now = now or timezone.now()
    report = PruneReport(cutoff=now - timedelta(days=days))
    if days <= 0:
        return report
    candidates = Job.objects.filter(end_time__lt=report.cutoff).exclude(series_file="")
    if dry_run:
        pairs = list(candidates.values_list("pk", "series_file"))
        report.jobs = len(pairs)
        names = {name for _, name in pairs}
        still_used = set(
            Job.objects.filter(series_file__in=names)
            .exclude(pk__in=[pk for pk, _ in pairs])
            .values_list("series_file", flat=True)
        )
        report.blobs = sorted(names - still_used)
    else:
        while True:
            with transaction.atomic():
                pairs = list(candidates.select_for_update().order_by("pk").values_list("pk", "series_file")[:batch])
                if not pairs:
                    break
                Job.objects.filter(pk__in=[pk for pk, _ in pairs]).update(series_file="", series_pruned_at=now)
                names = {name for _, name in pairs}
                deleted: list[str] = []
                sizes = {name: _size(name) for name in names}

                def _delete(names=names, deleted=deleted, sizes=sizes):
                    deleted.extend(delete_unreferenced(names))
                    report.blobs.extend(deleted)
                    report.bytes += sum(sizes[name] for name in deleted)

                transaction.on_commit(_delete)
            report.jobs += len(pairs)
        return report
    report.bytes = sum(_size(name) for name in report.blobs)
    return report


def _size(name: str) -> int:
    try:
        return default_storage.size(name)
    except OSError:
        return 0
