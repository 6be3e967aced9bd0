"""The clients of ``bench/concurrency.py``, each kind in a process of its own so that the
benchmark's own Python does not slow what it measures:

- ``run_watchers``: event-stream watchers on one asyncio loop, raw HTTP/1.1 over
  ``asyncio`` streams (chunked NDJSON), each following one job set from the start and
  resuming from its last event id after a dropped connection;
- ``run_load``: submitting clients (threads, an API token each, paced to a rate) and
  Lookout users (threads, logged in through Lookout's login page, browsing with a pause).

Every request is recorded as ``(wall-clock start, kind, status, seconds)``; status 0 is a
connection error or a timeout. Results are pickled to a file for the parent.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import random
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

Record = tuple[float, str, int, float]


@dataclass
class WatcherResult:
    queue: str
    job_set: str
    ids: list[int] = field(default_factory=list)  # in arrival order
    duplicates: int = 0
    connects: int = 0
    drops: int = 0  # streams that broke after they had opened


@dataclass
class WatchersReport:
    watchers: list[WatcherResult]
    lags: dict[str, list[float]]  # per event type: seconds from ``created`` to arrival
    arrivals: list[float]  # wall-clock arrival of every event
    requests: list[Record]
    cpu_seconds: float = 0.0


async def _watch(
    host: str,
    port: int,
    token: str,
    result: WatcherResult,
    report: WatchersReport,
    stop: asyncio.Event,
    connected: asyncio.Event,
) -> None:
    last = 0
    seen: set[int] = set()
    while not stop.is_set():
        started = time.time()
        writer = None
        streaming = False
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
            path = f"/api/v1/job-sets/{result.queue}/{result.job_set}/events?watch=true&from={last}"
            writer.write(
                f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                "Accept: application/x-ndjson\r\n\r\n".encode()
            )
            status, chunked = await asyncio.wait_for(_read_head(reader), 60)
            report.requests.append((started, "watch", status, time.time() - started))
            if status != 200:
                await asyncio.sleep(1.0)
                continue
            result.connects += 1
            streaming = True
            connected.set()
            buffer = b""
            async for data in _body(reader, chunked):
                arrived = time.time()
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    event_id = event["id"]
                    if event_id in seen:
                        result.duplicates += 1
                        continue
                    seen.add(event_id)
                    result.ids.append(event_id)
                    last = max(last, event_id)
                    created = datetime.fromisoformat(event["created"]).timestamp()
                    report.lags.setdefault(event["type"], []).append(arrived - created)
                    report.arrivals.append(arrived)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            if streaming:
                result.drops += 1
            else:  # refused, or no answer: a failed request
                report.requests.append((started, "watch", 0, time.time() - started))
        finally:
            if writer is not None:
                writer.close()
        if not stop.is_set():
            await asyncio.sleep(0.5)  # the stream ended or broke: resume from ``last``


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    chunked = any(
        line.lower().startswith("transfer-encoding:") and "chunked" in line.lower()
        for line in lines[1:]
    )
    if status != 200:  # read a short error body so that the connection can go
        length = next(
            (
                int(line.split(":")[1])
                for line in lines
                if line.lower().startswith("content-length")
            ),
            0,
        )
        if length:
            await reader.readexactly(length)
    return status, chunked


async def _body(reader: asyncio.StreamReader, chunked: bool):
    """The body's bytes as they arrive (chunked, or until the server closes)."""
    if not chunked:
        while data := await reader.read(65536):
            yield data
        return
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            return
        data = await reader.readexactly(size + 2)
        yield data[:-2]


def run_watchers(
    host: str,
    port: int,
    token: str,
    job_sets: list[tuple[str, str]],
    connect_rate: float,
    ready: Any,
    stop: Any,
    result_path: str,
) -> None:
    """One watcher per ``(queue, job set)``; ``ready`` is set once every watcher has its
    stream open; runs until ``stop`` is set, then pickles a ``WatchersReport``."""
    report = WatchersReport(
        watchers=[WatcherResult(q, js) for q, js in job_sets], lags={}, arrivals=[], requests=[]
    )

    async def main() -> None:
        stop_local = asyncio.Event()
        flags = [asyncio.Event() for _ in report.watchers]
        tasks = []
        for watcher, flag in zip(report.watchers, flags, strict=True):
            tasks.append(
                asyncio.create_task(_watch(host, port, token, watcher, report, stop_local, flag))
            )
            await asyncio.sleep(1 / connect_rate)  # not all at once
        while not all(flag.is_set() for flag in flags):
            await asyncio.sleep(0.2)
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.2)
        stop_local.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
    report.cpu_seconds = time.process_time()
    Path(result_path).write_bytes(pickle.dumps(report))


# -- submitting clients and Lookout users ------------------------------------------------


@dataclass
class LoadReport:
    requests: list[Record]
    job_ids: list[list[str]]  # per client: every id the API answered with
    behind: list[float]  # per client: seconds behind its schedule at the end
    cpu_seconds: float = 0.0


