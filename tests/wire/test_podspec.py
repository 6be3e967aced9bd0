"""Kubernetes PodSpec messages <-> our pod spec dicts (Kubernetes' JSON shape)."""

from __future__ import annotations

import copy

import pytest
from armada_client.k8s.io.api.core.v1 import generated_pb2 as v1
from armada_client.k8s.io.apimachinery.pkg.api.resource.generated_pb2 import Quantity
from armada_client.k8s.io.apimachinery.pkg.apis.meta.v1 import generated_pb2 as meta
from armada_client.k8s.io.apimachinery.pkg.util.intstr.generated_pb2 import IntOrString

from armada.core.errors import ValidationFailed
from armada.wire.podspec import (
    format_go_duration,
    message_to_json,
    parse_go_duration,
    pod_spec_from_message,
    pod_spec_message,
)

FULL = {
    "containers": [
        {
            "name": "main",
            "image": "busybox:latest",
            "command": ["sh", "-c", "true"],
            "args": ["--flag"],
            "resources": {
                "requests": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
                "limits": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
            },
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [
                {"name": "PLAIN", "value": "x"},
                {"name": "EMPTY", "value": ""},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                {
                    "name": "LIMIT",
                    "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}},
                },
            ],
            "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
            "readinessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 0},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": False}],
            "securityContext": {"runAsUser": 1000, "allowPrivilegeEscalation": False},
        }
    ],
    "initContainers": [
        {
            "name": "init",
            "image": "busybox:latest",
            "resources": {"requests": {"cpu": "1", "memory": "64Mi"}},
        }
    ],
    "volumes": [
        {"name": "data", "emptyDir": {"sizeLimit": "2Gi", "medium": "Memory"}},
        {"name": "cfg", "configMap": {"name": "settings", "defaultMode": 420}},
        {"name": "host", "hostPath": {"path": "/tmp", "type": "Directory"}},
        {
            "name": "scratch",
            "ephemeral": {
                "volumeClaimTemplate": {
                    "metadata": {
                        "labels": {"team": "a"},
                        "creationTimestamp": "2026-01-01T12:00:00Z",
                    },
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "10Gi"}},
                    },
                }
            },
        },
    ],
    "restartPolicy": "Never",
    "terminationGracePeriodSeconds": 30,
    "activeDeadlineSeconds": 3600,
    "nodeSelector": {"kubernetes.io/arch": "amd64"},
    "tolerations": [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60}
    ],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    },
    "priorityClassName": "armada-default",
    "automountServiceAccountToken": False,
    "hostNetwork": False,
    "ephemeralContainers": [{"name": "debug", "image": "busybox", "targetContainerName": "main"}],
}


def test_a_full_pod_spec_survives_both_ways() -> None:
    dropped: list[str] = []
    msg = pod_spec_message(FULL, dropped=dropped)
    assert dropped == []
    assert pod_spec_from_message(msg) == FULL
    # ... and through the wire bytes too.
    again = v1.PodSpec.FromString(msg.SerializeToString())
    assert pod_spec_from_message(again) == FULL


def test_quantities_are_text_in_json_and_messages_on_the_wire() -> None:
    msg = pod_spec_message(FULL)
    requests = msg.containers[0].resources.requests
    assert requests["cpu"] == Quantity(string="1500m")
    assert requests["nvidia.com/gpu"].string == "1"
    assert msg.volumes[0].volumeSource.emptyDir.sizeLimit.string == "2Gi"
    # A number where Kubernetes takes a quantity is accepted and kept as its text.
    msg = pod_spec_message({"containers": [{"resources": {"limits": {"cpu": 2, "memory": 0.5}}}]})
    assert msg.containers[0].resources.limits["cpu"].string == "2"
    assert msg.containers[0].resources.limits["memory"].string == "0.5"


def test_int_or_string_ports_and_probes() -> None:
    msg = pod_spec_message(FULL)
    liveness = msg.containers[0].livenessProbe
    assert liveness.handler.httpGet.port == IntOrString(type=1, strVal="http")
    assert liveness.periodSeconds == 5
    readiness = msg.containers[0].readinessProbe
    assert readiness.handler.tcpSocket.port == IntOrString(type=0, intVal=8080)
    # From a message built as an Armada client builds it.
    probe = v1.Probe(
        handler=v1.ProbeHandler(httpGet=v1.HTTPGetAction(port=IntOrString(type=0, intVal=80)))
    )
    spec = v1.PodSpec(containers=[v1.Container(name="c", livenessProbe=probe)])
    assert pod_spec_from_message(spec) == {
        "containers": [{"name": "c", "livenessProbe": {"httpGet": {"port": 80}}}]
    }


def test_embedded_structs_are_inlined_as_kubernetes_spells_them() -> None:
    msg = pod_spec_message(FULL)
    assert msg.volumes[1].volumeSource.configMap.localObjectReference.name == "settings"
    assert msg.containers[0].envFrom[0].configMapRef.localObjectReference.name == "settings"
    assert msg.containers[0].env[3].valueFrom.secretKeyRef.localObjectReference.name == "s"
    assert msg.ephemeralContainers[0].ephemeralContainerCommon.name == "debug"
    assert msg.ephemeralContainers[0].targetContainerName == "main"
    volume = v1.Volume(name="v", volumeSource=v1.VolumeSource(emptyDir=v1.EmptyDirVolumeSource()))
    assert pod_spec_from_message(v1.PodSpec(volumes=[volume])) == {
        "volumes": [{"name": "v", "emptyDir": {}}]
    }


