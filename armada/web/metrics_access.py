"""Who may read ``/metrics``: its counters name every queue, so it is not public.

- ``ARMADA_METRICS_TOKEN`` set: ``/metrics`` answers only ``Authorization: Bearer <token>``
  (401 otherwise). Prometheus sends it with ``authorization: {credentials: <token>}`` (or
  ``credentials_file``) in its scrape config.
- ``ARMADA_METRICS_ADDR`` set (``host:port``, or ``host:first-last`` for several processes on
  one machine): every process that loads the project serves its metrics there, on a port of
  its own from the range (prometheus-client's HTTP server in a thread), to be reached only
  from a private network. The site's ``/metrics`` then answers 404 saying where they are
  (unless a token is also set).
- Neither set: open in development (``ARMADA_DEV=1``, so ``make run`` stays simple),
  refused with 403 otherwise, saying what to set.

Both answer in Prometheus' text format whatever the scraper's ``Accept`` asks, as Armada's
servers do (their Go handler offers no OpenMetrics): Armada's counters keep names without
``_total``, which the text format allows for a counter and OpenMetrics does not.

``/healthz`` is the public probe that the process is up: 200 ``ok``, no database.
"""

from __future__ import annotations

import hmac
import logging
import threading
from http.server import ThreadingHTTPServer

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django_prometheus.exports import ExportToDjangoView
from prometheus_client import MetricsHandler

logger = logging.getLogger(__name__)
_served: list[int] = []  # the port this process serves metrics on (at most one)
_lock = threading.Lock()


def _refusal(status: int, message: str) -> JsonResponse:
    response = JsonResponse({"message": message, "errors": []}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def _bearer_matches(request: HttpRequest, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    # Compared in constant time, so the answer's timing does not tell the token.
    return hmac.compare_digest(given.strip().encode("utf-8", "replace"), token.encode("utf-8"))


TEXT_FORMAT = "text/plain"


def _export(request: HttpRequest) -> HttpResponse:
    """django-prometheus' export, in the text format (see the module docstring)."""
    request.META["HTTP_ACCEPT"] = TEXT_FORMAT
    return ExportToDjangoView(request)


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    """django-prometheus' export, behind the rules of the module docstring."""
    token = settings.ARMADA_METRICS_TOKEN
    if token:
        if not _bearer_matches(request, token):
            return _refusal(
                401,
                "metrics need the bearer token of ARMADA_METRICS_TOKEN (Authorization: Bearer …)",
            )
        return _export(request)
    if settings.ARMADA_METRICS_ADDR:
        return _refusal(
            404, "metrics are served on their own address (ARMADA_METRICS_ADDR), not here"
        )
    if settings.DEV_MODE:
        return _export(request)
    return _refusal(
        403,
        "metrics are not public: set ARMADA_METRICS_TOKEN (and have Prometheus send it as a "
        "bearer token) or ARMADA_METRICS_ADDR (a separate address to serve them on)",
    )


def healthz(request: HttpRequest) -> HttpResponse:
    """The process is up and answering (no database is asked)."""
    return HttpResponse("ok\n", content_type="text/plain")


def parse_metrics_addr(value: str) -> tuple[str, range] | None:
    """``host:port`` or ``host:first-last`` (``[::1]:9100`` for IPv6; an empty host means
    every interface) as the host and the ports to try; None when ``value`` is empty."""
    text = value.strip()
    if not text:
        return None
    host, sep, ports = text.rpartition(":")
    first, dash, last = ports.partition("-")
    numbers = [first, last] if dash else [first]
    if not sep or not all(n.isascii() and n.isdigit() and len(n) <= 5 for n in numbers):
        raise ImproperlyConfigured(
            f"ARMADA_METRICS_ADDR must look like 127.0.0.1:9100 or 127.0.0.1:9100-9109, got {value!r}"
        )
    low, high = int(first), int(last or first)
    if not 1 <= low <= high <= 65535:
        raise ImproperlyConfigured(f"ARMADA_METRICS_ADDR has no valid port range: {value!r}")
    return host.strip("[]"), range(low, high + 1)


class _Handler(MetricsHandler):
    """prometheus-client's handler; the database collectors run in this request's thread,
    so its connections are given back when the request ends."""

    def do_GET(self) -> None:
        try:
            del self.headers["Accept"]  # the text format (see the module docstring)
            super().do_GET()
        finally:
            connections.close_all()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base's name)
        return  # one line per scrape is noise


def serve_metrics_if_configured() -> int | None:
    """Serve this process's metrics on the first free port of ``ARMADA_METRICS_ADDR`` (once
    per process); the port, or None when not configured or no port was free."""
    found = parse_metrics_addr(settings.ARMADA_METRICS_ADDR)
    if found is None:
        return None
    host, ports = found
    with _lock:
        if _served:
            return _served[0]
        for port in ports:
            try:
                server = ThreadingHTTPServer((host, port), _Handler)
            except OSError:
                continue  # taken, most likely by another process of this machine
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
            _served.append(port)
            logger.info("serving metrics on %s:%d", host or "*", port)
            return port
    logger.warning(
        "ARMADA_METRICS_ADDR %s: no port of %d-%d is free; this process serves no metrics",
        host,
        ports[0],
        ports[-1],
    )
    return None
