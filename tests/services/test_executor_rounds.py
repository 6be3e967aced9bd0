"""One round of the executor API (``services.executor_rounds``): what the server answers an
executor that says which runs it holds (leases until held, cancels and preempts, stops,
missing runs expired after executorTimeout), and the nodes a round reports (written only
when they change, moved with the pool). Through the service, and through an agent on the
loopback channel (``tests.executor_api``) where the agent's side matters."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from armada.core.config import parse_config
from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.executor.api import executorapi_pb2 as pb
from armada.models import Event, Executor, Job, Node, Run
from armada.services.decisions import failures_decide
from armada.services.executor_rounds import RoundAnswer, executor_round
from armada.services.run_reports import runs_apply_report_batch
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import CANCEL, PREEMPT, runs_request_stop
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import ApiAgent, api_agent, register_executor

pytestmark = pytest.mark.django_db

FAKE = "fake.armadaproject.io/"
TIMEOUT = 60.0  # executorTimeout's default


def executor_config(executor_id: str = "test", cpu: str = "4", pool: str = "default", **more):
    data = {
        "scheduling": {"pools": [{"name": "default"}, {"name": "gpu"}]},
        "executors": [
            {
                "id": executor_id,
                "pool": pool,
                "nodes": [{"name": "n", "count": 1, "allocatable": {"cpu": cpu, "memory": "8Gi"}}],
                **more,
            }
        ],
    }
    return parse_config(data).executors[0]


@pytest.fixture(autouse=True)
def two_pools(settings):
    settings.ARMADA = parse_config(
        {"scheduling": {"pools": [{"name": "default"}, {"name": "gpu"}]}}
    )
    assert settings.ARMADA.executor_timeout == TIMEOUT


@pytest.fixture
def agent(queue) -> ApiAgent:
    """Executor ``test`` with one node ``n`` (4 cpu), registered at 0 s."""
    return register_executor(executor_config(), at(0))


def submit(owner, cpu: str = "1", **annotations) -> str:
    ann = {FAKE + k: v for k, v in annotations.items()}
    return job_submit(actor=owner, data=job_file(jobs=[job(cpu=cpu, annotations=ann)]), now=at(0))[
        0
    ]


def leased(owner, n: int = 1, t: float = 1) -> list[str]:
    """``n`` jobs submitted and leased at ``t``; their runs."""
    jobs = [submit(owner) for _ in range(n)]
    assert scheduler_cycle(now=at(t)).leased == n
    return [Run.objects.get(job_id=j).id for j in jobs]


def round_(held: list[str], t: float, executor_id: str = "test") -> RoundAnswer:
    """A round of ``executor_id`` at ``t`` holding ``held``, its nodes unchanged."""
    executor = Executor.objects.get(id=executor_id)
    return executor_round(
        executor=executor,
        pool=executor.pool,
        nodes=[],
        nodes_digest=executor.nodes_digest,
        held=held,
        now=at(t),
    )


def started(run_id: str, state: RunState = RunState.RUNNING, t: float = 2) -> None:
    reports = [RunReport(run_id, RunState.PENDING, at(t))]
    if state == RunState.RUNNING:
        reports.append(RunReport(run_id, RunState.RUNNING, at(t)))
    runs_apply_report_batch(executor_id="test", reports=reports, now=at(t))
    assert Run.objects.get(id=run_id).state == state


def lease_ids(answer: RoundAnswer) -> list[str]:
    return [row["id"] for row in answer.leases]


def types_for(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


class Answers:
    """Every round answer an agent's client gets."""

    def __init__(self, agent: ApiAgent) -> None:
        self.seen: list = []
        real = agent.api.lease

        def lease(request):
            answer = real(request)
            self.seen.append(answer)
            return answer

        agent.api.lease = lease


# --- leases -----------------------------------------------------------------------------------


