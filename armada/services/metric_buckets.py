"""Histogram buckets as Prometheus' Go client makes and writes them (no database here, so
that both the counting services and ``armada.metrics`` can use them)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from prometheus_client.utils import floatToGoString

INF = "+Inf"


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ExponentialBuckets, multiplied step by step as the Go client does, so that
    the bounds (and their ``le`` texts) are the same numbers."""
    out = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return tuple(out)


def bucket_label(bound: float) -> str:
    """The ``le`` text of a bucket bound, as Prometheus' clients write it."""
    return floatToGoString(bound)


def bucket_of(bounds: Sequence[float], value: float) -> str:
    """The ``le`` of the smallest bucket of ``bounds`` that holds ``value``."""
    i = bisect.bisect_left(bounds, value)
    return bucket_label(bounds[i]) if i < len(bounds) else INF
