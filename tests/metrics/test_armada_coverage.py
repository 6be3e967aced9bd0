"""Every metric Armada defines is either served at ``/metrics`` under its name, type and labels,
or on docs/metrics.md's list with a reason; the doc's table and Armada's list agree."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from armada.executor.metrics import REGISTRY as EXECUTOR_REGISTRY
from tests.metrics.armada_metric_names import ARMADA_METRICS, BY_NAME
from tests.metrics.docs_table import STATUSES, doc_table, executor_served
from tests.metrics.scenario import run_scenario

# Exported, but the scenario makes no series for them (no preemption, nothing cordoned...):
# their family is served (``# TYPE``) without samples.
NO_SERIES_IN_SCENARIO = {
    # no preemption, no short-job penalty, no utilisation events: tests/metrics/test_cycle_gauges.py
    "armada_scheduler_evicted_jobs",
    "armada_scheduler_evicted_resources",
    "armada_scheduler_short_job_penalty",
    "armada_queue_resource_used",
    "armada_executor_job_pod_resource_usage",
    "armada_scheduler_preempted_jobs",
    "armada_scheduler_job_resource_seconds_lost_to_preemption",
    "armada_scheduler_retry_policy_gang_skipped_total",
    # each process's own open streams: none is open at the scrape (tests/metrics/test_streams.py)
    "armada_event_api_active_subscriptions",
}


def test_the_doc_lists_every_armada_metric_with_its_type_labels_and_a_status():
    table = doc_table()
    assert set(table) == set(BY_NAME)
    for m in ARMADA_METRICS:
        type_, labels, status, notes = table[m.name]
        assert (type_, labels) == (m.type, m.labels), m.name
        assert status in STATUSES, m.name
        if status != "exported":
            assert notes, f"{m.name}: {status} needs a reason"


def _families(text: str) -> dict:
    """Families by (name, type): the parser names a counter family without ``_total``, so
    Armada's counter ``armada_executor_job_pod_total`` and its gauge ``armada_executor_job_pod``
    share a name."""
    return {(f.name, f.type): f for f in text_string_to_metric_families(text)}


@pytest.mark.django_db(transaction=True)
def test_every_exported_name_is_scraped_with_armadas_type_and_labels(
    settings, client, queue, owner, admin_user
):
    run_scenario(settings, owner, admin_user)
    text = client.get("/metrics").content.decode()
    families = _families(text)
    table = doc_table()
    on_executor = executor_served()
    exported = [
        m for m in ARMADA_METRICS if table[m.name][2] == "exported" and m.name not in on_executor
    ]
    assert len(exported) >= 50
    for m in exported:
        # The parser names a counter family without "_total".
        name = m.name.removesuffix("_total") if m.type == "counter" else m.name
        family = families.get((name, m.type))
        assert family is not None, f"{m.name} is not served as a {m.type}"
        assert family.type == m.type, m.name
        if m.type == "counter":
            # The exposition's TYPE line carries Armada's exact name.
            assert f"\n# TYPE {m.name} counter\n" in text, m.name
        if m.name in NO_SERIES_IN_SCENARIO:
            continue
        assert family.samples, f"{m.name} has no series after the scenario"
        for sample in family.samples:
            got = tuple(k for k in sample.labels if k != "le")
            if m.name == "armada_queue_labels":
                got = got[:2]  # then the queue's own labels
            assert set(got) == set(m.labels), (m.name, sample.labels)
        if m.type == "histogram":
            les = [s.labels["le"] for s in family.samples if s.name.endswith("_bucket")]
            bounds = [float(le) for le in les if le != "+Inf"]
            per_series = len(set(bounds))
            assert per_series == len(m.buckets), m.name
            assert sorted(set(bounds)) == sorted(float(b) for b in m.buckets), m.name
    # Names that have no meaning here, or are not counted yet, are not served; nor are those
    # each executor serves itself.
    for name, (_, _, status, _) in table.items():
        if status != "exported" or name in on_executor:
            assert f"\n# TYPE {name} " not in text, name


def test_the_executor_serves_its_own_names_with_armadas_type_labels_and_buckets():
    """The names the doc says each ``armada-executor`` serves are in its registry
    (``executor.metrics``) with Armada's type; their labels, buckets and values, read from
    the served address: tests/executor/test_executor_metrics.py."""
    table = doc_table()
    on_executor = executor_served()
    assert len(on_executor) == 4
    by_name = {family.name: family for family in EXECUTOR_REGISTRY.collect()}
    for name in on_executor:
        m = BY_NAME[name]
        assert table[name][2] == "exported", name
        family = by_name.get(name.removesuffix("_total") if m.type == "counter" else name)
        assert family is not None, f"{name} is not in the executor's registry"
        assert family.type == m.type, name
