"""The scheduler's limits through real processes (web, grpc, a Celery scheduler with beat and
three executors on the fake backend, PostgreSQL and Redis in CI): which jobs run under each
limit, and the reason recorded for each job that waits ("why pending", read through the API
as a user reads it).

One system serves the module (starting one costs more than most of these tests). It has three
pools of 8 cpu each: ``default`` (executor ``main``, two nodes labelled ``site=main``),
``second`` (executor ``east``, one node labelled ``site=east``) and ``third`` (executor
``west``: a node tainted ``team=west`` and a ``gpu`` node tainted ``gpu=true``, both labelled
``site=west``), and every limit at once:

- priority class ``capped``: a queue may hold 25% of a pool's cpu (2 cpu);
- priority class ``pooled``: 25%, but 50% in ``second``;
- a round in ``second`` hands out at most 10% of its cpu, plus the job that crosses it;
- each queue leases at most ``RATE`` jobs a second, with a burst of ``BURST``;
- ``second`` has 2 licences (a floating resource), ``default`` and ``third`` none;
- priority class ``research`` (preemptible) may run away from home on ``gpu`` nodes at
  priority 500; class ``gpu-home``'s jobs tolerate the gpu taint (those nodes are their home);
- an executor holding more than ``UNACKNOWLEDGED`` leases it has not acknowledged sits out.

Only jobs that tolerate a ``third`` node's taint can use that pool, and only this module's away
and acknowledgement tests submit such jobs, so the other tests see two pools' worth of room
(the class fractions are of each pool's own cpu: ``third``'s 8 cpu change nothing in the
others). ``UNACKNOWLEDGED`` is ``BURST``: no other test leases more than that to one executor
in a round (the rate test's burst is exactly that many), so the limit can at most hold back
an executor for a round, which no other test's assertions depend on.

Each test has queues of its own, and its queues' jobs are cancelled when it ends, so that
the next test starts with empty nodes and no queue holding anything. No test but the rate
test leases more than ``BURST`` jobs of one queue, so the rate only shows there.

Every queued job is offered to every pool in each cycle (``default``, ``second``, then
``third``). A job's reason is that of waiting in a pool (room, a limit), the last such pool's
when several hold it, over a pool it cannot use at all ("no node matches"); a job that only
such pools reached, while a limit stopped another pool's round before it, is told it was not
reached. Where the tests read a class limit's reason, both pools hold the job with the same
numbers (the pools are equal); the floating resource's reason is ``second``'s, the only pool
with licences."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e.limits_world import (
    AWAY_PRIORITY,
    BURST,
    CONFIG,
    GPU,
    GPU_TOLERATION,
    LICENCE,
    POLICY,
    RATE,
    TEAM_TOLERATION,
    UNACKNOWLEDGED,
    WEST,
    WEST_GPU,
    Api,
    after_rounds,
    all_in,
    at,
    executor_stopped,
    fetch,
    in_state,
    job,
    pools,
    reason,
    reasons_until_leased,
    settle,
    submit,
    west_job,
)
from tests.e2e.wire_system import module_database, module_system

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def transactional_db(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's ``transactional_db`` for the whole module (see ``module_database``)."""
    yield from module_database(django_db_blocker)


@pytest.fixture(scope="module")
def api(transactional_db, tmp_path_factory) -> Iterator[Api]:
    for flows in module_system(tmp_path_factory, "scheduler-limits", CONFIG):
        yield Api(flows)


@pytest.fixture
def queues(api: Api) -> Iterator[Callable[..., str]]:
    """``queues(name, **fields)`` makes a queue through the API; when the test ends, every
    unfinished job of its queues is cancelled and the wait is until none holds anything."""
    made: list[str] = []

    def make(name: str, **fields: Any) -> str:
        api.send("POST", "/queues", {"name": name, **fields}, status=201)
        made.append(name)
        return name

    yield make
    for name in made:
        api.send(
            "POST",
            "/jobs/cancel",
            {"queue": name, "states": ["queued", "leased", "pending", "running"]},
        )
    api.wait_for(
        f"the jobs of {made} to let go of their resources",
        lambda: all(not api.get(f"/reports/queues/{name}")["allocated"] for name in made),
    )


