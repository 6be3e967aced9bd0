"""Lookout's job pages, by where they live: the jobs grid (``lookout.grid_views``, routed
here as ``views.jobs``), a job's full page and side panel (``lookout.panel_views``) and its
actions (``lookout.job_views``), both routed by ``lookout.panel_urls``. ``forbidden`` is the
403 page the other page modules answer with.
"""

from __future__ import annotations

from lookout.access import forbidden  # noqa: F401  (the page modules' 403)
from lookout.grid_views import jobs  # noqa: F401  (the jobs grid; lookout.urls routes it)
