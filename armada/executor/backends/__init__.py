"""Executor backends, chosen per executor by ``backend`` in the configuration."""

from __future__ import annotations

from pathlib import Path

from armada.core.config import Executor as ExecutorConfig
from armada.executor.backends.base import Backend
from armada.executor.backends.fake import FakeBackend


def state_dir_for(config: ExecutorConfig, var_dir: Path) -> Path:
    """Where the executor keeps its state: ``stateDir``, else ``<var dir>/executors/<id>``."""
    return Path(config.state_dir) if config.state_dir else var_dir / "executors" / config.id


def make_backend(config: ExecutorConfig, state_dir: Path) -> Backend:
    """The backend of ``config``; the local and fake backends keep their pods under
    ``state_dir`` (so that they outlive the executor process); the
    kubernetes backend starts watching its cluster at once (``close`` stops it)."""
    if config.backend == "fake":
        return FakeBackend(namespaces=config.namespaces, state_dir=state_dir)
    if config.backend == "local":
        from armada.executor.backends.local import LocalBackend

        return LocalBackend(state_dir, executor_id=config.id, namespaces=config.namespaces)
    if config.backend == "kubernetes":
        from armada.executor.backends.kubernetes import KubernetesBackend

        return KubernetesBackend(config)
    raise ValueError(f"backend: unknown backend {config.backend!r}")
