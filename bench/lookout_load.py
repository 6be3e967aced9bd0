"""The Lookout benchmark's load (``bench/lookout.py``): the web server, logged-in users
requesting the grid's views at random, the process writing events meanwhile, and the
latency report."""

from __future__ import annotations

import random
import re
import statistics
import subprocess
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime

from lookout_seed import CATEGORIES, PASSWORD, QUEUES


def free_port() -> int:
    from submit_api import free_port as submit_free_port  # bench/ is on the path

    return submit_free_port()


def start_server(db_name: str, workers: int, port: int) -> subprocess.Popen:
    """The web server as production starts it (see ``submit_api.start_server``)."""
    from submit_api import start_server as submit_start_server

    return submit_start_server(db_name, workers, port)


def login(base: str, username: str):
    import requests

    s = requests.Session()
    page = s.get(f"{base}/admin/login/?next=/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    r = s.post(
        f"{base}/admin/login/?next=/",
        data={
            "username": username,
            "password": PASSWORD,
            "csrfmiddlewaretoken": token,
            "next": "/",
        },
        headers={"Referer": f"{base}/admin/login/"},
        allow_redirects=False,
    )
    if r.status_code != 302:
        raise RuntimeError(f"login failed: {r.status_code}")
    return s


def table_filters(rnd: random.Random) -> dict[str, list[str]]:
    """Kind -> query strings of that kind (first pages); deep pages add a cursor. Besides
    the queue, state, category and job-set filters, the grid's header filters: the latest
    run's decision, retryable flag, node and cluster, an annotation's value, exit-code and
    time ranges."""
    big = [f"queue-{i:03d}" for i in range(5)]
    queues = big + [f"queue-{i:03d}" for i in range(5, QUEUES, 7)]
    return {
        "table:all": [""],
        "table:queue": [f"queue={q}" for q in queues],
        "table:queue+state": [
            f"queue={q}&state={s}" for q in queues for s in ("failed", "running", "succeeded")
        ],
        "table:states": ["state=failed&state=cancelled", "state=queued&state=running"],
        "table:category": [f"category={c}" for c in CATEGORIES],
        "table:jobset-prefix-broad": ["job_set=team-", "job_set=team-1"],
        "table:jobset-prefix-narrow": [f"job_set=team-{i}/" for i in (0, 3, 17, 42, 77)],
        "table:decision": ["decision=retry", "decision=fail_rule", "decision=fail_policy_limit"],
        "table:retryable": ["retryable=yes", "retryable=no"],
        "table:annotation": [f"ann=team=team-{i}" for i in (0, 3, 17, 42)],
        "table:exit-code-range": ["exit_code_min=1&exit_code_max=2", "exit_code_min=137"],
        "table:submitted-range": [
            f"submitted_from=2026-11-{d:02d}&submitted_to=2026-11-{d + 1:02d}" for d in (3, 20)
        ],
        "table:in-state-range": [
            f"in_state_from=2026-11-{d:02d}&in_state_to=2026-11-{d + 1:02d}" for d in (3, 20)
        ],
        "table:node": ["node_exact=cluster-3-node-042", "node=cluster-7-node-1"],
        "table:cluster": ["cluster_exact=cluster-2", "cluster=cluster-9&state=failed"],
    }


# Kind -> the request path and query; {queue} and {job_set} are one of the sampled jobs'.
GROUP_KINDS = {
    "group:queue": "/?group=queue",
    "group:state": "/?group=state",
    "group:category": "/?group=category",
    "group:job_set": "/?group=job_set",
    "group:decision": "/?group=decision",
    "group:node": "/?group=node",
    "group:retryable(cluster)": "/?group=retryable&cluster_exact=cluster-4",
    "group:annotation": "/?group=annotation:team",
    "group:state(queue)": "/?group=state&queue=queue-000",
    "group:queue>job_set": "/?group=queue,job_set",
    "expand:queue": '/groups?group=queue,job_set&path=[["queue","{queue}"]]',
    "expand:job_set": (
        '/groups?group=queue,job_set&path=[["queue","{queue}"],["job_set","{job_set}"]]'
    ),
}
# Kind -> relative weight in the load (tables and deep pages get 1.0 and 0.6).
OTHER_KINDS = {
    "job": 1.5,
    "panel": 3.0,
    "job:heavy": 0.2,
    "panel:heavy": 0.3,
    "rows": 2.0,
    # A whole page, as when a grid URL is opened (the other grid kinds are what the open grid
    # asks for when a filter, sort, page or grouping changes: htmx requests for its parts).
    "load": 1.5,
}
# The headers of the open grid's requests for its changing parts (see lookout.grid_views).
GRID_PART = {"HX-Request": "true", "HX-Target": "job-rows"}


