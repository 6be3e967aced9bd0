"""armadactl's calls for acting on many jobs at once: across queues (by name or label
selector), on one node of an executor or on a whole executor; and deleting an executor."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from armada.cli.client_http import HttpClient
from armada.cli.errors import ApiError

QUEUE_ACTIONS = ("cancel", "preempt", "cordon", "uncordon")
NODE_ACTIONS = ("cancel", "preempt")


class ActionCalls(HttpClient):
    def find_queues(
        self, *, selector: str | None = None, only_cordoned: bool = False
    ) -> list[dict[str, Any]]:
        """``GET /api/v1/queues?selector=...&onlyCordoned=true``: the queues whose labels
        match ``selector`` (all of its terms) and, with ``only_cordoned``, are cordoned."""
        params: dict[str, str] = {}
        if selector:
            params["selector"] = selector
        if only_cordoned:
            params["onlyCordoned"] = "true"
        return self._list(self._request("GET", "queues", params=params), "queue list")

    def queue_action(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /api/v1/queues/{cancel|preempt|cordon|uncordon}``: one action on every
        queue picked by ``queues`` (names) or ``selector``, all or nothing. Answers
        ``{"dryRun", "queues": [{"name", "jobIds"} | {"name", "cordoned"}]}``."""
        if action not in QUEUE_ACTIONS:
            raise ValueError(f"unknown queue action {action!r}")
        data = self._object(self._request("POST", f"queues/{action}", body=dict(body)), action)
        if not isinstance(data.get("queues"), list):
            raise ApiError(f"the server's answer to {action} on queues has no queues list")
        return data

    def node_action(
        self, action: str, executor: str, node: str, body: Mapping[str, Any]
    ) -> list[str]:
        """``POST /api/v1/executors/{executor}/nodes/{node}/{cancel|preempt}`` with
        ``{"reason", "queues", "priorityClasses"}``; returns the ids of the jobs acted on."""
        if action not in NODE_ACTIONS:
            raise ValueError(f"unknown node action {action!r}")
        path = f"executors/{quote(executor, safe='')}/nodes/{quote(node, safe='')}/{action}"
        data = self._object(self._request("POST", path, body=dict(body)), action)
        if not isinstance(data.get("jobIds"), list):
            raise ApiError(f"the server's answer to {action} on a node has no jobIds list")
        return [str(job_id) for job_id in data["jobIds"]]

    def executor_action(self, action: str, executor: str, body: Mapping[str, Any]) -> list[str]:
        """``POST /api/v1/executors/{executor}/{cancel|preempt}`` with ``{"reason", "queues",
        "priorityClasses", "pools"}``; returns the ids of the jobs acted on."""
        if action not in NODE_ACTIONS:
            raise ValueError(f"unknown executor action {action!r}")
        path = f"executors/{quote(executor, safe='')}/{action}"
        data = self._object(self._request("POST", path, body=dict(body)), action)
        if not isinstance(data.get("jobIds"), list):
            raise ApiError(f"the server's answer to {action} on an executor has no jobIds list")
        return [str(job_id) for job_id in data["jobIds"]]

    def delete_executor(self, executor: str) -> dict[str, Any]:
        """``DELETE /api/v1/executors/{executor}``: retire it; answers ``{"id",
        "credentialsRevoked", "nodesRemoved", "activeRuns"}``."""
        response = self._request("DELETE", f"executors/{quote(executor, safe='')}")
        return self._object(response, "executor deletion")
