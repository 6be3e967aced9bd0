"""Rendering for people (tables) and for programs (``-o yaml`` / ``-o json``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

OUTPUT_FORMATS = ("table", "yaml", "json")
DOCUMENT_FORMATS = ("yaml", "json")  # for one document: a retry policy, a job with its runs

# (header, queue key) in display order; ``permissions`` and the timestamps are in -o yaml|json.
QUEUE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("NAME", "name"),
    ("PRIORITY FACTOR", "priorityFactor"),
    ("CORDONED", "cordoned"),
    ("OWNERS", "owners"),
    ("GROUP OWNERS", "groupOwners"),
    ("RETRY POLICIES", "retryPolicies"),
    ("LABELS", "labels"),
)


def cell(value: Any) -> str:
    """One value as table text: lists comma-joined, mappings as ``k=v``, empty as ``-``."""
    if value is None or value == "" or value == [] or value == {}:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ",".join(cell(v) for v in value)
    return str(value)


def render_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces, no trailing blanks."""
    rows = [list(r) for r in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))
    lines = []
    for row in [list(headers), *rows]:
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def render_queues_table(queues: Sequence[Mapping[str, Any]]) -> str:
    headers = [h for h, _ in QUEUE_COLUMNS]
    rows = [[cell(q.get(key)) for _, key in QUEUE_COLUMNS] for q in queues]
    return render_table(headers, rows)


def render_data(data: Any, fmt: str) -> str:
    """``data`` as YAML or JSON text, keys in the server's order, without a final newline."""
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False)
    if fmt == "yaml":
        from armada.cli.yamltext import dump

        return dump(data, allow_unicode=True).rstrip("\n")
    raise ValueError(f"unknown output format {fmt!r}")


def render_queues(queues: Sequence[Mapping[str, Any]], fmt: str) -> str:
    return render_queues_table(queues) if fmt == "table" else render_data(list(queues), fmt)


def render_queue(queue: Mapping[str, Any], fmt: str) -> str:
    """One queue: its row, then its limits by priority class when it has any."""
    if fmt != "table":
        return render_data(dict(queue), fmt)
    table = render_queues_table([queue])
    limits = queue.get("resourceLimitsByPriorityClassName")
    if not isinstance(limits, Mapping) or not limits:
        return table
    lines = [f"  {name}: {class_limits_text(entry)}" for name, entry in limits.items()]
    return "\n".join([table, "", "Resource limits by priority class:", *lines])


def _percent(fraction: Any) -> str:
    return f"{fraction * 100:.4g}%" if isinstance(fraction, int | float) else str(fraction)


def _fractions_text(fractions: Any) -> str:
    if not isinstance(fractions, Mapping):
        return ""
    return ", ".join(f"{resource} {_percent(f)}" for resource, f in fractions.items())


def class_limits_text(entry: Any) -> str:
    """A queue's limits for one priority class, for people: ``cpu 30%, memory 30%; in pool
    gpu-pool: cpu 10%`` (``none`` when it sets no fraction)."""
    if not isinstance(entry, Mapping):
        return str(entry)
    parts = [_fractions_text(entry.get("maximumResourceFraction"))]
    by_pool = entry.get("maximumResourceFractionByPool")
    for pool, pool_entry in by_pool.items() if isinstance(by_pool, Mapping) else ():
        if isinstance(pool_entry, Mapping):
            text = _fractions_text(pool_entry.get("maximumResourceFraction"))
            parts.append(f"in pool {pool}: {text or 'none'}")
    return "; ".join(p for p in parts if p) or "none"


def timestamp_cell(value: Any) -> str:
    """An ISO 8601 time as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC; other text is shown as it is."""
    if not isinstance(value, str) or not value:
        return cell(value)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%dT%H:%M:%S")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


POLICY_HEADERS = ("NAME", "RETRY LIMIT", "DEFAULT ACTION", "RULES", "VERSION", "UPDATED")


def render_policies_table(policies: Sequence[Mapping[str, Any]]) -> str:
    """One row per retry policy; RULES is the number of rules (the rules are in -o yaml)."""
    rows = []
    for policy in policies:
        rules = policy.get("rules")
        rows.append(
            [
                cell(policy.get("name")),
                cell(policy.get("retryLimit")),
                cell(policy.get("defaultAction")),
                str(len(rules)) if isinstance(rules, list) else "-",
                cell(policy.get("version")),
                timestamp_cell(policy.get("updatedAt")),
            ]
        )
    return render_table(POLICY_HEADERS, rows)


def render_policies(policies: Sequence[Mapping[str, Any]], fmt: str) -> str:
    return render_policies_table(policies) if fmt == "table" else render_data(list(policies), fmt)


JOB_SET_STATES = (
    "queued",
    "leased",
    "pending",
    "running",
    "succeeded",
    "failed",
    "cancelled",
    "preempted",
    "rejected",
)


