"""``armadactl logs -f RUN_ID``: print a run's log as it grows, until the run ends.

The server keeps a bounded tail of each run's log (``GET /api/v1/runs/{id}/log``): ``log``
is the kept text, after a marker line when the first ``dropped`` bytes were not kept. So
every byte has a place, ``dropped`` plus its place in the kept text, and following prints
what lies past the place printed so far. When the log grew faster than it was read and
bytes between were dropped, a note on stderr says how many; the text goes to stdout as it
is. The log is read about once a ``interval``; once the run has ended (its last read
carries its final log), the command returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from armada.core.runlog import marker_line
from armada.core.states import RunState


def _ended(state: Any) -> bool:
    try:
        return RunState(str(state)).terminal
    except ValueError:
        return False  # a state this armadactl does not know: keep following


def _kept(entry: dict[str, Any]) -> tuple[int, bytes, str]:
    """(where the kept text starts in the whole log, the kept text's bytes, the text)."""
    text = entry.get("log") or ""
    dropped = int(entry.get("dropped") or 0)
    marker = marker_line(dropped)
    content = text[len(marker) :] if marker and text.startswith(marker) else text
    return dropped, content.encode(), text


def follow_log(
    read: Callable[[], dict[str, Any]],
    write: Callable[[str], None],
    note: Callable[[str], None],
    *,
    interval: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Print the log ``read`` returns as it grows (see the module); returns the last read."""
    printed: int | None = None
    while True:
        entry = read()
        start, data, text = _kept(entry)
        end = start + len(data)
        if printed is None:
            if text:
                write(text)
            printed = end
        elif end > printed:
            if printed < start:
                note(f"[{start - printed} bytes were written and dropped before they were read]")
                write(data.decode("utf-8", "replace"))
            else:
                write(data[printed - start :].decode("utf-8", "replace"))
            printed = end
        if _ended(entry.get("runState")):
            return entry
        sleep(interval)
