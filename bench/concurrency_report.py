"""Measuring and reporting for ``bench/concurrency.py``: the database-connection sampler,
the recovery time after each fault, and the final report (printed, and as JSON)."""

from __future__ import annotations

import json
import pickle
import statistics
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path


class Sampler:
    """Every ``period`` seconds: connections to the database, open and not idle, on a
    connection of its own (reopened after a termination)."""

    def __init__(self, dsn: str, db_name: str, period: float = 0.25):
        self.dsn, self.db_name, self.period = dsn, db_name, period
        self.samples: list[tuple[float, int, int]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psycopg

        conn = None
        while not self.stop.wait(self.period):
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self.dsn, autocommit=True)
                row = conn.execute(
                    "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') "
                    "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    (self.db_name,),
                ).fetchone()
                self.samples.append((time.time(), row[0], row[1]))
            except psycopg.Error:
                conn = None

    def max_open(self) -> int:
        return max((s[1] for s in self.samples), default=0)

    def max_busy(self) -> int:
        return max((s[2] for s in self.samples), default=0)


def sql(dsn: str, query: str, params: tuple = ()) -> list[tuple]:
    """One query on a fresh connection (the benchmark's own pooled one may have been
    terminated by a fault)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


def percentiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)

    def at(share: float) -> float:
        return 1000 * ordered[int(share * (len(ordered) - 1))]

    return f"{at(0.5):.0f} / {at(0.95):.0f} / {at(0.99):.0f} ms"


def recovery(
    fault_at: float,
    submits_ok: list[float],
    arrivals: list[float],
    leased: list[float],
    running: list[float],
) -> dict[str, float | None]:
    """Seconds from the fault to the first submit answered 201, the first event received by
    a watcher, the first lease and the first running pod, each after the fault."""

    def first_after(times: list[float]) -> float | None:
        later = [t for t in times if t > fault_at]
        return round(min(later) - fault_at, 2) if later else None

    parts = {
        "submit": first_after(submits_ok),
        "watch": first_after(arrivals),
        "lease": first_after(leased),
        "run": first_after(running),
    }
    known = [v for v in parts.values() if v is not None]
    parts["recovered"] = max(known) if len(known) == len(parts) else None
    return parts


# -- the run -----------------------------------------------------------------------------


def _statuses(requests_: list) -> str:
    """``503 x5, 500 x2``: how many of each status, most first."""
    counts = Counter(r[2] for r in requests_)
    return ", ".join(f"{status} x{n}" for status, n in counts.most_common()) or "none"


def report(
    args,
    work: Path,
    dsn: str,
    started: float,
    load_ended: float,
    drained_in: float,
    faults: list,
    sampler: Sampler,
    pool_bound: int,
    deadlocks_before: int,
    db_name: str,
    system,
    cpu: dict[str, float],
    queue: str,
) -> None:
    watch = pickle.loads((work / "watchers.pickle").read_bytes())
    load = pickle.loads((work / "load.pickle").read_bytes())
    requests_ = load.requests + watch.requests
    deadlocks = (
        sql(dsn, "SELECT deadlocks FROM pg_stat_database WHERE datname = %s", (db_name,))[0][0]
        - deadlocks_before
    )

    def in_fault_window(at: float, seconds: float) -> bool:
        """Whether a request from ``at`` lasting ``seconds`` overlaps a fault's window (one
        sent just before a fault can be cut by it)."""
        return any(at + seconds >= f_at and at <= f_at + args.fault_window for _, f_at, _ in faults)

    by_kind: dict[str, list[tuple[float, int, float]]] = defaultdict(list)
    for at, kind, status, seconds in requests_:
        by_kind[kind].append((at, status, seconds))
    fives = [r for r in requests_ if r[2] >= 500]
    fives_outside = [r for r in fives if not in_fault_window(r[0], r[3])]

    # Jobs: every acknowledged id stored once; the states they reached.
    acknowledged = [i for ids in load.job_ids for i in ids]
    stored = dict(sql(dsn, "SELECT id, state FROM armada_job WHERE queue = %s", (queue,)))
    lost = [i for i in acknowledged if i not in stored]
    duplicated_acks = len(acknowledged) - len(set(acknowledged))
    states = Counter(stored.values())

    # Events: each watcher against the job set's events in the database.
    events = defaultdict(set)
    for job_set, event_id in sql(
        dsn, "SELECT job_set, id FROM armada_event WHERE queue = %s", (queue,)
    ):
        events[job_set].add(event_id)
    delivered = missing = duplicates = unexpected = 0
    for w in watch.watchers:
        got = set(w.ids)
        delivered += len(got)
        missing += len(events[w.job_set] - got)
        unexpected += len(got - events[w.job_set])
        duplicates += w.duplicates
    reconnects = sum(max(0, w.connects - 1) for w in watch.watchers)
    drops = sum(w.drops for w in watch.watchers)
    watched = {w.job_set for w in watch.watchers}
    expected = sum(len(ids) for js, ids in events.items() if js in watched)

    # Recovery after each fault.
    submits_ok = [
        at + s for at, kind, status, s in load.requests if kind == "submit" and status == 201
    ]
    leased, running = [], []
    for kind, created in sql(
        dsn,
        "SELECT type, extract(epoch FROM created) FROM armada_event "
        "WHERE queue = %s AND type IN ('leased', 'running') AND created > to_timestamp(%s)",
        (queue, started),
    ):
        (leased if kind == "leased" else running).append(float(created))
    recoveries = [
        (
            kind,
            round(at - started, 1),
            detail,
            recovery(at, submits_ok, watch.arrivals, leased, running),
        )
        for kind, at, detail in faults
    ]

    elapsed = load_ended - started
    submitted_ok = sum(
        1 for _, kind, status, _ in load.requests if kind == "submit" and status == 201
    )
    print()
    print(f"== {elapsed:.0f} s of load, drained in {drained_in:.0f} s ==")
    print(
        f"jobs acknowledged {len(acknowledged)} ({len(acknowledged) / elapsed:.0f}/s; goal "
        f"{args.clients * args.rate:.0f}/s), in {submitted_ok} requests; clients behind "
        f"schedule at the end: {', '.join(f'{b:.1f} s' for b in load.behind)}"
    )
    print(
        f"jobs stored {len(stored)}; acknowledged but missing {len(lost)}; acknowledged twice "
        f"{duplicated_acks}; stored but not acknowledged {len(set(stored) - set(acknowledged))}"
    )
    print(f"job states after the drain: {dict(sorted(states.items()))}")
    print(
        "requests per kind: count, 5xx, other errors (status 0 = refused/timeout, 4xx), p50/p95/p99"
    )
    for kind in sorted(by_kind):
        rows = by_kind[kind]
        errors = Counter(status for _, status, _ in rows if status >= 400 or status == 0)
        n5 = sum(n for status, n in errors.items() if status >= 500)
        others = {status: n for status, n in errors.items() if status < 500}
        ok_times = [s for _, status, s in rows if 0 < status < 400]
        print(f"  {kind:20} {len(rows):7} {n5:5}  {others or '-'}  {percentiles(ok_times)}")
    print(
        f"5xx: {len(fives)} in all ({_statuses(fives)}), {len(fives_outside)} outside"
        f" {args.fault_window:.0f} s of a fault"
    )
    print(
        f"watchers {len(watch.watchers)}: events expected {expected}, delivered once {delivered}, "
        f"missing {missing}, duplicated {duplicates}, unexpected {unexpected}; "
        f"streams broken {drops}, reopened {reconnects}"
    )
    lags = [lag for per_type in watch.lags.values() for lag in per_type]
    print(
        f"watcher lag (event created to received) p50/p95/p99: {percentiles(lags)}; "
        f"max {1000 * max(lags, default=0):.0f} ms; per event type: "
        + ", ".join(f"{kind} {percentiles(v)}" for kind, v in sorted(watch.lags.items()))
    )
    print(
        f"database connections: at most {sampler.max_open()} open and {sampler.max_busy()} "
        f"busy at once (pools' bound {pool_bound}: ARMADA_DB_POOL_SIZE x processes); "
        f"deadlocks during the run: {deadlocks}"
    )
    restarts = {
        name: len(s.unexpected_exits) for name, s in system.services.items() if s.unexpected_exits
    }
    print(
        "CPU during the load, share of the machine's "
        f"{cpu['machine_total']:.0f} cpu-seconds: busy {100 * cpu['machine'] / cpu['machine_total']:.0f}%; "
        + ", ".join(
            f"{name} {100 * cpu[name] / cpu['machine_total']:.0f}%"
            for name in system.services
            if not args.faults  # a restarted process starts counting again
        )
        + f"; benchmark clients: watchers {100 * watch.cpu_seconds / cpu['machine_total']:.0f}%, "
        f"submitters and Lookout users {100 * load.cpu_seconds / cpu['machine_total']:.0f}% "
        "(the rest: PostgreSQL, Redis and whatever else runs on the machine)"
    )
    print(f"processes that died unasked and were restarted: {restarts or 'none'}")
    for kind, at, detail, parts in recoveries:
        print(f"  fault {kind:9} at {at:5.1f} s ({detail}): recovered in {parts}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "duration_s": elapsed,
                    "jobs_acknowledged": len(acknowledged),
                    "jobs_stored": len(stored),
                    "jobs_lost": len(lost),
                    "job_states": states,
                    "fives": len(fives),
                    "fives_by_status": dict(Counter(r[2] for r in fives)),
                    "fives_outside_faults": len(fives_outside),
                    "events_expected": expected,
                    "events_delivered": delivered,
                    "events_missing": missing,
                    "events_duplicated": duplicates,
                    "lag_p50_ms": 1000 * statistics.median(lags) if lags else None,
                    "db_max_open": sampler.max_open(),
                    "db_max_busy": sampler.max_busy(),
                    "pool_bound": pool_bound,
                    "deadlocks": deadlocks,
                    "recoveries": recoveries,
                    "cpu_seconds": cpu,
                },
                indent=2,
            )
        )
