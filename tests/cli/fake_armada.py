"""A fake Armada API on a real socket, for testing ``armadactl`` without Django.

``FakeArmada`` serves the REST contract from memory with ``ThreadingHTTPServer`` on
127.0.0.1, port 0: queues (create, get, list with a label selector, PATCH, DELETE, cordon,
uncordon), retry policies (create, get, list, PUT, DELETE), job submission, a job with its
runs, a run's log and the event stream; any other answer can be canned per method and path.
Each request is recorded (method, path as sent, query, headers, JSON body). The events
endpoint streams NDJSON and follows a list of ``StreamPlan``s, one per connection, so a test
can cut a stream half way (chunked body broken off, or a close-delimited body ended
mid-line) and check that the client resumes from its cursor.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

CREATED = "2025-03-04T05:06:07Z"
QUEUE_DEFAULTS: dict[str, Any] = {
    "priorityFactor": 1.0,
    "owners": [],
    "groupOwners": [],
    "permissions": [],
    "labels": {},
    "cordoned": False,
    "retryPolicies": [],
    "createdAt": CREATED,
    "updatedAt": CREATED,
}


POLICY_API_VERSION = "armadaproject.io/v1beta1"
POLICY_ACTIONS = ("Retry", "Fail")
POLICY_FIELDS = ("apiVersion", "kind", "name", "retryLimit", "defaultAction", "rules")


def policy_errors(body: Any) -> list[tuple[str, str]]:
    """A small part of the server's policy validation, enough to give field errors. It
    refuses every field it does not know, ``version`` and the times included (the real
    server ignores those), so a test sees whether the client sends them back."""
    if not isinstance(body, dict):
        return [("", "a retry policy is a JSON object")]
    errors: list[tuple[str, str]] = [
        (str(key), "unknown field") for key in body if key not in POLICY_FIELDS
    ]
    if not isinstance(body.get("name"), str) or not body["name"]:
        errors.append(("name", "is required"))
    limit = body.get("retryLimit")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        errors.append(("retryLimit", "must be a whole number, 0 or more"))
    if body.get("defaultAction", "Fail") not in POLICY_ACTIONS:
        errors.append(("defaultAction", "must be Retry or Fail"))
    for i, rule in enumerate(body.get("rules") or []):
        if not isinstance(rule, dict) or rule.get("action") not in POLICY_ACTIONS:
            errors.append((f"rules[{i}].action", "must be Retry or Fail"))
    return errors


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class StreamPlan:
    """What one connection to the events endpoint gets.

    ``count`` events (all remaining when None) after the cursor, then: with ``drop`` None
    keep-alive blank lines until the client hangs up; ``"abort"`` a chunked body broken off
    inside a chunk; ``"close"`` a close-delimited body ended by closing the socket. With
    ``partial`` the first half of the next event's line is sent before the drop.
    ``ignore_from`` sends from the first event regardless of the cursor (a buggy server).
    ``chunked`` False (implied by ``drop="close"``) sends a close-delimited body.
    ``unterminated`` leaves out the newline after the last event sent.
    ``pause_after`` sends that many events, waits half a second, then sends the rest: a
    burst that reaches the client in two reads.
    """

    count: int | None = None
    drop: str | None = None
    partial: bool = False
    ignore_from: bool = False
    chunked: bool = True
    unterminated: bool = False
    pause_after: int | None = None


def event(
    event_id: int, kind: str, job_id: str, *, second: int = 0, **extra: Any
) -> dict[str, Any]:
    """An event of job set ``q1/js1`` as the contract spells it."""
    return {
        "id": event_id,
        "type": kind,
        "created": f"2025-03-04T10:00:{second:02d}Z",
        "queue": "q1",
        "jobSetId": "js1",
        "jobId": job_id,
        "runId": f"run-{job_id}" if kind not in ("submitted", "queued") else None,
        **extra,
    }


@dataclass
class FakeArmada:
    url: str = ""
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    run_logs: dict[str, dict[str, Any]] = field(default_factory=dict)
    busy_queues: set[str] = field(default_factory=set)  # DELETE answers 409 (unfinished jobs)
    events: list[dict[str, Any]] = field(default_factory=list)
    stream_plans: list[StreamPlan] = field(default_factory=list)
    raw_prefix: list[bytes] = field(default_factory=list)  # lines sent before the events
    requests: list[Recorded] = field(default_factory=list)
    # (method, path) -> (status, JSON body): answered before any other route.
    canned: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)
    token: str | None = None  # when set, requests need this token ...
    basic: tuple[str, str] | None = None  # ... or these basic credentials
    next_job: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_queue(self, name: str, **fields: Any) -> dict[str, Any]:
        queue = {"name": name, **QUEUE_DEFAULTS, **fields}
        self.queues[name] = queue
        return queue

    def add_policy(self, name: str, **fields: Any) -> dict[str, Any]:
        """A stored policy as the contract returns it (file fields, then version and times)."""
        policy = {
            "apiVersion": POLICY_API_VERSION,
            "kind": "RetryPolicy",
            "name": name,
            "retryLimit": 3,
            "defaultAction": "Fail",
            "rules": [],
            "version": 1,
            "createdAt": CREATED,
            "updatedAt": CREATED,
            "updatedBy": "admin",
        }
        policy.update(fields)
        self.policies[name] = policy
        return policy

    def store_policy(self, body: dict[str, Any], version: int) -> dict[str, Any]:
        """Store a checked policy body (see ``policy_errors``) with ``version``."""
        fields = {k: v for k, v in body.items() if k not in ("apiVersion", "kind", "name")}
        updated = f"2025-03-05T00:00:{version:02d}Z"
        return self.add_policy(body["name"], version=version, updatedAt=updated, **fields)

    def paths(self, method: str | None = None) -> list[str]:
        return [r.path for r in self.requests if method is None or r.method == method]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    @property
    def fake(self) -> FakeArmada:
        return self.server.fake

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base signature
        pass

    # -- helpers ------------------------------------------------------------------------

    def send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_empty(self, status: int = 204) -> None:
        self.send_response(status)
        self.end_headers()

    def send_error_body(
        self, status: int, message: str, errors: list[tuple[str, str]] = ()
    ) -> None:
        self.send_json(
            status, {"message": message, "errors": [{"field": f, "message": m} for f, m in errors]}
        )

    def authorized(self) -> bool:
        if self.fake.token is None and self.fake.basic is None:
            return True
        header = self.headers.get("Authorization", "")
        if self.fake.token is not None and header == f"Token {self.fake.token}":
            return True
        if self.fake.basic is not None and header.startswith("Basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            return (user, password) == self.fake.basic
        return False

    def record(self) -> tuple[str, dict[str, str], Any]:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        body: Any = None
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            body = json.loads(self.rfile.read(length))
        with self.fake.lock:
            self.fake.requests.append(
                Recorded(self.command, parts.path, query, dict(self.headers.items()), body)
            )
        return parts.path, query, body

    # -- routes -------------------------------------------------------------------------

    def do_GET(self) -> None:
        path, query, _ = self.record()
        if not self.authorized():
            return self.send_error_body(401, "Authentication credentials were not provided.")
        segments = [unquote(s) for s in path.split("/")]
        if ("GET", path) in self.fake.canned:
            return self.send_json(*self.fake.canned["GET", path])
        if path == "/api/v1/queues":
            queues = sorted(self.fake.queues.values(), key=lambda q: q["name"])
            terms = [t for t in query.get("selector", "").split(",") if t]
            for term in terms:
                key, sep, value = term.partition("=")
                queues = [
                    q
                    for q in queues
                    if key in q["labels"] and (not sep or q["labels"][key] == value)
                ]
            if query.get("onlyCordoned") == "true":
                queues = [q for q in queues if q["cordoned"]]
            return self.send_json(200, queues)
        if len(segments) == 5 and segments[:4] == ["", "api", "v1", "queues"]:
            queue = self.fake.queues.get(segments[4])
            if queue is None:
                return self.send_error_body(404, f"queue {segments[4]} does not exist")
            return self.send_json(200, queue)
        if path == "/api/v1/retry-policies":
            policies = sorted(self.fake.policies.values(), key=lambda p: p["name"])
            return self.send_json(200, policies)
        if len(segments) == 5 and segments[:4] == ["", "api", "v1", "retry-policies"]:
            policy = self.fake.policies.get(segments[4])
            if policy is None:
                return self.send_error_body(404, f"retry policy {segments[4]!r} does not exist")
            return self.send_json(200, policy)
        if len(segments) == 5 and segments[:4] == ["", "api", "v1", "jobs"]:
            job = self.fake.jobs.get(segments[4])
            if job is None:
                return self.send_error_body(404, f"job {segments[4]} does not exist")
            return self.send_json(200, job)
        if (
            len(segments) == 6
            and segments[:4] == ["", "api", "v1", "runs"]
            and segments[5] == "log"
        ):
            entry = self.fake.run_logs.get(segments[4])
            if entry is None:
                return self.send_error_body(404, f"run {segments[4]} does not exist")
            return self.send_json(200, entry)
        if (
            len(segments) == 7
            and segments[:4] == ["", "api", "v1", "job-sets"]
            and segments[6] == "events"
        ):
            return self.stream_events(query)
        return self.send_error_body(404, f"no route for {path}")

    def do_POST(self) -> None:
        path, _, body = self.record()
        if not self.authorized():
            return self.send_error_body(401, "Authentication credentials were not provided.")
        if ("POST", path) in self.fake.canned:
            return self.send_json(*self.fake.canned["POST", path])
        if path == "/api/v1/queues":
            name = body.get("name")
            if name in self.fake.queues:
                return self.send_error_body(
                    409, f"queue {name} already exists", [("name", "must be unique")]
                )
            if not name or name != name.lower():
                return self.send_error_body(
                    400, "the queue is not valid", [("name", "must be a lower-case RFC 1123 label")]
                )
            return self.send_json(201, self.fake.add_queue(**body))
        if path == "/api/v1/retry-policies":
            errors = policy_errors(body)
            if errors:
                return self.send_error_body(400, "the retry policy is not valid", errors)
            if body["name"] in self.fake.policies:
                return self.send_error_body(
                    409, f"retry policy {body['name']!r} already exists; use update to change it"
                )
            return self.send_json(201, self.fake.store_policy(body, version=1))
        if path in ("/api/v1/jobs/reprioritize", "/api/v1/jobs/cancel"):
            ids = [
                j["id"]
                for j in self.fake.jobs.values()
                if j.get("queue") == body.get("queue")
                and j.get("jobSetId") == body.get("jobSetId")
                and ("jobIds" not in body or j["id"] in body["jobIds"])
            ]
            return self.send_json(200, {"jobIds": ids})
        segments = [unquote(s) for s in path.split("/")]
        if (
            len(segments) == 6
            and segments[:4] == ["", "api", "v1", "jobs"]
            and segments[5] == "preempt"
        ):
            job = self.fake.jobs.get(segments[4])
            if job is None:
                return self.send_error_body(404, f"job {segments[4]} does not exist")
            if job.get("state") != "running":
                return self.send_error_body(
                    409, f"job {segments[4]!r} is {job.get('state')}, not running"
                )
            return self.send_json(202, {"jobId": segments[4], "runIds": ["01jrun0009"]})
        if (
            len(segments) == 6
            and segments[:4] == ["", "api", "v1", "queues"]
            and segments[5] in ("cordon", "uncordon")
        ):
            queue = self.fake.queues.get(segments[4])
            if queue is None:
                return self.send_error_body(404, f"queue {segments[4]} does not exist")
            queue["cordoned"] = segments[5] == "cordon"
            return self.send_json(200, queue)
        if path == "/api/v1/jobs":
            if body["queue"] not in self.fake.queues:
                return self.send_error_body(404, f"queue {body['queue']} does not exist")
            errors = [
                (f"jobs[{i}].podSpec.containers", "at least one container is required")
                for i, job in enumerate(body["jobs"])
                if not job["podSpec"].get("containers")
            ]
            if errors:
                return self.send_error_body(400, "the job file is not valid", errors)
            ids = []
            for _ in body["jobs"]:
                self.fake.next_job += 1
                ids.append(f"01jfake{self.fake.next_job:04d}")
            return self.send_json(
                201, {"jobIds": ids, "queue": body["queue"], "jobSetId": body["jobSetId"]}
            )
        return self.send_error_body(404, f"no route for {path}")

    def do_PATCH(self) -> None:
        path, _, body = self.record()
        if not self.authorized():
            return self.send_error_body(401, "Authentication credentials were not provided.")
        segments = [unquote(s) for s in path.split("/")]
        if len(segments) == 5 and segments[:4] == ["", "api", "v1", "queues"]:
            queue = self.fake.queues.get(segments[4])
            if queue is None:
                return self.send_error_body(404, f"queue {segments[4]} does not exist")
            errors = [
                (f"retryPolicies[{i}]", f"retry policy {name!r} does not exist")
                for i, name in enumerate(body.get("retryPolicies") or [])
                if name not in self.fake.policies
            ]
            if body.get("priorityFactor", 1.0) < 1.0:
                errors.append(("priorityFactor", "must be at least 1.0"))
            if errors:
                return self.send_error_body(400, "the queue is not valid", errors)
            queue.update(body)
            return self.send_json(200, queue)
        return self.send_error_body(404, f"no route for {path}")

    def do_PUT(self) -> None:
        path, _, body = self.record()
        if not self.authorized():
            return self.send_error_body(401, "Authentication credentials were not provided.")
        segments = [unquote(s) for s in path.split("/")]
        if len(segments) == 5 and segments[:4] == ["", "api", "v1", "retry-policies"]:
            name = segments[4]
            current = self.fake.policies.get(name)
            if current is None:
                return self.send_error_body(404, f"retry policy {name!r} does not exist")
            errors = policy_errors(body)
            if not errors and body["name"] != name:
                errors = [
                    ("name", f"the body names {body['name']!r} but the request is for {name!r}")
                ]
            if errors:
                return self.send_error_body(400, "the retry policy is not valid", errors)
            return self.send_json(200, self.fake.store_policy(body, current["version"] + 1))
        return self.send_error_body(404, f"no route for {path}")

    def do_DELETE(self) -> None:
        path, _, _ = self.record()
        if not self.authorized():
            return self.send_error_body(401, "Authentication credentials were not provided.")
        if ("DELETE", path) in self.fake.canned:
            return self.send_json(*self.fake.canned["DELETE", path])
        segments = [unquote(s) for s in path.split("/")]
        if len(segments) == 5 and segments[:4] == ["", "api", "v1", "queues"]:
            name = segments[4]
            if name not in self.fake.queues:
                return self.send_error_body(404, f"queue {name} does not exist")
            if name in self.fake.busy_queues:
                return self.send_error_body(
                    409, f"queue {name} has unfinished jobs; cancel them or wait"
                )
            del self.fake.queues[name]
            return self.send_empty()
        if len(segments) == 5 and segments[:4] == ["", "api", "v1", "retry-policies"]:
            name = segments[4]
            if name not in self.fake.policies:
                return self.send_error_body(404, f"retry policy {name!r} does not exist")
            users = sorted(
                q["name"] for q in self.fake.queues.values() if name in q["retryPolicies"]
            )
            if users:
                return self.send_error_body(
                    409,
                    f"retry policy {name!r} is used by queue(s) {', '.join(users)}; detach it first",
                )
            del self.fake.policies[name]
            return self.send_empty()
        return self.send_error_body(404, f"no route for {path}")

    def stream_events(self, query: dict[str, str]) -> None:
        with self.fake.lock:
            plan = self.fake.stream_plans.pop(0) if self.fake.stream_plans else StreamPlan()
        start = -1 if plan.ignore_from else int(query.get("from", -1))
        pending = [e for e in self.fake.events if e["id"] > start]
        if plan.count is not None:
            pending, rest = pending[: plan.count], pending[plan.count :]
        else:
            rest = []
        chunked = plan.chunked and plan.drop != "close"
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()

        def write(data: bytes) -> None:
            if chunked:
                data = b"%x\r\n%s\r\n" % (len(data), data)
            self.wfile.write(data)
            self.wfile.flush()

        try:
            for line in self.fake.raw_prefix:
                write(line)
            for i, item in enumerate(pending):
                if plan.pause_after is not None and i == plan.pause_after:
                    time.sleep(0.5)
                last = plan.unterminated and i == len(pending) - 1
                write(json.dumps(item).encode() + (b"" if last else b"\n"))
            if plan.drop is None:
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    write(b"\n")
                    time.sleep(0.05)
                if chunked:
                    self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True
                return
            half = json.dumps(rest[0]).encode()[:20] if plan.partial and rest else b""
            if plan.drop == "abort":
                # A chunk that promises more bytes than ever come.
                self.wfile.write(b"%x\r\n%s" % (len(half) + 50, half))
            elif half:
                self.wfile.write(half)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
