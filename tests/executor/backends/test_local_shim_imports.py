"""The ``local`` backend's shim runs by path with ``python -I -S`` (no site-packages, no
package on its path): it and the file it loads beside it import only the standard library,
and the shim starts that way from a folder holding nothing else."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from armada.executor.backends import local_pod_files, local_shim

FILES = [Path(local_shim.__file__), Path(local_pod_files.__file__)]


def imported(path: Path) -> set[str]:
    """The top-level names of the modules ``path`` imports, ``__future__`` left out."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - {"__future__"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_only_the_standard_library_is_imported(path: Path) -> None:
    # The shim's one import of ``armada`` is the branch taken when it is imported as part of
    # the package (by the backend); run by path, it loads ``local_pod_files.py`` instead.
    outside = imported(path) - set(sys.stdlib_module_names) - {"armada"}
    assert outside == set()
    if path.name == "local_pod_files.py":
        assert "armada" not in imported(path)


def test_the_shim_runs_by_path_from_a_folder_of_its_own(tmp_path: Path) -> None:
    folder = tmp_path / "shim"
    folder.mkdir()
    for path in FILES:
        shutil.copy(path, folder / path.name)
    # No pod directory: the shim loads its sibling, then says what it is missing.
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(folder / "local_shim.py"), str(tmp_path / "no-pod")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "pod.json is missing or unreadable" in done.stderr, done.stderr
