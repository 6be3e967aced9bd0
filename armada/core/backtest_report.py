"""The backtest's sums: replays (``core.backtest``) added up per queue and overall, the flips
by category and rule, a sample, and the estimate of how many added attempts would succeed.

``Tally`` keeps costs as milli-unit-second sums and counts added attempts per category, so
that the estimate can be made once the retry yield is known (it may be read meanwhile).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from armada.core.backtest import FAIL_TO_RETRY, RETRY_TO_FAIL, Replay, cost_of_sums, rule_number
from armada.core.resource_cost import Cost

ESTIMATE_NOTE = (
    "estimatedSucceeded is an estimate, not a replay: each failure the draft would newly "
    "retry is counted as the share of jobs retried for the same category in this range "
    "that went on to succeed (the 'yield' list); categories with no retried jobs use the "
    "share over all categories, and 0 when nothing was retried."
)


def success_rates(yield_rows: Iterable[Mapping[str, Any]]) -> tuple[dict[str, float], float]:
    """Per category, the share of retried jobs that then succeeded, and the share over all
    categories (0 when nothing was retried). Rows are those of ``services.retry_yield``."""
    retried: dict[str, int] = {}
    succeeded: dict[str, int] = {}
    for row in yield_rows:
        category = str(row.get("category", ""))
        retried[category] = retried.get(category, 0) + int(row.get("retriedJobs") or 0)
        succeeded[category] = succeeded.get(category, 0) + int(row.get("succeededJobs") or 0)
    rates = {c: succeeded[c] / n for c, n in retried.items() if n > 0}
    total = sum(retried.values())
    return rates, (sum(succeeded.values()) / total if total else 0.0)


@dataclass(slots=True)
class Tally:
    """The sums of one queue (or of all): ``examined == unchanged + retry_to_fail +
    fail_to_retry`` always holds. Costs are kept as milli-unit-second sums (``extra_*``,
    ``saved_*``) and read as :class:`Cost` through ``extra_cost``/``saved_cost``."""

    examined: int = 0
    unchanged: int = 0
    retry_to_fail: int = 0
    fail_to_retry: int = 0
    extra_attempts: int = 0
    saved_attempts: int = 0
    extra_cpu: float = 0.0
    extra_memory: float = 0.0
    extra_gpu: float = 0.0
    saved_cpu: float = 0.0
    saved_memory: float = 0.0
    saved_gpu: float = 0.0
    # the added attempts per category of their failure, for the estimate
    extra_by_category: dict[str, int] = field(default_factory=dict)

    @property
    def extra_cost(self) -> Cost:
        return cost_of_sums(self.extra_cpu, self.extra_memory, self.extra_gpu)

    @property
    def saved_cost(self) -> Cost:
        return cost_of_sums(self.saved_cpu, self.saved_memory, self.saved_gpu)

    def add(self, replay: Replay) -> None:
        count = replay.count
        self.examined += count
        flip = replay.flip
        if not flip:
            self.unchanged += count
        elif flip == RETRY_TO_FAIL:
            self.retry_to_fail += count
            if replay.reached:
                self.saved_attempts += replay.attempts
                self.saved_cpu += replay.cpu
                self.saved_memory += replay.memory
                self.saved_gpu += replay.gpu
        else:
            self.fail_to_retry += count
            if replay.reached:
                self.extra_attempts += replay.attempts
                self.extra_cpu += replay.cpu
                self.extra_memory += replay.memory
                self.extra_gpu += replay.gpu
                category = replay.failure.category
                by_category = self.extra_by_category
                by_category[category] = by_category.get(category, 0) + replay.attempts

    def estimated_succeeded(self, rates: Mapping[str, float], default_rate: float) -> float:
        """How many added attempts would probably succeed: each counts as the success rate
        of its failure's category (``default_rate`` for a category without one)."""
        return float(sum(n * rates.get(c, default_rate) for c, n in self.extra_by_category.items()))

    def as_dict(
        self, rates: Mapping[str, float] | None = None, default_rate: float = 0.0
    ) -> dict[str, Any]:
        estimate = self.estimated_succeeded(rates or {}, default_rate)
        return {
            "examined": self.examined,
            "unchanged": self.unchanged,
            "retryToFail": self.retry_to_fail,
            "failToRetry": self.fail_to_retry,
            "extraAttempts": self.extra_attempts,
            "savedAttempts": self.saved_attempts,
            "extraCost": self.extra_cost.as_dict(),
            "savedCost": self.saved_cost.as_dict(),
            "estimatedSucceeded": round(estimate, 3),
        }


