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

from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination

# DRF's own: the renderer override (`?format=json`), handled before a view runs.
ALWAYS_TAKEN = {"format"}


class PageNumbers(PageNumberPagination):
    """DRF's page numbers, with `page` a whole number from 1 (or `last`), else a 400."""

    def paginate_queryset(self, queryset, request, view=None):
        page = request.query_params.get(self.page_query_param, "")
        if page and page not in self.last_page_strings and not (page.isascii() and page.isdigit() and int(page) >= 1):
            raise ValidationError({self.page_query_param: ["A page is a whole number from 1 (or last)."]})
        return super().paginate_queryset(queryset, request, view)


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
