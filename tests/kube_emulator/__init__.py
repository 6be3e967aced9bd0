"""An emulated Kubernetes API server (with kubelets and a few controllers) for tests.

It speaks the real API's HTTP and JSON to the official ``kubernetes`` client. Every object it
stores or returns has been read by the client library's own model (``V1Pod.from_dict``) and
written back with ``ApiClient().sanitize_for_serialization``; request bodies are read the
same way, so a shape the library cannot read is refused (400).

Served (paths as Kubernetes serves them): core/v1 nodes, namespaces (GET), pods (list/watch,
create, get, delete, ``/log``), events (list/watch), services (list/watch, create, get,
delete); networking.k8s.io/v1 ingresses (same); ``/version``; the resource metrics API
``metrics.k8s.io/v1beta1`` as metrics-server serves it (discovery, PodMetrics and NodeMetrics
get/list, see ``metrics_http``), absent unless a test serves it. Lists take ``labelSelector``,
``fieldSelector`` (per-kind field labels; others are refused ``field label not supported``),
``limit``/``continue`` (consistent snapshots rebuilt from history), ``resourceVersion`` and
``resourceVersionMatch``; watches take ``resourceVersion``, ``allowWatchBookmarks``,
``timeoutSeconds`` and the selectors (an object leaving a selector is sent as DELETED). One
global resourceVersion; a bounded history (``max_history``); ``compact()`` forgets it, and a
watch from an older version gets a 200 stream whose only event is ERROR 410 Expired.

Strict: 404/409/422 ``v1.Status`` bodies with Kubernetes' messages and ``details.causes``;
pods, services and ingresses are validated (names, containers, images, quantities,
limits >= requests, restartPolicy, ports, volumes, labels, ownerReferences, service types and
ports, ingress rules and backends); ``fieldValidation=Strict`` refuses unknown fields, the
default answers with a ``Warning`` header; creating in a missing namespace is 404; a bearer
``token`` makes every other request 401; PUT/PATCH are 405 (not emulated).

Kubelet: one timeline thread moves pods bound (``spec.nodeName``) to an existing Ready node
through Pending (PodScheduled, ContainerCreating), image pull, init containers in order,
Running, and Succeeded/Failed, writing conditions, container states and Events as a kubelet
does. Kubelet admission refuses pods that do not fit the node's allocatable (``OutOfcpu``...)
or its nodeSelector. The pod's behaviour comes from ``fake.armadaproject.io/*`` annotations
(parsed by ``armada.core.fakepod.parse_fake_outcome``): ``duration`` (default 1s),
``pendingDuration`` (image pull time), ``exitCode``, ``condition`` (OOMKilled -> exit 137
OOMKilled; Evicted -> Failed/Evicted with a DisruptionTarget condition; DeadlineExceeded),
``terminationMessage``, ``podError`` (ErrImagePull then ImagePullBackOff, forever),
``nodeLost`` (after ``duration`` the whole node is lost), ``log``, ``deletionDuration`` (how
long a graceful delete takes, even beyond the grace period). Also ``activeDeadlineSeconds``,
``restartPolicy`` (Always/OnFailure restart the containers with CrashLoopBackOff),
``emulator.armadaproject.io/memoryNeeded`` (a first-container memory limit below it ->
OOMKilled), configMap/secret volumes (missing unless added with ``add_config_map`` /
``add_secret``: FailedMount, stuck ContainerCreating), graceful deletion (deletionTimestamp,
Killing, exit 143, then DELETED). Controllers: node lifecycle (a lost node goes Ready=Unknown
with an unreachable NoExecute taint; its pods get DisruptionTarget/DeletionByTaintManager,
a deletionTimestamp, and are removed by the pod GC after ``pod_gc_delay``), garbage
collection of services/ingresses owned by a deleted pod, an ingress controller setting
``status.loadBalancer.ingress``.

Not emulated (plainly): PUT/PATCH/update, deletecollection, subresources other than ``log``
(no ``status``, ``binding``, ``eviction``, ``exec``), config maps and secrets as API objects,
service accounts and the projected token volume, a scheduler (pods without ``nodeName``
stay Pending, without events), taint-based eviction other than for lost nodes (tolerations
and their tolerationSeconds are not consulted; NoSchedule taints are ignored, as a kubelet
does), ``set_node_ready(name, False)`` does not evict, protobuf, dry runs, server-side apply,
finalizers, namespace deletion, API discovery (``/api``, ``/apis``; only the metrics group's
own documents are served), event TTL, a real LoadBalancer controller for services,
readiness/liveness probes, metrics-server's watch of metrics, timestamps at more than second
precision (they are written ``+00:00`` by the client's serialiser, not ``Z``).

Hooks (all thread-safe): ``start() -> url``, ``stop()``, ``write_kubeconfig(path, context,
token)``, ``add_namespace``, ``add_node(name, labels, taints, allocatable, unschedulable)``,
``add_pod``, ``add_config_map``, ``add_secret``, ``set_node_ready``, ``lose_node``,
``oom``/``evict``/``finish(exit_code)``/``image_pull_backoff``/``vanish`` (ns, name),
``pause_kubelet(node="*")``/``resume_kubelet``, ``fail_requests(count, seconds, status)``,
``unreachable(seconds)``, ``cut_watches()``, ``compact()``, ``request_log``,
``request_counts()``, ``set_metrics_api("served"|"absent"|"unavailable")`` (also
``KubeEmulator(metrics_api=...)``), ``set_usage(ns, pod, container, cpu, memory)``,
``clear_usage(ns, pod)``, ``pod(ns, name)``, ``pods()``, ``events_for(ns, name)``,
``time_scale`` (multiplies every kubelet/controller delay and annotation duration),
``kubelet.t`` (the kubelet's base delays), ``cluster.node_eviction_delay``/``pod_gc_delay``.
"""

from tests.kube_emulator.emulator import KubeEmulator

__all__ = ["KubeEmulator"]
