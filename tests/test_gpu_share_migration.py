"""Migration 0022: Kubernetes jobs on MIG slices stored before jobs kept a `gpu_share` are re-priced at
their share of the parent GPU; whole GPUs are left as they were."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.apps import apps

from fleet.models import Cluster, GpuModelPrice, Job, Team

H100 = "NVIDIA H100 80GB HBM3"
T = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


@pytest.mark.django_db
def test_kubernetes_jobs_stored_before_are_repriced_at_their_slice_share():
    """Migration 0022: a job pulled before `gpu_share` on a MIG slice was priced at a whole H100."""
    migration = importlib.import_module("fleet.migrations.0022_price_stored_mig_slices")
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model=H100, price_per_gpu_hour=Decimal("7.00"))
    team = Team.objects.create(name="ml", slug="ml")
    common = {"cluster": cluster, "team": team, "user": "u", "start_time": T, "end_time": T + timedelta(hours=1)}
    slice_job = Job.objects.create(
        external_id="a", gpu_count=1, gpu_model=H100, gpu_hours=1.0, unused_gpu_hours=0.5, idle_gpu_hours=0.2,
        cost=Decimal("7.00"), currency="USD",
        labels={"source": "kubernetes", "gpu_resources": ["nvidia.com/mig-1g.10gb"]}, **common,
    )  # fmt: skip
    whole = Job.objects.create(
        external_id="b", gpu_count=2, gpu_model=H100, gpu_hours=2.0, unused_gpu_hours=1.0, cost=Decimal("14.00"),
        currency="USD", labels={"source": "kubernetes", "gpu_resources": ["nvidia.com/gpu"]}, **common,
    )  # fmt: skip
    migration.forwards(apps, None)
    slice_job.refresh_from_db()
    whole.refresh_from_db()
    assert slice_job.gpu_unit == "MIG 1g.10gb slice" and slice_job.gpu_share == pytest.approx(1 / 7)
    assert slice_job.gpu_hours == pytest.approx(1 / 7) and slice_job.cost == Decimal("1.00")
    assert slice_job.unused_gpu_hours == pytest.approx(0.5 / 7) and slice_job.idle_gpu_hours == pytest.approx(0.2 / 7)
    assert (whole.gpu_share, whole.gpu_unit, whole.gpu_hours, whole.cost) == (1.0, "", 2.0, Decimal("14.00"))


def test_a_whole_gpu_job_keeps_its_fingerprint_so_it_is_not_stored_again():
    """A job on whole GPUs hashes as before `gpu_share`/`gpu_unit` existed: re-importing it after the upgrade
    leaves it unchanged; a job on a slice hashes differently, so a pull stores its share."""
    import hashlib
    import json
    from dataclasses import fields, replace

    from fleet.canonical import JobRecord
    from fleet.ingest import fingerprint

    record = JobRecord("j1", "u", "ml", 2, T, T + timedelta(hours=1), cluster="c1", gpu_model=H100)
    before = {f.name: getattr(record, f.name) for f in fields(record)}
    for name in ("raw", "summary_gpu_util", "gpu_share", "gpu_unit"):
        del before[name]
    expected = hashlib.sha256(json.dumps(before, sort_keys=True, default=str).encode()).hexdigest()
    assert fingerprint(record, None, []) == expected
    assert fingerprint(replace(record, gpu_share=1 / 7, gpu_unit="MIG 1g.10gb slice"), None, []) != expected
