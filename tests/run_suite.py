"""The whole test suite in three pytest processes at once (``make test``).

- ``main`` runs what no other group names: the browser, the wire protocols, the CLI, the
  executors;
- ``e2e`` runs the end-to-end tests, whose time goes mostly to processes they start and wait
  for;
- ``side`` runs the tests that start no process of their own (the pure core, the REST API,
  Lookout's pages, the services).

Each group but ``main`` has its own database (``DATABASE_URL``'s with ``_<group>`` added,
so its test database is another) and its own Redis database, so no group sees another's
rows, keys or wake-up channels. The other groups' reports are printed after the main one's;
the exit status fails if any failed.

    python tests/run_suite.py [pytest arguments for every group]
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile

#: The groups run beside ``main``, each with its paths, in the order their reports print.
GROUPS: dict[str, list[str]] = {
    "e2e": ["tests/e2e"],
    "side": ["tests/core", "tests/api", "tests/lookout", "tests/services"],
}
REDIS_DATABASES = 16  # Redis's default number of databases


def redis_numbers(main: int, count: int) -> list[int]:
    """Redis database numbers for ``count`` groups beside a suite on database ``main``. A
    suite's tests use its number ``n`` and the processes they start use ``n - 1``
    (``tests.e2e.conftest.process_env``), so every group gets a pair that no other group
    touches, counting down from 15; neither number is ever 0, the one a plain URL uses."""
    used = {main % REDIS_DATABASES, (main - 1) % REDIS_DATABASES}
    numbers: list[int] = []
    for n in range(REDIS_DATABASES - 1, 1, -1):
        if len(numbers) == count:
            break
        if not {n, n - 1} & used:
            numbers.append(n)
            used |= {n, n - 1}
    if len(numbers) < count:
        raise ValueError(f"no {count} free pairs of Redis databases beside /{main}")
    return numbers


def group_env(env: dict[str, str], index: int, name: str) -> dict[str, str]:
    """``env`` for the ``index``-th group beside ``main`` (from 1): ``DATABASE_URL``'s
    database name with ``_<name>`` added, and ``REDIS_URL``'s database number the
    ``index``-th of ``redis_numbers``; each only when set."""
    out = dict(env)
    database = env.get("DATABASE_URL", "")
    if database:
        base, _, query = database.partition("?")
        out["DATABASE_URL"] = f"{base}_{name}" + (f"?{query}" if query else "")
    redis = env.get("REDIS_URL", "")
    if redis:
        found = re.search(r"/(\d+)$", redis)
        number = int(found.group(1)) if found else 0
        other = redis_numbers(number, index)[index - 1]
        out["REDIS_URL"] = (redis[: found.start()] if found else redis.rstrip("/")) + f"/{other}"
    return out


def main(args: list[str]) -> int:
    pytest = [sys.executable, "-m", "pytest", *args]
    with contextlib.ExitStack() as stack:
        logs = {name: stack.enter_context(tempfile.TemporaryFile("w+")) for name in GROUPS}
        beside = {
            name: subprocess.Popen(
                [*pytest, *paths],
                stdout=logs[name],
                stderr=subprocess.STDOUT,
                env=group_env(dict(os.environ), index, name),
            )
            for index, (name, paths) in enumerate(GROUPS.items(), start=1)
        }
        ignored = [f"--ignore={p}" for paths in GROUPS.values() for p in paths]
        statuses: list[int] = []
        try:
            statuses.append(subprocess.call([*pytest, *ignored]))
        finally:
            statuses += [process.wait() for process in beside.values()]
        for name, log in logs.items():
            log.seek(0)
            print(f"== {name}: {', '.join(GROUPS[name])} (run beside the rest)", flush=True)
            sys.stdout.write(log.read())
    return 0 if all(status == 0 for status in statuses) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
