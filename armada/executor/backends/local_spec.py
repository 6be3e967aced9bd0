"""Reading a pod spec for the local backend: commands, environment, limits, timings."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from armada.core.quantity import parse_quantity
from armada.executor.backends.base import (
    PodCreationFailed,
)

log = logging.getLogger(__name__)


def _expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: ``$(NAME)`` becomes the value of a defined variable
    (left alone when undefined), ``$$`` becomes ``$``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2 : end]
                    out.append(env[name] if name in env else text[i : end + 1])
                    i = end + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PodCreationFailed(f"{where} must be a list of strings")
    return value


def _quantity(container: Mapping[str, Any], kind: str, resource: str) -> int | None:
    resources = container.get("resources") or {}
    value = (resources.get(kind) or {}).get(resource) if isinstance(resources, dict) else None
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except ValueError as exc:
        raise PodCreationFailed(f"resources.{kind}.{resource}: {exc}") from exc


def _memory_limit(containers: list[dict], init: list[dict]) -> int | None:
    """The pod's memory limit in bytes; None (unlimited) when a container has none."""
    limits = [_quantity(c, "limits", "memory") for c in containers]
    init_limits = [_quantity(c, "limits", "memory") for c in init]
    if any(x is None for x in limits + init_limits):
        return None
    total = max([sum(x or 0 for x in limits), *(x or 0 for x in init_limits)]) // 1000
    return total or None


def _cpu_request(containers: list[dict], init: list[dict]) -> int:
    """The pod's cpu request in millicores (requests, else limits, as Kubernetes defaults)."""

    def one(c: dict) -> int:
        q = _quantity(c, "requests", "cpu")
        return q if q is not None else (_quantity(c, "limits", "cpu") or 0)

    return max([sum(one(c) for c in containers), *(one(c) for c in init)])


def _number(spec: Mapping[str, Any], key: str, minimum: float) -> float | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise PodCreationFailed(f"podSpec.{key} must be a number of at least {minimum:g}")
    return float(value)


# --- the backend ---------------------------------------------------------------------------
