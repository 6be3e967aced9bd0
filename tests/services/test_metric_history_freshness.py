"""How fresh the counters' history is: the sampler records each run (even one that wrote
nothing), racing samplers make one mark, the status says how far the history reaches, and
the gains not sampled yet are read as the next sampling will (new series from 0, resets)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from armada.models import LeaderLease, MetricCounter
from armada.services.counters import counters_add, tally
from armada.services.metric_history import (
    SAMPLED_MARK,
    metrics_sample,
    sampling_status,
    series_increases,
    unsampled_increases,
)
from tests.conftest import at

NAME = "armada_scheduler_retry_policy_decisions_total"


def add(amount: int = 1, **labels: str) -> None:
    counters_add(name=NAME, increments={k: amount for k in tally(labels)})


def gains() -> dict[str, int]:
    return {key: gained for key, (_, gained) in unsampled_increases(name=NAME).items()}


@pytest.mark.django_db
def test_every_sampling_is_recorded_even_when_nothing_changed():
    assert sampling_status(names=[NAME], start=at(0)).last_sampled is None
    add(2, policy="ml", decision="retry")
    metrics_sample(now=at(0))
    metrics_sample(now=at(60))  # writes no sample
    status = sampling_status(names=[NAME], start=at(30))
    assert status.last_sampled == at(60)
    assert (status.first_in_period, status.covers_period) == (None, True)
    assert not status.stale(at(60 + 180))
    assert status.stale(at(60 + 181))
    # Without the mark (history from before it existed), the newest sample's time.
    LeaderLease.objects.filter(name=SAMPLED_MARK).delete()
    assert sampling_status(names=[NAME], start=at(30)).last_sampled == at(0)


@pytest.mark.django_db
def test_the_status_names_the_first_sample_of_the_period():
    add(1, policy="ml", decision="retry")
    metrics_sample(now=at(100))
    add(1, policy="ml", decision="retry")
    metrics_sample(now=at(160))
    status = sampling_status(names=[NAME], start=at(50))
    assert (status.first_in_period, status.covers_period) == (at(100), False)
    status = sampling_status(names=[NAME], start=at(130))
    assert (status.first_in_period, status.covers_period) == (at(160), True)
    assert sampling_status(names=["other"], start=at(0)).first_in_period is None


@pytest.mark.django_db
def test_gains_not_sampled_yet_are_read_as_the_next_sampling_will():
    add(3, policy="ml", decision="retry")
    assert gains() == {}  # nothing sampled ever: every value is a baseline
    metrics_sample(now=at(0))
    assert gains() == {}
    add(2, policy="ml", decision="retry")
    add(4, policy="new", decision="fail_rule")  # a series born since: from 0
    assert gains() == {"decision=retry,policy=ml": 2, "decision=fail_rule,policy=new": 4}
    metrics_sample(now=at(60))
    assert gains() == {}
    # A reset counter below its sample: all of its value is new; a deleted one gained 0.
    MetricCounter.objects.filter(labels_key="decision=retry,policy=ml").update(value=1)
    MetricCounter.objects.filter(labels_key="decision=fail_rule,policy=new").delete()
    assert gains() == {"decision=retry,policy=ml": 1}


@pytest.mark.django_db
def test_increases_per_series_with_a_counter_reset():
    add(10, policy="ml", decision="retry")
    metrics_sample(now=at(0))
    add(5, policy="ml", decision="retry")
    metrics_sample(now=at(30))
    MetricCounter.objects.all().delete()  # a reset
    metrics_sample(now=at(40))
    add(3, policy="ml", decision="retry")
    metrics_sample(now=at(95))
    found = series_increases(name=NAME, start=at(0), end=at(120), buckets=2)
    assert found == {"decision=retry,policy=ml": ({"policy": "ml", "decision": "retry"}, [5, 3])}


@pytest.mark.django_db(transaction=True)
def test_racing_samplers_make_one_mark():
    if connection.vendor != "postgresql":
        pytest.skip("needs concurrent writers")
    add(1, policy="ml", decision="retry")
    barrier = threading.Barrier(6)  # the pool holds 8: the test keeps one
    errors: list[BaseException] = []

    def sample() -> None:
        try:
            connection.ensure_connection()
            barrier.wait(timeout=30)
            metrics_sample(now=timezone.now())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=sample) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    [mark] = LeaderLease.objects.filter(name=SAMPLED_MARK)
    assert timezone.now() - mark.expires_at < timedelta(minutes=1)
