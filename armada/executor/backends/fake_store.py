"""Where the simulated cluster keeps its pods: a small SQLite file in the executor's state
directory, so that they outlive the executor process as a real cluster's pods do.

An executor killed and started again (``kill -9``, an upgrade) finds its pods where they
were, each with its creation time, deletion time and UID, and carries on; nothing is
reported as a missing pod. The file holds one row per pod (its request as JSON); the
backend keeps the same pods in memory and writes each change through. Written for one
executor process at a time (its state directory is its own). Durability against a machine
crash is not needed (a simulated cluster), so the file is written without syncing to disk.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from armada.executor.backends.base import PodRequest

FILE_NAME = "fake-cluster.sqlite3"


@dataclasses.dataclass(frozen=True)
class StoredPod:
    request: PodRequest
    created_at: datetime
    delete_at: datetime | None
    uid: str


class FakePodStore:
    """The pods of one simulated cluster in ``directory``/``FILE_NAME``."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / FILE_NAME
        self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS pods (name TEXT PRIMARY KEY, body TEXT NOT NULL)"
        )

    def load(self) -> Iterator[StoredPod]:
        for (body,) in self._db.execute("SELECT body FROM pods ORDER BY rowid"):
            data = json.loads(body)
            request = data["request"]
            for key in ("services", "ingress"):
                request[key] = tuple(request.get(key) or ())
            yield StoredPod(
                request=PodRequest(**request),
                created_at=datetime.fromisoformat(data["created_at"]),
                delete_at=datetime.fromisoformat(data["delete_at"]) if data["delete_at"] else None,
                uid=data["uid"],
            )

    def put(self, pod: StoredPod) -> None:
        body: dict[str, Any] = {
            "request": dataclasses.asdict(pod.request),
            "created_at": pod.created_at.isoformat(),
            "delete_at": pod.delete_at.isoformat() if pod.delete_at else None,
            "uid": pod.uid,
        }
        self._db.execute(
            "INSERT OR REPLACE INTO pods (name, body) VALUES (?, ?)",
            (pod.request.name, json.dumps(body)),
        )

    def remove(self, name: str) -> None:
        self._db.execute("DELETE FROM pods WHERE name = ?", (name,))

    def close(self) -> None:
        self._db.close()
