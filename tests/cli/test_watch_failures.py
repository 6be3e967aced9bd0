"""``armadactl watch`` explains a failure: category, hint, termination message, and what the
scheduler decided (``retry 2 of 3 (rule 4)``, or why not).

The events are the real ones: a fake-backend executor runs the jobs, the scheduler decides
with a real retry policy, and the lines are made from the stored events as the stream
serves them (``services.events.event_as_dict``)."""

from __future__ import annotations

import copy
from datetime import UTC

import pytest

from armada.cli.main import main
from armada.cli.watch import decision_text, format_event, shorten
from armada.core.config import parse_config
from armada.models import Event
from armada.services.events import event_as_dict
from armada.services.policies import policy_create
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from tests.cli.fake_armada import FakeArmada
from tests.conftest import at
from tests.executor_api import ApiAgent, api_agent
from tests.services.decision_world import CATEGORIES, POLICY, drive, submit

pytestmark = pytest.mark.django_db

OOM_HINT = "The container ran out of memory; the retry asks for more"
USER_HINT = "Check the job's arguments"
PREFIX = r"\d\d:\d\d:\d\d  failed          "


@pytest.fixture(autouse=True)
def fresh_policy_cache():
    policy_cache.__init__()
    yield
    policy_cache.__init__()


@pytest.fixture
def agent(settings, queue, admin_user) -> ApiAgent:
    """One fake executor with the spec's categories (with hints), and queue ``demo`` under
    policy ``training`` with a retry limit of 3 (rule 1 fails user errors, rule 4 retries
    OOMs with memory x1.5)."""
    categories = copy.deepcopy(CATEGORIES)
    for category in categories["categories"]:
        hint = {"oom": OOM_HINT, "user-error": USER_HINT}.get(category["name"])
        if hint:
            category["rules"][0]["hint"] = hint
    settings.ARMADA = parse_config(
        {
            "scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": 10}},
            "executors": [
                {
                    "id": "test",
                    "nodes": [
                        {"name": "n", "count": 2, "allocatable": {"cpu": "8", "memory": "32Gi"}}
                    ],
                    "errorCategories": categories,
                }
            ],
        }
    )
    policy_create(actor=admin_user, data={**POLICY, "retryLimit": 3}, now=at(0))
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["training"]}, now=at(0))
    executor = api_agent(settings.ARMADA.executors[0])
    executor.tick(at(0))
    return executor


def failed_lines(job_id: str) -> list[str]:
    """The watch line of each ``failed`` event of the job, as the stream serves it."""
    events = Event.objects.filter(job_id=job_id, type="failed").order_by("id")
    return [format_event(event_as_dict(e), UTC) for e in events]


def test_an_oom_is_retried_and_each_line_says_which_retry_of_how_many(agent, owner):
    job_id = submit(owner, {"condition": "OOMKilled", "terminationMessage": "out of memory"})
    drive(agent, range(1, 8))
    lines = failed_lines(job_id)
    assert len(lines) >= 3, lines
    expected = (
        f"{job_id}  exitCode=137  reason=OOMKilled  category=oom  retryable=true"
        f'  [retry {{n}} of 3 (rule 4)]  hint="{OOM_HINT}"  message="out of memory"'
    )
    assert [line[10:] for line in lines[:3]] == [
        "failed          " + expected.format(n=n) for n in (1, 2, 3)
    ]


def test_the_retry_limit_reached_says_so(agent, owner):
    job_id = submit(owner, {"condition": "OOMKilled"})
    drive(agent, range(1, 20))
    lines = failed_lines(job_id)
    assert len(lines) == 4, lines  # three retries, then the limit
    assert lines[-1].endswith(
        "category=oom  retryable=false  [not retried: retry limit 3 reached]"
        f'  hint="{OOM_HINT}"  message="container main exited with code 137"'
    ), lines[-1]


