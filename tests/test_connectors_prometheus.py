"""The Prometheus connector against a real Prometheus (Debian's package) on a loopback port.

The TSDB is backfilled with `promtool tsdb create-blocks-from openmetrics` from generated
dcgm-exporter-style series; the stored job summary must equal what the generated data says.
In CI a missing `prometheus` binary fails these tests (.ci/run installs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import requests

from fleet import series as series_lib
from fleet.connectors import sync
from fleet.connectors.base import ConnectorSettings
from fleet.connectors.http import HttpClient
from fleet.connectors.models import Connector
from fleet.connectors.prometheus import PrometheusConnector, SeriesRequest
from fleet.models import Job
from tests.conftest import free_port
from tests.connector_servers import FakePlatform
from tests.waiting import wait_for

STEP_S = 15
PLACEHOLDER = 9223372036854775794
END = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
END = END - timedelta(seconds=END.timestamp() % STEP_S)
START = END - timedelta(hours=1)
# (host label name, host, gpu): the job ran on two nodes, one exporter already on the new `hostname`
# label and one still on the old `Hostname`.
JOB_GPUS = [("hostname", "gpu01", 0), ("hostname", "gpu01", 1), ("Hostname", "gpu02", 0), ("Hostname", "gpu02", 1)]


def _binaries() -> tuple[str, str]:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not (prometheus and promtool):
        if os.environ.get("CI"):
            pytest.fail("prometheus and promtool must be installed in CI (apt-get install prometheus)")
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    return prometheus, promtool


def generated_series() -> pd.DataFrame:
    """Long rows (metric, labels, timestamp, value) of the generated exporter data."""
    rng = np.random.default_rng(6)
    rows = []
    times = np.arange(START.timestamp(), END.timestamp() + 10 * 60 + 1, STEP_S)  # 10 min past the end
    for label, host, gpu in JOB_GPUS:
        util = np.clip(rng.normal(55, 25, len(times)).round(1), 0, 100)
        util[: len(times) // 6] = 0.0  # an idle start
        used = rng.integers(1000, 70000, len(times)).astype(float)
        used[7] = PLACEHOLDER  # a DCGM "not supported" sentinel
        labels = f'gpu="{gpu}",{label}="{host}",hpc_job="4242",modelName="NVIDIA A100-SXM4-80GB"'
        for t, u, m in zip(times, util, used, strict=True):
            rows.append(("DCGM_FI_DEV_GPU_UTIL", labels, t, u))
            rows.append(("DCGM_FI_DEV_FB_USED", labels, t, m))
            rows.append(("DCGM_FI_DEV_FB_FREE", labels, t, 81920.0 - (m if m < PLACEHOLDER else 0)))
        # The same GPU, shared with another job at the same time: must never be added to 4242's.
        other = f'gpu="{gpu}",{label}="{host}",hpc_job="5555",modelName="NVIDIA A100-SXM4-80GB"'
        for t in times:
            rows.append(("DCGM_FI_DEV_GPU_UTIL", other, t, 99.0))
    # A Kubernetes pod, scraped without honorLabels: its identity is in exported_namespace/exported_pod.
    k8s = (
        'gpu="3",hostname="node7",exported_namespace="vision",exported_pod="resnet-0",'
        'namespace="gpu-operator",pod="dcgm-exporter-x"'
    )
    for t in times:
        rows.append(("DCGM_FI_DEV_GPU_UTIL", k8s, t, 12.5))
    # A pod on a MIG slice of an A100: dcgm-exporter reports GPU_UTIL there as 0 (unsupported on MIG);
    # the slice's real activity is in GR_ENGINE_ACTIVE.
    mig = (
        'gpu="0",GPU_I_ID="3",GPU_I_PROFILE="1g.10gb",hostname="node8",exported_namespace="llm",'
        'exported_pod="embed-0",namespace="gpu-operator",pod="dcgm-exporter-y"'
    )
    for t in times:
        rows.append(("DCGM_FI_DEV_GPU_UTIL", mig, t, 0.0))
        rows.append(("DCGM_FI_PROF_GR_ENGINE_ACTIVE", mig, t, 0.875))
    return pd.DataFrame(rows, columns=["metric", "labels", "timestamp", "value"])


def openmetrics(frame: pd.DataFrame) -> str:
    lines = []
    for metric, group in frame.groupby("metric", sort=True):
        lines.append(f"# TYPE {metric} gauge")
        for labels, series in group.groupby("labels", sort=True):
            for t, v in zip(series["timestamp"], series["value"], strict=True):
                value = str(int(v)) if v >= PLACEHOLDER else repr(float(v))
                lines.append(f"{metric}{{{labels}}} {value} {int(t)}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def expected_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """What the generated data says job 4242's series is: its GPUs, inside its window, no sentinels."""
    rows = frame[frame["labels"].str.contains('hpc_job="4242"')].copy()
    rows = rows[(rows["timestamp"] >= START.timestamp()) & (rows["timestamp"] <= END.timestamp())]
    rows = rows[rows["value"] < 9.2e18]
    rows["host"] = rows["labels"].str.extract(r'ostname="([^"]+)"')[0]
    rows["gpu"] = rows["labels"].str.extract(r'gpu="(\d+)"')[0].astype(int)
    wide = rows.pivot_table(index=["timestamp", "host", "gpu"], columns="metric", values="value").reset_index()
    out = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(wide["timestamp"], unit="s", utc=True),
            "host": wide["host"],
            "gpu": wide["gpu"],
            "gpu_util": wide["DCGM_FI_DEV_GPU_UTIL"],
            "gpu_mem_used_mib": wide["DCGM_FI_DEV_FB_USED"],
            "gpu_mem_total_mib": wide["DCGM_FI_DEV_FB_USED"] + wide["DCGM_FI_DEV_FB_FREE"],
        }
    )
    return series_lib.normalize(out)[0]


