"""The jobs list on a phone: each job a card of its fields, each beside its column's name (table.stacks, as the
Teams table and a team's worst jobs), where at 390 px the table scrolled sideways with Mean util, Unused, Why and
Cost off to the right, and a row with two Why badges stood tall and empty. At 1280 px it is a table, as before.
Screenshots are saved under screenshots/ for a person to look at."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from tests.test_browser import browser  # noqa: F401  (the browser fixture)
from tests.test_stacked_tables_browser import assert_cards, layouts_and_column


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_the_jobs_list_is_a_card_per_job_with_its_cost_and_causes_in_view(browser, live_server, operator):  # noqa: F811
    from tests.factories import ClusterFactory, JobFactory, TeamFactory
    from tests.test_accessibility import open_as
    from tests.test_jobs_page import triaged
    from triage.taxonomy import Category

    team = TeamFactory(name="genai", slug="genai")
    cluster = ClusterFactory(name="alpha")
    for number in range(3):
        job = JobFactory(
            team=team,
            cluster=cluster,
            external_id=f"48138{number}",
            name=f"llama-7b-finetune-long-running-experiment-{number}",
            state="COMPLETED",
            start_time=datetime(2026, 11, 10, 9 + number, tzinfo=UTC),
            gpu_hours=400.0,
            unused_gpu_hours=300.0 - number,
            mean_gpu_util=12.0,
            cost=Decimal("1234.50"),
            currency="USD",
        )
        triaged(job, "classified", Category.HOST_GPU_TRANSFER, Category.DATA_EXCHANGE)
    open_as(browser, live_server.url, operator)
    wide, phone = layouts_and_column(browser, f"{live_server.url}/jobs/", "jobs-list-cards", "table.data", "Cost")
    assert_cards(wide, phone, rows=3, columns=13)
    assert [text for text, _in_view in phone["cells"]] == ["Cost 1,234.50 USD"] * 3, phone
    assert all(in_view for _text, in_view in phone["cells"]), phone
    _, why = layouts_and_column(browser, f"{live_server.url}/jobs/", "jobs-list-cards-why", "table.data", "Why")
    assert all(in_view and text.startswith("Why ") for text, in_view in why["cells"]), why
