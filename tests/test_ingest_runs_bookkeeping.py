"""What this process says of the archive runs it holds, and what the runs lists cost to say it.

A run this process imports is never said to have no process importing it, whichever way its import came (an
upload's thread, Import now, a task, the command); a run read again (`refresh_from_db`) answers afresh; and the
runs list and the API's list say which runs no process holds in a bounded number of queries, the answers each run
gives alone.
"""

from __future__ import annotations

from contextlib import ExitStack
from datetime import timedelta
from functools import cache

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from fleet import ingest
from fleet.models import IngestRun
from tests.conftest import a_worker_imports
from tests.test_ingest_recovery import pending_run
from tests.test_ingest_runs_robust import _dead_owner, _words


def test_a_run_this_process_imports_is_never_said_stopped_by_it(upload_dirs, operator):
    """The command's import (and a worker's task) claims the run in `execute_run` only, not as an upload's thread
    is: asked by the importing thread itself, this process said no process held the run on PostgreSQL (its own
    connection took the run's lock, which it holds, as free), and Import now pressed meanwhile was told "another
    process" imports it. Whichever way the import came, this process says it imports the run."""
    run = pending_run(upload_dirs, minutes_ago=1)
    client = Client()
    client.force_login(operator)
    seen = []

    def look(progress) -> None:
        if seen:  # once, as the import goes on
            return
        now = IngestRun.objects.get(pk=run.pk)
        page = _words(client.get(f"/ingest-runs/{run.pk}/"))
        seen.append(
            {
                "importing_here": ingest.importing_here(run.pk),
                "no_process_holds": now.no_process_holds,
                "page_says_stopped": "No process is importing this run" in page,
                "import_now": ingest.requeue_run(run.pk, background=True).message,
            }
        )

    done = ingest.execute_run(run.pk, on_progress=look)
    assert done.status == IngestRun.Status.SUCCEEDED, done.errors
    assert seen == [
        {
            "importing_here": True,
            "no_process_holds": False,
            "page_says_stopped": False,
            "import_now": ingest.IMPORTING_HERE,
        }
    ]
    assert not ingest.importing_here(run.pk)  # let go once the import is over


@cache
def _gone() -> str:
    """A process of this host that took a run and is gone (one for the module: each costs a process)."""
    return _dead_owner()


def _stopped_run(name: str = "week-49.zip") -> IngestRun:
    """A run left *running* by a process that is gone: on SQLite its owner is dead, on PostgreSQL no lock holds it."""
    run = IngestRun.objects.create(
        archive_name=name, source=IngestRun.Source.UPLOAD, status=IngestRun.Status.RUNNING, owner=_gone()
    )
    IngestRun.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(minutes=5))
    return IngestRun.objects.get(pk=run.pk)


@pytest.mark.django_db(transaction=True)  # on PostgreSQL another session holds a run's lock, and sees the run
def test_a_run_read_again_answers_whether_a_process_holds_it_afresh(db):
    """`no_process_holds` is asked once per read of the run; a run read again (`refresh_from_db`) kept the first
    answer: a run taken up since by a live process still said stopped (Elapsed "stopped", no duration), and one
    finished since still said no process held it."""
    run = _stopped_run()
    assert run.no_process_holds and run.duration_s is None
    IngestRun.objects.filter(pk=run.pk).update(owner=ingest.this_process())  # taken up by a live process
    with a_worker_imports(run.pk):
        run.refresh_from_db()
        assert not run.no_process_holds and run.duration_s == pytest.approx(300, abs=5)

    again = _stopped_run("week-50.zip")
    assert again.no_process_holds
    IngestRun.objects.filter(pk=again.pk).update(status=IngestRun.Status.SUCCEEDED, finished_at=timezone.now())
    again.refresh_from_db()
    assert not again.no_process_holds and again.duration_s == pytest.approx(300, abs=5)
    again.refresh_from_db(fields=["phase"])  # a field that says nothing of it keeps the answer
    assert "no_process_holds" in vars(again)


