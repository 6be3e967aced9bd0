"""What the kubernetes backend sends for a run: the pod as submitted, bound and labelled,
and the services and ingresses that live with it."""

from __future__ import annotations

from kubernetes import client

from armada.core.config_kubernetes import IngressSettings
from armada.executor.backends.base import PodRequest
from armada.executor.backends.kubernetes.manifests import (
    ingress_addresses,
    ingress_manifests,
    pod_manifest,
    service_manifests,
)

SPEC = {
    "containers": [
        {
            "name": "main",
            "image": "busybox",
            "ports": [{"containerPort": 8080}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
            "securityContext": {"runAsNonRoot": True},
        }
    ],
    "initContainers": [{"name": "init", "image": "busybox"}],
    "volumes": [{"name": "data", "emptyDir": {}}],
    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "nodeSelector": {"zone": "z1"},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    },
    "securityContext": {"runAsUser": 1000},
    "serviceAccountName": "runner",
    "priorityClassName": "armada-default",
    "schedulerName": "custom",
    "terminationGracePeriodSeconds": 5,
    "restartPolicy": "Always",
}


def request(**overrides) -> PodRequest:
    values = {
        "name": "armada-01abc-0",
        "run_id": "01run",
        "job_id": "01abc",
        "node": "node-1",
        "pod_spec": SPEC,
        "annotations": {"team": "research"},
        "namespace": "jobs",
        "queue": "queue-a",
        "job_set": "set 1",
        "owner": "alice",
    }
    values.update(overrides)
    return PodRequest(**values)


def test_the_pod_is_the_job_spec_bound_to_the_node_with_armada_metadata():
    manifest = pod_manifest(request(), "k8s-node-1", "cluster-a")
    spec = manifest["spec"]
    for key in SPEC:
        if key != "restartPolicy":
            assert spec[key] == SPEC[key], key
    assert spec["nodeName"] == "k8s-node-1"
    assert spec["restartPolicy"] == "Never"  # one attempt per run; retries are ours
    meta = manifest["metadata"]
    assert (meta["name"], meta["namespace"]) == ("armada-01abc-0", "jobs")
    assert meta["labels"] == {
        "armada_job_id": "01abc",
        "armada_job_run_id": "01run",
        "armada_queue_id": "queue-a",
        "armada_pod_number": "0",
        "armada_pod_count": "1",
        "armadaproject.io/executor": "cluster-a",
    }
    assert meta["annotations"]["armada_jobset_id"] == "set 1"
    assert meta["annotations"]["armada_owner"] == "alice"
    assert meta["annotations"]["team"] == "research"
    # The official client's models read it as a pod, every field kept.
    model = client.V1Pod.from_dict(manifest)
    assert client.ApiClient().sanitize_for_serialization(model)["spec"]["schedulerName"] == "custom"


def test_a_queue_name_that_is_no_label_value_stays_an_annotation_only():
    manifest = pod_manifest(request(queue="a" * 64), "n", "c")
    assert "armada_queue_id" not in manifest["metadata"]["labels"]
    assert manifest["metadata"]["annotations"]["armada_queue_id"] == "a" * 64


CREATED = {"metadata": {"name": "armada-01abc-0", "uid": "uid-1"}}


def test_services_are_owned_by_the_pod_and_select_it():
    pod = request(
        services=({"type": "NodePort", "ports": [8080]}, {"type": "Headless", "ports": [9000]})
    )
    node_port, headless = service_manifests(pod, CREATED, "c")
    for service in (node_port, headless):
        (owner,) = service["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("Pod", "uid-1")
        assert service["spec"]["selector"] == {
            "armada_job_id": "01abc",
            "armada_job_run_id": "01run",
        }
        client.V1Service.from_dict(service)
    assert node_port["spec"]["type"] == "NodePort"
    assert node_port["spec"]["ports"][0]["port"] == 8080
    assert headless["spec"]["clusterIP"] == "None"


def test_an_ingress_has_a_service_and_a_rule_per_port():
    settings = IngressSettings(
        hostnameSuffix="jobs.example.com", ingressClass="nginx", certNameSuffix="tls"
    )
    pod = request(ingress=({"ports": [8080, 8081], "tlsEnabled": True, "annotations": {"a": "b"}},))
    (service,) = service_manifests(pod, CREATED, "c")
    (ingress,) = ingress_manifests(pod, CREATED, "c", settings)
    client.V1Ingress.from_dict(ingress)
    hosts = [rule["host"] for rule in ingress["spec"]["rules"]]
    assert hosts == [
        "armada-01abc-0-8080.jobs.jobs.example.com",
        "armada-01abc-0-8081.jobs.jobs.example.com",
    ]
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": service["metadata"]["name"], "port": {"number": 8080}}
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"hosts": hosts, "secretName": "jobs-tls"}]
    assert ingress["metadata"]["annotations"] == {"a": "b"}


def test_ingress_addresses_by_container_port():
    pod = {"status": {"hostIP": "10.0.0.7"}}
    services = [
        {
            "spec": {
                "type": "NodePort",
                "ports": [{"port": 8080, "targetPort": 8080, "nodePort": 31000}],
            }
        },
        {"spec": {"clusterIP": "None", "ports": [{"port": 9000}]}},  # headless: no address
    ]
    ingresses = [
        {
            "spec": {
                "rules": [
                    {
                        "host": "h-8081.ns.example.com",
                        "http": {"paths": [{"backend": {"service": {"port": {"number": 8081}}}}]},
                    }
                ]
            }
        }
    ]
    assert ingress_addresses(pod, services, ingresses) == {
        8080: "10.0.0.7:31000",
        8081: "h-8081.ns.example.com",
    }
    # Before the pod has a node, a node port has no address yet.
    assert ingress_addresses({"status": {}}, services, []) == {}
