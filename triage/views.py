"""Triage pages: the operators' rule-set editor (with re-triage progress) and a job's findings."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from prometheus_client import CONTENT_TYPE_LATEST

from config.methods import read_only, with_form
from fleet import audit
from fleet.access import is_operator, operator_required
from fleet.models import Job
from fleet.tokens import machine_token
from triage import feedback, monitoring, services
from triage.dashboard.queries import job_files
from triage.labeling.services import blinded_job_ids, findings_hidden_from
from triage.models import Feedback, RetriageRun, RuleSet
from triage.rules import THRESHOLDS
from triage.templatetags.finding_feedback import place_tags

# What a threshold of each unit can be: a value past these (150 %, a share of 2, 2.5 samples) was
# saved as a new version and every job re-triaged with it.
WHOLE_UNITS = {"samples", "gaps", "workers"}  # counts: whole numbers
UNIT_MAXIMUM = {"%": 100.0, "share": 1.0, "s": 30 * 24 * 3600.0, "x median": 10.0, "ratio": 10.0}
COUNT_MAXIMUM = 1_000_000


class RuleSetForm(forms.Form):
    """One number field per threshold, prefilled with the current version's values, each bounded by
    what its unit can be (a percentage up to 100, a share up to 1, a count a whole number)."""

    note = forms.CharField(max_length=300, required=False, label="What changed and why")

    def __init__(self, *args, current: dict, **kwargs):
        super().__init__(*args, **kwargs)
        defaults = RuleSet.deployment_defaults()  # what a reset goes back to, shown beside each value
        for name, (_, unit, help_text) in THRESHOLDS.items():
            default = defaults[name]
            initial = current.get(name, default)
            if unit in WHOLE_UNITS:
                field = forms.IntegerField(min_value=0, max_value=COUNT_MAXIMUM, initial=int(initial))
            else:
                field = forms.FloatField(min_value=0, max_value=UNIT_MAXIMUM.get(unit), initial=initial)
            field.label, field.help_text, field.unit, field.default = name, help_text, unit, default
            self.fields[name] = field

    def threshold_fields(self):
        return [self[name] for name in THRESHOLDS]

    def clean(self):
        data = super().clean()
        idle, low = data.get("idle_util"), data.get("low_util_threshold")
        if idle is not None and low is not None and idle >= low:
            # Every GPU of a low-utilization job would be "idle", and no job could be both busy and low.
            self.add_error("idle_util", f"An idle GPU is one below this; keep it under low_util_threshold ({low:g} %).")
        return data


def shown(value, unit: str) -> float | int:
    """A threshold as the form shows it: a count as a whole number ("5", not "5.0")."""
    return int(value) if unit in WHOLE_UNITS else float(value)


def comparison(values: dict, current: dict) -> list[dict]:
    """One row per threshold: `values` beside the current version's, the default, the unit, what it
    controls, and whether it differs from the current value. The default is the deployment's, as the
    form shows it and a reset restores it."""
    defaults = RuleSet.deployment_defaults()
    return [
        {
            "name": name,
            "value": shown(values[name], unit),
            "current": shown(current[name], unit),
            "default": shown(defaults[name], unit),
            "unit": unit,
            "help": help_text,
            "differs": values[name] != current[name],
        }
        for name, (_, unit, help_text) in THRESHOLDS.items()
    ]


def save_version(request, thresholds: dict, *, note: str, action: str, **details) -> RuleSet | None:
    """Save `thresholds` as a new version, which re-triages every job, audited as `action`, and say so;
    thresholds equal to the current version's make no version (and no re-triage): None. "Current" is
    as of the save, not as of this request's form: another operator may have saved since."""
    saved = services.save_rule_set(thresholds, user=request.user, note=note)
    if saved is None:
        messages.info(request, "Nothing changed; no new version was made.")
        return None
    rule_set, previous = saved.rule_set, saved.previous
    changed = {name: [previous[name], value] for name, value in thresholds.items() if previous[name] != value}
    audit.record(
        request.user, action, rule_set, {"version": rule_set.version, "changed": changed, "note": note, **details}
    )
    if saved.run.status == RetriageRun.Status.FAILED:  # not queued: the task queue is unreachable
        error = saved.run.error
        messages.error(request, f"Saved rule set v{rule_set.version}, but {error[:1].lower()}{error[1:]}")
    else:
        messages.success(request, f"Saved rule set v{rule_set.version}; every job is being re-triaged with it.")
    return rule_set


