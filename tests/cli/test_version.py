"""``armadactl version``: the client's version, without a server or a config file."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from armada.cli import config_commands
from armada.cli.main import main


def test_version_prints_the_installed_version_without_asking_a_server(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Neither a server that is not there nor a named config file that does not exist
    # matters: version reads neither.
    missing = tmp_path / "missing.yaml"
    code = main(["version", "--url", "http://127.0.0.1:1", "--config", str(missing)])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["Version:", config_commands.client_version()]
    assert lines[0].split()[1][0].isdigit()  # installed: a real version number
    assert lines[1].split() == ["Python", "version:", platform.python_version()]
    assert not missing.exists()


def test_version_when_not_installed_as_a_package(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_commands, "DISTRIBUTION", "no-such-distribution-here")
    assert main(["version"]) == 0
    assert "Version:        unknown (not installed as a package)" in capsys.readouterr().out


def test_the_console_script_prints_the_version() -> None:
    script = Path(sys.executable).with_name("armadactl")
    done = subprocess.run(
        [str(script), "version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Version:")
