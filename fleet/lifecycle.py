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


def delete_team(team: Team) -> None:
    """A team with all its jobs, memberships, digest subscriptions and deliveries."""
    with transaction.atomic():
        delete_jobs(team.jobs.all())
        team.delete()


def delete_ingest_run(run: IngestRun, *, with_jobs: bool = True) -> None:
    """An ingest run and, unless `with_jobs=False`, the jobs it last stored (a job a later run
    updated belongs to that run), plus its uploaded archive if it is still waiting in UPLOAD_DIR."""
    with transaction.atomic():
        if with_jobs:
            delete_jobs(run.jobs.all())
        path = run.archive_path
        run.delete()
    if path and Path(path).resolve().parent == Path(settings.UPLOAD_DIR).resolve():
        Path(path).unlink(missing_ok=True)


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