def _runs_with_every_answer(held: int, stopped: int) -> tuple[list[IngestRun], list[IngestRun]]:
    """`held` running runs a live process imports (on PostgreSQL its session holds their locks; on SQLite this live
    process is their owner) and `stopped` running runs whose process is gone, with a finished and a pending run."""
    held_runs = [_stopped_run(f"held-{n}.zip") for n in range(held)]
    IngestRun.objects.filter(pk__in=[run.pk for run in held_runs]).update(owner=ingest.this_process())
    stopped_runs = [_stopped_run(f"stopped-{n}.zip") for n in range(stopped)]
    IngestRun.objects.create(archive_name="done.zip", status=IngestRun.Status.SUCCEEDED)
    IngestRun.objects.create(archive_name="waiting.zip", status=IngestRun.Status.PENDING)
    return held_runs, stopped_runs


def _api(operator) -> APIClient:
    api = APIClient()
    api.force_authenticate(operator)
    return api


def _queries(read) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as queries:
        answer = read()
    return len(queries), answer


@pytest.mark.django_db(transaction=True)
def test_the_runs_lists_say_which_runs_no_process_holds_in_a_bounded_number_of_queries(operator):
    """Asked run by run, on PostgreSQL each running run of the API's list (and of the runs page) took and let go its
    lock: two queries a run, 200 for a page of running runs. The lists now ask once for the page, and each run's
    answer is the one it gives alone (its own page, the API's run)."""
    api = _api(operator)
    client = Client()
    client.force_login(operator)
    held, stopped = _runs_with_every_answer(held=2, stopped=2)
    with ExitStack() as workers:
        for run in held:
            workers.enter_context(a_worker_imports(run.pk))
        alone = {run.pk: api.get(f"/api/v1/ingest-runs/{run.pk}/").json()["duration_s"] is None for run in held}
        alone |= {run.pk: api.get(f"/api/v1/ingest-runs/{run.pk}/").json()["duration_s"] is None for run in stopped}
        assert alone == {**{run.pk: False for run in held}, **{run.pk: True for run in stopped}}
        few_api, listed = _queries(lambda: api.get("/api/v1/ingest-runs/").json()["results"])
        assert {run["id"]: run["duration_s"] is None for run in listed if run["id"] in alone} == alone
        few_page, page = _queries(lambda: _words(client.get("/ingest-runs/")))
        said_stopped = {run.pk for run in held + stopped if f"/ingest-runs/{run.pk}/#run-stopped" in page}
        assert said_stopped == {run.pk for run in stopped}

        more_held, more_stopped = _runs_with_every_answer(held=6, stopped=6)
        for run in more_held:
            workers.enter_context(a_worker_imports(run.pk))
        many_api, listed = _queries(lambda: api.get("/api/v1/ingest-runs/").json()["results"])
        many_page, page = _queries(lambda: _words(client.get("/ingest-runs/")))
    assert {run["id"]: run["duration_s"] is None for run in listed if run["status"] == "running"} == {
        **alone,
        **{run.pk: False for run in more_held},
        **{run.pk: True for run in more_stopped},
    }
    assert {run.pk for run in held + more_held + stopped + more_stopped if f"/{run.pk}/#run-stopped" in page} == {
        run.pk for run in stopped + more_stopped
    }
    # Three times the running runs, the same queries: the answers cost one query a list, or none (SQLite).
    assert (many_api, many_page) == (few_api, few_page)


@pytest.mark.django_db(transaction=True)
def test_a_page_of_running_runs_is_listed_in_few_queries(operator, django_assert_max_num_queries):
    """A hundred running runs, a page of the API's list and of the runs page each: a handful of queries (the page's
    filters count the runs by status, source, user, token and connector; with the session, the user, the count and
    the runs, 10), where on PostgreSQL each running run added two (its lock taken and let go)."""
    IngestRun.objects.bulk_create(
        IngestRun(archive_name=f"week-{n}.zip", status=IngestRun.Status.RUNNING, owner=_gone()) for n in range(100)
    )
    api = _api(operator)
    client = Client()
    client.force_login(operator)
    with django_assert_max_num_queries(8):
        assert len(api.get("/api/v1/ingest-runs/").json()["results"]) == 100
    with django_assert_max_num_queries(11):
        assert client.get("/ingest-runs/").status_code == 200
