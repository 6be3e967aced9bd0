"""Kubernetes' rules for label and annotation keys and values, and for the size of a set of
annotations, so that what a job or queue carries is what a cluster would take and no page
that shows it grows without bound.

- A key (of a label or an annotation) is a *qualified name*: an optional prefix, a DNS
  subdomain of at most 253 characters followed by ``/``, then a name of at most 63
  characters of letters, digits, ``-``, ``_`` and ``.``, starting and ending with a letter
  or digit (``app``, ``armadaproject.io/gangId``).
- A label value is empty or follows the name rule (at most 63 characters).
- An annotation value may be any text, but the annotations of one object, keys and values
  together, hold at most 256 KiB (counted in UTF-8 bytes, as Kubernetes counts them).

A *selector* (``parse_selector``) picks objects by their labels, as ``kubectl -l`` does:
``team=ml,gpu`` holds for labels with ``team`` equal to ``ml`` and any ``gpu`` label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from armada.core.errors import FieldError, ValidationFailed

MAX_NAME = 63
MAX_PREFIX = 253
MAX_LABEL_VALUE = 63
MAX_ANNOTATIONS_BYTES = 256 * 1024
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
NAME_RULE = (
    "letters, digits, '-', '_' and '.', starting and ending with a letter or digit, "
    f"at most {MAX_NAME} characters"
)


def key_problem(key: str) -> str | None:
    """Why ``key`` is not a qualified name, or None."""
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return "must not start with '/': write prefix/name, or the name alone"
        if len(prefix) > MAX_PREFIX or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return (
                f"the prefix {prefix[:80]!r} must be a DNS subdomain: lower-case letters, "
                f"digits, '-' and '.', at most {MAX_PREFIX} characters"
            )
    if not name:
        return "the name (after any prefix) is required"
    if len(name) > MAX_NAME or not _NAME.fullmatch(name):
        return f"the name {name[:80]!r} must be {NAME_RULE}"
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` cannot be a label value, or None."""
    if value == "" or (len(value) <= MAX_LABEL_VALUE and _NAME.fullmatch(value)):
        return None
    return f"must be empty or {NAME_RULE}"


def label_problems(labels: Mapping[str, str], where: str) -> list[FieldError]:
    """The problems of a label set whose keys and values are text, each naming its field
    (``where[key]``)."""
    errors = []
    for key, value in labels.items():
        problem = key_problem(key)
        if problem is not None:
            errors.append(FieldError(f"{where}[{key}]", f"(the key) {problem}"))
        elif (problem := label_value_problem(value)) is not None:
            errors.append(FieldError(f"{where}[{key}]", problem))
    return errors


def annotation_problems(annotations: Mapping[str, str], where: str) -> list[FieldError]:
    """The problems of an annotation set whose keys and values are text: each bad key, then
    the total size."""
    errors = []
    for key in annotations:
        problem = key_problem(key)
        if problem is not None:
            errors.append(FieldError(f"{where}[{key}]", f"(the key) {problem}"))
    size = sum(_utf8_len(k) + _utf8_len(v) for k, v in annotations.items())
    if size > MAX_ANNOTATIONS_BYTES:
        errors.append(
            FieldError(
                where,
                f"keys and values together are {size} bytes; at most {MAX_ANNOTATIONS_BYTES} "
                "(256 KiB) are accepted (keep large text such as logs elsewhere)",
            )
        )
    return errors


def _utf8_len(text: str) -> int:
    # ASCII is the usual case, and its length is its size.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


# --- selectors --------------------------------------------------------------------------------

EQUALS = "="
NOT_EQUALS = "!="
EXISTS = "exists"
NOT_EXISTS = "!exists"


@dataclass(frozen=True)
class Requirement:
    """One term of a selector: ``key=value``, ``key!=value``, ``key`` (the key is present,
    whatever its value) or ``!key`` (it is absent)."""

    key: str
    operator: str
    value: str = ""

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == EXISTS:
            return self.key in labels
        if self.operator == NOT_EXISTS:
            return self.key not in labels
        if self.operator == EQUALS:
            return labels.get(self.key) == self.value
        # ``key!=value``: a missing key is "not equal" too, as in Kubernetes.
        return labels.get(self.key) != self.value

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == NOT_EXISTS:
            return f"!{self.key}"
        return f"{self.key}{self.operator}{self.value}"


@dataclass(frozen=True)
class Selector:
    """Terms joined by commas, all of which must hold (``team=ml,gpu,!legacy``).

    The terms are those of Kubernetes' equality-based label selectors, and a selector of
    ``key=value`` and ``key`` terms means what Armada's ``armadactl -l`` means by the same
    labels. Set-based terms (``key in (a,b)``) are not supported.
    """

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def parse_selector(text: object, where: str = "selector") -> Selector:
    """Parse ``key=value,key2!=value2,key3,!key4``; raises ValidationFailed naming ``where``
    once for every bad term (the message quotes the term). Spaces around terms, keys and values are
    ignored; ``==`` is accepted for ``=``."""
    if not isinstance(text, str):
        raise ValidationFailed.one(where, "must be text such as team=ml,gpu")
    if not text.strip():
        raise ValidationFailed.one(where, "is empty: give at least one term such as team=ml")
    errors: list[FieldError] = []
    requirements: list[Requirement] = []
    for i, raw in enumerate(text.split(",")):
        term = raw.strip()
        here = where
        if not term:
            errors.append(
                FieldError(here, f"term {i + 1} is empty (two commas in a row, or a trailing one)")
            )
            continue
        requirement = _requirement(term)
        problem = key_problem(requirement.key)
        if problem is not None:
            errors.append(FieldError(here, f"{term!r}: bad key: {problem}"))
            continue
        if requirement.operator in (EQUALS, NOT_EQUALS):
            problem = label_value_problem(requirement.value)
            if problem is not None:
                errors.append(FieldError(here, f"{term!r}: bad value: it {problem}"))
                continue
        requirements.append(requirement)
    if errors:
        raise ValidationFailed(errors)
    return Selector(tuple(requirements))


def _requirement(term: str) -> Requirement:
    if NOT_EQUALS in term:
        key, _, value = term.partition(NOT_EQUALS)
        return Requirement(key.strip(), NOT_EQUALS, value.strip())
    if EQUALS in term:
        key, _, value = term.partition(EQUALS)
        value = value[1:] if value.startswith(EQUALS) else value  # ``key==value``
        return Requirement(key.strip(), EQUALS, value.strip())
    if term.startswith("!"):
        return Requirement(term[1:].strip(), NOT_EXISTS)
    return Requirement(term, EXISTS)
