"""Request body parsers: JSON, and YAML (``Content-Type: application/yaml``) parsed safely.

Both refuse (400, ParseError) a body nested too deeply to decode, and the YAML parser also
refuses numbers too long to convert and a body whose anchors and aliases expand it into far
more values than its text holds (a "billion laughs" document).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser

# Without aliases a YAML text of n bytes holds fewer than n values; this many are allowed
# whatever the size, so that anchors can still share a pod spec between thousands of jobs.
MIN_EXPANSION_BUDGET = 1_000_000


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - the body is nested too deeply") from exc


def _within_budget(data: Any, budget: int) -> bool:
    """True when ``data``, with every alias expanded, has at most ``budget`` values."""
    stack = [data]
    seen = 0
    while stack:
        value = stack.pop()
        seen += 1
        if seen > budget:
            return False
        if isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple | set):
            stack.extend(value)
    return True


class YAMLParser(BaseParser):
    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            data = yaml.safe_load(raw.decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError, ValueError) as exc:
            # ValueError: a number of more digits than Python converts (over 4300).
            raise ParseError(f"the body is not valid YAML: {exc}") from exc
        except RecursionError as exc:
            raise ParseError("the body is not valid YAML: it is nested too deeply") from exc
        if not _within_budget(data, max(len(raw), MIN_EXPANSION_BUDGET)):
            raise ParseError(
                "the YAML body expands (through anchors and aliases) to far more values than "
                "it holds; write the repeated parts out"
            )
        return data
