"""Triage reads a stored series blob (`read_series`) into the same timeline as the frame it holds."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd

from fleet import series
from triage.evidence import StoredSeries, read_series
from triage.evidence.timeline import TRIAGE_COLUMNS, build_timeline

START = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)


def stored_frame() -> pd.DataFrame:
    rows = []
    for step in range(40):
        for host, gpu in (("n2", 0), ("n1", 1), ("n1", 0), ("n1", None)):
            rows.append({"timestamp": START + pd.Timedelta(seconds=15 * step), "host": host, "gpu": gpu})
    frame = pd.DataFrame(rows)
    n = len(frame)
    on_gpu = frame["gpu"].notna().to_numpy()
    frame["gpu_util"] = np.where(on_gpu, np.arange(n) % 100, np.nan).astype("float32")
    frame["gpu_mem_used_mib"] = np.where(on_gpu, 1000.0, np.nan).astype("float32")
    frame["gpu_mem_total_mib"] = np.where(on_gpu, 8000.0, np.nan).astype("float32")
    frame["sm_active"] = np.where(on_gpu, 0.5, np.nan).astype("float32")  # not read by triage, but present
    frame["dram_active"] = np.full(n, np.nan, dtype="float32")  # a column without a single value
    frame["cpu_util"] = np.where(on_gpu, np.nan, 40.0).astype("float32")
    normalised, _ = series.normalize(frame)
    return normalised


def test_a_stored_blob_gives_the_timeline_of_its_frame():
    frame = stored_frame()
    stored = read_series(series.to_parquet_bytes(frame))
    assert isinstance(stored, StoredSeries)
    # Metrics with a value are listed, read by triage or not; the empty column is not. Which hold
    # values comes from the blob's column statistics: only the columns triage uses are read.
    assert stored.metrics == ("gpu_util", "gpu_mem_used_mib", "gpu_mem_total_mib", "sm_active", "cpu_util")
    assert set(stored.table.column_names) == {"timestamp", "host", "gpu", *stored.metrics} - {"sm_active"}
    assert set(stored.table.column_names) <= set(TRIAGE_COLUMNS)
    start, end = START.timestamp(), START.timestamp() + 600
    expected = build_timeline(frame, start_s=start, end_s=end)
    got = build_timeline(stored, start_s=start, end_s=end)
    assert got.devices == expected.devices == [("n1", 0), ("n1", 1), ("n2", 0)]
    np.testing.assert_array_equal(got.t, expected.t)
    np.testing.assert_array_equal(got.util, expected.util)
    np.testing.assert_array_equal(got.mem_share, expected.mem_share)
    np.testing.assert_array_equal(got.host["cpu_util"], expected.host["cpu_util"])
    assert got.metrics == expected.metrics


def test_a_blob_in_another_shape_is_read_whole_into_a_frame():
    frame = stored_frame().astype({"gpu": "float64"})  # not the normalised Int16 GPU index
    got = read_series(series.to_parquet_bytes(frame))
    assert isinstance(got, pd.DataFrame)
    pd.testing.assert_frame_equal(got, frame)


def test_the_timeline_does_not_depend_on_the_order_of_the_rows():
    """A normalised series (rows device by device, one time grid) takes the reshaping fast path;
    the same rows shuffled take the general one (factorize and scatter). Both give the same
    timeline, value for value: utilization, memory, per-time means over devices (PCIe, with values
    missing on some devices and times) and host metrics."""
    rng = np.random.default_rng(3)
    steps, gpus = 120, 8
    t = [START + pd.Timedelta(seconds=30 * step) for step in range(steps)]
    frames = []
    for gpu in range(gpus):
        util = rng.uniform(0, 100, steps).astype("float32")  # every sample (a missing one: no common grid)
        pcie = rng.lognormal(20, 0.3, steps).astype("float32")
        pcie[rng.random(steps) < 0.2] = np.nan
        frames.append(
            pd.DataFrame(
                {
                    "timestamp": t,
                    "host": "n1",
                    "gpu": gpu,
                    "gpu_util": util,
                    "gpu_mem_used_mib": rng.uniform(1000, 8000, steps).astype("float32"),
                    "gpu_mem_total_mib": np.float32(8000),
                    "pcie_rx_bytes_per_s": pcie,
                }
            )
        )
    frames.append(
        pd.DataFrame({"timestamp": t, "host": "n1", "cpu_util": rng.uniform(0, 100, steps).astype("float32")})
    )
    normalised, _ = series.normalize(pd.concat(frames, ignore_index=True))
    shuffled = normalised.sample(frac=1.0, random_state=5).reset_index(drop=True)
    start, end = START.timestamp(), START.timestamp() + 30 * steps
    on_grid = build_timeline(normalised, start_s=start, end_s=end)
    scattered = build_timeline(shuffled, start_s=start, end_s=end)
    assert on_grid.devices == scattered.devices == [("n1", gpu) for gpu in range(gpus)]
    for name in ("t", "dt", "util", "mem_share"):
        np.testing.assert_array_equal(getattr(on_grid, name), getattr(scattered, name), err_msg=name)
    np.testing.assert_array_equal(on_grid.gpu_extra["pcie_rx_bytes_per_s"], scattered.gpu_extra["pcie_rx_bytes_per_s"])
    np.testing.assert_array_equal(on_grid.host["cpu_util"], scattered.host["cpu_util"])
    stored = build_timeline(read_series(series.to_parquet_bytes(normalised)), start_s=start, end_s=end)
    np.testing.assert_array_equal(stored.gpu_extra["pcie_rx_bytes_per_s"], on_grid.gpu_extra["pcie_rx_bytes_per_s"])
    np.testing.assert_array_equal(stored.util, on_grid.util)
