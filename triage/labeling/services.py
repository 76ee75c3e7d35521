"""Labeling studies as plain functions that the views, the commands and the tests all call."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Max, Q
from django.http import Http404
from django.utils import timezone

from fleet.access import OPERATORS_GROUP, RESEARCHERS_GROUP, is_operator, is_researcher
from fleet.models import Job
from triage import feedback
from triage.labeling import agreement, sampling
from triage.labeling.models import (
    NONE_OF_THESE,
    OPTION_LABELS,
    OPTIONS,
    OTHER,
    RATIONALE_MAX_CHARS,
    Adjudication,
    Assignment,
    GoldItem,
    GoldSet,
    Label,
    Study,
    StudyJob,
    StudyRater,
)
from triage.models import Finding, JobTriage, RuleSet, TriageStatus
from triage.taxonomy import Category

CATEGORIES = [c.value for c in Category]


class LabelingError(ValueError):
    """A request that breaks a rule of the study (shown to the user as is); `field`, the form field it
    is about, when one is (the page puts the cursor there)."""

    def __init__(self, message: str = "", field: str = ""):
        super().__init__(message)
        self.field = field


# --- Who may do what ---------------------------------------------------------------------------


def may_use_studies(user) -> bool:
    return is_researcher(user) or is_operator(user)


def eligible_raters():
    """Researchers and operators: the people who may label."""
    return label_authors().filter(is_active=True)


def label_authors():
    """Researchers and operators, deactivated accounts included: whose labels a study may hold (someone
    who has left still made the labels an export carries)."""
    return (
        get_user_model()
        .objects.filter(groups__name__in=[RESEARCHERS_GROUP, OPERATORS_GROUP])
        .distinct()
        .order_by("username")
    )


def visible_studies(user):
    """Operators see every study; a researcher sees the studies they lead or rate; others none."""
    if is_operator(user):
        return Study.objects.all()
    if is_researcher(user):
        return Study.objects.filter(Q(created_by=user) | Q(rater_links__user=user)).distinct()
    return Study.objects.none()


def get_study(user, pk: int) -> Study:
    """The study if this user may see it; to anyone else it does not exist."""
    study = visible_studies(user).select_related("created_by").filter(pk=pk).first()
    if study is None:
        raise Http404("No such study")
    return study


def is_lead(user, study: Study) -> bool:
    return study.created_by_id == user.pk or is_operator(user)


def rater_link(user, study: Study) -> StudyRater | None:
    return StudyRater.objects.filter(study=study, user=user).first()


def sees_all_labels(user, study: Study) -> bool:
    """Everyone's labels: the lead, and raters who have submitted theirs. A rater who has not yet
    submitted never sees anyone else's labels, even when they lead the study. "Everyone's" means
    every *final* answer (`final_answers`): no one sees labels their rater can still change."""
    link = rater_link(user, study)
    if link is not None and link.submitted_at is None:
        return False
    return is_lead(user, study) or link is not None


def final_answers(study: Study):
    """Saved answers of raters who have submitted: the only answers anyone but their rater sees.

    An answer saved but not submitted can still change. Shown to a rater who has submitted, it would
    let them compare notes before the other has finished (blind labeling no longer blind); counted in
    agreement or gold, it would freeze figures the rater may yet overturn. Imported answers count as
    submitted when the import submits their rater (exchange.import_labels)."""
    submitted = StudyRater.objects.filter(study=study, submitted_at__isnull=False).values("user_id")
    return Assignment.objects.filter(item__study=study, saved_at__isnull=False, rater_id__in=submitted)


def final_skips(study: Study):
    """Skips of raters who have submitted: like `final_answers`, the only skips anyone but their rater
    sees or counts (a skip not yet submitted can still become an answer)."""
    submitted = StudyRater.objects.filter(study=study, submitted_at__isnull=False).values("user_id")
    return Assignment.objects.filter(item__study=study, skipped_at__isnull=False, rater_id__in=submitted)


def skips_shown_to(user, study: Study):
    """The skipped jobs this user may see on the study page: their own, and, once they see everyone's
    labels (`sees_all_labels`), every submitted rater's. A skip shows the job and the reason only:
    never a label, nor the rules' findings."""
    own = Q(rater=user, skipped_at__isnull=False)
    shown = own | Q(pk__in=final_skips(study).values("pk")) if sees_all_labels(user, study) else own
    return (
        Assignment.objects.filter(shown, item__study=study)
        .select_related("item__job__cluster", "rater")
        .order_by("item__position", "rater__username")
    )


