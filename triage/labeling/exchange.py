"""Export of labels, gold sets and rule output (CSV and JSON), and import of labels made elsewhere.

The columns are documented in docs/labeling.md; a labels export imports back unchanged.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from fleet.canonical import NUL_MESSAGE, loads_json, nul_path
from fleet.exports import spreadsheet_safe, spreadsheet_unsafe
from fleet.models import Job
from fleet.quoting import joined, library_error
from triage.labeling import services
from triage.labeling.agreement import DEFAULT_RESAMPLES, MIN_JOBS_FOR_INTERVAL, NO_DISAGREEMENT, TOO_FEW_JOBS
from triage.labeling.models import OPTIONS, OTHER, Assignment, GoldSet, Label, Study, StudyJob, StudyRater
from triage.models import Finding, JobTriage, RuleSet

FORMAT_VERSION = 1

LABEL_COLUMNS = [
    "study_id",
    "study",
    "cluster",
    "job_id",
    "rater",
    "option",
    "rationale",
    "other_note",
    "saved_at",
    "source",
    "skip_reason",  # a skip's row: no option, why the rater could not judge the job
    "skip_note",
]
GOLD_COLUMNS = ["study_id", "study", "gold_version", "cluster", "job_id", "option", "resolution", "note"]
RULE_COLUMNS = [
    "study_id",
    "rule_set_version",
    "cluster",
    "job_id",
    "status",
    "category",
    "sub_cause",
    "confidence",
    "gpu_hours",
    "rules_revision",  # appended, so a reader of the older columns still finds them in place
]
QUALITY_COLUMNS = [
    "study_id", "gold_version", "rule_set_version", "category", "support", "predicted",
    "true_positives", "false_positives", "false_negatives", "precision", "recall", "f1", "value",
    "rules_revision",  # appended, as in RULE_COLUMNS
]  # fmt: skip
# The CSV's summary rows after the categories, named in the category column: a spreadsheet shows them
# under the table as labelled lines (the JSON has them as its "summary" object instead).
MICRO_ROW = "summary: micro average"
MACRO_ROW = "summary: macro average (categories in gold)"
EXACT_ROW = "summary: exact label-set match"
SCORED_ROW = "summary: jobs scored"
NOT_TRIAGED_ROW = "summary: jobs not triaged (left out)"
AGREEMENT_COLUMNS = [
    "study_id", "statistic", "rater_a", "rater_b", "option", "jobs", "value", "low", "high",
    "percent_agreement", "both_yes", "only_a", "only_b", "both_no", "positive_agreement", "negative_agreement",
    "no_interval_reason",
    "jobs_agreed", "jobs_agreed_low", "jobs_agreed_high", "jobs_skipped",
]  # fmt: skip
KINDS = {
    "labels": LABEL_COLUMNS,
    "gold": GOLD_COLUMNS,
    "rules": RULE_COLUMNS,
    "quality": QUALITY_COLUMNS,
    "agreement": AGREEMENT_COLUMNS,
}

# The versions each export is made of, by the query parameter (`gold=N`, `rule_set=N`) that chooses
# one; the others' parameters it refuses, not ignores: `agreement?gold=1` gave the raters' agreement
# as without it, and the file passed for an agreement with gold v1, which no figure here measures.
EXPORT_VERSIONS = {
    "labels": (),
    "gold": ("gold",),
    "rules": ("rule_set",),
    "quality": ("gold", "rule_set"),
    "agreement": (),
}
# What an export is, said to whoever asks it for a version it has no use for.
EXPORT_IS = {
    "labels": "every submitted rater's own labels",
    "gold": "the labels the raters agreed on or a lead adjudicated, with no rule set's findings",
    "rules": "a rule set's findings on the study's jobs, not scored against a gold set",
    "agreement": "measured between the raters' labels, not against a gold set",
}


def version_not_read(kind: str, given: list[str], shown: dict[str, str] | None = None) -> str | None:
    """Why the `kind` export refuses the first of the versions `given` (gold, rule_set) it does not
    read, or None; `shown` names them as the asker wrote them (the command's --gold)."""
    for name in given:
        if name not in EXPORT_VERSIONS[kind]:
            readers = [other for other, versions in EXPORT_VERSIONS.items() if name in versions]
            written = (shown or {}).get(name, name)
            return (
                f"The {kind} export takes no {written}: it is {EXPORT_IS[kind]}. "
                f"{written} chooses the version of the {joined(readers)} exports."
            )
    return None


def label_rows(study: Study) -> list[dict]:
    """One row per (job, rater, option) of every final answer (a submitted rater's), and one per final
    skip, with an empty option and the skip's reason, in job and rater order."""
    labels = (
        Label.objects.filter(assignment__in=services.final_answers(study))
        .select_related("assignment__rater", "assignment__item__job__cluster")
        .order_by("assignment__item__position", "assignment__rater__username", "option")
    )
    skips = services.final_skips(study).select_related("rater", "item__job__cluster")
    rows = [
        (
            (skip.item.position, skip.rater.get_username(), ""),
            {
                "study_id": study.pk,
                "study": study.name,
                "cluster": skip.item.job.cluster.name,
                "job_id": skip.item.job.external_id,
                "rater": skip.rater.get_username(),
                "option": "",
                "saved_at": skip.skipped_at.isoformat(),
                "source": skip.source,
                "skip_reason": skip.skip_reason,
                "skip_note": skip.skip_note,
            },
        )
        for skip in skips
    ]
    rows += [
        (
            (label.assignment.item.position, label.assignment.rater.get_username(), label.option),
            {
                "study_id": study.pk,
                "study": study.name,
                "cluster": label.assignment.item.job.cluster.name,
                "job_id": label.assignment.item.job.external_id,
                "rater": label.assignment.rater.get_username(),
                "option": label.option,
                "rationale": label.rationale,
                "other_note": label.assignment.other_note if label.option == OTHER else "",
                "saved_at": label.assignment.saved_at.isoformat(),
                "source": label.assignment.source,
            },
        )
        for label in labels
    ]
    return [row for _, row in sorted(rows, key=lambda keyed: keyed[0])]


def gold_rows(gold_set: GoldSet) -> list[dict]:
    """One row per (job, option) of a frozen gold set."""
    rows = []
    for item in gold_set.items.select_related("job__cluster"):
        for option in item.options:
            rows.append(
                {
                    "study_id": gold_set.study_id,
                    "study": gold_set.study.name,
                    "gold_version": gold_set.version,
                    "cluster": item.job.cluster.name,
                    "job_id": item.job.external_id,
                    "option": option,
                    "resolution": item.resolution,
                    "note": item.note,
                }
            )
    return rows


def rule_rows(study: Study, rule_set: RuleSet) -> list[dict]:
    """One row per finding of the rule set on the study's jobs; a triaged job without findings gets one
    row with an empty category, so 'found nothing' and 'not triaged' stay apart."""
    job_ids = list(study.items.values_list("job_id", flat=True))
    results = JobTriage.objects.filter(job_id__in=job_ids, rule_set=rule_set).select_related("job__cluster")
    findings = defaultdict(list)
    for finding in Finding.objects.filter(job_id__in=job_ids, rule_set=rule_set).order_by("category"):
        findings[finding.job_id].append(finding)
    rows = []
    for result in sorted(results, key=lambda r: (r.job.cluster.name, r.job.external_id)):
        base = {
            "study_id": study.pk,
            "rule_set_version": rule_set.version,
            "cluster": result.job.cluster.name,
            "job_id": result.job.external_id,
            "status": result.status,
            "rules_revision": result.rules_revision,
        }
        for finding in findings[result.job_id] or [None]:
            rows.append(
                base
                | {
                    "category": finding.category if finding else "",
                    "sub_cause": finding.sub_cause if finding else "",
                    "confidence": round(finding.confidence, 4) if finding else "",
                    "gpu_hours": round(finding.gpu_hours, 4) if finding else "",
                }
            )
    return rows


def rules_revisions_meta(rows: list[dict]) -> dict:
    """What a rules export's JSON says beside its rule_set_version: the revisions of the rules' code
    that made the exported results, lowest first."""
    return {"rules_revisions": sorted({row["rules_revision"] for row in rows})}


def revisions_cell(evaluation) -> int | str:
    """A quality row's rules_revision: the revision of the rules' code behind the scores, or, while some
    jobs are not yet re-triaged after an upgrade, every revision among them, lowest first ("1 2")."""
    revisions = evaluation.rules_revisions
    if len(revisions) == 1:
        return revisions[0]
    return " ".join(str(revision) for revision in revisions)


def quality_summary(evaluation) -> dict:
    """The figures the rules page states above its table (None where undefined)."""
    report = evaluation.report
    return {
        "micro_precision": report.micro[0],
        "micro_recall": report.micro[1],
        "micro_f1": report.micro[2],
        "macro_precision": report.macro[0],
        "macro_recall": report.macro[1],
        "macro_f1": report.macro[2],
        "exact_match": report.exact_match,
        "jobs_scored": report.units,
        "jobs_not_triaged": len(evaluation.not_triaged),
    }


def quality_meta(evaluation) -> dict:
    """What a quality export's JSON says beside its rows: the summary, and (as before it) how many jobs
    were scored and how many not triaged."""
    summary = quality_summary(evaluation)
    return {
        "rules_revisions": evaluation.rules_revisions,
        "jobs_scored": summary["jobs_scored"],
        "jobs_not_triaged": summary["jobs_not_triaged"],
        "summary": summary,
    }


def quality_summary_rows(evaluation) -> list[dict]:
    """The summary as CSV rows below the categories: micro and macro averages in the precision, recall
    and F1 columns (micro with the summed counts), single figures in the value column."""
    summary = quality_summary(evaluation)
    categories = evaluation.report.categories
    base = {
        "study_id": evaluation.gold_set.study_id,
        "gold_version": evaluation.gold_set.version,
        "rule_set_version": evaluation.rule_set.version,
        "rules_revision": revisions_cell(evaluation),
    }
    counts = ("support", "predicted", "true_positives", "false_positives", "false_negatives")
    return [
        base
        | {"category": MICRO_ROW}
        | {column: sum(getattr(row, column) for row in categories) for column in counts}
        | {
            "precision": _share(summary["micro_precision"]),
            "recall": _share(summary["micro_recall"]),
            "f1": _share(summary["micro_f1"]),
        },
        base
        | {
            "category": MACRO_ROW,
            "precision": _share(summary["macro_precision"]),
            "recall": _share(summary["macro_recall"]),
            "f1": _share(summary["macro_f1"]),
        },
        base | {"category": EXACT_ROW, "value": _share(summary["exact_match"])},
        base | {"category": SCORED_ROW, "value": summary["jobs_scored"]},
        base | {"category": NOT_TRIAGED_ROW, "value": summary["jobs_not_triaged"]},
    ]


def quality_rows(evaluation: services.RuleEvaluation) -> list[dict]:
    return [
        {
            "study_id": evaluation.gold_set.study_id,
            "gold_version": evaluation.gold_set.version,
            "rule_set_version": evaluation.rule_set.version,
            "category": row.category,
            "support": row.support,
            "predicted": row.predicted,
            "true_positives": row.true_positives,
            "false_positives": row.false_positives,
            "false_negatives": row.false_negatives,
            "precision": "" if row.precision is None else round(row.precision, 4),
            "recall": "" if row.recall is None else round(row.recall, 4),
            "f1": "" if row.f1 is None else round(row.f1, 4),
            "rules_revision": revisions_cell(evaluation),
        }
        for row in evaluation.report.categories
    ]


def _share(value: float | None):
    return "" if value is None else round(value, 4)


def _estimate_cells(estimate) -> dict:
    """A statistic and its bootstrap interval; empty where undefined (the page's dash), and where the
    interval alone could not be drawn, the reason, as the page gives it."""
    if estimate is None:
        return {"value": "", "low": "", "high": "", "no_interval_reason": ""}
    return {
        "value": _share(estimate.value),
        "low": _share(estimate.low),
        "high": _share(estimate.high),
        "no_interval_reason": estimate.no_interval_reason or "",
    } | _agreed_cells(estimate.agreed, estimate.units, estimate.agreed_interval)


def _agreed_cells(agreed: int | None, jobs: int, interval: tuple[float, float] | None) -> dict:
    """Of the row's jobs, how many the raters answered alike, and the exact (Clopper-Pearson) 95 %
    interval of that share: what can be said where perfect agreement leaves nothing to resample."""
    if agreed is None or interval is None:
        return {}
    return {"jobs_agreed": agreed, "jobs_agreed_low": _share(interval[0]), "jobs_agreed_high": _share(interval[1])}


def _count_cells(counts) -> dict:
    if counts is None:
        return {}
    return {
        "both_yes": counts.both_yes,
        "only_a": counts.only_first,
        "only_b": counts.only_second,
        "both_no": counts.both_no,
        # The page's specific agreement beside kappa (what a rare category's kappa hides); empty where 0/0.
        "positive_agreement": _share(counts.positive_agreement),
        "negative_agreement": _share(counts.negative_agreement),
    }


def agreement_rows(study: Study, report) -> list[dict]:
    """The agreement page's figures, one row per statistic: for each pair of raters Cohen's kappa pooled
    and per option (with the pair's yes/no counts) and their share of identical label sets; for all raters
    together Krippendorff's alpha and Fleiss' kappa, pooled and per option (rater columns empty)."""
    rows = []
    for pair in report.pairs:
        base = {
            "study_id": study.pk,
            "rater_a": pair.raters[0],
            "rater_b": pair.raters[1],
            "jobs": pair.units,
            "jobs_skipped": pair.skipped,
        }
        rows.append(
            base
            | {"statistic": "cohen_kappa", "option": "pooled", "percent_agreement": _share(pair.pooled_percent)}
            | _estimate_cells(pair.pooled_kappa)
            | _count_cells(pair.pooled_counts)
        )
        for cell in pair.per_option:
            rows.append(
                base
                | {"statistic": "cohen_kappa", "option": cell.option, "percent_agreement": _share(cell.percent)}
                | _estimate_cells(cell.kappa)
                | _count_cells(cell.counts)
            )
        identical = pair.pooled_kappa.agreed
        rows.append(
            base
            | {"statistic": "identical_label_sets", "percent_agreement": _share(pair.exact_set_percent)}
            | _agreed_cells(identical, pair.units, pair.pooled_kappa.agreed_interval)
        )
    group = report.group
    if group is not None:
        base = {"study_id": study.pk, "rater_a": "", "rater_b": "", "jobs": group.units, "jobs_skipped": group.skipped}
        options = [("pooled", group.pooled_alpha, group.pooled_fleiss, report.exact_set_percent), *group.per_option]
        for statistic, position in (("krippendorff_alpha", 1), ("fleiss_kappa", 2)):
            for entry in options:
                if entry[position] is None:  # Fleiss' kappa: not every job has the same number of labels
                    continue
                rows.append(
                    base
                    | {"statistic": statistic, "option": entry[0], "percent_agreement": _share(entry[3])}
                    | _estimate_cells(entry[position])
                )
    return rows


def agreement_meta(study: Study, report) -> dict:
    """What an agreement export's JSON says beside its rows: who, on how many jobs, and how the
    intervals were drawn."""
    from triage.labeling.agreement import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, MAX_UNDEFINED_SHARE

    submitted, raters = services.submission_count(study)
    return {
        "raters": report.raters,
        "raters_submitted": [submitted, raters],
        "jobs_rated": report.units_rated,
        "jobs_double_rated": report.units_double_rated,
        "identical_label_sets": report.exact_set_percent,
        "disagreements": len(report.disagreements),
        "jobs_skipped": report.units_skipped,
        # The page's "For a paper" sentence; null while the report is partial or has no pair yet.
        "methods_sentence": (methods_sentence(study, report) or None) if submitted == raters else None,
        "bootstrap": {
            "resamples": DEFAULT_RESAMPLES,
            "confidence": DEFAULT_CONFIDENCE,
            "seed": study.seed,
            "method": "percentile",
            "max_undefined_share": MAX_UNDEFINED_SHARE,
            "min_jobs": MIN_JOBS_FOR_INTERVAL,
        },
    }


def to_csv(rows: list[dict], columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    # Free text (rationales, notes) goes to spreadsheets: formulas are neutralised, and read_rows undoes it.
    writer.writerows({key: spreadsheet_safe(value) for key, value in row.items()} for row in rows)
    return out.getvalue()


def to_json(rows: list[dict], kind: str, **meta) -> str:
    rows = [_every_column(row, KINDS[kind]) for row in rows]
    return json.dumps({"format": f"fleet-triage-{kind}", "version": FORMAT_VERSION, **meta, "rows": rows}, indent=1)


def _every_column(row: dict, columns: list[str]) -> dict:
    """The row with every column of its CSV, in the CSV's order, None (JSON null) where the CSV cell is
    empty: a script reads each row of every export alike, whatever the row is (an identical_label_sets
    row had no `value` key at all, a quality category row no `value`, and an undefined kappa, precision
    or a job's missing finding an empty string). The row builders keep "" for to_csv."""
    return {column: None if row.get(column, "") == "" else row[column] for column in columns}


def read_rows(content: str | bytes) -> list[dict]:
    """Rows from a CSV or JSON export (the format is told by the first character)."""
    if isinstance(content, bytes):
        content = content.decode("utf-8-sig")
    text = content.lstrip()
    if text.startswith(("{", "[")):
        data = loads_json(text)  # ValueError for NaN or nesting too deep to follow, as for any bad JSON
        rows = data.get("rows") if isinstance(data, dict) else data
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError("JSON must be an export object with a list of row objects under 'rows'")
        return rows
    return [
        {key: spreadsheet_unsafe(value) if isinstance(value, str) else value for key, value in row.items()}
        for row in csv.DictReader(io.StringIO(text))
    ]


@dataclass
class ImportResult:
    answers: int = 0  # (job, rater) answers stored
    jobs_added: int = 0  # jobs not yet in the study's sample
    errors: list[str] = field(default_factory=list)


def import_labels(study: Study, content: str | bytes, *, dry_run: bool = False) -> ImportResult:
    """Store labels made elsewhere (the labels export format). All or nothing: any bad row stops the
    import and every problem is listed. Raters must be researchers or operators here (a deactivated
    account's labels are kept: an export of a study holds them, and a round trip must too); a job must
    exist in the fleet and is added to the sample when it is not in it yet."""
    result = ImportResult()
    try:
        rows = read_rows(content)
    except (ValueError, KeyError, csv.Error) as exc:
        result.errors.append(f"unreadable file: {library_error(exc)}")
        return result
    if not rows:  # an empty file, or a header alone: "stored 0 answers" would read as success
        result.errors.append("the file holds no labels (columns: cluster, job_id, rater, option)")
        return result
    answers: dict[tuple[str, str, str], dict] = {}
    for number, row in enumerate(rows, start=2):
        where = nul_path(row)
        if where is not None:  # PostgreSQL keeps no NUL in text: the row could be neither looked up nor stored
            result.errors.append(f"row {number}: {where} {NUL_MESSAGE}")
            continue
        skip_reason = str(row.get("skip_reason") or "").strip()
        required = ("cluster", "job_id", "rater") if skip_reason else ("cluster", "job_id", "rater", "option")
        missing = [c for c in required if not str(row.get(c) or "").strip()]
        if missing:
            result.errors.append(f"row {number}: missing {', '.join(missing)}")
            continue
        if skip_reason:  # a skip: the rater could not judge the job, and chose no option
            if str(row.get("option") or "").strip():
                result.errors.append(f"row {number}: a skip (skip_reason) has no option, but option is set")
                continue
            key = (str(row["cluster"]).strip(), str(row["job_id"]).strip(), str(row["rater"]).strip())
            answer = answers.setdefault(key, {"chosen": {}, "other_note": ""})
            answer["skip"] = (skip_reason, str(row.get("skip_note") or ""))
            continue
        if row["option"] not in OPTIONS:
            result.errors.append(f"row {number}: unknown option {row['option']!r}")
            continue
        key = (str(row["cluster"]).strip(), str(row["job_id"]).strip(), str(row["rater"]).strip())
        answer = answers.setdefault(key, {"chosen": {}, "other_note": ""})
        answer["chosen"][row["option"]] = str(row.get("rationale") or "")
        if row["option"] == OTHER:
            answer["other_note"] = str(row.get("other_note") or "")
    users = {u.username: u for u in services.label_authors().filter(username__in={k[2] for k in answers})}
    jobs = {
        (j.cluster.name, j.external_id): j
        for j in Job.objects.filter(external_id__in={k[1] for k in answers}).select_related("cluster")
    }
    for cluster, job_id, rater in answers:
        if rater not in users:
            result.errors.append(f"rater {rater!r} is not a researcher or operator here")
        if (cluster, job_id) not in jobs:
            result.errors.append(f"job {cluster}/{job_id} is not in the fleet")
    for key, answer in answers.items():
        try:
            if "skip" in answer and answer["chosen"]:
                raise services.LabelingError("skipped (skip_reason) and labelled both; keep one")
            if "skip" in answer:
                services.clean_skip(*answer["skip"])
            else:
                services.clean_answer(answer["chosen"], answer["other_note"])
        except services.LabelingError as exc:
            result.errors.append(f"{key[0]}/{key[1]} by {key[2]}: {exc}")
    if result.errors:
        return result
    with transaction.atomic():
        items = {item.job_id: item for item in study.items.all()}
        position = study.items.aggregate(p=Max("position"))["p"] or 0
        for (cluster, job_id, rater), answer in answers.items():
            job, user = jobs[(cluster, job_id)], users[rater]
            item = items.get(job.pk)
            if item is None:
                position += 1
                item = items[job.pk] = StudyJob.objects.create(
                    study=study, job=job, position=position, stratum="imported"
                )
                result.jobs_added += 1
            StudyRater.objects.get_or_create(study=study, user=user)
            assignment, _ = Assignment.objects.get_or_create(item=item, rater=user)
            if "skip" in answer:
                services.skip_job(assignment, *answer["skip"], source=Assignment.Source.IMPORT)
            else:
                services.save_answer(
                    assignment, answer["chosen"], answer["other_note"], source=Assignment.Source.IMPORT
                )
            result.answers += 1
        # Labels made elsewhere are final: a rater with nothing left to label here is submitted.
        for user in {users[k[2]] for k in answers}:
            saved, total = services.progress(study, user)
            if saved == total:
                StudyRater.objects.filter(study=study, user=user, submitted_at__isnull=True).update(
                    submitted_at=timezone.now()
                )
        if dry_run:
            transaction.set_rollback(True)
    return result


def _with_interval(estimate) -> str:
    """'0.643 (95 % CI 0.406–0.847)', or the figure and why it has no interval, as a paper would put it."""
    value = f"{estimate.value:.3f}"
    confidence = f"{100 * estimate.confidence:g} %"
    if estimate.low is not None:
        return f"{value} ({confidence} CI [{estimate.low:.3f}, {estimate.high:.3f}])"
    share = estimate.agreed_interval
    if estimate.no_interval_reason == NO_DISAGREEMENT and share is not None:
        return (
            f"{value} (the raters agreed on all {estimate.units} jobs, so no bootstrap interval; exact {confidence} "
            f"interval of the share of jobs agreed {100 * share[0]:.1f}–100 %)"
        )
    if estimate.no_interval_reason == TOO_FEW_JOBS:
        return f"{value} (no interval: too few jobs, {estimate.units}; at least {MIN_JOBS_FOR_INTERVAL} needed)"
    return f"{value} (no interval: {estimate.no_interval_reason.removesuffix(' for an interval')})"


def methods_sentence(study: Study, report) -> str:
    """The agreement as a paper's method section reports it, from the page's own figures; empty
    until two submitted raters share a job."""
    group = report.group
    if group is None or not report.pairs:
        return ""
    jobs = report.units_double_rated
    jobs_text = f"{jobs} job{'' if jobs == 1 else 's'}"
    if len(group.raters) == 2:
        who = f"Two raters each labelled the same {jobs_text} independently"
    else:
        who = f"{len(group.raters)} raters labelled {jobs_text} independently, {study.labels_per_job} raters per job"
    blind = "blind to the rules' findings" if not study.show_findings else "shown the rules' findings"
    said = [
        f"{who} ({blind}), choosing any of the {len(report.options) - 2} categories, or 'none of these', or 'other'."
    ]
    estimates = []
    if len(report.pairs) == 1:
        estimates.append(("Cohen's kappa", report.pairs[0].pooled_kappa))
    estimates.append(("Krippendorff's alpha", group.pooled_alpha))
    if len(group.raters) > 2 and group.pooled_fleiss is not None:
        estimates.append(("Fleiss' kappa", group.pooled_fleiss))
    estimates = [(name, e) for name, e in estimates if e.value is not None]
    if estimates:
        if all(e.no_interval_reason == NO_DISAGREEMENT for _, e in estimates):  # one reason, said once
            figures = " and ".join(f"{name} {e.value:.3f}" for name, e in estimates)
            figures += _with_interval(estimates[0][1]).removeprefix(f"{estimates[0][1].value:.3f}")
        else:
            figures = "; ".join(f"{name} {_with_interval(e)}" for name, e in estimates)
        said.append(f"Pooled over every (job, option) decision: {figures}.")
        if any(e.low is not None for _, e in estimates):
            resamples = f"{DEFAULT_RESAMPLES:,} resamples"
            said.append(f"Intervals: percentile bootstrap over jobs, {resamples}, seed {study.seed}.")
    identical = round(report.exact_set_percent * jobs)
    said.append(
        f"Their label sets were identical on {identical} of {jobs} job{'' if jobs == 1 else 's'} "
        f"({100 * report.exact_set_percent:.1f} %)."
    )
    if report.units_skipped:
        skipped = report.units_skipped
        said.append(
            f"{skipped} job{' a rater' if skipped == 1 else 's raters'} skipped as impossible to judge "
            f"{'was' if skipped == 1 else 'were'} left out of the skipping rater's comparisons."
        )
    return " ".join(said)
