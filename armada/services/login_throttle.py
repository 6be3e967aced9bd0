"""Failed-login throttling, shared by every password check: the API's Basic auth, the
Lookout login page and the admin's login page.

Failures are counted per username and per client address, within ``WINDOW_SECONDS`` of the
latest failure. Once a username has ``USER_FAILURES`` failures, or an address
``ADDRESS_FAILURES`` (higher: many people may share an address), every attempt for it is
refused, right password or not, until a lock lapses: ``BASE_DELAY_SECONDS`` when the limit
is reached, doubling with each failure past it, at most ``MAX_DELAY_SECONDS``. A success
clears the username's count, not the address's (one good account must not launder the
guesses made from an address). Callers check :func:`login_refusal` before they hash the
password, so a locked-out guess costs no hashing either.

The counts live in Django's cache alias ``login-throttle``: Redis when ``REDIS_URL`` is set,
so every web process sees the same counts, else files under the var dir. Nothing is
written to the database. Counting is atomic: Redis's INCR, or a file lock around the
read-and-write of the file-based cache.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.cache import BaseCache, caches
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

from armada.logs import Seldom

log = logging.getLogger(__name__)

ALIAS = "login-throttle"
# The doubling stops growing here; MAX_DELAY_SECONDS caps the delay long before.
_MAX_DOUBLINGS = 30


@dataclass(frozen=True)
class Refusal:
    """An attempt refused without checking its password; ``wait`` is in whole seconds.
    ``status`` is the HTTP answer: 429 for a lockout, 503 while the throttle's store does
    not answer (:func:`login_refusal`)."""

    wait: int
    message: str
    status: int = 429


# While the throttle's store (Redis) does not answer, password logins are refused (503)
# rather than let through uncounted: the throttle fails safe. Tokens and sessions still work.
UNAVAILABLE = Refusal(
    30,
    "password logins are paused: the failed-login counter's store does not answer; try "
    "again in a minute, or use an API token",
    status=503,
)
_STORE_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)
_trouble = Seldom(log)


def _store_down(exc: BaseException) -> None:
    """Log the store's trouble, at most once a minute."""
    _trouble.warning(
        "login throttle: its store does not answer (%s): refusing password logins", exc
    )


def wall_clock() -> float:
    """Seconds since the epoch: the throttle's clock (callers pass it in as ``now``)."""
    return time.time()


def _limit(name: str) -> int:
    return int(settings.LOGIN_THROTTLE[name])


def _cache() -> BaseCache:
    return caches[ALIAS]


def _key(kind: str, what: str, value: str) -> str:
    # Usernames and addresses may hold any character; cache keys may not.
    return f"{kind}:{what}:{hashlib.sha256(value.encode('utf-8', 'replace')).hexdigest()[:40]}"


def _subjects(username: str, address: str) -> list[tuple[str, str, int]]:
    """(kind, value, limit) for each thing counted; an empty value is not counted."""
    subjects = []
    if username:
        subjects.append(("user", username, _limit("USER_FAILURES")))
    if address:
        subjects.append(("address", address, _limit("ADDRESS_FAILURES")))
    return subjects


def _seconds(wait: float) -> int:
    return max(1, math.ceil(wait))


def login_refusal(*, username: str, address: str, now: float) -> Refusal | None:
    """A Refusal when ``username`` or ``address`` is locked out at ``now``, else None."""
    subjects = _subjects(username, address)
    if not subjects:
        return None
    try:
        locks = _cache().get_many([_key("lock", kind, value) for kind, value, _ in subjects])
    except _STORE_ERRORS as exc:
        _store_down(exc)
        return UNAVAILABLE
    worst: tuple[float, str] | None = None
    for kind, value, _ in subjects:
        until = locks.get(_key("lock", kind, value))
        if isinstance(until, int | float) and until > now and (worst is None or until > worst[0]):
            worst = (until, kind)
    if worst is None:
        return None
    wait = _seconds(worst[0] - now)
    whom = f"for user {username!r}" if worst[1] == "user" else "from your address"
    unit = "second" if wait == 1 else "seconds"
    return Refusal(wait, f"too many failed logins {whom}: try again in {wait} {unit}")


@contextlib.contextmanager
def _file_lock() -> Iterator[None]:
    """Serialises read-and-write counting on caches without an atomic increment, across the
    threads and processes of this machine (each ``open`` is its own lock holder)."""
    path = Path(settings.VAR_DIR) / "login-throttle.lock"
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _count(cache: BaseCache, key: str, window: int) -> int:
    """Add one failure to ``key`` and return the new count; the count lives ``window``
    seconds after its latest failure."""
    if isinstance(cache, RedisCache):
        for _ in range(3):
            cache.add(key, 0, timeout=window)
            try:
                count = cache.incr(key)
            except ValueError:  # expired between the add and the increment
                continue
            cache.touch(key, timeout=window)
            return count
        raise RuntimeError(f"could not count a failed login in cache {ALIAS!r}")
    with _file_lock():
        count = int(cache.get(key) or 0) + 1
        cache.set(key, count, timeout=window)
        return count


def login_failed(*, username: str, address: str, now: float) -> None:
    """Count a failed password check; lock out what has reached its limit. When the store
    stops answering meanwhile, the failure goes uncounted (logged): the next attempt finds
    the store down and is refused."""
    cache = _cache()
    window = _limit("WINDOW_SECONDS")
    base, most = _limit("BASE_DELAY_SECONDS"), _limit("MAX_DELAY_SECONDS")
    try:
        for kind, value, limit in _subjects(username, address):
            count = _count(cache, _key("count", kind, value), window)
            if count >= limit:
                delay = min(base * 2 ** min(count - limit, _MAX_DOUBLINGS), most)
                cache.set(_key("lock", kind, value), now + delay, timeout=math.ceil(delay) + 1)
    except _STORE_ERRORS as exc:
        _store_down(exc)


def login_succeeded(*, username: str) -> None:
    """A right password (not refused): forget the username's failures (left to expire when
    the store does not answer)."""
    if username:
        try:
            _cache().delete_many([_key("count", "user", username), _key("lock", "user", username)])
        except _STORE_ERRORS as exc:
            _store_down(exc)


def login_failures(*, username: str = "", address: str = "") -> int:
    """The failures counted for ``username`` (or else ``address``) in the current window."""
    kind, value = ("user", username) if username else ("address", address)
    return int(_cache().get(_key("count", kind, value)) or 0)


def login_throttle_reset() -> None:
    """Forget every count and lock (tests; an operator after a false alarm). On Redis only
    this alias's keys go, not the rest of the database."""
    cache = _cache()
    if isinstance(cache, RedisCache):
        client = cache._cache.get_client(write=True)
        keys = list(client.scan_iter(match=f"{cache.key_prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        return
    cache.clear()
