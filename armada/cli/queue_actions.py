"""Acting on many queues at once, as Armada's armadactl does: ``cancel queues``,
``preempt queues``, ``cordon queues``, ``uncordon queues`` and ``get queues``, each picking
its queues by name (``Q1 Q2 ...``) or by label selector (``-l team=ml,tier``), with
``--inverse`` (every queue *except* those) and, for cancel, preempt and get,
``--only-cordoned``.

The server does the picking and acts on every picked queue in one transaction, all or
nothing (``POST /api/v1/queues/{action}``), so a denied queue changes nothing anywhere.
``--only-cordoned`` has no field in that request: the queues are then picked here first
(the server's selector, then the cordoned ones, then ``--inverse``) and their names sent.
``--dry-run`` has the server check everything, permissions included, and say what would
be done; nothing changes. Like Armada's armadactl, nothing asks for confirmation.

One queue named, with nothing more than the old flags, goes through the one-queue calls
of earlier versions (``cancel queue Q --state S``, ``cordon queue Q``), whose output is
unchanged.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from armada.cli.client import ArmadaClient
from armada.cli.commands import EXIT_OK, make_client, out
from armada.cli.errors import ApiError
from armada.cli.output import render_data, render_queues

ACTIVE_STATES = ("queued", "leased", "pending", "running")


# -- checks (run before anything is sent) -------------------------------------------------


def selector_problem(terms: Sequence[str]) -> str | None:
    """A label selector term is ``key=value`` or ``key`` (the queue has the label)."""
    for term in terms:
        key, _, _ = term.partition("=")
        if not key.strip():
            return f"argument -l/--selector: term {term!r} has no label key"
    return None


def check_selection(args: argparse.Namespace, *, required: bool = True) -> str | None:
    """Names or a selector, not both; one of them unless ``required`` is False."""
    names, terms = args.queues or [], args.selector or []
    if names and terms:
        return (
            "queues can be selected either with a set of names or a set of labels (-l), "
            "but not both"
        )
    if required and not names and not terms:
        return "queue selection must be narrowed down either by names or by labels (-l)"
    if any(not name.strip() for name in names):
        return "argument QUEUE: cannot provide an empty queue name"
    return selector_problem(terms)


def check_cancel(args: argparse.Namespace) -> str | None:
    unknown = [s for s in args.states or [] if s not in ACTIVE_STATES]
    if unknown:
        return (
            f"argument -s/--job-states: {', '.join(repr(s) for s in unknown)}: must be one "
            f"of {', '.join(ACTIVE_STATES)}"
        )
    if not args.states:
        return "the following arguments are required: -s/--job-states"
    return check_selection(args)


# -- picking queues -------------------------------------------------------------------------


def select_queues(client: ArmadaClient, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The queues that names, ``-l``, ``--only-cordoned`` and ``--inverse`` pick, as
    Armada's armadactl decides: a queue is picked when it is named (or no names are given),
    has every label of the selector and, with ``--only-cordoned``, is cordoned; ``--inverse``
    picks the others. A name no queue has is an error, so that a misspelt name cannot widen
    an ``--inverse`` to the queue it meant to spare."""
    names = list(args.queues or [])
    selector = ",".join(args.selector or []) or None
    only_cordoned = bool(getattr(args, "only_cordoned", False))
    if not names and not args.inverse:
        return client.find_queues(selector=selector, only_cordoned=only_cordoned)
    every = client.list_queues()
    known = {q.get("name") for q in every}
    missing = [name for name in names if name not in known]
    if missing:
        raise ApiError(f"queue(s) {', '.join(missing)} do not exist")
    if selector or only_cordoned:
        matched = {
            q.get("name")
            for q in client.find_queues(selector=selector, only_cordoned=only_cordoned)
        }
    else:
        matched = set(known)
    if names:
        matched &= set(names)
    return [q for q in every if (q.get("name") in matched) != bool(args.inverse)]


