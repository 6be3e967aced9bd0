"""``armada-executor``: one executor process for one cluster.

    armada-executor --config executor.yaml [--loglevel INFO] [--check]

It reads the executor's file (``core.config_executor_process``: the executor's keys, the
executor API's address and credential, its broker), then runs the executor's Celery worker
with beat embedded (``executor.worker``). It needs no database and no Django: only the API
address, the credential and the cluster's configuration. ``--check`` validates the file, the
credential's presence and (for a kubernetes executor) its cluster settings, and exits (0 when good, 2 with every problem named).

With ``metricsAddress`` set, the process serves its own Prometheus metrics there
(``executor.metrics``).

State (the local backend's pods, the embedded broker, beat's schedule) lives in ``stateDir``,
else ``$ARMADA_VAR_DIR/executors/<id>`` (``ARMADA_VAR_DIR`` defaults to ``./var``). Logs are
plain, or one JSON object per line with ``ARMADA_LOG_FORMAT=json``, at ``--loglevel``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from armada import yamlkeys
from armada.core.config_executor_process import ExecutorProcess, parse_executor_process
from armada.core.errors import ValidationFailed
from armada.executor.backends.base import ClusterConfigError


def load(path: Path) -> ExecutorProcess:
    try:
        data = yamlkeys.safe_load(path.read_text())
    except OSError as exc:
        raise ValidationFailed.one("", f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValidationFailed.one("", f"{path} is not valid YAML: {exc}") from None
    return parse_executor_process(data)


def state_dir(config: ExecutorProcess, environ: dict[str, str]) -> Path:
    if config.state_dir:
        return Path(config.state_dir)
    return Path(environ.get("ARMADA_VAR_DIR") or "var") / "executors" / config.id


def worker_argv(config: ExecutorProcess, level: str, state: Path) -> list[str]:
    from armada.executor.worker import queue_name

    return [
        "worker",
        "--beat",
        "--pool=solo",
        "--queues",
        queue_name(config.id),
        "--hostname",
        f"executor-{config.id}@%h",
        "--without-mingle",
        "--without-gossip",
        "--without-heartbeat",
        "--loglevel",
        level,
        "--schedule",
        str(state / "beat-schedule"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="armada-executor",
        description="Run one executor: lease runs from the control plane's executor API, run "
        "their pods, report back.",
    )
    parser.add_argument("--config", required=True, type=Path, help="the executor's YAML file")
    parser.add_argument("--loglevel", default=os.environ.get("LOG_LEVEL", "INFO"))
    parser.add_argument("--check", action="store_true", help="validate and exit")
    args = parser.parse_args(argv)
    environ = dict(os.environ)
    try:
        config = load(args.config)
        from armada.executor.worker import build_app, token_source
        from armada.logs import logging_config

        token_source(config, environ)
        if config.backend == "kubernetes":
            from armada.executor.backends.kubernetes.connect import api_client

            api_client(config.kubernetes).close()  # the kubeconfig or service account reads
        log_format = environ.get("ARMADA_LOG_FORMAT", "plain").strip().lower() or "plain"
        logs = logging_config(log_format=log_format, level=args.loglevel.upper())
    except ValidationFailed as exc:
        for error in exc.errors:
            print(f"armada-executor: {args.config}: {error}", file=sys.stderr)
        return 2
    except (ValueError, ClusterConfigError) as exc:
        print(f"armada-executor: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"armada-executor: {args.config} is good (executor {config.id})")
        return 0
    try:
        from armada.executor.metrics import serve

        serve(config.metrics_address)  # this process's own metrics (executor.metrics)
    except OSError as exc:
        print(f"armada-executor: metricsAddress {config.metrics_address}: {exc}", file=sys.stderr)
        return 2
    state = state_dir(config, environ)
    state.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("ARMADA_PROCESS_KIND", "executor")
    app = build_app(config, state, environ, logs)
    app.worker_main(worker_argv(config, args.loglevel.upper(), state))
    return 0


if __name__ == "__main__":
    sys.exit(main())
