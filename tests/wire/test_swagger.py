"""``/swagger.json``: a valid Swagger 2.0 document of exactly the gateway we serve, with
Armada's names (``tests/wire/swagger_names.py``) and the shapes our JSON has."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from django.test import Client
from django.urls import resolve
from google.protobuf import descriptor_pb2
from schemathesis.specs.openapi.definitions import SWAGGER_20

from armada.wire import swagger
from armada.wire.http_rules import http_rules
from armada.wire.registry import load_operations
from tests.wire.swagger_names import DEFINITIONS, ENUMS, OPERATIONS, SCALAR_DEFINITIONS

REF = "#/definitions/"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return json.loads(swagger.document_bytes())


def refs(node: Any) -> set[str]:
    """Every ``$ref`` under ``node``."""
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(refs(item) for item in node)) if node else set()
    return set()


def served() -> set[tuple[str, str]]:
    """(verb, path as Swagger writes it) of every gateway rule with an operation."""
    operations = load_operations()
    found = set()
    for rule in http_rules():
        op = operations.get(rule.method)
        if op is not None:
            found.add((rule.verb, swagger.swagger_path(rule, op.method.input_type)))
    return found


def listed(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(verb.upper(), path) for path, ops in document["paths"].items() for verb in ops}


def test_it_is_valid_swagger_2(document):
    jsonschema.Draft4Validator(SWAGGER_20).validate(document)
    assert document["swagger"] == "2.0"
    ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids)), "operationIds must be unique"


def test_every_reference_is_defined(document):
    for ref in refs(document):
        assert ref.startswith(REF) and ref[len(REF) :] in document["definitions"], ref


def test_every_path_and_verb_we_serve_is_listed_and_nothing_else(document):
    assert listed(document) == served()
    assert len(served()) >= 36  # all of Armada's, api.Node's and api.Executor's included


def test_every_listed_path_reaches_the_gateway(document):
    for path in document["paths"]:
        concrete = path.replace("{", "x").replace("}", "")
        assert resolve(concrete).func.__module__ == "armada.wire.gateway", path


def test_armadas_names_for_the_paths_both_have(document):
    compared = 0
    for (verb, path), (operation_id, tag, body, answer, parameters) in OPERATIONS.items():
        op = document["paths"].get(path, {}).get(verb.lower())
        if op is None:
            continue  # a path of Armada's that we do not serve (none at present)
        compared += 1
        where = f"{verb} {path}"
        assert op["operationId"] == operation_id, where
        assert op["tags"] == [tag], where
        params = op.get("parameters", [])
        bodies = [p["schema"]["$ref"][len(REF) :] for p in params if p["in"] == "body"]
        assert bodies == ([body] if body else []), where
        assert tuple(p["name"] for p in params if p["in"] != "body") == parameters, where
        schema = op["responses"]["200"]["schema"]
        result = schema.get("properties", {}).get("result", schema)
        assert result.get("$ref", REF)[len(REF) :] == (answer or ""), where
        assert op["responses"]["default"]["schema"] == {"$ref": REF + "runtimeError"}, where
    assert compared >= 36


def test_armadas_definition_names_and_fields(document):
    definitions = document["definitions"]
    for name, fields in DEFINITIONS.items():
        assert name in definitions, name
        assert fields <= set(definitions[name]["properties"]), name
    for name, first in ENUMS.items():
        assert definitions[name]["type"] == "string"
        assert definitions[name]["enum"][0] == first == definitions[name]["default"], name
    for name, kind in SCALAR_DEFINITIONS.items():
        assert definitions[name]["type"] == kind, name
    assert set(definitions["runtimeError"]["properties"]) == {"code", "details", "error", "message"}
    stream_error = set(definitions["runtimeStreamError"]["properties"])
    assert stream_error == {"details", "grpcCode", "httpCode", "httpStatus", "message"}


def test_shapes_follow_our_json(document):
    definitions = document["definitions"]
    item = definitions["apiJobSubmitRequestItem"]["properties"]
    assert item["priority"] == {"type": "number", "format": "double"}
    assert item["podSpec"] == {"$ref": REF + "v1PodSpec"}
    assert item["annotations"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert item["podSpecs"] == {"type": "array", "items": {"$ref": REF + "v1PodSpec"}}
    resources = definitions["v1ResourceRequirements"]["properties"]
    assert resources["limits"] == {"$ref": REF + "v1ResourceList"}
    assert definitions["v1ResourceList"]["additionalProperties"] == {
        "$ref": REF + "resourceQuantity"
    }
    # Kubernetes' JSON: an embedded struct's fields in the outer object, int64 as numbers.
    assert "volumeSource" not in definitions["v1Volume"]["properties"]
    assert definitions["v1PodSpec"]["properties"]["activeDeadlineSeconds"] == {
        "type": "integer",
        "format": "int64",
    }
    assert definitions["apiJobRunDetails"]["properties"]["leasedTs"] == {
        "type": "string",
        "format": "date-time",
    }
    stream = document["paths"]["/v1/job-set/{queue}/{id}"]["post"]["responses"]["200"]
    assert stream["schema"]["title"] == "Stream result of apiEventStreamMessage"
    assert set(stream["schema"]["properties"]) == {"result", "error"}
    report = document["paths"]["/v1/queue/{queueName}/scheduler-report"]["get"]
    assert report["parameters"][1] == {
        "type": "integer",
        "format": "int32",
        "name": "verbosity",
        "in": "query",
    }


def test_64_bit_integers_of_protobuf_messages_are_strings():
    defs = swagger._Definitions()
    ref = defs.message(descriptor_pb2.UninterpretedOption.DESCRIPTOR)
    properties = defs.schemas[ref["$ref"][len(REF) :]]["properties"]
    assert properties["negativeIntValue"] == {"type": "string", "format": "int64"}
    assert properties["positiveIntValue"] == {"type": "string", "format": "uint64"}
    assert properties["doubleValue"] == {"type": "number", "format": "double"}
    assert properties["name"]["items"] == {"$ref": REF + "UninterpretedOptionNamePart"}


def test_served_publicly_as_json_and_built_once():
    first = Client().get("/swagger.json")
    assert first.status_code == 200
    assert first["Content-Type"] == "application/json"
    assert json.loads(first.content)["info"]["title"] == "Armada API"
    assert swagger.document_bytes() is swagger.document_bytes()
    assert Client().head("/swagger.json").status_code == 200
    refused = Client().post("/swagger.json")
    assert refused.status_code == 405 and refused["Allow"] == "GET, HEAD"
