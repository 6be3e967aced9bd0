"""CRUD, Status errors, validation, selectors, pagination and auth through the client."""

from __future__ import annotations

import json

import pytest
import requests
from kubernetes import client

from tests.kube_emulator.conftest import TOKEN, pod_body, wait_for


def _err(exc: client.ApiException) -> dict:
    return json.loads(exc.body)


def test_create_get_delete_and_conflicts(emu, v1):
    created = v1.create_namespaced_pod("default", pod_body("p1", node=None))
    assert created.kind == "Pod" and created.metadata.uid and created.status.phase == "Pending"
    assert created.spec.termination_grace_period_seconds == 30  # defaulted
    with pytest.raises(client.ApiException) as e:
        v1.create_namespaced_pod("default", pod_body("p1", node=None))
    assert e.value.status == 409 and _err(e.value)["message"] == 'pods "p1" already exists'
    assert _err(e.value)["reason"] == "AlreadyExists"
    with pytest.raises(client.ApiException) as e:
        v1.read_namespaced_pod("nope", "default")
    assert e.value.status == 404 and _err(e.value)["message"] == 'pods "nope" not found'
    with pytest.raises(client.ApiException) as e:
        v1.create_namespaced_pod("missing", pod_body("p2"))
    assert e.value.status == 404 and _err(e.value)["message"] == 'namespaces "missing" not found'
    # unbound pod: deletion is immediate
    gone = v1.delete_namespaced_pod("p1", "default")
    assert gone.metadata.name == "p1"
    with pytest.raises(client.ApiException) as e:
        v1.delete_namespaced_pod("p1", "default")
    assert e.value.status == 404


