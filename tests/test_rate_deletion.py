"""Deleting an exchange rate on the settings page takes that currency's costs out of every total
that mixes currencies: the page asks first, as it does for a price, saying which rates go and whose
costs can then no longer be converted, and afterwards says what it removed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet.models import AuditEvent, ExchangeRate, GpuModelPrice
from tests.factories import ClusterFactory, JobFactory, TeamFactory

pytestmark = pytest.mark.django_db


def rate_form(rates, delete=(), **extra) -> dict:
    """The exchange-rate table as the page posts it: one row per stored rate, `delete` ticked."""
    form = {"rates-TOTAL_FORMS": str(len(rates)), "rates-INITIAL_FORMS": str(len(rates)), "rates-MIN_NUM_FORMS": "0"}
    for i, rate in enumerate(rates):
        form |= {f"rates-{i}-id": str(rate.pk), f"rates-{i}-currency": rate.currency, f"rates-{i}-rate": str(rate.rate)}
        if rate in delete:
            form[f"rates-{i}-DELETE"] = "on"
    return form | extra


def test_deleting_a_rate_asks_first_with_the_costs_it_leaves_unconverted_and_then_says_what_it_removed(
    client, operator
):
    """A ticked Delete and Save exchange rates dropped the rate at once: every total that mixed in
    that currency's costs silently left them out from then on, and the message did not say which."""
    eu, uk = ClusterFactory(name="eu1"), ClusterFactory(name="uk1")
    JobFactory.create_batch(2, cluster=eu, team=TeamFactory(slug="vision"), gpu_model="A100-80GB")
    JobFactory(cluster=eu, team=TeamFactory(slug="speech"), gpu_model="H100")
    JobFactory(cluster=uk, team=TeamFactory(slug="speech"))
    GpuModelPrice.objects.create(cluster=eu, gpu_model="", price_per_gpu_hour="2", currency="EUR")
    GpuModelPrice.objects.create(cluster=uk, gpu_model="", price_per_gpu_hour="3", currency="GBP")
    eur = ExchangeRate.objects.create(currency="EUR", rate="1.08")
    gbp = ExchangeRate.objects.create(currency="GBP", rate="1.27")
    jpy = ExchangeRate.objects.create(currency="JPY", rate="0.0067")
    url = reverse("dashboard:settings")
    client.force_login(operator)

    response = client.post(url, rate_form([eur, gbp, jpy], delete=[eur, jpy]))
    page = response.content.decode()
    assert response.status_code == 200 and ExchangeRate.objects.count() == 3 and not AuditEvent.objects.exists()
    assert "<strong>Delete 2 exchange rates?</strong> Nothing is saved yet." in page
    assert (
        "<li>1 EUR = 1.08 USD: 3 jobs priced in EUR (teams Speech, Vision; price eu1 / default price), "
        "then their costs can no longer be converted to USD and totals that mix currencies leave them out</li>"
    ) in page
    assert "<li>1 JPY = 0.0067 USD: no job is priced in JPY, so no total changes</li>" in page
    button = f'<button type="submit" class="primary" name="confirm_delete" value="{eur.pk},{jpy.pk}">'
    assert f"{button}Delete them</button>" in page
    assert 'href="/settings/#exchange-rates">Cancel</a>' in page
    # "Save exchange rates" comes first in the form, so Enter in a field asks again instead of deleting.
    assert page.index(">Save exchange rates</button>") < page.index(button)
    # A confirmation of other rows than those ticked (a stale page) asks again.
    again = client.post(url, rate_form([eur, gbp, jpy], delete=[eur, jpy], confirm_delete=str(eur.pk)))
    assert again.status_code == 200 and ExchangeRate.objects.count() == 3

    confirmed = rate_form([eur, gbp, jpy], delete=[eur, jpy], confirm_delete=f"{eur.pk},{jpy.pk}")
    response = client.post(url, confirmed, follow=True)
    assert [rate.currency for rate in ExchangeRate.objects.all()] == ["GBP"]
    assert (
        "Exchange rates saved; every cost total converts at them from now on. Removed 1 EUR = 1.08 USD: "
        "the costs of the 3 jobs priced in EUR are left out of totals that mix currencies. Removed 1 JPY = 0.0067 USD."
    ) in response.content.decode()
    deleted = AuditEvent.objects.filter(action="exchange_rate.delete").order_by("target_repr")
    assert [event.details for event in deleted] == [
        {"currency": "EUR", "rate": "1.08"},
        {"currency": "JPY", "rate": "0.0067"},
    ]
    assert AuditEvent.objects.count() == 2


def test_the_blank_rate_row_shows_what_to_type(admin_client, settings):
    """The exchange-rate table's one empty row had blank fields, nothing showing what goes in them (the
    price row's blank currency shows USD): its fields show an example, a currency other than the reporting
    one and its value in it."""
    import re

    ExchangeRate.objects.create(currency="GBP", rate="1.27")
    for reporting, example in (("USD", ("EUR", "1.08")), ("EUR", ("USD", "0.93"))):
        settings.DEFAULT_CURRENCY = reporting
        page = admin_client.get(reverse("dashboard:settings")).content.decode()
        blank = re.findall(r"<input[^>]*name=\"rates-1-(currency|rate)\"[^>]*>", page)
        assert blank == ["currency", "rate"]
        fields = re.findall(r"<input[^>]*name=\"rates-1-(?:currency|rate)\"[^>]*>", page)
        assert [re.search(r'placeholder="([^"]*)"', f).group(1) for f in fields] == list(example), reporting
        saved = re.search(r"<input[^>]*name=\"rates-0-currency\"[^>]*>", page).group(0)
        assert 'value="GBP"' in saved and "placeholder" not in saved
