"""Utilisation on the executor's side: the period's aggregation (``core.utilisation``), the
fake backend's simulated usage and stable pod UIDs, the tracker's one report per run per
period, and the agent sending them through the executor API so that they become
``utilisation`` events, next to run events that carry the pod's UID."""

from __future__ import annotations

from datetime import timedelta

import pytest

from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.core.utilisation import UsageAggregation, UsageSample, scaled
from armada.executor.backends.base import PodRequest, PodStatus
from armada.executor.backends.fake import FakeBackend
from armada.executor.utilisation import SAMPLES_PER_PERIOD, UtilisationTracker
from armada.models import Event, Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import T0, at, container, fake_agent, job_file

FAKE = "fake.armadaproject.io/"
MIB = 1024 * 1024 * 1000


# --- the aggregation ---------------------------------------------------------------------


def test_a_period_holds_the_largest_and_mean_reading_and_the_cumulative_usage():
    agg = UsageAggregation()
    agg.add(UsageSample(at(0), {"memory": 10 * MIB}, {"cpu": 0}))
    agg.add(UsageSample(at(10), {"memory": 30 * MIB}, {"cpu": 5000}))  # 0.5 cores
    agg.add(UsageSample(at(20), {"memory": 20 * MIB}, {"cpu": 25000}))  # 2 cores
    agg.add(UsageSample(at(20), {"memory": 99 * MIB}, {"cpu": 99999}))  # the same time again
    report = agg.report("r1", at(20), "uid-1")
    assert report.max_usage == {"memory": 30 * MIB, "cpu": 2000}
    assert report.avg_usage == {"memory": 20 * MIB, "cpu": 1250}
    assert report.cumulative == {"cpu": 25000}
    assert (report.run_id, report.at, report.kubernetes_id) == ("r1", at(20), "uid-1")
    # The next period starts empty but keeps the cumulative usage and the last reading.
    assert agg.empty and agg.report("r1", at(21)) is None
    agg.add(UsageSample(at(30), {"memory": 5 * MIB}, {"cpu": 35000}))
    later = agg.report("r1", at(30))
    assert later.max_usage == {"memory": 5 * MIB, "cpu": 1000}
    assert later.cumulative == {"cpu": 35000}


def test_memory_is_reported_in_whole_bytes_and_cpu_as_it_is():
    assert scaled({"memory": 1500, "cpu": 1500}) == {"memory": 2000, "cpu": 1500}


# --- the fake backend --------------------------------------------------------------------


def fake_pod(name: str, cpu: str = "500m", memory: str = "256Mi", duration: str = "1h"):
    return PodRequest(
        name,
        f"run-{name}",
        f"job-{name}",
        "n",
        {"containers": [container(cpu, memory), container("250m", "128Mi", name="side")]},
        {FAKE + "duration": duration},
    )


def test_a_fake_pod_has_one_uid_for_its_life_and_a_new_pod_a_new_one():
    backend = FakeBackend()
    backend.create_pod(fake_pod("a"), T0)
    backend.create_pod(fake_pod("b"), T0)
    first = {s.name: s.uid for s in backend.poll(at(1))}
    assert {s.name: s.uid for s in backend.poll(at(5))} == first
    assert len(set(first.values())) == 2 and all(len(u) == 36 for u in first.values())
    backend.delete_pod("a", at(6))
    backend.create_pod(fake_pod("a"), at(7))
    again = {s.name: s.uid for s in backend.poll(at(8))}
    assert again["b"] == first["b"] and again["a"] != first["a"]


def test_a_running_fake_pod_uses_what_it_requests_and_its_cpu_adds_up():
    backend = FakeBackend()
    backend.create_pod(fake_pod("a"), T0)
    backend.create_pod(fake_pod("short", duration="1s"), T0)
    statuses = backend.poll(at(10))
    samples = backend.usage(statuses, at(10))
    assert set(samples) == {"a"}  # the short pod has ended
    sample = samples["a"]
    assert sample.current == {"cpu": 750, "memory": 384 * MIB}
    running_for = (at(10) - next(s for s in statuses if s.name == "a").running_at).total_seconds()
    assert sample.cumulative == {"cpu": round(750 * running_for)}


# --- the tracker -------------------------------------------------------------------------


class Readings:
    """A backend whose ``usage`` returns a fixed reading and counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    def usage(self, pods: list[PodStatus], now):
        self.calls += 1
        return {p.name: UsageSample(now, {"memory": 100 * MIB}) for p in pods}


def running_pod(run_id: str, **more) -> PodStatus:
    return PodStatus(
        f"pod-{run_id}", run_id, pending_at=T0, running_at=T0, uid=f"u-{run_id}", **more
    )


def test_one_report_per_run_per_period_from_a_few_readings():
    readings = Readings()
    tracker = UtilisationTracker(readings, period=30.0)
    pods = {p.name: p for p in (running_pod("r1"), running_pod("r2"))}
    sent = []
    for second in range(0, 95):
        tracker.observe(pods, ["r1", "r2"], at(second))
        reports = tracker.take()
        tracker.sent(reports)
        sent += [(r.run_id, r.at) for r in reports]
    assert sent == [(r, at(t)) for t in (30, 60, 90) for r in ("r1", "r2")]
    assert readings.calls == 95 // (30 // SAMPLES_PER_PERIOD) + 1  # one per 6 s, not per tick
    first = UtilisationTracker(readings, period=30.0)
    first.observe(pods, ["r1"], at(0))
    first.observe(pods, ["r1"], at(30))
    [report] = first.take()
    assert (report.kubernetes_id, report.max_usage) == ("u-r1", {"memory": 100 * MIB})


def test_a_run_not_held_or_not_running_is_not_tracked_and_unsent_reports_wait():
    tracker = UtilisationTracker(Readings(), period=10.0)
    ended = running_pod("r2", finished_at=at(5))
    pods = {p.name: p for p in (running_pod("r1"), ended, running_pod("r3"))}
    tracker.observe(pods, ["r1", "r2"], at(0))
    tracker.observe(pods, ["r1", "r2"], at(10))
    assert [r.run_id for r in tracker.take()] == ["r1"]
    tracker.observe(pods, ["r1", "r2"], at(20))  # not sent meanwhile: the newer one replaces it
    [waiting] = tracker.take()
    assert waiting.at == at(20)
    tracker.observe({}, [], at(30))
    assert tracker.runs == {}


def test_a_backend_that_cannot_read_usage_reports_none():
    tracker = UtilisationTracker(object(), period=10.0)
    tracker.observe({"p": running_pod("r1")}, ["r1"], at(100))
    assert not tracker.enabled and tracker.take() == []


# --- through the agent and the executor API ----------------------------------------------


@pytest.mark.django_db
def test_the_agent_reports_pod_uids_and_utilisation_that_become_events(settings, queue, owner):
    agent = fake_agent(settings, cpu="8", memory="32Gi")
    agent.utilisation.period = 10.0  # the executor's utilisationPeriod
    spec = {
        "annotations": {FAKE + "duration": "35s"},
        "podSpec": {"containers": [container("2", "1Gi")]},
    }
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(0))
    scheduler_cycle(now=at(1))
    for second in range(2, 45):
        agent.tick(at(second))
    run = Run.objects.get(job_id=job_id)
    assert run.state == "succeeded" and len(run.kubernetes_id) == 36
    events = list(Event.objects.filter(job_id=job_id).order_by("id"))
    for e in events:
        if e.type in ("pending", "running", "succeeded"):
            assert (e.payload["kubernetesId"], e.payload["podNumber"]) == (run.kubernetes_id, 0)
    usage = [e for e in events if e.type == "utilisation"]
    # Running about 35 s with a 10 s period: three reports, each at least a period apart.
    assert len(usage) == 3
    gaps = [(b.created - a.created) for a, b in zip(usage, usage[1:], strict=False)]
    assert all(g >= timedelta(seconds=10) for g in gaps)
    for e in usage:
        assert e.payload["kubernetesId"] == run.kubernetes_id
        assert e.payload["maxResourcesForPeriod"] == {"cpu": "2", "memory": "1Gi"}
        assert e.payload["podName"] == f"armada-{job_id}-0"
    cumulative = [float(e.payload["totalCumulativeUsage"]["cpu"]) for e in usage]
    assert cumulative == sorted(cumulative) and cumulative[0] > 0


@pytest.mark.django_db
def test_a_failed_runs_event_names_its_containers_and_cause(settings, queue, owner):
    agent = fake_agent(settings)
    spec = {
        "annotations": {FAKE + "duration": "2s", FAKE + "condition": "OOMKilled"},
        "podSpec": {"containers": [container("1", "1Gi")]},
    }
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[spec]), now=at(0))
    scheduler_cycle(now=at(1))
    for second in range(2, 8):
        agent.tick(at(second))
    scheduler_cycle(now=at(8))  # decides the failure: the failed event
    run = Run.objects.get(job_id=job_id)
    [failed] = Event.objects.filter(job_id=job_id, type="failed")
    assert failed.payload["cause"] == "OOM" and run.cause == "OOM"
    assert failed.payload["kubernetesId"] == run.kubernetes_id != ""
    [main] = failed.payload["containers"]
    assert (main["name"], main["exitCode"], main["reason"]) == ("main", 137, "OOMKilled")


def test_reports_carry_the_uid_the_backend_gave_the_pod():
    from armada.executor.backends.base import ContainerResult
    from armada.executor.run_reports import container_ends, progress_reports, success_report

    class Run_:
        id = "r1"
        state = RunState.LEASED

    status = PodStatus(
        "p",
        "r1",
        pending_at=at(1),
        running_at=at(2),
        finished_at=at(3),
        succeeded=True,
        containers=(ContainerResult("main", 0, "Completed"), ContainerResult("side", None)),
        uid="the-uid",
    )
    reports = [*progress_reports(Run_(), status), success_report("r1", status, at(3), "")]
    assert [(r.state, r.kubernetes_id) for r in reports] == [
        (RunState.PENDING, "the-uid"),
        (RunState.RUNNING, "the-uid"),
        (RunState.SUCCEEDED, "the-uid"),
    ]
    assert [c.name for c in container_ends(status)] == ["main"]  # "side" never ended
    assert isinstance(reports[-1], RunReport)