def test_a_fail_rule_names_the_rule_from_one(agent, owner):
    message = "usage: train [--epochs N]\nerror: unknown flag --epoch"
    job_id = submit(owner, {"exitCode": "1", "terminationMessage": message})
    drive(agent, range(1, 5))
    [line] = failed_lines(job_id)
    assert line[10:] == (
        f"failed          {job_id}  exitCode=1  reason=Error  category=user-error"
        "  retryable=false  [not retried: rule 1 (Fail on user-error)]"
        f'  hint="{USER_HINT}"  message="…error: unknown flag --epoch"'
    )


def test_a_fail_fast_job_says_fail_fast(agent, owner):
    job_id = submit(
        owner, {"condition": "OOMKilled"}, extra_annotations={"armadaproject.io/failFast": "true"}
    )
    drive(agent, range(1, 5))
    [line] = failed_lines(job_id)
    assert "  retryable=false  [not retried: failFast]  " in line, line


def test_armadactl_watch_prints_the_decision_from_the_stream(
    agent, owner, fake_armada: FakeArmada, capsys: pytest.CaptureFixture[str]
):
    """The whole way: the stored events served on a socket, read and printed by the CLI."""
    job_id = submit(owner, {"exitCode": "1"})
    drive(agent, range(1, 5))
    fake_armada.events = [
        event_as_dict(e) for e in Event.objects.filter(job_id=job_id).order_by("id")
    ]
    code = main(["watch", "demo", "set-1", "--exit-if-inactive", "--utc", "--url", fake_armada.url])
    out = capsys.readouterr().out
    assert code == 0
    [failed] = [line for line in out.splitlines() if "  failed  " in line]
    assert "[not retried: rule 1 (Fail on user-error)]" in failed
    assert f'hint="{USER_HINT}"' in failed
    assert out.splitlines()[-1] == "[1 job] failed: 1"


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({}, ""),  # a preemption or a returned lease: nobody decided
        (
            {"decision": "retry", "decisionReason": "retry 1 of 2 (rule 3)"},
            "retry 1 of 2 (rule 3)",  # an event from before the budget keys: its reason
        ),
        (
            {"decision": "retry", "retriesUsed": 0, "retryLimit": 5, "rule": None},
            "retry 1 of 5 (defaultAction)",
        ),
        (
            {
                "decision": "retry",
                "retriesUsed": 1,
                "retryLimit": 5,
                "rule": 2,
                "retryDelaySeconds": 90,
            },
            "retry 2 of 5 (rule 2), after a retry delay of 90s",
        ),
        (
            {"decision": "fail_global_limit", "globalCap": 0},
            "not retried: global retry limit 0 reached",
        ),
        ({"decision": "fail_default"}, "not retried: no rule matched (defaultAction Fail)"),
        (
            {
                "decision": "retry_unschedulable",
                "decisionReason": "Retry policy: the retried job fits no node (too big)",
            },
            "not retried: the retried job fits no node (too big)",
        ),
        (
            {
                "decision": "not_retried",
                "failFast": False,
                "decisionReason": "No retry policy for this queue; legacy retry behaviour applies",
            },
            "not retried: No retry policy for this queue; legacy retry behaviour applies",
        ),
        (
            {"decision": "gang_skipped"},
            "not retried: gang job (retry policies do not apply to gangs)",
        ),
    ],
)
def test_decision_texts(fields: dict, text: str) -> None:
    assert decision_text({"type": "failed", "failureCategory": "oom", **fields}) == text


@pytest.mark.parametrize(
    ("message", "short"),
    [
        ("", ""),
        ("  disk   full \n", "disk full"),
        ("Traceback (most recent call last):\n  File x\nValueError: bad\n\n", "…ValueError: bad"),
        ("x" * 150, "x" * 99 + "…"),
    ],
)
def test_messages_are_shortened_to_one_line(message: str, short: str) -> None:
    assert shorten(message) == short
