"""Job cost = GPU-hours x the price of a GPU-hour for the job's cluster and GPU model."""

from __future__ import annotations

from django.db import transaction
from django.db.models import DecimalField, ExpressionWrapper, F, Value

from fleet.models import Cluster, Job


@transaction.atomic
def recompute_costs(cluster: Cluster) -> int:
    """Re-price every job of a cluster after its prices changed; returns the number of jobs priced."""
    prices = {p.gpu_model: p for p in cluster.prices.all()}
    jobs = Job.objects.filter(cluster=cluster)
    models_with_own_price = [model for model in prices if model]
    priced = 0
    for gpu_model, price in prices.items():
        subset = jobs.filter(gpu_model=gpu_model) if gpu_model else jobs.exclude(gpu_model__in=models_with_own_price)
        priced += subset.update(
            cost=ExpressionWrapper(
                F("gpu_hours") * Value(price.price_per_gpu_hour),
                output_field=DecimalField(max_digits=20, decimal_places=2),  # as Job.cost
            ),
            currency=price.currency,
        )
    if "" not in prices:
        jobs.exclude(gpu_model__in=models_with_own_price).update(cost=None, currency="")
    return priced
