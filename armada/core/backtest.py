"""The backtest's replay: one recorded failure decided again under a draft policy.

A recorded failure (:class:`RecordedFailure`) is what the scheduler kept of one decided
genuine failure: its category, the retries its job had used when it was decided, the label
it was given, the failed run's requests and duration, and what the job's later runs cost.
:class:`Replayer` asks :func:`armada.core.retry.decide` what the draft says about it and
classifies the answer; ``core.backtest_report`` adds the answers up per queue and overall.

What the replay models, and what it does not:

- Every failure is decided with the retries its job really had at that point. The history
  is not re-simulated: a draft that would have ended a job earlier does not change how the
  job's later failures are counted or compared.
- Outcomes, not labels, are compared: a failure is *unchanged* when both decisions retry or
  both do not, whatever the labels (``fail_rule`` against ``fail_default`` is unchanged).
  ``retry`` is the only label that retried; ``retry_unschedulable`` (the static-fit probe
  refused the mutated job), ``not_retried`` (engine off, failFast, never-retried
  categories, a job that had already ended) and ``gang_skipped`` did not.
- A fail -> retry flip adds one attempt: a run with the failed run's requests after the
  draft's memory bump, for as long as the failed run really lasted. Whether that attempt
  would have succeeded is estimated from the retry yield (``backtest_report.success_rates``).
- A retry -> fail flip saves the job's later runs, at their real requests and durations.
- Attempts and costs count once per job: from the first failure of a job (in run order) that
  the draft would not retry, the job is over under the draft, and its later failures are
  compared (flips are counted) but add no attempts or costs.
- The draft applies to every queue read, as if each queue named it first; the engine is
  taken as enabled, with the scheduler's ``globalMaxRetries``. The static-fit probe that
  follows a mutation is not repeated.

Two ways in, with the same answers: :meth:`Replayer.replay` takes one failure at a time, in
job and run order, and works out itself whether the job is already over under the draft;
:meth:`Replayer.replay_group` takes a :class:`RecordedGroup`, failures summed by everything
the replay reads, for which the database has worked that out (``services.backtest_rows``),
so that a million failures travel as a few thousand groups.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from armada.core.policy import RetryPolicy
from armada.core.quantity import CPU, GPU, MEMORY, format_quantity
from armada.core.resource_cost import ZERO, Cost, run_cost
from armada.core.retry import (
    LABEL_GANG_SKIPPED,
    LABEL_NOT_RETRIED,
    LABEL_RETRY,
    Failure,
    RetrySettings,
    decide,
    grow_memory,
)
from armada.core.submission import pod_requests

NOT_RETRIED = LABEL_NOT_RETRIED
GANG_SKIPPED = LABEL_GANG_SKIPPED
RETRY_TO_FAIL = "retryToFail"
FAIL_TO_RETRY = "failToRetry"


@dataclass(slots=True)
class RecordedFailure:
    """One decided genuine failure as the scheduler recorded it (read-only by convention).

    ``retries_used`` is the job's count of earlier genuine failures when this one was
    decided; ``recorded`` its decision label and ``recorded_rule`` the 0-based rule that
    matched (None for defaultAction or no engine decision). ``cpu``/``memory``/``gpu`` are
    the failed run's requests in milli-units and ``seconds`` how long it held them.
    ``later_runs`` counts the job's runs after this one and ``later_*`` are the sums of
    their requests times their seconds (milli-unit-seconds). ``memory_kind`` is the kind of
    memory bump the job already had ("" for none). ``job_ended``: the job had already ended
    (been cancelled, say) when the failure was decided, so no policy could retry it.
    ``job_set``, ``exit_code`` and ``condition`` (the run's reason, OOMKilled say) describe
    the failure for people; the engine does not read them (it matches categories).
    """

    run_id: str
    job_id: str
    queue: str
    category: str
    subcategory: str
    lease_expired: bool
    retries_used: int
    recorded: str
    recorded_rule: int | None = None
    gang_cardinality: int = 1
    fail_fast: bool = False
    job_ended: bool = False
    cpu: float = 0.0
    memory: float = 0.0
    gpu: float = 0.0
    seconds: float = 0.0
    memory_kind: str = ""
    later_runs: int = 0
    later_cpu: float = 0.0
    later_memory: float = 0.0
    later_gpu: float = 0.0
    job_set: str = ""
    exit_code: int | None = None
    condition: str = ""


class VerdictKey(NamedTuple):
    """What ``decide`` reads of a recorded failure: failures with the same key get the same
    verdict, so the replay decides each key once."""

    category: str
    subcategory: str
    retries_used: int
    gang: bool  # a gang of two or more
    fail_fast: bool
    lease_expired: bool
    job_ended: bool


def verdict_key(failure: RecordedFailure) -> VerdictKey:
    return VerdictKey(
        failure.category,
        failure.subcategory,
        failure.retries_used,
        failure.gang_cardinality >= 2,
        bool(failure.fail_fast),
        bool(failure.lease_expired),
        bool(failure.job_ended),
    )


@dataclass(slots=True)
class RecordedGroup:
    """Recorded failures the replay cannot tell apart, counted and summed (read-only by
    convention); the database makes them (``services.backtest_rows``).

    The group's failures share their queue, their :class:`VerdictKey` (``key``), the label
    and 0-based rule recorded, and ``reached``: whether, in its job's run order, no earlier
    failure is one the draft would not retry (how :meth:`Replayer.replay` tells it). When
    the draft newly retries them, they share ``memory`` (the failed runs' memory request,
    milli-bytes: the added attempt's size depends on it) and ``memory_kind``; otherwise
    those are 0 and "". ``seconds``, ``cpu_seconds`` and ``gpu_seconds`` sum the failed
    runs' durations (none below 0) and their requests times them. ``later_*`` sum, over
    those failures that are the first of their job the draft would not retry, the job's
    runs after that failure, as :class:`RecordedFailure` counts them.
    """

    queue: str
    key: VerdictKey
    recorded: str
    recorded_rule: int | None
    reached: bool
    count: int
    memory: float = 0.0
    memory_kind: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    gpu_seconds: float = 0.0
    later_runs: int = 0
    later_cpu: float = 0.0
    later_memory: float = 0.0
    later_gpu: float = 0.0

    @property
    def category(self) -> str:
        return self.key.category

    @property
    def subcategory(self) -> str:
        return self.key.subcategory


@dataclass(frozen=True, slots=True)
class DraftVerdict:
    """What the draft says about a failure: its label, whether it retries, the 0-based
    rule that decided, the mutation's memory bump, the reason and the retry delay."""

    label: str
    retry: bool
    rule_index: int | None
    memory_bump: Any
    reason: str
    retry_delay_seconds: float | None


@dataclass(slots=True)
class Replay:
    """A recorded failure next to the draft's verdict on it (read-only by convention).

    ``flip`` is "" (unchanged), :data:`RETRY_TO_FAIL` or :data:`FAIL_TO_RETRY`.
    ``reached`` is false for a failure after one that ended the job under the draft: it adds
    no attempts. ``attempts`` are the attempts the flip adds (fail -> retry) or saves
    (retry -> fail); ``cpu``/``memory``/``gpu`` their requests times their seconds, in
    milli-unit-seconds (kept as sums, turned into a :class:`Cost` once, at the end).
    ``count`` is how many failures it stands for (a group's count; 1 for one failure).
    """

    failure: RecordedFailure | RecordedGroup
    verdict: DraftVerdict
    flip: str
    reached: bool
    attempts: int = 0
    cpu: float = 0.0
    memory: float = 0.0
    gpu: float = 0.0
    count: int = 1

    @property
    def cost(self) -> Cost:
        return cost_of_sums(self.cpu, self.memory, self.gpu)

    @property
    def extra_attempts(self) -> int:
        return self.attempts if self.flip == FAIL_TO_RETRY else 0

    @property
    def saved_attempts(self) -> int:
        return self.attempts if self.flip == RETRY_TO_FAIL else 0


def cost_of_sums(cpu: float, memory: float, gpu: float) -> Cost:
    """The cost of milli-unit-second sums: held for one second, they cost what they sum."""
    return run_cost({CPU: cpu, MEMORY: memory, GPU: gpu}, 1.0) if cpu or memory or gpu else ZERO


def recorded_retried(label: str) -> bool:
    """Whether a recorded decision label retried the job."""
    return label == LABEL_RETRY


def rule_number(index: int | None) -> int | None:
    """A 0-based rule index as people number rules (from 1)."""
    return None if index is None else index + 1


def bumped_memory(memory_milli: int, bump: Any, previous_kind: str) -> int:
    """The pod's memory request (milli-units) after ``bump``, as ``core.retry.grow_memory``
    computes it on a pod of one container asking for ``memory_milli``. A bump of the other
    kind than the job's earlier one is skipped, as the scheduler skips it."""
    if memory_milli <= 0:
        return memory_milli
    values = {CPU: "1", MEMORY: format_quantity(memory_milli, MEMORY)}
    spec = {
        "containers": [
            {
                "name": "main",
                "image": "backtest",
                "resources": {"requests": dict(values), "limits": dict(values)},
            }
        ]
    }
    grown, change, _warning = grow_memory(spec, bump, previous_kind)
    return change.after if change is not None else pod_requests(grown)[MEMORY]


class Replayer:
    """Replays recorded failures under one draft policy, in the order given.

    Feed the failures of each job together, in run order (the service orders its rows by
    job and run): the replayer remembers whether the current job is over under the draft.
    Verdicts are cached by the fields ``decide`` reads, so a long history costs one engine
    call per distinct (category, subcategory, retries, kind of job).
    """

    def __init__(
        self,
        *,
        policy: RetryPolicy,
        settings: RetrySettings,
        never_retried: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.policy = policy
        self.settings = RetrySettings(enabled=True, global_max_retries=settings.global_max_retries)
        self.never_retried = frozenset(never_retried)
        self._names = (policy.name,)
        self._policies = {policy.name: policy}
        self._verdicts: dict[tuple, DraftVerdict] = {}
        self._memory: dict[tuple, int] = {}
        self._job = ""
        self._over = False

    def verdict(self, failure: RecordedFailure) -> DraftVerdict:
        """The draft's verdict on ``failure`` (cached; see the class docstring)."""
        return self.verdict_of(verdict_key(failure))

    def verdict_of(self, key: VerdictKey) -> DraftVerdict:
        """The draft's verdict on failures with ``key`` (decided once per key)."""
        cached = self._verdicts.get(key)
        if cached is None:
            cached = self._verdicts[key] = self._decide(key)
        return cached

    def _decide(self, key: VerdictKey) -> DraftVerdict:
        if key.job_ended:
            return DraftVerdict(NOT_RETRIED, False, None, None, "the job had already ended", None)
        if (key.category, key.subcategory) in self.never_retried:
            reason = f"{key.category} / {key.subcategory} failures are never retried"
            return DraftVerdict(NOT_RETRIED, False, None, None, reason, None)
        decision = decide(
            failure=Failure(
                category=key.category,
                subcategory=key.subcategory,
                retries_used=key.retries_used,
                gang_cardinality=2 if key.gang else 1,
                fail_fast=key.fail_fast,
                lease_expired=key.lease_expired,
            ),
            queue_policy_names=self._names,
            policies=self._policies,
            settings=self.settings,
        )
        label = decision.label or (GANG_SKIPPED if decision.gang_skipped else NOT_RETRIED)
        mutation = decision.mutation
        delay = getattr(decision, "retry_delay_seconds", None)
        return DraftVerdict(
            label=label,
            retry=decision.retry,
            rule_index=decision.rule_index,
            memory_bump=mutation.memory if mutation is not None else None,
            reason=decision.reason,
            retry_delay_seconds=float(delay) if delay is not None else None,
        )

    def _extra_memory(self, memory: float, kind: str, bump: Any) -> float:
        """The memory request of the added attempt: the failed run's, grown by the bump."""
        if bump is None or memory <= 0:
            return memory
        key = (int(memory), bump, kind)
        grown = self._memory.get(key)
        if grown is None:
            grown = self._memory[key] = bumped_memory(int(memory), bump, kind)
        return float(grown)

    def replay(self, failure: RecordedFailure) -> Replay:
        """Replay one failure (the next one of its job, in run order)."""
        if failure.job_id != self._job:
            self._job, self._over = failure.job_id, False
        verdict = self.verdict(failure)
        was = failure.recorded == LABEL_RETRY
        reached = not self._over
        if not verdict.retry:
            self._over = True
        if was == verdict.retry:
            return Replay(failure, verdict, "", reached)
        if verdict.retry:
            if not reached:
                return Replay(failure, verdict, FAIL_TO_RETRY, False)
            seconds = max(failure.seconds, 0.0)
            return Replay(
                failure,
                verdict,
                FAIL_TO_RETRY,
                True,
                1,
                failure.cpu * seconds,
                self._extra_memory(failure.memory, failure.memory_kind, verdict.memory_bump)
                * seconds,
                failure.gpu * seconds,
            )
        if not reached:
            return Replay(failure, verdict, RETRY_TO_FAIL, False)
        return Replay(
            failure,
            verdict,
            RETRY_TO_FAIL,
            True,
            failure.later_runs,
            failure.later_cpu,
            failure.later_memory,
            failure.later_gpu,
        )

    def replay_group(self, group: RecordedGroup) -> Replay:
        """Replay a group of failures: what :meth:`replay` answers for each of them, summed.
        Order does not matter: the group says itself whether its failures are reached."""
        verdict = self.verdict_of(group.key)
        count, reached = group.count, group.reached
        if (group.recorded == LABEL_RETRY) == verdict.retry:
            return Replay(group, verdict, "", reached, count=count)
        if verdict.retry:
            if not reached:
                return Replay(group, verdict, FAIL_TO_RETRY, False, count=count)
            memory = self._extra_memory(group.memory, group.memory_kind, verdict.memory_bump)
            return Replay(
                group,
                verdict,
                FAIL_TO_RETRY,
                True,
                count,
                group.cpu_seconds,
                memory * group.seconds,
                group.gpu_seconds,
                count,
            )
        if not reached:
            return Replay(group, verdict, RETRY_TO_FAIL, False, count=count)
        return Replay(
            group,
            verdict,
            RETRY_TO_FAIL,
            True,
            group.later_runs,
            group.later_cpu,
            group.later_memory,
            group.later_gpu,
            count,
        )
