"""Storing canonical records: the one place archive imports (and later connectors) write jobs.

The upsert is keyed on (cluster, external_id) and guarded by a fingerprint of everything a
job brought with it, so importing the same archive twice leaves the jobs, artifacts and log
events exactly as they were, and a changed job is updated in place, never duplicated.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from fleet import series as series_lib
from fleet.archive.parser import ArchiveError, ParsedArchive, parse_archive
from fleet.canonical import ArtifactRecord, JobRecord, RecordError
from fleet.logevents import extract_log_events
from fleet.models import Artifact, Cluster, IngestRun, Job, LogEvent, Team, cost_of, price_for
from fleet.signals import jobs_ingested

logger = logging.getLogger(__name__)

# How often (in jobs) the run's progress is written back for the progress page.
PROGRESS_EVERY = 25


def create_run(archive_path: str | Path, *, name: str = "", source: str = IngestRun.Source.CLI, user=None) -> IngestRun:
    path = Path(archive_path)
    return IngestRun.objects.create(
        archive_path=str(path), archive_name=name or path.name, source=source, created_by=user
    )


def enqueue_run(run: IngestRun) -> None:
    """Queue the run's ingest once the transaction that created it has committed."""
    from fleet.tasks import ingest_archive_task

    ingest_archive_task.delay_on_commit(run.pk)


def fail_run(run_id: int, message: str) -> None:
    IngestRun.objects.filter(pk=run_id).exclude(status__in=_FINISHED).update(
        status=IngestRun.Status.FAILED,
        finished_at=timezone.now(),
        phase="",
        errors=[RecordError(file="", message=message).as_dict()],
    )


_FINISHED = [IngestRun.Status.SUCCEEDED, IngestRun.Status.PARTIAL, IngestRun.Status.FAILED]


def execute_run(run_id: int) -> IngestRun | None:
    """Import the run's archive. Safe to call again for the same run: jobs are upserted."""
    run = IngestRun.objects.filter(pk=run_id).first()
    if run is None:
        logger.warning("Ingest run %s vanished before it could run", run_id)
        return None
    run.status = IngestRun.Status.RUNNING
    run.started_at = timezone.now()
    run.attempts += 1
    run.phase = "reading archive"
    run.jobs_done = run.jobs_created = run.jobs_updated = run.jobs_unchanged = run.jobs_rejected = 0
    run.samples = 0
    run.errors = []
    run.save()

    try:
        parsed = parse_archive(run.archive_path, artifact_max_bytes=settings.ARTIFACT_MAX_BYTES)
    except ArchiveError as exc:
        run.errors = [exc.error.as_dict()]
        _finish(run, IngestRun.Status.FAILED)
        return run
    except FileNotFoundError:
        run.errors = [RecordError(file=run.archive_name, message="the archive file does not exist").as_dict()]
        _finish(run, IngestRun.Status.FAILED)
        return run

    store_parsed(run, parsed)
    return run


def store_parsed(run: IngestRun, parsed: ParsedArchive) -> IngestRun:
    run.errors = [e.as_dict() for e in parsed.errors]
    run.jobs_rejected = len(parsed.rejected)
    run.jobs_total = len(parsed.jobs) + len(parsed.rejected)
    run.phase = "storing jobs"
    run.save(update_fields=["errors", "jobs_rejected", "jobs_total", "phase"])

    teams: dict[str, Team] = {}
    clusters: dict[str, Cluster] = {}
    changed: list[int] = []
    for index, (job_id, record) in enumerate(sorted(parsed.jobs.items()), start=1):
        cluster = clusters.get(record.cluster) or clusters.setdefault(
            record.cluster, Cluster.objects.get_or_create(name=record.cluster)[0]
        )
        team = teams.get(record.team) or teams.setdefault(record.team, _team_for(record.team))
        outcome, job = store_job(
            run, cluster, team, record, parsed.series.get(job_id), parsed.artifacts.get(job_id, [])
        )
        if outcome == "created":
            run.jobs_created += 1
        elif outcome == "updated":
            run.jobs_updated += 1
        else:
            run.jobs_unchanged += 1
        if outcome != "unchanged":
            changed.append(job.pk)
        run.samples += job.sample_count
        run.jobs_done = index
        if index % PROGRESS_EVERY == 0:
            run.save(update_fields=["jobs_done", "jobs_created", "jobs_updated", "jobs_unchanged", "samples"])

    if run.jobs_rejected and not parsed.jobs:
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


def _team_for(name: str) -> Team:
    slug = slugify(name)[:100] or "unnamed"
    team, _ = Team.objects.get_or_create(slug=slug, defaults={"name": name[:200]})
    return team


