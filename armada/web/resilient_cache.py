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

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

from armada.logs import Seldom

log = logging.getLogger(__name__)
_trouble = Seldom(log)


def _degrading(name: str, fallback: Callable[..., Any]) -> Callable[..., Any]:
    """``RedisCache``'s method ``name``, answering ``fallback(*args, **kwargs)`` (what an
    empty cache would answer) when Redis fails."""
    method = getattr(RedisCache, name)

    @functools.wraps(method)
    def degrading(self: RedisCache, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (RedisError, OSError) as exc:
            _trouble.warning("the shared cache (Redis) does not answer (%s): going without it", exc)
            return fallback(*args, **kwargs)

    return degrading


def _nothing(*_: Any, **__: Any) -> None:
    return None


def _false(*_: Any, **__: Any) -> bool:
    return False


def _default(key: Any, default: Any = None, version: Any = None) -> Any:
    return default


class ResilientRedisCache(RedisCache):
    """``RedisCache`` whose every call answers as an empty cache would when Redis fails."""

    add = _degrading("add", _false)
    get = _degrading("get", _default)
    set = _degrading("set", _nothing)
    touch = _degrading("touch", _false)
    delete = _degrading("delete", _false)
    get_many = _degrading("get_many", lambda *_, **__: {})
    has_key = _degrading("has_key", _false)
    set_many = _degrading("set_many", lambda data, *_, **__: list(data))
    delete_many = _degrading("delete_many", _nothing)
    clear = _degrading("clear", _false)
