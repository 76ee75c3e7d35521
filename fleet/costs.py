"""Job cost = GPU-hours x the price of a GPU-hour for the job's cluster and GPU model, in the
currency of that price, rounded to the cent by the one rule in `fleet.money`; totals convert each
currency into the reporting one (`Conversion`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, Count, F, FloatField, Q, Sum, Value, When
from django.db.models.functions import Cast
from django.utils import timezone

from fleet.models import Cluster, ExchangeRate, GpuModelPrice, Job, Team, cluster_prices, price_among
from fleet.money import cost_of
from fleet.rows import update_rows

REPRICE_BATCH = 2000  # jobs read, and their changed costs written, at a time


@transaction.atomic
def recompute_costs(cluster: Cluster) -> int:
    """Re-price every job of a cluster after its prices changed; returns the number of jobs priced.

    Each job is priced by `fleet.money.cost_of`, the function an import prices it with, so a job
    re-priced at the price it was imported at keeps its amount to the cent. (This was one UPDATE that
    multiplied in SQL, in binary floating point, and rounded half a cent away from zero where the
    import rounded half to even: a 0.125-GPU-hour job at 1.00 was 0.12 imported and 0.13 re-priced.)
    Only the jobs whose cost or currency changes are written (`update_rows`: 50,000 jobs' new costs in
    0.7 s on SQLite, where `bulk_update` took 14 s), and their `updated_at` with them, so a script that
    syncs by the API's `changed_after` fetches the new costs (and the findings re-priced with them)."""
    prices = cluster_prices(cluster.prices.all())
    cost_field = Job._meta.get_field("cost")
    now = Job._meta.get_field("updated_at").get_db_prep_save(timezone.now(), connection)
    jobs = Job.objects.filter(cluster=cluster).order_by("pk")
    priced, last = 0, 0
    while batch := list(
        jobs.filter(pk__gt=last).values_list("pk", "gpu_model", "gpu_hours", "cost", "currency")[:REPRICE_BATCH]
    ):
        changed = []
        for pk, gpu_model, gpu_hours, stored_cost, stored_currency in batch:
            price = price_among(prices, gpu_model)
            cost = cost_of(gpu_hours, price.price_per_gpu_hour if price else None)
            currency = price.currency if price else ""
            priced += price is not None
            if cost != stored_cost or currency != stored_currency:
                changed.append((cost_field.get_db_prep_save(cost, connection), currency, now, pk))
        update_rows(Job, ["cost", "currency", "updated_at"], changed)
        last = batch[-1][0]
    return priced


def jobs_priced_by(price: GpuModelPrice) -> int:
    """How many jobs a stored price prices (what deleting it re-prices): its cluster's jobs whose GPU
    model it is the price of by the rule jobs are priced by (`price_among`: its spelling, or another
    spelling of its model without a row of its own), the default price counting those no other row
    prices. Counted per GPU model name in SQL: a cluster has few."""
    prices = cluster_prices(GpuModelPrice.objects.filter(cluster_id=price.cluster_id))
    per_model = (
        Job.objects.filter(cluster_id=price.cluster_id).order_by().values_list("gpu_model").annotate(jobs=Count("pk"))
    )
    return sum(jobs for gpu_model, jobs in per_model if getattr(price_among(prices, gpu_model), "pk", None) == price.pk)


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

    def converts(self) -> Q:
        """The rows (jobs or findings) whose `cost` `amount` converts: in the reporting currency, without a
        price (""), or in a currency with a rate. The others' costs are in no total."""
        return Q(currency__in=["", self.currency, *(code for code, _ in self.rates)])

    def amount(self):
        """SQL for a row's `cost` in the reporting currency, by its `currency` (a job's or a
        finding's): NULL, which a Sum leaves out, in a currency without a rate."""
        value = Cast(F("cost"), FloatField())
        whens = [When(currency__in=["", self.currency], then=value)]
        whens += [When(currency=code, then=value * Value(rate)) for code, rate in self.rates]
        return Case(*whens, default=Value(None), output_field=FloatField())