@dataclass
class Report:
    """Everything summed over a stream of replays: overall, per queue, the flips by
    (from, to, category, subcategory, recorded rule, draft rule), and a sample in which
    flipped failures come first. ``rates`` and ``default_rate`` (:func:`success_rates`)
    turn the added attempts into the estimate; they may be set after the replays."""

    sample_size: int = 20
    rates: dict[str, float] = field(default_factory=dict)
    default_rate: float = 0.0
    overall: Tally = field(default_factory=Tally)
    queues: dict[str, Tally] = field(default_factory=dict)
    flips: dict[tuple, int] = field(default_factory=dict)
    flipped_sample: list[Replay] = field(default_factory=list)
    unchanged_sample: list[Replay] = field(default_factory=list)

    def add(self, replay: Replay) -> None:
        """Count a replay (one failure's, or a group's) and keep it in the sample while
        there is room; :meth:`count` and :meth:`add_sample` do each part alone."""
        self.count(replay)
        self.add_sample(replay)

    def count(self, replay: Replay) -> None:
        """Add a replay to the sums and the flips (not to the sample)."""
        failure = replay.failure
        self.overall.add(replay)
        tally = self.queues.get(failure.queue)
        if tally is None:
            tally = self.queues[failure.queue] = Tally()
        tally.add(replay)
        if replay.flip:
            to_retry = replay.flip == FAIL_TO_RETRY
            key = (
                "fail" if to_retry else "retry",
                "retry" if to_retry else "fail",
                failure.category,
                failure.subcategory,
                rule_number(failure.recorded_rule),
                rule_number(replay.verdict.rule_index),
            )
            self.flips[key] = self.flips.get(key, 0) + replay.count

    def add_sample(self, replay: Replay) -> None:
        """Keep one failure's replay in the sample if there is room (flipped ones first)."""
        chosen = self.flipped_sample if replay.flip else self.unchanged_sample
        if len(chosen) < self.sample_size:
            chosen.append(replay)

    def add_all(self, replays: Iterable[Replay]) -> Report:
        for replay in replays:
            self.add(replay)
        return self

    def ensure_queues(self, names: Sequence[str]) -> None:
        """Show ``names`` even when none of their failures were in range."""
        for name in names:
            self.queues.setdefault(name, Tally())

    def flips_list(self) -> list[dict[str, Any]]:
        rows = [
            {
                "from": key[0],
                "to": key[1],
                "category": key[2],
                "subcategory": key[3],
                "recordedRule": key[4],
                "draftRule": key[5],
                "count": count,
            }
            for key, count in self.flips.items()
        ]
        rows.sort(
            key=lambda r: (
                -r["count"],
                r["from"],
                r["category"],
                r["subcategory"],
                r["recordedRule"] or 0,
                r["draftRule"] or 0,
            )
        )
        return rows

    def sample(self) -> list[dict[str, Any]]:
        chosen = (self.flipped_sample + self.unchanged_sample)[: self.sample_size]
        return [sample_row(r) for r in chosen]

    def document(self) -> dict[str, Any]:
        """The ``overall``, ``queues``, ``flips`` and ``sample`` parts of the backtest."""
        rates, default = self.rates, self.default_rate
        return {
            "overall": self.overall.as_dict(rates, default),
            "queues": [
                {"queue": name, **self.queues[name].as_dict(rates, default)}
                for name in sorted(self.queues)
            ],
            "flips": self.flips_list(),
            "sample": self.sample(),
        }


def sample_row(replay: Replay) -> dict[str, Any]:
    failure = replay.failure
    return {
        "jobId": failure.job_id,
        "runId": failure.run_id,
        "queue": failure.queue,
        "jobSet": failure.job_set,
        "category": failure.category,
        "subcategory": failure.subcategory,
        "exitCode": failure.exit_code,
        "condition": failure.condition,
        "recorded": failure.recorded,
        "draft": replay.verdict.label,
        "reason": replay.verdict.reason,
        "retryDelaySeconds": replay.verdict.retry_delay_seconds,
    }
