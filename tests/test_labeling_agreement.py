"""Agreement statistics and rule-quality metrics, checked against independent implementations.

The library-backed figures (scikit-learn, krippendorff, statsmodels) and the vectorised bootstrap
formulas are compared with textbook formulas written out here by hand, on published examples and on
degenerate tables: all raters agree, and a category that nobody used."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from triage.labeling import agreement as ag
from triage.labeling.sampling import Candidate, Strategy, assign_raters, draw_sample, proportional_allocation

# --- Independent implementations (textbook formulas, plain Python) -------------------------------


def hand_cohen(a, b):
    """Cohen (1960) from the confusion table: (p_o - p_e) / (1 - p_e)."""
    n = len(a)
    values = sorted(set(a) | set(b))
    table = {(x, y): 0 for x in values for y in values}
    for x, y in zip(a, b, strict=True):
        table[x, y] += 1
    p_o = sum(table[v, v] for v in values) / n
    p_e = sum(sum(table[v, w] for w in values) * sum(table[w, v] for w in values) for v in values) / n**2
    return None if p_e == 1 else (p_o - p_e) / (1 - p_e)


def hand_fleiss(table):
    """Fleiss (1971): subjects x categories counts, same number of raters m per subject."""
    n_subjects = len(table)
    m = sum(table[0])
    p_j = [sum(row[j] for row in table) / (n_subjects * m) for j in range(len(table[0]))]
    p_i = [(sum(c * c for c in row) - m) / (m * (m - 1)) for row in table]
    p_bar, p_e = sum(p_i) / n_subjects, sum(p * p for p in p_j)
    return None if p_e == 1 else (p_bar - p_e) / (1 - p_e)


def hand_alpha(matrix):
    """Krippendorff's nominal alpha via pairable values: 1 - D_o / D_e, counted pair by pair."""
    units = list(zip(*matrix, strict=True))
    pairs = Counter()
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            pairs[values[i], values[j]] += 1 / (m - 1)
    n_c = Counter()
    for (c, _), w in pairs.items():
        n_c[c] += w
    n = sum(n_c.values())
    observed = sum(w for (c, k), w in pairs.items() if c != k)
    expected = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k)
    return None if expected == 0 else 1 - (n - 1) * observed / expected


# --- Known tables --------------------------------------------------------------------------------

# Cohen's kappa, the usual worked example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> 0.4.
COHEN_A = [1] * 25 + [0] * 25
COHEN_B = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
# Fleiss (1971) style example: 10 subjects, 14 raters, 5 categories -> 0.210.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]  # fmt: skip
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal example with missing data: 0.743.
N = None
KRIPP_MATRIX = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


def test_cohen_kappa_matches_the_worked_example_and_the_hand_formula():
    assert ag.cohen_kappa(COHEN_A, COHEN_B) == pytest.approx(0.4)
    assert hand_cohen(COHEN_A, COHEN_B) == pytest.approx(0.4)
    table = ag.pair_contributions(COHEN_A, COHEN_B, 2).sum(axis=0)
    assert float(ag.kappa_from_tables(table, 2)) == pytest.approx(0.4)


def test_fleiss_kappa_matches_the_published_example_and_the_hand_formula():
    assert ag.fleiss_kappa(FLEISS_TABLE) == pytest.approx(0.20993, abs=1e-5)
    assert hand_fleiss(FLEISS_TABLE) == pytest.approx(ag.fleiss_kappa(FLEISS_TABLE))
    sums = ag.fleiss_contributions(np.array(FLEISS_TABLE)).sum(axis=0)
    assert float(ag.fleiss_from_sums(sums, 5)) == pytest.approx(ag.fleiss_kappa(FLEISS_TABLE))


def test_krippendorff_alpha_matches_the_published_example_with_missing_ratings():
    assert ag.krippendorff_alpha(KRIPP_MATRIX) == pytest.approx(0.743, abs=5e-4)
    assert hand_alpha(KRIPP_MATRIX) == pytest.approx(ag.krippendorff_alpha(KRIPP_MATRIX))
    counts = np.array([[sum(row[u] == v for row in KRIPP_MATRIX) for v in range(1, 6)] for u in range(12)])
    coincidences = ag.coincidence_contributions(counts).sum(axis=0)
    assert float(ag.alpha_from_coincidences(coincidences, 5)) == pytest.approx(ag.krippendorff_alpha(KRIPP_MATRIX))


