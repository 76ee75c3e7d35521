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

import base64
import binascii
import json
import operator
from datetime import datetime
from functools import reduce

from django import forms
from django.core.exceptions import FieldDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Max, Q
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from fleet.quoting import quoted, shortened

# DRF's own: the renderer override (`?format=json`), handled before a view runs.
ALWAYS_TAKEN = {"format"}


class Keyset:
    """Where a page of a list ordered by `ordering` (model field names, `-` for descending, the last
    one unique) ends or begins: that row's values of those fields, as an opaque URL-safe token."""

    def __init__(self, model, ordering: list[str]):
        self.model = model
        self.fields = [(name.removeprefix("-"), name.startswith("-")) for name in ordering]

    @classmethod
    def of(cls, queryset) -> Keyset | None:
        """The keyset of a queryset's explicit ordering, or None when it cannot hold one (no ordering,
        a related field or an expression, or no unique last field to break ties)."""
        pk = queryset.model._meta.pk.name
        ordering = [
            name.replace("pk", pk) if name.removeprefix("-") == "pk" else name
            for name in queryset.query.order_by
            if isinstance(name, str)
        ]
        if not ordering or len(ordering) != len(queryset.query.order_by):
            return None
        try:
            fields = [queryset.model._meta.get_field(name.removeprefix("-")) for name in ordering]
        except FieldDoesNotExist:
            return None
        if any(field.is_relation or field.null for field in fields) or not (
            fields[-1].primary_key or fields[-1].unique
        ):
            return None
        return cls(queryset.model, ordering)

    def token(self, row) -> str:
        values = [self.model._meta.get_field(name).value_to_string(row) for name, _ in self.fields]
        return base64.urlsafe_b64encode(json.dumps(values, separators=(",", ":")).encode()).decode().rstrip("=")

    def values(self, token: str) -> list:
        """The row values a token holds; ValueError for anything that is no token of this list's."""
        try:
            raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise ValueError(token) from None
        if not isinstance(raw, list) or len(raw) != len(self.fields) or not all(isinstance(v, str) for v in raw):
            raise ValueError(token)
        try:
            values = [
                self.model._meta.get_field(name).to_python(value)
                for (name, _), value in zip(self.fields, raw, strict=True)
            ]
        except (DjangoValidationError, OverflowError, ValueError):
            raise ValueError(token) from None
        for value in values:  # what a database can compare: no naive time, no integer past 64 bits
            if (isinstance(value, datetime) and value.tzinfo is None) or (
                isinstance(value, int) and not -(2**63) <= value < 2**63
            ):
                raise ValueError(token)
        return values

    def beyond(self, values: list, forward: bool) -> Q:
        """The rows after these values in the list's order (forward), or before them."""
        parts, equal = [], Q()
        for (name, descending), value in zip(self.fields, values, strict=True):
            parts.append(equal & Q(**{f"{name}__{'lt' if descending == forward else 'gt'}": value}))
            equal &= Q(**{name: value})
        return reduce(operator.or_, parts)

    def reverse(self) -> list[str]:
        return [("" if descending else "-") + name for name, descending in self.fields]


