"""The jobs list's filters, parsed and validated by django-filter (bad input shows a form error)."""

from __future__ import annotations

from datetime import date, timedelta

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator
from django.db.models import Case, Exists, F, FloatField, OuterRef, Q, Subquery, Sum, Value, When

from fleet.forms import RowIdField
from fleet.models import Cluster, IngestRun, Job, Team
from triage import feedback
from triage.dashboard.periods import utc_day_start
from triage.dashboard.queries import UTIL_SOURCES
from triage.models import Finding, JobTriage, TriageStatus, without_current_triage
from triage.taxonomy import Category

RECOVERABLE = "recoverable"

# The jobs list's orders: key (in the URL), what the menu calls it, and the ordering.
SORTS = {
    "start": ("Newest first", "-start_time"),  # the list's order without a choice too
    "oldest": ("Oldest first", "start_time"),
    "unused": ("Most unused GPU-hours first", "-unused_gpu_hours"),
    "gpu_hours": ("Most GPU-hours first", "-gpu_hours"),
    "util": ("Lowest utilization first", "mean_gpu_util"),
    "cost": ("Highest cost first", "-cost"),
    # What the rules' causes cost each job (`recoverable_hours`): a cause page's order, for its "All … jobs".
    RECOVERABLE: ("Most recoverable GPU-hours first", F("recoverable_gpu_hours").desc(nulls_last=True)),
}


NOT_TRIAGED = "not_triaged"  # a job without a current triage result
PRESENT_VALUE_FILTERS = ("state", "queue", "gpu_model")  # menus of the values the viewer's jobs have


class RowIdFilter(django_filters.NumberFilter):
    """Rows whose foreign key is this id; anything but a whole number a database can compare is a
    form error (a 400 in the API), not a server error."""

    field_class = RowIdField


def ingest_run_exists(number: int) -> None:
    """A run filter's number that no run has (deleted since, a typo) is an error, as in the API's `ingest_run`:
    the list said "The jobs that ingest run #N created or updated" above no job, as if the run had stored none."""
    if not IngestRun.objects.filter(pk=number).exists():
        raise ValidationError(f"No ingest run #{number}.", code="missing")


# The search box's words looked for, at most: 500 characters hold 250 words, each a clause of the query.
SEARCH_WORDS = 20


class PresentValueField(django_filters.fields.ChoiceField):
    """A menu of the values the viewer's jobs have: one typed in another case (an old link's ?state=failed) is
    the value it names, and one no job has is an error that lists those there are."""

    def __init__(self, *args, noun: str = "", max_length: int | None = None, **kwargs):
        self.noun = noun
        self.max_length = max_length  # what the field it filters on holds: longer, the message would repeat it
        super().__init__(*args, **kwargs)

    def to_python(self, value):
        value = super().to_python(value)
        values = [str(key) for key, _ in self.choices if key]
        if value and value not in values:
            value = next((known for known in values if known.casefold() == value.casefold()), value)
        return value

    def validate(self, value):
        super(forms.ChoiceField, self).validate(value)  # required or not; the choice is checked here
        if self.max_length is not None:
            MaxLengthValidator(self.max_length)(value)
        if value and not self.valid_value(value):
            values = [str(key) for key, _ in self.choices if key]
            there_are = f" (the {self.noun}s: {', '.join(values)})" if values else ""
            raise ValidationError(f"No job has the {self.noun} {value}{there_are}", code="invalid_choice")


class PresentValueFilter(django_filters.ChoiceFilter):
    """A filter on one of the job's text fields whose menu offers the values the viewer's jobs have
    (`JobFilter.__init__` fills it), as Cluster's offers their clusters."""

    field_class = PresentValueField

    def __init__(self, *args, noun: str, **kwargs):
        max_length = Job._meta.get_field(kwargs["field_name"]).max_length
        super().__init__(*args, choices=[], noun=noun, empty_label=f"Any {noun}", max_length=max_length, **kwargs)


class JobFilterForm(forms.Form):
    """The jobs list's form: a range typed the wrong way round is an error on its first box, in the words the
    overview's and a team's periods use (periods.PeriodError), where it silently matched no job."""

    def clean(self):
        cleaned = super().clean()
        first, last = cleaned.get("start_from"), cleaned.get("start_to")
        if first and last and first > last:
            self.add_error("start_from", "The start date is after the end date")
        lowest, highest = cleaned.get("util_min"), cleaned.get("util_max")
        if lowest is not None and highest is not None and lowest > highest:
            self.add_error("util_min", "The lowest utilization is above the highest")
        return cleaned


