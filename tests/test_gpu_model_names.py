"""One physical GPU model, spelt differently by GPU Feature Discovery (a pod's `nvidia.com/gpu.product`),
dcgm-exporter's `modelName`, MLflow/W&B, Slurm's gres types and an operator's price row, is priced by one
price row: a job's model is matched to the price table by `fleet.gpu_models.gpu_model_key`.

Before, a price matched a job's model only spelt exactly alike: `NVIDIA-H100-80GB-HBM3` (a pod's node
selector) and `NVIDIA H100 80GB HBM3` (dcgm-exporter) were two models, so the jobs of one went unpriced (or
at the cluster's default price) while the other's were priced."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.apps import apps
from django.urls import reverse

from fleet.costs import jobs_priced_by, recompute_costs
from fleet.gpu_models import gpu_model_key, gpu_model_name
from fleet.models import GpuModelPrice, IngestRun, Job, price_for
from tests.factories import ClusterFactory, JobFactory, TeamFactory

GFD = "NVIDIA-H100-80GB-HBM3"  # a pod's nvidia.com/gpu.product node selector
DCGM = "NVIDIA H100 80GB HBM3"  # dcgm-exporter's modelName, nvidia-smi, MLflow, W&B


@pytest.mark.parametrize(
    "spelling",
    [
        "NVIDIA-A100-SXM4-80GB",  # GPU Feature Discovery
        "NVIDIA A100-SXM4-80GB",  # dcgm-exporter, MLflow, W&B
        "  NVIDIA  A100-SXM4-80GB ",
        "nvidia a100-sxm4-80gb",
        "A100-SXM4-80GB",
        "A100_SXM4_80GB",
        "NVIDIA-A100-SXM4-80GB-SHARED",  # GFD under time-slicing
        "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",  # GFD's MIG "single" strategy
        "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb+me",
        "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb-SHARED",
    ],
)
def test_every_source_spelling_of_one_gpu_has_one_key(spelling):
    assert gpu_model_key(spelling) == "A100-SXM4-80GB"


def test_older_drivers_tesla_names_match_across_sources():
    assert gpu_model_key("Tesla-V100-SXM2-32GB") == gpu_model_key("Tesla V100-SXM2-32GB") == "V100-SXM2-32GB"


def test_different_gpus_and_site_names_stay_apart():
    """Slurm's gres types are a site's own names: `a100` may be any A100, so it is not guessed to be one."""
    assert gpu_model_key("a100") == gpu_model_key("A100") == "A100"
    assert gpu_model_key("a100_80g") == "A100-80G"
    assert gpu_model_key("a100") != gpu_model_key("NVIDIA A100-SXM4-80GB")
    assert gpu_model_key("A100-80GB") != gpu_model_key("A100-SXM4-80GB")
    assert gpu_model_key("NVIDIA A100 80GB PCIe") != gpu_model_key("NVIDIA A100-SXM4-80GB")
    assert gpu_model_key("a100_1g.10gb") != gpu_model_key("a100")  # a Slurm MIG type is priced by its own row
    assert gpu_model_key("") == gpu_model_key(None) == ""
    assert gpu_model_key("NVIDIA") == "NVIDIA" and gpu_model_key("SHARED") == "SHARED"


def test_the_kept_name_is_the_spelling_with_its_whitespace_tidied():
    assert gpu_model_name("  NVIDIA  A100-SXM4-80GB \n") == "NVIDIA A100-SXM4-80GB"
    assert gpu_model_name("NVIDIA-A100-SXM4-80GB") == "NVIDIA-A100-SXM4-80GB"
    assert gpu_model_name(None) == ""


@pytest.mark.django_db
def test_a_price_under_one_spelling_prices_jobs_under_the_others():
    cluster = ClusterFactory(name="k8s")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model=GFD, price_per_gpu_hour=Decimal("4.00"))
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour=Decimal("1.00"))
    for model in (DCGM, GFD, f"{GFD}-SHARED", "nvidia h100 80gb hbm3"):
        assert price_for(cluster, model).price_per_gpu_hour == Decimal("4.00"), model
    assert price_for(cluster, "NVIDIA A100-SXM4-80GB").gpu_model == ""  # another GPU: the default
    dcgm = JobFactory(cluster=cluster, gpu_model=DCGM, gpu_hours=2.0, cost=None, currency="")
    other = JobFactory(cluster=cluster, gpu_model="NVIDIA A100-SXM4-80GB", gpu_hours=2.0, cost=None)
    recompute_costs(cluster)
    dcgm.refresh_from_db()
    other.refresh_from_db()
    assert (dcgm.cost, dcgm.currency, dcgm.gpu_model) == (Decimal("8.00"), "USD", DCGM)  # its own spelling kept
    assert other.cost == Decimal("2.00")


@pytest.mark.django_db
def test_a_price_row_for_the_exact_spelling_wins_over_another_spelling_of_it():
    """A cluster priced under both spellings before (as the docs asked) keeps each job at its own row."""
    cluster = ClusterFactory(name="k8s")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model=GFD, price_per_gpu_hour=Decimal("4.00"))
    GpuModelPrice.objects.create(cluster=cluster, gpu_model=DCGM, price_per_gpu_hour=Decimal("5.00"))
    assert price_for(cluster, GFD).price_per_gpu_hour == Decimal("4.00")
    assert price_for(cluster, DCGM).price_per_gpu_hour == Decimal("5.00")


@pytest.mark.django_db
def test_deleting_a_price_counts_the_jobs_of_every_spelling_it_prices():
    cluster = ClusterFactory(name="k8s")
    price = GpuModelPrice.objects.create(cluster=cluster, gpu_model=GFD, price_per_gpu_hour=Decimal("4.00"))
    default = GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour=Decimal("1.00"))
    JobFactory(cluster=cluster, gpu_model=GFD)
    JobFactory(cluster=cluster, gpu_model=DCGM)
    JobFactory(cluster=cluster, gpu_model="a100")
    assert jobs_priced_by(price) == 2
    assert jobs_priced_by(default) == 1


def price_rows(*rows) -> dict:
    """The settings page's price table as posted: `rows` of (price or None, cluster, model, amount)."""
    form = {"form-TOTAL_FORMS": str(len(rows)), "form-MIN_NUM_FORMS": "0"}
    form["form-INITIAL_FORMS"] = str(sum(1 for row in rows if row[0] is not None))
    for i, (price, cluster, model, amount) in enumerate(rows):
        form |= {
            f"form-{i}-id": str(price.pk) if price else "",
            f"form-{i}-cluster": str(cluster.pk),
            f"form-{i}-gpu_model": model,
            f"form-{i}-price_per_gpu_hour": amount,
            f"form-{i}-currency": "USD",
        }
    return form


