"""The kubernetes backend's live log reads against the emulated API server, through the
official client: lines read from the time of the last one taken (``sinceTime`` in whole
seconds, ``timestamps``), none twice and none missed, offsets counting the log's bytes, a
read bounded by ``limitBytes`` that still gets through a burst, one key per container of a
pod of several, and an unknown pod."""

from __future__ import annotations

import pytest
from django.utils import timezone

from armada.executor.backends.base import LogPosition, PodRequest
from armada.executor.backends.kubernetes.logs import stamp
from tests.executor.backends.kubernetes.conftest import wait_for

FAKE = "fake.armadaproject.io/"
TICKS = "".join(f"tick {i}\n" for i in range(1, 13))


def container(name: str) -> dict:
    return {"name": name, "image": "busybox:1.36", "resources": {"limits": {"cpu": "1"}}}


def request(name: str, annotations: dict, *containers: str) -> PodRequest:
    return PodRequest(
        name=f"armada-{name}-0",
        run_id=f"run-{name}",
        job_id=name,
        node="node-1",
        pod_spec={"containers": [container(c) for c in containers or ("main",)]},
        annotations={f"{FAKE}{k}": v for k, v in annotations.items()},
        namespace="jobs",
    )


class Follower:
    """Reads a pod's log as the agent does, keeping the positions and what came."""

    def __init__(self, backend, pod: str, limit: int = 64 * 1024) -> None:
        self.backend, self.pod, self.limit = backend, pod, limit
        self.since: dict[str, LogPosition] = {}
        self.got: dict[str, bytes] = {}
        self.pieces: list[tuple[str, int, bytes]] = []

    def read(self) -> None:
        for read in self.backend.read_log_since(self.pod, self.since, self.limit, timezone.now()):
            so_far = self.got.get(read.container, b"")
            assert read.offset >= len(so_far), "a piece that goes back"
            self.got[read.container] = so_far + read.data
            self.since[read.container] = read.position
            if read.data:  # an empty read only widens the next request
                self.pieces.append((read.container, read.offset, read.data))

    def agrees_with(self, whole: str, key: str = "") -> bool:
        """Every piece is the bytes of ``whole`` at its offset."""
        data = whole.encode()
        return all(d == data[o : o + len(d)] for k, o, d in self.pieces if k == key)

    def text(self, key: str = "") -> str:
        return self.got.get(key, b"").decode()


def running(backend, name: str):
    status = next((s for s in backend.poll(timezone.now()) if s.name == name), None)
    return status if status is not None and status.running_at else None


def test_lines_are_read_as_they_are_written_once_each(backend):
    backend.create_pod(
        request("ticks", {"duration": "20s", "log": TICKS, "logInterval": "0.25s"}), timezone.now()
    )
    wait_for(lambda: running(backend, "armada-ticks-0"), "the pod to run")
    follower = Follower(backend, "armada-ticks-0")
    seen = []

    def step() -> bool:
        follower.read()
        seen.append(follower.text())
        return follower.text() == TICKS

    wait_for(step, "every line")
    assert (
        follower.agrees_with(TICKS)
        and TICKS.startswith(seen[0])
        and len({s for s in seen if s}) >= 3
    )  # it grew, live
    assert running(backend, "armada-ticks-0").finished_at is None  # still running
    follower.read()
    assert follower.text() == TICKS  # nothing again
    assert follower.since[""].offset == len(TICKS.encode())
    assert follower.since[""].mark and stamp(follower.since[""].mark)[1] >= 0


def test_lines_of_one_time_and_a_small_read_still_come_whole_once(backend):
    burst = "".join(f"line {i:03d}\n" for i in range(60))  # all written at once: one time
    backend.create_pod(request("burst", {"duration": "20s", "log": burst}), timezone.now())
    wait_for(lambda: running(backend, "armada-burst-0"), "the pod to run")
    follower = Follower(backend, "armada-burst-0", limit=40)  # a request of 160 bytes

    def step() -> bool:
        follower.read()
        return follower.since.get("", LogPosition()).offset == len(burst.encode())

    wait_for(step, "the burst's end")
    # Each read brought at most 40 bytes, the last of what was new (the rest skipped, as an
    # offset jump), each the burst's bytes at its offset; nothing came twice.
    assert follower.agrees_with(burst) and len(follower.pieces) >= 2
    assert all(len(d) <= 40 for _, _, d in follower.pieces)
    offsets = [o for _, o, _ in follower.pieces]
    assert offsets == sorted(set(offsets))
    assert follower.text().endswith("line 059\n")
    assert all(d.startswith(b"line ") for _, _, d in follower.pieces)  # whole lines


def test_each_container_of_a_pod_of_several_has_its_key(backend):
    backend.create_pod(
        request("pair", {"duration": "20s", "log": "from main\n"}, "main", "sidecar"),
        timezone.now(),
    )
    wait_for(lambda: running(backend, "armada-pair-0"), "the pod to run")
    follower = Follower(backend, "armada-pair-0")
    wait_for(lambda: follower.read() or follower.text("main") == "from main\n", "main's line")
    assert set(follower.got) == {"main"}  # the sidecar wrote nothing


def test_an_unknown_pod_has_no_log(backend):
    assert backend.read_log_since("armada-nothing-0", {}, 1024, timezone.now()) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-01T10:00:00Z", ("2026-01-01T10:00:00", 0)),
        ("2026-01-01T10:00:00.5Z", ("2026-01-01T10:00:00", 500_000_000)),
        ("2026-01-01T10:00:00.000000001Z", ("2026-01-01T10:00:00", 1)),
    ],
)
def test_stamps_sort_by_time_whatever_their_fraction(text, expected):
    assert stamp(text) == expected
