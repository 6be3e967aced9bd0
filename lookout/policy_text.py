"""A retry policy as text: the YAML shown in the editor, errors placed on its lines, diffs,
and its rules in words.

The editor shows a policy as the YAML of its stored document (``document_yaml``); comments
typed into the editor are not kept, because a policy is stored as data. When the core
rejects a document, each error names a field path (``rules[1].mutate.resources.memory``);
:func:`field_line` finds the line of that field in the text the user typed by walking the
YAML node tree (``yaml.compose``), whose nodes remember where they start.

Rules are numbered from 1 wherever a sentence names one ("rule 2"), as the decision trail
and the rule tester number them; a field path keeps the document's 0-based index
(``rules[1]`` is rule 2).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

import yaml

from armada.core.backoff import describe_backoff, parse_backoff
from armada.core.errors import FieldError
from armada.core.policy import DOCUMENT_KEY_ORDER
from armada.core.quantity import MEMORY, parse_quantity
from armada.core.quantity_text import readable_quantity
from armada.models import RetryPolicyVersion
from armada.services.errors import NotFound
from armada.web.documents import DocumentError, read_document

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_RULE_FIELD = re.compile(r"^rules\[(\d+)\]")
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

    @property
    def rule(self) -> int | None:
        """The rule the field is in, numbered from 1 (``rules[2].action`` is rule 3)."""
        found = _RULE_FIELD.match(self.field)
        return int(found.group(1)) + 1 if found else None

    def as_json(self) -> dict[str, Any]:
        return {"field": self.field, "message": self.message, "line": self.line, "rule": self.rule}


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


def diff_context(versions: list[RetryPolicyVersion], chosen: int | None) -> dict[str, Any]:
    """The diff of version ``chosen`` (default: the newest) against the version before it,
    for the policy page (``versions`` newest first). Raises NotFound for a version the
    policy never had."""
    if not versions:
        return {}
    by_number = {v.version: v for v in versions}
    current = by_number.get(chosen) if chosen is not None else versions[0]
    if current is None:
        raise NotFound(f"this policy has no version {chosen}")
    earlier = [v for v in versions if v.version < current.version]
    previous = earlier[0] if earlier else None
    context: dict[str, Any] = {"diff_version": current, "diff_previous": previous}
    if previous is not None:
        context["diff"] = unified_diff(
            document_yaml(previous.document),
            document_yaml(current.document),
            old_label=f"version {previous.version}",
            new_label=f"version {current.version}",
        )
    else:
        context["diff_yaml"] = document_yaml(current.document)
    return context


@dataclass(frozen=True)
class RuleText:
    """One rule of a stored policy for the policy page: its number (from 1), what it
    matches, its action and, for a Retry rule, what the retry changes."""

    number: int
    action: str
    matches: str
    mutation: list[str]


def _mutation_words(mutate: Any) -> list[str]:
    if not isinstance(mutate, dict):
        return []
    out = []
    if (mutate.get("affinity") or {}).get("avoidSameNode"):
        out.append("avoid the nodes earlier runs used")
    memory = (mutate.get("resources") or {}).get("memory") or {}
    if memory.get("factor") is not None:
        out.append(f"memory × {memory['factor']:g}")
    elif memory.get("static") is not None:
        try:
            amount = readable_quantity(parse_quantity(memory["static"]), MEMORY)
        except ValueError:
            amount = str(memory["static"])
        out.append(f"memory + {amount}")
    return out


def _backoff_words(stored: Any) -> list[str]:
    """A stored rule's ``backoff`` (our extension) in words; nothing when it cannot be read."""
    if stored is None:
        return []
    errors: list[FieldError] = []
    backoff = parse_backoff(stored, "backoff", errors)
    return [describe_backoff(backoff)] if backoff is not None else []


def rules_text(rules: Any) -> list[RuleText]:
    """The stored rules, in order and numbered from 1, as the policy page lists them. A
    rule stored before the format tightened is shown as far as it can be read."""
    out = []
    for number, rule in enumerate(rules if isinstance(rules, list) else [], start=1):
        rule = rule if isinstance(rule, dict) else {}
        category = str(rule.get("onCategory", ""))
        sub = rule.get("onSubcategory")
        matches = f"category {category}" + (f", subcategory {sub}" if sub else "")
        out.append(
            RuleText(
                number=number,
                action=str(rule.get("action", "")),
                matches=matches,
                mutation=_mutation_words(rule.get("mutate")) + _backoff_words(rule.get("backoff")),
            )
        )
    return out
