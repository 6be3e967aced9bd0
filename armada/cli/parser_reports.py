"""``armadactl`` commands that explain scheduling: ``get scheduling JOB_ID``."""

from __future__ import annotations

from armada.cli.commands import cmd_get_scheduling
from armada.cli.parser_common import CommandTree, add_output_option


def add_report_commands(tree: CommandTree) -> None:
    scheduling = tree.leaf(
        "get", "scheduling", "Show why a job is still queued (its scheduling record)."
    )
    scheduling.add_argument("job_id", metavar="JOB_ID")
    add_output_option(scheduling)
    scheduling.set_defaults(handler=cmd_get_scheduling)
