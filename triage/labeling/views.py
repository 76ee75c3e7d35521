"""Labeling-study pages. Researchers and operators only: to anyone else a study does not exist."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import Http404, HttpResponse, HttpResponseBadRequest, HttpResponseNotFound
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from config.methods import read_only, with_form
from fleet.forms import MAX_ROW_ID
from fleet.models import Artifact
from fleet.tasking import QueueUnreachable
from triage.dashboard.queries import log_events_page
from triage.labeling import exchange, services
from triage.labeling.agreement import MIN_JOBS_FOR_INTERVAL
from triage.labeling.forms import AdjudicationForm, FreezeForm, ImportForm, StudyForm
from triage.labeling.models import (
    EXTRA_OPTIONS,
    OPTION_LABELS,
    OPTIONS,
    OTHER,
    RATIONALE_MAX_CHARS,
    Assignment,
    StudyJob,
)
from triage.models import Finding, RuleSet
from triage.taxonomy import Category, Dimension

ARTIFACT_VIEW_BYTES = 256 * 1024  # shown per log or script; the rest is cut with a note
ARTIFACTS_SHOWN = 40  # files whose text the labeling page carries; the rest are listed by name
ARTIFACT_PAGE_BYTES = 4 * 2**20  # and this much text in all, however many files
# Keyboard shortcuts for the options, in the order the page lists them (categories by dimension).
OPTION_KEYS = [*"1234567890", *"qwert"]
EXTRA_KEYS = {"none": "n", OTHER: "o"}


class LabelsNotYetShown(Exception):
    """A rater of the study who has not submitted opened a page of everyone's labels (`what` opens)."""

    def __init__(self, study, what: str):
        super().__init__(what)
        self.study = study
        self.what = what


