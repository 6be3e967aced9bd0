"""A small HTTP transport on the standard library, for armadactl's short requests.

``requests`` (with urllib3, charset detection and the cookie jar) takes about 70 ms to import
on a small machine, most of a short command's start-up, and scripts call armadactl in loops.
Every request that is one request and one whole answer (all but the event stream) to a plain
``http://`` address goes through ``LiteSession`` instead: ``http.client``, one connection per
request, the same headers, basic auth, JSON body, query and timeouts as the ``requests``
session would send.

``requests`` is still used, imported on first use, where it gives something this does not:
``https://`` addresses (its certificate handling and the TLS options), the streamed event
feed, and an environment that names a proxy or a ``.netrc`` file (``requests`` honours both;
see ``lite_session_allowed``).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")


class TransportError(Exception):
    """The request did not get an answer (refused, unknown host, reset, timed out).
    ``grpc``: the peer answered with HTTP/2 frames, as a gRPC server does to HTTP/1.1."""

    def __init__(self, message: str, *, timeout: bool = False, grpc: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout
        self.grpc = grpc


# A server that speaks only HTTP/2 (a gRPC server) answers an HTTP/1.1 request with its
# SETTINGS frame: a 3-byte length, then type 0x04. Seen where a status line should be.
_HTTP2_SETTINGS_TYPE = 0x04


def speaks_http2_only(status_line: str | bytes) -> bool:
    """Whether the bytes read as a status line are an HTTP/2 frame header (SETTINGS)."""
    raw = status_line.encode("latin-1", "replace") if isinstance(status_line, str) else status_line
    return len(raw) >= 4 and raw[:2] == b"\x00\x00" and raw[3] == _HTTP2_SETTINGS_TYPE


class LiteResponse:
    """An answer read whole: the parts of ``requests.Response`` that armadactl uses."""

    def __init__(self, status: int, reason: str, headers: Mapping[str, str], body: bytes) -> None:
        self.status_code = status
        self.reason = reason
        self.headers = dict(headers)
        self.content = body

    def json(self) -> Any:
        return json.loads(self.content)

    def close(self) -> None:
        """Nothing to release: the connection was closed once the body was read."""


class LiteSession:
    """The subset of ``requests.Session`` that ``HttpClient`` uses: ``headers``, ``auth``
    (a ``(username, password)`` pair for basic auth) and ``request``."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.auth: tuple[str, str] | None = None

    def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,  # noqa: A002 - the keyword of requests.Session.request
        params: Mapping[str, str] | None = None,
        timeout: tuple[float, float],
        stream: bool = False,
    ) -> LiteResponse:
        if stream:
            raise ValueError("LiteSession reads whole answers; stream with requests")
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"LiteSession speaks plain http only, not {url!r}")
        target = parts.path or "/"
        query = "&".join(q for q in (parts.query, urlencode(params or {})) if q)
        if query:
            target += "?" + query
        headers = dict(self.headers)
        body: bytes | None = None
        if json is not None:
            body = _json_body(json)
            headers["Content-Type"] = "application/json"
        elif method.upper() in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = "0"
        if self.auth is not None:
            user, password = self.auth
            pair = f"{user}:{password}".encode("latin-1", "replace")
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        connect_timeout, read_timeout = timeout
        connection = http.client.HTTPConnection(
            parts.hostname, parts.port or 80, timeout=connect_timeout
        )
        try:
            connection.connect()
            if connection.sock is not None:
                connection.sock.settimeout(read_timeout)
            connection.request(method.upper(), target, body=body, headers=headers)
            answer = connection.getresponse()
            content = answer.read()
            return LiteResponse(answer.status, answer.reason, dict(answer.getheaders()), content)
        except TimeoutError as exc:
            raise TransportError(f"timed out ({exc})", timeout=True) from None
        except http.client.BadStatusLine as exc:
            grpc = speaks_http2_only(exc.line or "")
            raise TransportError(f"not an HTTP/1.1 answer: {exc.line!r}", grpc=grpc) from None
        except (OSError, http.client.HTTPException) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from None
        finally:
            connection.close()


def answered_with_grpc(exc: BaseException, depth: int = 4) -> bool:
    """Whether ``exc`` (or an error it wraps, as ``requests`` wraps urllib3's) says that the
    peer answered with HTTP/2 frames: a ``TransportError`` marked so, or a bad status line
    that is an HTTP/2 SETTINGS frame."""
    if getattr(exc, "grpc", False):
        return True
    if isinstance(exc, http.client.BadStatusLine):
        return speaks_http2_only(exc.line or "")
    if depth <= 0:
        return False
    inner = [a for a in exc.args if isinstance(a, BaseException)]
    if exc.__cause__ is not None:
        inner.append(exc.__cause__)
    return any(answered_with_grpc(e, depth - 1) for e in inner)


def _json_body(data: Any) -> bytes:
    """The body ``requests`` would send for ``json=data`` (no NaN or infinity)."""
    try:
        return json.dumps(data, allow_nan=False).encode("utf-8")
    except ValueError as exc:
        raise TransportError(f"the request body cannot be sent as JSON: {exc}") from None


def lite_session_allowed(base_url: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``LiteSession`` sends exactly what ``requests`` would to ``base_url``: a plain
    ``http://`` address, no proxy named in the environment and no ``.netrc`` file (which
    ``requests`` reads for credentials)."""
    env = os.environ if environ is None else environ
    if not base_url.startswith("http://"):
        return False
    if any(env.get(name) for name in PROXY_VARIABLES):
        return False
    netrc = env.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    return not os.path.exists(netrc)


__all__ = ["LiteResponse", "LiteSession", "TransportError", "lite_session_allowed"]