@pytest.mark.django_db
def test_the_settings_page_prices_every_spelling_and_its_unpriced_list_empties(client, operator):
    cluster = ClusterFactory(name="k8s")
    JobFactory(cluster=cluster, gpu_model=GFD, gpu_hours=3.0, cost=None, currency="")
    JobFactory(cluster=cluster, gpu_model=DCGM, gpu_hours=1.0, cost=None, currency="")
    client.force_login(operator)
    page = client.get(reverse("dashboard:settings")).content.decode()
    assert f"k8s / {GFD}: 1 job" in page and f"k8s / {DCGM}: 1 job" in page
    typed = "  NVIDIA H100 80GB HBM3 "
    response = client.post(reverse("dashboard:settings"), price_rows((None, cluster, typed, "2.50")))
    assert response.status_code == 302
    assert list(GpuModelPrice.objects.values_list("gpu_model", flat=True)) == [DCGM]  # as typed, tidied
    assert sorted(Job.objects.values_list("cost", flat=True)) == [Decimal("2.50"), Decimal("7.50")]
    page = client.get(reverse("dashboard:settings")).content.decode()
    assert 'id="prices-missing"' not in page
    assert "<code>NVIDIA-H100-80GB-HBM3</code> prices <code>NVIDIA H100 80GB HBM3</code>" in page  # says how


@pytest.mark.django_db
def test_a_second_price_row_for_the_same_gpu_under_another_spelling_is_refused(client, operator):
    cluster = ClusterFactory(name="k8s")
    price = GpuModelPrice.objects.create(cluster=cluster, gpu_model=GFD, price_per_gpu_hour=Decimal("4.00"))
    client.force_login(operator)
    response = client.post(
        reverse("dashboard:settings"),
        price_rows((price, cluster, GFD, "4.00"), (None, cluster, DCGM, "9.00")),
    )
    assert response.status_code == 200
    assert f"k8s already has a price for this GPU model, under the name {GFD}" in response.content.decode()
    assert GpuModelPrice.objects.count() == 1
    other = ClusterFactory(name="slurm")  # the same model on another cluster is a price of its own
    response = client.post(
        reverse("dashboard:settings"),
        price_rows((price, cluster, GFD, "4.00"), (None, other, DCGM, "9.00")),
    )
    assert response.status_code == 302 and GpuModelPrice.objects.count() == 2


