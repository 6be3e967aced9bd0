"""The configuration file of one standalone executor process (``armada-executor``).

It holds the keys of one entry of ``executors:`` in ``config/armada.yaml`` (``id``, ``pool``,
``backend``, ``nodes``, ``errorCategories``, ...) and two more:

- ``api``: where the control plane's executor API is (``address``), the file holding this
  executor's credential (``tokenFile``; else the environment variable
  ``ARMADA_EXECUTOR_TOKEN``), the deadline of each call (``timeout``) and TLS towards it
  (``tls.enabled``, ``tls.caFile``, ``tls.serverName``);
- ``broker``: the broker of the executor's own Celery worker. Empty (the default) is the
  embedded file broker under ``stateDir``; ``redis://...`` a Redis of the executor's own.

No database setting exists here: an executor needs none.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictBool, field_validator

from armada.core.config import validate_model
from armada.core.config_executors import Executor
from armada.core.config_types import Duration, Strict


class ApiTls(Strict):
    enabled: StrictBool = False
    ca_file: str = Field("", alias="caFile")
    server_name: str = Field("", alias="serverName")


class ApiClient(Strict):
    address: str = Field("127.0.0.1:50052", min_length=3)
    token_file: str = Field("", alias="tokenFile")
    timeout: Duration = Field(30.0, gt=0)
    tls: ApiTls = Field(default_factory=ApiTls)

    @field_validator("address")
    @classmethod
    def _host_and_port(cls, v: str) -> str:
        host, _, port = v.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{v!r} must be host:port (the control plane's executor API)")
        return v


class ExecutorProcess(Executor):
    api: ApiClient = Field(default_factory=ApiClient)
    broker: str = ""

    @field_validator("broker")
    @classmethod
    def _known_broker(cls, v: str) -> str:
        if v and not v.startswith(("redis://", "rediss://")):
            raise ValueError(
                f"{v!r}: leave empty for the embedded file broker, or give redis://host:port/db"
            )
        return v


def parse_executor_process(data: Any) -> ExecutorProcess:
    """Validate a loaded executor file; errors name the key (``api.address``)."""
    return validate_model(ExecutorProcess, data)
