"""Health of the Submit and Event services: SERVING whenever the process answers at all (a
caller that needs the database checked uses ``/readyz`` of the web tier). Callable without
credentials, so that load balancers and readiness probes can ask."""

from __future__ import annotations

from armada_client.armada import health_pb2
from google.protobuf import empty_pb2

from armada.wire.registry import Call, unary


@unary("api.Submit/Health", "api.Event/Health", anonymous=True)
def health(call: Call, request: empty_pb2.Empty) -> health_pb2.HealthCheckResponse:
    return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)
