"""The executor's side of the executor API: three calls over gRPC, with its credential.

Every failure becomes one of four exceptions, which tell the agent what to do next:

- :class:`ApiUnavailable`: the server could not be reached or did not answer in time (or
  said UNAVAILABLE, or cut a round short). Nothing is known to have happened: the agent
  keeps its pods and its reports and tries again next tick.
- :class:`Fenced`: another process opened a newer session for this executor id. This
  process must stop acting on the cluster (it would fight the other one).
- :class:`SessionLost`: the server does not know the executor (an operator removed it):
  open a new session.
- :class:`ApiRefused`: the server refused the call itself (a credential revoked or for
  another cluster id, a pool it does not have, a malformed node). Retrying the same call
  will not help until someone changes the configuration or the credential; the message says
  what to change. The agent logs it and tries again next tick, reading the credential anew.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc

from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.messages import LeaseAnswer, lease_answer

SERVICE = "/executorapi.ExecutorApi/"
#: Large enough for a round of thousands of leases with big pod specs.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    # Reconnect quickly once the server is back, rather than after grpc's long backoff.
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
]
TRANSIENT = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
}


class ApiError(Exception):
    """A call that did not succeed; ``code`` is the gRPC status, when there was one."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        self.code = code


class ApiUnavailable(ApiError):
    pass


class Fenced(ApiError):
    pass


class SessionLost(ApiError):
    pass


class ApiRefused(ApiError):
    pass


def error_of(exc: grpc.RpcError) -> ApiError:
    code = exc.code() if hasattr(exc, "code") else None
    details = (exc.details() if hasattr(exc, "details") else "") or str(code)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return Fenced(details, code)
    if code == grpc.StatusCode.NOT_FOUND:
        return SessionLost(details, code)
    if code in TRANSIENT or code is None:
        return ApiUnavailable(details, code)
    return ApiRefused(details, code)


@dataclass(frozen=True)
class ClientTls:
    """TLS towards the server: ``ca_file`` verifies it (the system's roots when empty);
    ``server_name`` overrides the name checked in its certificate."""

    ca_file: str = ""
    server_name: str = ""


def open_channel(address: str, tls: ClientTls | None = None) -> grpc.Channel:
    """A channel to ``address`` (``host:port``): plaintext, or TLS when ``tls`` is given."""
    if tls is None:
        return grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
    roots = Path(tls.ca_file).read_bytes() if tls.ca_file else None
    options = list(CHANNEL_OPTIONS)
    if tls.server_name:
        options.append(("grpc.ssl_target_name_override", tls.server_name))
    return grpc.secure_channel(address, grpc.ssl_channel_credentials(roots), options=options)


class ExecutorApiClient:
    """The three calls, each with the credential ``token()`` gives (read on every call, so
    a rotated credential file takes effect without a restart) and a deadline of
    ``timeout`` seconds."""

    def __init__(
        self, channel: grpc.Channel, token: Callable[[], str], *, timeout: float = 30.0
    ) -> None:
        self.channel = channel
        self.token = token
        self.timeout = timeout
        self._open = channel.unary_unary(
            SERVICE + "OpenSession",
            request_serializer=pb.OpenSessionRequest.SerializeToString,
            response_deserializer=pb.OpenSessionResponse.FromString,
        )
        self._lease = channel.unary_stream(
            SERVICE + "LeaseJobRuns",
            request_serializer=pb.LeaseRequest.SerializeToString,
            response_deserializer=pb.LeaseStreamMessage.FromString,
        )
        self._report = channel.unary_unary(
            SERVICE + "ReportEvents",
            request_serializer=pb.ReportRequest.SerializeToString,
            response_deserializer=pb.ReportResponse.FromString,
        )

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        try:
            token = self.token().strip()
        except OSError as exc:
            raise ApiRefused(f"cannot read the executor credential: {exc}") from None
        return (("authorization", f"Bearer {token}"),)

    def open_session(self, request: pb.OpenSessionRequest) -> pb.OpenSessionResponse:
        try:
            return self._open(request, metadata=self._metadata(), timeout=self.timeout)
        except grpc.RpcError as exc:
            raise error_of(exc) from None

    def lease(self, request: pb.LeaseRequest) -> LeaseAnswer:
        try:
            answer = lease_answer(
                self._lease(request, metadata=self._metadata(), timeout=self.timeout)
            )
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        if answer is None:
            raise ApiUnavailable("the server ended the round before its end marker")
        return answer

    def report(self, request: pb.ReportRequest) -> list[pb.EventResult]:
        try:
            response = self._report(request, metadata=self._metadata(), timeout=self.timeout)
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        if len(response.results) != len(request.events):
            raise ApiUnavailable(
                f"the server answered {len(response.results)} results for "
                f"{len(request.events)} events"
            )
        return list(response.results)

    def close(self) -> None:
        self.channel.close()
