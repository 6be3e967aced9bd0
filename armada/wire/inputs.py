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


def _key(where: str, key: object) -> str:
    return f"{where}[{key}]"


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def message_text_problems(message: Message, limit: int = MAX_PROBLEMS) -> list[FieldError]:
    """Every string of ``message`` (map keys too) that holds a NUL character, as a field path
    in JSON names; at most ``limit``. Iterative, so nesting cannot overflow the stack."""
    problems: list[FieldError] = []
    stack: list[tuple[Message, str]] = [(message, "")]
    while stack and len(problems) < limit:
        current, where = stack.pop()
        for field, value in current.ListFields():
            path = _join(where, field.json_name)
            if field.type == _MESSAGE:
                if field.message_type.GetOptions().map_entry:
                    value_field = field.message_type.fields_by_name["value"]
                    for key, item in value.items():
                        if isinstance(key, str) and "\x00" in key:
                            problems.append(
                                FieldError(_key(path, repr(key)), f"(the key) {NUL_PROBLEM}")
                            )
                        if value_field.type == _MESSAGE:
                            stack.append((item, _key(path, key)))
                        elif isinstance(item, str) and "\x00" in item:
                            problems.append(FieldError(_key(path, key), NUL_PROBLEM))
                elif field.is_repeated:
                    stack.extend((item, f"{path}[{i}]") for i, item in enumerate(value))
                else:
                    stack.append((value, path))
            elif field.type == _STRING:
                if field.is_repeated:
                    problems += [
                        FieldError(f"{path}[{i}]", NUL_PROBLEM)
                        for i, item in enumerate(value)
                        if "\x00" in item
                    ]
                elif "\x00" in value:
                    problems.append(FieldError(path, NUL_PROBLEM))
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