@pytest.mark.parametrize("seed", range(6))
def test_library_and_hand_formulas_agree_on_random_tables(seed):
    rng = random.Random(seed)
    a = [rng.choice("xyz") for _ in range(60)]
    b = [x if rng.random() < 0.6 else rng.choice("xyz") for x in a]
    assert ag.cohen_kappa(a, b) == pytest.approx(hand_cohen(a, b))
    matrix = [[rng.choice([0, 1, 1, None]) for _ in range(40)] for _ in range(3)]
    assert ag.krippendorff_alpha(matrix) == pytest.approx(hand_alpha(matrix))
    draws = [Counter(rng.choice(range(4)) for _ in range(5)) for _ in range(30)]
    table = [[counts.get(k, 0) for k in range(4)] for counts in draws]
    assert ag.fleiss_kappa(table) == pytest.approx(hand_fleiss(table))


def test_when_everyone_agrees_on_two_values_every_statistic_is_one():
    a = [1, 0, 1, 1, 0, 0]
    assert ag.cohen_kappa(a, a) == pytest.approx(1.0) == hand_cohen(a, a)
    assert ag.krippendorff_alpha([a, a, a]) == pytest.approx(1.0) == pytest.approx(hand_alpha([a, a, a]))
    table = [[3, 0] if x else [0, 3] for x in a]
    assert ag.fleiss_kappa(table) == pytest.approx(1.0) == pytest.approx(hand_fleiss(table))
    assert ag.percent_agreement(a, a) == 1.0


def test_a_category_nobody_used_is_undefined_not_zero_and_agreement_is_full():
    never = [0] * 8
    assert hand_cohen(never, never) is None and ag.cohen_kappa(never, never) is None
    assert hand_alpha([never, never]) is None and ag.krippendorff_alpha([never, never]) is None
    assert hand_fleiss([[2, 0]] * 8) is None and ag.fleiss_kappa([[2, 0]] * 8) is None
    assert ag.percent_agreement(never, never) == 1.0
    assert math.isnan(float(ag.kappa_from_tables(ag.pair_contributions(never, never, 2).sum(axis=0), 2)))


def test_opposite_constant_raters_have_kappa_zero():
    assert ag.cohen_kappa([1, 1, 1], [0, 0, 0]) == pytest.approx(0.0) == hand_cohen([1, 1, 1], [0, 0, 0])


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible():
    rows = ag.pair_contributions(COHEN_A, COHEN_B, 2)
    first = ag.bootstrap_interval(rows, lambda t: ag.kappa_from_tables(t, 2), seed=3)
    again = ag.bootstrap_interval(rows, lambda t: ag.kappa_from_tables(t, 2), seed=3)
    assert first == again
    low, high = first.low, first.high
    assert low < 0.4 < high
    assert low > 0.1 and high < 0.7


def test_a_rare_option_gets_no_interval_and_the_reason_instead_of_a_zero_width_one():
    """One job of eight with the option, both raters agreeing: about a third of resamples draw no job
    with it, where kappa is 0/0. Dropping them left only kappa = 1, a [1.000, 1.000] interval."""
    ratings = {u: {"ann": frozenset({"none"}), "bob": frozenset({"none"})} for u in range(2, 9)}
    ratings[1] = {"ann": frozenset({"api_misuse"}), "bob": frozenset({"api_misuse"})}
    report = ag.agreement_report(ratings, ["api_misuse", "none"], resamples=1000, seed=1)
    by_option = {row.option: row.kappa for row in report.pairs[0].per_option}
    rare = by_option["api_misuse"]
    assert rare.value == pytest.approx(1.0)
    assert (rare.low, rare.high) == (None, None)
    assert rare.no_interval_reason == ag.TOO_FEW_POSITIVES == "too few positive labels for an interval"
    # "none" on seven of eight jobs: too few jobs *without* it, the same problem the other way round.
    assert by_option["none"].low is None and by_option["none"].no_interval_reason == ag.TOO_FEW_NEGATIVES
    alpha = {option: a for option, a, _, _ in report.group.per_option}
    assert alpha["api_misuse"].low is None and alpha["api_misuse"].no_interval_reason == ag.TOO_FEW_POSITIVES
    # An undefined statistic has no interval either, but needs no reason: the dash says it.
    assert ag.Estimate(None).no_interval_reason is None