@pytest.fixture(scope="module")
def prometheus_server(tmp_path_factory):
    prometheus, promtool = _binaries()
    folder = tmp_path_factory.mktemp("prometheus")
    data = generated_series()
    tsdb = backfilled_tsdb(promtool, folder, openmetrics(data))
    with running_prometheus(
        prometheus, folder, "global:\n  scrape_interval: 15s\nscrape_configs: []\n", f"--storage.tsdb.path={tsdb}"
    ) as url:
        yield url, data


def backfilled_tsdb(promtool: str, folder: Path, openmetrics_text: str) -> Path:
    """A Prometheus TSDB in `folder` holding this OpenMetrics text (ending in `# EOF`), as promtool backfills it."""
    (folder / "data.om").write_text(openmetrics_text)
    tsdb = folder / "tsdb"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(folder / "data.om"), str(tsdb)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return tsdb


@contextmanager
def running_prometheus(binary: str, folder: Path, config: str, *flags: str):
    """A Prometheus on a free loopback port with this configuration, until the block ends: its URL."""
    (folder / "prometheus.yml").write_text(config)
    port = free_port()
    log = open(folder / "prometheus.log", "w+")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={folder / 'prometheus.yml'}",
            "--storage.tsdb.retention.time=3650d",
            f"--web.listen-address=127.0.0.1:{port}",
            *flags,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def readiness() -> str:
        if process.poll() is not None:
            return f"exited ({process.returncode})"
        try:
            return f"HTTP {requests.get(f'{url}/-/ready', timeout=1).status_code}"
        except requests.ConnectionError:
            return "not listening"

    def log_tail() -> str:
        log.seek(0)
        return log.read()[-3000:]

    try:
        ready = wait_for(
            "prometheus to be ready",
            readiness,
            60,
            until=lambda now: now == "HTTP 200" or now.startswith("exited"),
            every=0.2,
            detail=log_tail,
        )
        if ready != "HTTP 200":
            pytest.fail(f"prometheus did not start: {ready}\n{log_tail()}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.mark.django_db
def test_a_pulled_job_summary_equals_the_generated_data(prometheus_server, settings):
    settings.CONNECTOR_HTTP_BACKOFF = 0.01
    url, data = prometheus_server
    prom = Connector.objects.create(
        name="prom", kind="prometheus", url=url, options={"step": f"{STEP_S}s", "max_points": 50}
    )
    job = {
        "job_id": "4242",
        "user": "alice",
        "team": "vision",
        "gpu_count": 4,
        "start_time": START.isoformat(),
        "end_time": END.isoformat(),
        "labels": {"hpc_job": "4242", "hosts": ["gpu01", "gpu02"]},
    }
    with FakePlatform() as platform:
        platform.route("/jobs/", lambda path, query: (200, {"artifacts": []}, {}))
        platform.route("/jobs", lambda path, query: (200, {"jobs": [job], "next_cursor": "1", "has_more": False}, {}))
        source = Connector.objects.create(name="platform", kind="generic", url=platform.url, metrics_from=prom)
        result = sync.sync_connector(source.pk)
    assert result.status == "succeeded", result.errors

    stored = Job.objects.get(external_id="4242")
    expected = series_lib.summarize(expected_frame(data), start=START, end=END, gpu_count=4)
    assert stored.sample_count == expected.sample_count == 4 * 241
    assert stored.mean_gpu_util == pytest.approx(expected.mean_gpu_util, rel=1e-6)
    assert stored.peak_gpu_mem_util == pytest.approx(expected.peak_gpu_mem_util, rel=1e-6)
    assert stored.idle_gpu_hours == pytest.approx(expected.idle_gpu_hours, rel=1e-6)
    assert stored.unused_gpu_hours == pytest.approx(expected.unused_gpu_hours, rel=1e-6)
    assert stored.coverage == pytest.approx(expected.coverage)
    # The series itself: every point of the generated data, none past the end, the sentinel gone.
    frame = series_lib.from_parquet_bytes(stored.series_file.read())
    assert frame["timestamp"].max() == pd.Timestamp(END)
    assert sorted(frame.groupby(["host", "gpu"]).size().to_dict()) == [
        ("gpu01", 0),
        ("gpu01", 1),
        ("gpu02", 0),
        ("gpu02", 1),
    ]
    # The GPUs shared with job 5555 (at 99 %) carry 4242's own readings, never a sum.
    np.testing.assert_allclose(frame["gpu_util"], expected_frame(data)["gpu_util"])
    assert frame["gpu_mem_used_mib"].isna().sum() == 4  # one sentinel per GPU, dropped


def test_the_exported_pod_variant_is_autodetected(prometheus_server):
    url, _ = prometheus_server
    settings = ConnectorSettings(name="prom", kind="prometheus", url=url, options={"step": "15s"}, backoff_s=0.01)
    connector = PrometheusConnector(settings, HttpClient(settings))
    assert {"exported_pod", "hpc_job", "hostname", "Hostname"} <= connector.labels()
    frame = connector.fetch_job_series(SeriesRequest(start=START, end=END, namespace="vision", pods=("resnet-0",)))
    assert len(frame) == 241 and set(frame["host"]) == {"node7"} and set(frame["gpu"]) == {3}
    assert frame["gpu_util"].eq(12.5).all()


def test_a_pod_on_a_mig_slice_is_as_busy_as_its_engine_not_idle(prometheus_server):
    url, _ = prometheus_server
    settings = ConnectorSettings(name="prom", kind="prometheus", url=url, options={"step": "15s"}, backoff_s=0.01)
    connector = PrometheusConnector(settings, HttpClient(settings))
    frame = connector.fetch_job_series(SeriesRequest(start=START, end=END, namespace="llm", pods=("embed-0",)))
    assert len(frame) == 241 and set(frame["host"]) == {"node8"} and set(frame["gpu"]) == {0}
    # 87.5 % busy, from GR_ENGINE_ACTIVE; the 0 that GPU_UTIL reports for a MIG instance is not data.
    assert frame["gpu_util"].eq(87.5).all()


def test_label_discovery_asks_over_a_time_range_never_all_of_history(settings):
    """`/api/v1/labels` (how the exporter's label variant is autodetected) was asked without `start`/`end`:
    Thanos and Mimir then look through every block they hold, years of them, and slow down or refuse it.
    Now a job's series are found with the labels of the UTC days its window covers (asked once a day a pull,
    the pull's other jobs of those days reuse them), and a check asks over the last day."""
    settings.CONNECTOR_HTTP_BACKOFF = 0.01
    start = datetime(2026, 3, 10, 22, 30, tzinfo=UTC)
    day = 86_400
    with FakePlatform() as thanos:
        thanos.route("/api/v1/labels", lambda path, query: (200, {"status": "success", "data": ["hpc_job"]}, {}))
        thanos.route(
            "/api/v1/query_range",
            lambda path, query: (200, {"status": "success", "data": {"resultType": "matrix", "result": []}}, {}),
        )
        prom_settings = ConnectorSettings(name="thanos", kind="prometheus", url=thanos.url, backoff_s=0.01)
        connector = PrometheusConnector(prom_settings, HttpClient(prom_settings))
        for hours in (2, 1):  # the second job's days are known already: not asked again
            connector.fetch_job_series(SeriesRequest(start=start, end=start + timedelta(hours=hours), hpc_job="7"))
        asked = [q for p, _, q in thanos.requests if p == "/api/v1/labels"]
        assert [(float(q["start"]), float(q["end"])) for q in asked] == [
            (datetime(2026, 3, 10, tzinfo=UTC).timestamp(), datetime(2026, 3, 11, tzinfo=UTC).timestamp()),
            (datetime(2026, 3, 11, tzinfo=UTC).timestamp(), datetime(2026, 3, 12, tzinfo=UTC).timestamp()),
        ]
        before = time.time()
        assert connector.check() == {"labels": ["hpc_job"]}
        check = [q for p, _, q in thanos.requests if p == "/api/v1/labels"][-1]
        assert before - day - 5 <= float(check["start"]) and float(check["end"]) - float(check["start"]) == day
        assert float(check["end"]) <= time.time() + 5
        # A long job (here 10 days) is one request over its own window, not one a day.
        connector.fetch_job_series(SeriesRequest(start=start, end=start + timedelta(days=10), hpc_job="8"))
        last = [q for p, _, q in thanos.requests if p == "/api/v1/labels"][-1]
        assert (float(last["start"]), float(last["end"])) == (
            start.timestamp(),
            (start + timedelta(days=10)).timestamp(),
        )
