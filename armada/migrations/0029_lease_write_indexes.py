"""Fewer indexes for a lease to write: the jobs' index on ``queue`` alone and the runs' on
``job_id`` alone (and, on PostgreSQL, their ``varchar_pattern_ops`` twins) are dropped.

Every lease rewrites its job row in full (its ``state`` is indexed, so the update cannot be a
heap-only one) and inserts a run, and each index gains an entry for each: these four were
written ten thousand times a cycle and read by nothing. A query on a job's ``queue`` reads
``job_lookout_queue_idx`` (queue, id), one on a run's ``job_id`` reads
``run_lookout_latest_idx`` (job_id, id), whose first column is the same; the foreign keys'
checks and cascades use those too. No query matches either column by prefix (``LIKE``),
which is all the pattern twins were for.

Dropped concurrently on PostgreSQL (writes go on meanwhile), so the migration runs outside a
transaction; going back builds them again, concurrently too.
"""

from django.db import migrations, models

from armada.migration_ops import create_index_sql

# (table, column) of each foreign key whose own index goes.
_DROPPED = (("armada_job", "queue"), ("armada_run", "job_id"))


def _names(schema_editor) -> list[tuple[str, str, str]]:
    """(index name, table, column definition) of every index dropped here."""
    out = []
    pattern = schema_editor.connection.vendor == "postgresql"
    for table, column in _DROPPED:
        out.append((schema_editor._create_index_name(table, [column], suffix=""), table, column))
        if pattern:
            name = schema_editor._create_index_name(table, [column], suffix="_like")
            out.append((name, table, f"{column} varchar_pattern_ops"))
    return out


def drop_fk_indexes(apps, schema_editor) -> None:
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    for name, _, _ in _names(schema_editor):
        schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS {name}")


def build_fk_indexes(apps, schema_editor) -> None:
    for name, table, column in _names(schema_editor):
        sql = f"CREATE INDEX {name} ON {table} ({column})"
        schema_editor.execute(create_index_sql(schema_editor.connection, sql))


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("armada", "0028_run_away"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="job",
                    name="queue",
                    field=models.ForeignKey(
                        db_column="queue",
                        db_index=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="jobs",
                        to="armada.queue",
                        to_field="name",
                    ),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="job",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="runs",
                        to="armada.job",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(drop_fk_indexes, build_fk_indexes)],
        ),
    ]
