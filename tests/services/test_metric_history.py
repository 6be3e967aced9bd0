"""The counters' history: only changes are sampled, resets are zeros, old samples are pruned
(but each series keeps its newest), and increases per bucket read resets as restarts."""

from __future__ import annotations

from datetime import timedelta

import pytest

from armada.models import MetricCounter, MetricSample
from armada.services.counters import counters_add, tally
from armada.services.metric_history import metric_increases, metrics_sample
from tests.conftest import T0, at

pytestmark = pytest.mark.django_db
NAME = "armada_scheduler_retry_policy_decisions_total"


def add(amount: int = 1, **labels: str) -> None:
    counters_add(name=NAME, increments={k: amount for k in tally(labels)})


def samples() -> list[tuple[str, int, object]]:
    return [(s.labels_key, s.value, s.at) for s in MetricSample.objects.order_by("at", "id")]


def test_only_changes_are_sampled_and_new_series_start_from_zero():
    add(3, policy="ml", decision="retry")
    assert metrics_sample(now=at(0)).written == 1  # the first sampling: a baseline
    assert metrics_sample(now=at(60)).written == 0  # nothing changed
    add(2, policy="ml", decision="retry")
    add(1, policy="ml", decision="fail_rule")  # a new series
    report = metrics_sample(now=at(120))
    assert report.written == 3
    rows = samples()
    assert rows[0] == ("decision=retry,policy=ml", 3, at(0))
    assert sorted(rows[1:]) == [
        ("decision=fail_rule,policy=ml", 0, at(120)),
        ("decision=fail_rule,policy=ml", 1, at(120)),
        ("decision=retry,policy=ml", 5, at(120)),
    ]
    # The new series' zero comes first, so that its 1 reads as an increase.
    assert [v for key, v, _ in rows if "fail_rule" in key] == [0, 1]


def test_a_reset_counter_is_sampled_as_zero_once():
    add(4, policy="ml", decision="retry")
    metrics_sample(now=at(0))
    MetricCounter.objects.all().delete()  # what counters_reset_if_due does
    assert metrics_sample(now=at(60)).written == 1
    assert metrics_sample(now=at(120)).written == 0
    assert [v for _, v, _ in samples()] == [4, 0]


def test_pruning_keeps_the_newest_sample_of_every_series():
    add(1, policy="old", decision="retry")
    add(1, policy="busy", decision="retry")
    metrics_sample(now=T0)
    for day in range(1, 10):
        add(1, policy="busy", decision="retry")
        metrics_sample(now=T0 + timedelta(days=day))
    kept = samples()
    assert ("decision=retry,policy=old", 1, T0) in kept  # the only sample of its series
    busy = [when for key, _, when in kept if "busy" in key]
    assert min(busy) >= T0 + timedelta(days=2)  # older than 7 days went
    assert max(busy) == T0 + timedelta(days=9)


def test_increases_per_bucket_with_a_reset():
    add(10, policy="ml", decision="retry", queue="a")
    metrics_sample(now=at(0))
    add(5, policy="ml", decision="retry", queue="a")
    metrics_sample(now=at(30))
    add(2, policy="ml", decision="retry", queue="a")
    metrics_sample(now=at(70))
    MetricCounter.objects.all().delete()
    metrics_sample(now=at(80))
    add(3, policy="ml", decision="retry", queue="a")
    metrics_sample(now=at(95))
    series = metric_increases(
        name=NAME, start=at(0), end=at(100), buckets=2, line_of=lambda lb: lb["policy"]
    )
    assert [(s.label, s.values) for s in series] == [("ml", [5, 5])]
    # A window that starts later measures from the last sample before it.
    later = metric_increases(
        name=NAME, start=at(50), end=at(100), buckets=1, line_of=lambda lb: lb["queue"]
    )
    assert [(s.label, s.values) for s in later] == [("a", [5])]
    hidden = metric_increases(
        name=NAME, start=at(0), end=at(100), buckets=2, line_of=lambda lb: None
    )
    assert hidden == []


def test_the_task_is_thin_and_scheduled_every_minute_on_the_scheduler_queue():
    from armada.celery import _periodic_tasks, app
    from armada.tasks import metrics_sample_task

    add(1, policy="ml", decision="retry")
    assert metrics_sample_task.run() == {"written": 1, "pruned": 0}

    class Sender:
        def __init__(self) -> None:
            self.added: dict[str, tuple] = {}

        def signature(self, name, **options):
            return (name, options)

        def add_periodic_task(self, period, signature, name):
            self.added[name] = (period, signature)

    sender = Sender()
    _periodic_tasks(sender)
    period, (task, options) = sender.added["metrics history sample"]
    assert (period, task, options["queue"]) == (60.0, "armada.metrics.sample", "scheduler")
    assert "armada.metrics.sample" in app.tasks
