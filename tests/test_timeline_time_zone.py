"""The job timeline's time axis, hover and shaded windows in the reader's zone; the line breaks where the
clocks change, so a fall-back hour draws no line backwards and a spring-forward gap invents no points."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from triage.dashboard.timeline import MAX_DEVICE_LINES, Marker, build_timeline

BERLIN = "Europe/Berlin"


def minutely(begin: datetime, minutes: int, gpus: int = 1) -> pd.DataFrame:
    stamps = pd.date_range(begin, periods=minutes, freq="60s", tz="UTC", unit="ms")
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "timestamp": stamps,
                    "host": "n1",
                    "gpu": pd.array([gpu] * len(stamps), dtype="Int16"),
                    "gpu_util": np.float32(60),
                }
            )
            for gpu in range(gpus)
        ],
        ignore_index=True,
    )


def wall(text: str) -> int:
    """A wall-clock time as Plotly's date axis reads a number: milliseconds, as if it were UTC."""
    return int(pd.Timestamp(text).value // 1_000_000)


def segments(trace) -> list[list[int]]:
    """The runs of the trace's line between nulls, as their x values."""
    runs, run = [], []
    for x, y in zip(trace["x"], trace["y"], strict=True):
        if y is None:
            runs, run = runs + [run] if run else runs, []
        else:
            run.append(x)
    return runs + [run] if run else runs


def test_a_utc_reader_sees_the_figure_of_today():
    frame = minutely(datetime(2026, 10, 25, 0, 0, tzinfo=UTC), 120)
    start, end = datetime(2026, 10, 25, 0, 0, tzinfo=UTC), datetime(2026, 10, 25, 2, 0, tzinfo=UTC)
    markers = [Marker(at=start + timedelta(minutes=5), kind="install", label="pip")]
    windows = [{"start": start, "end": start + timedelta(minutes=30), "label": "Idle", "colour": "#c0392b"}]
    today = build_timeline(frame, start=start, end=end, markers=markers, windows=windows)
    assert build_timeline(frame, start=start, end=end, markers=markers, windows=windows, zone="UTC") == today
    assert today["layout"]["xaxis"]["title"]["text"] == "Time (UTC)"


def test_axis_range_hover_shading_and_markers_are_on_the_readers_wall_clock():
    zone = "America/Argentina/Buenos_Aires"  # UTC-3 all year
    begin = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    figure = build_timeline(
        minutely(begin, 60),
        start=begin,
        end=begin + timedelta(hours=1),
        markers=[Marker(at=begin + timedelta(minutes=5), kind="install", label="pip")],
        windows=[{"start": begin, "end": begin + timedelta(minutes=30), "label": "Idle", "colour": "#c0392b"}],
        zone=zone,
    )
    layout = figure["layout"]
    assert layout["xaxis"]["title"]["text"] == f"Time ({zone})"
    assert [pd.Timestamp(x) for x in layout["xaxis"]["range"]] == [
        pd.Timestamp("2026-11-02 07:00"),
        pd.Timestamp("2026-11-02 08:00"),
    ]
    line = figure["data"][0]
    assert line["x"][0] == wall("2026-11-02 07:00") and line["x"][-1] == wall("2026-11-02 07:59")
    shape = next(s for s in layout["shapes"] if not s["showlegend"])  # a band, not the legend's entry
    assert pd.Timestamp(shape["x0"]) == pd.Timestamp("2026-11-02 07:00")
    assert pd.Timestamp(shape["x1"]) == pd.Timestamp("2026-11-02 07:30")
    events = figure["data"][-1]
    assert events["name"] == "Log events" and pd.Timestamp(events["x"][0]) == pd.Timestamp("2026-11-02 07:05")


def test_the_line_breaks_where_the_clocks_go_back_and_never_draws_backwards():
    """Berlin, 2026-10-25: at 01:00 UTC the clocks go from 03:00 CEST back to 02:00 CET, so 02:00-03:00
    comes twice. The line stops at 02:59 CEST and starts anew at 02:00 CET; no stretch runs backwards."""
    begin = datetime(2026, 10, 25, 0, 0, tzinfo=UTC)  # 02:00 CEST
    figure = build_timeline(minutely(begin, 180), start=begin, end=begin + timedelta(hours=3), zone=BERLIN)
    runs = segments(figure["data"][0])
    assert [(run[0], run[-1]) for run in runs] == [
        (wall("2026-10-25 02:00"), wall("2026-10-25 02:59")),  # CEST
        (wall("2026-10-25 02:00"), wall("2026-10-25 03:59")),  # CET: the hour again, then on
    ]
    assert all(np.all(np.diff(run) > 0) for run in runs)
    assert sum(len(run) for run in runs) == 180  # every sample, none invented
    assert figure["layout"]["xaxis"]["range"] == ["2026-10-25T02:00:00", "2026-10-25T04:00:00"]


def test_the_spring_forward_gap_has_no_points_and_no_line_across_it():
    """Berlin, 2026-03-29: at 01:00 UTC the clocks go from 02:00 CET to 03:00 CEST; no time in 02:00-03:00."""
    begin = datetime(2026, 3, 29, 0, 0, tzinfo=UTC)  # 01:00 CET
    figure = build_timeline(minutely(begin, 120), start=begin, end=begin + timedelta(hours=2), zone=BERLIN)
    runs = segments(figure["data"][0])
    assert [(run[0], run[-1]) for run in runs] == [
        (wall("2026-03-29 01:00"), wall("2026-03-29 01:59")),
        (wall("2026-03-29 03:00"), wall("2026-03-29 03:59")),
    ]
    xs = [x for x in figure["data"][0]["x"] if wall("2026-03-29 02:00") <= x < wall("2026-03-29 03:00")]
    assert xs == []


def test_many_devices_mean_and_band_break_at_the_fold_too():
    begin = datetime(2026, 10, 25, 0, 0, tzinfo=UTC)
    frame = minutely(begin, 120, gpus=MAX_DEVICE_LINES + 1)
    figure = build_timeline(frame, start=begin, end=begin + timedelta(hours=2), zone=BERLIN, points_per_trace=60)
    mean = next(t for t in figure["data"] if t["name"].startswith("mean of"))
    runs = segments(mean)
    assert len(runs) == 2 and all(np.all(np.diff(run) > 0) for run in runs)
    assert runs[1][0] < runs[0][-1]  # the repeated hour, drawn as its own line


@pytest.mark.django_db
def test_the_endpoint_takes_its_window_in_utc_and_draws_it_on_the_readers_clock(client, member_a, team_a):
    from django.core.files.base import ContentFile
    from django.urls import reverse

    from fleet.models import UserProfile
    from fleet.series import to_parquet_bytes
    from tests.factories import JobFactory

    begin = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    job = JobFactory(team=team_a, start_time=begin, end_time=begin + timedelta(hours=1))
    job.series_file.save("s.parquet", ContentFile(to_parquet_bytes(minutely(begin, 60))))
    UserProfile.objects.update_or_create(user=member_a, defaults={"time_zone": BERLIN})
    client.force_login(member_a)
    window = {"start": "2026-11-02T10:10:00Z", "end": "2026-11-02T10:20:00Z"}  # the address: UTC
    figure = client.get(reverse("dashboard:job-timeline", args=[job.pk]), window).json()
    assert figure["layout"]["xaxis"]["title"]["text"] == "Time (Europe/Berlin)"
    assert figure["layout"]["xaxis"]["range"] == ["2026-11-02T11:10:00", "2026-11-02T11:20:00"]  # CET, UTC+1
    line = figure["data"][0]["x"]
    assert (line[0], line[-1]) == (wall("2026-11-02 11:10"), wall("2026-11-02 11:20"))


def clock_marks(figure) -> list[tuple]:
    """What the figure marks where the clocks change: each band (its wall-clock stretch, once per panel)
    and each label's text."""
    bands = [
        (pd.Timestamp(s["x0"]), pd.Timestamp(s["x1"]))
        for s in figure["layout"]["shapes"]
        if s.get("name", "").startswith("Clock change")
    ]
    labels = [a["text"] for a in figure["layout"]["annotations"]]
    return sorted(set(bands)), labels


def test_the_repeated_hour_is_a_labelled_band_on_the_night_the_clocks_go_back():
    begin = datetime(2026, 10, 25, 0, 0, tzinfo=UTC)  # 02:00 CEST
    figure = build_timeline(minutely(begin, 180), start=begin, end=begin + timedelta(hours=3), zone=BERLIN)
    bands, labels = clock_marks(figure)
    assert bands == [(pd.Timestamp("2026-10-25 02:00"), pd.Timestamp("2026-10-25 03:00"))]
    assert labels == ["02:00–03:00 twice: clocks went back (CEST, then CET)"]
    # The band covers the panel it is on, below the lines, and has no legend entry of its own.
    band = next(s for s in figure["layout"]["shapes"] if s.get("name", "").startswith("Clock change"))
    assert band["layer"] == "below" and band["yref"] == "y domain" and band.get("showlegend") is not True


def test_the_skipped_hour_is_labelled_on_the_night_the_clocks_go_forward():
    begin = datetime(2026, 3, 29, 0, 0, tzinfo=UTC)  # 01:00 CET
    figure = build_timeline(minutely(begin, 120), start=begin, end=begin + timedelta(hours=2), zone=BERLIN)
    bands, labels = clock_marks(figure)
    assert bands == [(pd.Timestamp("2026-03-29 02:00"), pd.Timestamp("2026-03-29 03:00"))]
    assert labels == ["02:00–03:00 skipped: clocks went forward (CET, then CEST)"]


def test_a_window_inside_the_repeated_hour_still_says_so():
    """A drag inside 02:10-02:40 of the second pass (CET): the axis reads 02:10-02:40, which came twice."""
    begin = datetime(2026, 10, 25, 0, 0, tzinfo=UTC)
    start, end = datetime(2026, 10, 25, 1, 10, tzinfo=UTC), datetime(2026, 10, 25, 1, 40, tzinfo=UTC)
    figure = build_timeline(minutely(begin, 180), start=start, end=end, zone=BERLIN)
    assert clock_marks(figure)[1] == ["02:00–03:00 twice: clocks went back (CEST, then CET)"]


def test_no_mark_for_a_utc_reader_a_job_away_from_a_change_or_a_zone_with_other_nights():
    begin = datetime(2026, 10, 25, 0, 0, tzinfo=UTC)
    frame = minutely(begin, 180)
    for zone in ("UTC", "America/Argentina/Buenos_Aires", "America/New_York"):  # New York's is 2026-11-01
        figure = build_timeline(frame, start=begin, end=begin + timedelta(hours=3), zone=zone)
        assert clock_marks(figure) == ([], []), zone
    later = datetime(2026, 10, 26, 0, 0, tzinfo=UTC)
    figure = build_timeline(minutely(later, 180), start=later, end=later + timedelta(hours=3), zone=BERLIN)
    assert clock_marks(figure) == ([], [])


def test_a_half_hour_change_is_marked_to_the_minute():
    """Lord Howe Island goes back half an hour (02:00 +11 to 01:30 +10:30) on 2026-04-05, at 15:00 UTC on the 4th."""
    begin = datetime(2026, 4, 4, 14, 0, tzinfo=UTC)
    end = begin + timedelta(hours=2)
    figure = build_timeline(minutely(begin, 120), start=begin, end=end, zone="Australia/Lord_Howe")
    bands, labels = clock_marks(figure)
    assert bands == [(pd.Timestamp("2026-04-05 01:30"), pd.Timestamp("2026-04-05 02:00"))]
    assert labels == ["01:30–02:00 twice: clocks went back (+11, then +1030)"]


def test_the_hover_label_on_the_time_axis_is_written_as_the_page_writes_times():
    begin = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    for zone in ("UTC", BERLIN):
        figure = build_timeline(minutely(begin, 60), start=begin, end=begin + timedelta(hours=1), zone=zone)
        assert figure["layout"]["xaxis"]["hoverformat"] == "%Y-%m-%d %H:%M:%S"


def test_the_time_axis_labels_write_dates_as_the_app_does_at_every_zoom():
    """The axis's tick labels wrote Plotly's "Nov 22, 2026" where the rest of the app writes 2026-11-22:
    at every zoom level (Plotly picks a format by the ticks' spacing) a date is year-month-day and a time
    24-hour, and no format names a month."""
    begin = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    figure = build_timeline(minutely(begin, 60), start=begin, end=begin + timedelta(hours=1), zone=BERLIN)
    stops = figure["layout"]["xaxis"]["tickformatstops"]
    formats = [stop["value"] for stop in stops]
    assert all("%Y-%m-%d" in value for value in formats), formats
    assert not any(code in value for value in formats for code in ("%b", "%B", "%e", "%I", "%p")), formats
    # The stops cover every spacing, from under a second to years, with no gap between them.
    ranges = [stop["dtickrange"] for stop in stops]
    assert ranges[0][0] is None and ranges[-1][1] is None
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False)), ranges


def test_the_label_starts_at_its_band_and_stays_on_the_chart():
    """Centred on a band at the chart's edge, the label ran off it: it reads from the band's start (or,
    in the chart's right half, up to its end), and from the chart's edge for a band partly outside it."""
    begin = datetime(2026, 10, 24, 23, 0, tzinfo=UTC)  # 01:00 CEST; the repeated hour is the second
    frame = minutely(begin, 240)
    early = build_timeline(frame, start=begin, end=begin + timedelta(hours=4), zone=BERLIN)["layout"]["annotations"]
    assert [(pd.Timestamp(a["x"]), a["xanchor"]) for a in early] == [(pd.Timestamp("2026-10-25 02:00"), "left")]
    late_start = datetime(2026, 10, 24, 22, 0, tzinfo=UTC)  # 00:00 CEST: the repeated hour is near the end
    late = build_timeline(frame, start=late_start, end=begin + timedelta(hours=2, minutes=30), zone=BERLIN)
    assert [(pd.Timestamp(a["x"]), a["xanchor"]) for a in late["layout"]["annotations"]] == [
        (pd.Timestamp("2026-10-25 02:30"), "right")  # the chart ends at 02:30 CET, inside the band
    ]
