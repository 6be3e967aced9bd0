"""The executor process's own Prometheus metrics, under Armada's executor names.

Armada's executor serves these from its own process, about its own cluster; so does
``armada-executor``: they live in this module's registry (:data:`REGISTRY`, not the default
one, so that nothing of a control-plane process mixes in when both share a process in
tests), served at the executor's ``metricsAddress`` (:func:`serve`, started by
``executor.main``). No Django here.

- ``armada_executor_job_failure_rule_evaluation_duration_seconds{failure_category,
  failure_subcategory}``: how long categorising a failure took (:func:`categorize`, around
  ``core.categorizer``, which is given no clock). Armada observes each rule it evaluates,
  labelled by that rule; the core here evaluates its rules in one call, so one observation
  is made per failure categorised: the time to evaluate the rules up to the one that
  matched, labelled by its result (the default category when none matched). An
  uncategorised failure (categories disabled, or an empty default) is not observed, as
  Armada observes no empty category.
- ``armada_executor_pod_terminated_within_grace_period_total{pool}`` and
  ``armada_executor_pod_termination_overdue_seconds{pool}``: every pod the agent asks to
  delete is given a deadline (:class:`PodDeletions`): the time of the request plus the grace
  period the pod gets (the one asked for; for a pod that has ended and is asked no grace, none;
  for a live pod asked no grace, the backend gives it its own, taken as Kubernetes' default
  of 30 s). When a poll finds the pod gone, it counts as terminated within its grace period
  when the last poll that saw it was before the deadline, else how long past the deadline
  that poll still saw it is observed. Only pods the agent saw before asking are timed.
- ``armada_executor_pod_force_deleted_total{pool}``: force delete escalations. A pod still on
  the cluster ``podDeletionTimeout`` past its deadline is deleted again without any grace
  (Kubernetes' grace-0 delete), once, by a backend that can (``force_delete_pod``: the
  ``kubernetes`` and ``fake`` backends; the ``local`` backend's pods are killed by their shim
  when their grace ends, and need none). Counted when issued, as Armada counts them.

``pool`` is the executor's pool (one pool per executor here).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.process_collector import ProcessCollector

if TYPE_CHECKING:
    from armada.core.categorizer import Categorization, Categorizer, FailureSignals
    from armada.executor.backends.base import PodStatus

log = logging.getLogger(__name__)

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)

RULE_EVALUATION_SECONDS = Histogram(
    "armada_executor_job_failure_rule_evaluation_duration_seconds",
    "Duration of evaluating the classification rules against a failed pod, up to the one "
    "that matched, labeled by the resulting category and subcategory.",
    ["failure_category", "failure_subcategory"],
    buckets=(0.00001, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25),
    registry=REGISTRY,
)
FORCE_DELETED = Counter(
    "armada_executor_pod_force_deleted_total",
    "Total number of force delete escalations issued by the executor, by pool.",
    ["pool"],
    registry=REGISTRY,
)
TERMINATION_OVERDUE_SECONDS = Histogram(
    "armada_executor_pod_termination_overdue_seconds",
    "How far past its deletion deadline a pod survived, observed when it disappears from "
    "the cluster.",
    ["pool"],
    buckets=(0, 10, 15, 20, 30, 45, 60, 75, 90, 120, 300),
    registry=REGISTRY,
)
TERMINATED_WITHIN_GRACE = Counter(
    "armada_executor_pod_terminated_within_grace_period_total",
    "Total number of pods that disappeared before their deletion deadline, by pool.",
    ["pool"],
    registry=REGISTRY,
)

#: The grace a live pod gets from its backend when it is asked to go with none given
#: (Kubernetes' default ``terminationGracePeriodSeconds``).
OWN_GRACE_SECONDS = 30.0


def categorize(categorizer: Categorizer, signals: FailureSignals) -> Categorization:
    """``categorizer.categorize(signals)``, timed (see the module docstring)."""
    started = time.perf_counter()
    result = categorizer.categorize(signals)
    elapsed = time.perf_counter() - started
    if result.category:
        RULE_EVALUATION_SECONDS.labels(result.category, result.subcategory).observe(elapsed)
    return result


def pod_termination(pool: str, overdue_seconds: float) -> None:
    """A pod being deleted is gone, ``overdue_seconds`` after its deadline (negative: before)."""
    if overdue_seconds < 0:
        TERMINATED_WITHIN_GRACE.labels(pool).inc()
    else:
        TERMINATION_OVERDUE_SECONDS.labels(pool).observe(overdue_seconds)


class PodDeletions:
    """The pods the agent asked to delete, with their deadlines, until they are gone.

    The agent tells it each deletion it asks for (:meth:`asked`) and each poll of its
    backend (:meth:`seen`); it counts the pods that went and escalates those that stay
    (module docstring). Times are the agent's (the ``now`` of its ticks), and a pod's end is
    known only to the poll: how far past its deadline a pod survived is reckoned from the
    last poll that still saw it (so a pod last seen before its deadline went within its grace
    period, and one deleted without grace and gone at the next poll survived 0 s past it)."""

    def __init__(self, pool: str, timeout_seconds: float) -> None:
        self.pool = pool
        self.timeout = timedelta(seconds=timeout_seconds)
        self._due: dict[str, datetime] = {}
        self._seen_at: dict[str, datetime] = {}
        self._forced: set[str] = set()
        self._last: Mapping[str, PodStatus] = {}
        self._last_at: datetime | None = None

    def asked(self, name: str, now: datetime, grace_seconds: float) -> None:
        """The agent asked for pod ``name`` to go with ``grace_seconds`` (0: none given)."""
        status = self._last.get(name)
        if status is None or self._last_at is None or name in self._due:
            return  # not seen, so not timed; or asked before: its first deadline holds
        grace = grace_seconds
        if grace <= 0 and not status.finished_at:
            grace = OWN_GRACE_SECONDS
        self._due[name] = now + timedelta(seconds=grace)
        self._seen_at[name] = self._last_at

    def seen(self, pods: Mapping[str, PodStatus], now: datetime, backend: Any) -> None:
        """A poll at ``now``: ``pods`` by name. Counts the tracked pods that are gone; force
        deletes, once, those still there ``podDeletionTimeout`` past their deadline."""
        self._last, self._last_at = pods, now
        for name, due in list(self._due.items()):
            if name not in pods:
                pod_termination(self.pool, (self._seen_at.pop(name) - due).total_seconds())
                del self._due[name]
                self._forced.discard(name)
                continue
            self._seen_at[name] = now
            if now - due > self.timeout and name not in self._forced:
                self._forced.add(name)
                self._force(backend, name, now)

    def _force(self, backend: Any, name: str, now: datetime) -> None:
        force = getattr(backend, "force_delete_pod", None)
        if force is None:
            return
        log.warning(
            "pod %s is still there %gs after its deletion deadline; deleting it without grace",
            name,
            self.timeout.total_seconds(),
        )
        force(name, now)
        FORCE_DELETED.labels(self.pool).inc()


def serve(address: str) -> Any:
    """Serve :data:`REGISTRY` on ``address`` (``host:port``; ``[::1]:9101`` for IPv6; an empty
    host means every interface) with prometheus-client's HTTP server, in a daemon thread.
    Returns the server (its ``server_port`` is the port), or None when ``address`` is empty.
    Raises ``OSError`` when the address cannot be bound (taken, say)."""
    if not address:
        return None
    host, _, port = address.rpartition(":")
    server, _thread = start_http_server(int(port), host.strip("[]") or "0.0.0.0", REGISTRY)
    log.info("serving the executor's metrics on %s", address)
    return server
