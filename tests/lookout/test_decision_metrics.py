"""The decision-metrics page: charts (inline SVG in three layouts, with a data table) of
decisions per policy and queue, failure categories and gang skips over a range fitted to
the history, how fresh the history is (and a warning when the sampler seems stopped), the
live totals beside the charted ones, the period's parsing, and the counters' current values;
series of queues the viewer may not watch are left out."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from armada.models import LeaderLease, MetricSample
from armada.services.counters import counters_add, tally
from armada.services.metric_history import SAMPLED_MARK, metrics_sample
from armada.services.queues import queue_create
from tests.conftest import T0

pytestmark = pytest.mark.django_db
DECISIONS = "armada_scheduler_retry_policy_decisions_total"
URL = "/metrics/decisions"


def add(name: str, amount: int, **labels: str) -> None:
    counters_add(name=name, increments={k: amount for k in tally(labels)})


def sampled(minutes_ago: float) -> None:
    metrics_sample(now=timezone.now() - timedelta(minutes=minutes_ago))


@pytest.fixture
def history(admin_user, queue):
    """50 minutes of history: a baseline, then decisions, failures and a gang skip 20
    minutes ago (the last sample)."""
    queue_create(actor=admin_user, data={"name": "secret", "owners": ["someone"]}, now=T0)
    add(DECISIONS, 1, queue="demo", pool="default", policy="ml", decision="retry")
    sampled(50)  # the baseline
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
    sampled(20)
    return admin_user


def totals(chart) -> dict[str, int]:
    return {line.label: line.total for line in chart.lines}


def test_charts_tables_and_current_counters(client, history):
    client.force_login(history)
    response = client.get(URL, {"period": "1h"})
    assert response.status_code == 200
    html = response.content.decode()
    titles = [c.title for c in response.context["policy_charts"]]
    assert titles == ["Policy hush: decisions", "Policy ml: decisions"]
    assert totals(response.context["policy_charts"][1]) == {"retry": 4, "fail": 2}
    queues = {c.title: c for c in response.context["queue_charts"]}
    assert totals(queues["Queue secret: decisions"]) == {"fail": 3}
    assert totals(response.context["categories"]) == {"oom": 6}
    assert totals(response.context["gang"]) == {"ml": 2}
    # 2 policies, 2 queues, categories, gangs: each in three layouts, with a table.
    assert html.count('role="img"') == 6 * 3
    assert html.count('<table class="data"') == 6
    # Each drawing is titled, described, and points at its table.
    assert 'aria-describedby="policy-1-wide-desc policy-1-table"' in html
    assert '<title id="policy-1-wide-title">Policy ml: decisions</title>' in html
    assert "Decisions per minute" in html and "Time (UTC)" in html
    assert "<polyline" in html
    # The current values beside the charts.
    assert "armada_executor_job_failure_category_total" in html
    assert '<td>oom</td><td>memory</td><td class="num">6</td>' in html
    # The stylesheet of the charts (no inline style anywhere: the CSP forbids it).
    assert "lookout/charts.css" in html and "style=" not in html


def test_a_short_history_fills_the_range_and_the_page_says_so(client, history):
    client.force_login(history)
    response = client.get(URL)  # 6 h by default
    context = response.context
    assert context["period"] == "6h" and context["range_fitted"]
    first = MetricSample.objects.order_by("at").first().at
    assert first - timedelta(minutes=1) < context["range_start"] <= first
    assert context["bucket_step"] == "minute"
    text = re.sub(r"\s+", " ", response.content.decode())
    assert f"the history starts at {timezone.localtime(first):%H:%M}" in text
    assert "later than the start of the chosen period (last 6h)" in text
    assert "Each point is what the counter added in one minute (not a running total)" in text


def test_history_older_than_the_period_shows_the_whole_period(client, history):
    MetricSample.objects.update(at=timezone.now() - timedelta(hours=2))
    client.force_login(history)
    response = client.get(URL, {"period": "1h"})
    context = response.context
    assert not context["range_fitted"]
    assert timezone.now() - context["range_start"] >= timedelta(hours=1)
    assert "the last 1h" in response.content.decode()


def test_freshness_and_live_totals_beside_the_charted_ones(client, history):
    add(DECISIONS, 5, queue="demo", pool="default", policy="ml", decision="retry")  # unsampled
    LeaderLease.objects.filter(name=SAMPLED_MARK).update(
        expires_at=timezone.now() - timedelta(seconds=41)
    )
    client.force_login(history)
    response = client.get(URL, {"period": "1h"})
    text = re.sub(r"\s+", " ", response.content.decode())
    last = LeaderLease.objects.get(name=SAMPLED_MARK).expires_at
    assert "History sampled every minute; last sample <time datetime=" in text
    assert f">{timezone.localtime(last):%H:%M:%S}</time> (4" in text  # 41s (or 42s) ago
    assert re.search(r"\(4[12]s ago\)", text)
    assert "sampler" not in text.split("Decisions per policy")[0].split("last sample")[1]
    ml = response.context["policy_charts"][1]
    retry = ml.lines[0]
    assert (retry.label, retry.total, retry.live, retry.unsampled) == ("retry", 4, 9, 5)
    assert '4 charted</span>, <span class="live">9 in the range up to now</span>' in text
    assert "(+5 since the last sample)" in text


def test_the_figure_beside_the_chart_and_its_words_agree_with_the_counter(
    client, admin_user, queue
):
    """A counter at 7 of which 2 were counted before the history starts: the legend's figure
    is the increase over the range (5), worded so, never "live" or "the counter now"; the
    counter's own 7 is under "Counters now", and the page says why the two differ."""
    labels = {"queue": "demo", "pool": "default", "policy": "ml", "decision": "retry"}
    add(DECISIONS, 2, **labels)
    sampled(30)  # the history's first sample: its baseline
    add(DECISIONS, 3, **labels)
    sampled(10)
    add(DECISIONS, 2, **labels)  # not sampled yet: the counter is at 7
    client.force_login(admin_user)
    response = client.get(URL, {"period": "1h"})
    retry = response.context["policy_charts"][0].lines[0]
    assert (retry.label, retry.total, retry.live, retry.unsampled) == ("retry", 3, 5, 2)
    text = re.sub(r"\s+", " ", response.content.decode())
    legend = (
        '<span class="charted">3 charted</span>, <span class="live">5 in the range up to now</span>'
    )
    assert legend in text
    assert "(+2 since the last sample)" in text
    assert re.search(r'<td>retry</td><td class="num">7</td>', text)  # under Counters now
    assert "the counter now" not in text and " live</span>" not in text
    assert "Both count only what was added in the range shown" in text
    assert "its total since it started, can be higher" in text


