"""Granting and revoking a queue's permissions for some subjects (pure).

A queue's ``permissions`` are a list of grants ``{"subjects": [{kind, name}], "verbs": [...]}``
(``core.queues``). People change them a subject at a time ("let alice watch", "ml may no
longer cancel"); these functions turn such a change into the new list, keeping every other
grant as it was written:

- :func:`grant`: afterwards each subject holds each verb. Subjects that held them all
  already change nothing; a grant to exactly the same subjects takes the new verbs; else one
  grant is added at the end for the subjects that lacked something.
- :func:`revoke`: afterwards no grant gives the subjects any of the verbs (every verb when
  none is named). A grant that also names other subjects keeps them; the subjects keep that
  grant's other verbs in a grant of their own just after it. A grant left with no subject or
  no verb goes.

Owners and global permissions are not grants: revoking never takes those away.
:func:`parse_change` reads a change from a request body, naming the field of each problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from armada.core.errors import FieldError, ValidationFailed
from armada.core.queues import SUBJECT_KINDS, VERBS

Subject = tuple[str, str]  # (kind, name)


@dataclass(frozen=True)
class Change:
    """Subjects and verbs of a grant or revoke; no verbs (a revoke only): every verb."""

    subjects: tuple[Subject, ...]
    verbs: tuple[str, ...]


def _subjects_of(grant: Mapping[str, Any]) -> list[Subject]:
    return [(s["kind"], s["name"]) for s in grant.get("subjects", [])]


def _grant_of(subjects: Sequence[Subject], verbs: Sequence[str]) -> dict[str, Any]:
    return {
        "subjects": [{"kind": kind, "name": name} for kind, name in subjects],
        "verbs": list(verbs),
    }


def verbs_held(permissions: Sequence[Mapping[str, Any]], subject: Subject) -> set[str]:
    """The verbs the queue's grants give ``subject`` (not counting ownership)."""
    return {
        verb
        for grant in permissions
        if subject in _subjects_of(grant)
        for verb in grant.get("verbs", [])
    }


def grant(
    permissions: Sequence[Mapping[str, Any]], subjects: Sequence[Subject], verbs: Sequence[str]
) -> list[dict[str, Any]]:
    """``permissions`` with every verb of ``verbs`` granted to every subject of ``subjects``."""
    out = [_grant_of(_subjects_of(g), g.get("verbs", [])) for g in permissions]
    lacking = [s for s in dict.fromkeys(subjects) if not set(verbs) <= verbs_held(out, s)]
    if not lacking:
        return out
    for existing in out:
        if set(_subjects_of(existing)) == set(lacking):
            existing["verbs"] = list(dict.fromkeys([*existing["verbs"], *verbs]))
            return out
    return [*out, _grant_of(lacking, list(dict.fromkeys(verbs)))]


def revoke(
    permissions: Sequence[Mapping[str, Any]],
    subjects: Sequence[Subject],
    verbs: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """``permissions`` with no grant left giving any of ``subjects`` any of ``verbs`` (every
    verb when ``verbs`` is empty)."""
    taken = set(verbs or VERBS)
    out: list[dict[str, Any]] = []
    for existing in permissions:
        names, kept_verbs = _subjects_of(existing), list(existing.get("verbs", []))
        hit = [s for s in names if s in subjects]
        if not hit or not taken & set(kept_verbs):
            out.append(_grant_of(names, kept_verbs))
            continue
        others = [s for s in names if s not in subjects]
        if others:
            out.append(_grant_of(others, kept_verbs))
        left = [v for v in kept_verbs if v not in taken]
        if left:
            out.append(_grant_of(hit, left))
    return out


def parse_change(data: Any, *, verbs_required: bool) -> Change:
    """``{"subjects": [{"kind": "User"|"Group", "name"}], "verbs": [...]}`` as a Change.
    ``verbs`` may be left out or empty only when not ``verbs_required`` (a revoke of every
    verb). Raises ValidationFailed naming each bad field."""
    if not isinstance(data, Mapping):
        raise ValidationFailed.one("body", "must be an object with subjects and verbs")
    errors: list[FieldError] = []
    unknown = sorted(set(data) - {"subjects", "verbs"})
    if unknown:
        errors.append(FieldError(unknown[0], "is not a field here: give subjects and verbs"))
    raw_subjects = data.get("subjects")
    subjects: list[Subject] = []
    if not isinstance(raw_subjects, list) or not raw_subjects:
        errors.append(FieldError("subjects", "must be a non-empty list of {kind, name}"))
    else:
        for i, s in enumerate(raw_subjects):
            name = s.get("name") if isinstance(s, Mapping) else None
            if (
                not isinstance(s, Mapping)
                or s.get("kind") not in SUBJECT_KINDS
                or not isinstance(name, str)
                or not name.strip()
                or set(s) - {"kind", "name"}
            ):
                errors.append(
                    FieldError(f"subjects[{i}]", "must be {kind: User|Group, name: <name>}")
                )
            else:
                subjects.append((s["kind"], name.strip()))
    raw_verbs = data.get("verbs")
    if raw_verbs is None and not verbs_required:
        raw_verbs = []
    if (
        not isinstance(raw_verbs, list)
        or (verbs_required and not raw_verbs)
        or not all(v in VERBS for v in raw_verbs)
    ):
        wanted = "a non-empty list" if verbs_required else "a list"
        errors.append(FieldError("verbs", f"must be {wanted} of {', '.join(VERBS)}"))
    if errors:
        raise ValidationFailed(errors)
    return Change(subjects=tuple(dict.fromkeys(subjects)), verbs=tuple(dict.fromkeys(raw_verbs)))