def test_an_option_with_enough_positives_keeps_its_interval():
    rng = random.Random(2)
    ratings = {}
    for unit in range(40):
        truth = unit % 2 == 0
        ratings[unit] = {r: frozenset({"api_misuse" if truth != (rng.random() < 0.1) else "none"}) for r in ("a", "b")}
    (pair,) = ag.agreement_report(ratings, ["api_misuse", "none"], resamples=1000, seed=1).pairs
    kappa = pair.per_option[0].kappa
    assert kappa.low < kappa.value < kappa.high and kappa.no_interval_reason is None


def test_too_few_jobs_for_a_bootstrap_say_so():
    estimate = (
        ag.agreement_report({1: {"a": frozenset({"x"}), "b": frozenset({"y"})}}, ["x", "y"], resamples=100)
        .pairs[0]
        .pooled_kappa
    )
    assert estimate.low is None and estimate.no_interval_reason == ag.TOO_FEW_JOBS


def test_bootstrap_resamples_agree_with_the_library_on_each_resample():
    """The vectorised formula is the library's statistic: check on a few explicit resamples."""
    rng = np.random.default_rng(0)
    a, b = np.array(COHEN_A), np.array(COHEN_B)
    rows = ag.pair_contributions(a, b, 2)
    for _ in range(5):
        pick = rng.integers(0, len(a), len(a))
        assert float(ag.kappa_from_tables(rows[pick].sum(axis=0), 2)) == pytest.approx(
            ag.cohen_kappa(list(a[pick]), list(b[pick]))
        )


OPTIONS = ["host_gpu_transfer", "improper_batch_size", "model_checkpointing", "api_misuse", "none"]


def test_report_for_two_raters_pools_decisions_and_lists_disagreements():
    ratings = {
        1: {"ann": frozenset({"host_gpu_transfer"}), "bob": frozenset({"host_gpu_transfer"})},
        2: {"ann": frozenset({"improper_batch_size"}), "bob": frozenset({"improper_batch_size", "host_gpu_transfer"})},
        3: {"ann": frozenset({"none"}), "bob": frozenset({"none"})},
        4: {"ann": frozenset({"model_checkpointing"}), "bob": frozenset({"model_checkpointing"})},
        5: {"ann": frozenset({"host_gpu_transfer"})},  # one label only: not compared
    }
    report = ag.agreement_report(ratings, OPTIONS, resamples=200)
    assert report.units_double_rated == 4
    (pair,) = report.pairs
    assert pair.units == 4 and pair.exact_set_percent == 0.75
    a = [int(o in ratings[u]["ann"]) for u in (1, 2, 3, 4) for o in OPTIONS]
    b = [int(o in ratings[u]["bob"]) for u in (1, 2, 3, 4) for o in OPTIONS]
    assert pair.pooled_kappa.value == pytest.approx(hand_cohen(a, b))
    by_option = {row.option: row for row in pair.per_option}
    assert by_option["api_misuse"].kappa.value is None  # never used
    assert by_option["api_misuse"].percent == 1.0
    assert by_option["model_checkpointing"].kappa.value == pytest.approx(1.0)
    assert [d.unit for d in report.disagreements] == [2]
    # Each option's 2 x 2 table: ann is the first rater, bob the second.
    assert by_option["host_gpu_transfer"].counts == ag.Counts(both_yes=1, only_first=0, only_second=1, both_no=2)
    assert pair.pooled_counts == ag.Counts(both_yes=4, only_first=0, only_second=1, both_no=15)
    # Krippendorff's alpha for two raters too, over the jobs both labelled.
    matrix = [[int(o in ratings[u][r]) for u in (1, 2, 3, 4) for o in OPTIONS] for r in ("ann", "bob")]
    assert report.group.raters == ["ann", "bob"] and report.group.units == 4
    assert report.group.pooled_alpha.value == pytest.approx(hand_alpha(matrix))