def test_a_lease_is_offered_in_every_round_until_it_is_held_then_not(agent, owner):
    [run_id] = leased(owner)
    first = round_([], 2)
    assert lease_ids(first) == [run_id]
    row = first.leases[0]
    run = Run.objects.get(id=run_id)
    assert (row["job_id"], row["node"], row["pod_name"], row["job__queue_id"]) == (
        run.job_id,
        "n",
        f"armada-{run.job_id}-0",
        "demo",
    )
    assert lease_ids(round_([], 3)) == [run_id]  # the answer was lost: offered again
    held = round_([run_id], 4)
    assert (held.leases, held.cancel, held.preempt, held.stop, held.expired) == ([], [], [], [], [])
    assert lease_ids(round_([], 5)) == [run_id]  # dropped again (say, restarted): offered again
    run.refresh_from_db()
    assert (run.state, run.missing_since) == ("leased", None)  # a lease is never "missing"


def test_the_agent_is_offered_a_lease_once_and_holds_it(agent, owner):
    answers = Answers(agent)
    job_id = submit(owner, duration="1h")
    scheduler_cycle(now=at(1))
    run_id = Run.objects.get(job_id=job_id).id
    agent.tick(at(2))
    agent.tick(at(3))
    assert [[lease.run_id for lease in a.leases] for a in answers.seen] == [[run_id], []]
    assert Run.objects.get(id=run_id).state == "running"


# --- stops ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [CANCEL, PREEMPT])
@pytest.mark.parametrize("state", [RunState.LEASED, RunState.RUNNING])
@pytest.mark.parametrize("held", [True, False], ids=["held", "not-held"])
def test_a_run_to_stop_is_in_its_list_held_or_not_and_never_expired(
    agent, owner, kind, state, held
):
    [run_id] = leased(owner)
    if state == RunState.RUNNING:
        started(run_id)
    assert runs_request_stop(
        job_ids=[Run.objects.get(id=run_id).job_id], kind=kind, reason="r", now=at(3)
    ) == [run_id]
    for t in (4, 10 + 2 * TIMEOUT):  # long past the timeout: the executor reports it
        answer = round_([run_id] if held else [], t)
        assert (answer.cancel, answer.preempt) == (
            ([run_id], []) if kind == CANCEL else ([], [run_id])
        ), t
        assert (answer.leases, answer.stop, answer.expired) == ([], [], []), t
    run = Run.objects.get(id=run_id)
    assert (run.state, run.missing_since) == (state, None)


@pytest.mark.parametrize(
    ("kind", "run_state", "job_state"),
    [(CANCEL, "cancelled", "cancelled"), (PREEMPT, "preempted", "preempted")],
)
def test_a_run_to_stop_that_the_agent_never_held_is_reported_at_once(
    agent, owner, kind, run_state, job_state
):
    [run_id] = leased(owner)
    job_id = Run.objects.get(id=run_id).job_id
    runs_request_stop(job_ids=[job_id], kind=kind, reason="not needed", now=at(2))
    report = agent.tick(at(3))
    assert report.created == 0 and agent.backend.poll(at(3)) == []
    run = Run.objects.get(id=run_id)
    assert (run.state, run.finished_at) == (run_state, at(3))
    assert Job.objects.get(id=job_id).state == job_state
    assert agent.runs == {} and agent.outbox == []
    assert round_([], 4).cancel == round_([], 4).preempt == []


def test_a_held_run_to_cancel_has_its_pod_stopped_then_is_reported(agent, owner):
    job_id = submit(owner, duration="1h")
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    run_id = Run.objects.get(job_id=job_id).id
    assert Run.objects.get(id=run_id).state == "running"
    runs_request_stop(job_ids=[job_id], kind=CANCEL, reason="by hand", now=at(3))
    agent.tick(at(4))  # the pod is deleted (it goes at once on the fake cluster)
    assert agent.backend.poll(at(4)) == []
    agent.tick(at(5))
    assert Run.objects.get(id=run_id).state == "cancelled"
    assert types_for(job_id)[-2:] == ["cancelling", "cancelled"]


# --- stop: held, but not active here ----------------------------------------------------------


