"""Agreement between raters, and the quality of rules against gold labels. Pure: no Django.

Point estimates come from well-kept libraries: scikit-learn's `cohen_kappa_score`, the
`krippendorff` package and statsmodels' `fleiss_kappa`. Bootstrap confidence intervals resample
jobs (the unit that was sampled; a job's decisions on all options travel together). So that 1,000
resamples stay quick, each statistic is also written as a function of summed per-job contingency
counts and evaluated for all resamples at once with numpy; the tests check that these formulas give
the libraries' values on the full data, and both against hand-computed published examples.

A statistic is `None` where it is undefined: kappa and alpha are 0/0 when every rating has the same
value (for instance a category nobody used); percent agreement is still reported beside it.

A defined statistic may still have no interval, and then says why (`Estimate.no_interval_reason`):
with an option on one job in eight, a third of resamples draw no job with it and the statistic is
undefined on them. Leaving those out conditions the interval on the resamples that happened to
draw the job, and what is left can be a single value ([1.000, 1.000] from one agreed job). So no
interval is drawn when more than MAX_UNDEFINED_SHARE of resamples are undefined. SciPy's
`stats.bootstrap` is stricter (any undefined resample makes its interval NaN); the 1 % we allow is
well inside each 2.5 % tail, so it can move the ends only a little, and it keeps the intervals of
options with a handful of jobs (about five or more with the option, and as many without).

Nor is one drawn on fewer than MIN_JOBS_FOR_INTERVAL jobs. With 3 jobs the bootstrap still prints
something ([-0.062, 1.000] for a kappa of 0.646), but it is the spread of 10 distinct resamples, one
in nine of them a single job drawn three times: a number with no meaning as an interval. The figure
says so instead (`too_few_jobs_text`: "too few jobs for an interval (n=3; at least 5 needed)").

Nor is an interval drawn where the raters agreed on every job: every resample then agrees perfectly
too, and the bootstrap prints [1.000, 1.000] however few the jobs, as if there were no uncertainty.
Such a figure says so (NO_DISAGREEMENT) and carries instead what can be said: the exact
(Clopper-Pearson, statsmodels) interval of the share of jobs the raters agree on, from `agreed` of
`units` jobs, whose lower end grows with the jobs behind it (54 % with 6 of 6, 91 % with 40 of 40).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
MAX_UNDEFINED_SHARE = 0.01  # of resamples; more, and the interval is not drawn (module docstring)
# Fewer jobs than this, and no bootstrap interval is drawn (module docstring): with n jobs a resample is
# one job drawn n times with probability n^(1-n), 50 % for 2 jobs, 11 % for 3, 1.6 % for 4 -- more
# than the MAX_UNDEFINED_SHARE of degenerate resamples an interval tolerates -- and 0.16 % for 5; and
# 2, 3 or 4 jobs have only 3, 10 or 35 distinct resamples to take percentiles of.
MIN_JOBS_FOR_INTERVAL = 5

# Why a defined statistic has no interval, as the pages and exports say it.
TOO_FEW_JOBS = "too few jobs for an interval"
TOO_FEW_POSITIVES = "too few positive labels for an interval"
TOO_FEW_NEGATIVES = "too few negative labels for an interval"
NO_DISAGREEMENT = "no disagreement to resample"


def too_few_jobs_text(units: int) -> str:
    """TOO_FEW_JOBS as the pages say it: how many jobs there are, and how many an interval needs."""
    return f"{TOO_FEW_JOBS} (n={units}; at least {MIN_JOBS_FOR_INTERVAL} needed)"


# --- Point estimates from the libraries ------------------------------------------------------


def _clean(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters over the same units (scikit-learn)."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) != len(b):
        raise ValueError("both raters must rate the same units")
    if not a or len(set(a) | set(b)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _clean(cohen_kappa_score(list(a), list(b)))


def krippendorff_alpha(matrix: Sequence[Sequence[Hashable | None]]) -> float | None:
    """Krippendorff's alpha (nominal) of a raters x units matrix; None marks a missing rating."""
    import krippendorff

    values = sorted({v for row in matrix for v in row if v is not None}, key=str)
    if len(values) < 2:
        return None
    code = {v: i for i, v in enumerate(values)}
    data = np.array([[np.nan if v is None else code[v] for v in row] for row in matrix], dtype=float)
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return None
    try:
        return _clean(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    except (ValueError, ZeroDivisionError):
        return None


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa from a units x values table of rating counts, equal raters per unit (statsmodels)."""
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    table = np.asarray(counts, dtype=float)
    if table.size == 0 or (table.sum(axis=0) > 0).sum() < 2:
        return None
    if len(set(table.sum(axis=1))) != 1:
        raise ValueError("Fleiss' kappa needs the same number of ratings for every unit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _clean(sm_fleiss(table, method="fleiss"))


def exact_share_interval(count: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float] | None:
    """The exact (Clopper-Pearson) interval of a share seen `count` times in `n` units (statsmodels)."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        return None
    low, high = proportion_confint(count, n, alpha=1 - confidence, method="beta")
    return float(low), float(high)


def percent_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    if not a:
        return None
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


# --- The same statistics from summed per-unit counts, vectorised for the bootstrap ------------
# Each takes an array whose last axis holds flattened summed counts; leading axes are resamples.


def kappa_from_tables(tables: np.ndarray, k: int) -> np.ndarray:
    """Cohen's kappa from k x k confusion tables (rater A rows, rater B columns)."""
    t = np.asarray(tables, dtype=float).reshape(*np.shape(tables)[:-1], k, k)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = np.trace(t, axis1=-2, axis2=-1) / n
        p_e = (t.sum(axis=-1) * t.sum(axis=-2)).sum(axis=-1) / n**2
        kappa = (p_o - p_e) / (1 - p_e)
    return np.where(np.isclose(p_e, 1.0), np.nan, kappa)


def alpha_from_coincidences(coincidences: np.ndarray, k: int) -> np.ndarray:
    """Nominal Krippendorff's alpha from a k x k coincidence matrix."""
    o = np.asarray(coincidences, dtype=float).reshape(*np.shape(coincidences)[:-1], k, k)
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    disagreement = n - np.trace(o, axis1=-2, axis2=-1)
    expected = n**2 - (n_c**2).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1 - (n - 1) * disagreement / expected
    return np.where(expected <= 0, np.nan, alpha)


def fleiss_from_sums(sums: np.ndarray, k: int) -> np.ndarray:
    """Fleiss' kappa from [units, sum of per-unit agreement P_i, per-value rating counts...] sums.

    With m ratings per unit: P_i = (sum_c n_ic^2 - m) / (m (m - 1)), P_bar = mean P_i,
    p_c = share of ratings with value c, P_e = sum p_c^2, kappa = (P_bar - P_e) / (1 - P_e).
    """
    s = np.asarray(sums, dtype=float)
    units, p_sum, counts = s[..., 0], s[..., 1], s[..., 2 : 2 + k]
    with np.errstate(invalid="ignore", divide="ignore"):
        p_bar = p_sum / units
        p_c = counts / counts.sum(axis=-1, keepdims=True)
        p_e = (p_c**2).sum(axis=-1)
        kappa = (p_bar - p_e) / (1 - p_e)
    return np.where(np.isclose(p_e, 1.0), np.nan, kappa)


def pair_contributions(a: Sequence[int], b: Sequence[int], k: int) -> np.ndarray:
    """One row per unit: its one-hot cell in the k x k confusion table."""
    rows = np.zeros((len(a), k * k))
    rows[np.arange(len(a)), np.asarray(a, dtype=int) * k + np.asarray(b, dtype=int)] = 1
    return rows


def coincidence_contributions(unit_counts: np.ndarray) -> np.ndarray:
    """One row per unit: its share of the coincidence matrix, (n_u n_u' - diag n_u) / (m_u - 1)."""
    counts = np.asarray(unit_counts, dtype=float)
    m = counts.sum(axis=1)
    outer = counts[:, :, None] * counts[:, None, :] - np.einsum("uc,ck->uck", counts, np.eye(counts.shape[1]))
    with np.errstate(invalid="ignore", divide="ignore"):
        rows = outer / (m - 1)[:, None, None]
    rows[m < 2] = 0  # a unit rated once pairs with nothing
    return rows.reshape(len(counts), -1)


def fleiss_contributions(unit_counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(unit_counts, dtype=float)
    m = counts.sum(axis=1)
    p_i = ((counts**2).sum(axis=1) - m) / (m * (m - 1))
    return np.column_stack([np.ones(len(counts)), p_i, counts])


# --- Bootstrap --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A statistic with its bootstrap percentile interval; None where undefined."""

    value: float | None
    low: float | None = None
    high: float | None = None
    units: int = 0
    no_interval_reason: str | None = None  # a defined value without an interval says why
    agreed: int | None = None  # of `units` jobs, those the raters agreed on (None: not counted)
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def agreed_interval(self) -> tuple[float, float] | None:
        """The exact interval of the share of jobs the raters agree on (module docstring)."""
        return None if self.agreed is None else exact_share_interval(self.agreed, self.units, self.confidence)

    def as_dict(self) -> dict:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "units": self.units,
            "no_interval_reason": self.no_interval_reason,
            "agreed": self.agreed,
        }


@dataclass(frozen=True)
class Interval:
    """A bootstrap percentile interval, or none and why."""

    low: float | None
    high: float | None
    no_interval_reason: str | None = None


def bootstrap_interval(
    contributions: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    groups: np.ndarray | None = None,
    too_many_undefined: str = TOO_FEW_POSITIVES,
) -> Interval:
    """Percentile interval of `statistic(summed contributions)` over resamples of the units.

    `groups` maps contribution rows to resampled units (jobs) when one job has several rows.
    Resamples where the statistic is undefined are left out while they are at most
    MAX_UNDEFINED_SHARE of them; past that there is no interval, and `too_many_undefined` says why
    (the caller knows which value was too rare)."""
    rows = np.asarray(contributions, dtype=float)
    if groups is not None:
        unit_ids, inverse = np.unique(groups, return_inverse=True)
        # Each unit's rows summed, column by column (bincount: `np.add.at` took 27 ms a call).
        rows = np.column_stack([np.bincount(inverse, weights=column, minlength=len(unit_ids)) for column in rows.T])
    n = len(rows)
    if n < MIN_JOBS_FOR_INTERVAL or resamples <= 0:
        return Interval(None, None, TOO_FEW_JOBS)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(resamples, n))
    # How often each resample drew each unit: one bincount over (resample, unit) cells.
    cells = (np.arange(resamples)[:, None] * n + picks).ravel()
    weights = np.bincount(cells, minlength=resamples * n).reshape(resamples, n).astype(float)
    values = statistic(weights @ rows)
    values = values[~np.isnan(values)]
    if resamples - len(values) > MAX_UNDEFINED_SHARE * resamples:
        return Interval(None, None, too_many_undefined)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Interval(float(low), float(high))


