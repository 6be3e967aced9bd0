"""``python -m armada`` (and the ``armada-server`` command of an installed package): Django's
management commands with this project's settings, as ``manage.py`` in a checkout
(``armada-server migrate``, ``armada-server runall``, ``armada-server check_workers``)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
