from django.db import migrations, models


class Migration(migrations.Migration):
    """A run's log grows while the run runs (``services.run_logs``): what the pieces brought
    per container, the bytes of the start not kept, the container of the last piece, and
    whether the run's final tail has come."""

    dependencies = [
        ("armada", "0031_job_count_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="runlog",
            name="dropped",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="runlog",
            name="offsets",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="runlog",
            name="container",
            field=models.CharField(blank=True, default="", max_length=253),
        ),
        # Every log stored so far came with its run's end: final (the column's default
        # fills the rows that are there; new rows start not final).
        migrations.AddField(
            model_name="runlog",
            name="final",
            field=models.BooleanField(default=True),
        ),
        migrations.AlterField(
            model_name="runlog",
            name="final",
            field=models.BooleanField(default=False),
        ),
    ]
