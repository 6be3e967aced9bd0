"""``armadactl backtest retry-policy``: replay the recorded failures under a draft policy (a
file, or a stored policy at a version) and print what would have changed. Reads only.

The default output is a few readable tables: per queue (and all), the decisions that stay
and flip, the attempts added and saved and what they cost; the flips by category and rule;
a sample of the affected jobs with their Lookout links; the retry yield the estimate rests
on. ``-o json|yaml`` prints the server's document as it is, for programs.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from armada.cli.client import ApiError
from armada.cli.commands import EXIT_OK, make_client, out
from armada.cli.output import cell, render_data, render_table
from armada.cli.policyfile import load_policy_file
from armada.core.backtest_scope import replayed_text

DECISION_HEADERS = ("QUEUE", "EXAMINED", "UNCHANGED", "RETRY->FAIL", "FAIL->RETRY")
DECISION_HEADERS += ("EXTRA ATTEMPTS", "SAVED ATTEMPTS", "EST. SUCCEEDED")
COST_HEADERS = ("QUEUE", "EXTRA CORE-H", "EXTRA GIB-H", "EXTRA GPU-H")
COST_HEADERS += ("SAVED CORE-H", "SAVED GIB-H", "SAVED GPU-H")
FLIP_HEADERS = ("FROM", "TO", "CATEGORY", "SUBCATEGORY", "RECORDED RULE", "DRAFT RULE", "COUNT")
SAMPLE_HEADERS = ("JOB", "QUEUE", "CATEGORY", "RECORDED", "DRAFT", "REASON", "LINK")
YIELD_HEADERS = ("CATEGORY", "RULE", "RETRIED JOBS", "SUCCEEDED", "SUCCEEDED AFTER (RETRIES: JOBS)")
ALL = "(all)"


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return cell(value)


def _rule(value: Any) -> str:
    return "default" if value is None else str(value)


def _summaries(document: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    rows = [(str(q.get("queue")), q) for q in document.get("queues") or []]
    return [*rows, (ALL, document.get("overall") or {})]


def _decision_rows(document: Mapping[str, Any]) -> list[list[str]]:
    keys = ("examined", "unchanged", "retryToFail", "failToRetry", "extraAttempts")
    keys += ("savedAttempts", "estimatedSucceeded")
    return [[name, *(_number(s.get(k)) for k in keys)] for name, s in _summaries(document)]


def _cost_rows(document: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, summary in _summaries(document):
        row = [name]
        for which in ("extraCost", "savedCost"):
            cost = summary.get(which) or {}
            row += [_number(cost.get(k)) for k in ("coreHours", "memoryGibHours", "gpuHours")]
        rows.append(row)
    return rows


def _link(base_url: str, row: Mapping[str, Any]) -> str:
    url = str(row.get("url") or "")
    return f"{base_url}{url}" if url.startswith("/") else url


def render_backtest(document: Mapping[str, Any], base_url: str = "") -> str:
    """The backtest as tables; ``base_url`` makes the sample's Lookout links absolute."""
    policy = document.get("policy") or {}
    span = document.get("range") or {}
    version = f" version {policy['version']}" if policy.get("version") is not None else ""
    lines = [
        f"Backtest of retry policy {policy.get('name')}{version} ({policy.get('source')}), "
        f"failures from {span.get('since')} to {span.get('until')}",
        replayed_text(document.get("replayed") or {}),
        "",
        render_table(DECISION_HEADERS, _decision_rows(document)),
        "",
        "Cost of the attempts (core-, memory GiB- and GPU-hours):",
        render_table(COST_HEADERS, _cost_rows(document)),
        "",
    ]
    flips: Sequence[Mapping[str, Any]] = document.get("flips") or []
    if flips:
        rows = [
            [
                cell(f.get("from")),
                cell(f.get("to")),
                cell(f.get("category")),
                cell(f.get("subcategory")),
                _rule(f.get("recordedRule")),
                _rule(f.get("draftRule")),
                cell(f.get("count")),
            ]
            for f in flips
        ]
        lines += ["Flips by category and rule (rules numbered from 1):"]
        lines += [render_table(FLIP_HEADERS, rows), ""]
    else:
        lines += ["No decision would change.", ""]
    sample: Sequence[Mapping[str, Any]] = document.get("sample") or []
    if sample:
        rows = [
            [
                cell(s.get("jobId")),
                cell(s.get("queue")),
                "/".join(x for x in (s.get("category"), s.get("subcategory")) if x) or "-",
                cell(s.get("recorded")),
                cell(s.get("draft")),
                cell(s.get("reason")),
                _link(base_url, s),
            ]
            for s in sample
        ]
        lines += ["Sample (changed decisions first):", render_table(SAMPLE_HEADERS, rows), ""]
    yields: Sequence[Mapping[str, Any]] = document.get("yield") or []
    if yields:
        rows = [
            [
                cell(y.get("category")),
                _rule(y.get("rule")),
                cell(y.get("retriedJobs")),
                cell(y.get("succeededJobs")),
                ", ".join(f"{k}: {v}" for k, v in (y.get("succeededAfter") or {}).items()) or "-",
            ]
            for y in yields
        ]
        lines += ["Retry yield in the range:", render_table(YIELD_HEADERS, rows), ""]
    lines.append(f"Note: {document.get('estimateNote') or ''}")
    return "\n".join(lines)


def backtest_body(args: argparse.Namespace) -> dict[str, Any]:
    """The request of ``backtest retry-policy`` from its flags."""
    body: dict[str, Any] = {}
    if args.file:
        body["draft"] = load_policy_file(args.file)
    else:
        body["policy"] = args.policy
        if args.version is not None:
            body["version"] = args.version
    body["since"] = args.from_time or args.since or "7d"
    if args.to_time:
        body["until"] = args.to_time
    if args.queue:
        body["queues"] = args.queue
    if args.job_set:
        body["jobSets"] = args.job_set
    if args.sample is not None:
        body["sampleSize"] = args.sample
    return body


def check_backtest(args: argparse.Namespace) -> str | None:
    if bool(args.file) == bool(args.policy):
        return "give the draft with -f FILE, or a stored policy with --policy NAME (not both)"
    if args.version is not None and not args.policy:
        return "argument --version: only with --policy"
    if args.since and args.from_time:
        return "argument --from: not with --since (--since counts back from --to, or now)"
    return None


def cmd_backtest_retry_policy(args: argparse.Namespace) -> int:
    client = make_client(args)
    document = client.backtest_retry_policy(backtest_body(args))
    if not isinstance(document.get("overall"), Mapping):
        raise ApiError("the server's backtest has no overall summary")
    if args.output != "table":
        out(render_data(document, args.output))
    else:
        out(render_backtest(document, client.base_url))
    return EXIT_OK