class PageNumbers(PageNumberPagination):
    """DRF's page numbers, with `page` a whole number from 1 (or `last`), else a 400, and pages that
    hold still while a script walks them.

    A list is ordered newest first, so a row stored while a script pages through it (an import
    landing, a connector's pull) pushed every later row one place down: page 2 began with page 1's
    last row again. So a list is read as of its first page: `max_id` (the highest id there was when
    it was read) bounds the rows, and `next` and `previous` carry it, so every page of one walk is a
    page of the same rows and `count` stays put; rows stored since are for the next walk (a sync's
    `changed_after`). Without `max_id`, the first page sets it.

    Rows deleted during a walk shifted it too: page 3 is an offset, so a row gone from pages 1-2 moved
    the rest up by one and the walk never saw the row that crossed onto page 2. So `next` also carries
    `after` (the last row's sort key, a `Keyset` token) and `previous` `before`: a page of a walk is the
    rows after where the last one ended. Its page number is then a label and `count` what is left."""

    snapshot_query_param = "max_id"
    snapshot_description = (
        "Only rows whose id is at most this: the list as it was when its first page was read. Its `next` and "
        "`previous` links carry it, so rows stored while you page through neither shift the pages (a row "
        "listed twice) nor show up halfway; leave it out on the first page."
    )

    after_query_param, before_query_param = "after", "before"
    after_description = (
        "Where the page before this one ended (an opaque token): its `next` link carries it, so a row deleted "
        "from an earlier page does not move the rest of the list up past you. The page number is then a label."
    )
    before_description = "Where the page after this one began: its `previous` link carries it, as `after`."

    def paginate_queryset(self, queryset, request, view=None):
        page = request.query_params.get(self.page_query_param, "")
        # Not int(page) >= 1: int() of over 4,300 digits is a ValueError (a 500); such a page is past the last.
        if page and page not in self.last_page_strings and not (page.isascii() and page.isdigit() and page.strip("0")):
            raise ValidationError({self.page_query_param: ["A page is a whole number from 1 (or last)."]})
        self.snapshot = self._snapshot(queryset, request)
        if self.snapshot is not None:
            queryset = queryset.filter(pk__lte=self.snapshot)
        self.keyset, self.cursor = Keyset.of(queryset), None
        if self.keyset is not None:
            self.cursor = self._cursor(request)
        if self.cursor is None:
            try:
                rows = super().paginate_queryset(queryset, request, view)
            except NotFound:
                # DRF says "Invalid page.", as for a page that is no number: say where the list ends.
                size = self.get_page_size(request)
                last = max(1, -(-queryset.count() // size))
                shown = page if len(page) <= 20 else page[:20] + "…"
                raise NotFound(f"There is no page {shown}: the last is {last}, at {size} a page.") from None
            if rows is not None:
                self.count = self.page.paginator.count
                self.number = self.page.number
                self.has_next, self.has_previous = self.page.has_next(), self.page.has_previous()
            self.rows = rows or []
            return rows
        return self._keyset_page(queryset, request)

    def _cursor(self, request) -> tuple[bool, list] | None:
        """(forward, the row values) from `after` or `before`, or None without either."""
        after = request.query_params.get(self.after_query_param, "")
        before = request.query_params.get(self.before_query_param, "")
        if after and before:
            message = "Give after or before, not both: follow a page's next or previous link."
            raise ValidationError({self.after_query_param: [message], self.before_query_param: [message]})
        if not (after or before):
            return None
        name = self.after_query_param if after else self.before_query_param
        try:
            return bool(after), self.keyset.values(after or before)
        except ValueError:
            message = (
                f"This {name} is not one of this list's: follow its pages' next and previous links, or leave it out."
            )
            raise ValidationError({name: [message]}) from None

    def _keyset_page(self, queryset, request) -> list:
        """The page after (or before) the row a link's cursor names, whatever was deleted on the way:
        a page of a walk is where the last one ended, not an offset from the list's start."""
        self.request = request
        size = self.get_page_size(request)
        forward, values = self.cursor
        beyond = queryset.filter(self.keyset.beyond(values, forward))
        rows = list((beyond if forward else beyond.order_by(*self.keyset.reverse()))[: size + 1])
        more, rows = len(rows) > size, rows[:size]
        self.rows = rows if forward else rows[::-1]
        self.count = queryset.count()
        page = request.query_params.get(self.page_query_param, "")
        self.number = int(page) if page.isdigit() and len(page) <= 9 else 1 if forward else 2
        self.has_next, self.has_previous = (more, True) if forward else (True, more)
        return self.rows

    def get_paginated_response(self, data):
        return Response(
            {"count": self.count, "next": self.get_next_link(), "previous": self.get_previous_link(), "results": data}
        )

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

    def _link(self, number: int, cursor: tuple[str, str] | None) -> str:
        url = self.request.build_absolute_uri()
        for name in (self.after_query_param, self.before_query_param):
            url = remove_query_param(url, name)
        if number <= 1 and cursor is None:
            url = remove_query_param(url, self.page_query_param)
        else:
            url = replace_query_param(url, self.page_query_param, max(number, 1))
        if cursor is not None:
            url = replace_query_param(url, *cursor)
        return self._with_snapshot(url)

    def _edge(self, name: str, row) -> tuple[str, str] | None:
        """The cursor a link carries: where this page ends (`after` its last row) or begins; with no row
        on the page (its rows deleted), the cursor it was asked with, turned round."""
        if self.keyset is None:
            return None
        if row is not None:
            return name, self.keyset.token(row)
        if self.cursor is not None:
            token = self.request.query_params.get(self.after_query_param) or self.request.query_params.get(
                self.before_query_param
            )
            return name, token
        return None

    def get_next_link(self):
        if not self.has_next:
            return None
        return self._link(self.number + 1, self._edge(self.after_query_param, self.rows[-1] if self.rows else None))

    def get_previous_link(self):
        if not self.has_previous:
            return None
        return self._link(self.number - 1, self._edge(self.before_query_param, self.rows[0] if self.rows else None))

    def get_paginated_response_schema(self, schema):
        """DRF's, its `next` and `previous` described as they are (DRF's examples, `/accounts/?page=4`,
        showed links without the `max_id` and `after` every real one carries)."""
        paginated = super().get_paginated_response_schema(schema)
        properties = paginated["properties"]
        properties["count"]["description"] = (
            "How many rows the list has (those with an id up to the walk's max_id, less any deleted since)."
        )
        for name, carries in (("next", "after: where this page ended"), ("previous", "before: where it began")):
            properties[name].pop("example", None)
            properties[name]["description"] = (
                f"The {name} page's address, null when there is none. It carries `max_id` and `{carries}`; "
                "follow it as it is rather than building page numbers."
            )
        return paginated

    def get_schema_operation_parameters(self, view):
        snapshot = {
            "name": self.snapshot_query_param,
            "required": False,
            "in": "query",
            "description": self.snapshot_description,
            "schema": {"type": "integer", "minimum": 0},
        }
        cursors = [
            {
                "name": name,
                "required": False,
                "in": "query",
                "description": description,
                "schema": {"type": "string"},
            }
            for name, description in (
                (self.after_query_param, self.after_description),
                (self.before_query_param, self.before_description),
            )
        ]
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:  # DRF's says nothing of `last`
                parameter["description"] = (
                    "A page number from 1 (or `last`); past the last page is a 404 saying which is the last. "
                    "Rather than counting pages, follow `next`."
                )
                # DRF's is any integer: a client built from it sent 0 (a 400) and could not send `last`.
                parameter["schema"] = {
                    "oneOf": [
                        {"type": "integer", "minimum": 1},
                        {"type": "string", "enum": list(self.last_page_strings)},
                    ]
                }
        return [*parameters, snapshot, *cursors]


class FormatNamingNegotiation(DefaultContentNegotiation):
    """DRF's content negotiation, whose refusal of a `?format=` no renderer of the view has is a 400 naming
    the formats it has: DRF answered 404 "Not found.", as for a job that does not exist, to a script asking
    the teams report for `?format=csv`. A suffix (`/jobs/1.5/`) is part of the address: still a 404."""

    def select_renderer(self, request, renderers, format_suffix=None):
        asked = request.query_params.get(self.settings.URL_FORMAT_OVERRIDE) if not format_suffix else None
        if asked and not any(renderer.format == asked for renderer in renderers):
            formats = ", ".join(dict.fromkeys(renderer.format for renderer in renderers))
            raise ValidationError({"format": [f"There is no format {quoted(asked)} here; it answers {formats}."]})
        return super().select_renderer(request, renderers, format_suffix)


class FiltersNamingChoices(DjangoFilterBackend):
    """django-filter's backend, whose refusal of a value a choice filter does not have lists the
    values it has: "Select a valid choice. checkpointing is not one of the available choices." left
    a script's author to look them up in the schema."""

    def get_filterset(self, request, queryset, view):
        filterset = super().get_filterset(request, queryset, view)
        for name, field in filterset.form.fields.items() if filterset is not None else ():
            if isinstance(field, forms.ChoiceField):
                values = ", ".join(str(value) for value, _ in field.choices if value != "")
                # The value quoted here, not the field's %(value)s: a long one by its opening and length.
                # The message is %-formatted with the field's params: a % in it must not be read as one.
                sent = quoted(request.query_params.get(name, ""))
                field.error_messages["invalid_choice"] = (
                    f"Select a valid choice. {sent} is not one of the available choices: {values}.".replace("%", "%%")
                )
        return filterset


class KnownParameters:
    """A viewset mixin: its list action refuses query parameters it does not take, with a 400
    naming them and listing those it takes (its filters, `page`, and `list_parameters`); so does
    each action named in `action_parameters`, with those it takes."""

    list_parameters: tuple[str, ...] = ()  # what the list reads itself, beside filters and paging
    # Other actions that refuse what they do not take, each with what it takes (`?start=` of a download).
    action_parameters: dict[str, tuple[str, ...]] = {}

    def taken_parameters(self) -> list[str]:
        names = list(self.list_parameters)
        for backend in getattr(self, "filter_backends", ()):
            if issubclass(backend, DjangoFilterBackend):
                filterset = backend().get_filterset_class(self, self.get_queryset())
                names += filterset.base_filters if filterset else []
        paginator = getattr(self, "paginator", None)
        if paginator is not None:
            names.append(paginator.page_query_param)
            names += [
                getattr(paginator, name)
                for name in ("snapshot_query_param", "after_query_param", "before_query_param")
                if hasattr(paginator, name)
            ]
        return names

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)  # who may ask first: a 401 or 403 before a 400
        if self.action == "list":
            taken, what = self.taken_parameters(), "This list"
        elif self.action in self.action_parameters:
            taken, what = list(self.action_parameters[self.action]), "This address"
        else:
            return
        unknown = sorted(set(request.query_params) - set(taken) - ALWAYS_TAKEN)
        if unknown:
            message = f"{what} takes no such parameter; it takes {', '.join(taken)}."
            # Each by its name, a long one by its opening: not a 5,000-character key sent back.
            raise ValidationError({shortened(name): [message] for name in unknown})
