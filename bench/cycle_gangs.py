"""The gangs scenario of ``bench/scheduler_cycle.py`` (``--scenario gangs``; not a test)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from cycle_world import insert_jobs, job_row, seed, timed_cycle


def gangs_scenario(args, now: datetime) -> None:
    """Queue ``a``'s preemptible 1-cpu jobs run on every cpu of --nodes nodes; queue ``b``
    (same priority factor) has --gangs gangs of 32 one-cpu members queued (with
    --uniform, each gang must stay on one of 10 racks). Each cycle is timed; between
    cycles the executors finish the preemptions that were asked for. Prints each queue's
    share of the pool's cpu (leased and running runs not being stopped)."""
    from django.db import transaction

    from armada.core.states import EventType
    from armada.models import Job, Node, Queue, Run
    from armada.services import scheduler
    from armada.services.bulk import insert_rows
    from armada.services.events import NewEvent, events_append
    from armada.services.ids import new_id

    seed(nodes=args.nodes, queues=0, jobs=0, now=now)
    for name in "ab":
        Queue.objects.create(name=name, priority_factor=1.0, created_at=now, updated_at=now)
    if args.uniform:
        for node in Node.objects.all():
            node.labels = {**node.labels, "rack": f"r{int(node.name[-5:]) % 10}"}
            node.save(update_fields=["labels"])
    nodes = list(Node.objects.order_by("name").values_list("executor_id", "name"))
    fill, runs = [], []
    for executor, node in nodes:
        for _ in range(32):
            job_id = new_id()
            fill.append(
                job_row(
                    job_id,
                    "a",
                    ("1", "1Gi"),
                    now,
                    state="running",
                    priority_class="armada-preemptible",
                )
            )
            runs.append(
                {
                    "id": new_id(),
                    "job_id": job_id,
                    "executor": executor,
                    "node": node,
                    "pool": "default",
                    "state": "running",
                    "requests": fill[-1]["requests"],
                    "leased_at": now,
                    "running_at": now,
                }
            )
    gangs = []
    for g in range(args.gangs):
        extra = {"gang_id": f"g{g}", "gang_cardinality": 32}
        if args.uniform:
            extra["gang_uniformity_label"] = "rack"
        gangs.extend(job_row(new_id(), "b", ("1", "1Gi"), now, **extra) for _ in range(32))
    insert_jobs(fill)
    insert_jobs(gangs)
    with transaction.atomic():
        insert_rows(Run, runs)
    capacity = 32 * len(nodes)
    print(f"running in a: {len(fill)}; queued gang members in b: {len(gangs)}; cpu {capacity}")
    scheduler.scheduler_state_reset()
    for c in range(args.cycles):
        now = now + timedelta(seconds=1)
        start = time.perf_counter()
        report = timed_cycle(scheduler, now, profile=args.profile and c == 0)
        took = time.perf_counter() - start
        shares = {}
        for queue in "ab":
            used = Run.objects.filter(
                job__queue=queue,
                state__in=["leased", "pending", "running"],
                stop_requested_at__isnull=True,
            ).count()
            shares[queue] = used / capacity
        print(
            f"cycle {c + 1}: {took * 1000:.0f} ms; leased {report.leased}, preempted "
            f"{report.preempted}; cpu share a {shares['a']:.1%}, b {shares['b']:.1%} "
            f"(ideal: b gets all it asks, {len(gangs) / capacity:.1%})"
        )
        # The executors stop what was preempted: those runs end, their jobs end preempted.
        with transaction.atomic():
            stopped = list(
                Run.objects.filter(
                    stop_requested_at__isnull=False, state__in=["leased", "pending", "running"]
                ).values_list("id", "job_id")
            )
            Run.objects.filter(id__in=[r for r, _ in stopped]).update(
                state="preempted", finished_at=now
            )
            Job.objects.filter(id__in=[j for _, j in stopped]).update(state="preempted")
            events_append(
                events=[
                    NewEvent(EventType.PREEMPTED, queue="a", job_set="bench", job_id=j, created=now)
                    for _, j in stopped
                ]
            )
