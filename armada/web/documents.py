"""YAML documents, read the one way every input path reads them: the API's YAML bodies
(``armada.api.parsers``) and Lookout's policy editor both call :func:`parse_yaml`, and the
editor then :func:`read_document`'s storable check, which the API applies to every body.

A document is refused, with the reason and the line where the parser knows it, when it is:
- larger than the largest request body (``settings.DATA_UPLOAD_MAX_MEMORY_SIZE``);
- not UTF-8, or not YAML;
- nested too deeply for the parser, which recurses (a RecursionError otherwise);
- holding a number of more digits than Python converts (over 4,300);
- expanded by its anchors and aliases into far more values than its text holds (a
  "billion laughs" document), which would take the process's memory and time;
- (``read_document``) holding what the store cannot keep (``armada.web.storable``: NUL, lone
  surrogates, NaN, dates, binary, sets, nesting past 64 levels), each named by its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from django.conf import settings

from armada import yamlkeys
from armada.web.storable import check_storable

# Without aliases a YAML text of n bytes holds fewer than n values; this many are allowed
# whatever the size, so that anchors can still share a pod spec between thousands of jobs.
MIN_EXPANSION_BUDGET = 1_000_000


class DocumentError(Exception):
    """The text is not a document that can be taken: ``problem`` says why (a predicate:
    "is not valid YAML: ..."), ``line`` (1-based) where, when the parser knows."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line

    def describe(self, subject: str, *, with_line: bool = True) -> str:
        """The problem as a sentence about ``subject`` ("the body", "the document")."""
        where = f" (line {self.line})" if with_line and self.line is not None else ""
        return f"{subject} {self.problem}{where}"


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


def parse_yaml(raw: bytes | str, *, max_bytes: int | None = None) -> Any:
    """The data of a YAML text; raises DocumentError. ``max_bytes`` defaults to the largest
    request body the site reads."""
    limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) if max_bytes is None else max_bytes
    if isinstance(raw, bytes):
        size = len(raw)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DocumentError(f"is not valid YAML: it is not UTF-8 text ({exc.reason})") from None
    else:
        text = raw
        size = len(raw.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise DocumentError(f"is {size} bytes; at most {limit} are accepted")
    try:
        data = yamlkeys.safe_load(text)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, say)
        line = text.count("\n", 0, exc.position) + 1
        raise DocumentError(f"is not valid YAML: {exc.reason} ({exc.character!r})", line) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        line = mark.line + 1 if mark is not None else None
        raise DocumentError(f"is not valid YAML: {problem}", line) from None
    except ValueError:
        # int() refuses strings of more than 4,300 digits (a denial-of-service guard).
        raise DocumentError(
            "is not valid YAML: it holds a number of more than 4300 digits"
        ) from None
    except RecursionError:
        raise DocumentError("is not valid YAML: it is nested too deeply") from None
    if not _within_budget(data, max(size, MIN_EXPANSION_BUDGET)):
        raise DocumentError(
            "expands (through anchors and aliases) to far more values than it holds; write "
            "the repeated parts out"
        )
    return data


def read_document(raw: bytes | str, *, max_bytes: int | None = None) -> Any:
    """:func:`parse_yaml`, then the store's rule: raises DocumentError, or ValidationFailed
    naming each field that could not be stored."""
    data = parse_yaml(raw, max_bytes=max_bytes)
    check_storable(data)
    return data
