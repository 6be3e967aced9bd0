"""armadactl's calls for scheduling reports (``get queue-report``, ``get scheduling-report``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from armada.cli.client_http import HttpClient


def _params(pool: str | None, verbosity: int) -> dict[str, str]:
    params = {"verbosity": str(verbosity)} if verbosity else {}
    if pool:
        params["pool"] = pool
    return params


class ReportCalls(HttpClient):
    def queue_report(self, name: str, *, pool: str | None, verbosity: int) -> dict[str, Any]:
        """``GET /api/v1/reports/queues/{name}``: shares, jobs per state, why jobs wait."""
        response = self._request(
            "GET", f"reports/queues/{quote(name, safe='')}", params=_params(pool, verbosity)
        )
        return self._object(response, "queue report")

    def scheduling_report(self, *, pool: str | None, verbosity: int) -> dict[str, Any]:
        """``GET /api/v1/reports/scheduling``: latest rounds, queue shares, why jobs wait."""
        response = self._request("GET", "reports/scheduling", params=_params(pool, verbosity))
        return self._object(response, "scheduling report")
