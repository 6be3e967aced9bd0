"""Label a failed pod with a category and subcategory, from the executor's ``errorCategories``.

Executors categorise every failed pod before reporting it; retry policies later match on the
labels byte for byte, so the rules below are the contract.

Matching order
--------------
Categories are tried in configuration order, and the rules of a category in their order. The
FIRST rule that matches, across all categories, wins: the result is that category's name, the
rule's ``subcategory`` (``""`` if it has none), the category's ``action`` (``Retain`` or
``Delete``) and the rule's ``hint`` (``""`` if none). Later rules are not looked at, so put
the most specific categories first. A failure that two rules match gets the earlier one.

What each matcher looks at
--------------------------
- ``onExitCodes {operator, values}``: the containers' exit codes. Exit code 0 never matches
  (neither ``In`` nor ``NotIn``, even when 0 is listed), and neither does a container with no
  exit code (it did not terminate). ``In`` matches a code in ``values``; ``NotIn`` matches a
  non-zero code that is not in ``values``. Without ``containerName`` the rule matches when ANY
  container's exit code matches.
- ``onConditions [...]``: matches when ANY of the listed conditions holds.
  ``OOMKilled`` holds when a container ended with reason ``OOMKilled`` or the pod-level
  conditions contain ``OOMKilled``. With ``containerName`` only that container's reason
  counts: a pod-level ``OOMKilled`` does not say which container was killed, so it does not
  satisfy a rule restricted to one container. ``Evicted`` and ``DeadlineExceeded`` are
  pod-level conditions only; ``containerName`` does not apply to them.
- ``onTerminationMessage {pattern}``: ``re.search`` (anywhere in the text, not anchored)
  against each container's termination message, whatever its exit code.
- ``onPodError {pattern}``: ``re.search`` against the pod-level error message (an image that
  cannot be pulled, a lost node). ``containerName`` does not apply and is ignored.

An empty termination message or pod error is "no message" and matches no pattern, not even
``.*`` or ``^$``, just as exit code 0 is "no failure" for exit-code rules. Patterns use
Python's ``re`` syntax, are case-sensitive unless they say ``(?i)``, and are compiled once,
when the :class:`Categorizer` is built (``config.py`` has already checked that they compile).

``containerName`` restricts a rule to the container of that name: its exit code, its
termination message, its OOM kill. A container of that name that is absent matches nothing.

When nothing matches
--------------------
- ``enabled: true``: the result is ``defaultCategory`` / ``defaultSubcategory`` with action
  ``Retain`` and no hint. Both may be empty, which is then the same as no category.
- ``enabled: false``: every failure gets the empty result (no category, action ``Retain``),
  whatever rules are configured.

Built-in categories
-------------------
The control plane labels some failures itself, never through rules: category ``internal``
with subcategory ``lease-expired``, ``max-runs-exceeded``, ``pod-missing``,
``stuck-terminating`` or ``job-creation-failed``; see :func:`internal`. Operators may define
a category named ``internal`` in configuration with other subcategories (``node-failure``,
say); ``config.py`` refuses the five reserved ones there so that the labels stay unambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # config.py imports the constants below; import it for types only.
    from armada.core.config import CategoryRule, ErrorCategories

RETAIN = "Retain"
DELETE = "Delete"

INTERNAL = "internal"
LEASE_EXPIRED = "lease-expired"
MAX_RUNS_EXCEEDED = "max-runs-exceeded"
POD_MISSING = "pod-missing"
STUCK_TERMINATING = "stuck-terminating"
JOB_CREATION_FAILED = "job-creation-failed"
INTERNAL_SUBCATEGORIES = (
    LEASE_EXPIRED,
    MAX_RUNS_EXCEEDED,
    POD_MISSING,
    STUCK_TERMINATING,
    JOB_CREATION_FAILED,
)

_OOM_KILLED = "OOMKilled"


@dataclass(frozen=True)
class ContainerSignal:
    """How one container ended. ``exit_code`` is None when it did not terminate; ``reason``
    is spelled as Kubernetes does (``Completed``, ``Error``, ``OOMKilled``, ...)."""

    name: str
    exit_code: int | None
    reason: str = ""
    termination_message: str = ""


@dataclass(frozen=True)
class FailureSignals:
    """Everything the categorizer looks at for one failed pod.

    ``conditions`` are pod-level (``Evicted``, ``DeadlineExceeded``, ``OOMKilled``);
    ``pod_error`` says why the pod failed as a whole (image pull failure, lost node).
    """

    containers: tuple[ContainerSignal, ...] = ()
    conditions: frozenset[str] = frozenset()
    pod_error: str = ""


@dataclass(frozen=True)
class Categorization:
    """The labels of a failure. The default value (empty category) means "uncategorised"."""

    category: str = ""
    subcategory: str = ""
    action: str = RETAIN  # RETAIN | DELETE
    hint: str = ""

    @property
    def delete_pod(self) -> bool:
        """Whether the executor deletes the failed pod (action ``Delete``) or keeps it."""
        return self.action == DELETE


UNCATEGORIZED = Categorization()


def internal(subcategory: str, hint: str = "") -> Categorization:
    """A failure the control plane labels itself: category ``internal``, action ``Delete``.

    ``subcategory`` must be one of :data:`INTERNAL_SUBCATEGORIES` (a typo would silently
    escape every retry policy that matches on it); anything else raises ``ValueError``.
    """
    if subcategory not in INTERNAL_SUBCATEGORIES:
        raise ValueError(
            f"{subcategory!r} is not a built-in internal subcategory "
            f"({', '.join(INTERNAL_SUBCATEGORIES)})"
        )
    return Categorization(INTERNAL, subcategory, DELETE, hint)


_Match = Callable[[FailureSignals], bool]


def _containers(signals: FailureSignals, name: str | None) -> Iterator[ContainerSignal]:
    """The containers a rule looks at: all, or only those called ``name``."""
    if name is None:
        return iter(signals.containers)
    return (c for c in signals.containers if c.name == name)


def _exit_codes(operator: str, values: list[int], container: str | None) -> _Match:
    codes = frozenset(values)
    wanted = operator == "In"  # NotIn: the code must be absent from ``values``

    def match(signals: FailureSignals) -> bool:
        for c in _containers(signals, container):
            code = c.exit_code
            if code is not None and code != 0 and (code in codes) is wanted:
                return True
        return False

    return match


def _conditions(conditions: list[str], container: str | None) -> _Match:
    # OOMKilled is also a container reason; a pod-level OOMKilled cannot be attributed to a
    # container, so a rule restricted by containerName looks at that container's reason only.
    oom = _OOM_KILLED in conditions
    pod_level = frozenset(c for c in conditions if container is None or c != _OOM_KILLED)

    def match(signals: FailureSignals) -> bool:
        if not pod_level.isdisjoint(signals.conditions):
            return True
        return oom and any(c.reason == _OOM_KILLED for c in _containers(signals, container))

    return match


def _termination_message(pattern: str, container: str | None) -> _Match:
    search = re.compile(pattern).search

    def match(signals: FailureSignals) -> bool:
        return any(
            c.termination_message and search(c.termination_message) is not None
            for c in _containers(signals, container)
        )

    return match


def _pod_error(pattern: str) -> _Match:
    search = re.compile(pattern).search

    def match(signals: FailureSignals) -> bool:
        return bool(signals.pod_error) and search(signals.pod_error) is not None

    return match


def _matcher(rule: CategoryRule) -> _Match:
    """The test for the one matcher a validated rule has."""
    if rule.on_exit_codes is not None:
        return _exit_codes(
            rule.on_exit_codes.operator, rule.on_exit_codes.values, rule.container_name
        )
    if rule.on_conditions is not None:
        return _conditions(list(rule.on_conditions), rule.container_name)
    if rule.on_termination_message is not None:
        return _termination_message(rule.on_termination_message.pattern, rule.container_name)
    if rule.on_pod_error is not None:
        return _pod_error(rule.on_pod_error.pattern)
    raise ValueError("a rule needs exactly one matcher")  # config.py rejects this earlier


class Categorizer:
    """Categorises failures of one executor; build once per configuration, reuse for every
    failure. See the module docstring for the matching order and what each matcher sees."""

    def __init__(self, config: ErrorCategories) -> None:
        # (test, result) in matching order; results are built once and shared. Disabled: no
        # rules and the empty default, so every failure is uncategorised.
        self._rules: tuple[tuple[_Match, Categorization], ...] = ()
        self._default = UNCATEGORIZED
        if not config.enabled:
            return
        self._rules = tuple(
            (
                _matcher(rule),
                Categorization(
                    category.name, rule.subcategory or "", category.action, rule.hint or ""
                ),
            )
            for category in config.categories
            for rule in category.rules
        )
        self._default = Categorization(config.default_category, config.default_subcategory, RETAIN)

    def categorize(self, signals: FailureSignals) -> Categorization:
        """The first matching rule's labels, else the default (or nothing when disabled)."""
        for match, result in self._rules:
            if match(signals):
                return result
        return self._default
