"""Ids keep the order they were made in when the clock steps back and when threads make
them at once; ids made for a given moment have the public format."""

from __future__ import annotations

import threading

import pytest
from ulid import ULID

from armada.services import ids


class SteppingClock:
    """A stand-in for the ``time`` module whose clock reads the nanoseconds it is given."""

    def __init__(self, readings: list[int]) -> None:
        self.readings = readings

    def time_ns(self) -> int:
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]


def test_ids_still_increase_when_the_clock_steps_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ids, "_last_millis", 0)
    second = 1_000_000_000
    readings = [5 * second, 5 * second, 3 * second, 3 * second, 6 * second]
    monkeypatch.setattr(ids, "time", SteppingClock(readings))
    made = [ids.new_id() for _ in range(5)]
    assert made == sorted(made)
    assert len(set(made)) == 5
    # The ids made while the clock was behind carry the last time given, not the clock's.
    millis = [ULID.from_str(i.upper()).milliseconds for i in made]
    assert millis == [5000, 5000, 5000, 5000, 6000]


def test_ids_made_by_many_threads_are_unique_and_increase_in_each_thread() -> None:
    per_thread: dict[int, list[str]] = {}
    start = threading.Barrier(4, timeout=60)

    def make(index: int) -> None:
        start.wait()
        per_thread[index] = [ids.new_id() for _ in range(5000)]

    threads = [threading.Thread(target=make, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(per_thread) == [0, 1, 2, 3]
    for made in per_thread.values():
        assert made == sorted(made)
    every = [i for made in per_thread.values() for i in made]
    assert len(set(every)) == len(every) == 20_000


@pytest.mark.parametrize(
    ("millis", "random", "expected"),
    [
        (0, 0, "0" * 26),
        (1_700_000_000_000, 12345, "01hf7yat000000000000000c1s"),
        (2**48 - 1, 2**80 - 1, "7" + "z" * 25),
    ],
)
def test_an_id_for_a_given_moment_is_a_lower_case_ulid(
    millis: int, random: int, expected: str
) -> None:
    made = ids.id_at(millis, random)
    assert made == expected
    assert ULID.from_str(made.upper()).milliseconds == millis


def test_a_batch_of_ids_increases_and_follows_the_ids_made_before_it() -> None:
    before = ids.new_id()
    batch = ids.new_ids(3000)
    after = ids.new_id()
    assert len(batch) == 3000
    assert [before, *batch, after] == sorted({before, *batch, after})
    for made in (batch[0], batch[-1], after):
        assert str(ULID.from_str(made.upper())).lower() == made
    assert ids.new_ids(0) == []


def last_made_at(monkeypatch: pytest.MonkeyPatch, millis: int, random: int) -> None:
    """The clock stands at ``millis``, and the last id was made then with ``random``."""
    monkeypatch.setattr(ids, "time", SteppingClock([millis * 1_000_000]))
    monkeypatch.setattr(ids, "_last_millis", millis)
    monkeypatch.setattr(ids, "_made_millis", millis)
    monkeypatch.setattr(ids, "_made_random", random)


def test_a_batch_crossing_the_random_part_s_carries_is_encoded_like_the_library(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same millisecond as the last id, whose random part is just below a carry into
    # the characters that are encoded once per batch.
    last_made_at(monkeypatch, 7000, (5 << 20) - 3)
    batch = ids.new_ids(6)
    expected = [str(ULID.from_int((7000 << 80) | ((5 << 20) - 2 + i))).lower() for i in range(6)]
    assert batch == expected


def test_when_the_random_part_runs_out_the_ids_go_on_in_the_next_millisecond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    last_made_at(monkeypatch, 7000, 2**80 - 3)
    last = ids.id_at(7000, 2**80 - 3)
    batch = ids.new_ids(5)
    assert [last, *batch] == sorted(set([last, *batch]))
    assert {ULID.from_str(i.upper()).milliseconds for i in batch} == {7001}
    # The clock is not read back into the past afterwards: the next id is later still.
    assert ids.new_id() > batch[-1]


@pytest.mark.parametrize(("millis", "random"), [(-1, 0), (2**48, 0), (0, -1), (0, 2**80)])
def test_an_id_for_a_moment_out_of_range_is_refused(millis: int, random: int) -> None:
    with pytest.raises(ValueError, match="no id has the time"):
        ids.id_at(millis, random)
