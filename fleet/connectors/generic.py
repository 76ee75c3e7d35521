"""The generic platform REST API: a JSON contract of our own (docs/connectors.md), for platforms that
can export their jobs but are none of the above.

    GET {url}/jobs?cursor=<cursor>&limit=<n>   -> {"jobs": [job, ...], "next_cursor": "...", "has_more": bool}
    GET {url}/jobs/<job_id>/series             -> {"samples": [{"timestamp", "host", "gpu", <metric>...}, ...]}
    GET {url}/jobs/<job_id>/artifacts          -> {"artifacts": [{"kind", "path", "content" | "content_base64"}]}

A job object has the fields of an archive v1 job row (docs/archive-format.md) and is read by the
archive's own per-job checks (`fleet.archive.parser.job_from_row`): the same values accepted, the
same errors, each bad field its own. Jobs come in the
order they changed; `next_cursor` is the position after the page and becomes the watermark once
the page is stored. A job that changes again later comes again and is updated in place.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from datetime import datetime
from urllib.parse import quote

import numpy as np
import pandas as pd

from fleet import series as series_lib
from fleet.archive.parser import JOB_REQUIRED, job_from_row, json_job_row, parse_timestamp
from fleet.canonical import (
    MAX_HOST_CHARS,
    METRIC_BOUNDS,
    METRICS,
    ArtifactRecord,
    JobRecord,
    RecordError,
    host_length_text,
    range_text,
)
from fleet.connectors.base import BadData, BaseConnector, Batch, SomeBadData, answer_kind, number_option
from fleet.connectors.registry import register
from fleet.quoting import library_error

REQUIRED = JOB_REQUIRED
ARTIFACT_KINDS = ("log", "script", "trace")
PAGE_SIZE = 200
MAX_PAGES = 100_000  # a server that never says has_more=false stops here
MAX_STALLS = 3  # pages in a row that do not move the cursor before we give up


class BadFields(ValueError):
    """A job object whose fields break the archive's rules: `problems` are (field, message) pairs,
    each one error of the job, as an archive's row gets them."""

    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__("; ".join(f"field {field!r}: {message}" for field, message in problems))
        self.problems = problems


def job_from_object(item, *, cluster: str = "") -> JobRecord:
    """A canonical job from one contract job object, checked as an archive's jobs.jsonl line is
    (`fleet.archive.parser.job_from_row`); BadFields names every field that breaks its rules."""
    if not isinstance(item, dict):
        raise ValueError("a job is not a JSON object")
    job, problems = job_from_row(json_job_row(item), cluster)
    if problems:
        raise BadFields(problems)
    return job


def frame_from_samples(doc, *, job: JobRecord | None = None, source: str = "series") -> pd.DataFrame | None:
    """The normalised frame of a series response (samples outside the job's window are clipped)."""
    if not isinstance(doc, dict):
        raise BadData(f"{source}: expected an object with a 'samples' list, got {answer_kind(doc)}")
    samples = doc.get("samples")
    if not isinstance(samples, list):
        raise BadData(f"{source}: expected an object with a 'samples' list")
    if not samples:
        return None
    if not all(isinstance(sample, dict) for sample in samples):
        raise BadData(f"{source}: expected 'samples' to be a list of objects")
    frame = pd.DataFrame.from_records(samples)
    keep = [c for c in ("timestamp", "host", "gpu", *METRICS) if c in frame.columns]
    try:
        frame["timestamp"] = frame["timestamp"].map(parse_timestamp)
        _check_bounds(frame, source)
        frame, _ = series_lib.normalize(frame[keep])
    except (KeyError, ValueError, TypeError, OverflowError) as exc:  # OverflowError: a gpu index past int64
        raise BadData(f"{source}: {library_error(exc)}") from exc
    if job is not None:
        inside = (frame["timestamp"] >= job.start_time) & (frame["timestamp"] <= job.end_time)
        frame = frame[inside].reset_index(drop=True)
    return frame if len(frame) else None


def _check_bounds(frame: pd.DataFrame, source: str) -> None:
    """BadData for a sample outside its metric's bounds, or a host name longer than any host's: the
    bounds an archive's samples keep to (a value past float32's largest would be stored as infinity)."""
    for metric in (name for name in METRICS if name in frame.columns):
        low, high = METRIC_BOUNDS[metric]
        values = pd.to_numeric(frame[metric]).to_numpy(dtype="float64", na_value=np.nan)
        outside = ~np.isnan(values) & ((values < low) | (values > high))
        if outside.any():
            bounds = range_text(low, high, METRICS[metric])
            raise BadData(f"{source}: {metric} value {values[np.argmax(outside)]:g} is out of range ({bounds})")
    if "host" in frame.columns:
        lengths = frame["host"].astype("string").str.len().fillna(0).to_numpy()
        if len(lengths) and lengths.max() > MAX_HOST_CHARS:
            raise BadData(f"{source}: {host_length_text(int(lengths.max()))}")


