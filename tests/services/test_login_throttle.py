"""The failed-login throttle: counts per username and per address in the shared cache,
lockouts that grow, and exact counts under concurrent failures."""

from __future__ import annotations

import threading

from django.core.cache import caches

from armada.services.login_throttle import (
    ALIAS,
    login_failed,
    login_failures,
    login_refusal,
    login_succeeded,
    login_throttle_reset,
)

NOW = 1_800_000_000.0


def fail(times: int, username: str = "alice", address: str = "10.0.0.1", now: float = NOW):
    for _ in range(times):
        login_failed(username=username, address=address, now=now)


def refusal(username: str = "alice", address: str = "10.0.0.1", now: float = NOW):
    return login_refusal(username=username, address=address, now=now)


def test_four_failures_are_allowed_and_the_fifth_locks_the_user_out():
    fail(4)
    assert refusal() is None
    fail(1)
    found = refusal()
    assert found is not None and found.wait == 10
    assert found.message == "too many failed logins for user 'alice': try again in 10 seconds"
    assert refusal(now=NOW + 9.5).wait == 1
    assert refusal(now=NOW + 10) is None


def test_each_failure_past_the_limit_doubles_the_delay_up_to_the_most(settings):
    settings.LOGIN_THROTTLE = {**settings.LOGIN_THROTTLE, "MAX_DELAY_SECONDS": 60}
    fail(5)
    waits = []
    for _ in range(5):
        fail(1)
        waits.append(refusal().wait)
    assert waits == [20, 40, 60, 60, 60]


def test_a_success_clears_the_users_count():
    fail(4)
    login_succeeded(username="alice")
    assert login_failures(username="alice") == 0
    fail(4)
    assert refusal() is None


def test_other_users_are_not_locked_out_with_one():
    fail(5)
    assert refusal() is not None
    assert refusal(username="bob") is None  # same address, below its limit of 20


def test_an_address_is_locked_out_after_its_own_higher_limit():
    for i in range(19):
        fail(1, username=f"user-{i}")
    assert refusal(username="someone-else") is None
    fail(1, username="user-19")
    found = refusal(username="someone-else")
    assert found is not None and "from your address" in found.message
    assert refusal(username="someone-else", address="10.0.0.2") is None


def test_odd_usernames_and_empty_addresses_are_counted_safely():
    odd = "\x00 ünïcode " + "x" * 500
    fail(5, username=odd, address="")
    assert refusal(username=odd, address="") is not None
    assert login_failures(address="") == 0


def test_the_counts_live_in_the_shared_cache_not_in_the_database():
    # This module has no database mark: any query would raise "Database access not allowed".
    fail(5)
    assert refusal() is not None
    assert isinstance(caches[ALIAS].get_many(["nothing"]), dict)


def test_reset_forgets_everything():
    fail(5)
    login_throttle_reset()
    assert refusal() is None and login_failures(username="alice") == 0


def test_concurrent_failures_are_all_counted():
    """Eight threads failing at once for one user: no error, no lost count."""
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def hammer(i: int) -> None:
        try:
            start.wait(timeout=30)
            fail(25, address=f"10.1.0.{i}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and not any(t.is_alive() for t in threads)
    assert login_failures(username="alice") == 200
    assert login_failures(address="10.1.0.3") == 25
    assert refusal(address="10.9.9.9").wait == 900  # 195 past the limit: the longest delay
