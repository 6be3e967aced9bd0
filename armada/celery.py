"""The Celery application: broker from settings, periodic tasks from ``config/armada.yaml``.

Queues: ``scheduler`` (scheduling cycles, the counters' history sample) and ``executor.<id>`` (one per executor). Every
periodic message expires after one period, so a busy or stopped worker does not come back to
a pile of stale ticks.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")

# Lookout's counter history (``services.metric_history``) is sampled once a minute.
METRICS_SAMPLE_PERIOD = 60.0

app = Celery("armada")
app.config_from_object("django.conf:settings", namespace="CELERY")


def executor_queue(executor_id: str) -> str:
    return f"executor.{executor_id}"


@app.on_after_configure.connect
def _periodic_tasks(sender: Celery, **_: object) -> None:
    from django.conf import settings

    config = settings.ARMADA
    period = config.scheduling.cycle_period
    sender.add_periodic_task(
        period,
        sender.signature("armada.scheduler.cycle", queue="scheduler", expires=period),
        name="scheduler cycle",
    )
    sender.add_periodic_task(
        METRICS_SAMPLE_PERIOD,
        sender.signature("armada.metrics.sample", queue="scheduler", expires=METRICS_SAMPLE_PERIOD),
        name="metrics history sample",
    )
    for executor in config.executors:
        sender.add_periodic_task(
            executor.tick_period,
            sender.signature(
                "armada.executor.tick",
                args=(executor.id,),
                queue=executor_queue(executor.id),
                expires=executor.tick_period,
            ),
            name=f"executor {executor.id} tick",
        )


@signals.celeryd_after_setup.connect
def _scheduler_start_up(sender: str, instance: Any, **_: object) -> None:
    """A worker on queue ``scheduler`` deregisters, before its first cycle, the executors
    the configuration no longer names (``services.executor_startup``)."""
    if "scheduler" not in instance.app.amqp.queues.consume_from:
        return
    from django.db import connections

    from armada.services.executor_startup import scheduler_start_up

    scheduler_start_up()
    connections.close_all()  # its tasks take connections of their own


@signals.setup_logging.connect
def _logging(loglevel: int | str | None = None, **_: object) -> None:
    """Workers and beat log as every other process does: ``settings.LOGGING`` (plain, or JSON
    with ``ARMADA_LOG_FORMAT=json``), at ``--loglevel``. A receiver of this signal stops
    Celery from configuring logging (and redirecting stdout) itself."""
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger().setLevel(loglevel)


app.autodiscover_tasks(["armada"])
