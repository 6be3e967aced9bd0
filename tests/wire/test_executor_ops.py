"""The executor API's three operations (``wire.executor_ops``) as the server handles them
(``wire.executor_server.handle``: credential, message, executor id, session, fields, in that
order): every refusal with its status code and a message that says why, changing nothing;
two processes of one executor id (the newer fences the older); malformed events refused one
by one beside good ones; kept pods recorded. And the other way round: an executor's key is
no key for Armada's public gRPC API."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import grpc
import pytest
from google.protobuf.message import Message
from rest_framework.exceptions import AuthenticationFailed

from armada.core.config import parse_config
from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.client import (
    ApiRefused,
    ApiUnavailable,
    ExecutorApiClient,
    Fenced,
    SessionLost,
)
from armada.executor.api.messages import timestamp
from armada.models import Event, Executor, ExecutorCredential, MetricCounter, Node, Run, RunLog
from armada.services.executor_credentials import executor_credential_revoke
from armada.services.kept_pods import KEPT_PODS_DELETED_COUNTER
from armada.services.scheduler import scheduler_cycle
from armada.services.stopping import CANCEL, PREEMPT, runs_request_stop
from armada.services.submit import job_submit
from armada.services.tokens import token_create
from armada.wire import executor_ops, grpc_auth
from armada.wire.executor_server import handle
from armada.wire.server import WireError, status_of
from tests.conftest import T0, at, job, job_file
from tests.executor_api import LoopbackChannel, credential_for
from tests.wire.grpc_server import bearer, failure, get_queue

pytestmark = pytest.mark.django_db

PEER = "ipv4:10.1.2.3:40000"
RESPONSES = {
    "OpenSession": pb.OpenSessionResponse,
    "LeaseJobRuns": pb.LeaseStreamMessage,
    "ReportEvents": pb.ReportResponse,
}
OPERATIONS = list(RESPONSES)
NODES = [pb.NodeInfo(name="n", allocatable={"cpu": "8", "memory": "16Gi"})]
NOW = at(10)  # when a call arrives, unless a test says otherwise
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT


def call(name: str, request: Message | bytes, metadata, now: datetime = NOW) -> list:
    """The operation's parsed answers (one for a unary call)."""
    raw = request if isinstance(request, bytes) else request.SerializeToString()
    return [RESPONSES[name].FromString(a) for a in handle(name, metadata, PEER, raw, now)]


def refusal(name: str, request: Message | bytes, metadata, now: datetime = NOW) -> WireError:
    """The status the operation is refused with (never INTERNAL: that would be a bug)."""
    with pytest.raises(Exception) as caught:  # noqa: PT011 - any error; its status is checked
        call(name, request, metadata, now)
    status = status_of(caught.value)
    assert status.code != grpc.StatusCode.INTERNAL, repr(caught.value)
    return status


def auth(key: str, scheme: str = "Bearer") -> tuple:
    return (("authorization", f"{scheme} {key}"),)


def open_request(executor_id: str = "test", **more) -> pb.OpenSessionRequest:
    fields = {"pool": "default", "backend": "fake", "instance": "host-1/100"} | more
    return pb.OpenSessionRequest(executor_id=executor_id, **fields)


def lease_request(session: str, executor_id: str = "test", **more) -> pb.LeaseRequest:
    fields = {"pool": "default", "nodes": NODES} | more
    return pb.LeaseRequest(executor_id=executor_id, session=session, **fields)


def report_request(session: str, events=(), executor_id: str = "test", **more):
    return pb.ReportRequest(executor_id=executor_id, session=session, events=events, **more)


def request_for(name: str, session: str = "", executor_id: str = "test") -> Message:
    if name == "OpenSession":
        return open_request(executor_id)
    if name == "LeaseJobRuns":
        return lease_request(session, executor_id)
    return report_request(session, executor_id=executor_id)


def event(run_id: str, phase: int, t: float | None, **more) -> pb.RunEvent:
    message = pb.RunEvent(run_id=run_id, phase=phase, **more)
    if t is not None:
        message.at.CopyFrom(timestamp(at(t)))
    return message


def open_session(key: str, executor_id: str = "test", t: float = 0, **more) -> str:
    [answer] = call("OpenSession", open_request(executor_id, **more), auth(key), at(t))
    return answer.session


