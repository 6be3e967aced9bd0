"""The backtest through real processes: a workload runs under policy ``training`` (web, a
Celery scheduler worker with beat, a Celery executor worker on the fake backend); then
``armadactl backtest retry-policy`` replays its recorded failures under a stricter and a
looser draft, and the flips are checked against what the recorded runs imply."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.test_retry_policies import POLICY, config, finished, job, set_up, submit

pytestmark = [pytest.mark.e2e]

# OOMs fail at once (rule 2); everything else as in ``training``.
STRICTER = {
    **POLICY,
    "name": "training-strict",
    "rules": [POLICY["rules"][0], {"action": "Fail", "onCategory": "oom"}, *POLICY["rules"][1:]],
}
# User errors are retried too (rule 1), and one more retry is allowed.
LOOSER = {
    **POLICY,
    "name": "training-loose",
    "retryLimit": 3,
    "rules": [{"action": "Retry", "onCategory": "user-error"}, *POLICY["rules"][1:]],
}


def backtest(system, tmp_path, draft: dict) -> dict:
    path = tmp_path / f"{draft['name']}.yaml"
    path.write_text(yaml.safe_dump(draft))
    done = system.armadactl(
        "backtest", "retry-policy", "-f", str(path), "--since", "1h", "-o", "json"
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_stricter_and_looser_drafts_against_a_real_workload(launch, tmp_path):
    system = launch(config())
    set_up(system)
    oom_jobs = submit(
        system, "ooms", [job({"condition": "OOMKilled", "duration": "1s"}) for _ in range(2)]
    )
    user_jobs = submit(
        system, "users", [job({"exitCode": "1", "duration": "1s"}) for _ in range(2)]
    )
    [fine] = submit(system, "fine", [job({"duration": "1s"})])
    ended = {
        j: system.wait_for(f"job {j} to end", lambda j=j: finished(system, j), timeout=120)
        for j in (*oom_jobs, *user_jobs, fine)
    }
    # What was recorded: each OOM job retried twice, then its policy limit; each user error
    # failed at once by rule 1; the fine job never failed.
    recorded = {
        j: [(r["failureCategory"], r["decision"]["decision"]) for r in ended[j]["runs"]]
        for j in (*oom_jobs, *user_jobs)
    }
    for j in oom_jobs:
        assert recorded[j] == [("oom", "retry"), ("oom", "retry"), ("oom", "fail_policy_limit")]
    for j in user_jobs:
        assert recorded[j] == [("user-error", "fail_rule")]
    assert ended[fine]["state"] == "succeeded"

    same = backtest(system, tmp_path, POLICY)
    assert same["overall"]["examined"] == 8
    assert same["overall"]["unchanged"] == 8 and same["flips"] == []

    # Stricter: every OOM retry becomes a fail (4), and each OOM job's first failure saves
    # the two runs that followed it; the limit failures and user errors stay failures.
    strict = backtest(system, tmp_path, STRICTER)
    overall = strict["overall"]
    assert (overall["retryToFail"], overall["failToRetry"], overall["unchanged"]) == (4, 0, 4)
    assert overall["savedAttempts"] == 4 and overall["extraAttempts"] == 0
    assert overall["savedCost"]["coreHours"] > 0
    assert strict["flips"] == [
        {
            "from": "retry",
            "to": "fail",
            "category": "oom",
            "subcategory": "",
            "recordedRule": 4,
            "draftRule": 2,
            "count": 4,
        }
    ]

    # Looser: the user errors (retries used 0) and the OOM limit failures (2 of 3 used) are
    # retried: four new attempts, one each; the OOM retries stay retries.
    loose = backtest(system, tmp_path, LOOSER)
    overall = loose["overall"]
    assert (overall["retryToFail"], overall["failToRetry"], overall["unchanged"]) == (0, 4, 4)
    assert overall["extraAttempts"] == 4 and overall["savedAttempts"] == 0
    flips = {(f["category"], f["recordedRule"], f["draftRule"]): f["count"] for f in loose["flips"]}
    assert flips == {("user-error", 1, 1): 2, ("oom", 4, 4): 2}
    # The OOM attempts would run with the memory grown once more (x1.5 of 2.25Gi).
    assert overall["extraCost"]["memoryGibHours"] > 0
    assert {s["jobId"] for s in loose["sample"][:4]} == {*oom_jobs, *user_jobs}
    assert "estimate" in loose["estimateNote"]