def rarer_value_reason(yes: int, no: int) -> str:
    """Why a yes/no statistic has no interval: resamples fall on one value when the other is rare."""
    return TOO_FEW_POSITIVES if yes <= no else TOO_FEW_NEGATIVES


def _estimate(
    value: float | None,
    units: int,
    contributions: Callable[[], np.ndarray],
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    agreed: int | None = None,
    **bootstrap,
) -> Estimate:
    """A point estimate with its bootstrap interval; no interval when the point itself is undefined,
    nor when the raters agreed on every job (`agreed` of `units`: every resample is perfect too)."""
    confidence = bootstrap.get("confidence", DEFAULT_CONFIDENCE)
    if value is None:
        return Estimate(None, None, None, units, agreed=agreed, confidence=confidence)
    if units < MIN_JOBS_FOR_INTERVAL:
        # No bootstrap on a handful of jobs (module docstring). Agreed on every one of two or more, the
        # exact interval of the share of jobs agreed on still holds (its width says how few they are).
        reason = NO_DISAGREEMENT if units >= 2 and agreed == units else TOO_FEW_JOBS
        return Estimate(value, None, None, units, reason, agreed=agreed, confidence=confidence)
    interval = bootstrap_interval(contributions(), statistic, **bootstrap)
    if interval.low is not None and agreed == units:
        # Every resample agrees perfectly as well: its [1.000, 1.000] would claim certainty. (A reason
        # the bootstrap gave, such as too few positive labels, stands: it says what is missing first.)
        interval = Interval(None, None, NO_DISAGREEMENT)
    return Estimate(
        value, interval.low, interval.high, units, interval.no_interval_reason, agreed=agreed, confidence=confidence
    )


