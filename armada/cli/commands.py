"""What each ``armadactl`` command does: thin calls to the REST API and the printing."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC
from typing import Any

from armada.cli.client import ApiError, ArmadaClient
from armada.cli.config import Settings, resolve_settings
from armada.cli.contexts import armada_address
from armada.cli.exitcodes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, PROG
from armada.cli.jobfile import JobFileError, check_job_file, describe_job_file, load_job_file
from armada.cli.logs_follow import follow_log
from armada.cli.output import (
    render_data,
    render_executor,
    render_executors,
    render_job_sets,
    render_policies,
    render_queue,
    render_scheduling,
)
from armada.cli.policyfile import load_policy_file
from armada.cli.watch import JobSetTracker, run_watch

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "PROG"]


def connection_flags(args: argparse.Namespace) -> dict[str, str | None]:
    """The connection flags given; ``--url`` before Armada's ``--armadaUrl``."""
    flags = {key: getattr(args, key, None) for key in ("url", "username", "password", "token")}
    armada_url = getattr(args, "armada_url", None)
    if not flags["url"] and armada_url:
        flags["url"] = armada_address(armada_url)
    return flags


def settings_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> Settings:
    flags = connection_flags(args)
    return resolve_settings(
        flags,
        environ,
        config_path=getattr(args, "config", None),
        context=getattr(args, "context", None),
    )


def make_client(args: argparse.Namespace) -> ArmadaClient:
    return ArmadaClient(settings_from_args(args))


def out(text: str = "") -> None:
    print(text, file=sys.stdout, flush=True)


def cmd_create_queue(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"name": args.name}
    if args.priority_factor is not None:
        body["priorityFactor"] = args.priority_factor
    if args.owners is not None:
        body["owners"] = args.owners
    if args.group_owners is not None:
        body["groupOwners"] = args.group_owners
    if args.labels is not None:
        body["labels"] = args.labels
    if args.retry_policies is not None:
        body["retryPolicies"] = args.retry_policies
    if args.cordoned:
        body["cordoned"] = True
    dry_run = getattr(args, "dry_run", False)
    queue = make_client(args).create_queue(body, dry_run=dry_run)
    name = queue.get("name") or args.name
    out(
        f"Queue {name} is valid (dry run: nothing was created)"
        if dry_run
        else f"Created queue {name}"
    )
    return EXIT_OK


QUEUE_FIELDS = (
    ("priority_factor", "priorityFactor"),
    ("owners", "owners"),
    ("group_owners", "groupOwners"),
    ("labels", "labels"),
    ("retry_policies", "retryPolicies"),
    ("cordoned", "cordoned"),
)


def queue_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The PATCH body of ``update queue``: only the flags that were given."""
    return {
        key: getattr(args, dest) for dest, key in QUEUE_FIELDS if getattr(args, dest) is not None
    }


def check_update_queue(args: argparse.Namespace) -> str | None:
    if not queue_changes(args):
        return (
            "nothing to change; give at least one of --priority-factor, --owners, "
            "--group-owners, --labels, --retry-policies, --cordoned (--cordon), --uncordoned"
        )
    return None


def cmd_update_queue(args: argparse.Namespace) -> int:
    queue = make_client(args).update_queue(args.name, queue_changes(args))
    out(f"Updated queue {queue.get('name') or args.name}")
    return EXIT_OK


def cmd_delete_queue(args: argparse.Namespace) -> int:
    make_client(args).delete_queue(args.name)
    out(f"Deleted queue {args.name}")
    return EXIT_OK


def cmd_get_queue(args: argparse.Namespace) -> int:
    out(render_queue(make_client(args).get_queue(args.name), args.output))
    return EXIT_OK


def _policy_line(verb: str, policy: Mapping[str, Any], document: Mapping[str, Any]) -> str:
    name = policy.get("name") or document.get("name")
    version = policy.get("version")
    return f"{verb} retry policy {name}" + (f" (version {version})" if version is not None else "")


def print_warnings(policy: Mapping[str, Any]) -> None:
    """The server's warnings about a policy it saved or checked, on stderr."""
    for warning in policy.get("warnings") or []:
        print(f"warning: {warning.get('field')}: {warning.get('message')}", file=sys.stderr)


