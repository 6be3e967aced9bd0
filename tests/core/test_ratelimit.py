"""The lease-rate token bucket: table-driven, time passed in."""

from __future__ import annotations

import pytest

from armada.core.ratelimit import TokenBucket

# (rate, burst, [(op, now, n)], expected available after each step)
# op "a": available(now, unlimited=n); op "t": take(now, n) then available(now, 10**9)
CASES = [
    (
        "off: always the caller's limit",
        0,
        5,
        [("a", 0, 100), ("t", 0, 50), ("a", 0, 7)],
        [100, 10**9, 7],
    ),
    ("starts full", 10, 50, [("a", 0, 1000)], [50]),
    ("capped by the caller's limit", 10, 50, [("a", 0, 20)], [20]),
    ("spending empties", 10, 50, [("t", 0, 50), ("a", 0, 1000)], [0, 0]),
    ("refills at the rate", 10, 50, [("t", 0, 50), ("a", 1.5, 1000)], [0, 15]),
    ("never above burst", 10, 50, [("t", 0, 10), ("a", 100, 1000)], [40, 50]),
    ("never below zero", 10, 50, [("t", 0, 80), ("a", 0.5, 1000)], [0, 5]),
    (
        "time going back adds nothing",
        10,
        50,
        [("t", 5, 50), ("a", 4, 1000), ("a", 6, 1000)],
        [0, 0, 10],
    ),
    (
        "fractions accumulate",
        1,
        10,
        [("t", 0, 10), ("a", 0.4, 99), ("a", 0.8, 99), ("a", 1.2, 99)],
        [0, 0, 0, 1],
    ),
]


@pytest.mark.parametrize(
    ("name", "rate", "burst", "steps", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_token_bucket(name, rate, burst, steps, expected):
    bucket = TokenBucket(rate=rate, burst=burst)
    seen = []
    for op, now, n in steps:
        if op == "a":
            seen.append(bucket.available(now, n))
        else:
            bucket.take(now, n)
            seen.append(bucket.available(now, 10**9))
    assert seen == expected
