"""The object store: one global resourceVersion counter (as etcd has), the objects of each
kind, and a bounded history of changes from which watches and paged lists are served."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.kube_emulator.objects import RESOURCES, ApiError, already_exists, not_found, to_wire

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped kinds


@dataclass(frozen=True)
class Change:
    """One write: ``old`` is the object before it (None for ADDED), ``new`` after it (for
    DELETED, the last state with the deletion's resourceVersion)."""

    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    plural: str
    key: Key
    old: dict[str, Any] | None
    new: dict[str, Any]


def expired(rv: int, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {rv} ({oldest})")


class Store:
    """Objects in wire form. Every method is thread-safe; stored dicts are never mutated
    (an update stores a new dict), so callers may hold on to what they read."""

    def __init__(self, max_history: int = 10_000) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.rv = 1
        self.max_history = max_history
        self.floor = 1  # a watch or continue from rv >= floor can be served
        self.history: deque[Change] = deque()
        self.objects: dict[str, dict[Key, dict[str, Any]]] = {p: {} for p in RESOURCES}
        self.listeners: list[Callable[[Change], None]] = []

    # -- reads -----------------------------------------------------------------------------
    def get(self, plural: str, ns: str, name: str) -> dict[str, Any]:
        with self.lock:
            obj = self.objects[plural].get((ns, name))
        if obj is None:
            raise not_found(RESOURCES[plural], name)
        return obj

    def find(self, plural: str, ns: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            return self.objects[plural].get((ns, name))

    def items(self, plural: str, ns: str | None = None) -> tuple[list[dict[str, Any]], int]:
        """Objects sorted by key (as etcd returns them) and the resourceVersion read at."""
        with self.lock:
            objs = self.objects[plural]
            keys = sorted(k for k in objs if ns is None or k[0] == ns)
            return [objs[k] for k in keys], self.rv

    def snapshot(self, plural: str, rv: int) -> dict[Key, dict[str, Any]]:
        """The objects of a kind as they were at ``rv`` (rebuilt from the history)."""
        with self.lock:
            if rv < self.floor:
                raise expired(rv, self.floor)
            objs = dict(self.objects[plural])
            for change in reversed(self.history):
                if change.rv <= rv:
                    break
                if change.plural != plural:
                    continue
                if change.old is None:
                    objs.pop(change.key, None)
                else:
                    objs[change.key] = change.old
            return objs

    def changes_after(self, rv: int) -> tuple[list[Change], int]:
        """Changes with resourceVersion > ``rv`` and the current resourceVersion; raises
        410 Expired when the history no longer reaches back to ``rv``."""
        with self.lock:
            if rv < self.floor:
                raise expired(rv, self.floor)
            out: list[Change] = []
            for change in reversed(self.history):
                if change.rv <= rv:
                    break
                out.append(change)
            out.reverse()
            return out, self.rv

    def wait(self, rv: int, timeout: float) -> None:
        """Block until something newer than ``rv`` is written (or ``timeout``)."""
        with self.changed:
            if self.rv <= rv:
                self.changed.wait(timeout)

    def wake(self) -> None:
        with self.changed:
            self.changed.notify_all()

    # -- writes ----------------------------------------------------------------------------
    def create(self, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        with self.lock:
            if key in self.objects[plural]:
                raise already_exists(RESOURCES[plural], key[1])
            return self._write("ADDED", plural, key, None, obj)

    def update(
        self, plural: str, ns: str, name: str, mutate: Callable[[dict[str, Any]], object]
    ) -> dict[str, Any] | None:
        """Apply ``mutate`` to a copy of the stored object and store it; None if gone.
        ``mutate`` returning False means "nothing to change"."""
        import copy

        with self.lock:
            old = self.objects[plural].get((ns, name))
            if old is None:
                return None
            new = copy.deepcopy(old)
            if mutate(new) is False:
                return old
            return self._write("MODIFIED", plural, (ns, name), old, new)

    def delete(self, plural: str, ns: str, name: str) -> dict[str, Any]:
        with self.lock:
            old = self.objects[plural].get((ns, name))
            if old is None:
                raise not_found(RESOURCES[plural], name)
            return self._write("DELETED", plural, (ns, name), old, old)

    def compact(self) -> None:
        """Forget the history: a watch or continue from an older resourceVersion gets 410."""
        with self.lock:
            self.history.clear()
            self.floor = self.rv
            self.changed.notify_all()

    def _write(
        self,
        type_: str,
        plural: str,
        key: Key,
        old: dict[str, Any] | None,
        obj: dict[str, Any],
    ) -> dict[str, Any]:
        self.rv += 1
        body = dict(obj)
        body["metadata"] = dict(obj["metadata"], resourceVersion=str(self.rv))
        wire = to_wire(RESOURCES[plural], body)
        if type_ == "DELETED":
            del self.objects[plural][key]
        else:
            self.objects[plural][key] = wire
        change = Change(self.rv, type_, plural, key, old, wire)
        self.history.append(change)
        while len(self.history) > self.max_history:
            dropped = self.history.popleft()
            self.floor = dropped.rv
        self.changed.notify_all()
        for listener in self.listeners:
            listener(change)
        return wire
