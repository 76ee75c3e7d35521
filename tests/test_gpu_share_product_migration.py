"""Migration triage 0007: Kubernetes jobs pulled before a pod on a MIG single-strategy node (`…-MIG-1g.5gb`
product label) or a time-sliced node (`…-SHARED`) was its slice or replica kept whole-GPU figures. The job kept
the node's product label as its GPU model, so they are re-priced at their share, and their findings with them,
once; whole GPUs are left as they were."""

from __future__ import annotations

import importlib
from decimal import Decimal

import pytest
from django.apps import apps

from fleet.connectors.models import Connector
from fleet.models import GpuModelPrice, IngestRun, Job
from tests.factories import ClusterFactory, JobFactory

pytestmark = pytest.mark.django_db

MIGRATION = "triage.migrations.0007_price_stored_product_slices"
A100_40 = "NVIDIA A100-SXM4-40GB"  # the price row, in dcgm-exporter's spelling
SINGLE = "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"  # GFD's product label on a MIG node, single strategy
SHARED = "NVIDIA-A100-SXM4-40GB-SHARED"  # … on a time-sliced node without renameByDefault


def migrate() -> None:
    importlib.import_module(MIGRATION).forwards(apps, None)


def stored(cluster, model: str, *, gpus: int = 1, resources=("nvidia.com/gpu",), run=None, **fields) -> Job:
    """A job as a pull before the product label was read stored it: whole GPUs at the whole GPU's price."""
    hours = float(gpus)
    values = {
        "gpu_hours": hours, "unused_gpu_hours": hours / 2, "idle_gpu_hours": hours / 5,
        "cost": Decimal("7.00") * gpus, "currency": "USD",
    } | fields  # fmt: skip
    return JobFactory(
        cluster=cluster, gpu_model=model, gpu_count=gpus, ingest_run=run,
        labels={"source": "kubernetes", "gpu_resources": list(resources)}, **values,
    )  # fmt: skip


def finding_of(job: Job, gpu_hours: float):
    from triage.models import Finding, JobTriage, RuleSet

    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified")
    cost = Decimal(str(gpu_hours * 7)).quantize(Decimal("0.01"))
    return Finding.objects.create(
        result=result, job=job, rule_set=result.rule_set, category="unreleased_job", confidence=0.9, summary="s",
        gpu_hours=gpu_hours, cost=cost, currency="USD", evidence={},
        guidance={"recoverable_gpu_hours": gpu_hours, "recoverable_cost": str(cost), "currency": "USD"},
    )  # fmt: skip


def pulled_by(name: str, options: dict) -> IngestRun:
    """The run of a pull by a Kubernetes connector with these options (the replicas a pull now divides by)."""
    connector = Connector.objects.create(name=name, kind="kubernetes", url="http://127.0.0.1:1/")
    Connector.objects.filter(pk=connector.pk).update(options=options)
    return IngestRun.objects.create(source=IngestRun.Source.CONNECTOR, connector=connector, archive_name="pull")


def test_a_job_on_a_mig_single_strategy_node_is_repriced_at_its_slice_with_its_findings():
    cluster = ClusterFactory(name="k8s")
    GpuModelPrice.objects.bulk_create([GpuModelPrice(cluster=cluster, gpu_model=A100_40, price_per_gpu_hour=7)])
    job = stored(cluster, SINGLE, gpus=2)
    finding = finding_of(job, 0.7)
    migrate()
    job.refresh_from_db()
    finding.refresh_from_db()
    assert (job.gpu_unit, job.gpu_share) == ("MIG 1g.5gb slice", pytest.approx(1 / 7))
    assert job.gpu_hours == pytest.approx(2 / 7) and job.cost == Decimal("2.00") and job.currency == "USD"
    assert job.unused_gpu_hours == pytest.approx(1 / 7) and job.idle_gpu_hours == pytest.approx(0.4 / 7)
    assert finding.gpu_hours == pytest.approx(0.1) and finding.cost == Decimal("0.70")
    assert finding.guidance["recoverable_gpu_hours"] == 0.1 and finding.guidance["recoverable_cost"] == "0.70"

    migrate()  # once only: a second run (or a pull since) leaves it as it is
    again = Job.objects.get(pk=job.pk)
    assert again.gpu_hours == pytest.approx(2 / 7) and again.cost == Decimal("2.00")


def test_a_replica_takes_its_connectors_replicas_and_without_them_is_named_counted_whole():
    cluster = ClusterFactory(name="k8s")
    GpuModelPrice.objects.bulk_create([GpuModelPrice(cluster=cluster, gpu_model=A100_40, price_per_gpu_hour=7)])
    four = stored(cluster, SHARED, run=pulled_by("four", {"shared_gpu_replicas": 4}))
    unknown = stored(cluster, SHARED, run=pulled_by("unset", {}))
    slice_replica = stored(cluster, f"{SINGLE}-SHARED", run=pulled_by("two", {"shared_gpu_replicas": 2}))
    migrate()
    for job in (four, unknown, slice_replica):
        job.refresh_from_db()
    assert (four.gpu_unit, four.gpu_share, four.cost) == ("shared GPU replica", 0.25, Decimal("1.75"))
    assert (unknown.gpu_unit, unknown.gpu_share, unknown.cost) == (
        "shared GPU replica (replicas unknown, counted whole)", 1.0, Decimal("7.00"),
    )  # fmt: skip
    assert slice_replica.gpu_unit == "MIG 1g.5gb slice replica" and slice_replica.gpu_share == pytest.approx(1 / 14)
    assert slice_replica.cost == Decimal("0.50")


def test_whole_gpus_and_jobs_already_carrying_a_share_are_left_alone():
    cluster = ClusterFactory(name="k8s")
    GpuModelPrice.objects.bulk_create([GpuModelPrice(cluster=cluster, gpu_model=A100_40, price_per_gpu_hour=7)])
    whole = stored(cluster, "NVIDIA-A100-SXM4-40GB", gpus=2)
    pulled_since = stored(cluster, SINGLE, gpu_share=1 / 7, gpu_unit="MIG 1g.5gb slice", gpu_hours=1 / 7)
    mixed = stored(cluster, SINGLE, resources=("nvidia.com/gpu", "nvidia.com/mig-1g.5gb"))
    slurm = JobFactory(cluster=cluster, gpu_model=SINGLE, gpu_hours=1.0, cost=Decimal("7.00"), labels={})
    before = {j.pk: (j.gpu_share, j.gpu_unit, j.gpu_hours, j.cost) for j in (whole, pulled_since, mixed, slurm)}
    migrate()
    after = {j.pk: (j.gpu_share, j.gpu_unit, j.gpu_hours, j.cost) for j in Job.objects.filter(pk__in=before)}
    assert after == before
