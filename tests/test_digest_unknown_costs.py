"""The operator digest's teams say an unknown cost as the teams page does: a team whose week's jobs are
all priced in a currency with no exchange rate to the reporting one has no cost figure, not 0."""

from __future__ import annotations

import re

import pytest

from fleet.models import Job
from tests.reading import as_read
from tests.test_digests import WEEK, fleet, parts, smtp  # noqa: F401  (fixtures, used by name)
from triage.digests.tasks import send_weekly_task

pytestmark = pytest.mark.django_db


def test_the_operator_digest_reads_no_exchange_rate_set_for_a_team_priced_only_in_a_currency_without_a_rate(
    smtp,  # noqa: F811
    fleet,  # noqa: F811
    operator,
):
    """Team B's week, priced in GBP with no GBP rate to USD, read "0.00 USD" of waste in the operator
    digest (its GBP in no figure): free, to a reader. It reads "no exchange rate set", as its "–" cell on
    the teams page says; team A keeps its USD figure."""
    Job.objects.filter(team__slug="team-b").update(currency="GBP")
    send_weekly_task.delay(WEEK).get()
    text, html = parts(smtp.to(operator.email)[0])
    team_b = next(line for line in text.splitlines() if line.lstrip().startswith("Team B "))
    assert team_b.rstrip().split("(")[1].split(")")[0].endswith("GPU-h, no exchange rate set"), team_b
    team_a = next(line for line in text.splitlines() if line.lstrip().startswith("Team A "))
    assert team_a.rstrip().split(")")[0].endswith("USD wasted"), team_a
    row = html.split(">Team B</a>")[1].split("</tr>\n")[0]
    cells = [as_read(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    assert "no exchange rate set" in cells and not any("USD" in cell for cell in cells), cells
