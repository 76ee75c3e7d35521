"""Chargeback of Slurm MIG slices: a job on a MIG gres type (`gpu:a100_1g.5gb`) is its slice's share of the
parent GPU, priced at the parent's row, as a Kubernetes pod on a slice is. Before, such a job was a whole GPU
priced only by a row named after the exact gres type. Pulled from a loopback slurmrestd (and, for a type that
names no GPU, a loopback Prometheus that answers with dcgm-exporter's `modelName`), as an operator sees it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from fleet.connectors import sync
from fleet.connectors.models import Connector
from fleet.connectors.slurm import parse_sacct
from fleet.gpu_models import gpu_model_key, mig_share, slurm_mig_slice
from fleet.models import Cluster, GpuModelPrice, Job
from tests.connector_servers import FakePlatform
from tests.fixtures.connectors.make_slurm_fixtures import job as sacct_job
from tests.reading import as_read
from tests.test_connectors_sync import _fast_http  # noqa: F401  (the fixture, used by name)

NOW = datetime.now(UTC).replace(microsecond=0)
A100 = "NVIDIA A100-SXM4-80GB"  # dcgm-exporter's modelName of the node's GPUs


def gres(name: str, count: int) -> list[dict]:
    """A job's GPU TRES as sacct --json writes AllocTRES `gres/gpu=<n>,gres/gpu:<type>=<n>`."""
    return [
        {"type": "gres", "name": "gpu", "id": 1001, "count": count},
        {"type": "gres", "name": f"gpu:{name}", "id": 1010, "count": count},
    ]


def sacct(job_id: int, gres_type: str, count: int = 1, *, hours: float = 1.0, nodes: str = "gpu01") -> dict:
    end = NOW - timedelta(minutes=30 + job_id % 100)
    return sacct_job(
        41,
        job_id=job_id,
        name=f"job-{gres_type}",
        user="alice",
        account="vision",
        state="COMPLETED",
        start=int((end - timedelta(hours=hours)).timestamp()),
        end=int(end.timestamp()),
        elapsed=int(hours * 3600),
        gpus=gres(gres_type, count),
        nodes=nodes,
    )


def document(*jobs: dict) -> dict:
    meta = {"plugin": {"data_parser": "data_parser/v0.0.41"}, "slurm": {"release": "24.05.8"}}
    return {"meta": meta, "jobs": list(jobs), "warnings": [], "errors": []}


def test_a_mig_gres_type_is_its_slices_share_of_the_gpu_it_names():
    assert slurm_mig_slice("a100_1g.5gb").parent == "a100"
    assert slurm_mig_slice("a100_1g.5gb").share == pytest.approx(1 / 7)
    assert slurm_mig_slice("nvidia_a100-sxm4-80gb_3g.40gb").parent == "nvidia_a100-sxm4-80gb"
    assert gpu_model_key("nvidia_a100-sxm4-80gb") == gpu_model_key(A100)  # AutoDetect=nvml's names match
    assert (slurm_mig_slice("3g.40gb").parent, slurm_mig_slice("3g.40gb").share) == ("", pytest.approx(3 / 7))
    assert slurm_mig_slice("a30_1g.6gb").share == pytest.approx(1 / 4)  # an A30 has 4 compute slices
    assert slurm_mig_slice("a100") is None and slurm_mig_slice("a100_80g") is None
    assert mig_share("1g.10gb") == pytest.approx(1 / 7) and mig_share("nvidia.com/gpu") is None


def test_sacct_jobs_on_mig_slices_carry_their_share_and_their_parent_gpu():
    parsed = parse_sacct(document(sacct(1, "a100_1g.5gb"), sacct(2, "1g.10gb", 2), sacct(3, "a100", 2)))
    jobs = {job.external_id: job for job in parsed.jobs}
    named = jobs["1"]
    assert (named.gpu_count, named.gpu_model, named.gpu_unit) == (1, "a100", "MIG 1g.5gb slice")
    assert named.gpu_share == pytest.approx(1 / 7) and named.labels["gres_type"] == "a100_1g.5gb"
    # The type names no GPU: counted whole under its own name, as before, and the unit says why
    bare = jobs["2"]
    assert (bare.gpu_count, bare.gpu_model, bare.gpu_share) == (2, "1g.10gb", 1.0)
    assert bare.gpu_unit == "MIG 1g.10gb slice (its GPU unknown, counted whole)"
    whole = jobs["3"]
    assert (whole.gpu_model, whole.gpu_share, whole.gpu_unit) == ("a100", 1.0, "")  # whole GPUs as before


def slurmrestd(server: FakePlatform, jobs: list[dict]) -> None:
    server.route("/slurmdb/v0.0.41/jobs", lambda path, query: (200, document(*jobs), {}))


