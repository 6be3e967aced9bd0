"""The embedded broker: kombu's file-system transport, made safe for several processes.

kombu's ``filesystem://`` transport keeps one file per message in a queue folder. As shipped
it creates the file under its final name and then writes into it, and a consumer that lists
the folder at that moment claims an empty or half-written file; decoding it raises a JSON
error that is not a broker error, so the Celery worker around it dies. Its exchange tables
(``control_folder``) are rewritten in place the same way.

This transport (selected by ``CELERY_BROKER_TRANSPORT = "armada.broker:Transport"``) keeps
the folder layout and the file names and changes three things:

- every file, message or exchange table, is written under a temporary name in the folder it
  belongs to and renamed into place, so a reader sees the whole file or no file;
- a consumer claims a message by renaming it into ``processed_folder`` (one rename wins, on
  the same file system as the queue folder) before it reads it;
- a message that cannot be decoded (a truncated file, say, left by a process killed mid-write
  before this transport was used) is logged and moved to ``bad_folder`` (default: ``bad``
  beside ``processed_folder``), and the consumer carries on with the next message.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads
from kombu.utils.objects import cached_property

log = logging.getLogger(__name__)

_SEQUENCE = itertools.count()
TEMPORARY_PREFIX = ".tmp-"  # never matches a queue's ``<stamp>_<uuid>.<queue>.msg`` pattern


def write_atomically(folder: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to ``folder/name`` so that no reader ever sees part of it.

    The bytes go to a hidden temporary file in the same folder (so the rename cannot cross
    file systems) and are renamed over the final name, which POSIX makes atomic."""
    final = folder / name
    temporary = folder / f"{TEMPORARY_PREFIX}{uuid.uuid4().hex}"
    try:
        with open(temporary, "wb") as f:
            f.write(data)
        os.replace(temporary, final)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ChannelError(f"Cannot add file {str(final)!r} to directory") from exc
    return final


class Channel(filesystem.Channel):
    """The file-system channel with atomic writes and bad messages set aside."""

    @cached_property
    def bad_folder(self) -> Path:
        given = self.transport_options.get("bad_folder")
        return Path(given) if given else Path(self.processed_folder).with_name("bad")

    # --- messages ----------------------------------------------------------------------------

    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        """Put ``payload`` on ``queue`` as one file that appears whole."""
        # In the order put: the time (padded, so that names sort as numbers), then this
        # process's own count, for the messages put within one millisecond.
        stamp = int(round(monotonic() * 1000))
        name = f"{stamp:015d}_{next(_SEQUENCE):012d}_{uuid.uuid4()}.{queue}.msg"
        write_atomically(Path(self.data_folder_out), name, str_to_bytes(dumps(payload)))

    def _get(self, queue: str) -> Any:
        """The oldest decodable message of ``queue``; undecodable ones are set aside."""
        wanted = f"{queue}.msg"
        folder = Path(self.data_folder_in)
        for name in sorted(os.listdir(folder)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = self._claim(folder / name)
            if claimed is None:
                continue  # another consumer took it first
            try:
                payload = claimed.read_bytes()
            except OSError as exc:
                raise ChannelError(f"Cannot read file {str(claimed)!r} from queue.") from exc
            try:
                message = loads(bytes_to_str(payload))
            except ValueError as exc:  # JSON errors and bad UTF-8 are both ValueErrors
                self._set_aside(claimed, queue, exc)
                continue
            if not self.store_processed:
                claimed.unlink(missing_ok=True)
            return message
        raise Empty()

    def _claim(self, path: Path) -> Path | None:
        """Rename ``path`` into the processed folder; None when another consumer won."""
        target = Path(self.processed_folder) / path.name
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise ChannelError(
                    f"processed_folder {self.processed_folder!r} must be on the same file "
                    f"system as data_folder_in {self.data_folder_in!r}"
                ) from exc
            raise ChannelError(f"Cannot claim file {str(path)!r} from queue.") from exc
        return target

    def _set_aside(self, path: Path, queue: str, exc: ValueError) -> None:
        self.bad_folder.mkdir(parents=True, exist_ok=True)
        target = self.bad_folder / path.name
        try:
            os.replace(path, target)
        except OSError:
            log.exception("broker: cannot move undecodable message %s aside", path)
            path.unlink(missing_ok=True)
            target = path
        log.error(
            "broker: skipped an undecodable message on queue %r (%s); kept as %s",
            queue,
            exc,
            target,
        )

    # --- exchange tables ---------------------------------------------------------------------

    @contextmanager
    def _table_lock(self, exchange: str) -> Iterator[Path]:
        """Serialise read-modify-write of one exchange table; readers take no lock."""
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(parents=True, exist_ok=True)
        with open(file.with_name(file.name + ".lock"), "a") as lock_file:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
            try:
                yield file
            finally:
                fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)

    def get_table(self, exchange: str) -> list:
        file = self._exchange_file(exchange)
        try:
            text = file.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc
        try:
            return [filesystem.exchange_queue_t(*q) for q in loads(bytes_to_str(text))]
        except (ValueError, TypeError) as exc:
            raise ChannelError(f"Exchange table {file} is not readable: {exc}") from exc

    def _edit_table(self, exchange: str, edit: Callable[[list], list]) -> None:
        with self._table_lock(exchange) as file:
            try:
                before = self.get_table(exchange)
            except ChannelError:
                # Only the stock transport's in-place writes leave a table like this; the
                # processes that bind re-declare their queues, so starting afresh repairs it.
                log.warning("broker: rewriting the unreadable exchange table %s", file)
                before = []
            after = edit(list(before))
            if after != before or not file.exists():
                write_atomically(file.parent, file.name, str_to_bytes(dumps(after)))

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def add(queues: list) -> list:
            return queues if binding in queues else [binding, *queues]

        self._edit_table(exchange, add)

    def _delete(self, queue, exchange, routing_key, pattern, *args, **kwargs) -> None:
        # The grandparent's delete (the virtual channel's), not the file-system one: that
        # rewrites the exchange table in place.
        super(filesystem.Channel, self)._delete(
            queue, exchange, routing_key, pattern, *args, **kwargs
        )
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        if not self._exchange_file(exchange).exists():
            return
        self._edit_table(exchange, lambda queues: [q for q in queues if q != binding])


class Transport(filesystem.Transport):
    """kombu's file-system transport with :class:`Channel`; see the module docstring."""

    Channel = Channel
