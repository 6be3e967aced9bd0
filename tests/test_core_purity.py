"""The purity rule of armada/core holds, and the check that enforces it can fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / ".ci" / "check_core_purity.py"


def run(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(CHECK), str(path)], capture_output=True, text=True, timeout=60
    )


def test_armada_core_is_pure():
    result = run(ROOT / "armada" / "core")
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("source", "complaint"),
    [
        ("from django.db import models\n", "imports django.db"),
        ("import celery\n", "imports celery"),
        ("import redis.asyncio\n", "imports redis.asyncio"),
        ("from rest_framework import serializers\n", "imports rest_framework"),
        ("from armada.models import Job\n", "core may import only armada.core"),
        ("import random\n", "imports random"),
        ("import time\n", "imports time"),
        ("from datetime import datetime\nx = datetime.now()\n", "reads the clock"),
        ("import datetime\nx = datetime.date.today()\n", "reads the clock"),
    ],
    ids=[
        "django",
        "celery",
        "redis",
        "drf",
        "armada-models",
        "random",
        "time",
        "datetime-now",
        "date-today",
    ],
)
def test_the_check_catches(tmp_path, source, complaint):
    (tmp_path / "bad.py").write_text(source)
    result = run(tmp_path)
    assert result.returncode == 1
    assert complaint in result.stdout


def test_the_check_allows_core_imports_and_passed_in_time(tmp_path):
    (tmp_path / "ok.py").write_text(
        "from datetime import datetime, timedelta\nfrom armada.core.quantity import Resources\n\n"
        "def later(now: datetime) -> datetime:\n    return now + timedelta(seconds=1)\n"
    )
    assert run(tmp_path).returncode == 0
