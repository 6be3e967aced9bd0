"""One round of the executor API (``LeaseJobRuns``): what an executor is told to do.

The executor sends its nodes and every run it holds; the server answers, comparing the runs
held with the runs leased to that executor that have not ended (its *active* runs):

1. heartbeat and nodes (``services.executor_nodes``);
2. **cancel** / **preempt**: every active run whose stop was asked for (by a user, an
   operator or the scheduler), held or not. A run the executor never started is reported
   back at once; the others once their pods are gone;
3. **stop**: runs held that are not active for this executor (ended, expired meanwhile,
   never its own). The executor stops their pods if they still run and reports nothing
   more for them (a late report would be refused anyway);
4. **leases**: active runs still ``leased``, not held, and not being stopped: new work, or
   work sent before that the executor did not take (the answer was lost). A lease is sent
   again every round until the executor holds it; it is idempotent by run id;
5. **missing runs**: a run the executor has not held for longer than ``executorTimeout`` is
   expired as a lost executor's run is (``services.expiry``): ``lease_expired``, a genuine
   failure, decided by the retry engine. For a ``leased`` run the time counts from its
   lease; a pending or running run (its executor had reported its pod) that a round does not
   hold is marked missing from that round on (``Run.missing_since``), and the mark goes when
   it is held again. So a lease the executor never takes, or a pod it no longer has, ends
   within the timeout, while a run that only skipped a round (an answer lost in a
   partition) is kept. Runs being stopped are not expired: the executor reports them.

Locks: marking runs missing locks only run rows, in id order (no job row: nothing about a
job changes); expiring takes jobs, then runs, then the event log, the order of
``docs/concurrency.md``. Nothing is locked while the answer is read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, TextField
from django.db.models.functions import Cast

from armada.core.away import with_tolerations
from armada.core.floating import strip_floating
from armada.core.states import RunState
from armada.models import Executor, Run
from armada.services.executor_nodes import ReportedNode, executor_heartbeat_and_nodes
from armada.services.expiry import ACTIVE, runs_mark_lease_expired
from armada.services.locking import CHUNK, lock, lock_runs_with_jobs
from armada.services.stopping import CANCEL

log = logging.getLogger(__name__)

#: At most this many new leases in one answer; the rest come in the next rounds.
MAX_LEASES_PER_ROUND = 10000

LEASE_FIELDS = (
    "id",
    "job_id",
    "node",
    "pod_name",
    "leased_at",
    "job__queue_id",
    "job__job_set",
    "job__owner",
    "job__namespace",
    "job__annotations",
    "job__priority",
    "job__priority_class",
)


@dataclass
class RoundAnswer:
    leases: list[dict[str, Any]] = field(default_factory=list)
    cancel: list[str] = field(default_factory=list)
    preempt: list[str] = field(default_factory=list)
    stop: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)


def executor_round(
    *,
    executor: Executor,
    pool: str,
    nodes: Sequence[ReportedNode] | None,
    nodes_digest: str,
    held: Iterable[str],
    now: datetime,
) -> RoundAnswer:
    """Answer one round of ``executor`` (its session already checked). ``nodes`` may be None
    when their digest is the one stored (nothing to write)."""
    executor_heartbeat_and_nodes(
        executor=executor, pool=pool, nodes=nodes, digest=nodes_digest, now=now
    )
    held_ids = set(held)
    active = list(
        Run.objects.filter(executor=executor.id, state__in=ACTIVE)
        .order_by("leased_at", "id")
        .values_list("id", "state", "stop_kind", "stop_requested_at", "missing_since", "leased_at")
    )
    answer = RoundAnswer()
    active_ids = set()
    offer: list[str] = []
    newly_missing: list[str] = []
    found_again: list[str] = []
    overdue: list[str] = []
    cutoff = now - timedelta(seconds=settings.ARMADA.executor_timeout)
    for run_id, state, stop_kind, stop_requested_at, missing_since, leased_at in active:
        active_ids.add(run_id)
        is_held = run_id in held_ids
        if stop_requested_at is not None:
            (answer.cancel if stop_kind == CANCEL else answer.preempt).append(run_id)
        elif state == RunState.LEASED and not is_held:
            if leased_at < cutoff:
                overdue.append(run_id)
            elif len(offer) < MAX_LEASES_PER_ROUND:
                offer.append(run_id)
        if is_held:
            if missing_since is not None:
                found_again.append(run_id)
        elif state == RunState.LEASED or stop_requested_at is not None:
            continue
        elif missing_since is None:
            newly_missing.append(run_id)
        elif missing_since < cutoff:
            overdue.append(run_id)
    answer.stop = sorted(held_ids - active_ids)
    _mark_missing(newly_missing, now)
    _mark_missing(found_again, None)
    if overdue:
        answer.expired = _expire_missing(executor.id, overdue, cutoff, now)
    answer.leases = _lease_rows(offer)
    return answer


def _mark_missing(run_ids: list[str], since: datetime | None) -> None:
    """Set (or clear, with None) ``missing_since`` on ``run_ids``, locking the runs in id
    order first so that this never deadlocks with a transaction that locks them too."""
    for start in range(0, len(run_ids), CHUNK):
        chunk = run_ids[start : start + CHUNK]
        with transaction.atomic():
            rows = lock(Run.objects.filter(id__any=chunk, missing_since__isnull=since is not None))
            ids = list(rows.values_list("id", flat=True))
            if ids:
                Run.objects.filter(id__any=ids).update(missing_since=since)


def _expire_missing(
    executor_id: str, run_ids: list[str], cutoff: datetime, now: datetime
) -> list[str]:
    """Expire the runs not held since before ``cutoff`` (re-read under the locks: a run
    reported or stopped meanwhile is left alone)."""
    timeout = settings.ARMADA.executor_timeout
    with transaction.atomic():
        runs = lock_runs_with_jobs(
            Run.objects.filter(
                Q(state=RunState.LEASED, leased_at__lt=cutoff)
                | Q(state__in=ACTIVE, missing_since__lt=cutoff),
                id__any=run_ids,
                executor=executor_id,
                stop_requested_at__isnull=True,
            )
        )
        changes = runs_mark_lease_expired(
            runs,
            now=now,
            message=lambda run: (
                f"executor {executor_id} did not hold run {run.id} for more than {timeout:g}s "
                "(a lease it never took, or a pod it no longer has)"
            ),
        )
        changes.write()
    if runs:
        log.warning(
            "executor %s: %d runs it no longer holds expired",
            executor_id,
            len(runs),
            extra={"executor": executor_id},
        )
    return [run.id for run in runs]


def _lease_rows(run_ids: list[str]) -> list[dict[str, Any]]:
    if not run_ids:
        return []
    # The pod spec, the mutations, the services and the ingresses are read as the JSON text
    # the database keeps: they are sent as text, so they are never decoded and encoded again
    # here.
    rows = {
        r["id"]: r
        for r in Run.objects.filter(id__any=run_ids, state=RunState.LEASED)
        .annotate(
            pod_spec_json=Cast("job__pod_spec", TextField()),
            mutations_json=Cast("job__mutations", TextField()),
            services_json=Cast("job__services", TextField()),
            ingress_json=Cast("job__ingress", TextField()),
        )
        .values(
            *LEASE_FIELDS,
            "pod_spec_json",
            "mutations_json",
            "services_json",
            "ingress_json",
            "away_tolerations",
        )
    }
    found = [rows[run_id] for run_id in run_ids if run_id in rows]
    names = settings.ARMADA.scheduling.floating_names
    for row in found:
        text = row["pod_spec_json"] or ""
        tolerations = row.pop("away_tolerations")
        floating = names and any(name in text for name in names)
        if not (floating or tolerations):
            continue
        spec = json.loads(text) if text else {}
        if floating:
            # The scheduler accounts for floating resources; the pod must not ask for them.
            spec = strip_floating(spec, names)
        if tolerations:
            # Placed away from home: the pod tolerates the taints of the nodes it went to.
            spec = with_tolerations(spec, tolerations)
        row["pod_spec_json"] = json.dumps(spec, separators=(",", ":"))
    return found
