"""What the people who run a job say of the causes the rules found in it.

Job owners know things the series does not: a notebook left open on purpose, a benchmark of the
data loader, a cause that is plainly not theirs. Their verdicts are kept per (job, cause, person)
and added up per cause, so operators see which rules the fleet disputes before tuning them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count

from fleet import audit
from triage.models import Feedback, Finding
from triage.taxonomy import Category

Verdict = Feedback.Verdict


def found_categories(job) -> dict[str, Finding]:
    """The causes the job's current triage found, by category: the ones its people may judge."""
    findings = Finding.objects.filter(job=job, result__is_current=True).select_related("rule_set")
    return {finding.category: finding for finding in findings}


def give(user, finding: Finding, verdict: str, comment: str = "") -> Feedback:
    """Record (or change) the user's verdict on the cause of one of the job's current findings (of
    `found_categories`: a verdict on a cause the rules did not find means nothing here), with the
    rule-set version that found it."""
    feedback, _ = Feedback.objects.update_or_create(
        job_id=finding.job_id,
        category=finding.category,
        user=user,
        defaults={"verdict": verdict, "comment": comment.strip(), "rule_set": finding.rule_set},
    )
    return feedback


def withdraw(user, job, category: str) -> bool:
    """Take back the user's verdict on the cause; whether there was one."""
    deleted, _ = Feedback.objects.filter(job=job, category=category, user=user).delete()
    return bool(deleted)


def remove(operator, given: Feedback) -> None:
    """An operator takes down someone's answer (an abusive or mistaken reason, a departed
    account's verdict); the audit log keeps what it said and whose it was."""
    details, label = audited(given), str(given)
    given.delete()
    audit.record(operator, "feedback.remove", label, details)


def audited(given: Feedback) -> dict:
    """What the audit log keeps of an answer taken down (here or in the admin)."""
    return {
        "job": given.job_id,
        "category": given.category,
        "author": given.user.get_username(),
        "verdict": given.verdict,
        "comment": given.comment,
    }


@dataclass
class JobFeedback:
    """The verdicts given on one cause of one job: the viewer's own, and everyone else's."""

    mine: Feedback | None = None
    others: list[Feedback] = field(default_factory=list)


def for_job(job, user) -> dict[str, JobFeedback]:
    """Every verdict on the job's causes, by category, the viewer's own apart (one query)."""
    by_category: dict[str, JobFeedback] = {}
    for feedback in Feedback.objects.filter(job=job).select_related("user").order_by("updated_at"):
        entry = by_category.setdefault(feedback.category, JobFeedback())
        if feedback.user_id == user.pk:
            entry.mine = feedback
        else:
            entry.others.append(feedback)
    return by_category


@dataclass
class Tally:
    """How the verdicts on one cause add up."""

    right: int = 0
    wrong: int = 0
    expected: int = 0

    @property
    def total(self) -> int:
        return self.right + self.wrong + self.expected

    @property
    def disputed_share(self) -> float | None:
        """The share of the verdicts on whether it is the cause that say it is not (intended runs
        left out: they confirm what happened and say only that nobody minds)."""
        judged = self.right + self.wrong
        return self.wrong / judged if judged else None

    @property
    def set_aside(self) -> bool:
        """Answered wrong or intended, and right by nobody: a change its people turned down."""
        return bool(self.total) and not self.right

    @property
    def text(self) -> str:
        """ "2 wrong, 1 right" as the jobs CSV says it: the verdicts given, in a fixed order."""
        counts = (("right", self.right), ("wrong", self.wrong), ("intended", self.expected))
        return ", ".join(f"{count} {word}" for word, count in counts if count)


# The answers as a filter names them: "answered wrong".
ANSWER_CHOICES = [
    (Verdict.RIGHT.value, "Answered right"),
    (Verdict.WRONG.value, "Answered wrong"),
    (Verdict.EXPECTED.value, "Answered intended"),
]  # plain values: the OpenAPI schema reads their type off them


def answered(jobs, verdict: str, category: str | None = None):
    """The jobs of `jobs` on which someone gave this verdict (on this cause, when one is named)."""
    given = Feedback.objects.filter(verdict=verdict, **({"category": category} if category else {}))
    return jobs.filter(pk__in=given.values("job_id"))


def disputed(jobs):
    """The jobs of `jobs` where someone answered that a cause the rules found is wrong."""
    return answered(jobs, Verdict.WRONG)


def tally_by_category(jobs) -> dict[Category, Tally]:
    """The verdicts given on the jobs of the queryset `jobs` (the viewer's scope), by cause."""
    return tally(Feedback.objects.filter(job__in=jobs))


def tally(given) -> dict[Category, Tally]:
    """A queryset of answers added up by cause."""
    return {category: counted for (category,), counted in _added_up(given).items()}


def set_aside_causes(jobs) -> set[tuple[int, str]]:
    """(job id, category) of the causes of the jobs of `jobs` their answers set aside (one query)."""
    answers = _added_up(Feedback.objects.filter(job__in=jobs), "job_id")
    return {(job_id, category.value) for (job_id, category), counted in answers.items() if counted.set_aside}


def set_aside_jobs_by_cause(jobs) -> dict[Category, int]:
    """Per cause, how many jobs of `jobs` have it among their current findings and set aside by
    their answers (two queries): what a team's page counts against the change it would suggest."""
    aside = set_aside_causes(jobs)
    if not aside:
        return {}
    found = Finding.objects.filter(result__is_current=True, job__in=jobs, category__in={c for _, c in aside})
    counts: dict[Category, int] = {}
    for job_id, category in found.values_list("job_id", "category").distinct():
        if (job_id, category) in aside:
            counts[Category(category)] = counts.get(Category(category), 0) + 1
    return counts


def summaries(job_ids) -> dict[int, str]:
    """Per job, its answers in a line ("data_exchange: 1 intended; model_checkpointing: 1 right,
    2 wrong"), causes in a fixed order, in one query: the jobs CSV's `answers`."""
    lines: dict[int, list[str]] = {}
    for (job_id, category), counted in sorted(_added_up(Feedback.objects.filter(job_id__in=job_ids), "job_id").items()):
        lines.setdefault(job_id, []).append(f"{category.value}: {counted.text}")
    return {job_id: "; ".join(parts) for job_id, parts in lines.items()}


def _added_up(given, *by: str) -> dict[tuple, Tally]:
    """A queryset of answers added up per the fields `by` and cause: {(*values of by, cause): Tally}."""
    tallies: dict[tuple, Tally] = {}
    rows = given.order_by().values_list(*by, "category", "verdict").annotate(n=Count("pk"))
    for *key, category, verdict, count in rows:
        if category not in Category.values or verdict not in Verdict.values:
            continue  # a category or verdict retired since
        setattr(tallies.setdefault((*key, Category(category)), Tally()), verdict, count)
    return tallies


def recent(jobs, category: str, limit: int = 20) -> list[Feedback]:
    """The newest verdicts on one cause over the jobs of `jobs`, with their job and author."""
    chosen = Feedback.objects.filter(job__in=jobs, category=category).select_related("job__cluster", "user")
    return list(chosen.order_by("-updated_at")[:limit])
