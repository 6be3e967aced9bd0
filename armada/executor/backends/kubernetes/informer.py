"""A list-and-watch cache of one kind of object, kept by a thread of its own.

The informer lists the objects once (in pages), then watches from the list's
``resourceVersion``, applying each ADDED, MODIFIED and DELETED event to its cache and moving
its resourceVersion on with each event and BOOKMARK. It costs the API server one long
request per kind, whatever the number of objects, instead of a request per object per tick.

- A watch the server ends (its ``timeoutSeconds``), or a connection that breaks, is watched
  again from the last resourceVersion seen: no change is missed and none is applied twice.
- ``410 Gone`` (the server no longer has the history from that resourceVersion, as an HTTP
  status or as an ERROR event) lists everything again and replaces the cache; objects
  deleted meanwhile disappear from it then.
- Any other failure (500s, a server that cannot be reached) is retried with a back-off from
  1 s to 30 s; the cache keeps what it had, so the executor goes on with its last view of
  the cluster rather than an empty one.

``synced`` is set once the first list has been read; until then the cache is not a view of
the cluster, and the backend refuses to answer from it. Objects are kept as the JSON the
server sent (dicts), not as the client's models: the executor reads a few fields of each,
and parsing thousands of pods into models costs much for nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)

PAGE_SIZE = 500
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0
#: How much longer than its ``timeoutSeconds`` a watch may stay silent before the
#: connection is taken for dead (the server sends bookmarks well within that).
READ_SLACK = 60.0


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _version(obj: Obj) -> int | None:
    text = (obj.get("metadata") or {}).get("resourceVersion") or ""
    return int(text) if text.isdigit() else None


class Gone(Exception):
    """The server no longer has the history the watch asked for (410)."""


class Informer:
    """A cache of the objects ``list_call`` lists (with the given selectors), kept current.

    ``list_call`` is a ``list_*`` method of the official client (for example
    ``CoreV1Api.list_pod_for_all_namespaces``); it is called with ``_preload_content=False``
    so that its body is read as JSON.
    """

    def __init__(
        self,
        name: str,
        list_call: Callable[..., Any],
        *,
        label_selector: str = "",
        field_selector: str = "",
        watch_timeout: float = 300.0,
        request_timeout: float = 30.0,
    ) -> None:
        self.name = name
        self._list_call = list_call
        self._selectors = {
            k: v
            for k, v in (("label_selector", label_selector), ("field_selector", field_selector))
            if v
        }
        self._watch_timeout = int(watch_timeout)
        self._request_timeout = request_timeout
        self._lock = threading.Lock()
        self._objects: dict[Key, Obj] = {}
        self.resource_version = ""
        self.synced = threading.Event()
        self._stopping = threading.Event()
        self._response: Any = None
        self._thread: threading.Thread | None = None
        # What it cost the API server: list requests (pages), watch requests, re-lists on 410.
        self.lists = 0
        self.watches = 0
        self.relists = 0
        self.failures = 0

    # --- reading -------------------------------------------------------------------------

    def items(self) -> list[Obj]:
        with self._lock:
            return list(self._objects.values())

    def snapshot(self) -> dict[Key, Obj]:
        """The objects by (namespace, name), as they are now (a copy of the index; the
        objects themselves are shared and never changed in place)."""
        with self._lock:
            return dict(self._objects)

    def get(self, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._objects.get((namespace, name))

    def put(self, obj: Obj) -> None:
        """Take an object the executor just created or deleted (the API's answer) before its
        watch event arrives, so that the cache never lags behind the executor's own acts.
        An older version never replaces a newer one."""
        with self._lock:
            self._apply("MODIFIED", obj)

    # --- the thread ----------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):  # a connection that is going anyway
                response.close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        backoff = BACKOFF_FIRST
        need_list = True
        while not self._stopping.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                self._watch()
                backoff = BACKOFF_FIRST
            except Gone:
                self.relists += 1
                need_list = True
                log.info("%s: resourceVersion too old; listing again", self.name)
            except Exception as exc:  # noqa: BLE001 - every failure is retried, none is fatal
                if self._stopping.is_set():
                    return
                self.failures += 1
                if isinstance(exc, ApiException) and exc.status == 410:
                    self.relists += 1
                    need_list = True
                    continue
                log.warning("%s: %s; trying again in %.0fs", self.name, _describe(exc), backoff)
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)

    def _list(self) -> None:
        """List every object, page by page, and replace the cache with them."""
        objects: dict[Key, Obj] = {}
        token = ""
        while True:
            kwargs: dict[str, Any] = {"limit": PAGE_SIZE, **self._selectors}
            if token:
                kwargs["_continue"] = token
            body = self._request(kwargs)
            self.lists += 1
            for item in body.get("items") or []:
                objects[key_of(item)] = item
            meta = body.get("metadata") or {}
            token = meta.get("continue") or ""
            if not token:
                version = meta.get("resourceVersion") or ""
                break
        with self._lock:
            self._objects = objects
            self.resource_version = version
        self.synced.set()

    def _request(self, kwargs: dict[str, Any]) -> Obj:
        response = self._list_call(
            _preload_content=False, _request_timeout=self._request_timeout, **kwargs
        )
        try:
            return json.loads(response.data)
        finally:
            response.release_conn()

    def _watch(self) -> None:
        """One watch request, from the cache's resourceVersion to its end."""
        response = self._list_call(
            watch=True,
            resource_version=self.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=self._watch_timeout,
            _preload_content=False,
            _request_timeout=(self._request_timeout, self._watch_timeout + READ_SLACK),
            **self._selectors,
        )
        self.watches += 1
        self._response = response
        try:
            for event in _events(response):
                if self._stopping.is_set():
                    return
                self._event(event)
        finally:
            self._response = None
            response.release_conn()

    def _event(self, event: Obj) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(obj.get("message", ""))
            raise ApiException(status=obj.get("code") or 500, reason=obj.get("message", ""))
        if kind == "BOOKMARK":
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.resource_version = version
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return
        with self._lock:
            self._apply(kind, obj)
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.resource_version = version

    def _apply(self, kind: str, obj: Obj) -> None:
        key = key_of(obj)
        held = self._objects.get(key)
        if held is not None and _older(obj, held):
            return
        if kind == "DELETED":
            self._objects.pop(key, None)
        else:
            self._objects[key] = obj


def _older(obj: Obj, held: Obj) -> bool:
    a, b = _version(obj), _version(held)
    return a is not None and b is not None and a < b


def _events(response: Any) -> Iterator[Obj]:
    """The events of a watch response, one JSON object per line (read by the client's own
    line reader)."""
    for line in iter_resp_lines(response):
        if line.strip():
            yield json.loads(line)


def _describe(exc: Exception) -> str:
    if isinstance(exc, ApiException):
        return f"the API server answered {exc.status} {exc.reason}".strip()
    return f"the API server cannot be reached ({type(exc).__name__}: {exc})"
