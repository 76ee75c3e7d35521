"""Drawing a study's job sample and sharing it among raters. Pure Python: no Django.

Every draw is reproducible from (candidates, strategy, size, seed): candidates are sorted by id
before any random choice, and the record returned with the sample says how it was drawn.
"""

from __future__ import annotations

import enum
import itertools
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field


class Strategy(enum.StrEnum):
    RANDOM = "random"
    BY_TEAM = "stratified_team"
    BY_CLUSTER = "stratified_cluster"
    ALL = "all"


STRATEGY_LABELS = {
    Strategy.RANDOM: "Simple random sample",
    Strategy.BY_TEAM: "Stratified by team (proportional)",
    Strategy.BY_CLUSTER: "Stratified by cluster (proportional)",
    Strategy.ALL: "Every job of the population (e.g. all low-utilization jobs in a period)",
}


@dataclass(frozen=True)
class Candidate:
    """A job that may be drawn: its id and the strata it belongs to."""

    id: int
    team: str = ""
    cluster: str = ""


@dataclass
class Sample:
    items: list[tuple[int, str]]  # (job id, stratum) in labeling order
    record: dict = field(default_factory=dict)

    @property
    def ids(self) -> list[int]:
        return [job_id for job_id, _ in self.items]


def draw_sample(candidates: list[Candidate], strategy: Strategy | str, size: int | None, seed: int) -> Sample:
    """Draw `size` jobs (all of them for Strategy.ALL or when size is None or exceeds the population)."""
    strategy = Strategy(strategy)
    population = sorted(candidates, key=lambda c: c.id)
    rng = random.Random(seed)
    wanted = len(population) if size is None or strategy is Strategy.ALL else min(size, len(population))
    strata_counts: dict[str, int] = {}
    if strategy in (Strategy.RANDOM, Strategy.ALL):
        chosen = rng.sample(population, wanted) if wanted < len(population) else list(population)
        items = [(c.id, "") for c in chosen]
    else:
        key = (lambda c: c.team) if strategy is Strategy.BY_TEAM else (lambda c: c.cluster)
        strata: dict[str, list[Candidate]] = defaultdict(list)
        for candidate in population:
            strata[key(candidate)].append(candidate)
        allocation = proportional_allocation({name: len(members) for name, members in strata.items()}, wanted)
        items = []
        for name in sorted(strata):
            members = strata[name]
            take = allocation[name]
            chosen = rng.sample(members, take) if take < len(members) else list(members)
            items.extend((c.id, name) for c in chosen)
            strata_counts[name] = take
        # Interleave strata so a rater who stops early has seen every stratum.
        rng.shuffle(items)
    if strategy is Strategy.ALL:
        items.sort()
    record = {
        "strategy": strategy.value,
        "seed": seed,
        "requested_size": size,
        "population": len(population),
        "drawn": len(items),
    }
    if strata_counts:
        record["strata"] = strata_counts
    return Sample(items=items, record=record)


def proportional_allocation(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Share `total` among strata in proportion to their sizes (largest remainder), never more than a
    stratum holds. Ties are broken by name so the allocation is deterministic."""
    total = min(total, sum(sizes.values()))
    allocation = dict.fromkeys(sizes, 0)
    remaining = total
    open_strata = {name for name, n in sizes.items() if n > 0}
    while remaining > 0 and open_strata:
        weight = sum(sizes[name] - allocation[name] for name in open_strata)
        quotas = {name: remaining * (sizes[name] - allocation[name]) / weight for name in open_strata}
        granted = 0
        for name in sorted(open_strata):
            extra = min(int(quotas[name]), sizes[name] - allocation[name])
            allocation[name] += extra
            granted += extra
        remaining -= granted
        if remaining > 0:
            by_remainder = sorted(open_strata, key=lambda n: (-(quotas[n] - int(quotas[n])), n))
            for name in by_remainder:
                if remaining == 0:
                    break
                if allocation[name] < sizes[name]:
                    allocation[name] += 1
                    remaining -= 1
        open_strata = {name for name in open_strata if allocation[name] < sizes[name]}
    return allocation


def assign_raters(job_count: int, raters: list[str], per_job: int, seed: int) -> list[list[str]]:
    """Which raters label each job: `per_job` distinct raters each, the load balanced (no rater has
    more than one job more than another) and every pair of raters meeting on some jobs.

    Greedy over a seeded order of the raters: each job takes raters with the fewest jobs so far,
    preferring among them those who have met the ones already chosen least often. A pair that never
    meets has no Cohen's kappa; the fixed rotation used before kept two of four raters' six pairs
    (labelling two per job) apart for good."""
    if per_job < 2:
        raise ValueError("each job needs at least two raters")
    if len(raters) < per_job:
        raise ValueError(f"{per_job} labels per job need at least {per_job} raters")
    order = sorted(raters)
    random.Random(seed).shuffle(order)
    rank = {rater: i for i, rater in enumerate(order)}
    load: Counter[str] = Counter()
    met: Counter[frozenset[str]] = Counter()
    plan = []
    for _ in range(job_count):
        chosen: list[str] = []
        for _ in range(per_job):
            free = [r for r in order if r not in chosen]
            if chosen:
                pick = min(free, key=lambda r: (load[r], sum(met[frozenset((r, c))] for c in chosen), rank[r]))
            else:
                # The first of a job: the least-loaded rater with the least-met partner among the
                # least-loaded, so that the pairs a round leaves over are not always the same ones.
                fewest = min(load[r] for r in free)
                peers = [r for r in free if load[r] == fewest]
                pick = min(
                    peers,
                    key=lambda r: (min((met[frozenset((r, c))] for c in peers if c != r), default=0), rank[r]),
                )
            chosen.append(pick)
        load.update(chosen)
        met.update(frozenset(pair) for pair in itertools.combinations(chosen, 2))
        plan.append(chosen)
    return plan
