"""The Lookout benchmark's in-process part (``bench/lookout.py``): each kind of request once
through Django's test client, every query it issued run again under ``EXPLAIN ANALYZE``."""

from __future__ import annotations

import re
import time


def explain_views(filters, deep, jobs_info, threshold_s: float, show_plans: bool, plan_ms: float):
    """Requests each kind a few times in-process, EXPLAIN ANALYZEs every query it issued and
    prints the slowest per kind, and any over ``threshold_s``."""
    import random

    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from lookout_load import request_kinds, url_for

    client = Client(HTTP_HOST="localhost")
    client.force_login(get_user_model().objects.get(username="bench"))
    rnd = random.Random(3)
    cases = [
        (kind, url_for(kind, rnd, filters, deep, jobs_info))
        for kind, _ in request_kinds(filters, jobs_info)
        for _ in range(3)
    ]
    print()
    print("in-process (one request at a time, no load): view time, SQL time, slowest query")
    over: list[tuple[float, str, str]] = []
    for kind, url in cases:
        with CaptureQueriesContext(connection) as ctx:
            t0 = time.perf_counter()
            response = client.get(url)
            elapsed = time.perf_counter() - t0
        assert response.status_code == 200, (url, response.status_code)
        sql_s = sum(float(q["time"]) for q in ctx.captured_queries)
        worst = (0.0, "", "")
        for q in ctx.captured_queries:
            if not q["sql"].lstrip().upper().startswith("SELECT"):
                continue
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + q["sql"])
                plan = "\n".join(r[0] for r in cursor.fetchall())
            ms = float(re.search(r"Execution Time: ([\d.]+) ms", plan).group(1))
            if ms > worst[0]:
                worst = (ms, q["sql"], plan)
            if ms > threshold_s * 1000:
                over.append((ms, url, q["sql"]))
        print(
            f"  {kind:28} {elapsed * 1000:7.1f} ms view, {sql_s * 1000:7.1f} ms SQL "
            f"({len(ctx.captured_queries)} queries); slowest {worst[0]:7.1f} ms  {url[:70]}"
        )
        if show_plans and worst[0] > plan_ms:
            print("    " + worst[1][:400])
            print("    " + worst[2].replace("\n", "\n    "))
    print(f"queries over {threshold_s:g} s: {len(over)}")
    for ms, url, sql in sorted(over, reverse=True):
        print(f"  {ms:8.1f} ms  {url}\n    {sql[:500]}")
