"""Every input path of the site answers hostile input with 400 or 404 and a message, never a
5xx: path parameters, query parameters and Lookout's forms, walked as an admin (so that no
permission check hides a failure) on the suite's database (run it on PostgreSQL: SQLite
stores the NUL character, PostgreSQL refuses it).

The routes come from the URL configuration itself, so a page added later is walked too.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml
from asgiref.sync import async_to_sync
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from armada.models import Job, Queue, RetryPolicy
from armada.services.policies import policy_create
from armada.services.submit import job_submit
from tests.conftest import T0, job_file
from tests.lookout.builders import make_run

pytestmark = pytest.mark.django_db
# Event streams read in a thread of their own: for the walks that reach them, the data must be
# committed to be seen there.
committed = pytest.mark.django_db(transaction=True)


def _cursor(value: object) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# Query values, already percent-encoded (so that bytes that are not UTF-8 can be sent).
QUERY_VALUES = {
    "nul": "%00",
    "nul-inside": "a%00b",
    "surrogate-utf8": "%ED%A0%80",
    "invalid-utf8": "%FF%FEx",
    "long-text": "x" * 100_000,
    "long-digits": "9" * 100_000,
    "huge": "9" * 40,
    "negative": "-1",
    "huge-negative": "-" + "9" * 40,
    "float-overflow": "1e309",
    "nan": "NaN",
    "not-a-number": "abc",
    "superscript-digit": "%C2%B2",
    "arabic-digit": "%D9%A3",
    "unknown-enum": "bogus",
}
CURSORS = {
    "cursor-junk": "!!!",
    "cursor-not-json": _cursor("x")[:-2] + "@@",
    "cursor-huge-int": _cursor([10**400, "01J0"]),
    "cursor-huge-negative": _cursor([-(10**30), "01J0"]),
    "cursor-bad-date": _cursor(["9999-99-99", "01J0"]),
    "cursor-null": _cursor([None, None]),
    "cursor-nul": _cursor(["\x00", "\x00"]),
    "cursor-surrogate": base64.urlsafe_b64encode(b'["\\ud800","\\udfff"]').decode(),
    "cursor-long": _cursor(["a" * 50_000, "b" * 50_000]),
}
CURSOR_PARAMS = {"after", "before", "from"}

# Every query parameter some page reads; a route not listed below is given all of them.
LOOKOUT_TABLE = [
    "job_id",
    "queue",
    "job_set",
    "job_set_exact",
    "state",
    "priority_class",
    "owner",
    "node",
    "cluster",
    "category",
    "subcategory",
    "retryable",
    "decision",
    "sort",
    "dir",
    "after",
    "before",
    "group",
    "annotations",
    "refresh",
    "fragment",
]
TESTER = [
    "test",
    "run",
    "category",
    "subcategory",
    "executor",
    "exit_code",
    "condition",
    "termination_message",
    "pod_error",
    "retries_used",
    "gang_cardinality",
    "fail_fast",
    "lease_expired",
]
API_LIST = ["queue", "jobSetId", "state", "after", "limit", "format"]
QUERY_PARAMS: dict[str, list[str]] = {
    "lookout:jobs": LOOKOUT_TABLE,
    "lookout:job": ["events"],
    "lookout:queues": ["pool"],
    "lookout:queue": ["pool"],
    "lookout:decision-metrics": ["period"],
    "lookout:policy": ["diff", *TESTER],
    "job-submit": API_LIST,
    "queue-list": ["dryRun", "format"],
    "retry-policy-list": ["dryRun", "format"],
    "job-set-events": ["from", "watch"],
    "schema": ["format", "lang"],
}
ALL_PARAMS = sorted({name for names in QUERY_PARAMS.values() for name in names})

# Path values, as they appear in the URL.
PATH_VALUES = {
    "nul": "%00",
    "nul-inside": "de%00mo",
    "surrogate-utf8": "%ED%A0%80",
    "invalid-utf8": "%FF",
    "long": "x" * 100_000,
    "space": "a%20b",
}
ADMIN_PATH_VALUES = {k: PATH_VALUES[k] for k in ("nul", "invalid-utf8", "long")}

# Form fields of Lookout's POST forms (the API's bodies are walked by its own tests).
FORM_VALUES = {
    "nul": "\x00",
    "nul-inside": "a\x00b",
    "long-text": "x" * 100_000,
    "long-digits": "9" * 100_000,
    "huge": "9" * 40,
    "negative": "-5",
    "superscript-digit": "\u00b2",
    "unknown": "bogus",
}
# label -> (document, the field and line of its first problem, a fragment of the message)
POLICY_DOCUMENTS: dict[str, tuple[str, str, int | None, str]] = {
    "deep": ("a: " + "[" * 5000 + "]" * 5000 + "\n", "", None, "nested too deeply"),
    "deep-mapping": (
        "".join("  " * i + "k:\n" for i in range(200)),
        ".".join(["k"] * 64),
        64,
        "nested more than 64 levels deep",
    ),
    "alias-bomb": (
        "\n".join(
            ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
            + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
        ),
        "",
        None,
        "anchors and aliases",
    ),
    "huge-int": ("name: ml\nretryLimit: " + "9" * 100_000 + "\n", "", None, "4300 digits"),
    "nul-escape": ('name: "m\\0l"\nretryLimit: 1\n', "name", 1, "NUL"),
    "nul-raw": ("name: ml\nretryLimit: 1\x00\n", "", 2, "not valid YAML"),
    "surrogate-escape": ('name: "\\ud800"\n', "name", 1, "lone surrogate"),
    "nan": ("name: ml\nretryLimit: .nan\n", "retryLimit", 2, "finite number"),
    "date": ("name: ml\nretryLimit: 2024-01-01\n", "retryLimit", 2, "not date"),
    "binary": ("name: !!binary aGVsbG8=\n", "name", 1, "not bytes"),
    "set": ("rules: !!set {a, b}\n", "rules", 1, "not set"),
    "long": ("name: " + "x" * 100_000 + "\n", "name", 1, "RFC 1123"),
}
FORM_FIELDS: dict[str, dict[str, str]] = {
    # field -> a sensible value for the other fields
    "lookout:job-cancel": {"reason": "r"},
    "lookout:job-reprioritize": {"priority": "1"},
    "lookout:job-preempt": {"reason": "r"},
    "lookout:queue-cordon": {"cordon": "1", "next": "/queues/"},
    "lookout:policy-new": {"document": "", "base_version": ""},
    "lookout:policy-edit": {"document": "", "base_version": "1"},
    "lookout:policy-validate": {"document": "", "name": "ml"},
    "lookout:policy-attach": {"queue": "demo", "first": "on"},
    "lookout:policy-detach": {"queue": "demo"},
}


@dataclass(frozen=True)
class Route:
    route: str  # as in the URL configuration: ``jobs/<str:job_id>``
    name: str
    params: tuple[str, ...]

    @property
    def admin(self) -> bool:
        return self.route.startswith("admin/")

    def url(self, values: dict[str, str]) -> str:
        """The route with ``values`` put in (a parameter not given is ``1``)."""
        return "/" + re.sub(
            r"<(?:\w+:)?(\w+)>", lambda m: values.get(m.group(1), "1"), self.route.lstrip("^")
        ).rstrip("$")


def _routes(patterns, prefix: str = "", namespace: str = "") -> Iterator[Route]:
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = f"{p.namespace}:" if p.namespace else namespace
            yield from _routes(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            route = prefix + str(p.pattern)
            if "(?P<" in route or "\\" in route:
                continue  # regular-expression routes (static files in debug): none here
            params = tuple(re.findall(r"<(?:\w+:)?(\w+)>", route))
            yield Route(route, f"{namespace}{p.name}", params)


ROUTES = list(_routes(get_resolver().url_patterns))


@dataclass
class World:
    client: Client
    valid: dict[str, str]  # a valid value of each path parameter name, per route kind


@pytest.fixture
def world(admin_user, queue, owner) -> World:
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    make_run("01RUN0000000000000000000RN", job_id, state="failed", failure_category="oom")
    policy_create(
        actor=admin_user,
        data={"name": "ml", "retryLimit": 1, "defaultAction": "Fail", "rules": []},
        now=T0,
    )
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    return World(
        client=client,
        valid={
            "job_id": job_id,
            "run_id": "01RUN0000000000000000000RN",
            "queue": "demo",
            "job_set": "set-1",
            "executor_id": "nowhere",
            "app_label": "armada",
            "object_id": job_id,
            "content_type_id": "1",
            "id": "1",
        },
    )


def _valid_values(route: Route, world: World) -> dict[str, str]:
    values = dict(world.valid)
    values["name"] = "ml" if "polic" in route.route else "demo"
    return values


def _body(response) -> bytes:
    """The whole body, streamed or not (an async view streams from an async iterator)."""
    if not response.streaming:
        return response.content
    if response.is_async:

        async def read() -> bytes:
            return b"".join([chunk async for chunk in response.streaming_content])

        return async_to_sync(read)()
    return b"".join(response.streaming_content)


def _problem(response, what: str) -> str | None:
    """None when the answer is fine: no 5xx, and a refusal carries a message a person can
    act on; else what is wrong with it."""
    status = response.status_code
    if status >= 500:
        return f"{what}: {status}"
    if status not in (400, 404):
        return None
    text = _body(response).decode("utf-8", "replace")
    content_type = response.get("Content-Type", "")
    if content_type.startswith("text/html"):
        if 'class="problem"' not in text:
            return f"{what}: {status} page without a message"
        return None
    # JSON, or the schema's YAML: the API's error shape either way.
    data = json.loads(text) if "json" in content_type else yaml.safe_load(text)
    if not isinstance(data, dict) or not data.get("message"):
        return f"{what}: {status} without a message: {text[:200]!r}"
    return None


class Answers:
    """Collects what is wrong over a whole walk, so that one run shows every failure."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def check(self, response, what: str) -> None:
        problem = _problem(response, what)
        if problem is not None:
            self.problems.append(problem)
        elif response.streaming:
            _body(response)

    def assert_none(self) -> None:
        assert not self.problems, f"{len(self.problems)} bad answers:\n" + "\n".join(
            self.problems[:40]
        )


