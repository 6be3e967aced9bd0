"""A token bucket for the scheduler's lease rate: ``rate`` tokens a second, at most ``burst``
saved up. The caller passes the time in (seconds, any monotonic origin); nothing here reads a
clock."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TokenBucket:
    """``rate`` <= 0 means no limit: :meth:`available` is always ``unlimited``.

    Invariant: ``0 <= tokens <= burst``. A bucket starts full, so the first cycle after a
    start may lease a whole burst. Time going backwards adds nothing (and takes nothing)."""

    rate: float
    burst: int
    tokens: float = -1.0
    last: float | None = None

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = float(self.burst)

    def _refill(self, now: float) -> None:
        if self.last is not None and now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.rate)
        if self.last is None or now > self.last:
            self.last = now

    def available(self, now: float, unlimited: int) -> int:
        """Whole tokens that may be spent at ``now`` (``unlimited`` when there is no limit)."""
        if self.rate <= 0:
            return unlimited
        self._refill(now)
        return min(unlimited, int(self.tokens))

    def take(self, now: float, n: int) -> None:
        """Spend ``n`` tokens (never below zero)."""
        if self.rate <= 0 or n <= 0:
            return
        self._refill(now)
        self.tokens = max(0.0, self.tokens - n)
