"""Pods' logs through the API server (``GET .../pods/{name}/log``): the tail a run ends with,
and, while it runs, what each container wrote since the last read (the live logs).

The API reads a log from a time, not from a byte offset, so a live read asks for the lines
since the second of the last line taken (``sinceTime``: the API server hands the kubelet a
time in whole seconds) with their times (``timestamps=true``), and leaves out the lines it
took already: those older than that line, and as many of the same time as it took (the
position's ``mark`` and ``at_mark``). Only whole lines are taken; a line still being
written is taken once it ends (the run's final tail has it at the latest). A read asks for
at most ``REQUEST_FACTOR`` times the piece size (the times and the lines read again cost
room); one that came back full with nothing new asks for twice as much next time
(``window``), so that a second of more output than a request holds cannot hold the log up.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from armada.executor.backends.base import LogPosition, LogRead, log_read

log = logging.getLogger(__name__)

Obj = dict[str, Any]
LOG_PATH = "/api/v1/namespaces/{namespace}/pods/{name}/log"
REQUEST_FACTOR = 4
MAX_WINDOW = 64


def _containers(pod: Obj) -> list[str]:
    return [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]


def stamp(text: str) -> tuple[str, int]:
    """An RFC 3339 time in UTC as the kubelet writes it (``2024-05-01T10:00:00.5Z``, the
    fraction's trailing zeros left out), as (seconds, nanoseconds) that sort by time."""
    text = text.rstrip("Z")
    seconds, _, fraction = text.partition(".")
    return seconds, int((fraction + "000000000")[:9] or 0)


class PodLogs:
    def __init__(self, api: client.ApiClient, timeout: float) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)
        self.timeout = timeout

    def tail(self, pod: Obj, limit_bytes: int) -> str:
        """The pod's containers' logs, each headed ``==> <container> <==`` when there are
        more than one, at most the last ``limit_bytes`` characters."""
        name, namespace = pod["metadata"]["name"], pod["metadata"].get("namespace", "default")
        containers = _containers(pod)
        parts = []
        for container in containers:
            try:
                response = self.core.read_namespaced_pod_log(
                    name,
                    namespace,
                    container=container,
                    limit_bytes=limit_bytes,
                    _preload_content=False,
                    _request_timeout=self.timeout,
                )
                text = response.data.decode("utf-8", errors="replace")
            except ApiException as exc:
                if exc.status not in (400, 404):
                    log.warning("log of pod %s/%s: %s", name, container, exc.reason)
                continue
            except Exception as exc:  # noqa: BLE001 - a log that cannot be read is left out
                log.warning("log of pod %s/%s: %s", name, container, exc)
                continue
            if len(containers) > 1:
                text = f"==> {container} <==\n{text}"
            parts.append(text)
        return "".join(parts)[-limit_bytes:]

    def since(self, pod: Obj, since: Mapping[str, LogPosition], limit_bytes: int) -> list[LogRead]:
        """What each container wrote past ``since`` (see the module docstring). A container
        whose log cannot be read now (not started, its node silent) is left out."""
        containers = _containers(pod)
        out = []
        for container in containers:
            key = container if len(containers) > 1 else ""
            position = since.get(key, LogPosition())
            try:
                body = self._read(pod, container, position, limit_bytes)
            except ApiException as exc:
                if exc.status not in (400, 404):
                    log.warning("live log of %s/%s: %s", pod["metadata"]["name"], container, exc)
                continue
            read = self._new(key, position, body, limit_bytes)
            if read is not None:
                out.append(read)
        return out

    def _read(self, pod: Obj, container: str, position: LogPosition, limit_bytes: int) -> bytes:
        query: list[tuple[str, Any]] = [
            ("container", container),
            ("timestamps", "true"),
            ("limitBytes", limit_bytes * REQUEST_FACTOR * position.window),
        ]
        if position.mark:
            query.append(("sinceTime", stamp(position.mark)[0] + "Z"))
        request = self.api.param_serialize(
            method="GET",
            resource_path=LOG_PATH,
            path_params={
                "namespace": pod["metadata"].get("namespace", "default"),
                "name": pod["metadata"]["name"],
            },
            query_params=query,
            header_params={"Accept": "text/plain"},
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(*request, _request_timeout=self.timeout)
        response.read()
        return bytes(self.api.response_deserialize(response, {"200": "bytearray"}).data)

    def _new(
        self, key: str, position: LogPosition, body: bytes, limit_bytes: int
    ) -> LogRead | None:
        """The read of the lines of ``body`` past ``position``; its new position."""
        requested = limit_bytes * REQUEST_FACTOR * position.window
        full = len(body) >= requested
        lines = body.split(b"\n")
        whole = lines[:-1]  # the last is a line still being written, or empty
        if not whole and full and lines[0]:
            whole = [lines[0]]  # one line longer than a request: taken as far as it came
        old = stamp(position.mark) if position.mark else None
        mark, at_mark = position.mark, position.at_mark  # of the last line taken
        seen_at_old = 0  # lines of the old mark's time met in this body
        new: list[bytes] = []
        for line in whole:
            when, _, content = line.partition(b" ")
            text = when.decode("ascii", "replace")
            at = stamp(text)
            if old is not None and at < old:
                continue
            if at == old:
                seen_at_old += 1
                if seen_at_old <= position.at_mark:
                    continue  # taken already
            at_mark = at_mark + 1 if mark and at == stamp(mark) else 1
            mark = text
            new.append(content + b"\n")
        data = b"".join(new)
        if not data:
            window = min(position.window * 2, MAX_WINDOW) if full else 1
            if window == position.window:
                return None
            grown = LogPosition(position.offset, mark, at_mark, window)
            return LogRead(key, position.offset, b"", grown)
        skipped = max(0, len(data) - limit_bytes)
        read = log_read(key, position.offset + skipped, data[skipped:], skipped=skipped > 0)
        if read is None:
            return None
        end = LogPosition(position.offset + len(data), mark, at_mark, 1)
        return LogRead(key, read.offset, read.data, end)
