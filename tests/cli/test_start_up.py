"""armadactl's start-up stays light: what a command imports before it sends its request.

Scripts call armadactl in loops, so a short command must not pay for libraries it does not
use (bench/cli_start.py measures the time; bench/RESULTS.md has the numbers). These tests
check the cause rather than the clock: in a fresh interpreter, building the command line,
``--help`` and a ``get queue`` against a real socket import none of the heavy modules. A
script loop like Armada's queue test case (25 queues created, cordoned and read back, one
process per command) runs against Django's live server within a generous budget.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from armada.models import Queue
from tests.cli.fake_armada import FakeArmada

# Never needed before armadactl's first request (each is tens of milliseconds, or a sign of
# server code leaking into the client).
HEAVY = (
    "django",
    "rest_framework",
    "celery",
    "kombu",
    "redis",
    "grpc",
    "google.protobuf",
    "armada_client",
    "kubernetes",
    "pydantic",
    "psycopg",
    "requests",
    "urllib3",
    "charset_normalizer",
    "yaml",
    "rich",
    "armada.services",
    "armada.models",
    "armada.wire",
    "armada.executor",
)
ARMADACTL = str(Path(sys.executable).with_name("armadactl"))
TIMEOUT = 120  # seconds for one subprocess on a busy machine


def heavy_modules_after(code: str) -> list[str]:
    """The HEAVY modules (or their submodules) imported once ``code`` has run in a fresh
    interpreter; ``code`` may print nothing."""
    program = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json as _json, sys as _sys
        heavy = {HEAVY!r}
        found = sorted(
            m for m in _sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)
        )
        _sys.__stdout__.write("\\nMODULES " + _json.dumps(found) + "\\n")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    marker = done.stdout.rsplit("MODULES ", 1)[1]
    return json.loads(marker)


def test_building_the_command_line_imports_nothing_heavy() -> None:
    assert (
        heavy_modules_after(
            """
            from armada.cli.main import build_parser
            build_parser()
            """
        )
        == []
    )


def test_help_imports_nothing_heavy() -> None:
    assert (
        heavy_modules_after(
            """
            from armada.cli.main import main
            try:
                main(["--help"])
            except SystemExit:
                pass
            main(["cancel", "executor", "--help"])
            """
        )
        == []
    )


def test_get_queue_over_plain_http_imports_nothing_heavy(fake_armada: FakeArmada) -> None:
    fake_armada.add_queue("q1")
    found = heavy_modules_after(
        f"""
        from armada.cli.main import main
        assert main(["get", "queue", "q1", "--url", {fake_armada.url!r}]) == 0
        """
    )
    assert found == []
    assert fake_armada.paths("GET") == ["/api/v1/queues/q1"]


def test_a_config_file_brings_in_yaml_and_nothing_else(
    fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.add_queue("q1")
    config = tmp_path / "armadactl.yaml"
    config.write_text(f"url: {fake_armada.url}\n")
    found = heavy_modules_after(
        f"""
        from armada.cli.main import main
        assert main(["get", "queue", "q1", "--config", {str(config)!r}]) == 0
        """
    )
    assert found == ["yaml"] or all(m == "yaml" or m.startswith("yaml.") for m in found)
    assert "yaml" in found


@pytest.mark.django_db(transaction=True)
def test_armadas_queue_script_loop_in_one_process_per_command(live_server, admin_user) -> None:
    """25 queues created, cordoned and read back, as Armada's queue test case does, each
    command its own armadactl process; the budget is generous (Armada's is 30 s; here
    each process starts in about 0.1 s)."""
    auth = ["--url", live_server.url, "--username", "root", "--password", "root-password"]
    started = time.monotonic()
    for i in range(25):
        name = f"loop-{i:02d}"
        for argv in (["create", "queue", name], ["cordon", "queue", name]):
            done = subprocess.run(
                [ARMADACTL, *argv, *auth], capture_output=True, text=True, timeout=TIMEOUT
            )
            assert done.returncode == 0, done.stderr
        done = subprocess.run(
            [ARMADACTL, "get", "queue", name, "-o", "json", *auth],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["cordoned"] is True
    elapsed = time.monotonic() - started
    assert Queue.objects.filter(name__startswith="loop-", cordoned=True).count() == 25
    assert elapsed < 240, f"75 armadactl commands took {elapsed:.1f} s"
