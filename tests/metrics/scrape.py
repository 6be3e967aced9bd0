"""Reading ``/metrics`` back with Prometheus' text parser.

The parser names a counter's samples ``<family>_total`` whatever the exposition wrote; for
Armada's counters, whose ``# TYPE`` line carries the bare name, the samples are written under
the bare name, and that is the name these helpers key them by."""

from __future__ import annotations

import threading
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

JOIN_TIMEOUT = 300  # seconds a racing thread may take on a busy machine


def parse(text: str) -> tuple[dict, dict]:
    """``({(sample name, sorted labels): value}, {family name: type})``."""
    values, types = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        bare = family.type == "counter" and f"\n# TYPE {family.name} counter\n" in f"\n{text}"
        for s in family.samples:
            name = family.name if bare and s.name == f"{family.name}_total" else s.name
            values[(name, tuple(sorted(s.labels.items())))] = s.value
    return values, types


def scrape(client) -> tuple[dict, dict]:
    response = client.get("/metrics")
    assert response.status_code == 200
    return parse(response.content.decode())


def value(values: dict, name: str, **labels: str) -> float:
    return values[(name, tuple(sorted(labels.items())))]


def series(values: dict, name: str) -> dict[tuple, float]:
    """Every sample of ``name``: its sorted labels -> value."""
    return {labels: v for (n, labels), v in values.items() if n == name}


def race_with_scrapes(write: Callable[[int], None], threads: int) -> list[str]:
    """Run ``write(k)`` in ``threads`` threads (each its own database connection) while
    another thread scrapes ``/metrics`` until they are done, all started at once; returns
    the errors, ``"<type>: <message>"`` (``"scrape: ..."`` for the scraper's)."""
    from django.db import connection
    from django.test import Client

    errors: list[str] = []
    barrier = threading.Barrier(threads + 1, timeout=120)

    def writer(k: int) -> None:
        try:
            barrier.wait()
            write(k)
        except Exception as exc:  # noqa: BLE001 - reported to the caller
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()

    def scraper() -> None:
        try:
            barrier.wait()
            client = Client()
            while any(t.is_alive() for t in workers):
                assert client.get("/metrics").status_code == 200
        except Exception as exc:  # noqa: BLE001 - reported to the caller
            errors.append(f"scrape: {type(exc).__name__}: {exc}")
        finally:
            connection.close()

    workers = [threading.Thread(target=writer, args=(k,)) for k in range(threads)]
    every = [*workers, threading.Thread(target=scraper)]
    for t in every:
        t.start()
    for t in every:
        t.join(timeout=JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in every)
    return errors