def written() -> tuple:
    """What a call of the executor API could write (besides a credential's last use)."""
    return (
        list(Executor.objects.order_by("id").values()),
        list(Node.objects.order_by("id").values()),
        list(Run.objects.order_by("id").values()),
        Event.objects.count(),
        sorted(MetricCounter.objects.values_list("name", "labels_key", "value")),
    )


@pytest.fixture
def key() -> str:
    return credential_for("test", T0)


@pytest.fixture
def session(key) -> str:
    """Executor ``test``'s session, opened at 0 s, and its node ``n`` from a round at 1 s."""
    opened = open_session(key)
    call("LeaseJobRuns", lease_request(opened), auth(key), at(1))
    return opened


@pytest.fixture
def leased(session, queue, owner) -> list[str]:
    """Two runs leased at 2 s to executor ``test``."""
    job_submit(actor=owner, data=job_file(jobs=[job_spec(), job_spec()]), now=at(0))
    assert scheduler_cycle(now=at(2)).leased == 2
    return list(Run.objects.order_by("id").values_list("id", flat=True))


def job_spec() -> dict:
    return job(cpu="1")


# --- OpenSession ------------------------------------------------------------------------------


def test_a_session_registers_the_executor_and_answers_the_timeout(key):
    [answer] = call(
        "OpenSession",
        open_request(tracked_node_labels=["zone"], backend="local"),
        auth(key),
        at(5),
    )
    assert len(answer.session) == 32 and answer.executor_timeout_seconds == 60.0
    executor = Executor.objects.get(id="test")
    assert (
        executor.pool,
        executor.backend,
        executor.tracked_node_labels,
        executor.instance,
        executor.session,
        executor.registered_at,
        executor.last_heartbeat,
    ) == ("default", "local", ["zone"], "host-1/100", answer.session, at(5), at(5))


@pytest.mark.parametrize(
    ("request_fields", "field", "words"),
    [
        ({"executor_id": "Not_A_Label"}, "executorId", "lower-case RFC 1123 label"),
        ({"pool": "nope"}, "pool", "'nope' is not a pool of this control plane (default)"),
        ({"pool": ""}, "pool", "'' is not a pool"),
        ({"backend": ""}, "backend", "must be 1 to 32 characters"),
        ({"tracked_node_labels": ["zone", ""]}, "trackedNodeLabels[1]", "1 to 317 characters"),
        ({"instance": "host\x00name"}, "instance", "must not contain the NUL character"),
    ],
)
def test_a_bad_session_request_is_invalid_naming_the_field_and_registers_nothing(
    key, request_fields, field, words
):
    fields = {"executor_id": "test"} | request_fields
    status = refusal("OpenSession", open_request(**fields), auth(key))
    assert status.code == INVALID_ARGUMENT
    assert f"{field}: " in status.message and words in status.message, status.message
    assert not Executor.objects.exists()


# --- who is calling ---------------------------------------------------------------------------


@pytest.fixture
def personal_token(owner) -> str:
    return token_create(user=owner, name="mine", expires_at=None, now=T0).key


CREDENTIALS = [
    # (the authorization metadata, or None for none at all; words of the refusal)
    pytest.param(None, "no executor credential", id="none"),
    pytest.param("", "no executor credential", id="empty"),
    pytest.param("Bearer", "no executor credential", id="scheme-alone"),
    pytest.param("Bearer   ", "no executor credential", id="scheme-and-spaces"),
    pytest.param("Basic b2xpdmU6b2xpdmUtcGFzc3dvcmQ=", "no executor credential", id="a-password"),
    pytest.param("{key}", "no executor credential", id="no-scheme"),
    pytest.param("Bearer {personal}", "this is a personal API token", id="a-personal-token"),
    pytest.param("Bearer arme_" + "x" * 40, "unknown executor key", id="an-unknown-key"),
    pytest.param("Bearer arme_short", "not an executor key", id="not-a-key"),
    pytest.param("Bearer {key} {key}", "not an executor key", id="two-keys"),
]