def test_report_for_three_raters_gives_alpha_and_fleiss_matching_hand_formulas():
    rng = random.Random(5)
    raters = ["ann", "bob", "cy"]
    ratings = {}
    for unit in range(30):
        truth = rng.choice(OPTIONS[:4])
        ratings[unit] = {r: frozenset({truth if rng.random() < 0.8 else rng.choice(OPTIONS[:4])}) for r in raters}
    report = ag.agreement_report(ratings, OPTIONS, resamples=200)
    assert len(report.pairs) == 3
    group = report.group
    matrix = [[int(o in ratings[u][r]) for u in ratings for o in OPTIONS] for r in raters]
    assert group.pooled_alpha.value == pytest.approx(hand_alpha(matrix))
    table = [
        [sum(o not in ratings[u][r] for r in raters), sum(o in ratings[u][r] for r in raters)]
        for o in OPTIONS
        for u in ratings
    ]
    assert group.pooled_fleiss.value == pytest.approx(hand_fleiss(table))
    assert group.pooled_alpha.low < group.pooled_alpha.value < group.pooled_alpha.high
    none_row = next(row for row in group.per_option if row[0] == "none")
    assert none_row[1].value is None and none_row[3] == 1.0


def test_rule_quality_counts_and_scores_per_category():
    gold = {1: {"a"}, 2: {"a", "b"}, 3: set(), 4: {"b"}}
    found = {1: {"a"}, 2: {"a"}, 3: {"b"}, 4: set()}
    report = ag.rule_quality(gold, found, ["a", "b", "c"])
    a, b, c = report.categories
    assert (a.true_positives, a.false_positives, a.false_negatives) == (2, 0, 0)
    assert a.precision == 1.0 and a.recall == 1.0 and a.f1 == 1.0
    assert (b.true_positives, b.false_positives, b.false_negatives) == (0, 1, 2)
    assert b.precision == 0.0 and b.recall == 0.0
    assert b.false_positive_units == [3] and b.false_negative_units == [2, 4]
    assert c.precision is None and c.recall is None and c.f1 is None  # never in gold, never found
    assert report.micro == pytest.approx((2 / 3, 2 / 4, 2 * 2 / (4 + 1 + 2)))
    labels = report.confusion_labels
    assert report.confusion[labels.index("b")][labels.index("none")] == 1  # job 4
    assert report.confusion[labels.index("none")][labels.index("b")] == 1  # job 3
    assert report.exact_match == 0.25


# --- Sampling ------------------------------------------------------------------------------------

CANDIDATES = [Candidate(id=i, team=f"t{i % 3}", cluster="c1" if i < 70 else "c2") for i in range(1, 101)]


def test_the_same_seed_draws_the_same_sample_and_another_seed_another():
    first = draw_sample(CANDIDATES, Strategy.RANDOM, 10, seed=42)
    assert first.ids == draw_sample(list(reversed(CANDIDATES)), Strategy.RANDOM, 10, seed=42).ids
    assert first.ids != draw_sample(CANDIDATES, Strategy.RANDOM, 10, seed=43).ids
    assert len(set(first.ids)) == 10
    assert first.record == {"strategy": "random", "seed": 42, "requested_size": 10, "population": 100, "drawn": 10}


def test_stratified_sampling_is_proportional_to_the_strata():
    sample = draw_sample(CANDIDATES, Strategy.BY_CLUSTER, 20, seed=1)
    assert sample.record["strata"] == {"c1": 14, "c2": 6}
    assert Counter(s for _, s in sample.items) == {"c1": 14, "c2": 6}
    assert proportional_allocation({"a": 1, "b": 50, "c": 49}, 10) == {"a": 0, "b": 5, "c": 5}
    assert proportional_allocation({"a": 2, "b": 100}, 200) == {"a": 2, "b": 100}


def test_all_takes_the_whole_population():
    assert draw_sample(CANDIDATES, Strategy.ALL, None, seed=0).ids == list(range(1, 101))


def test_rater_assignment_gives_distinct_raters_and_balances_the_load():
    plan = assign_raters(30, ["ann", "bob", "cy"], 2, seed=9)
    assert all(len(set(raters)) == 2 for raters in plan)
    assert set(Counter(r for raters in plan for r in raters).values()) == {20}
    assert len({frozenset(raters) for raters in plan}) == 3  # every pair meets
    with pytest.raises(ValueError, match="at least two"):
        assign_raters(3, ["ann", "bob"], 1, seed=0)


