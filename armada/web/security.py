"""Security settings that differ between a development instance and production.

- The secret key (:func:`secret_key`): ``SECRET_KEY`` from the environment; in development
  mode (``ARMADA_DEV=1``, which ``make`` sets) one generated on first start and kept in
  ``<var dir>/secret-key`` (mode 0600); otherwise start-up stops and says what to set. There
  is no built-in key: one that is in the source is public.
- The header by which a TLS-terminating proxy says a request came over HTTPS
  (:func:`proxy_ssl_header`); the rest of the production set (secure cookies, HSTS, the
  redirect to HTTPS) is read in ``armada/settings.py``, all on with ``ARMADA_SECURE=1``.
- The Content-Security-Policy of the site's pages (:func:`content_security_policy`), sent by
  django-csp's middleware.

Nothing here reads ``django.conf.settings``: ``armada/settings.py`` calls these while it
is being read.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Any

from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

SECRET_KEY_FILE = "secret-key"
MISSING_SECRET_KEY = (
    "SECRET_KEY must be set: give every process of this installation the same long random "
    "value (for example the output of `python -c 'import secrets; "
    "print(secrets.token_urlsafe(50))'`), or set ARMADA_DEV=1 for a development instance, "
    "which keeps a generated key in <var dir>/secret-key"
)


def secret_key(*, given: str, dev_mode: bool, var_dir: Path) -> str:
    """The secret key: ``given`` (the environment's); in development the kept one; else
    ImproperlyConfigured saying what to set."""
    if given:
        return given
    if not dev_mode:
        raise ImproperlyConfigured(MISSING_SECRET_KEY)
    return kept_secret_key(var_dir / SECRET_KEY_FILE)


def kept_secret_key(path: Path) -> str:
    """The key kept at ``path``, made on first use.

    Made atomically, so that processes starting at once (``make run`` starts several) agree:
    the new key is written to a private temporary file (mode 0600) beside ``path`` and
    hard-linked into place, which fails when ``path`` exists; the loser of a race reads the
    winner's key. A reader therefore never sees a half-written file.
    """
    existing = _read_key(path)
    if existing is not None:
        return existing
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:  # mkstemp makes the file 0600
            handle.write(secrets.token_urlsafe(50) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        # When another process was first, its key is the key.
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        os.unlink(temporary)
    kept = _read_key(path)
    if kept is None:
        raise ImproperlyConfigured(f"{path} could not be read back after it was written")
    return kept


def _read_key(path: Path) -> str | None:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    key = text.strip()
    if not key:
        raise ImproperlyConfigured(
            f"{path} is empty: delete it to have a new secret key made, or set SECRET_KEY"
        )
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        path.chmod(0o600)  # a key others could read is no secret
    return key


def proxy_ssl_header(header: str) -> tuple[str, str] | None:
    """Django's ``SECURE_PROXY_SSL_HEADER`` for ``ARMADA_PROXY_SSL_HEADER``: the header a
    TLS-terminating proxy sets to ``https`` (``X-Forwarded-Proto`` ->
    ``("HTTP_X_FORWARDED_PROTO", "https")``); None when unset."""
    name = header.strip()
    if not name:
        return None
    if not all(c.isascii() and (c.isalnum() or c == "-") for c in name):
        raise ImproperlyConfigured(
            f"ARMADA_PROXY_SSL_HEADER must be a header name such as X-Forwarded-Proto, "
            f"got {header!r}"
        )
    return "HTTP_" + name.upper().replace("-", "_"), "https"


CSP_MODES = ("enforce", "report-only", "off")


def content_security_policy(mode: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """django-csp's ``CONTENT_SECURITY_POLICY`` and ``CONTENT_SECURITY_POLICY_REPORT_ONLY``
    for ``ARMADA_CSP``: ``enforce`` (the default), ``report-only`` or ``off``.

    The policy allows only the site's own scripts, styles, images (and the ``data:``
    favicon), fetches and form targets, and no framing: Lookout's pages have no inline script
    or style. The admin and the API (whose browsable pages and Swagger UI use inline scripts)
    are left out."""
    if mode not in CSP_MODES:
        raise ImproperlyConfigured(
            f"ARMADA_CSP must be one of {', '.join(CSP_MODES)}, got {mode!r}"
        )
    policy = {
        "EXCLUDE_URL_PREFIXES": ["/admin/", "/api/"],
        "DIRECTIVES": {
            "default-src": [SELF],
            "script-src": [SELF],
            "style-src": [SELF],
            "img-src": [SELF, "data:"],
            "connect-src": [SELF],
            "font-src": [SELF],
            "object-src": [NONE],
            "base-uri": [SELF],
            "form-action": [SELF],
            "frame-ancestors": [NONE],
        },
    }
    if mode == "enforce":
        return policy, None
    if mode == "report-only":
        return None, policy
    return None, None