def test_a_stale_sampler_is_named(client, history):
    client.force_login(history)
    # The last sampling was 20 minutes ago: more than three sampling periods.
    response = client.get(URL, {"period": "1h"})
    assert response.context["stale"]
    text = re.sub(r"\s+", " ", response.content.decode())
    assert "The newest sample is 20m" in text
    assert "the sampler (Celery beat's task <code>armada.metrics.sample</code>" in text
    assert "may be stopped" in text


def test_a_quiet_history_is_not_stale_when_the_sampler_runs(client, history):
    """Samples are written only on change: an hour without one is not a stopped sampler
    while the sampler's own mark is fresh."""
    metrics_sample(now=timezone.now() - timedelta(seconds=30))  # nothing changed
    assert not MetricSample.objects.filter(at__gt=timezone.now() - timedelta(minutes=5))
    client.force_login(history)
    response = client.get(URL, {"period": "1h"})
    assert not response.context["stale"]
    assert "may be stopped" not in response.content.decode()


def test_viewers_do_not_see_series_of_queues_they_may_not_watch(client, history, owner):
    add(DECISIONS, 7, queue="secret", pool="default", policy="covert", decision="retry")
    client.force_login(owner)
    response = client.get(URL, {"period": "1h"})
    assert [c.title for c in response.context["policy_charts"]] == ["Policy ml: decisions"]
    assert [c.title for c in response.context["queue_charts"]] == ["Queue demo: decisions"]
    html = response.content.decode()
    assert "secret" not in html and "hush" not in html and "covert" not in html


def test_an_empty_history_says_so(client, admin_user):
    client.force_login(admin_user)
    response = client.get(URL)
    assert response.status_code == 200
    html = re.sub(r"\s+", " ", response.content.decode())
    assert "No sample of the counters has been taken yet" in html
    assert "No decisions in this range." in html
    assert html.count("No samples yet, so nothing to chart.") == 2  # categories, gangs
    assert '<svg class="chart-svg' not in html and not response.context["stale"]


def test_nothing_counted_in_the_range_is_said_in_words(client, history):
    MetricSample.objects.update(at=timezone.now() - timedelta(hours=3))
    client.force_login(history)
    response = client.get(URL, {"period": "1h"})
    assert response.context["policy_charts"] == []
    html = response.content.decode()
    assert html.count("Nothing counted from ") == 2 and '<svg class="chart-svg' not in html


def test_decisions_counted_before_any_sample_show_as_live_only(client, history):
    add(DECISIONS, 2, queue="demo", pool="default", policy="fresh", decision="retry")
    client.force_login(history)
    response = client.get(URL, {"period": "1h"})
    fresh = next(c for c in response.context["policy_charts"] if "fresh" in c.title)
    assert fresh.empty and fresh.views == []
    assert [(line.label, line.total, line.live) for line in fresh.lines] == [("retry", 0, 2)]


@pytest.mark.parametrize(
    "period", ["bogus", "", "6H", "1h ", "2h", "x" * 300, "1h\u200b"], ids=lambda p: repr(p)[:12]
)
def test_a_bad_period_is_refused_naming_it(client, history, period):
    client.force_login(history)
    before = MetricSample.objects.count()
    response = client.get(URL, {"period": period})
    assert response.status_code == 400
    text = response.content.decode()
    assert "period: must be one of 1h, 6h, 24h, 7d" in text
    assert MetricSample.objects.count() == before


@pytest.mark.parametrize(
    ("period", "step"),
    [("1h", "minute"), ("6h", "10 minutes"), ("24h", "30 minutes"), ("7d", "3 hours")],
)
def test_every_period_is_read(client, history, period, step):
    MetricSample.objects.update(at=timezone.now() - timedelta(days=8))
    client.force_login(history)
    response = client.get(URL, {"period": period})
    assert response.status_code == 200
    assert response.context["period"] == period and response.context["bucket_step"] == step
    assert f'<option value="{period}" selected>' in response.content.decode()


def test_the_page_needs_a_login(client):
    response = client.get(URL)
    assert response.status_code == 302 and "/login" in response["Location"]
