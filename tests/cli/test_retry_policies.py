"""Tests of ``armadactl create|update|get|delete retry-policy`` against the fake server."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from armada.cli.output import render_policies_table, timestamp_cell
from armada.cli.policyfile import check_policy_document
from tests.cli.fake_armada import FakeArmada
from tests.cli.helpers import run, write

POLICY_YAML = """\
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: ml-training-retries
retryLimit: 3
defaultAction: Fail
rules:
  - action: Retry
    onCategory: oom
    mutate: {resources: {memory: {factor: 1.5}}}
"""
POLICY = yaml.safe_load(POLICY_YAML)


def policy_file(tmp_path: Path, text: str = POLICY_YAML, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- local checks and rendering ----------------------------------------------------------


def test_policy_document_checks() -> None:
    assert check_policy_document(POLICY, need_name=True) == []
    assert check_policy_document({"retryLimit": 1}, need_name=False) == []
    assert check_policy_document({"retryLimit": 1}, need_name=True) == [
        ("name", "is required: it names the policy to update")
    ]
    assert check_policy_document({"kind": "Queue", "name": "x"}, need_name=True) == [
        ("kind", "must be RetryPolicy, not 'Queue'")
    ]
    assert check_policy_document(["a"], need_name=False)[0][0] == ""
    assert check_policy_document(None, need_name=False)[0][0] == ""
    (problem,) = check_policy_document({"name": "x", "retryLimit": float("nan")}, need_name=False)
    assert "JSON cannot carry" in problem[1]


def test_policies_table_counts_rules_and_shows_utc_times() -> None:
    policies = [
        {
            "name": "ml-training-retries",
            "retryLimit": 3,
            "defaultAction": "Fail",
            "rules": [{"action": "Retry"}, {"action": "Fail"}],
            "version": 4,
            "updatedAt": "2025-03-05T12:00:01.123456+02:00",
        },
        {"name": "none", "retryLimit": 0, "defaultAction": "Retry", "rules": [], "version": 1},
    ]
    lines = render_policies_table(policies).splitlines()
    assert lines[0].split("  ")[0] == "NAME"
    assert lines[0].startswith("NAME                 RETRY LIMIT  DEFAULT ACTION  RULES  VERSION")
    assert lines[0].endswith("UPDATED")
    assert lines[1].split() == [
        "ml-training-retries",
        "3",
        "Fail",
        "2",
        "4",
        "2025-03-05T10:00:01Z",
    ]
    assert lines[2].split() == ["none", "0", "Retry", "0", "1", "-"]


def test_timestamp_cell_keeps_text_it_cannot_read() -> None:
    assert timestamp_cell("2025-03-04T05:06:07Z") == "2025-03-04T05:06:07Z"
    assert timestamp_cell("yesterday") == "yesterday"
    assert timestamp_cell(None) == "-"


# -- create ------------------------------------------------------------------------------


def test_create_sends_the_document_and_prints_the_version(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    path = policy_file(tmp_path)
    code, out, err = run(
        capsys, "--url", fake_armada.url, "create", "retry-policy", "-f", str(path)
    )
    assert (code, err) == (0, "")
    assert out == "Created retry policy ml-training-retries (version 1)\n"
    (request,) = fake_armada.requests
    assert (request.method, request.path) == ("POST", "/api/v1/retry-policies")
    assert request.body == {
        "apiVersion": "armadaproject.io/v1beta1",
        "kind": "RetryPolicy",
        "name": "ml-training-retries",
        "retryLimit": 3,
        "defaultAction": "Fail",
        "rules": [
            {
                "action": "Retry",
                "onCategory": "oom",
                "mutate": {"resources": {"memory": {"factor": 1.5}}},
            }
        ],
    }
    assert request.headers["Content-Type"] == "application/json"
    assert fake_armada.policies["ml-training-retries"]["version"] == 1


def test_create_from_json_on_stdin(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = {"name": "quick", "retryLimit": 1, "rules": [{"action": "Retry"}]}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(document)))
    code, out, _ = run(capsys, "create", "retry-policy", "--file", "-", "--url", fake_armada.url)
    assert code == 0
    assert out.strip() == "Created retry policy quick (version 1)"
    assert fake_armada.requests[0].body == document  # no kind added, nothing dropped


def test_create_drops_the_fields_the_server_sets(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    document = {
        **POLICY,
        "version": 7,
        "createdAt": "2025-01-01T00:00:00Z",
        "updatedAt": "2025-01-02T00:00:00Z",
        "updatedBy": "someone",
    }
    path = write(tmp_path / "policy.json", document)
    code, _, err = run(capsys, "--url", fake_armada.url, "create", "retry-policy", "-f", str(path))
    assert (code, err) == (0, "")
    assert fake_armada.requests[0].body == POLICY


def test_create_prints_field_errors_from_the_server(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    path = policy_file(
        tmp_path, "kind: RetryPolicy\nname: bad\nretryLimit: -1\nrules:\n  - action: Explode\n"
    )
    code, out, err = run(
        capsys, "--url", fake_armada.url, "create", "retry-policy", "-f", str(path)
    )
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "Error: the retry policy is not valid",
        "  retryLimit: must be a whole number, 0 or more",
        "  rules[0].action: must be Retry or Fail",
    ]
    assert fake_armada.paths("POST") == ["/api/v1/retry-policies"]  # the server decided


def test_create_twice_is_a_conflict(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.add_policy("ml-training-retries")
    path = policy_file(tmp_path)
    code, out, err = run(
        capsys, "--url", fake_armada.url, "create", "retry-policy", "-f", str(path)
    )
    assert (code, out) == (1, "")
    assert err.strip() == (
        "Error: retry policy 'ml-training-retries' already exists; use update to change it"
    )


def test_missing_file_is_reported_without_a_request(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    missing = tmp_path / "nope.yaml"
    for verb in ("create", "update"):
        code, out, err = run(
            capsys, "--url", fake_armada.url, verb, "retry-policy", "-f", str(missing)
        )
        assert (code, out) == (1, "")
        assert err.strip() == f"Error: retry policy file {missing} does not exist"
    assert fake_armada.requests == []


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        (
            "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: q1\n",
            ["  kind: must be RetryPolicy, not 'Queue'"],
        ),
        (
            "- name: a\n- name: b\n",
            ["  a retry policy file holds one mapping (kind: RetryPolicy, name, rules, ...)"],
        ),
        ("", ["  a retry policy file holds one mapping (kind: RetryPolicy, name, rules, ...)"]),
    ],
    ids=["wrong-kind", "a-list", "empty"],
)
@pytest.mark.parametrize("verb", ["create", "update"])
def test_wrong_documents_are_refused_locally(
    capsys: pytest.CaptureFixture[str],
    fake_armada: FakeArmada,
    tmp_path: Path,
    verb: str,
    text: str,
    lines: list[str],
) -> None:
    path = policy_file(tmp_path, text)
    code, out, err = run(capsys, "--url", fake_armada.url, verb, "retry-policy", "-f", str(path))
    assert (code, out) == (1, "")
    assert err.splitlines() == [f"Error: retry policy file {path} is not valid", *lines]
    assert fake_armada.requests == []


def test_unparsable_file_is_refused_locally(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    path = policy_file(tmp_path, "name: [oops\n")
    code, _, err = run(capsys, "--url", fake_armada.url, "create", "retry-policy", "-f", str(path))
    assert code == 1
    assert err.startswith(f"Error: {path} is not valid YAML")
    assert "Traceback" not in err
    assert fake_armada.requests == []


def test_file_flag_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "create", "retry-policy")
    assert (code, out) == (2, "")
    assert "Error: the following arguments are required: -f/--file" in err


# -- update ------------------------------------------------------------------------------


def test_update_puts_the_document_under_the_name_from_the_file(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.add_policy("ml-training-retries", version=2)
    path = policy_file(tmp_path, POLICY_YAML.replace("retryLimit: 3", "retryLimit: 5"))
    code, out, err = run(
        capsys, "--url", fake_armada.url, "update", "retry-policy", "-f", str(path)
    )
    assert (code, err) == (0, "")
    assert out == "Updated retry policy ml-training-retries (version 3)\n"
    (request,) = fake_armada.requests
    assert (request.method, request.path) == ("PUT", "/api/v1/retry-policies/ml-training-retries")
    assert request.body == {**POLICY, "retryLimit": 5}
    assert fake_armada.policies["ml-training-retries"]["retryLimit"] == 5


def test_get_edit_update_round_trip(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    # The fake server refuses unknown fields, so the version and times `get` shows must
    # not be sent back.
    fake_armada.add_policy("oom", retryLimit=2, rules=[{"action": "Retry", "onCategory": "oom"}])
    code, shown, _ = run(capsys, "--url", fake_armada.url, "get", "retry-policy", "oom")
    assert code == 0
    path = policy_file(tmp_path, shown.replace("retryLimit: 2", "retryLimit: 4"))
    code, out, err = run(
        capsys, "--url", fake_armada.url, "update", "retry-policy", "-f", str(path)
    )
    assert (code, err) == (0, "")
    assert out.strip() == "Updated retry policy oom (version 2)"
    assert fake_armada.requests[-1].body == {
        "apiVersion": "armadaproject.io/v1beta1",
        "kind": "RetryPolicy",
        "name": "oom",
        "retryLimit": 4,
        "defaultAction": "Fail",
        "rules": [{"action": "Retry", "onCategory": "oom"}],
    }


def test_update_needs_a_name_in_the_file(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    path = policy_file(tmp_path, "kind: RetryPolicy\nretryLimit: 2\n")
    code, out, err = run(
        capsys, "--url", fake_armada.url, "update", "retry-policy", "-f", str(path)
    )
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"Error: retry policy file {path} is not valid",
        "  name: is required: it names the policy to update",
    ]
    assert fake_armada.requests == []


def test_update_of_an_unknown_policy_and_server_field_errors(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    path = policy_file(tmp_path)
    code, _, err = run(capsys, "--url", fake_armada.url, "update", "retry-policy", "-f", str(path))
    assert code == 1
    assert err.strip() == "Error: retry policy 'ml-training-retries' does not exist"

    fake_armada.add_policy("ml-training-retries")
    path = policy_file(tmp_path, POLICY_YAML + "defaultActon: Retry\n")
    code, out, err = run(
        capsys, "--url", fake_armada.url, "update", "retry-policy", "-f", str(path)
    )
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "Error: the retry policy is not valid",
        "  defaultActon: unknown field",
    ]
    assert fake_armada.policies["ml-training-retries"]["version"] == 1


# -- get ---------------------------------------------------------------------------------


def test_get_policy_is_yaml_by_default_and_json_on_request(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    stored = fake_armada.add_policy("ml-training-retries", rules=POLICY["rules"], version=3)
    code, out, err = run(
        capsys, "--url", fake_armada.url, "get", "retry-policy", "ml-training-retries"
    )
    assert (code, err) == (0, "")
    assert yaml.safe_load(out) == stored
    assert out.startswith("apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: ")
    assert "  mutate:\n    resources:\n      memory:\n        factor: 1.5\n" in out

    code, out, _ = run(
        capsys, "--url", fake_armada.url, "get", "retry-policy", "ml-training-retries", "-o", "json"
    )
    assert code == 0
    assert json.loads(out) == stored
    assert fake_armada.paths() == ["/api/v1/retry-policies/ml-training-retries"] * 2


def test_get_policy_not_found_and_quoted_name(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "retry-policy", "a b/c")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: retry policy 'a b/c' does not exist"
    assert fake_armada.requests[0].path == "/api/v1/retry-policies/a%20b%2Fc"


def test_get_policy_has_no_table_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "get", "retry-policy", "x", "-o", "table")
    assert code == 2
    assert "invalid choice: 'table'" in err


def test_get_policies_table_yaml_and_json(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_policy("ml-training-retries", rules=POLICY["rules"], version=3)
    fake_armada.add_policy("never", retryLimit=0, defaultAction="Fail")
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "retry-policies")
    assert (code, err) == (0, "")
    assert [line.split() for line in out.splitlines()] == [
        ["NAME", "RETRY", "LIMIT", "DEFAULT", "ACTION", "RULES", "VERSION", "UPDATED"],
        ["ml-training-retries", "3", "Fail", "1", "3", "2025-03-04T05:06:07Z"],
        ["never", "0", "Fail", "0", "1", "2025-03-04T05:06:07Z"],
    ]
    assert fake_armada.requests[0].path == "/api/v1/retry-policies"

    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "retry-policies", "-o", "yaml")
    assert code == 0
    assert [p["name"] for p in yaml.safe_load(out)] == ["ml-training-retries", "never"]

    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "retry-policies", "-o", "json")
    assert json.loads(out) == [
        fake_armada.policies["ml-training-retries"],
        fake_armada.policies["never"],
    ]


def test_get_policies_when_there_are_none(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "retry-policies")
    assert (code, out) == (0, "")
    assert err.strip() == "No retry policies found."
    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "retry-policies", "-o", "json")
    assert json.loads(out) == []


def test_get_policies_refuses_an_answer_that_is_not_a_list(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, fake_armada: FakeArmada
) -> None:
    from armada.cli import client as client_module

    def not_a_list(self: Any, response: Any) -> Any:
        return {"oops": True}

    monkeypatch.setattr(client_module.ArmadaClient, "_json", not_a_list)
    code, _, err = run(capsys, "--url", fake_armada.url, "get", "retry-policies")
    assert code == 1
    assert err.strip() == "Error: the server's retry policy list is not a JSON list"


# -- delete ------------------------------------------------------------------------------


def test_delete_policy(capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada) -> None:
    fake_armada.add_policy("old")
    code, out, err = run(capsys, "--url", fake_armada.url, "delete", "retry-policy", "old")
    assert (code, err) == (0, "")
    assert out == "Deleted retry policy old\n"
    (request,) = fake_armada.requests
    assert (request.method, request.path, request.body) == (
        "DELETE",
        "/api/v1/retry-policies/old",
        None,
    )
    assert "old" not in fake_armada.policies


def test_delete_policy_in_use_names_the_queues(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_policy("oom")
    fake_armada.add_queue("training", retryPolicies=["oom"])
    fake_armada.add_queue("analytics", retryPolicies=["net", "oom"])
    fake_armada.add_queue("other")
    code, out, err = run(capsys, "--url", fake_armada.url, "delete", "retry-policy", "oom")
    assert (code, out) == (1, "")
    assert err.strip() == (
        "Error: retry policy 'oom' is used by queue(s) analytics, training; detach it first"
    )
    assert "oom" in fake_armada.policies


def test_delete_unknown_policy(capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada) -> None:
    code, out, err = run(capsys, "--url", fake_armada.url, "delete", "retry-policy", "ghost")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: retry policy 'ghost' does not exist"


def test_policy_commands_send_credentials(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.token = "s3cret"
    path = policy_file(tmp_path)
    code, _, err = run(capsys, "--url", fake_armada.url, "create", "retry-policy", "-f", str(path))
    assert code == 1
    assert err.strip() == (
        "Error: Authentication credentials were not provided."
        " (run `armadactl login`, or set ARMADA_TOKEN)"
    )
    code, out, _ = run(
        capsys,
        "--url",
        fake_armada.url,
        "--token",
        "s3cret",
        "create",
        "retry-policy",
        "-f",
        str(path),
    )
    assert code == 0 and out.startswith("Created retry policy ml-training-retries")
    assert fake_armada.requests[-1].headers["Authorization"] == "Token s3cret"