def job_spec(rnd: random.Random, fail_share: float) -> dict[str, Any]:
    """One job of 100m cpu running 1-3 s on the fake backend; ``fail_share`` of them fail,
    half out of memory (retried by the policy, then failed by its limit), half with exit
    code 1 (failed by a rule at once)."""
    annotations = {"fake.armadaproject.io/duration": f"{rnd.randint(1, 3)}s"}
    draw = rnd.random()
    if draw < fail_share / 2:
        annotations["fake.armadaproject.io/condition"] = "OOMKilled"
    elif draw < fail_share:
        annotations["fake.armadaproject.io/exitCode"] = "1"
    resources = {"cpu": "100m", "memory": "128Mi"}
    container = {"name": "main", "image": "busybox:latest", "command": ["true"]}
    container["resources"] = {"requests": resources, "limits": resources}
    return {"priority": 0, "annotations": annotations, "podSpec": {"containers": [container]}}


def _submitter(
    base: str,
    token: str,
    queue: str,
    job_sets: list[str],
    rate: float,
    per_request: int,
    fail_share: float,
    seed: int,
    stop: Any,
    out: list[Record],
    ids: list[str],
    behind: list[float],
) -> None:
    import requests

    rnd = random.Random(seed)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    interval = per_request / rate
    started = time.monotonic()
    sent = 0
    while not stop.is_set():
        pause = started + sent * interval - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        body = {
            "queue": queue,
            "jobSetId": job_sets[sent % len(job_sets)],
            "jobs": [job_spec(rnd, fail_share) for _ in range(per_request)],
        }
        sent += 1
        at = time.time()
        try:
            response = session.post(f"{base}/api/v1/jobs", json=body, timeout=60)
            out.append((at, "submit", response.status_code, time.time() - at))
            if response.status_code == 201:
                ids.extend(response.json()["jobIds"])
        except requests.RequestException:
            out.append((at, "submit", 0, time.time() - at))
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {token}"
    behind.append(max(0.0, time.monotonic() - (started + sent * interval)))


def lookout_login(base: str, username: str, password: str):
    import requests

    session = requests.Session()
    page = session.get(f"{base}/login", timeout=60)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    response = session.post(
        f"{base}/login",
        data={"username": username, "password": password, "csrfmiddlewaretoken": csrf},
        headers={"Referer": f"{base}/login"},
        allow_redirects=False,
        timeout=60,
    )
    if response.status_code != 302:
        raise RuntimeError(f"Lookout login of {username} failed: {response.status_code}")
    return session


def _lookout_user(
    base: str,
    username: str,
    password: str,
    think: float,
    seed: int,
    stop: Any,
    out: list[Record],
    job_ids: list[list[str]],
) -> None:
    import requests

    rnd = random.Random(seed)
    session = lookout_login(base, username, password)
    pages = ["jobs", "job", "queues", "policies", "decisions"]
    while not stop.is_set():
        page = rnd.choice(pages)
        known = [ids for ids in job_ids if ids]
        if page == "job" and not known:
            page = "jobs"
        path = {
            "jobs": "/",
            "job": f"/jobs/{rnd.choice(rnd.choice(known))}" if known else "/",
            "queues": "/queues/",
            "policies": "/policies/",
            "decisions": "/metrics/decisions",
        }[page]
        at = time.time()
        try:
            response = session.get(base + path, timeout=60, allow_redirects=False)
            status = response.status_code
            if status == 302:  # logged out (a restarted process keeps sessions; be sure)
                session = lookout_login(base, username, password)
        except (requests.RequestException, RuntimeError, AttributeError):
            status = 0
        out.append((at, f"lookout:{page}", status, time.time() - at))
        time.sleep(rnd.uniform(0, 2 * think))


def run_load(
    base: str,
    queue: str,
    tokens: list[str],
    job_sets: list[list[str]],
    rate: float,
    per_request: int,
    fail_share: float,
    users: list[tuple[str, str]],
    think: float,
    stop: Any,
    result_path: str,
) -> None:
    """``len(tokens)`` clients each submitting ``rate`` jobs/s to their ``job_sets`` and the
    Lookout ``users`` browsing, until ``stop``; pickles a ``LoadReport``."""
    out: list[Record] = []
    ids: list[list[str]] = [[] for _ in tokens]
    behind: list[float] = []
    threads = [
        threading.Thread(
            target=_submitter,
            args=(base, token, queue, sets, rate, per_request, fail_share, i, stop, out)
            + (ids[i], behind),
        )
        for i, (token, sets) in enumerate(zip(tokens, job_sets, strict=True))
    ]
    threads += [
        threading.Thread(
            target=_lookout_user,
            args=(base, name, password, think, 100 + i, stop, out, ids),
        )
        for i, (name, password) in enumerate(users)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    Path(result_path).write_bytes(
        pickle.dumps(
            LoadReport(requests=out, job_ids=ids, behind=behind, cpu_seconds=time.process_time())
        )
    )
