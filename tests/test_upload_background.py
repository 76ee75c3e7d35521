"""Without a task queue (no REDIS_URL, the embedded mode of `make demo`) an upload's import runs in a
thread of the serving process, so the upload answers at once with the run and its page follows it.

Before, every task ran where it was queued, so the import ran inside the upload request: the browser sat
on "Uploaded; starting the import…" until it was over and never saw the jobs done of the total or the
phase that a deployment with a worker shows, and the API's push answered only once the run had ended.
`manage.py ingest_archive` stays in the terminal with its progress bar.

Real commits (transaction=True): the thread reads the run over a connection of its own, which sees only
what was committed, as in the server.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest
from django.core.management import call_command
from django.db import connections
from django.test import Client
from rest_framework.test import APIClient

from fleet import ingest
from fleet.models import IngestRun, Job, MachineToken
from tests.conftest import EXAMPLE_ARCHIVE, wait_for_imports
from tests.test_upload import UPLOAD, leftovers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("upload_dirs")]

# How long the held import waits to be let go at most: an upload that waited for its import answered after it.
HOLD_SECONDS = 20


@contextmanager
def storing_held(monkeypatch):
    """The import stops before it stores its first batch of jobs until `release` is set; `reached`
    says it got there, and `seen` keeps the thread it runs in and that thread's database connection."""
    reached, release = threading.Event(), threading.Event()
    seen: dict = {}
    store = ingest.store_jobs

    def held(run, batch, **kwargs):
        seen.setdefault("thread", threading.current_thread())
        seen.setdefault("connection", connections["default"])
        reached.set()
        release.wait(HOLD_SECONDS)
        if "fail" in seen:
            raise seen["fail"]
        return store(run, batch, **kwargs)

    monkeypatch.setattr(ingest, "store_jobs", held)
    try:
        yield reached, release, seen
    finally:
        release.set()


def test_a_browser_upload_answers_at_once_and_its_page_follows_the_import(operator, monkeypatch, upload_dirs):
    client = Client()
    client.force_login(operator)
    with storing_held(monkeypatch) as (reached, release, seen):
        began = time.monotonic()
        with open(EXAMPLE_ARCHIVE, "rb") as handle:
            response = client.post(UPLOAD, {"file": handle}, HTTP_ACCEPT="application/json")
        took = time.monotonic() - began
        assert response.status_code == 202, response.content
        assert took < HOLD_SECONDS / 2, f"the upload waited for its import ({took:.1f} s)"
        body = response.json()
        run = IngestRun.objects.get(pk=body["run_id"])
        assert run.status == IngestRun.Status.RUNNING  # begun before the answer: its page shows it running
        assert reached.wait(10)
        assert seen["thread"] is not threading.main_thread()

        status = client.get(body["status_url"]).json()
        assert (status["status"], status["finished"], status["phase"]) == ("running", False, "storing jobs")
        assert (status["jobs_processed"], status["jobs_total"]) == (0, 5)
        page = " ".join(client.get(body["detail_url"]).content.decode().split())
        assert ">Running</span>" in page and "0 of 5 jobs" in page and "storing jobs" in page
        # Not the page of a run nobody imports: the thread is importing it.
        assert "Not imported" not in page and ">Import now</button>" not in page
        release.set()
        assert wait_for_imports()

    run.refresh_from_db()
    assert run.status == IngestRun.Status.SUCCEEDED and run.jobs_created == Job.objects.count() == 5
    assert leftovers(upload_dirs) == []  # the kept upload went with its finished run
    assert seen["connection"].connection is None  # the thread closed its database connection
    page = client.get(body["detail_url"]).content.decode()
    assert ">Succeeded</span>" in page and 'id="run-bar"' not in page


def test_a_form_post_without_javascript_lands_on_the_running_run(operator, monkeypatch):
    client = Client()
    client.force_login(operator)
    with storing_held(monkeypatch) as (reached, release, _):
        with open(EXAMPLE_ARCHIVE, "rb") as handle:
            response = client.post(UPLOAD, {"file": handle})
        run = IngestRun.objects.get()
        assert response.status_code == 302 and response["Location"] == f"/ingest-runs/{run.pk}/"
        assert run.status == IngestRun.Status.RUNNING
        release.set()
        assert wait_for_imports()
    assert IngestRun.objects.get().status == IngestRun.Status.SUCCEEDED


