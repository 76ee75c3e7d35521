"""The job timeline draws the metrics behind the job's findings (PCIe for a host-GPU transfer finding,
the network for remote reading ...) and offers the series' other metrics, downsampled as GPU util is."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from fleet.canonical import METRICS
from fleet.series import to_parquet_bytes
from tests.factories import JobFactory
from triage.dashboard.timeline import build_timeline
from triage.taxonomy import CATEGORY_METRICS, Category

START = datetime(2026, 11, 2, tzinfo=UTC)


def series_with_pcie(samples: int = 240, period: int = 15, net: bool = True) -> pd.DataFrame:
    """One GPU with PCIe, SM activity and memory; its host's CPU and (optionally) network rx."""
    stamps = pd.date_range(START, periods=samples, freq=f"{period}s", tz="UTC", unit="ms")
    gpu = pd.DataFrame(
        {
            "timestamp": stamps,
            "host": "n1",
            "gpu": pd.array([0] * samples, dtype="Int16"),
            "gpu_util": np.float32(40),
            "gpu_mem_used_mib": np.float32(40000),
            "gpu_mem_total_mib": np.float32(81920),
            "pcie_rx_bytes_per_s": np.linspace(1e8, 3e9, samples).astype("float32"),
            "pcie_tx_bytes_per_s": np.float32(2e8),
            "sm_active": np.float32(0.35),
        }
    )
    host = {"timestamp": stamps, "host": "n1", "gpu": pd.array([None] * samples, dtype="Int16"), "cpu_util": 50.0}
    if net:
        host["net_rx_bytes_per_s"] = np.float32(5e6)
    return pd.concat([gpu, pd.DataFrame(host)], ignore_index=True)


def panels(figure) -> dict[str, str]:
    """Each panel's axis title, by its axis."""
    layout = figure["layout"]
    return {key: value["title"]["text"] for key, value in layout.items() if key.startswith("yaxis")}


def test_every_category_names_only_canonical_metrics():
    assert set(CATEGORY_METRICS) == set(Category)
    assert all(set(metrics) <= set(METRICS) for metrics in CATEGORY_METRICS.values())


def test_an_extra_metric_is_a_panel_in_a_readable_unit_and_downsampled():
    frame = series_with_pcie(samples=20_000, period=1)
    figure = build_timeline(frame, start=START, end=START + timedelta(seconds=20_000),
                            extra=["pcie_rx_bytes_per_s", "sm_active"])  # fmt: skip
    titles = panels(figure)
    assert list(titles.values()) == ["GPU util (%)", "GPU memory (%)", "CPU (%)", "SM active (%)", "PCIe rx (GB/s)"]
    pcie = next(t for t in figure["data"] if t["yaxis"] == "y5")
    assert len(pcie["x"]) <= 1100  # downsampled as GPU util is
    assert max(pcie["y"]) == pytest.approx(3.0, abs=0.01) and min(pcie["y"]) == pytest.approx(0.1, abs=0.01)
    assert "GPU 0: %{y:.3~g}" in pcie["hovertemplate"]  # 0.35 GB/s is not "0"
    sm = next(t for t in figure["data"] if t["yaxis"] == "y4")
    assert set(sm["y"]) == {35.0}  # a ratio drawn as a percentage
    assert figure["layout"]["yaxis4"]["range"] == [0, 105]
    assert figure["layout"]["yaxis5"]["range"][1] >= 3.0


def test_a_metric_the_series_lacks_or_never_filled_is_not_drawn():
    frame = series_with_pcie(net=False).assign(tensor_active=np.nan)
    figure = build_timeline(frame, start=START, end=START + timedelta(hours=1),
                            extra=["net_rx_bytes_per_s", "tensor_active", "no_such_metric"])  # fmt: skip
    assert list(panels(figure).values()) == ["GPU util (%)", "GPU memory (%)", "CPU (%)"]


def _host_gpu_transfer_job(team, **evidence):
    from triage.models import Finding, JobTriage, RuleSet

    job = JobFactory(team=team, start_time=START, end_time=START + timedelta(hours=1))
    # Tensor activity sent empty: a column of the stored series without a value, as a source that has no such counter.
    frame = series_with_pcie().assign(tensor_active=np.float32("nan"))
    job.series_file.save("s.parquet", ContentFile(to_parquet_bytes(frame)))
    result = JobTriage.objects.create(job=job, rule_set=RuleSet.current(), status="classified", is_current=True)
    Finding.objects.create(result=result, job=job, rule_set=result.rule_set, category=Category.HOST_GPU_TRANSFER,
                           confidence=0.9, summary="s", gpu_hours=1.0, evidence=evidence, guidance={})  # fmt: skip
    return job


@pytest.mark.django_db
def test_a_host_gpu_transfer_finding_gets_a_pcie_panel_and_the_rest_are_offered(client, member_a, team_a):
    job = _host_gpu_transfer_job(team_a)
    client.force_login(member_a)
    url = reverse("dashboard:job-timeline", args=[job.pk])
    figure = client.get(url).json()
    assert list(panels(figure).values()) == [
        "GPU util (%)", "GPU memory (%)", "CPU (%)", "PCIe rx (GB/s)", "PCIe tx (MB/s)"]  # fmt: skip
    offered = {m["name"]: m for m in figure["metrics"]}
    # What the series has values of beyond the panels always drawn; nothing it lacks (disk ...) or has empty (tensor).
    assert set(offered) == {"pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s", "sm_active", "net_rx_bytes_per_s"}
    assert offered["pcie_rx_bytes_per_s"]["shown"] and offered["pcie_rx_bytes_per_s"]["causes"] == [
        "Inefficient host-GPU data transfer"]  # fmt: skip
    assert not offered["net_rx_bytes_per_s"]["shown"] and offered["net_rx_bytes_per_s"]["causes"] == []
    # Chosen: exactly those asked for, in the series' order; an unknown name is ignored, not an error.
    chosen = client.get(url, {"metrics": "net_rx_bytes_per_s,sm_active,bogus"}).json()
    assert list(panels(chosen).values()) == ["GPU util (%)", "GPU memory (%)", "CPU (%)", "SM active (%)",
                                             "Network rx (MB/s)"]  # fmt: skip
    assert {m["name"] for m in chosen["metrics"] if m["shown"]} == {"net_rx_bytes_per_s", "sm_active"}
    none = client.get(url, {"metrics": ""}).json()
    assert len(panels(none)) == 3
    # A zoomed window keeps them.
    window = {"start": (START + timedelta(minutes=10)).isoformat(), "end": (START + timedelta(minutes=20)).isoformat()}
    zoomed = client.get(url, {**window, "metrics": "pcie_rx_bytes_per_s"}).json()
    assert "PCIe rx (GB/s)" in panels(zoomed).values()


@pytest.mark.django_db
def test_a_viewer_rating_the_job_blind_is_offered_the_metrics_but_none_drawn_for_a_cause(
    client, member_a, team_a, monkeypatch
):
    """A PCIe panel drawn by itself would give the blind rater the rules' host-GPU transfer finding away."""
    from triage.dashboard import views

    job = _host_gpu_transfer_job(team_a)
    monkeypatch.setattr(views, "findings_hidden_from", lambda user, shown: True)
    client.force_login(member_a)
    figure = client.get(reverse("dashboard:job-timeline", args=[job.pk])).json()
    assert len(panels(figure)) == 3
    assert {m["name"] for m in figure["metrics"]} >= {"pcie_rx_bytes_per_s", "net_rx_bytes_per_s"}
    assert not any(m["shown"] or m["causes"] for m in figure["metrics"])
