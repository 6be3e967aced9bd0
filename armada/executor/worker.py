"""The standalone executor's Celery worker: one periodic task, the agent's tick.

``armada-executor`` (``executor.main``) starts one Celery worker for one executor, with beat
embedded and the solo pool: beat sends ``armada.executor.tick`` every ``tickPeriod`` (each
message expires after one period, so a stopped worker does not come back to a pile of stale
ticks) and the worker runs them one at a time in this process, where the agent lives between
ticks. The broker is the executor's own (``broker`` of its file): the embedded file broker
under its state directory by default, or a Redis of its own. Nothing here imports Django.
"""

from __future__ import annotations

import gc
import logging
import os
from datetime import UTC, datetime
from pathlib import Path

from celery import Celery, signals

from armada.core.config_executor_process import ExecutorProcess
from armada.executor.agent import ExecutorAgent
from armada.executor.api.client import ClientTls, ExecutorApiClient, open_channel
from armada.executor.backends import make_backend
from armada.supervisor import die_with

log = logging.getLogger(__name__)

TICK_TASK = "armada.executor.tick"
TOKEN_ENV = "ARMADA_EXECUTOR_TOKEN"


def queue_name(executor_id: str) -> str:
    return f"executor.{executor_id}"


def token_source(config: ExecutorProcess, environ: dict[str, str]):
    """Where the credential is read from on every call: ``api.tokenFile``, else
    ``ARMADA_EXECUTOR_TOKEN``. A missing credential is a start-up error."""
    if config.api.token_file:
        path = Path(config.api.token_file)
        if not path.is_file():
            raise ValueError(f"api.tokenFile: {path} does not exist")
        return lambda: path.read_text()
    token = environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ValueError(
            f"no credential: set api.tokenFile in the executor's file, or {TOKEN_ENV} "
            "(armadactl create executor-credential <id> makes one)"
        )
    return lambda: token


def make_agent(config: ExecutorProcess, state_dir: Path, environ: dict[str, str]) -> ExecutorAgent:
    tls = None
    if config.api.tls.enabled:
        tls = ClientTls(ca_file=config.api.tls.ca_file, server_name=config.api.tls.server_name)
    client = ExecutorApiClient(
        open_channel(config.api.address, tls),
        token_source(config, environ),
        timeout=config.api.timeout,
    )
    return ExecutorAgent(config, make_backend(config, state_dir), client)


def broker_settings(config: ExecutorProcess, state_dir: Path) -> dict:
    if config.broker:
        return {"broker_url": config.broker}
    folders = {name: state_dir / "broker" / name for name in ("queue", "processed", "control")}
    folders["bad"] = state_dir / "broker" / "bad"
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    return {
        "broker_url": "filesystem://",
        "broker_transport": "armada.broker:Transport",
        "broker_transport_options": {
            "data_folder_in": str(folders["queue"]),
            "data_folder_out": str(folders["queue"]),
            "processed_folder": str(folders["processed"]),
            "store_processed": False,
            "control_folder": str(folders["control"]),
            "bad_folder": str(folders["bad"]),
            # Look for a tick well within its period: a tick expires after one period.
            "polling_interval": max(0.05, min(1.0, config.tick_period / 4)),
        },
    }


#: Allocations between two collections of the collector's youngest generation (Python: 700).
GC_THRESHOLD = 50_000


def settle_collector() -> bool:
    """Once the executor has read its cluster (a kubernetes executor's caches hold every pod
    and node as JSON: hundreds of MiB at 10,000 pods), collect once and freeze what is there,
    and make the youngest generation's collections rarer: full collections otherwise walk
    every cached object, taking hundreds of milliseconds of a tick (bench/RESULTS.md,
    "Kubernetes backend"). Frozen objects are still freed when nothing refers to them."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, older, oldest)
    gc.collect()
    gc.freeze()
    return True


def build_app(
    config: ExecutorProcess, state_dir: Path, environ: dict[str, str], logging_config: dict
) -> Celery:
    """The executor's Celery app; its agent is made in the worker on the first tick."""
    app = Celery(f"armada-executor-{config.id}")
    queue = queue_name(config.id)
    app.conf.update(
        **broker_settings(config, state_dir),
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        timezone="UTC",
        task_default_queue=queue,
        worker_hijack_root_logger=False,
        worker_enable_remote_control=False,
        worker_send_task_events=False,
        broker_connection_retry_on_startup=True,
        beat_schedule={
            f"executor {config.id} tick": {
                "task": TICK_TASK,
                "schedule": config.tick_period,
                "options": {"queue": queue, "expires": config.tick_period},
            }
        },
        beat_schedule_filename=str(state_dir / "beat-schedule"),
    )
    agents: list[ExecutorAgent] = []
    settled: list[bool] = []

    @app.task(name=TICK_TASK, ignore_result=True)
    def tick() -> dict:
        if not agents:
            agents.append(make_agent(config, state_dir, environ))
        report = agents[0].tick(datetime.now(UTC))  # noqa: TID251 - the tick reads the clock
        if not settled and report.cluster_readable:
            settled.append(settle_collector())
        return {"created": report.created, "reported": report.reported, "fenced": report.fenced}

    worker = os.getpid()

    @signals.worker_shutdown.connect(weak=False)
    def _close_the_backend(**_: object) -> None:
        """The executor stops: its backend lets go of what it holds (the local backend's
        leftover cgroups, the kubernetes backend's watches); its pods run on."""
        for agent in agents:
            close = getattr(agent.backend, "close", None)
            if close is not None:
                close()

    @signals.beat_embedded_init.connect(weak=False)
    def _die_with_the_worker(**_: object) -> None:
        """Beat runs in a child process of the worker: it goes when the worker goes, even
        by kill -9, so that no orphan keeps sending ticks to a restarted executor."""
        die_with(worker)

    @signals.setup_logging.connect(weak=False)
    def _logging(loglevel: int | str | None = None, **_: object) -> None:
        import logging.config

        logging.config.dictConfig(logging_config)
        if loglevel:
            logging.getLogger().setLevel(loglevel)

    return app
