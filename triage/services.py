"""Triage as plain functions that the tasks, the command, the API and the pages all call.

Loads a job's series and artifacts from storage, builds its evidence, runs the rules and stores the
result idempotently: triaging a job again with the same rule-set version replaces that version's
result and findings in one transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.db import DataError, IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from fleet.canonical import step_tasks, storable, without_nul
from fleet.logcut import MARKER_START
from fleet.models import Artifact, Job, price_for
from fleet.money import cost_of
from triage.evidence import Evidence, JobInfo, build_evidence, read_series
from triage.guidance import guidance_for
from triage.models import Finding, JobTriage, RetriageRun, RuleSet, TriageStatus, without_current_triage
from triage.rules import RULES_REVISION, TriageResult, triage

logger = logging.getLogger(__name__)

RETRIAGE_BATCH = settings.RETRIAGE_BATCH  # jobs per triage task (an import's, a new rule set's re-triage)
# Queuing a triage task rides out a broker restart (Redis back within about a minute) instead of failing
# at Celery's default ~1 s: an import that finished while Redis was down would otherwise leave its jobs
# untriaged until the sweep (`sweep_untriaged`) finds them (a finished run is not redone, and importing
# it again changes no job).
QUEUE_RETRY_POLICY = {"max_retries": 15, "interval_start": 1, "interval_step": 1, "interval_max": 5}


def job_info(job: Job) -> JobInfo:
    return JobInfo(
        start=job.start_time,
        end=job.end_time,
        gpu_count=job.gpu_count,
        node_count=job.node_count or 1,
        cpu_count=job.cpu_count,
        job_type=job.job_type,
        command=job.command,
        state=job.state,
        coverage=job.coverage,
        mean_gpu_util=job.mean_gpu_util,
        peak_gpu_mem_util=job.peak_gpu_mem_util,
        unused_gpu_hours=job.unused_gpu_hours,
        gpu_hours=job.gpu_hours,
        gpu_share=job.gpu_share,
        step_tasks=step_tasks(job.labels),
    )


def _read(name: str, limit: int = -1) -> bytes:
    with default_storage.open(name, "rb") as handle:
        return handle.read(limit)


def load_series(job: Job):
    """The job's stored series as triage reads it (`read_series`: only the columns triage uses), or None."""
    if not job.series_file:
        return None
    return read_series(_read(job.series_file.name))


def _reading_order(job: Job) -> list[Artifact]:
    """The job's files in the order triage reads them: logs, then the scripts its command names (the
    entry point), the other scripts, then traces; by path within each."""
    command = job.command or ""
    kind_rank = {Artifact.Kind.LOG: 0, Artifact.Kind.SCRIPT: 2, Artifact.Kind.TRACE: 3}

    def rank(artifact: Artifact) -> tuple[int, str]:
        named = artifact.kind == Artifact.Kind.SCRIPT and artifact.path.rsplit("/", 1)[-1] in command
        return (1 if named else kind_rank.get(artifact.kind, 4), artifact.path)

    return sorted(job.artifacts.all(), key=rank)


def load_evidence(job: Job, thresholds: dict) -> Evidence:
    logs, scripts, traces = [], [], []
    # A job can bring a whole repository: triage reads at most TRIAGE_READ_FILES of its files and
    # TRIAGE_READ_BYTES in all (the file that crosses the budget is read up to it), so one job cannot
    # take a worker's memory; the evidence says what was left unread.
    budget, contents, read, unread, cut = settings.TRIAGE_READ_BYTES, {}, 0, 0, False
    for artifact in _reading_order(job):
        if read >= settings.TRIAGE_READ_FILES or budget <= 0:
            unread += 1
            continue
        try:
            content = _read(artifact.file.name, limit=budget)
        except OSError:
            logger.warning("Artifact %s of job %s is missing from storage", artifact.path, job)
            continue
        contents[artifact.pk] = content
        read += 1
        budget -= len(content)
        cut = cut or (budget <= 0 and len(content) < artifact.size)
    for artifact in job.artifacts.all():  # in the job's own order (kind, path), as the rules always saw them
        if artifact.pk not in contents:
            continue
        content = contents.pop(artifact.pk)
        if artifact.kind == Artifact.Kind.LOG:
            logs.append((artifact.path, content.decode("utf-8", errors="replace")))
        elif artifact.kind == Artifact.Kind.SCRIPT:
            scripts.append((artifact.path, content.decode("utf-8", errors="replace")))
        elif artifact.kind == Artifact.Kind.TRACE:
            traces.append((artifact.path, content))
    evidence = build_evidence(
        job_info(job), load_series(job), logs=logs, scripts=scripts, traces=traces, thresholds=thresholds
    )
    # A log over the size limit keeps its first and last halves (`fleet.logcut`): its middle is what is missing.
    halved = {path for path, text in logs if MARKER_START in text}
    truncated = [a for a in job.artifacts.all() if a.truncated]
    if any(a.kind == Artifact.Kind.LOG and a.path in halved for a in truncated):
        evidence.notes.append(
            "some logs were over the size limit at ingest: their first and last halves were kept, the lines "
            "between are missing"
        )
    if any(not (a.kind == Artifact.Kind.LOG and a.path in halved) for a in truncated):
        evidence.notes.append("some artifacts were truncated at ingest; late log lines may be missing")
    if unread or cut:
        evidence.notes.append(
            f"triage read {read} of the job's {read + unread} files{', the last of them in part' if cut else ''}"
            f" (at most {settings.TRIAGE_READ_FILES} files and {settings.TRIAGE_READ_BYTES / 2**20:g} MiB):"
            " logs first, then the scripts its command names, the other scripts, traces"
        )
    return evidence


