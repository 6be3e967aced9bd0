"""``armadactl backtest retry-policy``: its flags and help."""

from __future__ import annotations

import argparse

from armada.cli.parser_common import CommandTree, add_output_option, lazy

check_backtest, cmd_backtest_retry_policy = lazy(
    "backtest", "check_backtest", "cmd_backtest_retry_policy"
)

BACKTEST_HELP = """\
Every recorded failure in the range (failed runs and expired leases that the scheduler
decided) is decided again under the draft, with the retries its job had used at the time,
and compared with the decision recorded then. Nothing is written. You see only the queues
you may watch; naming another queue is refused.

examples:
  armadactl backtest retry-policy -f draft.yaml --since 7d
  armadactl backtest retry-policy -f draft.yaml --since 2d --queue ml --queue etl -o json
  armadactl backtest retry-policy --policy ml-training-retries --version 3 \\
      --from 2026-01-01T00:00:00Z --to 2026-01-15T00:00:00Z
"""


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def add_backtest_commands(tree: CommandTree) -> None:
    parser = tree.leaf(
        "backtest",
        "retry-policy",
        "Replay the recorded failures under a draft retry policy and show what would change.",
        epilog=BACKTEST_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-f", "--file", metavar="FILE", help="the draft policy, YAML or JSON; - for stdin"
    )
    parser.add_argument("--policy", metavar="NAME", help="a stored policy instead of a file")
    parser.add_argument(
        "--version", type=_positive, metavar="N", help="with --policy: a saved version of it"
    )
    parser.add_argument(
        "--since",
        metavar="DURATION",
        help="how far back from --to (or now): 7d, 36h (default 7d); at most 90 days",
    )
    parser.add_argument(
        "--from", dest="from_time", metavar="TIME", help="the start, ISO 8601 with a time zone"
    )
    parser.add_argument(
        "--to", dest="to_time", metavar="TIME", help="the end (exclusive; default now)"
    )
    parser.add_argument(
        "--queue", action="append", metavar="QUEUE", help="only this queue; repeat for more"
    )
    parser.add_argument(
        "--job-set", action="append", metavar="JOB_SET", help="only this job set; repeatable"
    )
    parser.add_argument(
        "--sample", type=_positive, metavar="N", help="how many jobs to show (default 20)"
    )
    add_output_option(parser)
    parser.set_defaults(
        handler=cmd_backtest_retry_policy, check=check_backtest, command_parser=parser
    )
