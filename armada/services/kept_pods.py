"""Failed pods kept as evidence (their category's action is Retain), and their deletion.

An executor reports a kept pod with its failure: the run's ``pod_kept_until`` is the pod's end
plus the executor's ``keptPodRetention`` (``services.runs``). Once that time has passed the
executor deletes the pod and records it here, counting it in
``armada_executor_kept_pods_deleted_total{cluster}``. A kept pod deleted sooner (a retry's pod
needed the name) is recorded too, without being counted: its runs' ``pod_kept_until`` becomes
the deletion time, so that Lookout and the API never say a pod is kept once it is gone.

Runs are locked in id order and the counter is written under the event-log lock, the order
every transaction follows (``services.locking``); a run's job is not locked, since nothing
here changes a job.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from django.db import transaction

from armada.models import Run
from armada.services.counters import counters_add
from armada.services.events import lock_event_log
from armada.services.locking import lock

KEPT_PODS_DELETED_COUNTER = "armada_executor_kept_pods_deleted_total"


def kept_pods_deleted(
    *,
    executor_id: str,
    pod_names: Collection[str],
    expired: int,
    now: datetime,
) -> int:
    """Record that the executor deleted the kept pods ``pod_names`` at ``now``; ``expired``
    of them had outlived ``keptPodRetention`` (counted). Returns how many runs no longer
    say their pod is kept."""
    if not pod_names and not expired:
        return 0
    with transaction.atomic():
        runs = list(
            lock(
                Run.objects.filter(
                    executor=executor_id, pod_name__in=list(pod_names), pod_kept_until__gt=now
                )
            ).only("id", "pod_kept_until")
        )
        for run in runs:
            run.pod_kept_until = now
        Run.objects.bulk_update(runs, ["pod_kept_until"])
        if expired:
            lock_event_log()  # counters are written only under it
            counters_add(
                name=KEPT_PODS_DELETED_COUNTER,
                increments={(("cluster", executor_id),): expired},
            )
    return len(runs)