def studies_access(view):
    """Login, then researchers and operators only; anyone else gets a 404."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not services.may_use_studies(request.user):
            raise Http404
        try:
            return view(request, *args, **kwargs)
        except LabelsNotYetShown as hidden:
            return _labels_not_yet_shown(request, hidden.study, hidden.what)

    return wrapped


def _labels_not_yet_shown(request, study, what: str):
    """A 403 that says why and how to go on. Only a rater of the study gets here (anyone else was
    refused by `get_study` with a 404), so it tells them nothing they do not know: the study is theirs.
    A link or a bookmark from a colleague otherwise landed on "Page not found"."""
    done, total = services.progress(study, request.user)
    reason = f"{what} once you submit your labels ({done} of {total} done)."
    if request.resolver_match and request.resolver_match.url_name == "export":
        return HttpResponse(reason + "\n", status=403, content_type="text/plain; charset=utf-8")
    context = {"study": study, "reason": reason, "all_done": done >= total}
    return render(request, "labeling/labels_hidden.html", context, status=403)


def _require_lead(request, study):
    if not services.is_lead(request.user, study):
        raise Http404


def _require_all_labels(request, study, what: str):
    """Pages that show other raters' labels: never to a rater who has not submitted theirs. `what`
    names the page in the refusal: "The agreement opens"."""
    if not services.sees_all_labels(request.user, study):
        raise LabelsNotYetShown(study, what)


def option_groups() -> list[dict]:
    """Categories grouped by dimension, then 'none' and 'other', each with its shortcut key."""
    keys = iter(OPTION_KEYS)
    groups = []
    for dimension in Dimension:
        members = [c for c in Category if c.dimension == dimension]
        groups.append(
            {
                "label": dimension.label,
                "colour": members[0].colour,
                "options": [{"value": c.value, "label": c.label, "key": next(keys)} for c in members],
            }
        )
    groups.append(
        {
            "label": "Outside the taxonomy",
            "colour": "#5d6577",
            "options": [{"value": v, "label": label, "key": EXTRA_KEYS[v]} for v, label in EXTRA_OPTIONS],
        }
    )
    return groups


@studies_access
@read_only
def study_list(request):
    studies = list(services.visible_studies(request.user).select_related("created_by"))
    mine = {a: services.progress(a, request.user) for a in studies}
    rows = [{"study": s, "progress": mine[s], "lead": services.is_lead(request.user, s)} for s in studies]
    return render(request, "labeling/study_list.html", {"rows": rows})


@studies_access
@with_form
def study_create(request):
    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = services.create_study(
                name=data["name"],
                description=data["description"],
                lead=request.user,
                raters=list(data["raters"]),
                strategy=data["strategy"],
                sample_size=data["sample_size"],
                seed=data["seed"],
                labels_per_job=data["labels_per_job"],
                show_findings=data["show_findings"],
                period_start=data["period_start"],
                period_end=data["period_end"],
                low_util_only=data["low_util_only"],
                low_util_threshold=data["low_util_threshold"],
                disputed_only=data["disputed_only"],
            )
        except services.LabelingError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Study created with {study.items.count()} jobs.")
            return redirect("labeling:study", pk=study.pk)
    return render(request, "labeling/study_form.html", {"form": form})


@studies_access
@read_only
def study_detail(request, pk: int):
    study = services.get_study(request.user, pk)
    link = services.rater_link(request.user, study)
    saved, total = services.progress(study, request.user)
    # Where "Review my labels" opens once every job is labelled: the first of the rater's jobs (the
    # next *unlabelled* one, where "Continue labeling" goes, no longer exists then).
    first_mine = services.assignments_of(study, request.user).order_by("item__position").first()
    sees_all = services.sees_all_labels(request.user, study)
    raters = []
    for rater in study.rater_links.select_related("user"):
        done, todo = services.progress(study, rater.user)
        # Another rater's skips count here only where the skip list shows them: once final and seen.
        skips_shown = rater.user_id == request.user.pk or (sees_all and rater.submitted_at is not None)
        raters.append(
            {
                "user": rater.user,
                "saved": done,
                "total": todo,
                "skipped": services.skipped_count(study, rater.user) if skips_shown else 0,
                "submitted_at": rater.submitted_at,
            }
        )
    return render(
        request,
        "labeling/study_detail.html",
        {
            "study": study,
            "link": link,
            "saved": saved,
            "total": total,
            "first_mine": first_mine,
            "raters": raters,
            "is_lead": services.is_lead(request.user, study),
            "sees_all": sees_all,
            "job_count": study.items.count(),
            "gold_sets": study.gold_sets.all(),
            "skipped": services.skipped_count(study, request.user),
            "skips": services.skips_shown_to(request.user, study),
        },
    )


@studies_access
@read_only
def label_next(request, pk: int):
    study = services.get_study(request.user, pk)
    after = _number(request.GET.get("after")) or 0
    assignment = services.next_assignment(study, request.user, after)
    if assignment is None:
        if services.rater_link(request.user, study):
            done = "labelled or skipped" if services.skipped_count(study, request.user) else "labelled"
            messages.info(request, f"Every job you were given is {done}. Submit your labels when you are sure.")
        return redirect("labeling:study", pk=study.pk)
    return redirect("labeling:label", pk=study.pk, item=assignment.item_id)


def _artifact_views(job) -> list[dict]:
    """The job's logs, then its scripts, each with the text the page shows: the first
    ARTIFACT_VIEW_BYTES of each, for the first ARTIFACTS_SHOWN files and ARTIFACT_PAGE_BYTES in all.
    A job can bring a whole repository of scripts; past that budget a file is listed by name only."""
    views = []
    budget = ARTIFACT_PAGE_BYTES
    for artifact in job.artifacts.exclude(kind=Artifact.Kind.TRACE):
        if len(views) >= ARTIFACTS_SHOWN or budget <= 0:
            views.append({"artifact": artifact, "not_shown": True})
            continue
        allowed = min(ARTIFACT_VIEW_BYTES, budget)
        try:
            with default_storage.open(artifact.file.name, "rb") as handle:
                content = handle.read(allowed + 1)
        except OSError:
            views.append({"artifact": artifact, "text": "", "missing": True})
            continue
        budget -= min(len(content), allowed)
        views.append(
            {
                "artifact": artifact,
                "text": content[:allowed].decode("utf-8", errors="replace"),
                "cut": len(content) > allowed,
                "shown_bytes": allowed,
            }
        )
    return views


@studies_access
@with_form
def label_job(request, pk: int, item: int):
    study = services.get_study(request.user, pk)
    assignment = _own_assignment(request, study, item)
    if request.method != "POST":
        return _label_page(request, study, assignment)
    chosen = {o: request.POST.get(f"rationale-{o}", "") for o in request.POST.getlist("option") if o in OPTIONS}
    try:
        services.save_answer(assignment, chosen, request.POST.get("other_note", ""), seen=request.POST.get("seen"))
    except services.AnswerChanged as exc:
        return _label_page(request, study, exc.current, changed=exc)
    except services.LabelingError as exc:
        return _label_page(request, study, assignment, error=str(exc), error_field=exc.field)
    _say_saved(request, study, assignment, moving_on=request.POST.get("then") != "stay")
    if request.POST.get("then") == "stay":
        return redirect("labeling:label", pk=study.pk, item=item)
    return redirect(f"{_url('labeling:label-next', study.pk)}?after={assignment.item.position}")


def _label_page(request, study, assignment, *, error=None, error_field=None, changed=None, skipping=False):
    """The labeling page of one job: the stored answer in the form, or, after a refused save or skip
    (`skipping`) (`error`, or `changed`: an answer stored since the page was opened), what the rater sent."""
    link = services.rater_link(request.user, study)
    job = assignment.item.job
    sent = bool(error or changed)  # show what they ticked and typed, not what was saved
    if sent:
        mine = {o: request.POST.get(f"rationale-{o}", "") for o in request.POST.getlist("option")}
    else:
        mine = {label.option: label.rationale for label in assignment.labels.all()}
    groups = option_groups()
    for group in groups:
        for option in group["options"]:
            option["checked"] = option["value"] in mine
            option["rationale"] = mine.get(option["value"], "")
    saved, total = services.progress(study, request.user)
    skipped = services.skipped_count(study, request.user)
    previous, following = services.neighbours(study, request.user, assignment.item.position)
    findings = []
    if study.show_findings:
        findings = Finding.objects.filter(job=job, result__is_current=True).order_by("-gpu_hours")
    return render(
        request,
        "labeling/label.html",
        {
            "study": study,
            "assignment": assignment,
            "job": job,
            "groups": groups,
            "other_note": request.POST.get("other_note", "") if sent else assignment.other_note,
            "error": error,
            "error_field": error_field,
            "rationale_max": RATIONALE_MAX_CHARS,
            "changed": changed,
            # The version of the stored answer this page shows, sent back with the form (`answer_version`).
            "seen": services.answer_version(assignment),
            "then": request.POST.get("then") if request.POST.get("then") in ("next", "stay") else "next",
            "skipping": skipping,
            "skip_reason": request.POST.get("skip_reason", "") if sent else assignment.skip_reason,
            "skip_note": request.POST.get("skip_note", "") if sent else assignment.skip_note,
            "saved": saved,
            "total": total,
            "skipped": skipped,
            "skip_reasons": Assignment.SkipReason.choices,
            "previous": previous,
            "following": following,
            "locked": link is not None and link.submitted_at is not None,
            "artifacts": _artifact_views(job),
            "shown_files": ARTIFACTS_SHOWN,
            "page_bytes": ARTIFACT_PAGE_BYTES,
            "events": log_events_page(job, request.GET.get("events", "")),
            "findings": findings,
        },
    )


def _own_assignment(request, study, item: int) -> Assignment:
    """The user's own assignment on this job of the study; anyone else's does not exist."""
    if item > MAX_ROW_ID:  # no row has such an id, and SQLite cannot even compare one (OverflowError)
        raise Http404("No such job in this study")
    return get_object_or_404(
        Assignment.objects.select_related("item__job__cluster", "item__job__team"),
        item_id=item,
        item__study=study,
        rater=request.user,
    )


@studies_access
@require_POST
def skip_job(request, pk: int, item: int):
    """A rater who cannot judge this job skips it ("I can't judge this one"): it leaves their queue
    with their reason, and they go on to the next."""
    study = services.get_study(request.user, pk)
    assignment = _own_assignment(request, study, item)
    try:
        services.skip_job(
            assignment,
            request.POST.get("skip_reason", ""),
            request.POST.get("skip_note", ""),
            seen=request.POST.get("seen"),
        )
    except services.AnswerChanged as exc:
        return _label_page(request, study, exc.current, changed=exc, skipping=True)
    except services.LabelingError as exc:  # the page again, with what they ticked and typed
        return _label_page(request, study, assignment, error=f"Not skipped: {exc}", error_field="skip", skipping=True)
    messages.success(
        request,
        format_html(
            'Skipped job #{} ({}): {}. <a href="{}">Change it</a>',
            assignment.item.position,
            assignment.item.job,
            assignment.get_skip_reason_display() + (f" ({assignment.skip_note})" if assignment.skip_note else ""),
            _url("labeling:label", study.pk, assignment.item_id),
        ),
    )
    return redirect(f"{_url('labeling:label-next', study.pk)}?after={assignment.item.position}")


def _say_saved(request, study, assignment, *, moving_on: bool) -> None:
    """What was saved, on the page that follows, and (moving on) the way back to change it: save and
    next moved on at once, and the rater saw nothing to say their answer was kept (nor did Save)."""
    chosen = sorted(assignment.labels.values_list("option", flat=True), key=OPTIONS.index)
    said = format_html(
        "Saved job #{} ({}): {}.",
        assignment.item.position,
        assignment.item.job,
        ", ".join(OPTION_LABELS.get(option, option) for option in chosen),
    )
    if moving_on:
        said = format_html('{} <a href="{}">Change it</a>', said, _url("labeling:label", study.pk, assignment.item_id))
    messages.success(request, said)


def _where_they_differ(labels: dict[str, frozenset[str]], notes: dict[str, str]) -> dict:
    """A disagreement as the lead settles it: the options every rater chose, then each rater's own
    (what not every rater chose), "other" with what its rater said it is. Each rater's whole set, as
    the list showed it, left the lead to find the difference."""
    shared = frozenset.intersection(*labels.values())

    def shown(options, raters):
        said = "; ".join(dict.fromkeys(notes[r] for r in raters if notes.get(r)))
        return [
            {"label": OPTION_LABELS.get(o, o), "note": said if o == OTHER else ""}
            for o in sorted(options, key=OPTIONS.index)
        ]

    return {
        "shared": shown(shared, list(labels)),
        "own": [(rater, shown(options - shared, [rater])) for rater, options in labels.items()],
    }


def _url(name, *args):
    from django.urls import reverse

    return reverse(name, args=args)


@studies_access
@require_POST
def submit_labels(request, pk: int):
    study = services.get_study(request.user, pk)
    try:
        services.submit(study, request.user)
    except services.LabelingError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Your labels are submitted. You can now see the study's agreement.")
    return redirect("labeling:study", pk=study.pk)


@studies_access
@read_only
def agreement_page(request, pk: int):
    study = services.get_study(request.user, pk)
    _require_all_labels(request, study, "The agreement opens")
    report = services.agreement_report(study)
    submitted = services.submission_count(study)
    items = study.items.select_related("job__cluster", "adjudication").in_bulk()
    notes = {  # what each rater who chose "other" said it is
        (item_id, rater): note
        for item_id, rater, note in services.final_answers(study)
        .exclude(other_note="")
        .values_list("item_id", "rater__username", "other_note")
    }
    disagreements = [
        {
            "item": items[d.unit],
            **_where_they_differ(d.labels, {rater: notes.get((d.unit, rater), "") for rater in d.labels}),
            "adjudicated": hasattr(items[d.unit], "adjudication"),
        }
        for d in report.disagreements
    ]
    # A row per option, with each pair's figures beside the pair (its raters name the cards' figures).
    per_category = [
        {"option": option, "cells": [(pair, pair.per_option[i]) for pair in report.pairs]}
        for i, option in enumerate(report.options)
    ]
    return render(
        request,
        "labeling/agreement.html",
        {
            "study": study,
            "report": report,
            "option_labels": OPTION_LABELS,
            "disagreements": disagreements,
            "per_category": per_category,
            # The note on the kappa paradox, under the table, where some category needs it.
            "any_rare": any(cell.low_kappa_from_rarity for row in per_category for _pair, cell in row["cells"]),
            "is_lead": services.is_lead(request.user, study),
            "submitted": submitted,
            "headline": _headline(report),
            "min_jobs": MIN_JOBS_FOR_INTERVAL,
            # Partial figures would change when the others submit: no sentence to quote until then.
            "methods": exchange.methods_sentence(study, report) if submitted[0] == submitted[1] else "",
        },
    )


def _headline(report) -> dict | None:
    """The figure the agreement page opens with, the one a paper quotes: Cohen's kappa of the only pair;
    with more raters, Fleiss' kappa where every job has as many labels, else Krippendorff's alpha."""
    group = report.group
    if group is None:
        return None
    pooled = "pooled over every (job, option) decision"
    if len(group.raters) == 2 and len(report.pairs) == 1:
        (pair,) = report.pairs
        return {
            "name": "Cohen's kappa",
            "estimate": pair.pooled_kappa,
            "scope": f"{pair.raters[0]} and {pair.raters[1]}, {pooled}",
        }
    together = f"All {len(group.raters)} raters together, {pooled}"
    if group.pooled_fleiss is not None and group.pooled_fleiss.value is not None:
        return {"name": "Fleiss' kappa", "estimate": group.pooled_fleiss, "scope": together}
    return {"name": "Krippendorff's alpha", "estimate": group.pooled_alpha, "scope": together}


@studies_access
@with_form
def adjudicate(request, pk: int, item: int):
    study = services.get_study(request.user, pk)
    _require_lead(request, study)
    _require_all_labels(request, study, "Adjudication opens")
    study_job = get_object_or_404(StudyJob.objects.select_related("job__cluster"), pk=item, study=study)
    answers = services.final_answers(study).filter(item=study_job).select_related("rater").prefetch_related("labels")
    current = getattr(study_job, "adjudication", None)
    form = AdjudicationForm(request.POST or None, initial={"note": current.note if current else ""})
    # Until the lead decides, what every rater chose is ticked already: they decide the rest.
    agreed = services.options_every_rater_chose([{label.option for label in a.labels.all()} for a in answers])
    if request.method == "POST":
        chosen = set(request.POST.getlist("option"))
    else:
        chosen = set(current.options) if current else agreed
    seen = services.gold_version(current)  # what this page shows; a refused save shows the newer labels
    if request.method == "POST" and form.is_valid():
        try:
            services.adjudicate(
                study_job,
                sorted(chosen & set(OPTIONS)),
                form.cleaned_data["note"],
                request.user,
                seen=request.POST.get("seen"),
            )
        except services.GoldChanged as exc:
            form.add_error(None, str(exc))
            current, seen = exc.current, exc.version
        except services.LabelingError as exc:
            form.add_error(None, str(exc))
        else:
            # On to the next disagreement still open (a study of 400 jobs has dozens), back to the
            # agreement page only when none is left.
            left = services.gold_plan(study).unresolved
            following = next((i for i in left if i.position > study_job.position), left[0] if left else None)
            if following is not None:
                messages.success(
                    request,
                    f"Gold labels set for {study_job.job}. {len(left)} disagreement{pluralize(len(left))} left: "
                    f"this is job #{following.position}.",
                )
                return redirect("labeling:adjudicate", pk=study.pk, item=following.pk)
            messages.success(
                request, f"Gold labels set for {study_job.job}. Every disagreement is adjudicated: freeze a gold set."
            )
            return redirect("labeling:agreement", pk=study.pk)
    groups = option_groups()
    for group in groups:
        for option in group["options"]:
            option["checked"] = option["value"] in chosen
    return render(
        request,
        "labeling/adjudicate.html",
        {
            "study": study,
            "item": study_job,
            "answers": answers,
            "groups": groups,
            "form": form,
            "current": current,
            "seen": seen,
            "agreed": sorted(agreed, key=OPTIONS.index),
            "raters_answered": len(answers),
        },
    )


@studies_access
@with_form
def gold_page(request, pk: int):
    study = services.get_study(request.user, pk)
    _require_all_labels(request, study, "The gold sets open")
    is_lead = services.is_lead(request.user, study)
    form = FreezeForm(request.POST or None)
    if request.method == "POST":
        _require_lead(request, study)
        if form.is_valid():
            try:
                gold_set = services.freeze_gold(study, request.user, form.cleaned_data["note"])
            except services.LabelingError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(request, f"Gold set v{gold_set.version} frozen with {gold_set.items.count()} jobs.")
            return redirect("labeling:gold", pk=study.pk)
    gold_sets = list(study.gold_sets.select_related("frozen_by"))
    problems = []
    shown = _version_or_latest(
        request, "version", study.gold_sets.select_related("frozen_by"), _no_gold_set(study), problems, "the latest"
    ) or (gold_sets[0] if gold_sets else None)
    items = shown.items.select_related("job__cluster") if shown else []
    return render(
        request,
        "labeling/gold.html",
        {
            "study": study,
            "plan": services.gold_plan(study),
            "gold_sets": gold_sets,
            "shown": shown,
            "items": items,
            "option_labels": OPTION_LABELS,
            "form": form,
            "is_lead": is_lead,
            "submitted": services.submission_count(study),
            "problems": problems,
        },
    )


def _number(value: str | None) -> int | None:
    """A whole number from the address or a form; None for anything else, which then finds nothing."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _version_or_latest(request, name, queryset, missing, problems, default_is):
    """The version `?name=N` asks for. Where the address asks for one that is not there, the page
    says so (in `problems`) and shows its default instead, `default_is` (the latest, the current),
    named: as the lists do with a filter value they do not know, never another version in silence."""
    try:
        return _asked_version(request, name, queryset, missing)
    except UnknownVersion as unknown:
        default = queryset.first()
        problems.append(
            f"{unknown.message}; showing v{default.version}, {default_is}." if default else f"{unknown.message}."
        )
        return None


