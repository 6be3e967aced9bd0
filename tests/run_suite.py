"""The whole test suite in two pytest processes at once, one per core (``make test``).

The side process runs the tests that start no process of their own (the pure core, the REST
API, Lookout's pages, the services); the main process runs the rest (end to end, the browser, the
executors, the races). Each has its own database (the side's is ``DATABASE_URL``'s with
``_side`` added, so its test database is another) and its own Redis database, so neither
sees the other's rows, keys or wake-up channels. The side's report is printed after the
main one's; the exit status fails if either failed.

    python tests/run_suite.py [pytest arguments for both]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

SIDE = ["tests/core", "tests/api", "tests/lookout", "tests/services"]


def side_env(env: dict[str, str]) -> dict[str, str]:
    out = dict(env)
    database = env.get("DATABASE_URL", "")
    if database:
        base, _, query = database.partition("?")
        out["DATABASE_URL"] = f"{base}_side" + (f"?{query}" if query else "")
    redis = env.get("REDIS_URL", "")
    if redis:
        found = re.search(r"/(\d+)$", redis)
        number = int(found.group(1)) if found else 0
        other = 13 if number == 15 else 15
        out["REDIS_URL"] = (redis[: found.start()] if found else redis.rstrip("/")) + f"/{other}"
    return out


def main(args: list[str]) -> int:
    pytest = [sys.executable, "-m", "pytest", *args]
    with tempfile.TemporaryFile("w+") as log:
        side = subprocess.Popen(
            [*pytest, *SIDE], stdout=log, stderr=subprocess.STDOUT, env=side_env(dict(os.environ))
        )
        try:
            main_status = subprocess.call([*pytest, *(f"--ignore={p}" for p in SIDE)])
        finally:
            side_status = side.wait()
        log.seek(0)
        print(f"== {', '.join(SIDE)} (run beside the rest)", flush=True)
        sys.stdout.write(log.read())
    return 0 if main_status == 0 and side_status == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
