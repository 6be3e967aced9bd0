"""What a job's latest run says, copied onto the job (``services.latest_run``): the columns,
their values for the jobs that already have runs, and the partial indexes Lookout's filters
and groups read. The run indexes on node and decision label, which served the same filters
through the runs, go. An index on the time of the last transition serves time-in-state
ranges. On a large installation the copy takes a while (about a minute per
million jobs with runs); run it before starting the new version's processes."""

from django.db import migrations, models

from armada.migration_ops import AddIndexConcurrently, RemoveIndexConcurrently

COLUMNS = (
    "latest_run_id, latest_executor, latest_node, latest_pool,"
    " latest_exit_code, latest_retryable, latest_decision"
)
BACKFILL = f"""
UPDATE armada_job SET ({COLUMNS}) = (
    SELECT r.id, r.executor, r.node, r.pool, r.exit_code, r.retryable,
           COALESCE({{label}}, '')
    FROM armada_run r WHERE r.job_id = armada_job.id ORDER BY r.id DESC LIMIT 1
)
WHERE EXISTS (SELECT 1 FROM armada_run r WHERE r.job_id = armada_job.id)
"""
LABEL = {
    "postgresql": "r.decision ->> 'decision'",
    "sqlite": "json_extract(r.decision, '$.decision')",
}


def backfill(apps, schema_editor) -> None:
    label = LABEL[schema_editor.connection.vendor]
    schema_editor.execute(BACKFILL.format(label=label))


def _latest(name: str, condition: models.Q) -> AddIndexConcurrently:
    return AddIndexConcurrently(
        model_name="job",
        index=models.Index(fields=[name, "id"], name=f"job_{name}_idx", condition=condition),
    )


class Migration(migrations.Migration):
    atomic = False  # indexes built concurrently (armada.migration_ops)
    dependencies = [
        ("armada", "0016_job_lookout_submitted_idx"),
    ]

    operations = [
        RemoveIndexConcurrently(model_name="run", name="run_lookout_node_idx"),
        RemoveIndexConcurrently(model_name="run", name="run_lookout_decision_idx"),
        migrations.AddField(
            model_name="job",
            name="latest_run_id",
            field=models.CharField(blank=True, default="", max_length=26),
        ),
        migrations.AddField(
            model_name="job",
            name="latest_executor",
            field=models.CharField(blank=True, default="", max_length=63),
        ),
        migrations.AddField(
            model_name="job",
            name="latest_node",
            field=models.CharField(blank=True, default="", max_length=253),
        ),
        migrations.AddField(
            model_name="job",
            name="latest_pool",
            field=models.CharField(blank=True, default="", max_length=63),
        ),
        migrations.AddField(
            model_name="job",
            name="latest_exit_code",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="latest_retryable",
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="latest_decision",
            field=models.CharField(blank=True, default="", max_length=32),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False, atomic=True),
        _latest("latest_node", ~models.Q(latest_node="")),
        _latest("latest_executor", ~models.Q(latest_executor="")),
        _latest("latest_pool", ~models.Q(latest_pool="")),
        _latest("latest_exit_code", models.Q(latest_exit_code__isnull=False)),
        _latest("latest_retryable", models.Q(latest_retryable__isnull=False)),
        _latest("latest_decision", ~models.Q(latest_decision="")),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(
                fields=["last_transition_at", "id"], name="job_lookout_transition_idx"
            ),
        ),
    ]
