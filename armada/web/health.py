"""``/readyz``: may this web process take traffic? Public, like ``/healthz``, for load
balancers and orchestrators.

200 ``{"status": "ready", "checks": {...}}`` when
- ``database``: the database answers a query;
- ``migrations``: every migration this code knows is applied (a process of a newer release
  started before ``manage.py migrate`` is not ready);
- ``broker``: the Celery broker is reachable (Redis answers PING when ``REDIS_URL`` is set;
  else the file-system broker's folders exist and are writable).

503 otherwise, with the same body, ``"status": "not ready"`` and ``failed`` naming the
checks that failed. A failed ``broker`` check alone is not "not ready": a web process does
its work without Redis (sessions from the database, streams polling, password logins
refused with 503 until it answers again), so it answers 200 with ``"status": "degraded"``
and ``degraded`` naming it, and stays in the load balancer. The messages name what failed and the kind of error only, never
addresses or credentials; the full error goes to this process's log.

Each check is bounded (``CHECK_SECONDS``): it runs in a thread of its own and a check that
has not answered by then fails as timed out. A check still hanging from an earlier probe
is not started again (it fails as still waiting), so probes against a dead server pile up
no threads. Once every migration was seen applied, that is only checked again every
``MIGRATIONS_RECHECK_SECONDS``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

log = logging.getLogger(__name__)

CHECK_SECONDS = 2.0
MIGRATIONS_RECHECK_SECONDS = 60.0
CHECKS = ("database", "migrations", "broker")

_pool = ThreadPoolExecutor(max_workers=len(CHECKS), thread_name_prefix="readyz")
_lock = threading.Lock()
_pending: dict[str, tuple[Future, float]] = {}  # a check still running, and since when
_migrations_ok_at: list[float] = []  # when every migration was last seen applied
_redis_clients: dict[str, object] = {}


class NotReady(Exception):
    """A check's failure, with the message the probe's answer shows."""


def _database() -> str:
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        connection.close()  # this thread is the pool's: give the connection back
    return "ok"


def _migrations() -> str:
    if _migrations_ok_at and time.monotonic() - _migrations_ok_at[0] < MIGRATIONS_RECHECK_SECONDS:
        return "ok"
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    finally:
        connection.close()
    if plan:
        names = [f"{m.app_label}.{m.name}" for m, _backwards in plan]
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise NotReady(f"{len(names)} unapplied (run manage.py migrate): {shown}")
    _migrations_ok_at[:] = [time.monotonic()]
    return "ok"


def _redis(url: str):
    client = _redis_clients.get(url)
    if client is None:
        import redis

        client = redis.Redis.from_url(
            url, socket_connect_timeout=CHECK_SECONDS, socket_timeout=CHECK_SECONDS
        )
        _redis_clients[url] = client
    return client


def _broker() -> str:
    if settings.REDIS_URL:
        _redis(settings.REDIS_URL).ping()
        return "ok"
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        folder = options.get(key)
        if folder and not (os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)):
            raise NotReady(f"the file-system broker's {key} is missing or not writable")
    return "ok"


PROBES: dict[str, Callable[[], str]] = {
    "database": _database,
    "migrations": _migrations,
    "broker": _broker,
}


def _start(name: str) -> tuple[Future, float] | str:
    """The future of check ``name``, or a failure message when an earlier one still runs."""
    with _lock:
        earlier = _pending.get(name)
        if earlier is not None and not earlier[0].done():
            waited = time.monotonic() - earlier[1]
            return f"no answer yet (an earlier check has waited {waited:.0f} s)"
        started = (_pool.submit(PROBES[name]), time.monotonic())
        _pending[name] = started
        return started


def _outcome(name: str, future: Future, deadline: float) -> tuple[bool, str]:
    try:
        return True, future.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        return False, f"no answer within {CHECK_SECONDS:g} s"
    except NotReady as exc:
        return False, str(exc)
    except Exception as exc:  # noqa: BLE001 - a probe reports every failure, it never raises
        log.warning("readyz: the %s check failed", name, exc_info=True)
        return False, f"unreachable ({type(exc).__name__})"


def readiness() -> dict[str, tuple[bool, str]]:
    """Every check's ``(ok, message)``; the checks run side by side, each bounded."""
    started = {name: _start(name) for name in CHECKS}
    deadline = time.monotonic() + CHECK_SECONDS
    results: dict[str, tuple[bool, str]] = {}
    for name, begun in started.items():
        if isinstance(begun, str):
            results[name] = (False, begun)
        else:
            results[name] = _outcome(name, begun[0], deadline)
    if not results["database"][0] and not results["migrations"][0]:
        results["migrations"] = (False, "not known: the database does not answer")
    return results


# Checks a web process can serve without: their failure makes it degraded, not unready.
DEGRADING = frozenset({"broker"})


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers and the schema is current (``degraded`` when the
    broker does not answer), else 503."""
    results = readiness()
    failed = [name for name, (ok, _message) in results.items() if not ok]
    fatal = [name for name in failed if name not in DEGRADING]
    body: dict[str, object] = {
        "status": "not ready" if fatal else "degraded" if failed else "ready",
        "checks": {name: message for name, (_ok, message) in results.items()},
    }
    if fatal:
        body["failed"] = fatal
    elif failed:
        body["degraded"] = failed
    return JsonResponse(body, status=503 if fatal else 200)
