"""What became of one report of a run (``services.run_reports`` says what each means)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    APPLIED = "applied"
    DUPLICATE = "duplicate"
    REFUSED = "refused"


@dataclass(frozen=True)
class ReportOutcome:
    outcome: Outcome
    reason: str = ""