def evaluate_job(job: Job, rule_set: RuleSet) -> tuple[Evidence, TriageResult]:
    evidence = load_evidence(job, rule_set.effective_thresholds())
    return evidence, triage(evidence)


def _price_per_hour(job: Job) -> Decimal | None:
    """The price of a GPU-hour that priced the job (its GPU model's on its cluster, else the cluster's
    default); None when the job has no cost. Its findings are priced at it by `cost_of`, as the job is:
    not at the job's cost over its hours, which is the price only to the cent's rounding."""
    if job.cost is None:
        return None
    price = price_for(job.cluster, job.gpu_model)
    return price.price_per_gpu_hour if price is not None else None


def triage_job(job: Job, rule_set: RuleSet | None = None) -> JobTriage:
    """Triage one job with a rule-set version (the current one by default) and store the result."""
    rule_set = rule_set or RuleSet.current()
    try:
        evidence, result = evaluate_job(job, rule_set)
    except Exception as exc:  # one broken job must not stop a batch; the error is shown on the job
        logger.exception("Triage of job %s failed", job)
        return _store(job, rule_set, None, TriageResult(TriageStatus.ERROR, str(exc)[:300], [], None, None, None))
    try:
        return _store(job, rule_set, evidence, result)
    except (IntegrityError, DataError) as exc:  # a value the database refused: the job shows why, the batch goes on
        logger.exception("The triage result of job %s could not be stored", job)
        reason = f"the result could not be stored: {exc}"[:300]
        return _store(job, rule_set, None, TriageResult(TriageStatus.ERROR, reason, [], None, None, None))


@transaction.atomic
def _store(job: Job, rule_set: RuleSet, evidence: Evidence | None, result: TriageResult) -> JobTriage:
    JobTriage.objects.filter(job=job, rule_set=rule_set).delete()  # cascades to its findings
    stored = JobTriage.objects.create(
        job=job,
        rule_set=rule_set,
        status=result.status,
        reason=without_nul(result.reason)[:300],
        mean_util=result.mean_util,
        coverage=result.coverage,
        unused_gpu_hours=result.unused_gpu_hours,
        # Evidence quotes the job's logs and scripts, which may hold NUL characters no column keeps.
        evidence=storable(evidence.summary()) if evidence is not None else {},
        rules_revision=RULES_REVISION,
    )
    price = _price_per_hour(job)
    facts = {"cpu_count": job.cpu_count, "gpu_count": job.gpu_count, "node_count": job.node_count}
    rows = []
    for finding in result.findings:
        cost = cost_of(finding.gpu_hours, price)  # and its guidance's recoverable_cost is this amount
        rows.append(
            Finding(
                result=stored,
                job=job,
                rule_set=rule_set,
                category=finding.category.value,
                sub_cause=finding.sub_cause,
                confidence=finding.confidence,
                summary=without_nul(finding.summary),
                gpu_hours=finding.gpu_hours,
                cost=cost,
                currency=job.currency if cost is not None else "",
                time_located=finding.time_located,
                evidence=storable(finding.evidence()),
                guidance=storable(
                    guidance_for(
                        finding.category,
                        finding.sub_cause,
                        finding.numbers,
                        gpu_hours=finding.gpu_hours,
                        price_per_gpu_hour=price,
                        currency=job.currency,
                        job=facts,
                    )
                ),
            )
        )
    Finding.objects.bulk_create(rows)
    # The newest version's result is the job's current one.
    results = JobTriage.objects.filter(job=job)
    newest = results.order_by("-rule_set__version").values_list("pk", flat=True).first()
    results.exclude(pk=newest).filter(is_current=True).update(is_current=False)
    if newest != stored.pk:
        stored.is_current = False
    JobTriage.objects.filter(pk=newest).update(is_current=True)
    return stored


