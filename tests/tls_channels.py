"""Clients and configuration for tests that speak TLS to the control plane's ports, with
the files ``tests.tls_certs`` makes: a gRPC channel that trusts the test CA and sends a
token as Armada's clients do over TLS (call credentials), and a configuration with
``grpc.tls`` and ``web.tls`` set."""

from __future__ import annotations

from pathlib import Path

import grpc

from tests.tls_certs import TlsFiles


class BearerMetadata(grpc.AuthMetadataPlugin):
    """Call credentials that send ``authorization: <value>``, as Armada's clients (the
    Airflow operator's hook among them) give their token over TLS."""

    def __init__(self, value: str) -> None:
        self.value = value

    def __call__(self, context, callback) -> None:
        callback((("authorization", self.value),), None)


def secure_channel(
    target: str, ca_file: Path | str, authorization: str | None = None
) -> grpc.Channel:
    """A TLS channel to ``target`` that trusts the CA certificate in ``ca_file`` and, when
    ``authorization`` is given, sends it with every call (call credentials)."""
    credentials = grpc.ssl_channel_credentials(root_certificates=Path(ca_file).read_bytes())
    if authorization is not None:
        credentials = grpc.composite_channel_credentials(
            credentials, grpc.metadata_call_credentials(BearerMetadata(authorization))
        )
    return grpc.secure_channel(target, credentials)


def with_tls(config: dict, files: TlsFiles) -> dict:
    """``config`` with TLS on the grpc and web ports, from ``files``."""

    def tls() -> dict[str, str]:
        return {"certFile": str(files.cert), "keyFile": str(files.key)}

    return {
        **config,
        "grpc": {**config.get("grpc", {}), "tls": tls()},
        "web": {**config.get("web", {}), "tls": tls()},
    }
