"""The decision-metrics page: charts (inline SVG with a data table) of decisions per policy
and queue, failure categories and gang skips, and the counters' current values; series of
queues the viewer may not watch are left out."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from armada.services.counters import counters_add, tally
from armada.services.metric_history import Series, metrics_sample
from armada.services.queues import queue_create
from lookout.charts import line_chart, nice_max
from tests.conftest import T0

pytestmark = pytest.mark.django_db
DECISIONS = "armada_scheduler_retry_policy_decisions_total"


def add(name: str, amount: int, **labels: str) -> None:
    counters_add(name=name, increments={k: amount for k in tally(labels)})


@pytest.fixture
def history(admin_user, queue):
    queue_create(actor=admin_user, data={"name": "secret", "owners": ["someone"]}, now=T0)
    now = timezone.now()
    add(DECISIONS, 1, queue="demo", pool="default", policy="ml", decision="retry")
    metrics_sample(now=now - timedelta(minutes=50))  # the baseline
    add(DECISIONS, 4, queue="demo", pool="default", policy="ml", decision="retry")
    add(DECISIONS, 2, queue="demo", pool="default", policy="ml", decision="fail_rule")
    add(DECISIONS, 3, queue="secret", pool="default", policy="hush", decision="fail_default")
    add(
        "armada_executor_job_failure_category_total",
        6,
        failure_category="oom",
        failure_subcategory="memory",
    )
    add("armada_scheduler_retry_policy_gang_skipped_total", 2, policy="ml")
    metrics_sample(now=now - timedelta(minutes=20))
    return admin_user


def test_charts_tables_and_current_counters(client, history):
    client.force_login(history)
    response = client.get("/metrics/decisions", {"window": "1h"})
    assert response.status_code == 200
    html = response.content.decode()
    titles = [c.title for c in response.context["policy_charts"]]
    assert titles == ["Policy hush: decisions", "Policy ml: decisions"]
    ml = response.context["policy_charts"][1]
    assert {line.label: line.total for line in ml.lines} == {"retry": 4, "fail": 2}
    queues = {c.title: c for c in response.context["queue_charts"]}
    assert {line.label: line.total for line in queues["Queue secret: decisions"].lines} == {
        "fail": 3
    }
    assert {line.label: line.total for line in response.context["categories"].lines} == {"oom": 6}
    assert {line.label: line.total for line in response.context["gang"].lines} == {"ml": 2}
    assert html.count("<svg viewBox") == 6  # 2 policies, 2 queues, categories, gangs
    assert 'role="img"' in html and "<details>" in html and "Data table" in html
    assert "<polyline" in html
    # The current values beside the charts.
    assert "armada_executor_job_failure_category_total" in html
    assert '<td>oom</td><td>memory</td><td class="num">6</td>' in html


def test_viewers_do_not_see_series_of_queues_they_may_not_watch(client, history, owner):
    client.force_login(owner)
    response = client.get("/metrics/decisions", {"window": "1h"})
    assert [c.title for c in response.context["policy_charts"]] == ["Policy ml: decisions"]
    assert [c.title for c in response.context["queue_charts"]] == ["Queue demo: decisions"]
    assert "secret" not in response.content.decode()
    assert "hush" not in response.content.decode()


def test_an_empty_history_renders(client, admin_user):
    client.force_login(admin_user)
    response = client.get("/metrics/decisions", {"window": "bogus"})
    assert response.status_code == 200
    assert response.context["window"] == "6h"
    assert "No decisions in this period." in response.content.decode()


def test_chart_geometry():
    assert [nice_max(v) for v in (0, 1, 3, 10, 11, 73, 480)] == [1, 1, 5, 10, 20, 100, 500]
    starts = [T0 + timedelta(minutes=i) for i in range(3)]
    chart = line_chart(
        title="t", chart_id="c", starts=starts, series=[Series(label="a", values=[0, 5, 10])]
    )
    [line] = chart.lines
    points = [tuple(map(float, p.split(","))) for p in line.points.split()]
    assert points[0][0] == chart.left and points[-1][0] == chart.plot_right
    assert points[0][1] == chart.plot_bottom and points[-1][1] == chart.top
    assert [t.label for t in chart.y_ticks] == ["0", "2", "4", "6", "8", "10"]
    assert chart.summary == "t. Totals: a 15."
