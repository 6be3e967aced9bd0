"""Request body parsers: JSON, and YAML (``Content-Type: application/yaml``) parsed safely.

Both refuse (400, ParseError) a body nested too deeply to decode. The YAML parser reads a
body exactly as Lookout's policy editor reads a document (``armada.web.documents``), so it
also refuses numbers too long to convert and a body whose anchors and aliases expand it
into far more values than its text holds (a "billion laughs" document).
"""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser

from armada.web.documents import DocumentError, parse_yaml


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - the body is nested too deeply") from exc


class YAMLParser(BaseParser):
    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            return parse_yaml(raw)
        except DocumentError as exc:
            raise ParseError(exc.describe("the body")) from exc