def test_a_queue_holds_at_most_its_fraction_of_a_priority_class_in_each_pool(api, queues):
    """``maximumResourceFractionPerQueue`` of a class (25% of cpu): a queue's jobs of the
    class hold at most 2 cpu of each 8-cpu pool (a job that would take it to 37.5% waits,
    one that takes it to exactly 25% goes), so 4 of its 6 one-cpu jobs run, 2 in each pool;
    the 2 that wait name the queue, the class and the numbers. The queue's job of another
    class runs beside them, and another queue gets its own 25%."""
    capped_queue, other_queue = queues("cap-a"), queues("cap-b")
    capped = submit(api, capped_queue, "capped", [job(pc="capped") for _ in range(6)])
    [free] = submit(api, capped_queue, "free", [job()])
    others = submit(api, other_queue, "capped", [job(pc="capped") for _ in range(2)])
    held = "queue cap-a at 25% of cpu for priority class capped, limit 25%"

    def check(jobs: list[dict]) -> bool:
        mine, rest = jobs[:6], jobs[6:]
        waiting = in_state(mine, "queued")
        return (
            len(in_state(mine, "running")) == 4
            and len(waiting) == 2
            and all(held in reason(j) and "would take it to 37.5%" in reason(j) for j in waiting)
            and all(j["state"] == "running" for j in rest)
        )

    jobs = settle(api, "cap-a at its class limit", [*capped, free, *others], check)
    assert pools(in_state(jobs[:6], "running")) == {"default": 2, "second": 2}
    assert len(in_state(jobs, "running")) == 7


def test_a_class_fraction_by_pool_replaces_the_default_in_that_pool(api, queues):
    """``maximumResourceFractionPerQueueByPool``: class ``pooled`` allows a queue 25% of cpu,
    but 50% in pool ``second``: of 8 one-cpu jobs, 2 run in ``default`` and 4 in
    ``second``, and the 2 left wait with the reason of ``second``'s limit."""
    queue = queues("by-pool")
    ids = submit(api, queue, "pooled", [job(pc="pooled") for _ in range(8)])
    held = "queue by-pool at 50% of cpu for priority class pooled, limit 50%"

    def check(jobs: list[dict]) -> bool:
        waiting = in_state(jobs, "queued")
        return (
            len(in_state(jobs, "running")) == 6
            and len(waiting) == 2
            and all(held in reason(j) and "would take it to 62.5%" in reason(j) for j in waiting)
        )

    jobs = settle(api, "by-pool at its limits in both pools", ids, check)
    assert pools(in_state(jobs, "running")) == {"default": 2, "second": 4}


def test_a_round_hands_out_at_most_its_fraction_of_the_pool_plus_one_job(api, queues):
    """``maximumResourceFractionToScheduleByPool`` (10% of ``second``'s 8 cpu a round): 10
    half-cpu jobs for ``second``'s node are leased two a round (the second takes the round
    to 12.5%, over the limit, and ends it), so five rounds lease them, each its own lease
    time. Meanwhile the job a round stopped at shows the round's reason, and the jobs behind
    it, which ``second``'s round never reached, are told so: never the "no node matches" of
    the pools whose nodes they cannot use (no recorded reason is anything but the round's)."""
    from armada.services.records import NOT_REACHED

    queue = queues("rounds")
    ids = submit(api, queue, "rounds", [job("500m", site="east") for _ in range(10)])
    seen, last_job = reasons_until_leased(api, queue, ids[-1], interval=0.05)
    jobs = fetch(api, ids)
    per_round = Counter(j["runs"][0]["leasedAt"] for j in jobs)
    assert [per_round[t] for t in sorted(per_round)] == [2, 2, 2, 2, 2]
    assert pools(jobs) == {"second": 10}
    stopped = "this round has already handed out 12.5% of the pool's cpu, limit 10% per round"
    assert seen and all(stopped in r for r in seen), seen
    # The last job is never the one a round stops at: it waits unreached until it is leased.
    assert last_job == {NOT_REACHED}, last_job


