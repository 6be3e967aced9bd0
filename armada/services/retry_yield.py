"""Retry yield: of the jobs that were retried, how many then succeeded, and after how many
retries in all.

Definitions (docs/retry-cost.md has them for users):
- A **retried failure** is a run whose failure the scheduler decided to retry (``retryable``
  true; its decision trail names the rule that matched, ``ruleIndex``, 0-based, or none when
  the policy's ``defaultAction`` retried it).
- Rows are per failure category and rule (``rule`` numbered from 1, ``None`` for the
  defaultAction). A job belongs to a row once, in the range that holds its **first** retried
  failure of that category and rule (ordered by finish time, then run id): ranges that follow
  each other never count a job twice, so their rows add up, and Lookout's rollup
  (``services.retry_cost``) gives the same numbers for whole hours.
- ``retriedJobs``: those jobs; ``succeededJobs``: those of them whose job has succeeded by
  now; ``succeededAfter``: the succeeded ones by the job's retries in all (``Job.retry_count``,
  as text keys ``"1"``, ``"2"``...). A job still queued or running counts as retried and not
  (yet) succeeded.

One aggregate query: the retried runs finished in ``[since, until)`` (the partial index
``run_retried_idx`` on ``finished_at`` over retried runs only), less those with an earlier
retried failure of the same category and rule in the same job (a probe of the job's runs by
``run_lookout_latest_idx``), joined to their jobs for state and retry count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db.models import CharField, Count, Exists, F, OuterRef, Q, QuerySet, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce

from armada.core.states import JobState
from armada.models import Run


def rule_of_key(rule_index: object) -> int | None:
    """The trail's 0-based ``ruleIndex`` (as read from the JSON: a number, its text, or
    ``""`` for none) as a rule number from 1, or None for the defaultAction."""
    if rule_index is None or rule_index in ("", "null"):
        return None
    return int(rule_index) + 1


def _rule_key():
    """The trail's ``ruleIndex`` as text, ``""`` when none, so that two "none" compare equal."""
    return Coalesce(KeyTextTransform("ruleIndex", "decision"), Value(""), output_field=CharField())


def first_retried_failures(
    *, since: datetime, until: datetime, queues: Sequence[str] | None = None
) -> QuerySet:
    """The retried runs finished in ``[since, until)`` (of ``queues``; all when None) that
    are their job's first retried failure of their category and rule, annotated with
    ``rule_key`` (the 0-based rule index as text, ``""`` for the defaultAction)."""
    runs = Run.objects.filter(retryable=True, finished_at__gte=since, finished_at__lt=until)
    if queues is not None:
        runs = runs.filter(job__queue_id__in=list(queues))
    earlier = (
        Run.objects.filter(
            job_id=OuterRef("job_id"),
            retryable=True,
            failure_category=OuterRef("failure_category"),
        )
        .annotate(rule_key=_rule_key())
        .filter(rule_key=OuterRef("rule_key"))
        .filter(
            Q(finished_at__lt=OuterRef("finished_at"))
            | Q(finished_at=OuterRef("finished_at"), id__lt=OuterRef("id"))
        )
    )
    return runs.annotate(rule_key=_rule_key()).filter(~Exists(earlier))


def retry_yield(
    *, since: datetime, until: datetime, queues: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Per (category, rule that retried), of the jobs first retried for it in
    ``[since, until)`` (in ``queues``; all queues when None), how many then succeeded and
    after how many retries in all. Rows are sorted by category, then rule (the
    defaultAction last). The module docstring has the exact definitions."""
    return yield_rows(yield_groups(since=since, until=until, queues=queues))


def yield_groups(
    *, since: datetime, until: datetime, queues: Sequence[str] | None = None
) -> list[tuple[str, int | None, int, int, int]]:
    """The groups :func:`yield_rows` sums, read from the runs: ``(category, rule, retries in
    all, jobs retried, jobs succeeded)``."""
    grouped = (
        first_retried_failures(since=since, until=until, queues=queues)
        .values("failure_category", "rule_key", retries=F("job__retry_count"))
        .annotate(
            retried=Count("id"),
            succeeded=Count("id", filter=Q(job__state=JobState.SUCCEEDED)),
        )
        .order_by()
    )
    return [
        (
            g["failure_category"],
            rule_of_key(g["rule_key"]),
            g["retries"],
            g["retried"],
            g["succeeded"],
        )
        for g in grouped
    ]


def yield_rows(groups: Iterable[tuple[str, int | None, int, int, int]]) -> list[dict[str, Any]]:
    """The yield's rows from groups of ``(category, rule, retries in all, jobs retried, jobs
    succeeded)``: one row per (category, rule), its counts summed and ``succeededAfter``
    keyed by the retries in all (as text, in numeric order), rows by category then rule
    (the defaultAction's last)."""
    rows: dict[tuple[str, int | None], dict[str, Any]] = {}
    for category, rule, retries, retried, succeeded in groups:
        row = rows.setdefault(
            (category, rule),
            {
                "category": category,
                "rule": rule,
                "retriedJobs": 0,
                "succeededJobs": 0,
                "succeededAfter": {},
            },
        )
        row["retriedJobs"] += retried or 0
        if succeeded:
            row["succeededJobs"] += succeeded
            after = row["succeededAfter"]
            after[str(retries)] = after.get(str(retries), 0) + succeeded
    out = [rows[key] for key in sorted(rows, key=yield_order)]
    for row in out:
        row["succeededAfter"] = sorted_after(row["succeededAfter"])
    return out


def yield_order(key: tuple[str, int | None]) -> tuple[str, bool, int]:
    category, rule = key
    return (category, rule is None, rule or 0)


def sorted_after(after: dict[str, int]) -> dict[str, int]:
    """``succeededAfter`` with its keys in numeric order."""
    return {k: after[k] for k in sorted(after, key=int)}
