"""``armadactl create executor-credential``, ``get executor-credentials`` and ``revoke
executor-credential`` against the real API (Django's live server): the key alone on stdout,
once; tables and ``-o json|yaml`` without keys; revocation that stops the key; the server's
refusals as the usual ``Error:`` lines with exit 1, usage errors with exit 2."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from django.utils import timezone

from armada.cli.main import main
from armada.models import ExecutorCredential
from armada.services.executor_credentials import (
    CredentialRefused,
    executor_credential_authenticate,
)
from armada.services.tokens import key_digest, token_create
from tests.cli.conftest import live_armadactl
from tests.services.test_executor_credentials import grant_manage

pytestmark = pytest.mark.django_db(transaction=True)

KEY_LINE = re.compile(r"arme_[A-Za-z0-9_-]{40}\n")


@pytest.fixture
def ctl(live_server, admin_user, capsys):
    """As the admin (root) by default."""
    return live_armadactl(live_server.url, capsys, ("root", "root-password"))


def create(ctl, *argv: str) -> str:
    code, out, err = ctl("create", "executor-credential", *argv)
    assert code == 0, err
    assert KEY_LINE.fullmatch(out), out
    return out.strip()


def test_create_prints_the_key_alone_on_stdout_and_how_to_use_it_on_stderr(ctl):
    code, out, err = ctl("create", "executor-credential", "cluster-1")
    assert code == 0, err
    assert KEY_LINE.fullmatch(out)  # nothing but the key: `> file` keeps just the key
    key = out.strip()
    credential = ExecutorCredential.objects.get()
    assert (credential.cluster_id, credential.name) == ("cluster-1", "executor")
    assert credential.digest == key_digest(key)
    assert f"Created executor credential {credential.pk} (executor) for cluster cluster-1" in err
    assert "shown only now" in err and "tokenFile" in err and "ARMADA_EXECUTOR_TOKEN" in err
    assert "good only for the executor API" in err and key not in err
    assert executor_credential_authenticate(key=key, now=timezone.now()).cluster_id == "cluster-1"


def test_create_with_a_name_and_a_duplicate_refused(ctl):
    create(ctl, "cluster-1", "--name", "spare")
    assert ExecutorCredential.objects.get().name == "spare"
    code, out, err = ctl("create", "executor-credential", "cluster-1", "--name", "spare")
    assert (code, out) == (1, "")
    assert err.startswith("Error: cluster 'cluster-1' already has an executor credential named")
    assert ExecutorCredential.objects.count() == 1


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["Cluster_1"], "  clusterId: must be a lower-case RFC 1123 label"),
        (["x" * 64], "  clusterId: must be at most 63 characters"),
        (["cluster-1", "--name", ""], "  name: must be 1 to 100 characters"),
        (["cluster-1", "--name", "x" * 101], "  name: must be at most 100 characters"),
        (["cluster-1", "--name", "a\tb"], "  name: must not contain control characters"),
    ],
)
def test_bad_input_is_the_servers_field_error_and_exit_1(ctl, argv, line):
    code, out, err = ctl("create", "executor-credential", *argv)
    assert (code, out) == (1, "") and err.startswith("Error: invalid request: ")
    assert any(printed.startswith(line) for printed in err.splitlines()[1:]), err
    assert not ExecutorCredential.objects.exists()


def test_get_lists_credentials_as_a_table_without_keys(ctl):
    keys = [
        create(ctl, "cluster-1"),
        create(ctl, "cluster-2"),
        create(ctl, "cluster-1", "--name", "b"),
    ]
    code, out, err = ctl("get", "executor-credentials")
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split() == [
        "ID",
        "CLUSTER",
        "NAME",
        "PREFIX",
        "CREATED",
        "CREATED",
        "BY",
        "LAST",
        "USED",
        "REVOKED",
    ]
    assert [r.split()[1:4] for r in rows] == [
        ["cluster-1", "b", keys[2][:13]],
        ["cluster-1", "executor", keys[0][:13]],
        ["cluster-2", "executor", keys[1][:13]],
    ]
    assert all(r.split()[5] == "root" and r.split()[-2:] == ["-", "-"] for r in rows)
    assert not any(key in out for key in keys)

    code, out, _ = ctl("get", "executor-credentials", "cluster-2")
    assert code == 0 and [r.split()[1] for r in out.splitlines()[1:]] == ["cluster-2"]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_get_for_machines(ctl, fmt):
    key = create(ctl, "cluster-1")
    code, out, _ = ctl("get", "executor-credentials", "-o", fmt)
    assert code == 0 and key not in out
    [row] = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert row["clusterId"] == "cluster-1" and row["prefix"] == key[:13] and "key" not in row
    assert row["revokedAt"] is None and row["createdBy"] == "root"


def test_get_with_none_says_so(ctl):
    code, out, err = ctl("get", "executor-credentials", "cluster-1")
    assert (code, out, err) == (0, "", "No executor credentials found for cluster cluster-1.\n")
    code, out, _ = ctl("get", "executor-credentials", "-o", "json")
    assert (code, json.loads(out)) == (0, [])


def test_get_with_a_bad_cluster_id_is_exit_1(ctl):
    code, _, err = ctl("get", "executor-credentials", "Not_A_Label")
    assert code == 1 and "clusterId:" in err


def test_revoke_stops_the_key_and_says_since_when(ctl):
    key = create(ctl, "cluster-1")
    pk = ExecutorCredential.objects.get().pk
    code, out, err = ctl("revoke", "executor-credential", str(pk))
    assert code == 0, err
    revoked_at = ExecutorCredential.objects.get().revoked_at
    assert out == (
        f"Executor credential {pk} (executor, cluster cluster-1) is revoked since "
        f"{revoked_at:%Y-%m-%dT%H:%M:%SZ}: its key is refused from its next call\n"
    )
    with pytest.raises(CredentialRefused, match="was revoked at"):
        executor_credential_authenticate(key=key, now=timezone.now())
    code, again, _ = ctl("revoke", "executor-credential", str(pk))  # idempotent
    assert (code, again) == (0, out)
    code, out, _ = ctl("get", "executor-credentials")
    assert out.splitlines()[1].split()[-1] == f"{revoked_at:%Y-%m-%dT%H:%M:%SZ}"


def test_revoking_an_unknown_id_is_exit_1(ctl):
    code, out, err = ctl("revoke", "executor-credential", "4242")
    assert (code, out) == (1, "") and err == "Error: no executor credential with id '4242'\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["create", "executor-credential"],
        ["create", "executor-credential", "a", "b"],
        ["get", "executor-credentials", "a", "b"],
        ["get", "executor-credentials", "-o", "xml"],
        ["revoke", "executor-credential"],
        ["revoke", "executor-credential", "abc"],
        ["revoke", "executor-credential", "0"],
        ["revoke", "executor-credential", "-5"],
        ["revoke", "executor-credentials", "1"],
        ["revoke"],
    ],
)
def test_usage_errors_exit_2_without_calling_the_server(capsys, argv):
    code = main([*argv, "--url", "http://127.0.0.1:9"])  # nothing listens: never called
    err = capsys.readouterr().err
    assert code == 2 and "Error: " in err and "cannot reach" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["create", "executor-credential", "cluster-1"],
        ["get", "executor-credentials"],
        ["revoke", "executor-credential", "{pk}"],
    ],
)
def test_only_holders_of_the_permission_may(ctl, admin_user, owner, outsider, argv):
    create(ctl, "cluster-1", "--name", "first")
    argv = [arg.format(pk=ExecutorCredential.objects.get().pk) for arg in argv]
    before = list(ExecutorCredential.objects.values())
    code, out, err = ctl(*argv, user=("olive", "olive-password"))
    assert (code, out) == (1, "") and "'manage_executor_credentials'" in err
    assert list(ExecutorCredential.objects.values()) == before
    grant_manage(outsider)
    code, _, err = ctl(*argv, user=("otto", "otto-password"))
    assert code == 0, err


def test_with_an_api_token_and_an_unreachable_server(live_server, admin_user, capsys, free_port):
    token = token_create(user=admin_user, name="ci", expires_at=None, now=timezone.now()).key
    argv = ["create", "executor-credential", "cluster-1", "--url", live_server.url]
    code = main([*argv, "--token", token])
    captured = capsys.readouterr()
    assert code == 0 and KEY_LINE.fullmatch(captured.out), captured.err
    code = main(["get", "executor-credentials", "--url", f"http://127.0.0.1:{free_port}"])
    assert code == 1 and "cannot reach the Armada server" in capsys.readouterr().err


def test_an_executor_key_is_no_key_for_armadactl(ctl, live_server, capsys):
    key = create(ctl, "cluster-1")
    code = main(["get", "executor-credentials", "--url", live_server.url, "--token", key])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("Error: invalid token")
