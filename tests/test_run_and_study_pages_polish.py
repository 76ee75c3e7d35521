"""Small faults seen in review on an ingest run's page and a study's page, each as a user notices it.

- A run left *running* whose process is gone (its page says "No process is importing this run" and offers
  Import now / Mark failed) still said "Time left: about 3 min", as if it went on. It has no estimate now, as a
  finished run or a connector's pull has none: the row is left out, and the polled figures say "–". Its Elapsed
  still counted up every second, and the API still gave a number in `seconds_left`: Elapsed says "stopped" (the
  run records no time of its last progress), and `seconds_left` is null; so is `duration_s`, which counted on too.
  Its rate, divided by the time up to now, fell with every poll: "–". Whether a process imports the run is asked
  once per page, poll or API answer (on PostgreSQL each asking took the run's lock).
- At 390 px the rate broke as "… 161,419 GPU" / "samples/s": each figure and its unit are kept whole.
- A study's page on a phone: the cards in its grid (My labels, Sample, Raters) were 32 px apart (the grid's gap
  and each card's margin), the cards after it 16 px; the gap above Raters stood out.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from fleet import ingest
from fleet.models import IngestRun
from tests.conftest import a_worker_imports
from tests.test_accessibility import open_as
from tests.test_browser import browser, window_width  # noqa: F401  (the browser fixture)
from tests.test_ingest_runs_robust import _dead_owner
from tests.waiting import wait_for

NBSP = "\u00a0"


def storing_run(owner: str = "") -> IngestRun:
    """A running upload storing its jobs for a minute, a quarter done: a run with an estimate of its time left."""
    now = timezone.now()
    run = IngestRun.objects.create(
        archive_name="week-49.zip",
        source=IngestRun.Source.UPLOAD,
        status=IngestRun.Status.RUNNING,
        started_at=now - timedelta(seconds=70),
        storing_started_at=now - timedelta(seconds=60),
        phase="storing jobs",
        jobs_total=40_000,
        jobs_done=10_000,
        jobs_created=10_000,
        samples=12_345_670,
    )
    IngestRun.objects.filter(pk=run.pk).update(owner=owner)
    run.refresh_from_db()
    return run


def stopped_run() -> IngestRun:
    """`storing_run` left running by a process that is gone (killed): its page offers Import now / Mark failed."""
    run = storing_run(owner=_dead_owner())
    if not ingest.worker_stopped(run):
        pytest.skip("this system does not say whether a process is gone (no /proc)")
    return run


def _page(client: Client, run: IngestRun) -> str:
    return " ".join(client.get(f"/ingest-runs/{run.pk}/").content.decode().split())


@pytest.mark.django_db(transaction=True)
def test_a_run_no_process_imports_says_no_time_left(operator):
    """Its page offers Import now and Mark failed, and no longer estimates the time left; nor do its polled figures
    (what the page's script writes under Time left, were the row there: a page opened while the run went on)."""
    client = Client()
    client.force_login(operator)
    going = storing_run(owner=ingest.this_process())  # this process imports it (SQLite: its recorded owner lives)
    with a_worker_imports(going.pk):  # PostgreSQL: a worker's session holds its lock
        assert "<dt>Time left</dt>" in _page(client, going)
        assert client.get(f"/ingest-runs/{going.pk}/status.json").json()["display"]["left"] == "about 3 min"

    stopped = stopped_run()
    page = _page(client, stopped)
    assert "No process is importing this run" in page or "No worker is importing this run" in page
    assert "Time left" not in page and "about 3" not in page
    polled = client.get(f"/ingest-runs/{stopped.pk}/status.json").json()
    assert polled["display"]["left"] == "–"


@pytest.mark.django_db
def test_the_rate_keeps_each_figure_with_its_unit(operator_client, monkeypatch):
    """ "GPU samples/s" and "jobs/s" whole, each beside its figure, on the page and in the polled figures alike."""
    now = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: now)  # the figures as of one instant, however slow the machine
    run = storing_run()
    seconds = (now - run.started_at).total_seconds()
    jobs, samples = f"{10_000 / seconds:,.1f}", f"{12_345_670 / seconds:,.0f}"
    said = f"{jobs}{NBSP}jobs/s · {samples} GPU{NBSP}samples/s"
    with a_worker_imports(run.pk):  # a run going on has a rate (a stopped one says "–")
        page = operator_client.get(f"/ingest-runs/{run.pk}/").content.decode()
        polled = operator_client.get(f"/ingest-runs/{run.pk}/status.json").json()
    part = '<span class="rate-part">{}</span>'.format
    boxes = f"{part(f'{jobs}{NBSP}jobs/s')} · {part(f'{samples} GPU{NBSP}samples/s')}"
    assert f'<dd id="run-rate" title="Average since the run started">{boxes}</dd>' in page
    assert polled["display"]["rate"] == said


