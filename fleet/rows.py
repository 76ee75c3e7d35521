"""Inserting many new rows at once, for the importer's hot path.

`insert_rows(model, columns, rows)` writes rows of values already in the database's form with one
prepared statement (no ids come back): the cheapest way, for rows nothing refers to.
`update_rows(model, columns, rows)` sets columns of many rows by pk the same way.
`insert_new(objs)` does what `Model.objects.bulk_create(objs)` does for new objects of a plain
model (no parent models), pks set, in a few statements with RETURNING. The ORM's bulk_create
assembles a placeholder and a parameter list for every single value through several layers of
calls; for a job's 34 columns that is most of the cost of storing its row. Here each column's
conversion is chosen once per batch, and plain columns (text, numbers, foreign keys) are passed
as they are. Any column of another kind goes through the field's own `get_db_prep_save`, so the
values written are the ORM's (a test holds both to the same rows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.db import connections, models, router
from django.db.models.fields import AutoFieldMixin

# Column types whose value goes to the database as it is (after int/float for numbers, which
# may come as numpy scalars): what their `get_db_prep_save` would return for values of the
# right type.
_TEXT = (models.CharField, models.TextField)
_INTEGERS = (models.IntegerField, models.BigIntegerField, models.SmallIntegerField)


def insert_new(objs: Sequence[models.Model]) -> None:
    """Insert new objects of one model and set their pks, like `bulk_create(objs)`."""
    if not objs:
        return
    model = type(objs[0])
    meta = model._meta
    using = router.db_for_write(model)
    connection = connections[using]
    generated_pk = isinstance(meta.pk, AutoFieldMixin)
    if meta.parents or not generated_pk or not connection.features.can_return_rows_from_bulk_insert:
        model.objects.using(using).bulk_create(objs)  # none of the importer's models, on SQLite >= 3.35 or PostgreSQL
        return
    fields = [field for field in meta.concrete_fields if field is not meta.pk]
    converters = [_converter(field, connection) for field in fields]
    size = max(1, connection.ops.bulk_batch_size(fields, objs))
    with connection.cursor() as cursor:
        for first in range(0, len(objs), size):
            batch = objs[first : first + size]
            values = [convert(obj) for obj in batch for convert in converters]
            cursor.execute(_insert_statement(connection, meta, fields, len(batch), returning=True), values)
            # In the order of the rows, as `bulk_create` itself relies on for both backends.
            for obj, (pk,) in zip(batch, cursor.fetchall(), strict=True):
                obj.pk = pk
                obj._state.adding = False
                obj._state.db = using


def insert_rows(model: type[models.Model], columns: Sequence[str], rows: Sequence[tuple]) -> None:
    """Insert rows of `columns` (attribute names, such as "job_id") whose values are ready for the
    database (times adapted by `connection.ops.adapt_datetimefield_value`), with one prepared
    statement; no ids come back."""
    if not rows:
        return
    meta = model._meta
    connection = connections[router.db_for_write(model)]
    fields = [meta.get_field(name) for name in columns]
    with connection.cursor() as cursor:
        cursor.executemany(_insert_statement(connection, meta, fields, 1), rows)


def update_rows(model: type[models.Model], columns: Sequence[str], rows: Sequence[tuple]) -> None:
    """Set `columns` (attribute names) of many rows, each to its own values, with one prepared statement:
    each row is the new values, ready for the database (`field.get_db_prep_save`), then the pk of the row
    to change. `bulk_update` writes a CASE over every pk of a batch for each column instead, which SQLite
    took 14 s over for 50,000 jobs' costs."""
    if not rows:
        return
    meta = model._meta
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(meta.get_field(name).column)} = %s" for name in columns)
    # Names from the model's own metadata, quoted; the values go as parameters.
    statement = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.executemany(statement, rows)


def _insert_statement(connection, meta, fields: list[models.Field], rows: int, *, returning: bool = False) -> str:
    """INSERT of `rows` rows of these fields' columns, with a placeholder for each value."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    # Names from the model's own metadata, quoted; the values go as parameters.
    statement = f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES {', '.join([row] * rows)}"  # noqa: S608
    return f"{statement} RETURNING {quote(meta.pk.column)}" if returning else statement


def _converter(field: models.Field, connection) -> Callable[[models.Model], object]:
    """How to get an object's value of `field` ready for the database."""
    attname = field.attname
    if isinstance(field, models.ForeignKey):
        target = field.target_field.attname

        def related_id(obj):
            value = getattr(obj, attname)
            if value is None and field.is_cached(obj):  # assigned before the related object was saved
                value = getattr(getattr(obj, field.name), target)
            return value

        return related_id
    if isinstance(field, _TEXT):
        return lambda obj: _checked(getattr(obj, attname), str, field)
    if isinstance(field, models.FloatField):
        return lambda obj: None if (value := getattr(obj, attname)) is None else float(value)
    if isinstance(field, _INTEGERS):
        return lambda obj: None if (value := getattr(obj, attname)) is None else int(value)
    if isinstance(field, models.DateTimeField) and not (field.auto_now or field.auto_now_add):
        adapt = connection.ops.adapt_datetimefield_value
        return lambda obj: adapt(getattr(obj, attname))
    return lambda obj: field.get_db_prep_save(field.pre_save(obj, True), connection)


def _checked(value, kind: type, field: models.Field):
    """The value when it is already of the column's type (or None), else the field's conversion."""
    if value is None or type(value) is kind:
        return value
    return field.get_prep_value(value)
