"""``armadactl config use-context | get-contexts | current-context`` (Armada's commands on
the contexts of the config file) and ``armadactl version``."""

from __future__ import annotations

import argparse
import os
import sys

from armada.cli.commands import EXIT_OK, out
from armada.cli.config import config_file_path
from armada.cli.contexts import ConfigFile, write_config

DISTRIBUTION = "armada-py"


def _config_file(args: argparse.Namespace, *, required: bool = False) -> ConfigFile:
    path, named = config_file_path(getattr(args, "config", None), os.environ)
    return ConfigFile.load(path, named or required)


def cmd_use_context(args: argparse.Namespace) -> int:
    """Set ``currentContext`` in the config file (the file is rewritten, mode 0600)."""
    config = _config_file(args, required=True)
    config.check_context(args.name)
    write_config(config.path, {**config.data, "currentContext": args.name})
    out(f"Current context set to {args.name}")
    return EXIT_OK


def cmd_get_contexts(args: argparse.Namespace) -> int:
    config = _config_file(args)
    names = sorted(config.contexts())
    if not names:
        print(f"No contexts are defined in {config.path}.", file=sys.stderr)
        return EXIT_OK
    current = config.current_context()
    shown = [f"{name} (current)" if name == current else name for name in names]
    out(f"Available contexts: {', '.join(shown)}")
    return EXIT_OK


def cmd_current_context(args: argparse.Namespace) -> int:
    """The context in use: ``--context``, else ``$ARMADA_CONTEXT``, else currentContext."""
    config = _config_file(args)
    current = config.chosen_context(getattr(args, "context", None), os.environ)
    if current is None:
        print(f"No current context is set in {config.path}.", file=sys.stderr)
        return EXIT_OK
    out(f"Current context: {current}")
    return EXIT_OK


def client_version() -> str:
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown (not installed as a package)"


def cmd_version(args: argparse.Namespace) -> int:
    """The client's version, as Armada's armadactl prints its own. The server publishes no
    version, so none is asked for."""
    import platform

    rows = (("Version:", client_version()), ("Python version:", platform.python_version()))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        out(f"{label.ljust(width)} {value}")
    return EXIT_OK
