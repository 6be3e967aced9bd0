"""Executor backends, chosen per executor by ``backend`` in the configuration."""

from __future__ import annotations

from armada.core.config import Executor as ExecutorConfig
from armada.executor.backends.base import Backend
from armada.executor.backends.fake import FakeBackend


def make_backend(config: ExecutorConfig) -> Backend:
    if config.backend == "fake":
        return FakeBackend()
    raise ValueError(f"executors[{config.id}].backend: unknown backend {config.backend!r}")