def fingerprint(record: JobRecord, series_bytes: bytes | None, artifacts: list[ArtifactRecord]) -> str:
    """A hash of everything the job brought, so an unchanged re-import can be recognised."""
    digest = hashlib.sha256()
    fields = asdict(record)
    fields.pop("raw", None)
    digest.update(json.dumps(fields, sort_keys=True, default=str).encode())
    digest.update(hashlib.sha256(series_bytes or b"").digest())
    for artifact in sorted(artifacts, key=lambda a: (a.kind, a.path)):
        digest.update(f"{artifact.kind}\0{artifact.path}\0".encode())
        digest.update(hashlib.sha256(artifact.content).digest())
    return digest.hexdigest()


@transaction.atomic
def store_job(run, cluster, team, record: JobRecord, frame, artifacts: list[ArtifactRecord]) -> tuple[str, Job]:
    series_bytes = series_lib.to_parquet_bytes(frame) if frame is not None and len(frame) else None
    fp = fingerprint(record, series_bytes, artifacts)
    job = Job.objects.select_for_update().filter(cluster=cluster, external_id=record.external_id).first()
    if job is not None and job.fingerprint == fp and job.team_id == team.pk:
        return "unchanged", job
    outcome = "created" if job is None else "updated"
    job = job or Job(cluster=cluster, external_id=record.external_id)

    job.name = record.name
    job.user = record.user
    job.team = team
    job.queue = record.queue
    job.state = record.state
    job.job_type = record.job_type or Job.JobType.BATCH
    job.submit_time = record.submit_time
    job.start_time = record.start_time
    job.end_time = record.end_time
    job.gpu_count = record.gpu_count
    job.gpu_model = record.gpu_model
    job.node_count = record.node_count or 1
    job.cpu_count = record.cpu_count
    job.command = record.command
    job.labels = record.labels
    job.raw = record.raw
    job.fingerprint = fp
    job.ingest_run = run
    _apply_summary(job, frame, cluster)
    job.series_file.name = _store_blob("series", series_bytes, ".parquet") if series_bytes else ""
    job.save()

    if outcome == "updated":
        job.artifacts.all().delete()  # cascades to their log events
    _store_artifacts(job, artifacts)
    return outcome, job


def _apply_summary(job: Job, frame, cluster: Cluster) -> None:
    job.gpu_hours = series_lib.gpu_hours(job.start_time, job.end_time, job.gpu_count)
    if frame is not None and len(frame):
        summary = series_lib.summarize(
            frame,
            start=job.start_time,
            end=job.end_time,
            gpu_count=job.gpu_count,
            idle_threshold=settings.IDLE_UTIL_THRESHOLD,
        )
        job.mean_gpu_util = summary.mean_gpu_util
        job.peak_gpu_mem_util = summary.peak_gpu_mem_util
        job.unused_gpu_hours = summary.unused_gpu_hours
        job.idle_gpu_hours = summary.idle_gpu_hours
        job.coverage = summary.coverage
        job.sample_count = summary.sample_count
        job.sampling_period_s = summary.sampling_period_s
    else:
        job.mean_gpu_util = job.peak_gpu_mem_util = job.unused_gpu_hours = job.idle_gpu_hours = None
        job.sampling_period_s = None
        job.coverage = 0.0
        job.sample_count = 0
    price = price_for(cluster, job.gpu_model)
    job.cost = cost_of(job.gpu_hours, price)
    job.currency = price.currency if price else ""


def _store_blob(folder: str, content: bytes, suffix: str = "") -> str:
    """Store content under a name derived from its hash, never from a name the input chose."""
    digest = hashlib.sha256(content).hexdigest()
    name = f"{folder}/{digest[:2]}/{digest}{suffix}"
    if not default_storage.exists(name):
        saved = default_storage.save(name, ContentFile(content))
        if saved != name:  # a concurrent writer stored the same content first
            default_storage.delete(saved)
    return name


def _store_artifacts(job: Job, artifacts: list[ArtifactRecord]) -> None:
    events: list[LogEvent] = []
    for record in artifacts:
        artifact = Artifact.objects.create(
            job=job,
            kind=record.kind,
            path=record.path[:500],
            file=_store_blob("artifacts", record.content),
            size=len(record.content),
            sha256=hashlib.sha256(record.content).hexdigest(),
            truncated=record.truncated,
        )
        if record.kind == Artifact.Kind.LOG:
            text = record.content.decode("utf-8", errors="replace")
            events.extend(
                LogEvent(
                    job=job,
                    artifact=artifact,
                    kind=event.kind,
                    line_no=event.line_no,
                    timestamp=event.timestamp,
                    text=event.text[:500],
                )
                for event in extract_log_events(text)
            )
    LogEvent.objects.bulk_create(events, batch_size=1000)