def submission_count(study: Study) -> tuple[int, int]:
    """(raters who have submitted, raters) of a study."""
    counts = study.rater_links.aggregate(total=Count("pk"), submitted=Count("submitted_at"))
    return counts["submitted"], counts["total"]


# --- Creating a study -----------------------------------------------------------------------------


def candidate_jobs(
    *,
    period_start: datetime | None,
    period_end: datetime | None,
    low_util_only: bool,
    threshold: float,
    disputed_only: bool = False,
):
    jobs = Job.objects.all()
    if disputed_only:
        jobs = feedback.disputed(jobs)
    if period_start:
        jobs = jobs.filter(start_time__gte=period_start)
    if period_end:
        jobs = jobs.filter(start_time__lt=period_end)
    if low_util_only:
        jobs = jobs.filter(mean_gpu_util__isnull=False, mean_gpu_util__lte=threshold)
    return jobs


@transaction.atomic
def create_study(
    *,
    name: str,
    lead,
    raters: list,
    strategy: str = sampling.Strategy.RANDOM,
    sample_size: int | None = None,
    seed: int,
    labels_per_job: int = 2,
    show_findings: bool = False,
    period_start: datetime | None = None,
    period_end: datetime | None = None,
    low_util_only: bool = True,
    low_util_threshold: float = 50.0,
    disputed_only: bool = False,
    description: str = "",
) -> Study:
    """Draw the sample, record how, and give each job `labels_per_job` raters."""
    raters = sorted(set(raters), key=lambda u: u.username)
    if labels_per_job < 2:
        raise LabelingError("Every job needs at least two labels.")
    if len(raters) < labels_per_job:
        raise LabelingError(f"{labels_per_job} labels per job need at least {labels_per_job} raters.")
    jobs = candidate_jobs(
        period_start=period_start,
        period_end=period_end,
        low_util_only=low_util_only,
        threshold=low_util_threshold,
        disputed_only=disputed_only,
    )
    candidates = [
        sampling.Candidate(id=pk, team=team, cluster=cluster)
        for pk, team, cluster in jobs.values_list("pk", "team__slug", "cluster__name")
    ]
    if not candidates:
        raise LabelingError(
            "No job matches the population (period, utilization filter"
            + (" and disputed jobs only)." if disputed_only else ").")
        )
    sample = sampling.draw_sample(candidates, strategy, sample_size, seed)
    study = Study.objects.create(
        name=name,
        description=description,
        created_by=lead,
        strategy=sampling.Strategy(strategy).value,
        sample_size=sample_size,
        seed=seed,
        period_start=period_start,
        period_end=period_end,
        low_util_only=low_util_only,
        low_util_threshold=low_util_threshold,
        disputed_only=disputed_only,
        labels_per_job=labels_per_job,
        show_findings=show_findings,
        sampling_record=sample.record
        | {
            "period_start": period_start.isoformat() if period_start else None,
            "period_end": period_end.isoformat() if period_end else None,
            "low_util_only": low_util_only,
            "low_util_threshold": low_util_threshold,
            "disputed_only": disputed_only,
        },
    )
    StudyRater.objects.bulk_create([StudyRater(study=study, user=u) for u in raters])
    items = StudyJob.objects.bulk_create(
        [
            StudyJob(study=study, job_id=job_id, position=i + 1, stratum=stratum)
            for i, (job_id, stratum) in enumerate(sample.items)
        ]
    )
    by_name = {u.username: u for u in raters}
    plan = sampling.assign_raters(len(items), list(by_name), labels_per_job, seed)
    Assignment.objects.bulk_create(
        [Assignment(item=item, rater=by_name[name]) for item, names in zip(items, plan, strict=True) for name in names]
    )
    return study