def request_kinds(filters: dict[str, list[str]], jobs_info: dict) -> list[tuple[str, float]]:
    kinds: list[tuple[str, float]] = []
    for kind in filters:
        kinds.append((kind, 1.0))
        kinds.append((kind.replace("table:", "deep:"), 0.6))
    kinds += [(kind, 0.6) for kind in GROUP_KINDS]
    kinds += [
        (kind, weight)
        for kind, weight in OTHER_KINDS.items()
        if jobs_info["heavy"] or not kind.endswith(":heavy")
    ]
    return kinds


def url_for(kind: str, rnd: random.Random, filters, deep, jobs_info) -> str:
    """A path and query of ``kind``, picked with ``rnd``."""
    if kind.startswith("table:"):
        return "/?" + rnd.choice(filters[kind])
    if kind.startswith("deep:"):
        return "/?" + rnd.choice(deep[kind.replace("deep:", "table:")])
    if kind in GROUP_KINDS:
        queue, job_set = rnd.choice(jobs_info["job_sets"])
        return GROUP_KINDS[kind].replace("{queue}", queue).replace("{job_set}", job_set)
    if kind == "load":
        return "/?" + rnd.choice(filters[rnd.choice(sorted(filters))])
    if kind == "rows":
        # What a live update of an open grid asks for: the rows of a page's ids.
        start = rnd.randrange(max(1, len(jobs_info["samples"]) - 50))
        return "/rows?ids=" + ",".join(jobs_info["samples"][start : start + 50])
    job = rnd.choice(jobs_info["heavy"] if kind.endswith(":heavy") else jobs_info["samples"])
    return f"/jobs/{job}/panel" if kind.startswith("panel") else f"/jobs/{job}"


