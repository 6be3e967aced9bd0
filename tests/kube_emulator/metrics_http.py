"""``/apis/metrics.k8s.io``: the resource metrics API as the aggregator and metrics-server
answer it (the metrics themselves are in ``metrics``).

Served: the group (``APIGroup``) and version (``APIResourceList``) discovery documents;
``GET`` of ``pods`` (all namespaces or one) and ``nodes`` lists, with ``labelSelector``
(the pod's or node's labels) and ``fieldSelector`` (``metadata.name`` and
``metadata.namespace`` only; any other field is 400, as the real API refuses ``kubectl top
--field-selector spec.nodeName=...``); ``GET`` of one pod's or node's metrics (404
``podmetrics.metrics.k8s.io "ns/name" not found`` when it has none, ``pods "name" not
found`` when there is no such pod). Other verbs are 405, a watch is 405 (metrics-server
serves no watch), a list's ``metadata`` is empty (metrics have no resourceVersion).

When the API is absent every path here is the API server's plain 404; when it is
unavailable the group is still discovered (the aggregator serves it from the APIService)
and every path under the version is the aggregator's 503, ``service unavailable`` in plain
text, not a ``Status``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kubernetes import client

from tests.kube_emulator.metrics import (
    ABSENT,
    API_VERSION,
    FORBIDDEN,
    GROUP,
    UNAVAILABLE,
    VERSION,
)
from tests.kube_emulator.objects import ApiError, bad_request
from tests.kube_emulator.selectors import Requirement, parse_labels

if TYPE_CHECKING:
    from tests.kube_emulator.emulator import KubeEmulator
    from tests.kube_emulator.http import Handler

Obj = dict[str, Any]
PREFIX = "/apis/metrics.k8s.io"
_V = r"/apis/metrics\.k8s\.io/v1beta1"
ROUTES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^/apis/metrics\.k8s\.io/?$"), "group"),
    (re.compile(rf"^{_V}/?$"), "resources"),
    (re.compile(rf"^{_V}/(?P<plural>pods|nodes)$"), "list"),
    (re.compile(rf"^{_V}/namespaces/(?P<ns>[^/]+)/(?P<plural>pods)$"), "list"),
    (re.compile(rf"^{_V}/namespaces/(?P<ns>[^/]+)/(?P<plural>pods)/(?P<name>[^/]+)$"), "get"),
    (re.compile(rf"^{_V}/(?P<plural>nodes)/(?P<name>[^/]+)$"), "get"),
]
KINDS = {"pods": "PodMetrics", "nodes": "NodeMetrics"}
_API = client.ApiClient()


def owns(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def kind_of(path: str) -> str:
    """The kind a request is counted under: ``pods.metrics.k8s.io``, ``nodes.metrics.k8s.io``
    or ``metrics.k8s.io`` (discovery and unknown paths)."""
    for pattern, _ in ROUTES:
        match = pattern.match(path)
        if match and "plural" in match.groupdict():
            return f"{match.group('plural')}.{GROUP}"
    return GROUP


def not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def serve(
    handler: Handler, emu: KubeEmulator, method: str, path: str, params: dict[str, str]
) -> None:
    """Answer a request under ``/apis/metrics.k8s.io`` (``owns(path)``)."""
    server = emu.metrics
    if server.state == ABSENT:
        raise not_found()
    route, groups = next(
        ((kind, m.groupdict()) for pat, kind in ROUTES if (m := pat.match(path))), ("", {})
    )
    if route == "group":
        if method != "GET":
            raise _not_allowed()
        handler._send_json(200, _group())
        return
    if server.state == UNAVAILABLE:
        handler._send_text(503, "service unavailable\n")
        return
    if server.state == FORBIDDEN and route in ("list", "get"):
        raise _forbidden(groups["plural"], groups.get("ns"))
    if not route:
        raise not_found()
    if method != "GET":
        raise _not_allowed()
    if route == "resources":
        handler._send_json(200, _resources())
        return
    plural = groups["plural"]
    if route == "list":
        if params.get("watch") in ("true", "1"):
            raise ApiError(
                405,
                "MethodNotAllowed",
                f'watch is not supported on resources of kind "{plural}.{GROUP}"',
                {"group": GROUP, "kind": plural},
            )
        handler._send_json(200, _list(emu, plural, groups.get("ns"), params))
        return
    handler._send_json(200, _get(emu, plural, groups.get("ns"), groups["name"]))


def _forbidden(plural: str, namespace: str | None) -> ApiError:
    """RBAC's refusal, worded as the API server words it for the executor's account."""
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    return ApiError(
        403,
        "Forbidden",
        f'{plural}.{GROUP} is forbidden: User "system:serviceaccount:armada:armada-executor" '
        f'cannot list resource "{plural}" in API group "{GROUP}"{where}',
        {"group": GROUP, "kind": plural},
    )


def _not_allowed() -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


# -- discovery -------------------------------------------------------------------------
def _group() -> Obj:
    version = {"groupVersion": API_VERSION, "version": VERSION}
    body = {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [version],
        "preferredVersion": version,
    }
    return _API.sanitize_for_serialization(client.V1APIGroup.from_dict(body))


def _resources() -> Obj:
    resources = [
        {
            "name": plural,
            "singularName": "",
            "namespaced": plural == "pods",
            "kind": kind,
            "verbs": ["get", "list"],
        }
        for plural, kind in sorted(KINDS.items(), key=lambda item: item[0] != "nodes")
    ]
    body = {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": API_VERSION,
        "resources": resources,
    }
    out = _API.sanitize_for_serialization(client.V1APIResourceList.from_dict(body))
    for resource in out["resources"]:  # the real document keeps the empty singular name
        resource.setdefault("singularName", "")
    return out


# -- objects ---------------------------------------------------------------------------
def _field_terms(text: str | None) -> list[tuple[str, str, str]]:
    """``fieldSelector`` terms; only the object-meta fields are known to this API."""
    terms = []
    for raw in (text or "").split(","):
        part = raw.strip()
        if not part:
            continue
        match = re.match(r"^([^!=]+)(!=|==|=)(.*)$", part)
        if match is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, value = match.group(1).strip(), match.group(2), match.group(3).strip()
        if field not in ("metadata.name", "metadata.namespace"):
            raise bad_request(
                f'"{field}" is not a known field selector: only "metadata.name", '
                '"metadata.namespace"'
            )
        terms.append((field, "!=" if op == "!=" else "=", value))
    return terms


def _selected(obj: Obj, labels: list[Requirement], terms: list[tuple[str, str, str]]) -> bool:
    meta = obj.get("metadata") or {}
    if not all(r.matches(meta.get("labels") or {}) for r in labels):
        return False
    for field, op, value in terms:
        actual = meta.get(field.removeprefix("metadata."), "") or ""
        if (actual == value) != (op == "="):
            return False
    return True


def _list(emu: KubeEmulator, plural: str, ns: str | None, params: dict[str, str]) -> Obj:
    labels = parse_labels(params.get("labelSelector"))
    terms = _field_terms(params.get("fieldSelector"))
    pods = emu.store.items("pods")[0]
    items: list[Obj] = []
    if plural == "pods":
        chosen = [p for p in pods if ns is None or p["metadata"]["namespace"] == ns]
        chosen.sort(key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
        for pod in chosen:
            if _selected(pod, labels, terms):
                metrics = emu.metrics.pod_metrics(pod)
                if metrics is not None:
                    items.append(metrics)
    else:
        for node in sorted(emu.store.items("nodes")[0], key=lambda n: n["metadata"]["name"]):
            if _selected(node, labels, terms):
                metrics = emu.metrics.node_metrics(node, pods)
                if metrics is not None:
                    items.append(metrics)
    return {
        "kind": f"{KINDS[plural]}List",
        "apiVersion": API_VERSION,
        "metadata": {},
        "items": items,
    }


def _get(emu: KubeEmulator, plural: str, ns: str | None, name: str) -> Obj:
    if plural == "pods":
        obj = emu.store.find("pods", ns or "", name)
        if obj is None:
            raise ApiError(
                404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"}
            )
        metrics = emu.metrics.pod_metrics(obj)
        missing = f"{ns}/{name}"
    else:
        obj = emu.store.find("nodes", "", name)
        if obj is None:
            raise ApiError(
                404, "NotFound", f'nodes "{name}" not found', {"name": name, "kind": "nodes"}
            )
        metrics = emu.metrics.node_metrics(obj, emu.store.items("pods")[0])
        missing = name
    if metrics is None:
        resource = f"{plural[:-1]}metrics"
        raise ApiError(
            404,
            "NotFound",
            f'{resource}.{GROUP} "{missing}" not found',
            {"name": missing, "group": GROUP, "kind": resource},
        )
    return {"kind": KINDS[plural], "apiVersion": API_VERSION, **metrics}
