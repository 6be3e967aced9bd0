"""armadactl's calls for executor credentials: create one (the answer holds its key, once),
list them, revoke one."""

from __future__ import annotations

from typing import Any

from armada.cli.client_http import HttpClient
from armada.cli.errors import ApiError


class CredentialCalls(HttpClient):
    def create_executor_credential(self, cluster_id: str, name: str | None) -> dict[str, Any]:
        """``POST /api/v1/executor-credentials``: the new credential, with its ``key`` (shown
        only this once)."""
        body: dict[str, Any] = {"clusterId": cluster_id}
        if name is not None:
            body["name"] = name
        response = self._request("POST", "executor-credentials", body=body)
        data = self._object(response, "executor credential")
        if not isinstance(data.get("key"), str) or not data["key"]:
            raise ApiError("the server's answer to creating an executor credential has no key")
        return data

    def list_executor_credentials(self, cluster_id: str | None = None) -> list[dict[str, Any]]:
        """``GET /api/v1/executor-credentials[?clusterId=]``: revoked ones too, never keys."""
        params = {"clusterId": cluster_id} if cluster_id else None
        response = self._request("GET", "executor-credentials", params=params)
        return self._list(response, "executor credential list")

    def revoke_executor_credential(self, credential_id: int) -> dict[str, Any]:
        """``POST /api/v1/executor-credentials/{id}/revoke``: the credential, revoked."""
        response = self._request("POST", f"executor-credentials/{int(credential_id)}/revoke")
        return self._object(response, "executor credential")
