"""The stored run log's arithmetic (``core.runlog``): idempotent appends by offset, skipped
stretches marked, the bound with its marker line, container headers, and the final tail."""

from __future__ import annotations

import pytest

from armada.core.runlog import (
    LogPiece,
    StoredLog,
    append,
    finish,
    marker_line,
    skipped_line,
)

LIMIT = 64


def piece(offset: int, data: str | bytes, container: str = "") -> LogPiece:
    return LogPiece("r1", container, offset, data.encode() if isinstance(data, str) else data)


def grown(*pieces: LogPiece, log: StoredLog | None = None, limit: int = LIMIT) -> StoredLog:
    log = log or StoredLog()
    for p in pieces:
        log = append(log, p, limit).log
    return log


def test_pieces_in_order_make_the_log():
    log = grown(piece(0, "tick 1\n"), piece(7, "tick 2\n"))
    assert log.text == "tick 1\ntick 2\n" and log.offsets == {"": 14} and not log.truncated


@pytest.mark.parametrize(
    ("again", "expected"),
    [
        (piece(0, "tick 1\n"), "duplicate"),  # the first piece sent again
        (piece(7, "tick 2\n"), "duplicate"),  # the last sent again (its answer was lost)
        (piece(0, "tick 1\ntick 2\n"), "duplicate"),  # both, joined
        (piece(7, "tick 2\ntick 3\n"), "tick 3\n"),  # overlapping: only the new part
        (piece(0, "tick 1\ntick 2\ntick 3\n"), "tick 3\n"),
    ],
    ids=["first-again", "last-again", "joined-again", "overlap", "from-the-start"],
)
def test_a_piece_sent_again_adds_nothing_twice(again, expected):
    log = grown(piece(0, "tick 1\n"), piece(7, "tick 2\n"))
    result = append(log, again, LIMIT)
    if expected == "duplicate":
        assert not result.applied and result.log == log and "up to 14" in result.reason
    else:
        assert result.applied and result.log.text == "tick 1\ntick 2\n" + expected


def test_any_grouping_of_the_same_bytes_gives_the_same_log():
    text = "".join(f"line {i}\n" for i in range(8)).encode()
    cuts = [(0, 5), (3, 20), (20, 21), (10, 40), (40, len(text)), (0, len(text))]
    log = grown(*(piece(a, text[a:b]) for a, b in cuts), limit=1000)
    assert log.text.encode() == text


def test_a_skipped_stretch_is_marked_where_it_was():
    log = grown(piece(0, "a\n"), piece(10, "b\n"))
    assert log.text == "a\n" + skipped_line(8) + "b\n"
    assert append(log, piece(2, "12345678"), LIMIT).applied is False  # too late: passed


def test_the_bound_drops_whole_lines_from_the_front_and_says_how_many_bytes():
    lines = [f"line {i:02d}\n" for i in range(20)]  # 8 bytes each, 160 in all
    log = grown(*(piece(8 * i, line) for i, line in enumerate(lines)))
    assert len(log.content.encode()) <= LIMIT
    assert log.content == "".join(lines[-8:])  # whole lines
    assert log.dropped == 96 and log.truncated
    assert log.text == marker_line(96) + log.content
    assert log.text.startswith("[log cut: the first 96 bytes were not kept]\n")


def test_one_line_longer_than_the_bound_is_cut_inside_it_on_a_character():
    log = grown(piece(0, "é" * 100))  # 200 bytes, no newline
    assert log.content == "é" * 32 and log.dropped == 136


def test_the_marker_is_not_read_back_as_content():
    log = grown(*(piece(8 * i, f"line {i:02d}\n") for i in range(20)))
    again = StoredLog.of_text(log.text, dropped=log.dropped, offsets=log.offsets)
    assert again.content == log.content and again.text == log.text


def test_containers_get_headers_when_the_container_changes():
    log = grown(
        piece(0, "one\n", "init"),
        piece(0, "a\n", "main"),
        piece(2, "b", "main"),
        piece(4, "two\n", "init"),
        limit=1000,
    )
    assert log.text == "==> init <==\none\n==> main <==\na\nb\n==> init <==\ntwo\n"
    assert log.offsets == {"init": 8, "main": 3}


def test_bytes_that_are_not_text_are_kept_readable():
    log = grown(piece(0, b"ok \xff\x00 end\n"))
    assert log.text == "ok \ufffd\ufffd end\n"


def test_the_final_tail_replaces_the_pieces_and_makes_the_log_final():
    log = grown(piece(0, "tick 1\n"), piece(7, "tick 2\n"))
    final = finish(log, "tick 1\ntick 2\ntick 3\ndone\n", LIMIT)
    assert final.final and final.text == "tick 1\ntick 2\ntick 3\ndone\n" and not final.truncated
    late = append(final, piece(14, "tick 3\n"), LIMIT)
    assert not late.applied and "final" in late.reason


def test_pieces_that_reached_the_end_are_kept_over_a_shorter_tail():
    lines = [f"line {i:02d}\n" for i in range(6)]
    log = grown(*(piece(8 * i, line) for i, line in enumerate(lines)))
    final = finish(log, "".join(lines[-2:]), LIMIT)
    assert final.final and final.content == "".join(lines) and final.dropped == 0


def test_a_long_final_tail_is_bounded_and_counts_what_the_pieces_saw():
    lines = [f"line {i:02d}\n" for i in range(30)]
    log = grown(*(piece(8 * i, line) for i, line in enumerate(lines[:25])))
    final = finish(log, "".join(lines[10:]), LIMIT)  # a tail of 160 bytes
    assert final.content == "".join(lines[-8:]) and final.dropped == 240 - 64
    assert final.text.startswith(marker_line(176))


def test_an_empty_final_tail_keeps_what_was_streamed():
    log = grown(piece(0, "tick 1\n"))
    final = finish(log, "", LIMIT)
    assert final.final and final.text == "tick 1\n"
