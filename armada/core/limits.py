"""The limits a scheduling round works under, besides room on nodes and fair share.

A platform team caps, per pool:

- what one queue may hold of each priority class (``maximumResourceFractionPerQueue`` of the
  class, its ``...ByPool``, and the queue's own ``resourceLimitsByPriorityClassName``): a job
  is leased only if, with it, its queue's jobs of its priority class hold no more than the
  fraction of the pool's total of any limited resource (:func:`class_fractions` merges the
  four sources);
- what one round may hand out (``maximumResourceFractionToSchedule`` and ``...ByPool``): once
  the jobs leased in the round exceed the fraction of the pool's total of any resource, the
  round takes no new job (so the round may go over by its last job, as Armada's does);
- how fast a queue's jobs start (``maximumPerQueueSchedulingRate``/``Burst``): the round is
  given the leases each queue's bucket allows now; a queue with none left gets no more turns
  in the round, and a gang needing more than are left waits (more than the burst: never);
- floating resources: a pool-wide amount of a named resource that jobs request and no node
  owns (licences, storage connections). A job is leased only if what the pool's active jobs
  hold of it, with the job, stays within the amount;
- how long a round may work on new jobs (``maxNewJobSchedulingDuration``, and
  ``...PerQueue``): once the units examined took longer, the round (or the queue's turns)
  ends; timed with the clock the round is given.

Checked in this order for each unit (one job, or a gang as a whole) when its turn comes,
before any node is looked at (:meth:`LimitState.hold`): the round's limits (resources and
time), the queue's time, the queue's rate, the queue's limit for the priority class, the
floating resources. A unit held by a limit
gets the limit's reason and is not offered fair-share preemption: waiting on a limit is not
waiting for room. The pool's total (the base of every fraction) is the allocatable of its
schedulable nodes plus the pool's floating amounts.

Amounts are milli-units (``core.quantity``); fractions are of the pool's total and compared
exactly enough (a relative tolerance of 1e-9) that a limit of 0.3 of 10 cpu admits 3 cpu.
Nothing here reads a clock or a configuration: the service resolves them and passes them in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

Fractions = Mapping[str, float]  # resource -> fraction of the pool's total
Amounts = dict[str, int]  # resource -> milli-units

# Why a unit was held, and what it ends.
SCOPE_ROUND = "round"  # no new job in this round
SCOPE_QUEUE = "queue"  # no more turns for this queue in this round
SCOPE_UNIT = "unit"  # this unit only; the queue's next job may go

_TOLERANCE = 1e-9


def percent(value: float) -> str:
    """``0.3`` -> ``30%``, ``0.125`` -> ``12.5%``, ``1/3`` -> ``33.3%`` (for reasons)."""
    text = f"{value * 100:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"


def reason_class_limit(
    queue: str, priority_class: str, resource: str, now: float, after: float, limit: float
) -> str:
    return (
        f"queue {queue} at {percent(now)} of {resource} for priority class {priority_class},"
        f" limit {percent(limit)} (this job would take it to {percent(after)})"
    )


def reason_round_limit(resource: str, scheduled: float, limit: float) -> str:
    return (
        f"this round has already handed out {percent(scheduled)} of the pool's {resource},"
        f" limit {percent(limit)} per round (maximumResourceFractionToSchedule)"
    )


def reason_queue_rate(queue: str) -> str:
    return (
        f"queue {queue} scheduling rate limit exceeded (maximumPerQueueSchedulingRate):"
        " it waits for the queue's bucket to refill"
    )


def reason_gang_queue_rate(queue: str, members: int, tokens: int) -> str:
    return (
        f"gang of {members} would exceed queue {queue}'s scheduling rate limit"
        f" ({tokens} leases left in its bucket now)"
    )


def reason_gang_queue_burst(queue: str, members: int, burst: int) -> str:
    return (
        f"gang of {members} exceeds queue {queue}'s maximum burst of {burst}"
        " (maximumPerQueueSchedulingBurst): it can never start"
    )


def reason_round_time(limit: float) -> str:
    return (
        f"the round's time for new jobs ran out before this job ({limit:g}s,"
        " maxNewJobSchedulingDuration)"
    )


def reason_queue_time(queue: str, limit: float) -> str:
    return (
        f"queue {queue}'s time for new jobs in this round ran out before this job ({limit:g}s,"
        " maxNewJobSchedulingDurationPerQueue)"
    )


def reason_floating(resource: str, used: int, asked: int, total: int) -> str:
    if total <= 0:
        return f"floating resource {resource}: the pool has none of it (floatingResources)"
    return (
        f"floating resource {resource}: {_amount(used)} of {_amount(total)} in use in the pool,"
        f" the job asks {_amount(asked)}"
    )


def _amount(milli: int) -> str:
    """Milli-units as a plain number (``2000`` -> ``2``, ``500`` -> ``0.5``)."""
    whole, part = divmod(milli, 1000)
    return str(whole) if not part else f"{whole}.{part:03d}".rstrip("0")


def class_fractions(
    *,
    pool: str,
    class_default: Fractions,
    class_by_pool: Mapping[str, Fractions],
    queue_limits: Mapping[str, object] | None,
) -> dict[str, float]:
    """One queue's fractions for one priority class in ``pool``: the class's
    ``maximumResourceFractionPerQueue``, then its ``...ByPool[pool]``, then the queue's
    ``maximumResourceFraction`` for the class, then the queue's
    ``maximumResourceFractionByPool[pool]``; each later one wins per resource.

    ``queue_limits`` is the queue's entry for the class in ``resourceLimitsByPriorityClassName``
    as stored (``{"maximumResourceFraction": {...}, "maximumResourceFractionByPool":
    {pool: {"maximumResourceFraction": {...}}}}``), or None."""
    out = dict(class_default)
    out.update(class_by_pool.get(pool, {}))
    if isinstance(queue_limits, Mapping):
        out.update(queue_limits.get("maximumResourceFraction") or {})
        by_pool = queue_limits.get("maximumResourceFractionByPool") or {}
        out.update((by_pool.get(pool) or {}).get("maximumResourceFraction") or {})
    return out


@dataclass(frozen=True)
class RoundLimits:
    """The limits of one round in one pool. Empty (the default) limits nothing.

    ``class_fractions``: queue -> priority class -> resource -> fraction (already merged for
    the pool, :func:`class_fractions`); ``to_schedule``: resource -> fraction one round may
    hand out; ``floating``: floating resource -> the pool's amount; ``queue_tokens``: queue
    -> leases its rate bucket allows now (None: no per-queue rate), with the bucket's
    ``queue_burst``."""

    class_fractions: Mapping[str, Mapping[str, Fractions]] = field(default_factory=dict)
    to_schedule: Fractions = field(default_factory=dict)
    floating: Mapping[str, int] = field(default_factory=dict)
    queue_tokens: Mapping[str, int] | None = None
    queue_burst: int = 0
    # Seconds the round may spend on new jobs, in all and per queue (0: no limit); counted
    # only when the round is given a clock.
    max_new_job_seconds: float = 0.0
    max_new_job_seconds_per_queue: float = 0.0


class LimitState:
    """What the limits have used so far in a round, and the check of each unit.

    ``by_class``: (queue, priority class) -> what the queue's active jobs of the class hold
    in the pool; ``floating_used``: floating resource -> what the pool's active jobs hold.
    Both are updated by :meth:`placed` and :meth:`evicted` as the round goes."""

    def __init__(
        self,
        limits: RoundLimits,
        total: Mapping[str, int],
        by_class: Mapping[tuple[str, str], Mapping[str, int]],
    ) -> None:
        self.limits = limits
        self.total = dict(total)
        for name, amount in limits.floating.items():
            self.total[name] = self.total.get(name, 0) + amount
        self.by_class: dict[tuple[str, str], Amounts] = {k: dict(v) for k, v in by_class.items()}
        self.floating_used: Amounts = {
            name: sum(held.get(name, 0) for held in self.by_class.values())
            for name in limits.floating
        }
        self.scheduled: Amounts = {}
        self.tokens: dict[str, int] | None = (
            None if limits.queue_tokens is None else dict(limits.queue_tokens)
        )
        self.seconds = 0.0  # spent on new jobs so far, in all and per queue
        self.queue_seconds: dict[str, float] = {}
        # (queue, class) -> resource -> the amount its fraction allows, worked out once.
        self._caps: dict[tuple[str, str], list[tuple[str, float, float]]] = {}
        self.active = bool(
            limits.class_fractions
            or limits.to_schedule
            or limits.floating
            or self.tokens is not None
            or limits.max_new_job_seconds
            or limits.max_new_job_seconds_per_queue
        )

    # --- the checks ----------------------------------------------------------------------

    def hold(self, unit: list) -> tuple[str, str] | None:
        """Why ``unit`` (queued jobs of one queue: a job or a gang) may not be leased now,
        with what that ends (``SCOPE_*``); None when no limit holds it."""
        if not self.active:
            return None
        found = self.round_over()
        if found is not None:
            return found, SCOPE_ROUND
        first = unit[0]
        limit = self.limits.max_new_job_seconds_per_queue
        if limit and self.queue_seconds.get(first.queue, 0.0) > limit:
            return reason_queue_time(first.queue, limit), SCOPE_QUEUE
        if self.tokens is not None:
            left = self.tokens.get(first.queue)
            if left is not None:
                if left < 1:
                    return reason_queue_rate(first.queue), SCOPE_QUEUE
                burst = self.limits.queue_burst
                if burst and len(unit) > burst:
                    return reason_gang_queue_burst(first.queue, len(unit), burst), SCOPE_UNIT
                if left < len(unit):
                    return reason_gang_queue_rate(first.queue, len(unit), left), SCOPE_UNIT
        found = self._class_limit(unit)
        if found is None:
            found = self._floating(unit)
        return None if found is None else (found, SCOPE_UNIT)

    def spent(self, queue: str, seconds: float) -> None:
        """The round spent ``seconds`` on a unit of ``queue``."""
        self.seconds += seconds
        self.queue_seconds[queue] = self.queue_seconds.get(queue, 0.0) + seconds

    def round_over(self) -> str | None:
        """The reason no new job may be leased in this round, if its limit is exceeded."""
        limit = self.limits.max_new_job_seconds
        if limit and self.seconds > limit:
            return reason_round_time(limit)
        for resource, fraction in sorted(self.limits.to_schedule.items()):
            total = self.total.get(resource, 0)
            done = self.scheduled.get(resource, 0)
            if done > fraction * total * (1 + _TOLERANCE):
                return reason_round_limit(resource, done / total if total else 1.0, fraction)
        return None

    def _caps_of(self, queue: str, priority_class: str) -> list[tuple[str, float, float]]:
        key = (queue, priority_class)
        caps = self._caps.get(key)
        if caps is None:
            fractions = self.limits.class_fractions.get(queue, {}).get(priority_class, {})
            caps = self._caps[key] = [
                (r, f, f * self.total.get(r, 0)) for r, f in sorted(fractions.items())
            ]
        return caps

    def _class_limit(self, unit: list) -> str | None:
        if not self.limits.class_fractions:
            return None
        asked: dict[str, Amounts] = {}
        for job in unit:
            _add(asked.setdefault(job.priority_class, {}), job.requests.to_dict())
            _add(asked[job.priority_class], job.floating)
        queue = unit[0].queue
        for priority_class, wanted in sorted(asked.items()):
            caps = self._caps_of(queue, priority_class)
            if not caps:
                continue
            held = self.by_class.get((queue, priority_class), {})
            # A resource the unit asks for is named first; one the queue is already over on
            # holds it too (the queue may hold no more of the class while over its limit).
            caps = sorted(caps, key=lambda c: (wanted.get(c[0], 0) <= 0, c[0]))
            for resource, fraction, cap in caps:
                now = held.get(resource, 0)
                after = now + wanted.get(resource, 0)
                if after > cap * (1 + _TOLERANCE) + _TOLERANCE:
                    total = self.total.get(resource, 0)
                    return reason_class_limit(
                        queue,
                        priority_class,
                        resource,
                        now / total if total else 0.0,
                        after / total if total else 1.0,
                        fraction,
                    )
        return None

    def _floating(self, unit: list) -> str | None:
        floating = self.limits.floating
        if not floating:
            return None
        asked: Amounts = {}
        for job in unit:
            _add(asked, job.floating)
        for resource, amount in sorted(asked.items()):
            total = floating.get(resource, 0)
            used = self.floating_used.get(resource, 0)
            if amount > 0 and used + amount > total:
                return reason_floating(resource, used, amount, total)
        return None

    # --- what the round did --------------------------------------------------------------

    def placed(self, job) -> None:
        """A queued job was leased."""
        if not self.active:
            return
        requests = job.requests.to_dict()
        _add(self.scheduled, requests)
        _add(self.scheduled, job.floating)
        held = self.by_class.setdefault((job.queue, job.priority_class), {})
        _add(held, requests)
        _add(held, job.floating)
        _add(self.floating_used, job.floating)
        if self.tokens is not None and job.queue in self.tokens:
            self.tokens[job.queue] -= 1

    def evicted(self, jobs: Iterable) -> None:
        """Running jobs were preempted: what they held is free for the limits again."""
        if not self.active:
            return
        for job in jobs:
            held = self.by_class.get((job.queue, job.priority_class))
            if held is not None:
                _sub(held, job.requests.to_dict())
                _sub(held, job.floating)
            _sub(self.floating_used, job.floating)


def usage_by_class(running: Iterable, queues: Iterable) -> dict[tuple[str, str], Amounts]:
    """What the pool's active jobs hold per (queue, priority class), floating resources
    included (for :class:`LimitState`): a queue's ``by_class`` where it is given (it then
    counts runs on nodes that are not schedulable now too), else summed from ``running``."""
    given = {q.name: q.by_class for q in queues if q.by_class is not None}
    by_class: dict[tuple[str, str], Amounts] = {}
    for job in running:
        if job.queue not in given:
            held = by_class.setdefault((job.queue, job.priority_class), {})
            _add(held, job.requests.to_dict())
            _add(held, job.floating)
    for queue, classes in given.items():
        for priority_class, amounts in classes.items():
            by_class[(queue, priority_class)] = dict(amounts)
    return by_class


def _add(into: Amounts, amounts: Mapping[str, int]) -> None:
    for r, v in amounts.items():
        into[r] = into.get(r, 0) + v


def _sub(into: Amounts, amounts: Mapping[str, int]) -> None:
    for r, v in amounts.items():
        into[r] = into.get(r, 0) - v
