from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("armada", "0027_queue_resource_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="away_node_type",
            field=models.CharField(blank=True, default="", max_length=253),
        ),
        migrations.AddField(
            model_name="run",
            name="scheduled_priority",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="run",
            name="away_tolerations",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
