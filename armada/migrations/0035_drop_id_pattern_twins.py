"""Fewer index entries for every lease, submit and report: the ``varchar_pattern_ops`` twins
that PostgreSQL gave the jobs' and the runs' primary keys go.

Every lease rewrites its job row (a new entry in each of the job table's indexes) and inserts
a run; every submit inserts jobs, every finished run rewrites both. The run's twin was read
by nothing (no query matches a run id by prefix). The job's served one query, Lookout's job
id prefix filter (``LIKE 'x%'``); where the database sorts text by code point (C, POSIX,
C.UTF-8) that filter is also written as a range that the primary key answers
(``lookout.grid.filters.starts_with``), so the twin is dropped there and kept elsewhere.

Dropped concurrently (writes go on meanwhile), so the migration runs outside a transaction;
going back builds them again, concurrently too. Nothing to do off PostgreSQL.
"""

from django.db import migrations

from armada.migration_ops import create_index_sql, sorts_by_code_point


def _twins(schema_editor) -> list[tuple[str, str]]:
    """(index name, table) of each twin this database may drop."""
    if schema_editor.connection.vendor != "postgresql":
        return []
    tables = ["armada_run"]
    if sorts_by_code_point(schema_editor.connection):
        tables.append("armada_job")
    return [(schema_editor._create_index_name(t, ["id"], suffix="_like"), t) for t in tables]


def drop_twin_indexes(apps, schema_editor) -> None:
    for name, _ in _twins(schema_editor):
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


def build_twin_indexes(apps, schema_editor) -> None:
    for name, table in _twins(schema_editor):
        sql = f"CREATE INDEX IF NOT EXISTS {name} ON {table} (id varchar_pattern_ops)"
        schema_editor.execute(create_index_sql(schema_editor.connection, sql))


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("armada", "0034_metric_fillfactor"),
    ]

    operations = [migrations.RunPython(drop_twin_indexes, build_twin_indexes)]
