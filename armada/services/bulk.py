"""Batched row updates that stay fast at tens of thousands of rows.

Django's ``bulk_update`` builds one ``CASE WHEN`` expression per field and row, which costs
milliseconds per row. ``bulk_update_fields`` instead sends one parameterised
``UPDATE ... WHERE pk = ?`` with many parameter sets (``executemany``: SQLite runs it as one
prepared statement, psycopg pipelines it), converting values exactly as the ORM would.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import Model


def bulk_update_fields(objs: Sequence[Model], fields: Sequence[str]) -> int:
    """Write ``fields`` of every object in ``objs`` (all of one model); returns the row count."""
    if not objs:
        return 0
    meta = type(objs[0])._meta
    model_fields = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
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
