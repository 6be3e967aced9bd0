"""The ``kubernetes`` block of an executor whose ``backend`` is ``kubernetes`` (part of
``core.config``): how the executor reaches its cluster, which of the cluster's nodes serve
its pool, and what the job's ingresses are called.

- ``inCluster: true`` uses the service account the executor's own pod runs as (its token
  and CA under ``/var/run/secrets/kubernetes.io/serviceaccount``); otherwise ``kubeconfig``
  (empty: ``$KUBECONFIG``, else ``~/.kube/config``) and its ``context`` (empty: the file's
  current context).
- ``nodeIdLabel``: the node label whose value names a node to the scheduler (Armada's
  ``nodeIdLabel``); a node without it is known by its Kubernetes name.
- ``nodePoolLabel``: when set, only nodes whose label of that name equals the executor's
  ``pool`` serve it; empty, every node does.
- ``toleratedTaints``: taint keys the executor's jobs may meet. A node with a ``NoSchedule``
  or ``NoExecute`` taint whose key is not listed is left out of the executor's nodes, as is
  a cordoned node (``spec.unschedulable``), which is reported as unschedulable instead.
- ``ingress``: the host name suffix of the job's ingresses (``<pod>-<port>.<namespace>.
  <hostnameSuffix>``), their ``ingressClassName``, the TLS secret suffix (``certNameSuffix``)
  and annotations every ingress gets.
- ``watchTimeout``: how long one watch request lasts before it is renewed (the server ends
  it, the informer watches again from where it was); ``requestTimeout``: the deadline of
  every other request.
"""

from __future__ import annotations

from pydantic import Field, StrictBool

from armada.core.config_types import Duration, Strict

HOSTNAME_LABEL = "kubernetes.io/hostname"


class IngressSettings(Strict):
    hostname_suffix: str = Field("", alias="hostnameSuffix")
    ingress_class: str = Field("", alias="ingressClass")
    cert_name_suffix: str = Field("", alias="certNameSuffix")
    annotations: dict[str, str] = Field(default_factory=dict)


class KubernetesCluster(Strict):
    in_cluster: StrictBool = Field(False, alias="inCluster")
    kubeconfig: str = ""
    context: str = ""
    node_id_label: str = Field(HOSTNAME_LABEL, alias="nodeIdLabel", min_length=1)
    node_pool_label: str = Field("", alias="nodePoolLabel")
    tolerated_taints: list[str] = Field(default_factory=list, alias="toleratedTaints")
    ingress: IngressSettings = Field(default_factory=IngressSettings)
    watch_timeout: Duration = Field(300.0, alias="watchTimeout", ge=10, le=3600)
    request_timeout: Duration = Field(30.0, alias="requestTimeout", gt=0, le=600)
