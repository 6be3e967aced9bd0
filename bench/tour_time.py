"""How long a newcomer waits, on a fresh clone, from ``make run`` to the README tour's first
retried out-of-memory job, the install included (not a test).

Run it from a fresh clone (no ``.venv``, no ``node_modules``, no ``var``) with the system's
Python, since the project is not installed yet:

  git clone <repository> /tmp/tour-clone && cd /tmp/tour-clone
  python3 bench/tour_time.py [--with-caches]

It starts the README's ``start`` block as written (``ARMADA_CONFIG=config/examples/tour.yaml
make run``: venv, pip install, npm ci, migrate, start), then runs the tour's ``login``,
``policy`` and ``oom`` blocks with bash as soon as the web process answers, and reports the
time since ``make run`` began at each milestone: runall's "Armada is up", the web process
answering, logged in, policy and queue created, the OOM job submitted, its first ``failed``
event with ``retryable: true`` (the first retry decided) and the job succeeded.

To measure what a new machine pays, pip and npm start with empty caches (``PIP_NO_CACHE_DIR``,
an empty ``npm_config_cache``) unless ``--with-caches``. The web and gRPC ports are free ones
(``ARMADA_PORT``, ``ARMADA_GRPC_ADDR``, ``ARMADA_URL``), since 8000 and 50051 may be taken,
and armadactl's config file is a temporary one (``ARMADACTL_CONFIG``) rather than
``~/.armadactl.yaml``. Everything started is stopped at the end (Ctrl-C to ``make run``'s
process group), and the local executor's pods are cleared away.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.tour.readme_tour import (  # noqa: E402 - the clone's own copy, stdlib only
    clean_environment,
    free_port,
    remove_local_pods,
    start_environment,
    stop_group,
    tour_blocks,
)


def machine() -> str:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = Path("/proc/meminfo").read_text().split()[1]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} cpus ({cpu}), "
        f"{int(mem) // 1024 // 1024} GiB, Python {platform.python_version()}, "
        f"load average at start {load}"
    )


def get_json(url: str, token: str) -> object:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return [json.loads(line) for line in answer.read().decode().splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--with-caches", action="store_true", help="let pip and npm use caches")
    parser.add_argument("--timeout", type=float, default=900, help="seconds before giving up")
    args = parser.parse_args()
    for leftover in (".venv", "node_modules", "var"):
        if (ROOT / leftover).exists():
            parser.error(f"{ROOT / leftover} exists: run this in a fresh clone")

    blocks = {b.name: b for b in tour_blocks((ROOT / "README.md").read_text())}
    work = Path(tempfile.mkdtemp(prefix="tour-time-"))
    port = free_port()
    env = clean_environment(os.environ)
    env.update(
        ARMADA_PORT=str(port),
        ARMADA_GRPC_ADDR=f"127.0.0.1:{free_port()}",
        ARMADA_URL=f"http://127.0.0.1:{port}",
        ARMADACTL_CONFIG=str(work / "armadactl.yaml"),
        PYTHONUNBUFFERED="1",
    )
    if not args.with_caches:
        env.update(PIP_NO_CACHE_DIR="1", npm_config_cache=str(work / "npm-cache"))
    run_env = {**env, **start_environment(blocks["start"])}
    # The tour's second terminal has the venv activated (its login step does it).
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    log_path = work / "make-run.log"
    print(f"machine: {machine()}")
    print(f"command: {blocks['start'].code.strip()}   (in {ROOT}; log {log_path})")

    marks: list[tuple[str, float]] = []
    t0 = time.monotonic()

    def mark(what: str) -> None:
        marks.append((what, time.monotonic() - t0))
        print(f"{marks[-1][1]:7.1f} s  {what}", flush=True)

    def waiting(what: str, predicate, interval: float = 0.2):
        while time.monotonic() - t0 < args.timeout:
            value = predicate()
            if value:
                return value
            if make.poll() is not None:
                raise SystemExit(f"make run exited with {make.returncode}; see {log_path}")
            time.sleep(interval)
        raise SystemExit(f"gave up waiting for {what} after {args.timeout:.0f} s; see {log_path}")

    def web_answers() -> bool:
        try:
            with urllib.request.urlopen(f"{env['ARMADA_URL']}/healthz", timeout=10) as answer:
                return answer.status == 200
        except OSError:
            return False

    def block(name: str) -> None:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", blocks[name].code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=args.timeout,
        )
        if done.returncode:
            raise SystemExit(f"tour step {name} failed:\n{done.stdout}\n{done.stderr}")

    with open(log_path, "w") as log:
        make = subprocess.Popen(
            ["make", "run"],
            cwd=ROOT,
            env=run_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    oom: subprocess.Popen | None = None
    try:
        waiting("pip install", lambda: (ROOT / ".venv" / "bin" / "armadactl").exists())
        mark("pip install done (.venv/bin/armadactl is there)")
        waiting("npm ci", lambda: (ROOT / "node_modules" / ".package-lock.json").exists())
        mark("npm ci done")
        waiting("the install", lambda: "admin user:" in log_path.read_text(errors="replace"))
        mark("migrated, static files collected (runall printed the admin password)")
        waiting("runall", lambda: "Armada is up at" in log_path.read_text(errors="replace"))
        mark("runall: Armada is up")
        waiting("the web process", web_answers)
        mark("the web process answers")
        block("login")
        mark("logged in (tour step login)")
        block("policy")
        mark("policy created and attached (tour step policy)")
        oom_log = work / "oom-step.log"
        with open(oom_log, "w") as out:
            oom = subprocess.Popen(
                ["bash", "-e", "-o", "pipefail", "-c", blocks["oom"].code],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        waiting(
            "the oom step's job id",
            lambda: oom_log.read_text().startswith("job ") or oom.poll() is not None,
        )
        if not oom_log.read_text().startswith("job "):
            raise SystemExit(f"the oom step failed:\n{oom_log.read_text()}")
        mark("OOM job submitted (tour step oom)")
        token = _config_token(work / "armadactl.yaml")
        events_url = f"{env['ARMADA_URL']}/api/v1/job-sets/tour/oom/events"

        def first_retry() -> bool:
            events = get_json(events_url, token)
            return any(e["type"] == "failed" and e.get("retryable") for e in events)

        waiting("the first retry", first_retry)
        mark("first retried OOM job: failed event with retryable: true")
        waiting("the oom step to end", lambda: oom.poll() is not None)
        if oom.returncode:
            raise SystemExit(f"the oom step failed with {oom.returncode}")
        mark("OOM job succeeded after its retries (the watch ended)")
    finally:
        if oom is not None:
            stop_group(oom, first=signal.SIGTERM, grace=5)
        stop_group(make)
        for state_dir in (ROOT / "var" / "executors").glob("*"):
            remove_local_pods(state_dir)
    print("\n| milestone | seconds since `make run` |\n|---|---|")
    for what, at in marks:
        print(f"| {what} | {at:.1f} |")
    return 0


def _config_token(path: Path) -> str:
    """The token ``armadactl login`` stored (the file's top-level ``token:``)."""
    for line in path.read_text().splitlines():
        if line.startswith("token:"):
            return line.split(":", 1)[1].strip().strip("'\"")
    raise SystemExit(f"no token in {path}")


if __name__ == "__main__":
    sys.exit(main())
