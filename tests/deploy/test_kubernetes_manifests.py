"""The in-cluster manifests of ``deploy/kubernetes/``: the executor file in the Deployment's
ConfigMap is one ``armada-executor`` accepts, for the kubernetes backend with the service
account's credentials; the Deployment reads it where its arguments say, as the service
account that ``rbac.yaml`` defines and binds."""

from __future__ import annotations

from pathlib import PurePosixPath

import yaml

from armada.core.config_executor_process import parse_executor_process
from tests.e2e.kubernetes_system import ROOT, rbac_grants

DEPLOY = ROOT / "deploy/kubernetes"


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def one(docs: list[dict], kind: str) -> dict:
    [found] = [d for d in docs if d["kind"] == kind]
    return found


def test_the_config_map_holds_a_valid_in_cluster_kubernetes_executor():
    config_map = one(documents("executor-deployment.yaml"), "ConfigMap")
    executor = parse_executor_process(yaml.safe_load(config_map["data"]["executor.yaml"]))
    assert executor.backend == "kubernetes"
    assert executor.kubernetes.in_cluster is True
    assert executor.kubernetes.kubeconfig == ""
    assert executor.api.token_file  # the credential comes from a file (the secret's mount)


def test_the_deployment_reads_the_config_map_where_its_arguments_point():
    docs = documents("executor-deployment.yaml")
    config_map, deployment = one(docs, "ConfigMap"), one(docs, "Deployment")
    assert deployment["metadata"]["namespace"] == config_map["metadata"]["namespace"]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    args = container.get("command", []) + container["args"]
    config_path = PurePosixPath(args[args.index("--config") + 1])
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {PurePosixPath(m["mountPath"]): m["name"] for m in container["volumeMounts"]}
    volume = volumes[mounts[config_path.parent]]
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert config_path.name in config_map["data"]
    # The credential file the executor reads is in the mounted secret.
    executor = parse_executor_process(yaml.safe_load(config_map["data"][config_path.name]))
    token = PurePosixPath(executor.api.token_file)
    assert "secret" in volumes[mounts[token.parent]]


def test_the_deployment_runs_as_the_service_account_rbac_yaml_binds():
    rbac = documents("rbac.yaml")
    account = one(rbac, "ServiceAccount")["metadata"]
    deployment = one(documents("executor-deployment.yaml"), "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]
    assert deployment["metadata"]["namespace"] == account["namespace"]
    # The roles bound to that account grant what the executor needs to run a pod.
    assert {("", "pods", "create"), ("", "pods", "watch"), ("", "nodes", "list")} <= rbac_grants()
    # The utilisation events read the metrics API (tests/executor/backends/kubernetes/test_usage.py).
    assert ("metrics.k8s.io", "pods", "list") in rbac_grants()
