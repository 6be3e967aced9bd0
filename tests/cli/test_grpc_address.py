"""Armada's config files name the server by its gRPC address (``armadaUrl: localhost:50051``).
armadactl tries such an address as HTTP; when the server there answers with gRPC, it uses the
REST API at ARMADA_REST_URL, else on port 8000 of the same host (``armada.cli.addresses``).
Tested against a real system: Django's live server (web) and the gRPC server beside it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from armada.cli import addresses
from armada.cli.addresses import paired_rest_url
from armada.cli.contexts import ConfigError
from armada.cli.http_lite import speaks_http2_only
from armada.models import Queue
from tests.cli.helpers import run
from tests.wire.grpc_server import InProcessServer


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        ("http://localhost:50051", {}, "http://localhost:8000"),
        ("https://armada.example.com:443", {}, "https://armada.example.com:8000"),
        ("http://[::1]:50051", {}, "http://[::1]:8000"),
        ("http://localhost:8000", {}, None),  # nothing left to try
        ("http://localhost:50051", {"ARMADA_REST_URL": "http://web:9000/"}, "http://web:9000"),
    ],
)
def test_the_rest_url_paired_with_a_grpc_address(url, environ, expected) -> None:
    assert paired_rest_url(url, environ) == expected


def test_a_bad_override_is_named() -> None:
    with pytest.raises(ConfigError, match="ARMADA_REST_URL 'web:9000' must look like http"):
        paired_rest_url("http://localhost:50051", {"ARMADA_REST_URL": "web:9000"})


def test_an_http2_settings_frame_is_told_from_a_status_line() -> None:
    assert speaks_http2_only(b"\x00\x00\x18\x04\x00\x00\x00\x00\x00")
    assert speaks_http2_only("\x00\x00\x06\x04\x00")
    assert not speaks_http2_only("HTTP/1.1 200 OK")
    assert not speaks_http2_only(b"\x00\x00")


@pytest.fixture
def grpc_server() -> Iterator[InProcessServer]:
    server = InProcessServer()
    try:
        yield server
    finally:
        server.close()


def armada_config(tmp_path: Path, grpc_target: str) -> Path:
    """An Armada config file as Armada's armadactl reads it, unchanged."""
    path = tmp_path / "armadactl.yaml"
    path.write_text(
        "currentContext: main\n"
        "contexts:\n"
        "  main:\n"
        f"    armadaUrl: {grpc_target}\n"
        "    forceNoTls: true\n"
        "    basicAuth: {username: root, password: root-password}\n"
    )
    return path


@pytest.mark.django_db(transaction=True)
def test_armadas_config_with_the_grpc_address_works_unchanged(
    live_server, admin_user, grpc_server, tmp_path, capsys, monkeypatch
) -> None:
    config = armada_config(tmp_path, grpc_server.target)
    web_port = int(live_server.url.rsplit(":", 1)[1])

    # The pairing: the web server on the default port of the same host.
    monkeypatch.setattr(addresses, "DEFAULT_WEB_PORT", web_port)
    code, out, err = run(capsys, "--config", str(config), "create", "queue", "via-grpc-address")
    assert (code, out, err) == (0, "Created queue via-grpc-address\n", "")
    code, out, err = run(capsys, "--config", str(config), "cordon", "queue", "via-grpc-address")
    assert code == 0, err
    code, out, err = run(
        capsys, "--config", str(config), "get", "queue", "via-grpc-address", "-o", "json"
    )
    assert code == 0, err
    assert json.loads(out)["cordoned"] is True
    assert Queue.objects.get(name="via-grpc-address").cordoned

    # ARMADA_REST_URL wins over the pairing; --armadaUrl on the command line works alike.
    monkeypatch.setattr(addresses, "DEFAULT_WEB_PORT", 1)
    monkeypatch.setenv("ARMADA_REST_URL", live_server.url)
    code, out, err = run(
        capsys,
        "get",
        "queues",
        "-o",
        "json",
        "--armadaUrl",
        grpc_server.target,
        "--username",
        "root",
        "--password",
        "root-password",
    )
    assert code == 0, err
    assert [q["name"] for q in json.loads(out)] == ["via-grpc-address"]


@pytest.mark.django_db(transaction=True)
def test_no_rest_api_beside_the_grpc_address_is_one_clear_error(
    grpc_server, tmp_path, capsys, monkeypatch, free_port
) -> None:
    monkeypatch.setattr(addresses, "DEFAULT_WEB_PORT", free_port)
    config = armada_config(tmp_path, grpc_server.target)
    code, out, err = run(capsys, "--config", str(config), "get", "queues")
    assert (code, out) == (1, "")
    assert f"http://{grpc_server.target} answers with gRPC (Armada's gRPC API)" in err
    assert f"Tried the REST API at http://127.0.0.1:{free_port} instead" in err
    assert "connection refused" in err and "Traceback" not in err


@pytest.mark.django_db(transaction=True)
def test_watch_follows_the_pairing_too(grpc_server, tmp_path, capsys, monkeypatch) -> None:
    """The event stream goes through ``requests``; the gRPC answer is recognised there too."""
    monkeypatch.setenv("ARMADA_REST_URL", "http://127.0.0.1:1")
    config = armada_config(tmp_path, grpc_server.target)
    code, _, err = run(capsys, "--config", str(config), "watch", "demo", "set-1")
    assert code == 1
    assert "answers with gRPC" in err and "Tried the REST API at http://127.0.0.1:1" in err
