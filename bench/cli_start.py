"""armadactl's start-up: from the process start to the first byte of its request (not a test).

A local socket server stands in for the control plane. For each run, the benchmark notes
the time, starts ``armadactl get queue bench --url http://127.0.0.1:<port>`` and waits for the
request to arrive; the time between the two is the start-up (interpreter, imports, parsing
the command line, reading the config, opening the connection). The server then answers a
small queue so the command ends normally; the time to the process's end is reported too.

Python's bytecode cache matters here: an installed armadactl has its ``.pyc`` files, while a
checkout run with ``PYTHONDONTWRITEBYTECODE=1`` compiles every module on every start. By
default the child processes get a bytecode cache of their own (``PYTHONPYCACHEPREFIX`` in a
temporary directory, filled by an uncounted first run), as an installed package has;
``--no-bytecode-cache`` measures without one.

Usage: .venv/bin/python bench/cli_start.py [--runs 20] [--no-bytecode-cache]
       [--armadactl .venv/bin/armadactl] [--pythonpath DIR] [armadactl arguments ...]

``--pythonpath DIR`` runs the ``armada`` package found in DIR (an older tree unpacked with
``git archive``, say) with this virtualenv's Python and packages, to compare versions like for
like. It starts Python with ``-S`` (the editable install's import hook would otherwise find
the checkout's package first), so ``site``'s own few milliseconds are left out of those runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUEUE = {
    "name": "bench",
    "priorityFactor": 1.0,
    "owners": [],
    "groupOwners": [],
    "labels": {},
    "retryPolicies": [],
    "cordoned": False,
}


class FirstByteServer:
    """Accepts connections; records when each one's first byte arrives, then answers the
    request with a queue (HTTP/1.1, Connection: close)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.arrivals: list[float] = []
        self.arrived = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(1)
                if not data:
                    continue
                self.arrivals.append(time.perf_counter())
                self.arrived.set()
                conn.settimeout(5)
                while b"\r\n\r\n" not in data:
                    more = conn.recv(65536)
                    if not more:
                        break
                    data += more
                body = json.dumps(QUEUE).encode()
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                ).encode()
                conn.sendall(head + body)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--armadactl", default=str(ROOT / ".venv/bin/armadactl"), help="the command to run"
    )
    parser.add_argument("--pythonpath", help="run the armada package of this directory")
    parser.add_argument("--no-bytecode-cache", action="store_true")
    parser.add_argument("command", nargs="*", default=["get", "queue", "bench"])
    args = parser.parse_args()

    server = FirstByteServer()
    url = f"http://127.0.0.1:{server.port}"
    with tempfile.TemporaryDirectory() as home:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("ARMADA_", "ARMADACTL_"))
        }
        env["HOME"] = home  # no config file of the person running it
        if args.no_bytecode_cache:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = os.path.join(home, "pycache")
        command = shlex.split(args.armadactl)
        if args.pythonpath:
            site_packages = sysconfig.get_path("purelib")
            env["PYTHONPATH"] = os.pathsep.join([args.pythonpath, site_packages])
            command = [
                str(ROOT / ".venv/bin/python"),
                "-S",
                "-c",
                "import sys; from armada.cli.main import main; sys.exit(main())",
            ]
        first_byte: list[float] = []
        whole: list[float] = []
        for _ in range(args.runs + 1):  # the first run warms the file cache; not counted
            server.arrived.clear()
            started = time.perf_counter()
            process = subprocess.Popen(
                [*command, *args.command, "--url", url],
                env=env,
                cwd=home,  # not the checkout: `python -c` puts the directory on sys.path
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            if not server.arrived.wait(60):
                process.kill()
                sys.exit(f"armadactl sent nothing within 60 s: {process.stderr.read().decode()}")
            arrival = server.arrivals[-1]
            _, err = process.communicate(timeout=60)
            ended = time.perf_counter()
            if process.returncode != 0:
                sys.exit(f"armadactl failed ({process.returncode}): {err.decode()}")
            first_byte.append(arrival - started)
            whole.append(ended - started)
        first_byte, whole = first_byte[1:], whole[1:]

    def ms(value: float) -> str:
        return f"{value * 1000:.0f} ms"

    cache = "no bytecode cache" if args.no_bytecode_cache else "bytecode cached"
    print(f"armadactl {' '.join(args.command)} --url {url}  ({args.runs} runs, {cache})")
    print(
        f"first byte sent: median {ms(statistics.median(first_byte))}, "
        f"p95 {ms(percentile(first_byte, 0.95))}, min {ms(min(first_byte))}"
    )
    print(
        f"whole command:   median {ms(statistics.median(whole))}, "
        f"p95 {ms(percentile(whole, 0.95))}, min {ms(min(whole))}"
    )


if __name__ == "__main__":
    main()
