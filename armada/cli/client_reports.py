"""armadactl's calls for reports: scheduling (``get queue-report``, ``get scheduling-report``)
and the backtest of a retry policy (``backtest retry-policy``)."""

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

    def backtest_retry_policy(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /api/v1/retry-policies/backtest``: replay recorded failures under a draft.
        Reading many failures can take a while: the read timeout is generous."""
        response = self._request("POST", "retry-policies/backtest", body=body, timeout=300.0)
        return self._object(response, "backtest")
