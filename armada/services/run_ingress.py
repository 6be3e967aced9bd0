"""A run's *ingress info*: the addresses of its job's ingresses, reported once by the
executor, recorded on the run and published as one ``ingress_info`` event.

The report is a ``RUNNING`` report with ``ingress_addresses`` (``core.reports``), sent after
the run's own ``RUNNING`` report and applied in the same transaction as the rest of its
batch (``services.run_reports``). Its outcomes follow the other reports' rules:

- **applied**: the run is running and has no addresses yet: they are recorded
  (``Run.ingress_addresses``, ports as text keys) and the event is written;
- **duplicate**: the run has these very addresses already (a report sent again, two
  executors' copies racing: the run row's lock makes the second see the first), or the run
  has ended (the report is past it, as a late ``running`` report would be);
- **refused**: the run is not this executor's; it is not running yet (the addresses come
  after its ``running`` report); or it has other addresses already (they are published
  once). Nothing changes, and sending it again changes nothing either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from armada.core.reports import RunReport
from armada.core.states import EventType, RunState
from armada.services.report_outcomes import Outcome, ReportOutcome

if TYPE_CHECKING:
    from armada.models import Job, Run
    from armada.services.runs import Changes

#: The run column the ingress info writes (read only by batches that hold one).
FIELD = "ingress_addresses"


def stored_addresses(addresses: Mapping[int, str]) -> dict[str, str]:
    """Addresses as the run and the event keep them: JSON keys are text, in port order."""
    return {str(port): address for port, address in sorted(addresses.items())}


def ingress_outcome(run: Run | None, report: RunReport, executor_id: str) -> ReportOutcome:
    if run is None:
        return ReportOutcome(
            Outcome.REFUSED, f"run {report.run_id} is not a run of executor {executor_id}"
        )
    current = RunState(run.state)
    if current.terminal:
        return ReportOutcome(
            Outcome.DUPLICATE,
            f"the run ended as {current} already; its ingress addresses are past",
        )
    if current != RunState.RUNNING:
        return ReportOutcome(
            Outcome.REFUSED,
            f"the run is {current}, not running: ingress addresses come after its running report",
        )
    wanted = stored_addresses(report.ingress_addresses or {})
    recorded = run.ingress_addresses or {}
    if recorded == wanted:
        return ReportOutcome(Outcome.DUPLICATE, "these ingress addresses are recorded already")
    if recorded:
        return ReportOutcome(
            Outcome.REFUSED,
            f"the run's ingress addresses are recorded already ({_text(recorded)}); they are "
            "published once",
        )
    return ReportOutcome(Outcome.APPLIED)


def record_ingress(run: Run, job: Job, report: RunReport, changes: Changes) -> None:
    """Record the addresses on the run and write the ``ingress_info`` event."""
    run.ingress_addresses = stored_addresses(report.ingress_addresses or {})
    changes.event(
        EventType.INGRESS_INFO,
        run,
        job,
        report.at,
        clusterId=run.executor,
        nodeName=run.node,
        podName=run.pod_name,
        podNamespace=job.namespace,
        ingressAddresses=dict(run.ingress_addresses),
        kubernetesId=run.kubernetes_id,
        podNumber=0,
    )


def _text(addresses: Mapping[str, str]) -> str:
    return ", ".join(f"{port}: {address}" for port, address in addresses.items())
