from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("armada", "0023_job_services_ingress"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="kubernetes_id",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="run",
            name="containers",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="run",
            name="cause",
            field=models.CharField(blank=True, max_length=32),
        ),
        migrations.AddField(
            model_name="run",
            name="utilisation_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