def triage_jobs(job_ids: list[int], rule_set: RuleSet | None = None) -> dict[str, int]:
    """Triage the jobs that still exist among `job_ids`; returns counts by status."""
    rule_set = rule_set or RuleSet.current()
    counts: dict[str, int] = {}
    jobs = Job.objects.filter(pk__in=job_ids).select_related("cluster").prefetch_related("artifacts", "cluster__prices")
    for job in jobs.iterator(chunk_size=100):
        stored = triage_job(job, rule_set)
        counts[stored.status] = counts.get(stored.status, 0) + 1
    return counts


def rescan_and_triage(job: Job, rule_set: RuleSet) -> tuple[JobTriage, bool]:
    """`manage.py triage --rescan-logs` for one job: its log events found again from its stored logs
    (`fleet.ingest.rescan_log_events`), then the job triaged. The result, and whether the job kept its events
    because a log was missing from storage. Safe to run twice: both steps replace what they stored before."""
    from fleet.ingest import rescan_log_events

    kept = rescan_log_events(job) is None
    return triage_job(job, rule_set), kept


def rescan_and_triage_jobs(job_ids: list[int], rule_set: RuleSet | None = None) -> tuple[dict[str, int], int]:
    """`rescan_and_triage` for the jobs that still exist among `job_ids`: counts by status, and how many
    kept their events (a log missing from storage)."""
    rule_set = rule_set or RuleSet.current()
    counts: dict[str, int] = {}
    missing = 0
    jobs = (
        Job.objects.filter(pk__in=job_ids)
        .select_related("cluster")
        .prefetch_related("artifacts", "cluster__prices")
        .order_by("pk")
    )
    for job in jobs.iterator(chunk_size=100):
        stored, kept = rescan_and_triage(job, rule_set)
        missing += kept
        counts[stored.status] = counts.get(stored.status, 0) + 1
    return counts, missing


def enqueue_triage(job_ids: list[int], rule_set: RuleSet | None = None, *, patient: bool = True) -> None:
    """Queue triage of these jobs (in batches) once the current transaction commits.

    `patient` rides out a broker restart (imports, workers); a web request passes False so that it
    fails at once instead of hanging while the broker is down.
    """
    rule_set_id = rule_set.pk if rule_set else None
    for first in range(0, len(job_ids), RETRIAGE_BATCH):
        batch = list(job_ids[first : first + RETRIAGE_BATCH])
        transaction.on_commit(lambda batch=batch: queue_triage(batch, rule_set_id, patient=patient))


def queue_triage(
    job_ids: list[int], rule_set_id: int | None, retriage_run_id: int | None = None, *, patient: bool = True
) -> None:
    from fleet.tasking import publish
    from triage.tasks import triage_jobs_task

    if not patient:  # from a page: QueueUnreachable, saying so, at once
        publish(triage_jobs_task, (job_ids, rule_set_id, retriage_run_id), not_done="no triage was queued")
        return
    triage_jobs_task.apply_async((job_ids, rule_set_id, retriage_run_id), retry_policy=QUEUE_RETRY_POLICY)


def untriaged_jobs(older_than: timedelta):
    """Jobs without a current triage result, stored or changed more than `older_than` ago (younger
    ones are most likely still queued)."""
    return without_current_triage(Job.objects.filter(updated_at__lt=timezone.now() - older_than))


def sweep_untriaged(older_than: timedelta, limit: int) -> int:
    """Queue the triage of jobs that have none: the safety net for triage tasks lost with the
    broker (an import that ended while Redis was down and stayed down past the publish retries,
    a queue flushed by hand). Returns how many jobs were queued; at most `limit` per sweep."""
    job_ids = list(untriaged_jobs(older_than).order_by("pk").values_list("pk", flat=True)[:limit])
    if job_ids:
        logger.warning("Queuing the triage of %d jobs that had none (lost triage tasks?)", len(job_ids))
        enqueue_triage(job_ids)
    return len(job_ids)


def outdated_results():
    """Current triage results made by an older revision of the rules' code (one a job at most): jobs
    whose findings do not say what the deployed rules would."""
    return JobTriage.objects.filter(is_current=True, rules_revision__lt=RULES_REVISION)


CATCHUP_KEY = "triage:rules-catchup"  # the jobs the last sweep queued for re-triage with newer rules


