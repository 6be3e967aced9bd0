"""armadactl's calls for acting on many jobs at once: across queues (by name or label
selector) and on a node."""

from __future__ import annotations

from armada.cli.client_http import HttpClient


class ActionCalls(HttpClient):
    pass
