"""The ``grpc`` process: Armada's public gRPC API (``armada.wire.server``).

    python -m armada.grpcserver [--address HOST:PORT]

It listens on ``--address``, else ``ARMADA_GRPC_ADDR``, else ``ARMADA_HOST`` (default
127.0.0.1) at ``grpc.port`` of the configuration (default 50051); ``manage.py runall``
starts it with its own ``--host``. Its threads are bounded by ``grpc.workerThreads``; on
SIGTERM it stops taking calls, ends event streams and gives calls in flight
``grpc.gracePeriod`` to finish. It exits non-zero when it cannot listen (a port taken), so
that a supervisor sees the failure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

#: The production command line of one grpc process (add ``--address``).
GRPC_COMMAND = ["-m", "armada.grpcserver"]


def join_address(host: str, port: int) -> str:
    """``host:port``, with an IPv6 host in brackets."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def default_address(port: int) -> str:
    """``ARMADA_GRPC_ADDR``, else ``ARMADA_HOST`` (or 127.0.0.1) at ``port``."""
    given = os.environ.get("ARMADA_GRPC_ADDR", "").strip()
    if given:
        return given
    return join_address(os.environ.get("ARMADA_HOST", "127.0.0.1"), port)


def grpc_command(address: str) -> list[str]:
    """The command line of a grpc process on ``address``, with this interpreter."""
    return [sys.executable, *GRPC_COMMAND, "--address", address]


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
    import django

    django.setup()
    from django.conf import settings

    from armada.gctuning import tune_gc
    from armada.wire.server import CannotListen, serve

    config = settings.ARMADA.grpc
    parser = argparse.ArgumentParser(
        prog="python -m armada.grpcserver", description="Serve Armada's gRPC API."
    )
    parser.add_argument(
        "--address",
        default=default_address(config.port),
        help="host:port to listen on (default: ARMADA_GRPC_ADDR, else ARMADA_HOST or "
        "127.0.0.1 at grpc.port)",
    )
    args = parser.parse_args(argv)
    tune_gc()  # as a web worker does: SubmitJobs parses files as large as the REST API's

    def announce(line: str) -> None:
        print(line, flush=True)

    try:
        asyncio.run(
            serve(
                args.address,
                worker_threads=config.worker_threads,
                grace_period=config.grace_period,
                announce=announce,
            )
        )
    except CannotListen as exc:
        print(f"grpc: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
