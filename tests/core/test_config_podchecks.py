"""``executors[].podChecks``: the stuck-pod checks' keys, their defaults, and errors that
name the key at fault."""

from __future__ import annotations

from typing import Any

import pytest

from armada.core.config import parse_config
from armada.core.config_podchecks import PodChecks
from armada.core.errors import ValidationFailed

KEY = "executors[0].podChecks"


def load(pod_checks: dict[str, Any]) -> PodChecks:
    """Validate through the real entry point, as start-up does."""
    cfg = parse_config({"executors": [{"id": "k", "podChecks": pod_checks}]})
    return cfg.executors[0].pod_checks


def refused(pod_checks: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ValidationFailed) as info:
        load(pod_checks)
    return [(e.field, e.message) for e in info.value.errors]


def test_an_executor_without_pod_checks_gets_the_defaults() -> None:
    assert parse_config({"executors": [{"id": "k"}]}).executors[0].pod_checks == PodChecks()


def test_default_deadlines() -> None:
    d = PodChecks()
    assert (d.deadline_for_updates, d.deadline_for_node_assignment) == (300.0, 300.0)
    assert d.deadline_for_init_containers == 0.0  # off


def test_default_event_checks() -> None:
    assert [(c.name, c.type, c.action, c.grace_period, c.inverse) for c in PodChecks().events] == [
        ("image-does-not-exist", "Warning", "Fail", 120.0, False),
        ("volume-not-mounted", "Warning", "Retry", 300.0, False),
        ("cannot-schedule", "Warning", "Retry", 180.0, False),
        ("sandbox-not-created", "Warning", "Retry", 300.0, False),
    ]


def test_default_container_checks() -> None:
    checks = PodChecks().container_statuses
    assert [(c.name, c.reason_regexp, c.action, c.grace_period, c.inverse) for c in checks] == [
        ("image-unusable", "^(InvalidImageName|ErrImageNeverPull)$", "Fail", 0.0, False),
        ("image-not-pulled", "^(ErrImagePull|ImagePullBackOff)$", "Fail", 300.0, False),
        ("container-config", "^CreateContainerConfigError$", "Fail", 180.0, False),
        ("container-not-created", "^CreateContainerError$", "Retry", 300.0, False),
        ("waiting-too-long", "^PodInitializing$", "Retry", 600.0, True),
    ]
    assert {c.state for c in checks} == {"Waiting"}


def test_every_key_read_as_documented() -> None:
    cfg = load(
        {
            "deadlineForUpdates": "10m",
            "deadlineForNodeAssignment": "2m",
            "deadlineForInitContainers": "1h",
            "events": [
                {
                    "regexp": "nodes are available",
                    "inverse": True,
                    "type": "Normal",
                    "gracePeriod": "90s",
                    "action": "Retry",
                    "name": "catch-all",
                }
            ],
            "containerStatuses": [
                {
                    "name": "bad-name",
                    "state": "Waiting",
                    "reasonRegexp": "InvalidImageName",
                    "inverse": False,
                    "gracePeriod": "0s",
                    "action": "Fail",
                }
            ],
        }
    )
    assert (cfg.deadline_for_updates, cfg.deadline_for_node_assignment) == (600.0, 120.0)
    assert cfg.deadline_for_init_containers == 3600.0
    [e] = cfg.events
    assert (e.regexp, e.inverse, e.type, e.grace_period, e.action, e.name) == (
        "nodes are available",
        True,
        "Normal",
        90.0,
        "Retry",
        "catch-all",
    )
    [c] = cfg.container_statuses
    assert (c.name, c.state, c.reason_regexp, c.grace_period, c.action) == (
        "bad-name",
        "Waiting",
        "InvalidImageName",
        0.0,
        "Fail",
    )


