"""Chargeback of shared GPUs: a MIG slice is its share of the parent GPU (1g.10gb of an H100 is 1/7 of
its compute), a time-sliced replica 1/replicas of the GPU; two slices of one GPU in a job are two
readings. Pulled from a Kubernetes API (a loopback server) with a real Prometheus holding
dcgm-exporter's series, then priced, as an operator doing chargeback sees it."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from decimal import Decimal

import pytest

from fleet.connectors.kubernetes import jobs_from_pods, resource_share
from fleet.connectors.models import Connector
from fleet.models import Cluster, GpuModelPrice, Job
from fleet.series import device_name, mig_device
from tests.connector_servers import FakePlatform
from tests.test_connectors_kubernetes import T, pull, serve, with_resources
from tests.test_connectors_prometheus import _binaries, backfilled_tsdb, running_prometheus
from tests.test_connectors_sync import pod

H100 = "NVIDIA H100 80GB HBM3"


def test_a_devices_share_of_a_gpu():
    assert resource_share("nvidia.com/gpu") == 1.0
    assert resource_share("nvidia.com/mig-1g.10gb") == pytest.approx(1 / 7)
    assert resource_share("nvidia.com/mig-3g.40gb") == pytest.approx(3 / 7)
    assert resource_share("nvidia.com/mig-7g.80gb") == 1.0
    assert resource_share("nvidia.com/mig-1g.6gb") == pytest.approx(1 / 4)  # an A30 has 4 compute slices
    assert resource_share("nvidia.com/mig-1g.6gb+me") == pytest.approx(1 / 4)
    assert resource_share("nvidia.com/gpu.shared", 4) == pytest.approx(1 / 4)
    assert resource_share("nvidia.com/mig-1g.10gb.shared", 2) == pytest.approx(1 / 14)
    assert resource_share("nvidia.com/gpu.shared") == 1.0  # replicas unknown: counted whole, as before


def test_jobs_from_pods_keep_whole_gpus_unchanged():
    job = jobs_from_pods([pod("llm-0", "p1", gpus=2, start=T, end=T + timedelta(hours=1))]).jobs[0]
    assert job.gpu_count == 2 and job.gpu_share == 1.0 and job.gpu_unit == ""


def test_two_mig_instances_of_one_gpu_are_named_apart():
    assert device_name(3) == "GPU 3"
    assert device_name(mig_device(0, 2)) == "GPU 0 MIG instance 2"


def _tsdb(tmp_path):
    """dcgm-exporter's series for the pods below, as blocks a Prometheus serves."""
    _, promtool = _binaries()
    exporter = 'pod="nvidia-dcgm-exporter-x",namespace="gpu-operator",container="nvidia-dcgm-exporter"'
    # (metric, node, gpu, MIG instance, workload pod, value)
    series = [
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "h1", 0, "7", "embed-0", 0.5),
        # two 3g.40gb slices of one H100 in one job: one busy, one idle
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "h2", 0, "1", "eval-0", 1.0),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "h2", 0, "2", "eval-0", 0.0),
        ("DCGM_FI_DEV_GPU_UTIL", "h4", 0, "", "llm-0", 50.0),
        ("DCGM_FI_DEV_GPU_UTIL", "h4", 1, "", "llm-0", 50.0),
    ]
    # dcgm-exporter reports GPU_UTIL on a MIG instance as 0 (unsupported there): not data
    series += [("DCGM_FI_DEV_GPU_UTIL", *row[1:5], 0.0) for row in series if row[3]]
    # one H100 time-sliced into 4 replicas; dcgm-exporter with virtual GPUs gives each pod the GPU's readings
    series += [("DCGM_FI_DEV_GPU_UTIL", "h3", 0, "", f"nb-{n}", 20.0) for n in range(4)]
    lines = []
    for metric in sorted({s[0] for s in series}):
        lines.append(f"# TYPE {metric} gauge")
        for name, node, gpu, instance, workload, value in series:
            if name != metric:
                continue
            labels = f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",modelName="{H100}",Hostname="{node}",{exporter}'
            labels += f',exported_pod="{workload}",exported_namespace="ml",exported_container="main"'
            if instance:
                labels += f',GPU_I_ID="{instance}",GPU_I_PROFILE="x"'
            stamp = T.timestamp()
            while stamp <= (T + timedelta(hours=1)).timestamp():
                lines.append(f"{metric}{{{labels}}} {value} {int(stamp)}")
                stamp += 15
    lines.append("# EOF")
    tsdb = backfilled_tsdb(promtool, tmp_path, "\n".join(lines) + "\n")
    return tsdb


