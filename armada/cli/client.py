"""A small HTTP client for the Armada REST API (``/api/v1``).

Every failure is raised as ``ApiError`` carrying a sentence for a person and, when the
server sent them, the field errors of its ``{"message", "errors": [{"field", "message"}]}``
body, so the command line never shows a traceback.

``ArmadaClient.watch_events`` follows a job set's NDJSON event stream and survives dropped
connections: it remembers the id of the last event it yielded and reconnects with
``from=<that id>`` (``from`` is exclusive), skipping any event at or below it, so a drop
neither loses nor repeats an event.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from armada.cli.client_actions import ActionCalls
from armada.cli.client_credentials import CredentialCalls
from armada.cli.client_reports import ReportCalls
from armada.cli.config import Settings
from armada.cli.errors import ApiError, GrpcEndpointError, error_from_body
from armada.cli.stream import CAUGHT_UP, StreamDropped, read_events

if TYPE_CHECKING:
    import requests

__all__ = ["CAUGHT_UP", "ApiError", "ArmadaClient", "StreamDropped", "error_from_body"]

# The event stream sends blank keep-alive lines; silence for this long means the connection
# is dead (or the server does not send keep-alives): reconnect from the cursor.
STREAM_READ_TIMEOUT = 90.0
# After a drop, keep trying to reconnect for this long before giving up.
RECONNECT_WINDOW = 120.0
RECONNECT_BACKOFF_START = 0.5
RECONNECT_BACKOFF_MAX = 10.0
TRANSIENT_STATUSES = frozenset({502, 503, 504})


class ArmadaClient(ActionCalls, ReportCalls, CredentialCalls):
    """Calls the Armada API at ``settings.url`` with the configured credentials."""

    def __init__(
        self,
        settings: Settings,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        reconnect_window: float | None = None,
        stream_read_timeout: float | None = None,
    ) -> None:
        super().__init__(settings, session=session)
        self._sleep = sleep
        self._clock = clock
        self.reconnect_window = RECONNECT_WINDOW if reconnect_window is None else reconnect_window
        self.stream_read_timeout = (
            STREAM_READ_TIMEOUT if stream_read_timeout is None else stream_read_timeout
        )

    def _request(self, method: str, path: str, **options: Any) -> requests.Response:
        """A request; when the address turns out to be Armada's gRPC API, the REST API paired
        with it (``armada.cli.addresses``) is used from then on."""
        try:
            return super()._request(method, path, **options)
        except GrpcEndpointError as exc:
            from armada.cli.addresses import paired_rest_url

            rest = paired_rest_url(self.base_url)
            if rest is None or rest == self.base_url:
                raise
            self.base_url = rest
            try:
                return super()._request(method, path, **options)
            except ApiError as again:
                if again.status is not None:
                    raise  # the REST API answered: its answer stands
                raise ApiError(
                    f"{exc.message}. Tried the REST API at {rest} instead: {again.message}"
                ) from None

    # -- queues and jobs --------------------------------------------------------------

    def list_queues(self) -> list[dict[str, Any]]:
        """``GET /api/v1/queues``."""
        data = self._json(self._request("GET", "queues"))
        if not isinstance(data, list):
            raise ApiError("the server's queue list is not a JSON list")
        return data

    def get_queue(self, name: str) -> dict[str, Any]:
        """``GET /api/v1/queues/{name}``."""
        data = self._json(self._request("GET", f"queues/{quote(name, safe='')}"))
        if not isinstance(data, dict):
            raise ApiError("the server's queue is not a JSON object")
        return data

    def create_queue(self, queue: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """``POST /api/v1/queues``; returns the queue as stored (with ``dry_run``, as it
        would be stored: the server checks everything and writes nothing)."""
        params = {"dryRun": "true"} if dry_run else None
        data = self._json(self._request("POST", "queues", body=dict(queue), params=params))
        return data if isinstance(data, dict) else {}

    def update_queue(self, name: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """``PATCH /api/v1/queues/{name}`` with only the fields to change."""
        response = self._request("PATCH", f"queues/{quote(name, safe='')}", body=dict(fields))
        return self._object(response, "queue")

    def delete_queue(self, name: str) -> None:
        """``DELETE /api/v1/queues/{name}`` (204)."""
        self._request("DELETE", f"queues/{quote(name, safe='')}").close()

    def set_queue_cordoned(self, name: str, cordoned: bool) -> dict[str, Any]:
        """``POST /api/v1/queues/{name}/cordon`` or ``.../uncordon``."""
        action = "cordon" if cordoned else "uncordon"
        response = self._request("POST", f"queues/{quote(name, safe='')}/{action}")
        return self._object(response, "queue")

    def change_queue_permissions(
        self, name: str, action: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``POST /api/v1/queues/{name}/grant`` or ``.../revoke`` with ``{"subjects",
        "verbs"}``; returns the queue as it now is."""
        if action not in ("grant", "revoke"):
            raise ValueError(f"unknown permission change {action!r}")
        path = f"queues/{quote(name, safe='')}/{action}"
        return self._object(self._request("POST", path, body=dict(body)), "queue")

    def submit_jobs(self, job_file: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /api/v1/jobs``; returns ``{"jobIds", "queue", "jobSetId"}``."""
        data = self._json(self._request("POST", "jobs", body=dict(job_file)))
        if not isinstance(data, dict) or not isinstance(data.get("jobIds"), list):
            raise ApiError("the server's answer to a submission has no jobIds list")
        return data

    def get_job(self, job_id: str) -> dict[str, Any]:
        """``GET /api/v1/jobs/{id}``: the job with its runs."""
        return self._object(self._request("GET", f"jobs/{quote(job_id, safe='')}"), "job")

    def preempt_job(self, job_id: str, reason: str) -> dict[str, Any]:
        """``POST /api/v1/jobs/{id}/preempt`` with ``{"reason"}``."""
        return self._object(
            self._request(
                "POST", f"jobs/{quote(job_id, safe='')}/preempt", body={"reason": reason}
            ),
            "preemption",
        )

    def cancel(self, queue: str, job_set: str, job_ids: list[str] | None) -> list[str]:
        """``POST /api/v1/jobs/cancel``; returns the ids of the jobs being cancelled."""
        return self._job_set_action("cancel", queue, job_set, job_ids, {})

    def reprioritize(
        self, queue: str, job_set: str, priority: int, job_ids: list[str] | None
    ) -> list[str]:
        """``POST /api/v1/jobs/reprioritize``; returns the ids of the jobs changed."""
        return self._job_set_action("reprioritize", queue, job_set, job_ids, {"priority": priority})

    def _job_set_action(
        self,
        action: str,
        queue: str,
        job_set: str,
        job_ids: list[str] | None,
        extra: dict[str, Any],
    ) -> list[str]:
        """An action on some jobs of a job set (all of its unfinished ones when ``job_ids``
        is None): ``POST /api/v1/jobs/<action>``; returns the ids of the jobs it touched."""
        body: dict[str, Any] = {"queue": queue, "jobSetId": job_set, **extra}
        if job_ids is not None:
            body["jobIds"] = job_ids
        result = self._object(self._request("POST", f"jobs/{action}", body=body), action)
        return list(result.get("jobIds") or [])

    def cancel_by_state(self, queue: str, states: list[str], reason: str = "") -> list[str]:
        """``POST /api/v1/jobs/cancel`` with ``{queue, states}``: every job of the queue in
        one of ``states``, all or nothing; returns their ids."""
        body: dict[str, Any] = {"queue": queue, "states": states}
        if reason:
            body["reason"] = reason
        result = self._object(self._request("POST", "jobs/cancel", body=body), "cancel")
        return list(result.get("jobIds") or [])

    def list_job_sets(self, queue: str) -> list[dict[str, Any]]:
        """``GET /api/v1/queues/{queue}/job-sets``: job sets with counts per state."""
        response = self._request("GET", f"queues/{quote(queue, safe='')}/job-sets")
        return self._list(response, "job set list")

    def get_job_scheduling(self, job_id: str) -> dict[str, Any]:
        """``GET /api/v1/jobs/{id}/scheduling``: why the job waits, and the latest rounds."""
        response = self._request("GET", f"jobs/{quote(job_id, safe='')}/scheduling")
        return self._object(response, "scheduling record")

    def list_executors(self) -> list[dict[str, Any]]:
        """``GET /api/v1/executors``."""
        return self._list(self._request("GET", "executors"), "executor list")

    def get_executor(self, executor_id: str) -> dict[str, Any]:
        """``GET /api/v1/executors/{id}``: the executor with its nodes."""
        response = self._request("GET", f"executors/{quote(executor_id, safe='')}")
        return self._object(response, "executor")

    def set_executor_cordoned(
        self, executor_id: str, cordoned: bool, reason: str = ""
    ) -> dict[str, Any]:
        """``POST /api/v1/executors/{id}/cordon`` (with ``{"reason"}`` when given) or
        ``.../uncordon``."""
        action = "cordon" if cordoned else "uncordon"
        body = {"reason": reason} if reason else None
        response = self._request(
            "POST", f"executors/{quote(executor_id, safe='')}/{action}", body=body
        )
        return self._object(response, "executor")

    def get_run_log(self, run_id: str) -> dict[str, Any]:
        """``GET /api/v1/runs/{run_id}/log``: ``{"runId", "jobId", "log", "truncated", ...}``."""
        response = self._request("GET", f"runs/{quote(run_id, safe='')}/log")
        data = self._object(response, "run log")
        if not isinstance(data.get("log"), str | None):
            raise ApiError("the server's run log has no log text")
        return data

    # -- retry policies ---------------------------------------------------------------

    def list_retry_policies(self) -> list[dict[str, Any]]:
        """``GET /api/v1/retry-policies``."""
        return self._list(self._request("GET", "retry-policies"), "retry policy list")

    def get_retry_policy(self, name: str) -> dict[str, Any]:
        """``GET /api/v1/retry-policies/{name}``."""
        response = self._request("GET", f"retry-policies/{quote(name, safe='')}")
        return self._object(response, "retry policy")

    def create_retry_policy(
        self, document: Mapping[str, Any], *, dry_run: bool = False
    ) -> dict[str, Any]:
        """``POST /api/v1/retry-policies``; returns the policy as stored (with its version).
        With ``dry_run`` the server checks it and writes nothing."""
        params = {"dryRun": "true"} if dry_run else None
        response = self._request("POST", "retry-policies", body=dict(document), params=params)
        return self._object(response, "retry policy")

    def update_retry_policy(self, name: str, document: Mapping[str, Any]) -> dict[str, Any]:
        """``PUT /api/v1/retry-policies/{name}``: replace the policy; its version grows."""
        response = self._request(
            "PUT", f"retry-policies/{quote(name, safe='')}", body=dict(document)
        )
        return self._object(response, "retry policy")

    def delete_retry_policy(self, name: str) -> None:
        """``DELETE /api/v1/retry-policies/{name}`` (204; 409 while a queue names it)."""
        self._request("DELETE", f"retry-policies/{quote(name, safe='')}").close()

    # -- API tokens -------------------------------------------------------------------

    def create_token(self, name: str, expires_in: str | None = None) -> dict[str, Any]:
        """``POST /api/v1/tokens``: the new token, with its ``key`` (shown only this once)."""
        body = {"name": name, **({"expiresIn": expires_in} if expires_in else {})}
        data = self._object(self._request("POST", "tokens", body=body), "token")
        if not isinstance(data.get("key"), str) or not data["key"]:
            raise ApiError("the server's answer to creating a token has no key")
        return data

    def list_tokens(self) -> list[dict[str, Any]]:
        """``GET /api/v1/tokens``: your tokens (``current`` marks the one calling)."""
        return self._list(self._request("GET", "tokens"), "token list")

    def revoke_token(self, token_id: int) -> None:
        """``DELETE /api/v1/tokens/{id}`` (204)."""
        self._request("DELETE", f"tokens/{quote(str(token_id), safe='')}").close()

    # -- events -----------------------------------------------------------------------

    def events_path(self, queue: str, job_set: str) -> str:
        return f"job-sets/{quote(queue, safe='')}/{quote(job_set, safe='')}/events"

    def _open_events(self, queue: str, job_set: str, cursor: int | None) -> requests.Response:
        params = {"watch": "true"}
        if cursor is not None:
            params["from"] = str(cursor)
        return self._request(
            "GET",
            self.events_path(queue, job_set),
            params=params,
            stream=True,
            timeout=self.stream_read_timeout,
        )

    def watch_events(
        self,
        queue: str,
        job_set: str,
        *,
        cursor: int | None = None,
        on_reconnect: Callable[[str, int | None], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Follow the events of a job set, forever, reconnecting after drops.

        Yields event dicts in id order, and ``CAUGHT_UP`` each time the events received so
        far are all yielded. ``cursor`` is the exclusive starting point (``--from``).
        ``on_reconnect(reason, cursor)`` is called before each reconnection that follows
        an error (not after a read timeout or a clean end of the body). The first
        connection is not retried: a server that cannot be reached at all is reported
        straight away. After a drop it keeps trying for ``reconnect_window`` seconds
        without receiving anything, backing off from 0.5 s to 10 s between attempts; an
        error answer other than 502/503/504 (say 404 or 403) ends the watch at once.
        """
        response = self._open_events(queue, job_set, cursor)
        outage_started: float | None = None
        attempt = 0
        while True:
            try:
                try:
                    for event in read_events(response):
                        # Data arrived (an event or a keep-alive): the connection works.
                        outage_started, attempt = None, 0
                        if event is None:
                            yield CAUGHT_UP
                            continue
                        event_id = event.get("id")
                        if isinstance(event_id, int) and not isinstance(event_id, bool):
                            if cursor is not None and event_id <= cursor:
                                continue  # already yielded before a reconnection
                            cursor = event_id
                        yield event
                finally:
                    response.close()
            except StreamDropped as drop:
                reason, failure, notify = drop.reason, drop.failure, drop.notify
            while True:
                if failure:
                    now = self._clock()
                    if outage_started is None:
                        outage_started = now
                    elif now - outage_started > self.reconnect_window:
                        raise ApiError(
                            f"lost the event stream from {self.base_url} and could not "
                            f"reconnect for {self.reconnect_window:.0f} s ({reason}); "
                            f"resume with --from {cursor if cursor is not None else 0}"
                        )
                    if notify and on_reconnect is not None:
                        on_reconnect(reason, cursor)
                    self._sleep(min(RECONNECT_BACKOFF_START * 2**attempt, RECONNECT_BACKOFF_MAX))
                    attempt += 1
                try:
                    response = self._open_events(queue, job_set, cursor)
                    break
                except ApiError as exc:
                    if exc.status is not None and exc.status not in TRANSIENT_STATUSES:
                        raise
                    reason, failure, notify = exc.message, True, True
