"""services.backtest over recorded histories: what is read, what flips, what it costs, who may
ask, and that nothing is written.

The history (:func:`record_history`) is written straight into the tables, with the decision
trails the scheduler writes, so that each case is exact: a job whose policy changed version
between its failures, a failure decided with the engine off (``not_retried``), a queue the
owner may not view. ``test_backtest_of_the_policy_in_force_changes_nothing`` makes its history
with the real scheduler instead.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from django.apps import apps
from django.urls import reverse

from armada.core.errors import ValidationFailed
from armada.models import Job, Queue, Run
from armada.services.backtest import backtest
from armada.services.errors import NotFound, PermissionDenied
from armada.services.policies import policy_create, policy_update, policy_validate
from armada.services.queues import queue_create, queue_update
from tests.conftest import T0
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db

GI = 2**30 * 1000
NOW = T0 + timedelta(days=3)
SINCE = NOW - timedelta(days=1)
REQUESTS = {"cpu": 2000, "memory": 4 * GI}
HALF_HOUR = timedelta(minutes=30)

POLICY_V1 = {
    "name": "ml",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {"action": "Retry", "onCategory": "flaky"},
        {
            "action": "Retry",
            "onCategory": "oom",
            "mutate": {"resources": {"memory": {"factor": 1.5}}},
        },
    ],
}
# Version 2 fails flaky failures (rule 1), the rest moves down.
POLICY_V2 = {**POLICY_V1, "rules": [{"action": "Fail", "onCategory": "flaky"}, *POLICY_V1["rules"]]}
# The draft under test: OOMs fail; flaky failures retry (rule 3).
STRICTER = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "ml-strict",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {"action": "Fail", "onCategory": "oom"},
        {"action": "Retry", "onCategory": "flaky"},
    ],
}


def trail(label: str, used: int, rule: int | None = None, version: int = 1, **extra) -> dict:
    """A decision trail as ``services.decisions`` writes it."""
    return {
        "decision": label,
        "retry": label == "retry",
        "policy": "ml",
        "policyVersion": version,
        "ruleIndex": rule,
        "retriesUsed": used,
        "retryLimit": 3,
        "mutation": {},
        "reason": extra.pop("reason", f"recorded {label}"),
        **extra,
    }


def failed(run_id: str, job_id: str, start, category: str, decision: dict, **fields):
    """A decided failed run of half an hour starting at ``start``."""
    values = {
        "state": "failed",
        "requests": REQUESTS,
        "leased_at": start,
        "finished_at": start + HALF_HOUR,
        "failure_category": category,
        "decision": decision,
        "decided_at": start + HALF_HOUR,
        "retryable": decision["decision"] == "retry",
        "exit_code": 1,
    }
    values.update(fields)
    return make_run(run_id, job_id, **values)


def succeeded(run_id: str, job_id: str, start, hours: float = 1.0):
    return make_run(
        run_id,
        job_id,
        state="succeeded",
        requests=REQUESTS,
        leased_at=start,
        finished_at=start + timedelta(hours=hours),
    )


@pytest.fixture
def history(admin_user, queue):
    """Policy ``ml`` (versions 1 and 2) on queue ``demo`` (owned by ``olive``) and on queue
    ``other`` (which ``olive`` may not view), and their recorded failures; see the module
    docstring of each job below."""
    policy_create(actor=admin_user, data=POLICY_V1, now=T0)
    policy_update(actor=admin_user, name="ml", data=POLICY_V2, now=T0)
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["ml"]}, now=T0)
    queue_create(actor=admin_user, data={"name": "other", "retryPolicies": ["ml"]}, now=T0)
    t = SINCE + timedelta(hours=1)
    # OOM retried twice by rule 3, then succeeded (v1).
    make_job("job-oom", state="succeeded", requests=REQUESTS)
    failed("r-oom-1", "job-oom", t, "oom", trail("retry", 0, 2))
    failed("r-oom-2", "job-oom", t + timedelta(hours=1), "oom", trail("retry", 1, 2))
    succeeded("r-oom-3", "job-oom", t + timedelta(hours=2))
    # A user error failed by rule 1.
    make_job("job-usr", state="failed")
    failed("r-usr-1", "job-usr", t, "user-error", trail("fail_rule", 0, 0))
    # Decided with the engine off: not retried, no policy.
    make_job("job-off", state="failed", job_set="set-2")
    failed(
        "r-off-1",
        "job-off",
        t,
        "flaky",
        {
            **trail("not_retried", 0),
            "policy": "",
            "policyVersion": 0,
            "reason": "Retry policies are disabled; legacy retry behaviour applies",
        },
    )
    # Version 1 retried a flaky failure (rule 2); version 2, saved meanwhile, failed the next
    # one (rule 1).
    make_job("job-ver", state="failed")
    failed("r-ver-1", "job-ver", t, "flaky", trail("retry", 0, 1, version=1))
    failed("r-ver-2", "job-ver", t + timedelta(hours=1), "flaky", trail("fail_rule", 1, 0, 2))
    # A flaky failure retried, then success: the yield of flaky retries is 1 in 2.
    make_job("job-flaky", state="succeeded")
    failed("r-flaky-1", "job-flaky", t, "flaky", trail("retry", 0, 1))
    succeeded("r-flaky-2", "job-flaky", t + timedelta(hours=1))
    # In queue other: an OOM retried, then success.
    make_job("job-far", queue="other", state="succeeded")
    failed("r-far-1", "job-far", t, "oom", trail("retry", 0, 2))
    succeeded("r-far-2", "job-far", t + timedelta(hours=1), hours=0.5)
    # Outside the range: never read.
    make_job("job-old", state="failed")
    failed("r-old-1", "job-old", SINCE - timedelta(hours=2), "flaky", trail("fail_rule", 0, 0))


def run(actor, **kwargs):
    kwargs.setdefault("draft", STRICTER)
    return backtest(actor=actor, since=SINCE, until=NOW, now=NOW, **kwargs)


def test_stricter_draft_over_every_queue(history, admin_user):
    result = run(admin_user)
    assert result["policy"] == {
        "name": "ml-strict",
        "version": None,
        "source": "draft",
        "globalMaxRetries": None,
    }
    assert result["range"] == {"since": SINCE.isoformat(), "until": NOW.isoformat()}
    overall = result["overall"]
    # 2 oom + usr + off + 2 ver + flaky + far; job-old is out of range
    assert overall["examined"] == 8
    assert (overall["retryToFail"], overall["failToRetry"], overall["unchanged"]) == (3, 2, 3)
    # job-oom's first OOM saves its two later runs (half an hour and an hour at 2 cpu and
    # 4Gi); its second OOM is past the point the draft ended the job. job-far saves one run
    # of half an hour.
    assert overall["savedAttempts"] == 3
    assert overall["savedCost"] == {"coreHours": 4.0, "memoryGibHours": 8.0, "gpuHours": 0.0}
    # job-off's and job-ver's last failures get one more half-hour run each.
    assert overall["extraAttempts"] == 2
    assert overall["extraCost"] == {"coreHours": 2.0, "memoryGibHours": 4.0, "gpuHours": 0.0}
    # flaky retries succeeded 1 time in 2 in this range (job-ver failed, job-flaky succeeded)
    assert overall["estimatedSucceeded"] == pytest.approx(1.0)
    assert [q["queue"] for q in result["queues"]] == ["demo", "other"]
    assert result["queues"][1]["retryToFail"] == 1
    assert sum(q["examined"] for q in result["queues"]) == overall["examined"]
    assert result["flips"][0] == {
        "from": "retry",
        "to": "fail",
        "category": "oom",
        "subcategory": "",
        "recordedRule": 3,
        "draftRule": 2,
        "count": 3,
    }
    flipped = result["sample"][:5]
    assert {s["runId"] for s in flipped} == {"r-oom-1", "r-oom-2", "r-far-1", "r-off-1", "r-ver-2"}
    assert all(s["recorded"] != "retry" or s["draft"] == "fail_rule" for s in flipped)
    assert flipped[0]["url"] == reverse("lookout:job", args=[flipped[0]["jobId"]])
    assert len(result["sample"]) == 8
    assert {(y["category"], y["retriedJobs"], y["succeededJobs"]) for y in result["yield"]} >= {
        ("flaky", 2, 1)
    }
    assert "estimate" in result["estimateNote"]


def test_a_policy_that_changed_version_mid_history_is_compared_failure_by_failure(
    history, admin_user
):
    result = run(admin_user, job_sets=["set-1"])
    by_run = {s["runId"]: s for s in result["sample"]}
    # v1 retried the first (unchanged under the draft); v2 failed the second by its rule 1,
    # which the draft retries by its rule 3.
    assert (by_run["r-ver-1"]["recorded"], by_run["r-ver-1"]["draft"]) == ("retry", "retry")
    assert (by_run["r-ver-2"]["recorded"], by_run["r-ver-2"]["draft"]) == ("fail_rule", "retry")
    assert by_run["r-ver-2"]["reason"] == "retry 2 of 3 (rule 3)"
    flips = {
        (f["category"], f["from"], f["recordedRule"], f["draftRule"]): f["count"]
        for f in result["flips"]
    }
    assert flips[("flaky", "fail", 1, 3)] == 1


def test_failures_decided_with_the_engine_off_are_compared(history, admin_user):
    result = run(admin_user, job_sets=["set-2"])
    assert result["overall"]["examined"] == 1
    assert result["overall"]["failToRetry"] == 1
    (row,) = result["sample"]
    assert (row["jobSet"], row["recorded"], row["draft"]) == ("set-2", "not_retried", "retry")
    assert result["flips"] == [
        {
            "from": "fail",
            "to": "retry",
            "category": "flaky",
            "subcategory": "",
            "recordedRule": None,
            "draftRule": 3,
            "count": 1,
        }
    ]


def test_a_stored_policy_now_and_at_an_earlier_version(history, admin_user):
    now = run(admin_user, draft=None, policy="ml")
    assert now["policy"]["version"] == 2 and now["policy"]["source"] == "stored"
    then = run(admin_user, draft=None, policy="ml", version=1)
    assert (then["policy"]["name"], then["policy"]["version"]) == ("ml", 1)
    # v2 fails flaky failures: the two flaky retries (by v1) flip. v1 retries them: job-ver's
    # second failure (failed by v2) flips the other way, and job-off's.
    assert (now["overall"]["retryToFail"], now["overall"]["failToRetry"]) == (2, 0)
    assert (then["overall"]["retryToFail"], then["overall"]["failToRetry"]) == (0, 2)


def test_a_memory_bump_makes_the_extra_attempt_bigger(history, admin_user):
    looser = {
        **STRICTER,
        "rules": [
            {
                "action": "Retry",
                "onCategory": "user-error",
                "mutate": {"resources": {"memory": {"factor": 2}}},
            },
        ],
    }
    result = run(admin_user, draft=looser, job_sets=["set-1"], queues=["demo"])
    usr = next(s for s in result["sample"] if s["runId"] == "r-usr-1")
    assert (usr["recorded"], usr["draft"]) == ("fail_rule", "retry")
    # half an hour with 2 cpu and 8Gi (4Gi doubled), plus nothing else retried by the draft
    assert result["overall"]["extraCost"]["memoryGibHours"] == pytest.approx(4.0)
    assert result["overall"]["extraCost"]["coreHours"] == pytest.approx(1.0)


# --- who may ask ------------------------------------------------------------------------------


def test_without_queues_only_the_queues_the_actor_may_view_are_read(history, owner, outsider):
    mine = run(owner)
    assert [q["queue"] for q in mine["queues"]] == ["demo"]
    assert mine["overall"]["examined"] == 7
    nothing = run(outsider)
    assert nothing["overall"]["examined"] == 0
    assert nothing["queues"] == [] and nothing["sample"] == [] and nothing["yield"] == []


def test_a_named_queue_the_actor_may_not_view_is_refused(history, owner):
    with pytest.raises(PermissionDenied, match="'other'"):
        run(owner, queues=["demo", "other"])


def test_an_unknown_queue_is_not_found(history, admin_user):
    with pytest.raises(NotFound, match="'nope'"):
        run(admin_user, queues=["nope"])


# --- bad input --------------------------------------------------------------------------------


def fields_of(error: ValidationFailed) -> list[str]:
    return [e.field for e in error.errors]


def test_an_invalid_draft_gets_the_errors_a_save_gets(history, admin_user):
    bad = {**STRICTER, "retryLimit": -1, "rules": [{"action": "Maybe", "onCategory": "oom"}]}
    with pytest.raises(ValidationFailed) as saved:
        policy_validate(data=bad)
    with pytest.raises(ValidationFailed) as replayed:
        run(admin_user, draft=bad)
    assert replayed.value.errors == saved.value.errors
    assert {"retryLimit", "rules[0].action"} <= set(fields_of(replayed.value))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"since": NOW, "until": SINCE}, "since"),
        ({"since": NOW - timedelta(days=3 * 365), "until": NOW}, "since"),
        ({"since": SINCE.replace(tzinfo=None), "until": NOW}, "since"),
        ({"draft": None, "policy": "missing"}, "policy"),
        ({"draft": None, "policy": "ml", "version": 9}, "version"),
        ({"draft": None, "policy": "ml", "version": 0}, "version"),
        ({"draft": None}, "draft"),
        ({"policy": "ml"}, "draft"),
        ({"sample_size": 100000}, "sampleSize"),
        ({"queues": [""]}, "queues[0]"),
        ({"draft": "retryLimit: 3"}, ""),
    ],
    ids=[
        "since-after-until",
        "years",
        "naive-time",
        "unknown-policy",
        "unknown-version",
        "version-zero",
        "neither",
        "both",
        "sample-too-big",
        "empty-queue-name",
        "draft-not-a-mapping",
    ],
)
def test_bad_input_names_the_field(history, admin_user, kwargs, field):
    kwargs = {"since": SINCE, "until": NOW, "draft": STRICTER, **kwargs}
    with pytest.raises(ValidationFailed) as error:
        backtest(actor=admin_user, now=NOW, **kwargs)
    assert field in fields_of(error.value) or (field == "" and error.value.errors)


# --- it writes nothing ------------------------------------------------------------------------


def snapshot() -> dict[str, list]:
    """Every row of every table of the project (and auth's), as values."""
    return {
        model._meta.label: sorted(map(repr, model.objects.values_list()))
        for model in apps.get_models()
        if model._meta.app_label in ("armada", "auth", "contenttypes")
    }


def test_the_backtest_writes_nothing(history, admin_user, owner):
    before = snapshot()
    assert sum(len(rows) for rows in before.values()) > 20
    run(admin_user)
    run(admin_user, draft=None, policy="ml", version=1)
    run(owner, queues=["demo"])
    with pytest.raises(ValidationFailed):
        run(admin_user, draft={**STRICTER, "retryLimit": "x"})
    with pytest.raises(PermissionDenied):
        run(owner, queues=["other"])
    assert snapshot() == before


# --- against the real scheduler ---------------------------------------------------------------


@pytest.mark.usefixtures("fresh_policy_cache")
def test_backtest_of_the_policy_in_force_changes_nothing(settings, with_policy, admin_user, owner):
    """Failures the scheduler really decided, replayed under the very policy that decided
    them: every decision is unchanged. The stricter draft flips exactly the retries."""
    from tests.services.decision_world import POLICY, configure, drive, submit

    agent = configure(settings)
    agent.tick(T0)
    jobs = [
        submit(owner, {"condition": "OOMKilled"}),
        submit(owner, {"exitCode": "1"}),
        submit(owner, {"exitCode": "3"}),
    ]
    drive(agent, range(1, 14))
    assert all(Job.objects.get(id=j).state == "failed" for j in jobs)
    since, until = T0, T0 + timedelta(minutes=5)
    same = backtest(actor=admin_user, draft=POLICY, since=since, until=until, now=until)
    overall = same["overall"]
    # OOM: 3 failures (2 retries, then the limit); user error: 1; flaky: 3
    assert overall["examined"] == 7
    assert overall["unchanged"] == 7
    assert same["flips"] == []
    strict = yaml.safe_load(yaml.safe_dump({**POLICY, "retryLimit": 0}))
    stricter = backtest(actor=admin_user, draft=strict, since=since, until=until, now=until)
    # Every retry (2 OOM, 2 flaky) flips; the saved attempts are every run after the first
    # failure of the two retried jobs (their returned leases included: the flaky pods are
    # retained, so a retry can collide with the failed pod and have its lease returned).
    assert stricter["overall"]["retryToFail"] == 4
    later = sum(Run.objects.filter(job_id=j).count() - 1 for j in (jobs[0], jobs[2]))
    assert later >= 4
    assert stricter["overall"]["savedAttempts"] == later
    assert stricter["overall"]["failToRetry"] == 0
    assert Queue.objects.get(name="demo").retry_policies == ["training"]