class JobFilter(django_filters.FilterSet):
    # Each text filter at most as long as what it searches (a job's name is the longest a search
    # matches part of): longer, it can match nothing, and SQLite (the embedded default) fails a LIKE
    # over 50,000 bytes; a form error says so instead.
    q = django_filters.CharFilter(method="search", label="Search", max_length=500)
    cluster = django_filters.ModelChoiceFilter(
        field_name="cluster",
        to_field_name="name",
        queryset=Cluster.objects.all(),
        empty_label="All clusters",
        label="Cluster",
    )
    team = django_filters.ModelChoiceFilter(
        field_name="team",
        to_field_name="slug",
        queryset=Team.objects.none(),
        empty_label="All teams",
        label="Team",
    )
    # Exact (any case), so a user's link lists their jobs and no one else's; the search matches parts.
    user = django_filters.CharFilter(field_name="user", lookup_expr="iexact", label="User (whole name)", max_length=200)
    # Exact, unlike the search: the runs of one job (a job page's "every run" link).
    name = django_filters.CharFilter(field_name="name", lookup_expr="exact", label="Job name", max_length=500)
    # Menus of the values the viewer's jobs have: a typed state (RUNNING, which no imported job has) matched nothing.
    state = PresentValueFilter(field_name="state", label="State", noun="state")
    queue = PresentValueFilter(field_name="queue", label="Queue", noun="queue")
    gpu_model = PresentValueFilter(field_name="gpu_model", label="GPU model", noun="GPU model")
    category = django_filters.ChoiceFilter(
        choices=Category.choices,
        method="with_category",
        empty_label="Any cause",
        label="Cause",
    )
    status = django_filters.ChoiceFilter(
        choices=[*TriageStatus.choices, (NOT_TRIAGED, "Not triaged")],
        method="with_status",
        empty_label="Any status",
        label="Triage status",
    )
    # After `category`, whose cause it then narrows to: the jobs answered wrong on that cause.
    answer = django_filters.ChoiceFilter(
        choices=feedback.ANSWER_CHOICES,
        method="with_answer",
        empty_label="Any answer",
        label="Owners' answer",
    )
    # Each filter's label is what its form field is called (its aria-label), and what a bad value's message
    # names: "util_min: Enter a number." named a parameter of the address, which the form shows nowhere.
    util_min = django_filters.NumberFilter(
        field_name="mean_gpu_util", lookup_expr="gte", label="Mean utilization at least"
    )
    util_max = django_filters.NumberFilter(
        field_name="mean_gpu_util", lookup_expr="lte", label="Mean utilization at most"
    )
    # `?no_util=true`: the jobs without a mean GPU utilization (no GPU samples), which no utilization
    # range can hold; the overview and a team's page link here to the jobs their histogram leaves out.
    no_util = django_filters.BooleanFilter(
        field_name="mean_gpu_util", lookup_expr="isnull", label="No utilization figure"
    )
    # `?util_source=slurm_step_accounting`: the jobs whose figure is Slurm's step-accounting average
    # (marked Slurm avg), which the overview and a team's page link to; `samples`: those from GPU samples.
    # Its options say what they choose in plain words after the menu's visible name, "Utilization figure":
    # "Any util source" was jargon, and "Utilization from any source" was cut to "Utilization from any so…" on a
    # 320 px phone once the name stood beside the menu. The API's filter keeps UTIL_SOURCE_CHOICES.
    util_source = django_filters.ChoiceFilter(
        choices=[
            ("samples", "From GPU samples"),
            ("slurm_step_accounting", "From Slurm's average"),
        ],
        method="with_util_source",
        empty_label="Any source",
        label="Where the utilization figure came from",
        widget=forms.Select(attrs={"aria-label": "Where the utilization figure came from"}),
    )
    # Whole UTC days, as the overview's and a team's periods are (periods.py), whatever zone the reader chose:
    # `start_time__date` read them in the reader's zone, and the overview's "19 of 62 jobs" opened 18 in New York.
    start_from = django_filters.DateFilter(method="started_from", label="Started from")
    start_to = django_filters.DateFilter(method="started_to", label="Started to")
    # The jobs an ingest run created or updated (a job remembers the run that last stored it); the
    # run's page links here.
    run = RowIdFilter(
        field_name="ingest_run",
        label="Ingest run",
        not_a_number="Ingest run must be a run number, such as run=42",
        missing="No ingest run #{number}.",
        validators=[ingest_run_exists],
    )
    sort = django_filters.ChoiceFilter(
        choices=[(key, label) for key, (label, _) in SORTS.items()],
        method="sorted",
        empty_label=None,  # no order chosen is "start", the first: one "Newest first", not two
        label="Order",
        widget=forms.Select(attrs={"aria-label": "Order"}),
    )

    class Meta:
        model = Job
        fields: list[str] = []
        form = JobFilterForm

    def __init__(self, *args, teams=None, clusters=None, blinded: set[int] = frozenset(), **kwargs):
        super().__init__(*args, **kwargs)
        if teams is not None:
            self.filters["team"].queryset = teams
        if clusters is not None:  # the viewer's: another's is refused as an unknown one
            self.filters["cluster"].queryset = clusters
        # One query for the three menus: the distinct combinations are few (a fleet's states x queues x models).
        combinations = list(self.queryset.order_by().values_list(*PRESENT_VALUE_FILTERS).distinct())
        present = [sorted({values[i] for values in combinations} - {""}) for i in range(len(PRESENT_VALUE_FILTERS))]
        for name, values in zip(PRESENT_VALUE_FILTERS, present, strict=True):
            self.filters[name].extra["choices"] = [(value, value) for value in values]
        # Jobs the viewer rates in a blind study: a list filtered by what the rules found leaves
        # them out, since being in it would say what the rules found on them.
        self.blinded = blinded

    def search(self, queryset, name, value):
        # Every word typed, each in the id, the name or the user: "gpt2 medium" finds gpt2-medium-owt,
        # which the words with their space between them did not; "lena gpt2" is lena's gpt2 runs.
        for word in dict.fromkeys(value.split()[:SEARCH_WORDS]):
            found = Q(external_id__icontains=word) | Q(name__icontains=word) | Q(user__icontains=word)
            cluster, slash, external_id = word.partition("/")
            if slash and cluster and external_id:  # a job's id as the pages write it: "alpha/4813845"
                found |= Q(cluster__name__iexact=cluster, external_id__icontains=external_id)
            queryset = queryset.filter(found)
        return queryset

    def with_category(self, queryset, name, value):
        current = Finding.objects.filter(job=OuterRef("pk"), category=value, result__is_current=True)
        return queryset.filter(Exists(current)).exclude(pk__in=self.blinded)

    def with_status(self, queryset, name, value):
        if value == NOT_TRIAGED:  # queued, or lost with a broker outage until the sweep re-queues it
            return without_current_triage(queryset).exclude(pk__in=self.blinded)
        current = JobTriage.objects.filter(job=OuterRef("pk"), status=value, is_current=True)
        return queryset.filter(Exists(current)).exclude(pk__in=self.blinded)

    def with_answer(self, queryset, name, value):
        # What people answered on a job's causes says what the rules found: not for a blind rater.
        return feedback.answered(queryset, value, self.form.cleaned_data.get("category")).exclude(pk__in=self.blinded)

    def started_from(self, queryset, name, value):
        return queryset.filter(start_time__gte=utc_day_start(value))

    def started_to(self, queryset, name, value):
        if value == date.max:  # no day after it to end before; every job started by its end
            return queryset
        return queryset.filter(start_time__lt=utc_day_start(value + timedelta(days=1)))

    def with_util_source(self, queryset, name, value):
        return queryset.filter(UTIL_SOURCES[value])

    def sorted(self, queryset, name, value):
        if value == RECOVERABLE:
            queryset = recoverable_hours(queryset, self.form.cleaned_data.get("category"), self.blinded)
        return queryset.order_by(SORTS[value][1], "pk")


def recoverable_hours(jobs, category: str = "", blinded: set[int] = frozenset()):
    """The jobs with `recoverable_gpu_hours`: the GPU-hours their current findings attribute (of `category`'s
    cause alone when one is chosen, as its cause page lists them), None for a job with none. None too for a
    job its viewer rates in a blind study (`blinded`): its place in the order would say what was found."""
    found = Finding.objects.filter(job=OuterRef("pk"), result__is_current=True)
    if category:
        found = found.filter(category=category)
    hours = Subquery(found.order_by().values("job").annotate(total=Sum("gpu_hours")).values("total"))
    if blinded:
        hours = Case(When(pk__in=blinded, then=Value(None, output_field=FloatField())), default=hours)
    return jobs.annotate(recoverable_gpu_hours=hours)