# --- Study-level reports ----------------------------------------------------------------------

Ratings = dict[Hashable, dict[str, frozenset[str]]]  # unit -> rater -> chosen options
Skips = dict[Hashable, frozenset[str]]  # unit -> raters who skipped it ("I can't judge this one")


@dataclass(frozen=True)
class Counts:
    """A pair of raters' 2 x 2 table for yes/no decisions: both yes, only the first, only the second, neither."""

    both_yes: int
    only_first: int
    only_second: int
    both_no: int

    @classmethod
    def of(cls, a: Sequence[int], b: Sequence[int]) -> Counts:
        pairs = list(zip(a, b, strict=True))
        return cls(
            both_yes=pairs.count((1, 1)),
            only_first=pairs.count((1, 0)),
            only_second=pairs.count((0, 1)),
            both_no=pairs.count((0, 0)),
        )

    @property
    def either_yes(self) -> int:
        """Units one rater or both said yes to: how often the option came up at all."""
        return self.both_yes + self.only_first + self.only_second

    @property
    def positive_agreement(self) -> float | None:
        """Positive specific agreement (Cicchetti & Feinstein 1990), 2a / (2a + b + c): of the yes
        answers, the share the other rater matched. None where neither rater said yes."""
        return _share_or_none(2 * self.both_yes, 2 * self.both_yes + self.only_first + self.only_second)

    @property
    def negative_agreement(self) -> float | None:
        """Negative specific agreement, 2d / (2d + b + c): of the no answers, the share matched."""
        return _share_or_none(2 * self.both_no, 2 * self.both_no + self.only_first + self.only_second)


