"""Reading one connection of a job set's NDJSON event stream (``armadactl watch``).

``read_events`` hands over each event as soon as its line arrives and says when the server
has declared that the client holds every event so far; ``ArmadaClient.watch_events``
reconnects around it after drops.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from armada.cli.errors import ApiError

if TYPE_CHECKING:
    import requests


class StreamDropped(Exception):
    """The event stream ended or broke before the caller stopped reading.

    ``failure``: the drop counts towards giving up and is followed by a back-off (false
    for a read timeout: silence is not an outage). ``notify``: worth telling the user (a
    broken connection; not a clean end of the body at a line boundary, which a server
    may do on purpose to rotate long-lived streams).
    """

    def __init__(self, reason: str, *, failure: bool = True, notify: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.failure = failure
        self.notify = notify


# An item of ``watch_events``: an event dict, or ``CAUGHT_UP`` when the server has said that
# every event committed so far has been sent and all of them have been yielded (a good
# moment to print a summary or to decide that the job set is finished).
CAUGHT_UP: dict[str, Any] = {"type": "__caught_up__"}


def _complete_event(fragment: bytes) -> dict[str, Any] | None:
    """The event in a final line without its newline, or None when it is cut short."""
    try:
        event = json.loads(fragment) if fragment.strip() else None
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def read_events(response: requests.Response) -> Iterator[dict[str, Any] | None]:
    """Yield each event of one connection, and ``None`` whenever the server has said that
    the client holds every event so far: a blank line (sent after each read that found no
    more, and as a keep-alive) with nothing after it yet. A buffer that merely ran dry
    says nothing: the rest of a burst may be on its way.

    Reads with ``read1`` so that an event is handed over as soon as its line arrives,
    whether the body is chunked or delimited by the connection closing. Raises
    ``StreamDropped`` when the connection ends; a trailing partial line is dropped
    (the cursor has not moved past it, so the next connection sends it again) unless
    it is a whole event that only lacks its newline.
    """
    import requests
    import urllib3

    raw = response.raw
    buffer = b""
    while True:
        try:
            data = raw.read1(65536, decode_content=True)
        except urllib3.exceptions.ReadTimeoutError:
            raise StreamDropped(
                "no data from the server for a while", failure=False, notify=False
            ) from None
        except (
            urllib3.exceptions.HTTPError,
            requests.exceptions.RequestException,
            OSError,
        ) as exc:
            raise StreamDropped(f"connection broke: {type(exc).__name__}") from None
        if not data:
            tail = _complete_event(buffer)
            if tail is not None:  # a last line that only lacks its newline
                yield tail
                buffer = b""
            raise StreamDropped("the server closed the stream", notify=bool(buffer.strip()))
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        drained = False
        for line in lines:
            line = line.strip()
            if not line:
                drained = True  # the server has sent every event it has (or a keep-alive)
                continue
            drained = False
            try:
                event = json.loads(line)
            except ValueError:
                raise ApiError(
                    f"the event stream sent a line that is not JSON: {line[:120]!r}"
                ) from None
            if not isinstance(event, dict):
                raise ApiError(
                    f"the event stream sent a line that is not an object: {line[:120]!r}"
                )
            if "type" not in event and isinstance(event.get("status"), int):
                # The server's last record: the caller may no longer follow this stream
                # (credential or permission gone), in the API's error shape.
                raise ApiError(
                    str(event.get("message") or "the stream ended"), status=event["status"]
                )
            yield event
        if drained and not buffer:
            yield None
