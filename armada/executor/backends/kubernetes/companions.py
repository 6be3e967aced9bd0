"""Creating what lives with a job's pod: its Services and Ingresses (``manifests``), owned by
the pod so that Kubernetes deletes them with it; and what an API error means to the agent.

One left from an earlier attempt of the same job (its owner pod is gone and the garbage
collector has not got to it yet: the names are the pod's, the same for every attempt) is
deleted and created again.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from armada.executor.backends.base import (
    BackendUnavailable,
    PodCreationFailed,
    PodRejected,
    PodRequest,
)
from armada.executor.backends.kubernetes.informer import Informer, Obj
from armada.executor.backends.kubernetes.manifests import ingress_manifests, service_manifests

if TYPE_CHECKING:
    from armada.executor.backends.kubernetes.backend import KubernetesBackend

#: Rejections about the pod itself (the job): the agent fails the run with the message.
REJECTING = {400, 403, 404, 422}


def refusal(exc: ApiException) -> Exception:
    """What an API error means to the agent: a refusal about the job (400, 403, 404, 422) is
    :class:`PodRejected` with Kubernetes' reason and message; anything else (5xx, 429) is
    :class:`BackendUnavailable`: nothing was done, try again."""
    try:
        status = json.loads(exc.body or "{}")
    except (ValueError, TypeError):
        status = {}
    message = status.get("message") or exc.reason or ""
    if exc.status in REJECTING:
        return PodRejected(status.get("reason") or str(exc.reason or exc.status), message)
    return BackendUnavailable(f"the API server answered {exc.status}: {message}")


class Companions:
    """The Services and Ingresses of one pod, made through ``backend``'s clients."""

    def __init__(self, backend: KubernetesBackend, pod: PodRequest) -> None:
        self.backend = backend
        self.pod = pod
        self.timeout = backend.settings.request_timeout

    def create(self, created: Obj) -> None:
        """Create them, owned by ``created`` (the pod as the API server returned it)."""
        backend, pod, executor_id = self.backend, self.pod, self.backend.config.id
        kinds = (
            (
                service_manifests(pod, created, executor_id),
                backend.core.create_namespaced_service,
                client.V1Service,
                backend.services,
            ),
            (
                ingress_manifests(pod, created, executor_id, backend.settings.ingress),
                backend.net.create_namespaced_ingress,
                client.V1Ingress,
                backend.ingresses,
            ),
        )
        for manifests, call, model, cache in kinds:
            for manifest in manifests:
                self._create(manifest, call, model, cache)

    def _create(self, manifest: Obj, call: Any, model: Any, cache: Informer) -> None:
        try:
            body = model.from_dict(manifest)
        except (ValidationError, ValueError, TypeError) as exc:
            raise PodCreationFailed(f"{manifest['kind']} of the job: {exc}") from exc
        for attempt in range(2):
            try:
                answer = call(self.pod.namespace, body, _request_timeout=self.timeout)
                cache.put(self.backend.api.sanitize_for_serialization(answer))
                return
            except ApiException as exc:
                if exc.status == 409 and attempt == 0:
                    self._delete_stale(manifest)
                    continue
                raise refusal(exc) from exc
            except Exception as exc:  # noqa: BLE001 - connection failures: try again later
                raise BackendUnavailable(f"creating {manifest['kind']}: {exc}") from exc

    def _delete_stale(self, manifest: Obj) -> None:
        meta = manifest["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        try:
            if manifest["kind"] == "Service":
                self.backend.core.delete_namespaced_service(
                    name, namespace, grace_period_seconds=0, _request_timeout=self.timeout
                )
            else:
                self.backend.net.delete_namespaced_ingress(
                    name, namespace, grace_period_seconds=0, _request_timeout=self.timeout
                )
        except ApiException as exc:
            if exc.status != 404:
                raise
