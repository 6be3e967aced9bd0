"""Batched row updates that stay fast at tens of thousands of rows.

Django's ``bulk_update`` builds one ``CASE WHEN`` expression per field and row, which costs
milliseconds per row. ``bulk_update_fields`` instead sends one parameterised
``UPDATE ... WHERE pk = ?`` with many parameter sets (``executemany``: SQLite runs it as one
prepared statement, psycopg pipelines it), converting values exactly as the ORM would.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import connection
from django.db.models import (
    BooleanField,
    CharField,
    DateTimeField,
    Field,
    FloatField,
    ForeignKey,
    IntegerField,
    JSONField,
    Model,
    TextField,
)


def bulk_update_fields(objs: Sequence[Model], fields: Sequence[str]) -> int:
    """Write ``fields`` of every object in ``objs`` (all of one model); returns the row count.

    On PostgreSQL the rows go in one ``UPDATE ... FROM unnest(<one array per column>)``: one
    statement and one round trip however many rows (hundreds of pipelined single-row
    updates cost several times more). Elsewhere one parameterised ``UPDATE ... WHERE pk = ?``
    with a parameter set per row."""
    if not objs:
        return 0
    meta = type(objs[0])._meta
    model_fields = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    if connection.vendor == "postgresql":
        return _update_from_arrays(meta, model_fields, objs)
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in model_fields)
    sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s"
    params = [
        [f.get_db_prep_save(getattr(obj, f.attname), connection) for f in model_fields]
        + [meta.pk.get_db_prep_value(obj.pk, connection)]
        for obj in objs
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)
    return len(params)


def _update_from_arrays(meta: Any, model_fields: list[Field], objs: Sequence[Model]) -> int:
    quote = connection.ops.quote_name
    pk = meta.pk
    columns = [pk, *model_fields]
    arrays = [[pk.get_db_prep_value(obj.pk, connection) for obj in objs]] + [
        [f.get_db_prep_save(getattr(obj, f.attname), connection) for obj in objs]
        for f in model_fields
    ]
    names = [f"c{i}" for i in range(len(columns))]
    typed = ", ".join(f"%s::{f.db_type(connection)}[]" for f in columns)
    assignments = ", ".join(
        f"{quote(f.column)} = v.{name}" for f, name in zip(model_fields, names[1:], strict=True)
    )
    sql = (
        f"UPDATE {quote(meta.db_table)} AS t SET {assignments} "
        f"FROM unnest({typed}) AS v({', '.join(names)}) WHERE t.{quote(pk.column)} = v.c0"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, arrays)
    return len(objs)


def insert_rows(model: type[Model], rows: Sequence[Mapping[str, Any]]) -> int:
    """Insert new rows of ``model``, given as ``{attname: value}`` (fields left out take their
    default), as fast as the database allows; returns the row count. No model instances are
    built on PostgreSQL (that costs tens of microseconds a row).

    On PostgreSQL the rows go in with ``COPY ... FROM STDIN`` (several times faster than
    ``INSERT`` for thousands of rows). A database-generated primary key comes from the column
    default and is not given back. Elsewhere this is ``bulk_create``. Runs in the caller's
    transaction."""
    if not rows:
        return 0
    meta = model._meta
    if connection.vendor != "postgresql":
        model.objects.bulk_create([model(**row) for row in rows], batch_size=2000)
        return len(rows)
    fields = [
        f for f in meta.concrete_fields if not (f.primary_key and getattr(f, "db_returning", False))
    ]
    _copy_into(meta.db_table, fields, rows)
    return len(rows)


def insert_select_sql(
    model: type[Model], given: Mapping[str, tuple[str, Sequence[Any]]], source: str
) -> tuple[str, list]:
    """``INSERT INTO`` ``model``'s table ``SELECT ... FROM source``, with its parameters: each
    field named in ``given`` (attname -> (SQL expression over ``source``, its parameters))
    takes that expression, every other field its default (a parameter, converted as COPY's
    are). A database-generated primary key is left to its column default. PostgreSQL (or any
    database with ``INSERT ... SELECT`` and typed literals); for a statement of one's own,
    such as a data-modifying ``WITH``."""
    meta = model._meta
    fields = [
        f for f in meta.concrete_fields if not (f.primary_key and getattr(f, "db_returning", False))
    ]
    unknown = sorted(set(given) - {f.attname for f in fields})
    if unknown:
        raise ValueError(f"{meta.db_table} has no fields {', '.join(unknown)}")
    quote = connection.ops.quote_name
    expressions, params = [], []
    for f in fields:
        if f.attname in given:
            expression, own = given[f.attname]
            expressions.append(expression)
            params.extend(own)
        else:
            expressions.append(f"CAST(%s AS {f.db_type(connection)})")
            params.append(copy_value(f)(f.get_default()))
    columns = ", ".join(quote(f.column) for f in fields)
    sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) SELECT {', '.join(expressions)}"
    return f"{sql} FROM {source}", params


def upsert_rows(
    model: type[Model], rows: Sequence[Mapping[str, Any]], *, update_fields: Sequence[str]
) -> int:
    """Insert rows of ``model`` (given as in :func:`insert_rows`, primary key included), or,
    where a row with that primary key exists, overwrite its ``update_fields``; returns the
    row count. On PostgreSQL the rows are copied into a temporary table and merged with one
    ``INSERT ... ON CONFLICT``; elsewhere this is ``bulk_create(update_conflicts=True)``. Must
    run inside a transaction."""
    if not rows:
        return 0
    meta = model._meta
    if connection.vendor != "postgresql":
        model.objects.bulk_create(
            [model(**row) for row in rows],
            batch_size=1000,
            update_conflicts=True,
            unique_fields=[meta.pk.name],
            update_fields=list(update_fields),
        )
        return len(rows)
    quote = connection.ops.quote_name
    fields = list(meta.concrete_fields)
    columns = ", ".join(quote(f.column) for f in fields)
    table, staging = quote(meta.db_table), quote(f"staging_{meta.db_table}")
    updates = ", ".join(
        f"{quote(meta.get_field(name).column)} = EXCLUDED.{quote(meta.get_field(name).column)}"
        for name in update_fields
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} (LIKE {table}) ON COMMIT DELETE ROWS"
        )
        _copy_into(f"staging_{meta.db_table}", fields, rows)
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {staging}"
            f" ON CONFLICT ({quote(meta.pk.column)}) DO UPDATE SET {updates}"
        )
        cursor.execute(f"DELETE FROM {staging}")
    return len(rows)


def _copy_into(table: str, fields: Sequence[Field], rows: Sequence[Mapping[str, Any]]) -> None:
    """COPY ``rows`` into ``table``'s columns for ``fields`` with psycopg's ``write_row``: the
    driver writes and escapes every value by its type. Every row names the same fields
    (those of the first row); the others take their defaults, converted once."""
    quote = connection.ops.quote_name
    by_name = {f.attname: f for f in fields}
    given = [by_name[name] for name in rows[0] if name in by_name]
    if len(given) != len(rows[0]):
        unknown = sorted(set(rows[0]) - set(by_name))
        raise ValueError(f"rows for {table} name unknown fields: {', '.join(unknown)}")
    left_out = [f for f in fields if f.attname not in rows[0]]
    defaults = [copy_value(f)(f.get_default()) for f in left_out]
    # Only values that are not already what the driver should write are converted (a JSON
    # field's value becomes its JSON text); the rest pass through as they are.
    conversions = [
        (i, convert) for i, f in enumerate(given) if (convert := _copy_conversion(f)) is not None
    ]
    names = [f.attname for f in given]
    width = len(names)
    pick = operator.itemgetter(*names)  # of one name: the value itself, not a tuple
    columns = ", ".join(quote(f.column) for f in given + left_out)
    sql = f"COPY {quote(table)} ({columns}) FROM STDIN"
    # psycopg's own COPY raises psycopg's errors: wrapped, they are Django's like every other
    # query's (a lost connection must look the same to ``services.dbfaults`` wherever it broke).
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.cursor.copy(sql) as copy,
    ):
        for row in rows:
            if len(row) != width:
                raise ValueError(f"rows for {table} must all give the same fields")
            values = list(pick(row)) if width > 1 else [row[names[0]]]
            for i, convert in conversions:
                values[i] = convert(values[i])
            copy.write_row(values + defaults if defaults else values)


def _copy_conversion(field: Field) -> Callable[[Any], Any] | None:
    """How one field's value is turned into what COPY is given, or None where the value is
    given as it is (text, numbers, booleans, timestamps: the driver writes them). Chosen per
    field, not per value: Django's ``get_db_prep_save`` costs microseconds a call, too much
    at tens of thousands of rows a cycle."""
    if isinstance(field, ForeignKey):
        return _copy_conversion(field.target_field)
    if isinstance(field, JSONField):
        # The column's input is JSON text, written with the field's own encoder (one
        # instance for every value: ``json.dumps`` would make one a call). A value object
        # given for many rows (a lease's shared payload) is encoded once: the text is kept
        # by the object's id, with the object, for as long as this conversion lives (one
        # COPY), so that an id cannot be reused meanwhile.
        encode = (field.encoder or json.JSONEncoder)().encode
        texts: dict[int, tuple[Any, str]] = {}

        def convert(v: Any) -> str | None:
            if v is None:
                return None
            known = texts.get(id(v))
            if known is not None and known[0] is v:
                return known[1]
            text = encode(v)
            texts[id(v)] = (v, text)
            return text

        return convert
    if isinstance(
        field, CharField | TextField | BooleanField | IntegerField | FloatField | DateTimeField
    ):
        return None
    return lambda v: field.get_db_prep_save(v, connection)


def copy_value(field: Field) -> Callable[[Any], Any]:
    """``_copy_conversion`` of ``field``, doing nothing where it has none: a value as COPY is
    given it (a JSON field's as its text, a shared object encoded once)."""
    return _copy_conversion(field) or (lambda v: v)


# Long lists of text go to PostgreSQL as one parameter each, made here. Sent as a Python
# list, an array was quoted element by element by the driver (Django binds parameters on the
# client), which cost 45 ms for 25,000 short strings against 11 for either form below:
# - rows to join with (``values_table``, ``unnest``): an array literal (``'{"a","b"}'``),
#   a constant the planner counts, so that it plans the join for as many rows as there are;
# - a membership test (``column = ANY(...)``: ``sql_in``, the ``__any`` lookup): a JSON
#   array the server splits once before the scan (``text_array_sql``). The planner cannot
#   see into it, and probes the column's index for each value; seeing thousands of values,
#   it read the whole job table instead, which cost twice as much at 5,000 ids of 100,000
#   jobs and grows with the table, where the probes grow with the list.


def json_texts(values: Sequence[str]) -> str:
    """The parameter of :func:`text_array_sql`."""
    return json.dumps(list(values))


def text_array_sql() -> str:
    """On PostgreSQL, a ``text[]`` made from one JSON array parameter (:func:`json_texts`),
    read once before the scan."""
    return "ARRAY(SELECT json_array_elements_text(%s::json))"


def array_literal(values: Sequence[str | int]) -> str:
    """The PostgreSQL array literal of ``values`` (strings or integers; cast it with
    ``::text[]`` or ``::bigint[]``). Every string is double-quoted, with its backslashes and
    double quotes escaped, so that no string reads as NULL, an empty array or two
    elements."""
    parts = []
    for value in values:
        if isinstance(value, str):
            parts.append('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
        elif isinstance(value, int) and not isinstance(value, bool):
            parts.append(str(value))
        else:
            raise TypeError(f"array_literal takes strings and integers, not {type(value)}")
    return "{" + ",".join(parts) + "}"


def values_table(name: str, rows: Sequence[Sequence[str]]) -> tuple[str, list]:
    """A common table expression ``name`` (``"v(a, b)"``) holding ``rows`` of text, with its
    parameters: one array literal per column on PostgreSQL (``unnest``,
    :func:`array_literal`), a ``VALUES`` list elsewhere (keep such lists to a few thousand
    rows)."""
    width = len(rows[0])
    if connection.vendor == "postgresql":
        arrays = ", ".join(["%s::text[]"] * width)
        return f"{name} AS (SELECT * FROM unnest({arrays}))", [
            array_literal(c) for c in zip(*rows, strict=True)
        ]
    row = "(" + ", ".join(["%s"] * width) + ")"
    params = [value for r in rows for value in r]
    return f"{name} AS (VALUES {', '.join([row] * len(rows))})", params


def sql_in(column: str, values: Sequence[Any]) -> tuple[str, list]:
    """SQL saying ``column`` is one of ``values``, with its parameters: one parameter on
    PostgreSQL (``= ANY``; text as a JSON array, :func:`text_array_sql`), ``IN (...)``
    elsewhere (keep such lists to a few thousand)."""
    if connection.vendor == "postgresql":
        if all(isinstance(v, str) for v in values):
            return f"{column} = ANY({text_array_sql()})", [json_texts(values)]
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)