# --- Labeling ------------------------------------------------------------------------------------


def assignments_of(study: Study, user):
    return Assignment.objects.filter(item__study=study, rater=user).select_related("item", "item__job")


DONE = Q(saved_at__isnull=False) | Q(skipped_at__isnull=False)  # an assignment labelled or skipped


def progress(study: Study, user) -> tuple[int, int]:
    """(jobs the rater has labelled or skipped, jobs given to them): a skipped job is off their queue."""
    counts = assignments_of(study, user).aggregate(total=Count("pk"), done=Count("pk", filter=DONE))
    return counts["done"], counts["total"]


def skipped_count(study: Study, user) -> int:
    return assignments_of(study, user).filter(skipped_at__isnull=False).count()


def next_assignment(study: Study, user, after_position: int = 0) -> Assignment | None:
    """The rater's next job neither saved nor skipped after `after_position`, wrapping round to the first."""
    todo = assignments_of(study, user).exclude(DONE).order_by("item__position")
    return todo.filter(item__position__gt=after_position).first() or todo.first()


def neighbours(study: Study, user, position: int) -> tuple[Assignment | None, Assignment | None]:
    mine = assignments_of(study, user).order_by("item__position")
    previous = mine.filter(item__position__lt=position).order_by("-item__position").first()
    following = mine.filter(item__position__gt=position).first()
    return previous, following


def clean_answer(chosen: dict[str, str], other_note: str) -> dict[str, str]:
    unknown = set(chosen) - set(OPTIONS)
    if unknown:
        raise LabelingError(f"Unknown options: {', '.join(sorted(unknown))}.")
    if not chosen:
        raise LabelingError('Choose at least one category, or "none of these".')
    if NONE_OF_THESE in chosen and len(chosen) > 1:
        raise LabelingError('"None of these" cannot be combined with other choices.')
    if OTHER in chosen and not other_note.strip():
        raise LabelingError('Say what "other" is in its note.', field="other_note")
    cleaned = {option: (rationale or "").strip() for option, rationale in chosen.items()}
    for option, text in [*cleaned.items(), *([("other_note", other_note.strip())] if OTHER in chosen else [])]:
        if len(text) > RATIONALE_MAX_CHARS:  # the page's maxlength stops a browser; this, anything else
            field = option if option == "other_note" else f"rationale-{option}"
            raise LabelingError(
                f"A rationale is at most {RATIONALE_MAX_CHARS:,} characters (this one has {len(text):,}).", field=field
            )
    return cleaned


class ChangedWhileOpen(LabelingError):
    """What a form was opened on changed before it came back (its `seen` no longer the stored version):
    the save is refused, and the page shows `current`, the newer row, with the user's input kept, and
    sends `version` as its `seen` so that saving again, knowingly, replaces it."""

    def __init__(self, message: str, current, version: str):
        super().__init__(message)
        self.current, self.version = current, version


def answer_version(assignment: Assignment) -> str:
    """Which answer of a rater to a job a labeling page shows ("" for none yet): its form sends it back
    as `seen`, as the adjudication page does its `gold_version`, so that a save over an answer stored
    since (the same rater in another tab, a stale page, an import) is refused (`save_answer`)."""
    stored = assignment.saved_at or assignment.skipped_at
    return stored.isoformat() if stored else ""