def _share_or_none(part: int, whole: int) -> float | None:
    return part / whole if whole else None


# A category's kappa this low beside this much raw agreement is the kappa paradox (Feinstein &
# Cicchetti 1990): on a rare category chance agreement on "no" is already near 1, so one unmatched
# tick leaves kappa near 0 however few the disagreements. The page says so where it happens.
RARE_KAPPA_BELOW = 0.4
RARE_AGREEMENT_AT_LEAST = 0.9


def low_kappa_from_rarity(kappa: float | None, percent: float | None, counts: Counts | None) -> bool:
    """Whether a category's kappa is low while its raw agreement is high because the category is rare:
    ticked on fewer jobs than left off by both raters, so the figures to read are its positive and
    negative agreement."""
    if kappa is None or percent is None or counts is None:
        return False
    rare = counts.either_yes < counts.both_no
    return kappa < RARE_KAPPA_BELOW and percent >= RARE_AGREEMENT_AT_LEAST and rare


@dataclass
class OptionAgreement:
    option: str
    kappa: Estimate
    percent: float | None
    positives: dict[str, int]  # rater -> units where they chose the option
    counts: Counts | None = None

    @property
    def low_kappa_from_rarity(self) -> bool:
        return low_kappa_from_rarity(self.kappa.value, self.percent, self.counts)


@dataclass
class PairAgreement:
    raters: tuple[str, str]
    units: int
    exact_set_percent: float | None  # both chose exactly the same options
    pooled_kappa: Estimate  # every (unit, option) yes/no decision, resampled by unit
    pooled_percent: float | None
    per_option: list[OptionAgreement]
    pooled_counts: Counts | None = None  # over every (unit, option) decision
    skipped: int = 0  # units both raters had, left out because one or both skipped them


