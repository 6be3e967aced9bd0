"""Identifiers: lower-case ULIDs, sortable by creation time, valid in pod names.

An id is 26 characters of Crockford's base 32: 48 bits of milliseconds since the epoch, then
80 random bits. Ids made by one process are strictly increasing, even within one millisecond
(the random part is incremented, as the ULID specification's monotonic mode does) and even
when the system clock steps back (the last millisecond used is kept until the clock passes
it again), so that jobs of one batch keep their order and a run made later sorts after its
job's earlier runs. Should the random part run out within a millisecond (one chance in about
10^20), the ids go on in the next millisecond: never smaller, never the same.

A batch (:func:`new_ids`: a cycle's runs, a submit's jobs) shares one time and one random
draw, and its ids are encoded from a table of character pairs: under half a microsecond
each, where making them one at a time costs several (``bench/RESULTS.md``).
"""

from __future__ import annotations

import secrets
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
# Every pair of characters, by the ten bits it encodes.
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]
_RANDOM_SPAN = 1 << 80
_LOW_BITS = 20  # the random part's last four characters, looked up per id

_lock = threading.Lock()
_last_millis = 0  # the latest millisecond given out (never goes back)
_made_millis = -1  # the millisecond of the latest id made, and its random part
_made_random = 0


def _millis() -> int:
    """Milliseconds since the epoch, never less than the last ones given (called under
    ``_lock``)."""
    global _last_millis
    _last_millis = max(_last_millis, time.time_ns() // 1_000_000)
    return _last_millis


def _encode(value: int, chars: int) -> str:
    """``value`` in ``chars`` (an even number) characters of the alphabet, most significant
    first."""
    return "".join(_PAIRS[(value >> shift) & 1023] for shift in range(5 * chars - 10, -1, -10))


def new_ids(count: int) -> list[str]:
    """``count`` new ids, in increasing order, each greater than every id made before it by
    this process."""
    global _last_millis, _made_millis, _made_random
    if count <= 0:
        return []
    # One lock around the clock and the state: two threads never interleave their ids.
    with _lock:
        millis = _millis()
        first = _made_random + 1 if millis == _made_millis else None
        if first is not None and first + count > _RANDOM_SPAN:
            # This millisecond's random part would pass its maximum: go on in the next one.
            millis = _last_millis = millis + 1
            first = None
        if first is None:
            first = secrets.randbelow(_RANDOM_SPAN - count + 1)
        _made_millis, _made_random = millis, first + count - 1
    prefix = _encode(millis, 10)
    pairs = _PAIRS
    made = []
    high = -1
    head = ""
    for random in range(first, first + count):
        if random >> _LOW_BITS != high:
            high = random >> _LOW_BITS
            head = prefix + _encode(high, 12)
        low = random & 0xFFFFF
        made.append(head + pairs[low >> 10] + pairs[low & 1023])
    return made


def new_id() -> str:
    """A new id, greater than every id made before it by this process."""
    return new_ids(1)[0]


def id_at(millis: int, random: int) -> str:
    """The id of the time ``millis`` (milliseconds since the epoch) and the 80-bit random
    part ``random``, for data made up for a given moment (benchmarks, seeds)."""
    if not 0 <= millis < 1 << 48 or not 0 <= random < _RANDOM_SPAN:
        raise ValueError(f"no id has the time {millis} and the random part {random}")
    return _encode(millis, 10) + _encode(random, 16)