class AnswerChanged(ChangedWhileOpen):
    """The rater's answer to the job was saved, skipped or imported after the labeling page was opened."""

    def __init__(self, current: Assignment):
        if current.skipped_at:
            what = f"skipped ({current.get_skip_reason_display()})"
        else:
            what = ", ".join(OPTION_LABELS.get(label.option, label.option) for label in current.labels.all())
        super().__init__(
            f"Your answer to this job changed after this page was opened: {what}. Yours is not saved: it is "
            "still in the form; save again to keep yours, or take the saved one.",
            current,
            answer_version(current),
        )


@transaction.atomic
def save_answer(
    assignment: Assignment,
    chosen: dict[str, str],
    other_note: str = "",
    *,
    source=Assignment.Source.WEB,
    seen: str | None = None,
) -> Assignment:
    """Store a rater's options (option -> rationale) for one job, replacing what they had saved; the
    answer's source is where this one came from (an imported answer changed on the page is the page's).
    `seen`: the `answer_version` the labeling page showed; an answer stored since is not replaced unseen
    (AnswerChanged), unless this one is the same answer."""
    link = StudyRater.objects.select_for_update().get(study_id=assignment.item.study_id, user_id=assignment.rater_id)
    if link.submitted_at is not None and source != Assignment.Source.IMPORT:
        raise LabelingError("Your labels for this study are submitted and can no longer change.")
    chosen = clean_answer(chosen, other_note)
    if seen is not None:
        _refuse_if_changed(assignment, seen, chosen, other_note.strip() if OTHER in chosen else "")
    assignment.labels.all().delete()
    Label.objects.bulk_create([Label(assignment=assignment, option=o, rationale=r) for o, r in sorted(chosen.items())])
    assignment.other_note = other_note.strip() if OTHER in chosen else ""
    assignment.saved_at = timezone.now()
    assignment.source = source
    assignment.skipped_at, assignment.skip_reason, assignment.skip_note = None, "", ""  # an answer replaces a skip
    assignment.save(update_fields=["other_note", "saved_at", "source", "skipped_at", "skip_reason", "skip_note"])
    return assignment


def _refuse_if_changed(
    assignment: Assignment,
    seen: str,
    chosen: dict[str, str] | None = None,
    other_note: str = "",
    skip: tuple[str, str] | None = None,
) -> None:
    """AnswerChanged when the stored answer (read again under the caller's lock) is not the one the
    page showed: the answer `chosen` (with `other_note`) or the `skip` (reason, note) it sends would
    replace one the rater has not seen. The same answer sent twice (a second tab saying what the first
    did) is no conflict."""
    current = Assignment.objects.prefetch_related("labels").get(pk=assignment.pk)
    current.item = assignment.item  # the same job, already read with its cluster and team
    if answer_version(current) == seen:
        return
    if skip is not None:
        same = current.skipped_at is not None and (current.skip_reason, current.skip_note) == skip
    else:
        stored = {label.option: label.rationale for label in current.labels.all()}
        same = current.saved_at is not None and stored == chosen and current.other_note == other_note
    if not same:
        raise AnswerChanged(current)


SKIP_NOTE_MAX = Assignment._meta.get_field("skip_note").max_length


def clean_skip(reason: str, note: str) -> tuple[str, str]:
    """A skip's reason (one of Assignment.SkipReason) and note; "other" needs the note."""
    note = (note or "").strip()
    if reason not in Assignment.SkipReason.values:
        if not reason:
            raise LabelingError("Reason to skip: choose why you cannot judge this job.")
        choices = ", ".join(Assignment.SkipReason.values)
        raise LabelingError(f"Reason to skip: {reason[:40]!r} is not one of {choices}.")
    if reason == Assignment.SkipReason.OTHER and not note:
        raise LabelingError('Why: say why you skip this job (the reason is "other").')
    if len(note) > SKIP_NOTE_MAX:
        raise LabelingError(f"Why: at most {SKIP_NOTE_MAX} characters ({len(note)} given).")
    return reason, note


