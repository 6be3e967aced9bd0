"""``GET ...?watch=true``: the chunked stream of watch events, with selectors (an object
leaving one is sent as DELETED), bookmarks, timeouts, ERROR 410 for a compacted
``resourceVersion``, and streams cut by ``cut_watches()``."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from typing import TYPE_CHECKING, Any

from tests.kube_emulator.listing import int_param
from tests.kube_emulator.objects import RESOURCES, ApiError, bad_request
from tests.kube_emulator.selectors import matcher

if TYPE_CHECKING:
    from tests.kube_emulator.emulator import KubeEmulator
    from tests.kube_emulator.http import Handler


def serve(
    h: Handler, emu: KubeEmulator, plural: str, ns: str | None, params: dict[str, str]
) -> None:
    store = emu.store
    resource = RESOURCES[plural]
    match = matcher(plural, params.get("labelSelector"), params.get("fieldSelector"))
    if params.get("resourceVersionMatch"):
        raise bad_request("resourceVersionMatch is forbidden for watch")
    rv = params.get("resourceVersion", "")
    pos = int_param(rv, "resourceVersion") if rv not in ("", "0") else None
    timeout = float(int_param(params.get("timeoutSeconds", "1800"), "timeoutSeconds") or 1800)
    deadline = time.monotonic() + timeout
    bookmarks = params.get("allowWatchBookmarks") in ("true", "1")
    generation = emu.faults.watch_generation
    h.start_chunked("application/json")

    def send(type_: str, obj: dict[str, Any]) -> None:
        h.chunk(json.dumps({"type": type_, "object": obj}, separators=(",", ":")).encode() + b"\n")

    if pos is None:
        items, pos = store.items(plural, ns)
        for obj in items:
            if match is None or match(obj):
                send("ADDED", obj)
    last_bookmark = time.monotonic()
    while True:
        if emu.faults.watch_generation != generation or emu.stopping:
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(socket.SHUT_RDWR)
            return  # dropped mid-stream: no terminating chunk
        try:
            changes, upto = store.changes_after(pos)
        except ApiError as err:
            send("ERROR", err.status())
            break
        for ch in changes:
            if ch.plural != plural or (ns is not None and ch.key[0] != ns):
                continue
            event = _filtered(ch.type, ch.old, ch.new, match, ch.rv)
            if event:
                send(*event)
        pos = upto
        now = time.monotonic()
        if now >= deadline:
            break
        if bookmarks and now - last_bookmark >= emu.bookmark_interval:
            send(
                "BOOKMARK",
                {
                    "kind": resource.kind,
                    "apiVersion": resource.api_version,
                    "metadata": {"resourceVersion": str(pos)},
                },
            )
            last_bookmark = now
        store.wait(pos, min(deadline - now, 0.25))
    h.end_chunked()


def _filtered(
    type_: str, old: dict | None, new: dict, match: Any, rv: int
) -> tuple[str, dict] | None:
    """The event a filtered watch sees: an object leaving the selector is DELETED."""
    if match is None:
        return type_, new
    now_in = type_ != "DELETED" and match(new)
    was_in = old is not None and match(old)
    if type_ == "DELETED":
        return ("DELETED", new) if was_in else None
    if now_in and was_in:
        return "MODIFIED", new
    if now_in:
        return "ADDED", new
    if was_in:
        gone = dict(old)
        gone["metadata"] = dict(old["metadata"], resourceVersion=str(rv))
        return "DELETED", gone
    return None
