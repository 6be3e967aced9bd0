"""The HTTP side: routing Kubernetes REST paths, create and delete, errors, auth; lists are
served by ``listing``, watches by ``watch`` and logs by ``logs``."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from tests.kube_emulator import logs, metrics_http, watch
from tests.kube_emulator.api import parse_body
from tests.kube_emulator.defaults import K8S_VERSION
from tests.kube_emulator.listing import list_objects
from tests.kube_emulator.objects import RESOURCES, ApiError

if TYPE_CHECKING:
    from tests.kube_emulator.emulator import KubeEmulator

CORE = r"/api/v1"
NET = r"/apis/networking\.k8s\.io/v1"
ROUTES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"^{CORE}/(?P<plural>nodes|namespaces|pods|events|services)$"), "collection"),
    (re.compile(rf"^{CORE}/(?P<plural>nodes|namespaces)/(?P<name>[^/]+)$"), "cluster-item"),
    (re.compile(rf"^{CORE}/namespaces/(?P<ns>[^/]+)/(?P<plural>pods|events|services)$"), "collection"),
    (re.compile(rf"^{CORE}/namespaces/(?P<ns>[^/]+)/(?P<plural>pods|events|services)/(?P<name>[^/]+)$"), "item"),
    (re.compile(rf"^{CORE}/namespaces/(?P<ns>[^/]+)/(?P<plural>pods)/(?P<name>[^/]+)/log$"), "log"),
    (re.compile(rf"^{NET}/(?P<plural>ingresses)$"), "collection"),
    (re.compile(rf"^{NET}/namespaces/(?P<ns>[^/]+)/(?P<plural>ingresses)$"), "collection"),
    (re.compile(rf"^{NET}/namespaces/(?P<ns>[^/]+)/(?P<plural>ingresses)/(?P<name>[^/]+)$"), "item"),
]  # fmt: skip
CREATABLE = ("pods", "services", "ingresses")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], emulator: KubeEmulator) -> None:
        self.emulator = emulator
        self.connections: set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        super().__init__(address, Handler)

    def drop_connections(self) -> None:
        with self.conn_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
        return

    def setup(self) -> None:
        super().setup()
        with self.server.conn_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.conn_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    # -- plumbing ----------------------------------------------------------------------
    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, code: int, text: str) -> None:
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_chunked(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _handle(self, method: str) -> None:
        emu = self.server.emulator
        url = urlsplit(self.path)
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        route, match = next(
            ((kind, m) for pat, kind in ROUTES if (m := pat.match(url.path))), ("", None)
        )
        plural = (
            match.group("plural")
            if match
            else ("version" if url.path in ("/version", "/version/") else "other")
        )
        is_watch = params.get("watch") in ("true", "1") or (
            route == "log" and params.get("follow") in ("true", "1")
        )
        kind = f"{plural}/log" if route == "log" else plural
        metrics = match is None and metrics_http.owns(url.path)
        if metrics:
            kind = metrics_http.kind_of(url.path)
        emu._count(method, kind, is_watch, url.path, params)
        try:
            if emu.token is not None and self.headers.get("Authorization") != f"Bearer {emu.token}":
                raise ApiError(401, "Unauthorized", "Unauthorized")
            failing = emu.faults.should_fail()
            if failing:
                raise ApiError(failing, "InternalError", "Internal error occurred: injected failure (emulator)",
                               {"causes": [{"message": "injected failure (emulator)"}]})  # fmt: skip
            if url.path in ("/version", "/version/") and method == "GET":
                self._send_json(200, version_info())
                return
            if metrics:
                metrics_http.serve(self, emu, method, url.path, params)
                return
            if match is None:
                raise ApiError(
                    404, "NotFound", "the server could not find the requested resource", {}
                )
            self._dispatch(method, route, match.groupdict(), params, raw)
        except ApiError as err:
            self._send_json(err.code, err.status())
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

    def _dispatch(
        self, method: str, route: str, g: dict[str, str], params: dict[str, str], raw: bytes
    ) -> None:
        emu = self.server.emulator
        plural, ns, name = g["plural"], g.get("ns"), g.get("name")
        resource = RESOURCES[plural]
        if route == "log":
            if method != "GET":
                raise _not_allowed()
            logs.serve(self, emu, ns or "", name or "", params)
            return
        if route == "collection":
            if method == "GET":
                if params.get("watch") in ("true", "1"):
                    watch.serve(self, emu, plural, ns, params)
                else:
                    self._send_json(200, list_objects(emu.store, plural, ns, params))
                return
            if method == "POST" and ns is not None and plural in CREATABLE:
                ctype = (
                    (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
                )
                if ctype != "application/json":
                    raise ApiError(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
                    )
                obj, warnings = emu.cluster.create(
                    plural, ns, parse_body(raw), params.get("fieldValidation")
                )
                headers = (
                    {"Warning": ", ".join("299 - " + json.dumps(w) for w in warnings)}
                    if warnings
                    else None
                )
                self._send_json(201, obj, headers)
                return
            raise _not_allowed()
        if method == "GET":
            self._send_json(200, emu.store.get(plural, ns or "", name or ""))
            return
        if method == "DELETE" and plural in CREATABLE:
            body = parse_body(raw)
            obj = emu.cluster.delete(
                plural, ns or "", name or "", body, params.get("gracePeriodSeconds")
            )
            self._send_json(200, obj)
            return
        del resource
        raise _not_allowed()


def _not_allowed() -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def version_info() -> dict[str, str]:
    return {
        **K8S_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.22.5",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


__all__ = ["Counter", "Server"]