def selection_body(client: ArmadaClient, args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``queues``/``selector``/``inverse``/``dryRun`` part of an action's body; None
    when ``--only-cordoned`` left no queue to act on."""
    body: dict[str, Any] = {"dryRun": bool(args.dry_run)}
    if getattr(args, "only_cordoned", False):
        picked = [q["name"] for q in select_queues(client, args)]
        if not picked:
            return None
        return {**body, "queues": picked, "inverse": False}
    if args.queues:
        body["queues"] = list(args.queues)
    else:
        body["selector"] = ",".join(args.selector)
    body["inverse"] = bool(args.inverse)
    return body


# -- printing -------------------------------------------------------------------------------


def filters_text(args: argparse.Namespace, *, states: bool) -> str:
    """`` (queued,running; priority classes a; pools p)``, or ``""`` without filters."""
    parts = []
    if states:
        parts.append(",".join(args.states))
    if args.priority_classes:
        parts.append(f"priority classes {','.join(args.priority_classes)}")
    if args.pools:
        parts.append(f"pools {','.join(args.pools)}")
    return f" ({'; '.join(parts)})" if parts else ""


def print_job_results(
    answer: Mapping[str, Any], args: argparse.Namespace, verb: tuple[str, str, str], filters: str
) -> None:
    """One line per queue: ``Cancelling 3 job(s) in queue a (queued)``; on a dry run
    ``Would cancel ...`` and a closing line. ``verb`` is like (``Cancelling``, ``cancel``,
    ``cancelled``)."""
    if args.output != "table":
        out(render_data(dict(answer), args.output))
        return
    queues = answer.get("queues") or []
    if not queues:
        print("No queues matched; nothing to do.", file=sys.stderr)
    for entry in queues:
        count = len(entry.get("jobIds") or [])
        doing = f"Would {verb[1]}" if answer.get("dryRun") else verb[0]
        out(f"{doing} {count} job(s) in queue {entry.get('name')}{filters}")
    if answer.get("dryRun"):
        out(f"Dry run: nothing was {verb[2]}.")


def _no_queue(args: argparse.Namespace) -> int:
    if args.output != "table":
        out(render_data({"dryRun": bool(args.dry_run), "queues": []}, args.output))
    else:
        print("No queues matched; nothing to do.", file=sys.stderr)
    return EXIT_OK


# -- commands -------------------------------------------------------------------------------


def _single_queue(args: argparse.Namespace, *extra_flags: str) -> str | None:
    """The one queue named when nothing beyond the one-queue command's flags was given."""
    plain = not (args.selector or args.inverse or args.dry_run)
    plain = plain and not any(getattr(args, flag, None) for flag in extra_flags)
    return args.queues[0] if plain and args.queues and len(args.queues) == 1 else None


def cmd_cancel_queues(args: argparse.Namespace) -> int:
    client = make_client(args)
    single = _single_queue(args, "only_cordoned", "priority_classes", "pools")
    if single is not None:
        ids = client.cancel_by_state(single, list(args.states), args.reason or "")
        answer: dict[str, Any] = {"dryRun": False, "queues": [{"name": single, "jobIds": ids}]}
    else:
        body = selection_body(client, args)
        if body is None:
            return _no_queue(args)
        body["states"] = list(args.states)
        answer = client.queue_action("cancel", _with_stop_options(body, args))
    print_job_results(
        answer, args, ("Cancelling", "cancel", "cancelled"), filters_text(args, states=True)
    )
    return EXIT_OK


def _with_stop_options(body: dict, args: argparse.Namespace) -> dict:
    """``body`` with the options cancel and preempt share: priority classes, pools, reason."""
    if args.priority_classes:
        body["priorityClasses"] = list(args.priority_classes)
    if args.pools:
        body["pools"] = list(args.pools)
    if args.reason:
        body["reason"] = args.reason
    return body


def cmd_preempt_queues(args: argparse.Namespace) -> int:
    client = make_client(args)
    body = selection_body(client, args)
    if body is None:
        return _no_queue(args)
    answer = client.queue_action("preempt", _with_stop_options(body, args))
    print_job_results(
        answer, args, ("Preempting", "preempt", "preempted"), filters_text(args, states=False)
    )
    return EXIT_OK


def cmd_cordon_queues(args: argparse.Namespace) -> int:
    client = make_client(args)
    verb = "cordon" if args.cordoned else "uncordon"
    single = _single_queue(args)
    if single is not None and args.output == "table":
        queue = client.set_queue_cordoned(single, args.cordoned)
        out(f"{verb.capitalize()}ed queue {queue.get('name') or single}")
        return EXIT_OK
    body = selection_body(client, args)
    assert body is not None  # no --only-cordoned here
    answer = client.queue_action(verb, body)
    if args.output != "table":
        out(render_data(answer, args.output))
        return EXIT_OK
    queues = answer.get("queues") or []
    if not queues:
        print("No queues matched; nothing to do.", file=sys.stderr)
    for entry in queues:
        if answer.get("dryRun"):
            out(f"Would {verb} queue {entry.get('name')}")
        else:
            out(f"{verb.capitalize()}ed queue {entry.get('name')}")
    if answer.get("dryRun"):
        out("Dry run: nothing was changed.")
    return EXIT_OK


def cmd_get_queues(args: argparse.Namespace) -> int:
    queues = select_queues(make_client(args), args)
    if not queues and args.output == "table":
        print("No queues found.", file=sys.stderr)
        return EXIT_OK
    out(render_queues(queues, args.output))
    return EXIT_OK
