"""Migrations keep the big tables writable: every index change to them after the first
migration goes through ``armada.migration_ops`` (concurrent on PostgreSQL), in a migration
that runs outside a transaction; and the operations really say CONCURRENTLY."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from django.db import NotSupportedError, connection, models
from django.db.migrations import AddIndex, RemoveIndex, RunPython, RunSQL
from django.db.migrations.loader import MigrationLoader

import armada.migrations
from armada.migration_ops import AddIndexConcurrently, create_index_sql, sorts_by_code_point

# Tables that hold data in proportion to the work done: an index built on them in a
# transaction blocks submissions, scheduling or the event stream while it is built.
BIG = {"job", "run", "event", "metricsample"}


def migrations_after_the_first():
    names = sorted(m.name for m in pkgutil.iter_modules(armada.migrations.__path__))
    for name in names[1:]:
        yield name, importlib.import_module(f"armada.migrations.{name}").Migration


@pytest.mark.parametrize(("name", "migration"), list(migrations_after_the_first()))
def test_index_changes_to_big_tables_are_concurrent(name, migration):
    concurrent = False
    for operation in migration.operations:
        if isinstance(operation, AddIndex | RemoveIndex):
            if operation.model_name_lower in BIG:
                assert type(operation).__module__ == "armada.migration_ops", (
                    f"{name}: {type(operation).__name__} on {operation.model_name}: use "
                    "armada.migration_ops (CREATE INDEX CONCURRENTLY on PostgreSQL)"
                )
            concurrent |= type(operation).__module__ == "armada.migration_ops"
        if isinstance(operation, RunSQL):
            assert "CREATE INDEX" not in str(operation.sql).upper() or (
                "CONCURRENTLY" in str(operation.sql).upper()
            ), f"{name}: raw CREATE INDEX without CONCURRENTLY"
        if isinstance(operation, RunPython) and "index" in operation.code.__name__:
            concurrent = True  # builds its index with migration_ops.create_index_sql
    if concurrent:
        assert migration.atomic is False, f"{name}: concurrent index changes need atomic = False"


def test_create_index_sql():
    sql = "CREATE INDEX i ON armada_run (finished_at)"
    expected = sql.replace("CREATE INDEX", "CREATE INDEX CONCURRENTLY")
    assert create_index_sql(connection, sql) == (
        expected if connection.vendor == "postgresql" else sql
    )
    with pytest.raises(ValueError):
        create_index_sql(type("PG", (), {"vendor": "postgresql"})(), "DROP TABLE x")


def _add_index_sql(atomic: bool) -> list[str]:
    state = MigrationLoader(connection).project_state(("armada", "0016_job_lookout_submitted_idx"))
    operation = AddIndexConcurrently(
        model_name="job", index=models.Index(fields=["queue", "owner"], name="job_probe_idx")
    )
    after = state.clone()
    operation.state_forwards("armada", after)
    with connection.schema_editor(collect_sql=True, atomic=atomic) as editor:
        operation.database_forwards("armada", editor, state, after)
    return editor.collected_sql


@pytest.mark.django_db(transaction=True)
def test_the_operation_builds_concurrently_on_postgresql_and_plainly_elsewhere():
    sql = " ".join(_add_index_sql(atomic=False))
    assert "job_probe_idx" in sql
    assert ("CREATE INDEX CONCURRENTLY" in sql) == (connection.vendor == "postgresql")


@pytest.mark.django_db(transaction=True)
def test_in_a_transaction_it_is_refused_on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite builds indexes in the transaction")
    with pytest.raises(NotSupportedError, match="atomic = False"):
        _add_index_sql(atomic=True)


@pytest.mark.django_db
def test_the_primary_keys_pattern_twins_go_where_nothing_needs_them():
    """Migration 0035: the runs' primary key has no ``varchar_pattern_ops`` twin, and the
    jobs' keeps one only where text does not sort by code point (Lookout's id prefix filter
    reads it there; elsewhere a range on the primary key)."""
    if connection.vendor != "postgresql":
        pytest.skip("only PostgreSQL makes the twins")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_indexes WHERE tablename IN ('armada_job', 'armada_run')"
            " AND indexdef LIKE %s",
            ["%(id varchar_pattern_ops)%"],
        )
        twins = {row[0] for row in cursor.fetchall()}
    expected = set() if sorts_by_code_point(connection) else {"armada_job"}
    assert twins == expected
