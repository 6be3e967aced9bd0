"""The resource metrics API (``metrics.k8s.io/v1beta1``) through the official client:
discovery, PodMetrics and NodeMetrics in metrics-server's shape, selectors, refusals, and
the three states of the aggregated API (served, absent, unavailable)."""

from __future__ import annotations

import json
import re

import pytest
import requests
from kubernetes import client

from tests.kube_emulator.conftest import TOKEN, pod_body, wait_for
from tests.kube_emulator.metrics import bytes_text, cpu_text, go_duration

G, V = "metrics.k8s.io", "v1beta1"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def custom(emu) -> client.CustomObjectsApi:
    emu.set_metrics_api("served")
    return client.CustomObjectsApi()


def raw(emu, path: str, method: str = "GET") -> requests.Response:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return requests.request(method, emu.url + path, headers=headers, timeout=30)


def running(emu, v1, name: str, ns: str = "default", **pod) -> None:
    body = pod_body(name, {"fake.armadaproject.io/duration": "1h"}, **pod)
    v1.create_namespaced_pod(ns, body)
    wait_for(lambda: (emu.pod(ns, name) or {}).get("status", {}).get("phase") == "Running")


def refused(call) -> tuple[int, dict]:
    with pytest.raises(client.ApiException) as e:
        call()
    return e.value.status, json.loads(e.value.body)


def test_quantities_are_written_in_canonical_form_as_metrics_server_writes_them():
    assert [cpu_text(n) for n in (0, 250_000_000, 13_000_001, 2_000_000_000, 2_500_000_000)] == [
        "0",
        "250m",
        "13000001n",
        "2",
        "2500m",
    ]
    assert cpu_text(3_000) == "3u"
    mib = 1024 * 1024
    assert [bytes_text(n) for n in (0, 100 * mib, 12960 * 1024, 1536, 1000, 999)] == [
        "0",
        "100Mi",
        "12960Ki",
        "1536",
        "1k",
        "999",
    ]
    assert [go_duration(s) for s in (15, 10.5, 15.012, 90)] == ["15s", "10.5s", "15.012s", "1m30s"]


def test_discovery_of_the_group_and_its_version(emu, custom):
    resources = custom.get_api_resources(G, V)
    assert resources.group_version == "metrics.k8s.io/v1beta1"
    assert [(r.name, r.kind, r.namespaced, r.verbs) for r in resources.resources] == [
        ("nodes", "NodeMetrics", False, ["get", "list"]),
        ("pods", "PodMetrics", True, ["get", "list"]),
    ]
    group = raw(emu, "/apis/metrics.k8s.io").json()
    assert group["kind"] == "APIGroup" and group["name"] == G
    assert group["preferredVersion"] == {"groupVersion": "metrics.k8s.io/v1beta1", "version": V}


def test_pod_metrics_in_metrics_servers_shape(emu, v1, custom):
    running(emu, v1, "busy")
    running(emu, v1, "quiet")  # runs, but metrics-server has not scraped it
    v1.create_namespaced_pod("default", pod_body("waiting", node=None))  # never runs
    emu.set_usage("default", "busy", "main", cpu="250m", memory="100Mi")
    emu.set_usage("default", "waiting", "main", cpu="1", memory="1Gi")
    listed = custom.list_namespaced_custom_object(G, V, "default", "pods")
    assert (listed["kind"], listed["apiVersion"], listed["metadata"]) == (
        "PodMetricsList",
        "metrics.k8s.io/v1beta1",
        {},
    )
    [item] = listed["items"]
    assert item["metadata"]["name"] == "busy" and item["metadata"]["namespace"] == "default"
    assert item["metadata"]["labels"] == {"app": "test"}  # the pod's labels
    assert RFC3339.match(item["timestamp"]) and item["window"] == "15s"
    assert item["containers"] == [{"name": "main", "usage": {"cpu": "250m", "memory": "100Mi"}}]
    one = custom.get_namespaced_custom_object(G, V, "default", "pods", "busy")
    assert (one["kind"], one["containers"]) == ("PodMetrics", item["containers"])
    # Usage moves on: the next read shows the new figures, in canonical form.
    emu.set_usage("default", "busy", "main", cpu="13000001n", memory="12960Ki")
    again = custom.get_namespaced_custom_object(G, V, "default", "pods", "busy")
    assert again["containers"][0]["usage"] == {"cpu": "13000001n", "memory": "12960Ki"}
    # A pod without metrics, and no pod at all, are two different 404s.
    code, status = refused(lambda: custom.get_namespaced_custom_object(G, V, "default", "pods", "quiet"))  # fmt: skip
    assert (code, status["message"]) == (404, 'podmetrics.metrics.k8s.io "default/quiet" not found')
    assert status["details"] == {"name": "default/quiet", "group": G, "kind": "podmetrics"}
    code, status = refused(lambda: custom.get_namespaced_custom_object(G, V, "default", "pods", "nope"))  # fmt: skip
    assert (code, status["message"]) == (404, 'pods "nope" not found')


