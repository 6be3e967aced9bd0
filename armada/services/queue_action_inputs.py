"""The inputs of acting on many queues (``services.queue_actions``): which queues a request
picks (:class:`QueueSelection`), the body of ``POST /api/v1/queues/<action>``
(:func:`parse_action_body`), and the filters of cancel and preempt checked against the
configuration (:func:`check_filters`). Every problem is a field error naming the field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from armada.core.errors import FieldError
from armada.core.labels import Selector, parse_selector
from armada.core.states import JobState
from armada.models import Queue
from armada.services.errors import ValidationFailed
from armada.services.stopping import CANCELLABLE_STATES

PREEMPTIBLE_STATES = [JobState.LEASED.value, JobState.PENDING.value, JobState.RUNNING.value]
MAX_REASON = 255  # a run's stop reason
CANCEL, PREEMPT_ACTION, CORDON = "cancel", "preempt", "cordon"
_SELECTION_KEYS = ("queues", "selector", "inverse", "dryRun")
BODY_KEYS = {
    CANCEL: (*_SELECTION_KEYS, "states", "priorityClasses", "pools", "reason"),
    PREEMPT_ACTION: (*_SELECTION_KEYS, "priorityClasses", "pools", "reason"),
    CORDON: _SELECTION_KEYS,
}


@dataclass(frozen=True)
class QueueSelection:
    """Which queues a request acts on: ``names`` or ``selector`` (exactly one), turned around
    by ``inverse``."""

    names: tuple[str, ...] | None = None
    selector: Selector | None = None
    inverse: bool = False

    def __post_init__(self) -> None:
        if (self.names is None) == (self.selector is None):
            raise ValueError("a selection has names or a selector, not both and not neither")

    def matches(self, queue: Queue) -> bool:
        if self.names is not None:
            hit = queue.name in self.names
        else:
            assert self.selector is not None
            hit = self.selector.matches(queue.labels)
        return hit != self.inverse


# --- parsing a request ------------------------------------------------------------------------


def _bool(data: Mapping[str, Any], key: str, errors: list[FieldError]) -> bool:
    value = data.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        errors.append(FieldError(key, "must be true or false"))
        return False
    return value


def _strings(value: Any, key: str, errors: list[FieldError]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        errors.append(FieldError(key, "must be a list of non-empty names"))
        return []
    return list(dict.fromkeys(value))


def parse_selection(data: Mapping[str, Any], errors: list[FieldError]) -> QueueSelection | None:
    """The ``queues``/``selector``/``inverse`` of a request body; problems go to ``errors``."""
    inverse = _bool(data, "inverse", errors)
    has_names = data.get("queues") is not None
    has_selector = data.get("selector") is not None
    if has_names == has_selector:
        errors.append(
            FieldError(
                "queues" if has_names else "selector",
                "give exactly one of queues (a list of names) or selector (labels such as "
                "team=ml,gpu)",
            )
        )
        return None
    if has_names:
        names = _strings(data["queues"], "queues", errors)
        if not names and isinstance(data["queues"], list):
            errors.append(FieldError("queues", "must name at least one queue"))
        return QueueSelection(names=tuple(names), inverse=inverse) if names else None
    try:
        return QueueSelection(selector=parse_selector(data["selector"]), inverse=inverse)
    except ValidationFailed as exc:
        errors.extend(exc.errors)
        return None


def parse_action_body(data: Any, action: str) -> dict[str, Any]:
    """Validate the body of ``POST /api/v1/queues/<action>`` (``cancel``, ``preempt`` or
    ``cordon``/``uncordon``, which take the same body) and return the keyword arguments of
    the service (``selection``, ``dry_run`` and the action's own); raises ValidationFailed
    naming every bad field. Filters are checked by the services themselves."""
    if not isinstance(data, Mapping):
        raise ValidationFailed.one("", "the body is a mapping")
    allowed = BODY_KEYS[action]
    errors = [
        FieldError(str(key), f"unknown field; allowed: {', '.join(allowed)}")
        for key in sorted(set(data) - set(allowed), key=str)
    ]
    out: dict[str, Any] = {
        "selection": parse_selection(data, errors),
        "dry_run": _bool(data, "dryRun", errors),
    }
    if action in (CANCEL, PREEMPT_ACTION):
        out["priority_classes"] = data.get("priorityClasses")
        out["pools"] = data.get("pools")
        reason = data.get("reason")
        if reason is not None and not isinstance(reason, str):
            errors.append(FieldError("reason", "must be text"))
        out["reason"] = reason if isinstance(reason, str) else ""
    if action == CANCEL:
        out["states"] = data.get("states")
    if errors:
        raise ValidationFailed(errors)
    return out


def check_filters(
    *, states: Any = None, priority_classes: Any, pools: Any, reason: str, cancel: bool
) -> tuple[list[str], list[str], list[str]]:
    """The filters of a cancel or preempt, checked against the configuration; raises
    ValidationFailed naming every bad one."""
    errors: list[FieldError] = []
    wanted_states = CANCELLABLE_STATES if cancel else PREEMPTIBLE_STATES
    if cancel and states is not None:
        given = _strings(states, "states", errors)
        if not given and isinstance(states, list):
            errors.append(
                FieldError("states", "give at least one state, or leave states out for all")
            )
        for i, state in enumerate(given):
            if state not in CANCELLABLE_STATES:
                errors.append(
                    FieldError(
                        f"states[{i}]",
                        f"{state!r} is not an unfinished job state; choose from "
                        f"{', '.join(CANCELLABLE_STATES)}",
                    )
                )
        wanted_states = [s for s in CANCELLABLE_STATES if s in given] or wanted_states
    scheduling = settings.ARMADA.scheduling
    classes = _strings(priority_classes, "priorityClasses", errors)
    _known(
        classes, sorted(scheduling.priority_classes), "priorityClasses", "priority class", errors
    )
    pool_names = _strings(pools, "pools", errors)
    _known(pool_names, [p.name for p in scheduling.pools], "pools", "pool", errors)
    if len(reason) > MAX_REASON:
        errors.append(FieldError("reason", f"must be at most {MAX_REASON} characters"))
    if errors:
        raise ValidationFailed(errors)
    return wanted_states, classes, pool_names


def _known(
    given: list[str], known: Sequence[str], field: str, what: str, errors: list[FieldError]
) -> None:
    for i, name in enumerate(given):
        if name not in known:
            errors.append(
                FieldError(f"{field}[{i}]", f"unknown {what} {name!r}; known: {', '.join(known)}")
            )
