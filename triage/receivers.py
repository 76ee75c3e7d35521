"""Triage answers fleet's `jobs_ingested` signal by queuing the triage of the new or changed jobs."""

from decimal import Decimal

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from fleet.models import GpuModelPrice
from fleet.signals import jobs_ingested


@receiver(jobs_ingested)
def triage_ingested_jobs(sender, job_ids, run_id=None, **kwargs):
    from triage.services import enqueue_triage

    enqueue_triage(list(job_ids))


@receiver([post_save, post_delete], sender=GpuModelPrice)
def reprice_findings(sender, instance: GpuModelPrice, **kwargs):
    """Keep each finding's cost at its share of its job's cost when prices change (fleet re-prices jobs),
    and the cost its fix would recover with it (the guidance's `recoverable_cost`: the same hours)."""
    from triage.models import Finding

    findings = Finding.objects.filter(job__cluster_id=instance.cluster_id).select_related("job")
    changed = []
    for finding in findings.iterator(chunk_size=2000):
        job = finding.job
        cost = None
        if job.cost is not None and job.gpu_hours:
            cost = (job.cost * Decimal(str(finding.gpu_hours / job.gpu_hours))).quantize(Decimal("0.01"))
        currency = job.currency if cost is not None else ""
        recoverable = {"recoverable_cost": str(cost) if cost is not None else None, "currency": currency}
        guidance = finding.guidance or {}
        stale = guidance and any(guidance.get(key) != value for key, value in recoverable.items())
        if cost != finding.cost or finding.currency != currency or stale:
            finding.cost, finding.currency = cost, currency
            if guidance:
                finding.guidance = guidance | recoverable
            changed.append(finding)
    Finding.objects.bulk_update(changed, ["cost", "currency", "guidance"], batch_size=1000)