@operator_required
@with_form
def rule_set_edit(request):
    current = RuleSet.current()
    values = current.effective_thresholds()
    form = RuleSetForm(request.POST or None, current=values)
    if request.method == "POST" and form.is_valid():
        thresholds = {name: form.cleaned_data[name] for name in THRESHOLDS}
        save_version(request, thresholds, note=form.cleaned_data["note"], action="rule_set.save")
        return redirect("triage:rule-set")
    defaults = RuleSet.deployment_defaults()
    changed = {name for name, value in values.items() if value != defaults[name]}
    return render(
        request,
        "triage/rule_set.html",
        {
            "form": form,
            "current": current,
            "changed": changed,
            "versions": RuleSet.objects.select_related("created_by")[:20],
            "run": RetriageRun.objects.select_related("rule_set").first(),
            "outdated": services.outdated_results().count(),
            "catchup_batch": settings.TRIAGE_RULES_CATCHUP_BATCH,
            "sweep_minutes": settings.TRIAGE_SWEEP_MINUTES,
        },
    )


@operator_required
@read_only
def rule_set_version(request, version: int):
    """One version's thresholds beside the current version's, the ones that differ marked, and the
    button that restores it (after the differences, so they are seen first)."""
    rule_set = get_object_or_404(RuleSet.objects.select_related("created_by"), version=version)
    current = RuleSet.current()
    rows = comparison(rule_set.effective_thresholds(), current.effective_thresholds())
    return render(
        request,
        "triage/rule_set_version.html",
        {
            "rule_set": rule_set,
            "current": current,
            "column": f"v{rule_set.version}",
            "rows": rows,
            "differences": [row["name"] for row in rows if row["differs"]],
            "jobs": Job.objects.count(),
        },
    )


@operator_required
@require_POST
def rule_set_restore(request, version: int):
    """Save an old version's thresholds as a new version ("restored from vN"), which re-triages every
    job; its values are checked as the form checks them (an old version may hold one refused today)."""
    old = get_object_or_404(RuleSet, version=version)
    values = RuleSet.current().effective_thresholds()
    form = RuleSetForm(old.effective_thresholds(), current=values)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        messages.warning(request, f"v{version} was not restored: it holds a value refused today ({problems}).")
        return redirect("triage:rule-set-version", version)
    thresholds = {name: form.cleaned_data[name] for name in THRESHOLDS}
    note = f"restored from v{version}"
    save_version(request, thresholds, note=note, action="rule_set.restore", restored_from=version)
    return redirect("triage:rule-set")


@operator_required
@with_form
def rule_set_defaults(request):
    """Back to the defaults (version 1's: `THRESHOLDS` with the LOW_UTIL_THRESHOLD setting) as a new
    version, which re-triages every job. The GET is the confirmation: what would change, how many
    jobs would be re-triaged, and the button."""
    current = RuleSet.current()
    values, defaults = current.effective_thresholds(), RuleSet.deployment_defaults()
    if request.method == "POST":
        save_version(request, defaults, note="reset to the defaults", action="rule_set.reset")
        return redirect("triage:rule-set")
    rows = comparison(defaults, values)
    return render(
        request,
        "triage/rule_set_defaults.html",
        {
            "current": current,
            "column": "Default",
            "defaults": True,
            "rows": rows,
            "differences": [row["name"] for row in rows if row["differs"]],
            "jobs": Job.objects.count(),
        },
    )


@operator_required
@read_only
def retriage_progress(request, pk: int):
    run = get_object_or_404(RetriageRun, pk=pk)
    return JsonResponse(
        {
            "status": run.status,
            "status_display": run.get_status_display(),
            "done": run.jobs_done,
            "total": run.jobs_total,
            "percent": run.percent,
            "error": run.error,
        }
    )


@login_required
@read_only
def job_triage(request, pk: int):
    # Scoped lookup: another team's job is indistinguishable from a missing one.
    job = get_object_or_404(Job.objects.visible_to(request.user).select_related("cluster", "team"), pk=pk)
    if findings_hidden_from(request.user, job):
        return render(request, "triage/findings_hidden.html", {"job": job}, status=403)
    return render(request, "triage/job_triage.html", {"job": job, "job_files": job_files(job)})