@transaction.atomic
def skip_job(
    assignment: Assignment, reason: str, note: str = "", *, source=Assignment.Source.WEB, seen: str | None = None
) -> Assignment:
    """The rater cannot judge this job: no labels (any saved answer is dropped), the reason kept, and
    the job leaves their queue. Agreement leaves the job out of their pairs (`collect_skips`). `seen`,
    as for `save_answer`: a skip does not drop, unseen, an answer saved since the page was opened."""
    link = StudyRater.objects.select_for_update().get(study_id=assignment.item.study_id, user_id=assignment.rater_id)
    if link.submitted_at is not None and source != Assignment.Source.IMPORT:
        raise LabelingError("Your labels for this study are submitted and can no longer change.")
    reason, note = clean_skip(reason, note)
    if seen is not None:
        _refuse_if_changed(assignment, seen, skip=(reason, note))
    assignment.labels.all().delete()
    assignment.other_note, assignment.saved_at = "", None
    assignment.skipped_at, assignment.skip_reason, assignment.skip_note = timezone.now(), reason, note
    assignment.source = source
    assignment.save(update_fields=["other_note", "saved_at", "skipped_at", "skip_reason", "skip_note", "source"])
    return assignment


def submit(study: Study, user) -> StudyRater:
    """Make a rater's labels final; needs every assigned job labelled."""
    link = rater_link(user, study)
    if link is None:
        raise LabelingError("You are not a rater of this study.")
    done, total = progress(study, user)
    if done < total:
        raise LabelingError(f"Label (or skip) all your jobs first ({done} of {total} done).")
    StudyRater.objects.filter(pk=link.pk, submitted_at__isnull=True).update(submitted_at=timezone.now())
    link.refresh_from_db()
    return link


# --- Agreement -----------------------------------------------------------------------------------


def collect_ratings(study: Study) -> dict[int, dict[str, frozenset[str]]]:
    """{study job id: {rater username: chosen options}} over final answers (`final_answers`)."""
    chosen: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    rows = Label.objects.filter(assignment__in=final_answers(study)).values_list(
        "assignment__item_id", "assignment__rater__username", "option"
    )
    for item_id, rater, option in rows:
        chosen[item_id][rater].add(option)
    return {item: {r: frozenset(s) for r, s in by_rater.items()} for item, by_rater in chosen.items()}


def collect_skips(study: Study) -> dict[int, frozenset[str]]:
    """{study job id: usernames of the raters who skipped it} over final skips (`final_skips`)."""
    skipped: dict[int, set[str]] = defaultdict(set)
    for item_id, rater in final_skips(study).values_list("item_id", "rater__username"):
        skipped[item_id].add(rater)
    return {item: frozenset(raters) for item, raters in skipped.items()}


def agreement_report(study: Study, *, resamples: int = agreement.DEFAULT_RESAMPLES) -> agreement.AgreementReport:
    """The study's agreement figures over final answers, skipped jobs left out of the pairs that skipped
    them; cached until a label or skip changes or a rater submits (the bootstrap takes a moment)."""
    stamp = Assignment.objects.filter(item__study=study).aggregate(
        last=Max("saved_at"), n=Count("saved_at"), last_skip=Max("skipped_at"), skips=Count("skipped_at")
    )
    submitted = study.rater_links.aggregate(last=Max("submitted_at"), n=Count("submitted_at"))
    version = f"{stamp['last']}:{stamp['n']}:{stamp['last_skip']}:{stamp['skips']}:{submitted['last']}:{submitted['n']}"
    # v2: reports cached before intervals said why they are missing would show [1.000, 1.000] for an hour;
    # v3: likewise before perfect agreement said it has no disagreement to resample;
    # v4: likewise before skips were counted and a handful of jobs got no interval.
    key = hashlib.sha256(f"labeling-agreement-v4:{study.pk}:{version}:{resamples}".encode()).hexdigest()
    report = cache.get(key)
    if report is None:
        report = agreement.agreement_report(
            collect_ratings(study), OPTIONS, resamples=resamples, seed=study.seed, skips=collect_skips(study)
        )
        cache.set(key, report, 60 * 60)
    return report


