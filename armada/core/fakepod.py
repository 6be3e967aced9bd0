"""What a job asks of the ``fake`` backend, read from its annotations.

The fake backend simulates a cluster. A pod stays pending for ``pendingDuration``, runs for
``duration`` and then ends as asked: ``exitCode``, a kill ``condition`` (OOMKilled, Evicted,
DeadlineExceeded), a ``terminationMessage``; or it fails to start with ``podError`` (an
image that cannot be pulled, say); or its node is lost while it runs (``nodeLost``). Its
log is ``log``: written all at once when the pod starts running, or, with ``logInterval``,
one line every interval from then on (the lines due after the pod ended are never
written; ``log_written``). Deleting it takes ``deletionDuration`` (a pod stuck terminating takes
long). Parsing lives here, in the core, so that a submit with a bad value is refused with
the annotation named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from armada.core.duration import parse_duration
from armada.core.errors import FieldError

PREFIX = "fake.armadaproject.io/"
CONDITIONS = ("OOMKilled", "Evicted", "DeadlineExceeded")
KEYS = (
    "duration",
    "pendingDuration",
    "exitCode",
    "condition",
    "terminationMessage",
    "podError",
    "nodeLost",
    "log",
    "logInterval",
    "deletionDuration",
)
_DURATIONS = {
    "duration": "duration_seconds",
    "pendingDuration": "pending_seconds",
    "deletionDuration": "deletion_seconds",
    "logInterval": "log_interval_seconds",
}


@dataclass(frozen=True)
class FakeOutcome:
    pending_seconds: float = 0.0
    duration_seconds: float = 1.0
    exit_code: int = 0
    condition: str = ""
    termination_message: str = ""
    pod_error: str = ""
    node_lost: bool = False
    log: str = ""
    deletion_seconds: float = 0.0
    log_interval_seconds: float = 0.0

    @property
    def succeeds(self) -> bool:
        return not (self.exit_code or self.condition or self.pod_error or self.node_lost)

    def log_written(self, running_seconds: float) -> str:
        """What the pod's log holds ``running_seconds`` after it started running (capped by
        the caller at the pod's ``duration`` once it ended): all of ``log`` at once, or with
        ``logInterval`` line i (from 0) once ``i x logInterval`` seconds have passed."""
        if running_seconds < 0:
            return ""
        if self.log_interval_seconds <= 0:
            return self.log
        lines = self.log.splitlines(keepends=True)
        count = int(running_seconds / self.log_interval_seconds + 1e-9) + 1
        return "".join(lines[:count])


def parse_fake_outcome(
    annotations: Mapping[str, str], where: str = "annotations"
) -> tuple[FakeOutcome, list[FieldError]]:
    """The outcome asked for, and the problems found (each naming the annotation)."""
    errors: list[FieldError] = []
    values: dict[str, object] = {}
    for key, raw in annotations.items():
        if not key.startswith(PREFIX):
            continue
        name = key.removeprefix(PREFIX)
        field = f"{where}[{key}]"
        if name not in KEYS:
            errors.append(
                FieldError(field, f"unknown fake-backend annotation; known: {', '.join(KEYS)}")
            )
            continue
        try:
            if name in _DURATIONS:
                values[_DURATIONS[name]] = parse_duration(raw)
            elif name == "exitCode":
                code = int(str(raw))
                if not 0 <= code <= 255:
                    raise ValueError("an exit code is between 0 and 255")
                values["exit_code"] = code
            elif name == "condition":
                if raw not in CONDITIONS:
                    raise ValueError(f"must be one of {', '.join(CONDITIONS)}")
                values["condition"] = raw
            elif name == "nodeLost":
                if raw not in ("true", "false"):
                    raise ValueError('must be "true" or "false"')
                values["node_lost"] = raw == "true"
            elif name == "terminationMessage":
                values["termination_message"] = str(raw)
            elif name == "log":
                values["log"] = str(raw)
            else:
                values["pod_error"] = str(raw)
        except ValueError as exc:
            errors.append(FieldError(field, str(exc)))
    return FakeOutcome(**values), errors  # type: ignore[arg-type]