# The lines each of the rate's figures (with its unit) and its units are on: [text, lines], from the text's boxes.
RATE_LINES = """
const lines = range => new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
const box = document.getElementById('run-rate');
const parts = [...box.querySelectorAll('.rate-part')].map(part => {
  const range = document.createRange(); range.selectNodeContents(part); return [part.textContent, lines(range)];
});
const units = [...box.querySelectorAll('.rate-part')].map(part => {
  const node = part.firstChild, at = node.textContent.search(/(GPU.samples|jobs)\\/s$/);
  const range = document.createRange(); range.setStart(node, at); range.setEnd(node, node.textContent.length);
  return [node.textContent.slice(at), lines(range)];
});
return {parts, units};
"""


# How many of the run's figures the page's script has had answered (its polls, static/js/ingest.js), as the
# browser's own record of the page's requests (Resource Timing) has them.
POLLS_ANSWERED = """
const url = new URL(document.getElementById('run-progress').dataset.statusUrl, location.href).href;
return performance.getEntriesByType('resource').filter(e => e.name === url && e.responseStatus === 200).length;
"""


def polled_twice(driver) -> int:
    """Wait until the page's script has polled its run's figures twice: it asks again (after a second) only once it
    has written the first answer on the page, so the page shows what a poll wrote."""
    return wait_for(
        "the page to poll its run's figures twice",
        lambda: driver.execute_script(POLLS_ANSWERED),
        15,
        until=lambda n: n >= 2,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [320, 390])
def test_on_a_phone_a_stopped_runs_page_keeps_its_rate_whole_and_no_estimate(browser, live_server, operator, width):  # noqa: F811
    """At 390 px the rate read "130.7 jobs/s · 161,419 GPU" and "samples/s" under it. Looked at after the page's
    script has polled the run's figures (each second), which write the rate again and must not bring back a
    time left for a run no process imports, nor an Elapsed counting on, nor a rate falling with every poll."""
    from selenium.webdriver.common.by import By

    stopped = stopped_run()
    going = storing_run(owner=ingest.this_process())  # a run going on: its rate is shown
    open_as(browser, live_server.url, operator)
    with a_worker_imports(going.pk), window_width(browser, width, mobile=True):
        browser.get(f"{live_server.url}/ingest-runs/{stopped.pk}/")
        polled_twice(browser)  # its Elapsed no longer moves, "stopped"
        assert browser.find_element(By.ID, "run-duration").text == "stopped"
        assert browser.find_element(By.ID, "run-rate").text == "–"
        text = browser.find_element(By.ID, "run-progress").text
        browser.get(f"{live_server.url}/ingest-runs/{going.pk}/")
        polled_twice(browser)  # the rate written again
        lines = browser.execute_script(RATE_LINES)
    assert "Time left" not in text and "about" not in text, text
    assert [unit for unit, count in lines["units"]] == ["jobs/s", f"GPU{NBSP}samples/s"], lines
    assert [unit for unit, count in lines["units"] if count != 1] == [], lines
    if width >= 390:  # at 320 "171,690 GPU samples/s" is wider than its line: the figure goes above its unit
        assert [part for part, count in lines["parts"] if count != 1] == [], lines


