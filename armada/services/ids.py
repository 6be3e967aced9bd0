"""Identifiers: lower-case ULIDs, sortable by creation time, valid in pod names.

Ids made by one process are strictly increasing, even within one millisecond (the random part
is incremented, as the ULID specification's monotonic mode does) and even when the system
clock steps back (the last millisecond used is kept until the clock passes it again), so that
jobs of one batch keep their order and a run made later sorts after its job's earlier runs.
The ULIDs themselves are ``python-ulid``'s."""

from __future__ import annotations

import threading
import time

from ulid import ULID, LaxMonotonicPolicy, ULIDGenerator

_lock = threading.Lock()
_last_millis = 0


def _millis() -> int:
    """Milliseconds since the epoch, never less than the last ones given (called under
    ``_lock``)."""
    global _last_millis
    _last_millis = max(_last_millis, time.time_ns() // 1_000_000)
    return _last_millis


# Within one millisecond the random part grows by one per id. Should it ever reach its
# maximum (one chance in about 10^20 per millisecond), fresh randomness is drawn rather
# than failing the caller.
_generator = ULIDGenerator(clock=_millis, policy=LaxMonotonicPolicy())


def new_id() -> str:
    """A new id, greater than every id made before it by this process."""
    # One lock around the clock and the generator: the generator reads its clock before
    # taking its own lock, so two threads could otherwise hand it their times out of order.
    with _lock:
        made = _generator.generate()
    return str(made).lower()


def id_at(millis: int, random: int) -> str:
    """The id of the time ``millis`` (milliseconds since the epoch) and the 80-bit random
    part ``random``, for data made up for a given moment (benchmarks, seeds)."""
    return str(ULID.from_int((millis << 80) | random)).lower()
