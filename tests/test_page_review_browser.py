"""Pages as their users see them in Chromium, after a review at 320, 390 and 1280 px, light and dark: a
connector's failing pull, the operator's weekly digest and the token pages, each as a defect it showed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from fleet.connectors.models import Connector
from tests.test_browser import body_text, browser, window_width  # noqa: F401  (the shared Chromium fixture)
from tests.test_dashboard_browser import log_in

# What a failing Prometheus pull stores: the query's whole URL, one word of 120-odd characters.
LONG_ERROR = (
    "Connection refused: http://prometheus.gpu-fleet.internal:9090/api/v1/query_range"
    "?query=DCGM_FI_DEV_GPU_UTIL&start=1700000000&end=1700086400&step=15"
)


def failing_connector() -> Connector:
    now = timezone.now()
    return Connector.objects.create(
        name="prometheus-dcgm-a100",
        kind=Connector.Kind.PROMETHEUS,
        url="http://prometheus.gpu-fleet.internal:9090",
        last_run_at=now,
        last_error=LONG_ERROR,
        last_error_at=now,
        consecutive_failures=3,
    )


SIDEWAYS = """
const scroller = arguments[0];
return {page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth,
        table: scroller ? scroller.scrollWidth : 0, box: scroller ? scroller.clientWidth : 0};
"""


@pytest.mark.django_db(transaction=True)
def test_at_1280_px_a_connectors_long_error_leaves_every_column_in_view(browser, live_server, operator):  # noqa: F811
    from selenium.webdriver.common.by import By

    failing_connector()
    log_in(browser, live_server.url, operator, "/connectors/")
    with window_width(browser, 1280):
        browser.get(f"{live_server.url}/connectors/")
        scroller = browser.find_element(By.CSS_SELECTOR, ".table-scroll")
        sizes = browser.execute_script(SIDEWAYS, scroller)
        assert sizes["table"] <= sizes["box"], f"the connectors table scrolls sideways at 1280 px: {sizes}"
        button = browser.find_element(By.XPATH, "//button[normalize-space()='Check connection']")
        right = browser.execute_script("return arguments[0].getBoundingClientRect().right", button)
        assert right <= sizes["window"], f"Check connection is off to the right ({right} px)"
        assert "step=15" in browser.find_element(By.CSS_SELECTOR, "td.error").text  # the whole error, wrapped


def this_week() -> str:
    year, week, _ = timezone.now().isocalendar()
    return f"{year}-W{week:02d}"


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_operator_digest_with_a_connectors_long_error_fits_the_screen(browser, live_server, operator):  # noqa: F811
    failing_connector()
    log_in(browser, live_server.url, operator, "/digests/")
    for width in (320, 390):
        with window_width(browser, width, mobile=True):
            browser.get(f"{live_server.url}/digests/preview/operator/{this_week()}/?part=html")
            assert "step=15" in body_text(browser)  # the connector's error is in the mail
            wide = browser.execute_script("return document.documentElement.scrollWidth")
            assert wide <= width, f"the operator digest is {wide} px wide on a {width} px phone: it scrolls sideways"


@pytest.mark.django_db(transaction=True)
def test_the_operator_digest_says_a_connector_never_pulled_without_a_time_zone_and_gives_its_errors(
    browser,  # noqa: F811
    live_server,
    operator,
):
    failing_connector()
    log_in(browser, live_server.url, operator, "/digests/")
    for part in ("html", "text"):
        browser.get(f"{live_server.url}/digests/preview/operator/{this_week()}/?part={part}")
        text = body_text(browser)
        assert "never UTC" not in text, f"the {part} part says 'last success never UTC'"
        assert "no successful pull yet" in text, f"the {part} part does not say the connector never pulled"
        assert f"{timezone.now():%Y-%m-%d} " in text and " UTC: Connection refused" in text, (
            f"the {part} part gives the error's time without its zone"
        )


TIMES = """
const table = document.getElementById(arguments[0]);
const names = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
const labels = [...table.querySelectorAll('tbody tr:first-child .cell-label')].map(label => label.textContent.trim());
return {names, labels};
"""


@pytest.mark.django_db(transaction=True)
def test_the_token_pages_name_the_time_zone_of_their_times(browser, live_server, operator):  # noqa: F811
    from fleet.models import MachineToken, PersonalToken

    MachineToken.objects.create_key(name="slurm-export", created_by=operator)
    PersonalToken.objects.create_key(
        name="notebook", owner=operator, expiry_date=timezone.now() + timezone.timedelta(days=90)
    )
    log_in(browser, live_server.url, operator, "/tokens/")
    for path, tables in (
        ("/tokens/", ("machine-token-table", "personal-token-table")),
        ("/account/tokens/", ("own-token-table",)),
    ):
        for width in (1280, 390):
            with window_width(browser, width, mobile=width < 500):
                browser.get(live_server.url + path)
                for table in tables:
                    shown = browser.execute_script(TIMES, table)
                    for column in ("Created", "Last used") + (("Expires",) if table != "machine-token-table" else ()):
                        assert f"{column} (UTC)" in shown["names"], (
                            f"{path} {table}: {column}'s zone unsaid: {shown['names']}"
                        )
                        assert f"{column} (UTC)" in shown["labels"], f"{path} {table} at {width} px: {shown['labels']}"


# The utilization histogram's bucket names ("0–10" … "90–100"), tilted: each is a line of type, parallel to the
# next one a category's width along the axis, so |sin(angle)| of that width apart across them.
TILTED_LABELS = """
const labels = [...document.querySelector('[data-figure="histogram-figure"]').querySelectorAll('.xtick text')];
const angle = Number((/rotate\\((-?[\\d.]+)/.exec(labels[0].getAttribute('transform') || '') || [0, 0])[1]);
const ends = labels.map(label => label.getBoundingClientRect().right);
const along = (ends[ends.length - 1] - ends[0]) / (ends.length - 1);
return {count: labels.length, angle, along, across: along * Math.abs(Math.sin(angle * Math.PI / 180)),
        type: parseFloat(getComputedStyle(labels[0]).fontSize)};
"""


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_utilization_histograms_bucket_names_keep_apart(browser, live_server, operator, team_a):  # noqa: F811
    from tests.factories import JobFactory
    from tests.test_accessibility import settled

    # Dated, with a period naming their week: the factory's own start times follow a counter that the tests run
    # before this one move on, past today, out of the default period (no histogram to look at).
    first = datetime(2026, 11, 10, tzinfo=UTC)
    for i, util in enumerate(range(5, 100, 10)):  # a job in each of the ten buckets
        JobFactory(team=team_a, mean_gpu_util=float(util), start_time=first + timedelta(hours=i))
    log_in(browser, live_server.url, operator, "/overview/")
    for width in (320, 390, 1280):
        with window_width(browser, width, mobile=width < 500):
            browser.get(f"{live_server.url}/overview/?from=2026-11-10&to=2026-11-16")
            settled(browser)
            labels = browser.execute_script(TILTED_LABELS)
            assert labels["count"] == 10, labels
            assert labels["across"] >= labels["type"], (
                f"at {width} px the histogram's bucket names run into each other ('0–1010–20…'): {labels}"
            )
