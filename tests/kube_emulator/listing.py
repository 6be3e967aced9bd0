"""``GET`` of a collection: label and field selectors, ``limit``/``continue`` pages from
consistent snapshots rebuilt from history, ``resourceVersion`` and ``resourceVersionMatch``."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.kube_emulator.objects import RESOURCES, ApiError, bad_request, list_wire
from tests.kube_emulator.selectors import matcher
from tests.kube_emulator.store import Store


def list_objects(
    store: Store, plural: str, ns: str | None, params: dict[str, str]
) -> dict[str, Any]:
    resource = RESOURCES[plural]
    match = matcher(plural, params.get("labelSelector"), params.get("fieldSelector"))
    rv, rv_match = params.get("resourceVersion", ""), params.get("resourceVersionMatch", "")
    if rv_match and not rv:
        raise bad_request("resourceVersionMatch is forbidden unless resourceVersion is provided")
    if rv_match not in ("", "Exact", "NotOlderThan"):
        raise bad_request(
            f'resourceVersionMatch: Unsupported value: "{rv_match}": supported values: "Exact", "NotOlderThan"'
        )
    if rv_match == "Exact" and rv == "0":
        raise bad_request('resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
    limit = int_param(params.get("limit", "0"), "limit")
    token = params.get("continue", "")
    start_after: tuple[str, str] | None = None
    at: int | None = None
    if token:
        if rv not in ("", "0"):
            raise bad_request("specifying resource version is not allowed when using continue")
        try:
            state = json.loads(base64.b64decode(token))
            at, start_after = int(state["rv"]), (state["ns"], state["name"])
        except (ValueError, KeyError, TypeError):
            raise bad_request(
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
            ) from None
    elif rv and rv != "0":
        at = int_param(rv, "resourceVersion")
        if rv_match == "Exact" or at > store.rv:
            if at > store.rv:
                raise ApiError(
                    504,
                    "Timeout",
                    f"Too large resource version: {at}, current: {store.rv}",
                    {
                        "causes": [
                            {
                                "reason": "ResourceVersionTooLarge",
                                "message": "Too large resource version",
                            }
                        ],
                        "retryAfterSeconds": 1,
                    },
                )
        else:
            at = None  # NotOlderThan / legacy: the current state is newer, serve it
    with store.lock:
        if at is None:
            read_rv = store.rv
            objs = store.objects[plural]
        else:
            try:
                objs = store.snapshot(plural, at)
            except ApiError:
                if token:
                    raise ApiError(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                        {},
                    ) from None
                raise
            read_rv = at
        keys = sorted(
            k
            for k in objs
            if (ns is None or k[0] == ns) and (start_after is None or k > start_after)
        )
        items = [objs[k] for k in keys]
    if match is not None:
        items = [o for o in items if match(o)]
    cont, remaining = "", 0
    if limit and len(items) > limit:
        last = items[limit - 1]["metadata"]
        cont = base64.b64encode(
            json.dumps(
                {"rv": read_rv, "ns": last.get("namespace", ""), "name": last["name"]}
            ).encode()
        ).decode()
        remaining = len(items) - limit if match is None else 0
        items = items[:limit]
    return list_wire(resource, items, read_rv, cont, remaining)


def int_param(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise bad_request(f'{what}: Invalid value: "{text}": must be an integer') from None
