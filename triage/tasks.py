"""Celery tasks of triage: thin wrappers that take ids and call `triage.services`."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings

from fleet.tasking import IdempotentTask
from triage import services
from triage.models import RuleSet


class TriageTask(IdempotentTask):
    def give_up(self, reason: str, job_ids=None, rule_set_id=None, retriage_run_id=None, *args, **kwargs) -> None:
        if retriage_run_id is not None:
            services.fail_retriage(retriage_run_id, f"a batch of {len(job_ids or [])} jobs {reason}")


# Idempotent: a job's result for a rule-set version is replaced, never duplicated.
@shared_task(name="triage.triage_jobs", base=TriageTask)
def triage_jobs_task(job_ids: list[int], rule_set_id: int | None = None, retriage_run_id: int | None = None) -> dict:
    rule_set = RuleSet.objects.filter(pk=rule_set_id).first() if rule_set_id else None
    if rule_set_id and rule_set is None:  # the version was deleted before the worker reached it
        return {}
    counts = services.triage_jobs(job_ids, rule_set)
    if retriage_run_id is not None:
        services.record_progress(retriage_run_id, len(job_ids))
    return counts


# Idempotent: a job's log events are found again in place of its stored ones, and its result for the
# version replaced. `manage.py triage --all --rescan-logs` fans these out when a broker is configured.
@shared_task(name="triage.rescan_and_triage", base=TriageTask)
def rescan_and_triage_task(job_ids: list[int], rule_set_id: int, retriage_run_id: int | None = None) -> dict:
    rule_set = RuleSet.objects.filter(pk=rule_set_id).first()
    if rule_set is None:  # the version was deleted before the worker reached it
        return {}
    counts, missing = services.rescan_and_triage_jobs(job_ids, rule_set)
    if retriage_run_id is not None:
        services.record_progress(retriage_run_id, len(job_ids))
    return {**counts, "logs_missing": missing}


class RetriageTask(IdempotentTask):
    def give_up(self, reason: str, run_id: int, *args, **kwargs) -> None:
        services.fail_retriage(run_id, reason)


# Idempotent: fanning out again re-triages the same jobs with the same version.
@shared_task(name="triage.retriage_all", base=RetriageTask)
def retriage_all_task(run_id: int) -> dict | None:
    run = services.run_retriage(run_id)
    if run is None:
        return None
    return {"run_id": run.pk, "jobs": run.jobs_total}


@shared_task(name="triage.sweep_untriaged")
def sweep_untriaged_task() -> dict:
    """Every few minutes (beat): queue the triage of jobs that have none, and of a batch of jobs whose
    findings an older revision of the rules' code made (after an upgrade). Idempotent: a job queued
    twice is triaged once more with the same result."""
    queued = services.sweep_untriaged(
        timedelta(minutes=settings.TRIAGE_SWEEP_MINUTES), limit=settings.TRIAGE_SWEEP_LIMIT
    )
    outdated = services.sweep_outdated(limit=settings.TRIAGE_RULES_CATCHUP_BATCH)
    return {"queued": queued, "outdated": outdated}
