"""Build hook: the site's files that live beside the packages in the repository
(``templates/``, ``static/``, the default ``config/armada.yaml``) and htmx (installed by npm
from package-lock.json, never committed) go into the wheel as ``armada/_site/``, where
``armada.conf`` finds them when the package runs outside a checkout. The rest of the
metadata is in pyproject.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# source in the repository -> place under armada/_site
SITE_FILES = {
    "templates": "templates",
    "static": "static",
    "config/armada.yaml": "config/armada.yaml",
    "node_modules/htmx.org/dist": "vendor/htmx",
}


class BuildWithSite(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout itself
        target = Path(self.build_lib) / "armada" / "_site"
        for source, place in SITE_FILES.items():
            path = ROOT / source
            if not path.exists():
                raise SystemExit(
                    f"{source} is missing: run `make install` (npm ci) before building the wheel"
                )
            destination = target / place
            destination.parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir():
                shutil.copytree(path, destination, dirs_exist_ok=True)
            else:
                shutil.copy2(path, destination)


setup(cmdclass={"build_py": BuildWithSite})
