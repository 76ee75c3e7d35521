"""Triage answers fleet's `jobs_ingested` signal by queuing the triage of the new or changed jobs, and
the idle-alert check of those still running."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from fleet.models import GpuModelPrice, cluster_prices, price_among
from fleet.money import cost_of
from fleet.signals import jobs_ingested


@receiver(jobs_ingested)
def triage_ingested_jobs(sender, job_ids, run_id=None, **kwargs):
    from triage.services import enqueue_triage

    enqueue_triage(list(job_ids))


@receiver(jobs_ingested)
def check_idle_alerts(sender, job_ids, run_id=None, **kwargs):
    """After triage is queued (receivers run in order), queue the idle-alert check of the jobs still
    running (`triage.digests.alerts`), once the current transaction commits."""
    from django.db import transaction

    from triage.digests.alerts import queue_check

    ids = list(job_ids)
    transaction.on_commit(lambda: queue_check(ids))


@receiver([post_save, post_delete], sender=GpuModelPrice)
def reprice_findings(sender, instance: GpuModelPrice, **kwargs):
    """Re-price each finding when its cluster's prices change (fleet re-prices the jobs), and the cost
    its fix would recover with it (the guidance's `recoverable_cost`: the same hours, the same amount).
    Priced as triage priced it: its GPU-hours at its job's price by `fleet.money.cost_of`, the function
    that prices the job, so a finding keeps its amount when its price is saved unchanged."""
    from triage.models import Finding

    prices = cluster_prices(GpuModelPrice.objects.filter(cluster_id=instance.cluster_id))
    findings = Finding.objects.filter(job__cluster_id=instance.cluster_id).select_related("job")
    changed = []
    for finding in findings.iterator(chunk_size=2000):
        job = finding.job
        price = price_among(prices, job.gpu_model)  # the job's, as `fleet.costs.recompute_costs` finds it
        cost = cost_of(finding.gpu_hours, price.price_per_gpu_hour if price else None)
        currency = price.currency if cost is not None else ""
        recoverable = {"recoverable_cost": str(cost) if cost is not None else None, "currency": currency}
        guidance = finding.guidance or {}
        stale = guidance and any(guidance.get(key) != value for key, value in recoverable.items())
        if cost != finding.cost or finding.currency != currency or stale:
            finding.cost, finding.currency = cost, currency
            if guidance:
                finding.guidance = guidance | recoverable
            changed.append(finding)
    Finding.objects.bulk_update(changed, ["cost", "currency", "guidance"], batch_size=1000)
