"""ASGI entry point: event streams are async views, so a watcher holds no worker thread.

The body guard (``armada.api.bodyguard``) sits in front of Django: it refuses oversized
bodies and unauthenticated API callers before a byte of the body is read.

Once the application is loaded (its URL patterns and views included), the garbage collector
is tuned for the process (``armada.gctuning``: ``ARMADA_GC_THRESHOLD``, and what start-up
made is frozen)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
django_application = get_asgi_application()

from django.urls import get_resolver  # noqa: E402

from armada.api.bodyguard import BodyGuard  # noqa: E402 - needs the apps loaded above
from armada.gctuning import tune_gc  # noqa: E402

application = BodyGuard(django_application)
# The views, imported now rather than at the first request, so that they are frozen too.
get_resolver().url_patterns  # noqa: B018
tune_gc()
