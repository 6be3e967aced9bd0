"""The grid tests' jobs: ``table`` (tests/lookout/grid_jobs.py)."""

from tests.lookout.grid_jobs import table  # noqa: F401
