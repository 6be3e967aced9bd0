"""The executor's connection to its cluster, through the official ``kubernetes`` client.

Inside the cluster (``inCluster: true``) the client reads the service account of the
executor's own pod; outside it, a kubeconfig file and one of its contexts. Either way the
client does what it does for ``kubectl``-like tools: the server's CA, client certificates or
tokens (exec plugins included) come from there, and nothing of the cluster's credentials
lives in the executor's own configuration.
"""

from __future__ import annotations

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from armada.core.config_kubernetes import KubernetesCluster
from armada.executor.backends.base import ClusterConfigError


def api_client(settings: KubernetesCluster) -> client.ApiClient:
    configuration = client.Configuration()
    try:
        if settings.in_cluster:
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(
                config_file=settings.kubeconfig or None,
                context=settings.context or None,
                client_configuration=configuration,
                persist_config=False,
            )
    except (ConfigException, FileNotFoundError, OSError) as exc:
        where = "kubernetes.inCluster" if settings.in_cluster else "kubernetes.kubeconfig"
        raise ClusterConfigError(f"{where}: {exc}") from exc
    return client.ApiClient(configuration)
