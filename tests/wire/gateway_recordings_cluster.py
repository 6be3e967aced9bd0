"""Recorded calls of Armada's ``api.Node`` and ``api.Executor`` paths (``/v1/node/...``,
``/v1/executor/...``, ``/v1/executor_settings/{name}``, ``/v1/executors/{name}``), replayed
after the scenario of ``tests/wire/gateway_recordings.py`` (its queue ``rec`` and its running
job on ``cluster-1``'s ``node-1``). Armada's gRPC server serves these methods and its protos
give them these paths; each answer is ``Empty``, ``{}``.
"""

from __future__ import annotations

from tests.wire.gateway_recordings import Like, Recording


def _error(code: int, message: Like) -> dict[str, object]:
    return {"error": message, "code": code, "message": message}


CLUSTER_RECORDINGS: list[Recording] = [
    Recording(
        "cancel a queue's jobs on a node",
        "api.Node/CancelOnNode",
        "POST",
        "/v1/node/cancel/node-1",
        {
            "name": "node-1",
            "executor": "cluster-1",
            "queues": ["rec"],
            "priorityClasses": ["armada-default"],
        },
        200,
        {},
    ),
    Recording(
        "preempt on a node, its executor found by the node's name",
        "api.Node/PreemptOnNode",
        "POST",
        "/v1/node/preempt/node-1",
        {"queues": ["rec"]},
        200,
        {},
    ),
    Recording(
        "cancel on a node that no executor has",
        "api.Node/CancelOnNode",
        "POST",
        "/v1/node/cancel/node-9",
        {"queues": ["rec"]},
        400,
        _error(3, Like(str, r"invalid request: executor: is required: .*node-9.*")),
    ),
    Recording(
        "cordon an executor",
        "api.Executor/UpsertExecutorSettings",
        "PUT",
        "/v1/executor_settings/cluster-1",
        {"name": "cluster-1", "cordoned": True, "cordonReason": "maintenance"},
        200,
        {},
    ),
    Recording(
        "cordon without a reason",
        "api.Executor/UpsertExecutorSettings",
        "PUT",
        "/v1/executor_settings/cluster-1",
        {"cordoned": True},
        400,
        _error(3, Like(str, r"invalid request: cordonReason: .*")),
    ),
    Recording(
        "uncordon: delete the executor's settings",
        "api.Executor/DeleteExecutorSettings",
        "DELETE",
        "/v1/executor_settings/cluster-1",
        {"name": "cluster-1"},
        200,
        {},
    ),
    Recording(
        "preempt a queue's jobs on an executor, in a pool",
        "api.Executor/PreemptOnExecutor",
        "POST",
        "/v1/executor/preempt/cluster-1",
        {"queues": ["rec"], "pools": ["default"]},
        200,
        {},
    ),
    Recording(
        "cancel on an executor, by priority class",
        "api.Executor/CancelOnExecutor",
        "POST",
        "/v1/executor/cancel/cluster-1",
        {"priorityClasses": ["armada-default"]},
        200,
        {},
    ),
    Recording(
        "delete the executor",
        "api.Executor/DeleteExecutor",
        "DELETE",
        "/v1/executors/cluster-1",
        {"name": "cluster-1"},
        200,
        {},
    ),
    Recording(
        "delete it again",
        "api.Executor/DeleteExecutor",
        "DELETE",
        "/v1/executors/cluster-1",
        {},
        404,
        _error(5, Like(str, r".*cluster-1.*")),
    ),
]
