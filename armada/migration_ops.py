"""Migration operations that leave the big tables writable while they change.

An index added to a table that holds data (jobs, runs, events) is built with PostgreSQL's
``CREATE INDEX CONCURRENTLY``: a plain ``CREATE INDEX`` blocks every write to the table
until it has read it all, which on a million jobs stops submissions and the scheduler for
the length of the build. Concurrent builds cannot run inside a transaction, so a migration
using these operations says ``atomic = False`` (each of its steps then commits on its own:
keep such a migration to index changes, plus data steps that are atomic themselves).
On SQLite, the embedded default, they are the plain operations.

``tests/test_migrations.py`` refuses a migration after the first that adds an index to a
big table any other way.
"""

from __future__ import annotations

from typing import Any

from django.db import NotSupportedError
from django.db.migrations.operations import AddIndex, RemoveIndex


def _concurrent(schema_editor: Any) -> bool:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return False
    if connection.in_atomic_block:
        raise NotSupportedError(
            "a concurrent index change cannot run in a transaction: its migration must set "
            "atomic = False"
        )
    return True


class AddIndexConcurrently(AddIndex):
    """``AddIndex``, built concurrently on PostgreSQL (see the module docstring)."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if not _concurrent(schema_editor):
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.add_index(model, self.index, concurrently=True)

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if not _concurrent(schema_editor):
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.remove_index(model, self.index, concurrently=True)


class RemoveIndexConcurrently(RemoveIndex):
    """``RemoveIndex``, dropped concurrently on PostgreSQL (see the module docstring)."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if not _concurrent(schema_editor):
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            index = from_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.remove_index(model, index, concurrently=True)

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if not _concurrent(schema_editor):
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            index = to_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.add_index(model, index, concurrently=True)


def sorts_by_code_point(connection: Any) -> bool:
    """Whether ``connection``'s database sorts text by code point (collation C, POSIX or
    C.UTF-8). There an ordinary index answers a prefix as a range (``>= 'ab'`` and
    ``< 'ac'``), and a ``varchar_pattern_ops`` twin of it is not needed. False off
    PostgreSQL."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT datcollate FROM pg_database WHERE datname = current_database()")
        collation = (cursor.fetchone() or [""])[0].lower()
    return collation in ("c", "posix") or collation.startswith("c.")


def create_index_sql(connection: Any, sql: str) -> str:
    """``CREATE INDEX ...`` as ``CREATE INDEX CONCURRENTLY ...`` on PostgreSQL (for a
    migration's raw SQL step; its migration must set ``atomic = False`` too)."""
    if connection.vendor != "postgresql":
        return sql
    head, _, rest = sql.partition("CREATE INDEX ")
    if head.strip():
        raise ValueError(f"not a CREATE INDEX statement: {sql!r}")
    return "CREATE INDEX CONCURRENTLY " + rest