# The vertical gaps between the page's cards (those not inside another card), each to the next card under it.
CARD_GAPS = """
const cards = [...document.querySelectorAll('main .card')].filter(c => !c.parentElement.closest('.card'))
  .map(c => c.getBoundingClientRect());
return cards.flatMap(a => {
  const below = cards.filter(b => b.top >= a.bottom - 1 && b.left < a.right && b.right > a.left);
  return below.length ? [Math.round(Math.min(...below.map(b => b.top)) - a.bottom)] : [];
});
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [320, 390, 1280])
def test_a_studys_cards_are_evenly_spaced(browser, live_server, three_rater_study, width):  # noqa: F811
    study = three_rater_study
    open_as(browser, live_server.url, study.created_by)  # its lead
    with window_width(browser, width, mobile=width < 700):
        browser.get(f"{live_server.url}/studies/{study.pk}/")
        gaps = browser.execute_script(CARD_GAPS)
    assert len(gaps) >= 3 and set(gaps) == {16}, gaps


@pytest.mark.django_db(transaction=True)
def test_a_run_no_process_imports_stops_its_elapsed_and_its_api_estimate(operator):
    """A stopped run's Elapsed no longer counts up every second as if the import went on: the run records no time
    of its last progress, so it says "stopped" (its start is above it), on the page and in its polled figures; and
    the API's `seconds_left` is null for it, as the page has no Time left, and its schema says so."""
    from rest_framework.test import APIClient

    client = Client()
    client.force_login(operator)
    api = APIClient()
    api.force_authenticate(operator)
    stopped = stopped_run()
    page = _page(client, stopped)
    assert '<dt>Elapsed</dt><dd id="run-duration">stopped</dd>' in page
    polled = client.get(f"/ingest-runs/{stopped.pk}/status.json").json()
    assert polled["display"]["duration"] == "stopped" and polled["seconds_left"] is None
    # Nor its rate: divided by the time up to now, it fell with every poll (116 to 135 jobs/s in one minute).
    assert '<dd id="run-rate" title="Average since the run started"><span class="rate-part">–</span></dd>' in page
    assert polled["display"]["rate"] == "–"
    assert api.get(f"/api/v1/ingest-runs/{stopped.pk}/").json()["seconds_left"] is None
    schema = api.get("/api/v1/schema/", {"format": "json"}).json()
    description = schema["components"]["schemas"]["IngestRun"]["properties"]["seconds_left"]["description"]
    assert "no process imports" in description

    going = storing_run(owner=ingest.this_process())  # its Elapsed counts on, and it has an estimate
    with a_worker_imports(going.pk):
        assert '<dt>Elapsed</dt><dd id="run-duration">1' in _page(client, going)
        going_polled = client.get(f"/ingest-runs/{going.pk}/status.json").json()["display"]
        assert going_polled["duration"].startswith("1") and "jobs/s" in going_polled["rate"]
        assert api.get(f"/api/v1/ingest-runs/{going.pk}/").json()["seconds_left"] == pytest.approx(180, abs=2)


@pytest.mark.django_db(transaction=True)
def test_a_stopped_runs_api_duration_no_longer_counts_up(operator):
    """Its page says Elapsed "stopped", but the API's `duration_s` (and the polled one) still grew every second, as
    if the import went on: null now, as the run records no time of its last progress to stop it at; its schema says
    so. A run going on still counts its duration up to now."""
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(operator)
    client = Client()
    client.force_login(operator)
    stopped = stopped_run()
    assert api.get(f"/api/v1/ingest-runs/{stopped.pk}/").json()["duration_s"] is None
    assert client.get(f"/ingest-runs/{stopped.pk}/status.json").json()["duration_s"] is None
    schema = api.get("/api/v1/schema/", {"format": "json"}).json()
    description = schema["components"]["schemas"]["IngestRun"]["properties"]["duration_s"].get("description", "")
    assert "no process imports" in description, description

    going = storing_run(owner=ingest.this_process())
    with a_worker_imports(going.pk):
        assert api.get(f"/api/v1/ingest-runs/{going.pk}/").json()["duration_s"] == pytest.approx(70, abs=2)


@pytest.mark.django_db(transaction=True)
def test_a_runs_page_and_its_poll_ask_once_whether_a_process_imports_it(operator, monkeypatch):
    """Elapsed, Rate, Time left and the Import now / Mark failed card each asked whether a process imports the run,
    each time taking the run's lock on PostgreSQL (a worker coming to it then finds it busy): once per page, per
    poll of its figures and per API answer now."""
    from rest_framework.test import APIClient

    asked = []
    worker_stopped = ingest.worker_stopped

    def counted(run):
        asked.append(run.pk)
        return worker_stopped(run)

    monkeypatch.setattr(ingest, "worker_stopped", counted)
    api = APIClient()
    api.force_authenticate(operator)
    client = Client()
    client.force_login(operator)
    stopped = stopped_run()
    going = storing_run(owner=ingest.this_process())
    with a_worker_imports(going.pk):
        for run in (stopped, going):
            for url in (f"/ingest-runs/{run.pk}/", f"/ingest-runs/{run.pk}/status.json"):
                asked.clear()
                assert client.get(url).status_code == 200
                assert asked == [run.pk], url
            asked.clear()
            assert api.get(f"/api/v1/ingest-runs/{run.pk}/").status_code == 200
            assert asked == [run.pk]