def cmd_create_retry_policy(args: argparse.Namespace) -> int:
    document = load_policy_file(args.file)
    dry_run = getattr(args, "dry_run", False)
    policy = make_client(args).create_retry_policy(document, dry_run=dry_run)
    print_warnings(policy)
    if dry_run:
        out(
            f"Retry policy {policy.get('name') or document.get('name')} is valid "
            "(dry run: nothing was created)"
        )
    else:
        out(_policy_line("Created", policy, document))
    return EXIT_OK


def cmd_update_retry_policy(args: argparse.Namespace) -> int:
    document = load_policy_file(args.file, need_name=True)
    policy = make_client(args).update_retry_policy(document["name"], document)
    print_warnings(policy)
    out(_policy_line("Updated", policy, document))
    return EXIT_OK


def cmd_get_retry_policy(args: argparse.Namespace) -> int:
    out(render_data(make_client(args).get_retry_policy(args.name), args.output))
    return EXIT_OK


def cmd_get_retry_policies(args: argparse.Namespace) -> int:
    policies = make_client(args).list_retry_policies()
    if not policies and args.output == "table":
        print("No retry policies found.", file=sys.stderr)
        return EXIT_OK
    out(render_policies(policies, args.output))
    return EXIT_OK


def cmd_delete_retry_policy(args: argparse.Namespace) -> int:
    make_client(args).delete_retry_policy(args.name)
    out(f"Deleted retry policy {args.name}")
    return EXIT_OK


def cmd_get_job(args: argparse.Namespace) -> int:
    out(render_data(make_client(args).get_job(args.job_id), args.output))
    return EXIT_OK


def cmd_preempt_job(args: argparse.Namespace) -> int:
    """Armada's two lines: what is asked, then ``Requested preemption for job ID``."""
    client = make_client(args)
    out(
        f"Requesting preemption of job matching queue: {args.queue}, job set: {args.job_set}, "
        f"and job Id: {args.job_id}"
    )
    job = client.get_job(args.job_id)
    if job.get("queue") != args.queue or job.get("jobSetId") != args.job_set:
        raise ApiError(f"job {args.job_id} is not in queue {args.queue}, job set {args.job_set}")
    client.preempt_job(args.job_id, args.reason)
    out(f"Requested preemption for job {args.job_id}")
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    """Armada's lines, which scripts read: ``Requesting cancellation of ...``, then
    ``Requested cancellation for jobs ID, ID`` (one job) or ``... for job set SET``."""
    if args.job_id:
        out(
            f"Requesting cancellation of jobs matching queue: {args.queue}, job set: "
            f"{args.job_set}, and job ID: {args.job_id}"
        )
    else:
        out(
            f"Requesting cancellation of job set matching queue: {args.queue}, job set: "
            f"{args.job_set}"
        )
    ids = [args.job_id] if args.job_id else None
    cancelled = make_client(args).cancel(args.queue, args.job_set, ids)
    if args.job_id:
        out(f"Requested cancellation for jobs {', '.join(cancelled)}")
    else:
        out(f"Requested cancellation for job set {args.job_set}")
    return EXIT_OK


def cmd_get_job_sets(args: argparse.Namespace) -> int:
    job_sets = make_client(args).list_job_sets(args.queue)
    if not job_sets and args.output == "table":
        print(f"No job sets in queue {args.queue}.", file=sys.stderr)
        return EXIT_OK
    out(render_job_sets(job_sets, args.output))
    return EXIT_OK


def cmd_get_executors(args: argparse.Namespace) -> int:
    executors = make_client(args).list_executors()
    if not executors and args.output == "table":
        print("No executors found.", file=sys.stderr)
        return EXIT_OK
    out(render_executors(executors, args.output))
    return EXIT_OK


def cmd_get_executor(args: argparse.Namespace) -> int:
    out(render_executor(make_client(args).get_executor(args.executor_id), args.output))
    return EXIT_OK


