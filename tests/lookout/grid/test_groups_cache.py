"""Group counts over many jobs: kept in Django's default cache, which every web process shares
(a second process, with none of the first one's memory, gets the same counts), saying when
they were counted, recounted once in the background when old; few jobs are counted exactly
every time; more groups than shown are named in a note."""

from __future__ import annotations

import importlib
import threading

import pytest
from django.core.cache import cache, caches
from django.db import connection
from django.test import RequestFactory

from lookout.grid import groups
from lookout.grid.filters import JobFilters, apply_filters, jobs_visible
from lookout.grid.params import GridParams
from tests.lookout.builders import make_job
from tests.waiting import wait_until

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="counts are kept on PostgreSQL only"
)


@pytest.fixture
def big_groups(monkeypatch):
    """Counts of three jobs or more are "large"; the cache starts and ends empty."""
    monkeypatch.setattr(groups, "GROUP_EXACT_ROWS", 3)
    monkeypatch.setattr(groups, "GROUP_REFRESH_SECONDS", 3600.0)
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def started(monkeypatch) -> list[str]:
    """The names of the counts whose background recount was started, in order."""
    names: list[str] = []
    real_thread = threading.Thread

    def recorded(*args, **kwargs):
        # ``groups.threading`` is the threading module itself: every thread started meanwhile
        # (a connection pool's, say) comes here, and only the recounts are recorded.
        if kwargs.get("target") is groups._refresh:
            names.append(kwargs["args"][0])
        return real_thread(*args, **kwargs)

    monkeypatch.setattr(groups.threading, "Thread", recorded)
    return names


def by_state(actor) -> groups.GroupLevel:
    return groups.level_counts(actor, JobFilters(), ("state",), ())


def counts(level: groups.GroupLevel) -> dict[str, int]:
    return {g.value: g.total for g in level.groups}


def top_level(user, query: str) -> str:
    request = RequestFactory().get(f"/?{query}")
    request.user = user
    return groups.render_groups(request, GridParams.from_request(request))


def four_jobs() -> None:
    for i in range(4):
        make_job(f"01g{i}", state="failed" if i % 2 else "succeeded")


@postgresql_only
@pytest.mark.django_db
def test_large_counts_are_kept_for_every_process_and_say_when_they_were_counted(
    admin_user, queue, big_groups, monkeypatch
):
    four_jobs()
    first = by_state(admin_user)
    assert counts(first) == {"failed": 2, "succeeded": 2}
    assert first.as_of is not None
    assert "Counted at" in top_level(admin_user, "group=state")
    make_job("01g9", state="failed")
    # Another process: this module loaded afresh and its own connection to the cache.
    importlib.reload(groups)
    monkeypatch.setattr(groups, "GROUP_EXACT_ROWS", 3)
    monkeypatch.setattr(groups, "GROUP_REFRESH_SECONDS", 3600.0)
    monkeypatch.setattr(groups, "cache", caches.create_connection("default"))
    again = by_state(admin_user)
    assert counts(again) == {"failed": 2, "succeeded": 2}
    assert again.as_of == first.as_of
    # The counts live in the cache, nowhere else: without them the jobs are counted again.
    qs = apply_filters(jobs_visible(admin_user), JobFilters())
    assert groups.cache.get(groups.cache_key(qs, "state")) is not None
    cache.clear()
    assert counts(by_state(admin_user)) == {"failed": 3, "succeeded": 2}


@postgresql_only
@pytest.mark.django_db
def test_viewers_of_other_queues_do_not_share_counts(admin_user, owner, queue, big_groups):
    four_jobs()
    assert counts(by_state(admin_user)) == {"failed": 2, "succeeded": 2}
    from armada.services.queues import queue_create
    from tests.conftest import T0

    queue_create(actor=admin_user, data={"name": "other", "owners": ["someone"]}, now=T0)
    for i in range(3):
        make_job(f"01o{i}", queue="other", state="running")
    cache.clear()
    assert counts(by_state(admin_user)) == {"failed": 2, "succeeded": 2, "running": 3}
    assert counts(by_state(owner)) == {"failed": 2, "succeeded": 2}


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_old_counts_are_shown_while_one_recount_runs_in_the_background(
    admin_user, queue, big_groups, monkeypatch, started
):
    four_jobs()
    first = by_state(admin_user)
    make_job("01g9", state="failed")
    monkeypatch.setattr(groups, "GROUP_REFRESH_SECONDS", 0.0)
    qs = apply_filters(jobs_visible(admin_user), JobFilters())
    name = groups.cache_key(qs, "state")
    # While another process holds the recount, nobody starts one.
    assert cache.add(name + ":refreshing", 1, 60)
    assert counts(by_state(admin_user)) == {"failed": 2, "succeeded": 2}
    assert started == []
    cache.delete(name + ":refreshing")
    # Then the first request to see them old starts it, and still gets the old counts.
    assert counts(by_state(admin_user)) == {"failed": 2, "succeeded": 2}
    assert started == [name]
    wait_until(
        "the recount to be kept",
        lambda: cache.get(name) and cache.get(name)["at"] > first.as_of.timestamp(),
        timeout=30,
    )
    wait_until("the recount to let go", lambda: cache.get(name + ":refreshing") is None)
    later = by_state(admin_user)
    assert counts(later) == {"failed": 3, "succeeded": 2}
    assert later.as_of > first.as_of


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_one_background_recount_runs_at_a_time_whatever_it_counts(
    admin_user, queue, big_groups, monkeypatch, started
):
    four_jobs()
    by_state(admin_user)
    make_job("01g9", state="failed")
    monkeypatch.setattr(groups, "GROUP_REFRESH_SECONDS", 0.0)
    # Another count's recount is running (in this process or another): this one waits, and
    # its old counts are shown meanwhile.
    assert cache.add(groups.RECOUNTING, "another count", 60)
    assert counts(by_state(admin_user)) == {"failed": 2, "succeeded": 2}
    assert started == []
    assert cache.get(groups.RECOUNTING) == "another count"
    cache.delete(groups.RECOUNTING)
    assert counts(by_state(admin_user)) == {"failed": 2, "succeeded": 2}
    assert len(started) == 1
    wait_until("the recount to let go", lambda: cache.get(groups.RECOUNTING) is None)
    assert counts(by_state(admin_user)) == {"failed": 3, "succeeded": 2}


@pytest.mark.django_db
def test_few_jobs_are_counted_exactly_every_time_without_a_note(admin_user, queue, big_groups):
    make_job("01h1", state="failed")
    make_job("01h2", state="failed")
    level = by_state(admin_user)
    assert level.as_of is None and counts(level) == {"failed": 2}
    make_job("01h3", state="queued", job_set="other")
    narrow = groups.level_counts(
        admin_user, JobFilters(job_set_exact="other"), ("job_set", "state"), ()
    )
    assert narrow.as_of is None and counts(narrow) == {"other": 1}
    assert "Counted at" not in top_level(admin_user, "group=state&job_set_exact=set-1")


@pytest.mark.django_db
def test_more_groups_than_shown_say_how_many_more(admin_user, queue, monkeypatch):
    monkeypatch.setattr(groups, "MAX_GROUPS", 2)
    for i in range(5):
        make_job(f"01s{i}", job_set=f"set-{i}")
    make_job("01s9", job_set="set-0")
    html = top_level(admin_user, "group=job_set")
    assert html.count('class="group-row"') == 2
    assert "3 more groups of job set not shown; filter to narrow." in html
    assert "more group" not in top_level(admin_user, "group=state")
