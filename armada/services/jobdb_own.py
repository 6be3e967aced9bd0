"""The scheduler's own leases in its job database (``services.jobdb``): applying them as
soon as they are planned or committed, and settling them once their write is known.

``note_leased`` applies leases as a re-read of their rows would (the job leaves its queue,
its run becomes active) and remembers each in ``own_leases`` (job -> run) until a sync reads
its ``leased`` event, which is then skipped.

A cycle whose writes run behind the next round (``services.lease_pipeline``) applies its
leases (and the stops of the runs it preempted, ``note_stopping``) before they are
committed and marks their jobs ``in_flight``: a sync meanwhile does
not re-read those jobs (their rows may not show the lease yet) but keeps them in
``deferred``. ``settle`` then re-reads every job whose lease was not written (cancelled or
changed meanwhile, or the write failed) and every deferred one, so that the database is the
truth again, whatever happened between the plan and the commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from armada.core.quantity import Resources
from armada.core.snapshot import NO_FLOATING


@dataclass(slots=True)
class ActiveRun:
    """A leased, pending or running run, as the scheduler needs it."""

    id: str
    job_id: str
    queue: str
    pool: str
    executor: str
    node: str
    requests: Resources  # what its node gives it (floating resources apart)
    priority_class: str
    gang_id: str
    stopping: bool  # a stop (preemption or cancellation) was requested
    # What it holds of the pool's floating resources.
    floating: Mapping[str, int] = field(default_factory=lambda: NO_FLOATING)
    # The priority it runs at when placed away from home (``core.away``), else None.
    scheduled_priority: int | None = None


class OwnLeases:
    """The part of ``JobDb`` that applies this process's own leases (the module docstring).
    ``JobDb`` holds the fields: ``queued``, ``delayed``, ``runs``, ``own_leases``,
    ``in_flight`` and ``deferred``."""

    queued: dict[str, Any]
    delayed: dict[str, tuple[Any, Any]]
    runs: dict[str, ActiveRun]
    own_leases: dict[str, str]
    in_flight: set[str]
    deferred: set[str]

    def _forget(self, job_id: str) -> None:  # ``JobDb``'s
        raise NotImplementedError

    def reload(self, job_ids: Iterable[str]) -> None:  # ``JobDb``'s
        raise NotImplementedError

    def note_leased(self, runs: Iterable[Mapping[str, Any]]) -> int:
        """Apply leases this process has just committed: ``runs`` as
        ``services.scheduler_leases.write_leases`` inserted them (``job_id``, ``id``,
        ``executor``, ``node``, ``pool``, ``requests``, ``scheduled_priority`` when away).
        Each job leaves the queue and its run becomes active, exactly as a re-read of the
        rows would make them, and the next sync skips the lease's own event (the module
        docstring). A job not queued here is left to the sync. Returns how many were
        applied."""
        applied = 0
        for run in runs:
            job_id = run["job_id"]
            job = self.queued.get(job_id)
            if job is None:
                waiting = self.delayed.get(job_id)
                job = waiting[1] if waiting is not None else None
            if job is None:
                continue
            self._forget(job_id)
            self.runs[job_id] = ActiveRun(
                id=run["id"],
                job_id=job_id,
                queue=job.queue,
                pool=run["pool"],
                executor=run["executor"],
                node=run["node"],
                # The job's own, read from the same column the run's were copied from (a
                # change to them would have an event, and the sync would read the job).
                requests=job.requests,
                priority_class=job.priority_class,
                gang_id=job.gang_id,
                stopping=False,
                floating=job.floating,
                scheduled_priority=run.get("scheduled_priority"),
            )
            self.own_leases[job_id] = run["id"]
            applied += 1
        return applied

    def note_stopping(self, job_ids: Iterable[str]) -> None:
        """Apply the stops a round asked for (its preemptions) before they are written, as
        the sync that reads their events would: the next round does not count on those
        runs staying, nor preempts them again."""
        for job_id in job_ids:
            run = self.runs.get(job_id)
            if run is not None:
                run.stopping = True

    def settle(self, unwritten: Iterable[str]) -> int:
        """The in-flight leases' write is known: re-read the jobs among them that were not
        leased (``unwritten``) and every job a sync deferred meanwhile; nothing is in flight
        afterwards. Returns how many jobs were re-read."""
        missing = set(unwritten)
        for job_id in missing:
            self.own_leases.pop(job_id, None)  # no such lease event will ever come
        again = missing | self.deferred
        self.in_flight.clear()
        self.deferred.clear()
        self.reload(again)
        return len(again)
