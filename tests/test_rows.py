"""`fleet.rows` writes the rows `bulk_create` writes, on the database the suite runs on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from fleet.models import Artifact, Cluster, IngestRun, Job, LogEvent, Team
from fleet.rows import insert_new, insert_rows

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 2, 10, 0, 0, 123456, tzinfo=UTC)
# Compared apart: set to "now" by the database write itself.
AUTOMATIC = {"id", "external_id", "created_at", "updated_at"}


def jobs(prefix: str) -> list[Job]:
    """New jobs as the importer builds them, with every kind of column: text with quotes and non-ASCII,
    an enum value, numpy numbers, None, JSON, a decimal, a file name, times with microseconds."""
    cluster, _ = Cluster.objects.get_or_create(name="c1")
    team, _ = Team.objects.get_or_create(slug="vision", defaults={"name": "Vision"})
    run = IngestRun.objects.first() or IngestRun.objects.create(archive_path="a.zip", archive_name="a.zip")
    built = []
    for index, util in enumerate([np.float32(12.5), None, 99.25]):
        job = Job(cluster=cluster, team=team, external_id=f"{prefix}{index}", ingest_run=run)
        job.name = f"résumé 'quoted' \"{index}\" <b>"
        job.user = "ann"
        job.job_type = Job.JobType.INTERACTIVE if index else Job.JobType.BATCH
        job.submit_time = None if index == 1 else START - timedelta(minutes=5)
        job.start_time = START + timedelta(hours=index)
        job.end_time = START + timedelta(hours=index + 1, microseconds=7)
        job.gpu_count = np.int64(index + 1)
        job.cpu_count = None
        job.labels = {"project": "x", "nested": [1, 2.5, None, "ü"]}
        job.raw = {"job_id": str(index), "gpu_count": index + 1}
        job.mean_gpu_util = util
        job.peak_gpu_mem_util = np.float64(50.0)
        job.sample_count = np.int64(120)
        job.cost = Decimal("12.346") if index != 1 else None
        job.currency = "EUR"
        job.series_file.name = f"series/ab/{index}.parquet"
        job.fingerprint = "f" * 64
        built.append(job)
    return built


def rows(model, **filters) -> list[dict]:
    found = model.objects.filter(**filters).order_by("pk").values()
    return [{name: value for name, value in row.items() if name not in AUTOMATIC | {"job_id"}} for row in found]


def test_jobs_inserted_are_the_rows_bulk_create_writes():
    by_orm, by_insert = jobs("orm-"), jobs("new-")
    Job.objects.bulk_create(by_orm)
    before = timezone.now()
    insert_new(by_insert)
    assert rows(Job, external_id__startswith="new-") == rows(Job, external_id__startswith="orm-")
    assert len(rows(Job, external_id__startswith="new-")) == 3
    for job in by_insert:  # each object has its own row's pk, and is no longer new
        stored = Job.objects.get(pk=job.pk)
        assert stored.external_id == job.external_id and not job._state.adding
        assert stored.created_at >= before - timedelta(seconds=1) and stored.updated_at >= stored.created_at
    assert Job.objects.get(external_id="new-0").cost == Decimal("12.35")
    # Times are stored as the database compares them (dashboards select jobs by period).
    assert set(Job.objects.filter(start_time=START).values_list("external_id", flat=True)) == {"orm-0", "new-0"}
    first_end = START + timedelta(hours=1, microseconds=7)
    assert set(Job.objects.filter(end_time__lte=first_end).values_list("external_id", flat=True)) == {"orm-0", "new-0"}


def log_of(job: Job) -> Artifact:
    return Artifact(job=job, kind=Artifact.Kind.LOG, path="logs/ü.log", file="artifacts/a/b", size=10**10, sha256="a")


def test_artifacts_take_the_ids_of_jobs_inserted_after_they_were_built():
    """An artifact built for a job that had no id yet is stored with the job's id once it has one."""
    orm_jobs, new_jobs = jobs("orm-"), jobs("new-")
    orm_artifacts, new_artifacts = [log_of(job) for job in orm_jobs], [log_of(job) for job in new_jobs]
    Job.objects.bulk_create(orm_jobs)
    Artifact.objects.bulk_create(orm_artifacts)
    insert_new(new_jobs)
    insert_new(new_artifacts)
    assert rows(Artifact, job__external_id__startswith="new-") == rows(Artifact, job__external_id__startswith="orm-")
    assert [a.job_id for a in Artifact.objects.filter(pk__in=[a.pk for a in new_artifacts]).order_by("pk")] == [
        job.pk for job in new_jobs
    ]


def test_nothing_to_insert_is_no_statement(django_assert_num_queries):
    with django_assert_num_queries(0):
        insert_new([])


def test_rows_inserted_as_values_are_the_rows_bulk_create_writes():
    """Log events written as plain rows (what the importer does) equal the ones the ORM writes."""
    job = jobs("j-")[0]
    job.save()
    log = log_of(job)
    log.save()
    moments = [START, None]
    LogEvent.objects.bulk_create(
        LogEvent(job=job, artifact=log, kind="epoch", line_no=n, timestamp=moment, text="Epoch 'ü' <b>")
        for n, moment in enumerate(moments)
    )
    adapt = connection.ops.adapt_datetimefield_value
    insert_rows(
        LogEvent,
        ("job_id", "artifact_id", "kind", "line_no", "timestamp", "text"),
        [(job.pk, log.pk, "epoch", n, adapt(moment), "Epoch 'ü' <b>") for n, moment in enumerate(moments)],
    )
    by_orm, by_rows = (
        [(e.job_id, e.artifact_id, e.kind, e.line_no, e.timestamp, e.text) for e in part]
        for part in (LogEvent.objects.order_by("pk")[:2], LogEvent.objects.order_by("pk")[2:])
    )
    assert by_rows == by_orm and len(by_rows) == 2
    assert LogEvent.objects.filter(timestamp=START).count() == 2  # both comparable in SQL
