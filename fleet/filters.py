"""The filters of the operator's lists (ingest runs, the audit log), parsed and validated by
django-filter: a value the list does not know is a form error the page shows, never a server error
or a silently empty list."""

from __future__ import annotations

import django_filters
from django.db.models import Count

from fleet.connectors.models import Connector
from fleet.models import AuditEvent, IngestRun, PersonalToken

# `by=token:<prefix>`: the runs a machine token pushed (a username cannot hold ':'). Not a secret.
TOKEN_PREFIX = "token:"  # noqa: S105


def _counted(choices, counts: dict) -> list[tuple[str, str]]:
    return [(value, f"{label} ({counts.get(value, 0):,})") for value, label in choices]


def _enum_filter(choices, empty_label: str, name: str, what: str) -> django_filters.ChoiceFilter:
    """A menu of a TextChoices' values; any other value is an error naming the ones there are."""
    return django_filters.ChoiceFilter(
        choices=choices.choices,
        empty_label=empty_label,
        label=name,
        error_messages={"invalid_choice": f"“%(value)s” is not {what}; choose one of {', '.join(choices.values)}."},
    )


def narrowed(filterset, everything):
    """(the rows to show, whether a filter narrowed them): a list with a value it does not know shows
    every row, and its form says what was wrong."""
    filtered = filterset.is_bound and filterset.is_valid() and any(filterset.form.cleaned_data.values())
    return (filterset.qs if filtered else everything), filtered


class IngestRunFilter(django_filters.FilterSet):
    status = _enum_filter(IngestRun.Status, "Any status", "Status", "a run status")
    source = _enum_filter(IngestRun.Source, "Any source", "Source", "a source of runs")
    by = django_filters.ChoiceFilter(
        choices=[],
        method="started_by",
        empty_label="Anyone",
        label="By",
        error_messages={
            "invalid_choice": "No run was uploaded or pushed by “%(value)s” (a user name, or token:<prefix> for a "
            "machine token)."
        },
    )

    # By name, as the Connectors page calls them (a name is unique). A deleted connector's pulls are
    # under no connector any more (IngestRun.connector is SET_NULL): source=connector still finds them.
    connector = django_filters.ChoiceFilter(
        choices=[],
        field_name="connector__name",
        empty_label="Any connector",
        label="Connector",
        error_messages={
            "invalid_choice": "There is no connector named “%(value)s” (choose one of its names on Connectors)."
        },
    )

    class Meta:
        model = IngestRun
        fields = ["status", "source", "by", "connector"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Each choice with how many runs it has (of all runs, whatever the other filters).
        runs = IngestRun.objects.order_by()
        by_status = dict(runs.values_list("status").annotate(n=Count("pk")))
        by_source = dict(runs.values_list("source").annotate(n=Count("pk")))
        self.filters["status"].extra["choices"] = _counted(IngestRun.Status.choices, by_status)
        self.filters["source"].extra["choices"] = _counted(IngestRun.Source.choices, by_source)
        people = runs.filter(created_by__isnull=False).values_list("created_by__username").annotate(n=Count("pk"))
        tokens = (
            runs.filter(created_by__isnull=True, api_key__isnull=False)
            .values_list("api_key__prefix", "api_key__name")
            .annotate(n=Count("pk"))
        )
        self.filters["by"].extra["choices"] = [
            *((username, f"{username} ({n:,})") for username, n in sorted(people)),
            *((f"{TOKEN_PREFIX}{prefix}", f"token {name} ({prefix}…) ({n:,})") for prefix, name, n in sorted(tokens)),
        ]
        # Every connector, a never-pulled one too: its page links here, and "(0)" says it has no pulls.
        pulled = Connector.objects.annotate(n=Count("runs")).order_by("name").values_list("name", "n")
        self.filters["connector"].extra["choices"] = [(name, f"{name} ({n:,})") for name, n in pulled]

    def started_by(self, queryset, name, value):
        if value.startswith(TOKEN_PREFIX):
            return queryset.filter(created_by__isnull=True, api_key__prefix=value.removeprefix(TOKEN_PREFIX))
        return queryset.filter(created_by__username=value)


class AuditEventFilter(django_filters.FilterSet):
    """The audit log by kind of action and by who did it (the name kept on the entry, so a deleted
    user's entries are still found; `system` for commands and scheduled tasks)."""

    action = django_filters.ChoiceFilter(
        choices=[],
        empty_label="Any action",
        label="Action",
        error_messages={"invalid_choice": "No entry records the action “%(value)s”."},
    )
    user = django_filters.ChoiceFilter(
        choices=[],
        field_name="actor_name",
        empty_label="Anyone",
        label="Who",
        error_messages={"invalid_choice": "No entry was made by “%(value)s”."},
    )

    class Meta:
        model = AuditEvent
        fields = ["action", "user"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        events = AuditEvent.objects.order_by()
        for name, column in (("action", "action"), ("user", "actor_name")):
            counts = events.values_list(column).annotate(n=Count("pk")).order_by(column)
            self.filters[name].extra["choices"] = [(value, f"{value} ({n:,})") for value, n in counts]


class PersonalTokenFilter(django_filters.FilterSet):
    """The operators' list of personal tokens (on the tokens page) by owner: the people who have one,
    each with how many."""

    owner = django_filters.ChoiceFilter(
        choices=[],
        field_name="owner__username",
        empty_label="Anyone",
        label="Owner",
        error_messages={"invalid_choice": "Nobody called “%(value)s” has a personal token."},
    )

    class Meta:
        model = PersonalToken
        fields = ["owner"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        tokens = PersonalToken.objects.order_by()
        counts = tokens.values_list("owner__username").annotate(n=Count("pk")).order_by("owner__username")
        self.filters["owner"].extra["choices"] = [(name, f"{name} ({n:,})") for name, n in counts]