def test_lists_filter_by_labels_and_names_across_namespaces(emu, v1, custom):
    emu.add_namespace("team")
    running(emu, v1, "a")
    running(emu, v1, "b", ns="team")
    v1.create_namespaced_pod("team", {**pod_body("c"), "metadata": {"name": "c", "labels": {"app": "other"}}})  # fmt: skip
    wait_for(lambda: (emu.pod("team", "c") or {}).get("status", {}).get("phase") == "Running")
    for ns, name in (("default", "a"), ("team", "b"), ("team", "c")):
        emu.set_usage(ns, name, "main", cpu="10m", memory="1Mi")
    everywhere = custom.list_cluster_custom_object(G, V, "pods")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere["items"]] == [
        ("default", "a"),
        ("team", "b"),
        ("team", "c"),
    ]

    def names(**kwargs) -> list[str]:
        answer = custom.list_namespaced_custom_object(G, V, "team", "pods", **kwargs)
        return [i["metadata"]["name"] for i in answer["items"]]

    assert names(label_selector="app=test") == ["b"]
    assert names(label_selector="app,app!=test") == ["c"]
    assert names(field_selector="metadata.name=c") == ["c"]
    assert names(label_selector="app=none") == []
    assert custom.list_namespaced_custom_object(G, V, "empty-ns", "pods")["items"] == []
    code, status = refused(lambda: names(field_selector="spec.nodeName=node-1"))
    assert code == 400 and status["message"] == (
        '"spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    code, status = refused(lambda: names(label_selector="app in (a"))
    assert code == 400 and status["reason"] == "BadRequest"


def test_node_metrics_sum_the_pods_on_the_node(emu, v1, custom):
    emu.add_node("node-2")
    running(emu, v1, "a")
    running(emu, v1, "b")
    running(emu, v1, "elsewhere", node="node-2")
    emu.set_usage("default", "a", "main", cpu="250m", memory="100Mi")
    emu.set_usage("default", "b", "main", cpu="750m", memory="28Mi")
    emu.set_usage("default", "elsewhere", "main", cpu="5m", memory="1Mi")
    node = custom.get_cluster_custom_object(G, V, "nodes", "node-1")
    assert node["kind"] == "NodeMetrics" and node["usage"] == {"cpu": "1", "memory": "128Mi"}
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-1"
    listed = custom.list_cluster_custom_object(G, V, "nodes")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["node-1", "node-2"]
    emu.set_node_ready("node-2", False)
    code, status = refused(lambda: custom.get_cluster_custom_object(G, V, "nodes", "node-2"))
    assert (code, status["message"]) == (404, 'nodemetrics.metrics.k8s.io "node-2" not found')


def test_a_new_pod_of_the_same_name_starts_without_metrics(emu, v1, custom):
    running(emu, v1, "again")
    emu.set_usage("default", "again", "main", cpu="100m", memory="10Mi")
    assert custom.get_namespaced_custom_object(G, V, "default", "pods", "again")
    emu.vanish("default", "again")
    running(emu, v1, "again")
    code, _ = refused(lambda: custom.get_namespaced_custom_object(G, V, "default", "pods", "again"))
    assert code == 404
    emu.clear_usage("default", "again")
    emu.set_usage("default", "again", "main", cpu="1m", memory="1Ki")
    item = custom.get_namespaced_custom_object(G, V, "default", "pods", "again")
    assert item["containers"][0]["usage"] == {"cpu": "1m", "memory": "1Ki"}


def test_only_get_and_list_no_watch(emu, custom):
    assert (
        raw(emu, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", "POST").status_code == 405
    )
    assert raw(emu, "/apis/metrics.k8s.io/v1beta1/nodes/node-1", "DELETE").status_code == 405
    answer = raw(emu, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?watch=true")
    assert answer.status_code == 405
    assert answer.json()["message"] == 'watch is not supported on resources of kind "pods.metrics.k8s.io"'  # fmt: skip
    assert raw(emu, "/apis/metrics.k8s.io/v1beta1/podmetrics").status_code == 404


def test_without_metrics_server_every_path_is_the_api_servers_404(emu, v1):
    running(emu, v1, "p")
    emu.set_usage("default", "p", "main", cpu="1", memory="1Mi")  # kept for later, not served
    custom = client.CustomObjectsApi()
    for call in (
        lambda: custom.list_namespaced_custom_object(G, V, "default", "pods"),
        lambda: custom.get_namespaced_custom_object(G, V, "default", "pods", "p"),
        lambda: custom.get_api_resources(G, V),
    ):
        code, status = refused(call)
        assert (code, status["kind"], status["reason"]) == (404, "Status", "NotFound")
        assert status["message"] == "the server could not find the requested resource"
    assert raw(emu, "/apis/metrics.k8s.io").status_code == 404
    emu.set_metrics_api("served")
    assert custom.list_namespaced_custom_object(G, V, "default", "pods")["items"]
    counts = emu.request_counts()
    assert counts[("GET", "pods.metrics.k8s.io", False)] == 3
    assert counts[("GET", "metrics.k8s.io", False)] == 2


def test_an_unavailable_metrics_server_is_the_aggregators_503(emu):
    emu.set_metrics_api("unavailable")
    custom = client.CustomObjectsApi()
    with pytest.raises(client.ApiException) as e:
        custom.list_namespaced_custom_object(G, V, "default", "pods")
    assert e.value.status == 503 and e.value.body.strip() == "service unavailable"
    answer = raw(emu, "/apis/metrics.k8s.io/v1beta1")
    assert answer.status_code == 503 and answer.headers["Content-Type"].startswith("text/plain")
    assert raw(emu, "/apis/metrics.k8s.io").json()["kind"] == "APIGroup"  # the APIService's
    with pytest.raises(ValueError, match="one of served, absent, unavailable"):
        emu.set_metrics_api("broken")
