"""``executors[].podChecks``: when a pod that has not started is stuck, and what to do then
(part of ``core.config``; :mod:`armada.core.podchecks` applies it).

A pod can stay Pending for ever: an image that cannot be pulled, a secret that does not
exist, a volume that will not mount, a node whose kubelet has stopped talking. The checks
say how long each of these may last and whether the run then fails (``Fail``: the job's
fault, counted as a failed attempt and categorised) or its lease is returned (``Retry``: the
node's or the cluster's fault, the job is scheduled again and the attempt does not count).

Durations are Go-style text (``"90s"``, ``"5m"``). Regular expressions use Python's ``re``
syntax and match anywhere in the text (``re.search``); each is checked when the
configuration is read, and an error names its key (``podChecks.events[1].regexp``).

The defaults, for a cluster nobody has tuned yet:

- ``deadlineForNodeAssignment`` 5m: a pod the cluster has not bound to a node in five
  minutes goes back to the scheduler, which placed it expecting room on that node.
- ``deadlineForUpdates`` 5m: a bound pod of which the kubelet has said nothing in five
  minutes (no container status, no event of its own) is on a node that is not working.
- ``deadlineForInitContainers`` 0 (off): init containers often fetch data or wait for
  services for as long as the job needs; a limit is the operator's choice.
- events: a volume that does not mount or attach is retried on another node after 5m, a
  scheduler that cannot place the pod after 3m (before the node-assignment deadline, with
  the scheduler's own reason in the message), a sandbox the runtime cannot create after 5m;
  an image the registry says does not exist or may not be read fails after 2m.
- container waiting reasons: a malformed image name (``InvalidImageName``) or an image that
  may not be pulled and is absent (``ErrImageNeverPull``) fail at once; an image that keeps
  failing to pull (``ErrImagePull``, ``ImagePullBackOff``) fails after 5m; a missing secret
  or config map (``CreateContainerConfigError``) fails after 3m, giving whoever creates it
  alongside the job a moment; the runtime failing to create the container
  (``CreateContainerError``) is retried after 5m; any other waiting reason that lasts 10m
  (``ContainerCreating`` on a node that never gets there) is retried, except
  ``PodInitializing``: a main container waits with it for as long as the init containers
  run, which ``deadlineForInitContainers`` limits when it is set.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, field_validator

from armada.core.config_types import Duration, Strict, compiled_regex

__all__ = ["ContainerStatusCheck", "EventCheck", "PodChecks"]

CheckAction = Literal["Fail", "Retry"]


class EventCheck(Strict):
    """An event about the pod whose ``type`` is ``type`` and whose message matches
    ``regexp`` (does not match, with ``inverse``) calls for ``action`` once the pod has
    been in its current state for more than ``gracePeriod``.

    For each event only the first check that matches it counts: a check still within its
    grace period makes the event wait, even if a later check would act on it already.
    ``name`` appears in the message; it is ``events[<index>]`` when not given."""

    regexp: str
    inverse: StrictBool = False
    type: Literal["Normal", "Warning"] = "Warning"
    grace_period: Duration = Field(0.0, alias="gracePeriod")
    action: CheckAction
    name: str = ""

    _regexp = field_validator("regexp")(compiled_regex)


class ContainerStatusCheck(Strict):
    """A container (init or main) waiting with a ``reason`` that matches ``reasonRegexp``
    (does not match, with ``inverse``) calls for ``action`` once the pod has been in its
    current state for at least ``gracePeriod`` (``0s`` acts at once).

    Only the ``Waiting`` state is checked: a running or terminated container is not stuck.
    For each container only the first matching check counts, as for events. ``name`` names
    the check (in messages), not a container; it is ``containerStatuses[<index>]`` when not
    given."""

    state: Literal["Waiting"] = "Waiting"
    reason_regexp: str = Field(alias="reasonRegexp")
    inverse: StrictBool = False
    grace_period: Duration = Field(0.0, alias="gracePeriod")
    action: CheckAction
    name: str = ""

    _regexp = field_validator("reason_regexp")(compiled_regex)


def _event(regexp: str, grace: float, action: CheckAction, name: str) -> EventCheck:
    return EventCheck.model_validate(
        {"regexp": regexp, "type": "Warning", "gracePeriod": grace, "action": action, "name": name}
    )


def _waiting(regexp: str, grace: float, action: CheckAction, name: str) -> ContainerStatusCheck:
    return ContainerStatusCheck.model_validate(
        {"reasonRegexp": regexp, "gracePeriod": grace, "action": action, "name": name}
    )


def default_event_checks() -> list[EventCheck]:
    """The event checks a new executor gets (see the module docstring)."""
    return [
        _event(
            r"Failed to pull image .*(not found|manifest unknown|pull access denied"
            r"|repository does not exist|insufficient_scope)",
            120.0,
            "Fail",
            "image-does-not-exist",
        ),
        _event(
            r"^(MountVolume\.|Unable to attach or mount volumes|AttachVolume\.)",
            300.0,
            "Retry",
            "volume-not-mounted",
        ),
        _event(r"nodes are available", 180.0, "Retry", "cannot-schedule"),
        _event(r"Failed to create pod sandbox", 300.0, "Retry", "sandbox-not-created"),
    ]


def default_container_checks() -> list[ContainerStatusCheck]:
    """The container waiting checks a new executor gets (see the module docstring)."""
    return [
        _waiting(r"^(InvalidImageName|ErrImageNeverPull)$", 0.0, "Fail", "image-unusable"),
        _waiting(r"^(ErrImagePull|ImagePullBackOff)$", 300.0, "Fail", "image-not-pulled"),
        _waiting(r"^CreateContainerConfigError$", 180.0, "Fail", "container-config"),
        _waiting(r"^CreateContainerError$", 300.0, "Retry", "container-not-created"),
        ContainerStatusCheck.model_validate(
            {
                "reasonRegexp": r"^PodInitializing$",
                "inverse": True,
                "gracePeriod": 600.0,
                "action": "Retry",
                "name": "waiting-too-long",
            }
        ),
    ]


class PodChecks(Strict):
    """The checks of pods that have not started yet (see the module docstring).

    Deadlines are measured from the pod's last status change (its creation, a condition's
    transition, a container starting or ending), except ``deadlineForInitContainers``,
    which runs from the start of the first init container."""

    deadline_for_updates: Duration = Field(300.0, alias="deadlineForUpdates", gt=0)
    deadline_for_node_assignment: Duration = Field(300.0, alias="deadlineForNodeAssignment", gt=0)
    deadline_for_init_containers: Duration = Field(0.0, alias="deadlineForInitContainers")
    events: list[EventCheck] = Field(default_factory=default_event_checks)
    container_statuses: list[ContainerStatusCheck] = Field(
        default_factory=default_container_checks, alias="containerStatuses"
    )
