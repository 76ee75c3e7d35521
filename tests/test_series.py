from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet import series

START = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def make_frame(samples, **extra) -> pd.DataFrame:
    """samples: (seconds after START, host, gpu, gpu_util) tuples; extra: more metric columns."""
    frame = pd.DataFrame(
        {
            "timestamp": [START + timedelta(seconds=s) for s, *_ in samples],
            "host": [h for _, h, _, _ in samples],
            "gpu": [g for _, _, g, _ in samples],
            "gpu_util": [u for *_, u in samples],
            **extra,
        }
    )
    normalized, _ = series.normalize(frame)
    return normalized


def constant(util: float, gpus=(0,), seconds=range(0, 3600, 60), host="n1"):
    return [(s, host, gpu, util) for gpu in gpus for s in seconds]


def test_constant_40_percent_on_two_gpus_for_an_hour():
    frame = make_frame(constant(40.0, gpus=(0, 1)))
    summary = series.summarize(frame, start=START, end=START + HOUR, gpu_count=2)
    assert summary.sample_count == 120
    assert summary.sampling_period_s == 60
    assert summary.mean_gpu_util == pytest.approx(40.0)
    assert summary.unused_gpu_hours == pytest.approx(1.2)
    assert summary.idle_gpu_hours == 0
    assert summary.covered_gpu_hours == pytest.approx(2.0)
    assert summary.coverage == pytest.approx(1.0)
    assert summary.gaps == 0
    assert summary.peak_gpu_mem_util is None


@pytest.mark.parametrize(("gpu_count", "unused"), [(1, 1.0), (0, 0.0)])
def test_unused_and_idle_hours_never_exceed_the_jobs_allocation(gpu_count, unused):
    """A node's exporter reports all eight GPUs of a job given one (or none): the job's waste read
    8 GPU-hours of 1 and the overview's waste share 980 %, with a negative "used" bar."""
    frame = make_frame(constant(0.0, gpus=range(8)))
    summary = series.summarize(frame, start=START, end=START + HOUR, gpu_count=gpu_count)
    assert summary.unused_gpu_hours == pytest.approx(unused) and summary.idle_gpu_hours == pytest.approx(unused)
    assert summary.unused_gpu_hours <= series.gpu_hours(START, START + HOUR, gpu_count)


def test_a_20_minute_hole_is_missing_data_not_idle():
    seconds = [s for s in range(0, 3600, 60) if not 1200 <= s < 2400]
    summary = series.summarize(make_frame(constant(90.0, seconds=seconds)), start=START, end=START + HOUR, gpu_count=1)
    assert summary.gaps == 1
    assert summary.mean_gpu_util == pytest.approx(90.0)  # the hole does not drag the mean down
    assert summary.idle_gpu_hours == 0
    assert summary.covered_gpu_hours == pytest.approx(2 / 3)
    assert summary.coverage == pytest.approx(2 / 3)
    assert summary.unused_gpu_hours == pytest.approx(0.1 * 2 / 3)


def test_short_pauses_below_the_gap_threshold_are_covered():
    # 60 s sampling with a 4-minute pause: below max(3 x 60 s, 300 s), so not a hole.
    seconds = [s for s in range(0, 3600, 60) if not 600 < s < 840]
    summary = series.summarize(make_frame(constant(50.0, seconds=seconds)), start=START, end=START + HOUR, gpu_count=1)
    assert summary.gaps == 0
    assert summary.coverage == pytest.approx(1.0)


def test_idle_hours_count_samples_below_the_threshold():
    samples = [(s, "n1", 0, 2.0 if s < 1800 else 80.0) for s in range(0, 3600, 60)]
    summary = series.summarize(make_frame(samples), start=START, end=START + HOUR, gpu_count=1)
    assert summary.idle_gpu_hours == pytest.approx(0.5)
    assert summary.mean_gpu_util == pytest.approx(41.0)
    assert summary.unused_gpu_hours == pytest.approx(0.5 * 0.98 + 0.5 * 0.2)
    stricter = series.summarize(make_frame(samples), start=START, end=START + HOUR, gpu_count=1, idle_threshold=1.0)
    assert stricter.idle_gpu_hours == 0


def test_peak_memory_utilization():
    samples = constant(50.0, seconds=range(0, 600, 60))
    used = np.linspace(1000, 60000, len(samples))
    frame = make_frame(samples, gpu_mem_used_mib=used, gpu_mem_total_mib=[80000.0] * len(samples))
    summary = series.summarize(frame, start=START, end=START + HOUR, gpu_count=1)
    assert summary.peak_gpu_mem_util == pytest.approx(75.0)


