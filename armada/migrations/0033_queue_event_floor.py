"""Events belong to a queue, not to its name: ``Queue.event_floor`` (the newest event id when
the queue was made) fences off the events of an earlier queue of the same name, and
``EventPurge`` lists the deleted queues' events still to be deleted in batches. Queues that
exist now get 0: every event of their name stays theirs (an earlier queue's cannot be told
apart any more)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("armada", "0032_run_log_live"),
    ]

    operations = [
        migrations.CreateModel(
            name="EventPurge",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("queue", models.CharField(max_length=63)),
                ("upto", models.BigIntegerField()),
                ("created_at", models.DateTimeField()),
            ],
            options={
                "ordering": ["id"],
            },
        ),
        migrations.AddField(
            model_name="queue",
            name="event_floor",
            field=models.BigIntegerField(default=0),
        ),
    ]
