from __future__ import annotations

from django.db import models


class RunLog(models.Model):
    """The tail of a run's log (stdout and stderr of its pod): grown by the pieces the
    executor sends while the run runs, replaced by the tail it sends with the run's end
    (``core.runlog``, ``services.run_logs``).

    ``text`` is what readers get: when ``dropped`` bytes of the log's start were not kept
    (the bound, ``ARMADA_RUN_LOG_KIB``), a marker line saying so, then the kept tail.
    ``offsets`` holds, per container, how many bytes of its log the pieces brought (the
    empty name for a pod of one container); ``container`` is the one of the last piece;
    ``final`` is set by the run's last report, after which pieces change nothing."""

    run = models.OneToOneField(
        "armada.Run", on_delete=models.CASCADE, primary_key=True, related_name="log"
    )
    text = models.TextField(blank=True)
    truncated = models.BooleanField(default=False)
    updated_at = models.DateTimeField()
    dropped = models.BigIntegerField(default=0)
    offsets = models.JSONField(default=dict, blank=True)
    container = models.CharField(max_length=253, blank=True, default="")
    final = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"log of {self.run_id}"