@studies_access
@read_only
def rules_page(request, pk: int):
    study = services.get_study(request.user, pk)
    _require_all_labels(request, study, "The rules against gold open")
    gold_sets = list(study.gold_sets.all())
    rule_sets = list(RuleSet.objects.all())
    context = {"study": study, "gold_sets": gold_sets, "rule_sets": rule_sets}
    if not gold_sets:
        return render(request, "labeling/rules.html", context)
    problems = []
    gold_set = _version_or_latest(request, "gold", study.gold_sets, _no_gold_set(study), problems, "the latest")
    gold_set = gold_set or gold_sets[0]
    rule_set = _rule_set_asked(request, "rule_set", problems) or RuleSet.current()
    compare = _rule_set_asked(request, "compare", problems)
    evaluation = services.evaluate_rules(gold_set, rule_set)
    other = services.evaluate_rules(gold_set, compare) if compare and compare != rule_set else None
    rows = []
    for i, row in enumerate(evaluation.report.categories):
        entry = {"row": row, "label": Category(row.category).label}
        if other:
            theirs = other.report.categories[i]
            entry["other"] = theirs
            entry["delta_f1"] = None if row.f1 is None or theirs.f1 is None else theirs.f1 - row.f1
        rows.append(entry)
    category = _category_asked(request, problems)
    detail = None
    if category is not None:
        row = next(r for r in evaluation.report.categories if r.category == category)
        detail = {
            "label": Category(category).label,
            "false_positives": [evaluation.jobs[j] for j in row.false_positive_units],
            "false_negatives": [evaluation.jobs[j] for j in row.false_negative_units],
        }
    # Only the categories in gold or found on some job: fifteen empty rows and columns hid the few
    # that count (the table scrolled sideways past them), and they say nothing a reader misses.
    labels, table = evaluation.report.confusion_labels, evaluation.report.confusion
    shown = [i for i in range(len(labels)) if sum(table[i]) or sum(row[i] for row in table)]
    context |= {
        "gold_set": gold_set,
        "rule_set": rule_set,
        "compare": compare if other else None,
        "evaluation": evaluation,
        "other": other,
        "rows": rows,
        "detail": detail,
        "category": category,
        "confusion": [{"label": _confusion_label(labels[i]), "cells": [table[i][j] for j in shown]} for i in shown],
        "confusion_columns": [_confusion_label(labels[j]) for j in shown],
        "confusion_left_out": len(labels) - len(shown),
        "is_lead": services.is_lead(request.user, study),
        "problems": problems,
    }
    return render(request, "labeling/rules.html", context)