def artifacts_from_doc(doc, job_id: str, *, max_bytes: int, source: str = "artifacts") -> list[ArtifactRecord]:
    """The job's artifacts; an answer without an artifacts list is BadData, and artifacts described wrongly
    are SomeBadData carrying the good ones (a bad one cost the job all its files)."""
    if not isinstance(doc, dict):
        raise BadData(f"{source}: expected an object with an 'artifacts' list, got {answer_kind(doc)}")
    items = doc.get("artifacts")
    if not isinstance(items, list):
        raise BadData(f"{source}: expected an object with an 'artifacts' list")
    out, problems = [], []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            problems.append(f"{source}: artifact {index} is not an object")
            continue
        kind, path = str(item.get("kind") or ""), str(item.get("path") or "")
        if kind not in ARTIFACT_KINDS or not path or path.startswith("/") or ".." in path.split("/"):
            problems.append(
                f"{source}: artifact {index} ({path!r}) needs a kind in {ARTIFACT_KINDS} and a relative path"
            )
            continue
        if "content_base64" in item:
            try:
                content = base64.b64decode(item["content_base64"], validate=True)
            except (binascii.Error, ValueError, TypeError):
                problems.append(f"{source}: artifact {index} ({path!r}): content_base64 is not base64")
                continue
        else:
            content = str(item.get("content") or "").encode()
        out.append(ArtifactRecord.capped(job_id, kind, path, content, max_bytes))
    if problems:
        raise SomeBadData(out, problems)
    return out


@register
class GenericConnector(BaseConnector):
    """Our own REST contract. Options: `page_size` (200), `artifact_max_bytes` (20 MiB), `series` (true)."""

    kind = "generic"
    label = "Generic REST API (our JSON contract)"
    options_example = '{"page_size": 200}'
    url_example = "https://fleet-api.example.org"
    url_what = "the REST API serving our JSON contract"
    options_schema = {"page_size": "whole number", "artifact_max_bytes": "whole number", "series": "true or false"}
    auth_hint = "Usually a header (e.g. X-API-Key) or a bearer token."

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        options = self.settings.options
        self.page_size = number_option(options, "page_size", PAGE_SIZE, low=1, high=10_000, integer=True)
        self.artifact_max_bytes = number_option(
            options, "artifact_max_bytes", 20 * 2**20, low=0, high=2**30, integer=True
        )

    def check(self) -> dict:
        doc = self.http.get_json("jobs", params={"limit": 1})
        return {"jobs_endpoint": isinstance(doc, dict) and isinstance(doc.get("jobs"), list)}

    def list_jobs(self, watermark: str, until: datetime) -> Iterator[Batch]:
        cursor = watermark
        limit = self.page_size
        stalls = 0
        for _page in range(MAX_PAGES):
            params = {"limit": limit}
            if cursor:
                params["cursor"] = cursor
            doc = self.http.get_json("jobs", params=params)
            if not isinstance(doc, dict):
                raise BadData(
                    f"{self.settings.name}: /jobs answered {answer_kind(doc)}, expected an object "
                    "{'jobs': [...], 'next_cursor': ...}"
                )
            if not isinstance(doc.get("jobs"), list):
                raise BadData(f"{self.settings.name}: /jobs must answer {{'jobs': [...], 'next_cursor': ...}}")
            jobs, errors = [], []
            for row, item in enumerate(doc["jobs"], start=1):
                try:
                    jobs.append(job_from_object(item, cluster=self.settings.cluster))
                except ValueError as exc:
                    job_id = str(json_job_row(item).get("job_id") or "") if isinstance(item, dict) else ""
                    source = f"{self.settings.name} /jobs"
                    problems = exc.problems if isinstance(exc, BadFields) else [("", str(exc))]
                    for field_name, message in problems:
                        errors.append(RecordError(source, message, row=row, field=field_name, job_id=job_id))
            next_cursor = str(doc.get("next_cursor") or cursor)
            yield Batch(jobs=jobs, watermark=next_cursor, errors=errors)
            if not doc.get("has_more"):
                return
            if next_cursor == cursor:  # no progress: a page served again (a cache?); ask again, a few times
                stalls += 1
                if stalls > MAX_STALLS:
                    raise BadData(f"{self.settings.name}: /jobs keeps answering cursor {cursor[:60]!r} with itself")
                continue
            stalls = 0
            cursor = next_cursor

    @classmethod
    def watermark_time(cls, watermark: str):
        return None  # an opaque cursor

    def _job_path(self, job: JobRecord, what: str) -> str:
        return f"jobs/{quote(job.external_id, safe='')}/{what}"

    def fetch_series(self, job: JobRecord):
        if self.metrics is not None:  # series from Prometheus, found by the job's labels
            return super().fetch_series(job)
        if not self.settings.options.get("series", True):
            return None
        path = self._job_path(job, "series")
        doc = self.http.get_json(path)
        return frame_from_samples(doc, job=job, source=f"{self.settings.name} {path}")

    def fetch_artifacts(self, job: JobRecord) -> list[ArtifactRecord]:
        path = self._job_path(job, "artifacts")
        doc = self.http.get_json(path)
        source = f"{self.settings.name} {path}"  # the API path, as the /jobs errors name theirs
        return artifacts_from_doc(doc, job.external_id, max_bytes=self.artifact_max_bytes, source=source)