def test_validation_422_with_causes(emu, v1):
    bad = pod_body("Bad_Name")
    bad["spec"]["containers"].append({"name": "main"})
    bad["spec"]["restartPolicy"] = "Sometimes"
    bad["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}
    with pytest.raises(client.ApiException) as e:
        v1.create_namespaced_pod("default", bad)
    assert e.value.status == 422
    status = _err(e.value)
    assert status["reason"] == "Invalid" and status["details"]["kind"] == "Pod"
    fields = {c["field"] for c in status["details"]["causes"]}
    assert {
        "metadata.name",
        "spec.containers[1].image",
        "spec.containers[1].name",
        "spec.restartPolicy",
        "spec.containers[0].resources.requests",
    } <= fields
    no_image = pod_body("ok-name")
    del no_image["spec"]["containers"][0]["image"]
    with pytest.raises(client.ApiException) as e:
        v1.create_namespaced_pod("default", no_image)
    assert e.value.status == 422
    assert (
        _err(e.value)["message"]
        == 'Pod "ok-name" is invalid: spec.containers[0].image: Required value'
    )


def test_unreadable_body_and_unknown_fields(emu, v1):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    url = emu.url + "/api/v1/namespaces/default/pods"
    resp = requests.post(
        url,
        json={"metadata": {"name": "x"}, "spec": {"containers": "nope"}},
        headers=headers,
        timeout=10,
    )
    assert resp.status_code == 400 and resp.json()["reason"] == "BadRequest"
    body = pod_body("u1", node=None)
    body["spec"]["foo"] = 1
    resp = requests.post(url + "?fieldValidation=Strict", json=body, headers=headers, timeout=10)
    assert resp.status_code == 400
    assert resp.json()["message"] == 'strict decoding error: unknown field "spec.foo"'
    resp = requests.post(url, json=body, headers=headers, timeout=10)
    assert resp.status_code == 201
    assert resp.headers["Warning"] == '299 - "unknown field \\"spec.foo\\""'


def test_auth_401(emu):
    resp = requests.get(emu.url + "/api/v1/pods", timeout=10)
    assert resp.status_code == 401 and resp.json()["reason"] == "Unauthorized"
    resp = requests.get(
        emu.url + "/api/v1/pods", headers={"Authorization": "Bearer wrong"}, timeout=10
    )
    assert resp.status_code == 401
    resp = requests.get(
        emu.url + "/api/v1/nowhere", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
    )
    assert resp.status_code == 404 and resp.json()["kind"] == "Status"


def test_selectors_and_pagination(emu, v1):
    for i in range(7):
        body = pod_body(f"s{i}", node=None)
        body["metadata"]["labels"] = {"app": "a" if i % 2 else "b", "idx": str(i)}
        v1.create_namespaced_pod("default", body)
    assert len(v1.list_pod_for_all_namespaces(label_selector="app=a").items) == 3
    assert len(v1.list_pod_for_all_namespaces(label_selector="app!=a").items) == 4
    assert len(v1.list_pod_for_all_namespaces(label_selector="idx in (1,2),app").items) == 2
    assert len(v1.list_pod_for_all_namespaces(label_selector="!missing").items) == 7
    assert [
        p.metadata.name
        for p in v1.list_namespaced_pod("default", field_selector="metadata.name=s3").items
    ] == ["s3"]
    assert len(v1.list_pod_for_all_namespaces(field_selector="status.phase!=Pending").items) == 0
    with pytest.raises(client.ApiException) as e:
        v1.list_pod_for_all_namespaces(field_selector="spec.foo=x")
    assert (
        e.value.status == 400 and _err(e.value)["message"] == "field label not supported: spec.foo"
    )
    first = v1.list_pod_for_all_namespaces(limit=3)
    assert (
        len(first.items) == 3
        and first.metadata._continue
        and first.metadata.remaining_item_count == 4
    )
    v1.create_namespaced_pod("default", pod_body("s9", node=None))  # after the snapshot
    names = [p.metadata.name for p in first.items]
    token = first.metadata._continue
    while token:
        page = v1.list_pod_for_all_namespaces(limit=3, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
    assert names == [f"s{i}" for i in range(7)]  # a consistent snapshot


def test_services_ingresses_and_gc(emu, v1):
    pod = v1.create_namespaced_pod(
        "default", pod_body("owner", {"fake.armadaproject.io/duration": "60s"})
    )
    owner = [{"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": pod.metadata.uid}]
    svc = v1.create_namespaced_service("default", {"metadata": {"name": "svc", "ownerReferences": owner},
                                                   "spec": {"type": "NodePort", "selector": {"app": "test"}, "ports": [{"port": 80}]}})  # fmt: skip
    assert 30000 <= svc.spec.ports[0].node_port <= 32767 and svc.spec.cluster_ip.startswith("10.")
    with pytest.raises(client.ApiException) as e:
        v1.create_namespaced_service(
            "default",
            {
                "metadata": {"name": "h"},
                "spec": {"type": "NodePort", "clusterIP": "None", "ports": [{"port": 80}]},
            },
        )
    assert e.value.status == 422
    with pytest.raises(client.ApiException) as e:
        v1.create_namespaced_service(
            "default", {"metadata": {"name": "p"}, "spec": {"ports": [{"port": 70000}]}}
        )
    assert (
        e.value.status == 422
        and _err(e.value)["details"]["causes"][0]["field"] == "spec.ports[0].port"
    )
    net = client.NetworkingV1Api()
    rule = {
        "http": {
            "paths": [
                {
                    "path": "/",
                    "pathType": "Prefix",
                    "backend": {"service": {"name": "svc", "port": {"number": 80}}},
                }
            ]
        }
    }
    net.create_namespaced_ingress(
        "default",
        {"metadata": {"name": "ing", "ownerReferences": owner}, "spec": {"rules": [rule]}},
    )
    with pytest.raises(client.ApiException) as e:
        net.create_namespaced_ingress(
            "default",
            {
                "metadata": {"name": "bad"},
                "spec": {
                    "rules": [
                        {
                            "http": {
                                "paths": [
                                    {
                                        "path": "/",
                                        "pathType": "Prefix",
                                        "backend": {"service": {"name": "svc"}},
                                    }
                                ]
                            }
                        }
                    ]
                },
            },
        )
    assert e.value.status == 422
    wait_for(
        lambda: (
            net.read_namespaced_ingress("ing", "default").status.load_balancer.ingress or [None]
        )[0],
        what="ingress IP",
    )
    v1.delete_namespaced_pod("owner", "default", grace_period_seconds=0)
    wait_for(lambda: not v1.list_namespaced_service("default").items, what="service GC")
    wait_for(lambda: not net.list_ingress_for_all_namespaces().items, what="ingress GC")


def test_nodes_namespaces_version(emu, v1):
    emu.add_node(
        "gpu-1",
        labels={"gpu": "yes"},
        taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
        unschedulable=True,
    )
    nodes = v1.list_node(label_selector="gpu=yes").items
    assert nodes[0].spec.unschedulable and nodes[0].spec.taints[0].key == "gpu"
    assert nodes[0].metadata.labels["kubernetes.io/hostname"] == "gpu-1"
    assert nodes[0].status.allocatable["cpu"] == "8"
    assert v1.read_namespace("default").status.phase == "Active"
    assert client.VersionApi().get_code().major == "1"