def test_host_rows_nan_util_and_samples_outside_the_job_do_not_count():
    samples = constant(60.0) + [(s, "n1", None, 99.0) for s in range(0, 3600, 60)]  # host-level rows
    samples += [(-600, "n1", 0, 0.0), (4000, "n1", 0, 0.0)]  # before start, after end
    frame = make_frame(samples)
    first_in_job = (frame["timestamp"] == START) & (frame["gpu"] == 0).fillna(False)
    frame.loc[first_in_job, "gpu_util"] = np.nan
    summary = series.summarize(frame, start=START, end=START + HOUR, gpu_count=1)
    assert summary.sample_count == 59
    assert summary.mean_gpu_util == pytest.approx(60.0)


def test_the_last_sample_counts_one_period_cut_at_the_end():
    # Sampling every 60 s, the last sample 30 s before the end: it stands for 30 s, not 60 s.
    frame = make_frame(constant(100.0, seconds=range(30, 3600, 60)))
    summary = series.summarize(frame, start=START, end=START + HOUR, gpu_count=1)
    assert summary.covered_gpu_hours == pytest.approx((3600 - 30) / 3600)


def test_empty_series_gives_nones_and_zero_coverage():
    summary = series.summarize(series.empty_frame(), start=START, end=START + HOUR, gpu_count=1)
    assert summary.sample_count == 0
    assert summary.mean_gpu_util is None
    assert summary.unused_gpu_hours is None
    assert summary.idle_gpu_hours is None
    assert summary.coverage == 0
    host_only = make_frame([(0, "n1", None, 50.0), (60, "n1", None, 50.0)])
    assert series.summarize(host_only, start=START, end=START + HOUR, gpu_count=1).mean_gpu_util is None


def test_one_sample_per_device_has_no_period():
    summary = series.summarize(make_frame([(0, "n1", 0, 30.0)]), start=START, end=START + HOUR, gpu_count=1)
    assert summary.sample_count == 1
    assert summary.sampling_period_s is None
    assert summary.mean_gpu_util == 30.0
    assert summary.coverage == 0


def test_normalize_types_order_and_duplicates():
    frame = pd.DataFrame(
        {
            "timestamp": [
                "2026-10-05 09:01:00",
                "2026-10-05T09:00:00Z",
                "2026-10-05T11:00:00+02:00",
                "2026-10-05 09:00",
            ],
            "host": ["n1", "n1", "n1", "n0"],
            "gpu": [0, 0, 0, None],
            "gpu_util": [10, 20, 30, np.nan],
            "cpu_util": [np.nan, np.nan, np.nan, 55.0],
            "not_a_metric": [1, 2, 3, 4],
        }
    )
    out, dropped = series.normalize(frame)
    assert dropped == 1  # 09:00Z on n1/0 twice; the first one (20 %) is kept
    assert list(out.columns) == ["timestamp", "host", "gpu", "gpu_util", "cpu_util"]
    assert str(out["timestamp"].dtype) == "datetime64[ms, UTC]"
    assert out["host"].dtype == "string"
    assert out["gpu"].dtype == "Int16"
    assert out["gpu_util"].dtype == np.float32
    assert list(out["host"]) == ["n0", "n1", "n1"]
    assert out["gpu"].isna().tolist() == [True, False, False]
    assert out["gpu_util"].tolist()[1:] == [20.0, 10.0]
    assert out["timestamp"].iloc[1] == pd.Timestamp("2026-10-05T09:00:00Z")


def test_normalize_keeps_host_rows_after_gpu_rows_of_the_same_host():
    frame = pd.DataFrame({"timestamp": [START, START, START], "host": ["a", "a", "a"], "gpu": [None, 1, 0]})
    out, _ = series.normalize(frame.assign(gpu_util=[1.0, 2.0, 3.0]))
    assert out["gpu"].tolist() == [0, 1, pd.NA]


def test_parquet_round_trip_is_exact():
    frame = make_frame(
        constant(33.3, gpus=(0, 1)) + [(s, "n1", None, np.nan) for s in range(0, 600, 60)],
        sm_active=np.float32(0.25),
    )
    data = series.to_parquet_bytes(frame)
    assert data[:4] == b"PAR1"
    pd.testing.assert_frame_equal(series.from_parquet_bytes(data), frame)
    empty = series.empty_frame()
    pd.testing.assert_frame_equal(series.from_parquet_bytes(series.to_parquet_bytes(empty)), empty)


