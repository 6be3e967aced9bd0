"""The readiness waits of the live tests: a slow or refused answer is "not yet", not a
failure (a busy machine once failed two end-to-end tests on a first answer that was slow)."""

from __future__ import annotations

import socket
import threading

import pytest
import requests

from tests.waiting import answers, wait_until


def test_a_slow_answer_is_not_yet_and_the_wait_goes_on():
    answers_given = iter([requests.ReadTimeout("slow"), requests.ConnectionError("refused")])

    def predicate() -> str:
        error = next(answers_given, None)
        if error is not None:
            raise error
        return "up"

    assert wait_until("the server", predicate, timeout=30, interval=0) == "up"


def test_any_other_error_is_a_real_failure():
    def predicate() -> bool:
        raise KeyError("state")

    with pytest.raises(KeyError):
        wait_until("the job", predicate, timeout=30, interval=0)


def test_giving_up_names_what_and_the_last_error():
    def predicate() -> bool:
        raise requests.ReadTimeout("read timed out")

    with pytest.raises(
        pytest.fail.Exception, match="(?s)waiting for the job.*read timed out.*logs"
    ):
        wait_until("the job", predicate, timeout=0, interval=0, details=lambda: "logs")


def test_a_server_that_accepts_and_does_not_answer_is_not_ready():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        accepted: list[socket.socket] = []
        thread = threading.Thread(target=lambda: accepted.append(listener.accept()[0]))
        thread.start()
        try:
            assert answers(f"http://127.0.0.1:{port}/", timeout=0.5) is False
        finally:
            thread.join(timeout=30)
            for conn in accepted:
                conn.close()
