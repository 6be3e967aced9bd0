"""docs/metrics.md's table of Armada's metrics, read back: name -> (type, labels, status)."""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
STATUSES = ("exported", "no meaning here", "not yet")


def doc_table() -> dict[str, tuple[str, tuple[str, ...], str, str]]:
    """Rows of the table under "Armada's names": name -> (type, labels, status, notes)."""
    text = DOC.read_text()
    section = text.split("## Armada's names", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or not cells[0].startswith("`"):
            continue
        name, type_, labels, status, _, notes = cells
        labels_t = tuple(x.strip() for x in labels.split(",") if x.strip())
        out[name.strip("`")] = (type_, labels_t, status, notes)
    return out