def _category_asked(request, problems):
    """The category `?category=` asks for, whose jobs the page lists, or None when it asks for none.
    One the rules do not have ("none" and "other" are not theirs either) is said, as a version is."""
    raw = request.GET.get("category", "")
    if raw == "" or raw in Category.values:
        return raw or None
    problems.append(
        f"There is no category {raw[:40]!r} (the categories are the table's rows); showing no category's jobs."
    )
    return None


def _rule_set_asked(request, name, problems):
    """`?rule_set=` falls back to the current rule set, `?compare=` to no comparison; either says so."""
    try:
        return _asked_version(request, name, RuleSet.objects, NO_RULE_SET)
    except UnknownVersion as unknown:
        if name == "compare":
            problems.append(f"{unknown.message}; comparing with none.")
        else:
            problems.append(f"{unknown.message}; showing v{RuleSet.current().version}, the current one.")
        return None


@studies_access
@require_POST
def triage_missing(request, pk: int):
    study = services.get_study(request.user, pk)
    _require_lead(request, study)
    gold_set = get_object_or_404(study.gold_sets, version=_number(request.POST.get("gold")))
    rule_set = get_object_or_404(RuleSet, version=_number(request.POST.get("rule_set")))
    evaluation = services.evaluate_rules(gold_set, rule_set)
    try:
        services.triage_missing(evaluation.not_triaged, rule_set)
    except QueueUnreachable as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Triage of {len(evaluation.not_triaged)} jobs with rule set v{rule_set.version} queued."
        )
    return redirect(f"{_url('labeling:rules', study.pk)}?gold={gold_set.version}&rule_set={rule_set.version}")