@pytest.mark.parametrize(("rater_count", "per_job"), [(4, 2), (5, 2), (6, 2), (6, 3), (7, 3)])
def test_with_more_raters_than_labels_per_job_every_pair_still_meets(rater_count, per_job):
    # A pair that never labels the same job has no Cohen's kappa on the agreement page.
    names = [f"rater-{i}" for i in range(rater_count)]
    plan = assign_raters(60, names, per_job, seed=3)
    met = {frozenset(pair) for raters in plan for pair in itertools.combinations(raters, 2)}
    assert met == {frozenset(pair) for pair in itertools.combinations(names, 2)}
    loads = Counter(r for raters in plan for r in raters)
    assert set(loads) == set(names) and max(loads.values()) - min(loads.values()) <= 1
    assert all(len(set(raters)) == per_job for raters in plan)


def test_perfect_agreement_gives_no_zero_width_interval_but_the_exact_interval_of_jobs_agreed():
    """Both raters give the same labels on all six jobs. Every resample agrees perfectly too, so the
    bootstrap said [1.000, 1.000], as if six jobs left no uncertainty; forty would say the same."""
    labels = [{"batch"}, {"batch", "ckpt"}, {"none"}, {"ckpt"}, {"batch"}, {"none"}]
    ratings = {u: {"ann": frozenset(s), "bob": frozenset(s)} for u, s in enumerate(labels)}
    report = ag.agreement_report(ratings, ["batch", "ckpt", "none"], resamples=1000, seed=1)
    pooled = report.pairs[0].pooled_kappa
    assert pooled.value == pytest.approx(1.0)
    assert (pooled.low, pooled.high) == (None, None)
    assert pooled.no_interval_reason == ag.NO_DISAGREEMENT == "no disagreement to resample"
    # What can be said: all 6 of 6 jobs agreed, and the exact (Clopper-Pearson) interval of that share,
    # whose lower end is (2.5 %)^(1/n) when every one of n agreed: 54 % on six jobs, 91 % on forty.
    assert (pooled.agreed, pooled.units) == (6, 6)
    low, high = pooled.agreed_interval
    assert low == pytest.approx(0.025 ** (1 / 6)) and high == 1.0
    assert ag.exact_share_interval(40, 40)[0] == pytest.approx(0.025 ** (1 / 40))
    # Krippendorff's alpha and Fleiss' kappa of both raters together say the same.
    for estimate in (report.group.pooled_alpha, report.group.pooled_fleiss):
        assert estimate.low is None and estimate.no_interval_reason == ag.NO_DISAGREEMENT and estimate.agreed == 6
    # "batch" on three of six jobs: 1.6 % of resamples draw none, so too few positives is said first;
    # on six of twelve there are enough of each answer to resample, and still none to disagree on.
    assert report.pairs[0].per_option[0].kappa.no_interval_reason == ag.TOO_FEW_POSITIVES
    twice = {u: {"ann": frozenset(s), "bob": frozenset(s)} for u, s in enumerate(labels * 2)}
    batch = ag.agreement_report(twice, ["batch", "ckpt", "none"], resamples=1000, seed=1).pairs[0].per_option[0].kappa
    assert batch.low is None and batch.no_interval_reason == ag.NO_DISAGREEMENT and batch.agreed == 12


def test_one_disagreement_keeps_the_bootstrap_interval_and_counts_the_jobs_agreed():
    labels = [{"batch"}, {"batch", "ckpt"}, {"none"}, {"ckpt"}, {"batch"}, {"none"}] * 3
    ratings = {u: {"ann": frozenset(s), "bob": frozenset(s)} for u, s in enumerate(labels)}
    ratings[0] = {"ann": frozenset({"batch"}), "bob": frozenset({"ckpt"})}
    pooled = ag.agreement_report(ratings, ["batch", "ckpt", "none"], resamples=1000, seed=1).pairs[0].pooled_kappa
    assert pooled.low < pooled.value < pooled.high == pytest.approx(1.0)
    assert pooled.no_interval_reason is None and (pooled.agreed, pooled.units) == (17, 18)


def _one_disagreement(n):
    """n jobs two raters labelled alike but for the first."""
    ratings = {u: {"ann": frozenset({"none"}), "bob": frozenset({"none"})} for u in range(n)}
    ratings[0] = {"ann": frozenset({"improper_batch_size"}), "bob": frozenset({"model_checkpointing"})}
    return ratings