def slurm(url: str, **fields) -> Connector:
    options = {"api_version": "v0.0.41", "window_hours": 24, "initial_days": 0.5}
    return Connector.objects.create(name="slurm", kind="slurm", url=url, cluster="c1", options=options, **fields)


@pytest.mark.django_db
def test_a_slice_is_priced_at_its_share_of_the_parent_gpus_row_and_the_page_says_so(client, operator):
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="a100", price_per_gpu_hour=Decimal("7.00"))
    with FakePlatform() as server:
        slurmrestd(server, [sacct(11, "a100_1g.5gb"), sacct(12, "a100_3g.40gb", 2), sacct(13, "a100", 1)])
        result = sync.sync_connector(slurm(server.url).pk)
    assert result.status == "succeeded", result.errors
    jobs = {job.external_id: job for job in Job.objects.all()}
    assert jobs["11"].gpu_hours == pytest.approx(1 / 7) and jobs["11"].cost == Decimal("1.00")
    assert jobs["12"].gpu_hours == pytest.approx(6 / 7) and jobs["12"].cost == Decimal("6.00")
    assert jobs["13"].gpu_hours == pytest.approx(1.0) and jobs["13"].cost == Decimal("7.00")

    client.force_login(operator)
    page = as_read(client.get(reverse("dashboard:job-detail", args=[jobs["12"].pk])).content.decode())
    assert "2 MIG 3g.40gb slices of a100" in page
    assert "3/7 of a GPU each: GPU-hours and cost count 0.9 GPU-hours" in page  # 6/7, to the tenth as the jobs list


@pytest.mark.django_db
def test_a_slice_of_an_unnamed_gpu_keeps_its_own_rows_price_and_says_why(client, operator):
    """`gpu:1g.10gb` names no GPU and no metrics source tells the node's: the job is counted whole under
    `1g.10gb`, priced by a row of that name if the site made one (per slice-hour), else unpriced, listed on
    Settings under that name, and its page says the GPU is unknown."""
    Cluster.objects.create(name="c1")
    with FakePlatform() as server:
        slurmrestd(server, [sacct(21, "1g.10gb", 2)])
        result = sync.sync_connector(slurm(server.url).pk)
    assert result.status == "succeeded", result.errors
    job = Job.objects.get(external_id="21")
    assert (job.gpu_model, job.gpu_share, job.cost) == ("1g.10gb", 1.0, None)
    assert job.gpu_hours == pytest.approx(2.0)

    client.force_login(operator)
    page = as_read(client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode())
    assert "2 MIG 1g.10gb slices (its GPU unknown, counted whole) of 1g.10gb" in page
    assert "none: no prices are set for c1." in page
    settings_page = as_read(client.get(reverse("dashboard:settings")).content.decode())
    assert "c1 / 1g.10gb: 1 job, 2.0 GPU-hours" in settings_page

    # A row for the slice's own name prices it per slice-hour, as before
    GpuModelPrice.objects.create(cluster=job.cluster, gpu_model="1g.10gb", price_per_gpu_hour=Decimal("1.50"))
    from fleet.costs import recompute_costs

    recompute_costs(job.cluster)
    job.refresh_from_db()
    assert job.cost == Decimal("3.00")


def prometheus(server: FakePlatform, model: str) -> None:
    """A Prometheus holding dcgm-exporter's series of the job's GPU (no samples needed: only its labels)."""
    labels = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "gpu07", "gpu": "0", "GPU_I_ID": "2"}
    labels |= {"hpc_job": "31", "modelName": model, "UUID": "GPU-7"}
    server.route("/api/v1/labels", lambda path, query: (200, {"status": "success", "data": sorted(labels)}, {}))
    server.route("/api/v1/series", lambda path, query: (200, {"status": "success", "data": [labels]}, {}))
    empty = {"status": "success", "data": {"resultType": "matrix", "result": []}}
    server.route("/api/v1/query_range", lambda path, query: (200, empty, {}))


@pytest.mark.django_db
def test_a_slice_of_an_unnamed_gpu_takes_the_nodes_gpu_from_dcgm_exporter():
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="A100-SXM4-80GB", price_per_gpu_hour=Decimal("7.00"))
    with FakePlatform() as metrics, FakePlatform() as server:
        prometheus(metrics, A100)
        slurmrestd(server, [sacct(31, "3g.40gb", 1, nodes="gpu07")])
        prom = Connector.objects.create(name="prom", kind="prometheus", url=metrics.url)
        result = sync.sync_connector(slurm(server.url, metrics_from=prom).pk)
        assert metrics.count("/api/v1/series") == 1
    assert result.status == "succeeded", result.errors
    job = Job.objects.get(external_id="31")
    assert (job.gpu_model, job.gpu_unit) == (A100, "MIG 3g.40gb slice")
    assert job.gpu_share == pytest.approx(3 / 7) and job.cost == Decimal("3.00")
