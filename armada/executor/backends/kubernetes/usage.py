"""What the executor's running pods use, from the cluster's metrics API (``metrics.k8s.io``,
served by metrics-server), for the ``utilisation`` events.

One list request per namespace that has running pods of this executor, each time the agent
takes a reading (a few times a utilisation period, not every tick). The API gives what each
container uses now (cpu and memory); a pod's reading is the sum over its containers. It
gives no cumulative usage, so the reports of a kubernetes executor hold none. A cluster
without the metrics API (404), or whose RBAC does not let the executor read it (403: the
``metrics.k8s.io`` rule of ``deploy/kubernetes/rbac.yaml`` is missing), is asked again only
after ``RETRY_MISSING_AFTER`` seconds, and its pods have no readings meanwhile; both are said
once in the log each time they are found, not at every reading.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from armada.core.quantity import parse_quantity
from armada.core.utilisation import UsageSample
from armada.executor.backends.kubernetes.manifests import EXECUTOR, RUN_ID

log = logging.getLogger(__name__)

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
RETRY_MISSING_AFTER = 300.0


# Suffixes the metrics API uses that our quantities do not take (cpu in nanocores, say):
# the divisor that makes milli-units of them.
_SMALL = {"n": 1_000_000, "u": 1_000}


def _milli(text: Any) -> int:
    text = str(text)
    divisor = _SMALL.get(text[-1:])
    if divisor is not None and text[:-1].isdigit():
        return round(int(text[:-1]) / divisor)
    return parse_quantity(text)


def sample_of(metrics: Mapping[str, Any], now: datetime) -> UsageSample | None:
    """A reading of one ``PodMetrics`` object: its containers' usage summed."""
    total: dict[str, int] = {}
    try:
        for container in metrics.get("containers") or []:
            for name, quantity in (container.get("usage") or {}).items():
                total[name] = total.get(name, 0) + _milli(quantity)
    except (ValueError, TypeError, AttributeError):
        return None
    return UsageSample(now, total) if total else None


class MetricsReader:
    """Reads pod metrics for one executor (see the module docstring)."""

    def __init__(self, api: client.ApiClient, executor_id: str, timeout: float) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.selector = f"{RUN_ID},{EXECUTOR}={executor_id}"
        self.timeout = timeout
        self._missing_since: float | None = None

    def read(self, pods: Iterable[tuple[str, str]], now: datetime) -> dict[str, UsageSample]:
        """Readings of ``pods`` ((namespace, name) pairs), by pod name."""
        wanted: dict[str, set[str]] = {}
        for namespace, name in pods:
            wanted.setdefault(namespace, set()).add(name)
        if not wanted or self._still_missing():
            return {}
        out: dict[str, UsageSample] = {}
        for namespace, names in sorted(wanted.items()):
            try:
                answer = self.custom.list_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    namespace,
                    "pods",
                    label_selector=self.selector,
                    _request_timeout=self.timeout,
                )
            except ApiException as exc:
                if exc.status == 404:
                    self._missing_since = time.monotonic()
                    log.info("the cluster serves no metrics API (%s/%s)", GROUP, VERSION)
                    return {}
                if exc.status == 403:
                    self._missing_since = time.monotonic()
                    log.warning(
                        "the executor may not read pod metrics (%s/%s): grant list on "
                        "pods.%s to its role (deploy/kubernetes/rbac.yaml); no utilisation "
                        "is reported meanwhile",
                        GROUP,
                        VERSION,
                        GROUP,
                    )
                    return {}
                log.warning("pod metrics of namespace %s not read: %s", namespace, exc.reason)
                continue
            except (HTTPError, OSError) as exc:
                log.warning("pod metrics of namespace %s not read: %s", namespace, exc)
                continue
            for item in (answer or {}).get("items") or []:
                name = (item.get("metadata") or {}).get("name") or ""
                if name in names:
                    sample = sample_of(item, now)
                    if sample is not None:
                        out[name] = sample
        return out

    def _still_missing(self) -> bool:
        if self._missing_since is None:
            return False
        if time.monotonic() - self._missing_since < RETRY_MISSING_AFTER:
            return True
        self._missing_since = None
        return False
