"""Kubernetes jobs stored before a pod on a MIG or time-sliced node was its slice or replica are re-priced.

A pod asking for plain `nvidia.com/gpu` on a node whose GPU Feature Discovery product label (the pod's
`nvidia.com/gpu.product` node selector, which the job keeps as its GPU model) ends `-MIG-<profile>` (MIG's
single strategy) or `-SHARED` (time-slicing or MPS without `renameByDefault`) holds a slice or a replica, not
a whole GPU, and a pull now stores it so. A job stored before kept whole-GPU figures: its GPU-hours, unused
and idle GPU-hours and cost are multiplied by its share (a MIG profile's compute slices / 7, an A30's / 4;
a replica's 1 / the `shared_gpu_replicas` of the connector that pulled it, as a pull again would take it),
and so are its findings' GPU-hours and costs and what their fixes would recover, and its triage's unused
GPU-hours. A replica whose connector gives no replicas (or is gone) is only named, *replicas unknown,
counted whole*, as a pull names it. A job is changed once: one that carries a unit (re-priced, or pulled
since) is left alone. In triage's migrations, as it re-prices findings after their jobs (fleet never depends
on triage). The rules (the share, the key prices are matched by, `fleet.money.cost_of`) are copied here, as
a migration must not change with the code.
"""

import re
from decimal import ROUND_HALF_UP, Decimal, localcontext

from django.db import migrations

BATCH = 2000
PLAIN = ["nvidia.com/gpu"]
PRODUCT_SUFFIXES = re.compile(r"(?:-MIG-(?P<profile>[1-7]g\.\d+gb(?:\+\w+)*))?(?P<shared>-SHARED)?$")
MIG_PROFILE = re.compile(r"^(?P<slices>[1-7])g\.(?P<memory>\d+)gb(?:\+\w+)*$")
A30_PROFILES = {"1g.6gb", "2g.12gb", "4g.24gb"}
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


def _two_places(hours):
    return float(Decimal(repr(float(hours))).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _replicas(job):
    run = job.ingest_run
    connector = run.connector if run is not None else None
    value = (connector.options or {}).get("shared_gpu_replicas") if connector is not None else None
    try:
        replicas = int(value or 0)
    except (TypeError, ValueError):
        return 0
    return replicas if 0 < replicas <= 1024 else 0


def share_and_unit(product, replicas):
    """(share, unit) of a device on a node of this product label, None for a whole GPU: as the connector's
    `product_resource`, `resource_share` and `resource_unit` have it."""
    match = PRODUCT_SUFFIXES.search(product or "")
    if not match or not (match["profile"] or match["shared"]):
        return None
    profile, shared = match["profile"], bool(match["shared"])
    share = 1.0
    if profile:
        if not MIG_PROFILE.match(profile):
            return None
        share = int(profile[0]) / (4 if profile.split("+")[0] in A30_PROFILES else 7)
    if shared and replicas > 0:
        share /= replicas
    if profile:
        return share, f"MIG {profile} slice replica" if shared else f"MIG {profile} slice"
    return share, "shared GPU replica" if replicas > 0 else "shared GPU replica (replicas unknown, counted whole)"


def _scaled(value, share):
    return value * share if value is not None else None


def forwards(apps, schema_editor):
    Job = apps.get_model("fleet", "Job")
    GpuModelPrice = apps.get_model("fleet", "GpuModelPrice")
    Finding = apps.get_model("triage", "Finding")
    JobTriage = apps.get_model("triage", "JobTriage")
    exact, by_key = {}, {}
    for price in GpuModelPrice.objects.order_by("gpu_model", "pk"):
        exact[(price.cluster_id, price.gpu_model)] = price
        by_key.setdefault((price.cluster_id, _key(price.gpu_model)), price)

    def price_of(cluster_id, gpu_model):  # the model's row in its spelling, else in another, else the default
        return (
            exact.get((cluster_id, gpu_model))
            or by_key.get((cluster_id, _key(gpu_model)))
            or exact.get((cluster_id, ""))
        )

    jobs = (
        Job.objects.filter(labels__source="kubernetes", gpu_unit="", gpu_share=1.0)
        .filter(gpu_model__contains="-")
        .select_related("ingest_run__connector")
    )
    last = 0
    while batch := list(jobs.filter(pk__gt=last).order_by("pk")[:BATCH]):
        last = batch[-1].pk
        changed, shares = [], {}
        for job in batch:
            if (job.labels or {}).get("gpu_resources") != PLAIN:
                continue  # a renamed resource, or several: what the pull stored is what it asked for
            found = share_and_unit(job.gpu_model, _replicas(job))
            if found is None:
                continue
            share, unit = found
            job.gpu_share, job.gpu_unit = share, unit
            if share != 1.0:
                job.gpu_hours *= share
                job.unused_gpu_hours = _scaled(job.unused_gpu_hours, share)
                job.idle_gpu_hours = _scaled(job.idle_gpu_hours, share)
                price = price_of(job.cluster_id, job.gpu_model)
                job.cost = _cost(job.gpu_hours, price)
                job.currency = price.currency if price is not None else ""
                shares[job.pk] = (share, price if job.cost is not None else None)
            changed.append(job)
        fields = ["gpu_share", "gpu_unit", "gpu_hours", "unused_gpu_hours", "idle_gpu_hours", "cost", "currency"]
        Job.objects.bulk_update(changed, fields)
        if not shares:
            continue
        results = list(JobTriage.objects.filter(job_id__in=shares).exclude(unused_gpu_hours=None))
        for result in results:
            result.unused_gpu_hours *= shares[result.job_id][0]
        JobTriage.objects.bulk_update(results, ["unused_gpu_hours"])
        findings = list(Finding.objects.filter(job_id__in=shares).only("pk", "job_id", "gpu_hours", "guidance"))
        for finding in findings:
            share, price = shares[finding.job_id]
            finding.gpu_hours *= share
            finding.cost = _cost(finding.gpu_hours, price)
            finding.currency = price.currency if finding.cost is not None else ""
            guidance = finding.guidance if isinstance(finding.guidance, dict) else {}
            if guidance:
                guidance = guidance | {
                    "recoverable_cost": str(finding.cost) if finding.cost is not None else None,
                    "currency": finding.currency,
                }
                if "recoverable_gpu_hours" in guidance:
                    guidance["recoverable_gpu_hours"] = _two_places(finding.gpu_hours)
                finding.guidance = guidance
        Finding.objects.bulk_update(findings, ["gpu_hours", "cost", "currency", "guidance"])


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0027_ssoidentity"),
        ("triage", "0006_rules_revision"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
