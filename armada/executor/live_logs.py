"""The executor's side of live logs: what running pods write, sent while they run.

Each tick the agent hands over the pods it polled. For every held run whose pod runs, the
backend is asked (``backends.base.LogFollower``) what each container wrote since the last
read, at most once a ``PERIOD`` per run and at most ``PIECE_BYTES`` per container and read
(of more, only the last ``PIECE_BYTES``: the server keeps a bounded tail anyway, and a
skipped stretch is marked in the stored log). When the pod has ended, one last read takes
what it wrote at the end, so that the pieces reach the end of its log before the run's last
report (which carries the final tail, ``executor.pod_steps``) is sent; the run is then
followed no more.

Pieces are queued until the server answers for them (applied, duplicate or refused): a
report call that fails leaves them queued and they are sent again, which is harmless, as the
server appends only the bytes past what it has (``core.runlog``). While a container's piece
waits, the next read is joined to it, and the joined piece keeps only its last
``PIECE_BYTES``: what waits for an unreachable server stays bounded. A report call carries
at most ``CALL_BYTES`` of pieces (``take``); the rest goes with the next call.

The positions live in this process only: a restarted executor reads each log again from its
start (the backends skip to the last ``PIECE_BYTES``), and the server keeps what it lacks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from armada.core.runlog import LogPiece
from armada.executor.backends.base import LogPosition, LogRead, PodStatus

log = logging.getLogger(__name__)

#: The shortest time between two reads of one run's log (a tick a little early still reads:
#: ticks come about every ``tickPeriod``).
PERIOD = 1.0
EARLY = 0.2
#: The most bytes of one container a read (and a waiting piece) holds.
PIECE_BYTES = 64 * 1024
#: The most bytes of pieces one report call carries.
CALL_BYTES = 4 * 1024 * 1024


@dataclass
class _Followed:
    positions: dict[str, LogPosition] = field(default_factory=dict)
    read_at: datetime | None = None
    done: bool = False  # the pod ended and its last read was taken


class LiveLogs:
    def __init__(
        self, backend: object, *, period: float = PERIOD, piece_bytes: int = PIECE_BYTES
    ) -> None:
        self.read = getattr(backend, "read_log_since", None)
        self.period = period
        self.piece_bytes = piece_bytes
        self.runs: dict[str, _Followed] = {}
        self.outbox: dict[tuple[str, str], LogPiece] = {}

    @property
    def enabled(self) -> bool:
        return self.read is not None

    def observe(self, pods: Mapping[str, PodStatus], held: Iterable[str], now: datetime) -> None:
        """Read the logs that are due (see the module docstring)."""
        if self.read is None:
            return
        held = set(held)
        ran = {s.run_id: s for s in pods.values() if s.run_id in held and s.running_at}
        for run_id in self.runs.keys() - ran.keys():
            del self.runs[run_id]
        for run_id, status in ran.items():
            followed = self.runs.setdefault(run_id, _Followed())
            if followed.done:
                continue
            ended = status.finished_at is not None
            if not ended and not self._due(followed, now):
                continue
            followed.read_at = now
            followed.done = ended
            try:
                reads = self.read(status.name, followed.positions, self.piece_bytes, now)
            except Exception as exc:  # noqa: BLE001 - a log that cannot be read now waits
                log.warning("live log of pod %s: %s", status.name, exc)
                continue
            for read in reads or ():
                followed.positions[read.container] = read.position
                self._queue(run_id, read)

    def _due(self, followed: _Followed, now: datetime) -> bool:
        if followed.read_at is None:
            return True
        return (now - followed.read_at).total_seconds() >= self.period - EARLY

    def _queue(self, run_id: str, read: LogRead) -> None:
        if not read.data:
            return
        key = (run_id, read.container)
        waiting = self.outbox.get(key)
        offset, data = read.offset, read.data
        if waiting is not None and waiting.offset + len(waiting.data) == read.offset:
            offset, data = waiting.offset, waiting.data + read.data
        if len(data) > self.piece_bytes:
            cut = len(data) - self.piece_bytes
            while cut < len(data) and data[cut] & 0xC0 == 0x80:  # keep whole characters
                cut += 1
            offset, data = offset + cut, data[cut:]
        self.outbox[key] = LogPiece(run_id, read.container, offset, data)

    def take(self, budget: int = CALL_BYTES) -> list[LogPiece]:
        """The waiting pieces, oldest first, up to ``budget`` bytes (one at least); they
        stay queued until ``sent``."""
        out, size = [], 0
        for piece in self.outbox.values():
            size += len(piece.data)
            if out and size > budget:
                break
            out.append(piece)
        return out

    def sent(self, pieces: Iterable[LogPiece]) -> None:
        """The server answered for ``pieces``: forget them (a piece joined since stays)."""
        for piece in pieces:
            key = (piece.run_id, piece.container)
            if self.outbox.get(key) is piece:
                del self.outbox[key]
