"""Armada control plane (Django project and app). The Celery app is ``armada.celery``."""
