"""Request-body checks, with the API server's field paths and messages.

Decoding problems (a body the client library's model cannot read, a malformed quantity,
an unknown field under ``fieldValidation=Strict``) are 400 BadRequest; semantic problems
are 422 Invalid with one ``details.causes`` entry per field, as ``field.ErrorList`` gives.
The per-kind checks are in ``validation_pods`` and ``validation_network`` (services and
ingresses), the shared pieces in ``validation_meta``.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from armada.core.quantity import parse_quantity
from tests.kube_emulator.objects import Resource, bad_request, invalid
from tests.kube_emulator.validation_meta import Obj, bad_value
from tests.kube_emulator.validation_network import validate_ingress, validate_service
from tests.kube_emulator.validation_pods import validate_pod

__all__ = ["bad_value", "check", "decode", "unknown_fields"]


# -- decoding ------------------------------------------------------------------------------
def unknown_fields(model: type, data: Any, path: str = "") -> list[str]:
    """JSON paths in ``data`` that ``model`` (a client model class) does not declare."""
    if not isinstance(data, dict):
        return []
    known = {wire: model.openapi_types[attr] for attr, wire in model.attribute_map.items()}
    out: list[str] = []
    for key, value in data.items():
        if key not in known:
            out.append(f"{path}{key}")
        else:
            out.extend(_walk(known[key], value, f"{path}{key}"))
    return out


def _walk(typ: str, value: Any, path: str) -> list[str]:
    if typ.startswith("List[") and isinstance(value, list):
        return [u for i, v in enumerate(value) for u in _walk(typ[5:-1], v, f"{path}[{i}]")]
    if typ.startswith("Dict[str, ") and isinstance(value, dict):
        return [u for k, v in value.items() for u in _walk(typ[10:-1], v, f"{path}[{k}]")]
    model = getattr(client, typ, None) if typ[:1].isupper() else None
    if isinstance(model, type) and hasattr(model, "attribute_map"):
        return unknown_fields(model, value, path + ".")
    return []


def decode(resource: Resource, body: Any, field_validation: str | None) -> tuple[Any, list[str]]:
    """The body read by the client's model: (model, warnings). Refuses what cannot be read."""
    if field_validation not in (None, "", "Ignore", "Warn", "Strict"):
        raise bad_request(
            f'fieldValidation parameter unsupported: "{field_validation}"; valid values are '
            '"Ignore", "Warn", "Strict"'
        )
    where = (
        f'{resource.kind} in version "{resource.version}" cannot be handled as a {resource.kind}'
    )
    if not isinstance(body, dict):
        raise bad_request(f"{where}: body must be a JSON object")
    kind = body.get("kind")
    if kind not in (None, "", resource.kind):
        raise bad_request(f'{where}: kind "{kind}" does not match "{resource.kind}"')
    version = body.get("apiVersion")
    if version not in (None, "", resource.api_version):
        raise bad_request(
            f'{where}: apiVersion "{version}" does not match "{resource.api_version}"'
        )
    unknown = unknown_fields(resource.model, body)
    if unknown and field_validation == "Strict":
        listed = ", ".join(f'unknown field "{u}"' for u in unknown)
        raise bad_request(f"strict decoding error: {listed}")
    _check_quantities(body, where)
    try:
        model = resource.model.from_dict(body)
    except Exception as exc:  # pydantic.ValidationError and the odd TypeError
        errors = getattr(exc, "errors", lambda: [])()
        if errors and all(e.get("input") is None for e in errors):
            return None, []  # only required values missing: the 422 check names them
        first = errors[0] if errors else {"msg": str(exc), "loc": ()}
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise bad_request(f"{where}: {loc}: {first.get('msg')}") from None
    warnings = [] if field_validation == "Ignore" else [f'unknown field "{u}"' for u in unknown]
    return model, warnings


def _check_quantities(body: Obj, where: str) -> None:
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    for group in ("containers", "initContainers"):
        for c in spec.get(group) or []:
            res = c.get("resources") if isinstance(c, dict) else None
            for kind in ("requests", "limits"):
                values = res.get(kind) if isinstance(res, dict) else None
                for v in (values or {}).values() if isinstance(values, dict) else ():
                    if not isinstance(v, str):
                        continue
                    text = v[1:] if v.startswith("-") else v
                    try:
                        parse_quantity(text)
                    except ValueError:
                        raise bad_request(
                            f"{where}: quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                        ) from None


VALIDATORS = {"pods": validate_pod, "services": validate_service, "ingresses": validate_ingress}


def check(resource: Resource, body: Obj) -> None:
    """Raise 422 Invalid listing every problem with ``body``."""
    causes = VALIDATORS[resource.plural](body)
    if causes:
        name = (body.get("metadata") or {}).get("name") or ""
        raise invalid(resource, name, causes)
