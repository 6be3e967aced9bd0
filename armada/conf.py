"""Loading ``config/armada.yaml`` (or the file named by ``ARMADA_CONFIG``) once per process,
and where the site's files are.

The file is read and validated when settings are imported, so a wrong key or type stops
every process (web, scheduler, executor) at start-up with a message naming the key.

The site's files (``templates/``, ``static/``, the default ``config/armada.yaml`` and htmx)
live beside the packages in a checkout; a built wheel carries them inside the package, as
``armada/_site/`` (``setup.py``), so that an installed package runs outside any checkout.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import yaml

from armada import yamlkeys
from armada.core.config import ArmadaConfig, parse_config
from armada.core.errors import ValidationFailed

PACKAGE_SITE = Path(__file__).resolve().parent / "_site"
#: True when running from an installed wheel, False from a checkout (editable install too).
INSTALLED = PACKAGE_SITE.is_dir()
#: The checkout's root, or the wheel's copy of the site's files.
SITE_DIR = PACKAGE_SITE if INSTALLED else Path(__file__).resolve().parent.parent
DEFAULT_CONFIG_PATH = SITE_DIR / "config" / "armada.yaml"
#: htmx: where npm put it in a checkout (package-lock.json), or the wheel's copy.
HTMX_DIR = SITE_DIR / ("vendor/htmx" if INSTALLED else "node_modules/htmx.org/dist")


class ConfigError(Exception):
    """The configuration file is missing, unreadable or invalid."""


def config_path() -> Path:
    return Path(os.environ.get("ARMADA_CONFIG") or DEFAULT_CONFIG_PATH)


def load_config_file(path: Path) -> ArmadaConfig:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read configuration {path}: {exc.strerror}") from exc
    try:
        data = yamlkeys.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration {path} is not valid YAML: {exc}") from exc
    try:
        return parse_config(data)
    except ValidationFailed as exc:
        lines = "\n".join(f"  - {e}" for e in exc.errors)
        raise ConfigError(f"configuration {path} is invalid:\n{lines}") from exc


@lru_cache(maxsize=1)
def get_config() -> ArmadaConfig:
    """The validated configuration of this process."""
    return load_config_file(config_path())
