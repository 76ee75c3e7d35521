"""The kappa paradox on the agreement page: a category one rater ticked once and the other never has a
kappa of 0.000 beside 95.0 % agreement, which reads as "the raters disagree". Careful agreement reports
show beside kappa how often the category came up (each rater, either) and its positive and negative
specific agreement (Cicchetti & Feinstein 1990), and say where kappa is low because the category is rare.
Expected values are computed by hand from the 2 x 2 counts in each test's docstring."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.factories import ClusterFactory, JobFactory
from tests.reading import as_read
from tests.test_labeling import BATCH, PINNED, make_researcher
from triage.labeling import exchange, services
from triage.labeling.agreement import agreement_report

# 20 jobs. PINNED: rater a ticked it on job 1, b never (a=0, b=1, c=0, d=19).
# BATCH: both on jobs 1-4, a alone on job 5 (a=4, b=1, c=0, d=15).
FIRST = {1: [BATCH, PINNED], 2: [BATCH], 3: [BATCH], 4: [BATCH], 5: [BATCH]}
SECOND = {1: [BATCH], 2: [BATCH], 3: [BATCH], 4: [BATCH]}


def _ratings():
    return {
        unit: {"a": frozenset(FIRST.get(unit, ["none"])), "b": frozenset(SECOND.get(unit, ["none"]))}
        for unit in range(1, 21)
    }


def _option(report, option):
    return next(cell for cell in report.pairs[0].per_option if cell.option == option)


def test_a_category_one_rater_ticked_once_has_kappa_0_beside_95_percent_and_its_specific_agreement():
    """a=0, b=1, c=0, d=19: p_o = 19/20 = 0.95, p_e = (1/20)(0/20) + (19/20)(20/20) = 0.95, kappa = 0;
    p_pos = 2*0 / (0 + 1 + 0) = 0; p_neg = 2*19 / (38 + 1) = 38/39 = 0.9744; ticked on 1 job by either."""
    report = agreement_report(_ratings(), [BATCH, PINNED, "none"], resamples=50)
    pinned = _option(report, PINNED)
    assert pinned.kappa.value == pytest.approx(0.0) and pinned.percent == pytest.approx(0.95)
    assert pinned.counts.either_yes == 1
    assert pinned.counts.positive_agreement == pytest.approx(0.0)
    assert pinned.counts.negative_agreement == pytest.approx(38 / 39)
    assert pinned.low_kappa_from_rarity


def test_a_category_both_raters_use_keeps_its_kappa_without_a_note():
    """a=4, b=1, c=0, d=15: p_o = 0.95, p_e = (5/20)(4/20) + (15/20)(16/20) = 0.65, kappa = 0.30/0.35 = 0.857;
    p_pos = 8/9 = 0.889, p_neg = 30/31 = 0.968: a good kappa, nothing to explain."""
    report = agreement_report(_ratings(), [BATCH, PINNED, "none"], resamples=50)
    batch = _option(report, BATCH)
    assert batch.kappa.value == pytest.approx(0.3 / 0.35)
    assert batch.counts.either_yes == 5
    assert batch.counts.positive_agreement == pytest.approx(8 / 9)
    assert batch.counts.negative_agreement == pytest.approx(30 / 31)
    assert not batch.low_kappa_from_rarity


def test_a_category_nobody_ticked_has_no_positive_agreement():
    """a=b=c=0: 2a / (2a + b + c) is 0/0, undefined (the page's dash), and negative agreement is 1."""
    report = agreement_report(_ratings(), [BATCH, "other"], resamples=50)
    other = _option(report, "other")
    assert other.counts.positive_agreement is None and other.counts.negative_agreement == 1.0
    assert not other.low_kappa_from_rarity  # kappa is undefined there, not low


@pytest.fixture
def rare_study(team_a):
    raters = [make_researcher("ravi-rater"), make_researcher("rita-researcher")]
    cluster = ClusterFactory(name="c1")
    for i in range(20):
        JobFactory(cluster=cluster, team=team_a, name=f"bert-{i}", mean_gpu_util=20.0 + i)
    study = services.create_study(name="Rare", lead=raters[0], raters=raters, sample_size=20, seed=3)
    for rater, chosen in zip(raters, (FIRST, SECOND), strict=True):
        for assignment in services.assignments_of(study, rater):
            services.save_answer(assignment, dict.fromkeys(chosen.get(assignment.item.position, ["none"]), ""))
        services.submit(study, rater)
    return study, raters


def _row(page, label):
    row = page.split('id="per-category"')[1].split(f"{label}</span></td>")[1].split("</tr>")[0]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip()


@pytest.mark.django_db
def test_the_page_shows_each_categorys_prevalence_and_specific_agreement_and_explains_a_rare_ones_kappa(
    client, rare_study
):
    study, raters = rare_study
    client.force_login(raters[0])
    page = as_read(client.get(reverse("labeling:agreement", args=[study.pk])).content.decode())
    head = page.split('id="per-category"')[1].split("</thead>")[0]
    headers = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<th[^>]*>(.*?)</th>", head)]
    assert headers[2:] == ["Agreement (all; positive / negative)", "Ticked (ravi-rater / rita-researcher / either)"]
    pinned = _row(page, "Inefficient host-GPU data transfer")
    # kappa 0.000, 95.0 %, ticked 1 / 0 / 1, p_pos 0.0 %, p_neg 97.4 %, and why kappa is 0 there.
    assert re.search(r"0\.000 .*95\.0 %", pinned), pinned
    assert "95.0 % 0.0 % / 97.4 %" in pinned and "1 / 0 / 1" in pinned, pinned
    assert "rare: ticked on 1 of 20 jobs" in pinned, pinned
    batch = _row(page, "Improper batch size")
    assert "95.0 % 88.9 % / 96.8 %" in batch and "5 / 4 / 5" in batch and "rare" not in batch, batch
    # The note under the table says what the paradox is, once.
    assert page.count('id="rare-categories"') == 1
    assert "kappa paradox" in page.split('id="rare-categories"')[1].split("</p>")[0]


@pytest.mark.django_db
def test_the_export_carries_the_specific_agreement_the_page_shows(client, rare_study):
    study, raters = rare_study
    client.force_login(raters[0])
    rows = client.get(reverse("labeling:export", args=[study.pk, "agreement", "json"])).json()["rows"]
    pinned = next(r for r in rows if r["statistic"] == "cohen_kappa" and r["option"] == PINNED)
    assert (pinned["positive_agreement"], pinned["negative_agreement"]) == (0.0, round(38 / 39, 4))
    other = next(r for r in rows if r["statistic"] == "cohen_kappa" and r["option"] == "other")
    assert other["positive_agreement"] is None and other["negative_agreement"] == 1.0
    assert "positive_agreement" in exchange.AGREEMENT_COLUMNS
