"""``armadactl create|update retry-policy`` print the server's warnings about a policy it
saved (a mutate block on a Fail rule is accepted and dropped) on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.fake_armada import FakeArmada
from tests.cli.helpers import run

POLICY_YAML = """\
name: p
retryLimit: 1
defaultAction: Fail
rules:
  - {action: Fail, onCategory: oom, mutate: {affinity: {avoidSameNode: true}}}
"""
WARNING = {"field": "rules[0].mutate", "message": "has no effect on a Fail rule and is ignored"}
SAVED = {
    "name": "p",
    "retryLimit": 1,
    "defaultAction": "Fail",
    "rules": [{"action": "Fail", "onCategory": "oom"}],
    "version": 1,
    "warnings": [WARNING],
}


@pytest.mark.parametrize(
    ("argv", "method", "path", "printed"),
    [
        (["create", "retry-policy"], "POST", "/api/v1/retry-policies", "Created retry policy p"),
        (["create"], "POST", "/api/v1/retry-policies", "Created retry policy p"),
    ],
    ids=["create", "create-from-file"],
)
def test_the_servers_warnings_go_to_stderr(
    capsys: pytest.CaptureFixture[str],
    fake_armada: FakeArmada,
    tmp_path: Path,
    argv: list[str],
    method: str,
    path: str,
    printed: str,
) -> None:
    text = POLICY_YAML if argv != ["create"] else "kind: RetryPolicy\n" + POLICY_YAML
    file = tmp_path / "policy.yaml"
    file.write_text(text)
    fake_armada.canned[method, path] = (201, SAVED)
    code, out, err = run(capsys, "--url", fake_armada.url, *argv, "-f", str(file))
    assert code == 0, err
    assert out.startswith(printed)
    assert err == "warning: rules[0].mutate: has no effect on a Fail rule and is ignored\n"


def test_update_prints_them_too(
    capsys: pytest.CaptureFixture[str],
    fake_armada: FakeArmada,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from armada.cli.client import ArmadaClient

    monkeypatch.setattr(ArmadaClient, "update_retry_policy", lambda self, name, doc: SAVED)
    file = tmp_path / "policy.yaml"
    file.write_text(POLICY_YAML)
    code, out, err = run(
        capsys, "--url", fake_armada.url, "update", "retry-policy", "-f", str(file)
    )
    assert (code, out) == (0, "Updated retry policy p (version 1)\n")
    assert err == "warning: rules[0].mutate: has no effect on a Fail rule and is ignored\n"


def test_no_warnings_no_noise(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text("name: q\nretryLimit: 1\ndefaultAction: Fail\n")
    code, _, err = run(capsys, "--url", fake_armada.url, "create", "retry-policy", "-f", str(file))
    assert (code, err) == (0, "")
