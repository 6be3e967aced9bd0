"""services.backtest over recorded histories: what is read, what flips, what it costs (who
may ask, bad input and that nothing is written: test_backtest_access.py).

The history (``backtest_history.history``) is written straight into the tables, with the decision
trails the scheduler writes, so that each case is exact: a job whose policy changed version
between its failures, a failure decided with the engine off (``not_retried``), a queue the
owner may not view. ``test_backtest_of_the_policy_in_force_changes_nothing`` makes its history
with the real scheduler instead.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from django.urls import reverse

from armada.models import Job, Queue, Run
from armada.services.backtest import backtest
from tests.conftest import T0
from tests.services.backtest_history import NOW, SINCE, STRICTER, history, run

pytestmark = pytest.mark.django_db
__all__ = ["history"]  # the fixture, used by name


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