@pytest.mark.parametrize("name", OPERATIONS)
@pytest.mark.parametrize(("header", "words"), CREDENTIALS)
def test_a_call_without_a_good_credential_is_unauthenticated(
    key, personal_token, name, header, words
):
    session = open_session(key) if name != "OpenSession" else ""
    before = written()
    metadata = (
        ()
        if header is None
        else (("authorization", header.format(key=key, personal=personal_token)),)
    )
    status = refusal(name, request_for(name, session), metadata)
    assert status.code == UNAUTHENTICATED
    assert words in status.message, status.message
    assert written() == before


def test_the_credential_is_checked_before_the_message(key):
    assert refusal("LeaseJobRuns", b"\xff\xff", ()).code == UNAUTHENTICATED
    assert refusal("LeaseJobRuns", b"\xff\xff", auth(key)).code == INVALID_ARGUMENT


def test_a_key_works_with_either_scheme_word(key):
    assert call("OpenSession", open_request(), auth(key, "Token"))[0].session
    assert call("OpenSession", open_request(), auth(key, "bearer"))[0].session


def test_a_revoked_credential_is_refused_from_the_very_next_call(key, session, admin_user):
    call("LeaseJobRuns", lease_request(session), auth(key), at(5))
    credential = ExecutorCredential.objects.get(cluster_id="test")
    executor_credential_revoke(actor=admin_user, credential_id=credential.pk, now=at(6))
    before = written()
    for name in OPERATIONS:
        status = refusal(name, request_for(name, session), auth(key), at(7))
        assert status.code == UNAUTHENTICATED
        assert (
            "executor credential refused: executor credential 'test-0' of cluster 'test' "
            "was revoked at 2026-01-01 12:00:06 UTC"
        ) in status.message, status.message
    assert written() == before


@pytest.mark.parametrize("name", OPERATIONS)
def test_a_credential_acts_only_for_its_own_cluster(name):
    a_key, b_key = credential_for("cluster-a", T0), credential_for("cluster-b", T0)
    b_session = open_session(b_key, "cluster-b")
    before = written()
    status = refusal(name, request_for(name, b_session, "cluster-b"), auth(a_key))
    assert status.code == grpc.StatusCode.PERMISSION_DENIED
    assert status.message == (
        "this credential is for executor cluster-a; it may not act for 'cluster-b'"
    )
    assert written() == before  # cluster-b's session, heartbeat and nodes as they were


@pytest.mark.parametrize("name", ["LeaseJobRuns", "ReportEvents"])
def test_an_executor_that_never_opened_a_session_is_not_found(name):
    ghost = credential_for("ghost", T0)
    status = refusal(name, request_for(name, "made-up", "ghost"), auth(ghost))
    assert status.code == grpc.StatusCode.NOT_FOUND
    assert status.message == "executor ghost is not registered: open a session first"
    assert not Executor.objects.exists()


# --- malformed messages -----------------------------------------------------------------------


@pytest.mark.parametrize("name", OPERATIONS)
@pytest.mark.parametrize(
    "raw", [b"\xff\xff\xff", b"\x0a\x05ab", b"\x12\x02\xc3\x28"], ids=["garbled", "cut", "not-utf8"]
)
def test_bytes_that_are_not_the_request_message_are_invalid(key, session, name, raw):
    before = written()
    status = refusal(name, raw, auth(key))
    assert status.code == INVALID_ARGUMENT
    request_class = executor_ops.OPERATIONS[name].request_class
    assert f"not a valid {request_class.DESCRIPTOR.full_name} message" in status.message
    assert written() == before


def test_a_round_in_a_pool_the_control_plane_does_not_have_is_invalid(key, session):
    before = written()
    status = refusal("LeaseJobRuns", lease_request(session, pool="gpu"), auth(key))
    assert status.code == INVALID_ARGUMENT
    assert status.message == (
        "invalid request: pool: 'gpu' is not a pool of this control plane (default)"
    )
    assert written() == before


def _node(name: str = "m", **more) -> pb.NodeInfo:
    fields = {"allocatable": {"cpu": "4", "memory": "8Gi"}} | more
    return pb.NodeInfo(name=name, **fields)