def test_held_runs_the_server_does_not_have_active_for_the_executor_come_back_in_stop(agent, owner):
    done, expired, active = leased(owner, 3)
    register_executor(executor_config("other", cpu="16"), at(1))
    elsewhere_job = submit(owner, cpu="8")  # fits only on the other executor's node
    assert scheduler_cycle(now=at(1.5)).leased == 1
    elsewhere = Run.objects.get(job_id=elsewhere_job)
    assert elsewhere.executor == "other"
    runs_apply_report_batch(
        executor_id="test",
        reports=[
            RunReport(done, RunState.PENDING, at(2)),
            RunReport(done, RunState.SUCCEEDED, at(2), exit_code=0),
        ],
        now=at(2),
    )
    # `expired` is held by nobody past its lease's timeout: expired by the round.
    assert round_([done, active], 2 + TIMEOUT).expired == [expired]
    answer = round_([done, expired, active, elsewhere.id, "no-such-run"], 3 + TIMEOUT)
    assert answer.stop == sorted([done, expired, elsewhere.id, "no-such-run"])
    assert (answer.leases, answer.cancel, answer.preempt, answer.expired) == ([], [], [], [])
    assert Run.objects.get(id=elsewhere.id).state == "leased"  # another's run: left alone


# --- missing runs -----------------------------------------------------------------------------


def test_a_lease_never_taken_is_expired_after_the_timeout_from_its_lease_not_before(agent, owner):
    [run_id] = leased(owner, t=1)
    for t in (2, 30, 1 + TIMEOUT):  # at 61 s the lease is exactly executorTimeout old
        answer = round_([], t)
        assert (lease_ids(answer), answer.expired) == ([run_id], []), t
        assert Run.objects.get(id=run_id).state == "leased"
    answer = round_([], 1.5 + TIMEOUT)
    assert (answer.leases, answer.expired) == ([], [run_id])
    run = Run.objects.get(id=run_id)
    assert (run.state, run.reason, run.failure_category, run.failure_subcategory) == (
        "lease_expired",
        "LeaseExpired",
        "internal",
        "lease-expired",
    )
    assert "executor test did not hold run" in run.message and run.finished_at == at(61.5)
    assert failures_decide(now=at(62)) == 1  # a genuine failure, decided as any other
    job_row = Job.objects.get(id=run.job_id)
    assert (job_row.state, job_row.failure_count) == ("failed", 1)
    assert types_for(run.job_id)[-2:] == ["lease_expired", "failed"]
    assert round_([], 63).expired == []  # once


def test_a_held_lease_is_never_expired(agent, owner):
    [run_id] = leased(owner, t=1)
    for t in (30, 100, 1000):
        assert round_([run_id], t).expired == []
    assert Run.objects.get(id=run_id).state == "leased"


@pytest.mark.parametrize("state", [RunState.PENDING, RunState.RUNNING])
def test_a_started_run_missing_from_rounds_is_marked_and_expired_only_after_the_timeout(
    agent, owner, state
):
    [run_id] = leased(owner)
    started(run_id, state)

    def missing_since() -> datetime | None:
        return Run.objects.get(id=run_id).missing_since

    steps = [
        # (time, held, missing_since afterwards, expired)
        (3, True, None, []),
        (10, False, at(10), []),  # missing from this round on
        (40, False, at(10), []),  # still marked from 10 s
        (10 + TIMEOUT, False, at(10), []),  # exactly the timeout: not yet
        (11 + TIMEOUT, True, None, []),  # held again: the mark goes
        (100, False, at(100), []),  # missing anew, counted from now
        (100 + TIMEOUT, False, at(100), []),
    ]
    for t, held, since, expired in steps:
        answer = round_([run_id] if held else [], t)
        assert (answer.expired, missing_since()) == (expired, since), t
        assert Run.objects.get(id=run_id).state == state, t
    answer = round_([], 100.5 + TIMEOUT)
    assert answer.expired == [run_id]
    run = Run.objects.get(id=run_id)
    assert (run.state, run.failure_subcategory, run.finished_at) == (
        "lease_expired",
        "lease-expired",
        at(160.5),
    )
    assert types_for(run.job_id).count("lease_expired") == 1


