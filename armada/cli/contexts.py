"""The armadactl config file: our own keys, and Armada's contexts.

The file is a YAML mapping. At the top level it may hold our keys (``url``, ``username``,
``password``, ``token``) and Armada's ``currentContext`` and ``contexts``::

    url: http://127.0.0.1:8000        # ours; used by every context that does not set it
    currentContext: prod              # the context used when --context is not given
    contexts:
      prod:
        armadaUrl: https://armada.example.com
        basicAuth: {username: alice, password: secret}
      dev:
        url: http://127.0.0.1:8000
        token: arm_...                # written by `armadactl --context dev login`

In a context (and at the top level) Armada's spellings are read beside ours:
``armadaRestUrl`` or ``armadaUrl`` for ``url`` (``armadaRestUrl`` first: this armadactl
talks to the REST API; an address without a scheme, ``host:port``, means
``http://host:port``), and ``basicAuth: {username, password}``. Armada's other connection
keys (``executorClusters``, ``grpcKeepAliveTime``, ``forceNoTls`` ...) are accepted and
not used; its other ways of signing in (``openIdAuth``, ``execAuth`` ...) are accepted
and not used either, and a request the server then refuses with 401 says so. Any other
key is an error naming it.

A context's values override the top-level values one by one. The context comes from
``--context``, else ``$ARMADA_CONTEXT``, else ``currentContext``; naming a context the
file does not define is an error listing those it does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEYS = ("url", "username", "password", "token")
CONTEXT_ENV = "ARMADA_CONTEXT"
CONFIG_MODE = 0o600
URL_KEYS = ("url", "armadaRestUrl", "armadaUrl")  # first set wins
UNUSED_ARMADA_KEYS = frozenset(
    {
        "executorClusters",
        "grpcKeepAliveTime",
        "grpcKeepAliveTimeout",
        "forceNoTls",
        "cacheRefreshToken",
    }
)
UNSUPPORTED_AUTH_KEYS = (
    "openIdAuth",
    "openIdDeviceAuth",
    "openIdPasswordAuth",
    "openIdClientCredentialsAuth",
    "openIdKubernetesAuth",
    "kubernetesNativeAuth",
    "execAuth",
)
SECTION_KEYS = frozenset(
    {*KEYS, "armadaUrl", "armadaRestUrl", "basicAuth", *UNUSED_ARMADA_KEYS, *UNSUPPORTED_AUTH_KEYS}
)
TOP_LEVEL_KEYS = SECTION_KEYS | {"currentContext", "contexts"}


class ConfigError(Exception):
    """The configuration cannot be used; the message says which file or value and why."""


@dataclass(frozen=True)
class Section:
    """The connection values of one level of the file (the top level or a context)."""

    values: dict[str, str] = field(default_factory=dict)
    # An Armada way of signing in that this armadactl does not use (``execAuth`` ...).
    unsupported_auth: str | None = None


def _text(path: Path, where: str, key: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(f"config file {path}: {where}{key} must be a string")
    return str(value)


def armada_address(value: str) -> str:
    """Armada's ``armadaUrl`` is often ``host:port`` (a gRPC address): read it as http. When
    the server there answers with gRPC, the client turns to the REST API paired with it
    (``armada.cli.addresses``)."""
    value = value.strip()
    return value if "://" in value else f"http://{value}"


def read_section(path: Path, data: Mapping[str, Any], where: str, allowed: frozenset) -> Section:
    """The values of one level; ``where`` is ``""`` or ``"contexts.NAME."`` for messages."""
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown key(s) {', '.join(where + k for k in unknown)}; "
            f"allowed: {', '.join(KEYS)}, currentContext, contexts (and Armada's "
            "armadaUrl, armadaRestUrl, basicAuth)"
        )
    values: dict[str, str] = {}
    for key in URL_KEYS:
        if data.get(key) is not None:
            text = _text(path, where, key, data[key])
            values["url"] = text if key == "url" else armada_address(text)
            break
    basic = data.get("basicAuth")
    if basic is not None:
        if not isinstance(basic, Mapping) or set(basic) - {"username", "password"}:
            raise ConfigError(
                f"config file {path}: {where}basicAuth must be a mapping with username and password"
            )
        for key in ("username", "password"):
            if basic.get(key) is not None:
                values[key] = _text(path, f"{where}basicAuth.", key, basic[key])
    for key in ("username", "password", "token"):
        if data.get(key) is not None:
            values[key] = _text(path, where, key, data[key])
    unsupported = next((k for k in UNSUPPORTED_AUTH_KEYS if data.get(k) is not None), None)
    return Section(values, unsupported)


@dataclass
class ConfigFile:
    """A config file as read (``data`` is empty when the file does not exist)."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, required: bool) -> ConfigFile:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if required:
                raise ConfigError(f"config file {path} does not exist") from None
            return cls(path)
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
        from armada.cli import yamltext

        try:
            data: Any = yamltext.safe_load(text)
        except yamltext.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
        if data is None:
            return cls(path)
        if not isinstance(data, Mapping):
            raise ConfigError(f"config file {path} must be a mapping with keys {', '.join(KEYS)}")
        config = cls(path, dict(data))
        # Check the whole file now, whatever context is used: a typo anywhere is reported.
        config.top()
        for name in config.contexts():
            config.context_section(name)
        config.current_context()
        return config

    # -- contexts -------------------------------------------------------------------

    def contexts(self) -> dict[str, Any]:
        contexts = self.data.get("contexts")
        if contexts is None:
            return {}
        if not isinstance(contexts, Mapping):
            raise ConfigError(f"config file {self.path}: contexts must be a mapping of names")
        return {str(name): value for name, value in contexts.items()}

    def current_context(self) -> str | None:
        current = self.data.get("currentContext")
        if current is None or current == "":
            return None
        if not isinstance(current, str):
            raise ConfigError(f"config file {self.path}: currentContext must be a string")
        return current

    def check_context(self, name: str) -> None:
        """Raise ConfigError unless the file defines the context ``name``."""
        contexts = self.contexts()
        if name not in contexts:
            defined = ", ".join(sorted(contexts)) or "none"
            raise ConfigError(
                f"context {name!r} is not defined in {self.path} (contexts defined: {defined})"
            )

    def chosen_context(self, flag: str | None, environ: Mapping[str, str]) -> str | None:
        """The context in use: ``--context``, else ``$ARMADA_CONTEXT``, else currentContext."""
        name = flag or environ.get(CONTEXT_ENV) or self.current_context()
        if name:
            self.check_context(name)
        return name or None

    # -- values ---------------------------------------------------------------------

    def top(self) -> Section:
        return read_section(self.path, self.data, "", TOP_LEVEL_KEYS)

    def context_section(self, name: str) -> Section:
        self.check_context(name)
        data = self.contexts()[name]
        if data is None:
            return Section()
        if not isinstance(data, Mapping):
            raise ConfigError(f"config file {self.path}: contexts.{name} must be a mapping")
        return read_section(self.path, data, f"contexts.{name}.", SECTION_KEYS)

    def section(self, context: str | None) -> Section:
        """The values in use with ``context``: the context's over the top level's."""
        top = self.top()
        if context is None:
            return top
        own = self.context_section(context)
        return Section({**top.values, **own.values}, own.unsupported_auth or top.unsupported_auth)

    def values(self, context: str | None) -> dict[str, str]:
        return self.section(context).values

    # -- changes --------------------------------------------------------------------

    def changed(
        self, context: str | None, updates: Mapping[str, str], remove: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """The file's data with ``updates`` set and ``remove`` dropped at the level of
        ``context`` (the top level when None). Removing ``password`` also removes a
        ``basicAuth`` password at that level; every other key is kept as it was."""
        data = dict(self.data)
        if context is None:
            level = data
        else:
            contexts = dict(self.contexts())
            level = dict(contexts.get(context) or {})
            contexts[context] = level
            data["contexts"] = contexts
        for key in remove:
            level.pop(key, None)
            if key == "password" and isinstance(level.get("basicAuth"), Mapping):
                basic = {k: v for k, v in level["basicAuth"].items() if k != "password"}
                if basic:
                    level["basicAuth"] = basic
                else:
                    level.pop("basicAuth")
        level.update(updates)
        return data


def write_config(path: Path, values: Mapping[str, Any]) -> None:
    """Replace the config file with ``values``, mode 0600, atomically (through a symlink
    to the file it points at)."""
    target = path.resolve() if path.is_symlink() else path
    from armada.cli.yamltext import dump

    text = dump(dict(values))
    import tempfile

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
        )
    except OSError as exc:
        raise ConfigError(f"cannot write config file {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, CONFIG_MODE)
        os.replace(temporary, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(exc, OSError):
            raise ConfigError(f"cannot write config file {path}: {exc.strerror or exc}") from None
        raise