class ExportRefused(Exception):
    """An export that cannot be made as asked; `response` says why, in plain text."""

    def __init__(self, response: HttpResponse):
        super().__init__(response.content.decode())
        self.response = response


def _refusal(response_class, message: str) -> ExportRefused:
    return ExportRefused(response_class(message + "\n", content_type="text/plain; charset=utf-8"))


class UnknownVersion(Exception):
    """A version asked for in the address that is not a number (`not_a_number`), or that none has."""

    def __init__(self, message: str, *, not_a_number: bool):
        super().__init__(message)
        self.message = message
        self.not_a_number = not_a_number


NO_RULE_SET = "There is no rule set v{number} (there are {versions})"


def _no_gold_set(study) -> str:
    return f"Study {study.pk} has no gold set v{{number}} (it has {{versions}})"


def _asked_version(request, name: str, queryset, missing: str):
    """The version `?name=N` asks for, or None when the address asks for none (absent or empty),
    which the caller answers with its default. One it does not find raises UnknownVersion: a value
    that is not a whole number, or a number no version has (`missing` words that, given the number
    and the versions there are). Never another version in its place: an export refuses, a page says so."""
    raw = request.GET.get(name, "")
    if raw == "":
        return None
    number = _number(raw)
    if number is None:
        raise UnknownVersion(f"{name} must be a version number, such as {name}=1 (not {raw[:40]!r})", not_a_number=True)
    found = queryset.filter(version=number).first() if abs(number) <= MAX_ROW_ID else None
    if found is None:
        versions = ", ".join(f"v{v}" for v in sorted(queryset.values_list("version", flat=True))) or "none"
        raise UnknownVersion(missing.format(number=number, versions=versions), not_a_number=False)
    return found