@pytest.mark.django_db
def test_mig_slices_and_time_sliced_replicas_are_priced_at_their_share(tmp_path, settings, client, operator):
    """Each pod on a MIG slice or a time-sliced replica counted as a whole GPU: 4 notebooks sharing one
    H100 were 4 GPU-hours an hour and 4 x its price, a 1g.10gb slice cost a whole H100, and the two
    3g.40gb slices of one GPU in a job were one reading (the busy one: 100 % on half the GPU time)."""
    settings.CONNECTOR_HTTP_BACKOFF = 0.01
    prometheus, _ = _binaries()
    tsdb = _tsdb(tmp_path)
    hour = {"start": T, "end": T + timedelta(hours=1), "namespace": "ml"}
    pods = [
        with_resources(pod("embed-0", "p1", node="h1", **hour), {"nvidia.com/mig-1g.10gb": "1"}),
        with_resources(pod("eval-0", "p2", node="h2", **hour), {"nvidia.com/mig-3g.40gb": "2"}),
        pod("llm-0", "p3", gpus=2, node="h4", **hour),
        *[with_resources(pod(f"nb-{n}", f"n{n}", node="h3", **hour), {"nvidia.com/gpu.shared": "1"}) for n in range(4)],
    ]
    cluster = Cluster.objects.create(name="c1")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model=H100, price_per_gpu_hour=Decimal("7.00"))
    config = "global:\n  scrape_interval: 15s\nscrape_configs: []\n"
    with (
        running_prometheus(prometheus, tmp_path, config, f"--storage.tsdb.path={tsdb}") as url,
        FakePlatform() as server,
    ):
        serve(server, pods)
        prom = Connector.objects.create(name="prom", kind="prometheus", url=url, options={"step": "15s"})
        result = pull(server, metrics_from=prom, options={"fetch_logs": False, "shared_gpu_replicas": 4})
    assert result.status == "succeeded", result.errors
    jobs = {j.name: j for j in Job.objects.all()}

    embed = jobs["embed-0"]
    assert embed.gpu_count == 1 and embed.gpu_model == H100
    assert embed.gpu_hours == pytest.approx(1 / 7) and embed.cost == Decimal("1.00")
    assert embed.mean_gpu_util == pytest.approx(50.0) and embed.unused_gpu_hours == pytest.approx(0.5 / 7, rel=0.02)

    evaluation = jobs["eval-0"]
    assert evaluation.gpu_hours == pytest.approx(6 / 7) and evaluation.cost == Decimal("6.00")
    # two slices, two readings: the job is half busy over all its GPU time, not 100 % over half of it
    assert evaluation.mean_gpu_util == pytest.approx(50.0) and evaluation.coverage == pytest.approx(1.0, abs=0.01)
    assert evaluation.unused_gpu_hours == pytest.approx(3 / 7, rel=0.02)

    notebooks = [jobs[f"nb-{n}"] for n in range(4)]
    assert [j.cost for j in notebooks] == [Decimal("1.75")] * 4  # one H100-hour, split four ways
    assert sum(j.gpu_hours for j in notebooks) == pytest.approx(1.0)
    assert sum(j.unused_gpu_hours for j in notebooks) == pytest.approx(0.8, rel=0.02)

    llm = jobs["llm-0"]  # whole GPUs: as before
    assert llm.gpu_share == 1.0 and llm.gpu_unit == "" and llm.gpu_hours == pytest.approx(2.0)
    assert llm.cost == Decimal("14.00") and llm.unused_gpu_hours == pytest.approx(1.0, rel=0.02)

    # Triage lays a slice's unused GPU-hours at its causes' doors in the slice's share too: the evidence's
    # unused hours over the whole run are the job's, not those of two whole GPUs.
    from triage.models import RuleSet
    from triage.services import evaluate_job

    for job in (embed, evaluation, notebooks[0], llm):
        evidence, _ = evaluate_job(job, RuleSet.current())
        assert evidence.unused(evidence.job.start_s, evidence.job.end_s) == pytest.approx(
            job.unused_gpu_hours, rel=0.02
        )

    client.force_login(operator)
    page = client.get(f"/jobs/{embed.pk}/").content.decode()
    assert f"1 MIG 1g.10gb slice of {H100}" in page and "1/7 of a GPU" in page
    page = client.get(f"/jobs/{evaluation.pk}/").content.decode()
    assert "2 MIG 3g.40gb slices" in page and "3/7 of a GPU each" in page
    names = {trace["name"] for trace in client.get(f"/jobs/{evaluation.pk}/timeline.json").json()["data"]}
    assert {"h2 GPU 0 MIG instance 1", "h2 GPU 0 MIG instance 2"} <= names  # the timeline's two lines
    page = client.get(f"/jobs/{notebooks[0].pk}/").content.decode()
    assert "1 shared GPU replica" in page and "1/4 of a GPU" in page
    page = client.get(f"/jobs/{llm.pk}/").content.decode()
    assert f"2 × {H100}" in page and "of a GPU" not in page
    # the API and the jobs CSV give the share, for a chargeback outside the product
    api = client.get(f"/api/v1/jobs/{embed.pk}/").json()
    assert api["gpu_share"] == pytest.approx(1 / 7) and api["gpu_unit"] == "MIG 1g.10gb slice"
    assert client.get(f"/api/v1/jobs/{llm.pk}/").json()["gpu_share"] == 1.0
    response = client.get("/jobs/", {"format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    by_name = {row["name"]: row for row in rows}
    assert (by_name["embed-0"]["gpu_share"], by_name["embed-0"]["gpu_unit"]) == ("0.142857", "MIG 1g.10gb slice")
    assert (by_name["llm-0"]["gpu_share"], by_name["llm-0"]["gpu_unit"]) == ("1.0", "")
    # the tables that count a job's GPUs say what they are
    for url in ("/jobs/", f"/teams/{embed.team.slug}/"):
        page = client.get(url).content.decode()
        cell = '<span class="gpu-unit">1 MIG 1g.10gb slice</span> <span class="muted">(1/7 of a GPU)</span>'
        assert cell in page, url


def test_the_readme_gives_the_jobs_csvs_gpu_share_as_the_csv_writes_it(client, operator, team_a):
    """README said the jobs CSV's `gpu_share` is "1 for whole GPUs" where the CSV writes `1.0`, as it writes
    its other figures (`gpu_hours` `2.0`): a decimal column keeps one type whatever a fleet runs on. The
    README's two examples are read from it and checked against the cells the CSV writes."""
    from pathlib import Path

    from tests.factories import JobFactory

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    said = re.search(r"\(`gpu_share`: `?([\d.]+)`? for whole GPUs, `?([\d.]+)`? for a MIG 1g\.10gb slice", readme)
    assert said, "README no longer gives the jobs CSV's gpu_share examples"
    JobFactory(team=team_a, name="whole", gpu_count=2, gpu_share=1.0)
    JobFactory(team=team_a, name="slice", gpu_count=2, gpu_share=1 / 7, gpu_unit="MIG 1g.10gb slice")
    client.force_login(operator)
    response = client.get("/jobs/", {"format": "csv"})
    rows = {
        row["name"]: row
        for row in csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig")))
    }
    assert (rows["whole"]["gpu_share"], rows["slice"]["gpu_share"]) == said.groups()
