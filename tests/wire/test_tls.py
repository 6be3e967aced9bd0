"""TLS on Armada's gRPC port (``grpc.tls``) and the checks shared by every TLS port
(``armada.tls``): a ``WireServer`` in this process listening with a certificate that a CA
made by the test signed, real gRPC clients, and the ``grpc`` process refusing to start on
files it cannot use, with one line that names the file.

The server's worker threads use their own database connections, so these tests commit
(``transaction=True``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import yaml
from armada_client.armada import submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as quantity

from armada.core.config import parse_config
from armada.core.errors import ValidationFailed
from armada.tls import ServerTls, TlsFileError
from armada.wire.server import WireServer
from tests.tls_certs import TlsFiles, make_ca_and_server_cert
from tests.tls_channels import secure_channel
from tests.wire.grpc_server import TIMEOUT, InProcessServer

ROOT = Path(__file__).resolve().parents[2]


class TlsServer(InProcessServer):
    """An ``InProcessServer`` whose port speaks TLS with ``files``."""

    def __init__(self, files: TlsFiles) -> None:
        self.tls = ServerTls(str(files.cert), str(files.key), "grpc.tls")
        super().__init__()

    async def _start(self, operations) -> tuple[WireServer, int]:  # type: ignore[override]
        server = WireServer(operations)
        port = server.add_port("127.0.0.1:0", self.tls)
        await server.start()
        return server, port


@pytest.fixture
def files(tmp_path) -> TlsFiles:
    return make_ca_and_server_cert(tmp_path / "tls")


@pytest.fixture
def tls_server(files) -> TlsServer:
    server = TlsServer(files)
    yield server
    server.close()


def token_for(user) -> str:
    from django.utils import timezone

    from armada.services.tokens import token_create

    return token_create(user=user, name="tls", expires_at=None, now=timezone.now()).key


def job_item(client: ArmadaClient) -> submit_pb2.JobSubmitRequestItem:
    resources = {
        "cpu": quantity.Quantity(string="100m"),
        "memory": quantity.Quantity(string="64Mi"),
    }
    container = core_v1.Container(
        name="main",
        image="busybox:latest",
        command=["sleep", "1"],
        resources=core_v1.ResourceRequirements(requests=resources, limits=resources),
    )
    return client.create_job_request_item(
        priority=1, namespace="default", pod_spec=core_v1.PodSpec(containers=[container])
    )


def health_error(channel: grpc.Channel) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as error:
        ArmadaClient(channel).submit_health()
    return error.value


# --- serving over TLS -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_armada_client_over_tls_with_a_token_submits_reads_and_cancels(
    tls_server, files, admin_user
):
    channel = secure_channel(tls_server.target, files.ca, f"Bearer {token_for(admin_user)}")
    try:
        client = ArmadaClient(channel)
        client.create_queue(client.create_queue_request(name="secure", priority_factor=1.0))
        assert client.get_queue("secure").name == "secure"
        response = client.submit_jobs("secure", "over-tls", [job_item(client)])
        (job_id,) = [i.job_id for i in response.job_response_items if not i.error]
        assert client.get_job_status([job_id]).job_states[job_id] == submit_pb2.JobState.QUEUED
        cancelled = client.cancel_jobs(queue="secure", job_set_id="over-tls", job_id=job_id)
        assert list(cancelled.cancelled_ids) == [job_id]
        assert client.get_job_status([job_id]).job_states[job_id] == (submit_pb2.JobState.CANCELLED)
    finally:
        channel.close()


@pytest.mark.django_db(transaction=True)
def test_the_token_is_still_checked_over_tls(tls_server, files):
    channel = secure_channel(tls_server.target, files.ca, "Bearer not-a-token")
    try:
        with pytest.raises(grpc.RpcError) as error:
            ArmadaClient(channel).get_queue("secure")
        assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        channel.close()


@pytest.mark.django_db(transaction=True)
def test_the_certificate_is_checked_by_the_name_the_client_dials(tls_server, files):
    by_name = secure_channel(f"localhost:{tls_server.port}", files.ca)
    try:
        client = ArmadaClient(by_name)
        assert client.submit_health().status == client.submit_health().SERVING
    finally:
        by_name.close()


@pytest.mark.django_db(transaction=True)
def test_a_plaintext_client_gets_nothing_from_a_tls_port(tls_server):
    plain = grpc.insecure_channel(tls_server.target)
    try:
        assert health_error(plain).code() == grpc.StatusCode.UNAVAILABLE
    finally:
        plain.close()


@pytest.mark.django_db(transaction=True)
def test_a_client_that_trusts_another_ca_refuses_the_server(tls_server, tmp_path):
    other = make_ca_and_server_cert(tmp_path / "other")
    wrong = secure_channel(tls_server.target, other.ca)
    system_roots = grpc.secure_channel(tls_server.target, grpc.ssl_channel_credentials())
    try:
        assert health_error(wrong).code() == grpc.StatusCode.UNAVAILABLE
        assert health_error(system_roots).code() == grpc.StatusCode.UNAVAILABLE
    finally:
        wrong.close()
        system_roots.close()


# --- configuration and files ------------------------------------------------------------


@pytest.mark.parametrize("block", ["grpc", "web", "executorApi"])
def test_tls_needs_both_files_or_neither(block):
    with pytest.raises(ValidationFailed, match=rf"{block}\.tls: certFile and keyFile go"):
        parse_config({block: {"tls": {"certFile": "/x.pem"}}})
    with pytest.raises(ValidationFailed, match=rf"{block}\.tls: certFile and keyFile go"):
        parse_config({block: {"tls": {"keyFile": "/x.key"}}})
    with pytest.raises(ValidationFailed, match=rf"{block}\.tls\.certfile: unknown key"):
        parse_config({block: {"tls": {"certfile": "/x.pem", "keyFile": "/x.key"}}})


def test_plaintext_is_the_default_and_the_shipped_file_keeps_it():
    shipped = parse_config(yaml.safe_load((ROOT / "config" / "armada.yaml").read_text()))
    for config in (parse_config({}), shipped):
        assert not config.grpc.tls.enabled and not config.web.tls.enabled
    on = parse_config({"web": {"tls": {"certFile": "/c.pem", "keyFile": "/k.pem"}}}).web.tls
    assert on.enabled and (on.cert_file, on.key_file) == ("/c.pem", "/k.pem")
    assert ServerTls.from_config(parse_config({}).grpc.tls, "grpc.tls") is None


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("case", "at_fault", "words"),
    [
        ("missing certificate", "certFile", "cannot read the TLS certificate"),
        ("missing key", "keyFile", "cannot read the TLS key"),
        ("empty certificate", "certFile", "holds no PEM certificate"),
        ("key as certificate", "certFile", "holds no PEM certificate"),
        ("certificate as key", "keyFile", "holds no PEM private key"),
        ("garbled certificate", "certFile", "is not a valid PEM certificate"),
        ("encrypted key", "keyFile", "is encrypted"),
        ("another key", "keyFile", "is not the key of the TLS certificate"),
        ("directory", "certFile", "cannot read the TLS certificate"),
    ],
)
def test_a_file_that_cannot_be_used_is_named_in_one_line(tmp_path, files, case, at_fault, words):
    other = make_ca_and_server_cert(tmp_path / "other")
    cert, key = str(files.cert), str(files.key)
    garbled = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"
    encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
    cert, key = {
        "missing certificate": (str(tmp_path / "nope.pem"), key),
        "missing key": (cert, str(tmp_path / "nope.key")),
        "empty certificate": (str(_write(tmp_path / "empty.pem", "")), key),
        "key as certificate": (key, key),
        "certificate as key": (cert, cert),
        "garbled certificate": (str(_write(tmp_path / "garbled.pem", garbled)), key),
        "encrypted key": (cert, str(_write(tmp_path / "enc.key", encrypted))),
        "another key": (cert, str(other.key)),
        "directory": (str(tmp_path), key),
    }[case]
    with pytest.raises(TlsFileError) as error:
        ServerTls(cert, key, "grpc.tls").check()
    message = str(error.value)
    named = cert if at_fault == "certFile" else key
    assert words in message and named in message and f"grpc.tls.{at_fault}" in message
    assert "\n" not in message and "Traceback" not in message
    assert ServerTls(str(files.cert), str(files.key)).check()  # the good pair passes


def test_the_grpc_process_stops_with_one_line_naming_a_bad_file(tmp_path, files):
    config = {"grpc": {"tls": {"certFile": str(files.cert), "keyFile": str(tmp_path / "no.key")}}}
    (tmp_path / "armada.yaml").write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "ARMADA_DEV": "1",
        "ARMADA_CONFIG": str(tmp_path / "armada.yaml"),
        "ARMADA_VAR_DIR": str(tmp_path / "var"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "armada.grpcserver", "--address", "127.0.0.1:0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT * 4,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("grpc: cannot read the TLS key"), done.stderr
    assert str(tmp_path / "no.key") in lines[-1] and "grpc.tls.keyFile" in lines[-1]
    assert "Traceback" not in done.stderr