def cmd_cordon_executor(args: argparse.Namespace) -> int:
    reason = (getattr(args, "reason", None) or "").strip()
    make_client(args).set_executor_cordoned(args.executor_id, args.cordoned, reason)
    done = f"{'Cordoned' if args.cordoned else 'Uncordoned'} executor {args.executor_id}"
    out(f"{done} ({reason})" if reason else done)
    return EXIT_OK


def cmd_get_scheduling(args: argparse.Namespace) -> int:
    out(render_scheduling(make_client(args).get_job_scheduling(args.job_id), args.output))
    return EXIT_OK


def cmd_reprioritize(args: argparse.Namespace) -> int:
    """Armada's lines: ``Reprioritized jobs with ID:`` and one id a line; finding no job to
    change is an error, as in Armada."""
    ids = [args.job_id] if args.job_id else None
    changed = make_client(args).reprioritize(args.queue, args.job_set, args.priority, ids)
    if not changed:
        raise ApiError("no jobs were reprioritized")
    out("Reprioritized jobs with ID:")
    for job_id in changed:
        out(job_id)
    return EXIT_OK


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def cmd_logs(args: argparse.Namespace) -> int:
    """The log text goes to stdout untouched (no newline added); notes go to stderr. With
    ``-f`` the log is followed until the run ends (``cli.logs_follow``)."""
    client = make_client(args)
    if args.follow:
        entry = follow_log(
            lambda: client.get_run_log(args.run_id),
            _write,
            lambda text: print(text, file=sys.stderr),
        )
        print(f"Run {args.run_id} ended: {entry.get('runState')}.", file=sys.stderr)
        return EXIT_OK
    entry = client.get_run_log(args.run_id)
    text = entry.get("log") or ""
    if text:
        _write(text)
    else:
        print(f"Run {args.run_id} has no log.", file=sys.stderr)
    if entry.get("truncated"):
        print("Note: the server truncated this log; it is not the whole log.", file=sys.stderr)
    return EXIT_OK


def _checked_job_file(path: str) -> dict[str, Any]:
    data = load_job_file(path)
    errors = check_job_file(data)
    if errors:
        raise JobFileError(f"job file {'(stdin)' if path == '-' else path} is not valid", errors)
    return dict(data)


def cmd_submit(args: argparse.Namespace) -> int:
    data = _checked_job_file(args.file)
    if args.dry_run:
        for line in describe_job_file(data):
            out(line)
        out("Dry run: nothing was submitted.")
        return EXIT_OK
    answer = make_client(args).submit_jobs(data)
    job_set = answer.get("jobSetId") or data["jobSetId"]
    for job_id in answer["jobIds"]:
        out(f"Submitted job with id {job_id} to job set {job_set}")
    return EXIT_OK


class _Cursor:
    """Remembers the id of the last event passed through, for a resume hint on Ctrl-C."""

    def __init__(self, start: int | None) -> None:
        self.last = start

    def follow(self, events: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for event in events:
            if isinstance(event.get("id"), int):
                self.last = event["id"]
            yield event


def cmd_watch(args: argparse.Namespace) -> int:
    client = make_client(args)

    def on_reconnect(reason: str, at: int | None) -> None:
        where = f"after event {at}" if at is not None else "from the start"
        print(f"Connection lost ({reason}); reconnecting {where}...", file=sys.stderr, flush=True)

    position = _Cursor(args.from_)
    tracker = JobSetTracker()
    events = client.watch_events(
        args.queue, args.job_set, cursor=args.from_, on_reconnect=on_reconnect
    )
    try:
        return run_watch(
            position.follow(events),
            sys.stdout,
            exit_if_inactive=args.exit_if_inactive,
            tz=UTC if args.utc else None,
            tracker=tracker,
            raw=getattr(args, "raw", False),
        )
    except KeyboardInterrupt:
        if tracker.states:
            out(tracker.summary())
        resume = f"; resume with --from {position.last}" if position.last is not None else ""
        print(f"Stopped{resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        events.close()


# -- entry point ------------------------------------------------------------------------
