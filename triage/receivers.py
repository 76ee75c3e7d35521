"""Triage answers fleet's `jobs_ingested` signal by queuing the triage of the new or changed jobs."""

from django.dispatch import receiver

from fleet.signals import jobs_ingested


@receiver(jobs_ingested)
def triage_ingested_jobs(sender, job_ids, run_id=None, **kwargs):
    from triage.services import enqueue_triage

    enqueue_triage(list(job_ids))
