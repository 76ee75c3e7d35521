"""The job timeline: every spike kept, holes drawn as gaps, bounded size, scoped access."""

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from fleet.series import to_parquet_bytes
from tests.factories import JobFactory
from triage.dashboard.timeline import Marker, build_timeline

START = datetime(2026, 11, 2, tzinfo=UTC)


def series(gpus: int, seconds: int, period: int, util=None) -> pd.DataFrame:
    stamps = pd.date_range(START, periods=seconds // period, freq=f"{period}s", tz="UTC", unit="ms")
    frames = []
    for gpu in range(gpus):
        values = np.full(len(stamps), 60.0) if util is None else util(len(stamps))
        frames.append(
            pd.DataFrame(
                {
                    "timestamp": stamps,
                    "host": "n1",
                    "gpu": pd.array([gpu] * len(stamps), dtype="Int16"),
                    "gpu_util": values.astype("float32"),
                    "gpu_mem_used_mib": np.float32(40000),
                    "gpu_mem_total_mib": np.float32(81920),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def util_trace(figure, gpu=0):
    return next(t for t in figure["data"] if t["name"] == f"n1 GPU {gpu}" and t["yaxis"] == "y")


def test_a_30_day_8_gpu_job_sampled_every_15s_fits_in_well_under_a_megabyte():
    days = 30 * 86400
    frame = series(8, days, 15, util=lambda n: np.where(np.arange(n) == n // 2, 0.0, 90.0))
    figure = build_timeline(frame, start=START, end=START + timedelta(seconds=days))
    size = len(json.dumps(figure))
    assert size < 1_000_000, size
    trace = util_trace(figure, gpu=3)
    assert 0.0 in trace["y"], "the one-sample dip to 0 % must survive downsampling"
    assert len(trace["x"]) <= 1100


def test_a_job_of_hundreds_of_gpus_draws_their_mean_and_range_not_a_line_each():
    """4,096 GPUs made a 12.7 MB figure of 8,192 lines: a blur that took seconds to send and draw."""
    gpus = 300
    frame = series(gpus, 7200, 30, util=lambda n: np.full(n, 80.0))
    one_idle = (frame["gpu"] == 7) & (frame["timestamp"] >= START + timedelta(minutes=30))
    frame.loc[one_idle, "gpu_util"] = np.float32(0)  # one GPU idles for the second half hour and on
    figure = build_timeline(frame, start=START, end=START + timedelta(hours=2))
    util = {t["name"]: t for t in figure["data"] if t["yaxis"] == "y"}
    assert set(util) == {"lowest of 300 GPUs", "lowest to highest of 300 GPUs", "mean of 300 GPUs"}
    assert len([t for t in figure["data"] if t["yaxis"] == "y2"]) == 3  # memory: the same three
    assert len(json.dumps(figure)) < 200_000
    lowest, highest, mean = (util[f"{what} of 300 GPUs"]["y"] for what in ("lowest", "lowest to highest", "mean"))
    assert lowest[0] == 80.0 and lowest[-1] == 0.0  # the idle GPU shows, from when it went idle
    assert set(highest) == {80.0}
    assert mean[0] == 80.0 and mean[-1] == pytest.approx(80.0 * (gpus - 1) / gpus, abs=0.01)
    times = util["mean of 300 GPUs"]["x"]
    assert times == sorted(times) and len(times) <= 1000


def test_cpu_of_many_hosts_is_a_band_too_with_its_own_legend():
    stamps = pd.date_range(START, periods=60, freq="60s", tz="UTC", unit="ms")
    hosts = pd.concat(
        pd.DataFrame(
            {
                "timestamp": stamps,
                "host": f"n{h}",
                "gpu": pd.array([None] * 60, dtype="Int16"),
                "cpu_util": np.float32(10 + h),
            }
        )  # fmt: skip
        for h in range(40)
    )
    frame = pd.concat([series(2, 3600, 60), hosts], ignore_index=True)
    figure = build_timeline(frame, start=START, end=START + timedelta(hours=1))
    cpu = {t["name"]: t for t in figure["data"] if t["yaxis"] == "y3"}
    assert set(cpu) == {"lowest of 40 hosts", "lowest to highest of 40 hosts", "mean of 40 hosts"}
    assert cpu["mean of 40 hosts"]["showlegend"] and set(cpu["lowest of 40 hosts"]["y"]) == {10.0}
    assert set(cpu["lowest to highest of 40 hosts"]["y"]) == {49.0} and set(cpu["mean of 40 hosts"]["y"]) == {29.5}
    assert util_trace(figure, gpu=1)["name"] == "n1 GPU 1"  # two GPUs: a line each, as before


@pytest.mark.parametrize(("cpu", "top"), [(7.0, 105.0), (160.0, 168.0)])
def test_the_cpu_panel_runs_from_zero_to_at_least_100_percent(cpu, top):
    """A loader-bound job with num_workers=0 uses one core of 16, 7 % of its CPUs: on an axis Plotly fitted
    to the data (6 to 8 %) that drew a line across the middle of the panel, which reads as busy."""
    stamps = pd.date_range(START, periods=60, freq="60s", tz="UTC", unit="ms")
    host = pd.DataFrame(
        {"timestamp": stamps, "host": "n1", "gpu": pd.array([None] * 60, dtype="Int16"), "cpu_util": np.float32(cpu)}
    )
    frame = pd.concat([series(1, 3600, 60), host], ignore_index=True)
    figure = build_timeline(frame, start=START, end=START + timedelta(hours=1))
    assert figure["layout"]["yaxis3"]["title"]["text"] == "CPU (%)"
    assert figure["layout"]["yaxis3"]["range"] == [0, top]


def test_a_hole_in_many_gpus_breaks_their_band():
    frame = series(40, 3600, 30)
    frame = frame[
        (frame["timestamp"] < START + timedelta(minutes=20)) | (frame["timestamp"] >= START + timedelta(minutes=40))
    ]
    figure = build_timeline(frame, start=START, end=START + timedelta(hours=1))
    mean = next(t for t in figure["data"] if t["name"] == "mean of 40 GPUs")
    assert mean["y"].count(None) == 1 and mean["connectgaps"] is False


def test_memory_shares_a_total_of_zero_or_float32_cannot_hold_are_left_out_not_infinite():
    """A total of 0 MiB (allowed: ≥ 0) made used/total infinite, and 100 x a float32 near its largest
    overflowed: the figure's JSON then held Infinity, which browsers refuse, and no chart showed."""
    frame = series(2, 600, 30)
    frame.loc[frame["gpu"] == 0, "gpu_mem_total_mib"] = np.float32(0)
    frame.loc[frame["gpu"] == 1, "gpu_mem_used_mib"] = np.float32(3e38)
    frame.loc[frame["gpu"] == 1, "gpu_mem_total_mib"] = np.float32(1e38)
    figure = build_timeline(frame, start=START, end=START + timedelta(minutes=10))
    json.dumps(figure, allow_nan=False)  # what a browser's JSON.parse accepts
    memory = {t["name"]: t["y"] for t in figure["data"] if t["yaxis"] == "y2"}
    assert not any(memory.get("n1 GPU 0", []))
    assert set(memory["n1 GPU 1"]) == {300.0}


def test_a_hole_in_the_series_is_a_gap_not_a_line():
    frame = series(1, 3600, 30)
    frame = frame[
        (frame["timestamp"] < START + timedelta(minutes=20)) | (frame["timestamp"] >= START + timedelta(minutes=40))
    ]
    trace = util_trace(build_timeline(frame, start=START, end=START + timedelta(hours=1)))
    assert trace["y"].count(None) == 1
    assert trace["connectgaps"] is False


def test_log_text_in_hover_is_escaped():
    markers = [Marker(at=START + timedelta(minutes=5), kind="download", label="<img src=x onerror=alert(1)>")]
    figure = build_timeline(series(1, 3600, 30), start=START, end=START + timedelta(hours=1), markers=markers)
    text = next(t for t in figure["data"] if t["name"] == "Log events")["text"][0]
    assert "<img" not in text and "&lt;img" in text


@pytest.mark.django_db
def test_timeline_endpoint_is_scoped_and_zooms(client, member_a, team_a, team_b):
    own = JobFactory(team=team_a, start_time=START, end_time=START + timedelta(hours=1))
    own.series_file.save("s.parquet", ContentFile(to_parquet_bytes(series(2, 3600, 15))))
    other = JobFactory(team=team_b)
    client.force_login(member_a)
    assert client.get(reverse("dashboard:job-timeline", args=[other.pk])).status_code == 404
    full = client.get(reverse("dashboard:job-timeline", args=[own.pk])).json()
    assert len(util_trace(full)["x"]) == 240
    window = client.get(
        reverse("dashboard:job-timeline", args=[own.pk]),
        {"start": (START + timedelta(minutes=10)).isoformat(), "end": (START + timedelta(minutes=20)).isoformat()},
    ).json()
    assert len(util_trace(window)["x"]) == 41  # every 15 s sample of the 10 minutes, at full resolution
    bad = client.get(reverse("dashboard:job-timeline", args=[own.pk]), {"start": "noon"})
    assert bad.status_code == 400 and "ISO 8601" in bad.json()["error"]
    backwards = {
        "start": (START + timedelta(minutes=20)).isoformat(),
        "end": (START + timedelta(minutes=10)).isoformat(),
    }
    assert client.get(reverse("dashboard:job-timeline", args=[own.pk]), backwards).status_code == 400
    # A job that started and ended at the same moment (allowed) has an empty figure that says so.
    instant = JobFactory(team=team_a, start_time=START, end_time=START)
    figure = client.get(reverse("dashboard:job-timeline", args=[instant.pk]))
    assert figure.status_code == 200 and "same moment" in figure.json()["empty"]


@pytest.mark.django_db
def test_a_log_event_marker_leads_to_its_line_in_the_log(client, member_a, team_a):
    from fleet.models import LogEvent
    from tests.conftest import store_artifact

    job = JobFactory(team=team_a, start_time=START, end_time=START + timedelta(hours=1))
    job.series_file.save("s.parquet", ContentFile(to_parquet_bytes(series(1, 3600, 30))))
    log = store_artifact(job, "log", "logs/out.log", b"a\nb\nSaving checkpoint to /ckpt/1.pt\n")
    LogEvent.objects.create(job=job, artifact=log, kind="checkpoint_save", line_no=3,
                            timestamp=START + timedelta(minutes=5), text="Saving checkpoint to /ckpt/1.pt")  # fmt: skip
    client.force_login(member_a)
    figure = client.get(reverse("dashboard:job-timeline", args=[job.pk])).json()
    events = next(t for t in figure["data"] if t["name"] == "Log events")
    url = reverse("dashboard:job-file", args=[job.pk, log.pk]) + "?line=3#L3"
    assert events["customdata"] == [url] and "click" in events["hovertemplate"]
    # Named in words, as the page's list of log events names it, not by its identifier ('checkpoint_save: …').
    assert events["text"] == ["checkpoint save: logs/out.log:3 Saving checkpoint to /ckpt/1.pt"]
    assert '<span id="L3" class="hit">' in client.get(url).content.decode()


def test_a_job_on_several_hosts_has_a_legend_entry_and_a_colour_a_host_not_a_gpu():
    """32 GPUs on four nodes made 32 legend entries, a column taller than the chart; each node is now
    one entry (its GPUs' and its CPU's lines toggle together) in one colour, and a GPU's hover still
    names it."""
    frame = series(8, 3600, 60)
    frame = pd.concat([frame.assign(host=f"node{h}") for h in range(4)], ignore_index=True)
    stamps = pd.date_range(START, periods=60, freq="60s", tz="UTC", unit="ms")
    cpu = pd.concat(
        pd.DataFrame({"timestamp": stamps, "host": f"node{h}", "gpu": pd.array([None] * 60, dtype="Int16"),
                      "cpu_util": np.float32(30)})
        for h in range(4)
    )  # fmt: skip
    figure = build_timeline(pd.concat([frame, cpu], ignore_index=True), start=START, end=START + timedelta(hours=1))
    lines = [t for t in figure["data"] if t.get("mode") == "lines"]
    assert len(lines) == 4 * 8 * 2 + 4  # still a line per GPU and panel, and per host's CPU
    assert [t["name"] for t in lines if t["showlegend"]] == [f"node{h} (8 GPUs)" for h in range(4)]
    node2 = [t for t in lines if t["legendgroup"] == "node2 (8 GPUs)"]
    assert len(node2) == 8 * 2 + 1 and len({t["line"]["color"] for t in node2}) == 1
    assert len({t["line"]["color"] for t in lines}) == 4
    assert (
        "node2 GPU 5: "
        in next(t for t in node2 if t["yaxis"] == "y" and "GPU 5" in t["hovertemplate"])["hovertemplate"]
    )
    # One node of eight GPUs keeps an entry a GPU.
    one_node = build_timeline(series(8, 3600, 60), start=START, end=START + timedelta(hours=1))
    assert [t["name"] for t in one_node["data"] if t["showlegend"]] == [f"n1 GPU {g}" for g in range(8)]


def test_each_causes_shaded_windows_have_one_legend_entry_in_its_colour():
    """The findings' windows were shaded in their cause's colour with nothing to say what the bands
    were or which cause a colour was; each cause now has one legend entry ("Model checkpointing: idle
    windows"), and all its bands, on every panel, toggle with it."""
    ckpt, data = "#a04000", "#1f618d"
    at = [START + timedelta(minutes=m) for m in (5, 10, 20, 25, 40, 45)]
    windows = [
        {"start": at[0], "end": at[1], "label": "Model checkpointing", "colour": ckpt},
        {"start": at[2], "end": at[3], "label": "Remote data reading", "colour": data},
        {"start": at[4], "end": at[5], "label": "Model checkpointing", "colour": ckpt},
    ]
    figure = build_timeline(series(1, 3600, 60), start=START, end=START + timedelta(hours=1), windows=windows)
    shapes = figure["layout"]["shapes"]
    bands = [shape for shape in shapes if not shape["showlegend"]]
    assert len(bands) == 3 * 2  # each window on both panels (GPU util and memory)
    entries = [shape for shape in shapes if shape["showlegend"]]
    assert [(s["name"], s["fillcolor"]) for s in entries] == [
        ("Model checkpointing: idle windows", ckpt),
        ("Remote data reading: idle windows", data),
    ]
    groups = {s["legendgroup"] for s in bands if s["fillcolor"] == ckpt}
    assert len(groups) == 1 and len([s for s in bands if s["legendgroup"] in groups]) == 4
    assert {s["legendgroup"] for s in entries} == {s["legendgroup"] for s in bands} and len(entries) == 2
    # The legend's swatch is the cause's colour itself (Plotly draws a shape's entry at the shape's opacity,
    # and at the bands' 12 % it was barely there, 1.2:1 on the dark card); the bands keep their light tint,
    # and the entry's own shape covers nothing (no width, no height, no outline).
    assert all(s["opacity"] == 1 for s in entries) and all(s["opacity"] == 0.12 for s in bands)
    assert all(s["x0"] == s["x1"] and s["y0"] == s["y1"] and s["line"]["width"] == 0 for s in entries)
    # A window without a cause's name (none today) is shaded as before, without an entry.
    plain = build_timeline(series(1, 3600, 60), start=START, end=START + timedelta(hours=1),
                           windows=[{"start": at[0], "end": at[1]}])  # fmt: skip
    assert all("showlegend" not in shape for shape in plain["layout"]["shapes"])


def test_a_causes_band_over_a_stretch_it_slowed_is_not_called_idle():
    """A cause that slows every step (a small batch, pageable copies) has the training phase as its
    window: the GPUs worked through it, at 28 % on the demo's 32-GPU job, yet its legend entry read
    "Inefficient host-GPU data transfer: idle windows" over a chart tinted from end to end. Such a
    window (`idle` False) is named for what it is; an idle window keeps its name."""
    at = [START + timedelta(minutes=m) for m in (5, 10, 15, 55)]
    windows = [
        {"start": at[0], "end": at[1], "label": "Model checkpointing", "colour": "#a04000"},
        {"start": at[2], "end": at[3], "label": "Improper batch size", "colour": "#7d3c98", "idle": False},
    ]
    figure = build_timeline(series(1, 3600, 60), start=START, end=START + timedelta(hours=1), windows=windows)
    entries = [shape["name"] for shape in figure["layout"]["shapes"] if shape["showlegend"]]
    assert entries == ["Model checkpointing: idle windows", "Improper batch size: the stretch it slowed"]