def render_job_sets(job_sets: Sequence[Mapping[str, Any]], fmt: str) -> str:
    """One row per job set: its job count in each state, the total, and whether it is
    still active."""
    if fmt != "table":
        return render_data(list(job_sets), fmt)
    headers = ["JOB SET", *(s.upper() for s in JOB_SET_STATES), "TOTAL", "ACTIVE"]
    rows = []
    for job_set in job_sets:
        counts = job_set.get("counts") or {}
        rows.append(
            [
                cell(job_set.get("jobSetId")),
                *(str(counts.get(s, 0)) for s in JOB_SET_STATES),
                cell(job_set.get("total")),
                cell(job_set.get("active")),
            ]
        )
    return render_table(headers, rows)


EXECUTOR_HEADERS = (
    "ID",
    "POOL",
    "BACKEND",
    "CORDONED",
    "ALIVE",
    "NODES",
    "LAST HEARTBEAT",
    "CORDON REASON",
)


def render_executors(executors: Sequence[Mapping[str, Any]], fmt: str) -> str:
    if fmt != "table":
        return render_data(list(executors), fmt)
    rows = [
        [
            cell(e.get("id")),
            cell(e.get("pool")),
            cell(e.get("backend")),
            cell(e.get("cordoned")),
            cell(e.get("alive")),
            cell(e.get("nodeCount")),
            timestamp_cell(e.get("lastHeartbeat")),
            cell(e.get("cordonReason")),
        ]
        for e in executors
    ]
    return render_table(EXECUTOR_HEADERS, rows)


NODE_HEADERS = ("NODE", "POOL", "UNSCHEDULABLE", "ALLOCATABLE", "LABELS")


def resources_cell(values: Any) -> str:
    """Resources as people write them, ``cpu=4,memory=8Gi``: the API gives a node's
    allocatable in milli-units (1000 = one cpu, one byte or one device); a value that is
    already a quantity string is shown as it is."""
    if not isinstance(values, Mapping):
        return cell(values)
    from armada.core.quantity_text import readable_quantity

    shown = {
        name: readable_quantity(amount, str(name))
        if isinstance(amount, int) and not isinstance(amount, bool)
        else amount
        for name, amount in values.items()
    }
    return cell(shown)


def render_executor(executor: Mapping[str, Any], fmt: str) -> str:
    """The executor's row, a blank line, then one row per node."""
    if fmt != "table":
        return render_data(dict(executor), fmt)
    nodes = executor.get("nodes") or []
    rows = [
        [
            cell(n.get("name")),
            cell(n.get("pool")),
            cell(n.get("unschedulable")),
            resources_cell(n.get("allocatable")),
            cell(n.get("labels")),
        ]
        for n in nodes
    ]
    table = render_table(NODE_HEADERS, rows) if rows else "No nodes."
    return render_executors([executor], "table") + "\n\n" + table


ROUND_HEADERS = ("ROUND", "STARTED", "DURATION MS", "CONSIDERED", "LEASED", "UNSCHEDULABLE")


def render_rounds_table(rounds: Sequence[Mapping[str, Any]]) -> str:
    """Scheduling rounds (as the server reports them), one row each."""
    rows = [
        [
            cell(r.get("id")),
            timestamp_cell(r.get("startedAt")),
            cell(r.get("durationMs")),
            cell(r.get("considered")),
            cell(r.get("leased")),
            cell(r.get("unschedulable")),
        ]
        for r in rounds
    ]
    return render_table(ROUND_HEADERS, rows)


def render_scheduling(record: Mapping[str, Any], fmt: str) -> str:
    """Why a job waits, for people: its state, the reason, then the latest rounds."""
    if fmt != "table":
        return render_data(dict(record), fmt)
    state = record.get("state")
    reason = record.get("pendingReason")
    lines = [f"Job {record.get('jobId')} ({record.get('queue')}/{record.get('jobSetId')}): {state}"]
    if isinstance(reason, Mapping):
        lines.append(
            f"Pending: {reason.get('reason')} "
            f"(round {reason.get('roundId')}, {timestamp_cell(reason.get('at'))})"
        )
    elif state == "queued":
        lines.append("Pending: no scheduling round has considered this job yet.")
    else:
        lines.append("Not pending: the job is not queued.")
    rounds = record.get("latestRounds") or []
    if rounds:
        lines += ["", "Latest rounds:", render_rounds_table(rounds)]
    return "\n".join(lines)


def format_error(message: str, errors: Iterable[tuple[str, str]] = ()) -> str:
    """``Error: <message>`` then one ``  <field>: <message>`` line per field error."""
    lines = [f"Error: {message}"]
    for field_name, field_message in errors:
        lines.append(f"  {field_name}: {field_message}" if field_name else f"  {field_message}")
    return "\n".join(lines)