def test_int64_fields_are_numbers_and_set_zero_values_are_kept() -> None:
    msg = v1.PodSpec(
        terminationGracePeriodSeconds=0,
        hostNetwork=False,
        containers=[v1.Container(name="c", env=[v1.EnvVar(name="E", value="")])],
    )
    assert pod_spec_from_message(msg) == {
        "terminationGracePeriodSeconds": 0,
        "hostNetwork": False,
        "containers": [{"name": "c", "env": [{"name": "E", "value": ""}]}],
    }
    assert pod_spec_from_message(v1.PodSpec()) == {}
    big = pod_spec_message({"activeDeadlineSeconds": "9007199254740993"})  # int64 as text
    assert big.activeDeadlineSeconds == 9007199254740993
    assert pod_spec_from_message(big) == {"activeDeadlineSeconds": 9007199254740993}


def test_times_and_durations() -> None:
    msg = pod_spec_message(FULL)
    meta_msg = msg.volumes[3].volumeSource.ephemeral.volumeClaimTemplate.metadata
    assert meta_msg.creationTimestamp.seconds == 1767268800
    assert message_to_json(meta.Time(seconds=0), "t") == "1970-01-01T00:00:00Z"
    assert (
        message_to_json(meta.MicroTime(seconds=1, nanos=5000), "t") == "1970-01-01T00:00:01.000005Z"
    )
    assert message_to_json(meta.Duration(duration=90 * 10**9), "d") == "1m30s"
    assert parse_go_duration("1h2m3.5s") == 3_723_500_000_000
    assert parse_go_duration("-1.5ms") == -1_500_000
    assert parse_go_duration("0") == 0
    assert parse_go_duration("5") is None and parse_go_duration("1d") is None
    for nanos in (0, 1, 999, 1_500_000, 3_723_500_000_000, -30 * 10**9):
        assert parse_go_duration(format_go_duration(nanos)) == nanos


def test_a_time_json_cannot_spell_is_an_error_naming_the_field() -> None:
    template = v1.PersistentVolumeClaimTemplate(
        metadata=meta.ObjectMeta(creationTimestamp=meta.Time(seconds=10**12))
    )
    spec = v1.PodSpec(
        volumes=[
            v1.Volume(
                name="v",
                volumeSource=v1.VolumeSource(
                    ephemeral=v1.EphemeralVolumeSource(volumeClaimTemplate=template)
                ),
            )
        ]
    )
    with pytest.raises(ValidationFailed) as caught:
        pod_spec_from_message(spec, where="jobRequestItems[0].podSpec")
    assert [e.field for e in caught.value.errors] == [
        "jobRequestItems[0].podSpec.volumes[0].ephemeral.volumeClaimTemplate.metadata"
        ".creationTimestamp"
    ]


def raw_fields_pod(raw: bytes) -> v1.PodSpec:
    managed = meta.ManagedFieldsEntry(manager="m", fieldsV1=meta.FieldsV1(Raw=raw))
    template = v1.PersistentVolumeClaimTemplate(metadata=meta.ObjectMeta(managedFields=[managed]))
    ephemeral = v1.EphemeralVolumeSource(volumeClaimTemplate=template)
    return v1.PodSpec(
        volumes=[v1.Volume(name="v", volumeSource=v1.VolumeSource(ephemeral=ephemeral))]
    )


def test_raw_fields_are_the_json_they_hold_or_an_error_naming_them() -> None:
    spec = pod_spec_from_message(raw_fields_pod(b'{"f:spec":{"f:x":{}}}'))
    template = spec["volumes"][0]["ephemeral"]["volumeClaimTemplate"]
    assert template["metadata"]["managedFields"] == [
        {"manager": "m", "fieldsV1": {"f:spec": {"f:x": {}}}}
    ]
    assert pod_spec_from_message(pod_spec_message(spec)) == spec
    where = "podSpec.volumes[0].ephemeral.volumeClaimTemplate.metadata.managedFields[0].fieldsV1"
    for raw in (b"not json", b"\xff", b"[" * 100_000):
        with pytest.raises(ValidationFailed) as caught:
            pod_spec_from_message(raw_fields_pod(raw))
        assert [e.field for e in caught.value.errors] == [where]


def test_what_the_message_cannot_hold_is_named_or_left_out() -> None:
    data = {
        "containers": [{"name": 7, "ports": [{"containerPort": "x"}, {"containerPort": 2**40}]}],
        "nodeSelector": {"a": 1},
        "tolerations": "none",
        "hostNetwork": "yes",
        "madeUp": True,
        "volumes": [{"name": "v", "hostPath": {"path": "/x"}}],
    }
    with pytest.raises(ValidationFailed) as caught:
        pod_spec_message(data, strict=True)
    assert sorted(e.field for e in caught.value.errors) == [
        "podSpec.containers[0].name",
        "podSpec.containers[0].ports[0].containerPort",
        "podSpec.containers[0].ports[1].containerPort",
        "podSpec.hostNetwork",
        "podSpec.madeUp",
        "podSpec.nodeSelector.a",
        "podSpec.tolerations",
    ]
    dropped: list[str] = []
    msg = pod_spec_message(copy.deepcopy(data), dropped=dropped)
    assert len(dropped) == 7
    # What fits is kept.
    assert pod_spec_from_message(msg) == {
        "containers": [{"ports": [{}, {}]}],
        "volumes": [{"name": "v", "hostPath": {"path": "/x"}}],
    }


def test_json_null_leaves_a_field_unset() -> None:
    msg = pod_spec_message({"containers": [{"name": "c", "image": None}], "affinity": None})
    assert not msg.HasField("affinity")
    assert not msg.containers[0].HasField("image")
