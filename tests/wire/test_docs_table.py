"""The README lists every method of Armada's five services, its REST gateway path and
whether we serve it: this test keeps that table true of the registry and the protos."""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf import descriptor_pool

from armada.wire.http_rules import http_rules
from armada.wire.registry import SERVICES, load_operations

DOC = Path(__file__).resolve().parents[2] / "README.md"
START = "<!-- operations table: checked by tests/wire/test_docs_table.py -->"
END = "<!-- end of operations table -->"
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*(.+?)\s*\|\s*(yes|planned)\s*\|$")


def expected_rows() -> list[tuple[str, str, str]]:
    """(method, gateway path, served) for every method of the services, in proto order."""
    served = load_operations()
    paths: dict[str, list[str]] = {}
    for rule in http_rules():
        paths.setdefault(rule.method, []).append(f"`{rule.verb} {rule.template}`")
    rows = []
    for service in SERVICES:
        for method in descriptor_pool.Default().FindServiceByName(service).methods:
            name = f"{service}/{method.name}"
            path = ", ".join(paths.get(name, [])) or "-"
            rows.append((name, path, "yes" if name in served else "planned"))
    return rows


def table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| gRPC method | REST gateway | served |", "|---|---|---|"]
    lines += [f"| `{name}` | {path} | {served} |" for name, path, served in rows]
    return "\n".join(lines)


def documented_rows() -> list[tuple[str, str, str]]:
    text = DOC.read_text()
    assert START in text and END in text, f"{DOC} lost its table markers"
    body = text.split(START, 1)[1].split(END, 1)[0]
    rows = []
    for line in body.strip().splitlines()[2:]:  # after the header and its rule
        match = ROW.match(line.strip())
        assert match, f"not a row of the operations table: {line!r}"
        rows.append(match.groups())
    return rows


def test_the_operations_table_matches_the_registry_and_the_protos():
    expected = expected_rows()
    assert documented_rows() == expected, (
        f"{DOC.name}'s operations table is out of date; it should read:\n\n{table(expected)}\n"
    )


def test_the_table_covers_every_method_once():
    names = [name for name, _, _ in documented_rows()]
    assert len(names) == len(set(names))
    assert len(names) == sum(
        len(descriptor_pool.Default().FindServiceByName(s).methods) for s in SERVICES
    )
