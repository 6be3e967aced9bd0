"""What every wire request passes before its operation sees it, whichever transport it came
by: it must be a well-formed message of the method's request type, and its text must be
text the store can keep (``armada.web.storable``: no NUL character).

Protobuf already refuses strings that are not UTF-8 (so no lone surrogates come by gRPC;
the gateway's JSON is checked before it becomes a message), but it lets NUL through, which
PostgreSQL cannot store. Refusing it here, naming the field the way Armada spells it
(``jobRequestItems[0].podSpec.containers[0].name``), keeps it from failing half-way through
a write, for every operation at once.
"""

from __future__ import annotations

from functools import cache

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from armada.core.errors import FieldError, ValidationFailed
from armada.web.storable import MAX_PROBLEMS, NUL_PROBLEM

_MESSAGE = FieldDescriptor.TYPE_MESSAGE
_STRING = FieldDescriptor.TYPE_STRING


def decode(request_class: type[Message], raw: bytes) -> Message:
    """``raw`` parsed as ``request_class``; ValidationFailed (INVALID_ARGUMENT) when it is not
    one (truncated, garbled, or a string that is not UTF-8)."""
    try:
        return request_class.FromString(raw)
    except (DecodeError, RecursionError, ValueError) as exc:
        name = request_class.DESCRIPTOR.full_name
        raise ValidationFailed.one(
            "", f"the request is not a valid {name} message ({exc})"
        ) from None


# How the walk treats a field, by descriptor (looked up once per field, then cached).
_SKIP, _TEXT, _TEXTS, _ONE, _MANY, _MAP_TEXT, _MAP_MESSAGE = range(7)


@cache
def _kind(field: FieldDescriptor) -> int:
    if field.type == _MESSAGE:
        if field.message_type.GetOptions().map_entry:
            value = field.message_type.fields_by_name["value"]
            return _MAP_MESSAGE if value.type == _MESSAGE else _MAP_TEXT
        return _MANY if field.is_repeated else _ONE
    if field.type == _STRING:
        return _TEXTS if field.is_repeated else _TEXT
    return _SKIP


def message_text_problems(message: Message, limit: int = MAX_PROBLEMS) -> list[FieldError]:
    """Every string of ``message`` (map keys too) that holds a NUL character, as a field path
    in JSON names; at most ``limit``. Iterative, so nesting cannot overflow the stack; a
    message's path is kept as segments (``.podSpec``, ``[0]``) and joined only for a problem."""
    problems: list[FieldError] = []
    stack: list[tuple[Message, tuple[str, ...]]] = [(message, ())]

    def problem(where: tuple[str, ...], *more: str, key: bool = False) -> None:
        text = f"(the key) {NUL_PROBLEM}" if key else NUL_PROBLEM
        problems.append(FieldError("".join((*where, *more)).lstrip("."), text))

    while stack and len(problems) < limit:
        current, where = stack.pop()
        if where and b"\x00" not in current.SerializeToString():
            # A string's bytes are in the serialized form verbatim, so a nested message with
            # no zero byte at all has no NUL anywhere inside: skip it without walking it
            # (a batch's pod specs mostly; serializing one costs far less than a walk).
            continue
        for field, value in current.ListFields():
            kind = _kind(field)
            if kind == _SKIP:
                continue
            name = "." + field.json_name
            if kind == _TEXT:
                if "\x00" in value:
                    problem(where, name)
            elif kind == _ONE:
                stack.append((value, (*where, name)))
            elif kind == _MANY:
                stack.extend((item, (*where, name, f"[{i}]")) for i, item in enumerate(value))
            elif kind == _TEXTS:
                for i, item in enumerate(value):
                    if "\x00" in item:
                        problem(where, name, f"[{i}]")
            else:
                for key, item in value.items():
                    if isinstance(key, str) and "\x00" in key:
                        problem(where, name, f"[{key!r}]", key=True)
                    if kind == _MAP_MESSAGE:
                        stack.append((item, (*where, name, f"[{key}]")))
                    elif isinstance(item, str) and "\x00" in item:
                        problem(where, name, f"[{key}]")
    return problems[:limit]


def check_message(message: Message, raw: bytes | None = None) -> None:
    """Raise ValidationFailed naming each string field the store could not keep. ``raw``,
    the serialized form when the caller has it, lets a message with no zero byte at all
    (most of them) skip the walk."""
    if raw is not None and b"\x00" not in raw:
        return
    problems = message_text_problems(message)
    if problems:
        raise ValidationFailed(problems)
