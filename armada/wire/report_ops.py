"""Armada's ``SchedulerReporting`` service: scheduling reports as text (``{"report": ...}``).

The same reports as our REST API's (``/api/v1/reports/...``, ``/api/v1/jobs/{id}/scheduling``)
read by the same services, with the same permissions, and written out as ``armadactl get
queue-report|job-report|scheduling-report`` prints them (``armada.cli.reports``):

- ``GetQueueReport`` (``GET /v1/queue/{queueName}/scheduler-report``): ``watch`` on the queue;
  an unknown queue is NOT_FOUND.
- ``GetJobReport`` (``GET /v1/job/{jobId}/scheduler-report``): ``watch`` on the job's queue;
  an unknown job is NOT_FOUND.
- ``GetSchedulingReport`` (``GET /v1/scheduling-report``): the queues the caller may watch.
  Armada's older filters still work: ``mostRecentForQueue.queueName`` answers the queue's
  report, ``mostRecentForJob.jobId`` the job's.

``verbosity`` is Armada's (0, or the count of ``-v``); ours stops at 3, so a larger level
reads as 3, and a negative one is INVALID_ARGUMENT naming ``verbosity``. Reports cover every
pool (Armada's calls have no pool; our REST API's reports take one).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from google.protobuf.message import Message

from armada.api.report_views import QueueReportSerializer, SchedulingReportSerializer
from armada.api.serializers import JobSchedulingSerializer, JobSerializer
from armada.cli.reports import render_job_report, render_queue_report, render_scheduling_report
from armada.services import job_queries, scheduling_reports
from armada.services import jobs as job_selectors
from armada.services.errors import ValidationFailed
from armada.services.scheduling_reports import MAX_VERBOSITY
from armada.wire.registry import Call, unary
from armada.wire.scheduler_reporting_proto import SERVICE, message_class


def _verbosity(level: int) -> int:
    if level < 0:
        raise ValidationFailed.one("verbosity", f"must be from 0 to {MAX_VERBOSITY}, not {level}")
    return min(level, MAX_VERBOSITY)


def _required(value: str, field: str) -> str:
    if not value.strip():
        raise ValidationFailed.one(field, "is required")
    return value.strip()


def queue_report_text(*, actor: Any, queue: str, verbosity: int, now: datetime) -> str:
    level = _verbosity(verbosity)
    report = scheduling_reports.queue_report(actor=actor, name=queue, now=now, verbosity=level)
    return render_queue_report(QueueReportSerializer(report).data, level)


def job_report_text(*, actor: Any, job_id: str) -> str:
    record = job_queries.job_scheduling(actor=actor, job_id=job_id)
    job = job_selectors.job_get(actor=actor, job_id=job_id)
    return render_job_report(JobSchedulingSerializer(record).data, JobSerializer(job).data)


def scheduling_report_text(*, actor: Any, verbosity: int, now: datetime) -> str:
    level = _verbosity(verbosity)
    report = scheduling_reports.scheduling_report(actor=actor, now=now, verbosity=level)
    return render_scheduling_report(SchedulingReportSerializer(report).data, level)


def _answer(kind: str, text: str) -> Message:
    return message_class(kind)(report=text)


@unary(f"{SERVICE}/GetSchedulingReport")
def get_scheduling_report(call: Call, request: Any) -> Message:
    which = request.WhichOneof("filter")
    if which == "most_recent_for_queue":
        name = _required(request.most_recent_for_queue.queue_name, "mostRecentForQueue.queueName")
        text = queue_report_text(
            actor=call.actor, queue=name, verbosity=request.verbosity, now=call.now
        )
    elif which == "most_recent_for_job":
        job_id = _required(request.most_recent_for_job.job_id, "mostRecentForJob.jobId")
        _verbosity(request.verbosity)
        text = job_report_text(actor=call.actor, job_id=job_id)
    else:
        text = scheduling_report_text(actor=call.actor, verbosity=request.verbosity, now=call.now)
    return _answer("SchedulingReport", text)


@unary(f"{SERVICE}/GetQueueReport")
def get_queue_report(call: Call, request: Any) -> Message:
    name = _required(request.queue_name, "queueName")
    return _answer(
        "QueueReport",
        queue_report_text(actor=call.actor, queue=name, verbosity=request.verbosity, now=call.now),
    )


@unary(f"{SERVICE}/GetJobReport")
def get_job_report(call: Call, request: Any) -> Message:
    job_id = _required(request.job_id, "jobId")
    return _answer("JobReport", job_report_text(actor=call.actor, job_id=job_id))