@committed
@pytest.mark.parametrize("label", sorted(PATH_VALUES))
def test_hostile_path_parameters(world, label):
    """Each path parameter of each route, in turn, with a value no id can have; every method
    that changes something is tried too, and nothing changes."""
    answers = Answers()
    for route in ROUTES:
        if not route.params or (route.admin and label not in ADMIN_PATH_VALUES):
            continue
        methods = ("get",) if route.admin else ("get", "post", "put", "patch", "delete")
        for param in route.params:
            values = _valid_values(route, world)
            values[param] = PATH_VALUES[label]
            url = route.url(values)
            for method in methods:
                response = getattr(world.client, method)(url)
                answers.check(response, f"{method.upper()} {url[:120]} ({param}={label})")
    answers.assert_none()
    assert Job.objects.filter(state="queued").count() == 1
    assert Queue.objects.filter(name="demo", cordoned=False).exists()
    assert RetryPolicy.objects.filter(name="ml", version=1).exists()


def _query_routes() -> Iterator[Route]:
    for route in ROUTES:
        if route.admin:
            continue
        yield route


@committed
@pytest.mark.parametrize("label", sorted(QUERY_VALUES) + sorted(CURSORS))
def test_hostile_query_parameters(world, label):
    """Each query parameter a page is known to read, one at a time, with a hostile value
    (cursor junk only for the cursors); every other route gets every known parameter at
    once, so that a page added later that reads one of them is walked too."""
    cursor_only = label in CURSORS
    value = CURSORS[label] if cursor_only else QUERY_VALUES[label]
    answers = Answers()
    for route in _query_routes():
        url = route.url(_valid_values(route, world))
        names = QUERY_PARAMS.get(route.name)
        if names is None:
            queries = ["&".join(f"{name}={value}" for name in ALL_PARAMS)]
        else:
            queries = [
                f"{name}={value}" + ("&test=1" if name in TESTER else "")
                for name in names
                if not cursor_only or name in CURSOR_PARAMS
            ]
        for query in queries:
            response = world.client.get(url, QUERY_STRING=query)
            answers.check(response, f"GET {url}?{query[:80]}")
    answers.assert_none()


