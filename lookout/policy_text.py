"""A retry policy as text: the YAML shown in the editor, errors placed on its lines, diffs.

The editor shows a policy as the YAML of its stored document (``document_yaml``); comments
typed into the editor are not kept, because a policy is stored as data. When the core
rejects a document, each error names a field path (``rules[1].mutate.resources.memory``);
:func:`field_line` finds the line of that field in the text the user typed by walking the
YAML node tree (``yaml.compose``), whose nodes remember where they start.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

import yaml

from armada.core.errors import FieldError
from armada.core.policy import DOCUMENT_KEY_ORDER
from armada.web.documents import DocumentError, read_document

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
# The order of the file form (``core.policy.policy_document``). Stored documents do not keep
# their key order (PostgreSQL's jsonb sorts keys), so the YAML is put back in this order;
# keys not listed follow in alphabetical order.
_KEY_ORDER = {key: i for i, key in enumerate(DOCUMENT_KEY_ORDER)}


@dataclass(frozen=True)
class TextError:
    """One problem with the typed document: the field it is about ("" for the document as a
    whole), a message, and the 1-based line it points at (None when it has no place)."""

    field: str
    message: str
    line: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"field": self.field, "message": self.message, "line": self.line}


class YAMLTextError(Exception):
    """The text is not YAML at all; carries the one TextError to show."""

    def __init__(self, error: TextError) -> None:
        super().__init__(error.message)
        self.error = error


class _Dumper(yaml.SafeDumper):
    """Indents list items under their key (``rules:\n  - action: ...``), as people write it."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _ordered(value: Any) -> Any:
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (_KEY_ORDER.get(k, len(_KEY_ORDER)), str(k)))
        return {k: _ordered(value[k]) for k in keys}
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def document_yaml(document: dict[str, Any]) -> str:
    """The YAML of a policy document, keys in the file form's order whatever order the
    database gave them back in, so that a diff shows changes and not reshuffles."""
    return yaml.dump(
        _ordered(document),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
    )


def load_yaml(text: str) -> Any:
    """The data of ``text``, read exactly as the API reads a YAML body
    (``armada.web.documents``): raises YAMLTextError (with the line, when the parser knows
    it) for a text that is not such a document, and ValidationFailed naming each field whose
    value could not be stored."""
    try:
        return read_document(text)
    except DocumentError as exc:
        message = exc.describe("the document", with_line=False)
        raise YAMLTextError(TextError("", message, exc.line)) from None


def _path(field: str) -> list[str | int]:
    """``rules[1].mutate`` -> ``["rules", 1, "mutate"]``."""
    return [int(index) if index else key for key, index in _TOKEN.findall(field)]


def field_line(text: str, field: str) -> int | None:
    """The 1-based line of ``field`` in ``text``, or None.

    A field that is present points at its key's line (for a list item, the item's first
    line). A field that is missing (``rules[0].onCategory: is required``) points at the
    mapping that lacks it, unless that is the document itself. A duplicated key counts as
    its last occurrence, the one the YAML loader keeps.
    """
    if not field:
        return None
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    if node is None:
        return None
    line: int | None = None
    for depth, token in enumerate(_path(field)):
        if isinstance(token, int):
            if not isinstance(node, yaml.SequenceNode) or token >= len(node.value):
                return line if depth else None
            node = node.value[token]
            line = node.start_mark.line + 1
            continue
        if not isinstance(node, yaml.MappingNode):
            return line if depth else None
        pairs = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)]
        match = [(k, v) for k, v in pairs if k.value == token]
        if not match:
            return line if depth else None
        key, node = match[-1]
        line = key.start_mark.line + 1
    return line


def locate(text: str, errors: list[FieldError]) -> list[TextError]:
    """The core's errors with the line each one points at in ``text``."""
    return [TextError(e.field, e.message, field_line(text, e.field)) for e in errors]


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff; ``kind`` is ``add``, ``remove``, ``hunk`` or ``same``."""

    kind: str
    text: str


def unified_diff(old: str, new: str, *, old_label: str, new_label: str) -> list[DiffLine]:
    """A unified diff of two texts (three lines of context), each line classified."""
    out: list[DiffLine] = []
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile=old_label, tofile=new_label, lineterm=""
    )
    for line in lines:
        if line.startswith(("---", "+++")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "remove"
        else:
            kind = "same"
        out.append(DiffLine(kind, line))
    return out
