"""Reading ``/metrics`` back with Prometheus' text parser.

The parser names a counter's samples ``<family>_total`` whatever the exposition wrote; for
Armada's counters, whose ``# TYPE`` line carries the bare name, the samples are written under
the bare name, and that is the name these helpers key them by."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


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
