"""Which of the cluster's nodes an executor reports, and what they have free."""

from __future__ import annotations

import pytest

from armada.core.config_kubernetes import KubernetesCluster
from armada.executor.backends.kubernetes.nodes import cluster_nodes, pod_usage, requested


def node(name, labels=None, taints=None, unschedulable=False, allocatable=None):
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": allocatable or {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def pod(node_name, cpu="500m", memory="1Gi", phase="Running", init=None, overhead=None):
    spec = {
        "nodeName": node_name,
        "containers": [
            {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        ],
    }
    if init:
        spec["initContainers"] = init
    if overhead:
        spec["overhead"] = overhead
    return {"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}}


SETTINGS: dict = {}


@pytest.mark.parametrize(
    ("cluster", "nodes", "expected"),
    [
        (SETTINGS, [node("a"), node("b")], ["a", "b"]),
        # An untolerated NoSchedule / NoExecute taint leaves the node out; PreferNoSchedule not.
        (
            SETTINGS,
            [
                node("a", taints=[{"key": "gpu", "effect": "NoSchedule"}]),
                node("b", taints=[{"key": "x", "effect": "NoExecute"}]),
                node("c", taints=[{"key": "soft", "effect": "PreferNoSchedule"}]),
            ],
            ["c"],
        ),
        (
            {"toleratedTaints": ["gpu"]},
            [node("a", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}])],
            ["a"],
        ),
        # nodePoolLabel: only the nodes of the executor's pool.
        (
            {"nodePoolLabel": "armadaproject.io/pool"},
            [
                node("a", labels={"armadaproject.io/pool": "default"}),
                node("b", labels={"armadaproject.io/pool": "gpu"}),
                node("c"),
            ],
            ["a"],
        ),
        # nodeIdLabel names the node to the scheduler; without the label, its own name.
        (
            {"nodeIdLabel": "example.com/id"},
            [node("a", labels={"example.com/id": "rack1-a"}), node("b")],
            ["rack1-a", "b"],
        ),
    ],
)
def test_which_nodes_serve_the_executor(cluster, nodes, expected):
    assert [
        n.name for n in cluster_nodes(nodes, [], KubernetesCluster(**cluster), "default")
    ] == expected


def test_a_cordoned_node_is_reported_unschedulable():
    (reported,) = cluster_nodes([node("a", unschedulable=True)], [], KubernetesCluster(), "default")
    assert reported.unschedulable


def test_taints_labels_and_allocatable_are_reported_as_the_cluster_has_them():
    taint = {"key": "gpu", "value": "a100", "effect": "NoSchedule"}
    (reported,) = cluster_nodes(
        [node("a", labels={"zone": "z1"}, taints=[taint])],
        [],
        KubernetesCluster(toleratedTaints=["gpu"]),
        "default",
    )
    assert reported.taints == (("gpu", "a100", "NoSchedule"),)
    assert reported.labels == {"kubernetes.io/hostname": "a", "zone": "z1"}
    assert reported.allocatable == {"cpu": "8", "memory": "32Gi", "pods": "110"}


def test_what_other_live_pods_request_is_reported_per_node():
    others = [
        pod("a", cpu="500m", memory="1Gi"),
        pod("a", cpu="250m", memory="512Mi"),
        pod("b", cpu="1", memory="2Gi"),
        pod("a", cpu="4", memory="8Gi", phase="Succeeded"),  # ended: takes nothing
        pod("", cpu="4", memory="8Gi"),  # not placed yet: on no node
    ]
    reported = {
        n.name: n
        for n in cluster_nodes(
            [node("a"), node("b")], [pod_usage(p) for p in others], KubernetesCluster(), ""
        )
    }
    assert reported["a"].non_armada_allocated == {"cpu": "750m", "memory": "1536Mi"}
    assert reported["b"].non_armada_allocated == {"cpu": "1", "memory": "2Gi"}


def test_requests_follow_kubernetes_rules():
    init = [{"name": "i", "image": "i", "resources": {"requests": {"cpu": "2"}}}]
    assert requested(pod("a", cpu="1", init=init))["cpu"] == 2000  # the larger init container
    assert requested(pod("a", cpu="1", overhead={"cpu": "100m"}))["cpu"] == 1100
    limits_only = {
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "3"}}}]}
    }
    assert requested(limits_only)["cpu"] == 3000
    assert not requested({"spec": {"containers": "nonsense"}})
