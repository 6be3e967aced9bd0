"""docs/metrics.md's table of Armada's metrics, read back: name -> (type, labels, status)."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
STATUSES = ("exported", "no meaning here", "not yet")


def _rows() -> list[list[str]]:
    text = DOC.read_text()
    section = text.split("## Armada's names", 1)[1].split("\n## ", 1)[0]
    out = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith("`"):
            out.append(cells)
    return out


def doc_table() -> dict[str, tuple[str, tuple[str, ...], str, str]]:
    """Rows of the table under "Armada's names": name -> (type, labels, status, notes)."""
    out = {}
    for name, type_, labels, status, _, notes in _rows():
        labels_t = tuple(x.strip() for x in labels.split(",") if x.strip())
        out[name.strip("`")] = (type_, labels_t, status, notes)
    return out


def served_by() -> dict[str, str]:
    """The table's "served by" column: name -> where the metric is served."""
    return {cells[0].strip("`"): cells[4] for cells in _rows()}


def executor_served() -> set[str]:
    """The names each ``armada-executor`` serves itself (not the web process's ``/metrics``)."""
    return {name for name, where in served_by().items() if where.startswith("executor ")}
