"""``/health``: Armada's health check, where Armada's servers answer it.

As Armada's: 204 with no body while healthy; 503 with a line of plain text saying what is
wrong otherwise. Healthy here means the database answers a query within the bound of our
``/readyz`` checks (``armada.web.health``, whose database check this reuses: a probe against
a hung database fails in bounded time and piles up no threads). Public, for load balancers
and Armada's probes; ``/readyz`` says more (migrations, broker) and ``/healthz`` less (the
process answers at all).
"""

from __future__ import annotations

import time

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from armada.web import health


@csrf_exempt
@never_cache
def health_check(request: HttpRequest) -> HttpResponse:
    """204 when the database answers, else 503 with the reason (any method, as Armada's)."""
    begun = health._start("database")  # noqa: SLF001 - the one bounded database probe
    if isinstance(begun, str):  # an earlier probe still waits for the database
        ok, message = False, begun
    else:
        deadline = time.monotonic() + health.CHECK_SECONDS
        ok, message = health._outcome("database", begun[0], deadline)  # noqa: SLF001
    if ok:
        return HttpResponse(status=204)
    return HttpResponse(
        f"database: {message}", status=503, content_type="text/plain; charset=utf-8"
    )
