"""Moving the test database to a migration and back, for the tests of a data migration."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.conftest import T0


def migrate(targets):
    """Migrate to ``targets`` and return the app registry as of them."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest() -> None:
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def historic_job(apps, job_id: str, **fields: Any) -> Any:
    """A job of queue ``mq`` (made when missing), through the app registry ``apps`` of an
    earlier migration."""
    Queue, Job = apps.get_model("armada", "Queue"), apps.get_model("armada", "Job")
    Queue.objects.get_or_create(
        name="mq", defaults={"priority_factor": 1, "created_at": T0, "updated_at": T0}
    )
    values = {
        "queue_id": "mq",
        "job_set": "s",
        "owner": "o",
        "priority_class": "default",
        "pod_spec": {},
        "submitted_at": T0,
        "last_transition_at": T0,
    }
    return Job.objects.create(id=job_id, **(values | fields))