def test_a_queue_leases_a_burst_at_once_and_then_at_its_rate(api, queues):
    """``maximumPerQueueSchedulingRate``/``Burst``: of 18 small jobs, a full bucket leases 12
    in one round; the others follow about ``RATE`` a second (the k-th no sooner than k /
    ``RATE`` seconds after the burst, less a second for the cycles' own time). Meanwhile
    the queue's first waiting job shows the rate's reason, and the jobs behind it, which
    the round no longer reached, say so; no job shows any other reason (none of ``third``'s
    "no node matches", whose nodes none of them tolerates)."""
    from armada.services.records import NOT_REACHED

    queue = queues("rate")
    ids = submit(api, queue, "burst", [job("250m") for _ in range(18)])
    seen, last_job = reasons_until_leased(api, queue, ids[-1], interval=0.1)
    leased = sorted(at(j["runs"][0]["leasedAt"]) for j in fetch(api, ids))
    first = leased[0]
    assert leased.count(first) == BURST
    for k, when in enumerate(leased[BURST:], start=1):
        assert (when - first).total_seconds() >= k / RATE - 1.0, (k, leased)
    limited = f"queue {queue} scheduling rate limit exceeded"
    assert seen and all(limited in r for r in seen), seen
    assert NOT_REACHED in last_job, last_job
    assert all(r == NOT_REACHED or limited in r for r in last_job), last_job


def test_a_floating_resource_is_shared_by_the_pool_across_queues(api, queues):
    """``floatingResources``: pool ``second`` has 2 licences. Three jobs of two queues asking
    one each: two run at once and the third waits, its reason counting the licences in use;
    it starts when one of the others has finished. Never more than 2 held at once, and the
    pods ran on nodes that own no licence (the lease leaves the floating resource out)."""
    first_queue, second_queue = queues("float-a"), queues("float-b")
    ids = submit(
        api, first_queue, "licensed", [job("500m", duration="4s", licences=1) for _ in range(2)]
    )
    ids += submit(api, second_queue, "licensed", [job("500m", duration="4s", licences=1)])
    held = f"floating resource {LICENCE}: 2 of 2 in use in the pool, the job asks 1"

    def one_waits() -> dict | None:
        jobs = fetch(api, ids)
        waiting = in_state(jobs, "queued")
        return waiting[0] if len(waiting) == 1 and held in reason(waiting[0]) else None

    waiter = api.wait_for("one job to wait for a licence", one_waits)
    jobs = api.wait_for(
        "the three jobs to succeed",
        lambda: all_in(fetch(api, ids), "succeeded"),
    )
    runs = {j["id"]: j["runs"] for j in jobs}
    assert all(len(r) == 1 and r[0]["pool"] == "second" for r in runs.values()), runs
    spans = [(at(r[0]["leasedAt"]), at(r[0]["finishedAt"])) for r in runs.values()]
    for start, _ in spans:
        assert sum(s <= start < end for s, end in spans) <= 2, spans
    others_ended = min(at(r[0]["finishedAt"]) for i, r in runs.items() if i != waiter["id"])
    assert at(runs[waiter["id"]][0]["leasedAt"]) >= others_ended


def test_a_retried_job_waits_under_the_class_limit_like_a_new_one(api, queues):
    """A job whose retry policy retries its failure goes back to its queue like a new job:
    while the queue is at its class limit (2 cpu on ``second``), taken by a job ahead of it
    in the queue's order, it stays queued with the limit's reason round after round, with
    one run and no verdict of failure; when a running job of the queue is cancelled, it is
    leased again and its second run starts."""
    api.send(
        "POST",
        "/retry-policies",
        {
            "apiVersion": "armadaproject.io/v1beta1",
            "kind": "RetryPolicy",
            "name": POLICY,
            "retryLimit": 1,
            "defaultAction": "Fail",
            "rules": [{"action": "Retry", "onCategory": "flaky"}],
        },
        status=201,
    )
    queue = queues("retry-cap", retryPolicies=[POLICY])
    flaky, blocker = submit(
        api,
        queue,
        "first",
        [
            job(pc="capped", site="east", duration="5s", priority=5, fake={"exitCode": "3"}),
            job(pc="capped", site="east", priority=5),
        ],
    )
    api.wait_for(
        "both to be leased",
        lambda: all(j["state"] != "queued" for j in fetch(api, [flaky, blocker])),
    )
    # Ahead of the flaky job in the queue's order (a lower priority number goes first).
    [ahead] = submit(api, queue, "ahead", [job(pc="capped", site="east", priority=1)])
    held = "queue retry-cap at 25% of cpu for priority class capped, limit 25%"

    def retried_and_waiting() -> dict | None:
        got = api.get(f"/jobs/{flaky}")
        done = got["runs"] and got["runs"][0]["state"] == "failed"
        return got if done and got["state"] == "queued" and held in reason(got) else None

    waiting = api.wait_for("the retried job to wait at the limit", retried_and_waiting)
    assert at(api.get(f"/jobs/{ahead}")["submittedAt"]) < at(waiting["runs"][0]["finishedAt"])
    assert waiting["runs"][0]["decision"]["decision"] == "retry"
    after_rounds(api, 5)
    still = api.get(f"/jobs/{flaky}")
    assert (still["state"], len(still["runs"]), still["terminalReason"]) == ("queued", 1, "")
    assert held in reason(still)
    assert [j["state"] for j in fetch(api, [blocker, ahead])] == ["running", "running"]

    api.send("POST", "/jobs/cancel", {"queue": queue, "jobSetId": "first", "jobIds": [blocker]})
    second_run = api.wait_for(
        "the retried job's second run to start",
        lambda: (runs := api.get(f"/jobs/{flaky}")["runs"])[1:] and runs[1]["runningAt"] and runs,
    )
    assert len(second_run) == 2 and second_run[1]["pool"] == "second"


