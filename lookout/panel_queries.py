"""The reads of one job's side panel and page, each one query and only for the job asked for:
the job (with the permission check), its runs, one run's log and its version, and its latest
events (``lookout.queries.job_events``) with their times written once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo

from django.db.models.functions import Length
from django.utils import timezone

from armada.models import Job, Run, RunLog
from armada.services.authz import require_queue_verb
from armada.services.errors import NotFound
from lookout.queries import job_events


def job_visible(*, actor, job_id: str) -> Job:
    """One job with its queue (one query, no runs); reading it needs ``watch`` on its queue.
    Raises NotFound or PermissionDenied (``services.authz``)."""
    job = Job.objects.select_related("queue").filter(id=job_id).first()
    if job is None:
        raise NotFound(f"job {job_id!r} does not exist")
    require_queue_verb(actor, job.queue, "watch")
    return job


def run_visible(*, actor, run_id: str) -> Run:
    """One run with its job and queue (the job's pod spec left unread); reading it needs
    ``watch`` on the job's queue. Raises NotFound or PermissionDenied."""
    run = Run.objects.select_related("job__queue").defer("job__pod_spec").filter(id=run_id).first()
    if run is None:
        raise NotFound(f"run {run_id!r} does not exist")
    require_queue_verb(actor, run.job.queue, "watch")
    return run


def job_runs(*, job: Job) -> list[Run]:
    """The job's runs, newest first (one query; their logs are not read)."""
    return list(job.runs.order_by("-leased_at", "-id"))


def run_log(*, run_id: str) -> RunLog | None:
    """A run's log (its text included), or None when the executor has sent none."""
    return RunLog.objects.filter(run_id=run_id).first()


@dataclass(frozen=True)
class LogVersion:
    """What tells one state of a run's log from the next without reading its text: when
    the executor last sent it, its length, and the run's state (a run that ends may keep its
    text; the viewer still has to learn that it ended)."""

    updated_at: datetime | None
    length: int
    truncated: bool
    run_state: str

    @property
    def etag(self) -> str:
        stamp = int(self.updated_at.timestamp() * 1_000_000) if self.updated_at else 0
        return f"{stamp:x}-{self.length:x}-{self.run_state}"

    @classmethod
    def of(cls, run: Run, entry: RunLog | None) -> LogVersion:
        """The version of ``run``'s log as read in ``entry`` (None: it has none yet)."""
        if entry is None:
            return cls(None, 0, False, run.state)
        return cls(entry.updated_at, len(entry.text), entry.truncated, run.state)


def log_version(*, run: Run) -> LogVersion:
    """The version of ``run``'s log, from one query that reads the length of its text, not
    the text."""
    row = (
        RunLog.objects.filter(run_id=run.id)
        .annotate(length=Length("text"))
        .values("updated_at", "length", "truncated")
        .first()
    )
    if row is None:
        return LogVersion.of(run, None)
    return LogVersion(row["updated_at"], row["length"], row["truncated"], run.state)


def job_timeline(*, job: Job, last: int | None = None) -> list[dict]:
    """``job_events`` with each event's time as ``"at": (ISO time, shown time)``: written
    here once, as formatting them in the template costs more than the rest of a long
    timeline."""
    timeline = job_events(job=job, last=last)
    zone = timezone.get_current_timezone()
    for item in timeline:
        item["at"] = time_texts(item["event"].created, zone)
    return timeline


def time_texts(at: datetime, zone: tzinfo | None = None) -> tuple[str, str]:
    """A time as a ``<time>`` element shows it: (ISO time, shown time), in ``zone`` (the
    current time zone when None; pass it for many times: looking it up is most of the cost).
    Written once in Python: a date filter per time costs more in a template."""
    local = at.astimezone(zone or timezone.get_current_timezone())
    return local.isoformat(), local.strftime("%Y-%m-%d %H:%M:%S")