@pytest.mark.parametrize(
    ("second", "field", "words"),
    [
        (_node(""), "nodes[1].name", "must be 1 to 253 characters"),
        (_node("x" * 254), "nodes[1].name", "must be 1 to 253 characters"),
        (_node("n"), "nodes[1].name", "duplicate node name 'n'"),
        (
            _node(allocatable={"cpu": "lots"}),
            "nodes[1].allocatable.cpu",
            "'lots' is not a quantity",
        ),
        (
            _node(allocatable={"memory": "-1Gi"}),
            "nodes[1].allocatable.memory",
            "'-1Gi' is not a quantity",
        ),
        (
            _node(non_armada_allocated={"cpu": "1.5.0"}),
            "nodes[1].nonArmadaAllocated.cpu",
            "'1.5.0' is not a quantity",
        ),
        (
            _node(
                taints=[pb.Taint(key="k", effect="NoSchedule"), pb.Taint(key="k", effect="Never")]
            ),
            "nodes[1].taints[1].effect",
            "'Never' is not one of NoSchedule, PreferNoSchedule, NoExecute",
        ),
        (_node(labels={"zone": "a\x00b"}), "nodes[1].labels[zone]", "must not contain the NUL"),
    ],
    ids=[
        "empty-name",
        "long-name",
        "duplicate-name",
        "bad-quantity",
        "negative-quantity",
        "bad-non-armada-quantity",
        "bad-taint-effect",
        "nul-in-a-label",
    ],
)
def test_a_bad_node_is_invalid_naming_its_field_and_nothing_is_written(
    key, session, second, field, words
):
    before = written()
    nodes = [_node("n"), second]
    status = refusal("LeaseJobRuns", lease_request(session, nodes=nodes), auth(key), at(20))
    assert status.code == INVALID_ARGUMENT
    assert f"{field}: {words}" in status.message, status.message
    assert written() == before  # no heartbeat, no node


def test_every_bad_node_field_is_named_at_once(key, session):
    nodes = [_node(""), _node("n", allocatable={"cpu": "x"}), _node("n")]
    status = refusal("LeaseJobRuns", lease_request(session, nodes=nodes), auth(key))
    assert status.message.count(": ") >= 3
    for field in ("nodes[0].name", "nodes[1].allocatable.cpu", "nodes[2].name"):
        assert field in status.message


# --- two processes with one executor id -------------------------------------------------------


def test_a_second_session_fences_the_first_process(key, leased):
    first = Executor.objects.get(id="test").session
    second = open_session(key, instance="host-2/200", t=5)
    assert second != first
    before = written()
    for name, request in (
        ("LeaseJobRuns", lease_request(first)),
        ("ReportEvents", report_request(first, [event(leased[0], pb.PENDING, 6)])),
    ):
        status = refusal(name, request, auth(key), at(6))
        assert status.code == grpc.StatusCode.FAILED_PRECONDITION
        assert status.message.startswith("fenced: executor test has a newer session"), status
        assert "host-2/200" in status.message and "must stop acting for it" in status.message
    assert written() == before  # no heartbeat, no report applied

    messages = call("LeaseJobRuns", lease_request(second), auth(key), at(7))
    assert sorted(lease.run_id for lease in messages[0].leases.leases) == sorted(leased)
    [answer] = call(
        "ReportEvents", report_request(second, [event(leased[0], pb.PENDING, 7)]), auth(key), at(7)
    )
    assert [r.outcome for r in answer.results] == [pb.APPLIED]
    assert Executor.objects.get(id="test").last_heartbeat == at(7)


@pytest.mark.parametrize("session", ["", "0" * 32])
def test_a_call_without_the_current_session_is_fenced(key, session):
    open_session(key)
    for name in ("LeaseJobRuns", "ReportEvents"):
        status = refusal(name, request_for(name, session), auth(key))
        assert status.code == grpc.StatusCode.FAILED_PRECONDITION and "fenced" in status.message


def test_the_client_tells_the_agent_what_each_refusal_means(key, session):
    """``client.error_of``: the exception the agent acts on, for each way a call fails."""
    channel = LoopbackChannel()
    channel.now = at(10)
    holder = {"key": key}
    client = ExecutorApiClient(channel, lambda: holder["key"])
    with pytest.raises(Fenced, match="fenced"):
        client.lease(lease_request("stale"))
    with pytest.raises(ApiRefused, match="may not act for 'other'"):
        client.lease(lease_request(session, "other"))
    with pytest.raises(ApiRefused, match="is not a pool"):
        client.lease(lease_request(session, pool="gpu"))
    with pytest.raises(SessionLost, match="not registered"):
        ExecutorApiClient(channel, lambda: credential_for("ghost", T0)).lease(
            lease_request("x", "ghost")
        )
    holder["key"] = "arme_" + "y" * 40
    with pytest.raises(ApiRefused, match="unknown executor key") as refused:
        client.report(report_request(session))
    assert refused.value.code == UNAUTHENTICATED
    channel.down = True
    with pytest.raises(ApiUnavailable):
        client.open_session(open_request())