@pytest.mark.django_db
def test_a_cluster_priced_under_two_spellings_before_can_still_change_its_prices(client, operator):
    cluster = ClusterFactory(name="k8s")
    gfd = GpuModelPrice.objects.create(cluster=cluster, gpu_model=GFD, price_per_gpu_hour=Decimal("4.00"))
    dcgm = GpuModelPrice.objects.create(cluster=cluster, gpu_model=DCGM, price_per_gpu_hour=Decimal("5.00"))
    client.force_login(operator)
    response = client.post(
        reverse("dashboard:settings"), price_rows((gfd, cluster, GFD, "4.50"), (dcgm, cluster, DCGM, "5.00"))
    )
    assert response.status_code == 302
    gfd.refresh_from_db()
    assert gfd.price_per_gpu_hour == Decimal("4.50")


@pytest.mark.django_db
def test_ingest_keeps_the_sources_spelling_tidied_and_prices_it_by_another_spelling():
    from fleet.canonical import JobRecord
    from fleet.ingest import store_job

    cluster = ClusterFactory(name="k8s")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model=GFD, price_per_gpu_hour=Decimal("4.00"))
    start = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
    record = JobRecord(
        "j1", "u", "ml", 1, start, start + timedelta(hours=2), cluster="k8s", gpu_model=" NVIDIA H100  80GB HBM3"
    )
    run = IngestRun.objects.create(source="connector", archive_path="connector:k8s", archive_name="pull")
    store_job(run, cluster, TeamFactory(name="ml"), record, None, [])
    job = Job.objects.get(external_id="j1")
    assert (job.gpu_model, job.cost) == (DCGM, Decimal("8.00"))


@pytest.mark.django_db
def test_the_migration_reprices_jobs_and_findings_a_spelling_had_left_at_the_default_or_unpriced():
    migration = importlib.import_module("triage.migrations.0005_price_gpu_model_spellings")
    from triage.models import Finding, JobTriage, RuleSet

    priced, unpriced = ClusterFactory(name="k8s"), ClusterFactory(name="bare")
    GpuModelPrice.objects.bulk_create(
        [
            GpuModelPrice(cluster=priced, gpu_model=GFD, price_per_gpu_hour=Decimal("4.00")),
            GpuModelPrice(cluster=priced, gpu_model="", price_per_gpu_hour=Decimal("1.00")),
            GpuModelPrice(cluster=unpriced, gpu_model=DCGM, price_per_gpu_hour=Decimal("3.00")),
        ]
    )  # bulk: no signal re-prices them, as on a database upgraded in place
    at_default = JobFactory(cluster=priced, gpu_model=DCGM, gpu_hours=2.0, cost=Decimal("2.00"), currency="USD")
    left_out = JobFactory(cluster=unpriced, gpu_model=GFD, gpu_hours=1.0, cost=None, currency="")
    exact = JobFactory(cluster=priced, gpu_model=GFD, gpu_hours=1.0, cost=Decimal("4.00"), currency="USD")
    result = JobTriage.objects.create(job=at_default, rule_set=RuleSet.current(), status="classified")
    finding = Finding.objects.create(
        result=result, job=at_default, rule_set=result.rule_set, category="data_loading", confidence=0.9,
        summary="s", gpu_hours=0.5, cost=Decimal("0.50"), currency="USD", evidence={},
        guidance={"recoverable_cost": "0.50", "currency": "USD"},
    )  # fmt: skip
    migration.forwards(apps, None)
    for job in (at_default, left_out, exact, finding):
        job.refresh_from_db()
    assert (at_default.cost, left_out.cost, left_out.currency, exact.cost) == (
        Decimal("8.00"), Decimal("3.00"), "USD", Decimal("4.00"),
    )  # fmt: skip
    assert finding.cost == Decimal("2.00") and finding.guidance["recoverable_cost"] == "2.00"


def _on_product(product: str, gpus: int = 1) -> dict:
    from tests.test_connectors_sync import pod

    start = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
    item = pod("embed-0", "p1", gpus=gpus, start=start, end=start + timedelta(hours=1))
    item["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": product}
    return item


def test_a_pod_on_a_mig_single_strategy_node_is_its_slice_at_the_parent_gpus_price():
    """MIG's single strategy advertises slices as `nvidia.com/gpu`; the node's product label names the
    profile (`…-MIG-1g.5gb`). Such a pod counted as a whole A100 at the A100's price: 7 times its slice."""
    from fleet.connectors.kubernetes import jobs_from_pods

    job = jobs_from_pods([_on_product("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", gpus=2)]).jobs[0]
    assert (job.gpu_count, job.gpu_unit) == (2, "MIG 1g.5gb slice")
    assert job.gpu_share == pytest.approx(1 / 7)
    assert job.gpu_model == "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"  # as the node says; priced by the A100's row
    assert gpu_model_key(job.gpu_model) == gpu_model_key("NVIDIA A100-SXM4-40GB")


def test_a_pod_on_a_time_sliced_node_without_renaming_is_a_replica():
    """Time-slicing without `renameByDefault` leaves replicas as `nvidia.com/gpu`; GFD's product label
    ends `-SHARED`. With `shared_gpu_replicas` each is 1/replicas of the GPU, else counted whole, as a
    renamed `nvidia.com/gpu.shared` is."""
    from fleet.connectors.kubernetes import jobs_from_pods

    job = jobs_from_pods([_on_product("NVIDIA-A100-SXM4-80GB-SHARED")], shared_replicas=4).jobs[0]
    assert (job.gpu_share, job.gpu_unit) == (0.25, "shared GPU replica")
    job = jobs_from_pods([_on_product("NVIDIA-A100-SXM4-80GB-SHARED")]).jobs[0]
    assert (job.gpu_share, job.gpu_unit) == (1.0, "shared GPU replica (replicas unknown, counted whole)")
    job = jobs_from_pods([_on_product("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED")], shared_replicas=2).jobs[0]
    assert (job.gpu_share, job.gpu_unit) == (pytest.approx(1 / 14), "MIG 1g.5gb slice replica")
    job = jobs_from_pods([_on_product("NVIDIA-A100-SXM4-80GB")], shared_replicas=4).jobs[0]
    assert (job.gpu_share, job.gpu_unit) == (1.0, "")  # a whole GPU stays whole


@pytest.mark.django_db
def test_deleting_one_of_two_spellings_rows_says_the_other_prices_its_jobs_then(client, operator):
    """A cluster priced under two spellings before: deleting one row moves its jobs to the other row, not
    to the default price the confirmation named."""
    cluster = ClusterFactory(name="k8s")
    gfd = GpuModelPrice.objects.create(cluster=cluster, gpu_model=GFD, price_per_gpu_hour=Decimal("4.00"))
    dcgm = GpuModelPrice.objects.create(cluster=cluster, gpu_model=DCGM, price_per_gpu_hour=Decimal("5.00"))
    default = GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour=Decimal("1.00"))
    JobFactory(cluster=cluster, gpu_model=DCGM)
    client.force_login(operator)
    form = price_rows((gfd, cluster, GFD, "4.00"), (dcgm, cluster, DCGM, "5.00"), (default, cluster, "", "1.00"))
    page = client.post(reverse("dashboard:settings"), form | {"form-1-DELETE": "on"}).content.decode()
    assert f"<li>k8s / {DCGM} (5 USD per GPU-hour): 1 job, then priced at k8s / {GFD} (4 USD)</li>" in page


def test_a_wandb_runs_gpu_model_is_its_metadatas_gpu():
    from fleet.connectors.wandb import run_gpu_model

    assert run_gpu_model(b'{"gpu": "NVIDIA A100-SXM4-80GB", "gpu_count": 8}') == "NVIDIA A100-SXM4-80GB"
    assert run_gpu_model(b'{"gpu_nvidia": [{"name": "NVIDIA H100 80GB HBM3"}]}') == "NVIDIA H100 80GB HBM3"
    assert run_gpu_model(b'{"program": "train.py"}') == ""
    assert run_gpu_model(b'{"gpu": 3}') == "" and run_gpu_model(b"[1]") == "" and run_gpu_model(b"{cut") == ""
