"""Form fields shared by the apps' forms and API filters."""

from __future__ import annotations

from datetime import UTC

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone

from fleet.canonical import as_utc
from fleet.quoting import quoted, shortened


class UtcDateTimeMixin:
    """A date-time field whose value is the same instant in UTC.

    Python takes UTC offsets up to ±23:59, PostgreSQL refuses any beyond ±15:59 (a query with one
    fails), and an instant near year 1 or 9999 may have no datetime in UTC at all: in UTC the first
    is any other instant, the second a validation error, never a server error."""

    def to_python(self, value):
        # Django reads a time without an offset in the active zone, a reader's own on a page
        # (config.middleware.UserTimeZoneMiddleware): these fields say UTC, and mean it.
        with timezone.override(UTC):
            moment = super().to_python(value)
        if moment is None:
            return None
        try:
            return as_utc(moment)
        except OverflowError as exc:
            raise ValidationError("Enter a date and time between the years 1 and 9999 in UTC.", code="invalid") from exc

    def prepare_value(self, value):
        with timezone.override(UTC):  # shown as it is read: in UTC
            return super().prepare_value(value)


class UtcDateTimeField(UtcDateTimeMixin, forms.DateTimeField):
    pass


MAX_ROW_ID = 2**63 - 1  # the largest BIGINT; SQLite cannot even compare a larger number (OverflowError)


class YesNoField(forms.Field):
    """A yes/no from a query string in the usual spellings (true/false, 1/0, yes/no, any case);
    empty is no answer (None), anything else an error naming the spellings, never silently ignored
    (django-filter's BooleanFilter drops what it does not know and filters nothing)."""

    SPELLINGS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
    default_error_messages = {"invalid": "Use true or false (or 1/0, yes/no)."}

    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            return self.SPELLINGS[str(value).strip().lower()]
        except KeyError:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from None


class RowIdField(forms.IntegerField):
    """A row's id from a query string: a whole number from 1 to the largest a database can compare.

    Its errors are the filter's own words, when it gives them: `not_a_number` ("Ingest run must be
    a run number, such as run=42", to which "(not 'abc')" is added) for text, zero or less; `missing`
    ("No ingest run #{number}.") for a number past the largest id, which is refused here, before any
    query: no row has it, and SQLite cannot even bind it (OverflowError, a server error), where
    PostgreSQL compares it as a numeric and finds nothing. Without them, Django's ("Ensure this
    value is less than or equal to 9223372036854775807.")."""

    def __init__(self, *, not_a_number: str = "", missing: str = "", **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ROW_ID)
        self.not_a_number, self.missing = not_a_number, missing
        super().__init__(**kwargs)

    def to_python(self, value):
        try:
            number = super().to_python(value)
        except ValidationError:
            if self.not_a_number:
                raise self._not_a_number(value) from None
            raise
        if number is None:
            return None
        if number < 1 and self.not_a_number:
            raise self._not_a_number(value)
        if number > MAX_ROW_ID and self.missing:
            raise ValidationError(self.missing.format(number=shortened(str(number))), code="max_value")
        return number

    def _not_a_number(self, value) -> ValidationError:
        return ValidationError(f"{self.not_a_number} (not {quoted(str(value).strip(), 40)}).", code="invalid")
