"""Ingest runs that stay true to what is stored: the kept-jobs line of a run imported again, and (SQLite) a run
whose process was killed.

Real commits (transaction=True): a page reads what an import has committed, as in the server.
"""

from __future__ import annotations

import pytest
from django.test import Client

from fleet import ingest
from fleet.models import IngestRun, Job
from tests.conftest import EXAMPLE_ARCHIVE

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("upload_dirs")]


def _words(response) -> str:
    return " ".join(response.content.decode().split())


def test_the_kept_jobs_line_never_counts_a_batch_this_attempt_stored(operator, monkeypatch, settings):
    """A run imported again says what an earlier attempt stored: "The 2 jobs an earlier attempt stored are kept".
    Read just after a batch of this attempt's new jobs committed, it said 4 (then 2 again): the run's counts were
    written after the batch's commit, so its jobs were taken for an earlier attempt's until they were. The counts
    now commit with the batch, and the page reads both at one moment."""
    settings.INGEST_STORE_BATCH = 2
    ingest.execute_run(ingest.create_run(EXAMPLE_ARCHIVE).pk)
    run = ingest.create_run(EXAMPLE_ARCHIVE)
    # An earlier attempt of `run` stored the first 2 jobs and stopped; the other 3 are not stored.
    first_two = list(Job.objects.order_by("external_id").values_list("pk", flat=True)[:2])
    Job.objects.exclude(pk__in=first_two).delete()
    Job.objects.filter(pk__in=first_two).update(ingest_run=run)
    IngestRun.objects.filter(pk=run.pk).update(attempts=1)

    client = Client()
    client.force_login(operator)
    store = ingest.store_jobs
    seen: list[tuple[int, str]] = []

    def then_read(*args, **kwargs):
        results = store(*args, **kwargs)  # the batch is committed
        current = IngestRun.objects.get(pk=run.pk)
        page = _words(client.get(f"/ingest-runs/{run.pk}/"))
        line = page.split('<p id="run-earlier">')[1].split("</p>")[0] if 'id="run-earlier"' in page else ""
        seen.append((ingest.stored_by_earlier_attempts(current), line))
        return results

    monkeypatch.setattr(ingest, "store_jobs", then_read)
    done = ingest.execute_run(run.pk)
    assert (done.status, done.attempts, done.jobs_created, done.jobs_unchanged) == (IngestRun.Status.SUCCEEDED, 2, 3, 2)
    kept = "The 2 jobs an earlier attempt stored are kept: this attempt counts them as unchanged."
    assert seen == [(2, kept)] * 3, seen
