"""Why a team's GPUs idled over a period: its causes as its team page (`views.team_detail`) and
`GET /api/v1/teams/{slug}/causes/` (`triage.api`) both give them. One function for both, so the page and
the API cannot come to count a team's causes differently; each only says them in its own words."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from triage import feedback
from triage.guidance import headline_change
from triage.taxonomy import Category

from . import queries
from .periods import Period


@dataclass(frozen=True)
class TeamCauses:
    """A team's causes over a period, with what they are read against (the page shows these too)."""

    # Chosen over the period and the one before, so that both periods' costs are in the same money at the
    # same rates (the page compares them on its cards): the currency and rates of every cause's cost.
    pricing: queries.Pricing
    totals: queries.Totals  # the period's, in `pricing`'s currency: what the causes account for part of
    period_jobs: QuerySet  # the team's jobs of the period
    judged_jobs: QuerySet  # those less the jobs the reader rates in a blind study: what the causes count
    # `queries.by_category`'s rows, the most recoverable GPU-hours first, each with its `category` (a
    # Category), the `change` to make, how many of its jobs `set_aside` that change, and `queries.cost_figure`.
    causes: list[dict]


def team_causes(team_jobs: QuerySet, period: Period, blinded: set[int], low_util_threshold: float) -> TeamCauses:
    """The causes of a team's jobs (`team_jobs`: already narrowed to a cluster, if one) over `period`.

    `blinded`: the jobs the reader rates in a blind study (`blinded_job_ids`), left out of the causes:
    counted, a team's few jobs' causes would tell the rater what the rules found on the jobs they label.
    A fixed number of queries, however many jobs and causes."""
    period_jobs = queries.in_period(team_jobs, period)
    pricing = queries.pricing(queries.in_period(team_jobs, period.with_previous), shown=period_jobs)
    judged_jobs = period_jobs.exclude(pk__in=blinded)
    # A cause the team's people answered wrong or intended (and nobody right) is a change they
    # turned down: counted in its waste, but not urged again where they set it aside everywhere.
    set_aside = feedback.set_aside_jobs_by_cause(judged_jobs)
    causes = []
    for row in queries.by_category(judged_jobs, pricing.conversion):
        category = Category(row["category"])
        causes.append(
            row
            | {"category": category, "change": headline_change(category), "set_aside": set_aside.get(category, 0)}
            | queries.cost_figure(row)
        )
    totals = queries.totals(period_jobs, low_util_threshold, pricing.conversion)
    return TeamCauses(pricing, totals, period_jobs, judged_jobs, causes)
