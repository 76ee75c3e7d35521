"""Per-category precision and recall of triage against a demo fleet's ground truth. Pure Python.

The truth file (`<archive>.truth.json`) is read here only, to score; no rule ever reads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from triage.taxonomy import Category


@dataclass(frozen=True)
class CategoryScore:
    category: Category
    true_positives: int
    false_positives: int
    false_negatives: int

    # None where nothing was found (precision) or planted (recall): a score of nothing is not 1.00,
    # and must not pass a bar it was never measured against (the labeling pages show "–" alike).
    @property
    def precision(self) -> float | None:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else None

    @property
    def recall(self) -> float | None:
        planted = self.true_positives + self.false_negatives
        return self.true_positives / planted if planted else None

    @property
    def lowest(self) -> float | None:
        """The lower of precision and recall, of those measured."""
        measured = [value for value in (self.precision, self.recall) if value is not None]
        return min(measured) if measured else None


def load_truth(path: str | Path) -> dict[tuple[str, str], set[str]]:
    """{(cluster, job id): planted category values}."""
    data = json.loads(Path(path).read_text())
    return {(job["cluster"], job["job_id"]): set(job["categories"]) for job in data["jobs"]}


def score(predicted: dict[tuple[str, str], set[str]], truth: dict[tuple[str, str], set[str]]) -> list[CategoryScore]:
    """Scores over every job of the truth file; a job missing from `predicted` found nothing."""
    scores = []
    for category in Category:
        tp = fp = fn = 0
        for key, planted in truth.items():
            found = category.value in predicted.get(key, set())
            wanted = category.value in planted
            tp += found and wanted
            fp += found and not wanted
            fn += wanted and not found
        scores.append(CategoryScore(category, tp, fp, fn))
    return scores


def format_table(scores: list[CategoryScore]) -> str:
    row = "{:26s} {:>7} {:>5} {:>4} {:>4} {:>4} {:>9} {:>6}"
    lines = [row.format("category", "planted", "found", "TP", "FP", "FN", "precision", "recall")]
    for s in scores:
        planted, found = s.true_positives + s.false_negatives, s.true_positives + s.false_positives
        lines.append(
            row.format(
                s.category.value,
                planted,
                found,
                s.true_positives,
                s.false_positives,
                s.false_negatives,
                _score_text(s.precision),
                _score_text(s.recall),
            )
        )
    return "\n".join(lines)


def _score_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
