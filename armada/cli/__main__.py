"""``python -m armada.cli``: the same as the ``armadactl`` console script."""

import sys

from armada.cli.main import main

sys.exit(main())
