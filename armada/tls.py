"""TLS of the ports the control plane listens on: one certificate chain and its key.

The same setting (``certFile`` and ``keyFile``, both or neither) serves Armada's gRPC API
(``grpc.tls``), the executor API (``executorApi.tls``) and the web process (``web.tls``);
``armada.core.config.ServerTls`` checks its shape, :class:`ServerTls` here its files.

:meth:`ServerTls.check` reads both files and loads them as a TLS server would, so that a
missing, unreadable or garbled file, an encrypted key, or a key that is not the
certificate's stops start-up with one line naming the file and the setting
(:class:`TlsFileError`), before any port is opened. The gRPC servers take the checked bytes
(:meth:`ServerTls.credentials`); the web process takes the file names (uvicorn reads them
itself, :meth:`ServerTls.uvicorn_options`).
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import grpc

_PRIVATE_KEY = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )?PRIVATE KEY-----")
_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"


class TlsFileError(Exception):
    """A TLS certificate or key file that cannot be used; the message is one line that
    names the file (and the setting it came from)."""


@dataclass(frozen=True)
class ServerTls:
    """A listening port's certificate chain (PEM, the server's certificate first) and its
    unencrypted private key (PEM). ``setting`` names where they were configured
    (``grpc.tls``), for messages."""

    cert_file: str
    key_file: str
    setting: str = ""

    @classmethod
    def from_config(cls, config: Any, setting: str) -> ServerTls | None:
        """The TLS of a ``armada.core.config.ServerTls`` block; None when it is off."""
        if not config.enabled:
            return None
        return cls(config.cert_file, config.key_file, setting)

    def _name(self, what: str, path: str, key: str) -> str:
        where = f" ({self.setting}.{key})" if self.setting else ""
        return f"the TLS {what} {path}{where}"

    def _read(self, what: str, path: str, key: str) -> bytes:
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            reason = exc.strerror or exc.__class__.__name__
            raise TlsFileError(f"cannot read {self._name(what, path, key)}: {reason}") from None

    def check(self) -> tuple[bytes, bytes]:
        """The certificate chain and key, read and checked; TlsFileError names the file at
        fault."""
        cert_name = self._name("certificate", self.cert_file, "certFile")
        key_name = self._name("key", self.key_file, "keyFile")
        cert = self._read("certificate", self.cert_file, "certFile")
        key = self._read("key", self.key_file, "keyFile")
        if _CERTIFICATE not in cert:
            raise TlsFileError(f"{cert_name} holds no PEM certificate (BEGIN CERTIFICATE)")
        if not _PRIVATE_KEY.search(key):
            raise TlsFileError(f"{key_name} holds no PEM private key (BEGIN PRIVATE KEY)")
        if b"ENCRYPTED" in key:
            raise TlsFileError(f"{key_name} is encrypted; give the key without a passphrase")
        try:
            ssl.create_default_context().load_verify_locations(cadata=cert.decode("latin-1"))
        except (ssl.SSLError, ValueError) as exc:
            raise TlsFileError(f"{cert_name} is not a valid PEM certificate: {_why(exc)}") from None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            # No passphrase: an encrypted key must fail here, never prompt on a terminal.
            context.load_cert_chain(self.cert_file, self.key_file, password=b"")
        except (ssl.SSLError, OSError) as exc:
            if "KEY_VALUES_MISMATCH" in str(exc) or "values mismatch" in str(exc):
                raise TlsFileError(f"{key_name} is not the key of {cert_name}") from None
            raise TlsFileError(f"{key_name} cannot be used: {_why(exc)}") from None
        return cert, key

    def credentials(self) -> grpc.ServerCredentials:
        """Server credentials for a gRPC port (checked first: TlsFileError)."""
        import grpc

        cert, key = self.check()
        return grpc.ssl_server_credentials([(key, cert)])

    def uvicorn_options(self) -> list[str]:
        """uvicorn's options for this certificate and key (check them first)."""
        return ["--ssl-certfile", self.cert_file, "--ssl-keyfile", self.key_file]


def _why(exc: BaseException) -> str:
    """A short reason from an ``ssl`` error (its library reason when it has one)."""
    reason = getattr(exc, "reason", None)
    text = str(reason) if reason else str(exc)
    text = re.sub(r"\s*\(_ssl\.c:\d+\)", "", text)  # where in CPython: no help to anyone
    return " ".join(text.split()) or exc.__class__.__name__
