"""What every part of ``armadactl``'s command line shares: the parser class with the
project's error format, the argument types, the connection and output options, and the
tree of commands that the concept modules (``parser_queues``, ``parser_jobs``, ...) add
their subcommands to."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from armada.cli.exitcodes import EXIT_USAGE
from armada.cli.output import OUTPUT_FORMATS


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the project's error format: usage, then ``Error: <message>``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"Error: {message}\n")


class Lazy:
    """A command's handler or check, imported on its first call: building the command line
    loads none of the command modules (armadactl's start-up; see ``tests/cli/test_start_up``).
    """

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        self.__name__ = name  # what argparse names a type in its messages

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        function = getattr(importlib.import_module(self.module), self.name)
        return function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Lazy({self.module}:{self.name})"


def lazy(module: str, *names: str) -> tuple[Lazy, ...]:
    """``Lazy`` references to ``names`` of ``module`` (``armada.cli.<module>``)."""
    return tuple(Lazy(f"armada.cli.{module}", name) for name in names)


# -- argument types ---------------------------------------------------------------------


def name_list(text: str) -> list[str]:
    """``a,b , c`` -> ``["a", "b", "c"]``; blanks between commas are dropped."""
    return [part.strip() for part in text.split(",") if part.strip()]


def label_map(text: str) -> dict[str, str]:
    """``k=v,k2=v2`` -> ``{"k": "v", "k2": "v2"}``; a key must be given once, with ``=``."""
    labels: dict[str, str] = {}
    for part in name_list(text):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"label {part!r} must look like key=value")
        if key in labels:
            raise argparse.ArgumentTypeError(f"label {key!r} is given twice")
        labels[key] = value.strip()
    return labels


def priority_factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def cursor(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an event id (a whole number)") from None
    if value < 0:
        raise argparse.ArgumentTypeError("an event id cannot be negative")
    return value


# -- options ----------------------------------------------------------------------------


def add_global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """The connection options; on subcommands they default to SUPPRESS so that a value
    given before the command is not overwritten by the subcommand's default."""
    default: Any = argparse.SUPPRESS if suppress else None
    group = parser.add_argument_group("connection options")
    group.add_argument("--url", default=default, help="server URL (default http://127.0.0.1:8000)")
    group.add_argument(
        "--armadaUrl",
        dest="armada_url",
        default=default,
        metavar="URL",
        help="Armada's spelling of --url; host:port means http://host:port, and a gRPC "
        "address finds the REST API beside it (armadactl docs connection)",
    )
    group.add_argument("--username", default=default, help="user for HTTP basic auth")
    group.add_argument("--password", default=default, help="password for HTTP basic auth")
    group.add_argument("--token", default=default, help="API token (Authorization: Token ...)")
    group.add_argument(
        "--config", default=default, metavar="PATH", help="config file (default ~/.armadactl.yaml)"
    )
    group.add_argument(
        "-c",
        "--context",
        default=default,
        metavar="NAME",
        help="the config file's context to use (default: its currentContext)",
    )


def format_choices(formats: Sequence[str]) -> str:
    """``table (default), yaml or json``; ``yaml (default) or json``."""
    first, *rest = formats
    if not rest:
        return f"{first} (default)"
    if len(rest) == 1:
        return f"{first} (default) or {rest[0]}"
    return f"{first} (default), {', '.join(rest[:-1])} or {rest[-1]}"


def add_output_option(
    parser: argparse.ArgumentParser, formats: Sequence[str] = OUTPUT_FORMATS
) -> None:
    """``-o FORMAT``; the first of ``formats`` is the default."""
    parser.add_argument(
        "-o",
        "--output",
        choices=formats,
        default=formats[0],
        help=format_choices(formats),
    )


# -- the tree of commands ---------------------------------------------------------------


class CommandTree:
    """The top-level commands of a parser. A *group* is a command with subcommands
    (``get queue``, ``cancel job``); a *leaf* is a command that runs something, at the top
    level or in a group. Every leaf takes the connection options."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
        self.groups: dict[str, Any] = {}

    def group(
        self,
        name: str,
        help_text: str,
        *,
        dest: str = "resource",
        metavar: str = "RESOURCE",
        required: bool = True,
        global_options: bool = False,
        **extra: Any,
    ) -> ArgumentParser:
        """Add the group ``name``; returns its parser (for options of its own)."""
        parser: ArgumentParser = self.commands.add_parser(
            name, help=help_text, description=help_text, **extra
        )
        if global_options:
            add_global_options(parser, suppress=True)
        self.groups[name] = parser.add_subparsers(dest=dest, metavar=metavar, required=required)
        return parser

    def leaf(self, group: str | None, name: str, help_text: str, **extra: Any) -> ArgumentParser:
        """Add the command ``name`` to ``group`` (None: at the top level)."""
        where = self.commands if group is None else self.groups[group]
        parser: ArgumentParser = where.add_parser(
            name, help=help_text, description=help_text, **extra
        )
        add_global_options(parser, suppress=True)
        return parser


def add_priority_class_filter(parser: argparse.ArgumentParser, verb: str) -> None:
    """``-p/--priority-classes PC1,PC2`` (repeatable; ``verb`` only jobs of those classes) or
    ``-a/--all-priority-classes``, Armada's flag for the default: every class."""
    classes = parser.add_mutually_exclusive_group()
    classes.add_argument(
        "-p",
        "--priority-classes",
        type=name_list,
        action="extend",
        metavar="PC1,PC2",
        help=f"{verb} only jobs of these priority classes (default: all)",
    )
    classes.add_argument(
        "-a",
        "--all-priority-classes",
        action="store_true",
        help="jobs of every priority class (the default; Armada's flag)",
    )