def test_arrow_conversion_equals_from_pandas_with_missing_values():
    """The importer's fast conversion must write the very bytes `from_pandas` would (fingerprints
    of stored jobs depend on them), holes, host-level rows and missing metrics included."""
    frame = make_frame(
        constant(33.3, gpus=(0, 1)) + [(s, "n1", None, np.nan) for s in range(0, 600, 60)],
        sm_active=np.float32(0.25),
    )
    frame.loc[3, "sm_active"] = np.nan
    for case in (frame, frame.iloc[:0], frame[["timestamp", "host", "gpu", "gpu_util"]]):
        fast = series.to_arrow(case)
        assert fast.equals(pa.Table.from_pandas(case, preserve_index=False), check_metadata=True)
        assert fast.column("gpu").null_count == int(case["gpu"].isna().sum())
    odd = pd.DataFrame({"timestamp": [START], "note": ["not a normalised column"]})
    assert series.to_arrow(odd).equals(pa.Table.from_pandas(odd, preserve_index=False))


def test_gpu_hours():
    assert series.gpu_hours(START, START + 2 * HOUR, 4) == 8.0
    assert series.gpu_hours(START, START + timedelta(minutes=30), 1) == 0.5
    assert series.gpu_hours(START, START - HOUR, 4) == 0.0


# --- many series at once: what the importer stores must be what one series gives --------------------
_sample = st.tuples(
    st.sampled_from(["j1", "j2", "j3"]),
    st.integers(0, 400),  # × 30 s after START
    st.sampled_from(["", "a", "b", "c"]),
    st.sampled_from([None, 0, 1, 3]),
    st.one_of(st.none(), st.floats(0, 100, width=32)),
    st.one_of(st.none(), st.floats(0, 80_000, width=32)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_sample, min_size=1, max_size=60), st.booleans())
def test_a_series_of_a_batch_stores_and_sums_up_as_the_series_alone(samples, with_memory):
    """`normalize_batch` slices (the importer's path) against `normalize` of each job's rows alone:
    the same frame, the same Parquet bytes, the same content digest (job fingerprints hash it) and
    exactly the same summary.
    Hosts are shared unevenly between jobs, so a batch's host codes differ from each series' own."""
    frame = pd.DataFrame(
        {
            "job_id": [s[0] for s in samples],
            "timestamp": [START + timedelta(seconds=30 * s[1]) for s in samples],
            "host": [s[2] for s in samples],
            "gpu": pd.array([s[3] for s in samples], dtype="Int16"),
            "gpu_util": np.array([np.nan if s[4] is None else s[4] for s in samples], dtype="float32"),
        }
    )
    if with_memory:
        frame["gpu_mem_used_mib"] = np.array([np.nan if s[5] is None else s[5] for s in samples], dtype="float32")
        frame["gpu_mem_total_mib"] = np.float32(80_000)
    slices, dropped = series.normalize_batch(frame)
    alone_dropped = 0
    assert sorted(slices) == sorted(set(frame["job_id"]))
    for job_id, part in slices.items():
        rows = frame[frame["job_id"] == job_id].drop(columns="job_id")
        alone, duplicates = series.normalize(rows)
        alone_dropped += duplicates
        kept = [c for c in alone.columns if c in series.KEY_COLUMNS or c == "gpu_util" or alone[c].notna().any()]
        alone = alone[kept]
        pd.testing.assert_frame_equal(part.frame(), alone)
        assert part.to_parquet_bytes() == series.to_parquet_bytes(alone)
        assert part.content_digest() == series.content_digest(alone) == series.as_slice(alone).content_digest()
        window = {"start": START + timedelta(minutes=10), "end": START + timedelta(hours=2), "gpu_count": 2}
        assert part.summarize(**window) == series.summarize(alone, **window)
        assert series.as_slice(alone).summarize(**window) == series.summarize(alone, **window)
    assert dropped == alone_dropped


def test_the_content_digest_tells_every_change_of_a_value_apart_and_ignores_the_encoding(monkeypatch):
    frame, _ = series.normalize(
        pd.DataFrame(
            {
                "timestamp": [START + timedelta(seconds=30 * i) for i in range(4)],
                "host": ["n1", "n1", "n2", "n2"],
                "gpu": pd.array([0, 0, 1, None], dtype="Int16"),
                "gpu_util": np.array([10, 20, np.nan, 40], dtype="float32"),
            }
        )
    )
    digest = series.content_digest(frame)
    changes = {
        "a value": lambda f: f.assign(gpu_util=f["gpu_util"].replace(np.float32(20), np.float32(21))),
        "a missing value filled": lambda f: f.assign(gpu_util=f["gpu_util"].fillna(0)),
        "a value gone missing": lambda f: f.assign(gpu_util=f["gpu_util"].replace(np.float32(10), np.nan)),
        "a host renamed": lambda f: f.assign(host=f["host"].replace("n2", "n3")),
        "a GPU index": lambda f: f.assign(gpu=f["gpu"].fillna(2)),
        "a timestamp": lambda f: f.assign(timestamp=f["timestamp"] + pd.Timedelta(milliseconds=1)),
        "a metric renamed": lambda f: f.rename(columns={"gpu_util": "sm_active"}),
        "a row less": lambda f: f.iloc[:-1],
    }
    for change, apply in changes.items():
        assert series.content_digest(apply(frame.copy())) != digest, change
    # A frame with a column outside the normalised ones (a connector's extra) still has a digest.
    noted = frame.assign(note=["a", "b", "c", "d"])
    assert series.content_digest(noted) not in {digest, series.content_digest(noted.assign(note=["a", "b", "c", "e"]))}
    monkeypatch.setattr(series, "PARQUET_OPTIONS", {"compression": "snappy"})
    stored = series.from_parquet_bytes(series.to_parquet_bytes(frame))
    assert series.content_digest(stored) == digest