def _exported_version(request, name: str, queryset, missing: str):
    """An export's `_asked_version`: not a number is a 400, a number no version has a 404."""
    try:
        return _asked_version(request, name, queryset, missing)
    except UnknownVersion as unknown:
        response_class = HttpResponseBadRequest if unknown.not_a_number else HttpResponseNotFound
        raise _refusal(response_class, f"{unknown.message}.") from None


def _export_gold_set(request, study):
    gold_set = _exported_version(request, "gold", study.gold_sets, _no_gold_set(study)) or study.gold_sets.first()
    if gold_set is None:
        raise _refusal(HttpResponseNotFound, f"Study {study.pk} has no gold set yet: freeze one first.")
    return gold_set


def _export_rule_set(request):
    return _exported_version(request, "rule_set", RuleSet.objects, NO_RULE_SET) or RuleSet.current()


@studies_access
@read_only
def export(request, pk: int, kind: str, fmt: str):
    study = services.get_study(request.user, pk)
    if kind not in exchange.KINDS or fmt not in ("csv", "json"):
        raise Http404
    _require_all_labels(request, study, "The export opens")
    try:
        return _export(request, study, kind, fmt)
    except ExportRefused as refused:
        return refused.response


def _export(request, study, kind: str, fmt: str) -> HttpResponse:
    # Empty is no version asked for, as on the exports that read one.
    unread = exchange.version_not_read(kind, [name for name in ("gold", "rule_set") if request.GET.get(name)])
    if unread:
        raise _refusal(HttpResponseBadRequest, unread)
    meta = {"study": {"id": study.pk, "name": study.name, "seed": study.seed}}
    if kind == "labels":
        rows = exchange.label_rows(study)
    elif kind == "gold":
        gold_set = _export_gold_set(request, study)
        rows, meta["gold_version"] = exchange.gold_rows(gold_set), gold_set.version
    elif kind == "rules":
        rule_set = _export_rule_set(request)
        rows, meta["rule_set_version"] = exchange.rule_rows(study, rule_set), rule_set.version
        meta |= exchange.rules_revisions_meta(rows)
    elif kind == "quality":
        gold_set = _export_gold_set(request, study)
        rule_set = _export_rule_set(request)
        evaluation = services.evaluate_rules(gold_set, rule_set)
        rows = exchange.quality_rows(evaluation)
        if fmt == "csv":  # the JSON has the summary as an object of its own (quality_meta)
            rows += exchange.quality_summary_rows(evaluation)
        meta |= {"gold_version": gold_set.version, "rule_set_version": rule_set.version}
        meta |= exchange.quality_meta(evaluation)
    elif kind == "agreement":
        report = services.agreement_report(study)
        rows = exchange.agreement_rows(study, report)
        meta |= exchange.agreement_meta(study, report)
    else:
        raise Http404
    name = f"study-{study.pk}-{kind}"
    submitted, raters = services.submission_count(study)
    if kind in ("labels", "agreement") and submitted < raters:
        # Only the submitted raters' labels are in it: the CSV has no room to say so (the JSON's
        # raters_submitted does), and a file saved mid-study must not pass for the study's figures.
        name += f"-partial-{submitted}-of-{raters}-raters"
    if fmt == "csv":
        response = HttpResponse(exchange.to_csv(rows, exchange.KINDS[kind]), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(exchange.to_json(rows, kind, **meta), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


@studies_access
@with_form
def import_page(request, pk: int):
    study = services.get_study(request.user, pk)
    _require_lead(request, study)
    form = ImportForm(request.POST or None, request.FILES or None)
    result = None
    if request.method == "POST" and form.is_valid():
        result = exchange.import_labels(study, form.cleaned_data["file"].read(), dry_run=form.cleaned_data["dry_run"])
        if not result.errors:
            verb = "would store" if form.cleaned_data["dry_run"] else "stored"
            messages.success(request, f"Import {verb} {result.answers} answers ({result.jobs_added} jobs added).")
            if not form.cleaned_data["dry_run"]:
                return redirect("labeling:study", pk=study.pk)
    return render(request, "labeling/import.html", {"study": study, "form": form, "result": result})


def _confusion_label(label: str) -> str:
    return "None" if label == "none" else Category(label).label
