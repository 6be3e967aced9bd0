"""Log lines: human-readable by default, one JSON object per line with
``ARMADA_LOG_FORMAT=json``.

A JSON line carries ``time`` (ISO 8601, UTC, milliseconds), ``level``, ``logger``,
``message``, ``process`` (the process kind: web, scheduler, executor, beat, grpc, or the
management command's name), ``pid``, and, where the line concerns one, ``queue``,
``job_set``, ``job_id``, ``run_id`` and ``executor`` (given on the log call with
``extra={"job_id": ..., ...}``). A line with an exception has its traceback as ``exception``.

The process kind is ``ARMADA_PROCESS_KIND`` when set, else read from the command line the
process was started with (see :func:`process_kind`), so that the same settings serve every
process. This module imports nothing of Django: ``settings.LOGGING`` names its formatter.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

FORMATS = ("plain", "json")
#: The ``extra=`` keys a JSON line carries when the log call gives them, in this order.
CONTEXT_KEYS = ("queue", "job_set", "job_id", "run_id", "executor")
_WEB_SERVERS = ("uvicorn", "gunicorn", "daphne", "hypercorn")


def _worker_queues(args: Sequence[str]) -> list[str]:
    """The queues of ``celery worker -Q a,b`` (also ``--queues=a,b`` and ``-Qa``)."""
    found: list[str] = []
    for i, arg in enumerate(args):
        value = None
        if arg in ("-Q", "--queues") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--queues="):
            value = arg.partition("=")[2]
        elif arg.startswith("-Q") and len(arg) > 2:
            value = arg[2:]
        if value:
            found.extend(q.strip() for q in value.split(",") if q.strip())
    return found


def _celery_kind(args: Sequence[str]) -> str:
    if "beat" in args:
        return "beat"
    kinds = []
    for queue in _worker_queues(args):
        kind = "executor" if queue.startswith("executor.") else queue
        if kind not in kinds:
            kinds.append(kind)
    return "+".join(kinds) or "worker"


def process_kind(argv: Sequence[str], environ: Mapping[str, str]) -> str:
    """What this process is, for its log lines.

    ``ARMADA_PROCESS_KIND`` wins. Else: ``celery ... beat`` is ``beat``; ``celery ... worker
    -Q scheduler`` is ``scheduler`` and ``-Q executor.<id>`` is ``executor`` (several queues
    join with ``+``); uvicorn, gunicorn and ``manage.py runserver`` are ``web``;
    ``python -m armada.grpcserver`` is ``grpc``, ``python -m armada.executorapiserver``
    ``executor-api``; another management command (``manage.py``,
    ``armada-server``, ``python -m armada``) is its name
    (``migrate``, ``runall``); anything else is its program's name.
    """
    given = environ.get("ARMADA_PROCESS_KIND", "").strip()
    if given:
        return given
    if not argv or argv[0] in ("", "-c", "-m"):
        return "python"
    program = Path(argv[0])
    # ``python -m pkg`` puts the package's __main__.py in argv[0].
    name = program.parent.name if program.name == "__main__.py" else program.stem
    args = list(argv[1:])
    if name == "celery":
        return _celery_kind(args)
    if name in _WEB_SERVERS:
        return "web"
    if name == "grpcserver":
        return "grpc"
    if name == "executorapiserver":
        return "executor-api"
    if name in ("manage", "django-admin", "armada-server", "armada"):
        command = next((a for a in args if not a.startswith("-")), "")
        if command == "runserver":
            return "web"
        return command or "manage"
    return name or "python"


class JsonFormatter(logging.Formatter):
    """One JSON object per line; see the module docstring for its fields."""

    def __init__(self, *args: object, kind: str | None = None, **kwargs: object) -> None:
        super().__init__()
        self.kind = kind

    def process_kind(self) -> str:
        # Read at the first line, not at configuration: Celery and uvicorn have parsed
        # their command lines by then, and a test may set ARMADA_PROCESS_KIND.
        if self.kind is None:
            self.kind = process_kind(sys.argv, os.environ)
        return self.kind

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": self.process_kind(),
            "pid": record.process,
        }
        for key in CONTEXT_KEYS:
            value = record.__dict__.get(key)
            if value is not None:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def logging_config(*, log_format: str, level: str) -> dict:
    """``settings.LOGGING`` for ``ARMADA_LOG_FORMAT`` (``plain`` or ``json``) and ``LOG_LEVEL``.

    With ``json`` the web server's own lines (uvicorn's start, stop and errors, once the
    application is loaded) go through the same handler. Its access log is left as uvicorn
    configured it (``--no-access-log`` stays off)."""
    if log_format not in FORMATS:
        raise ValueError(
            f"ARMADA_LOG_FORMAT must be one of {', '.join(FORMATS)}, got {log_format!r}"
        )
    config: dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
            "json": {"()": "armada.logs.JsonFormatter"},
        },
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": log_format}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.db.backends": {"level": "INFO"},
            # One line per periodic task every second is noise; failures are still logged.
            "celery.app.trace": {"level": "WARNING"},
            "celery.worker.strategy": {"level": "WARNING"},
            "celery.beat": {"level": "WARNING"},
        },
    }
    if log_format == "json":
        # "uvicorn.error" alone: configuring its parent "uvicorn" would reset the access
        # logger beside it (dictConfig re-enables a configured logger's children), turning
        # the access log on despite --no-access-log.
        config["loggers"]["uvicorn.error"] = {"handlers": ["console"], "propagate": False}
    return config


class Seldom:
    """A warning said at most once every ``every`` seconds (the others are dropped): for a
    trouble that every request would otherwise log, such as a store that does not answer."""

    def __init__(
        self,
        logger: logging.Logger,
        every: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger, self.every, self.clock = logger, every, clock
        self._said_at: float | None = None

    def warning(self, message: str, *args: object) -> None:
        now = self.clock()
        if self._said_at is None or now - self._said_at >= self.every:
            self._said_at = now
            self.logger.warning(message, *args)
