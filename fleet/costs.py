"""Job cost = GPU-hours x the price of a GPU-hour for the job's cluster and GPU model, in the
currency of that price; totals convert each currency into the reporting one (`Conversion`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Count, DecimalField, ExpressionWrapper, F, FloatField, Sum, Value, When
from django.db.models.functions import Cast, Round

from fleet.models import Cluster, ExchangeRate, GpuModelPrice, Job, Team

EXACT = DecimalField(max_digits=30, decimal_places=10)


@transaction.atomic
def recompute_costs(cluster: Cluster) -> int:
    """Re-price every job of a cluster after its prices changed; returns the number of jobs priced."""
    prices = {p.gpu_model: p for p in cluster.prices.all()}
    jobs = Job.objects.filter(cluster=cluster)
    models_with_own_price = [model for model in prices if model]
    priced = 0
    for gpu_model, price in prices.items():
        subset = jobs.filter(gpu_model=gpu_model) if gpu_model else jobs.exclude(gpu_model__in=models_with_own_price)
        exact = ExpressionWrapper(F("gpu_hours") * Value(price.price_per_gpu_hour), output_field=EXACT)
        # Rounded to the cent in the query, as the importer's `cost_of` rounds: PostgreSQL's numeric(20, 2)
        # would round on storing, but SQLite kept 0.333… in the 2-place column, which Django reads back
        # rounded while every SQL sum (the report's, the pages' totals) added the unrounded values.
        priced += subset.update(cost=Round(Cast(exact, EXACT), 2), currency=price.currency)
    if "" not in prices:
        jobs.exclude(gpu_model__in=models_with_own_price).update(cost=None, currency="")
    return priced


def jobs_priced_by(price: GpuModelPrice) -> int:
    """How many jobs a stored price prices (what deleting it re-prices): its cluster's jobs of its GPU
    model, or, for the cluster's default price, those of every GPU model without a price of its own."""
    jobs = Job.objects.filter(cluster_id=price.cluster_id)
    if price.gpu_model:
        return jobs.filter(gpu_model=price.gpu_model).count()
    own = GpuModelPrice.objects.filter(cluster_id=price.cluster_id).exclude(gpu_model="").values("gpu_model")
    return jobs.exclude(gpu_model__in=own).count()


def unpriced(jobs, *keys: str):
    """Per value of `keys` (rows of `keys`, `jobs` and `gpu_hours`), the jobs of the queryset `jobs`
    with GPU-hours but no price to cost them by (neither their model's nor the cluster's default):
    what every cost total leaves out until one is set."""
    return (
        jobs.filter(cost=None, gpu_hours__gt=0)
        .order_by()
        .values(*keys)
        .annotate(jobs=Count("pk"), gpu_hours=Sum("gpu_hours"))
        .order_by(*keys)
    )


def unpriced_jobs() -> list[dict]:
    """The fleet's unpriced jobs per cluster and GPU model (`unpriced`), as the Settings page lists them."""
    return list(unpriced(Job.objects.all(), "cluster__name", "gpu_model"))


@dataclass(frozen=True)
class PricedIn:
    """What is priced in one currency: the jobs whose costs are kept in it (and the teams they are
    charged to), and the prices that set them. Without an exchange rate, totals that mix currencies
    leave those costs out."""

    jobs: int
    teams: list[str]
    prices: list[str]  # "eu1 / A100-80GB", "eu1 / default price"


def priced_in(currency: str) -> PricedIn:
    jobs = Job.objects.filter(currency=currency)
    teams = Team.objects.filter(pk__in=jobs.values("team_id")).order_by("name", "slug")
    prices = GpuModelPrice.objects.filter(currency=currency).select_related("cluster")
    return PricedIn(
        jobs=jobs.count(),
        teams=[str(team) for team in teams],
        prices=[
            f"{price.cluster.name} / {price.gpu_model or 'default price'}"
            for price in prices.order_by("cluster__name", "gpu_model")
        ],
    )


@dataclass(frozen=True)
class Conversion:
    """How costs kept in several currencies are added up: each converted into the reporting
    currency (settings.DEFAULT_CURRENCY) at the rate an operator set (`ExchangeRate`); a currency
    without a rate is left out of a total rather than added as if it were the reporting currency.
    The pages and digests that sum costs read it once and build their SQL with `amount`."""

    currency: str  # the reporting currency
    rates: tuple[tuple[str, float], ...] = ()  # (code, value of one unit in the reporting currency)

    @classmethod
    def current(cls) -> Conversion:
        reporting = settings.DEFAULT_CURRENCY
        rates = ExchangeRate.objects.exclude(currency=reporting).values_list("currency", "rate")
        return cls(reporting, tuple((code, float(rate)) for code, rate in rates))

    def rate_of(self, code: str) -> float | None:
        """What one unit of `code` is worth in the reporting currency; None without a rate."""
        if code in ("", self.currency):  # "": a job without a price (its cost is empty, or 0)
            return 1.0
        return dict(self.rates).get(code)

    def amount(self):
        """SQL for a row's `cost` in the reporting currency, by its `currency` (a job's or a
        finding's): NULL, which a Sum leaves out, in a currency without a rate."""
        value = Cast(F("cost"), FloatField())
        whens = [When(currency__in=["", self.currency], then=value)]
        whens += [When(currency=code, then=value * Value(rate)) for code, rate in self.rates]
        return Case(*whens, default=Value(None), output_field=FloatField())
