"""The cycle's gauges (``services.metric_gauges.gauges_replace``): the names a cycle sets end
up holding exactly its rows; a row whose value did not change is not written; other names
are left alone."""

from __future__ import annotations

import pytest

from armada.models import MetricGauge
from armada.services.metric_gauges import gauges_read, gauges_replace

pytestmark = pytest.mark.django_db

Q1, Q2, Q3 = {"queue": "q1"}, {"queue": "q2"}, {"queue": "q3"}


def ids() -> dict[tuple[str, str], int]:
    return {(g.name, g.labels_key): g.id for g in MetricGauge.objects.all()}


# (first cycle's rows, second cycle's rows, names the second sets)
CASES = [
    pytest.param(
        {"a": [(Q1, 1.0), (Q2, 2.0)]},
        {"a": [(Q1, 1.0), (Q2, 5.0), (Q3, 3.0)]},
        ["a"],
        id="unchanged-changed-new",
    ),
    pytest.param(
        {"a": [(Q1, 1.0), (Q2, 2.0)], "b": [(Q1, 7.0)]},
        {"a": [(Q2, 2.0)]},
        ["a", "b"],
        id="gone-and-name-emptied",
    ),
    pytest.param({}, {"a": [(Q1, 0.0)]}, ["a"], id="first-cycle"),
]


@pytest.mark.parametrize(("first", "second", "names"), CASES)
def test_a_cycle_leaves_exactly_its_rows(first, second, names):
    gauges_replace(names=list(first), rows=first)
    gauges_replace(names=["untouched"], rows={"untouched": [(Q1, 9.0)]})
    before = ids()
    gauges_replace(names=names, rows=second)

    def as_set(rows_by_name) -> set[tuple[str, tuple, float]]:
        return {
            (name, tuple(sorted(labels.items())), value)
            for name, rows in rows_by_name.items()
            for labels, value in rows
        }

    assert as_set(gauges_read()) == as_set(second) | {("untouched", (("queue", "q1"),), 9.0)}
    after = ids()
    # A row kept (same name and labels) is the same row, updated in place or not at all.
    for key in before.keys() & after.keys():
        assert before[key] == after[key]


def test_an_unchanged_value_is_not_written(django_assert_max_num_queries):
    rows = {"a": [(Q1, 1.0), (Q2, 2.0), (Q3, 3.0)]}
    gauges_replace(names=["a"], rows=rows)
    # Nothing changed: one read and no write (savepoint statements aside).
    with django_assert_max_num_queries(3) as captured:
        gauges_replace(names=["a"], rows=rows)
    writes = [
        q["sql"]
        for q in captured.captured_queries
        if q["sql"].lstrip().upper().startswith(("UPDATE", "DELETE", "INSERT", "COPY"))
    ]
    assert writes == []
