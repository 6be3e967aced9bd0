"""Fixtures of the live grid stream's tests (test_live, test_live_viewer)."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from armada.services.queues import queue_create
from tests.conftest import T0


@pytest.fixture
def close_stream_thread_connections():
    """The stream reads in the loop's worker threads; close what they may have left."""
    from django.db import connections

    yield
    asyncio.run(sync_to_async(connections.close_all)())


@pytest.fixture
def other(admin_user):
    """Queue ``other``: ``olive`` may not watch it."""
    return queue_create(actor=admin_user, data={"name": "other"}, now=T0)
