"""`GET /api/v1/jobs/{id}/series/csv/` narrowed by `start`/`end` (ISO 8601, as the job page's
timeline.json takes them) and `metrics=` (metric columns, comma-separated). It answered any parameter
with the whole series (`?start=abc`, `?metrics=garbage`: 200), where the rest of the API answers a
value it cannot read, or a parameter it does not take, with a 400 naming what it takes."""

from __future__ import annotations

import csv
import io

import pandas as pd
import pytest
from django.core.files.base import ContentFile
from rest_framework.test import APIClient

from fleet.exports import series_csv_chunks
from fleet.models import MachineToken
from fleet.series import to_parquet_bytes
from tests.factories import JobFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("upload_dirs")]

STAMPS = ["2026-11-02T10:00:00Z", "2026-11-02T10:00:30Z", "2026-11-02T10:01:00Z", "2026-11-02T10:01:30Z"]
IN_CSV = [stamp.replace("Z", ".000Z") for stamp in STAMPS]  # to the millisecond, as the download writes them


def series() -> pd.DataFrame:
    """Four samples of one GPU, 30 s apart, of two metrics."""
    return pd.DataFrame(
        {
            "timestamp": pd.to_datetime(STAMPS).as_unit("ms"),
            "host": "n1",
            "gpu": pd.array([0, 0, 0, 0], dtype="Int16"),
            "gpu_util": pd.array([10.0, 20.0, 30.0, 40.0], dtype="float32"),
            "cpu_util": pd.array([1.0, 2.0, 3.0, 4.0], dtype="float32"),
        }
    )


@pytest.fixture
def script(team_a):
    _, key = MachineToken.objects.create_key(name="exporter", reads_jobs=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    job = JobFactory(team=team_a)
    job.series_file.save("series.parquet", ContentFile(to_parquet_bytes(series())))
    client.url = f"/api/v1/jobs/{job.pk}/series/csv/"
    return client


def rows(answer) -> list[dict]:
    assert answer.status_code == 200, answer.content
    assert answer.streaming  # still streamed a batch at a time, not built in memory
    return list(csv.DictReader(io.StringIO(b"".join(answer.streaming_content).decode())))


def test_the_whole_series_without_parameters(script):
    listed = rows(script.get(script.url))
    assert [r["timestamp"] for r in listed] == IN_CSV
    assert list(listed[0]) == ["job_id", "timestamp", "host", "gpu", "gpu_util", "cpu_util"]


def test_start_and_end_narrow_the_rows_and_metrics_the_columns(script):
    window = rows(script.get(script.url, {"start": "2026-11-02T10:00:30Z", "end": "2026-11-02T10:01:30Z"}))
    # From start (included) to end (left out), as the jobs list's started_after/started_before.
    assert [r["timestamp"] for r in window] == IN_CSV[1:3]
    # Any offset, as timeline.json takes: the same instant in UTC.
    shifted = rows(script.get(script.url, {"start": "2026-11-02T11:01:00+01:00"}))
    assert [r["timestamp"] for r in shifted] == IN_CSV[2:]
    only = rows(script.get(script.url, {"metrics": "cpu_util", "end": "2026-11-02T10:00:30Z"}))
    assert only == [{"job_id": only[0]["job_id"], "timestamp": IN_CSV[0], "host": "n1", "gpu": "0", "cpu_util": "1"}]
    both = rows(script.get(script.url, {"metrics": "cpu_util, gpu_util"}))
    assert list(both[0])[4:] == ["gpu_util", "cpu_util"] and len(both) == 4  # in the series' order
    # A window with no sample: the header alone, as a series without rows.
    assert rows(script.get(script.url, {"start": "2026-11-03T00:00:00Z"})) == []


@pytest.mark.parametrize(
    ("params", "name", "says"),
    [
        ({"start": "abc"}, "start", "ISO 8601"),
        ({"end": "2026-13-40"}, "end", "ISO 8601"),
        ({"start": "2026-11-02T10:01:00Z", "end": "2026-11-02T10:00:00Z"}, "end", "after start"),
        ({"start": "2026-11-02T10:01:00Z", "end": "2026-11-02T10:01:00Z"}, "end", "after start"),
        ({"metrics": "garbage"}, "metrics", "gpu_util"),
        ({"metrics": "gpu_util,"}, "metrics", "gpu_util"),
        ({"metrics": "timestamp"}, "metrics", "gpu_util"),
        ({"stat": "2026-11-02"}, "stat", "start, end, metrics"),
    ],
)
def test_a_value_it_cannot_read_or_a_parameter_it_does_not_take_is_a_400_saying_so(script, params, name, says):
    answer = script.get(script.url, params)
    assert answer.status_code == 400, answer.content
    assert says in answer.json()[name][0]


def test_the_parquet_download_is_the_stored_blob_and_says_so_when_asked_to_narrow(script):
    parquet = script.url.replace("/csv/", "/parquet/")
    assert script.get(parquet).status_code == 200
    answer = script.get(parquet, {"metrics": "gpu_util"})
    assert answer.status_code == 400 and "csv" in answer.json()["metrics"][0]


def test_a_narrowed_series_is_still_read_a_batch_at_a_time():
    blob = io.BytesIO(to_parquet_bytes(series()))
    start, end = pd.Timestamp(STAMPS[1]).to_pydatetime(), pd.Timestamp(STAMPS[3]).to_pydatetime()
    chunks = list(series_csv_chunks(blob, "j1", batch_rows=1, metrics=["gpu_util"], start=start, end=end))
    # One chunk a batch that kept a row, the header in the first only.
    assert [chunk.decode().count("\n") for chunk in chunks] == [2, 1]
    assert chunks[0].decode().splitlines()[0] == '"job_id","timestamp","host","gpu","gpu_util"'
