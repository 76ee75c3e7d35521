"""Stored amounts are brought to the one rule that now prices them (`fleet.money.cost_of`).

Before it, an import rounded a job's cost half a cent to even (0.125 GPU-hours at 1.00: 0.12) and a price
change re-priced it in SQL (binary floating point, half away from zero: 0.13); a finding was priced at its
job's rounded cost over its hours and its fix's `recoverable_cost` at its hours rounded to 4 places. So
that a job imported before the upgrade and the same job imported after it carry the same amount, and a
finding's cost is its fix's `recoverable_cost`, every job's cost and every finding's cost (with its
guidance's `recoverable_cost`, `currency` and `recoverable_gpu_hours`) is computed again by the rule: the
GPU-hours (as their shortest decimal) times the price of the job's cluster and GPU model (else the
cluster's default), exactly, rounded to the cent half a cent up. Only the rows that change are written.
In triage's migrations, as it re-prices findings after their jobs (fleet never depends on triage). The
rule is copied here, as a migration must not change with the code.
"""

from decimal import ROUND_HALF_UP, Decimal, localcontext

from django.db import migrations

BATCH = 2000


def _cost(gpu_hours, price):
    if price is None:
        return None
    with localcontext() as context:
        context.prec = 60
        exact = Decimal(repr(float(gpu_hours))) * price.price_per_gpu_hour
        return exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def _two_places(hours):
    return float(Decimal(repr(float(hours))).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _batches(queryset):
    last = 0
    while batch := list(queryset.filter(pk__gt=last).order_by("pk")[:BATCH]):
        yield batch
        last = batch[-1].pk


def forwards(apps, schema_editor):
    Job = apps.get_model("fleet", "Job")
    GpuModelPrice = apps.get_model("fleet", "GpuModelPrice")
    Finding = apps.get_model("triage", "Finding")
    prices = {(p.cluster_id, p.gpu_model): p for p in GpuModelPrice.objects.all()}

    def price_of(cluster_id, gpu_model):
        return prices.get((cluster_id, gpu_model)) or prices.get((cluster_id, ""))

    jobs = Job.objects.only("pk", "cluster_id", "gpu_model", "gpu_hours", "cost", "currency")
    for batch in _batches(jobs):
        changed = []
        for job in batch:
            price = price_of(job.cluster_id, job.gpu_model)
            cost, currency = _cost(job.gpu_hours, price), price.currency if price is not None else ""
            if cost != job.cost or currency != job.currency:
                job.cost, job.currency = cost, currency
                changed.append(job)
        Job.objects.bulk_update(changed, ["cost", "currency"])

    findings = Finding.objects.select_related("job").only(
        "pk", "gpu_hours", "cost", "currency", "guidance", "job__cluster_id", "job__gpu_model", "job__cost"
    )
    for batch in _batches(findings):
        changed = []
        for finding in batch:
            # Priced as triage prices it: at the job's price when the job has a cost (it has, now, when priced).
            price = price_of(finding.job.cluster_id, finding.job.gpu_model) if finding.job.cost is not None else None
            cost = _cost(finding.gpu_hours, price)
            currency = price.currency if cost is not None else ""
            guidance = finding.guidance if isinstance(finding.guidance, dict) else {}
            if guidance:
                guidance = guidance | {
                    "recoverable_cost": str(cost) if cost is not None else None,
                    "currency": currency,
                }
                if "recoverable_gpu_hours" in guidance:
                    guidance["recoverable_gpu_hours"] = _two_places(finding.gpu_hours)
            stale = isinstance(finding.guidance, dict) and guidance != finding.guidance
            if cost != finding.cost or currency != finding.currency or stale:
                finding.cost, finding.currency = cost, currency
                if guidance:
                    finding.guidance = guidance
                changed.append(finding)
        Finding.objects.bulk_update(changed, ["cost", "currency", "guidance"])


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0022_price_stored_mig_slices"),
        ("triage", "0003_feedback"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