@dataclass
class GroupAgreement:
    """All raters together, two or more: Krippendorff's alpha (missing ratings allowed) and Fleiss'
    kappa (only where every unit has the same number of ratings)."""

    raters: list[str]
    units: int
    pooled_alpha: Estimate
    pooled_fleiss: Estimate | None
    per_option: list[tuple[str, Estimate, Estimate | None, float | None]]  # option, alpha, fleiss, percent
    skipped: int = 0  # units left out because skips left them fewer than two ratings


@dataclass
class Disagreement:
    unit: Hashable
    labels: dict[str, frozenset[str]]


@dataclass
class AgreementReport:
    options: list[str]
    raters: list[str]
    units_rated: int
    units_double_rated: int
    pairs: list[PairAgreement] = field(default_factory=list)
    group: GroupAgreement | None = None
    disagreements: list[Disagreement] = field(default_factory=list)
    exact_set_percent: float | None = None
    units_skipped: int = 0  # units some rater skipped (each skip leaves that rater out of the unit)


def _binary_kappa(a: list[int], b: list[int], units: int, agreed: int, **bootstrap) -> Estimate:
    """Cohen's kappa of two raters' yes/no decisions, with its bootstrap interval; `agreed` of the
    `units` jobs had the same answers from both."""
    yes = sum(a) + sum(b)
    return _estimate(
        cohen_kappa(a, b),
        units,
        lambda: pair_contributions(a, b, 2),
        lambda t: kappa_from_tables(t, 2),
        agreed=agreed,
        too_many_undefined=rarer_value_reason(yes, len(a) + len(b) - yes),
        **bootstrap,
    )


def _pair_option(a_sets, b_sets, option, resamples, seed, confidence) -> tuple[Estimate, float | None]:
    a = [int(option in s) for s in a_sets]
    b = [int(option in s) for s in b_sets]
    agreed = sum(x == y for x, y in zip(a, b, strict=True))
    kappa = _binary_kappa(a, b, len(a), agreed, resamples=resamples, seed=seed, confidence=confidence)
    return kappa, percent_agreement(a, b)


def skipped_by_pair(ratings: Ratings, skips: Skips, first: str, second: str) -> int:
    """Units both raters had (each rated or skipped it) that one or both skipped: left out of the pair."""
    return sum(
        (first in who or first in ratings.get(u, {}))
        and (second in who or second in ratings.get(u, {}))
        and (first in who or second in who)
        for u, who in skips.items()
    )