def deep_cursors(filters: dict[str, list[str]], depth: int) -> dict[str, list[str]]:
    """The ``after`` cursor of page ``depth`` of each filter (newest first), plus a cursor at the
    middle of the whole table (a far position). Found here with OFFSET, which Lookout never
    uses: it only follows cursors."""
    from django.http import QueryDict

    from armada.models import Job
    from lookout.grid.cursors import encode_cursor
    from lookout.grid.filters import JobFilters
    from lookout.grid.filters import apply_filters as jobs_filter

    deep: dict[str, list[str]] = {}
    for kind, queries in filters.items():
        out = []
        for q in queries:
            f = JobFilters.from_query(QueryDict(q))
            ids = list(
                jobs_filter(Job.objects.all(), f)
                .order_by("-id")
                .values_list("id", flat=True)[depth * 50 - 1 : depth * 50]
            )
            if ids:
                out.append(f"{q}&after={encode_cursor(ids[0], ids[0])}".lstrip("&"))
        deep[kind] = out or [q for q in queries]
    total = Job.objects.count()
    mid = Job.objects.order_by("-id").values_list("id", flat=True)[total // 2]
    deep["table:all"].append(f"after={encode_cursor(mid, mid)}")
    return deep


def run_load(base: str, args, filters, deep, jobs_info) -> dict[str, list[float]]:
    kinds = request_kinds(filters, jobs_info)
    names = [k for k, _ in kinds]
    weights = [w for _, w in kinds]
    results: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    # Warm-up, not timed: each grouping once, so the timed part sees the steady state (large
    # counts kept in the shared cache, recounted in the background); the first count of a
    # grouping is what the in-process part reports.
    session = login(base, "bench")
    rnd = random.Random(999)
    for kind in GROUP_KINDS:
        session.get(base + url_for(kind, rnd, filters, deep, jobs_info), timeout=120)
    # Then a few seconds not counted: each web worker's first requests load code and
    # templates and open its database connections.
    record_from = time.time() + args.warmup
    stop_at = record_from + args.duration

    def user(i: int, out) -> None:
        rnd = random.Random(1000 + i)
        session = login(base, "bench")
        mine: dict[str, list[float]] = defaultdict(list)
        failed: dict[str, int] = defaultdict(int)
        while time.time() < stop_at:
            kind = rnd.choices(names, weights=weights)[0]
            url = url_for(kind, rnd, filters, deep, jobs_info)
            t0 = time.perf_counter()
            try:
                headers = GRID_PART if kind.startswith(("table:", "deep:", "group:")) else {}
                r = session.get(base + url, headers=headers, timeout=60)
                ok = r.status_code == 200
            except Exception:  # noqa: BLE001 - counted as an error
                ok = False
            elapsed = time.perf_counter() - t0
            if time.time() - elapsed >= record_from:
                if ok:
                    mine[kind].append(elapsed)
                else:
                    failed[kind] += 1
            if args.think:
                time.sleep(rnd.uniform(0, 2 * args.think))
        out.put((dict(mine), dict(failed)))

    if args.client_threads:
        # All users in this process: their threads share one interpreter lock, so a
        # response may wait for another user's parsing before it is timed as done.
        import queue as queue_module

        out = queue_module.Queue()
        workers = [threading.Thread(target=user, args=(i, out)) for i in range(args.users)]
    else:
        # Each user its own process, as each browser is its own program.
        import multiprocessing

        context = multiprocessing.get_context("fork")
        out = context.Queue()
        workers = [context.Process(target=user, args=(i, out)) for i in range(args.users)]
    for w in workers:
        w.start()
    for _ in workers:
        mine, failed = out.get(timeout=args.duration + args.warmup + 300)
        for kind, times in mine.items():
            results[kind].extend(times)
        for kind, n in failed.items():
            errors[kind] += n
    for w in workers:
        w.join()
    if errors:
        print("errors:", dict(errors))
    return results


def ingest_worker(args) -> None:
    """A separate process: appends events and moves jobs between states until told to stop."""
    import django

    django.setup()
    from django.db import transaction

    from armada.core.states import EventType
    from armada.models import Job
    from armada.services.events import NewEvent, events_append

    rnd = random.Random(7)
    queued = list(
        Job.objects.filter(state="queued").values_list("id", "queue_id", "job_set")[:20000]
    )
    running = list(
        Job.objects.filter(state="running").values_list("id", "queue_id", "job_set")[:20000]
    )
    recent = list(Job.objects.order_by("-id").values_list("id", "queue_id", "job_set")[:50000])
    tick = 0.2
    per_tick = max(1, int(args.events_per_s * tick))
    sent = moved = 0
    t_start = time.time()
    while time.time() - t_start < args.duration:
        t0 = time.time()
        now = datetime.fromtimestamp(time.time(), UTC)
        with transaction.atomic():
            # A few state changes a tick: queued -> running, running -> succeeded.
            start = [queued.pop() for _ in range(min(4, len(queued)))]
            done = [running.pop() for _ in range(min(4, len(running)))]
            if start:
                Job.objects.filter(id__in=[j[0] for j in start]).update(
                    state="running", last_transition_at=now
                )
            if done:
                Job.objects.filter(id__in=[j[0] for j in done]).update(
                    state="succeeded", last_transition_at=now
                )
            running.extend(start)
            moved += len(start) + len(done)
            batch = [
                NewEvent(EventType.RUNNING, q, s, j, now, payload={"nodeName": "n"})
                for j, q, s in start
            ] + [NewEvent(EventType.SUCCEEDED, q, s, j, now) for j, q, s in done]
            while len(batch) < per_tick:
                j, q, s = rnd.choice(recent)
                batch.append(
                    NewEvent(
                        rnd.choice((EventType.PENDING, EventType.RUNNING, EventType.LEASED)),
                        q,
                        s,
                        j,
                        now,
                        payload={"clusterId": "cluster-1", "nodeName": "cluster-1-node-001"},
                    )
                )
            events_append(events=batch)
            sent += len(batch)
        time.sleep(max(0.0, tick - (time.time() - t0)))
    elapsed = time.time() - t_start
    print(f"ingest: {sent:,} events ({sent / elapsed:,.0f}/s), {moved:,} state changes", flush=True)


def report(results: dict[str, list[float]], duration: float) -> None:
    def pct(values: list[float], p: float) -> float:
        if len(values) == 1:
            return values[0]
        return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]

    total = sum(len(v) for v in results.values())
    print()
    print(f"{total:,} requests in {duration:.0f} s ({total / duration:.1f}/s)")
    print(f"| {'request':28} | count | p50 ms | p95 ms | p99 ms | max ms |")
    print(f"|{'-' * 30}|------:|-------:|-------:|-------:|-------:|")
    # Every kind, then the families the goals name: grid pages (first and deep, as the open
    # grid asks for them), groups (and expanding them), the side panel and the job page, the
    # live update's row read, and whole pages (a grid URL opened).
    families = {
        "ALL grid pages": ("table:", "deep:"),
        "ALL groups": ("group:", "expand:"),
        "ALL panel and job page": ("panel", "job"),
        "ALL rows": ("rows",),
        "ALL whole pages": ("load",),
    }
    rows = {kind: sorted(v) for kind, v in results.items()}
    for family, prefixes in families.items():
        rows[family] = sorted(x for k, v in results.items() if k.startswith(prefixes) for x in v)
    for kind in sorted(rows):
        v = rows[kind]
        if not v:
            continue
        print(
            f"| {kind:28} | {len(v):5} | {pct(v, 50) * 1000:6.0f} | {pct(v, 95) * 1000:6.0f} "
            f"| {pct(v, 99) * 1000:6.0f} | {v[-1] * 1000:6.0f} |"
        )
