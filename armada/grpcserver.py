"""The ``grpc`` process: Armada's public gRPC API (``armada.wire.server``).

    python -m armada.grpcserver [--address HOST:PORT]

It listens on ``--address``, else ``ARMADA_GRPC_ADDR``, else ``ARMADA_HOST`` (default
127.0.0.1) at ``grpc.port`` of the configuration (default 50051); ``manage.py runall``
starts it with its own ``--host``. Its threads are bounded by ``grpc.workerThreads``; on
SIGTERM it stops taking calls, ends event streams and gives calls in flight
``grpc.gracePeriod`` to finish. With ``grpc.tls.certFile`` and ``keyFile`` set it speaks
TLS on the same port (``armada.tls``). It exits non-zero, with one line saying why, when it
cannot listen (a port taken) or cannot use its certificate or key, so that a supervisor
sees the failure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

#: The production command line of one grpc process (add ``--address``).
GRPC_COMMAND = ["-m", "armada.grpcserver"]


def join_address(host: str, port: int) -> str:
    """``host:port``, with an IPv6 host in brackets."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def default_address(port: int, variable: str = "ARMADA_GRPC_ADDR") -> str:
    """``variable`` (``ARMADA_GRPC_ADDR``), else ``ARMADA_HOST`` (or 127.0.0.1) at ``port``."""
    given = os.environ.get(variable, "").strip()
    if given:
        return given
    return join_address(os.environ.get("ARMADA_HOST", "127.0.0.1"), port)


def grpc_command(address: str) -> list[str]:
    """The command line of a grpc process on ``address``, with this interpreter."""
    return [sys.executable, *GRPC_COMMAND, "--address", address]


def server_main(
    argv: list[str] | None,
    *,
    prog: str,
    description: str,
    name: str,
    variable: str,
    config_key: str,
    serve: Callable[[str, Any, Callable[[str], None]], Awaitable[None]],
) -> int:
    """The life of a gRPC server process: Django set up, ``--address`` read (default:
    ``variable``, else ``ARMADA_HOST`` at the ``port`` of configuration block ``config_key``),
    the collector tuned, ``serve(address, config, announce)`` run until a signal; 1 when the
    address cannot be listened on or its TLS files cannot be used, so that a supervisor sees
    the failure."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
    import django

    django.setup()
    from django.conf import settings

    from armada.gctuning import tune_gc
    from armada.tls import TlsFileError
    from armada.wire.server import CannotListen

    config = getattr(settings.ARMADA, config_key)
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "--address",
        default=default_address(config.port, variable),
        help=f"host:port to listen on (default: {variable}, else ARMADA_HOST or 127.0.0.1 at "
        "the configured port)",
    )
    args = parser.parse_args(argv)
    tune_gc()  # as a web worker does: calls parse messages as large as the REST API's

    def announce(line: str) -> None:
        print(line, flush=True)

    try:
        asyncio.run(serve(args.address, config, announce))
    except (CannotListen, TlsFileError) as exc:
        print(f"{name}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    def serve(address: str, config: Any, announce: Callable[[str], None]) -> Awaitable[None]:
        from armada.tls import ServerTls
        from armada.wire.server import serve

        return serve(
            address,
            worker_threads=config.worker_threads,
            grace_period=config.grace_period,
            tls=ServerTls.from_config(config.tls, "grpc.tls"),
            announce=announce,
        )

    return server_main(
        argv,
        prog="python -m armada.grpcserver",
        description="Serve Armada's gRPC API.",
        name="grpc",
        variable="ARMADA_GRPC_ADDR",
        config_key="grpc",
        serve=serve,
    )


if __name__ == "__main__":
    sys.exit(main())
