"""Where ``armadactl`` finds the server and the credentials to use.

Each setting (``url``, ``username``, ``password``, ``token``) is resolved on its own, first
match wins:

1. the command-line flag (``--url`` or Armada's ``--armadaUrl``, ``--username``,
   ``--password``, ``--token``);
2. the environment (``ARMADA_URL``, ``ARMADA_USERNAME``, ``ARMADA_PASSWORD``, ``ARMADA_TOKEN``);
3. the config file: ``--config PATH``, else ``$ARMADACTL_CONFIG``, else ``~/.armadactl.yaml``:
   the values of the context in use (``--context``, ``$ARMADA_CONTEXT`` or the file's
   ``currentContext``), then the file's top-level ``url``, ``username``, ``password`` and
   ``token`` (see ``contexts`` for the file's format, Armada's contexts included);
4. the default: url ``http://127.0.0.1:8000`` and no credentials.

An ``https://`` url is checked against the CA certificates in ``ARMADA_CA_FILE`` (a PEM
file) when it is set, else against those of ``REQUESTS_CA_BUNDLE``, else the system's
bundle: a server whose certificate your own CA signed needs one of the two.

A config file named by ``--config`` or ``ARMADACTL_CONFIG`` must exist; the default one is
optional. A set token means token auth (``Authorization: Token <t>``), unless a username
was given by a *more specific* source than the token (say ``--username`` on the command
line while the token sits in the config file): then HTTP basic auth is used. That lets a
flag override a file without having to unset anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from armada.cli.contexts import KEYS, ConfigError, ConfigFile

__all__ = ["ConfigError", "Settings", "config_file_path", "load_config_file", "resolve_settings"]

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_CONFIG_NAME = ".armadactl.yaml"
CONFIG_ENV = "ARMADACTL_CONFIG"
CA_FILE_ENV = "ARMADA_CA_FILE"
ENV_VARS = {key: f"ARMADA_{key.upper()}" for key in KEYS}

# Ranks of the sources; lower is more specific.
FLAG, ENV, FILE, DEFAULT = 0, 1, 2, 3
SOURCE_NAMES = {FLAG: "flag", ENV: "environment", FILE: "config file", DEFAULT: "default"}


@dataclass(frozen=True)
class Settings:
    """The resolved connection settings, and where each came from (``SOURCE_NAMES`` keys).

    ``context`` is the config file's context in use, if any; ``unsupported_auth`` names an
    Armada way of signing in that the config asks for and this armadactl does not use."""

    url: str = DEFAULT_URL
    username: str | None = None
    password: str | None = None
    token: str | None = None
    config_path: Path | None = None
    sources: Mapping[str, int] | None = None
    context: str | None = None
    unsupported_auth: str | None = None
    ca_file: str | None = None

    @property
    def auth_kind(self) -> str:
        """``"token"``, ``"basic"`` or ``"none"``: the auth the client will send."""
        sources = self.sources or {}
        if self.token:
            if self.username and sources.get("username", DEFAULT) < sources.get("token", DEFAULT):
                return "basic"
            return "token"
        if self.username and self.password:
            return "basic"
        # A username alone (left by ``armadactl logout``, say) is no credential: sending it
        # with an empty password would only count as a failed login.
        return "none"


def config_file_path(
    flag_path: str | None, environ: Mapping[str, str], home: Path | None = None
) -> tuple[Path, bool]:
    """The config file to read and whether it must exist (it was named explicitly)."""
    if flag_path:
        return Path(flag_path).expanduser(), True
    if environ.get(CONFIG_ENV):
        return Path(environ[CONFIG_ENV]).expanduser(), True
    base = home if home is not None else Path.home()
    return base / DEFAULT_CONFIG_NAME, False


def load_config_file(
    path: Path,
    required: bool,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Read a config file into ``{key: value}`` for the context in use (``context``, else
    ``$ARMADA_CONTEXT`` in ``environ``, else the file's ``currentContext``); a missing
    optional file is empty."""
    config = ConfigFile.load(path, required)
    return config.values(config.chosen_context(context, environ or {}))


def ca_file(environ: Mapping[str, str] | None = None) -> str | None:
    """The CA certificates (PEM) an ``https://`` server is checked against, from
    ``ARMADA_CA_FILE``; None when it is not set (the HTTP library's own choice)."""
    env = os.environ if environ is None else environ
    given = env.get(CA_FILE_ENV, "").strip()
    if not given:
        return None
    path = Path(given).expanduser()
    if not path.is_file():
        raise ConfigError(f"{CA_FILE_ENV}: {given} is not a file (give a PEM CA certificate)")
    return str(path)


def normalize_url(url: str, source: str) -> str:
    """Check that ``url`` is an http(s) URL and drop any trailing slash."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"url {url!r} (from the {source}) must look like http://host:port")
    return url.strip().rstrip("/")


def resolve_settings(
    flags: Mapping[str, str | None],
    environ: Mapping[str, str] | None = None,
    *,
    config_path: str | None = None,
    context: str | None = None,
    home: Path | None = None,
    missing_ok: bool = False,
) -> Settings:
    """Resolve the settings: flags, then environment, then config file, then defaults.

    ``flags`` maps the keys in ``KEYS`` to the flag values (``None`` when not given);
    an empty string counts as not given everywhere, so ``ARMADA_TOKEN=`` unsets nothing.
    ``context`` is the ``--context`` flag. With ``missing_ok`` a config file named
    explicitly may be missing (``armadactl login`` is about to create it).
    """
    env = os.environ if environ is None else environ
    path, required = config_file_path(config_path, env, home)
    config = ConfigFile.load(path, required and not missing_ok)
    chosen = config.chosen_context(context, env)
    section = config.section(chosen)
    file_values = section.values
    values: dict[str, str | None] = {}
    sources: dict[str, int] = {}
    for key in KEYS:
        candidates = (
            (FLAG, flags.get(key)),
            (ENV, env.get(ENV_VARS[key])),
            (FILE, file_values.get(key)),
        )
        for rank, value in candidates:
            if value:
                values[key] = value
                sources[key] = rank
                break
        else:
            values[key] = None
            sources[key] = DEFAULT
    url = values["url"] or DEFAULT_URL
    url = normalize_url(url, SOURCE_NAMES[sources["url"]])
    return Settings(
        url=url,
        username=values["username"],
        password=values["password"],
        token=values["token"],
        config_path=path if config.data or required else None,
        sources=sources,
        context=chosen,
        unsupported_auth=section.unsupported_auth,
        ca_file=ca_file(env),
    )
