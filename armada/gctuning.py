"""Python's cyclic garbage collector: in a web or gRPC process tuned once at start-up
(``armada.asgi``, ``armada.grpcserver``), in the scheduler paused for each cycle
(``collector_paused``).

A 5,000-job submit allocates a few hundred thousand container objects (the decoded body, the
job specs, the rows and events), nearly all of which live until the response is sent. With
Python's default first-generation threshold (700 allocations) the collector runs hundreds
of times during one such request, moves the request's objects into the older generations and
then runs full collections, each of which walks every object of the process, the tens of
thousands that Django and the apps made at start-up included. Measured in-process on a
5,000-job submit: about 0.2 s of 0.5 s of CPU (``bench/RESULTS.md``).

``tune_gc`` therefore, once the application is loaded:

- raises the first generation's threshold to ``ARMADA_GC_THRESHOLD`` (default
  ``DEFAULT_THRESHOLD``; the older generations keep Python's ratios), so that a request's
  objects are mostly freed by reference counting before a collection sees them. The
  collector still runs: only objects in reference cycles wait for it, at most that many
  allocations longer;
- collects once and then freezes (``gc.freeze``) what start-up left: modules, classes,
  settings, URL patterns live as long as the process, so no collection needs to walk them.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from django.core.exceptions import ImproperlyConfigured

ENV = "ARMADA_GC_THRESHOLD"
#: Allocations between two collections of the youngest generation (Python's default: 700).
DEFAULT_THRESHOLD = 50_000
MIN_THRESHOLD = 100
MAX_THRESHOLD = 10_000_000


def gc_threshold(environ: Mapping[str, str]) -> int:
    """The first generation's threshold ``environ`` asks for; ImproperlyConfigured naming the
    variable when it is not a whole number from ``MIN_THRESHOLD`` to ``MAX_THRESHOLD``."""
    value = environ.get(ENV, "").strip()
    if not value:
        return DEFAULT_THRESHOLD
    if value.isascii() and value.isdigit() and MIN_THRESHOLD <= int(value) <= MAX_THRESHOLD:
        return int(value)
    raise ImproperlyConfigured(
        f"{ENV} must be a whole number from {MIN_THRESHOLD} to {MAX_THRESHOLD} (allocations "
        f"between two collections of the youngest generation; Python's own is 700, the "
        f"default here {DEFAULT_THRESHOLD}), got {value!r}"
    )


def tune_gc(environ: Mapping[str, str] | None = None) -> int:
    """Set the collector's first threshold from ``environ`` (the process's environment by
    default), collect once and freeze the objects made so far; returns the threshold."""
    threshold = gc_threshold(os.environ if environ is None else environ)
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(threshold, older, oldest)
    gc.collect()
    gc.freeze()
    return threshold


def due_generation(counts: tuple[int, int, int], thresholds: tuple[int, int, int]) -> int:
    """The oldest generation Python would collect now, given ``gc.get_count()`` and
    ``gc.get_threshold()``: the second once the first was collected more times than its
    threshold since the second was, the third likewise; else the first."""
    for generation in (2, 1):
        if counts[generation] > thresholds[generation]:
            return generation
    return 0


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic collector paused for the block (a scheduling cycle), then one
    collection of the generations that are due (``due_generation``).

    A cycle holds tens of thousands of objects at once (its round's leases, the rows it
    writes), nearly all freed by reference counting when it ends. Left running, the collector
    walked them several times a cycle, young and then middle-aged (20-60 ms a cycle at 5,000
    leases); collected at the end, it finds them gone. What waits meanwhile is only garbage in
    reference cycles, for the length of the block. Does nothing when the collector is off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(due_generation(gc.get_count(), gc.get_threshold()))
