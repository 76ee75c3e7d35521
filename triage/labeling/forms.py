"""Forms of the labeling pages."""

from __future__ import annotations

import secrets

from django import forms
from django.core.exceptions import ValidationError

from fleet.forms import MAX_ROW_ID, UtcDateTimeField
from triage.labeling import services
from triage.labeling.models import SAMPLING_CHOICES
from triage.labeling.sampling import Strategy
from triage.models import low_util_threshold


def new_seed() -> int:
    return secrets.randbelow(2**31)


class _UserChoices(forms.ModelMultipleChoiceField):
    """Users picked by id; an id no column can hold is an invalid choice (Django would pass it to
    the database, which on SQLite fails the request)."""

    def _check_values(self, value):
        for pk in value:
            try:
                too_large = abs(int(pk)) > MAX_ROW_ID
            except (TypeError, ValueError):
                continue  # not a number: Django's own check names it
            if too_large:
                message = self.error_messages["invalid_choice"]
                raise ValidationError(message, code="invalid_choice", params={"value": pk})
        return super()._check_values(value)


class StudyForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    strategy = forms.ChoiceField(choices=SAMPLING_CHOICES, initial=Strategy.RANDOM.value, label="Sampling")
    sample_size = forms.IntegerField(
        min_value=1,
        max_value=1_000_000,
        required=False,
        help_text="Leave empty with 'every job' to take the whole population.",
    )
    seed = forms.IntegerField(min_value=0, max_value=2**62, help_text="Recorded; the same seed draws the same sample.")
    period_start = UtcDateTimeField(required=False, help_text="UTC, e.g. 2026-11-01 00:00")
    period_end = UtcDateTimeField(required=False, help_text="UTC, exclusive")
    low_util_only = forms.BooleanField(required=False, initial=True, label="Only low-utilization jobs")
    low_util_threshold = forms.FloatField(min_value=0, max_value=100, label="Low-utilization threshold (%)")
    disputed_only = forms.BooleanField(
        required=False,
        label="Only disputed jobs",
        help_text="Jobs where someone answered on the job's page that a cause the rules found is wrong.",
    )
    raters = _UserChoices(queryset=None, widget=forms.CheckboxSelectMultiple)
    labels_per_job = forms.IntegerField(
        min_value=2, max_value=100, initial=2, help_text="Each job is labelled by this many raters."
    )
    show_findings = forms.BooleanField(
        required=False, initial=False, label="Show the rules' findings to raters (the study is blind when off)"
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["raters"].queryset = services.eligible_raters()
        self.fields["seed"].initial = new_seed()
        self.fields["low_util_threshold"].initial = low_util_threshold()

    def clean(self):
        data = super().clean()
        strategy = data.get("strategy")
        if strategy and strategy != Strategy.ALL and not data.get("sample_size"):
            self.add_error("sample_size", "Give a sample size (or choose 'every job of the population').")
        raters = data.get("raters") or []
        per_job = data.get("labels_per_job") or 2
        if raters and len(raters) < per_job:
            self.add_error("raters", f"{per_job} labels per job need at least {per_job} raters.")
        start, end = data.get("period_start"), data.get("period_end")
        if start and end and end <= start:
            self.add_error("period_end", "The period must end after it starts.")
        return data


class AdjudicationForm(forms.Form):
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), help_text="Why this is the answer.")


class FreezeForm(forms.Form):
    note = forms.CharField(max_length=300, required=False, label="Note for this version")


class ImportForm(forms.Form):
    file = forms.FileField(help_text="A labels file in the export format (CSV or JSON), see docs/labeling.md.")
    dry_run = forms.BooleanField(required=False, label="Check only, store nothing")