def test_a_queues_own_limits_set_through_the_api_refine_the_class_limits(api, queues):
    """A queue's ``resourceLimitsByPriorityClassName``, set with the queue through the REST
    API: class ``capped`` (25%) becomes 50% of cpu for this queue, and 12.5% in pool
    ``second``; of 7 one-cpu jobs 4 run in ``default`` and 1 in ``second``, the others wait
    with ``second``'s reason. Raised to 25% in ``second`` with an update, one more starts at
    the next rounds and the last waits at the new limit."""
    limits = {
        "capped": {
            "maximumResourceFraction": {"cpu": 0.5},
            "maximumResourceFractionByPool": {
                "second": {"maximumResourceFraction": {"cpu": 0.125}}
            },
        }
    }
    queue = queues("own-limits", resourceLimitsByPriorityClassName=limits)
    assert api.get(f"/queues/{queue}")["resourceLimitsByPriorityClassName"] == limits
    ids = submit(api, queue, "capped", [job(pc="capped") for _ in range(7)])

    def at_limits(in_second: int, limit: str) -> Callable[[list[dict]], bool]:
        held = f"queue own-limits at {limit} of cpu for priority class capped, limit {limit}"

        def check(jobs: list[dict]) -> bool:
            running = in_state(jobs, "running")
            waiting = in_state(jobs, "queued")
            return (
                pools(running) == {"default": 4, "second": in_second}
                and len(waiting) == 7 - 4 - in_second
                and all(held in reason(j) for j in waiting)
            )

        return check

    settle(api, "the queue at its own limits", ids, at_limits(1, "12.5%"))

    limits["capped"]["maximumResourceFractionByPool"]["second"]["maximumResourceFraction"] = {
        "cpu": 0.25
    }
    updated = api.send("PATCH", f"/queues/{queue}", {"resourceLimitsByPriorityClassName": limits})
    assert updated["resourceLimitsByPriorityClassName"] == limits
    settle(api, "the queue at its raised limit", ids, at_limits(2, "25%"))


def test_a_job_runs_away_at_its_lower_priority_until_a_home_job_takes_the_node(api, queues):
    """``awayNodeTypes``: class ``research``'s home in ``third`` is the team node (its jobs
    tolerate only that taint). With it full (a 4-cpu research job), the next research job
    goes to the ``gpu`` node: the lease its executor is sent (read while the executor is
    stopped, before it takes it) gives its pod the gpu toleration after its own, and its
    run, which then runs there, says so (``awayNodeType`` gpu, ``scheduledAtPriority``
    500; the job at home has neither). A ``gpu-home`` job (priority 1000, tolerating the
    gpu taint) that needs the whole gpu node then preempts it as a job of priority 500 is
    (the reason names the home job and its higher urgency) and runs there itself, at home;
    the research job at home is left alone."""
    from armada.services.executor_rounds import _lease_rows

    research, owners = queues("away-research"), queues("away-owners")
    [home] = submit(api, research, "home", [west_job("4", "research")])
    api.wait_for("the team node to be full", lambda: all_in(fetch(api, [home]), "running"))
    with executor_stopped(api, WEST) as wait:
        [away] = submit(api, research, "away", [west_job("2", "research")])
        [leased] = wait("the research job's lease", lambda: all_in(fetch(api, [away]), "leased"))
        [lease] = _lease_rows([leased["runs"][0]["id"]])
        tolerations = json.loads(lease["pod_spec_json"])["tolerations"]
        assert (lease["node"], tolerations) == (WEST_GPU, [TEAM_TOLERATION, GPU_TOLERATION])
    jobs = api.wait_for("the away job to run", lambda: all_in(fetch(api, [home, away]), "running"))
    home_run, away_run = (j["runs"][-1] for j in jobs)
    placed = ("pool", "node", "awayNodeType", "scheduledAtPriority")
    assert [home_run[k] for k in placed] == ["third", WEST, "", None], home_run
    assert [away_run[k] for k in placed] == ["third", WEST_GPU, GPU, AWAY_PRIORITY], away_run

    [owner] = submit(api, owners, "gpu", [west_job("4", "gpu-home", GPU_TOLERATION)])

    def taken_back() -> list[dict] | None:
        got = fetch(api, [away, owner])
        return got if (got[0]["state"], got[1]["state"]) == ("preempted", "running") else None

    evicted, took = api.wait_for("the home job to take the gpu node back", taken_back)
    [run] = evicted["runs"]
    assert run["state"] == "preempted"
    assert run["message"] == f"preempted to make room for job {owner} of higher urgency 1000"
    [took_run] = took["runs"]
    assert [took_run[k] for k in placed] == ["third", WEST_GPU, "", None], took_run
    untouched = api.get(f"/jobs/{home}")
    assert (untouched["state"], len(untouched["runs"])) == ("running", 1)