@read_only
def metrics(request):
    """Prometheus metrics (`triage.monitoring`): for an operator's session, or a machine token made
    to read them (`Authorization: Api-Key ...`, what a Prometheus scrape job sends)."""
    if is_operator(request.user):
        hidden = frozenset(blinded_job_ids(request.user))
    else:
        token = machine_token(request)
        if token is None or not token.reads_metrics:
            return HttpResponse(
                "An operator's session or a machine token that may read metrics is needed.\n",
                status=403,
                content_type="text/plain; charset=utf-8",
            )
        hidden = frozenset()
    return HttpResponse(monitoring.exposition(timezone.now(), hidden), content_type=CONTENT_TYPE_LATEST)


class FeedbackForm(forms.Form):
    """A verdict on one cause found in a job (`found`: the causes its current triage found, the only
    ones it accepts), or `withdraw` to take the user's back."""

    category = forms.ChoiceField(
        error_messages={
            "required": "say which cause you judge",
            "invalid_choice": "that cause is not among the job's current findings (re-triaged since?)",
        }
    )
    verdict = forms.ChoiceField(
        choices=Feedback.Verdict.choices, required=False, error_messages={"invalid_choice": "not one of the answers"}
    )
    comment = forms.CharField(max_length=1000, required=False, strip=True)
    withdraw = forms.BooleanField(required=False)

    def __init__(self, *args, found: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["category"].choices = [(category, category) for category in found]

    def clean(self):
        data = super().clean()
        if not data.get("withdraw") and not data.get("verdict") and "category" in data:
            self.add_error("verdict", "choose whether this is the cause")
        return data


@login_required
@require_POST
def job_feedback(request, pk: int):
    """Save, change or withdraw the user's verdict on a cause found in the job, then back to it."""
    job = get_object_or_404(Job.objects.visible_to(request.user), pk=pk)
    if findings_hidden_from(request.user, job):  # a blind rater cannot judge what they may not see
        return render(request, "triage/findings_hidden.html", {"job": job}, status=403)
    found = feedback.found_categories(job)
    form = FeedbackForm(request.POST, found=found)
    back = reverse("dashboard:job-detail", args=[job.pk])
    # Each message is said where the page lands (the findings, the finding's answer form): the top of
    # the page, where messages go, is scrolled out of sight.
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        messages.warning(request, f"Your answer was not saved ({problems}).", extra_tags=place_tags("findings"))
        return redirect(f"{back}#findings")
    finding = found[form.cleaned_data["category"]]
    category, label = finding.category, finding.get_category_display()
    at_answer = place_tags(f"finding-{category}")
    if form.cleaned_data["withdraw"]:
        feedback.withdraw(request.user, job, category)
        messages.success(request, f"Your answer on {label} was withdrawn.", extra_tags=at_answer)
    else:
        given = feedback.give(request.user, finding, form.cleaned_data["verdict"], form.cleaned_data["comment"])
        said = f"Saved your answer on {label}: {given.get_verdict_display()}."
        if given.verdict != Feedback.Verdict.RIGHT:  # what the answer changes, said where it is given
            if (job.pk, category) in feedback.set_aside_causes([job.pk]):
                said += " The team's weekly digest no longer suggests this change for this job"
                said += " (unless someone answers right)."
            else:
                said += " Someone answered right, so the team's weekly digest still suggests this change for this job."
        messages.success(request, said, extra_tags=at_answer)
    return redirect(f"{back}#answer-{category}")


@operator_required
@require_POST
def feedback_remove(request, pk: int):
    """An operator removes someone's answer from a job (moderation), then back to the job."""
    given = get_object_or_404(Feedback.objects.select_related("job", "user"), pk=pk)
    if findings_hidden_from(request.user, given.job):  # rating it blind: its answers are not theirs to see
        return render(request, "triage/findings_hidden.html", {"job": given.job}, status=403)
    author, label = given.user.get_username(), given.get_category_display()
    feedback.remove(request.user, given)
    at_answer = place_tags(f"finding-{given.category}")
    messages.success(request, f"Removed {author}'s answer on {label}.", extra_tags=at_answer)
    return redirect(reverse("dashboard:job-detail", args=[given.job_id]) + f"#answer-{given.category}")