def test_optional_keys_of_a_check() -> None:
    cfg = load(
        {
            "events": [{"regexp": "x", "action": "Fail"}],
            "containerStatuses": [{"reasonRegexp": "x", "action": "Retry"}],
        }
    )
    [e], [c] = cfg.events, cfg.container_statuses
    assert (e.type, e.inverse, e.grace_period, e.name) == ("Warning", False, 0.0, "")
    assert (c.state, c.inverse, c.grace_period, c.name) == ("Waiting", False, 0.0, "")


def test_empty_lists_turn_the_checks_off() -> None:
    cfg = load({"events": [], "containerStatuses": []})
    assert cfg.events == [] and cfg.container_statuses == []


GOOD_EVENT = {"regexp": "pvc", "action": "Fail"}
GOOD_CONTAINER = {"reasonRegexp": "ErrImagePull", "action": "Fail"}


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        (
            {"events": [GOOD_EVENT, {"regexp": "(", "action": "Fail"}]},
            "events[1].regexp",
            "not a valid regular expression",
        ),
        (
            {"containerStatuses": [{"reasonRegexp": "[", "action": "Fail"}]},
            "containerStatuses[0].reasonRegexp",
            "not a valid regular expression",
        ),
        ({"events": [{**GOOD_EVENT, "regex": "pvc"}]}, "events[0].regex", "unknown key"),
        ({"deadline_for_updates": "5m"}, "deadline_for_updates", "unknown key"),
        ({"deadlineForEverything": "5m"}, "deadlineForEverything", "unknown key"),
        (
            {"containerStatuses": [{**GOOD_CONTAINER, "container": "main"}]},
            "containerStatuses[0].container",
            "unknown key",
        ),
        ({"events": [{**GOOD_EVENT, "type": "Error"}]}, "events[0].type", "'Normal' or 'Warning'"),
        ({"events": [{**GOOD_EVENT, "action": "Wait"}]}, "events[0].action", "'Fail' or 'Retry'"),
        ({"events": [{"regexp": "pvc"}]}, "events[0].action", "Field required"),
        ({"events": [{"action": "Fail"}]}, "events[0].regexp", "Field required"),
        (
            {"containerStatuses": [{**GOOD_CONTAINER, "state": "Running"}]},
            "containerStatuses[0].state",
            "'Waiting'",
        ),
        (
            {"containerStatuses": [{**GOOD_CONTAINER, "action": "Retain"}]},
            "containerStatuses[0].action",
            "'Fail' or 'Retry'",
        ),
        (
            {"containerStatuses": [{**GOOD_CONTAINER, "inverse": "yes"}]},
            "containerStatuses[0].inverse",
            "boolean",
        ),
        (
            {"events": [{**GOOD_EVENT, "gracePeriod": "soon"}]},
            "events[0].gracePeriod",
            "not a duration",
        ),
        ({"events": [{**GOOD_EVENT, "gracePeriod": -1}]}, "events[0].gracePeriod", "negative"),
        ({"deadlineForUpdates": "0s"}, "deadlineForUpdates", "greater than 0"),
        ({"deadlineForNodeAssignment": 0}, "deadlineForNodeAssignment", "greater than 0"),
        ({"deadlineForInitContainers": "an hour"}, "deadlineForInitContainers", "not a duration"),
    ],
)
def test_errors_name_the_key(data: dict[str, Any], field: str, says: str) -> None:
    [(where, message)] = refused(data)
    assert where == f"{KEY}.{field}"
    assert says in message


def test_every_error_is_reported() -> None:
    errors = refused(
        {
            "events": [{"regexp": "(", "action": "Fail"}, {"regexp": "x", "action": "Nope"}],
            "deadlineForUpdates": "x",
        }
    )
    assert sorted(e[0] for e in errors) == [
        f"{KEY}.deadlineForUpdates",
        f"{KEY}.events[0].regexp",
        f"{KEY}.events[1].action",
    ]


def test_the_model_is_frozen() -> None:
    with pytest.raises(ValueError):
        PodChecks().deadline_for_updates = 1.0  # type: ignore[misc]
