"""Archive uploads: the size cap that holds before Django reads the body, and keeping the file.

Django does not cap file uploads (only form fields), so a multi-gigabyte body would be spooled to
disk in full. Two guards close that:

- `UploadLimitMiddleware` answers 413 straight away when Content-Length is over the limit, and 411
  for a chunked multipart body without a length (WSGI cannot bound it); it sits before the CSRF
  middleware, which is the first thing that reads the body.
- `SizeCappedUploadHandler` counts the file bytes as they arrive and stops the upload one byte
  past the limit; Django then closes (and so deletes) the partly written temporary file, and the
  middleware turns the request into the same 413.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpResponse, JsonResponse

from config.api_paths import wants_json

# Room for the multipart framing and the few small form fields sent with the file.
FORM_OVERHEAD_BYTES = 64 * 1024


def format_size(size: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size} bytes"


def too_large_message() -> str:
    limit = settings.UPLOAD_MAX_BYTES
    return (
        f"The archive is larger than the upload limit of {format_size(limit)} ({limit} bytes). "
        "Split the export into smaller archives, or ask an operator to raise UPLOAD_MAX_BYTES."
    )


class SizeCappedUploadHandler(FileUploadHandler):
    """Counts uploaded file bytes and stops the upload once they pass UPLOAD_MAX_BYTES."""

    def __init__(self, request=None):
        super().__init__(request)
        self.received = 0

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.UPLOAD_MAX_BYTES:
            self.request.upload_too_large = True
            # Not a connection reset: Django drains the (length-bounded) rest, so the client reads the 413.
            raise StopUpload(connection_reset=False)
        return raw_data

    def file_complete(self, file_size):
        return None


def refuse(request, status: int, message: str):
    if wants_json(request):
        return JsonResponse({"detail": message}, status=status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


class UploadLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method in ("POST", "PUT", "PATCH") and request.content_type == "multipart/form-data":
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > settings.UPLOAD_MAX_BYTES + FORM_OVERHEAD_BYTES:
                return refuse(request, 413, too_large_message())
            if not length and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
                return refuse(
                    request, 411, "Send the archive with a Content-Length header (chunked uploads are not accepted)."
                )
            request.upload_too_large = False
            request.upload_handlers.insert(0, SizeCappedUploadHandler(request))
        response = self.get_response(request)
        if getattr(request, "upload_too_large", False):
            return refuse(request, 413, too_large_message())
        return response


def keep_upload(uploaded) -> Path:
    """Move an uploaded archive to UPLOAD_DIR under a generated name; the user's name is display only."""
    folder = Path(settings.UPLOAD_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{uuid.uuid4().hex}.upload"
    temporary = getattr(uploaded, "temporary_file_path", None)
    if temporary is not None:
        Path(temporary()).replace(target)  # same disk (FILE_UPLOAD_TEMP_DIR is inside UPLOAD_DIR)
        with contextlib.suppress(FileNotFoundError):  # the temporary file was moved away, which is the point
            uploaded.close()
    else:
        with open(target, "wb") as out:
            for chunk in uploaded.chunks():
                out.write(chunk)
    return target
