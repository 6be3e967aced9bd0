"""Grouped counts on PostgreSQL with real parallel clients: people expand groups (counted
exactly, and kept counts recounted in the background all the time) while jobs change state;
no request fails, and every answer is consistent: each level's groups add up to all the
jobs, and each group's states to its total."""

from __future__ import annotations

import json
import random
import re
import threading
from urllib.parse import quote

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client

from armada.models import Job
from lookout.grid import groups
from lookout.grid.filters import JobFilters, apply_filters, jobs_visible
from tests.lookout.builders import make_job, make_run
from tests.racing import Race, each_more_than
from tests.waiting import wait_until

JOBS = 90
STATES = ("queued", "running", "succeeded", "failed", "cancelled")
NODES = ("node-1", "node-2", "node-3")


def rows_of(html: str) -> list[tuple[int, int]]:
    """(total, sum of the state badges) of each group row."""
    found = []
    for row in re.findall(r'<tr class="group-row".*?</tr>', html, re.S):
        total = int(re.search(r'data-total="(\d+)"', row).group(1))
        states = re.findall(r'data-state="[a-z]+">[a-z]+ ([\d,]+)<', row)
        found.append((total, sum(int(n.replace(",", "")) for n in states)))
    return found


@pytest.mark.django_db(transaction=True)
def test_parallel_viewers_get_consistent_groups_while_jobs_change_state(
    admin_user, queue, monkeypatch
):
    if connection.vendor != "postgresql":
        pytest.skip("parallel clients need PostgreSQL")
    rnd = random.Random(7)
    for i in range(JOBS):
        make_job(f"01r{i:03d}", job_set=f"set-{i % 4}", state=rnd.choice(STATES))
        if i % 5:
            make_run(f"r01r{i:03d}", f"01r{i:03d}", node=NODES[i % 3])
    on_node_1 = sum(1 for i in range(JOBS) if i % 5 and i % 3 == 0)
    # Kept counts, always old: every kept read starts a background recount (one at a time).
    monkeypatch.setattr(groups, "GROUP_EXACT_ROWS", 50)
    monkeypatch.setattr(groups, "GROUP_REFRESH_SECONDS", 0.0)
    cache.clear()
    recounts: list[str] = []
    refresh = groups._refresh

    def counted_refresh(name, qs, key):
        recounts.append(key)
        refresh(name, qs, key)

    monkeypatch.setattr(groups, "_refresh", counted_refresh)
    local = threading.local()
    node_1 = quote(json.dumps([["node", "node-1"]]))

    def viewer() -> Client:
        if not hasattr(local, "client"):
            local.client = Client()
            local.client.force_login(admin_user)
        return local.client

    def expand_top(n: int) -> None:
        key = ("state", "job_set", "node")[n % 3]
        response = viewer().get(f"/groups?group={key}&path=%5B%5D")
        assert response.status_code == 200, response.content[:300]
        found = rows_of(response.content.decode())
        assert sum(total for total, _ in found) == JOBS
        assert all(total == states for total, states in found)

    def expand_node(n: int) -> None:
        response = viewer().get(f"/groups?group=node,state&path={node_1}")
        assert response.status_code == 200, response.content[:300]
        found = rows_of(response.content.decode())
        assert sum(total for total, _ in found) == on_node_1
        assert all(total == states for total, states in found)

    def change_states(n: int) -> None:
        ids = [f"01r{rnd.randrange(JOBS):03d}" for _ in range(3)]
        with transaction.atomic():
            for job_id in sorted(set(ids)):
                Job.objects.filter(id=job_id).update(state=rnd.choice(STATES))

    race = Race()
    race.run(
        {
            "top-1": expand_top,
            "top-2": expand_top,
            "node": expand_node,
            "writer-1": change_states,
            "writer-2": change_states,
        },
        seconds=6.0,
        until=each_more_than(2, ("top-1", "top-2", "node", "writer-1")),
    )
    assert race.errors == []
    assert min(race.counts[name] for name in ("top-1", "top-2", "node")) >= 3
    assert race.counts["writer-1"] >= 3
    assert recounts, "no kept count was recounted in the background"
    # Let the last background recounts end before the database is emptied.
    qs = apply_filters(jobs_visible(admin_user), JobFilters())
    names = [groups.cache_key(qs, key) for key in ("state", "job_set", "node")]
    wait_until(
        "the background recounts to end",
        lambda: all(cache.get(name + ":refreshing") is None for name in names),
        timeout=60,
    )
    cache.clear()