def pair_agreement(
    ratings: Ratings,
    first: str,
    second: str,
    options: list[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    skips: Skips | None = None,
) -> PairAgreement:
    units = [u for u in ratings if first in ratings[u] and second in ratings[u]]
    a_sets = [ratings[u][first] for u in units]
    b_sets = [ratings[u][second] for u in units]
    per_option = []
    for option in options:
        kappa, percent = _pair_option(a_sets, b_sets, option, resamples, seed, confidence)
        positives = {first: sum(option in s for s in a_sets), second: sum(option in s for s in b_sets)}
        counts = Counts.of([int(option in s) for s in a_sets], [int(option in s) for s in b_sets])
        per_option.append(OptionAgreement(option, kappa, percent, positives, counts))
    # Pooled: one yes/no decision per (unit, option); the bootstrap resamples whole units.
    a_flat = [int(o in s) for s in a_sets for o in options]
    b_flat = [int(o in s) for s in b_sets for o in options]
    groups = np.repeat(np.arange(len(units)), len(options))
    identical = sum(x == y for x, y in zip(a_sets, b_sets, strict=True))
    pooled_kappa = _binary_kappa(
        a_flat, b_flat, len(units), identical, resamples=resamples, seed=seed, confidence=confidence, groups=groups
    )
    return PairAgreement(
        raters=(first, second),
        units=len(units),
        exact_set_percent=percent_agreement(a_sets, b_sets),
        pooled_kappa=pooled_kappa,
        pooled_percent=percent_agreement(a_flat, b_flat),
        per_option=per_option,
        pooled_counts=Counts.of(a_flat, b_flat),
        skipped=skipped_by_pair(ratings, skips or {}, first, second),
    )


def _binary_counts(units, ratings, option) -> np.ndarray:
    """units x [no, yes] rating counts for one option."""
    return np.array(
        [
            [sum(option not in s for s in ratings[u].values()), sum(option in s for s in ratings[u].values())]
            for u in units
        ]
    )


def _group_option(units, raters, ratings, options, resamples, seed, confidence, equal_m):
    """Alpha (library point, vectorised bootstrap) and Fleiss over the given options pooled."""
    matrix = [[(o in ratings[u][r]) if r in ratings[u] else None for u in units for o in options] for r in raters]
    alpha = krippendorff_alpha(matrix)
    counts = np.vstack([_binary_counts(units, ratings, o) for o in options])
    # Rows are ordered option-major; map each back to its unit for the bootstrap.
    groups = np.tile(np.arange(len(units)), len(options))
    # Jobs every rater answered alike on these options.
    unanimous = sum(len({frozenset(s & set(options)) for s in ratings[u].values()}) == 1 for u in units)
    bootstrap = {
        "agreed": unanimous,
        "resamples": resamples,
        "seed": seed,
        "confidence": confidence,
        "groups": groups,
        "too_many_undefined": rarer_value_reason(int(counts[:, 1].sum()), int(counts[:, 0].sum())),
    }
    alpha_estimate = _estimate(
        alpha,
        len(units),
        lambda: coincidence_contributions(counts),
        lambda o: alpha_from_coincidences(o, 2),
        **bootstrap,
    )
    fleiss_estimate = None
    if equal_m:
        fleiss_estimate = _estimate(
            fleiss_kappa(counts),
            len(units),
            lambda: fleiss_contributions(counts),
            lambda s: fleiss_from_sums(s, 2),
            **bootstrap,
        )
    return alpha_estimate, fleiss_estimate


def agreement_report(
    ratings: Ratings,
    options: list[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    skips: Skips | None = None,
) -> AgreementReport:
    """Everything the agreement page shows, from each rater's chosen options per unit. A rater who
    skipped a unit (`skips`) has no rating there: the unit is left out of their pairs, and out of the
    all-raters figures when fewer than two ratings are left; the report counts both."""
    skips = {u: who for u, who in (skips or {}).items() if who}
    raters = sorted({r for by_rater in ratings.values() for r in by_rater})
    double = [u for u in ratings if len(ratings[u]) >= 2]
    report = AgreementReport(
        options=list(options),
        raters=raters,
        units_rated=len(ratings),
        units_double_rated=len(double),
        units_skipped=len(skips),
    )
    for first, second in itertools.combinations(raters, 2):
        if any(first in ratings[u] and second in ratings[u] for u in double):
            report.pairs.append(
                pair_agreement(
                    ratings, first, second, options, resamples=resamples, seed=seed, confidence=confidence, skips=skips
                )
            )
    report.disagreements = [
        Disagreement(u, dict(sorted(ratings[u].items()))) for u in double if len(set(ratings[u].values())) > 1
    ]
    if double:
        report.exact_set_percent = 1 - len(report.disagreements) / len(double)
    # Alpha (and Fleiss) for two raters too: alpha corrects kappa's reliance on each rater's own
    # marginals, and readers of a two-rater study ask for it beside kappa.
    if len(raters) >= 2 and double:
        equal_m = len({len(ratings[u]) for u in double}) == 1
        pooled_alpha, pooled_fleiss = _group_option(
            double, raters, ratings, options, resamples, seed, confidence, equal_m
        )
        per_option = []
        for option in options:
            alpha, fleiss = _group_option(double, raters, ratings, [option], resamples, seed, confidence, equal_m)
            agreeing = sum(len({option in s for s in ratings[u].values()}) == 1 for u in double)
            per_option.append((option, alpha, fleiss, agreeing / len(double)))
        left_out = sum(len(ratings.get(u, {})) < 2 for u in skips)
        report.group = GroupAgreement(raters, len(double), pooled_alpha, pooled_fleiss, per_option, left_out)
    return report


# --- Rules against gold -----------------------------------------------------------------------


@dataclass
class CategoryQuality:
    category: str
    support: int  # gold positives
    predicted: int
    true_positives: int
    false_positives: int
    false_negatives: int
    precision: float | None
    recall: float | None
    f1: float | None
    false_positive_units: list = field(default_factory=list)
    false_negative_units: list = field(default_factory=list)


@dataclass
class QualityReport:
    categories: list[CategoryQuality]
    units: int
    micro: tuple[float | None, float | None, float | None]
    macro: tuple[float | None, float | None, float | None]  # over categories with gold support
    exact_match: float | None
    # Confusion of gold (rows) against rules (columns), jobs counted once per (gold, found) pair;
    # the extra last row/column "none" is a job with no gold category / no finding.
    confusion_labels: list[str] = field(default_factory=list)
    confusion: list[list[int]] = field(default_factory=list)


def rule_quality(
    gold: dict[Hashable, set[str]], predicted: dict[Hashable, set[str]], categories: list[str]
) -> QualityReport:
    """Per-category precision, recall and F1 (scikit-learn) of `predicted` against `gold`; a unit
    missing from `predicted` found nothing. Undefined ratios (no prediction, no gold) are None."""
    from sklearn.metrics import precision_recall_fscore_support

    units = sorted(gold, key=str)
    y_true = np.array([[c in gold[u] for c in categories] for u in units], dtype=int).reshape(
        len(units), len(categories)
    )
    y_pred = np.array([[c in predicted.get(u, ()) for c in categories] for u in units], dtype=int).reshape(
        len(units), len(categories)
    )
    rows = []
    if units:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            precision, recall, f1, _ = precision_recall_fscore_support(
                y_true, y_pred, average=None, labels=list(range(len(categories))), zero_division=np.nan
            )
    else:
        precision = recall = f1 = [np.nan] * len(categories)
    for i, category in enumerate(categories):
        t, p = y_true[:, i].astype(bool), y_pred[:, i].astype(bool)
        rows.append(
            CategoryQuality(
                category=category,
                support=int(t.sum()),
                predicted=int(p.sum()),
                true_positives=int((t & p).sum()),
                false_positives=int((~t & p).sum()),
                false_negatives=int((t & ~p).sum()),
                precision=_clean(precision[i]),
                recall=_clean(recall[i]),
                f1=_clean(f1[i]) if t.sum() or p.sum() else None,
                false_positive_units=[u for u, x in zip(units, ~t & p, strict=True) if x],
                false_negative_units=[u for u, x in zip(units, t & ~p, strict=True) if x],
            )
        )
    tp = sum(r.true_positives for r in rows)
    fp = sum(r.false_positives for r in rows)
    fn = sum(r.false_negatives for r in rows)
    micro_p = tp / (tp + fp) if tp + fp else None
    micro_r = tp / (tp + fn) if tp + fn else None
    micro_f = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    supported = [r for r in rows if r.support]

    def mean(values):
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else None

    labels = [*categories, "none"]
    index = {c: i for i, c in enumerate(labels)}
    confusion = [[0] * len(labels) for _ in labels]
    for u in units:
        g = [c for c in categories if c in gold[u]] or ["none"]
        f = [c for c in categories if c in predicted.get(u, ())] or ["none"]
        for gc in g:
            for fc in f:
                confusion[index[gc]][index[fc]] += 1
    exact = sum(set(gold[u]) & set(categories) == set(predicted.get(u, ())) & set(categories) for u in units)
    return QualityReport(
        categories=rows,
        units=len(units),
        micro=(micro_p, micro_r, micro_f),
        macro=(mean(r.precision for r in supported), mean(r.recall for r in supported), mean(r.f1 for r in supported)),
        exact_match=exact / len(units) if units else None,
        confusion_labels=labels,
        confusion=confusion,
    )
