"""ASGI entry point: event streams are async views, so a watcher holds no worker thread.

The body guard (``armada.api.bodyguard``) sits in front of Django: it refuses oversized
bodies and unauthenticated API callers before a byte of the body is read."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
django_application = get_asgi_application()

from armada.api.bodyguard import BodyGuard  # noqa: E402 - needs the apps loaded above

application = BodyGuard(django_application)
