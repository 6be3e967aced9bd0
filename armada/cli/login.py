"""``armadactl login`` and ``armadactl logout``: a personal API token in the config file.

``login`` asks for the password once (``getpass``: nothing is echoed; or one line on
standard input with ``--password-stdin``), creates a token with it over HTTP basic auth,
and writes ``url``, ``username`` and ``token`` to the config file (``--config``, else
``$ARMADACTL_CONFIG``, else ``~/.armadactl.yaml``), keeping its other keys and dropping a
stored password. Every later command then sends the token: one quick lookup on the
server instead of a deliberately slow password hash per call. A token stored earlier for
the same server is revoked once the new one is safely written.

``logout`` revokes the stored token on the server and removes it from the file.

The file is written whole to a new file of mode 0600 that then replaces the old one, so
it is never readable by others and never half-written.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import os
import socket
import sys
import time
from datetime import UTC, datetime

from armada.cli.client import ApiError, ArmadaClient
from armada.cli.commands import EXIT_OK, connection_flags, out, settings_from_args
from armada.cli.config import (
    ConfigError,
    Settings,
    config_file_path,
    resolve_settings,
)
from armada.cli.contexts import ConfigFile, write_config


def default_token_name(now: datetime) -> str:
    """``armadactl on <host> <UTC time>``: unique enough to log in again without clashing."""
    when = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"armadactl on {socket.gethostname()[:40]} {when}"


def _config(args: argparse.Namespace, *, missing_ok: bool) -> tuple[ConfigFile, str | None]:
    """The config file and the context in use (None: the file's top level)."""
    path, required = config_file_path(getattr(args, "config", None), os.environ)
    config = ConfigFile.load(path, required and not missing_ok)
    return config, config.chosen_context(getattr(args, "context", None), os.environ)


def _settings(args: argparse.Namespace) -> Settings:
    """The connection settings, as every command resolves them; the config file may be
    missing (login creates it)."""
    return resolve_settings(
        connection_flags(args),
        config_path=getattr(args, "config", None),
        context=getattr(args, "context", None),
        missing_ok=True,
    )


def _ask(prompt: str) -> str:
    print(prompt, end="", file=sys.stderr, flush=True)
    line = sys.stdin.readline()
    if not line:
        raise ConfigError("no answer on standard input")
    return line.rstrip("\r\n")


def _password(args: argparse.Namespace, settings: Settings, username: str) -> str:
    if args.password_stdin:
        line = sys.stdin.readline()
        if not line:
            raise ConfigError("--password-stdin: standard input is empty")
        return line.rstrip("\r\n")
    if settings.password:
        return settings.password
    return getpass.getpass(f"Password for {username} at {settings.url}: ")


def _revoke_current(url: str, token: str) -> str | None:
    """Revoke the token ``token`` authenticates as (the server marks it ``current``);
    returns its name, or None when the server no longer knows the key. Raises ApiError
    when the server cannot be asked."""
    client = ArmadaClient(Settings(url=url, token=token))
    try:
        tokens = client.list_tokens()
    except ApiError as exc:
        if exc.status == 401:
            return None
        raise
    current = next((t for t in tokens if t.get("current")), None)
    if current is None:  # a legacy token, which has no entry to revoke
        return None
    client.revoke_token(int(current["id"]))
    return str(current.get("name") or "")


def cmd_login(args: argparse.Namespace) -> int:
    settings = _settings(args)
    config, context = _config(args, missing_ok=True)
    path, stored = config.path, config.values(context)
    username = settings.username
    if not username:
        if args.password_stdin:
            raise ConfigError(
                f"--password-stdin needs --username (or ARMADA_USERNAME, or username in {path})"
            )
        username = _ask(f"Username at {settings.url}: ").strip()
        if not username:
            raise ConfigError("a username is needed to log in")
    password = _password(args, settings, username)
    client = ArmadaClient(Settings(url=settings.url, username=username, password=password))
    created = client.create_token(
        args.name or default_token_name(datetime.fromtimestamp(time.time(), UTC)), args.expires_in
    )
    same_server = stored.get("url", settings.url).rstrip("/") == settings.url
    previous = stored.get("token") if same_server else None
    updates = {"username": username, "token": created["key"]}
    if context is None or stored.get("url", "").rstrip("/") != settings.url:
        updates = {"url": settings.url, **updates}
    remove = ("password", "url", "username", "token") if context is None else ("password",)
    data = config.changed(context, {}, remove)
    if context is None:
        # Our own keys first, as they always were; the rest of the file after them.
        data = {**updates, **data}
    else:
        data = ConfigFile(path, data).changed(context, updates)
    write_config(path, data)
    expiry = f", expires {created['expiresAt']}" if created.get("expiresAt") else ""
    out(f"Logged in to {settings.url} as {username}: token {created['name']!r}{expiry}")
    where = f"context {context} of {path}" if context else str(path)
    out(f"Stored in {where} (readable only by you); later commands use it.")
    if previous and previous != created["key"]:
        with contextlib.suppress(ApiError):
            name = _revoke_current(settings.url, previous)
            if name:
                out(f"Revoked the token stored before ({name!r}).")
    return EXIT_OK


def cmd_logout(args: argparse.Namespace) -> int:
    config, context = _config(args, missing_ok=False)
    path, stored = config.path, config.values(context)
    own = config.context_section(context).values if context else stored
    token = own.get("token")
    where = f"context {context} of {path}" if context else str(path)
    if not token:
        out(f"Not logged in: {where} holds no token.")
        return EXIT_OK
    url = settings_from_args(args).url
    try:
        name = _revoke_current(url, token)
    except ApiError as exc:
        raise ApiError(
            f"{exc.message}; the token stays in {where} (run logout again, or delete it there)",
            exc.errors,
            exc.status,
        ) from None
    write_config(path, config.changed(context, {}, ("token",)))
    if name:
        out(f"Logged out: token {name!r} revoked on {url} and removed from {where}.")
    else:
        out(f"Logged out: {url} no longer knew the token; removed it from {where}.")
    return EXIT_OK