def test_an_api_push_answers_202_with_the_running_run_and_the_run_finishes(operator, monkeypatch):
    _, key = MachineToken.objects.create_key(name="exporter-01", created_by=operator)
    auth = {"HTTP_AUTHORIZATION": f"Api-Key {key}"}
    api = APIClient()
    with storing_held(monkeypatch) as (reached, release, _):
        began = time.monotonic()
        with open(EXAMPLE_ARCHIVE, "rb") as handle:
            response = api.post("/api/v1/archives/", {"file": handle}, format="multipart", **auth)
        assert response.status_code == 202 and time.monotonic() - began < HOLD_SECONDS / 2
        body = response.json()
        assert (body["status"], body["finished"]) == ("running", False) and response["Location"] == body["url"]
        assert reached.wait(10)
        polled = api.get(f"/api/v1/ingest-runs/{body['id']}/", **auth).json()
        assert (polled["status"], polled["jobs_total"], polled["jobs_done"]) == ("running", 5, 0)
        release.set()
        assert wait_for_imports()
    finished = api.get(f"/api/v1/ingest-runs/{body['id']}/", **auth).json()
    assert (finished["status"], finished["jobs_created"]) == ("succeeded", 5)


def test_an_import_that_breaks_in_the_thread_fails_its_run_saying_why(operator, monkeypatch, upload_dirs):
    client = Client()
    client.force_login(operator)
    with storing_held(monkeypatch) as (reached, release, seen):
        with open(EXAMPLE_ARCHIVE, "rb") as handle:
            body = client.post(UPLOAD, {"file": handle}, HTTP_ACCEPT="application/json").json()
        assert reached.wait(10)
        seen["fail"] = RuntimeError("the disk controller said no")
        release.set()
        assert wait_for_imports()
    run = IngestRun.objects.get(pk=body["run_id"])
    assert run.status == IngestRun.Status.FAILED and run.finished_at is not None  # not "running" for ever
    assert run.errors[0]["message"] == "the import failed: RuntimeError: the disk controller said no"
    assert seen["connection"].connection is None


def test_the_command_imports_in_the_terminal_as_before(capsys):
    """`manage.py ingest_archive` (and its --async without a queue) has imported when it returns."""
    call_command("ingest_archive", str(EXAMPLE_ARCHIVE))
    assert "status: Succeeded" in capsys.readouterr().out
    call_command("ingest_archive", str(EXAMPLE_ARCHIVE), "--async")
    assert [run.status for run in IngestRun.objects.order_by("pk")] == ["succeeded", "succeeded"]
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("ingest-run-")]


def test_a_server_stopped_during_the_import_fails_the_run_saying_so(operator, monkeypatch):
    """Ctrl-C on `make demo` (or runserver restarting on a code change) ends the process's main thread, and
    the interpreter then refuses the importer's own threads: the import failed as 'RuntimeError: cannot
    schedule new futures after interpreter shutdown'. The run says what happened and what to do."""
    from fleet import tasks

    client = Client()
    client.force_login(operator)
    with storing_held(monkeypatch) as (reached, release, seen):
        with open(EXAMPLE_ARCHIVE, "rb") as handle:
            body = client.post(UPLOAD, {"file": handle}, HTTP_ACCEPT="application/json").json()
        assert reached.wait(10)
        monkeypatch.setattr(tasks, "process_stopping", lambda: True)  # the main thread has ended
        seen["fail"] = RuntimeError("cannot schedule new futures after interpreter shutdown")
        release.set()
        assert wait_for_imports()
    run = IngestRun.objects.get(pk=body["run_id"])
    assert run.status == IngestRun.Status.FAILED
    assert run.errors[0]["message"] == (
        "the process importing it was stopped (the web server, by Ctrl-C or to restart) before the import "
        "ended; the jobs stored so far are complete. Upload the archive again: stored jobs are skipped."
    )


