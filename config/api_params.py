"""The query string of the API's lists: what a list takes, and a 400 for what it does not.

A script that misspells a filter (`?form=` for `?from=`) or guesses one (`?ordering=`,
`?page_size=`) would otherwise get every row, as if filtered, and never know. So a list answers
400 to a parameter it does not take, naming the ones it does, and to a page number that is no page
number (DRF says 404 "Invalid page." for both a word and a page past the last; only the latter is
a missing page). An empty value is still no value, as in the pages' filter forms.

Here and not in `config.api`: DRF reads the pagination class from the settings as it loads its
generic views, which `config.api` imports.
"""

from __future__ import annotations

from django import forms
from django.db.models import Max
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.utils.urls import replace_query_param

# DRF's own: the renderer override (`?format=json`), handled before a view runs.
ALWAYS_TAKEN = {"format"}


class PageNumbers(PageNumberPagination):
    """DRF's page numbers, with `page` a whole number from 1 (or `last`), else a 400, and pages that
    hold still while a script walks them.

    A list is ordered newest first, so a row stored while a script pages through it (an import
    landing, a connector's pull) pushed every later row one place down: page 2 began with page 1's
    last row again. So a list is read as of its first page: `max_id` (the highest id there was when
    it was read) bounds the rows, and `next` and `previous` carry it, so every page of one walk is a
    page of the same rows and `count` stays put; rows stored since are for the next walk (a sync's
    `changed_after`). Without `max_id`, the first page sets it."""

    snapshot_query_param = "max_id"
    snapshot_description = (
        "Only rows whose id is at most this: the list as it was when its first page was read. Its `next` and "
        "`previous` links carry it, so rows stored while you page through neither shift the pages (a row "
        "listed twice) nor show up halfway; leave it out on the first page."
    )

    def paginate_queryset(self, queryset, request, view=None):
        page = request.query_params.get(self.page_query_param, "")
        # Not int(page) >= 1: int() of over 4,300 digits is a ValueError (a 500); such a page is past the last.
        if page and page not in self.last_page_strings and not (page.isascii() and page.isdigit() and page.strip("0")):
            raise ValidationError({self.page_query_param: ["A page is a whole number from 1 (or last)."]})
        self.snapshot = self._snapshot(queryset, request)
        if self.snapshot is not None:
            queryset = queryset.filter(pk__lte=self.snapshot)
        return super().paginate_queryset(queryset, request, view)

    def _snapshot(self, queryset, request) -> int | None:
        given = request.query_params.get(self.snapshot_query_param, "")
        if given:
            if not (given.isascii() and given.isdigit()):
                raise ValidationError(
                    {self.snapshot_query_param: ["A whole number: the max_id of the first page's next link."]}
                )
            # Past any id a database holds (and int() of over 4,300 digits is a ValueError): as good as no bound.
            return int(given) if len(given) <= 18 else 10**18
        # Read before the page: a row stored between the two is then in neither, not on page 1 only.
        return queryset.model._default_manager.aggregate(highest=Max("pk"))["highest"]

    def _with_snapshot(self, url: str | None) -> str | None:
        if url is None or self.snapshot is None:
            return url
        return replace_query_param(url, self.snapshot_query_param, self.snapshot)

    def get_next_link(self):
        return self._with_snapshot(super().get_next_link())

    def get_previous_link(self):
        return self._with_snapshot(super().get_previous_link())

    def get_schema_operation_parameters(self, view):
        snapshot = {
            "name": self.snapshot_query_param,
            "required": False,
            "in": "query",
            "description": self.snapshot_description,
            "schema": {"type": "integer", "minimum": 0},
        }
        return [*super().get_schema_operation_parameters(view), snapshot]


class FiltersNamingChoices(DjangoFilterBackend):
    """django-filter's backend, whose refusal of a value a choice filter does not have lists the
    values it has: "Select a valid choice. checkpointing is not one of the available choices." left
    a script's author to look them up in the schema."""

    def get_filterset(self, request, queryset, view):
        filterset = super().get_filterset(request, queryset, view)
        for field in filterset.form.fields.values() if filterset is not None else ():
            if isinstance(field, forms.ChoiceField):
                values = ", ".join(str(value) for value, _ in field.choices if value != "")
                # %(value)s is filled in by the field; a % in a value must not be read as a placeholder.
                field.error_messages["invalid_choice"] = (
                    "Select a valid choice. %(value)s is not one of the available choices: "
                    + values.replace("%", "%%")
                    + "."
                )
        return filterset


class KnownParameters:
    """A viewset mixin: its list action refuses query parameters it does not take, with a 400
    naming them and listing those it takes (its filters, `page`, and `list_parameters`)."""

    list_parameters: tuple[str, ...] = ()  # what the list reads itself, beside filters and paging

    def taken_parameters(self) -> list[str]:
        names = list(self.list_parameters)
        for backend in getattr(self, "filter_backends", ()):
            if issubclass(backend, DjangoFilterBackend):
                filterset = backend().get_filterset_class(self, self.get_queryset())
                names += filterset.base_filters if filterset else []
        paginator = getattr(self, "paginator", None)
        if paginator is not None:
            names.append(paginator.page_query_param)
            names += [paginator.snapshot_query_param] if hasattr(paginator, "snapshot_query_param") else []
        return names

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)  # who may ask first: a 401 or 403 before a 400
        if self.action != "list":
            return
        taken = self.taken_parameters()
        unknown = sorted(set(request.query_params) - set(taken) - ALWAYS_TAKEN)
        if unknown:
            message = f"This list takes no such parameter; it takes {', '.join(taken)}."
            raise ValidationError({name: [message] for name in unknown})