ADMIN_QUERY = ["q", "o", "p", "e", "_changelist_filters", "state__exact", "cordoned__exact"]


def test_hostile_admin_queries(world):
    """The admin's own lists read query parameters too (search, order, page, filters)."""
    answers = Answers()
    for route in ROUTES:
        if not (route.admin and route.name.endswith("_changelist")):
            continue
        url = route.url(_valid_values(route, world))
        for name in ADMIN_QUERY:
            for label in ("nul", "surrogate-utf8", "long-text"):
                query = f"{name}={QUERY_VALUES[label]}"
                response = world.client.get(url, QUERY_STRING=query)
                answers.check(response, f"GET {url}?{query[:80]}")
    answers.assert_none()


def test_hostile_form_fields(world):
    """Each field of each Lookout form, in turn, with a hostile value."""
    by_name = {r.name: r for r in ROUTES}
    answers = Answers()
    for name, defaults in FORM_FIELDS.items():
        route = by_name[name]
        url = route.url(_valid_values(route, world))
        for field in defaults:
            for label, value in FORM_VALUES.items():
                data = {**defaults, field: value}
                response = world.client.post(url, data)
                answers.check(response, f"POST {url} {field}={label}")
    answers.assert_none()


@pytest.mark.parametrize("label", sorted(POLICY_DOCUMENTS))
@pytest.mark.parametrize("page", ["lookout:policy-new", "lookout:policy-edit"])
def test_the_policy_editor_refuses_what_the_api_refuses(world, page, label):
    """The editor runs the API's body checks: each document is refused as a form error by
    field and line (200, the editor shown again), as its Validate button says too, and
    nothing is saved."""
    route = next(r for r in ROUTES if r.name == page)
    url = route.url(_valid_values(route, world))
    document, field, line, fragment = POLICY_DOCUMENTS[label]
    response = world.client.post(url, {"document": document, "base_version": "1"})
    assert response.status_code == 200, (label, response.status_code)
    first = response.context["errors"][0]
    assert (first.field, first.line) == (field, line), first
    assert fragment in first.message
    assert RetryPolicy.objects.count() == 1
    assert RetryPolicy.objects.get().version == 1
    validate = world.client.post("/policies/validate", {"document": document})
    assert validate.status_code == 200
    assert validate.json()["valid"] is False
    assert validate.json()["errors"][0] == first.as_json()


