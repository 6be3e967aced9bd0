"""The embedded broker (``armada.broker``): a bad or half-written message file is set aside
and the consumer carries on; writers and readers in parallel processes never see part of a
file, neither a message nor an exchange table."""

from __future__ import annotations

import logging
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection

from armada.broker import Transport, write_atomically

ROOT = Path(__file__).resolve().parents[1]
TRANSPORT = "armada.broker:Transport"
BIG = "x" * 200_000  # big enough that writing it is not one instant


@pytest.fixture(autouse=True)
def _fresh_broker_state():
    """The transport remembers declared bindings per process; each test has its own folders."""
    Transport.global_state.clear()
    yield
    Transport.global_state.clear()


def broker_options(root: Path) -> dict:
    for sub in ("queue", "processed", "control"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
        "processed_folder": str(root / "processed"),
        "store_processed": False,
        "control_folder": str(root / "control"),
    }


def connect(root: Path) -> Connection:
    return Connection("filesystem://", transport=TRANSPORT, transport_options=broker_options(root))


@pytest.mark.parametrize(
    "content",
    [b"", b'{"body": "abc", "head', b"\xff\xfe not utf-8", b"[1, 2"],
    ids=["empty", "truncated-json", "not-utf8", "truncated-list"],
)
def test_an_undecodable_message_is_logged_set_aside_and_the_next_one_is_consumed(
    tmp_path, caplog, content
):
    with connect(tmp_path) as conn:
        queue = conn.SimpleQueue("work")
        # Sorted before anything the producer writes: the consumer meets it first.
        (tmp_path / "queue" / "000000000000000_bad.work.msg").write_bytes(content)
        queue.put({"n": 1})
        with caplog.at_level(logging.ERROR, logger="armada.broker"):
            message = queue.get(timeout=5)
        assert message.payload == {"n": 1}
        message.ack()
        queue.close()
    assert (tmp_path / "bad" / "000000000000000_bad.work.msg").read_bytes() == content
    assert "undecodable message on queue 'work'" in caplog.text
    assert not list((tmp_path / "queue").iterdir())


def test_the_bad_folder_can_be_named(tmp_path):
    options = {**broker_options(tmp_path), "bad_folder": str(tmp_path / "elsewhere")}
    (tmp_path / "queue" / "000000000000000_bad.work.msg").write_bytes(b"{")
    with Connection("filesystem://", transport=TRANSPORT, transport_options=options) as conn:
        queue = conn.SimpleQueue("work")
        with pytest.raises(Empty):
            queue.get(timeout=0.5)
        queue.close()
    assert (tmp_path / "elsewhere" / "000000000000000_bad.work.msg").exists()


def test_messages_of_other_queues_and_temporary_files_are_left_alone(tmp_path):
    with connect(tmp_path) as conn:
        conn.SimpleQueue("other").put({"n": 2})
        (tmp_path / "queue" / ".tmp-in-progress").write_bytes(b'{"half')
        queue = conn.SimpleQueue("work")
        with pytest.raises(Empty):
            queue.get(timeout=0.5)
        queue.close()
    names = sorted(p.name for p in (tmp_path / "queue").iterdir())
    assert len(names) == 2
    assert names[0] == ".tmp-in-progress"
    assert names[1].endswith(".other.msg")
    assert not (tmp_path / "bad").exists()


def test_a_write_that_fails_leaves_no_file_behind(tmp_path, monkeypatch):
    real_replace = os.replace

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    from kombu.exceptions import ChannelError

    with pytest.raises(ChannelError):
        write_atomically(tmp_path, "1_a.work.msg", b"{}")
    monkeypatch.setattr(os, "replace", real_replace)
    assert not list(tmp_path.iterdir())


def _produce(root: str, count: int) -> None:
    with connect(Path(root)) as conn:
        queue = conn.SimpleQueue("work")
        for n in range(count):
            queue.put({"n": n, "pad": BIG})
        queue.close()


def test_a_consumer_racing_a_producer_in_another_process_gets_every_message_whole(tmp_path):
    """The stock transport creates the file and then writes into it: a consumer polling the
    folder at the same time claims empty or partial files."""
    count = 150
    with connect(tmp_path) as conn:
        queue = conn.SimpleQueue("work")  # declare before the producer starts
        producer = multiprocessing.get_context("fork").Process(
            target=_produce, args=(str(tmp_path), count)
        )
        producer.start()
        try:
            received: list[int] = []
            while len(received) < count:
                try:
                    message = queue.get(block=False)
                except Empty:
                    if not producer.is_alive() and producer.exitcode != 0:
                        pytest.fail(f"the producer failed with exit code {producer.exitcode}")
                    if not producer.is_alive() and not list((tmp_path / "queue").glob("*.msg")):
                        break
                    time.sleep(0.005)
                    continue
                assert message.payload["pad"] == BIG
                received.append(message.payload["n"])
                message.ack()
        finally:
            producer.join(timeout=120)
            queue.close()
    assert received == list(range(count))
    assert not (tmp_path / "bad").exists()


BINDER = """
import sys, time
from pathlib import Path
from tests.test_broker import connect
root = Path(sys.argv[1])
with connect(root) as conn:
    channel = conn.default_channel
    while not (root / "go").exists():  # start together
        time.sleep(0.001)
    for n in range(int(sys.argv[2])):
        channel._queue_bind(f"ex-{n}", f"key-{sys.argv[3]}", "", f"q-{sys.argv[3]}")
"""


def test_exchange_tables_stay_readable_and_complete_while_processes_bind(tmp_path):
    """Three processes bind a queue each to the same new exchanges while this one reads the
    tables. The stock transport creates a table by truncating it and then writing it, so two
    first bindings overwrote each other and readers saw empty tables."""
    count, binders = 400, 3
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", BINDER, str(tmp_path), str(count), str(i)],
            cwd=ROOT,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "armada.settings"},
        )
        for i in range(binders)
    ]
    with connect(tmp_path) as conn:
        channel = conn.default_channel
        (tmp_path / "go").touch()
        reads = 0
        while any(p.poll() is None for p in processes):
            for n in range(count):
                channel.get_table(f"ex-{n}")  # raises on a partial table
                reads += 1
        tables = [channel.get_table(f"ex-{n}") for n in range(count)]
    assert [p.wait(timeout=120) for p in processes] == [0] * binders
    assert reads > 0
    expected = {(f"key-{i}", "", f"q-{i}") for i in range(binders)}
    assert [n for n, table in enumerate(tables) if set(table) != expected] == []


def test_an_unreadable_exchange_table_is_rewritten_by_the_next_binding(tmp_path, caplog):
    with connect(tmp_path) as conn:
        channel = conn.default_channel
        (tmp_path / "control" / "ex.exchange").write_bytes(b'[["a", "", ')
        from kombu.exceptions import ChannelError

        with pytest.raises(ChannelError, match="ex.exchange"):
            channel.get_table("ex")
        channel._queue_bind("ex", "key", "", "q")
        assert channel.get_table("ex") == [("key", "", "q")]
    assert "unreadable exchange table" in caplog.text


def test_the_embedded_default_selects_this_transport(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env.update(ARMADA_DEV="1", ARMADA_VAR_DIR=str(tmp_path))
    code = (
        "from armada.celery import app;"
        "c = app.connection_for_write();"
        "print(type(c.transport).__module__, c.transport_options['bad_folder'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["armada.broker", str(tmp_path / "broker" / "bad")]