# --- LeaseJobRuns' answer ---------------------------------------------------------------------


def test_a_rounds_answer_is_leases_in_chunks_then_cancels_preempts_stops_and_the_end(
    key, session, queue, owner, monkeypatch
):
    monkeypatch.setattr(executor_ops, "LEASES_PER_MESSAGE", 2)
    ids = job_submit(
        actor=owner,
        data=job_file(jobs=[job_spec() for _ in range(5)]),
        now=at(0),
    )
    assert scheduler_cycle(now=at(2)).leased == 5
    run_of = {j: Run.objects.get(job_id=j).id for j in ids}
    runs_request_stop(job_ids=[ids[3]], kind=CANCEL, reason="c", now=at(3))
    runs_request_stop(job_ids=[ids[4]], kind=PREEMPT, reason="p", now=at(3))
    messages = call("LeaseJobRuns", lease_request(session, run_ids=["gone-run"]), auth(key), at(4))
    kinds = [m.WhichOneof("event") for m in messages]
    assert kinds == ["leases", "leases", "cancel_runs", "preempt_runs", "stop_runs", "end"]
    leases = [lease for m in messages[:2] for lease in m.leases.leases]
    assert [len(m.leases.leases) for m in messages[:2]] == [2, 1]
    assert sorted(lease.run_id for lease in leases) == sorted(run_of[j] for j in ids[:3])
    assert list(messages[2].cancel_runs.run_ids) == [run_of[ids[3]]]
    assert list(messages[3].preempt_runs.run_ids) == [run_of[ids[4]]]
    assert list(messages[4].stop_runs.run_ids) == ["gone-run"]

    lease = next(lease for lease in leases if lease.job_id == ids[0])
    run = Run.objects.get(id=lease.run_id)
    assert (lease.queue, lease.job_set, lease.owner, lease.node, lease.namespace) == (
        "demo",
        "set-1",
        "olive",
        "n",
        "default",
    )
    assert lease.pod_name == run.pod_name == f"armada-{ids[0]}-0"
    assert lease.leased_at.ToDatetime(tzinfo=UTC) == at(2)
    spec = json.loads(lease.pod_spec_json)
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}


def test_a_quiet_round_answers_only_the_end_marker(key, session):
    messages = call("LeaseJobRuns", lease_request(session), auth(key), at(4))
    assert [m.WhichOneof("event") for m in messages] == ["end"]


# --- ReportEvents -----------------------------------------------------------------------------


def test_malformed_events_are_refused_one_by_one_and_the_good_ones_applied(key, leased):
    session = Executor.objects.get(id="test").session
    a = leased[0]
    events = [
        event(a, pb.PENDING, 5),
        event("", pb.PENDING, 5),
        event(a, pb.RUN_PHASE_UNSPECIFIED, 5),
        event(a, pb.RUNNING, None),
        event(a, 99, 5),
        event(a, pb.RUNNING, 6),
        event("no-such-run", pb.RUNNING, 6),
    ]
    [answer] = call("ReportEvents", report_request(session, events), auth(key), at(7))
    got = [(r.run_id, r.outcome, r.reason) for r in answer.results]
    assert got == [
        (a, pb.APPLIED, ""),
        ("", pb.REFUSED, "events[1].runId: missing"),
        (a, pb.REFUSED, "events[2].phase: missing or unknown (0)"),
        (a, pb.REFUSED, "events[3].at: missing (when the pod reached the phase)"),
        (a, pb.REFUSED, "events[4].phase: missing or unknown (99)"),
        (a, pb.APPLIED, ""),
        ("no-such-run", pb.REFUSED, "run no-such-run is not a run of executor test"),
    ]
    run = Run.objects.get(id=a)
    assert (run.state, run.pending_at, run.running_at) == ("running", at(5), at(6))
    assert list(Event.objects.filter(run_id=a).values_list("type", flat=True)) == [
        "leased",
        "pending",
        "running",
    ]


