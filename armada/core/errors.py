"""Domain errors raised by the pure core.

Every error names the place in the input it is about (``field``), so that an API can
answer with a message a person can act on and a CLI can point at the line to fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FieldError:
    """One problem with one field; ``field`` is a dotted path such as ``jobs[0].podSpec``."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass
class ValidationFailed(Exception):
    """Input was rejected. Nothing was changed. Carries every problem found, not just the first."""

    errors: list[FieldError] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        return "; ".join(str(e) for e in self.errors)

    def summary(self) -> str:
        """The first problem, and how many more: for a one-line message."""
        count = len(self.errors)
        if count <= 1:
            return str(self)
        return f"{self.errors[0]} (and {count - 1} more problems)"

    @classmethod
    def one(cls, field_name: str, message: str) -> ValidationFailed:
        return cls([FieldError(field_name, message)])
