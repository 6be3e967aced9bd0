"""ASGI entry point: event streams are async views, so a watcher holds no worker thread."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "armada.settings")
application = get_asgi_application()
