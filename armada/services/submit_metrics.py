"""``armada_scheduler_submit_check_times{queue}``: how long the submit check of a job file took.

Armada checks jobs it has not validated yet once per scheduling cycle and observes, per
queue, the milliseconds that check took. Here jobs are checked when they are submitted
(``core.submission.parse_job_file``: every field, requests, gangs, annotations), so the
check is timed there: the submit service measures it (``services.submit``, not the core)
and one observation per submit that stored jobs is counted in the transaction that stores
them. A submit refused by its check, or one whose jobs all existed already (their
``clientId`` taken), stores nothing and is not counted: a refused request writes nothing.

Storage as every histogram kept in the database (``services.cycle_metrics``): one
``MetricCounter`` per bucket the observations fell into (``le`` of that bucket, not
cumulative) and ``_sum``, here in microseconds so that fractions of a millisecond add up
(served in milliseconds). Armada's buckets: ``0.5 * 1.5**i`` ms for i in 0..24.
"""

from __future__ import annotations

from armada.services.counters import counters_add_many
from armada.services.events import lock_event_log
from armada.services.metric_buckets import bucket_of, exponential_buckets

SUBMIT_CHECK_TIMES = "armada_scheduler_submit_check_times"
SUBMIT_CHECK_BUCKETS = exponential_buckets(0.5, 1.5, 25)
SUBMIT_CHECK_LABELS = ("queue",)
SUBMIT_CHECK_HELP = "Time spent in submit check per queue per scheduling cycle, in milliseconds."
#: The stored ``_sum`` is in microseconds; this makes it milliseconds.
SUM_FACTOR = 1e-3


def submit_check_count(*, queue: str, seconds: float) -> None:
    """Count one submit check of ``seconds`` for ``queue``, in the caller's transaction (the
    one that stores the submitted jobs), under the event-log lock like every counter."""
    milliseconds = max(0.0, seconds) * 1000.0
    lock_event_log()
    labels = (("queue", queue),)
    counters_add_many(
        {
            f"{SUBMIT_CHECK_TIMES}_bucket": {
                (*labels, ("le", bucket_of(SUBMIT_CHECK_BUCKETS, milliseconds))): 1
            },
            f"{SUBMIT_CHECK_TIMES}_sum": {labels: round(milliseconds * 1000)},
        }
    )
