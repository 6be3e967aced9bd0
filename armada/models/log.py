from __future__ import annotations

from django.db import models


class RunLog(models.Model):
    """The tail of a run's log (stdout and stderr of its pod), as the executor last sent it."""

    run = models.OneToOneField(
        "armada.Run", on_delete=models.CASCADE, primary_key=True, related_name="log"
    )
    text = models.TextField(blank=True)
    truncated = models.BooleanField(default=False)
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"log of {self.run_id}"
