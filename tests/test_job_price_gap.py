"""An unpriced job's page says what price is missing: its GPU model's on its cluster, the cluster's
default (a job naming no GPU model), or any price at all on that cluster; it said "no price set for
this cluster" in every case, also on a cluster whose other GPU models are priced. Operators get a link
to the prices on Settings; a team member, who cannot open Settings, the words only."""

from __future__ import annotations

import html
import re
from decimal import Decimal

import pytest
from django.urls import reverse

from fleet.costs import recompute_costs
from fleet.models import Cluster, GpuModelPrice
from tests.factories import JobFactory
from tests.test_browser import SHOTS, browser  # noqa: F401  (browser: the shared Chromium fixture)


def cost_line(client, job) -> tuple[str, list[str]]:
    """The job page's Cost, as a reader sees it (tags dropped, spaces collapsed), and its links."""
    page = client.get(reverse("dashboard:job-detail", args=[job.pk])).content.decode()
    cost = re.search(r"<dt>Cost</dt><dd>(.*?)</dd>", page, re.S)[1]
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cost)).split())
    return text.replace(" .", ".").replace(" ,", ","), re.findall(r'href="([^"]+)"', cost)


@pytest.fixture
def cluster(db):
    """A cluster pricing its H100s, not its A100s, and without a default price."""
    cluster = Cluster.objects.create(name="gpu-east")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="NVIDIA H100 80GB HBM3", price_per_gpu_hour=Decimal("3"))
    return cluster


def priced_job(cluster, **fields):
    job = JobFactory(cluster=cluster, cost=None, currency="", **fields)
    recompute_costs(cluster)
    job.refresh_from_db()
    return job


@pytest.mark.django_db
def test_a_gpu_model_without_a_price_on_a_cluster_with_others_is_named(client, operator, cluster):
    job = priced_job(cluster, gpu_model="NVIDIA A100-SXM4-80GB")
    assert job.cost is None
    client.force_login(operator)
    text, links = cost_line(client, job)
    assert text == (
        "none: no price for NVIDIA A100-SXM4-80GB on gpu-east, nor a default price there. Set one in Settings."
    )
    assert links == [reverse("dashboard:settings") + "#prices"]


@pytest.mark.django_db
def test_a_job_naming_no_gpu_model_misses_the_clusters_default(client, operator, cluster):
    job = priced_job(cluster, gpu_model="")
    client.force_login(operator)
    text, _ = cost_line(client, job)
    assert text == "none: the job names no GPU model and gpu-east has no default price. Set one in Settings."


@pytest.mark.django_db
def test_a_cluster_without_any_price_says_so(client, operator):
    job = priced_job(Cluster.objects.create(name="gpu-west"), gpu_model="NVIDIA A100-SXM4-80GB")
    client.force_login(operator)
    text, _ = cost_line(client, job)
    assert text == "none: no prices are set for gpu-west. Set one in Settings."


@pytest.mark.django_db
def test_a_team_member_reads_what_is_missing_without_the_link(client, member_a, team_a, cluster):
    job = priced_job(cluster, gpu_model="NVIDIA A100-SXM4-80GB", team=team_a)
    client.force_login(member_a)
    text, links = cost_line(client, job)
    assert text == "none: no price for NVIDIA A100-SXM4-80GB on gpu-east, nor a default price there."
    assert links == []


@pytest.mark.django_db
def test_a_priced_job_shows_its_cost(client, operator, cluster):
    job = priced_job(cluster, gpu_model="NVIDIA-H100-80GB-HBM3", gpu_hours=2.0)  # GFD's spelling of the row's
    client.force_login(operator)
    assert cost_line(client, job) == ("6.00 USD", [])


@pytest.mark.django_db
def test_the_settings_link_lands_on_the_prices(client, operator):
    client.force_login(operator)
    assert '<section class="card" id="prices">' in client.get(reverse("dashboard:settings")).content.decode()


@pytest.mark.django_db(transaction=True)
def test_in_a_browser_the_missing_price_reads_whole_and_the_link_opens_the_prices(
    browser,  # noqa: F811
    live_server,
    operator,
    member_a,
    team_a,
):
    """In headless Chromium, the operator's and the member's job page (WCAG 2.1 AA, 320 px without
    sideways scrolling), at desktop and phone sizes; the operator's link lands on the prices."""
    from selenium.webdriver.common.by import By

    from tests.test_accessibility import narrow_window_problems, open_as, violations

    cluster = Cluster.objects.create(name="gpu-east")
    GpuModelPrice.objects.create(cluster=cluster, gpu_model="NVIDIA H100 80GB HBM3", price_per_gpu_hour=Decimal("3"))
    job = priced_job(cluster, gpu_model="NVIDIA A100-SXM4-80GB", team=team_a)
    base, path = live_server.url, reverse("dashboard:job-detail", args=[job.pk])
    SHOTS.mkdir(exist_ok=True)
    for who, user in (("operator", operator), ("member", member_a)):
        open_as(browser, base, user)
        browser.get(base + path)
        missing = browser.find_element(By.ID, "price-missing")
        assert missing.text.startswith("none: no price for NVIDIA A100-SXM4-80GB on gpu-east, nor a default")
        assert violations(browser) + narrow_window_problems(browser) == []
        for width, height in ((1280, 800), (390, 844)):
            browser.set_window_size(width, height)
            browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", missing)
            browser.save_screenshot(str(SHOTS / f"job-price-missing-{who}-{width}.png"))
    open_as(browser, base, operator)
    browser.get(base + path)
    browser.find_element(By.LINK_TEXT, "Set one in Settings").click()
    assert browser.current_url == f"{base}{reverse('dashboard:settings')}#prices"
    assert browser.find_element(By.CSS_SELECTOR, "#prices h2").text == "GPU-hour prices"
