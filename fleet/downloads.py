"""A job's stored files as downloads: the one place that opens a job's series for a person's page
(`/jobs/<id>/series.csv`) and for a script (`/api/v1/jobs/<id>/series/csv/`), so both name the file
and stream it alike."""

from __future__ import annotations

from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils.http import content_disposition_header

from fleet.exports import series_csv_chunks
from fleet.models import Job

SERIES_FORMATS = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv; charset=utf-8"}


def series_download(job: Job, fmt: str, **narrowed) -> HttpResponseBase:
    """The job's metric series as a download: the stored Parquet blob as it is, or CSV in the
    archive's per-job form (`fleet.exports.series_csv_chunks`, which `narrowed` passes its `metrics`,
    `start` and `end` to), streamed. Http404 for a format we do not offer and for a job without a
    stored series (none was supplied, or it was pruned)."""
    if fmt not in SERIES_FORMATS or not job.series_file:
        raise Http404("This job has no stored series (none was supplied, or it was pruned).")
    try:
        handle = default_storage.open(job.series_file.name, "rb")
    except OSError:
        raise Http404("The series is missing from storage.") from None
    name = download_name(f"{job.cluster.name}-{job.external_id}-series.{fmt}".replace("/", "_"))
    if fmt == "parquet":
        return FileResponse(handle, as_attachment=True, filename=name, content_type=SERIES_FORMATS[fmt])

    def chunks():
        with handle:
            yield from series_csv_chunks(handle, job.external_id, **narrowed)

    response = StreamingHttpResponse(chunks(), content_type=SERIES_FORMATS[fmt])
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response


def download_name(name: str) -> str:
    """A file name for Content-Disposition: printable characters, no folders (a newline in a header
    value is refused, and cluster names, job ids and paths came in an archive)."""
    return "".join(c for c in name.replace("\\", "/").rsplit("/", 1)[-1] if c.isprintable()) or "download"