def test_many_series_sort_missing_gpus_and_times_last_as_one_series_does():
    frame = pd.DataFrame(
        {
            "job_id": ["j2", "j1", "j1", "j1", "j1", "j1"],
            "timestamp": [START, START + HOUR, pd.NaT, START, START, START],
            "host": ["b", "a", "a", "a", "a", "a"],
            "gpu": pd.array([0, 0, 0, None, 0, 0], dtype="Int16"),
            "gpu_util": np.array([1, 2, 3, 4, 5, 6], dtype="float32"),
        }
    )
    frames, dropped = series.normalize_many(frame)
    alone, alone_dropped = series.normalize(frame[frame["job_id"] == "j1"].drop(columns="job_id"))
    pd.testing.assert_frame_equal(frames["j1"], alone)
    assert frames["j1"]["gpu_util"].tolist() == [5.0, 2.0, 3.0, 4.0]  # the first of the repeats is kept
    assert dropped == alone_dropped == 1


ALLOCATOR_IN_USE = r"""
import json, os
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
import pandas as pd
import pyarrow as pa
from fleet import series
frame = pd.DataFrame({"timestamp": pd.date_range("2026-01-01", periods=50_000, freq="s", tz="UTC"),
                      "host": "h", "gpu": 0, "gpu_util": 50.0})
series.from_parquet_bytes(series.to_parquet_bytes(frame))  # the C++ Parquet writer and reader allocate
# The process-wide pool is the one Arrow's C++ code takes when no pool is passed; the other
# allocators are not touched, as starting one beside another has aborted the process on CI.
pool = pa.default_memory_pool()
print(json.dumps({"backend": pool.backend_name, "peak": pool.max_memory()}), flush=True)
# Out at once: what is asked is where Arrow allocated, not the interpreter's teardown, in which Arrow's C++ threads
# still abort a process now and then (exit -6, "terminate called without an active exception", apache/arrow#34314;
# one CI run on 2026-12-07 after the answer was printed).
os._exit(0)
"""


@pytest.mark.parametrize(("chosen", "in_use"), [(None, "jemalloc"), ("system", "system")])
def test_arrow_allocates_with_jemalloc_unless_the_environment_names_another_allocator(chosen, in_use):
    """Arrow's C++ code (the Parquet writer and reader here) allocates with jemalloc in the app's
    processes: mimalloc, pyarrow's default, costs an import a tenth more time in zeroed pages. An
    operator's ARROW_DEFAULT_MEMORY_POOL still wins. (Choosing the pool after pyarrow is imported
    reached only allocations made from Python; this test measures where the C++ side allocated.)"""
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    env = {name: value for name, value in os.environ.items() if name != "ARROW_DEFAULT_MEMORY_POOL"}
    if chosen:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    done = subprocess.run([sys.executable, "-c", ALLOCATOR_IN_USE], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    in_the_process = json.loads(done.stdout.splitlines()[-1])
    assert in_the_process["backend"] == in_use
    assert in_the_process["peak"] > 1_000_000  # the Parquet round trip allocated from it


READ_A_BLOB_AND_EXIT = r"""
import pandas as pd
from fleet import series
frame = pd.DataFrame({"timestamp": pd.date_range("2026-01-01", periods=50_000, freq="s", tz="UTC"),
                      "host": "h", "gpu": 0, "gpu_util": 50.0})
data = series.to_parquet_bytes(frame)
assert len(series.from_parquet_bytes(data, columns=["gpu_util"])) == 50_000
"""


def test_a_process_that_reads_a_series_and_exits_at_once_exits_cleanly():
    """A command that reads a job's series (triage, an export) must exit 0 when it is done. Through
    pq.read_table the read left Arrow's read-ahead tasks running, and a process exiting right after
    aborted with "terminate called without an active exception" (-6) most of the time."""
    import subprocess
    import sys

    from tests.conftest import REPO

    for _ in range(8):
        done = subprocess.run([sys.executable, "-c", READ_A_BLOB_AND_EXIT], cwd=REPO, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
