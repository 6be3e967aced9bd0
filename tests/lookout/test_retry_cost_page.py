"""The retry-cost page: totals, charts (three, with data tables) and tables per queue,
policy, category and decision from the cost rollup, the retry-yield table, the period and
queue choosers (a bad value is a 400 naming the field) and queues the viewer may not watch
left out. The rollups are written by ``services.retry_cost`` (tests/services); here they
are seeded as rows."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from armada.models import RetryCostBucket, RetryYieldBucket
from armada.services.queues import queue_create
from armada.services.retry_cost import bucket_start
from tests.conftest import T0

pytestmark = pytest.mark.django_db
URL = "/metrics/cost"
CORE_HOUR = 3600 * 1000  # millicore-seconds
GIB_HOUR = 3600 * 1024 * 1024  # KiB-seconds


def cost(queue, policy, category, decision, kind, *, hours_ago=1.0, core=1.0, gib=0.0, runs=1):
    moment = timezone.now() - timedelta(hours=hours_ago)
    for bucket_hours in (1, 24):
        row, _ = RetryCostBucket.objects.get_or_create(
            bucket_hours=bucket_hours,
            start=bucket_start(moment, bucket_hours),
            queue=queue,
            policy=policy,
            category=category,
            decision=decision,
            kind=kind,
        )
        RetryCostBucket.objects.filter(id=row.id).update(
            runs=F("runs") + runs,
            cpu_milli_seconds=F("cpu_milli_seconds") + round(core * CORE_HOUR),
            memory_kib_seconds=F("memory_kib_seconds") + round(gib * GIB_HOUR),
        )


def yielded(queue, category, rule, *, retried=0, succeeded=0, retries=0, hours_ago=1.0):
    moment = timezone.now() - timedelta(hours=hours_ago)
    for bucket_hours in (1, 24):
        row, _ = RetryYieldBucket.objects.get_or_create(
            bucket_hours=bucket_hours,
            start=bucket_start(moment, bucket_hours),
            queue=queue,
            category=category,
            rule=rule,
            retries=retries,
        )
        RetryYieldBucket.objects.filter(id=row.id).update(
            retried_jobs=F("retried_jobs") + retried, succeeded_jobs=F("succeeded_jobs") + succeeded
        )


@pytest.fixture
def world(admin_user, queue):
    """Queue ``demo`` (``olive`` watches it) and ``secret`` (she may not)."""
    queue_create(actor=admin_user, data={"name": "secret", "owners": ["someone"]}, now=T0)
    cost("demo", "training", "oom", "retry", "failed_run", core=2.0, gib=8.0, runs=2)
    cost("demo", "training", "oom", "retry", "retried_attempt", core=1.5, runs=1)
    cost("demo", "training", "user-error", "fail_rule", "failed_run", core=0.25)
    cost("demo", "", "oom", "not_retried", "failed_run", core=0.5, hours_ago=30)  # 2nd day
    cost("secret", "hush", "xid-error", "retry", "failed_run", core=100.0)
    yielded("demo", "oom", 4, retried=3)
    yielded("demo", "oom", 4, succeeded=2, retries=1)
    yielded("demo", "oom", 4, succeeded=1, retries=2)
    yielded("secret", "xid-error", 0, retried=5, succeeded=5, retries=1)
    return admin_user


def _table(html: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table[^>]*id="{table_id}".*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [
        [
            re.sub(r"<[^>]+>", "", cell).strip()
            for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def test_the_page_totals_charts_and_tables_over_the_period(client, world):
    client.force_login(world)
    response = client.get(URL, {"period": "24h"})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'aria-current="page">Retry cost</a>' in html
    charts = {c.chart_id: c for c in response.context["charts"]}
    assert set(charts) == {"core-hours", "memory-hours", "gpu-hours"}
    core = {line.label: line.total for line in charts["core-hours"].lines}
    # The last 24 hours by hour: the failure 30 hours ago is out.
    assert core == {"Failed runs": 102.25, "Retried attempts": 1.5}
    assert {line.label: line.total for line in charts["memory-hours"].lines}["Failed runs"] == 8
    assert _table(html, "cost-queue") == [
        ["secret", "1", "100.00", "0", "0", "0", "0", "0", "0"],
        ["demo", "3", "2.25", "8.00", "0", "1", "1.50", "0", "0"],
    ]
    decisions = {row[0]: row[1:3] for row in _table(html, "cost-decision")}
    assert decisions == {"retry": ["3", "102.00"], "fail_rule": ["1", "0.25"]}
    # A week by day takes in the older failure, under policy "(none)".
    week = client.get(URL, {"period": "7d"}).content.decode()
    policies = {row[0]: row[1:3] for row in _table(week, "cost-policy")}
    assert policies["(none)"] == ["1", "0.50"]


def test_retry_yield_table(client, world):
    client.force_login(world)
    rows = _table(client.get(URL).content.decode(), "cost-yield")
    assert rows == [
        ["oom", "rule 4", "3", "3", "100%", "1 (2 jobs), 2 (1 job)"],
        ["xid-error", "default action", "5", "5", "100%", "1 (5 jobs)"],
    ]


def test_queues_the_viewer_may_not_watch_are_left_out(client, world, owner):
    client.force_login(owner)
    response = client.get(URL, {"period": "24h"})
    html = response.content.decode()
    assert [row[0] for row in _table(html, "cost-queue")] == ["demo"]
    for hidden in ("secret", "hush", "xid-error"):
        assert hidden not in html, hidden
    core = {line.label: line.total for line in response.context["charts"][0].lines}
    assert core["Failed runs"] == 2.25
    assert client.get(URL, {"queue": "secret"}).status_code == 400


def test_one_queue(client, world):
    client.force_login(world)
    html = client.get(URL, {"period": "24h", "queue": "secret"}).content.decode()
    assert [row[0] for row in _table(html, "cost-queue")] == ["secret"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"period": "1y"}, "period"),
        ({"period": "x" * 300}, "period"),
        ({"queue": "nope"}, "queue"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_the_field(client, world, params, field):
    client.force_login(world)
    response = client.get(URL, params)
    assert response.status_code == 400
    assert f"invalid request: {field}:" in response.content.decode().lower()


def test_an_empty_page_says_so(client, admin_user, queue):
    client.force_login(admin_user)
    html = client.get(URL).content.decode()
    assert "No job was retried in this period." in html
    assert "Nothing counted in this period." in html


def test_login_is_required(client):
    response = client.get(URL)
    assert response.status_code == 302 and "/login" in response["Location"]


def test_a_chart_of_small_amounts_fits_its_axis_to_them(client, admin_user, queue):
    """A few core-seconds of cost: the chart reads in core-seconds, its axis tops out just
    above the largest point (not a 0-1 axis with a flat line), labels without exponents."""
    cost("demo", "training", "oom", "retry", "failed_run", core=0.00042)  # 1.512 core-seconds
    cost("demo", "training", "oom", "retry", "retried_attempt", core=0.0002)
    client.force_login(admin_user)
    response = client.get(URL, {"period": "24h"})
    core = response.context["charts"][0]
    assert core.title == "Core-seconds of failed runs and retried attempts"
    assert core.y_title == "Core-seconds per hour"
    highest = max(max(line.values) for line in core.lines)
    assert highest == pytest.approx(1.512)
    for view in core.views:
        assert view.y_ticks[-1].y == view.top
        assert [t.text for t in view.y_ticks] == ["0", "0.5", "1.0", "1.5", "2.0"]
    html = response.content.decode()
    assert not re.search(r"\d[eE][+-]?\d", re.sub(r"<[^>]+>", " ", html))
