"""What the armadactl tests share: a valid job file, running ``main`` with captured output,
writing a data file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from armada.cli.main import main

VALID_JOB_FILE = {
    "queue": "q1",
    "jobSetId": "js1",
    "jobs": [
        {
            "priority": 1,
            "namespace": "default",
            "annotations": {"team": "data"},
            "podSpec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:1.36",
                        "resources": {
                            "requests": {"cpu": "1", "memory": "1Gi"},
                            "limits": {"cpu": "1", "memory": "1Gi"},
                        },
                    }
                ]
            },
        },
        {"priority": 0, "podSpec": {"containers": [{"name": "side", "image": "alpine"}]}},
    ],
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data) if path.suffix != ".json" else json.dumps(data))
    return path
