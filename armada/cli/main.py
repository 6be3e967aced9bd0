"""``armadactl``: the command-line client of the Armada control plane.

``main(argv)`` parses, runs one command and returns the exit code: 0 on success, 1 when
the server or a local check rejects something (``Error: <message>`` on stderr, then one
``  <field>: <message>`` line per field error), 2 for a usage error, 130 on Ctrl-C.
It never lets a traceback out.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence

from armada.cli.contexts import ConfigError
from armada.cli.errors import ApiError
from armada.cli.exitcodes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from armada.cli.jobfile import JobFileError
from armada.cli.output import (
    format_error,
)
from armada.cli.parser import build_parser

__all__ = ["build_parser", "main"]


def _report(message: str, errors: Sequence[tuple[str, str]] = ()) -> None:
    print(format_error(message, errors), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``armadactl`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
        check: Callable[[argparse.Namespace], str | None] | None = getattr(args, "check", None)
        problem = check(args) if check is not None else None
        if problem:
            args.command_parser.error(problem)
    except SystemExit as exc:  # --help, or a usage error already printed
        return (
            exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_USAGE)
        )
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except ApiError as exc:
        _report(exc.message, exc.errors)
    except JobFileError as exc:
        _report(exc.message, exc.errors)
    except ConfigError as exc:
        _report(str(exc))
    except KeyboardInterrupt:
        print("Interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`armadactl get queues | head`): stop quietly.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