def test_a_class_without_away_node_types_never_uses_another_types_node(api, queues):
    """A job of a class with no ``awayNodeTypes`` (``armada-default``), tolerating only the
    team node's taint, waits while that node is full, round after round, with the reason of
    no room, although the ``gpu`` node of its pool has room: a research job of the same
    queue submitted after it goes there at once, and the waiting job still has no run."""
    from armada.core.snapshot import REASON_NO_RESOURCES

    queue = queues("stay-home")
    [filler] = submit(api, queue, "filler", [west_job("4", "armada-default")])
    api.wait_for("the team node to be full", lambda: all_in(fetch(api, [filler]), "running"))
    [plain] = submit(api, queue, "plain", [west_job("1", "armada-default")])
    api.wait_for(
        "the plain job to wait for room",
        lambda: reason(api.get(f"/jobs/{plain}")) == REASON_NO_RESOURCES,
    )
    [research] = submit(api, queue, "research", [west_job("1", "research")])
    [ran] = api.wait_for(
        "the research job to run away", lambda: all_in(fetch(api, [research]), "running")
    )
    assert (ran["runs"][0]["node"], ran["runs"][0]["awayNodeType"]) == (WEST_GPU, GPU)
    after_rounds(api, 3)
    still = api.get(f"/jobs/{plain}")
    assert (still["state"], still["runs"], reason(still)) == ("queued", [], REASON_NO_RESOURCES)


def test_an_executor_behind_on_acknowledging_leases_gets_no_more(api, queues):
    """``maxUnacknowledgedJobsPerExecutor`` (``UNACKNOWLEDGED``): while executor ``west``'s
    process is stopped (so that it acknowledges nothing, yet is not lost), the scheduler
    leases it ``UNACKNOWLEDGED`` + 1 small jobs, which stay ``leased``; a job submitted then
    waits round after round with the reason that the pool has no schedulable node (its
    executor is behind), although the team node has room. Once the executor runs again
    and acknowledges its leases, the job is leased to it and runs."""
    from armada.core.snapshot import REASON_NO_NODES

    queue = queues("unacknowledged")
    small = west_job("100m", "armada-default")
    with executor_stopped(api, WEST) as wait:
        behind = submit(api, queue, "behind", [small] * (UNACKNOWLEDGED + 1))
        wait("the jobs to be leased", lambda: all_in(fetch(api, behind), "leased"))
        [late] = submit(api, queue, "late", [small])
        wait(
            "the late job to wait for a schedulable node",
            lambda: reason(api.get(f"/jobs/{late}")) == REASON_NO_NODES,
        )
        after_rounds(api, 3)
        waiting = api.get(f"/jobs/{late}")
        assert (waiting["state"], reason(waiting)) == ("queued", REASON_NO_NODES)
        assert all_in(fetch(api, behind), "leased")
    [ran] = api.wait_for("the late job to run", lambda: all_in(fetch(api, [late]), "running"))
    assert (ran["runs"][0]["executor"], ran["runs"][0]["node"]) == (WEST, WEST)