# --- Adjudication and gold -----------------------------------------------------------------------


def options_every_rater_chose(answers: list[set[str]]) -> set[str]:
    """The options all of a job's raters chose (given each rater's chosen options): settled before
    adjudication begins. None with fewer than two answers, where no one agreed with anyone."""
    return set.intersection(*answers) if len(answers) >= 2 else set()


class GoldChanged(ChangedWhileOpen):
    """Someone else saved gold labels for the job after the adjudication page was opened."""

    def __init__(self, current: Adjudication):
        labels = ", ".join(OPTION_LABELS.get(o, o) for o in current.options) or "nothing ticked"
        super().__init__(
            f"{current.decided_by} saved gold labels for this job while you had it open: {labels} ({current.note}). "
            "Yours are not saved: they are ticked below; save again to replace theirs.",
            current,
            gold_version(current),
        )


def gold_version(adjudication: Adjudication | None) -> str:
    """Which gold labels of a job an adjudication page shows ("" for none yet): its form sends it back,
    so a save over labels someone saved since is refused (`adjudicate`, `seen`)."""
    return adjudication.decided_at.isoformat() if adjudication else ""


@transaction.atomic
def adjudicate(item: StudyJob, options: list[str], note: str, user, seen: str | None = None) -> Adjudication:
    """Set a job's gold labels. `seen`: the `gold_version` the deciding page showed; the lead and the
    operators may all adjudicate, and one's save must not replace another's unseen (GoldChanged)."""
    clean_answer(dict.fromkeys(options, ""), note)
    if not note.strip():
        raise LabelingError("Say why, in a note.")
    StudyJob.objects.select_for_update().filter(pk=item.pk).first()  # one decision at a time per job
    current = Adjudication.objects.select_related("decided_by").filter(item=item).first()
    if seen is not None and gold_version(current) != seen:
        raise GoldChanged(current)
    adjudication, _ = Adjudication.objects.update_or_create(
        item=item, defaults={"options": sorted(options), "note": note.strip(), "decided_by": user}
    )
    return adjudication


@dataclass
class GoldPlan:
    """What freezing now would give: the gold rows, and the jobs still in the way or left out."""

    rows: list[GoldItem] = field(default_factory=list)
    unresolved: list[StudyJob] = field(default_factory=list)  # disagreements without adjudication
    incomplete: list[StudyJob] = field(default_factory=list)  # fewer than two saved labels
    skipped: list[StudyJob] = field(default_factory=list)  # fewer than two because a rater skipped it


def gold_plan(study: Study) -> GoldPlan:
    ratings = collect_ratings(study)
    plan = GoldPlan()
    skipped = set(final_skips(study).values_list("item_id", flat=True))  # as the ratings, submitted only
    items = study.items.select_related("job", "adjudication")
    for item in items:
        by_rater = ratings.get(item.pk, {})
        adjudication = getattr(item, "adjudication", None)
        if adjudication is not None:
            plan.rows.append(
                GoldItem(
                    job=item.job,
                    options=adjudication.options,
                    resolution=GoldItem.Resolution.ADJUDICATED,
                    note=adjudication.note,
                )
            )
        elif len(by_rater) < 2:
            (plan.skipped if item.pk in skipped else plan.incomplete).append(item)
        elif len(set(by_rater.values())) == 1:
            plan.rows.append(
                GoldItem(
                    job=item.job, options=sorted(next(iter(by_rater.values()))), resolution=GoldItem.Resolution.AGREED
                )
            )
        else:
            plan.unresolved.append(item)
    return plan


