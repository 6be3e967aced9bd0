#!/usr/bin/env python
"""Django's command-line utility for administrative tasks (``armada-server`` once installed)."""

from armada.__main__ import main

if __name__ == "__main__":
    main()
