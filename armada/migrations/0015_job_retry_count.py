"""Job.retry_count: the failures that were retried, counted from the runs whose decision
retried them (``retryable`` true) for the jobs that have failed at least once."""

from django.db import migrations, models

BACKFILL = """
UPDATE armada_job SET retry_count = (
    SELECT COUNT(*) FROM armada_run
    WHERE armada_run.job_id = armada_job.id AND armada_run.retryable
)
WHERE failure_count > 0
"""


class Migration(migrations.Migration):
    dependencies = [
        ("armada", "0014_executor_settings"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="retry_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
    ]
