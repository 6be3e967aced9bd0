"""Reading the files ``armadactl`` sends (job files, retry-policy documents) and the local
checks made before sending a job file.

A job file is YAML or JSON: ``{queue, jobSetId, jobs: [{priority, namespace, annotations,
podSpec}, ...]}``. Locally only the shape is checked (the server owns the real rules:
resources, priority classes, gangs); a file that fails here is never sent.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FILE_KEYS = ("queue", "jobSetId", "jobs")


class JobFileError(Exception):
    """An input file (a job file or a retry-policy document) cannot be read or has the
    wrong shape; ``errors`` are (field, message)."""

    def __init__(self, message: str, errors: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []


def load_yaml(text: str, *, many: bool = False) -> Any:
    """The YAML document in ``text``, dates kept as text (``armada.cli.yamltext.load_yaml``,
    imported on first use)."""
    from armada.cli import yamltext

    return yamltext.load_yaml(text, many=many)


def parse_job_text(text: str, name: str, *, as_json: bool = False) -> Any:
    """Parse the text of a job file: JSON when ``as_json``, else YAML (which accepts JSON too)."""
    if as_json:
        try:
            return json.loads(text)
        except ValueError as exc:
            raise JobFileError(f"{name} is not valid JSON: {exc}") from None
    from armada.cli.yamltext import YAMLError

    try:
        return load_yaml(text)
    except YAMLError as exc:
        raise JobFileError(f"{name} is not valid YAML: {exc}") from None


def load_data_file(path: str, what: str) -> Any:
    """Read and parse ``path`` (``-`` is standard input); ``what`` names the file in errors
    ("job file", "retry policy file"). A ``.json`` file is parsed as JSON, anything else as
    YAML (which accepts JSON too)."""
    if path == "-":
        return parse_job_text(sys.stdin.read(), "standard input")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JobFileError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise JobFileError(f"{what} {path} is a directory") from None
    except UnicodeDecodeError:
        raise JobFileError(f"{what} {path} is not UTF-8 text") from None
    except OSError as exc:
        raise JobFileError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    return parse_job_text(text, path, as_json=path.lower().endswith(".json"))


def json_problem(data: Any) -> str | None:
    """Why ``data`` cannot be sent as a JSON body (NaN, infinity, a non-string key that is
    not a scalar...), or None when it can."""
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"the file holds a value JSON cannot carry ({exc})"
    return None


def load_job_file(path: str) -> Any:
    """Read and parse the job file ``path`` (``-`` is standard input)."""
    return load_data_file(path, "job file")


def check_job_file(data: Any) -> list[tuple[str, str]]:
    """The shape problems of a parsed job file, as ``(field, message)``; empty when fine."""
    if not isinstance(data, Mapping):
        return [("", "a job file is a mapping with queue, jobSetId and jobs")]
    errors: list[tuple[str, str]] = []
    for key in sorted(str(k) for k in data if k not in FILE_KEYS):
        errors.append((key, f"unknown field; allowed: {', '.join(FILE_KEYS)}"))
    queue = data.get("queue")
    if not isinstance(queue, str) or not queue.strip():
        errors.append(("queue", "is required and must be a string"))
    job_set = data.get("jobSetId")
    if not isinstance(job_set, str) or not job_set.strip():
        errors.append(("jobSetId", "is required and must be a string"))
    jobs = data.get("jobs")
    problem = json_problem(data)
    if problem:
        errors.append(("", problem))
    if not isinstance(jobs, list) or not jobs:
        errors.append(("jobs", "at least one job is required (a list)"))
        return errors
    for i, job in enumerate(jobs):
        where = f"jobs[{i}]"
        if not isinstance(job, Mapping):
            errors.append((where, "must be a mapping"))
            continue
        if not isinstance(job.get("podSpec"), Mapping):
            errors.append((f"{where}.podSpec", "is required and must be a mapping"))
        annotations = job.get("annotations")
        if annotations is not None and not isinstance(annotations, Mapping):
            errors.append((f"{where}.annotations", "must be a mapping of strings to strings"))
    return errors


def describe_job_file(data: Mapping[str, Any]) -> list[str]:
    """Lines telling what a (checked) job file would submit, for ``--dry-run``."""
    jobs = data["jobs"]
    noun = "job" if len(jobs) == 1 else "jobs"
    lines = [
        f"Would submit {len(jobs)} {noun} to queue {data['queue']} (job set {data['jobSetId']}):"
    ]
    for i, job in enumerate(jobs):
        pod = job["podSpec"]
        containers = pod.get("containers") if isinstance(pod.get("containers"), list) else []
        images = [
            str(c.get("image")) for c in containers if isinstance(c, Mapping) and c.get("image")
        ]
        lines.append(
            f"  jobs[{i}]: priority {job.get('priority', 0)}, namespace {job.get('namespace', 'default')}, "
            f"{len(containers)} container{'' if len(containers) == 1 else 's'}"
            + (f" ({', '.join(images)})" if images else "")
        )
    return lines
