"""The shared cache (Django's ``default`` alias: sessions, Lookout's kept group counts) on
Redis, degrading to a cache that holds nothing while Redis does not answer.

Nothing kept there is the only copy of anything: sessions are in the database too
(``cached_db``) and counts are worked out again. So when Redis is down or unreachable, a
read misses, a write is dropped and a delete does nothing, and the request goes on: pages
and logins with a session keep working, reading sessions from the database. The trouble is
logged at most once a minute. The connection and each command are bounded by short
timeouts (``OPTIONS`` in the settings), so an unreachable Redis costs a request about a
second at worst, not a hang. (The login throttle has a cache of its own, which does not
degrade this way: it must fail safe; ``services.login_throttle``.)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

T = TypeVar("T")
COMPLAIN_EVERY = 60.0


class ResilientRedisCache(RedisCache):
    """``RedisCache`` whose every call answers as an empty cache would when Redis fails."""

    _complained_at: float | None = None

    def _or(self, call: Callable[[], T], fallback: T) -> T:
        try:
            return call()
        except (RedisError, OSError) as exc:
            now = time.monotonic()
            last = ResilientRedisCache._complained_at
            if last is None or now - last >= COMPLAIN_EVERY:
                ResilientRedisCache._complained_at = now
                log.warning("the shared cache (Redis) does not answer (%s): going without it", exc)
            return fallback

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None):
        return self._or(
            lambda: super(ResilientRedisCache, self).add(key, value, timeout, version), False
        )

    def get(self, key: Any, default: Any = None, version: Any = None):
        return self._or(
            lambda: super(ResilientRedisCache, self).get(key, default, version), default
        )

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None):
        return self._or(
            lambda: super(ResilientRedisCache, self).set(key, value, timeout, version), None
        )

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None):
        return self._or(
            lambda: super(ResilientRedisCache, self).touch(key, timeout, version), False
        )

    def delete(self, key: Any, version: Any = None):
        return self._or(lambda: super(ResilientRedisCache, self).delete(key, version), False)

    def get_many(self, keys: Any, version: Any = None):
        return self._or(lambda: super(ResilientRedisCache, self).get_many(keys, version), {})

    def has_key(self, key: Any, version: Any = None):
        return self._or(lambda: super(ResilientRedisCache, self).has_key(key, version), False)

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None):
        return self._or(
            lambda: super(ResilientRedisCache, self).set_many(data, timeout, version), list(data)
        )

    def delete_many(self, keys: Any, version: Any = None):
        return self._or(lambda: super(ResilientRedisCache, self).delete_many(keys, version), None)

    def clear(self):
        return self._or(lambda: super(ResilientRedisCache, self).clear(), False)