def test_an_empty_report_answers_no_results(key, session):
    [answer] = call("ReportEvents", report_request(session), auth(key))
    assert list(answer.results) == []


def test_a_report_carries_what_a_failure_says(key, leased):
    session = Executor.objects.get(id="test").session
    a = leased[0]
    failed = event(
        a,
        pb.FAILED,
        8,
        exit_code=3,
        exit_codes={"main": 3},
        reason="Error",
        message="flaky",
        failure_category="flaky",
        hint="try again",
        log="last words",
    )
    failed.pod_kept_until.CopyFrom(timestamp(at(1000)))
    [answer] = call(
        "ReportEvents", report_request(session, [event(a, pb.RUNNING, 6), failed]), auth(key)
    )
    assert [r.outcome for r in answer.results] == [pb.APPLIED, pb.APPLIED]
    run = Run.objects.get(id=a)
    assert (
        run.state,
        run.exit_code,
        run.exit_codes,
        run.reason,
        run.message,
        run.failure_category,
        run.hint,
        run.finished_at,
        run.pod_kept_until,
        RunLog.objects.get(run_id=a).text,
    ) == (
        "failed",
        3,
        {"main": 3},
        "Error",
        "flaky",
        "flaky",
        "try again",
        at(8),
        at(1000),
        "last words",
    )


def test_kept_pods_deleted_are_recorded_and_those_past_retention_counted(key, leased):
    session = Executor.objects.get(id="test").session
    a, b = leased
    for run_id in (a, b):
        failed = event(run_id, pb.FAILED, 8, exit_code=1, failure_category="user-error")
        failed.pod_kept_until.CopyFrom(timestamp(at(1000)))
        call("ReportEvents", report_request(session, [failed]), auth(key), at(9))
    pod_a, pod_b = (Run.objects.get(id=r).pod_name for r in (a, b))

    def counted() -> dict:
        return {
            c.labels["cluster"]: c.value
            for c in MetricCounter.objects.filter(name=KEPT_PODS_DELETED_COUNTER)
        }

    # a's pod freed for a retry (not counted); a name no run has is harmless.
    [answer] = call(
        "ReportEvents",
        report_request(session, kept_pods_deleted=[pod_a, "armada-unknown-0"]),
        auth(key),
        at(20),
    )
    assert list(answer.results) == []
    assert Run.objects.get(id=a).pod_kept_until == at(20)
    assert Run.objects.get(id=b).pod_kept_until == at(1000)
    assert counted() == {}
    # b's pod outlived its retention: counted once, however many the executor claims.
    call(
        "ReportEvents",
        report_request(session, kept_pods_deleted=[pod_b], kept_pods_expired=5),
        auth(key),
        at(1001),
    )
    assert Run.objects.get(id=b).pod_kept_until == at(1000)  # already past: left as it was
    assert counted() == {"test": 1}


# --- an executor key on Armada's public gRPC API ----------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("scheme", ["Bearer", "Token"])
@pytest.mark.parametrize("revoked", [False, True], ids=["live", "revoked"])
def test_an_executor_key_is_no_key_for_armadas_grpc_api(
    serve, settings, admin_user, queue, scheme, revoked
):
    key = credential_for("test", T0)
    if revoked:
        pk = ExecutorCredential.objects.get(cluster_id="test").pk
        executor_credential_revoke(actor=admin_user, credential_id=pk, now=T0)
    with pytest.raises(AuthenticationFailed, match="no such token") as caught:
        grpc_auth.authenticate(auth(key, scheme), PEER)
    assert status_of(caught.value).code == UNAUTHENTICATED
    server = serve()
    error = failure(lambda: get_queue(server, auth(key, scheme), name="demo"))
    assert error.code() == UNAUTHENTICATED
    assert "no such token" in error.details()
    # ... even where anonymous callers are let in: a key that is sent must be good.
    settings.ARMADA = parse_config({"auth": {"anonymousAuth": True}})
    error = failure(lambda: get_queue(server, bearer(key), name="demo"))
    assert error.code() == UNAUTHENTICATED