@transaction.atomic
def freeze_gold(study: Study, user, note: str = "") -> GoldSet:
    """A new gold-set version from the agreed and adjudicated jobs. Refused while a disagreement is
    unresolved; jobs without two labels yet are left out (and counted on the page)."""
    Study.objects.select_for_update().get(pk=study.pk)  # one freeze at a time per study
    plan = gold_plan(study)
    if plan.unresolved:
        raise LabelingError(f"{len(plan.unresolved)} disagreements still need adjudication.")
    if not plan.rows:
        raise LabelingError("No job has gold labels yet.")
    version = (study.gold_sets.aggregate(v=Max("version"))["v"] or 0) + 1
    gold_set = GoldSet.objects.create(study=study, version=version, note=note[:300], frozen_by=user)
    for row in plan.rows:
        row.gold_set = gold_set
    GoldItem.objects.bulk_create(plan.rows)
    return gold_set


# --- Rules against gold --------------------------------------------------------------------------


def rule_predictions(job_ids: list[int], rule_set: RuleSet) -> tuple[dict[int, set[str]], list[int]]:
    """{job id: categories the rule set found} for the jobs triaged with it, and the ids not triaged.

    A triage that failed (status error) is no verdict of the rules: such a job counts as not triaged,
    left out of the scores (and triaged again by "Triage them"), instead of as a job they missed."""
    triaged = set(
        JobTriage.objects.filter(job_id__in=job_ids, rule_set=rule_set)
        .exclude(status=TriageStatus.ERROR)
        .values_list("job_id", flat=True)
    )
    found: dict[int, set[str]] = {job_id: set() for job_id in triaged}
    for job_id, category in Finding.objects.filter(job_id__in=triaged, rule_set=rule_set).values_list(
        "job_id", "category"
    ):
        found[job_id].add(category)
    return found, sorted(set(job_ids) - triaged)


@dataclass
class RuleEvaluation:
    gold_set: GoldSet
    rule_set: RuleSet
    report: agreement.QualityReport
    not_triaged: list[int]  # gold jobs without a result for this rule set (left out of the scores)
    jobs: dict[int, Job]
    # The revisions of the rules' code that made the scored results (`JobTriage.rules_revision`), lowest
    # first: more than one while beat's sweep has not yet re-triaged every job after an upgrade.
    rules_revisions: list[int]


def evaluate_rules(gold_set: GoldSet, rule_set: RuleSet) -> RuleEvaluation:
    gold = {item.job_id: item.categories for item in gold_set.items.all()}
    predicted, missing = rule_predictions(list(gold), rule_set)
    scored = {job_id: cats for job_id, cats in gold.items() if job_id in predicted}
    report = agreement.rule_quality(scored, predicted, CATEGORIES)
    jobs = Job.objects.filter(pk__in=list(gold)).select_related("cluster", "team").in_bulk()
    revisions = JobTriage.objects.filter(job_id__in=list(predicted), rule_set=rule_set).values_list(
        "rules_revision", flat=True
    )
    return RuleEvaluation(gold_set, rule_set, report, missing, jobs, sorted(set(revisions)))


def triage_missing(job_ids: list[int], rule_set: RuleSet) -> None:
    """Triage gold jobs that have no result for this rule-set version (queued, like any triage)."""
    from triage.services import enqueue_triage

    enqueue_triage(job_ids, rule_set, patient=False)  # from a page: fail at once if the broker is down


def blinded_job_ids(user) -> set[int]:
    """Jobs whose rule findings this user must not see yet: they rate them in a blind study and
    have not submitted. The labeling page hides findings from such a rater; so must every other
    page that shows the same job (job page, timeline shading, triage page, API), or blindness
    would only be a hint."""
    if not user.is_authenticated:
        return set()
    return set(
        Assignment.objects.filter(
            rater=user,
            item__study__show_findings=False,
            item__study__rater_links__user=user,
            item__study__rater_links__submitted_at__isnull=True,
        ).values_list("item__job_id", flat=True)
    )


def findings_hidden_from(user, job) -> bool:
    return job.pk in blinded_job_ids(user)
