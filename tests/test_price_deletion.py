"""Deleting a GPU-hour price on the settings page re-prices its jobs: the page asks first, saying
which prices go and how many jobs each prices, and afterwards says what it removed."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from fleet.models import AuditEvent, GpuModelPrice, Job
from tests.factories import ClusterFactory, JobFactory

pytestmark = pytest.mark.django_db


def price_form(prices, delete=(), **extra) -> dict:
    """The price table as the page posts it: one row per stored price, `delete` ticked."""
    form = {"form-TOTAL_FORMS": str(len(prices)), "form-INITIAL_FORMS": str(len(prices)), "form-MIN_NUM_FORMS": "0"}
    for i, price in enumerate(prices):
        form |= {
            f"form-{i}-id": str(price.pk),
            f"form-{i}-cluster": str(price.cluster_id),
            f"form-{i}-gpu_model": price.gpu_model,
            f"form-{i}-price_per_gpu_hour": str(price.price_per_gpu_hour),
            f"form-{i}-currency": price.currency,
        }
        if price in delete:
            form[f"form-{i}-DELETE"] = "on"
    return form | extra


def costs(gpu_model: str) -> set:
    return set(Job.objects.filter(gpu_model=gpu_model).values_list("cost", flat=True))


def test_deleting_a_price_asks_first_with_the_jobs_it_reprices_and_then_says_what_it_removed(client, operator):
    """A ticked Delete and Save prices re-priced the cluster's jobs at once, with no question, and the
    message did not say which price went or how many jobs it had priced."""
    cluster = ClusterFactory(name="c1")
    JobFactory.create_batch(3, cluster=cluster, gpu_model="A100-80GB", gpu_hours=4.0)
    JobFactory.create_batch(2, cluster=cluster, gpu_model="H100", gpu_hours=4.0)
    default = GpuModelPrice.objects.create(cluster=cluster, gpu_model="", price_per_gpu_hour="2", currency="USD")
    a100 = GpuModelPrice.objects.create(cluster=cluster, gpu_model="A100-80GB", price_per_gpu_hour="5.00")
    assert costs("A100-80GB") == {Decimal("20.00")} and costs("H100") == {Decimal("8.00")}
    url = reverse("dashboard:settings")
    client.force_login(operator)

    response = client.post(url, price_form([default, a100], delete=[a100]))
    page = response.content.decode()
    assert response.status_code == 200 and GpuModelPrice.objects.filter(pk=a100.pk).exists()
    assert costs("A100-80GB") == {Decimal("20.00")} and not AuditEvent.objects.exists()
    assert "<strong>Delete 1 price?</strong> Nothing is saved yet." in page
    falls_back = "then priced at c1&#x27;s default price (2 USD)"
    assert f"<li>c1 / A100-80GB (5 USD per GPU-hour): 3 jobs, {falls_back}</li>" in page
    button = f'<button type="submit" class="primary" name="confirm_delete" value="{a100.pk}">'
    assert f"{button}Delete it and re-price 3 jobs</button>" in page
    # "Save prices" comes first in the form, so Enter in a field asks again instead of deleting.
    assert page.index(">Save prices</button>") < page.index(button)
    # A confirmation of other rows than those ticked (a stale page) asks again.
    again = client.post(url, price_form([default, a100], delete=[a100], confirm_delete=str(default.pk)))
    assert again.status_code == 200 and GpuModelPrice.objects.filter(pk=a100.pk).exists()

    response = client.post(url, price_form([default, a100], delete=[a100], confirm_delete=str(a100.pk)), follow=True)
    assert not GpuModelPrice.objects.filter(pk=a100.pk).exists()
    assert costs("A100-80GB") == {Decimal("8.00")}  # at the cluster's default price now
    assert (
        "Prices saved; the affected jobs were re-priced. Removed c1 / A100-80GB (5 USD per GPU-hour): "
        "its 3 jobs were re-priced."
    ) in response.content.decode()
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["price.delete"]

    # The default price, now pricing every job of the cluster: they are left without a cost.
    page = client.post(url, price_form([default], delete=[default])).content.decode()
    assert "<li>c1 / default price (2 USD per GPU-hour): 5 jobs, then left without a cost</li>" in page
    client.post(url, price_form([default], delete=[default], confirm_delete=str(default.pk)))
    assert not GpuModelPrice.objects.exists() and costs("H100") == {None}


def test_a_blank_price_row_shows_a_price_to_type(admin_client):
    """A new price row's price field was empty, nothing showing what goes in it (a price per GPU-hour,
    with or without cents), where the row's currency shows USD and the exchange-rate row shows 1.08:
    it shows 2.50. A saved row shows its own price."""
    import re

    GpuModelPrice.objects.create(cluster=ClusterFactory(), gpu_model="A100", price_per_gpu_hour=Decimal("3.20"))
    page = admin_client.get(reverse("dashboard:settings")).content.decode()
    price = {
        int(found.group(1)): found.group(0)
        for found in re.finditer(r"<input[^>]*name=\"form-(\d+)-price_per_gpu_hour\"[^>]*>", page)
    }
    assert sorted(price) == [0, 1, 2]  # the saved row and the two blank ones
    assert 'value="3.2000"' in price[0] and "placeholder" not in price[0]
    assert all('placeholder="2.50"' in price[row] and "value=" not in price[row] for row in (1, 2)), price
