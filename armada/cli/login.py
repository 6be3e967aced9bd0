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
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import yaml

from armada.cli.client import ApiError, ArmadaClient
from armada.cli.commands import EXIT_OK, out, settings_from_args
from armada.cli.config import (
    ConfigError,
    Settings,
    config_file_path,
    load_config_file,
    resolve_settings,
)

CONFIG_MODE = 0o600


def default_token_name(now: datetime) -> str:
    """``armadactl on <host> <UTC time>``: unique enough to log in again without clashing."""
    when = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"armadactl on {socket.gethostname()[:40]} {when}"


def write_config(path: Path, values: Mapping[str, str]) -> None:
    """Replace the config file with ``values``, mode 0600, atomically (through a symlink
    to the file it points at)."""
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(dict(values), sort_keys=False, default_flow_style=False)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, CONFIG_MODE)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _config(args: argparse.Namespace, *, missing_ok: bool) -> tuple[Path, dict[str, str]]:
    path, required = config_file_path(getattr(args, "config", None), os.environ)
    return path, load_config_file(path, required and not missing_ok)


def _settings(args: argparse.Namespace) -> Settings:
    """The connection settings, as every command resolves them; the config file may be
    missing (login creates it)."""
    flags = {key: getattr(args, key, None) for key in ("url", "username", "password", "token")}
    return resolve_settings(flags, config_path=getattr(args, "config", None), missing_ok=True)


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
    path, stored = _config(args, missing_ok=True)
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
    values = {k: v for k, v in stored.items() if k not in ("password", "url", "username", "token")}
    write_config(
        path, {"url": settings.url, "username": username, "token": created["key"], **values}
    )
    expiry = f", expires {created['expiresAt']}" if created.get("expiresAt") else ""
    out(f"Logged in to {settings.url} as {username}: token {created['name']!r}{expiry}")
    out(f"Stored in {path} (readable only by you); later commands use it.")
    if previous and previous != created["key"]:
        with contextlib.suppress(ApiError):
            name = _revoke_current(settings.url, previous)
            if name:
                out(f"Revoked the token stored before ({name!r}).")
    return EXIT_OK


def cmd_logout(args: argparse.Namespace) -> int:
    path, stored = _config(args, missing_ok=False)
    token = stored.get("token")
    if not token:
        out(f"Not logged in: {path} holds no token.")
        return EXIT_OK
    url = settings_from_args(args).url
    try:
        name = _revoke_current(url, token)
    except ApiError as exc:
        raise ApiError(
            f"{exc.message}; the token stays in {path} (run logout again, or delete it there)",
            exc.errors,
            exc.status,
        ) from None
    write_config(path, {k: v for k, v in stored.items() if k != "token"})
    if name:
        out(f"Logged out: token {name!r} revoked on {url} and removed from {path}.")
    else:
        out(f"Logged out: {url} no longer knew the token; removed it from {path}.")
    return EXIT_OK
