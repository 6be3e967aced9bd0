"""The kubernetes backend's usage readings against the emulated metrics API
(``metrics.k8s.io/v1beta1``): one list per namespace with the executor's label selector,
containers summed, pods without metrics left out; a cluster without the API gives no
readings and no error and is not asked again for ``RETRY_MISSING_AFTER``; an unavailable
one is asked again at the next reading."""

from __future__ import annotations

import logging

from armada.executor.backends.kubernetes import usage as usage_module
from tests.executor.backends.kubernetes.conftest import wait_for
from tests.executor.backends.kubernetes.test_backend import SPEC, now, request

MIB = 1024 * 1024 * 1000  # a MiB of memory in milli-units
METRICS = ("GET", "pods.metrics.k8s.io", False)
TWO_CONTAINERS = {
    **SPEC,
    "containers": [
        *SPEC["containers"],
        {
            "name": "side",
            "image": "busybox:1.36",
            "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
        },
    ],
}


class Clock:
    """Stands in for the ``time`` module of the usage reader: a monotonic clock we move."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def start(backend, *pods: tuple[str, str]):
    """Create ``pods`` ((job, namespace) pairs) and wait until all of them run; returns
    their statuses."""
    for job, namespace in pods:
        spec = TWO_CONTAINERS if job == "01both" else SPEC
        annotations = {"fake.armadaproject.io/duration": "1h"}
        backend.create_pod(
            request(job, f"run-{job}", namespace=namespace, pod_spec=spec, annotations=annotations),
            now(),
        )
    names = {f"armada-{job}-0" for job, _ in pods}

    def all_running():
        statuses = [s for s in backend.poll(now()) if s.name in names]
        ready = len(statuses) == len(names) and all(s.running_at for s in statuses)
        return statuses if ready else None

    return wait_for(all_running, "the pods to run")


def metric_requests(emulator) -> list[dict]:
    return [r for r in emulator.request_log if "/apis/metrics.k8s.io/" in r["path"]]


def test_usage_is_read_per_namespace_and_summed_over_containers(backend, emulator):
    emulator.set_metrics_api("served")
    statuses = start(backend, ("01both", "jobs"), ("01def", "default"), ("01none", "jobs"))
    emulator.set_usage("jobs", "armada-01both-0", "main", cpu="250m", memory="100Mi")
    emulator.set_usage("jobs", "armada-01both-0", "side", cpu="13000001n", memory="28Mi")
    emulator.set_usage("default", "armada-01def-0", "main", cpu="2", memory="1Gi")
    samples = backend.usage(statuses, now())
    assert set(samples) == {"armada-01both-0", "armada-01def-0"}  # 01none has no metrics yet
    assert samples["armada-01both-0"].current == {"cpu": 263, "memory": 128 * MIB}
    assert samples["armada-01def-0"].current == {"cpu": 2000, "memory": 1024 * MIB}
    assert samples["armada-01both-0"].cumulative == {}  # the metrics API has no cumulative usage
    asked = metric_requests(emulator)
    assert sorted(r["path"] for r in asked) == [
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
        "/apis/metrics.k8s.io/v1beta1/namespaces/jobs/pods",
    ]
    assert {r["params"]["labelSelector"] for r in asked} == {
        "armada_job_run_id,armadaproject.io/executor=cluster-a"
    }
    # The pod gets metrics at the next scrape; a pod that is not running is not asked about.
    emulator.set_usage("jobs", "armada-01none-0", "main", cpu="5m", memory="4Ki")
    samples = backend.usage(statuses, now())
    assert samples["armada-01none-0"].current == {"cpu": 5, "memory": 4 * 1024 * 1000}
    assert backend.usage([], now()) == {}
    assert len(metric_requests(emulator)) == 4


def test_another_executors_pods_are_not_read(make_backend, emulator):
    emulator.set_metrics_api("served")
    ours, theirs = make_backend("cluster-a"), make_backend("cluster-b")
    [mine] = start(ours, ("01mine", "jobs"))
    start(theirs, ("01theirs", "jobs"))
    emulator.set_usage("jobs", "armada-01mine-0", "main", cpu="1", memory="1Mi")
    emulator.set_usage("jobs", "armada-01theirs-0", "main", cpu="1", memory="1Mi")
    assert set(ours.usage([mine], now())) == {"armada-01mine-0"}
    [asked] = metric_requests(emulator)
    assert asked["params"]["labelSelector"].endswith("executor=cluster-a")


def test_no_metrics_api_means_no_readings_no_error_and_no_question_for_a_while(
    backend, emulator, monkeypatch, caplog
):
    clock = Clock()
    monkeypatch.setattr(usage_module, "time", clock)
    statuses = start(backend, ("01a", "jobs"), ("01b", "default"))
    emulator.set_usage("jobs", "armada-01a-0", "main", cpu="250m", memory="100Mi")
    with caplog.at_level(logging.INFO, logger=usage_module.__name__):
        assert backend.usage(statuses, now()) == {}
    # The first 404 stops the round: the other namespace is not asked either.
    assert emulator.request_counts().get(METRICS) == 1
    [noted] = [r for r in caplog.records if r.name == usage_module.__name__]
    assert noted.levelno == logging.INFO and "serves no metrics API" in noted.getMessage()
    emulator.set_metrics_api("served")  # installed meanwhile: not seen before the back-off ends
    clock.now += usage_module.RETRY_MISSING_AFTER - 1
    assert backend.usage(statuses, now()) == {}
    assert emulator.request_counts().get(METRICS) == 1
    clock.now += 1
    samples = backend.usage(statuses, now())
    assert samples["armada-01a-0"].current == {"cpu": 250, "memory": 100 * MIB}
    assert emulator.request_counts().get(METRICS) == 3  # both namespaces again


def test_an_unavailable_metrics_api_is_asked_again_at_the_next_reading(backend, emulator, caplog):
    statuses = start(backend, ("01a", "jobs"))
    emulator.set_usage("jobs", "armada-01a-0", "main", cpu="250m", memory="100Mi")
    emulator.set_metrics_api("unavailable")  # registered, but metrics-server does not answer
    with caplog.at_level(logging.WARNING, logger=usage_module.__name__):
        assert backend.usage(statuses, now()) == {}
    assert "pod metrics of namespace jobs not read" in caplog.text
    emulator.set_metrics_api("served")
    samples = backend.usage(statuses, now())
    assert samples["armada-01a-0"].current == {"cpu": 250, "memory": 100 * MIB}
    assert emulator.request_counts().get(METRICS) == 2


def test_a_forbidden_metrics_api_warns_once_and_is_asked_again_after_the_back_off(
    backend, emulator, monkeypatch, caplog
):
    """RBAC without the ``metrics.k8s.io`` rule: a 403 on every read. One warning naming
    what to grant, then no question (and no warning) until the back-off has passed."""
    clock = Clock()
    monkeypatch.setattr(usage_module, "time", clock)
    statuses = start(backend, ("01a", "jobs"))
    emulator.set_usage("jobs", "armada-01a-0", "main", cpu="250m", memory="100Mi")
    emulator.set_metrics_api("forbidden")
    with caplog.at_level(logging.INFO, logger=usage_module.__name__):
        for _ in range(3):
            assert backend.usage(statuses, now()) == {}
    [warned] = [r for r in caplog.records if r.name == usage_module.__name__]
    assert warned.levelno == logging.WARNING and "pods.metrics.k8s.io" in warned.getMessage()
    assert emulator.request_counts().get(METRICS) == 1
    emulator.set_metrics_api("served")  # the rule was granted
    clock.now += usage_module.RETRY_MISSING_AFTER
    samples = backend.usage(statuses, now())
    assert samples["armada-01a-0"].current == {"cpu": 250, "memory": 100 * MIB}
