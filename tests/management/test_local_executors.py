"""What ``manage.py runall`` prepares for each executor it starts (``armada.local_executors``):
a credential of its own, kept between starts while it still works for that executor's
cluster, and the executor's file naming the executor API and that credential."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from django.utils import timezone

from armada import local_executors
from armada.core.config import Executor
from armada.core.config_executor_process import parse_executor_process
from armada.models import ExecutorCredential
from armada.services.executor_credentials import (
    executor_credential_authenticate,
    executor_credential_issue,
)

pytestmark = pytest.mark.django_db

NODES = [{"name": "n", "count": 2, "allocatable": {"cpu": "4", "memory": "8Gi"}}]


def test_prepare_writes_a_private_credential_and_the_executors_file(tmp_path):
    config = Executor(id="east", backend="fake", tickPeriod="300ms", nodes=NODES)
    now = timezone.now()
    command = local_executors.prepare(
        config, var_dir=tmp_path, api_address="127.0.0.1:50999", now=now
    )
    state = tmp_path / "executors" / "east"
    key_file, config_file = state / "credential", state / "executor.yaml"
    assert command == local_executors.executor_command(config_file)
    assert key_file.stat().st_mode & 0o777 == 0o600
    identity = executor_credential_authenticate(key=key_file.read_text().strip(), now=now)
    assert identity.cluster_id == "east"
    written = parse_executor_process(yaml.safe_load(config_file.read_text()))
    assert written.api.address == "127.0.0.1:50999"
    assert written.api.token_file == str(key_file.resolve())
    assert written.state_dir == str(state.resolve())
    # The executor's own keys, as the configuration gave them.
    assert written.model_dump(exclude={"api", "broker", "state_dir"}) == config.model_dump(
        exclude={"state_dir"}
    )


def test_a_working_credential_is_kept_and_a_revoked_one_replaced(tmp_path):
    config = Executor(id="east", nodes=NODES)
    now = timezone.now()
    local_executors.prepare(config, var_dir=tmp_path, api_address="127.0.0.1:1", now=now)
    key_file = tmp_path / "executors" / "east" / "credential"
    first = key_file.read_text()
    local_executors.prepare(config, var_dir=tmp_path, api_address="127.0.0.1:1", now=now)
    assert key_file.read_text() == first
    assert ExecutorCredential.objects.filter(cluster_id="east").count() == 1

    ExecutorCredential.objects.filter(cluster_id="east").update(revoked_at=now)
    later = now + timedelta(minutes=1)
    local_executors.prepare(config, var_dir=tmp_path, api_address="127.0.0.1:1", now=later)
    second = key_file.read_text()
    assert second != first
    assert executor_credential_authenticate(key=second.strip(), now=later).cluster_id == "east"


def test_a_kept_key_of_another_cluster_is_replaced(tmp_path):
    """A state directory kept while the executor's id changed holds a key that works, but
    for the old id: the executor would be refused on every call, so it gets its own."""
    state = tmp_path / "state"
    now = timezone.now()
    old = executor_credential_issue(cluster_id="west", name="local", now=now).key
    state.mkdir()
    (state / "credential").write_text(old + "\n")
    config = Executor(id="east", stateDir=str(state), nodes=NODES)
    local_executors.prepare(config, var_dir=tmp_path, api_address="127.0.0.1:1", now=now)
    key = (state / "credential").read_text().strip()
    assert key != old
    assert executor_credential_authenticate(key=key, now=now).cluster_id == "east"
    # The other cluster's credential is left alone: it may be in use elsewhere.
    assert executor_credential_authenticate(key=old, now=now).cluster_id == "west"
