"""Start-up refuses a bad configuration, naming the key; SECRET_KEY is required in production."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from armada.conf import ConfigError, load_config_file

ROOT = Path(__file__).resolve().parents[1]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("ARMADA_CONFIG", "SECRET_KEY")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_shipped_configuration_is_valid():
    config = load_config_file(ROOT / "config" / "armada.yaml")
    assert config.scheduling.max_retries == 3
    assert config.scheduling.retry_policy.enabled is False
    assert config.executors[0].backend == "fake"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("scheduling:\n  maxRetries: three\n", "scheduling.maxRetries"),
        ("scheduling:\n  cyclePeriod: soon\n", "scheduling.cyclePeriod"),
        ("scheduling:\n  retryPolicy:\n    enabled: true\n", "scheduling.retryPolicy"),
        ("executorTimeot: 5s\n", "executorTimeot"),
        ("executors:\n  - id: a\n    pool: nowhere\n", "executors[0].pool"),
        ("auth:\n  permissionGroupMapping:\n    fly: [pilots]\n", "auth.permissionGroupMapping"),
        (
            "executors: [{id: a, errorCategories: {categories: [{name: c, rules: [{}]}]}}]\n",
            "executors[0].errorCategories.categories[0].rules[0]",
        ),
    ],
    ids=[
        "wrong-type",
        "bad-duration",
        "limit-required",
        "unknown-key",
        "unknown-pool",
        "unknown-permission",
        "rule-without-matcher",
    ],
)
def test_a_bad_key_is_named(tmp_path, text, key):
    path = tmp_path / "armada.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config_file(path)
    assert f"  - {key}:" in str(exc.value)


def test_invalid_yaml_is_reported(tmp_path):
    path = tmp_path / "armada.yaml"
    path.write_text("scheduling: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config_file(path)


def test_a_process_with_a_bad_configuration_does_not_start(tmp_path):
    path = tmp_path / "armada.yaml"
    path.write_text("scheduling:\n  maxRetries: -1\n")
    result = manage("check", ARMADA_CONFIG=str(path), ARMADA_DEV="1")
    assert result.returncode != 0
    assert "scheduling.maxRetries" in result.stderr


def test_secret_key_is_required_outside_development_mode():
    result = manage("check", ARMADA_DEV="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
    assert manage("check", ARMADA_DEV="0", SECRET_KEY="x" * 50).returncode == 0


def test_the_kill_switch_is_warned_about_at_start_up(tmp_path):
    path = tmp_path / "armada.yaml"
    path.write_text("scheduling:\n  retryPolicy:\n    enabled: true\n    globalMaxRetries: 0\n")
    result = manage("check", ARMADA_CONFIG=str(path), ARMADA_DEV="1")
    assert result.returncode == 0
    assert "kill switch" in result.stderr
    path.write_text("scheduling:\n  retryPolicy:\n    enabled: true\n    globalMaxRetries: 3\n")
    assert "kill switch" not in manage("check", ARMADA_CONFIG=str(path), ARMADA_DEV="1").stderr
