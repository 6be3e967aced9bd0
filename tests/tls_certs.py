"""Certificates for tests that speak TLS: a certificate authority made for the test and a
server certificate it signs, written as PEM files.

    ca, cert, key = make_ca_and_server_cert(tmp_path)

gives ``ca.pem`` (what clients trust: ``grpc.ssl_channel_credentials(root_certificates=...)``,
``requests``' ``verify=``, ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``, ``ARMADA_CA_FILE``),
``server.pem`` and ``server-key.pem`` (what a server is given: ``grpc.tls.certFile`` and
``keyFile``, ``web.tls``, ``executorApi.tls``). The server certificate names ``hosts`` (DNS
names and IP addresses) so that clients check it by the address they dial. Each call makes a
new authority: a certificate from another call is one that a client must refuse.

EC keys (P-256), which are quick to make; certificates valid from an hour ago for two days,
so that a clock a little off does not matter.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path
from typing import NamedTuple

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_HOSTS = ("localhost", "127.0.0.1")


class TlsFiles(NamedTuple):
    """The files ``make_ca_and_server_cert`` writes (a tuple: ``ca, cert, key = ...``)."""

    ca: Path  # the authority's certificate: what clients trust
    cert: Path  # the server's certificate, signed by the authority
    key: Path  # the server's key


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "armada tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _alternative_names(hosts: list[str] | tuple[str, ...]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def make_ca_and_server_cert(
    directory: Path,
    hosts: list[str] | tuple[str, ...] = DEFAULT_HOSTS,
    *,
    prefix: str = "",
) -> TlsFiles:
    """A new CA and a server certificate it signed for ``hosts``, written to ``directory``
    as ``<prefix>ca.pem``, ``<prefix>server.pem`` and ``<prefix>server-key.pem``; their
    paths, in that order. (The CA's own key is not kept: nothing else gets signed.)"""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)  # noqa: TID251 - a certificate's validity
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("armada test CA")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )

    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0] if hosts else "armada test server"))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_alternative_names(hosts), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )

    ca_path = directory / f"{prefix}ca.pem"
    cert_path = directory / f"{prefix}server.pem"
    key_path = directory / f"{prefix}server-key.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(server_key, key_path)
    return TlsFiles(ca_path, cert_path, key_path)
