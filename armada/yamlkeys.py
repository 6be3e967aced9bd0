"""YAML loaders that refuse a mapping with the same key twice.

YAML says keys are unique, but PyYAML keeps the last of duplicates without a word: a retry
rule with ``action: Fail`` and then ``action: Retry`` would silently become a Retry rule.
Every document this project reads (API bodies, the policy editor, armadactl's files, job
files, the configuration files) is read through one of these, and a duplicate is a
``yaml.constructor.ConstructorError`` whose mark is the second key's line.

Only ``yaml`` is imported here: armadactl imports this in its short commands' path.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError

MERGE_TAG = "tag:yaml.org,2002:merge"


class UniqueKeys:
    """A constructor mixin: mappings are checked for duplicate keys before they are built.
    Merge keys (``<<``) are YAML's way of repeating on purpose and are left to PyYAML."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # an unhashable key: the constructor below says what is wrong
                if first is not None:
                    raise ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key!r} (first given on line {first.line + 1})",
                        key_node.start_mark,
                    )
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep)  # type: ignore[misc]


class SafeLoader(UniqueKeys, yaml.SafeLoader):
    """PyYAML's safe loader (pure Python: its errors quote the line), keys unique."""


class CSafeLoader(UniqueKeys, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader on libyaml's parser (PyYAML's pure one where it lacks libyaml),
    keys unique."""


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with unique keys."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader
