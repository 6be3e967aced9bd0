"""armada.core.states: the run lifecycle; terminal states never move."""

from __future__ import annotations

import itertools

import pytest

from armada.core.states import (
    JOB_STATE_FOR_RUN,
    JOB_TERMINAL,
    RUN_TERMINAL,
    EventType,
    JobState,
    RunState,
    run_can_move,
)

R = RunState

# The lifecycle, written out independently of the module: leased -> pending -> running -> end.
# A lease can be returned only before the pod runs; any live run can be lost or end.
ALLOWED = {
    R.LEASED: {
        R.PENDING,
        R.RUNNING,
        R.SUCCEEDED,
        R.FAILED,
        R.CANCELLED,
        R.PREEMPTED,
        R.LEASE_RETURNED,
        R.LEASE_EXPIRED,
    },
    R.PENDING: {
        R.RUNNING,
        R.SUCCEEDED,
        R.FAILED,
        R.CANCELLED,
        R.PREEMPTED,
        R.LEASE_RETURNED,
        R.LEASE_EXPIRED,
    },
    R.RUNNING: {R.SUCCEEDED, R.FAILED, R.CANCELLED, R.PREEMPTED, R.LEASE_EXPIRED},
}
TERMINAL_RUNS = [R.SUCCEEDED, R.FAILED, R.CANCELLED, R.PREEMPTED, R.LEASE_RETURNED, R.LEASE_EXPIRED]


@pytest.mark.parametrize(
    ("current", "target"),
    list(itertools.product(RunState, RunState)),
    ids=[f"{a.value}->{b.value}" for a, b in itertools.product(RunState, RunState)],
)
def test_run_can_move(current, target):
    assert run_can_move(current, target) is (target in ALLOWED.get(current, set()))


@pytest.mark.parametrize("current", TERMINAL_RUNS, ids=str)
def test_terminal_runs_never_move(current):
    assert current.terminal
    assert not any(run_can_move(current, target) for target in RunState)


@pytest.mark.parametrize("state", list(RunState), ids=str)
def test_no_run_moves_to_itself(state):
    assert not run_can_move(state, state)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (R.PENDING, R.LEASED),
        (R.RUNNING, R.PENDING),
        (R.RUNNING, R.LEASED),
        (R.RUNNING, R.LEASE_RETURNED),
    ],
    ids=["pending->leased", "running->pending", "running->leased", "running->lease_returned"],
)
def test_runs_never_go_back(current, target):
    assert not run_can_move(current, target)


def test_run_terminal_set():
    assert set(RUN_TERMINAL) == set(TERMINAL_RUNS)
    assert {s for s in RunState if s.terminal} == set(TERMINAL_RUNS)
    assert {s for s in RunState if not s.terminal} == set(ALLOWED)


@pytest.mark.parametrize(
    ("state", "terminal", "active"),
    [
        (JobState.QUEUED, False, False),
        (JobState.LEASED, False, True),
        (JobState.PENDING, False, True),
        (JobState.RUNNING, False, True),
        (JobState.SUCCEEDED, True, False),
        (JobState.FAILED, True, False),
        (JobState.CANCELLED, True, False),
        (JobState.PREEMPTED, True, False),
        (JobState.REJECTED, True, False),
    ],
    ids=str,
)
def test_job_state_flags(state, terminal, active):
    assert state.terminal is terminal
    assert state.active is active
    assert (state in JOB_TERMINAL) is terminal


@pytest.mark.parametrize(
    ("run", "job"),
    [
        (R.LEASED, JobState.LEASED),
        (R.PENDING, JobState.PENDING),
        (R.RUNNING, JobState.RUNNING),
        (R.SUCCEEDED, JobState.SUCCEEDED),
        (R.FAILED, JobState.FAILED),
        (R.CANCELLED, JobState.CANCELLED),
        (R.PREEMPTED, JobState.PREEMPTED),
    ],
    ids=str,
)
def test_job_state_mirrors_run_state(run, job):
    assert JOB_STATE_FOR_RUN[run] is job
    assert job.terminal is run.terminal


@pytest.mark.parametrize("run", [R.LEASE_RETURNED, R.LEASE_EXPIRED], ids=str)
def test_lost_leases_have_no_job_state(run):
    # The job goes back to queued (or is retried) rather than mirroring these.
    assert run not in JOB_STATE_FOR_RUN


@pytest.mark.parametrize(
    ("enum", "value"),
    [
        (JobState.QUEUED, "queued"),
        (RunState.LEASE_RETURNED, "lease_returned"),
        (RunState.LEASE_EXPIRED, "lease_expired"),
        (EventType.SUBMITTED, "submitted"),
        (EventType.REPRIORITIZED, "reprioritized"),
        (EventType.PREEMPTING, "preempting"),
    ],
    ids=str,
)
def test_states_are_plain_strings(enum, value):
    assert enum == value
    assert str(enum) == value
    assert type(enum)(value) is enum