def test_api_bodies_with_lone_surrogates_are_refused_naming_the_field(world):
    """JSON can spell a lone surrogate (``"\\ud800"``); neither PostgreSQL's text nor its
    jsonb can hold one."""
    client = world.client
    bodies = [
        ("/api/v1/queues", {"name": "q", "labels": {"team": "\ud800"}}, "labels.team"),
        ("/api/v1/jobs", job_file(job_set="set-\udfff"), "jobSetId"),
        (
            "/api/v1/retry-policies",
            {"name": "p", "retryLimit": 1, "defaultAction": "Fail", "rules": [], "x\ud800": 1},
            "x\\ud800",  # named with the surrogate written out: it cannot be sent as UTF-8
        ),
    ]
    for path, body, field in bodies:
        text = json.dumps(body)  # ensure_ascii: the surrogate travels as \\ud800
        response = client.post(path, text, content_type="application/json")
        assert response.status_code == 400, (path, response.content[:300])
        error = response.json()
        assert [e["field"] for e in error["errors"]] == [field]
        assert "surrogate" in error["errors"][0]["message"]
    assert not Queue.objects.filter(name="q").exists()
    assert Job.objects.count() == 1


def test_path_refusals_name_the_parameter(world):
    """The API names the path parameter (400); a Lookout page says there is no such thing
    (404)."""
    response = world.client.get("/api/v1/jobs/01J%00", QUERY_STRING="")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "job_id"
    page = world.client.get("/queues/%00/")
    assert page.status_code == 404
    assert b"queue" in page.content and b'class="problem"' in page.content


def test_query_refusals_name_the_parameter(world):
    response = world.client.get("/api/v1/jobs", QUERY_STRING="queue=%00")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "queue", "message": "must not contain the NUL character (\\u0000)"}
    ]
    page = world.client.get("/", QUERY_STRING="owner=a%00b")
    assert page.status_code == 400
    assert b"owner" in page.content
    bad = world.client.get("/api/v1/jobs", QUERY_STRING="queue=%FF")
    assert bad.status_code == 400
    assert "UTF-8" in bad.json()["message"]
