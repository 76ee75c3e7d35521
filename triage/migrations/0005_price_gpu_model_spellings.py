"""Jobs are priced by their GPU model's price row in any of its spellings (`fleet.gpu_models`).

Before, a price row priced only the jobs whose GPU model was spelt exactly as the row: GPU Feature
Discovery's `NVIDIA-H100-80GB-HBM3` (a pod's node selector) and dcgm-exporter's `NVIDIA H100 80GB HBM3`
were two models, so the jobs of the spelling without a row went unpriced or took the cluster's default
price. Each job without a row of its own spelling whose model has a row in another spelling is re-priced
at that row, and its findings with it (their cost and what their fix would recover); every other job
keeps its price. The rules (the key names are matched by, and `fleet.money.cost_of`) are copied here, as
a migration must not change with the code. In triage's migrations, as it re-prices findings after their
jobs (fleet never depends on triage).
"""

import re
from decimal import ROUND_HALF_UP, Decimal, localcontext

from django.db import migrations

BATCH = 2000
SEPARATORS = re.compile(r"[\s_\-]+")
VENDOR = re.compile(r"^(?:NVIDIA-)?(?:TESLA-)?")
GFD_SUFFIXES = re.compile(r"(?:-MIG-[1-7]G\.\d+GB(?:\+[A-Z]+)*)?(?:-SHARED)?$")


def _key(name):
    key = SEPARATORS.sub("-", " ".join(str(name or "").split()).upper()).strip("-")
    key = GFD_SUFFIXES.sub("", key) or key
    return VENDOR.sub("", key) or key


def _cost(gpu_hours, price):
    if price is None:
        return None
    with localcontext() as context:
        context.prec = 60
        exact = Decimal(repr(float(gpu_hours))) * price.price_per_gpu_hour
        return exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def forwards(apps, schema_editor):
    Job = apps.get_model("fleet", "Job")
    GpuModelPrice = apps.get_model("fleet", "GpuModelPrice")
    Finding = apps.get_model("triage", "Finding")
    exact, by_key = set(), {}
    for price in GpuModelPrice.objects.exclude(gpu_model="").order_by("gpu_model", "pk"):
        exact.add((price.cluster_id, price.gpu_model))
        by_key.setdefault((price.cluster_id, _key(price.gpu_model)), price)
    if not by_key:
        return
    # Per cluster and GPU model name (few), the row a name without one of its own is now priced by.
    moved = {}
    for cluster_id, gpu_model in Job.objects.order_by().values_list("cluster_id", "gpu_model").distinct():
        if gpu_model and (cluster_id, gpu_model) not in exact:
            price = by_key.get((cluster_id, _key(gpu_model)))
            if price is not None:
                moved[(cluster_id, gpu_model)] = price
    for (cluster_id, gpu_model), price in moved.items():
        jobs = Job.objects.filter(cluster_id=cluster_id, gpu_model=gpu_model)
        jobs = jobs.only("pk", "gpu_hours", "cost", "currency")
        last = 0
        while batch := list(jobs.filter(pk__gt=last).order_by("pk")[:BATCH]):
            changed = []
            for job in batch:
                cost = _cost(job.gpu_hours, price)
                if cost != job.cost or price.currency != job.currency:
                    job.cost, job.currency = cost, price.currency
                    changed.append(job)
            Job.objects.bulk_update(changed, ["cost", "currency"])
            last = batch[-1].pk
        findings = Finding.objects.filter(job__cluster_id=cluster_id, job__gpu_model=gpu_model)
        changed = []
        for finding in findings.only("pk", "gpu_hours", "cost", "currency", "guidance").iterator(chunk_size=BATCH):
            cost = _cost(finding.gpu_hours, price)
            guidance = finding.guidance if isinstance(finding.guidance, dict) else {}
            if guidance:
                guidance = guidance | {"recoverable_cost": str(cost), "currency": price.currency}
            if cost != finding.cost or price.currency != finding.currency or guidance != (finding.guidance or {}):
                finding.cost, finding.currency = cost, price.currency
                if guidance:
                    finding.guidance = guidance
                changed.append(finding)
        Finding.objects.bulk_update(changed, ["cost", "currency", "guidance"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0026_deletion_lease"),
        ("triage", "0004_price_by_one_rule"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
