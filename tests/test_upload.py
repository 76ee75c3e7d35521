"""The operator's upload page: size cap before the body is buffered, live progress, run list, error CSV, tokens."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from fleet.models import IngestRun, Job, MachineToken
from tests.conftest import EXAMPLE_ARCHIVE

pytestmark = pytest.mark.django_db

UPLOAD = "/ingest-runs/upload/"


def leftovers(folder) -> list:
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


def test_only_operators_see_the_upload_page(client, operator_client, member_a, researcher):
    assert client.get(UPLOAD).status_code == 302  # to the login page
    for user in (member_a, researcher):
        other = Client()
        other.force_login(user)
        assert other.get(UPLOAD).status_code == 404
        assert other.post(UPLOAD, {"file": SimpleUploadedFile("a.zip", b"x")}).status_code == 404
    page = operator_client.get(UPLOAD)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="upload-form"' in html and "js/ingest.js" in html and "csrfmiddlewaretoken" in html


def test_an_operator_uploads_the_example_archive_and_it_is_imported(
    operator_client, operator, upload_dirs, django_capture_on_commit_callbacks
):
    with open(EXAMPLE_ARCHIVE, "rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post(UPLOAD, {"file": handle}, HTTP_ACCEPT="application/json")
    assert response.status_code == 202, response.content
    body = response.json()
    run = IngestRun.objects.get(pk=body["run_id"])
    assert body["detail_url"] == reverse("fleet:ingest-run-detail", args=[run.pk])
    assert run.status == IngestRun.Status.SUCCEEDED  # tasks run in-process in the tests
    assert (run.source, run.created_by, run.archive_name) == ("upload", operator, "example-archive.zip")
    assert Job.objects.count() == run.jobs_created == 5
    # The upload was kept under a generated name only until its run finished.
    assert leftovers(upload_dirs) == []
    status = operator_client.get(body["status_url"]).json()
    assert status["finished"] and status["jobs_done"] == status["jobs_total"] == 5
    listing = operator_client.get("/ingest-runs/").content.decode()
    assert (
        "example-archive.zip" in listing and "olivia-operator" in listing and "\u00a0s<" in listing
    )  # the run's duration


def test_a_form_post_without_javascript_redirects_to_the_run(operator_client, upload_dirs):
    with open(EXAMPLE_ARCHIVE, "rb") as handle:
        response = operator_client.post(UPLOAD, {"file": handle})
    run = IngestRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("fleet:ingest-run-detail", args=[run.pk])


def test_an_upload_without_a_file_is_a_clear_400(operator_client, upload_dirs):
    response = operator_client.post(UPLOAD, {}, HTTP_ACCEPT="application/json")
    assert response.status_code == 400
    assert response.json()["detail"] == "Choose an archive file (.zip or .tar.gz) to upload."


def test_a_post_without_a_csrf_token_is_refused(operator, upload_dirs):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    response = client.post(UPLOAD, {"file": SimpleUploadedFile("a.zip", b"PK")})
    assert response.status_code == 403
    assert IngestRun.objects.count() == 0


def test_one_byte_over_the_limit_is_413_and_leaves_no_temporary_file(
    operator_client, settings, upload_dirs, django_capture_on_commit_callbacks
):
    settings.UPLOAD_MAX_BYTES = 100_000
    exact = SimpleUploadedFile("exact.zip", b"a" * 100_000)
    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post(UPLOAD, {"file": exact}, HTTP_ACCEPT="application/json")
    assert response.status_code == 202  # accepted (and then failed as "not an archive")
    assert IngestRun.objects.get().status == IngestRun.Status.FAILED

    over = SimpleUploadedFile("over.zip", b"a" * 100_001)
    response = operator_client.post(UPLOAD, {"file": over}, HTTP_ACCEPT="application/json")
    assert response.status_code == 413
    assert "larger than the upload limit of 97.7 KiB (100000 bytes)" in response.json()["detail"]
    assert IngestRun.objects.count() == 1  # no run for the refused upload
    assert leftovers(upload_dirs) == []  # neither the partial temporary file nor a kept copy


def test_a_declared_length_over_the_limit_is_refused_before_reading(operator_client, settings, upload_dirs):
    settings.UPLOAD_MAX_BYTES = 100_000
    response = operator_client.generic(
        "POST",
        UPLOAD,
        b"--x\r\n",
        content_type="multipart/form-data; boundary=x",
        CONTENT_LENGTH=str(50 * 1024**3),
    )
    assert response.status_code == 413
    assert b"larger than the upload limit" in response.content
    assert leftovers(upload_dirs) == []


def test_a_chunked_upload_without_a_length_is_refused(operator_client, upload_dirs):
    response = operator_client.generic(
        "POST",
        UPLOAD,
        b"--x--\r\n",
        content_type="multipart/form-data; boundary=x",
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
    )
    assert response.status_code == 411


def test_the_error_report_downloads_as_csv_without_formulas(operator_client):
    run = IngestRun.objects.create(
        archive_name="x.zip",
        status=IngestRun.Status.PARTIAL,
        errors=[
            {"file": "jobs.csv", "row": 3, "field": "user", "job_id": "=1+2", "message": '=HYPERLINK("http://x")'},
            {"file": "+cmd", "row": None, "field": "-x", "job_id": "@SUM(A1)", "message": "plain, with a comma"},
        ],
    )
    response = operator_client.get(f"/ingest-runs/{run.pk}/errors.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert f"ingest-run-{run.pk}-errors.csv" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["file", "row", "field", "job_id", "message", "consequence"]
    # By file: "+cmd" < "jobs.csv"; a run stored without consequences has none to say.
    assert rows[1] == ["'+cmd", "", "'-x", "'@SUM(A1)", "plain, with a comma", ""]
    assert rows[2] == ["jobs.csv", "3", "user", "'=1+2", '\'=HYPERLINK("http://x")', ""]
    page = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert "download as CSV" in page


def test_a_running_run_page_polls_its_status(operator_client):
    run = IngestRun.objects.create(archive_name="x.zip", status=IngestRun.Status.RUNNING, jobs_total=10, jobs_done=4)
    page = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert f'data-status-url="/ingest-runs/{run.pk}/status.json"' in page and 'id="run-bar"' in page
    status = operator_client.get(f"/ingest-runs/{run.pk}/status.json").json()
    assert (status["status"], status["jobs_done"], status["jobs_total"], status["finished"]) == (
        "running",
        4,
        10,
        False,
    )


def test_thousands_of_errors_are_paged_on_the_runs_page_and_all_in_its_csv(operator_client):
    errors = [
        {"file": "jobs.csv", "row": row, "field": "gpu_count", "job_id": f"j{row}", "message": "not a count"}
        for row in range(2, 452)
    ] + [{"file": "metrics.csv", "row": 9, "field": "gpu_util", "job_id": "j2", "message": "over 100 %"}]
    run = IngestRun.objects.create(archive_name="broken.zip", status=IngestRun.Status.PARTIAL, errors=errors)
    first = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert first.count("<span>not a count</span></td>") == 200 and "Page 1 of 3" in first
    assert '<h2>Errors <span class="muted">451</span>' in first
    kinds = first.split('id="error-kinds"')[1].split("</table>")[0]  # how they fall, most first
    assert kinds.index('gpu_count</td><td class="num">450<') < kinds.index('gpu_util</td><td class="num">1<')
    last = operator_client.get(f"/ingest-runs/{run.pk}/?page=3").content.decode()
    assert last.count("<span>not a count</span></td>") == 50 and ">j451<" in last and "over 100 %" in last
    assert operator_client.get(f"/ingest-runs/{run.pk}/?page=99").status_code == 200  # the last page, not an error
    rows = list(csv.reader(io.StringIO(operator_client.get(f"/ingest-runs/{run.pk}/errors.csv").content.decode())))
    assert len(rows) == 1 + 451


def test_a_big_runs_figures_read_as_a_person_reads_them(operator_client):
    """Thousands grouped, minutes past a minute, and the rate so far, on the list, the run's page and
    in what the page polls."""
    from datetime import timedelta

    from django.utils import timezone

    started = timezone.now() - timedelta(minutes=2, seconds=5)
    run = IngestRun.objects.create(
        archive_name="week-47.zip",
        status=IngestRun.Status.SUCCEEDED,
        started_at=started,
        finished_at=started + timedelta(minutes=2, seconds=5),
        jobs_total=10_000,
        jobs_done=9_990,  # stored; the 10 rejected are processed too
        jobs_created=9_990,
        jobs_rejected=10,
        samples=29_741_818,
    )
    page = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert '<dd id="run-duration">2\u00a0min 05\u00a0s</dd>' in page  # each figure on one line with its unit
    assert '<dd id="run-samples">29,741,818</dd>' in page
    assert "10,000 of 10,000 processed: 9,990 created, 0 updated, 0 unchanged, 10 rejected" in page
    # 10,000 jobs and 29.7 M GPU samples in 125 s; each unit whole, each figure with its unit a box of its own
    rate = '<span class="rate-part">80.0\u00a0jobs/s</span> · <span class="rate-part">237,935 GPU\u00a0samples/s</span>'
    assert rate in page
    listing = operator_client.get("/ingest-runs/").content.decode()
    assert "2\u00a0min 05\u00a0s" in listing and "29,741,818" in listing and "9,990" in listing
    shown = operator_client.get(f"/ingest-runs/{run.pk}/status.json").json()["display"]
    assert shown == {
        "count": "10,000 of 10,000 jobs",
        "jobs": "10,000 of 10,000 processed: 9,990 created, 0 updated, 0 unchanged, 10 rejected",
        "samples": "29,741,818",
        "duration": "2 min 05 s",
        "left": "–",  # over
        "rate": "80.0\u00a0jobs/s · 237,935 GPU\u00a0samples/s",
    }


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "–"),
        (0.04, "0.0 s"),
        (59.94, "59.9 s"),
        (59.96, "59.9 s"),  # its times 00:00.0 and 00:59.9, as its page shows them
        (60.0, "1 min 00 s"),
        (3599.4, "59 min 59 s"),
        (3599.6, "1 h 00 min"),
        (7385, "2 h 03 min"),
    ],
)
def test_run_durations_are_worded_by_their_size(seconds, shown):
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now().replace(microsecond=0)  # on a whole second: the duration is between tenths
    run = IngestRun(started_at=None if seconds is None else now, finished_at=None)
    if seconds is not None:
        run.finished_at = now + timedelta(seconds=seconds)
    assert run.duration_display == shown
    assert run.rate_display == "–"  # no job done yet


def test_operators_create_a_token_see_it_once_and_revoke_it(operator_client, operator, member_a):
    response = operator_client.post("/tokens/", {"name": "nightly-exporter", "pushes_archives": "on"})
    assert response.status_code == 200
    token = MachineToken.objects.get()
    key = response.context["created_key"]
    html = response.content.decode()
    assert key in html and "not shown again" in html
    assert token.created_by == operator and key.startswith(token.prefix + ".")
    assert key not in token.hashed_key  # only a hash is stored
    assert key not in operator_client.get("/tokens/").content.decode()  # shown once
    response = operator_client.post(f"/tokens/{token.prefix}/revoke/")
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked
    other = Client()
    other.force_login(member_a)
    assert other.get("/tokens/").status_code == 404


NOT_AN_ARCHIVE = b"notes.txt, renamed: nothing here is a zip or a tarball\n"
NOT_TAR_GZ = "week-47.tar.gz is not a tar.gz archive (its content is neither gzip nor tar)"
NOT_ANY = "notes.txt is not a fleet archive: its content is neither a zip file nor a tarball"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("fake.zip", NOT_AN_ARCHIVE, "fake.zip is not a zip archive (its content is not a zip file)"),
        ("week-47.tar.gz", NOT_AN_ARCHIVE, NOT_TAR_GZ),
        ("notes.txt", NOT_AN_ARCHIVE, NOT_ANY),
        ("cut.zip", EXAMPLE_ARCHIVE.read_bytes()[:3000], "not a readable zip file; it is truncated or corrupt"),
    ],
    ids=["text-as-zip", "text-as-tar-gz", "text", "truncated-zip"],
)
def test_a_failed_upload_names_the_file_the_user_uploaded(
    operator_client, upload_dirs, django_capture_on_commit_callbacks, name, content, message
):
    """The upload is kept under a generated name (`<hex>.upload`), which the run's errors showed in
    their File column; and a .zip that is not one was told 'expected a .zip, a .tar.gz or a folder'."""
    with django_capture_on_commit_callbacks(execute=True):
        operator_client.post(UPLOAD, {"file": SimpleUploadedFile(name, content)})
    run = IngestRun.objects.get()
    assert run.status == IngestRun.Status.FAILED and run.archive_name == name
    assert len(run.errors) == 1 and run.errors[0]["file"] == name and message in run.errors[0]["message"]
    page = operator_client.get(reverse("fleet:ingest-run-detail", args=[run.pk])).content.decode()
    assert f"<span>{name}</span></td>" in page and message in page and ".upload" not in page
    rows = list(csv.reader(io.StringIO(operator_client.get(f"/ingest-runs/{run.pk}/errors.csv").content.decode())))
    assert rows[1][0] == name and message in rows[1][4] and ".upload" not in str(rows)


def test_a_run_whose_jobs_were_all_rejected_reads_as_done(operator_client):
    """Rejected jobs are dealt with as the archive is read; counted as not done, a finished run of
    five rejected jobs read "0 of 5 processed" and its bar stayed empty."""
    run = IngestRun.objects.create(
        archive_name="broken.zip", status=IngestRun.Status.FAILED, jobs_total=5, jobs_done=0, jobs_rejected=5
    )
    page = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
    assert "5 of 5 processed: 0 created, 0 updated, 0 unchanged, 5 rejected" in page
    going = IngestRun.objects.create(
        archive_name="mixed.zip", status=IngestRun.Status.RUNNING, jobs_total=8, jobs_done=2, jobs_rejected=3
    )
    page = operator_client.get(f"/ingest-runs/{going.pk}/").content.decode()
    assert 'max="8" value="5"' in page and "5 of 8 jobs" in page  # 2 stored and 3 rejected of 8
