"""The mark of from when the retry-yield rollup holds every retried failure.

A database with retried failures already recorded when this runs has them in the rollup only
from the release that added it (0019) on, so the mark is set to now: readers take older
history from the runs until ``manage.py rebuild_retry_yield`` has recounted it. A database
with none is covered from the start."""

from datetime import UTC, datetime

from django.db import migrations, models
from django.utils import timezone

YIELD_MARK = "retry-yield"  # services.retry_yield_rollup.YIELD_MARK
START = datetime(1970, 1, 1, tzinfo=UTC)


def _mark(apps, schema_editor) -> None:
    Run = apps.get_model("armada", "Run")
    RollupMark = apps.get_model("armada", "RollupMark")
    recorded = Run.objects.filter(retryable=True).exists()
    RollupMark.objects.update_or_create(
        name=YIELD_MARK, defaults={"covers_since": timezone.now() if recorded else START}
    )


class Migration(migrations.Migration):
    dependencies = [
        ("armada", "0020_run_pod_kept"),
    ]

    operations = [
        migrations.CreateModel(
            name="RollupMark",
            fields=[
                ("name", models.CharField(max_length=63, primary_key=True, serialize=False)),
                ("covers_since", models.DateTimeField()),
            ],
        ),
        migrations.RunPython(_mark, migrations.RunPython.noop),
    ]
