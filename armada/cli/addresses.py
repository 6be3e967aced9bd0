"""Where the REST API is when armadactl is given Armada's gRPC address.

Armada's config files name the server by its gRPC address (``armadaUrl: localhost:50051``):
Armada's armadactl talks gRPC, ours talks to the REST API of the web server. An address
without a scheme is first tried as ``http://host:port`` (it may well be the web server's).
When the server there answers with gRPC, the REST API is looked for at, first found:

1. ``ARMADA_REST_URL`` (an ``http(s)://`` URL), when set;
2. the same scheme and host, on the web server's default port 8000 (``manage.py runall``
   serves the REST API there and Armada's gRPC API on 50051, on the same host).

A context's ``armadaRestUrl`` is read before its ``armadaUrl`` anyway (``contexts``), so a
config file that names both never gets here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from armada.cli.contexts import ConfigError

REST_URL_ENV = "ARMADA_REST_URL"
DEFAULT_WEB_PORT = 8000


def paired_rest_url(grpc_url: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The REST URL to try after ``grpc_url`` answered with gRPC; None when there is none
    left to try (``grpc_url`` already is the default web port and no override is set)."""
    env = os.environ if environ is None else environ
    given = (env.get(REST_URL_ENV) or "").strip()
    if given:
        parts = urlsplit(given)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"{REST_URL_ENV} {given!r} must look like http://host:port")
        return given.rstrip("/")
    parts = urlsplit(grpc_url)
    if not parts.hostname or parts.port == DEFAULT_WEB_PORT:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{DEFAULT_WEB_PORT}"
