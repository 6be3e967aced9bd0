"""Ids: valid lower-case ULIDs that keep the order they were made in."""

from __future__ import annotations

import time

from ulid import ULID

from armada.services.ids import new_id


def test_ids_are_lower_case_ulids_with_the_current_time():
    before = time.time()
    made = new_id()
    after = time.time()
    assert len(made) == 26
    assert made == made.lower()
    parsed = ULID.from_str(made.upper())
    assert before - 0.002 <= parsed.timestamp <= after + 0.002
    assert str(parsed).lower() == made


def test_ids_made_in_one_millisecond_still_increase():
    made = [new_id() for _ in range(10_000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
