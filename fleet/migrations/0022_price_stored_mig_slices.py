"""Kubernetes jobs stored before `gpu_share` on MIG slices are re-priced at their share of the parent GPU.

A job whose pods asked for one MIG profile (its `gpu_resources` label, e.g. `nvidia.com/mig-1g.10gb`) was
priced as that many whole GPUs: its GPU-hours, unused and idle GPU-hours and cost are multiplied by the
slice's share (compute slices / 7, or / 4 for an A30's profiles), as a pull now stores them. Jobs on
shared (time-sliced) GPUs are only named as such: how many replicas a GPU had was never recorded. The
rule is copied here, as a migration must not change with the code.
"""

import re
from decimal import Decimal

from django.db import migrations

MIG = re.compile(r"^nvidia\.com/mig-(?P<slices>[1-7])g\.(?P<memory>\d+)gb(?:\+\w+)*(?P<shared>\.shared)?$")
A30_PROFILES = {"1g.6gb", "2g.12gb", "4g.24gb"}


def _share_and_unit(resources):
    if len(resources) != 1:
        return None
    name = str(resources[0])
    if name == "nvidia.com/gpu.shared":
        return 1.0, "shared GPU replica (replicas unknown, counted whole)"
    match = MIG.match(name)
    if not match:
        return None
    profile = name[len("nvidia.com/mig-") :].removesuffix(".shared")
    share = int(match["slices"]) / (4 if profile.split("+")[0] in A30_PROFILES else 7)
    return share, f"MIG {profile} slice replica" if match["shared"] else f"MIG {profile} slice"


def forwards(apps, schema_editor):
    Job = apps.get_model("fleet", "Job")
    GpuModelPrice = apps.get_model("fleet", "GpuModelPrice")
    prices = {(p.cluster_id, p.gpu_model): p for p in GpuModelPrice.objects.all()}
    jobs = Job.objects.filter(labels__source="kubernetes", gpu_unit="", gpu_share=1.0)
    for job in jobs.iterator():
        found = _share_and_unit((job.labels or {}).get("gpu_resources") or [])
        if found is None:
            continue
        share, unit = found
        job.gpu_share, job.gpu_unit = share, unit
        if share != 1.0:
            job.gpu_hours *= share
            if job.unused_gpu_hours is not None:
                job.unused_gpu_hours *= share
            if job.idle_gpu_hours is not None:
                job.idle_gpu_hours *= share
            price = prices.get((job.cluster_id, job.gpu_model)) or prices.get((job.cluster_id, ""))
            if price is not None:
                job.cost = (Decimal(str(job.gpu_hours)) * price.price_per_gpu_hour).quantize(Decimal("0.01"))
                job.currency = price.currency
        job.save(
            update_fields=[
                "gpu_share",
                "gpu_unit",
                "gpu_hours",
                "unused_gpu_hours",
                "idle_gpu_hours",
                "cost",
                "currency",
            ]
        )


class Migration(migrations.Migration):
    dependencies = [("fleet", "0021_job_gpu_share")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
