#!/usr/bin/env python3
"""Keep ``armada/core`` pure: no framework, I/O, clock or randomness inside.

The core holds the decisions (scheduling, retries, validation) and must be testable as plain
functions: time, ids and randomness are passed in. This check fails on
- imports of Django, Celery, kombu, Redis, DRF, drf-spectacular, psycopg, requests, or of any
  other ``armada`` package than ``armada.core``;
- imports of clock, randomness or process modules (time, random, secrets, uuid, os, socket,
  subprocess, threading);
- calls of ``datetime.now()``, ``datetime.utcnow()``, ``date.today()`` and ``datetime.today()``.
Usage: ``check_core_purity.py [DIR]`` (default ``armada/core``); exits 1 listing each offence.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

FORBIDDEN_MODULES = {
    "django",
    "celery",
    "kombu",
    "redis",
    "rest_framework",
    "drf_spectacular",
    "psycopg",
    "psycopg2",
    "requests",
    "time",
    "random",
    "secrets",
    "uuid",
    "os",
    "socket",
    "subprocess",
    "threading",
    "ulid",
}
CLOCK_CALLS = {"now", "utcnow", "today"}


def offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names = []
        for name in names:
            top = name.split(".")[0]
            if top in FORBIDDEN_MODULES:
                found.append(f"{path}:{node.lineno}: imports {name}")
            elif top == "armada" and not (name == "armada.core" or name.startswith("armada.core.")):
                found.append(
                    f"{path}:{node.lineno}: imports {name} (core may import only armada.core)"
                )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            base = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if node.func.attr in CLOCK_CALLS and base in ("datetime", "date"):
                found.append(
                    f"{path}:{node.lineno}: reads the clock ({base}.{node.func.attr}()); pass `now` in"
                )
    return found


def main(argv: list[str]) -> int:
    root = (
        Path(argv[1])
        if len(argv) > 1
        else Path(__file__).resolve().parent.parent / "armada" / "core"
    )
    problems = [p for f in sorted(root.rglob("*.py")) for p in offences(f)]
    for p in problems:
        print(p)
    if problems:
        print(f"armada/core is not pure: {len(problems)} offence(s)")
        return 1
    print(f"armada/core is pure ({len(list(root.rglob('*.py')))} files checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