def sweep_outdated(limit: int) -> int:
    """After an upgrade whose rules conclude or say something else (`triage.rules.RULES_REVISION`),
    queue the re-triage of up to `limit` jobs whose current result an older revision made, the longest
    triaged first, with the current rule set (as a new import's triage is queued). Returns how many.

    Idempotent: a job re-triaged twice gets the same result. Bounded: while the batch the last sweep
    queued still has a job at an older revision (workers busy, or the task not reached yet), nothing
    more is queued; the mark lasts four sweep intervals, so a batch lost with the broker is queued again.
    A job at the deployed revision is never queued (no churn)."""
    waiting = cache.get(CATCHUP_KEY)
    if waiting and outdated_results().filter(job_id__in=waiting).exists():
        return 0
    job_ids = list(outdated_results().order_by("triaged_at", "pk").values_list("job_id", flat=True)[:limit])
    if job_ids:
        logger.info(
            "Queuing the re-triage of %d jobs whose findings older rules made (revision < %d)",
            len(job_ids),
            RULES_REVISION,
        )
        cache.set(CATCHUP_KEY, job_ids, timeout=4 * 60 * settings.TRIAGE_SWEEP_MINUTES)
        enqueue_triage(job_ids)
    return len(job_ids)


@dataclass(frozen=True)
class SavedRuleSet:
    """What a save made: the new version, and what it changed from."""

    rule_set: RuleSet
    run: RetriageRun  # the background re-triage of every job with it
    previous: dict[str, float]  # the thresholds of the version it follows, as compared under the lock


def save_rule_set(thresholds: dict, *, user=None, note: str = "") -> SavedRuleSet | None:
    """A new rule-set version with these thresholds, and the background re-triage of every job; None
    (no version, no re-triage) when they are the current version's. The comparison is made under the
    lock that numbers versions: of two operators saving one change at once, the second is compared
    with the first's version, and makes none."""
    RuleSet.current()  # version 1, whose row every save locks, exists
    with transaction.atomic():
        # Every save locks the same row, the first version's: "the newest" changes under a save, so two
        # saves (and a third arriving after one of them) could each lock a different newest row. NO KEY:
        # re-triage workers writing results that point at version 1 take key-share locks, which a plain
        # FOR UPDATE would wait for; two saves still exclude each other.
        RuleSet.objects.select_for_update(no_key=True).order_by("version").first()
        # Read after the lock, in a statement of its own: PostgreSQL's locking read returns the rows as
        # its statement began, without a version committed while it waited.
        latest = RuleSet.objects.order_by("-version").first()
        previous = latest.effective_thresholds()
        if thresholds == previous:
            return None
        rule_set = RuleSet.objects.create(
            version=latest.version + 1, thresholds=thresholds, note=note[:300], created_by=user
        )
        run = RetriageRun.objects.create(rule_set=rule_set, jobs_total=Job.objects.count())
        transaction.on_commit(lambda: queue_retriage(run))
    return SavedRuleSet(rule_set, run, previous)


def queue_retriage(run: RetriageRun) -> None:
    """Queue the re-triage of every job with a new version; with Redis unreachable the run fails,
    saying so on the thresholds page (the version is saved; the jobs keep their findings)."""
    from fleet.tasking import QueueUnreachable, publish
    from triage.tasks import retriage_all_task

    try:
        publish(
            retriage_all_task,
            (run.pk,),
            not_done="the re-triage of every job with it was not queued (the jobs keep their findings)",
            then="re-triage them with manage.py triage --all",
        )
    except QueueUnreachable as exc:
        fail_retriage(run.pk, str(exc))
        run.refresh_from_db()


def run_retriage(run_id: int) -> RetriageRun | None:
    """Fan the re-triage of every job out in batches; each batch task records its progress."""
    run = RetriageRun.objects.filter(pk=run_id).select_related("rule_set").first()
    if run is None:
        return None
    job_ids = list(Job.objects.order_by("pk").values_list("pk", flat=True))
    run.jobs_total, run.jobs_done, run.status = len(job_ids), 0, RetriageRun.Status.RUNNING
    run.save(update_fields=["jobs_total", "jobs_done", "status"])
    if not job_ids:
        finish_retriage(run.pk)
    for first in range(0, len(job_ids), RETRIAGE_BATCH):
        queue_triage(job_ids[first : first + RETRIAGE_BATCH], run.rule_set_id, run.pk)
    run.refresh_from_db()
    return run


def record_progress(run_id: int, done: int) -> None:
    RetriageRun.objects.filter(pk=run_id).update(jobs_done=F("jobs_done") + done)
    finish_retriage(run_id)


def finish_retriage(run_id: int) -> None:
    RetriageRun.objects.filter(pk=run_id, jobs_done__gte=F("jobs_total")).exclude(
        status=RetriageRun.Status.DONE
    ).update(status=RetriageRun.Status.DONE, finished_at=timezone.now())


def fail_retriage(run_id: int, message: str) -> None:
    RetriageRun.objects.filter(pk=run_id).exclude(status=RetriageRun.Status.DONE).update(
        status=RetriageRun.Status.FAILED, error=message[:1000], finished_at=timezone.now()
    )


def current_result(job: Job) -> JobTriage | None:
    return job.triage_results.filter(is_current=True).select_related("rule_set").first()
