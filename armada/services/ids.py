"""Identifiers: lower-case ULIDs, sortable by creation time, valid in pod names."""

from __future__ import annotations

from ulid import ULID


def new_id() -> str:
    return str(ULID()).lower()
