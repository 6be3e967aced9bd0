"""YAML for armadactl, in one module imported only by the commands that read or write YAML
(PyYAML costs a noticeable part of a short command's start-up; see ``armada.cli.main``).

Reading: the safe loaders without implicit timestamps and with unique keys
(``armada.yamlkeys``), libyaml's parser first and the Python parser's error messages. Writing: block style, keys in the order given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from armada import yamlkeys

YAMLError = yaml.YAMLError


def _without_timestamps(loader: type) -> type:
    """``loader`` with no implicit timestamps: ``2024-01-01`` stays a string.

    A job file becomes a JSON body, and JSON has no dates; a date-looking annotation value
    must reach the server as the text the user wrote.
    """
    loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return loader


@_without_timestamps
class PyLoader(yamlkeys.SafeLoader):
    """YAML's safe loader, written in Python: the one whose error messages we show (they
    quote the offending line)."""


@_without_timestamps
class CLoader(yamlkeys.CSafeLoader):
    """YAML's safe loader on libyaml's parser (several times faster on big job files);
    the pure-Python one where PyYAML was built without libyaml."""


def load_yaml(text: str, *, many: bool = False) -> Any:
    """The YAML document in ``text`` (a list of every non-empty document when ``many``),
    dates kept as text.

    Parsed by libyaml (a 5,000-job file in a fraction of the Python parser's time). Where
    libyaml refuses the text, the Python parser parses it again: the error raised is then the
    one it gives (a ``yaml.YAMLError`` quoting the offending line), and a text only it accepts
    (a byte-order mark inside the stream, say) reads as it always did. libyaml accepts a few
    texts the Python parser refuses (a tab after ``key:``, a ``?`` inside a flow scalar);
    those now read as YAML 1.1 says.
    """
    for loader in (CLoader, PyLoader):
        try:
            if many:
                return [d for d in yaml.load_all(text, Loader=loader) if d is not None]
            return yaml.load(text, Loader=loader)
        # libyaml takes UTF-8: a lone surrogate (standard input read in the C locale) cannot
        # be encoded; the Python parser reports it as a character YAML does not allow.
        except (yaml.YAMLError, UnicodeEncodeError):
            if loader is PyLoader:
                raise
    raise AssertionError("unreachable")


def safe_load(text: str) -> Any:
    """PyYAML's safe load (the config file: dates and all, as YAML says), keys unique."""
    return yamlkeys.safe_load(text)


def dump(data: Any, **options: Any) -> str:
    """Block-style YAML, keys in the order given (``options`` as for ``yaml.safe_dump``)."""
    settings: Mapping[str, Any] = {"sort_keys": False, "default_flow_style": False, **options}
    return yaml.safe_dump(data, **settings)
