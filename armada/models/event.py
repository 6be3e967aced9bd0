from __future__ import annotations

from django.db import models


class Event(models.Model):
    """The append-only event log. ``id`` is the cursor a watcher resumes from.

    Invariant: ids become visible in increasing order (writers serialise on a lock taken just
    before they insert events, see ``services.events``), so a reader that has seen id N has
    seen every event with a smaller id that will ever exist.
    """

    id = models.BigAutoField(primary_key=True)
    created = models.DateTimeField()
    queue = models.CharField(max_length=63)
    job_set = models.CharField(max_length=1024)
    job_id = models.CharField(max_length=26)
    run_id = models.CharField(max_length=26, blank=True)
    type = models.CharField(max_length=32)
    payload = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["queue", "job_set", "id"], name="event_jobset_idx"),
            models.Index(fields=["job_id", "id"], name="event_job_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.type} {self.job_id}"


class EventPurge(models.Model):
    """Events of a deleted queue still to be deleted: those of ``queue`` with an id up to
    ``upto``. Written in the queue's delete transaction; the events are already invisible
    (a queue of the same name made later reads only ids above its ``Queue.event_floor``), and
    ``services.event_purge`` deletes them in short batches, then this row."""

    queue = models.CharField(max_length=63)
    upto = models.BigIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"events of {self.queue} up to {self.upto}"