def test_a_run_its_thread_has_not_begun_yet_is_not_offered_to_import_again(operator, monkeypatch, upload_dirs):
    """The upload waits for its thread to begin the run at most BACKGROUND_START_SECONDS (a SQLite database
    another import holds can make it wait longer). A run still pending then read *Not imported* with
    **Import now**, which would have imported it a second time, at once, beside its thread. It is taken
    (running, "starting the import") before its thread starts, so another web process leaves it alone too."""
    go_on = threading.Event()
    queue_run = ingest.queue_run

    def slow_to_begin(run_id):
        go_on.wait(HOLD_SECONDS)
        return queue_run(run_id)

    monkeypatch.setattr(ingest, "queue_run", slow_to_begin)
    monkeypatch.setattr(ingest, "BACKGROUND_START_SECONDS", 0.2)
    client = Client()
    client.force_login(operator)
    try:
        with open(EXAMPLE_ARCHIVE, "rb") as handle:
            body = client.post(UPLOAD, {"file": handle}, HTTP_ACCEPT="application/json").json()
        run = IngestRun.objects.get(pk=body["run_id"])
        assert (run.status, run.phase) == (IngestRun.Status.RUNNING, "starting the import")
        page = " ".join(client.get(body["detail_url"]).content.decode().split())
        assert "Not imported" not in page and ">Import now</button>" not in page
        assert "starting the import" in page
        for action in ("requeue", "fail"):
            response = client.post(f"/ingest-runs/{run.pk}/{action}/", follow=True)
            assert "This process is importing the run; nothing was changed." in response.content.decode()
        after = IngestRun.objects.get(pk=run.pk)
        assert (after.status, after.phase, after.attempts) == (IngestRun.Status.RUNNING, "starting the import", 0)
    finally:
        go_on.set()
    assert wait_for_imports()
    assert IngestRun.objects.get(pk=run.pk).status == IngestRun.Status.SUCCEEDED
    assert not ingest.importing_here(run.pk)


def test_import_now_begins_the_import_in_the_background_and_a_second_press_is_told_it_is_importing(
    operator, monkeypatch, upload_dirs
):
    """A pending run's **Import now** (no task queue) imported inside its request, so the page hung until the
    import was over; pressed in two tabs at once, both requests imported the run at the same time. It now
    begins the import in a thread as an upload does, the run claimed once: the press that comes second,
    at the same moment, is told the run is being imported, and nothing is imported twice."""
    from fleet.models import AuditEvent
    from tests.test_ingest_recovery import pending_run

    run = pending_run(upload_dirs, minutes_ago=2)
    answers: dict[str, tuple[float, str]] = {}
    both = threading.Barrier(2)

    def press(tab: str) -> None:
        client = Client()
        client.force_login(operator)
        try:
            both.wait(10)
            began = time.monotonic()
            response = client.post(f"/ingest-runs/{run.pk}/requeue/", follow=True)
            answers[tab] = (time.monotonic() - began, response.content.decode())
        finally:
            connections.close_all()

    with storing_held(monkeypatch) as (reached, release, seen):
        tabs = [threading.Thread(target=press, args=(tab,)) for tab in ("first", "second")]
        for tab in tabs:
            tab.start()
        for tab in tabs:
            tab.join(HOLD_SECONDS / 2)
        assert not any(tab.is_alive() for tab in tabs), "Import now waited for the import"
        assert reached.wait(10)
        assert seen["thread"].name == f"ingest-run-{run.pk}"
        began = [page for _, page in answers.values() if "The import has begun in this process" in page]
        told = [
            page for _, page in answers.values() if "This process is importing the run; nothing was changed." in page
        ]
        assert (len(began), len(told)) == (1, 1), [page[-3000:] for _, page in answers.values()]
        assert ">Running</span>" in began[0] and "Not imported" not in began[0]
        assert len([thread for thread in threading.enumerate() if thread.name.startswith("ingest-run-")]) == 1
        release.set()
        assert wait_for_imports()
    run.refresh_from_db()
    assert run.status == IngestRun.Status.SUCCEEDED and run.attempts == 1
    assert Job.objects.count() == run.jobs_created == 5
    event = AuditEvent.objects.get(action="ingest_run.requeue", target_id=str(run.pk))
    assert event.details == {"outcome": "started", "status": "pending"}


