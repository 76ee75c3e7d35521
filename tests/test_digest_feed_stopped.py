"""An operator digest for a week without jobs, when the fleet had jobs before, says the feed stopped
("No new jobs since 2026-11-22 (14 days) — check ingestion") in its subject and first line, as a
"no data" alert would: it read like a quiet week ("no jobs started")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.factories import JobFactory
from triage.digests import services
from triage.digests.models import DigestKind

pytestmark = pytest.mark.django_db

STOPPED = "No new jobs since 2026-11-22 (14 days) — check ingestion"


def operator_digest(week: str) -> tuple[str, str, str]:
    return services.render_triplet("operator-digest", services.build_context(DigestKind.OPERATOR, week))


def test_an_empty_week_after_jobs_says_the_feed_stopped(team_a):
    JobFactory(team=team_a, start_time=datetime(2026, 11, 22, 9, tzinfo=UTC))
    subject, text, html = operator_digest("2026-W49")  # 2026-11-30 to 12-06: no job
    # The subject in ASCII punctuation (a mail client folds and decodes a non-ASCII subject its own way).
    assert subject == "Fleet, 2026-W49: no new jobs since 2026-11-22 (14 days), check ingestion"
    assert text.splitlines()[1] == f"{STOPPED}."
    assert f"{STOPPED}." in html.split("</h1>", 1)[1].split("</p>", 1)[0]


def test_a_week_with_jobs_or_a_fleet_without_any_says_nothing_of_it(team_a):
    subject, text, _ = operator_digest("2026-W49")  # nothing ever imported: no feed to have stopped
    assert "check ingestion" not in subject + text and "no jobs started" in subject
    JobFactory(team=team_a, start_time=datetime(2026, 12, 1, 9, tzinfo=UTC))
    subject, text, _ = operator_digest("2026-W49")
    assert "check ingestion" not in subject + text
