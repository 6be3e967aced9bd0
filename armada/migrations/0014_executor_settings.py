"""Executor settings as Armada has them: the reason an executor was cordoned, and the
``update_executor_settings`` permission that cordoning and uncordoning one needs."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("armada", "0013_job_client_id"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="executor",
            options={
                "ordering": ["id"],
                "permissions": [("update_executor_settings", "Can cordon and uncordon executors")],
            },
        ),
        migrations.AddField(
            model_name="executor",
            name="cordon_reason",
            field=models.CharField(blank=True, default="", max_length=255),
        ),
    ]
