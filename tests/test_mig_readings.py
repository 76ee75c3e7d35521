"""Two MIG slices of one GPU in one job are two readings, pulled from a real Prometheus: they had one
(host, GPU index) between them, and only the first slice's samples were kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fleet.connectors.base import ConnectorSettings
from fleet.connectors.http import HttpClient
from fleet.connectors.prometheus import PrometheusConnector, SeriesRequest
from fleet.series import device_name, mig_device
from tests.test_connectors_prometheus import _binaries, backfilled_tsdb, running_prometheus

END = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
END = END - timedelta(seconds=END.timestamp() % 15)
START = END - timedelta(hours=1)


def test_a_mig_device_is_named_by_its_gpu_and_instance():
    assert device_name(3) == "GPU 3"
    assert device_name(mig_device(0, 2)) == "GPU 0 MIG instance 2"


def test_two_slices_of_one_gpu_in_a_job_are_two_readings(tmp_path):
    prometheus, promtool = _binaries()
    # (node, gpu, instance, pod, engine activity): eval-0 holds slices 1 and 2 of h2's GPU 0, embed-0 one slice
    slices = [("h2", 0, 1, "eval-0", 1.0), ("h2", 0, 2, "eval-0", 0.0), ("h1", 0, 7, "embed-0", 0.5)]
    lines = []
    # dcgm-exporter reports GPU_UTIL on a MIG instance as 0 (unsupported there); the activity is GR_ENGINE's
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"):
        lines.append(f"# TYPE {metric} gauge")
        for node, gpu, instance, pod, value in slices:
            labels = (
                f'gpu="{gpu}",GPU_I_ID="{instance}",GPU_I_PROFILE="3g.40gb",Hostname="{node}",'
                f'exported_pod="{pod}",exported_namespace="ml",pod="dcgm-exporter-x",namespace="gpu-operator"'
            )
            value = value if metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" else 0.0
            stamp = START.timestamp()
            while stamp <= END.timestamp():
                lines.append(f"{metric}{{{labels}}} {value} {int(stamp)}")
                stamp += 15
    lines.append("# EOF")
    tsdb = backfilled_tsdb(promtool, tmp_path, "\n".join(lines) + "\n")
    config = "global:\n  scrape_interval: 15s\nscrape_configs: []\n"
    with running_prometheus(prometheus, tmp_path, config, f"--storage.tsdb.path={tsdb}") as url:
        settings = ConnectorSettings(name="prom", kind="prometheus", url=url, options={"step": "15s"}, backoff_s=0.01)
        connector = PrometheusConnector(settings, HttpClient(settings))
        evaluation = connector.fetch_job_series(SeriesRequest(start=START, end=END, namespace="ml", pods=("eval-0",)))
        embed = connector.fetch_job_series(SeriesRequest(start=START, end=END, namespace="ml", pods=("embed-0",)))
    assert set(evaluation["gpu"]) == {mig_device(0, 1), mig_device(0, 2)}
    assert len(evaluation) == 2 * 241
    summary = evaluation.pipe(lambda f: f.groupby("gpu")["gpu_util"].mean()).to_dict()
    assert summary == {mig_device(0, 1): 100.0, mig_device(0, 2): 0.0}
    # a job on one slice of a GPU keeps the GPU's own index, as before
    assert set(embed["gpu"]) == {0} and embed["gpu_util"].eq(50.0).all()
