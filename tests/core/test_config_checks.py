"""The start-up checks Armada makes on its configuration, and executor namespaces.

Armada refuses to start when the retry-policy engine is on and ``nodeIdLabel`` is not one of
``indexedNodeLabels`` (an avoidSameNode retry finds nodes by that label). The error names
``scheduling.indexedNodeLabels``; the shipped configurations pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from armada.conf import ConfigError, load_config_file
from armada.core.config import parse_config
from armada.core.errors import ValidationFailed

ROOT = Path(__file__).resolve().parents[2]
HOSTNAME = "kubernetes.io/hostname"


def scheduling(enabled: bool, **keys) -> dict:
    retry = {"enabled": True, "globalMaxRetries": 3} if enabled else {"enabled": False}
    return {"scheduling": {"retryPolicy": retry, **keys}}


NODE_ID_CASES = [
    # (name, configuration, error expected)
    ("disabled, defaults", scheduling(False), False),
    ("disabled, nothing indexed", scheduling(False, indexedNodeLabels=[]), False),
    ("disabled, node id not indexed", scheduling(False, indexedNodeLabels=["rack"]), False),
    ("enabled, defaults (the node id label is indexed by default)", scheduling(True), False),
    ("enabled, node id indexed", scheduling(True, indexedNodeLabels=["rack", HOSTNAME]), False),
    (
        "enabled, own node id label indexed",
        scheduling(
            True,
            nodeIdLabel="armadaproject.io/nodeId",
            indexedNodeLabels=["armadaproject.io/nodeId"],
        ),
        False,
    ),
    ("enabled, nothing indexed", scheduling(True, indexedNodeLabels=[]), True),
    ("enabled, other labels indexed", scheduling(True, indexedNodeLabels=["rack", "zone"]), True),
    (
        "enabled, own node id label with the default index",
        scheduling(True, nodeIdLabel="armadaproject.io/nodeId"),
        True,
    ),
    (
        "enabled, a label differing only in case",
        scheduling(True, indexedNodeLabels=["Kubernetes.io/hostname"]),
        True,
    ),
]


@pytest.mark.parametrize(
    ("data", "refused"), [c[1:] for c in NODE_ID_CASES], ids=[c[0] for c in NODE_ID_CASES]
)
def test_retry_policies_need_the_node_id_label_indexed(data, refused):
    if not refused:
        cfg = parse_config(data)
        assert cfg.scheduling.node_id_label in cfg.scheduling.indexed_node_labels or (
            not cfg.scheduling.retry_policy.enabled
        )
        return
    with pytest.raises(ValidationFailed) as info:
        parse_config(data)
    [error] = info.value.errors
    assert error.field == "scheduling.indexedNodeLabels"
    node_id = data["scheduling"].get("nodeIdLabel", HOSTNAME)
    assert repr(node_id) in error.message
    assert "retryPolicy.enabled" in error.message


def test_the_default_indexes_the_default_node_id_label():
    s = parse_config({}).scheduling
    assert s.node_id_label == HOSTNAME
    assert s.indexed_node_labels == [HOSTNAME]


def test_start_up_is_refused_with_a_config_error_naming_the_key(tmp_path):
    path = tmp_path / "armada.yaml"
    path.write_text(
        "scheduling:\n"
        "  retryPolicy: {enabled: true, globalMaxRetries: 3}\n"
        "  indexedNodeLabels: [rack]\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config_file(path)
    assert "scheduling.indexedNodeLabels" in str(info.value)
    assert "'kubernetes.io/hostname'" in str(info.value)


def _shipped_configs() -> list[Path]:
    files = [
        ROOT / "config" / "armada.yaml",
        *sorted((ROOT / "config" / "examples").glob("*.y*ml")),
    ]
    return [p for p in files if "kind" not in (yaml.safe_load(p.read_text()) or {})]


@pytest.mark.parametrize("path", _shipped_configs(), ids=lambda p: p.name)
@pytest.mark.parametrize("enabled", [False, True], ids=["as-shipped", "retry-policies-on"])
def test_shipped_configs_pass_with_and_without_retry_policies(path, enabled):
    data = yaml.safe_load(path.read_text())
    if enabled:
        data.setdefault("scheduling", {})["retryPolicy"] = {"enabled": True, "globalMaxRetries": 5}
    cfg = parse_config(data)
    assert cfg.scheduling.node_id_label in cfg.scheduling.indexed_node_labels


# --- executor namespaces -----------------------------------------------------------------------

NAMESPACE_CASES = [
    ("default", None, ["default"], None),
    ("several", ["default", "team-a", "x1"], ["default", "team-a", "x1"], None),
    ("empty list", [], None, ("executors[0].namespaces", "at least 1")),
    ("upper case", ["Team"], None, ("executors[0].namespaces[0]", "RFC 1123")),
    ("underscore", ["default", "team_a"], None, ("executors[0].namespaces[1]", "RFC 1123")),
    ("too long", ["a" * 64], None, ("executors[0].namespaces[0]", "at most 63")),
    ("duplicate", ["a", "b", "a"], None, ("executors[0].namespaces[2]", "duplicate namespace 'a'")),
    ("not text", [7], None, ("executors[0].namespaces[0]", "string")),
    ("not a list", "default", None, ("executors[0].namespaces", "list")),
]


@pytest.mark.parametrize(
    ("given", "parsed", "error"),
    [c[1:] for c in NAMESPACE_CASES],
    ids=[c[0] for c in NAMESPACE_CASES],
)
def test_executor_namespaces(given, parsed, error):
    executor = {"id": "e"} if given is None else {"id": "e", "namespaces": given}
    if error is None:
        assert parse_config({"executors": [executor]}).executors[0].namespaces == parsed
        return
    with pytest.raises(ValidationFailed) as info:
        parse_config({"executors": [executor]})
    fields = {(e.field, e.message) for e in info.value.errors}
    assert any(f == error[0] and error[1] in m for f, m in fields), fields
