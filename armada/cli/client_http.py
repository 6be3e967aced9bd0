"""The HTTP plumbing of armadactl's client: the session with its credentials, one request
with its errors turned into ``ApiError``, and reading JSON answers.

Short requests to a plain ``http://`` address go through ``http_lite.LiteSession`` (the
standard library); ``requests`` is imported only when a request needs it (``https://``, the
event stream, a proxy): see ``armada.cli.http_lite``. TLS settings belong on ``session``
(the ``requests`` session), which is made on first use.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from armada.cli.config import CA_FILE_ENV, Settings, ca_file
from armada.cli.errors import ApiError, GrpcEndpointError, error_from_body
from armada.cli.http_lite import (
    LiteResponse,
    LiteSession,
    TransportError,
    answered_with_grpc,
    lite_session_allowed,
)

if TYPE_CHECKING:
    import requests

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
USER_AGENT = "armadactl/0.1"


_WARNING = re.compile(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"')


def header_warnings(headers: Mapping[str, str]) -> list[str]:
    """The texts of an answer's HTTP ``Warning`` header (``299 - "text", ...``): what the
    server accepted but ignored, such as a queue's deprecated ``resourceLimits``."""
    value = next((v for k, v in headers.items() if k.lower() == "warning"), "")
    return [re.sub(r"\\(.)", r"\1", m.group(1)) for m in _WARNING.finditer(value)]


class HttpClient:
    """Requests to ``settings.url``/api/v1 with the configured credentials."""

    def __init__(self, settings: Settings, *, session: requests.Session | None = None) -> None:
        self.settings = settings
        self.base_url = settings.url.rstrip("/")
        # Given with each request, so that it wins over REQUESTS_CA_BUNDLE (which requests
        # uses when this is True, as it uses its own bundle when neither is set).
        self.verify: str | bool = settings.ca_file or ca_file() or True
        self._session = self._prepare(session) if session is not None else None
        self._lite = (
            self._prepare(LiteSession())
            if session is None and lite_session_allowed(self.base_url)
            else None
        )

    def _prepare(self, session: Any) -> Any:
        """``session`` with armadactl's headers and the configured credentials."""
        session.headers["User-Agent"] = USER_AGENT
        session.headers["Accept"] = "application/json"
        kind = self.settings.auth_kind
        if kind == "token":
            session.headers["Authorization"] = f"Token {self.settings.token}"
        elif kind == "basic":
            session.auth = (self.settings.username or "", self.settings.password or "")
        return session

    @property
    def session(self) -> requests.Session:
        """The ``requests`` session, made (and ``requests`` imported) on first use."""
        if self._session is None:
            import requests

            self._session = self._prepare(requests.Session())
        return self._session

    # -- plumbing ---------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return f"{self.base_url}/api/v1/{path.lstrip('/')}"

    def _connection_error(self, exc: Exception) -> ApiError:
        text = str(exc)
        if isinstance(exc, TransportError):
            timed_out = exc.timeout
        else:
            import requests

            timed_out = isinstance(exc, requests.exceptions.Timeout)
        if timed_out:
            return ApiError(f"timed out talking to the Armada server at {self.base_url}")
        if answered_with_grpc(exc):
            return GrpcEndpointError(
                f"{self.base_url} answers with gRPC (Armada's gRPC API); armadactl talks to "
                "the REST API of the web server: give its address (--url, ARMADA_URL, or "
                "armadaRestUrl in the config context, or ARMADA_REST_URL)"
            )
        if "SSLError" in type(exc).__name__ or "CERTIFICATE_VERIFY_FAILED" in text:
            trust = f"the CA certificates in {self.verify}" if self.verify is not True else None
            return ApiError(
                f"cannot make a TLS connection to the Armada server at {self.base_url}: its "
                f"certificate is not trusted by {trust or 'the default CA certificates'}, or "
                f"it does not speak TLS there; set {CA_FILE_ENV} to the CA certificate (PEM) "
                "that signed it"
            )
        if "Connection refused" in text or "Errno 111" in text:
            why = "connection refused"
        elif "Name or service not known" in text or "nodename nor servname" in text:
            why = "unknown host"
        else:
            why = "connection failed"
        return ApiError(
            f"cannot reach the Armada server at {self.base_url} ({why}); "
            "is it running? Set --url or ARMADA_URL"
        )

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        stream: bool = False,
        timeout: float = READ_TIMEOUT,
    ) -> requests.Response:
        response: Any
        if self._lite is not None and not stream:
            try:
                response = self._lite.request(
                    method,
                    self._url(path),
                    json=body,
                    params=params,
                    timeout=(CONNECT_TIMEOUT, timeout),
                )
            except TransportError as exc:
                raise self._connection_error(exc) from None
        else:
            response = self._send(method, path, body, params, stream, timeout)
        if response.status_code >= 400:
            content = self._error_body(response)
            error = error_from_body(response.status_code, response.reason or "", content)
            if response.status_code == 401 and self.settings.auth_kind == "none":
                error.message += self._login_hint()
            raise error
        for warning in header_warnings(response.headers):
            print(f"warning: {warning}", file=sys.stderr)
        return response

    def _send(
        self,
        method: str,
        path: str,
        body: Any,
        params: Mapping[str, str] | None,
        stream: bool,
        timeout: float,
    ) -> requests.Response:
        """One request through the ``requests`` session."""
        import requests

        try:
            return self.session.request(
                method,
                self._url(path),
                json=body,
                params=params,
                stream=stream,
                timeout=(CONNECT_TIMEOUT, timeout),
                verify=self.verify,
            )
        except requests.exceptions.RequestException as exc:
            raise self._connection_error(exc) from None

    @staticmethod
    def _error_body(response: Any) -> bytes:
        """The body of an error answer (empty if it broke off), the connection released."""
        if isinstance(response, LiteResponse):
            return response.content
        import requests

        try:
            return response.content
        except requests.exceptions.RequestException:
            return b""
        finally:
            response.close()

    def _json(self, response: requests.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise ApiError(
                f"the server at {self.base_url} answered HTTP {response.status_code} "
                "with a body that is not JSON"
            ) from None

    def _object(self, response: requests.Response, what: str) -> dict[str, Any]:
        data = self._json(response)
        if not isinstance(data, dict):
            raise ApiError(f"the server's {what} is not a JSON object")
        return data

    def _list(self, response: requests.Response, what: str) -> list[dict[str, Any]]:
        data = self._json(response)
        if not isinstance(data, list):
            raise ApiError(f"the server's {what} is not a JSON list")
        return data

    def _login_hint(self) -> str:
        unsupported = self.settings.unsupported_auth
        if unsupported:
            where = f"context {self.settings.context}" if self.settings.context else "config file"
            return (
                f" (the {where} signs in with {unsupported}, which this armadactl does not "
                "use: run `armadactl login`, or give basicAuth or a token)"
            )
        return " (run `armadactl login`, or set ARMADA_TOKEN)"
