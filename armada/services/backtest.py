"""The backtest: replay recorded failures under a draft retry policy. Reads only.

The draft (a policy document, or a stored policy at a version) is validated as a save
validates it. Every decided genuine failure (a failed run or an expired lease) of the
queues read, finished in the range, is replayed: the pure core decides each distinct
:class:`~armada.core.backtest.VerdictKey` of the range once with ``core.retry.decide``, the
database groups the failures by what the replay reads given those verdicts
(``services.backtest_rows``), the core replays each group (``core.backtest``) and sums the
answers (``core.backtest_report``); a sample of failures is read one by one. The retry yield
of the same range, read in the same snapshot (from its rollup where that is complete:
``services.retry_yield_rollup``), turns the newly retried failures into an estimate of how
many would have succeeded. Nothing is written: not a row, not a counter.

Which queues are replayed (``replayed`` in the answer says which, and why):
- the queues named in ``queues``;
- else the queues that use the policy (it is the first they name: only the first is
  evaluated), so that a policy's backtest does not count failures of queues it never
  decides for;
- else (no queue uses it yet: a new policy) every queue the actor may watch.
Access: only the queues the actor may watch are read. A queue named in ``queues`` that the
actor may not watch is refused (PermissionDenied, naming it); an unknown one is NotFound; a
queue that uses the policy but that the actor may not watch is left out, and counted.
The range is at most :data:`MAX_RANGE` long.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils.dateparse import parse_datetime

from armada.core.backtest import Replayer
from armada.core.backtest_report import ESTIMATE_NOTE, Report, success_rates
from armada.core.duration import parse_duration
from armada.core.errors import FieldError, ValidationFailed
from armada.core.policy import RetryPolicy as PolicySpec
from armada.core.policy import parse_policy
from armada.core.retry import RetrySettings
from armada.models import Queue, RetryPolicy, RetryPolicyVersion
from armada.services.authz import can_on_queue, watchable_queues
from armada.services.backtest_rows import (
    describe_runs,
    recorded_groups,
    sample_failures,
    verdict_keys,
)
from armada.services.errors import NotFound, PermissionDenied
from armada.services.failures import NEVER_RETRIED
from armada.services.policies import policy_spec, policy_validate
from armada.services.retry_yield_rollup import retry_yield_read
from armada.services.side_reads import snapshot

MAX_RANGE = timedelta(days=90)
NO_CAP = 2**31  # the cap when none is configured: only the draft's retryLimit bounds
MAX_SAMPLE = 200


def backtest(
    *,
    actor: Any,
    draft: Mapping[str, Any] | None = None,
    policy: str = "",
    version: int | None = None,
    since: datetime,
    until: datetime,
    queues: Sequence[str] = (),
    job_sets: Sequence[str] = (),
    now: datetime,
    sample_size: int = 20,
) -> dict[str, Any]:
    """Replay every recorded genuine failure in ``[since, until)`` under a policy and compare.

    Exactly one of ``draft`` (a policy document as parsed from YAML/JSON, validated exactly
    as a save validates it) or ``policy`` (a stored policy's name, optionally at
    ``version``) is given. Raises ``ValidationFailed`` with field errors (invalid draft,
    ``since`` after ``until``, a range longer than the limit, unknown policy/version) and
    ``PermissionDenied`` for a named queue the actor may not view. Without ``queues``, only
    the queues the actor may view are read. Writes nothing.

    Returns a JSON-ready document: ``policy`` {name, version, source, globalMaxRetries (the
    scheduler's cap the draft was replayed under; null for none)}, ``range`` {since,
    until}, ``replayed`` {basis: named|policy|all, queues: the names replayed (null: every
    queue), notVisible: queues using the policy the actor may not watch}, ``overall``
    SUMMARY, ``queues`` [{queue, ...SUMMARY}] sorted by name, ``flips``
    [{from, to, category, subcategory, recordedRule, draftRule, count}] (rules from 1, most
    first), ``sample`` [{jobId, runId, queue, jobSet, category, subcategory, recorded, draft,
    reason, retryDelaySeconds, exitCode, condition, url}] (flipped failures first),
    ``yield`` [{category, rule, retriedJobs, succeededJobs, succeededAfter}], and
    ``estimateNote``. SUMMARY is {examined,
    unchanged, retryToFail, failToRetry, extraAttempts, savedAttempts, extraCost, savedCost,
    estimatedSucceeded}; a cost is {coreHours, memoryGibHours, gpuHours}.
    """
    spec, source = _policy(draft=draft, policy=policy, version=version)
    _check_range(since, until, sample_size)
    read, replayed = _scope(actor, queues, spec.name)
    job_sets = _names("jobSets", job_sets)
    cap = global_cap()
    replayer = Replayer(
        policy=spec,
        settings=RetrySettings(enabled=True, global_max_retries=cap),
        never_retried=NEVER_RETRIED,
    )
    report = Report(sample_size=sample_size)
    report.ensure_queues(list(read) if replayed["basis"] != "all" else [])
    with snapshot():
        keys = verdict_keys(since=since, until=until)
        verdicts = {key: replayer.verdict_of(key).retry for key in keys}
        scope = {"since": since, "until": until, "queues": read, "job_sets": job_sets, "now": now}
        for group in recorded_groups(**scope, verdicts=verdicts):
            report.count(replayer.replay_group(group))
        for flipped in (True, False):
            room = sample_size - len(report.flipped_sample) - len(report.unchanged_sample)
            for failure in sample_failures(**scope, verdicts=verdicts, flipped=flipped, limit=room):
                report.add_sample(replayer.replay(failure))
        yield_rows = retry_yield_read(since=since, until=until, queues=read)  # same snapshot
    report.rates, report.default_rate = success_rates(yield_rows)
    body = report.document()
    described = describe_runs([row["runId"] for row in body["sample"]])
    for row in body["sample"]:
        job_set, exit_code, condition = described.get(row["runId"], ("", None, ""))
        row.update(jobSet=job_set, exitCode=exit_code, condition=condition)
        row["url"] = reverse("lookout:job", args=[row["jobId"]])
    return {
        "policy": {
            "name": spec.name,
            "version": spec.version if source == "stored" else None,
            "source": source,
            "globalMaxRetries": cap if cap < NO_CAP else None,
        },
        "range": {"since": since.isoformat(), "until": until.isoformat()},
        "replayed": replayed,
        **body,
        "yield": yield_rows,
        "estimateNote": ESTIMATE_NOTE,
    }


def global_cap() -> int:
    """The scheduler's ``globalMaxRetries`` (0, the kill switch, included), under which the
    draft is replayed; with none configured (the engine off), no cap beyond the draft's own
    ``retryLimit``."""
    configured = settings.ARMADA.scheduling.retry_policy.global_max_retries
    return NO_CAP if configured is None else configured


def backtest_range(*, since: Any, until: Any = None, now: datetime) -> tuple[datetime, datetime]:
    """``since`` and ``until`` as written by people: ``since`` a duration back from ``now``
    (``"7d"``, ``"36h"``) or a date and time (ISO 8601, with a time zone), ``until`` a date
    and time or nothing (``now``). Raises ValidationFailed naming the field."""
    end = now if until in (None, "") else _moment("until", until)
    if since in (None, ""):
        raise ValidationFailed.one("since", "is required: a duration such as 7d, or a time")
    if isinstance(since, datetime):
        return _moment("since", since), end
    text = str(since).strip()
    try:
        seconds = parse_duration(text)
    except ValueError:
        return _moment("since", text), end
    return end - timedelta(seconds=seconds), end


def _moment(field_name: str, value: Any) -> datetime:
    try:
        moment = value if isinstance(value, datetime) else parse_datetime(str(value).strip())
    except ValueError:  # well formed, but no such day or hour
        moment = None
    if moment is None:
        raise ValidationFailed.one(
            field_name,
            f"{value!r} is neither a duration (7d, 36h) nor a date and time (2026-01-31T12:00:00Z)",
        )
    if moment.tzinfo is None:
        raise ValidationFailed.one(field_name, "must say its time zone (Z, +01:00, ...)")
    return moment


# --- input ------------------------------------------------------------------------------------


def _policy(
    *, draft: Mapping[str, Any] | None, policy: str, version: int | None
) -> tuple[PolicySpec, str]:
    """The policy to replay and where it came from (``draft`` or ``stored``)."""
    if draft is not None and policy:
        raise ValidationFailed(
            [
                FieldError("draft", "give a draft or a stored policy's name, not both"),
                FieldError("policy", "give a draft or a stored policy's name, not both"),
            ]
        )
    if draft is not None:
        return policy_validate(data=draft), "draft"
    if not policy:
        raise ValidationFailed.one("draft", "give a draft policy, or a stored policy's name")
    if version is None:
        row = RetryPolicy.objects.filter(name=policy).first()
        if row is None:
            raise ValidationFailed.one("policy", f"retry policy {policy!r} does not exist")
        return policy_spec(row), "stored"
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValidationFailed.one("version", "must be a whole number, 1 or more")
    saved = (
        RetryPolicyVersion.objects.filter(policy__name=policy, version=version).first()
        if RetryPolicy.objects.filter(name=policy).exists()
        else None
    )
    if saved is None:
        if not RetryPolicy.objects.filter(name=policy).exists():
            raise ValidationFailed.one("policy", f"retry policy {policy!r} does not exist")
        raise ValidationFailed.one("version", f"retry policy {policy!r} has no version {version}")
    return dataclasses.replace(parse_policy(saved.document), version=version), "stored"


def _check_range(since: datetime, until: datetime, sample_size: int) -> None:
    errors: list[FieldError] = []
    for name, value in (("since", since), ("until", until)):
        if not isinstance(value, datetime) or value.tzinfo is None:
            errors.append(FieldError(name, "must be a date and time with a time zone"))
    if errors:
        raise ValidationFailed(errors)
    if since >= until:
        raise ValidationFailed.one("since", "must be before until")
    if until - since > MAX_RANGE:
        days = (until - since).total_seconds() / 86400
        raise ValidationFailed.one(
            "since",
            f"the range is {days:.0f} days long; a backtest reads at most "
            f"{MAX_RANGE.days} days (narrow since/until)",
        )
    if isinstance(sample_size, bool) or not isinstance(sample_size, int):
        raise ValidationFailed.one("sampleSize", "must be a whole number")
    if not 0 <= sample_size <= MAX_SAMPLE:
        raise ValidationFailed.one("sampleSize", f"must be between 0 and {MAX_SAMPLE}")


def _names(field_name: str, values: Sequence[str]) -> list[str]:
    names = list(dict.fromkeys(values or ()))
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise ValidationFailed.one(f"{field_name}[{i}]", "must be a non-empty name")
    return names


def _scope(actor: Any, queues: Sequence[str], policy: str) -> tuple[list[str] | None, dict]:
    """The queues to read (None: every queue) and the answer's ``replayed``; see the module
    docstring."""
    named = _queues_read(actor, queues)
    if queues:
        return named, {"basis": "named", "queues": named, "notVisible": 0}
    using = [
        q for q in Queue.objects.order_by("name") if q.retry_policies[:1] == [policy] and policy
    ]
    if using:
        visible = [q.name for q in using if can_on_queue(actor, q, "watch")]
        hidden = len(using) - len(visible)
        return visible, {"basis": "policy", "queues": visible, "notVisible": hidden}
    return named, {"basis": "all", "queues": named, "notVisible": 0}


def _queues_read(actor: Any, queues: Sequence[str]) -> list[str] | None:
    """The queues to read (None: every queue). Named queues must exist and be watchable."""
    names = _names("queues", queues)
    if names:
        rows = {q.name: q for q in Queue.objects.filter(name__in=names)}
        for name in names:
            row = rows.get(name)
            if row is None:
                raise NotFound(f"queue {name!r} does not exist")
            if not can_on_queue(actor, row, "watch"):
                raise PermissionDenied(
                    f"user {getattr(actor, 'username', '') or 'anonymous'!r} may not view "
                    f"queue {name!r}: a backtest reads only queues you may watch (the "
                    "'watch' permission on the queue or the global 'watch_all_events')"
                )
        return names
    return watchable_queues(actor)