@pytest.mark.parametrize("jobs", [2, 3, 4])
def test_two_to_four_jobs_get_no_bootstrap_interval_but_say_how_many_it_needs(jobs):
    """Three jobs gave kappa 0.646 [-0.062, 1.000]: the spread of ten distinct resamples, one in nine a
    single job drawn three times. Under five jobs the figure says there are too few instead."""
    report = ag.agreement_report(_one_disagreement(jobs), OPTIONS, resamples=1000, seed=1)
    estimates = [report.pairs[0].pooled_kappa, report.group.pooled_alpha, report.group.pooled_fleiss]
    # Every option the raters disagreed on (those agreed on every job say so instead, next test).
    estimates += [row.kappa for row in report.pairs[0].per_option if row.counts.only_first or row.counts.only_second]
    assert len(estimates) == 5
    for estimate in estimates:
        assert estimate.value is not None and (estimate.low, estimate.high) == (None, None)
        assert estimate.no_interval_reason == ag.TOO_FEW_JOBS and estimate.units == jobs
    assert ag.too_few_jobs_text(jobs) == f"too few jobs for an interval (n={jobs}; at least 5 needed)"
    # The bootstrap itself refuses as few rows, whoever calls it.
    rows = ag.pair_contributions([1, 0, 1, 0][:jobs], [1, 0, 0, 0][:jobs], 2)
    assert ag.bootstrap_interval(rows, lambda t: ag.kappa_from_tables(t, 2)).no_interval_reason == ag.TOO_FEW_JOBS


def test_five_jobs_get_their_interval():
    pooled = ag.agreement_report(_one_disagreement(5), OPTIONS, resamples=1000, seed=1).pairs[0].pooled_kappa
    assert ag.MIN_JOBS_FOR_INTERVAL == 5
    assert pooled.low < pooled.value < pooled.high and pooled.no_interval_reason is None


def test_a_handful_of_jobs_all_agreed_still_gives_the_exact_interval_of_jobs_agreed():
    """The exact (Clopper-Pearson) interval holds on any number of jobs: three agreed jobs say 29-100 %."""
    ratings = {u: {"ann": frozenset({"none"}), "bob": frozenset({"none"})} for u in range(3)}
    ratings[0] = {"ann": frozenset({"api_misuse"}), "bob": frozenset({"api_misuse"})}
    pooled = ag.agreement_report(ratings, OPTIONS, resamples=1000, seed=1).pairs[0].pooled_kappa
    assert pooled.no_interval_reason == ag.NO_DISAGREEMENT and pooled.low is None
    assert pooled.agreed_interval[0] == pytest.approx(0.025 ** (1 / 3))


def test_a_skipped_job_is_left_out_of_the_skipping_raters_pairs_and_counted():
    """Three raters, two labels per job. Cat skipped job 9 (Ann labelled it): no pair has it, Ann & Cat
    count it as left out, and so do all raters together (one label left on it)."""
    ratings = _one_disagreement(6)
    for unit in ratings:
        ratings[unit] = dict(ratings[unit])
    ratings[6] = {"ann": frozenset({"none"}), "cat": frozenset({"none"})}
    ratings[7] = {"bob": frozenset({"none"}), "cat": frozenset({"api_misuse"})}
    ratings[9] = {"ann": frozenset({"api_misuse"})}
    report = ag.agreement_report(ratings, OPTIONS, resamples=200, seed=1, skips={9: frozenset({"cat"})})
    pairs = {pair.raters: pair for pair in report.pairs}
    assert pairs[("ann", "bob")].skipped == 0 and pairs[("ann", "bob")].units == 6
    assert pairs[("ann", "cat")].skipped == 1 and pairs[("ann", "cat")].units == 1
    assert pairs[("bob", "cat")].skipped == 0
    assert report.units_skipped == 1 and report.group.skipped == 1
    assert 9 not in {d.unit for d in report.disagreements} and report.group.units == 8
    # Both raters skipped it: still the pair's, still left out. No skips: nothing counted.
    both = ag.agreement_report(_one_disagreement(6), OPTIONS, resamples=200, skips={9: frozenset({"ann", "bob"})})
    assert both.pairs[0].skipped == 1 and both.group.skipped == 1
    none = ag.agreement_report(_one_disagreement(6), OPTIONS, resamples=200)
    assert none.pairs[0].skipped == 0 and none.units_skipped == 0 and none.group.skipped == 0
