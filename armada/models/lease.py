from __future__ import annotations

from django.db import models


class LeaderLease(models.Model):
    """A named, expiring lease: at most one holder runs (say) the scheduling cycle at a time.

    Claimed with a guarded UPDATE whose row count says who won (see ``services.leader``).
    """

    name = models.CharField(primary_key=True, max_length=63)
    holder = models.CharField(max_length=255, blank=True)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} held by {self.holder or 'nobody'}"
