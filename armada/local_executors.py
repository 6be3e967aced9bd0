"""The executors ``manage.py runall`` starts on this machine, as any cluster would run them.

Each executor of ``executors:`` in the configuration becomes an ``armada-executor`` process
of its own, talking to the control plane only through the executor API, exactly as an
executor on another machine does. For each, under ``<var dir>/executors/<id>/``:

- ``credential``: an executor credential for its cluster id (mode 0600), made once and kept;
  made again (the old one revoked) when the kept one no longer authenticates;
- ``executor.yaml``: its file, the configuration's entry with ``api`` (the executor API's
  address and the credential file) added.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import yaml

from armada.core.config import Executor as ExecutorConfig
from armada.executor.backends import state_dir_for
from armada.services.executor_credentials import (
    CredentialRefused,
    executor_credential_authenticate,
    executor_credential_issue,
)

CREDENTIAL_NAME = "local"


def reachable(address: str) -> str:
    """The address a local process dials for a server listening on ``address`` (a server on
    every interface is reached on the loopback)."""
    host, _, port = address.rpartition(":")
    if host in ("0.0.0.0", "", "[::]", "::"):
        return f"127.0.0.1:{port}"
    return address


def executor_command(config_file: Path) -> list[str]:
    return [sys.executable, "-m", "armada.executor.main", "--config", str(config_file)]


def ensure_credential(cluster_id: str, key_file: Path, now: datetime) -> None:
    """A working credential for ``cluster_id`` in ``key_file``. A kept key that no longer
    authenticates, or is another cluster's (a ``stateDir`` kept while the id changed), is
    replaced."""
    if key_file.is_file():
        try:
            identity = executor_credential_authenticate(key=key_file.read_text().strip(), now=now)
        except CredentialRefused:
            pass
        else:
            if identity.cluster_id == cluster_id:
                return
    key = executor_credential_issue(
        cluster_id=cluster_id, name=CREDENTIAL_NAME, now=now, replace=True
    ).key
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.touch(mode=0o600)
    key_file.chmod(0o600)
    key_file.write_text(key + "\n")


def prepare(config: ExecutorConfig, *, var_dir: Path, api_address: str, now: datetime) -> list[str]:
    """Write the executor's credential and file; returns its command line."""
    state = state_dir_for(config, var_dir)
    state.mkdir(parents=True, exist_ok=True)
    key_file = state / "credential"
    ensure_credential(config.id, key_file, now)
    data = config.model_dump(by_alias=True, mode="json", exclude={"state_dir"}, exclude_none=True)
    data["stateDir"] = str(state.resolve())
    data["api"] = {"address": api_address, "tokenFile": str(key_file.resolve())}
    config_file = state / "executor.yaml"
    config_file.write_text(yaml.safe_dump(data, sort_keys=False))
    return executor_command(config_file)
