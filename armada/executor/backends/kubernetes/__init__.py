"""The ``kubernetes`` backend: pods on a real cluster, through the official client."""

from armada.executor.backends.kubernetes.backend import KubernetesBackend

__all__ = ["KubernetesBackend"]
