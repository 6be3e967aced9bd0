"""A run's stored log: a bounded tail, grown by pieces while the run runs, replaced at its end.

While a pod runs, its executor sends what each container wrote since the last piece
(``LogPiece``: the container, the byte offset of the piece in that container's log, the
bytes). The server keeps, per run, how many bytes of each container it has (``offsets``) and
appends only what lies past that:

- a piece that ends at or before the offset is a **duplicate** (sent again after an answer
  was lost) and changes nothing;
- a piece that starts before the offset and ends past it adds only its new part;
- a piece that starts past the offset (the executor skipped bytes a pod wrote faster than
  it may send them) adds a line saying how many bytes were skipped, then its bytes.

So appending is idempotent: applying the same pieces again, in any grouping, gives the same
text. A pod of more than one container has its pieces headed ``==> <container> <==`` each
time the container changes (the executor names the container only then: a piece of a
one-container pod has the empty name).

The kept text is bounded to ``limit`` bytes of UTF-8. Older bytes are dropped from the front,
up to the start of a line when one is in reach, and the count of bytes dropped so far is
kept (``dropped``); the stored text then starts with one marker line saying so
(``marker_line``), which is not counted in the bound.

When the run ends the executor sends the tail of the whole log with its last report
(``finish``): it replaces the text unless the pieces reached the same end (then they are
kept, as they hold as much or more), the bytes known to come before it are counted as
dropped, and the log is **final**: a piece that comes after changes nothing.

Pure: no clock, no database. ``services.run_logs`` locks the run's log row and calls these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

#: The most containers one run's log keeps offsets for (a pod has far fewer).
MAX_CONTAINERS = 64
#: How much of the pieces' end is looked for in the final tail, to count what precedes it.
_PROBE = 256
_MARKER = "[log cut: the first {n} bytes were not kept]\n"


def marker_line(dropped: int) -> str:
    """The line that opens a stored log whose first ``dropped`` bytes were not kept."""
    return _MARKER.format(n=dropped) if dropped > 0 else ""


def skipped_line(count: int) -> str:
    return f"[log cut: {count} bytes were skipped here]\n"


def header_line(container: str) -> str:
    return f"==> {container} <==\n"


@dataclass(frozen=True)
class LogPiece:
    """Bytes ``data`` of ``container``'s log, starting at byte ``offset`` of it."""

    run_id: str
    container: str
    offset: int
    data: bytes


@dataclass(frozen=True)
class StoredLog:
    """What the server keeps of one run's log (``content`` without the marker line)."""

    content: str = ""
    dropped: int = 0
    offsets: Mapping[str, int] = field(default_factory=dict)
    container: str = ""
    final: bool = False

    @property
    def text(self) -> str:
        """The text readers get: the marker line (when bytes were dropped), then the kept
        content."""
        return marker_line(self.dropped) + self.content

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    @classmethod
    def of_text(
        cls,
        text: str,
        *,
        dropped: int = 0,
        offsets: Mapping[str, int] | None = None,
        container: str = "",
        final: bool = False,
    ) -> StoredLog:
        """A stored log from its stored ``text`` (with the marker line, if any)."""
        marker = marker_line(dropped)
        content = text[len(marker) :] if marker and text.startswith(marker) else text
        return cls(content, dropped, dict(offsets or {}), container, final)


def _storable(text: str) -> str:
    """``text`` as a database keeps it: a NUL (which no text column takes) becomes U+FFFD,
    like any byte that is not UTF-8."""
    return text.replace("\x00", "\ufffd")


def _bounded(data: bytes, limit: int) -> tuple[bytes, int]:
    """The tail of ``data`` within ``limit`` bytes, starting at a line when a line starts in
    it (else at a character), and how many bytes were cut from the front."""
    if len(data) <= limit:
        return data, 0
    cut = len(data) - max(limit, 0)
    newline = data.find(b"\n", cut - 1) if cut > 0 else -1
    if 0 <= newline < len(data) - 1:
        cut = newline + 1
    while cut < len(data) and data[cut] & 0xC0 == 0x80:  # not inside a character
        cut += 1
    return data[cut:], cut


def _joined(content: bytes, addition: bytes) -> bytes:
    """``addition`` (a header or marker line first) after ``content``, on a line of its own."""
    if content and not content.endswith(b"\n"):
        return content + b"\n" + addition
    return content + addition


@dataclass(frozen=True)
class Appended:
    log: StoredLog
    applied: bool
    reason: str = ""


def append(log: StoredLog, piece: LogPiece, limit: int) -> Appended:
    """``log`` with ``piece`` appended (see the module: duplicates and overlaps add nothing
    twice, a gap is marked), bounded to ``limit`` bytes."""
    if log.final:
        return Appended(log, False, "the run's final log is stored; later pieces change nothing")
    end = log.offsets.get(piece.container, 0)
    data, offset = piece.data, piece.offset
    if offset + len(data) <= end:
        return Appended(log, False, f"the log has bytes up to {end} already")
    if piece.container not in log.offsets and len(log.offsets) >= MAX_CONTAINERS:
        return Appended(log, False, f"a run's log keeps at most {MAX_CONTAINERS} containers")
    if offset < end:
        data, offset = data[end - offset :], end
    content = log.content.encode()
    if piece.container and piece.container != log.container:
        content = _joined(content, header_line(piece.container).encode())
    if offset > end:
        content = _joined(content, skipped_line(offset - end).encode())
    content += _storable(data.decode("utf-8", "replace")).encode()
    kept, cut = _bounded(content, limit)
    offsets = {**log.offsets, piece.container: offset + len(data)}
    return Appended(
        replace(
            log,
            content=kept.decode("utf-8", "replace"),
            dropped=log.dropped + cut,
            offsets=offsets,
            container=piece.container,
        ),
        True,
    )


def finish(log: StoredLog, text: str, limit: int) -> StoredLog:
    """``log`` replaced by the final tail ``text`` the executor sent with the run's end,
    bounded to ``limit`` bytes; final from now on. When the pieces reached the same end
    (the stored text ends with the tail) or the tail is empty, what they brought is kept:
    it holds as much or more. Bytes known to precede the tail (those the pieces brought,
    beyond it) count as dropped."""
    if not text:
        return replace(log, final=True)
    data = _storable(text).encode()
    content = log.content.encode()
    if content.endswith(data):
        return replace(log, final=True)  # the pieces reached the end, and hold as much
    kept, _ = _bounded(data, limit)
    known = log.dropped + len(content)
    probe = content[-_PROBE:]
    at = data.rfind(probe) if probe else -1
    # Where the pieces ended, found in the tail: the tail goes on past it. Not found: it
    # holds at least as much as the pieces saw.
    total = known + len(data) - (at + len(probe)) if at >= 0 else max(known, len(data))
    return replace(
        log, content=kept.decode("utf-8", "replace"), dropped=total - len(kept), final=True
    )