def test_import_now_on_a_run_an_earlier_attempt_stored_jobs_of_says_they_are_kept(operator, monkeypatch):
    """Import now on a pending run whose earlier attempt stored jobs: its page read "0 of 5 jobs" with no word
    of those jobs (the card that said they are kept goes once the import begins). It says they are kept and
    that this attempt counts them as unchanged, from the press until the import is over."""
    ingest.execute_run(ingest.create_run(EXAMPLE_ARCHIVE).pk)
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    IngestRun.objects.filter(pk=run.pk).update(attempts=1, phase="queued again: its worker had stopped")
    Job.objects.filter(pk__in=Job.objects.order_by("pk").values("pk")[:2]).update(ingest_run=run)
    kept = "The 2 jobs an earlier attempt stored are kept: this attempt counts them as unchanged."
    client = Client()
    client.force_login(operator)
    with storing_held(monkeypatch) as (reached, release, _):
        response = client.post(f"/ingest-runs/{run.pk}/requeue/", follow=True)
        page = " ".join(response.content.decode().split())
        assert "The import has begun in this process" in page and "Not imported" not in page
        assert kept in page
        assert reached.wait(10)
        page = " ".join(client.get(f"/ingest-runs/{run.pk}/").content.decode().split())
        assert "0 of 5 jobs" in page and kept in page
        assert "<dt>Attempts</dt><dd>2 (an attempt stopped part-way" in page
        release.set()
        assert wait_for_imports()
    run.refresh_from_db()
    assert (run.status, run.attempts, run.jobs_unchanged) == (IngestRun.Status.SUCCEEDED, 2, 5)
    assert Job.objects.filter(ingest_run=run).count() == 2
    assert kept not in client.get(f"/ingest-runs/{run.pk}/").content.decode()  # over: its Jobs row counts them


# One web process pressing Import now (`fleet.ingest.requeue_run`, as the view does) with the moment held where
# it has found the run pending (`archive_gone` is asked next), until the other process has too: the worst timing
# of two presses in two processes. Each import that begins writes the process's name to `imports`.
PRESS_IN_A_PROCESS = """
import sys, time, django
django.setup()
from pathlib import Path
from fleet import ingest
run_id, me, gate = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
archive_gone, execute = ingest.archive_gone, ingest._execute_claimed

def both_found_it_pending(run):
    (gate / me).touch()
    deadline = time.monotonic() + 20
    while len(list(gate.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    return archive_gone(run)

def counted(run, on_progress=None):
    with open(gate.parent / "imports", "a") as imports:
        imports.write(me + "\\n")
    return execute(run, on_progress)

ingest.archive_gone, ingest._execute_claimed = both_found_it_pending, counted
recovery = ingest.requeue_run(run_id, background=True)
assert ingest.wait_for_background_imports(60)
print(recovery.outcome + ": " + recovery.message)
"""


def test_import_now_pressed_in_two_web_processes_at_once_imports_the_run_once(upload_dirs, tmp_path):
    """Without a task queue the run was claimed in the process's memory only, so two web processes (gunicorn
    --workers 3 on SQLite) pressed at the same moment both imported it, side by side. The claim is the database's
    now (pending to running, one conditional UPDATE): one process begins the import, the other is told so."""
    import os
    import subprocess
    import sys

    from tests.test_connector_deletion import require_file_database
    from tests.test_ingest_recovery import pending_run
    from tests.test_services import _worker_database_url

    require_file_database()
    run = pending_run(upload_dirs, minutes_ago=2)
    gate = tmp_path / "gate"
    gate.mkdir()
    env = {**os.environ, "DATABASE_URL": _worker_database_url(), "DJANGO_SETTINGS_MODULE": "config.settings",
           "DEBUG": "1", "SECRET_KEY": "web-process", "UPLOAD_DIR": str(upload_dirs),
           "STORAGE_DIR": str(tmp_path / "storage"), "ARCHIVE_WORK_DIR": str(tmp_path / "work")}  # fmt: skip
    env.pop("REDIS_URL", None)  # the embedded mode: no task queue
    presses = [
        subprocess.Popen(
            [sys.executable, "-c", PRESS_IN_A_PROCESS, str(run.pk), name, str(gate)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for name in ("web-1", "web-2")
    ]
    answers = []
    for press in presses:
        out, err = press.communicate(timeout=120)
        assert press.returncode == 0, err
        answers.append(out.strip().splitlines()[-1])
    assert len((tmp_path / "imports").read_text().split()) == 1, answers  # imported once
    assert sorted(answer.split(":")[0] for answer in answers) == ["busy", "queued"], answers
    assert "busy: Another process has begun importing the run; nothing was changed." in answers
    run.refresh_from_db()
    assert (run.status, run.attempts, run.jobs_created) == (IngestRun.Status.SUCCEEDED, 1, 5), run.errors
    assert Job.objects.count() == 5
