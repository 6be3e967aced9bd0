"""The Celery application: broker from settings, periodic tasks from ``config/armada.yaml``.

Queue ``scheduler``: scheduling cycles, the counters' history sample and the purge of deleted
queues' events. Every periodic
message expires after one period, so a busy or stopped worker does not come back to a pile of
stale ticks. Executors are not here: each runs as a process of its own, with a Celery worker
and broker of its own, and talks to the control plane through the executor API
(``armada.executor.worker``).
"""

from __future__ import annotations

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")

# Lookout's counter history (``services.metric_history``) is sampled once a minute.
METRICS_SAMPLE_PERIOD = 60.0
# Deleted queues' events (``services.event_purge``) are deleted in batches this often.
EVENTS_PURGE_PERIOD = 60.0

app = Celery("armada")
app.config_from_object("django.conf:settings", namespace="CELERY")


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
    sender.add_periodic_task(
        EVENTS_PURGE_PERIOD,
        sender.signature("armada.events.purge", queue="scheduler", expires=EVENTS_PURGE_PERIOD),
        name="deleted queues' events purge",
    )


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


@signals.worker_shutdown.connect
def _drain_lease_writes(**_: object) -> None:
    """A stopping scheduler worker finishes the cycle writes it has in flight
    (``services.lease_pipeline``) before it exits."""
    from armada.services.lease_pipeline import lease_pipeline_drain

    lease_pipeline_drain()


app.autodiscover_tasks(["armada"])