# --- nodes ------------------------------------------------------------------------------------


def node(name: str, cpu: str = "8", **more) -> pb.NodeInfo:
    return pb.NodeInfo(name=name, allocatable={"cpu": cpu, "memory": "32Gi"}, **more)


def api_round(agent: ApiAgent, t: float, nodes: list[pb.NodeInfo], pool: str = "default"):
    """A round through the agent's client (the server digests the nodes as it gets them)."""
    agent.channel.now = at(t)
    return agent.api.lease(
        pb.LeaseRequest(executor_id="test", session=agent.session, pool=pool, nodes=nodes)
    )


def nodes_now() -> dict[str, tuple]:
    return {
        n.name: (n.pk, n.pool, n.allocatable, n.unschedulable, n.non_armada_allocated, n.last_seen)
        for n in Node.objects.filter(executor_id="test")
    }


def node_queries(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if Node._meta.db_table in q["sql"]]


def test_an_unchanged_node_list_writes_no_node_row_but_the_heartbeat(agent):
    listed = [node("a"), node("b", labels={"zone": "z1"})]
    api_round(agent, 1, listed)
    before = nodes_now()
    assert set(before) == {"a", "b"} and {v[5] for v in before.values()} == {at(1)}
    with CaptureQueriesContext(connection) as queries:
        api_round(agent, 5, listed)
    assert node_queries(queries) == []
    assert nodes_now() == before  # last_seen too
    assert Executor.objects.get(id="test").last_heartbeat == at(5)
    with CaptureQueriesContext(connection) as queries:
        api_round(agent, 6, [node("a"), node("b", labels={"zone": "z2"})])  # one label changed
    assert node_queries(queries) != []
    assert Node.objects.get(name="b").labels == {"zone": "z2"}


def test_a_changed_node_list_replaces_the_nodes(agent):
    api_round(agent, 1, [node("a"), node("b")])
    b_pk = Node.objects.get(executor_id="test", name="b").pk
    api_round(
        agent,
        5,
        [
            node("b", cpu="16", unschedulable=True),
            node(
                "c",
                non_armada_allocated={"cpu": "500m", "memory": "1Gi"},
                labels={"zone": "z1"},
                taints=[pb.Taint(key="gpu", value="yes", effect="NoSchedule")],
            ),
        ],
    )
    nodes = {n.name: n for n in Node.objects.filter(executor_id="test")}
    assert set(nodes) == {"b", "c"}  # a is gone
    b, c = nodes["b"], nodes["c"]
    assert (b.pk, b.allocatable["cpu"], b.unschedulable, b.last_seen) == (b_pk, 16000, True, at(5))
    assert c.non_armada_allocated == {"cpu": 500, "memory": 1024**3 * 1000}
    assert (c.unschedulable, c.labels, c.taints, c.pool) == (
        False,
        {"zone": "z1"},
        [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
        "default",
    )


def test_a_restart_in_another_pool_moves_the_nodes_there(agent, owner):
    assert {n.pool for n in Node.objects.filter(executor_id="test")} == {"default"}
    moved = api_agent(executor_config(pool="gpu"), instance="restarted")
    moved.tick(at(5))  # a new process with the same nodes in another pool
    assert Executor.objects.get(id="test").pool == "gpu"
    assert list(Node.objects.filter(executor_id="test").values_list("name", "pool")) == [
        ("n", "gpu")
    ]
    job_id = submit(owner)
    scheduler_cycle(now=at(6))
    run = Run.objects.get(job_id=job_id)
    assert (run.executor, run.node, run.pool) == ("test", "n", "gpu")


def test_a_round_in_another_pool_moves_the_nodes_there(agent):
    listed = [node("a"), node("b")]
    api_round(agent, 1, listed)
    api_round(agent, 2, listed, pool="gpu")
    assert set(Node.objects.filter(executor_id="test").values_list("name", "pool")) == {
        ("a", "gpu"),
        ("b", "gpu"),
    }
    assert Executor.objects.get(id="test").pool == "gpu"
