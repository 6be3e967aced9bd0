"""``GET .../pods/{name}/log``: the container's log (the ``log`` annotation, written at once
when the container starts or one line every ``logInterval``, ``core.fakepod``), with the
API server's and kubelet's refusals and options.

As the real server: ``container`` (400 for one the pod does not have, or none named in a
pod of several), ``previous``, ``timestamps`` (each line opened by its time, RFC 3339 with
nanoseconds and trailing zeros left out), ``tailLines`` (the last lines; then the time
filter), ``sinceTime`` (RFC 3339; the API server hands the kubelet whole seconds, so the
fraction is dropped) or ``sinceSeconds`` (lines of the last seconds by the server's clock),
at most one of them, ``limitBytes`` (the output cut after that many bytes, timestamps
included) and ``follow``. A bad value is a 422 naming the field (``PodLogOptions ... is
invalid``), a time that does not parse a 400, as the API server answers.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from armada.core.fakepod import FakeOutcome, parse_fake_outcome
from tests.kube_emulator.objects import RESOURCES, ApiError, bad_request

if TYPE_CHECKING:
    from tests.kube_emulator.emulator import KubeEmulator
    from tests.kube_emulator.http import Handler

_TRUE = ("true", "1")


def _state(pod: dict[str, Any], container: str) -> dict[str, Any]:
    status = pod.get("status") or {}
    for group in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(group) or []:
            if cs["name"] == container:
                return cs
    return {}


def rfc3339_nano(at: float) -> str:
    """A time as the kubelet writes a log line's: ``2026-01-01T12:00:00.25Z``."""
    whole = int(at)
    nanos = round((at - whole) * 1_000_000_000)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    base = datetime.fromtimestamp(whole, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{nanos:09d}".rstrip("0")
    return f"{base}.{fraction}Z" if fraction else f"{base}Z"


def _parse_time(text: str) -> float:
    """An RFC 3339 time, as Go's ``time.Parse(time.RFC3339, ...)`` takes it (a fraction
    allowed), else the 400 the API server answers."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise bad_request(
            f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse "{text}" as "2006"'
        ) from None


def _options(name: str, params: dict[str, str]) -> dict[str, Any]:
    """The log options of ``params``, checked as ``ValidatePodLogOptions`` does."""
    causes: list[tuple[str, str, str]] = []
    options: dict[str, Any] = {}
    for key, least, message in (
        ("tailLines", 0, "must be greater than or equal to 0"),
        ("limitBytes", 1, "must be greater than 0"),
        ("sinceSeconds", 1, "must be greater than 0"),
    ):
        if key not in params:
            continue
        try:
            value = int(params[key])
        except ValueError:
            raise bad_request(
                f'strconv.ParseInt: parsing "{params[key]}": invalid syntax'
            ) from None
        if value < least:
            causes.append((key, "FieldValueInvalid", f"Invalid value: {value}: {message}"))
        options[key] = value
    if "sinceTime" in params:
        options["sinceTime"] = float(int(_parse_time(params["sinceTime"])))  # whole seconds
        if "sinceSeconds" in params:
            causes.append(
                ("", "FieldValueForbidden", "Forbidden: at most one of `sinceTime` or "
                 "`sinceSeconds` may be specified")
            )  # fmt: skip
    if causes:
        parts = [f"{f}: {m}" if f else m for f, _, m in causes]
        text = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        details = {
            "name": name,
            "kind": "PodLogOptions",
            "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes],
        }
        raise ApiError(422, "Invalid", f'PodLogOptions "{name}" is invalid: {text}', details)
    return options


def _lines(
    outcome: FakeOutcome, started: float, ended: float | None, now: float, scale: float
) -> list[tuple[float, str]]:
    """The container's log lines written by ``now``, each with its time."""
    if not outcome.log:
        return []
    lines = outcome.log.splitlines(keepends=True)
    if not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    interval = outcome.log_interval_seconds * scale
    until = min(now, ended) if ended is not None else now
    if interval <= 0:
        return [(started, line) for line in lines]
    due = [(started + i * interval, line) for i, line in enumerate(lines)]
    return [(at, line) for at, line in due if at <= until]


def _body(lines: list[tuple[float, str]], options: dict[str, Any], stamps: bool) -> bytes:
    if "tailLines" in options:
        tail = options["tailLines"]
        lines = lines[-tail:] if tail > 0 else []
    since = options.get("sinceTime")
    if "sinceSeconds" in options:
        since = time.time() - options["sinceSeconds"]
    if since is not None:
        lines = [(at, line) for at, line in lines if at >= since]
    body = "".join(f"{rfc3339_nano(at)} {line}" if stamps else line for at, line in lines)
    return body.encode()


def serve(h: Handler, emu: KubeEmulator, ns: str, name: str, params: dict[str, str]) -> None:
    pod = emu.store.get("pods", ns, name)
    spec = pod["spec"]
    mains = [c["name"] for c in spec["containers"]]
    inits = [c["name"] for c in spec.get("initContainers") or []]
    container = params.get("container", "")
    if not container:
        if len(mains) != 1:
            msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(mains)}]"
            if inits:
                msg += f" or one of the init containers: [{' '.join(inits)}]"
            raise bad_request(msg)
        container = mains[0]
    if container not in mains + inits:
        raise bad_request(f"container {container} is not valid for pod {name}")
    options = _options(name, params)
    node = spec.get("nodeName")
    if not node:
        raise bad_request(f"pod {name} does not have a host assigned")
    if emu.store.find("nodes", "", node) is None:
        raise ApiError(
            404, "NotFound", f'nodes "{node}" not found', {"name": node, "kind": "nodes"}
        )
    if node in emu.cluster.lost:
        raise ApiError(
            500,
            "InternalError",
            f'Get "https://{node}:10250/containerLogs/{ns}/{name}/{container}": dial tcp: i/o timeout',
        )
    cs = _state(pod, container)
    if params.get("previous") in _TRUE and not (cs.get("lastState") or {}).get("terminated"):
        raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
    state = cs.get("state") or {"waiting": {"reason": "ContainerCreating"}}
    if "waiting" in state and not (cs.get("lastState") or {}).get("terminated"):
        reason = state["waiting"].get("reason", "ContainerCreating")
        if reason in ("ErrImagePull", "ImagePullBackOff"):
            reason = "trying and failing to pull image"
        raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    outcome, _ = parse_fake_outcome(pod["metadata"].get("annotations") or {})
    if container != mains[0]:
        outcome = FakeOutcome()
    run = emu.kubelet.runs.get(pod["metadata"]["uid"])
    running = state.get("running") or state.get("terminated") or {}
    started = (run.started_wall.get(container) if run is not None else None) or (
        _parse_time(running["startedAt"]) if running.get("startedAt") else time.time()
    )
    ended = None
    if "terminated" in state:  # finishedAt is in whole seconds: the end is within the next
        ended = min(
            _parse_time(state["terminated"]["finishedAt"]) + 1.0,
            started + outcome.duration_seconds * emu.time_scale,
        )
    stamps = params.get("timestamps") in _TRUE
    limit = options.get("limitBytes")

    def written() -> list[tuple[float, str]]:
        return _lines(outcome, started, ended, time.time(), emu.time_scale)

    body = _body(written(), options, stamps)
    if params.get("follow") not in _TRUE:
        h._send_text(200, body[:limit].decode(errors="ignore") if limit else body.decode())
        return
    h.start_chunked("text/plain")
    sent = body[:limit] if limit else body
    h.chunk(sent)
    count = len(written())
    while not emu.stopping and (limit is None or len(sent) < limit):
        current = emu.store.find("pods", ns, name)
        if current is None or current["metadata"]["uid"] != pod["metadata"]["uid"]:
            break
        lines = written()
        if len(lines) > count:
            more = _body(lines[count:], {}, stamps)
            more = more[: limit - len(sent)] if limit else more
            h.chunk(more)
            sent += more
            count = len(lines)
        if "running" not in (_state(current, container).get("state") or {}):
            break
        time.sleep(0.05)
    h.end_chunked()


__all__ = ["RESOURCES", "serve"]
