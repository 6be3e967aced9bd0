"""``manage.py check_workers``: are the scheduler, beat and the executors alive? For
supervisors and orchestrators: exit code 0 when every check passes, 1 when one fails, 2 on
bad usage. One line per check.

Checks (all of them unless ``--scheduler``, ``--beat`` or ``--executor ID`` pick some):
- ``scheduler (lease)``: the ``scheduler`` leader lease is held and unexpired, so a worker on
  queue ``scheduler`` ran a cycle within the lease's time to live (cycles are sent by beat:
  an expired lease with a live worker means beat is down);
- ``beat (lease)``: the ``beat`` lease is held and unexpired (renewed every second);
- ``executor ID (heartbeat)``: the executor's last round of the executor API (one every
  tick) is within ``executorTimeout``. Without ``--executor``, every executor of the
  configuration is checked, and every registered one that still has a credential not revoked
  (revoke a cluster's credentials to retire it); an executor never seen fails;
- ``scheduler (ping)``, with a broker that has remote control (Redis): a Celery worker
  consuming queue ``scheduler`` answers within ``--timeout``. A worker with the solo pool
  answers between tasks, so a cycle longer than the timeout looks like silence. (Executors
  run their Celery workers on brokers of their own, out of the control plane's reach: their
  heartbeat is what tells.)

Every check is bounded by ``--timeout`` (default 5 s), the database's included.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.utils import timezone

from armada.beat import LEASE_NAME as BEAT_LEASE
from armada.services.scheduler import LEADER_NAME as SCHEDULER_LEASE

T = TypeVar("T")


class TimedOut(Exception):
    pass


@dataclass(frozen=True)
class Result:
    what: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok' if self.ok else 'FAIL'}: {self.what}: {self.detail}"


def bounded(work: Callable[[], T], timeout: float) -> T:
    """``work()`` in a daemon thread; its result, its exception, or TimedOut after
    ``timeout`` seconds (the thread is left behind; the command is about to exit)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name="check-workers", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimedOut(f"no answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _ago(seconds: float) -> str:
    return f"{seconds:.0f} s ago" if seconds >= 0 else f"in {-seconds:.0f} s"


def lease_check(what: str, name: str, now: datetime, hint: str) -> Result:
    from armada.models import LeaderLease
    from armada.services.leader import holder_gone

    lease = LeaderLease.objects.filter(name=name).first()
    if lease is None:
        return Result(what, False, f"the {name!r} lease was never taken; {hint}")
    if not lease.holder:
        return Result(what, False, f"the {name!r} lease was released and is held by nobody; {hint}")
    if lease.expires_at <= now:
        return Result(
            what,
            False,
            f"the {name!r} lease of {lease.holder} expired "
            f"{(now - lease.expires_at).total_seconds():.0f} s ago; {hint}",
        )
    if holder_gone(lease.holder):
        return Result(what, False, f"the {name!r} lease's holder {lease.holder} has exited; {hint}")
    left = (lease.expires_at - now).total_seconds()
    return Result(what, True, f"the {name!r} lease is held by {lease.holder} for {left:.0f} s more")


def known_executors() -> list[str]:
    """The executors that should be alive, by id: those the configuration names, and those
    registered that still have a credential not revoked (revoking a cluster's credentials
    retires it from these checks)."""
    from armada.models import Executor, ExecutorCredential

    registered = set(
        Executor.objects.filter(
            id__in=ExecutorCredential.objects.filter(revoked_at__isnull=True).values("cluster_id")
        ).values_list("id", flat=True)
    )
    return sorted(registered | {e.id for e in settings.ARMADA.executors})


def heartbeat_check(executor_id: str, now: datetime) -> Result:
    from armada.models import Executor

    what = f"executor {executor_id} (heartbeat)"
    timeout = float(settings.ARMADA.executor_timeout)
    row = Executor.objects.filter(id=executor_id).values_list("last_heartbeat", flat=True).first()
    if row is None:
        return Result(what, False, "never registered: it has not reached the executor API yet")
    age = (now - row).total_seconds()
    if age > timeout:
        return Result(what, False, f"last heartbeat {_ago(age)} (executorTimeout {timeout:g} s)")
    return Result(what, True, f"last heartbeat {_ago(age)} (executorTimeout {timeout:g} s)")


def consumers(timeout: float) -> dict[str, list[str]]:
    """Queue name -> the workers consuming it that answered within ``timeout``."""
    from armada.celery import app

    replies = app.control.inspect(timeout=timeout).active_queues() or {}
    found: dict[str, list[str]] = {}
    for worker, queues in replies.items():
        for queue in queues or []:
            found.setdefault(queue.get("name", ""), []).append(worker)
    return found


def ping_check(what: str, queue: str, found: dict[str, list[str]], timeout: float) -> Result:
    workers = found.get(queue)
    if not workers:
        return Result(what, False, f"no worker on queue {queue!r} answered within {timeout:g} s")
    return Result(what, True, f"{', '.join(sorted(workers))} on queue {queue!r} answered")


class Command(BaseCommand):
    help = (
        "Check that the scheduler, beat and executors are alive (leases, heartbeats, and a "
        "ping through the broker where it has remote control). Exit 0 when all pass, 1 when "
        "one fails, 2 on bad usage."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--scheduler", action="store_true", help="check the scheduler")
        parser.add_argument("--beat", action="store_true", help="check beat")
        parser.add_argument(
            "--executor",
            action="append",
            default=[],
            metavar="ID",
            help="check this executor (repeatable)",
        )
        parser.add_argument(
            "--timeout", type=float, default=5.0, help="seconds each check may take (default 5)"
        )

    def handle(
        self, *args, scheduler: bool, beat: bool, executor: list[str], timeout: float, **options
    ) -> None:
        if timeout <= 0:
            raise CommandError("--timeout: must be more than 0 seconds", returncode=2)
        everything = not (scheduler or beat or executor)
        # None: every known executor, read with the checks; [] when other checks were picked.
        executors = executor or (None if everything else [])
        results = self.run_checks(
            scheduler=scheduler or everything,
            beat=beat or everything,
            executors=executors,
            timeout=timeout,
        )
        for result in results:
            self.stdout.write(result.line())
        self.stdout.flush()
        if not all(r.ok for r in results):
            sys.exit(1)

    def run_checks(
        self, *, scheduler: bool, beat: bool, executors: list[str] | None, timeout: float
    ) -> list[Result]:
        now = timezone.now()

        def from_database() -> list[Result]:
            found: list[Result] = []
            if scheduler:
                found.append(
                    lease_check(
                        "scheduler (lease)",
                        SCHEDULER_LEASE,
                        now,
                        "no scheduling cycle runs: is a worker on queue 'scheduler' and beat up?",
                    )
                )
            if beat:
                found.append(
                    lease_check("beat (lease)", BEAT_LEASE, now, "no beat sends cycles or ticks")
                )
            ids = known_executors() if executors is None else executors
            found.extend(heartbeat_check(e, now) for e in ids)
            return found

        try:
            results = bounded(from_database, timeout)
        except Exception as exc:  # noqa: BLE001 - reported as a failed check
            detail = (
                str(exc) if isinstance(exc, TimedOut) else f"unreachable ({type(exc).__name__})"
            )
            results = [Result("database", False, detail)]
        if settings.CELERY_WORKER_ENABLE_REMOTE_CONTROL and scheduler:
            results.extend(self.pings(["scheduler"], timeout))
        return results

    def pings(self, queues: list[str], timeout: float) -> list[Result]:
        names = [f"{q} (ping)" for q in queues]
        try:
            # The broker's own connection attempts get the same bound, plus a margin for
            # the replies gathered during ``timeout``.
            found = bounded(lambda: consumers(timeout), timeout * 2)
        except Exception as exc:  # noqa: BLE001 - reported as a failed check
            detail = (
                str(exc)
                if isinstance(exc, TimedOut)
                else f"broker unreachable ({type(exc).__name__})"
            )
            return [Result(name, False, detail) for name in names]
        return [ping_check(n, q, found, timeout) for n, q in zip(names, queues, strict=True)]
