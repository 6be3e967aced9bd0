"""armada.core.config_limits and the limits' checks in armada.core.config: every key of the
scheduler's limits is read with Armada's name, and every bad value stops start-up with the
key named."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.core.errors import ValidationFailed

GPU = {"name": "gpu", "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}


def classes(**extra) -> dict:
    return {"armada-default": {"priority": 1000}, **extra}


def away(priority: int = 500, **entry) -> dict:
    return {
        "priority": 1000,
        "preemptible": True,
        "awayNodeTypes": [{"priority": priority, **entry}],
    }


REFUSED = [
    # (name, scheduling section, the key named, a part of the message)
    (
        "a class fraction above 1",
        {
            "priorityClasses": classes(
                x={"priority": 1, "maximumResourceFractionPerQueue": {"cpu": 1.5}}
            )
        },
        "scheduling.priorityClasses.x.maximumResourceFractionPerQueue.cpu",
        "from 0 to 1",
    ),
    (
        "a class fraction that is not a number",
        {
            "priorityClasses": classes(
                x={"priority": 1, "maximumResourceFractionPerQueue": {"cpu": "half"}}
            )
        },
        "scheduling.priorityClasses.x.maximumResourceFractionPerQueue.cpu",
        "from 0 to 1",
    ),
    (
        "a class fraction by an unknown pool",
        {
            "priorityClasses": classes(
                x={"priority": 1, "maximumResourceFractionPerQueueByPool": {"gpu": {"cpu": 0.5}}}
            )
        },
        "scheduling.priorityClasses.x.maximumResourceFractionPerQueueByPool",
        "unknown pool(s) gpu",
    ),
    (
        "a round fraction of -0.1",
        {"maximumResourceFractionToSchedule": {"cpu": -0.1}},
        "scheduling.maximumResourceFractionToSchedule.cpu",
        "from 0 to 1",
    ),
    (
        "a round fraction by an unknown pool",
        {"maximumResourceFractionToScheduleByPool": {"x": {"cpu": 0.1}}},
        "scheduling.maximumResourceFractionToScheduleByPool",
        "unknown pool(s) x",
    ),
    (
        "a negative queue rate",
        {"maximumPerQueueSchedulingRate": -1},
        "scheduling.maximumPerQueueSchedulingRate",
        "greater than or equal to 0",
    ),
    (
        "a queue burst of 0",
        {"maximumPerQueueSchedulingBurst": 0},
        "scheduling.maximumPerQueueSchedulingBurst",
        "greater than 0",
    ),
    (
        "a time limit that is not a duration",
        {"maxNewJobSchedulingDuration": "soon"},
        "scheduling.maxNewJobSchedulingDuration",
        "not a duration",
    ),
    (
        "a negative executor lag",
        {"maxUnacknowledgedJobsPerExecutor": -1},
        "scheduling.maxUnacknowledgedJobsPerExecutor",
        "greater than or equal to 0",
    ),
    (
        "a floating resource named cpu",
        {"floatingResources": [{"name": "cpu"}]},
        "scheduling.floatingResources[0].name",
        "resource nodes own",
    ),
    (
        "a floating amount that is not a quantity",
        {
            "floatingResources": [
                {"name": "lic", "pools": [{"name": "default", "quantity": "lots"}]}
            ]
        },
        "scheduling.floatingResources[0].pools[0].quantity",
        "not a quantity",
    ),
    (
        "a floating resource in an unknown pool",
        {"floatingResources": [{"name": "lic", "pools": [{"name": "x", "quantity": "1"}]}]},
        "scheduling.floatingResources[0].pools",
        "unknown pool(s) x",
    ),
    (
        "a floating resource named twice",
        {"floatingResources": [{"name": "lic"}, {"name": "lic"}]},
        "scheduling.floatingResources[1].name",
        "named twice",
    ),
    (
        "a floating pool named twice",
        {
            "floatingResources": [
                {"name": "lic", "pools": [{"name": "default", "quantity": "1"}] * 2}
            ]
        },
        "scheduling.floatingResources[0].pools",
        "more than once",
    ),
    (
        "a node type named twice",
        {"wellKnownNodeTypes": [GPU, GPU]},
        "scheduling.wellKnownNodeTypes[1].name",
        "named twice",
    ),
    (
        "a node type named *",
        {"wellKnownNodeTypes": [{"name": "*"}]},
        "scheduling.wellKnownNodeTypes[0].name",
        "every type",
    ),
    (
        "away from a class that is not preemptible",
        {
            "wellKnownNodeTypes": [GPU],
            "priorityClasses": classes(
                x={**away(wellKnownNodeTypeName="gpu"), "preemptible": False}
            ),
        },
        "scheduling.priorityClasses.x.awayNodeTypes",
        "must be preemptible",
    ),
    (
        "away to an unknown node type",
        {
            "wellKnownNodeTypes": [GPU],
            "priorityClasses": classes(x=away(wellKnownNodeTypeName="tpu")),
        },
        "scheduling.priorityClasses.x.awayNodeTypes[0]",
        "unknown node type 'tpu'",
    ),
    (
        "away to no node type",
        {"priorityClasses": classes(x=away())},
        "scheduling.priorityClasses.x.awayNodeTypes[0]",
        "wellKnownNodeTypeName or nodeTypes",
    ),
    (
        "an away condition with <=",
        {
            "wellKnownNodeTypes": [GPU],
            "priorityClasses": classes(
                x=away(
                    nodeTypes=[
                        {
                            "name": "gpu",
                            "conditions": [{"resource": "cpu", "operator": "<=", "value": "4"}],
                        }
                    ]
                )
            ),
        },
        "scheduling.priorityClasses.x.awayNodeTypes[0].nodeTypes[0].conditions[0].operator",
        "'>', '<' or '=='",
    ),
    (
        "a negative away priority",
        {
            "wellKnownNodeTypes": [GPU],
            "priorityClasses": classes(x=away(-1, wellKnownNodeTypeName="gpu")),
        },
        "scheduling.priorityClasses.x.awayNodeTypes[0].priority",
        "greater than or equal to 0",
    ),
    (
        "a pool's protected fraction below 0",
        {"pools": [{"name": "default", "protectedFractionOfFairShare": -0.5}]},
        "scheduling.pools[0].protectedFractionOfFairShare",
        "greater than or equal to 0",
    ),
    ("write-behind not a boolean", {"writeBehind": "yes"}, "scheduling.writeBehind", "boolean"),
]


def test_write_behind_is_on_unless_turned_off() -> None:
    assert parse_config({}).scheduling.write_behind is True
    assert parse_config({"scheduling": {"writeBehind": False}}).scheduling.write_behind is False


@pytest.mark.parametrize(
    "section,key,message", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_bad_limits_are_refused_naming_the_key(section: dict, key: str, message: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse_config({"scheduling": section})
    found = {e.field: e.message for e in caught.value.errors}
    assert key in found, found
    assert message in found[key], found


def test_every_limit_is_read() -> None:
    scheduling = parse_config(
        {
            "scheduling": {
                "pools": [
                    {"name": "default"},
                    {"name": "gpu", "protectedFractionOfFairShare": 0.9},
                ],
                "priorityClasses": classes(
                    x={
                        **away(
                            300,
                            nodeTypes=[
                                {
                                    "name": "gpu",
                                    "conditions": [
                                        {"resource": "cpu", "operator": "<", "value": "4"}
                                    ],
                                },
                                {"name": "*"},
                            ],
                        ),
                        "maximumResourceFractionPerQueue": {"cpu": 0.5},
                        "maximumResourceFractionPerQueueByPool": {"gpu": {"cpu": 0.25}},
                    }
                ),
                "wellKnownNodeTypes": [GPU],
                "maximumResourceFractionToSchedule": {"cpu": 0.1},
                "maximumResourceFractionToScheduleByPool": {"gpu": {"memory": 0.2}},
                "maximumPerQueueSchedulingRate": 2.5,
                "maximumPerQueueSchedulingBurst": 7,
                "maxNewJobSchedulingDuration": "2s",
                "maxNewJobSchedulingDurationPerQueue": "500ms",
                "maxUnacknowledgedJobsPerExecutor": 12,
                "floatingResources": [
                    {"name": "lic", "resolution": "1", "pools": [{"name": "gpu", "quantity": "40"}]}
                ],
            }
        }
    ).scheduling
    pc = scheduling.priority_classes["x"]
    assert pc.maximum_resource_fraction_per_queue == {"cpu": 0.5}
    assert pc.maximum_resource_fraction_per_queue_by_pool == {"gpu": {"cpu": 0.25}}
    [entry] = scheduling.away_entries()["x"]
    assert entry.priority == 300
    assert [
        (t.name, [(c.resource, c.operator, c.value) for c in t.conditions]) for t in entry.targets
    ] == [
        ("gpu", [("cpu", "<", 4000)]),
        ("*", []),
    ]
    assert scheduling.to_schedule("default") == {"cpu": 0.1}
    assert scheduling.to_schedule("gpu") == {"memory": 0.2}  # replaces, not merged
    assert (
        scheduling.maximum_per_queue_scheduling_rate,
        scheduling.maximum_per_queue_scheduling_burst,
    ) == (2.5, 7)
    assert (
        scheduling.max_new_job_scheduling_duration,
        scheduling.max_new_job_scheduling_duration_per_queue,
    ) == (2.0, 0.5)
    assert scheduling.max_unacknowledged_jobs_per_executor == 12
    assert scheduling.floating_amounts("gpu") == {"lic": 40_000}
    assert scheduling.floating_amounts("default") == {"lic": 0}
    assert scheduling.floating_names == frozenset({"lic"})
    assert (scheduling.protected_fraction("gpu"), scheduling.protected_fraction("default")) == (
        0.9,
        0.5,
    )


def test_the_defaults_limit_nothing() -> None:
    scheduling = parse_config({}).scheduling
    assert scheduling.to_schedule("default") == {}
    assert scheduling.maximum_per_queue_scheduling_rate == 0
    assert scheduling.max_new_job_scheduling_duration == 0
    assert scheduling.max_unacknowledged_jobs_per_executor == 0
    assert scheduling.floating_names == frozenset()
    assert scheduling.away_entries() == {}
