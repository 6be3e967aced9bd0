"""armada.core.limits: how long a round may spend on new jobs (``maxNewJobSchedulingDuration``
and ``...PerQueue``), timed with the clock the round is given. The pool and jobs are
``test_limits``'s."""

from __future__ import annotations

import pytest

from armada.core.limits import RoundLimits
from armada.core.scheduling import QueueState, schedule_round
from tests.core.test_limits import job, pool


class Ticks:
    """A clock that moves one second each time it is read: each unit takes a second."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


TIMES = [
    # (limits, leases per queue, a reason part of the first job held)
    (RoundLimits(max_new_job_seconds=2.5), {"a": 2, "b": 1}, "maxNewJobSchedulingDuration)"),
    (
        RoundLimits(max_new_job_seconds_per_queue=1.5),
        {"a": 2, "b": 2},
        "queue a's time for new jobs in this round ran out",
    ),
    (RoundLimits(), {"a": 4, "b": 4}, ""),
]


@pytest.mark.parametrize("limits,leased,reason", TIMES)
def test_a_round_may_spend_only_so_long_on_new_jobs(limits, leased, reason) -> None:
    result = schedule_round(
        nodes=pool(10),
        queues=[QueueState("a"), QueueState("b")],
        jobs=[job(q, i) for q in "ab" for i in range(4)],
        max_leases=100,
        limits=limits,
        clock=Ticks(),
    )
    got: dict[str, int] = {}
    for lease in result.leases:
        got[lease.queue] = got.get(lease.queue, 0) + 1
    assert got == leased
    assert not reason or any(reason in r for r in result.unschedulable.values())


def test_without_a_clock_no_time_is_counted() -> None:
    result = schedule_round(
        nodes=pool(10),
        queues=[QueueState("a")],
        jobs=[job("a", i) for i in range(4)],
        max_leases=100,
        limits=RoundLimits(max_new_job_seconds=0.001),
    )
    assert len(result.leases) == 4
