"""The ``executor-api`` process: the API executors lease and report through
(``armada.wire.executor_server``).

    python -m armada.executorapiserver [--address HOST:PORT]

It listens on ``--address``, else ``ARMADA_EXECUTOR_API_ADDR``, else ``ARMADA_HOST`` (default
127.0.0.1) at ``executorApi.port`` of the configuration (default 50052), with TLS when
``executorApi.tls.certFile`` and ``keyFile`` are set. ``manage.py runall`` starts it with its
own ``--host``. On SIGTERM it stops taking calls and gives calls in flight
``executorApi.gracePeriod``. It exits non-zero when it cannot listen.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

from armada.grpcserver import server_main

EXECUTOR_API_COMMAND = ["-m", "armada.executorapiserver"]


def executor_api_command(address: str) -> list[str]:
    return [sys.executable, *EXECUTOR_API_COMMAND, "--address", address]


def main(argv: list[str] | None = None) -> int:
    def serve(address: str, config: Any, announce: Callable[[str], None]) -> Awaitable[None]:
        from armada.wire.executor_server import ServerTls, serve

        tls = None
        if config.tls.enabled:
            tls = ServerTls(config.tls.cert_file, config.tls.key_file)
        return serve(
            address,
            worker_threads=config.worker_threads,
            grace_period=config.grace_period,
            tls=tls,
            announce=announce,
        )

    return server_main(
        argv,
        prog="python -m armada.executorapiserver",
        description="Serve the executor API.",
        name="executor-api",
        variable="ARMADA_EXECUTOR_API_ADDR",
        config_key="executor_api",
        serve=serve,
    )


if __name__ == "__main__":
    sys.exit(main())
